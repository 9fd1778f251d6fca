//! The general convex narrow phase (`contact_<a>_<b>` for every pair with a
//! cylinder, ellipsoid or convex mesh) against parry3d-f64, at random
//! relative poses with fixed seeds: overlapping and separated within the
//! margin, both asserted to be well represented.
//!
//! The reference is independent of our code: parry's own query routines
//! (`query::contact`: halfspace–support-map, ball–convex projection, GJK/EPA
//! on support maps) and parry's own support functions. Parry has no
//! ellipsoid: the test implements parry's `SupportMap` for it (x = A²d/|Ad|,
//! A = diag(semi-axes)) and calls parry's support-map contact routines.
//! Parry's cylinder is along its local y axis, ours along z: the parry pose
//! is rotated by +90° about x.
//!
//! What is compared: φ (the deepest manifold point) and the contact normal
//! against parry's `Contact::dist` and `normal1`. Besides, every normal we
//! return is checked with parry's support functions: the separation of the
//! shapes along our normal, σ(n) = min_B n·x − max_A n·x, must equal our φ
//! (φ = max over unit n of σ(n), so σ(n) = φ certifies the normal).
//!
//! Tolerances and why:
//! - `TOL_PHI` = 1e-7 m on φ (shapes 0.1–0.6 m). Ours: GJK stops at a gap
//!   of 1e-8 × distance between its upper and lower bound, EPA at a gap of
//!   1e-10 × scale, and Newton refinement of smooth contacts converges to
//!   round-off; separated face contacts are exact. Parry: GJK stops at a
//!   relative gap of √(10 ε) ≈ 5e-8, EPA after at most 100 expansions. On
//!   polytopes both are exact to round-off (measured: ≤ 2e-14 m); on curved
//!   contacts (ellipsoids, cylinder sides and rims) parry's EPA can stop short
//!   of its tolerance. Where parry's answer is not self-consistent (σ along its
//!   own normal differs from its φ by more than `TOL_PHI`) the query is
//!   retried with parry from other initial directions; if no retry is
//!   consistent and ours is, and separates at least as well, the pose counts
//!   as "parry not converged" and is skipped: at most 1 % of the poses, 10 %
//!   for pairs with an ellipsoid (smooth CSOs; for sphere–ellipsoid the exact
//!   reference below covers every pose).
//! - `TOL_NORMAL` = 1e-4 rad on the normal. A larger angle passes when our
//!   normal separates the shapes at least as well as parry's (σ(n ours) ≥
//!   σ(n parry) − 1e-12: parry's EPA stopped with a gap below `TOL_PHI`, its
//!   normal less converged), or counts as "ambiguous" (another optimum, deep
//!   penetrations with two equally shallow directions) when σ along our normal
//!   still equals parry's φ within `TOL_PHI`; ambiguous poses ≤ 2 %.
//! - Sphere–ellipsoid against the exact point–ellipsoid distance (bisection
//!   on the Lagrange multiplier, independent of both codes): `TOL_EXACT` =
//!   1e-9 m (measured ≤ 1e-12 m).
//! - f32 against our f64: `TOL_PHI_F32` = 2e-4 m and `TOL_NORMAL_F32` =
//!   2e-2 rad (f32 round-off ≈ 1e-7 relative, amplified where GJK/EPA meet
//!   nearly flat or thin simplices, and the f32 stopping gaps 1e-5 × scale;
//!   measured ≤ 7e-5 m and 2e-2 rad). Ambiguous f32 normals are accepted when
//!   σ (f64, parry) along the f32 normal is within `TOL_PHI_F32` of φ.

mod common;

use cenic::collision::{Manifold, Shape, narrow_phase_fn};
use cenic::math::{Mat3, Quat, Vec3};
use cenic::model::{ConvexMesh, GeomKind};
use common::Rng;
use parry3d_f64::math::{Pose, Rotation, Vector};
use parry3d_f64::query;
use parry3d_f64::shape::{Ball, Capsule, ConvexPolyhedron, Cuboid, Cylinder, HalfSpace, SupportMap};

