//! Analytic narrow-phase routines (plane, sphere, capsule, box pairs)
//! against parry3d-f64 on randomised relative poses (fixed seeds).
//!
//! For every pair type: ≥ 1000 poses with overlapping and separated cases
//! both well represented (asserted). Checked per case:
//! - the deepest reported φ equals parry's signed distance, and a point at
//!   that φ carries parry's normal (A → B), whenever parry's φ < margin.
//!   Exception, counted as `face_biased`: where the true minimum is an edge
//!   axis but the routine keeps a face manifold on purpose (box–box within
//!   0.1 %, or an edge axis within 0.02 rad of a face normal), the exact
//!   point must be present and the deepest φ must lie between the face-axis
//!   separation and the exact value;
//! - nothing is reported when parry's φ ≥ margin, and every reported φ < margin;
//! - every reported point is consistent: `pos ∓ n·φ/2` lie on the surfaces
//!   of A and B (parry point projection);
//! - the same pose in f32 gives the f64 answer within the f32 tolerances.
//!
//! Oracles: parry's `query::contact` (prediction = 10 m), cross-checked with
//! `query::distance` for separated pairs; for penetrating box–box and
//! capsule-core–box pairs parry's separating-axis routines (`query::sat`),
//! exact, where its EPA is not. For capsule pairs the oracle is parry on the capsule's core
//! segment (`Segment`) minus the radius: parry's GJK/EPA on the rounded
//! `Capsule` support map stops at a ~1e-7 relative tolerance, while the
//! segment queries are polytope queries that terminate exactly; the
//! `Capsule` answer is still compared, at `TOL_PHI_PARRY_CAPSULE`.

mod common;

use cenic::collision::{Manifold, Shape, narrow_phase_fn};
use cenic::math::{Real, Vec3, q4, v3};
use cenic::model::GeomKind;
use common::Rng;
use parry3d_f64::math::{Pose, Rot3, Vector};
use parry3d_f64::query;
use parry3d_f64::shape::{Ball, Capsule, Cuboid, HalfSpace, Segment, Shape as PShape};

/// |Δφ| (m) allowed against parry, per metre of shape size. Both sides are
/// exact up to rounding (closed forms here; for parry: closed forms,
/// point projection, and GJK/EPA on polytopes, which end on exact vertex
/// sets with eps_tol = 100·ε; parry's SAT for penetrating box–box and
/// segment–box, since its EPA was seen off by up to 5e-2 m on deep box
/// overlaps): the observed difference is ≤ 2e-15; 1e-9
/// leaves room for conditioning without hiding real errors (a wrong
/// feature is off by ≥ 1e-4 m in these samples).
const TOL_PHI: f64 = 1e-9;
/// Angle (rad) allowed between the normals. Normals come from differences
/// of points at least ~1e-3 m apart (closer cases are counted as
/// ambiguous), so rounding gives < 1e-12 rad.
const TOL_ANGLE: f64 = 1e-6;
/// Distance (m per metre of size) of reported witnesses from the surfaces.
const TOL_SURFACE: f64 = 1e-9;
/// |Δφ| against parry's rounded `Capsule` (GJK on a curved support map).
const TOL_PHI_PARRY_CAPSULE: f64 = 1e-3;
/// f32 against f64: |Δφ| per metre of size. Inputs are rounded to f32
/// (relative 6e-8) and the routines add a few dozen roundings on values of
/// size ~2 m, so errors of ~1e-6 m are expected (≤ 6e-6 observed, for
/// box–box near the face-bias thresholds); 2e-5 leaves a 3× margin.
const TOL_PHI_F32: f64 = 2e-5;
/// f32 normal angle (rad), checked where the normal is well conditioned
/// (its defining points ≥ 0.02 m apart and no near-tie of features):
/// ≤ ~1e-6 m / 0.02 m = 5e-5 rad expected (8e-6 observed), 2e-4 allowed.
const TOL_ANGLE_F32: f64 = 2e-4;
/// Contact margin used in the tests (m).
const MARGIN: f64 = 0.25;
/// Poses per pair type.
const CASES: usize = 2000;

#[derive(Clone, Copy, Debug)]
struct G {
    kind: GeomKind,
    size: [f64; 3],
    pos: [f64; 3],
    quat: [f64; 4],
}

