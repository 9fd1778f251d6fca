//! Contact manifolds of the convex narrow phase: resting configurations with
//! known answers (cylinder standing and lying on a plane, mesh cube on a plane
//! and on a box, cylinder on a box, stacked cylinders, capsule lying on a mesh
//! face and on a cylinder cap, a box on an edge), geometric consistency of
//! the contact points (random hulls against spheres), and degenerate inputs
//! (coincident shapes, exact touching) for all 18 pair types.

mod common;

use cenic::collision::{CONVEX_PAIRS, ContactPoint, Manifold, Shape, convex_separation, narrow_phase_fn};
use cenic::math::{Mat3, Quat, Vec3};
use cenic::model::{ConvexMesh, GeomKind};
use common::Rng;
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4};

const MARGIN: f64 = 0.05;

fn rot(axis: [f64; 3], angle: f64) -> Mat3<f64> {
    Quat::from_axis_angle(Vec3::from_array(axis).normalize(), angle).to_mat3()
}

fn shape<'m>(
    kind: GeomKind,
    size: [f64; 3],
    pos: [f64; 3],
    rot: Mat3<f64>,
    mesh: Option<&'m ConvexMesh>,
) -> Shape<'m, f64> {
    Shape { kind, size: Vec3::from_array(size), mesh, hfield: None, prism: None, pos: Vec3::from_array(pos), rot }
}

fn contacts(a: &Shape<'_, f64>, b: &Shape<'_, f64>) -> Vec<ContactPoint<f64>> {
    let mut m = Manifold::default();
    narrow_phase_fn::<f64>(a.kind, b.kind)(a, b, MARGIN, &mut m);
    m.as_slice().to_vec()
}

fn box_mesh(h: [f64; 3]) -> ConvexMesh {
    let mut pts = vec![];
    for i in 0..8 {
        pts.push([
            if i & 1 == 0 { -h[0] } else { h[0] },
            if i & 2 == 0 { -h[1] } else { h[1] },
            if i & 4 == 0 { -h[2] } else { h[2] },
        ]);
    }
    ConvexMesh::from_points("box", &pts).unwrap()
}

fn prism_mesh(n: usize, r: f64, h: f64) -> ConvexMesh {
    let mut pts = vec![];
    for k in 0..n {
        let t = std::f64::consts::TAU * k as f64 / n as f64;
        pts.push([r * t.cos(), r * t.sin(), -h]);
        pts.push([r * t.cos(), r * t.sin(), h]);
    }
    ConvexMesh::from_points("prism", &pts).unwrap()
}

fn plane() -> Shape<'static, f64> {
    shape(GeomKind::Plane, [1.0, 1.0, 0.1], [0.0; 3], Mat3::identity(), None)
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn cylinder_standing_on_plane_gives_rim_points() {
    let (r, h, pen) = (0.3, 0.2, 0.01);
    for ang in [0.0, 0.7] {
        // Any rotation about the vertical axis.
        let cyl = shape(GeomKind::Cylinder, [r, h, 0.0], [0.4, -0.2, h - pen], rot([0., 0., 1.], ang), None);
        let c = contacts(&plane(), &cyl);
        assert!(c.len() >= 3, "{} points", c.len());
        for p in &c {
            assert!(close(p.dist, -pen, 1e-12), "φ {}", p.dist);
            assert!(close(p.normal.z, 1.0, 1e-12));
            // On the bottom rim: the surface point p_B = pos + φ/2 n.
            let pb = p.pos + p.normal * (p.dist * 0.5);
            assert!(close(pb.z, -pen, 1e-12));
            let rho = ((pb.x - 0.4).powi(2) + (pb.y + 0.2).powi(2)).sqrt();
            assert!(close(rho, r, 1e-12), "rim distance {rho}");
            assert!(p.feature[1] < 4, "bottom cap samples are 0..4, got {}", p.feature[1]);
        }
    }
}

#[test]
fn cylinder_lying_on_plane_gives_two_points() {
    let (r, h, pen) = (0.25, 0.4, 0.002);
    let cyl = shape(GeomKind::Cylinder, [r, h, 0.0], [0.0, 0.0, r - pen], rot([1., 0., 0.], FRAC_PI_2), None);
    let c = contacts(&plane(), &cyl);
    assert_eq!(c.len(), 2);
    for p in &c {
        assert!(close(p.dist, -pen, 1e-12));
    }
    // One per cap, at both ends of the contact line (axis along y).
    let ys = [c[0].pos.y, c[1].pos.y];
    assert!(close(ys[0].abs(), h, 1e-12) && close(ys[1].abs(), h, 1e-12) && ys[0] * ys[1] < 0.0, "{ys:?}");
}