const MARGIN: f64 = 0.1;
const TOL_PHI: f64 = 1e-7;
const TOL_NORMAL: f64 = 1e-4;
const TOL_PHI_F32: f64 = 2e-4;
const TOL_EXACT: f64 = 1e-9;
const TOL_NORMAL_F32: f64 = 2e-2;
/// Targets per pair type: overlapping and separated-within-margin poses.
const N_OVERLAP: usize = 600;
const N_SEPARATED: usize = 400;

/// Parry has no ellipsoid: an exact support map for one.
struct Ellipsoid {
    semi: Vector,
}

impl SupportMap for Ellipsoid {
    fn local_support_point(&self, dir: Vector) -> Vector {
        let ad = self.semi * dir;
        let n = ad.length();
        if n > 0.0 { self.semi * ad / n } else { Vector::ZERO }
    }
}

enum PShape {
    Half(HalfSpace),
    Ball(Ball),
    Capsule(Capsule),
    Cuboid(Cuboid),
    Cylinder(Cylinder),
    Ellipsoid(Ellipsoid),
    Poly(ConvexPolyhedron),
}

struct PGeom {
    shape: PShape,
    pose: Pose,
}

impl PGeom {
    fn support_map(&self) -> Option<&dyn SupportMap> {
        Some(match &self.shape {
            PShape::Half(_) => return None,
            PShape::Ball(s) => s,
            PShape::Capsule(s) => s,
            PShape::Cuboid(s) => s,
            PShape::Cylinder(s) => s,
            PShape::Ellipsoid(s) => s,
            PShape::Poly(s) => s,
        })
    }
    fn dyn_shape(&self) -> Option<&dyn parry3d_f64::shape::Shape> {
        Some(match &self.shape {
            PShape::Half(s) => s,
            PShape::Ball(s) => s,
            PShape::Capsule(s) => s,
            PShape::Cuboid(s) => s,
            PShape::Cylinder(s) => s,
            PShape::Ellipsoid(_) => return None,
            PShape::Poly(s) => s,
        })
    }
    /// World support point (parry's support functions).
    fn support(&self, dir: Vector) -> Vector {
        self.support_map().expect("support of a half-space").support_point(&self.pose, dir)
    }
}

fn pvec(v: Vec3<f64>) -> Vector {
    Vector::new(v.x, v.y, v.z)
}

/// A geom: kind, size, mesh, pose (position, quaternion w x y z).
#[derive(Clone, Copy)]
struct Geom<'m> {
    kind: GeomKind,
    size: Vec3<f64>,
    mesh: Option<&'m ConvexMesh>,
    pos: Vec3<f64>,
    quat: [f64; 4],
}

impl<'m> Geom<'m> {
    fn rot(&self) -> Mat3<f64> {
        let q = self.quat;
        Quat::new(q[0], q[1], q[2], q[3]).to_mat3()
    }
    fn shape(&self) -> Shape<'m, f64> {
        Shape {
            kind: self.kind,
            size: self.size,
            mesh: self.mesh,
            hfield: None,
            prism: None,
            pos: self.pos,
            rot: self.rot(),
        }
    }
    fn shape_f32(&self) -> Shape<'m, f32> {
        let r = self.rot();
        let mut rot = Mat3::<f32>::zero();
        for i in 0..3 {
            for j in 0..3 {
                rot.m[i][j] = r.m[i][j] as f32;
            }
        }
        Shape {
            kind: self.kind,
            size: self.size.cast(),
            mesh: self.mesh,
            hfield: None,
            prism: None,
            pos: self.pos.cast(),
            rot,
        }
    }
    fn bounding_radius(&self) -> f64 {
        let s = self.size;
        match self.kind {
            GeomKind::Plane => 0.0,
            GeomKind::Sphere => s.x,
            GeomKind::Capsule => s.x + s.y,
            GeomKind::Box => s.norm(),
            GeomKind::Cylinder => (s.x * s.x + s.y * s.y).sqrt(),
            GeomKind::Ellipsoid => s.max_elem(),
            GeomKind::Mesh => self.mesh.unwrap().radius(),
            GeomKind::Hfield => unreachable!("height fields are checked in tests/collision_hfield.rs"),
        }
    }
    fn parry(&self) -> PGeom {
        let q = self.quat;
        let rot = Rotation::from_xyzw(q[1], q[2], q[3], q[0]);
        let s = self.size;
        let (shape, rot) = match self.kind {
            GeomKind::Plane => (PShape::Half(HalfSpace::new(Vector::Z)), rot),
            GeomKind::Sphere => (PShape::Ball(Ball::new(s.x)), rot),
            GeomKind::Capsule => (PShape::Capsule(Capsule::new_z(s.y, s.x)), rot),
            GeomKind::Box => (PShape::Cuboid(Cuboid::new(pvec(s))), rot),
            // Parry's cylinder axis is y: pre-rotate y → z.
            GeomKind::Cylinder => (
                PShape::Cylinder(Cylinder::new(s.y, s.x)),
                rot * Rotation::from_axis_angle(Vector::X, core::f64::consts::FRAC_PI_2),
            ),
            GeomKind::Ellipsoid => (PShape::Ellipsoid(Ellipsoid { semi: pvec(s) }), rot),
            GeomKind::Mesh => {
                let pts: Vec<Vector> =
                    self.mesh.unwrap().vertices.iter().map(|p| Vector::new(p[0], p[1], p[2])).collect();
                (PShape::Poly(ConvexPolyhedron::from_convex_hull(&pts).expect("parry hull")), rot)
            }
            GeomKind::Hfield => unreachable!("height fields are checked in tests/collision_hfield.rs"),
        };
        PGeom { shape, pose: Pose::from_parts(pvec(self.pos), rot) }
    }
}

