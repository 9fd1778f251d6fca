//! [`GpuCollision`]: the collision stage on the GPU (`kernels/collision.wgsl`),
//! the twin of [`crate::collision::collide`] for every world of a batch.
//!
//! Design (determinism first): the candidate pairs are filtered once on the
//! host ([`Model::geoms_can_collide`], plane–plane pairs dropped) and sorted
//! ascending by (min, max) geom index, which is the order the CPU broadphase
//! emits. Per step: `broadphase` computes every (world, geom) bounding
//! volume; `narrow_phase` (count mode) runs one thread per (pair, world),
//! pair-major, that applies the CPU's bounding-volume predicate and the
//! pair's `contact_<a>_<b>` routine and records its number of contacts;
//! `collide` (one thread per world) turns the counts into each pair's first
//! contact index, in pair order, and the world's total; `narrow_phase` again
//! (write mode) recomputes the manifolds that fit and stores them there. The stored contacts are
//! therefore exactly the prefix that `Contacts::with_capacity(model, ncon)`
//! keeps on the CPU, in the same order, and the output is bit-identical run
//! to run (no atomics decide anything). `contact_count[w]` holds every
//! contact found, so `count − ncon` is the world's overflow.
//!
//! Pairs that run GJK/EPA (`narrow_phase_epa`, a separate pipeline created
//! only for models that have such pairs: it is by far the largest to
//! compile; height-field pairs, which run it prism by prism, in
//! `narrow_phase_hfield`, created only for models with height fields) need a polytope (an [`EPA_SCRATCH_BYTES`] block of
//! `collision_scratch`) per thread: they are launched in passes of at most
//! as many pairs as fit [`EPA_SCRATCH_BUDGET`] bytes of scratch for all
//! worlds; all other pairs go in one pass.
//!
//! One thread per (pair, world) rather than one per world looping over the
//! pairs also keeps each invocation's loop count small: Mesa's llvmpipe
//! (lavapipe, what CI runs) silently cuts every loop short once one
//! invocation group has run 65535 loop iterations in total. The kernels
//! check that budget and flag the world ([`GpuCollision::check`]).
//!
//! Buffers (`kernels/data.wgsl`, bindings 60–74), all created in
//! [`GpuCollision::new`]: `contacts` (nworld, ncon) and `contact_count`
//! (nworld) — what the contact solve reads —, `collision_info`,
//! `collision_pairs`, `collision_geoms`, the mesh hulls (`mesh_vertices`,
//! `mesh_polygons`, `mesh_polygon_vertices`), the per-world skin
//! `collision_skin` (m), the bounding volumes `geom_aabbs`, the EPA
//! polytopes `collision_scratch`, the passes (`collision_pass`, a uniform per
//! pass, and `pass_pairs`), the per-(world, pair) counts and offsets
//! `pair_contacts`, and the per-world `collision_status`.
//!
//! A step encodes, in one compute pass: kinematics
//! ([`super::GpuDynamics::encode`] with [`super::Stage::Kinematics`]), then
//! [`GpuCollision::encode`], then the kernels that read `contacts` (they bind
//! `contacts` and `contact_count` by name from this [`BufferSource`]).

use super::buffers::{BufferSource, Readback, StorageBuffer};
use super::compose::KernelFile;
use super::contact::GpuContact;
use super::context::{GpuContext, run_pass};
use super::data::DATA;
use super::dynamics::GpuDynamics;
use super::error::GpuError;
use super::fields::{Layout, element_index};
use super::kernel::Kernel;
use super::model::{GpuDims, StructLayout};
pub use super::names::pair_code;
use crate::collision::{Contact, PAIR_KINDS, geom_bound_margin, order_pair, pair_kind, pair_margin};
use crate::math::Vec3;
use crate::model::{GeomKind, Material, Model};
use bytemuck::{Pod, Zeroable};
use core::mem::offset_of;
use std::sync::Arc;

/// Sizes of the collision stage (WGSL `CollisionInfo`, a uniform).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuCollisionInfo {
    /// Number of candidate pairs.
    pub npair: u32,
    /// Always 2: bound of the loop that checks the driver's loop budget.
    pub loop_check: u32,
    /// Padding.
    pub _pad: [u32; 2],
}

/// One narrow-phase pass (WGSL `CollisionPass`, a uniform per pass).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuCollisionPass {
    /// First entry of the pass in `pass_pairs`.
    pub start: u32,
    /// Number of candidate pairs in the pass.
    pub count: u32,
    /// 0: count contacts; 1: write them.
    pub write: u32,
    /// Padding.
    pub _pad: u32,
}

/// `collision_status` bit: the driver's loop budget ran out (Mesa llvmpipe).
pub const STATUS_LOOP_BUDGET: u32 = 1;
/// `collision_status` bit: a recomputed manifold disagreed with its count.
pub const STATUS_RECOMPUTE: u32 = 2;

