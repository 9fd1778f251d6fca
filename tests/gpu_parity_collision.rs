//! GPU collision (`kernels/collision.wgsl`, f32) against the CPU f32 path
//! (`cenic::collision::collide` with `Contacts::<f32>::with_capacity`), from
//! identical geom poses (the CPU's f32 kinematics uploaded to the GPU), on
//! 64+ worlds with different random states per model: the cube toss (states
//! along a CPU-simulated toss and random poses at the table), the clutter of
//! 20 (states along a CPU-simulated pile-up and random piles in the bin),
//! every analytic pair type (random poses near contact, plus face-aligned
//! poses with tiny tilts that exercise the clipping branches), models with
//! geom and model margins and a per-world skin, a capacity overflow, repeated
//! runs (bit-identical), and kinematics + collision in one compute pass.
//! GPU outputs are pre-filled with garbage (NaN floats, 0xDEADBEEF ids).
//!
//! What is compared, per world and per geom pair: the contact count and order
//! (the pairs in the CPU's order, and within a pair the manifold's points with
//! their feature ids), bodies and combined materials exactly, and φ, the
//! contact point and the normal within tolerances.
//!
//! Tolerances. Both sides evaluate the same formulas in f32 in the same
//! order; they differ only by the GPU compiler's freedom (fused multiply-add,
//! the driver's sqrt and division, which WGSL allows a few ulp). Every value
//! is a short chain of such operations on coordinates of magnitude L = the
//! pair's geometry size plus its distance from the world origin, so each
//! difference is a few ulp of L (ulp = 1.2e-7): φ and the contact point
//! within `TOL_LEN` · L, unit normals within `TOL_NORMAL`. A wrong formula
//! gives errors of the order of the geometry (≥ 1e-3 L).
//!
//! Ill-conditioned values and near-ties. Some outputs are sensitive to the
//! last bit of the inputs: a normal from two nearly coincident witness points,
//! or a discrete decision at a threshold (which SAT axis wins, whether a point
//! is below the margin, face-like or not). For every pair whose values exceed
//! the tolerance or whose point structure (count, feature ids) differs, the CPU
//! f32 routine is rerun with the two geoms' poses perturbed by a few ulp
//! (`PERTURB` · L in position, `PERTURB` rad in rotation; 12 trials). A value
//! difference is accepted when it is within 4× the spread the CPU itself shows
//! under those perturbations (counted as "ill-conditioned"); a structure
//! difference is accepted when the CPU's own structure changes under them
//! (counted as a "near-tie"). Near-ties must stay below
//! `MAX_NEAR_TIE_FRACTION` of the pairs in contact. A value beyond 4× the
//! spread is still accepted when it is as accurate as the CPU's: both f32
//! points are compared with the f64 routine on the same poses, and the
//! GPU's error must be within 4× the CPU f32 error (values an f32
//! tolerance decides, such as EPA's normal on curved shapes, land anywhere
//! within that tolerance, depending on each run's rounding path; seen on an
//! H200, whose driver fuses multiply-adds, while lavapipe rounds exactly as
//! the CPU).
//!
//! EPA cap. The GPU stops EPA after 64 expansions where the CPU allows 128
//! (f32 EPA on deep overlaps of curved shapes, mostly ellipsoids, can need
//! more than 64). For a pair that differs beyond the above, the CPU's own
//! expansion count is recomputed (GJK + EPA as `convex_separation` runs
//! them); when it exceeds 64 the pair is counted as "EPA-capped" and judged
//! by the accuracy the cap leaves: φ within `TOL_CAP_DIST` · L, normal within
//! `TOL_CAP_NORMAL` (the depth is insensitive to the normal near such flat
//! optima, so the normal is the looser one), the points' structure free.
//! EPA-capped pairs must stay below `MAX_CAPPED_FRACTION`.
//!
//! EPA witness points. On a deep overlap EPA fixes φ and the normal (to its
//! 1e-5 relative tolerance in f32), but the contact point only to within
//! its last face: on a face-face contact any point of the face is a
//! witness, and which vertices a support function returns on a face is a
//! tie that fused multiply-adds break differently; on curved shapes the
//! last face spans ~√(1e-5) of the size. On an H200 (which fuses, while
//! lavapipe rounds exactly as the CPU) three such points were 1e-4 to
//! 8.6e-4 L apart with φ and n equal. GJK's closest points of separated
//! shapes with parallel closest features are no more unique (an H200: 7e-4
//! L on a convex pile). A pair that uses GJK/EPA and passes on φ and n is
//! accepted with its point within `TOL_EPA_WITNESS` · L (counted as
//! "witness", below `MAX_CAPPED_FRACTION` of the pairs).
//!
//! Witness points are also checked for what makes them valid, against the
//! f64 support functions at the same poses: the gap of the two shapes
//! along the GPU's normal (min over B minus max over A of x·n, at most φ
//! for every direction and equal to it at an optimal normal) is within 4×
//! the CPU's own shortfall of the f64 φ, and the two witness points pos ∓
//! n φ/2 lie on A's and B's support planes along it, likewise. The same
//! check accepts a one-point pair whose feature ids differ where the
//! support function itself ties (a capsule's two ends at a normal across
//! its axis: seen on an H200 at a 2.4e-3 normal difference with φ equal);
//! `witness_check_accepts_cpu_points_and_rejects_moved_ones` shows that it
//! rejects a normal tilted by 0.1 rad or a point moved off the planes.
//! Anything else fails.

#[macro_use]
mod common;

use common::gpu::context;

use cenic::collision::CONVEX_PAIRS;
use cenic::collision::epa::{Epa, epa_rel_tol};
use cenic::collision::gjk::{GjkStatus, gjk, gjk_rel_tol};
use cenic::collision::support::{bounding_radius, core_radius};
use cenic::collision::{
    Contact, ContactPoint, Contacts, Manifold, Shape, collide, narrow_phase_pair, order_pair, pair_margin, support,
};
use cenic::dynamics::{self, Data};
use cenic::gpu::collision::uses_epa;
use cenic::gpu::{Field, GpuCollision, GpuContext, GpuDynamics, GpuError, Stage};
use cenic::math::{Mat3, Quat, Vec3};
use cenic::model::{BodySpec, GeomKind, GeomSpec, JointKind, JointSpec, Material, Model, ModelBuilder, WORLD};
use common::Rng;
use std::sync::Arc;

/// φ and contact points: |GPU − CPU| ≤ TOL_LEN · L (see the module docs).
const TOL_LEN: f64 = 1e-5;
/// Unit normals: |n_GPU − n_CPU| ≤ TOL_NORMAL.
const TOL_NORMAL: f64 = 1e-4;
/// Pose perturbation of the conditioning check (relative position, rad): a few ulp.
const PERTURB: f64 = 5e-7;
/// Largest accepted fraction of near-tie pairs among the pairs in contact.
/// Lavapipe rounds exactly as the CPU (no near-ties at all); NVIDIA's
/// driver contracts multiply-adds, and the plane-mesh poses (a mesh lying
/// on the plane, tiny tilts) then give 13 verified ties in 175 pairs (H200).
const MAX_NEAR_TIE_FRACTION: f64 = 0.1;
/// The GPU's EPA cap (kernels/collision.wgsl EPA_MAX_ITERS).
const GPU_EPA_MAX_ITERS: usize = 64;
/// EPA-capped pairs: φ within this × L.
const TOL_CAP_DIST: f64 = 1e-4;
/// EPA-capped pairs: unit normals within this.
const TOL_CAP_NORMAL: f64 = 0.05;
/// Largest accepted fraction of EPA-capped pairs among the pairs in contact.
const MAX_CAPPED_FRACTION: f64 = 0.05;
/// EPA witness points (deep overlaps, φ and normal agreeing): |Δpos| ≤
/// TOL_EPA_WITNESS · L, and at most `MAX_CAPPED_FRACTION` of the pairs.
const TOL_EPA_WITNESS: f64 = 1e-3;