impl G {
    fn shape<T: Real>(&self) -> Shape<'static, T> {
        let q = q4::<T>(self.quat).normalize();
        Shape {
            kind: self.kind,
            size: v3(self.size),
            mesh: None,
            hfield: None,
            prism: None,
            pos: v3(self.pos),
            rot: q.to_mat3(),
        }
    }
    fn pose(&self) -> Pose {
        let [w, x, y, z] = self.quat;
        Pose::from_parts(Vector::new(self.pos[0], self.pos[1], self.pos[2]), Rot3::from_xyzw(x, y, z, w).normalize())
    }
    /// The parry shape (capsule along local z).
    fn parry(&self) -> Box<dyn PShape> {
        let [a, b, c] = self.size;
        match self.kind {
            GeomKind::Plane => Box::new(HalfSpace::new(Vector::Z)),
            GeomKind::Sphere => Box::new(Ball::new(a)),
            GeomKind::Capsule => Box::new(Capsule::new(Vector::new(0.0, 0.0, -b), Vector::new(0.0, 0.0, b), a)),
            GeomKind::Box => Box::new(Cuboid::new(Vector::new(a, b, c))),
            _ => unreachable!(),
        }
    }
    /// Core shape and radius: sphere → (point, r), capsule → (segment, r);
    /// others → (itself, 0).
    fn core(&self) -> (Box<dyn PShape>, f64) {
        match self.kind {
            GeomKind::Sphere => (Box::new(Ball::new(0.0)), self.size[0]),
            GeomKind::Capsule => {
                let [r, h, _] = self.size;
                (Box::new(Segment::new(Vector::new(0.0, 0.0, -h), Vector::new(0.0, 0.0, h))), r)
            }
            _ => (self.parry(), 0.0),
        }
    }
    /// Lowest point of the shape along −n, measured from its centre (m).
    fn support_depth(&self, n: Vec3<f64>) -> f64 {
        match self.kind {
            GeomKind::Sphere => self.size[0],
            GeomKind::Capsule => self.size[0] + self.size[1] * self.axis(2).dot(n).abs(),
            GeomKind::Box => (0..3).map(|i| self.size[i] * self.axis(i).dot(n).abs()).sum(),
            _ => 0.0,
        }
    }
    /// Capsule segment end points (m).
    fn ends(&self) -> (Vec3<f64>, Vec3<f64>) {
        let c = Vec3::from_array(self.pos);
        let u = self.axis(2) * self.size[1];
        (c - u, c + u)
    }
    fn bound(&self) -> f64 {
        let [a, b, c] = self.size;
        match self.kind {
            GeomKind::Sphere => a,
            GeomKind::Capsule => a + b,
            GeomKind::Box => (a * a + b * b + c * c).sqrt(),
            _ => 0.0,
        }
    }
    fn rot(&self) -> [[f64; 3]; 3] {
        self.shape::<f64>().rot.m
    }
    fn axis(&self, i: usize) -> Vec3<f64> {
        let m = self.rot();
        Vec3::new(m[0][i], m[1][i], m[2][i])
    }
}

fn random_size(rng: &mut Rng, kind: GeomKind) -> [f64; 3] {
    match kind {
        GeomKind::Plane => [1.0, 1.0, 0.1],
        GeomKind::Sphere => [rng.range(0.1, 0.6), 0.0, 0.0],
        GeomKind::Capsule => [rng.range(0.05, 0.4), rng.range(0.05, 0.8), 0.0],
        GeomKind::Box => [rng.range(0.05, 0.8), rng.range(0.05, 0.8), rng.range(0.05, 0.8)],
        _ => unreachable!(),
    }
}

fn unit(rng: &mut Rng) -> Vec3<f64> {
    loop {
        let v = Vec3::new(rng.normal(), rng.normal(), rng.normal());
        if v.norm() > 1e-3 {
            return v.normalize();
        }
    }
}