/// Parry's contact (φ, world normal A→B) with prediction `MARGIN`, or None beyond it.
fn parry_contact(a: &PGeom, b: &PGeom) -> Option<(f64, Vector)> {
    if let (Some(sa), Some(sb)) = (a.dyn_shape(), b.dyn_shape()) {
        let c = query::contact(&a.pose, sa, &b.pose, sb, MARGIN).expect("parry supports the pair")?;
        return Some((c.dist, c.normal1));
    }
    // Ellipsoid pairs: parry's support-map routines in A's frame.
    let pos12 = a.pose.inv_mul(&b.pose);
    let sb = b.support_map().unwrap();
    let c = match &a.shape {
        PShape::Half(h) => query::details::contact_halfspace_support_map(&pos12, h, sb, MARGIN),
        _ => query::details::contact_support_map_support_map(&pos12, a.support_map().unwrap(), sb, MARGIN),
    }?;
    Some((c.dist, a.pose.rotation * c.normal1))
}

/// Parry's support-map GJK/EPA started from other initial directions (its
/// EPA sometimes stops short on smooth CSOs): the first self-consistent
/// answer (σ along its normal equal to its φ within `TOL_PHI`), if any.
fn parry_retry(a: &PGeom, b: &PGeom) -> Option<(f64, Vector)> {
    let (sa, sb) = (a.support_map()?, b.support_map()?);
    let pos12 = a.pose.inv_mul(&b.pose);
    let dirs =
        [Vector::X, Vector::Y, Vector::Z, -Vector::X, -Vector::Y, -Vector::Z, Vector::new(1.0, 1.0, 1.0).normalize()];
    for d in dirs {
        let mut simplex = query::gjk::VoronoiSimplex::new();
        let r =
            query::details::contact_support_map_support_map_with_params(&pos12, sa, sb, MARGIN, &mut simplex, Some(d));
        if let query::gjk::GJKResult::ClosestPoints(p1, p2, n1) = r {
            let phi = (p2 - p1).dot(n1);
            let n = a.pose.rotation * n1;
            if (sigma(a, b, n) - phi).abs() <= TOL_PHI {
                return Some((phi, n));
            }
        }
    }
    None
}

/// Separation of the shapes along unit `n` with parry's support functions:
/// σ(n) = min_B n·x − max_A n·x (φ = max over n of σ).
fn sigma(a: &PGeom, b: &PGeom, n: Vector) -> f64 {
    (b.support(-n) - a.support(n)).dot(n)
}

fn angle(a: Vector, b: Vector) -> f64 {
    a.cross(b).length().atan2(a.dot(b))
}

