//! [`GpuCollision`]: the collision stage on the GPU (`kernels/collision.wgsl`),
//! the twin of [`crate::collision::collide`] for every world of a batch.
//!
//! Design (determinism first): the candidate pairs are filtered once on the
//! host ([`Model::geoms_can_collide`], plane–plane pairs dropped) and sorted
//! ascending by (min, max) geom index, which is the order the CPU broadphase
//! emits. Per step, `broadphase` computes every (world, geom) bounding volume
//! (one thread each), then `collide` runs one thread per world over the pair
//! list: the CPU's bounding-volume predicate, the pair's `contact_<a>_<b>`
//! routine, and the manifold appended in pair order. The stored contacts are
//! therefore exactly the prefix that `Contacts::with_capacity(model, ncon)`
//! keeps on the CPU, in the same order, and the output is bit-identical run
//! to run (no atomics decide anything). `contact_count[w]` holds every
//! contact found, so `count − ncon` is the world's overflow.
//!
//! Buffers (`kernels/data.wgsl`, bindings 60–69), all created in
//! [`GpuCollision::new`]: `contacts` (nworld, ncon) and `contact_count`
//! (nworld) — what the contact solve reads —, `collision_info`,
//! `collision_pairs`, `collision_geoms`, the mesh hulls (`mesh_vertices`,
//! `mesh_polygons`, `mesh_polygon_vertices`), the per-world skin
//! `collision_skin` (m) and the bounding volumes `geom_aabbs`.
//!
//! A step encodes, in one compute pass: kinematics
//! ([`super::GpuDynamics::encode`] with [`super::Stage::Kinematics`]), then
//! [`GpuCollision::encode`], then the kernels that read `contacts` (they bind
//! `contacts` and `contact_count` by name from this [`BufferSource`]).

use super::GpuError;
use super::buffers::{BufferSource, Readback, StorageBuffer};
use super::contact::GpuContact;
use super::context::GpuContext;
use super::dynamics::GpuDynamics;
use super::model::{GpuDims, StructLayout};
use super::shaders::Kernel;
use crate::collision::{Contact, order_pair, pair_margin};
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
    /// Padding.
    pub _pad: [u32; 3],
}

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
    /// Padding.
    pub _pad: [u32; 2],
    /// Combined material ([`Material::combine`]) as f32: stiffness (N/m,
    /// +∞ when both geoms are rigid, as [`GpuContact::from_contact`]),
    /// dissipation (s/m), μs, μd.
    pub material: [f32; 4],
}

/// Per-geom collision constants (WGSL `CollisionGeom`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuCollisionGeom {
    /// Bounding-volume margin `max(Options::margin, Geom::margin)` (m).
    pub margin: f32,
    /// Mesh geoms: largest vertex distance from the geom origin (m).
    pub mesh_radius: f32,
    /// Mesh geoms: first vertex in `mesh_vertices`.
    pub vert_adr: u32,
    /// Mesh geoms: number of hull vertices.
    pub vert_num: u32,
    /// Mesh geoms: centre of the local vertex box (m).
    pub local_centre: [f32; 3],
    /// Mesh geoms: first polygon in `mesh_polygons`.
    pub poly_adr: u32,
    /// Mesh geoms: half-extents of the local vertex box (m).
    pub local_half: [f32; 3],
    /// Mesh geoms: number of polygons.
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

/// Sizes and field offsets of this module's `Gpu*` structs, keyed by WGSL
/// struct name (checked against naga's layout by `tests/wgsl_validate.rs`).
pub fn struct_layouts() -> Vec<StructLayout> {
    macro_rules! layout {
        ($wgsl:literal, $t:ty, [$($f:ident),* $(,)?]) => {
            ($wgsl, size_of::<$t>(), vec![$((stringify!($f), offset_of!($t, $f))),*])
        };
    }
    vec![
        layout!("CollisionInfo", GpuCollisionInfo, [npair]),
        layout!("CollisionPair", GpuCollisionPair, [geom, body, kinds, margin, material]),
        layout!(
            "CollisionGeom",
            GpuCollisionGeom,
            [margin, mesh_radius, vert_adr, vert_num, local_centre, poly_adr, local_half, poly_num]
        ),
        layout!("MeshPolygon", GpuMeshPolygon, [normal, start, count]),
        layout!("Aabb", GpuAabb, [lo, hi]),
    ]
}