/// A random pair with B's centre at a random offset from A (or from the plane).
fn random_pair(rng: &mut Rng, ka: GeomKind, kb: GeomKind) -> (G, G) {
    let pos = |rng: &mut Rng| [rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)];
    let a = G { kind: ka, size: random_size(rng, ka), pos: pos(rng), quat: rng.quat() };
    let mut b = G { kind: kb, size: random_size(rng, kb), pos: [0.0; 3], quat: rng.quat() };
    let pa = Vec3::from_array(a.pos);
    let off = if ka == GeomKind::Plane {
        // Target φ from deep overlap to beyond the margin.
        let n = a.axis(2);
        let phi = rng.range(-0.5 * b.size[0].max(0.05), 1.4 * MARGIN);
        n * (phi + b.support_depth(n)) + a.axis(0) * rng.range(-2.0, 2.0) + a.axis(1) * rng.range(-2.0, 2.0)
    } else {
        // Along a random direction from A's centre: find where B first
        // touches A (bisection on parry's intersection test), then offset
        // by δ: mostly near contact on both sides, some beyond the margin.
        let dir = unit(rng);
        let touching = |lam: f64, b: &mut G| {
            b.pos = (pa + dir * lam).to_array();
            query::intersection_test(&a.pose(), a.parry().as_ref(), &b.pose(), b.parry().as_ref()).unwrap().intersecting
        };
        let (mut lo, mut hi) = (0.0, a.bound() + b.bound() + 1e-3);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if touching(mid, &mut b) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let delta =
            if rng.uniform() < 0.1 { rng.range(1.2 * MARGIN, 4.0 * MARGIN) } else { rng.range(-0.3, 1.2 * MARGIN) };
        dir * (lo + delta).max(0.02)
    };
    b.pos = (pa + off).to_array();
    (a, b)
}

fn run<T: Real>(a: &G, b: &G, margin: f64) -> Manifold<T> {
    let mut m = Manifold::default();
    let f = narrow_phase_fn::<T>(a.kind, b.kind);
    f(&a.shape::<T>(), &b.shape::<T>(), T::c(margin), &mut m);
    m
}

fn pv(v: Vector) -> Vec3<f64> {
    Vec3::new(v.x, v.y, v.z)
}

fn vp(v: Vec3<f64>) -> Vector {
    Vector::new(v.x, v.y, v.z)
}

fn angle(a: Vec3<f64>, b: Vec3<f64>) -> f64 {
    a.cross(b).norm().atan2(a.dot(b))
}

/// Reference signed distance and normal (A → B) from parry.
struct Reference {
    dist: f64,
    normal: Vec3<f64>,
    /// Distance between the points that define the normal (m): small values
    /// make the normal ill-conditioned.
    lever: f64,
}

fn reference(a: &G, b: &G, st: &mut Stats) -> Option<Reference> {
    let (ca, ra) = a.core();
    let (cb, rb) = b.core();
    let c = query::contact(&a.pose(), ca.as_ref(), &b.pose(), cb.as_ref(), 10.0).unwrap()?;
    // Penetrating polytope cores: parry's SAT (exact) rather than EPA.
    if let Some((sep, normal)) = parry_sat(a, b)
        && sep <= 0.0
    {
        if (c.dist - sep).abs() > 1e-6 {
            st.epa_off += 1;
        }
        return Some(Reference { dist: sep - ra - rb, normal, lever: 1.0 });
    }
    let core_dist = c.dist;
    if core_dist > 0.0 {
        // Separated cores: the distance query must agree.
        let d = query::distance(&a.pose(), ca.as_ref(), &b.pose(), cb.as_ref()).unwrap().distance;
        assert!((d - core_dist).abs() < 1e-9, "parry contact {core_dist} vs distance {d}");
    }
    // A plane's normal is exact whatever the distance.
    let lever = if a.kind == GeomKind::Plane { f64::INFINITY } else { core_dist.abs() };
    Some(Reference { dist: core_dist - ra - rb, normal: pv(c.normal1), lever })
}