// ---------------------------------------------------------------- states

/// World poses: one q (f64, quaternions unit) per world.
type States = Vec<Vec<f64>>;

fn quat_mul(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    (Quat::from_array(a) * Quat::from_array(b)).normalize().to_array()
}

fn axis_angle(axis: [f64; 3], angle: f64) -> [f64; 4] {
    Quat::from_axis_angle(Vec3::from_array(axis).normalize(), angle).to_array()
}

/// One of the 24 rotations of the cube (products of quarter turns about x, y, z).
fn cube_rotation(rng: &mut Rng) -> [f64; 4] {
    let quarter = std::f64::consts::FRAC_PI_2;
    let mut q = [1.0, 0.0, 0.0, 0.0];
    for axis in [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] {
        let k = (rng.next_u64() % 4) as f64;
        q = quat_mul(q, axis_angle(axis, k * quarter));
    }
    q
}

/// A tilt about a random axis by one of the angles that exercise the
/// face-like and parallel thresholds (0, ulp-size, below and above 0.02 rad).
fn small_tilt(rng: &mut Rng) -> [f64; 4] {
    let angles = [0.0, 1e-6, 1e-4, 3e-3, 0.015, 0.025, 0.1];
    let a = angles[(rng.next_u64() % angles.len() as u64) as usize];
    axis_angle([rng.normal(), rng.normal(), rng.normal()], a)
}

fn rand_dir(rng: &mut Rng) -> Vec3<f64> {
    Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize()
}

/// Support extent h(n) = max over the geom of (x − origin)·n at rotation `rot`.
fn extent(model: &Model, g: usize, rot: [f64; 4], n: Vec3<f64>) -> f64 {
    let geom = &model.geoms[g];
    let s = Shape {
        kind: geom.kind,
        size: Vec3::from_array(geom.size),
        mesh: geom.mesh.map(|m| &model.meshes[m]),
        hfield: geom.hfield.map(|h| &model.hfields[h]),
        prism: None,
        pos: Vec3::zero(),
        rot: Quat::from_array(rot).to_mat3(),
    };
    support::support(&s, n).0.dot(n)
}

/// A rough size of geom g (m): its bounding radius, or 0.1 for planes.
fn geom_size(model: &Model, g: usize) -> f64 {
    let r = model.geoms[g].rbound;
    if r.is_finite() { r } else { 0.1 }
}

/// Free-joint poses for a two-geom model (`pair_model`): random poses near
/// contact, and in 40 % of the worlds face-aligned poses (a cube rotation and
/// a small tilt relative to A, B placed along one of A's axes) that exercise
/// clipping and ties; the gap between the supports along the placement
/// direction is uniform in `gap` × the smaller size (plane pairs: fixed
/// −30 % to +15 %).
fn pair_states(model: &Model, nworld: usize, seed: u64, gap: (f64, f64)) -> States {
    let mut rng = Rng::new(seed);
    let plane = model.geoms[0].kind == GeomKind::Plane;
    let (ga, gb) = (0usize, 1usize);
    let (sa, sb) = (geom_size(model, ga), geom_size(model, gb));
    let mut out = Vec::new();
    for w in 0..nworld {
        let mut q = model.qpos0.clone();
        let aligned = w % 5 < 2;
        if plane {
            let p0 = Vec3::from_array(model.geoms[0].pos);
            let prot = model.geoms[0].quat;
            let n = Quat::from_array(prot).rotate(Vec3::new(0.0, 0.0, 1.0));
            let rb = if aligned {
                quat_mul(quat_mul(prot, cube_rotation(&mut rng)), small_tilt(&mut rng))
            } else {
                rng.quat()
            };
            let gap = rng.range(-0.3, 0.15) * sb;
            let tangent = Quat::from_array(prot).rotate(Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 0.0));
            let pb = p0 + tangent + n * (extent(model, gb, rb, -n) + gap);
            q[0..3].copy_from_slice(&pb.to_array());
            q[3..7].copy_from_slice(&rb);
        } else {
            let pa = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
            let ra = rng.quat();
            let (rb, n) = if aligned {
                let rb = quat_mul(quat_mul(ra, cube_rotation(&mut rng)), small_tilt(&mut rng));
                let mut axis = [0.0; 3];
                axis[(rng.next_u64() % 3) as usize] = if rng.uniform() < 0.5 { -1.0 } else { 1.0 };
                (rb, Quat::from_array(ra).rotate(Vec3::from_array(axis)))
            } else {
                (rng.quat(), rand_dir(&mut rng))
            };
            let gap = rng.range(gap.0, gap.1) * sa.min(sb);
            let mut pb = pa + n * (extent(model, ga, ra, n) + extent(model, gb, rb, -n) + gap);
            // Sideways offset: across faces when aligned, anywhere otherwise.
            let t = rand_dir(&mut rng);
            let t = (t - n * t.dot(n)).normalize();
            pb += t * rng.range(0.0, if aligned { 0.8 } else { 0.3 }) * sa.max(sb);
            q[0..3].copy_from_slice(&pa.to_array());
            q[3..7].copy_from_slice(&ra);
            q[7..10].copy_from_slice(&pb.to_array());
            q[10..14].copy_from_slice(&rb);
        }
        out.push(q);
    }
    out
}

/// Two geoms of kinds (a, b) with the given sizes: a plane (tilted, off the
/// origin) on the world when `a` is a plane, else each on its own free body.
fn pair_model(a: (GeomKind, [f64; 3]), b: (GeomKind, [f64; 3]), margin: f64) -> Model {
    let mut m = ModelBuilder::new(&format!("{}-{}", a.0.name(), b.0.name()));
    // Meshes: a random hull (mostly triangles) for A, a 12-sided prism
    // (large polygons) for B.
    let mut rng = Rng::new(77);
    let hull: Vec<[f64; 3]> = (0..14).map(|_| [0.1 * rng.normal(), 0.08 * rng.normal(), 0.06 * rng.normal()]).collect();
    let prism: Vec<[f64; 3]> = (0..24)
        .map(|i| {
            let t = std::f64::consts::TAU * (i / 2) as f64 / 12.0;
            [0.1 * t.cos(), 0.1 * t.sin(), if i % 2 == 0 { -0.07 } else { 0.07 }]
        })
        .collect();
    let mesh_a = m.add_mesh("hull", &hull).unwrap();
    let mesh_b = m.add_mesh("prism", &prism).unwrap();
    let mesh = |k: GeomKind, id| (k == GeomKind::Mesh).then_some(id);
    let mat = |k: f64| Material { stiffness: k, dissipation: 5.0, mu_static: 0.6, mu_dynamic: 0.4, soft: None };
    if a.0 == GeomKind::Plane {
        m.add_geom(GeomSpec {
            pos: [0.1, -0.2, 0.05],
            quat: Quat::new(0.97, 0.1, -0.2, 0.05).normalize().to_array(),
            material: mat(f64::INFINITY),
            margin,
            ..GeomSpec::new("ga", a.0, a.1, WORLD)
        });
    } else {
        let body = m.add_body(BodySpec::new("a", WORLD, [0.0; 3]));
        m.add_joint(JointSpec::new("ja", JointKind::Free, body));
        m.add_geom(GeomSpec {
            material: mat(3e4),
            margin,
            mesh: mesh(a.0, mesh_a),
            ..GeomSpec::new("ga", a.0, a.1, body)
        });
    }
    let body = m.add_body(BodySpec::new("b", WORLD, [0.0; 3]));
    m.add_joint(JointSpec::new("jb", JointKind::Free, body));
    m.add_geom(GeomSpec { material: mat(1e5), mesh: mesh(b.0, mesh_b), ..GeomSpec::new("gb", b.0, b.1, body) });
    m.build().unwrap()
}