#[test]
fn tilted_cylinder_on_plane_touches_at_the_deepest_rim_point() {
    let (r, h, tilt) = (0.2, 0.3, 0.3f64);
    let z = h * tilt.cos() + r * tilt.sin() - 0.004;
    let cyl = shape(GeomKind::Cylinder, [r, h, 0.0], [0.0, 0.0, z], rot([0., 1., 0.], tilt), None);
    let c = contacts(&plane(), &cyl);
    let deepest = c.iter().map(|p| p.dist).fold(f64::INFINITY, f64::min);
    assert!(close(deepest, -0.004, 1e-12), "{deepest}");
}

#[test]
fn mesh_cube_on_plane_gives_its_four_bottom_corners() {
    let m = box_mesh([0.2, 0.2, 0.2]);
    let pen = 0.003;
    let cube = shape(GeomKind::Mesh, [1.0; 3], [0.1, 0.2, 0.2 - pen], rot([0., 0., 1.], 0.4), Some(&m));
    let c = contacts(&plane(), &cube);
    assert_eq!(c.len(), 4);
    let mut ids: Vec<u32> = c.iter().map(|p| p.feature[1]).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4);
    for p in &c {
        assert!(close(p.dist, -pen, 1e-12));
        // The feature is the hull vertex at the contact.
        let v = cube.pos + cube.rot * Vec3::from_array(m.vertices[p.feature[1] as usize]);
        assert!((v - (p.pos + p.normal * (p.dist * 0.5))).norm() < 1e-12);
    }
}

#[test]
fn plane_mesh_keeps_eight_spread_points_of_a_large_flat_face() {
    let m = prism_mesh(16, 0.3, 0.1);
    assert_eq!(m.polygons.len(), 18, "two 16-gon caps and 16 quads");
    let prism = shape(GeomKind::Mesh, [1.0; 3], [0.0, 0.0, 0.1 - 0.001], Mat3::identity(), Some(&m));
    let c = contacts(&plane(), &prism);
    assert_eq!(c.len(), 8);
    // Well spread: no two kept points closer than a side of the 16-gon.
    let side = 2.0 * 0.3 * (std::f64::consts::PI / 16.0).sin();
    for i in 0..c.len() {
        for j in 0..i {
            assert!((c[i].pos - c[j].pos).norm() > side * 0.99);
        }
    }
}

#[test]
fn mesh_cube_on_box_gives_points_inside_the_overlap() {
    let m = box_mesh([0.2, 0.2, 0.2]);
    let pen = 0.004;
    let table = shape(GeomKind::Box, [0.5, 0.5, 0.1], [0.0; 3], Mat3::identity(), None);
    // Centred and overhanging the table edge.
    for (x, ang) in [(0.0, 0.3), (0.45, 0.5)] {
        let cube = shape(GeomKind::Mesh, [1.0; 3], [x, 0.1, 0.1 + 0.2 - pen], rot([0., 0., 1.], ang), Some(&m));
        let c = contacts(&table, &cube);
        assert!(c.len() >= 3, "{} points", c.len());
        for p in &c {
            assert!(close(p.dist, -pen, 1e-9), "φ {}", p.dist);
            assert!(close(p.normal.z, 1.0, 1e-9));
            assert!(p.pos.x.abs() <= 0.5 + 1e-9 && p.pos.y.abs() <= 0.5 + 1e-9, "outside the table: {:?}", p.pos);
            let local = cube.rot.tmul(p.pos - cube.pos);
            assert!(local.x.abs() <= 0.2 + 1e-9 && local.y.abs() <= 0.2 + 1e-9, "outside the cube: {local:?}");
        }
    }
}

#[test]
fn cylinder_on_box_standing_and_lying() {
    let table = shape(GeomKind::Box, [0.5, 0.5, 0.1], [0.0; 3], Mat3::identity(), None);
    let (r, h, pen) = (0.15, 0.2, 0.002);
    let standing = shape(GeomKind::Cylinder, [r, h, 0.0], [0.1, 0.0, 0.1 + h - pen], rot([0., 0., 1.], 0.2), None);
    let c = contacts(&table, &standing);
    assert!(c.len() >= 3, "{} points", c.len());
    for p in &c {
        assert!(close(p.dist, -pen, 1e-9));
        let d = ((p.pos.x - 0.1).powi(2) + p.pos.y.powi(2)).sqrt();
        assert!(d <= r + 1e-9, "outside the cap");
    }
    let lying = shape(GeomKind::Cylinder, [r, h, 0.0], [0.0, 0.1, 0.1 + r - pen], rot([1., 0., 0.], FRAC_PI_2), None);
    let c = contacts(&table, &lying);
    assert_eq!(c.len(), 2);
    for p in &c {
        assert!(close(p.dist, -pen, 1e-9));
    }
}