/// parry's separating-axis answer (largest separation, m, and its axis
/// A → B, world) for box–box and for a capsule's segment against a box.
fn parry_sat(a: &G, b: &G) -> Option<(f64, Vec3<f64>)> {
    use parry3d_f64::query::sat;
    let pos12 = a.pose().inv_mul(&b.pose());
    let pos21 = pos12.inverse();
    match (a.kind, b.kind) {
        (GeomKind::Box, GeomKind::Box) => {
            let c1 = Cuboid::new(Vector::from(a.size));
            let c2 = Cuboid::new(Vector::from(b.size));
            let s1 = sat::cuboid_cuboid_find_local_separating_normal_oneway(&c1, &c2, &pos12);
            let s2 = sat::cuboid_cuboid_find_local_separating_normal_oneway(&c2, &c1, &pos21);
            let s3 = sat::cuboid_cuboid_find_local_separating_edge_twoway(&c1, &c2, &pos12);
            let ra = a.pose().rotation;
            let rb = b.pose().rotation;
            let cands = [(s1.0, pv(ra * s1.1)), (s2.0, -pv(rb * s2.1)), (s3.0, pv(ra * s3.1))];
            cands.into_iter().max_by(|x, y| x.0.total_cmp(&y.0))
        }
        (GeomKind::Capsule, GeomKind::Box) => {
            // Box as shape 1, segment as shape 2; the axis then points box → capsule.
            let h = a.size[1];
            let seg = Segment::new(Vector::new(0.0, 0.0, -h), Vector::new(0.0, 0.0, h));
            let cube = Cuboid::new(Vector::from(b.size));
            let s1 = sat::cuboid_support_map_find_local_separating_normal_oneway(&cube, &seg, &pos21);
            let s2 = sat::cuboid_segment_find_local_separating_edge_twoway(&cube, &seg, &pos21);
            let rb = b.pose().rotation;
            let best = if s1.0 >= s2.0 { s1 } else { s2 };
            Some((best.0, -pv(rb * best.1)))
        }
        _ => None,
    }
}

/// Distance (m) of a witness point from the surface of geom `g`. A capsule
/// is a union of spheres on its segment: a witness must lie inside the
/// capsule and on the sphere of the segment point named by its feature id
/// (0/1: an end, 2: the closest segment point), so a second end of a
/// tilted capsule may report a point on its end sphere inside the capsule.
fn off_surface(g: &G, p: Vec3<f64>, feature: u32) -> f64 {
    if g.kind == GeomKind::Capsule {
        let (e0, e1) = g.ends();
        let r = g.size[0];
        let u = e1 - e0;
        let t = ((p - e0).dot(u) / u.norm2()).clamp(0.0, 1.0);
        let dseg = (p - (e0 + u * t)).norm();
        let on_sphere = match feature {
            0 => ((p - e0).norm() - r).abs(),
            1 => ((p - e1).norm() - r).abs(),
            // Some interior segment point: within r of the segment, and r
            // from a point of it (the far end is at least r away).
            _ => (r - (p - e0).norm().max((p - e1).norm())).max(0.0),
        };
        return on_sphere.max(dseg - r);
    }
    let proj = g.parry().project_point(&g.pose(), vp(p), false);
    (pv(proj.point) - p).norm()
}

/// Test-side separating-axis summary, used only to classify cases: best
/// separation over face axes and over edge axes (m), the best edge axis,
/// and the two largest separations over all axes.
struct Sat {
    face: f64,
    edge: f64,
    edge_axis: Vec3<f64>,
    first: f64,
    second: f64,
}

fn sat_summary(faces: &[Vec3<f64>], edges: &[Vec3<f64>], sep: &dyn Fn(Vec3<f64>) -> f64) -> Sat {
    let mut all = vec![];
    let mut face = f64::NEG_INFINITY;
    for &u in faces {
        let s = sep(u);
        face = face.max(s);
        all.push(s);
    }
    let (mut edge, mut edge_axis) = (f64::NEG_INFINITY, Vec3::zero());
    for &c in edges {
        if c.norm() > 1e-6 {
            let s = sep(c.normalize());
            if s > edge {
                edge = s;
                edge_axis = c.normalize();
            }
            all.push(s);
        }
    }
    all.sort_by(|p, q| q.total_cmp(p));
    Sat { face, edge, edge_axis, first: all[0], second: all[1] }
}

fn box_box_sat(a: &G, b: &G) -> Sat {
    let d = Vec3::from_array(b.pos) - Vec3::from_array(a.pos);
    let ua: Vec<Vec3<f64>> = (0..3).map(|i| a.axis(i)).collect();
    let ub: Vec<Vec3<f64>> = (0..3).map(|i| b.axis(i)).collect();
    let sep = |n: Vec3<f64>| {
        let ra: f64 = (0..3).map(|i| a.size[i] * ua[i].dot(n).abs()).sum();
        let rb: f64 = (0..3).map(|i| b.size[i] * ub[i].dot(n).abs()).sum();
        d.dot(n).abs() - ra - rb
    };
    let faces: Vec<Vec3<f64>> = ua.iter().chain(ub.iter()).copied().collect();
    let edges: Vec<Vec3<f64>> = ua.iter().flat_map(|x| ub.iter().map(move |y| x.cross(*y))).collect();
    sat_summary(&faces, &edges, &sep)
}