/// States along a CPU (f64) simulation from keyframe `key` (or qpos0), one
/// every `every` steps of `h` seconds.
fn simulated_states(model: &Arc<Model>, key: Option<&str>, h: f64, every: usize, count: usize) -> States {
    let mut sim = cenic::integrator::Simulator::<f64>::new(model.clone());
    if let Some(k) = key {
        sim.reset_to_keyframe(k).unwrap();
    }
    let mut out = Vec::new();
    while out.len() < count {
        for _ in 0..every {
            sim.step(h).unwrap();
        }
        out.push(sim.data.q.clone());
    }
    out
}

/// Random free-body poses: positions uniform in the box [lo, hi] (m), random orientations.
fn random_free_poses(model: &Model, nworld: usize, lo: [f64; 3], hi: [f64; 3], seed: u64) -> States {
    let mut rng = Rng::new(seed);
    (0..nworld)
        .map(|_| {
            let mut q = model.qpos0.clone();
            for j in &model.joints {
                assert_eq!(j.kind, JointKind::Free);
                let a = j.qpos_adr;
                for k in 0..3 {
                    q[a + k] = rng.range(lo[k], hi[k]);
                }
                q[a + 3..a + 7].copy_from_slice(&rng.quat());
            }
            q
        })
        .collect()
}

// ---------------------------------------------------------------- CPU reference and GPU run

/// CPU f32 kinematics of every world.
fn cpu_data(model: &Model, states: &States) -> Vec<Data<f32>> {
    states
        .iter()
        .map(|q| {
            let mut d = Data::<f32>::new(model);
            for (x, &y) in d.q.iter_mut().zip(q) {
                *x = y as f32;
            }
            dynamics::kinematics(model, &mut d);
            d
        })
        .collect()
}

/// CPU f32 collide of one world.
fn cpu_collide(model: &Model, d: &Data<f32>, capacity: usize, skin: f32) -> Contacts<f32> {
    let mut c = Contacts::<f32>::with_capacity(model, capacity);
    c.skin = skin as f64;
    collide(model, d, &mut c);
    c
}

/// A GPU instance with the CPU's geom poses uploaded.
fn gpu_setup(
    ctx: &Arc<GpuContext>,
    model: &Arc<Model>,
    data: &[Data<f32>],
    capacity: usize,
    skin: &[f32],
) -> (GpuDynamics, GpuCollision) {
    let gpu = GpuDynamics::new(ctx.clone(), model.clone(), data.len()).unwrap();
    for f in [Field::GeomXpos, Field::GeomXmat] {
        let flat: Vec<f32> = data.iter().flat_map(|d| f.from_data(d).unwrap()).collect();
        gpu.set_field(f, &flat).unwrap();
    }
    let coll = GpuCollision::for_dynamics(&gpu, capacity).unwrap();
    coll.set_skin(skin).unwrap();
    coll.fill_garbage().unwrap();
    (gpu, coll)
}

// ---------------------------------------------------------------- comparison

/// Accumulated comparison results of one model.
#[derive(Default, Debug)]
struct Report {
    worlds: usize,
    contacts: usize,
    pairs_in_contact: usize,
    /// Largest errors relative to the tolerance scale: φ / L, point / L, normal.
    max_dist: f64,
    max_pos: f64,
    max_normal: f64,
    ill_conditioned: usize,
    near_ties: usize,
    epa_capped: usize,
    epa_witness: usize,
}

/// Expansions the CPU f32 EPA makes for pair (a, b) (`convex_separation`'s
/// GJK, then EPA to the coarse and the fine tolerance), or 0 without EPA.
fn cpu_epa_expansions(model: &Model, d: &Data<f32>, a: usize, b: usize, skin: f32) -> usize {
    let (ga, gb) = order_pair(model, a, b);
    if !uses_epa(model.geoms[ga].kind, model.geoms[gb].kind) {
        return 0;
    }
    let (sa, sb) = (Shape::of_geom(model, d, ga), Shape::of_geom(model, d, gb));
    // convex_contact works relative to A's origin.
    let a0 = Shape { pos: Vec3::zero(), ..sa };
    let b0 = Shape { pos: sb.pos - sa.pos, ..sb };
    let margin = (pair_margin(model, ga, gb) + skin as f64) as f32;
    let scale = (bounding_radius(&a0) + bounding_radius(&b0) + b0.pos.norm()).max(f32::MIN_POSITIVE);
    let tol = epa_rel_tol::<f32>() * scale;
    let g = gjk(&a0, &b0, margin + core_radius(&a0) + core_radius(&b0), scale, 1e-3f32.max(gjk_rel_tol::<f32>()));
    if g.status != GjkStatus::Overlapping {
        return 0;
    }
    let mut e = Epa::new(&a0, &b0, &g.simplex, scale);
    e.run(tol.max(1e-6 * scale));
    e.run(tol);
    e.result().iters
}

/// Length scale L of a pair (m): sizes plus distance from the world origin.
fn pair_scale(model: &Model, d: &Data<f32>, a: usize, b: usize) -> f64 {
    let mut l = 0.0;
    for g in [a, b] {
        if model.geoms[g].kind != GeomKind::Plane {
            l += geom_size(model, g) + d.geom_xpos[g].norm() as f64;
        }
    }
    l.max(0.1)
}

/// The CPU f32 manifold of pair (a, b) with the poses perturbed (trial > 0)
/// by about `PERTURB` (relative position, rad).
fn perturbed_points(model: &Model, d: &Data<f32>, a: usize, b: usize, skin: f32, trial: u64) -> Vec<ContactPoint<f32>> {
    let mut d = d.clone();
    if trial > 0 {
        let mut rng = Rng::new(1000 + trial);
        let l = pair_scale(model, &d, a, b);
        for g in [a, b] {
            if model.geoms[g].kind == GeomKind::Plane && trial.is_multiple_of(2) {
                continue;
            }
            let dp = rand_dir(&mut rng) * (PERTURB * l * rng.uniform());
            d.geom_xpos[g] += dp.cast();
            let w = rand_dir(&mut rng) * (PERTURB * rng.uniform());
            let w = w.cast::<f32>();
            let skew = Mat3::from_rows([[1.0, -w.z, w.y], [w.z, 1.0, -w.x], [-w.y, w.x, 1.0]]);
            d.geom_xmat[g] = skew * d.geom_xmat[g];
        }
    }
    let mut m = Manifold::<f32>::default();
    narrow_phase_pair(model, &d, a, b, skin as f64, &mut m);
    m.as_slice().to_vec()
}

/// The f64 manifold of pair (a, b) at the f32 poses of `d` (the same
/// input, evaluated in f64 with f64's tolerances): the truth that the CPU
/// and GPU f32 points both approximate.
fn f64_points(model: &Model, d: &Data<f32>, a: usize, b: usize, skin: f32) -> Vec<ContactPoint<f64>> {
    let mut e = Data::<f64>::new(model);
    for g in 0..model.geoms.len() {
        e.geom_xpos[g] = d.geom_xpos[g].cast();
        e.geom_xmat[g] = Mat3::from_rows(d.geom_xmat[g].m.map(|r| r.map(|x| x as f64)));
        e.geom_size_scale[g] = d.geom_size_scale[g] as f64;
    }
    let mut m = Manifold::<f64>::default();
    narrow_phase_pair(model, &e, a, b, skin as f64, &mut m);
    m.as_slice().to_vec()
}

/// Gap of the pair's geoms along the unit direction n (A to B, f64 shapes at
/// the f32 poses of `d`): min over B of x·n minus max over A of x·n (m).
/// Every direction's gap is at most the signed distance φ, with equality at
/// the contact normal (overlapping or not), so `gap(n) ≈ φ` says n is an
/// optimal normal even where the optimum is not unique.
fn gap_along(model: &Model, d: &Data<f32>, geom: [usize; 2], n: Vec3<f64>) -> (f64, f64, f64) {
    let mut e = Data::<f64>::new(model);
    for g in geom {
        e.geom_xpos[g] = d.geom_xpos[g].cast();
        e.geom_xmat[g] = Mat3::from_rows(d.geom_xmat[g].m.map(|r| r.map(|x| x as f64)));
        e.geom_size_scale[g] = d.geom_size_scale[g] as f64;
    }
    let (sa, sb) = (Shape::of_geom(model, &e, geom[0]), Shape::of_geom(model, &e, geom[1]));
    let ha = support::support(&sa, n).0.dot(n);
    let lb = support::support(&sb, -n).0.dot(n);
    (lb - ha, ha, lb)
}