/// Whether the GPU has the narrow-phase routine for kinds `a ≤ b`
/// (plane–plane never reaches the narrow phase).
pub fn pair_ported(a: GeomKind, b: GeomKind) -> bool {
    use GeomKind::*;
    matches!(
        (a, b),
        (Plane, Sphere)
            | (Plane, Capsule)
            | (Plane, Box)
            | (Sphere, Sphere)
            | (Sphere, Capsule)
            | (Sphere, Box)
            | (Capsule, Capsule)
            | (Capsule, Box)
            | (Box, Box)
    )
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
            out.push(GpuCollisionPair {
                geom: [ga as u32, gb as u32],
                body: [model.geoms[ga].body as u32, model.geoms[gb].body as u32],
                kinds: model.geoms[ga].kind as u32 * GeomKind::COUNT as u32 + model.geoms[gb].kind as u32,
                margin: pair_margin(model, ga, gb) as f32,
                _pad: [0; 2],
                material: [m.stiffness as f32, m.dissipation as f32, m.mu_static as f32, m.mu_dynamic as f32],
            });
        }
    }
    out
}

/// Per-geom constants and the packed mesh hulls: (geoms, vertices, polygons, polygon vertex loops).
type PackedMeshes = (Vec<GpuCollisionGeom>, Vec<[f32; 4]>, Vec<GpuMeshPolygon>, Vec<u32>);