/// Capsule core (segment) against a box.
fn segment_box_sat(cap: &G, bx: &G) -> Sat {
    let u = cap.axis(2);
    let h = cap.size[1];
    let d = Vec3::from_array(cap.pos) - Vec3::from_array(bx.pos);
    let ub: Vec<Vec3<f64>> = (0..3).map(|i| bx.axis(i)).collect();
    let sep = |n: Vec3<f64>| {
        let rb: f64 = (0..3).map(|i| bx.size[i] * ub[i].dot(n).abs()).sum();
        d.dot(n).abs() - rb - h * u.dot(n).abs()
    };
    let edges: Vec<Vec3<f64>> = ub.iter().map(|e| u.cross(*e)).collect();
    sat_summary(&ub, &edges, &sep)
}

/// Largest |cos| between `n` and the box's face normals.
fn face_cos(g: &G, n: Vec3<f64>) -> f64 {
    (0..3).map(|i| g.axis(i).dot(n).abs()).fold(0.0, f64::max)
}

/// cos(0.02 rad) with a little slack: the routines keep a face manifold for
/// edge axes this close to a face normal.
const FACE_LIKE_COS: f64 = 0.999_800_006_666_578 - 1e-9;

/// Face-bias cases: the true minimum is an edge axis but the routine keeps
/// a face manifold (edge within 0.1 % of the face overlap for box–box, or
/// an edge axis within 0.02 rad of a face normal). The exact edge point is
/// in the manifold, and clipped face points may be deeper, down to the
/// face-axis separation. Returns that lower bound on the deepest φ (m).
fn face_bias_lower_bound(a: &G, b: &G, r: &Reference, scale: f64) -> Option<f64> {
    match (a.kind, b.kind) {
        (GeomKind::Box, GeomKind::Box) if r.dist < 0.0 => {
            let s = box_box_sat(a, b);
            let like = face_cos(a, s.edge_axis).max(face_cos(b, s.edge_axis)) > FACE_LIKE_COS;
            (s.edge > s.face && (s.edge - s.face <= 1.1e-3 * s.face.abs() + 1e-9 * scale || like))
                .then_some(s.face - 1e-9 * scale)
        }
        (GeomKind::Capsule, GeomKind::Box) if r.dist + a.size[0] < 0.0 => {
            let s = segment_box_sat(a, b);
            (s.edge > s.face && face_cos(b, s.edge_axis) > FACE_LIKE_COS).then_some(s.face - a.size[0] - 1e-9 * scale)
        }
        _ => None,
    }
}

#[derive(Default, Debug)]
struct Stats {
    overlapping: usize,
    separated: usize,
    far: usize,
    skipped: usize,
    /// Face-bias cases (see `face_bias_lower_bound`): φ checked against a range.
    face_biased: usize,
    f32_normal_skipped: usize,
    max_dphi: f64,
    max_angle: f64,
    max_surface: f64,
    max_dphi_f32: f64,
    max_angle_f32: f64,
    max_dphi_parry_capsule: f64,
    /// Penetrating cases where parry's EPA (`query::contact`) differs from
    /// its SAT by > 1e-6 m (information only).
    epa_off: usize,
}