/// Random hulls plus a cube and a 16-sided prism (polygons larger than triangles).
pub fn mesh_pool() -> Vec<ConvexMesh> {
    let mut rng = Rng::new(0x5eed_3e5b);
    let mut pool = vec![];
    for i in 0..14 {
        let n = 6 + (i * 3) % 20;
        let ext = [rng.range(0.15, 0.45), rng.range(0.15, 0.45), rng.range(0.15, 0.45)];
        let pts: Vec<[f64; 3]> =
            (0..n).map(|_| [ext[0] * rng.normal(), ext[1] * rng.normal(), ext[2] * rng.normal()]).collect();
        pool.push(ConvexMesh::from_points("hull", &pts).unwrap());
    }
    let mut cube = vec![];
    for i in 0..8 {
        cube.push([
            if i & 1 == 0 { -0.3 } else { 0.3 },
            if i & 2 == 0 { -0.25 } else { 0.25 },
            if i & 4 == 0 { -0.2 } else { 0.2 },
        ]);
    }
    pool.push(ConvexMesh::from_points("cube", &cube).unwrap());
    let mut prism = vec![];
    for k in 0..16 {
        let t = std::f64::consts::TAU * k as f64 / 16.0;
        prism.push([0.3 * t.cos(), 0.3 * t.sin(), -0.2]);
        prism.push([0.3 * t.cos(), 0.3 * t.sin(), 0.2]);
    }
    pool.push(ConvexMesh::from_points("prism", &prism).unwrap());
    pool
}

fn random_size(kind: GeomKind, rng: &mut Rng) -> Vec3<f64> {
    let mut r = || rng.range(0.1, 0.6);
    match kind {
        GeomKind::Plane => Vec3::new(1.0, 1.0, 0.1),
        GeomKind::Sphere => Vec3::new(r(), 0.0, 0.0),
        GeomKind::Capsule => Vec3::new(0.6 * r(), r(), 0.0),
        _ => Vec3::new(r(), r(), r()),
    }
}

fn random_dir(rng: &mut Rng) -> Vec3<f64> {
    Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize()
}

/// Exact signed distance (m) from the point `y` (ellipsoid frame) to the
/// ellipsoid with semi-axes `e`, and the outward unit normal at the closest
/// surface point. The closest point is x_i = e_i² y_i / (e_i² + t) with t the
/// root of F(t) = Σ (e_i y_i / (e_i² + t))² = 1 in (−min e_i², ∞) (F is
/// decreasing there; t < 0 inside, t > 0 outside), found by bisection.
fn point_ellipsoid(e: [f64; 3], y: [f64; 3]) -> (f64, [f64; 3]) {
    let f = |t: f64| (0..3).map(|i| (e[i] * y[i] / (e[i] * e[i] + t)).powi(2)).sum::<f64>();
    let emin = e.iter().cloned().fold(f64::MAX, f64::min);
    let inside = f(0.0) < 1.0;
    let (mut lo, mut hi) = if inside { (-emin * emin, 0.0) } else { (0.0, 1.0) };
    while !inside && f(hi) > 1.0 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > 1.0 { lo = mid } else { hi = mid }
    }
    let t = 0.5 * (lo + hi);
    let x: Vec<f64> = (0..3).map(|i| e[i] * e[i] * y[i] / (e[i] * e[i] + t)).collect();
    let d = ((x[0] - y[0]).powi(2) + (x[1] - y[1]).powi(2) + (x[2] - y[2]).powi(2)).sqrt();
    let g = [x[0] / (e[0] * e[0]), x[1] / (e[1] * e[1]), x[2] / (e[2] * e[2])];
    let gn = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
    (if inside { -d } else { d }, [g[0] / gn, g[1] / gn, g[2] / gn])
}

#[derive(Default, Debug)]
struct Stats {
    overlapping: usize,
    separated: usize,
    beyond: usize,
    parry_not_converged: usize,
    parry_retried: usize,
    parry_normal_worse: usize,
    ambiguous_normal: usize,
    max_dphi_exact: f64,
    ambiguous_normal_f32: usize,
    max_dphi: f64,
    dphis: Vec<f64>,
    max_angle: f64,
    max_dphi_f32: f64,
    max_angle_f32: f64,
    failures: Vec<String>,
}

