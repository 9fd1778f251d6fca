//! The table of geom-kind pairs (`collision::PAIR_KINDS`) against the
//! routines it describes: every call of a pair's routine, over many random
//! poses around contact (touching, overlapping, resting face to face,
//! tilted), produces at most the table's `max_points` contacts (the GPU
//! contact capacity is built from them); the table covers every ordered
//! kind pair once, and its GJK/EPA and convex flags agree with
//! `CONVEX_PAIRS` and the GPU's passes.

mod common;

use cenic::collision::{CONVEX_PAIRS, MAX_MANIFOLD, Manifold, PAIR_KINDS, Shape, narrow_phase_fn};
use cenic::gpu::batch::default_contact_capacity;
use cenic::math::{Quat, Vec3};
use cenic::model::{ConvexMesh, GeomKind, HeightField};
use common::Rng;

fn mesh() -> ConvexMesh {
    // A slab-like hull with square faces (flat contacts give full manifolds).
    let mut pts = vec![];
    for i in 0..8 {
        pts.push([
            if i & 1 == 0 { -0.2 } else { 0.2 },
            if i & 2 == 0 { -0.15 } else { 0.15 },
            if i & 4 == 0 { -0.05 } else { 0.05 },
        ]);
    }
    pts.push([0.0, 0.0, 0.08]);
    ConvexMesh::from_points("slab", &pts).unwrap()
}

fn size(kind: GeomKind, rng: &mut Rng) -> [f64; 3] {
    let r = |rng: &mut Rng, lo: f64, hi: f64| lo + (hi - lo) * rng.uniform();
    match kind {
        GeomKind::Plane => [1.0, 1.0, 0.1],
        GeomKind::Sphere => [r(rng, 0.05, 0.2), 0.0, 0.0],
        GeomKind::Capsule | GeomKind::Cylinder => [r(rng, 0.03, 0.15), r(rng, 0.05, 0.3), 0.0],
        GeomKind::Box | GeomKind::Ellipsoid => [r(rng, 0.03, 0.3), r(rng, 0.03, 0.3), r(rng, 0.03, 0.3)],
        GeomKind::Mesh | GeomKind::Hfield => [1.0, 1.0, 1.0],
    }
}

/// A bumpy 9 × 9 field, 1 m × 1 m, 0.1 m high.
fn field() -> HeightField {
    let raw: Vec<f32> = (0..81).map(|i| ((i % 9) as f32 * 0.7).sin() * ((i / 9) as f32 * 0.5).cos()).collect();
    HeightField::new("bumps", 9, 9, [0.5, 0.5, 0.1, 0.05], &raw).unwrap()
}

/// A random orientation, or (half of the time) one axis-aligned up to a
/// small tilt, so that faces rest on faces.
fn orientation(rng: &mut Rng) -> Quat<f64> {
    if rng.uniform() < 0.5 {
        let axis = Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize();
        Quat::from_axis_angle(axis, std::f64::consts::PI * rng.uniform())
    } else {
        let quarter = [0.0, std::f64::consts::FRAC_PI_2][(rng.uniform() * 2.0) as usize];
        let tilt = 1e-3 * rng.normal();
        Quat::from_axis_angle(Vec3::new(1.0, 0.0, 0.0), quarter + tilt)
            * Quat::from_axis_angle(Vec3::new(0.0, 0.0, 1.0), rng.uniform())
    }
}