fn check_pair(ka: GeomKind, kb: GeomKind, seed: u64) -> Stats {
    let mut rng = Rng::new(seed);
    let mut st = Stats::default();
    for case in 0..CASES {
        let (a, b) = random_pair(&mut rng, ka, kb);
        let scale = 1.0f64.max(a.bound() + b.bound());
        let Some(r) = reference(&a, &b, &mut st) else { panic!("parry found no contact within 10 m") };
        let m = run::<f64>(&a, &b, MARGIN);
        let ctx =
            || format!("{}-{} case {case}: a {a:?} b {b:?} ref φ {} n {:?}", ka.name(), kb.name(), r.dist, r.normal);
        for p in m.as_slice() {
            assert!(p.dist < MARGIN, "{}: reported φ {} ≥ margin", ctx(), p.dist);
            assert!(p.pos.is_finite() && p.normal.is_finite() && p.dist.is_finite(), "{}: non-finite {p:?}", ctx());
            assert!((p.normal.norm() - 1.0).abs() < 1e-12, "{}: normal not unit {p:?}", ctx());
            let pa = p.pos - p.normal * (0.5 * p.dist);
            let pb = p.pos + p.normal * (0.5 * p.dist);
            let (ea, eb) = (off_surface(&a, pa, p.feature[0]), off_surface(&b, pb, p.feature[1]));
            st.max_surface = st.max_surface.max(ea.max(eb) / scale);
            assert!(
                ea <= TOL_SURFACE * scale && eb <= TOL_SURFACE * scale,
                "{}: witness off surface {ea:e} {eb:e} {p:?}",
                ctx()
            );
        }
        if r.dist >= MARGIN + TOL_PHI * scale {
            st.far += 1;
            assert_eq!(m.len, 0, "{}: contact reported beyond the margin: {:?}", ctx(), m.as_slice());
            continue;
        }
        if r.dist > MARGIN - TOL_PHI * scale {
            st.skipped += 1; // at the margin: either answer is right
            continue;
        }
        if r.dist < 0.0 {
            st.overlapping += 1;
        } else {
            st.separated += 1;
        }
        // Ambiguous references: normals from nearly coincident points, and SAT near-ties.
        let mut ambiguous = r.lever < 1e-3;
        if ka == GeomKind::Box && kb == GeomKind::Box && r.dist < 0.0 {
            let s = box_box_sat(&a, &b);
            ambiguous |= s.first - s.second < 1e-9 * scale;
        }
        if ka == GeomKind::Capsule && kb == GeomKind::Box && r.dist + a.size[0] <= 0.0 {
            let s = segment_box_sat(&a, &b);
            ambiguous |= s.first - s.second < 1e-9 * scale;
        }
        assert!(m.len > 0, "{}: no contact reported", ctx());
        let deepest = m.as_slice().iter().min_by(|p, q| p.dist.total_cmp(&q.dist)).unwrap();
        let biased = face_bias_lower_bound(&a, &b, &r, scale);
        if let Some(lower) = biased {
            // The exact point is reported; clipped face points may be deeper.
            st.face_biased += 1;
            assert!(
                m.as_slice().iter().any(|p| (p.dist - r.dist).abs() <= TOL_PHI * scale),
                "{}: exact point missing from {:?}",
                ctx(),
                m.as_slice()
            );
            assert!(deepest.dist >= lower, "{}: φ {} below the face separation {lower}", ctx(), deepest.dist);
        } else {
            let dphi = (deepest.dist - r.dist).abs();
            st.max_dphi = st.max_dphi.max(dphi / scale);
            assert!(
                dphi <= TOL_PHI * scale,
                "{}: φ {} vs parry {} (Δ {dphi:e}); manifold {:?}",
                ctx(),
                deepest.dist,
                r.dist,
                m.as_slice()
            );
        }
        if ambiguous {
            st.skipped += 1;
        } else {
            // Some point at the exact φ carries parry's normal.
            let ang = m
                .as_slice()
                .iter()
                .filter(|p| (p.dist - r.dist).abs() <= TOL_PHI * scale)
                .map(|p| angle(p.normal, r.normal))
                .fold(f64::INFINITY, f64::min);
            st.max_angle = st.max_angle.max(ang);
            assert!(ang <= TOL_ANGLE, "{}: normals {:?} vs parry {:?} ({ang:e} rad)", ctx(), m.as_slice(), r.normal);
        }
        // parry's own rounded capsule (GJK/EPA on a curved support map).
        if (ka == GeomKind::Capsule || kb == GeomKind::Capsule)
            && let Ok(Some(c)) = query::contact(&a.pose(), a.parry().as_ref(), &b.pose(), b.parry().as_ref(), 10.0)
        {
            let d = (c.dist - r.dist).abs() / scale;
            st.max_dphi_parry_capsule = st.max_dphi_parry_capsule.max(d);
            assert!(d <= TOL_PHI_PARRY_CAPSULE, "{}: parry Capsule φ {} vs core {}", ctx(), c.dist, r.dist);
        }
        // f32 against f64: the deepest φ, and the deepest f32 point matches
        // some f64 point (φ and normal) where the normal is well conditioned.
        let m32 = run::<f32>(&a, &b, MARGIN);
        if r.dist < MARGIN - 1e-3 {
            assert!(m32.len > 0, "{}: f32 reported nothing", ctx());
            let d32 = m32.as_slice().iter().min_by(|p, q| p.dist.total_cmp(&q.dist)).unwrap();
            if biased.is_none() {
                let dphi32 = (d32.dist as f64 - deepest.dist).abs();
                st.max_dphi_f32 = st.max_dphi_f32.max(dphi32 / scale);
                assert!(dphi32 <= TOL_PHI_F32 * scale, "{}: f32 φ {} vs f64 {}", ctx(), d32.dist, deepest.dist);
            }
            if ambiguous || biased.is_some() || r.lever < 0.02 || near_tie(&a, &b, &r, scale) {
                st.f32_normal_skipped += 1;
            } else {
                let ang = m
                    .as_slice()
                    .iter()
                    .filter(|p| (p.dist - d32.dist as f64).abs() <= TOL_PHI_F32 * scale)
                    .map(|p| angle(d32.normal.cast(), p.normal))
                    .fold(f64::INFINITY, f64::min);
                st.max_angle_f32 = st.max_angle_f32.max(ang);
                assert!(ang <= TOL_ANGLE_F32, "{}: f32 normal {:?} vs f64 {:?}", ctx(), d32, m.as_slice());
            }
        }
    }
    st
}