fn run_pair(ka: GeomKind, kb: GeomKind, seed: u64) -> Stats {
    let meshes = mesh_pool();
    let mut rng = Rng::new(seed);
    let f64fn = narrow_phase_fn::<f64>(ka, kb);
    let f32fn = narrow_phase_fn::<f32>(ka, kb);
    let mut st = Stats::default();
    let mut attempts = 0;
    while (st.overlapping < N_OVERLAP || st.separated < N_SEPARATED) && attempts < 40_000 {
        attempts += 1;
        let mesh_a = (ka == GeomKind::Mesh).then(|| &meshes[(rng.next_u64() % meshes.len() as u64) as usize]);
        let mesh_b = (kb == GeomKind::Mesh).then(|| &meshes[(rng.next_u64() % meshes.len() as u64) as usize]);
        let pa = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
        let a = Geom { kind: ka, size: random_size(ka, &mut rng), mesh: mesh_a, pos: pa, quat: rng.quat() };
        let mut b = Geom { kind: kb, size: random_size(kb, &mut rng), mesh: mesh_b, pos: pa, quat: rng.quat() };
        let rb = b.bounding_radius();
        if ka == GeomKind::Plane {
            let n = a.rot().col(2);
            let t = n.any_orthonormal();
            b.pos = pa + t * rng.range(-1.0, 1.0) + n * rng.range(-0.8 * rb, rb + MARGIN);
        } else {
            // Distances from deep overlap to just beyond the margin.
            let d = rng.range(0.0, a.bounding_radius() + rb + MARGIN);
            b.pos = pa + random_dir(&mut rng) * d;
        }
        let (pga, pgb) = (a.parry(), b.parry());
        let reference = parry_contact(&pga, &pgb);
        let mut m = Manifold::default();
        f64fn(&a.shape(), &b.shape(), MARGIN, &mut m);
        let ours = m.as_slice().iter().min_by(|x, y| x.dist.total_cmp(&y.dist)).copied();
        let mut retried = false;
        let reference = match reference {
            Some((phi, n)) if ka != GeomKind::Plane && (sigma(&pga, &pgb, n) - phi).abs() > TOL_PHI => {
                retried = true;
                parry_retry(&pga, &pgb).or(reference)
            }
            r => r,
        };
        let Some((phi_p, n_p)) = reference else {
            st.beyond += 1;
            if let Some(c) = ours
                && c.dist < MARGIN - TOL_PHI
            {
                st.failures.push(format!("parry: beyond margin; ours φ = {:e}", c.dist));
            }
            continue;
        };
        if (phi_p - MARGIN).abs() < 1e-6 {
            continue; // at the margin: either answer is right
        }
        let Some(c) = ours else {
            st.failures.push(format!("no contact; parry φ = {phi_p:e}"));
            continue;
        };
        st.parry_retried += retried as usize;
        if phi_p < 0.0 {
            st.overlapping += 1;
        } else {
            st.separated += 1;
        }
        for p in m.as_slice() {
            assert!(p.pos.is_finite() && p.normal.is_finite() && p.dist.is_finite(), "non-finite contact");
            assert!((p.normal.norm() - 1.0).abs() < 1e-9, "normal not unit");
            assert!(p.dist < MARGIN, "point beyond the margin");
        }
        let n_o = pvec(c.normal);
        let dphi = (c.dist - phi_p).abs();
        let plane = ka == GeomKind::Plane;
        // σ needs support points of both shapes; plane pairs compare φ only (normal exact by construction).
        let sig_o = if plane { c.dist } else { sigma(&pga, &pgb, n_o) };
        let sig_p = if plane { phi_p } else { sigma(&pga, &pgb, n_p) };
        let ctx = format!(
            "φ ours {:.12e} parry {:.12e} σ(n ours) {:.12e} σ(n parry) {:.12e} n ours {:?} parry {:?} a {:?} {:?} {:?} {:?} b {:?} {:?} {:?} {:?}",
            c.dist,
            phi_p,
            sig_o,
            sig_p,
            n_o,
            n_p,
            a.size.to_array(),
            a.pos.to_array(),
            a.quat,
            mesh_a.map(|m| meshes.iter().position(|x| std::ptr::eq(x, m)).unwrap()),
            b.size.to_array(),
            b.pos.to_array(),
            b.quat,
            mesh_b.map(|m| meshes.iter().position(|x| std::ptr::eq(x, m)).unwrap())
        );
        if (sig_o - c.dist).abs() > TOL_PHI {
            st.failures.push(format!("our normal does not achieve our φ: {ctx}"));
        }
        if dphi > TOL_PHI {
            let parry_off = (sig_p - phi_p).abs() > TOL_PHI;
            if parry_off && sig_o >= sig_p - TOL_PHI && (sig_o - c.dist).abs() <= TOL_PHI {
                st.parry_not_converged += 1;
            } else {
                st.failures.push(format!("φ differs by {dphi:e}: {ctx}"));
            }
        } else {
            st.max_dphi = st.max_dphi.max(dphi);
            st.dphis.push(dphi);
            let ang = angle(n_o, n_p);
            if ang > TOL_NORMAL {
                if !plane && sig_o >= sig_p - 1e-12 {
                    // Our normal separates at least as well as parry's (parry's EPA
                    // stopped on a curved CSO with a gap below TOL_PHI).
                    st.parry_normal_worse += 1;
                } else if (sig_o - phi_p).abs() <= TOL_PHI {
                    st.ambiguous_normal += 1;
                } else {
                    st.failures.push(format!("normal differs by {ang:e} rad: {ctx}"));
                }
            } else {
                st.max_angle = st.max_angle.max(ang);
            }
        }
        // Sphere–ellipsoid: an exact reference besides parry.
        if (ka, kb) == (GeomKind::Sphere, GeomKind::Ellipsoid) {
            let rb = b.rot();
            let y = rb.tmul(a.pos - b.pos);
            let (d, m) = point_ellipsoid(b.size.to_array(), y.to_array());
            let phi_x = d - a.size.x;
            let n_x = -(rb * Vec3::from_array(m));
            let dx = (c.dist - phi_x).abs();
            st.max_dphi_exact = st.max_dphi_exact.max(dx);
            let ang = angle(n_o, pvec(n_x));
            if dx > TOL_EXACT || (ang > TOL_NORMAL && (sig_o - phi_x).abs() > TOL_EXACT) {
                st.failures.push(format!("exact: φ {phi_x:.12e}, normal {n_x:?} (angle {ang:e}): {ctx}"));
            }
        }
        // f32 against our f64.
        let mut m32 = Manifold::default();
        f32fn(&a.shape_f32(), &b.shape_f32(), MARGIN as f32, &mut m32);
        for p in m32.as_slice() {
            assert!(p.pos.is_finite() && p.normal.is_finite() && p.dist.is_finite(), "non-finite f32 contact");
        }
        match m32.as_slice().iter().min_by(|x, y| x.dist.total_cmp(&y.dist)) {
            None => {
                if c.dist < MARGIN - TOL_PHI_F32 {
                    st.failures.push(format!("f32: no contact; {ctx}"));
                }
            }
            Some(c32) => {
                let d = (c32.dist as f64 - c.dist).abs();
                st.max_dphi_f32 = st.max_dphi_f32.max(d);
                if d > TOL_PHI_F32 {
                    st.failures.push(format!("f32: φ differs by {d:e}: f32 φ {:e} {ctx}", c32.dist));
                }
                let n32 = pvec(c32.normal.cast());
                let ang = angle(n32, n_o);
                if ang > TOL_NORMAL_F32 {
                    let s32 = if plane { c.dist } else { sigma(&pga, &pgb, n32.normalize()) };
                    if (s32 - c.dist).abs() <= TOL_PHI_F32 {
                        st.ambiguous_normal_f32 += 1;
                    } else {
                        st.failures.push(format!("f32: normal differs by {ang:e}: {ctx}"));
                    }
                } else {
                    st.max_angle_f32 = st.max_angle_f32.max(ang);
                }
            }
        }
    }
    st
}