/// Whether a one-point GJK/EPA contact `y` is a valid witness of the pair
/// (see the module docs, "Witness points"): its normal is as optimal as the
/// CPU's `x` (gap along it within 4× the CPU's own shortfall of the f64 φ,
/// or `TOL_LEN` · L), and its two witness points pos ∓ n φ/2 lie on the
/// support planes of A and B along its normal within the same bound.
/// Returns the measured shortfalls (/ L) as the error message otherwise.
fn valid_witness(
    model: &Model,
    d: &Data<f32>,
    skin: f32,
    x: &Contact<f32>,
    y: &Contact<f32>,
    l: f64,
) -> Result<(), String> {
    let t = f64_points(model, d, x.geom[0], x.geom[1], skin);
    let phi = t.iter().map(|p| p.dist).fold(f64::INFINITY, f64::min);
    if !phi.is_finite() {
        return Err("no f64 contact".into());
    }
    let short = |c: &Contact<f32>| {
        let n = c.normal.cast::<f64>().normalize();
        let (gap, ha, lb) = gap_along(model, d, c.geom, n);
        let pa = c.pos.cast::<f64>() - n * (c.dist as f64 * 0.5);
        let pb = pa + n * c.dist as f64;
        [(phi - gap) / l, (pa.dot(n) - ha).abs() / l, (pb.dot(n) - lb).abs() / l]
    };
    let (sx, sy) = (short(x), short(y));
    let ok = (0..3).all(|k| sy[k] <= TOL_LEN.max(4.0 * sx[k]));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "witness check (f64 φ − gap along n, off A's plane, off B's plane, / L): CPU {:.1e} {:.1e} {:.1e}, GPU {:.1e} {:.1e} {:.1e}",
            sx[0], sx[1], sx[2], sy[0], sy[1], sy[2]
        ))
    }
}

fn features(p: &[ContactPoint<f32>]) -> Vec<[u32; 2]> {
    p.iter().map(|c| c.feature).collect()
}

/// Compares one world's GPU contacts with the CPU's (see the module docs).
#[allow(clippy::too_many_arguments)]
fn compare_world(
    model: &Model,
    d: &Data<f32>,
    skin: f32,
    w: usize,
    cpu: &[Contact<f32>],
    gpu: &[Contact<f32>],
    report: &mut Report,
) {
    report.worlds += 1;
    // Group both lists by geom pair, keeping the order of first appearance.
    let group = |list: &[Contact<f32>]| {
        let mut g: Vec<([usize; 2], Vec<Contact<f32>>)> = Vec::new();
        for c in list {
            match g.last_mut() {
                Some((k, v)) if *k == c.geom => v.push(*c),
                _ => g.push((c.geom, vec![*c])),
            }
        }
        g
    };
    let (gc, gg) = (group(cpu), group(gpu));
    // Pairs in contact on either side; each must appear once, in the CPU's
    // (ascending) order on both sides.
    let key = |k: [usize; 2]| (k[0].min(k[1]), k[0].max(k[1]));
    for list in [&gc, &gg] {
        for i in 1..list.len() {
            assert!(
                key(list[i - 1].0) < key(list[i].0),
                "{} world {w}: pairs out of order or split: {:?} then {:?}",
                model.name,
                list[i - 1].0,
                list[i].0
            );
        }
    }
    let mut pairs: Vec<[usize; 2]> = gc.iter().chain(&gg).map(|(k, _)| *k).collect();
    pairs.sort_by_key(|&k| key(k));
    pairs.dedup();
    for pair in pairs {
        report.pairs_in_contact += 1;
        let empty = vec![];
        let c = gc.iter().find(|(k, _)| *k == pair).map_or(&empty, |(_, v)| v);
        let g = gg.iter().find(|(k, _)| *k == pair).map_or(&empty, |(_, v)| v);
        let (a, b) = (pair[0], pair[1]);
        let l = pair_scale(model, d, a, b);
        let same_structure = c.len() == g.len() && c.iter().zip(g).all(|(x, y)| x.feature == y.feature);
        let trials: Vec<Vec<ContactPoint<f32>>> = Vec::new();
        let mut trials_cache = trials;
        let mut get_trials = || {
            if trials_cache.is_empty() {
                trials_cache = (1..=12).map(|t| perturbed_points(model, d, a, b, skin, t)).collect();
            }
            trials_cache.clone()
        };
        let capped = || cpu_epa_expansions(model, d, a, b, skin) > GPU_EPA_MAX_ITERS;
        if !same_structure {
            let cpu_f = c.iter().map(|x| x.feature).collect::<Vec<_>>();
            let trials = get_trials();
            let flips = trials.iter().any(|t| features(t) != cpu_f);
            if !flips && capped() {
                report.epa_capped += 1;
                let deepest = |v: &[Contact<f32>]| v.iter().map(|x| x.dist).fold(f32::INFINITY, f32::min) as f64;
                let ed = (deepest(c) - deepest(g)).abs() / l;
                assert!(
                    ed <= TOL_CAP_DIST,
                    "{} world {w} pair {pair:?} (EPA-capped): deepest φ differs by {ed:.2e} L",
                    model.name
                );
                continue;
            }
            // A tie of the support function itself (e.g. a capsule's two
            // ends at a normal across its axis): one point each, the same φ,
            // and the GPU's a valid witness.
            let witness = !flips
                && c.len() == 1
                && g.len() == 1
                && uses_epa(model.geoms[a].kind, model.geoms[b].kind)
                && (c[0].dist - g[0].dist).abs() as f64 / l <= TOL_LEN
                && (c[0].pos - g[0].pos).norm() as f64 / l <= TOL_EPA_WITNESS;
            if witness {
                if let Err(e) = valid_witness(model, d, skin, &c[0], &g[0], l) {
                    panic!(
                        "{} world {w} pair {pair:?} (witness, features differ): {e}\n cpu {c:?}\n gpu {g:?}",
                        model.name
                    );
                }
                report.epa_witness += 1;
                continue;
            }
            assert!(
                flips,
                "{} world {w} pair {pair:?}: GPU points differ from the CPU's, and the CPU is stable under \
                 perturbation (not a near-tie)\n cpu {c:#?}\n gpu {g:#?}",
                model.name
            );
            report.near_ties += 1;
            continue;
        }
        for (i, (x, y)) in c.iter().zip(g).enumerate() {
            report.contacts += 1;
            assert_eq!(x.body, y.body, "{} world {w} pair {pair:?}: bodies", model.name);
            let mx = [x.material.stiffness, x.material.dissipation, x.material.mu_static, x.material.mu_dynamic];
            let my = [y.material.stiffness, y.material.dissipation, y.material.mu_static, y.material.mu_dynamic];
            for (u, v) in mx.iter().zip(&my) {
                assert_eq!(*u as f32, *v as f32, "{} world {w} pair {pair:?}: material {mx:?} vs {my:?}", model.name);
            }
            assert!(
                y.dist.is_finite() && y.pos.is_finite() && y.normal.is_finite(),
                "{} world {w} pair {pair:?}: non-finite GPU contact {y:?}",
                model.name
            );
            let ed = (x.dist - y.dist).abs() as f64 / l;
            let ep = (x.pos - y.pos).norm() as f64 / l;
            let en = (x.normal - y.normal).norm() as f64;
            if ed > TOL_LEN || ep > TOL_LEN || en > TOL_NORMAL {
                // Conditioning: the CPU's own spread under perturbation.
                let trials = get_trials();
                let mut sd = 0.0f64;
                let mut sp = 0.0f64;
                let mut sn = 0.0f64;
                for t in &trials {
                    if t.len() == c.len() && features(t) == features_of(c) {
                        sd = sd.max((t[i].dist - x.dist).abs() as f64 / l);
                        sp = sp.max((t[i].pos - x.pos).norm() as f64 / l);
                        sn = sn.max((t[i].normal - x.normal).norm() as f64);
                    }
                }
                let (mut okd, mut okp, mut okn) =
                    (ed <= TOL_LEN.max(4.0 * sd), ep <= TOL_LEN.max(4.0 * sp), en <= TOL_NORMAL.max(4.0 * sn));
                let mut ok = okd && okp && okn;
                // Beyond that spread: as accurate as the CPU f32 point against
                // the f64 truth (values set by an f32 tolerance, e.g. EPA's
                // 1e-5 depth leaving ~3e-3 in the normal of curved shapes,
                // differ by whatever path each f32 run took to it).
                let mut truth_err = None;
                if !ok {
                    let t = f64_points(model, d, a, b, skin);
                    if t.len() == c.len() && t.iter().zip(c).all(|(p, q)| p.feature == q.feature) {
                        let t = &t[i];
                        let err = |p: &Contact<f32>| {
                            (
                                (p.dist as f64 - t.dist).abs() / l,
                                (p.pos.cast::<f64>() - t.pos).norm() / l,
                                (p.normal.cast::<f64>() - t.normal).norm(),
                            )
                        };
                        let (cd, cp, cn) = err(x);
                        let (gd, gp, gn) = err(y);
                        okd |= gd <= TOL_LEN.max(4.0 * cd.max(sd));
                        okp |= gp <= TOL_LEN.max(4.0 * cp.max(sp));
                        okn |= gn <= TOL_NORMAL.max(4.0 * cn.max(sn));
                        ok = okd && okp && okn;
                        truth_err = Some(format!(
                            "against f64: CPU f32 {cd:.1e}, {cp:.1e}, {cn:.1e}; GPU {gd:.1e}, {gp:.1e}, {gn:.1e}"
                        ));
                    }
                }
                // EPA's witness point: φ and the normal agree, the point lies
                // elsewhere on the contact face (see the module docs).
                let kinds = (model.geoms[a].kind, model.geoms[b].kind);
                if !ok && okd && okn && uses_epa(kinds.0, kinds.1) {
                    assert!(
                        ep <= TOL_EPA_WITNESS,
                        "{} world {w} pair {pair:?} point {i} (witness): |Δpos|/L {ep:.2e} ({}; L = {l:.3} m)",
                        model.name,
                        truth_err.as_deref().unwrap_or("no f64 point of the same features")
                    );
                    if c.len() == 1
                        && let Err(e) = valid_witness(model, d, skin, x, y, l)
                    {
                        panic!("{} world {w} pair {pair:?} point {i}: {e}\n cpu {x:?}\n gpu {y:?}", model.name);
                    }
                    report.epa_witness += 1;
                    continue;
                }
                if !ok && capped() {
                    report.epa_capped += 1;
                    assert!(
                        ed <= TOL_CAP_DIST && en <= TOL_CAP_NORMAL,
                        "{} world {w} pair {pair:?} point {i} (EPA-capped): |Δφ|/L {ed:.2e}, |Δn| {en:.2e}\n cpu {x:?}\n gpu {y:?}",
                        model.name
                    );
                    continue;
                }
                assert!(
                    ok,
                    "{} world {w} pair {pair:?} point {i}: |Δφ|/L {ed:.2e}, |Δpos|/L {ep:.2e}, |Δn| {en:.2e} \
                     (CPU spread under perturbation {sd:.1e}, {sp:.1e}, {sn:.1e}; {}; L = {l:.3} m)\n cpu {x:?}\n gpu {y:?}",
                    model.name,
                    truth_err.as_deref().unwrap_or("no f64 point of the same features")
                );
                report.ill_conditioned += 1;
            } else {
                report.max_dist = report.max_dist.max(ed);
                report.max_pos = report.max_pos.max(ep);
                report.max_normal = report.max_normal.max(en);
            }
        }
    }
}