/// A candidate geom pair (WGSL `CollisionPair`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuCollisionPair {
    /// Geom ids (A, B) in narrow-phase order ([`order_pair`]).
    pub geom: [u32; 2],
    /// Body ids (A, B).
    pub body: [u32; 2],
    /// `kind(A) · 7 + kind(B)`: the narrow-phase routine.
    pub kinds: u32,
    /// Pair margin (m): [`pair_margin`] rounded to f32 (the world's skin is added on the GPU).
    pub margin: f32,
    /// 1: the pair's contacts are MuJoCo's soft contacts (the fields
    /// `soft_*`, [`crate::icf::soft::soft_pair_constants`]); 0: Hunt–Crossley.
    pub soft: u32,
    /// Padding.
    pub _pad: u32,
    /// Combined material ([`Material::combine`]) as f32: stiffness (N/m,
    /// +∞ when both geoms are rigid, as [`GpuContact::from_contact`]),
    /// dissipation (s/m), μs, μd.
    pub material: [f32; 4],
    /// Soft contact: K (1/s²), B (1/s), Â (1/kg), the scale of R.
    pub soft_law: [f32; 4],
    /// Soft contact: solimp's d0, d_max, width (m), midpoint, clamped.
    pub soft_imp: [f32; 4],
    /// Soft contact: the edges' friction slopes along t1 and t2, solimp's
    /// power, the pair's margin (m).
    pub soft_more: [f32; 4],
}

/// Per-geom collision constants (WGSL `CollisionGeom`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuCollisionGeom {
    /// Bounding-volume margin ([`geom_bound_margin`], m).
    pub margin: f32,
    /// Mesh geoms: largest vertex distance from the geom origin (m);
    /// height fields: their bounding radius.
    pub mesh_radius: f32,
    /// Mesh geoms: first vertex in `mesh_vertices`; height fields: their
    /// entry there (the size, then the elevations four per entry).
    pub vert_adr: u32,
    /// Mesh geoms: number of hull vertices; height fields: of samples.
    pub vert_num: u32,
    /// Mesh geoms: centre of the local vertex box (m); height fields: of the field's box.
    pub local_centre: [f32; 3],
    /// Mesh geoms: first polygon in `mesh_polygons`; height fields: columns (ncol).
    pub poly_adr: u32,
    /// Mesh geoms: half-extents of the local vertex box (m); height fields: of the field's box.
    pub local_half: [f32; 3],
    /// Mesh geoms: number of polygons; height fields: rows (nrow).
    pub poly_num: u32,
}

/// A planar hull face (WGSL `MeshPolygon`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuMeshPolygon {
    /// Outward unit normal, geom frame.
    pub normal: [f32; 3],
    /// First entry of the vertex loop in `mesh_polygon_vertices`.
    pub start: u32,
    /// Number of vertices in the loop.
    pub count: u32,
    /// Padding.
    pub _pad: [u32; 3],
}

/// An inflated world AABB (WGSL `Aabb`; m).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuAabb {
    /// Lower corner (m).
    pub lo: [f32; 3],
    /// Padding.
    pub _pad0: f32,
    /// Upper corner (m).
    pub hi: [f32; 3],
    /// Padding.
    pub _pad1: f32,
}

/// Most bytes of EPA scratch (all worlds) one pass may use; GJK/EPA pairs
/// are split into passes accordingly (at least one pair per pass).
pub const EPA_SCRATCH_BUDGET: usize = 128 << 20;

/// Bytes of one GJK/EPA thread's scratch (WGSL `EpaScratch`): the EPA
/// polytope (68 vertices, 136 faces, 136 free-slot entries, 204 horizon
/// edges, 136 visible-face entries, for at most 64 expansions) and the
/// manifold clipping buffers (64 points each).
pub const EPA_SCRATCH_BYTES: usize = 68 * 32 + 136 * 32 + 136 * 4 + 204 * 8 + 136 * 4 + 64 * (16 + 4 + 16 + 4 + 48 + 4);

/// Whether the narrow phase of kinds `a ≤ b` runs GJK/EPA (and needs EPA
/// scratch): [`PairKind::uses_epa`](crate::collision::PairKind::uses_epa) of [`PAIR_KINDS`] (pairs with a
/// cylinder, ellipsoid or mesh, except the closed-form plane pairs and
/// sphere–cylinder).
pub fn uses_epa(a: GeomKind, b: GeomKind) -> bool {
    pair_kind(a, b).uses_epa
}

/// The collision's library files, composed in this order in front of
/// `kernels/collision.wgsl` (shapes and support functions, the closed-form
/// routines, GJK, EPA, the manifold clipping, the height fields' prisms).
pub static SHAPES: KernelFile =
    KernelFile::new("collision_shapes", include_str!("../../kernels/collision_shapes.wgsl"), &[&DATA]);
/// See [`SHAPES`].
pub static ANALYTIC: KernelFile =
    KernelFile::new("collision_analytic", include_str!("../../kernels/collision_analytic.wgsl"), &[&DATA]);
/// See [`SHAPES`].
pub static GJK: KernelFile =
    KernelFile::new("collision_gjk", include_str!("../../kernels/collision_gjk.wgsl"), &[&DATA]);