fn check_pair(ka: GeomKind, kb: GeomKind, seed: u64) {
    let mut st = run_pair(ka, kb, seed);
    st.dphis.sort_by(f64::total_cmp);
    let q = |f: f64| st.dphis.get(((st.dphis.len() as f64 - 1.0) * f) as usize).copied().unwrap_or(0.0);
    eprintln!("{}-{}: |Δφ| vs parry: median {:.1e} m, p99 {:.1e} m", ka.name(), kb.name(), q(0.5), q(0.99));
    let total = st.overlapping + st.separated;
    eprintln!(
        "{}-{}: {} overlapping, {} separated, {} beyond margin; max |Δφ| {:.1e} m, max angle {:.1e} rad; \
         f32: max |Δφ| {:.1e} m, max angle {:.1e} rad; parry not converged {} (of {} retried), parry normal worse {}, \
         ambiguous normals {} (f32 {}); vs exact max |Δφ| {:.1e}",
        ka.name(),
        kb.name(),
        st.overlapping,
        st.separated,
        st.beyond,
        st.max_dphi,
        st.max_angle,
        st.max_dphi_f32,
        st.max_angle_f32,
        st.parry_not_converged,
        st.parry_retried,
        st.parry_normal_worse,
        st.ambiguous_normal,
        st.ambiguous_normal_f32,
        st.max_dphi_exact
    );
    for f in st.failures.iter().take(5) {
        eprintln!("  FAIL {f}");
    }
    if let Ok(dir) = std::env::var("CONVEX_FAILURES_DIR") {
        let _ = std::fs::write(format!("{dir}/{}_{}.txt", ka.name(), kb.name()), st.failures.join("\n"));
    }
    assert!(st.failures.is_empty(), "{} failures", st.failures.len());
    assert!(st.overlapping >= N_OVERLAP && st.separated >= N_SEPARATED, "too few poses: {st:?}");
    assert!(total >= 1000);
    // Parry's EPA on a smooth CSO (any pair with an ellipsoid) stops short
    // more often (sphere–ellipsoid: ~8 % of the poses, deep ones); there our
    // answer is still certified by σ, and for sphere–ellipsoid by the exact
    // reference on every pose.
    let limit = if kb == GeomKind::Ellipsoid { 10 } else { 1 };
    assert!(st.parry_not_converged * 100 <= limit * total, "parry not converged too often");
    assert!(st.ambiguous_normal * 50 <= total, "too many ambiguous normals");
    assert!(st.ambiguous_normal_f32 * 50 <= total, "too many ambiguous f32 normals");
}