fn features_of(c: &[Contact<f32>]) -> Vec<[u32; 2]> {
    c.iter().map(|x| x.feature).collect()
}

/// Runs CPU and GPU on `states` and compares every world. Returns the report.
fn check_parity(model: Model, states: &States, skin: &[f32], capacity: usize) -> Option<Report> {
    let ctx = context()?;
    let model = Arc::new(model);
    let n = states.len();
    assert!(n >= 64);
    let data = cpu_data(&model, states);
    let start = std::time::Instant::now();
    let (_gpu, coll) = gpu_setup(&ctx, &model, &data, capacity, skin);
    coll.run().unwrap();
    let got = coll.read_contacts().unwrap();
    let counts = coll.read_counts().unwrap();
    let gpu_time = start.elapsed();
    let mut report = Report::default();
    let mut total = 0;
    for w in 0..n {
        let cpu = cpu_collide(&model, &data[w], capacity, skin[w]);
        assert_eq!(cpu.overflow, 0, "{}: raise the test capacity", model.name);
        total += cpu.list.len();
        compare_world(&model, &data[w], skin[w], w, &cpu.list, &got[w], &mut report);
        assert_eq!(counts[w] as usize, got[w].len(), "{} world {w}: count vs stored", model.name);
    }
    eprintln!(
        "{}: {n} worlds, {total} CPU contacts in {} pairs; GPU run + readback {gpu_time:?}; \
         max |Δφ|/L {:.1e}, |Δpos|/L {:.1e}, |Δn| {:.1e}; ill-conditioned {}, near-ties {}, EPA-capped {}, \
         EPA witness {}",
        model.name,
        report.pairs_in_contact,
        report.max_dist,
        report.max_pos,
        report.max_normal,
        report.ill_conditioned,
        report.near_ties,
        report.epa_capped,
        report.epa_witness
    );
    assert!(total > 0, "{}: the states should produce contacts", model.name);
    assert!(
        (report.near_ties as f64) <= MAX_NEAR_TIE_FRACTION * report.pairs_in_contact as f64,
        "{}: too many near-ties: {report:?}",
        model.name
    );
    assert!(
        (report.epa_witness as f64) <= MAX_CAPPED_FRACTION * report.pairs_in_contact as f64,
        "{}: too many EPA witness points apart: {report:?}",
        model.name
    );
    assert!(
        (report.epa_capped as f64) <= MAX_CAPPED_FRACTION * report.pairs_in_contact as f64,
        "{}: too many EPA-capped pairs: {report:?}",
        model.name
    );
    Some(report)
}

// ---------------------------------------------------------------- tests

#[test]
fn cube_toss_parity() {
    let model = Arc::new(cenic::scenes::cube_toss());
    // Along a toss (bounces, rolling, rest) and random poses at the table.
    let mut states = simulated_states(&model, Some("toss"), 1e-3, 15, 64);
    let mut rng = Rng::new(11);
    for _ in 0..64 {
        let mut q = model.qpos0.clone();
        q[0] = rng.range(-1.0, 1.0);
        q[1] = rng.range(-1.0, 1.0);
        q[2] = rng.range(-0.04, 0.12);
        let r = if rng.uniform() < 0.5 { rng.quat() } else { quat_mul(cube_rotation(&mut rng), small_tilt(&mut rng)) };
        q[3..7].copy_from_slice(&r);
        states.push(q);
    }
    let n = states.len();
    check_parity((*model).clone(), &states, &vec![0.0; n], 16);
}

#[test]
fn clutter_parity() {
    let model = Arc::new(cenic::scenes::clutter(20, Material::default()));
    // Along a CPU-simulated pile-up, then random piles in the bin (objects
    // overlapping each other, the walls and the floor).
    let mut states = simulated_states(&model, None, 2e-3, 20, 32);
    states.extend(random_free_poses(&model, 48, [-0.2, -0.2, 0.0], [0.2, 0.2, 0.35], 12));
    let n = states.len();
    check_parity((*model).clone(), &states, &vec![0.0; n], 400);
}