/// See [`SHAPES`].
pub static EPA: KernelFile =
    KernelFile::new("collision_epa", include_str!("../../kernels/collision_epa.wgsl"), &[&DATA]);
/// See [`SHAPES`].
pub static MANIFOLD: KernelFile =
    KernelFile::new("collision_manifold", include_str!("../../kernels/collision_manifold.wgsl"), &[&DATA]);
/// See [`SHAPES`].
pub static HFIELD: KernelFile =
    KernelFile::new("collision_hfield", include_str!("../../kernels/collision_hfield.wgsl"), &[&DATA]);

/// `kernels/collision.wgsl` after its libraries, with the generated
/// narrow-phase dispatch ([`narrow_phase_dispatch`]) after it.
pub static FILE: KernelFile = KernelFile::new(
    "collision",
    include_str!("../../kernels/collision.wgsl"),
    &[&DATA, &SHAPES, &ANALYTIC, &GJK, &EPA, &MANIFOLD, &HFIELD],
)
.with_generated(narrow_phase_dispatch);

/// The generated WGSL dispatch of the narrow phase (composed after
/// `kernels/collision.wgsl`): `narrow_phase_fn` runs the routine of every
/// [`PAIR_KINDS`] row without GJK/EPA (those run `convex_contact` in their
/// own entry point, `narrow_phase_epa`).
pub fn narrow_phase_dispatch() -> String {
    let mut out = String::from(
        "/// The dispatch table (PAIR_KINDS, generated): runs the routine of the
/// pair's kinds (A, B) = (kinds / 7, kinds % 7) into the manifold.
fn narrow_phase_fn(kinds: u32, a: Shape, b: Shape, margin: f32) {
    switch kinds {
",
    );
    for p in PAIR_KINDS.iter().filter(|p| !p.uses_epa && p.max_points > 0) {
        out += &format!(
            "        case PAIR_{}_{}: {{\n            {}(a, b, margin);\n        }}\n",
            p.a.name().to_uppercase(),
            p.b.name().to_uppercase(),
            p.routine
        );
    }
    out += "        default: {}\n    }\n}\n";
    out
}

/// Sizes and field offsets of this module's `Gpu*` structs, keyed by WGSL
/// struct name (checked against naga's layout by `tests/wgsl_validate.rs`).
pub fn struct_layouts() -> Vec<StructLayout> {
    vec![
        struct_layout!("CollisionInfo", GpuCollisionInfo, [npair, loop_check]),
        struct_layout!("CollisionPass", GpuCollisionPass, [start, count, write]),
        struct_layout!(
            "CollisionPair",
            GpuCollisionPair,
            [geom, body, kinds, margin, soft, material, soft_law, soft_imp, soft_more]
        ),
        struct_layout!(
            "CollisionGeom",
            GpuCollisionGeom,
            [margin, mesh_radius, vert_adr, vert_num, local_centre, poly_adr, local_half, poly_num]
        ),
        struct_layout!("MeshPolygon", GpuMeshPolygon, [normal, start, count]),
        struct_layout!("Aabb", GpuAabb, [lo, hi]),
    ]
}

/// The candidate pairs of `model` as the GPU walks them: every pair the CPU
/// broadphase may report (filtered by [`Model::geoms_can_collide`], no
/// plane–plane pair), ascending by (min, max) geom index.
pub fn candidate_pairs(model: &Model) -> Vec<GpuCollisionPair> {
    let n = model.geoms.len();
    let mut out = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            let both_planes = model.geoms[a].kind == GeomKind::Plane && model.geoms[b].kind == GeomKind::Plane;
            if both_planes || !model.geoms_can_collide(a, b) {
                continue;
            }
            let (ga, gb) = order_pair(model, a, b);
            let m = Material::combine(&model.geoms[ga].material, &model.geoms[gb].material);
            let body = [model.geoms[ga].body, model.geoms[gb].body];
            let mut pair = GpuCollisionPair {
                geom: [ga as u32, gb as u32],
                body: body.map(|b| b as u32),
                kinds: pair_code(model.geoms[ga].kind, model.geoms[gb].kind),
                margin: pair_margin(model, ga, gb) as f32,
                soft: 0,
                _pad: 0,
                material: [m.stiffness as f32, m.dissipation as f32, m.mu_static as f32, m.mu_dynamic as f32],
                soft_law: [0.0; 4],
                soft_imp: [0.0; 4],
                soft_more: [0.0; 4],
            };
            if let Some(s) = &m.soft {
                let k = crate::icf::soft::soft_pair_constants(model, body, s);
                let [d0, dmax, width, mid, power] = k.law.imp.map(|x| x as f32);
                pair.soft = 1;
                pair.soft_law = [k.law.k as f32, k.law.b as f32, k.diag as f32, k.scale as f32];
                pair.soft_imp = [d0, dmax, width, mid];
                pair.soft_more = [k.mu[0] as f32, k.mu[1] as f32, power, k.reach as f32];
            }
            out.push(pair);
        }
    }
    out
}