macro_rules! pair_test {
    ($name:ident, $a:ident, $b:ident, $seed:expr) => {
        #[test]
        fn $name() {
            check_pair(GeomKind::$a, GeomKind::$b, $seed);
        }
    };
}

pair_test!(plane_cylinder, Plane, Cylinder, 1);
pair_test!(plane_ellipsoid, Plane, Ellipsoid, 2);
pair_test!(plane_mesh, Plane, Mesh, 3);
pair_test!(sphere_cylinder, Sphere, Cylinder, 4);
pair_test!(sphere_ellipsoid, Sphere, Ellipsoid, 5);
pair_test!(sphere_mesh, Sphere, Mesh, 6);
pair_test!(capsule_cylinder, Capsule, Cylinder, 7);
pair_test!(capsule_ellipsoid, Capsule, Ellipsoid, 8);
pair_test!(capsule_mesh, Capsule, Mesh, 9);
pair_test!(box_cylinder, Box, Cylinder, 10);
pair_test!(box_ellipsoid, Box, Ellipsoid, 11);
pair_test!(box_mesh, Box, Mesh, 12);
pair_test!(cylinder_cylinder, Cylinder, Cylinder, 13);
pair_test!(cylinder_ellipsoid, Cylinder, Ellipsoid, 14);
pair_test!(cylinder_mesh, Cylinder, Mesh, 15);
pair_test!(ellipsoid_ellipsoid, Ellipsoid, Ellipsoid, 16);
pair_test!(ellipsoid_mesh, Ellipsoid, Mesh, 17);
pair_test!(mesh_mesh, Mesh, Mesh, 18);