fn pack_geoms(model: &Model) -> PackedMeshes {
    let mut geoms = Vec::with_capacity(model.geoms.len());
    let (mut verts, mut polys, mut loops) = (Vec::new(), Vec::new(), Vec::new());
    for g in &model.geoms {
        let mut cg = GpuCollisionGeom {
            margin: model.options.margin.max(g.margin) as f32,
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
    pairs: Vec<GpuCollisionPair>,
    buffers: CollisionBuffers,
    broadphase: Kernel,
    collide: Kernel,
    readback: Readback,
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
    /// Kernel file stem.
    pub const STAGE: &'static str = "collision";

    /// WGSL names of the buffers this provides (`contacts` and
    /// `contact_count` are the ones the contact solve binds).
    pub const BUFFER_NAMES: [&'static str; 10] = [
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
    ];

    /// Creates the stage for `nworld` worlds of `model` with `capacity`
    /// contacts per world (`dims.ncon`), binding the model and state buffers
    /// (`dims`, `geoms`, `geom_xpos`, `geom_xmat`) from `sources` (a
    /// [`super::GpuModel`] and [`super::GpuData`] of the same model and
    /// `nworld`). Writes `capacity` into the `dims` uniform's `ncon` on the
    /// device (the host copy [`super::GpuModel::dims`] is not updated). The
    /// skin starts at 0 m in every world.
    ///
    /// Errors: [`GpuError::Shader`] naming the geom pair when the model has a
    /// pair whose narrow phase is not on the GPU (never silently missing
    /// contacts), [`GpuError::Limits`] when the buffers do not fit.
    pub fn new(
        ctx: Arc<GpuContext>,
        model: &Model,
        nworld: usize,
        capacity: usize,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        if nworld == 0 {
            return Err(GpuError::Length { what: "nworld", expected: 1, got: 0 });
        }
        let ncon = u32::try_from(capacity).ok().filter(|&c| (c as u64) * (nworld as u64) <= u32::MAX as u64).ok_or(
            GpuError::Length { what: "contact capacity × nworld (u32)", expected: u32::MAX as usize, got: capacity },
        )?;
        let pairs = candidate_pairs(model);
        for p in &pairs {
            let (a, b) = (&model.geoms[p.geom[0] as usize], &model.geoms[p.geom[1] as usize]);
            if !pair_ported(a.kind, b.kind) {
                return Err(GpuError::Shader {
                    stage: Self::STAGE.into(),
                    message: format!(
                        "the {}–{} narrow phase is not ported to the GPU (geoms '{}' and '{}' of model '{}' may collide)",
                        a.kind.name(),
                        b.kind.name(),
                        a.name,
                        b.name,
                        model.name
                    ),
                });
            }
        }
        let (cgeoms, verts, polys, loops) = pack_geoms(model);
        let ngeom = model.geoms.len();
        let info = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("collision_info"),
            size: size_of::<GpuCollisionInfo>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let npair = pairs.len() as u32;
        ctx.queue.write_buffer(&info, 0, bytemuck::bytes_of(&GpuCollisionInfo { npair, _pad: [0; 3] }));
        let buffers = CollisionBuffers {
            info,
            pairs: StorageBuffer::from_slice(&ctx, "collision_pairs", &pairs)?,
            geoms: StorageBuffer::from_slice(&ctx, "collision_geoms", &cgeoms)?,
            mesh_vertices: StorageBuffer::from_slice(&ctx, "mesh_vertices", &verts)?,
            mesh_polygons: StorageBuffer::from_slice(&ctx, "mesh_polygons", &polys)?,
            mesh_polygon_vertices: StorageBuffer::from_slice(&ctx, "mesh_polygon_vertices", &loops)?,
            skin: StorageBuffer::from_slice(&ctx, "collision_skin", &vec![0.0f32; nworld])?,
            aabbs: StorageBuffer::new(&ctx, "geom_aabbs", nworld * ngeom)?,
            contacts: StorageBuffer::new(&ctx, "contacts", nworld * capacity)?,
            counts: StorageBuffer::new(&ctx, "contact_count", nworld)?,
        };
        // dims.ncon on the device: the capacity the kernels (this stage's and
        // the contact solve's) index `contacts` with.
        let dims = sources.iter().find_map(|s| s.buffer("dims")).ok_or_else(|| GpuError::Binding {
            stage: Self::STAGE.into(),
            entry: "collide".into(),
            name: "dims".into(),
        })?;
        ctx.queue.write_buffer(dims, offset_of!(GpuDims, ncon) as u64, bytemuck::bytes_of(&ncon));
        let mut all: Vec<&dyn BufferSource> = vec![&buffers];
        all.extend_from_slice(sources);
        let broadphase = Kernel::new(&ctx, Self::STAGE, "broadphase", nworld * ngeom, &all)?;
        let collide = Kernel::new(&ctx, Self::STAGE, "collide", nworld, &all)?;
        let bytes = (nworld * capacity * size_of::<GpuContact>()).max(4 * nworld) as u64;
        let readback = Readback::new(&ctx, bytes.min(Readback::DEFAULT_SIZE));
        ctx.check_errors()?;
        Ok(Self { ctx, nworld, capacity, pairs, buffers, broadphase, collide, readback })
    }

    /// The stage for the worlds of `dynamics` (its model, state and sizes).
    pub fn for_dynamics(dynamics: &GpuDynamics, capacity: usize) -> Result<Self, GpuError> {
        Self::new(
            dynamics.context().clone(),
            dynamics.model(),
            dynamics.nworld(),
            capacity,
            &[dynamics.gpu_model(), dynamics.gpu_data()],
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

    /// Records the stage into `pass`: bounding volumes, then contacts. Put
    /// it after kinematics (geom poses) and before anything reading `contacts`.
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.broadphase.encode(pass);
        self.collide.encode(pass);
    }

    /// Runs the stage alone in one submission (the geom poses must be
    /// current). Returns without waiting; reads wait for the work.
    pub fn run(&self) -> Result<(), GpuError> {
        let mut encoder =
            self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("collision") });
        {
            let mut pass = encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("collision"), timestamp_writes: None });
            self.encode(&mut pass);
        }
        self.ctx.queue.submit([encoder.finish()]);
        self.ctx.check_errors()
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
            _pad1: [junk; 2],
        };
        self.buffers.contacts.fill(&self.ctx, c)?;
        self.buffers.counts.fill(&self.ctx, junk)?;
        self.buffers.aabbs.fill(&self.ctx, GpuAabb { lo: [nan; 3], _pad0: nan, hi: [nan; 3], _pad1: nan })
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

    /// The raw contact buffer (nworld × capacity records, stale beyond each world's count).
    pub fn read_raw(&self) -> Result<Vec<GpuContact>, GpuError> {
        self.buffers.contacts.read(&self.ctx, &self.readback)
    }

    /// Every world's stored contacts (the first min(count, capacity)), as
    /// CPU f32 contacts ([`contact_from_gpu`]).
    pub fn read_contacts(&self) -> Result<Vec<Vec<Contact<f32>>>, GpuError> {
        let counts = self.read_counts()?;
        let raw = self.read_raw()?;
        Ok((0..self.nworld)
            .map(|w| {
                let n = (counts[w] as usize).min(self.capacity);
                raw[w * self.capacity..w * self.capacity + n].iter().map(contact_from_gpu).collect()
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
        },
    }
}