/// The candidate pairs of `model` in a storage buffer (`collision_pairs`),
/// with one dummy pair when there are none (a buffer may not be empty).
pub fn pairs_buffer(ctx: &GpuContext, model: &Model) -> Result<StorageBuffer<GpuCollisionPair>, GpuError> {
    let mut pairs = candidate_pairs(model);
    if pairs.is_empty() {
        pairs.push(GpuCollisionPair::zeroed());
    }
    StorageBuffer::from_slice(ctx, "collision_pairs", &pairs)
}

/// The index of each geom pair in [`candidate_pairs`] (for contacts found
/// on the host, whose pair the ICF builder looks up).
#[derive(Clone, Debug)]
pub struct PairIndex {
    ngeom: usize,
    index: Vec<u32>,
}

impl PairIndex {
    /// The candidate pairs of `model`, indexed by geom pair.
    pub fn new(model: &Model) -> Self {
        let ngeom = model.geoms.len();
        let mut index = vec![u32::MAX; ngeom * ngeom];
        for (k, p) in candidate_pairs(model).iter().enumerate() {
            let [a, b] = p.geom.map(|g| g as usize);
            index[a * ngeom + b] = k as u32;
            index[b * ngeom + a] = k as u32;
        }
        Self { ngeom, index }
    }

    /// The candidate-pair index of geoms `geom` (`u32::MAX` for a pair the
    /// GPU never collides).
    pub fn of(&self, geom: [usize; 2]) -> u32 {
        self.index[geom[0] * self.ngeom + geom[1]]
    }
}

/// Per-geom constants and the packed mesh hulls: (geoms, vertices, polygons, polygon vertex loops).
type PackedMeshes = (Vec<GpuCollisionGeom>, Vec<[f32; 4]>, Vec<GpuMeshPolygon>, Vec<u32>);

fn pack_geoms(model: &Model) -> PackedMeshes {
    let mut geoms = Vec::with_capacity(model.geoms.len());
    let (mut verts, mut polys, mut loops) = (Vec::new(), Vec::new(), Vec::new());
    for (gi, g) in model.geoms.iter().enumerate() {
        let mut cg = GpuCollisionGeom {
            margin: geom_bound_margin(model, gi) as f32,
            mesh_radius: 0.0,
            vert_adr: 0,
            vert_num: 0,
            local_centre: [0.0; 3],
            poly_adr: 0,
            local_half: [0.0; 3],
            poly_num: 0,
        };
        if let (GeomKind::Mesh, Some(m)) = (g.kind, g.mesh) {
            let mesh = &model.meshes[m];
            cg.mesh_radius = mesh.radius() as f32;
            cg.vert_adr = verts.len() as u32;
            cg.vert_num = mesh.vertices.len() as u32;
            cg.poly_adr = polys.len() as u32;
            cg.poly_num = mesh.polygons.len() as u32;
            // The local vertex box exactly as broadphase.rs mesh_local_box (f64, then rounded).
            if !mesh.vertices.is_empty() {
                let mut lo = [f64::INFINITY; 3];
                let mut hi = [f64::NEG_INFINITY; 3];
                for v in &mesh.vertices {
                    for i in 0..3 {
                        lo[i] = lo[i].min(v[i]);
                        hi[i] = hi[i].max(v[i]);
                    }
                }
                for i in 0..3 {
                    cg.local_centre[i] = (0.5 * (lo[i] + hi[i])) as f32;
                    cg.local_half[i] = (0.5 * (hi[i] - lo[i])) as f32;
                }
            }
            verts.extend(mesh.vertices.iter().map(|v| [v[0] as f32, v[1] as f32, v[2] as f32, 0.0]));
            let base = loops.len() as u32;
            loops.extend_from_slice(&mesh.polygon_vertices);
            polys.extend(mesh.polygons.iter().map(|p| GpuMeshPolygon {
                normal: p.normal.map(|x| x as f32),
                start: base + p.start,
                count: p.count,
                _pad: [0; 3],
            }));
        }
        if let (GeomKind::Hfield, Some(h)) = (g.kind, g.hfield) {
            // A height field (kernels/collision_hfield.wgsl): its size, then the
            // elevations four per entry; the field's box for the broadphase.
            let f = &model.hfields[h];
            let [a, b, c, d] = f.size;
            cg.mesh_radius = f.radius() as f32;
            cg.vert_adr = verts.len() as u32;
            cg.vert_num = (f.nrow * f.ncol) as u32;
            cg.poly_adr = f.ncol as u32;
            cg.poly_num = f.nrow as u32;
            cg.local_centre = [0.0, 0.0, (0.5 * (c - d)) as f32];
            cg.local_half = [a as f32, b as f32, (0.5 * (c + d)) as f32];
            verts.push(f.size.map(|x| x as f32));
            verts.extend(f.data.chunks(4).map(|q| std::array::from_fn(|i| q.get(i).copied().unwrap_or(0.0))));
        }
        geoms.push(cg);
    }
    (geoms, verts, polys, loops)
}