/// Shapes for the pair tests: two sizes per kind (A's, B's).
fn shape(kind: GeomKind, second: bool) -> (GeomKind, [f64; 3]) {
    use GeomKind::*;
    let size = match (kind, second) {
        (Plane, _) => [1.0, 1.0, 0.1],
        (Sphere, false) => [0.1, 0.0, 0.0],
        (Sphere, true) => [0.13, 0.0, 0.0],
        (Capsule, false) => [0.05, 0.15, 0.0],
        (Capsule, true) => [0.08, 0.1, 0.0],
        (Box, false) => [0.1, 0.07, 0.05],
        (Box, true) => [0.12, 0.04, 0.09],
        (Cylinder, false) => [0.08, 0.1, 0.0],
        (Cylinder, true) => [0.1, 0.06, 0.0],
        (Ellipsoid, false) => [0.1, 0.07, 0.05],
        (Ellipsoid, true) => [0.06, 0.12, 0.08],
        (Mesh | Hfield, _) => [1.0, 1.0, 1.0],
    };
    (kind, size)
}

fn check_pairs(kinds: &[(GeomKind, GeomKind)], seed: u64, gap: (f64, f64)) {
    if context().is_none() {
        eprintln!("SKIPPED: no GPU adapter");
        return;
    }
    for (i, &(a, b)) in kinds.iter().enumerate() {
        let model = pair_model(shape(a, false), shape(b, true), 0.0);
        let states = pair_states(&model, 256, seed + i as u64, gap);
        check_parity(model, &states, &[0.0; 256], 16);
    }
}

#[test]
fn analytic_pairs_parity() {
    use GeomKind::*;
    check_pairs(
        &[
            (Plane, Sphere),
            (Plane, Capsule),
            (Plane, Box),
            (Sphere, Sphere),
            (Sphere, Capsule),
            (Sphere, Box),
            (Capsule, Capsule),
            (Capsule, Box),
            (Box, Box),
        ],
        100,
        (-0.3, 0.1),
    );
}

/// Geom margins, a model margin and per-world skins (contacts from a
/// distance; bounding volumes inflated accordingly).
#[test]
fn margins_and_skin_parity() {
    use GeomKind::*;
    if context().is_none() {
        eprintln!("SKIPPED: no GPU adapter");
        return;
    }
    let skins = [0.0f32, 0.0078125, 0.03125, 0.1];
    for (i, &(a, b)) in [(Plane, Box), (Box, Box), (Capsule, Box), (Sphere, Capsule)].iter().enumerate() {
        let mut model = pair_model(shape(a, false), shape(b, true), 0.02);
        model.options.margin = if i % 2 == 0 { 0.01 } else { 0.0 };
        let states = pair_states(&model, 128, 300 + i as u64, (-0.3, 0.1));
        let skin: Vec<f32> = (0..128).map(|w| skins[w % skins.len()]).collect();
        check_parity(model, &states, &skin, 16);
    }
    let mut model = cenic::scenes::clutter(20, Material::default());
    for g in model.geoms.iter_mut().skip(3) {
        g.margin = 0.005;
    }
    let states = random_free_poses(&model, 64, [-0.2, -0.2, 0.0], [0.2, 0.2, 0.35], 13);
    let skin: Vec<f32> = (0..64).map(|w| skins[w % skins.len()]).collect();
    check_parity(model, &states, &skin, 600);
}

/// A small capacity: worlds that overflow are reported with their index and
/// excess (the CPU's `Contacts::overflow`), their stored contacts are the
/// CPU's kept prefix, and the other worlds' contacts are bit-identical to a
/// run with room to spare.
#[test]
fn overflow_is_reported_per_world() {
    let ctx = gpu_or_skip!();
    let model = Arc::new(cenic::scenes::clutter(20, Material::default()));
    let mut states = random_free_poses(&model, 64, [-0.2, -0.2, 0.0], [0.2, 0.2, 0.35], 14);
    // Half the worlds: all but 3 objects lifted far above the bin (few contacts).
    for q in states.iter_mut().skip(32) {
        for j in model.joints.iter().skip(3) {
            q[j.qpos_adr + 2] += 10.0 + j.qpos_adr as f64;
        }
    }
    let n = states.len();
    let data = cpu_data(&model, &states);
    let cap = 24;
    let (_g1, small) = gpu_setup(&ctx, &model, &data, cap, &vec![0.0; n]);
    let (_g2, large) = gpu_setup(&ctx, &model, &data, 600, &vec![0.0; n]);
    small.run().unwrap();
    large.run().unwrap();
    let (got_small, got_large) = (small.read_contacts().unwrap(), large.read_contacts().unwrap());
    let overflow = small.overflow().unwrap();
    assert!(large.overflow().unwrap().is_empty());
    let mut expected = Vec::new();
    let mut report = Report::default();
    for w in 0..n {
        let cpu = cpu_collide(&model, &data[w], cap, 0.0);
        if cpu.overflow > 0 {
            expected.push((w, cpu.overflow));
        }
        assert_eq!(got_small[w].len(), cpu.list.len(), "world {w}: stored contacts");
        compare_world(&model, &data[w], 0.0, w, &cpu.list, &got_small[w], &mut report);
        // The kept prefix of the big run, bit for bit.
        let prefix = &got_large[w][..got_large[w].len().min(cap)];
        assert_eq!(got_small[w].len(), prefix.len(), "world {w}");
        for (x, y) in got_small[w].iter().zip(prefix) {
            assert_eq!(format!("{x:?}"), format!("{y:?}"), "world {w}: capacity changed a stored contact");
        }
    }
    eprintln!("capacity {cap}: overflowing worlds (index, excess) {overflow:?}");
    assert!(overflow.len() >= 8 && overflow.iter().all(|&(w, _)| w < 32), "{overflow:?}");
    // The worlds within capacity do have contacts (so "unchanged" is tested).
    let within = (32..n).filter(|&w| !got_small[w].is_empty()).count();
    eprintln!("worlds within capacity with contacts: {within} of {}", n - 32);
    assert!(within >= 12);
    assert_eq!(overflow, expected);
}

/// Same inputs, bit-identical outputs: twice on one instance and on a fresh one.
#[test]
fn runs_are_bit_identical() {
    let ctx = gpu_or_skip!();
    let model = Arc::new(cenic::scenes::clutter(20, Material::default()));
    let states = random_free_poses(&model, 96, [-0.2, -0.2, 0.0], [0.2, 0.2, 0.35], 15);
    let data = cpu_data(&model, &states);
    let skin: Vec<f32> = (0..states.len()).map(|w| (w % 3) as f32 * 0.01).collect();
    let run = |coll: &GpuCollision| -> (Vec<u32>, Vec<u32>) {
        coll.fill_garbage().unwrap();
        coll.run().unwrap();
        let raw = coll.read_raw().unwrap();
        (coll.read_counts().unwrap(), bytemuck::cast_slice(&raw).to_vec())
    };
    let (_g, a) = gpu_setup(&ctx, &model, &data, 300, &skin);
    let first = run(&a);
    let second = run(&a);
    let (_g2, fresh) = gpu_setup(&ctx, &model, &data, 300, &skin);
    let third = run(&fresh);
    assert!(first.0.iter().sum::<u32>() > 1000);
    assert!(first == second, "two runs on one instance differ");
    assert!(first == third, "a fresh instance differs");
}