#[test]
fn stacked_cylinders_and_capsules_on_flat_faces() {
    let (r, h, pen) = (0.2, 0.15, 0.003);
    let base = shape(GeomKind::Cylinder, [0.3, 0.2, 0.0], [0.0; 3], Mat3::identity(), None);
    let top = shape(GeomKind::Cylinder, [r, h, 0.0], [0.05, 0.0, 0.2 + h - pen], rot([0., 0., 1.], 0.3), None);
    let c = contacts(&base, &top);
    assert!(c.len() >= 3, "{} points", c.len());
    for p in &c {
        assert!(close(p.dist, -pen, 1e-9));
    }
    // Capsule lying on a cylinder cap and on a mesh face: both ends.
    let cap =
        shape(GeomKind::Capsule, [0.05, 0.15, 0.0], [0.0, 0.0, 0.2 + 0.05 - pen], rot([0., 1., 0.], FRAC_PI_2), None);
    let c = contacts(&cap, &base);
    assert_eq!(c.len(), 2);
    for p in &c {
        assert!(close(p.dist, -pen, 1e-9));
    }
    let m = box_mesh([0.4, 0.4, 0.1]);
    let slab = shape(GeomKind::Mesh, [1.0; 3], [0.0, 0.0, 0.2 - 0.1], Mat3::identity(), Some(&m));
    let c = contacts(&cap, &slab);
    assert_eq!(c.len(), 2);
    for p in &c {
        assert!(close(p.dist, -pen, 1e-9));
        assert!(close(p.normal.z, -1.0, 1e-9), "normal from the capsule (A) to the mesh (B)");
    }
}

#[test]
fn parallel_cylinders_and_capsules_give_line_contacts() {
    // Two logs side by side (axes along x, offset along y), and a capsule lying along a log.
    let lying = rot([0., 1., 0.], FRAC_PI_2);
    let (r, pen) = (0.1, 0.002);
    let log1 = shape(GeomKind::Cylinder, [r, 0.4, 0.0], [0.0, 0.0, 0.0], lying, None);
    let log2 = shape(GeomKind::Cylinder, [r, 0.3, 0.0], [0.2, 2.0 * r - pen, 0.0], lying, None);
    let c = contacts(&log1, &log2);
    assert_eq!(c.len(), 2, "{c:?}");
    let mut xs: Vec<f64> = c.iter().map(|p| p.pos.x).collect();
    xs.sort_by(f64::total_cmp);
    assert!(close(xs[0], -0.1, 1e-9) && close(xs[1], 0.4, 1e-9), "overlap of the two lines: {xs:?}");
    for p in &c {
        assert!(close(p.dist, -pen, 1e-9));
        assert!(close(p.normal.y, 1.0, 1e-9));
    }
    let cap = shape(GeomKind::Capsule, [0.05, 0.2, 0.0], [0.0, 0.0, r + 0.05 - pen], lying, None);
    let c = contacts(&cap, &log1);
    assert_eq!(c.len(), 2, "{c:?}");
    for p in &c {
        assert!(close(p.dist, -pen, 1e-9));
        assert!(close(p.pos.x.abs(), 0.2, 1e-9));
    }
    // Crossed logs touch at one point.
    let crossed =
        shape(GeomKind::Cylinder, [r, 0.3, 0.0], [0.0, 0.0, 2.0 * r - pen], rot([1., 0., 0.], FRAC_PI_2), None);
    assert_eq!(contacts(&log1, &crossed).len(), 1);
}