/// The collision buffers (a [`BufferSource`] for this stage's kernels and the contact solve's).
struct CollisionBuffers {
    info: wgpu::Buffer,
    pairs: StorageBuffer<GpuCollisionPair>,
    geoms: StorageBuffer<GpuCollisionGeom>,
    mesh_vertices: StorageBuffer<[f32; 4]>,
    mesh_polygons: StorageBuffer<GpuMeshPolygon>,
    mesh_polygon_vertices: StorageBuffer<u32>,
    skin: StorageBuffer<f32>,
    aabbs: StorageBuffer<GpuAabb>,
    contacts: StorageBuffer<GpuContact>,
    counts: StorageBuffer<u32>,
    scratch: StorageBuffer<u32>,
    pass_pairs: StorageBuffer<u32>,
    pair_contacts: StorageBuffer<u32>,
    status: StorageBuffer<u32>,
}

impl BufferSource for CollisionBuffers {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        Some(match name {
            "contacts" => self.contacts.buffer(),
            "contact_count" => self.counts.buffer(),
            "collision_info" => &self.info,
            "collision_pairs" => self.pairs.buffer(),
            "collision_geoms" => self.geoms.buffer(),
            "mesh_vertices" => self.mesh_vertices.buffer(),
            "mesh_polygons" => self.mesh_polygons.buffer(),
            "mesh_polygon_vertices" => self.mesh_polygon_vertices.buffer(),
            "collision_skin" => self.skin.buffer(),
            "geom_aabbs" => self.aabbs.buffer(),
            "collision_scratch" => self.scratch.buffer(),
            "pass_pairs" => self.pass_pairs.buffer(),
            "pair_contacts" => self.pair_contacts.buffer(),
            "collision_status" => self.status.buffer(),
            _ => return None,
        })
    }
}

/// The collision stage for `nworld` worlds of one model, with a fixed
/// contact capacity per world. Everything (buffers, pipelines, bind
/// groups) is created in [`GpuCollision::new`]; encoding a step allocates
/// nothing.
pub struct GpuCollision {
    ctx: Arc<GpuContext>,
    nworld: usize,
    capacity: usize,
    layout: Layout,
    pairs: Vec<GpuCollisionPair>,
    buffers: CollisionBuffers,
    /// One uniform per pass (kept alive for the kernels' bind groups).
    _pass_uniforms: Vec<wgpu::Buffer>,
    broadphase: Kernel,
    /// Per pass: the count launch and the write launch.
    narrow_phase: Vec<(Kernel, Kernel)>,
    collide: Kernel,
    readback: Readback,
}

/// Provides one pass's uniform as `collision_pass`.
struct PassSource<'a>(&'a wgpu::Buffer);

impl BufferSource for PassSource<'_> {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        (name == "collision_pass").then_some(self.0)
    }
}

impl std::fmt::Debug for GpuCollision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuCollision")
            .field("nworld", &self.nworld)
            .field("capacity", &self.capacity)
            .field("npair", &self.pairs.len())
            .finish_non_exhaustive()
    }
}

impl GpuCollision {
    /// WGSL names of the buffers this provides (`contacts` and
    /// `contact_count` are the ones the contact solve binds).
    pub const BUFFER_NAMES: [&'static str; 15] = [
        "contacts",
        "contact_count",
        "collision_info",
        "collision_pairs",
        "collision_geoms",
        "mesh_vertices",
        "mesh_polygons",
        "mesh_polygon_vertices",
        "collision_skin",
        "geom_aabbs",
        "collision_scratch",
        "collision_pass",
        "pass_pairs",
        "pair_contacts",
        "collision_status",
    ];

    /// Creates the stage for `nworld` worlds of `model` with `capacity`
    /// contacts per world (`dims.ncon`), binding the model and state buffers
    /// (`dims`, `geoms`, `geom_xpos`, `geom_xmat`) from `sources` (a
    /// [`super::GpuModel`] and [`super::GpuData`] of the same model and
    /// `nworld`). Writes `capacity` into the `dims` uniform's `ncon` on the
    /// device (the host copy [`super::GpuModel::dims`] is not updated), so
    /// create one `GpuCollision` per `dims` buffer. The skin starts at 0 m in
    /// every world.
    ///
    /// Every geom pair kind has its narrow phase on the GPU. Errors:
    /// [`GpuError::Limits`] when the buffers do not fit the device,
    /// [`GpuError::Length`] for zero worlds or a capacity beyond u32 indexing.
    pub fn new(
        ctx: Arc<GpuContext>,
        model: &Model,
        nworld: usize,
        capacity: usize,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        Self::build(ctx, model, nworld, capacity, sources, EPA_SCRATCH_BUDGET, Layout::default())
    }

    /// [`Self::new`] for kernels whose [`super::GpuData`] is in `layout`
    /// (where each world's contacts are stored).
    pub fn with_layout(
        ctx: Arc<GpuContext>,
        model: &Model,
        nworld: usize,
        capacity: usize,
        sources: &[&dyn BufferSource],
        layout: Layout,
    ) -> Result<Self, GpuError> {
        Self::build(ctx, model, nworld, capacity, sources, EPA_SCRATCH_BUDGET, layout)
    }