/// Kinematics and collision in one compute pass (as a step encodes them),
/// from q on the GPU: the same contacts as the CPU up to the kinematics'
/// rounding (compared with the same tolerances and near-tie rule).
#[test]
fn kinematics_and_collision_in_one_pass() {
    let ctx = gpu_or_skip!();
    let model = Arc::new(cenic::scenes::clutter(20, Material::default()));
    let mut states = simulated_states(&model, None, 2e-3, 25, 16);
    states.extend(random_free_poses(&model, 48, [-0.2, -0.2, 0.0], [0.2, 0.2, 0.35], 16));
    let n = states.len();
    let data = cpu_data(&model, &states);
    let gpu = GpuDynamics::new(ctx.clone(), model.clone(), n).unwrap();
    let q: Vec<f32> = states.iter().flatten().map(|&x| x as f32).collect();
    gpu.set_state(&q, &vec![0.0; n * model.nv]).unwrap();
    gpu.fill_outputs(f32::NAN).unwrap();
    let coll = GpuCollision::for_dynamics(&gpu, 500).unwrap();
    coll.fill_garbage().unwrap();
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        gpu.encode(&mut pass, Stage::Kinematics);
        coll.encode(&mut pass);
    }
    ctx.queue.submit([encoder.finish()]);
    let got = coll.read_contacts().unwrap();
    let mut report = Report::default();
    for w in 0..n {
        let cpu = cpu_collide(&model, &data[w], 500, 0.0);
        compare_world(&model, &data[w], 0.0, w, &cpu.list, &got[w], &mut report);
    }
    eprintln!("one pass: {report:?}");
    assert!(report.contacts > 1000);
    assert!((report.near_ties as f64) <= MAX_NEAR_TIE_FRACTION * report.pairs_in_contact as f64, "{report:?}");
}

#[test]
fn convex_pairs_parity() {
    check_pairs(&CONVEX_PAIRS, 200, (-0.3, 0.1));
}

/// Deep overlaps of curved shapes, where f32 EPA needs the most expansions.
#[test]
fn deep_convex_overlaps_parity() {
    use GeomKind::*;
    check_pairs(
        &[
            (Ellipsoid, Ellipsoid),
            (Cylinder, Ellipsoid),
            (Capsule, Ellipsoid),
            (Box, Ellipsoid),
            (Cylinder, Cylinder),
            (Mesh, Mesh),
        ],
        400,
        (-1.0, -0.2),
    );
}

/// A bin of mixed convex objects (ellipsoids, cylinders, meshes, boxes,
/// capsules, spheres) on a plane: many GJK/EPA pairs per world.
fn convex_pile() -> Model {
    let mut b = ModelBuilder::new("convex_pile");
    let mut rng = Rng::new(99);
    let hull: Vec<[f64; 3]> =
        (0..20).map(|_| [0.06 * rng.normal(), 0.05 * rng.normal(), 0.04 * rng.normal()]).collect();
    let mesh = b.add_mesh("hull", &hull).unwrap();
    b.add_geom(GeomSpec::new("floor", GeomKind::Plane, [1.0, 1.0, 0.1], WORLD));
    use GeomKind::*;
    let kinds = [
        (Ellipsoid, [0.06, 0.04, 0.05]),
        (Cylinder, [0.05, 0.04, 0.0]),
        (Mesh, [1.0, 1.0, 1.0]),
        (Box, [0.05, 0.04, 0.03]),
        (Ellipsoid, [0.03, 0.07, 0.04]),
        (Capsule, [0.03, 0.05, 0.0]),
        (Mesh, [1.0, 1.0, 1.0]),
        (Cylinder, [0.03, 0.07, 0.0]),
        (Sphere, [0.05, 0.0, 0.0]),
        (Ellipsoid, [0.05, 0.05, 0.03]),
    ];
    for (i, (kind, size)) in kinds.into_iter().enumerate() {
        let body = b.add_body(BodySpec::new(&format!("b{i}"), WORLD, [0.0, 0.0, 0.2 + 0.1 * i as f64]));
        b.add_joint(JointSpec::new(&format!("j{i}"), JointKind::Free, body));
        b.add_geom(GeomSpec {
            mesh: (kind == Mesh).then_some(mesh),
            margin: 0.002,
            ..GeomSpec::new(&format!("g{i}"), kind, size, body)
        });
    }
    b.build().unwrap()
}

/// The GJK/EPA pairs split into several memory-bounded passes give the same
/// contacts, bit for bit, as one pass; both match the CPU.
#[test]
fn convex_pile_parity_and_passes() {
    let ctx = gpu_or_skip!();
    let model = Arc::new(convex_pile());
    let states = random_free_poses(&model, 64, [-0.12, -0.12, 0.0], [0.12, 0.12, 0.2], 17);
    let skin: Vec<f32> = (0..64).map(|w| if w % 2 == 0 { 0.0 } else { 0.01 }).collect();
    let report = check_parity((*model).clone(), &states, &skin, 128).unwrap();
    assert!(report.contacts > 500, "{report:?}");
    let data = cpu_data(&model, &states);
    let (gpu, one) = gpu_setup(&ctx, &model, &data, 128, &skin);
    let sources: [&dyn cenic::gpu::BufferSource; 2] = [gpu.gpu_model(), gpu.gpu_data()];
    // Room for 3 pairs' scratch per pass.
    let budget = 3 * 64 * cenic::gpu::collision::EPA_SCRATCH_BYTES;
    let many = GpuCollision::with_scratch_budget(ctx.clone(), &model, 64, 128, &sources, budget).unwrap();
    many.set_skin(&skin).unwrap();
    assert!(many.passes() > one.passes() + 5, "{} vs {} passes", many.passes(), one.passes());
    for c in [&one, &many] {
        c.fill_garbage().unwrap();
        c.run().unwrap();
        c.check().unwrap();
    }
    assert_eq!(one.read_counts().unwrap(), many.read_counts().unwrap());
    let bits = |c: &GpuCollision| -> Vec<u32> { bytemuck::cast_slice(&c.read_raw().unwrap()).to_vec() };
    assert!(bits(&one) == bits(&many), "contacts differ between 1 and {} passes", many.passes());
}

/// A hull with thousands of vertices makes every support query a long loop:
/// on Mesa's llvmpipe that exceeds the driver's loop budget, and the worlds
/// are reported (never silently wrong contacts); other drivers have no such
/// budget and must match the CPU.
#[test]
fn loop_budget_exhaustion_is_reported() {
    let ctx = gpu_or_skip!();
    let mut rng = Rng::new(5);
    let pts: Vec<[f64; 3]> = (0..3000)
        .map(|_| {
            let d = rand_dir(&mut rng);
            [0.1 * d.x, 0.08 * d.y, 0.06 * d.z]
        })
        .collect();
    let mut b = ModelBuilder::new("big_hull");
    let mesh = b.add_mesh("hull", &pts).unwrap();
    for (i, kind) in [GeomKind::Sphere, GeomKind::Mesh].into_iter().enumerate() {
        let body = b.add_body(BodySpec::new(&format!("b{i}"), WORLD, [0.0; 3]));
        b.add_joint(JointSpec::new(&format!("j{i}"), JointKind::Free, body));
        let size = [0.1, 0.0, 0.0];
        b.add_geom(GeomSpec {
            mesh: (kind == GeomKind::Mesh).then_some(mesh),
            ..GeomSpec::new(&format!("g{i}"), kind, size, body)
        });
    }
    let model = Arc::new(b.build().unwrap());
    eprintln!("hull vertices: {}", model.meshes[0].vertices.len());
    let states = pair_states(&model, 64, 18, (-0.3, 0.1));
    let data = cpu_data(&model, &states);
    let (_gpu, coll) = gpu_setup(&ctx, &model, &data, 8, &[0.0; 64]);
    coll.run().unwrap();
    let llvmpipe = ctx.adapter_name().to_lowercase().contains("llvmpipe");
    match coll.check() {
        Err(GpuError::Device(msg)) => {
            eprintln!("{msg}");
            assert!(llvmpipe, "only llvmpipe has a loop budget: {msg}");
            assert!(msg.contains("loop budget") && msg.contains("worlds ["), "{msg}");
            assert!(coll.read_contacts().is_err(), "reading unreliable contacts must fail");
            let status = coll.read_status().unwrap();
            assert!(status.iter().any(|&s| s & cenic::gpu::collision::STATUS_LOOP_BUDGET != 0));
            coll.clear_status().unwrap();
            assert!(coll.check().is_ok());
        }
        Err(e) => panic!("{e}"),
        Ok(()) => {
            assert!(!llvmpipe, "llvmpipe should have run out of its loop budget");
            check_parity((*model).clone(), &states, &[0.0; 64], 8);
        }
    }
}