#[test]
fn box_resting_on_an_edge_gives_the_edge_ends() {
    // Box rotated 45° about x, its lowest edge along x pressed into a mesh slab.
    let m = box_mesh([1.0, 1.0, 0.1]);
    let slab = shape(GeomKind::Mesh, [1.0; 3], [0.0, 0.0, -0.1], Mat3::identity(), Some(&m));
    let half = 0.1;
    let pen = 0.002;
    let b = shape(
        GeomKind::Box,
        [0.3, half, half],
        [0.0, 0.0, half * 2f64.sqrt() - pen],
        rot([1., 0., 0.], FRAC_PI_4),
        None,
    );
    let c = contacts(&b, &slab);
    assert_eq!(c.len(), 2, "{c:?}");
    for p in &c {
        assert!(close(p.dist, -pen, 1e-9));
        assert!(close(p.pos.x.abs(), 0.3, 1e-9));
    }
}

/// Distance of `p` outside the hull (max over face planes; 0 on the surface).
fn hull_height(m: &ConvexMesh, s: &Shape<'_, f64>, p: Vec3<f64>) -> f64 {
    let l = s.rot.tmul(p - s.pos);
    m.polygons.iter().map(|f| Vec3::from_array(f.normal).dot(l) - f.offset).fold(f64::NEG_INFINITY, f64::max)
}

#[test]
fn random_hulls_against_spheres_have_consistent_witnesses() {
    let mut rng = Rng::new(77);
    let (mut overlapping, mut separated) = (0, 0);
    for _ in 0..40 {
        let n = 5 + (rng.next_u64() % 30) as usize;
        let pts: Vec<[f64; 3]> =
            (0..n).map(|_| [0.3 * rng.normal(), 0.2 * rng.normal(), 0.25 * rng.normal()]).collect();
        let m = ConvexMesh::from_points("hull", &pts).unwrap();
        let q = rng.quat();
        let hull =
            shape(GeomKind::Mesh, [1.0; 3], [0.1, -0.2, 0.3], Quat::new(q[0], q[1], q[2], q[3]).to_mat3(), Some(&m));
        for _ in 0..25 {
            let r = rng.range(0.05, 0.3);
            let dir = Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize();
            let centre = hull.pos + dir * rng.range(0.0, m.radius() + r + MARGIN);
            let ball = shape(GeomKind::Sphere, [r, 0.0, 0.0], centre.to_array(), Mat3::identity(), None);
            let c = contacts(&ball, &hull);
            assert!(c.len() <= 1);
            let Some(p) = c.first() else { continue };
            if p.dist < 0.0 {
                overlapping += 1;
            } else {
                separated += 1;
            }
            let pa = p.pos - p.normal * (p.dist * 0.5);
            let pb = p.pos + p.normal * (p.dist * 0.5);
            assert!(close((pa - centre).norm(), r, 1e-9), "p_A not on the sphere");
            assert!(close(hull_height(&m, &hull, pb), 0.0, 1e-9), "p_B not on the hull");
            // The normal is the sphere's surface normal at p_A.
            assert!(((pa - centre) * (1.0 / r) - p.normal).norm() < 1e-9);
        }
    }
    assert!(overlapping > 100 && separated > 50, "{overlapping} overlapping, {separated} separated");
}

fn size_of(kind: GeomKind) -> [f64; 3] {
    match kind {
        GeomKind::Sphere => [0.2, 0.0, 0.0],
        GeomKind::Capsule => [0.1, 0.2, 0.0],
        GeomKind::Cylinder => [0.2, 0.2, 0.0],
        GeomKind::Mesh => [1.0; 3],
        _ => [0.2, 0.2, 0.2],
    }
}

fn check_finite(cs: &[ContactPoint<f64>], what: &str) {
    for p in cs {
        assert!(p.pos.is_finite() && p.normal.is_finite() && p.dist.is_finite(), "{what}: {p:?}");
        assert!((p.normal.norm() - 1.0).abs() < 1e-9, "{what}: normal {:?}", p.normal);
    }
}