    /// [`Self::new`] with at most `scratch_budget` bytes of GJK/EPA scratch
    /// per pass (also capped by the device's storage binding size): fewer
    /// bytes, more passes; the contacts are the same.
    pub fn with_scratch_budget(
        ctx: Arc<GpuContext>,
        model: &Model,
        nworld: usize,
        capacity: usize,
        sources: &[&dyn BufferSource],
        scratch_budget: usize,
    ) -> Result<Self, GpuError> {
        Self::build(ctx, model, nworld, capacity, sources, scratch_budget, Layout::default())
    }

    fn build(
        ctx: Arc<GpuContext>,
        model: &Model,
        nworld: usize,
        capacity: usize,
        sources: &[&dyn BufferSource],
        scratch_budget: usize,
        layout: Layout,
    ) -> Result<Self, GpuError> {
        if nworld == 0 {
            return Err(GpuError::Length { what: "nworld", expected: 1, got: 0 });
        }
        let ncon = u32::try_from(capacity).ok().filter(|&c| (c as u64) * (nworld as u64) <= u32::MAX as u64).ok_or(
            GpuError::Length { what: "contact capacity × nworld (u32)", expected: u32::MAX as usize, got: capacity },
        )?;
        let pairs = candidate_pairs(model);
        let npair = pairs.len();
        let (cgeoms, verts, polys, loops) = pack_geoms(model);
        // Passes: every pair without GJK/EPA in one, the GJK/EPA pairs in
        // chunks whose scratch (one polytope per thread) fits the budget;
        // height-field pairs (GJK/EPA prism by prism) likewise, in their own
        // entry point, whose pipeline only models with height fields create.
        let kinds = |k: usize| {
            pair_kind(model.geoms[pairs[k].geom[0] as usize].kind, model.geoms[pairs[k].geom[1] as usize].kind)
        };
        let plain: Vec<u32> = (0..npair).filter(|&k| !kinds(k).uses_epa).map(|k| k as u32).collect();
        let with_epa: Vec<u32> =
            (0..npair).filter(|&k| kinds(k).uses_epa && !kinds(k).hfield).map(|k| k as u32).collect();
        let hfield: Vec<u32> = (0..npair).filter(|&k| kinds(k).hfield).map(|k| k as u32).collect();
        let budget = scratch_budget.min(ctx.limits().max_storage_buffer_binding_size as usize);
        let chunk = (budget / (nworld * EPA_SCRATCH_BYTES)).max(1);
        // (entry point, first entry in pass_pairs, pairs)
        let mut passes: Vec<(&'static str, usize, usize)> = Vec::new();
        if !plain.is_empty() {
            passes.push(("narrow_phase", 0, plain.len()));
        }
        for (i, c) in with_epa.chunks(chunk).enumerate() {
            passes.push(("narrow_phase_epa", plain.len() + i * chunk, c.len()));
        }
        for (i, c) in hfield.chunks(chunk).enumerate() {
            passes.push(("narrow_phase_hfield", plain.len() + with_epa.len() + i * chunk, c.len()));
        }
        let scratch_blocks = nworld * with_epa.len().max(hfield.len()).min(chunk);
        let pass_pairs: Vec<u32> = plain.into_iter().chain(with_epa).chain(hfield).collect();
        let ngeom = model.geoms.len();
        let uniform = |label: &str, bytes: &[u8]| {
            let b = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.len() as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            ctx.queue.write_buffer(&b, 0, bytes);
            b
        };
        let info = GpuCollisionInfo { npair: npair as u32, loop_check: 2, _pad: [0; 2] };
        let buffers = CollisionBuffers {
            info: uniform("collision_info", bytemuck::bytes_of(&info)),
            pairs: StorageBuffer::from_slice(&ctx, "collision_pairs", &pairs)?,
            geoms: StorageBuffer::from_slice(&ctx, "collision_geoms", &cgeoms)?,
            mesh_vertices: StorageBuffer::from_slice(&ctx, "mesh_vertices", &verts)?,
            mesh_polygons: StorageBuffer::from_slice(&ctx, "mesh_polygons", &polys)?,
            mesh_polygon_vertices: StorageBuffer::from_slice(&ctx, "mesh_polygon_vertices", &loops)?,
            skin: StorageBuffer::from_slice(&ctx, "collision_skin", &vec![0.0f32; nworld])?,
            aabbs: StorageBuffer::new(&ctx, "geom_aabbs", nworld * ngeom)?,
            contacts: StorageBuffer::new(&ctx, "contacts", nworld * capacity)?,
            counts: StorageBuffer::new(&ctx, "contact_count", nworld)?,
            scratch: StorageBuffer::new(&ctx, "collision_scratch", scratch_blocks.max(1) * EPA_SCRATCH_BYTES / 4)?,
            pass_pairs: StorageBuffer::from_slice(&ctx, "pass_pairs", &pass_pairs)?,
            pair_contacts: StorageBuffer::new(&ctx, "pair_contacts", nworld * npair)?,
            status: StorageBuffer::from_slice(&ctx, "collision_status", &vec![0u32; nworld])?,
        };
        // dims.ncon on the device: the capacity the kernels (this stage's and
        // the contact solve's) index `contacts` with.
        let dims = sources.iter().find_map(|s| s.buffer("dims")).ok_or_else(|| GpuError::Binding {
            stage: FILE.name.into(),
            entry: "collide".into(),
            name: "dims".into(),
        })?;
        ctx.queue.write_buffer(dims, offset_of!(GpuDims, ncon) as u64, bytemuck::bytes_of(&ncon));
        let mut pass_uniforms = Vec::new();
        for &(_, start, count) in &passes {
            for write in [0, 1] {
                let p = GpuCollisionPass { start: start as u32, count: count as u32, write, _pad: 0 };
                pass_uniforms.push(uniform("collision_pass", bytemuck::bytes_of(&p)));
            }
        }
        let kernels = |entry: &'static str, threads: usize, pass: Option<&wgpu::Buffer>| {
            let own = pass.map(PassSource);
            let mut all: Vec<&dyn BufferSource> = Vec::new();
            if let Some(p) = &own {
                all.push(p);
            }
            all.push(&buffers);
            all.extend_from_slice(sources);
            Kernel::new(&ctx, &FILE, entry, threads, &all)
        };
        let broadphase = kernels("broadphase", nworld * ngeom, None)?;
        let collide = kernels("collide", nworld, None)?;
        let mut narrow_phase = Vec::new();
        for (&(entry, _, count), u) in passes.iter().zip(pass_uniforms.chunks(2)) {
            narrow_phase
                .push((kernels(entry, nworld * count, Some(&u[0]))?, kernels(entry, nworld * count, Some(&u[1]))?));
        }
        let bytes = (nworld * capacity * size_of::<GpuContact>()).max(4 * nworld) as u64;
        let readback = Readback::new(&ctx, bytes.min(Readback::DEFAULT_SIZE));
        ctx.check_errors()?;
        Ok(Self {
            ctx,
            nworld,
            capacity,
            layout,
            pairs,
            buffers,
            _pass_uniforms: pass_uniforms,
            broadphase,
            narrow_phase,
            collide,
            readback,
        })
    }