/// SAT pairs whose two best axes are within f32 resolution: the f32 run may
/// pick the other axis (same φ, other normal).
fn near_tie(a: &G, b: &G, r: &Reference, scale: f64) -> bool {
    let band = 1e-4 * scale;
    match (a.kind, b.kind) {
        (GeomKind::Box, GeomKind::Box) if r.dist < 0.0 => {
            let s = box_box_sat(a, b);
            s.first - s.second < band || (s.edge - s.face).abs() < 2e-3 * s.face.abs() + band
        }
        (GeomKind::Capsule, GeomKind::Box) if r.dist + a.size[0] <= 0.0 => {
            let s = segment_box_sat(a, b);
            s.first - s.second < band
        }
        (GeomKind::Sphere, GeomKind::Box) if r.dist + a.size[0] <= 0.0 => {
            // Centre inside: the two shallowest faces.
            let d = Vec3::from_array(a.pos) - Vec3::from_array(b.pos);
            let mut depth: Vec<f64> = (0..3).map(|i| b.size[i] - b.axis(i).dot(d).abs()).collect();
            depth.sort_by(f64::total_cmp);
            depth[1] - depth[0] < band
        }
        _ => false,
    }
}

fn check(ka: GeomKind, kb: GeomKind, seed: u64) {
    let st = check_pair(ka, kb, seed);
    eprintln!("{}-{}: {st:?}", ka.name(), kb.name());
    let n = CASES as f64;
    assert!(st.overlapping as f64 >= 0.2 * n, "too few overlapping cases: {st:?}");
    assert!(st.separated as f64 >= 0.2 * n, "too few separated cases: {st:?}");
    assert!(st.overlapping + st.separated >= 1000, "fewer than 1000 compared cases: {st:?}");
    assert!(st.skipped as f64 <= 0.02 * n, "too many ambiguous cases skipped: {st:?}");
    assert!(st.face_biased as f64 <= 0.05 * n, "too many face-bias cases: {st:?}");
    assert!(st.f32_normal_skipped as f64 <= 0.2 * n, "too many f32 normal checks skipped: {st:?}");
}

use GeomKind::{Box as Bx, Capsule as Cap, Plane as Pl, Sphere as Sph};

#[test]
fn plane_sphere() {
    check(Pl, Sph, 101);
}
#[test]
fn plane_capsule() {
    check(Pl, Cap, 102);
}
#[test]
fn plane_box() {
    check(Pl, Bx, 103);
}
#[test]
fn sphere_sphere() {
    check(Sph, Sph, 104);
}
#[test]
fn sphere_capsule() {
    check(Sph, Cap, 105);
}
#[test]
fn sphere_box() {
    check(Sph, Bx, 106);
}
#[test]
fn capsule_capsule() {
    check(Cap, Cap, 107);
}
#[test]
fn capsule_box() {
    check(Cap, Bx, 108);
}
#[test]
fn box_box() {
    check(Bx, Bx, 109);
}