#[test]
fn coincident_and_touching_shapes_give_finite_contacts() {
    let m = box_mesh([0.2, 0.2, 0.2]);
    for (ka, kb) in CONVEX_PAIRS {
        let mesh = Some(&m);
        // Same centre, same orientation: deep, maximally symmetric.
        let a = shape(ka, size_of(ka), [0.3, 0.1, -0.2], Mat3::identity(), mesh);
        let b = shape(kb, size_of(kb), [0.3, 0.1, -0.2], Mat3::identity(), mesh);
        let c = contacts(&a, &b);
        assert!(!c.is_empty(), "{}-{}: coincident shapes must touch", ka.name(), kb.name());
        check_finite(&c, &format!("{}-{} coincident", ka.name(), kb.name()));
        assert!(c.iter().all(|p| p.dist < 0.0));
        // Exactly touching along z: φ = 0 for these sizes (every shape has half-height 0.2 along z,
        // except the sphere 0.2 and the capsule 0.3).
        let top = |k: GeomKind| if k == GeomKind::Capsule { 0.3 } else { 0.2 };
        let gap = if ka == GeomKind::Plane { top(kb) } else { top(ka) + top(kb) };
        let b = shape(kb, size_of(kb), [0.3, 0.1, -0.2 + gap], Mat3::identity(), mesh);
        let c = contacts(&a, &b);
        check_finite(&c, &format!("{}-{} touching", ka.name(), kb.name()));
        assert!(!c.is_empty(), "{}-{}: touching shapes are within the margin", ka.name(), kb.name());
        for p in &c {
            assert!(p.dist.abs() < 1e-9, "{}-{} touching: φ {}", ka.name(), kb.name(), p.dist);
            assert!((p.normal.z - 1.0).abs() < 1e-6, "{}-{} touching: normal {:?}", ka.name(), kb.name(), p.normal);
        }
    }
}

#[test]
fn tiny_and_far_shapes_are_handled() {
    // A sphere of 1 µm against an ellipsoid, and shapes far from the origin (f32 too).
    let e = shape(GeomKind::Ellipsoid, [0.3, 0.2, 0.1], [1000.0, 0.0, 0.0], rot([1., 2., 3.], 0.4), None);
    let s = shape(GeomKind::Sphere, [1e-6, 0.0, 0.0], [1000.0, 0.0, 0.05], Mat3::identity(), None);
    let c = contacts(&s, &e);
    check_finite(&c, "tiny sphere in ellipsoid");
    let sep = convex_separation(&s, &e, MARGIN).unwrap();
    assert!(sep.dist < 0.0 && sep.dist.is_finite());
    let m = box_mesh([0.2, 0.2, 0.2]);
    let a = Shape::<f32> {
        kind: GeomKind::Mesh,
        size: Vec3::splat(1.0),
        mesh: Some(&m),
        hfield: None,
        prism: None,
        pos: Vec3::new(5000.0, -3000.0, 10.0),
        rot: Mat3::identity(),
    };
    let b = Shape::<f32> {
        kind: GeomKind::Cylinder,
        size: Vec3::new(0.1, 0.1, 0.0),
        mesh: None,
        hfield: None,
        prism: None,
        pos: Vec3::new(5000.0, -3000.0, 10.295),
        rot: Mat3::identity(),
    };
    let mut out = Manifold::default();
    narrow_phase_fn::<f32>(GeomKind::Cylinder, GeomKind::Mesh)(&b, &a, 0.05, &mut out);
    assert!(out.len >= 3, "f32 far from the origin: {} points", out.len);
    for p in out.as_slice() {
        assert!((p.dist + 0.005).abs() < 1e-5, "f32 φ {}", p.dist);
    }
}

#[test]
fn flat_and_thin_shapes_never_give_nan() {
    // Zero-thickness sizes (a disk-like ellipsoid, a cylinder of zero height,
    // a capsule of zero length) at random poses: contacts must stay finite.
    let m = box_mesh([0.2, 0.2, 0.005]);
    let mut rng = Rng::new(3);
    let degenerate = |k: GeomKind| match k {
        GeomKind::Ellipsoid => [0.2, 0.1, 0.0],
        GeomKind::Cylinder => [0.2, 0.0, 0.0],
        GeomKind::Capsule => [0.1, 0.0, 0.0],
        GeomKind::Box => [0.2, 0.0, 0.1],
        k => size_of(k),
    };
    for (ka, kb) in CONVEX_PAIRS {
        for i in 0..200 {
            let qa = rng.quat();
            let qb = rng.quat();
            let ra = Quat::new(qa[0], qa[1], qa[2], qa[3]).to_mat3();
            let rb = Quat::new(qb[0], qb[1], qb[2], qb[3]).to_mat3();
            let p = [rng.range(-0.3, 0.3), rng.range(-0.3, 0.3), rng.range(-0.3, 0.3)];
            let (sa, sb) = if i % 2 == 0 { (degenerate(ka), size_of(kb)) } else { (size_of(ka), degenerate(kb)) };
            let a = shape(ka, sa, [0.0; 3], ra, Some(&m));
            let b = shape(kb, sb, p, rb, Some(&m));
            check_finite(&contacts(&a, &b), &format!("{}-{} degenerate", ka.name(), kb.name()));
        }
    }
}