#[test]
fn routines_stay_within_the_table_max_points() {
    let hull = mesh();
    let bumps = field();
    let mut rng = Rng::new(18);
    let mut largest = vec![0usize; PAIR_KINDS.len()];
    for (row, p) in PAIR_KINDS.iter().enumerate().filter(|(_, p)| p.max_points > 0) {
        let f = narrow_phase_fn::<f64>(p.a, p.b);
        for _ in 0..400 {
            let (sa, sb) = (size(p.a, &mut rng), size(p.b, &mut rng));
            let ra = if p.a == GeomKind::Plane { Quat::identity() } else { orientation(&mut rng) };
            let rb = orientation(&mut rng);
            let a = Shape {
                kind: p.a,
                size: Vec3::from_array(sa),
                mesh: (p.a == GeomKind::Mesh).then_some(&hull),
                hfield: None,
                prism: None,
                pos: Vec3::zero(),
                rot: ra.to_mat3(),
            };
            // B's centre within reach of A: around A's surface (the plane at z = 0).
            let reach = 0.25 * rng.uniform();
            let dir = if p.a == GeomKind::Plane {
                Vec3::new(0.3 * rng.normal(), 0.3 * rng.normal(), 0.05 + 0.15 * rng.uniform())
            } else {
                Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize() * reach
            };
            let b = Shape {
                kind: p.b,
                size: Vec3::from_array(sb),
                mesh: (p.b == GeomKind::Mesh).then_some(&hull),
                hfield: (p.b == GeomKind::Hfield).then_some(&bumps),
                prism: None,
                pos: dir,
                rot: rb.to_mat3(),
            };
            let mut m = Manifold::default();
            f(&a, &b, 0.02, &mut m);
            assert!(
                m.len <= p.max_points,
                "{}: {} contacts, the table says at most {}",
                p.routine,
                m.len,
                p.max_points
            );
            largest[row] = largest[row].max(m.len);
        }
    }
    for (p, n) in PAIR_KINDS.iter().zip(&largest) {
        eprintln!("{}: up to {} of {} contacts seen", p.routine, n, p.max_points);
    }
    // The samples reach the full manifolds the table allows for the common pairs.
    for (routine, want) in [("contact_plane_box", 4), ("contact_box_box", 4), ("contact_plane_capsule", 2)] {
        let row = PAIR_KINDS.iter().position(|p| p.routine == routine).unwrap();
        assert!(largest[row] >= want, "{routine}: only {} contacts in any sample", largest[row]);
    }
}

#[test]
fn the_table_covers_every_kind_pair_once() {
    let mut seen = vec![];
    for p in &PAIR_KINDS {
        assert!(p.a as usize <= p.b as usize, "{}: kinds out of order", p.routine);
        assert_eq!(p.routine, format!("contact_{}_{}", p.a.name(), p.b.name()));
        assert!(p.max_points <= MAX_MANIFOLD, "{}", p.routine);
        assert!(!p.uses_epa || p.convex, "{}: GJK/EPA only in the convex routines", p.routine);
        assert_eq!(p.hfield, p.b == GeomKind::Hfield && p.max_points > 0, "{}", p.routine);
        assert!(!seen.contains(&(p.a, p.b)));
        seen.push((p.a, p.b));
    }
    assert_eq!(seen.len(), GeomKind::COUNT * (GeomKind::COUNT + 1) / 2);
    let convex: Vec<_> = PAIR_KINDS.iter().filter(|p| p.convex && !p.hfield).map(|p| (p.a, p.b)).collect();
    assert_eq!(convex, CONVEX_PAIRS.to_vec());
    for p in &PAIR_KINDS {
        assert_eq!(cenic::gpu::collision::uses_epa(p.a, p.b), p.uses_epa, "{}", p.routine);
    }
}

#[test]
fn default_capacity_is_tight_for_few_pairs() {
    // Box on a plane: 4 corners at most.
    assert_eq!(default_contact_capacity(&cenic::scenes::cube_toss()), 4);
    // 20 objects and 5 static geoms: 8 per moving geom, not the sum over 300 pairs.
    let clutter = cenic::scenes::clutter(20, cenic::scenes::CUBE_TOSS_MATERIAL);
    assert_eq!(default_contact_capacity(&clutter), 160);
    let Some(ant) = common::shared_file("models/gymnasium/ant.xml") else { return };
    let m = cenic::model::Model::from_mjcf_file(&ant).expect("the ant loads");
    let cap = default_contact_capacity(&m);
    let moving = m.geoms.iter().filter(|g| m.body_is_dynamic(g.body)).count();
    eprintln!("ant: capacity {cap} (was {})", 8 * moving);
    assert!(cap < 8 * moving);
}