/// Worlds with non-finite poses get no contacts (their bounding volumes are
/// empty, as on the CPU) and do not disturb the other worlds.
#[test]
fn non_finite_worlds_have_no_contacts() {
    let ctx = gpu_or_skip!();
    let model = Arc::new(cenic::scenes::clutter(20, Material::default()));
    let mut states = random_free_poses(&model, 64, [-0.2, -0.2, 0.0], [0.2, 0.2, 0.35], 19);
    for (w, q) in states.iter_mut().enumerate().filter(|(w, _)| w % 9 == 4) {
        q[7 * (w % 20)] = if w % 2 == 0 { f64::NAN } else { f64::INFINITY };
    }
    let data = cpu_data(&model, &states);
    let (_gpu, coll) = gpu_setup(&ctx, &model, &data, 400, &[0.0; 64]);
    coll.run().unwrap();
    let got = coll.read_contacts().unwrap();
    let mut report = Report::default();
    for w in 0..64 {
        let cpu = cpu_collide(&model, &data[w], 400, 0.0);
        compare_world(&model, &data[w], 0.0, w, &cpu.list, &got[w], &mut report);
        if w % 9 == 4 {
            // Only the pairs of the broken body are gone.
            let broken = 5 + w % 20;
            assert!(got[w].iter().all(|c| !c.geom.contains(&broken)), "world {w}");
            assert!(got[w].iter().all(|c| c.dist.is_finite() && c.pos.is_finite()), "world {w}");
        }
    }
    assert!(report.contacts > 1000, "{report:?}");
}

/// The witness check of the module docs is itself sound, on the CPU alone:
/// the CPU f32 points of deep and shallow convex pairs pass it against the
/// f64 truth (their normal's gap within 1e-4 L of φ, the witness points on
/// the support planes), and the same points with the normal tilted by 0.1
/// rad, or moved 1e-2 L along the normal, fail it.
#[test]
fn witness_check_accepts_cpu_points_and_rejects_moved_ones() {
    use GeomKind::*;
    let mut checked = 0;
    for (i, &(ka, kb)) in
        [(Capsule, Ellipsoid), (Mesh, Mesh), (Box, Ellipsoid), (Cylinder, Cylinder)].iter().enumerate()
    {
        let model = pair_model(shape(ka, false), shape(kb, true), 0.0);
        let states = pair_states(&model, 32, 400 + i as u64, (-1.0, 0.2));
        for d in cpu_data(&model, &states) {
            let contacts = cpu_collide(&model, &d, 16, 0.0);
            let list = contacts.list.as_slice();
            if list.len() != 1 {
                continue;
            }
            let x = list[0];
            let l = pair_scale(&model, &d, x.geom[0], x.geom[1]);
            // Against a perfect point (shortfalls 0), the CPU f32 point's own.
            let t = f64_points(&model, &d, x.geom[0], x.geom[1], 0.0);
            let n = x.normal.cast::<f64>().normalize();
            let (gap, ha, lb) = gap_along(&model, &d, x.geom, n);
            let pa = x.pos.cast::<f64>() - n * (x.dist as f64 * 0.5);
            let phi = t.iter().map(|p| p.dist).fold(f64::INFINITY, f64::min);
            assert!((phi - gap) / l < 1e-4 && (phi - gap) / l > -1e-6, "{ka:?}-{kb:?}: φ {phi}, gap {gap}, L {l}");
            assert!((pa.dot(n) - ha).abs() / l < 1e-4, "{ka:?}-{kb:?}: A plane {} vs {ha}", pa.dot(n));
            assert!(((pa + n * x.dist as f64).dot(n) - lb).abs() / l < 1e-4, "{ka:?}-{kb:?}: B plane");
            assert!(valid_witness(&model, &d, 0.0, &x, &x, l).is_ok());
            let axis = n.any_orthonormal();
            let tilted = Contact { normal: (n + axis * 0.1).normalize().cast(), ..x };
            assert!(valid_witness(&model, &d, 0.0, &x, &tilted, l).is_err(), "{ka:?}-{kb:?}: a tilted normal passes");
            let moved = Contact { pos: x.pos + x.normal * (1e-2 * l) as f32, ..x };
            assert!(valid_witness(&model, &d, 0.0, &x, &moved, l).is_err(), "{ka:?}-{kb:?}: a moved point passes");
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} one-point contacts checked");
}

/// A bumpy height field under one geom of every kind that collides with it
/// (sphere, capsule, box, cylinder, ellipsoid, convex mesh): the prism by
/// prism contacts of `collision_hfield.wgsl` against the CPU's.
fn hfield_scene() -> Model {
    let mut b = ModelBuilder::new("hfield_pile");
    let (nrow, ncol) = (13, 15);
    let raw: Vec<f32> = (0..nrow * ncol)
        .map(|i| {
            let (r, c) = ((i / ncol) as f32, (i % ncol) as f32);
            (0.9 * c).sin() * (0.7 * r).cos() + 0.3 * (2.1 * c + 1.3 * r).sin()
        })
        .collect();
    let field = cenic::model::HeightField::new("bumps", nrow, ncol, [0.7, 0.6, 0.12, 0.05], &raw).unwrap();
    let h = b.add_hfield(field);
    b.add_geom(GeomSpec {
        hfield: Some(h),
        pos: [0.03, -0.02, 0.01],
        quat: axis_angle([0.1, 0.2, 1.0], 0.3),
        ..GeomSpec::new("terrain", GeomKind::Hfield, [0.0; 3], WORLD)
    });
    let mut rng = Rng::new(36);
    let hull: Vec<[f64; 3]> =
        (0..16).map(|_| [0.05 * rng.normal(), 0.04 * rng.normal(), 0.035 * rng.normal()]).collect();
    let mesh = b.add_mesh("hull", &hull).unwrap();
    use GeomKind::*;
    let kinds = [
        (Sphere, [0.06, 0.0, 0.0]),
        (Capsule, [0.03, 0.06, 0.0]),
        (Box, [0.05, 0.04, 0.03]),
        (Cylinder, [0.05, 0.04, 0.0]),
        (Ellipsoid, [0.06, 0.04, 0.05]),
        (Mesh, [1.0, 1.0, 1.0]),
    ];
    for (i, (kind, size)) in kinds.into_iter().enumerate() {
        let body = b.add_body(BodySpec::new(&format!("b{i}"), WORLD, [0.0, 0.0, 0.3 + 0.1 * i as f64]));
        b.add_joint(JointSpec::new(&format!("j{i}"), JointKind::Free, body));
        b.add_geom(GeomSpec {
            mesh: (kind == Mesh).then_some(mesh),
            contype: 1 << (i + 1),
            conaffinity: 1,
            ..GeomSpec::new(&format!("g{i}"), kind, size, body)
        });
    }
    b.build().unwrap()
}

/// Height-field pairs: every kind on a bumpy, tilted field at random poses
/// near its surface (some sliding past its edge), with and without skin.
#[test]
fn hfield_pairs_parity() {
    let model = hfield_scene();
    let states = random_free_poses(&model, 64, [-0.75, -0.65, -0.02], [0.75, 0.65, 0.14], 36);
    let skin: Vec<f32> = (0..64).map(|w| if w % 3 == 0 { 0.005 } else { 0.0 }).collect();
    let Some(report) = check_parity(model, &states, &skin, 128) else { return };
    assert!(report.contacts > 300, "{report:?}");
}