    /// The stage for the worlds of `dynamics` (its model, state and sizes).
    pub fn for_dynamics(dynamics: &GpuDynamics, capacity: usize) -> Result<Self, GpuError> {
        Self::with_layout(
            dynamics.context().clone(),
            dynamics.model(),
            dynamics.nworld(),
            capacity,
            &[dynamics.gpu_model(), dynamics.gpu_data()],
            dynamics.gpu_data().layout(),
        )
    }

    /// Number of worlds.
    pub fn nworld(&self) -> usize {
        self.nworld
    }
    /// Contacts stored per world (`dims.ncon`).
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    /// The candidate pairs, in the order the kernel walks them.
    pub fn pairs(&self) -> &[GpuCollisionPair] {
        &self.pairs
    }

    /// Number of narrow-phase passes (one without GJK/EPA pairs, plus the GJK/EPA chunks).
    pub fn passes(&self) -> usize {
        self.narrow_phase.len()
    }

    /// Records the stage into `pass`: bounding volumes, narrow-phase counts,
    /// offsets and totals, contacts. Put it after kinematics (geom poses) and
    /// before anything reading `contacts`.
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.broadphase.encode(pass);
        for (count, _) in &self.narrow_phase {
            count.encode(pass);
        }
        self.collide.encode(pass);
        for (_, write) in &self.narrow_phase {
            write.encode(pass);
        }
    }

    /// Runs the stage alone in one submission (the geom poses must be
    /// current). Returns without waiting; reads wait for the work.
    pub fn run(&self) -> Result<(), GpuError> {
        run_pass(&self.ctx, "collision", |pass| self.encode(pass))
    }

    /// Sets every world's extra margin (nworld values; m), like
    /// [`crate::collision::Contacts::skin`]. The GPU adds it to the f32 pair
    /// margin (`f32(margin) + skin`, where the CPU rounds `margin + skin`
    /// once: the two can differ by one rounding unit of the margin).
    pub fn set_skin(&self, skin: &[f32]) -> Result<(), GpuError> {
        self.buffers.skin.write(&self.ctx, skin)
    }

    /// Sets one world's extra margin (m).
    pub fn set_world_skin(&self, world: usize, skin: f32) -> Result<(), GpuError> {
        if world >= self.nworld {
            return Err(GpuError::Length { what: "world index", expected: self.nworld, got: world });
        }
        self.buffers.skin.write_at(&self.ctx, world, &[skin])
    }

    /// Overwrites the outputs (contacts, counts, bounding volumes) with
    /// garbage (NaN floats, `0xDEAD_BEEF` integers), so that a parity test
    /// catches anything the kernels fail to write.
    pub fn fill_garbage(&self) -> Result<(), GpuError> {
        let nan = f32::NAN;
        let junk = 0xDEAD_BEEFu32;
        let c = GpuContact {
            pos: [nan; 3],
            dist: nan,
            normal: [nan; 3],
            stiffness: nan,
            dissipation: nan,
            mu_static: nan,
            mu_dynamic: nan,
            _pad0: nan,
            geom: [junk; 2],
            body: [junk; 2],
            feature: [junk; 2],
            pair: junk,
            _pad1: junk,
        };
        self.buffers.contacts.fill(&self.ctx, c)?;
        self.buffers.counts.fill(&self.ctx, junk)?;
        self.buffers.pair_contacts.fill(&self.ctx, junk)?;
        self.buffers.aabbs.fill(&self.ctx, GpuAabb { lo: [nan; 3], _pad0: nan, hi: [nan; 3], _pad1: nan })
    }

    /// Per world: the `STATUS_*` bits raised since creation or the last
    /// [`Self::clear_status`] (0 when all is well).
    pub fn read_status(&self) -> Result<Vec<u32>, GpuError> {
        self.buffers.status.read(&self.ctx, &self.readback)
    }

    /// Clears every world's status bits.
    pub fn clear_status(&self) -> Result<(), GpuError> {
        self.buffers.status.fill(&self.ctx, 0)
    }

    /// Errors when some world's contacts are not trustworthy: the driver cut
    /// loops short ([`STATUS_LOOP_BUDGET`]: Mesa's llvmpipe allows 65535 loop
    /// iterations per invocation group, which very large meshes or deep
    /// GJK/EPA cases can exceed) or a recomputed manifold disagreed with its
    /// count ([`STATUS_RECOMPUTE`]). The message names the worlds.
    pub fn check(&self) -> Result<(), GpuError> {
        let status = self.read_status()?;
        let bad: Vec<(usize, u32)> =
            status.iter().enumerate().filter(|(_, s)| **s != 0).map(|(w, s)| (w, *s)).collect();
        if bad.is_empty() {
            return Ok(());
        }
        let worlds = |bit: u32| -> Vec<usize> { bad.iter().filter(|(_, s)| s & bit != 0).map(|(w, _)| *w).collect() };
        let mut msg = String::from("collision stage: contacts of some worlds are unreliable:");
        let budget = worlds(STATUS_LOOP_BUDGET);
        if !budget.is_empty() {
            msg += &format!(
                " the driver ('{}') cut loops short (llvmpipe's 65535-iteration loop budget per invocation \
                 group) in worlds {budget:?};",
                self.ctx.adapter_name()
            );
        }
        let recompute = worlds(STATUS_RECOMPUTE);
        if !recompute.is_empty() {
            msg += &format!(" a recomputed manifold disagreed with its count in worlds {recompute:?};");
        }
        Err(GpuError::Device(msg))
    }

    /// Contacts found per world in the last run (nworld): may exceed
    /// [`Self::capacity`]; the excess was not stored.
    pub fn read_counts(&self) -> Result<Vec<u32>, GpuError> {
        self.buffers.counts.read(&self.ctx, &self.readback)
    }

    /// Worlds whose contacts did not fit: (world index, contacts found
    /// beyond the capacity), ascending by world.
    pub fn overflow(&self) -> Result<Vec<(usize, usize)>, GpuError> {
        let cap = self.capacity;
        Ok(self
            .read_counts()?
            .into_iter()
            .enumerate()
            .filter(|&(_, n)| n as usize > cap)
            .map(|(w, n)| (w, n as usize - cap))
            .collect())
    }

    /// The raw contact buffer (nworld × capacity records in the batch's
    /// [`Layout`], stale beyond each world's count).
    pub fn read_raw(&self) -> Result<Vec<GpuContact>, GpuError> {
        self.buffers.contacts.read(&self.ctx, &self.readback)
    }

    /// Every world's stored contacts (the first min(count, capacity)), as
    /// CPU f32 contacts ([`contact_from_gpu`]), after [`Self::check`].
    pub fn read_contacts(&self) -> Result<Vec<Vec<Contact<f32>>>, GpuError> {
        self.check()?;
        let counts = self.read_counts()?;
        let raw = self.read_raw()?;
        Ok((0..self.nworld)
            .map(|w| {
                let n = (counts[w] as usize).min(self.capacity);
                (0..n)
                    .map(|c| contact_from_gpu(&raw[element_index(self.layout, self.nworld, self.capacity, 1, w, c, 0)]))
                    .collect()
            })
            .collect())
    }
}

impl BufferSource for GpuCollision {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        self.buffers.buffer(name)
    }
}

/// A GPU contact record as a CPU f32 contact (material widened to f64).
pub fn contact_from_gpu(c: &GpuContact) -> Contact<f32> {
    Contact {
        geom: [c.geom[0] as usize, c.geom[1] as usize],
        body: [c.body[0] as usize, c.body[1] as usize],
        pos: Vec3::from_array(c.pos),
        normal: Vec3::from_array(c.normal),
        dist: c.dist,
        feature: c.feature,
        material: Material {
            stiffness: c.stiffness as f64,
            dissipation: c.dissipation as f64,
            mu_static: c.mu_static as f64,
            mu_dynamic: c.mu_dynamic as f64,
            soft: None,
        },
    }
}
