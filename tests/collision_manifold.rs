//! Contact manifolds of the analytic narrow phase on hand-built
//! configurations (resting boxes, lying capsules, edge contacts,
//! degenerate inputs, margins), and `collide()` end to end.

use cenic::collision::{
    Contacts, Manifold, Shape, collide, contact_box_box, contact_capsule_box, contact_capsule_capsule,
    contact_plane_box, contact_plane_capsule, contact_plane_sphere, contact_sphere_box, contact_sphere_capsule,
    contact_sphere_sphere, narrow_phase_fn, narrow_phase_pair,
};
use cenic::dynamics::{Data, kinematics};
use cenic::math::{Mat3, Quat, Vec3};
use cenic::model::{BodySpec, GeomKind, GeomSpec, JointKind, JointSpec, Material, ModelBuilder, WORLD};

type V = Vec3<f64>;
const TOL: f64 = 1e-12;

fn v(x: f64, y: f64, z: f64) -> V {
    Vec3::new(x, y, z)
}

fn rot(axis: V, angle: f64) -> Mat3<f64> {
    Quat::from_axis_angle(axis.normalize(), angle).to_mat3()
}

fn shape(kind: GeomKind, size: V, pos: V, rot: Mat3<f64>) -> Shape<'static, f64> {
    Shape { kind, size, mesh: None, hfield: None, prism: None, pos, rot }
}

fn run(a: &Shape<'_, f64>, b: &Shape<'_, f64>, margin: f64) -> Manifold<f64> {
    let mut m = Manifold::default();
    narrow_phase_fn::<f64>(a.kind, b.kind)(a, b, margin, &mut m);
    for p in m.as_slice() {
        assert!(p.pos.is_finite() && p.normal.is_finite() && p.dist.is_finite(), "non-finite contact {p:?}");
        assert!((p.normal.norm() - 1.0).abs() < 1e-12, "normal not unit: {p:?}");
        assert!(p.dist < margin, "φ {} not below the margin {margin}", p.dist);
    }
    m
}

fn ident() -> Mat3<f64> {
    Mat3::identity()
}

fn plane() -> Shape<'static, f64> {
    shape(GeomKind::Plane, v(1.0, 1.0, 0.1), V::zero(), ident())
}

/// Point `p` (world) in the frame of `s`.
fn local(s: &Shape<'_, f64>, p: V) -> V {
    s.rot.tmul(p - s.pos)
}

// ---------------------------------------------------------------- plane–box

#[test]
fn box_resting_on_plane_gives_its_four_bottom_corners() {
    let h = v(0.3, 0.2, 0.1);
    for (yaw, pen) in [(0.0, 0.002), (0.7, 1e-4), (2.5, 0.01)] {
        let r = rot(v(0.0, 0.0, 1.0), yaw);
        let b = shape(GeomKind::Box, h, v(0.4, -0.3, h.z - pen), r);
        let m = run(&plane(), &b, 0.0);
        assert_eq!(m.len, 4, "yaw {yaw}: {:?}", m.as_slice());
        let mut seen = [false; 4];
        for p in m.as_slice() {
            assert!((p.dist + pen).abs() < TOL, "φ {} vs −{pen}", p.dist);
            assert!((p.normal - v(0.0, 0.0, 1.0)).norm() < TOL);
            let c = p.feature[1];
            assert_eq!(p.feature[0], 0);
            assert!(c < 4, "bottom corners have bit 2 clear, got {c}");
            seen[c as usize] = true;
            let sx = if c & 1 == 1 { 1.0 } else { -1.0 };
            let sy = if c & 2 == 2 { 1.0 } else { -1.0 };
            let corner = b.pos + b.rot * v(sx * h.x, sy * h.y, -h.z);
            // Midway between the plane (z = 0) and the corner (z = −pen).
            assert!((p.pos - (corner + v(0.0, 0.0, 0.5 * pen))).norm() < TOL, "{p:?} corner {corner:?}");
        }
        assert!(seen.iter().all(|&s| s));
    }
}

#[test]
fn box_on_tilted_plane_and_large_margin() {
    // Plane tilted by 0.4 rad about x, box aligned with it, 1 mm in.
    let r = rot(v(1.0, 0.0, 0.0), 0.4);
    let pl = shape(GeomKind::Plane, v(1.0, 1.0, 0.1), v(0.1, 0.2, 0.3), r);
    let h = v(0.1, 0.1, 0.05);
    let b = shape(GeomKind::Box, h, pl.pos + r * v(0.2, 0.0, h.z - 0.001), r);
    let m = run(&pl, &b, 0.0);
    assert_eq!(m.len, 4);
    for p in m.as_slice() {
        assert!((p.dist + 0.001).abs() < TOL && (p.normal - r.col(2)).norm() < TOL);
    }
    // A margin larger than the box: still only the 4 deepest corners.
    let m = run(&pl, &b, 1.0);
    assert_eq!(m.len, 4);
    assert!(m.as_slice().iter().all(|p| (p.dist + 0.001).abs() < TOL));
    // Tilted box: one corner down.
    let b = shape(GeomKind::Box, h, v(0.0, 0.0, 0.1), rot(v(1.0, 1.0, 0.3), 0.9));
    let m = run(&plane(), &b, 0.0);
    assert_eq!(m.len, 1);
    let lowest = (0..8)
        .map(|c| {
            let s = |bit: u32| if c & bit != 0 { 1.0 } else { -1.0 };
            (b.pos + b.rot * v(s(1) * h.x, s(2) * h.y, s(4) * h.z)).z
        })
        .fold(f64::INFINITY, f64::min);
    assert!(lowest < 0.0);
    assert!((m.points[0].dist - lowest).abs() < TOL);
}

// ------------------------------------------------------------ plane–capsule

#[test]
fn capsule_on_plane() {
    // Lying flat, 2 mm in: both ends.
    let r = rot(v(0.0, 1.0, 0.0), std::f64::consts::FRAC_PI_2);
    let c = shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), v(0.3, 0.1, 0.048), r);
    let m = run(&plane(), &c, 0.0);
    assert_eq!(m.len, 2);
    let mut ends = [m.points[0].feature[1], m.points[1].feature[1]];
    ends.sort();
    assert_eq!(ends, [0, 1]);
    for p in m.as_slice() {
        assert!((p.dist + 0.002).abs() < TOL);
        assert!((p.pos.z + 0.001).abs() < TOL);
        assert!(((p.pos.x - 0.3).abs() - 0.2).abs() < TOL);
    }
    // Slightly tilted: each end its own φ.
    let r = rot(v(0.0, 1.0, 0.0), std::f64::consts::FRAC_PI_2 + 0.01);
    let c = shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), v(0.0, 0.0, 0.05), r);
    let m = run(&plane(), &c, 0.01);
    assert_eq!(m.len, 2);
    let d: Vec<f64> = m.as_slice().iter().map(|p| p.dist).collect();
    assert!((d[0] + d[1]).abs() < 1e-12 && (d[0] - d[1]).abs() > 1e-3, "{d:?}");
    // Standing: one point.
    let c = shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), v(0.0, 0.0, 0.249), ident());
    let m = run(&plane(), &c, 0.0);
    assert_eq!(m.len, 1);
    assert_eq!(m.points[0].feature, [0, 0]);
    assert!((m.points[0].dist + 0.001).abs() < TOL);
}

// --------------------------------------------------------------- box–box

/// Checks that `p` lies in the footprint of box `s` seen along its local `axis`.
fn in_footprint(s: &Shape<'_, f64>, p: V, axis: usize, tol: f64) -> bool {
    let l = local(s, p);
    (0..3).filter(|&i| i != axis).all(|i| l[i].abs() <= s.size[i] + tol)
}

#[test]
fn box_lying_on_box() {
    let a = shape(GeomKind::Box, v(0.5, 0.4, 0.1), v(0.0, 0.0, 0.0), ident());
    let pen = 0.001;
    // (offset, yaw, half-extents of B): fully on top, overhanging an edge,
    // overhanging a corner, larger than A (A's face is the smaller one).
    let cases = [
        (v(0.1, 0.0, 0.0), 0.3, v(0.2, 0.15, 0.1)),
        (v(0.55, 0.1, 0.0), 0.2, v(0.2, 0.15, 0.1)),
        (v(0.5, 0.35, 0.0), 0.5, v(0.2, 0.15, 0.05)),
        (v(0.05, -0.02, 0.0), 0.785, v(0.8, 0.9, 0.2)),
    ];
    for (k, (off, yaw, hb)) in cases.into_iter().enumerate() {
        let b = shape(GeomKind::Box, hb, off + v(0.0, 0.0, 0.1 + hb.z - pen), rot(v(0.0, 0.0, 1.0), yaw));
        let m = run(&a, &b, 0.0);
        assert!(m.len >= 3, "case {k}: {} points {:?}", m.len, m.as_slice());
        for p in m.as_slice() {
            assert!((p.dist + pen).abs() < 1e-12, "case {k}: φ {}", p.dist);
            assert!((p.normal - v(0.0, 0.0, 1.0)).norm() < 1e-12, "case {k}: normal {:?}", p.normal);
            assert!(in_footprint(&a, p.pos, 2, 1e-12) && in_footprint(&b, p.pos, 2, 1e-12), "case {k}: {p:?} outside");
            assert!((p.pos.z - (0.1 - 0.5 * pen)).abs() < 1e-12);
        }
        // Same configuration with the roles swapped: normals flip.
        let m2 = run(&b, &a, 0.0);
        assert_eq!(m2.len, m.len);
        assert!(m2.as_slice().iter().all(|p| (p.normal + v(0.0, 0.0, 1.0)).norm() < 1e-12));
    }
    // Slightly tilted B: φ varies across the points, the deepest is exact.
    let hb = v(0.2, 0.15, 0.1);
    let r = rot(v(1.0, 0.3, 0.0), 0.002);
    let b = shape(GeomKind::Box, hb, v(0.0, 0.0, 0.1 + hb.z - 0.001), r);
    let m = run(&a, &b, 0.0);
    assert_eq!(m.len, 4);
    let lowest = (0..8)
        .map(|c| {
            let s = |bit: u32| if c & bit != 0 { 1.0 } else { -1.0 };
            (b.pos + b.rot * v(s(1) * hb.x, s(2) * hb.y, s(4) * hb.z)).z
        })
        .fold(f64::INFINITY, f64::min);
    let deepest = m.as_slice().iter().map(|p| p.dist).fold(f64::INFINITY, f64::min);
    assert!((deepest - (lowest - 0.1)).abs() < 1e-12);
}

#[test]
fn box_box_edge_on_edge() {
    // A: unit cube rotated 45° about x (top edge along x at z = √2/2);
    // B: rotated 45° about y (bottom edge along y), 1 cm in.
    let s = 0.5f64.sqrt();
    let a = shape(GeomKind::Box, v(0.5, 0.5, 0.5), V::zero(), rot(v(1.0, 0.0, 0.0), std::f64::consts::FRAC_PI_4));
    let b = shape(
        GeomKind::Box,
        v(0.5, 0.5, 0.5),
        v(0.0, 0.0, 2.0 * s - 0.01),
        rot(v(0.0, 1.0, 0.0), std::f64::consts::FRAC_PI_4),
    );
    let m = run(&a, &b, 0.0);
    assert_eq!(m.len, 1, "{:?}", m.as_slice());
    let p = m.points[0];
    assert!((p.dist + 0.01).abs() < 1e-12);
    assert!((p.normal - v(0.0, 0.0, 1.0)).norm() < 1e-12);
    assert!((p.pos - v(0.0, 0.0, s - 0.005)).norm() < 1e-12, "{p:?}");
    // Edge codes: one axis "between" (1), two at a bound.
    for f in p.feature {
        let k = [f % 3, (f / 3) % 3, f / 9];
        assert_eq!(k.iter().filter(|&&x| x == 1).count(), 1, "feature {f} is not an edge");
    }
    // Separated by 5 mm within a 1 cm margin: exact distance, same normal.
    let b2 = shape(GeomKind::Box, b.size, v(0.0, 0.0, 2.0 * s + 0.005), b.rot);
    let m = run(&a, &b2, 0.01);
    assert_eq!(m.len, 1);
    assert!((m.points[0].dist - 0.005).abs() < 1e-12 && (m.points[0].normal - v(0.0, 0.0, 1.0)).norm() < 1e-12);
    assert_eq!(run(&a, &b2, 0.004).len, 0);
}

#[test]
fn box_box_separated_diagonally_uses_true_distance() {
    // B above and beside A's corner: the SAT gap (0.1 along z) is a lower
    // bound; the true distance is to A's corner.
    let a = shape(GeomKind::Box, v(0.5, 0.5, 0.5), V::zero(), ident());
    let b = shape(GeomKind::Box, v(0.5, 0.5, 0.5), v(1.2, 1.3, 1.1), ident());
    let m = run(&a, &b, 1.0);
    assert_eq!(m.len, 1);
    let want = (0.2f64 * 0.2 + 0.3 * 0.3 + 0.1 * 0.1).sqrt();
    assert!((m.points[0].dist - want).abs() < 1e-12, "{:?} vs {want}", m.points[0]);
    assert!((m.points[0].normal - v(0.2, 0.3, 0.1) * (1.0 / want)).norm() < 1e-12);
    assert_eq!(run(&a, &b, 0.9 * want).len, 0);
}

// ----------------------------------------------------------- capsule pairs

#[test]
fn capsule_lying_on_box_face() {
    let bx = shape(GeomKind::Box, v(0.5, 0.5, 0.1), V::zero(), ident());
    let lying = rot(v(0.0, 1.0, 0.0), std::f64::consts::FRAC_PI_2);
    // Fully on the face: both ends.
    let c = shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), v(0.1, 0.1, 0.149), lying);
    let m = run(&c, &bx, 0.0);
    assert_eq!(m.len, 2, "{:?}", m.as_slice());
    let mut ends = [m.points[0].feature[0], m.points[1].feature[0]];
    ends.sort();
    assert_eq!(ends, [0, 1]);
    for p in m.as_slice() {
        assert!((p.dist + 0.001).abs() < 1e-12 && (p.normal - v(0.0, 0.0, -1.0)).norm() < 1e-12, "{p:?}");
    }
    // Overhanging the edge x = 0.5: one end and the point above the edge.
    let c = shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), v(0.45, 0.0, 0.149), lying);
    let m = run(&c, &bx, 0.0);
    assert_eq!(m.len, 2);
    let xs: Vec<f64> = m.as_slice().iter().map(|p| p.pos.x).collect();
    assert!(xs.iter().any(|x| (x - 0.25).abs() < 1e-12) && xs.iter().any(|x| (x - 0.5).abs() < 1e-12), "{xs:?}");
    // Separated by 1 mm with a 2 mm margin: 2 points with φ = +1 mm.
    let c = shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), v(0.0, 0.0, 0.151), lying);
    let m = run(&c, &bx, 0.002);
    assert_eq!(m.len, 2);
    assert!(m.as_slice().iter().all(|p| (p.dist - 0.001).abs() < 1e-12));
    assert_eq!(run(&c, &bx, 0.0005).len, 0);
    // Standing on the face: one point.
    let c = shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), v(0.0, 0.0, 0.349), ident());
    let m = run(&c, &bx, 0.0);
    assert_eq!(m.len, 1);
    assert!((m.points[0].dist + 0.001).abs() < 1e-12);
    // Across a box edge (capsule along y over the edge x = 0.5, z = 0.1).
    let c = shape(
        GeomKind::Capsule,
        v(0.05, 0.2, 0.0),
        v(0.52, 0.0, 0.12),
        rot(v(1.0, 0.0, 0.0), std::f64::consts::FRAC_PI_2),
    );
    let m = run(&c, &bx, 0.0);
    assert_eq!(m.len, 1);
    let d = (0.02f64 * 0.02 * 2.0).sqrt() - 0.05;
    assert!((m.points[0].dist - d).abs() < 1e-12);
    assert!((m.points[0].normal - v(-1.0, 0.0, -1.0).normalize()).norm() < 1e-12);
}

#[test]
fn capsule_capsule_parallel_and_crossed() {
    let along_x = rot(v(0.0, 1.0, 0.0), std::f64::consts::FRAC_PI_2);
    let a = shape(GeomKind::Capsule, v(0.05, 0.3, 0.0), V::zero(), along_x);
    // Side by side, overlapping in projection over x ∈ [−0.1, 0.3].
    let b = shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), v(0.1, 0.0, 0.099), along_x);
    let m = run(&a, &b, 0.0);
    assert_eq!(m.len, 2, "{:?}", m.as_slice());
    for p in m.as_slice() {
        assert!((p.dist + 0.001).abs() < 1e-12 && (p.normal - v(0.0, 0.0, 1.0)).norm() < 1e-12);
    }
    let mut xs: Vec<f64> = m.as_slice().iter().map(|p| p.pos.x).collect();
    xs.sort_by(f64::total_cmp);
    assert!((xs[0] + 0.1).abs() < 1e-12 && (xs[1] - 0.3).abs() < 1e-12, "{xs:?}");
    // Crossed at right angles: one point.
    let b = shape(
        GeomKind::Capsule,
        v(0.05, 0.2, 0.0),
        v(0.1, 0.0, 0.099),
        rot(v(1.0, 0.0, 0.0), std::f64::consts::FRAC_PI_2),
    );
    let m = run(&a, &b, 0.0);
    assert_eq!(m.len, 1);
    assert!((m.points[0].dist + 0.001).abs() < 1e-12);
    // End to end along the same line: one point, normal along the axis.
    let b = shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), v(0.59, 0.0, 0.0), along_x);
    let m = run(&a, &b, 0.0);
    assert_eq!(m.len, 1);
    assert!((m.points[0].dist + 0.01).abs() < 1e-12 && (m.points[0].normal - v(1.0, 0.0, 0.0)).norm() < 1e-12);
}

// --------------------------------------------------------- degenerate input

#[test]
fn degenerate_inputs_give_finite_normals() {
    let s1 = shape(GeomKind::Sphere, v(0.1, 0.0, 0.0), v(0.3, 0.2, 0.1), ident());
    // Concentric spheres.
    let mut m = Manifold::default();
    contact_sphere_sphere(&s1, &s1, 0.0, &mut m);
    assert_eq!(m.len, 1);
    assert_eq!(m.points[0].normal, v(0.0, 0.0, 1.0));
    assert!((m.points[0].dist + 0.2).abs() < TOL);
    // Sphere centre on the capsule axis.
    let cap = shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), s1.pos, rot(v(1.0, 1.0, 0.0), 0.3));
    m.clear();
    contact_sphere_capsule(&s1, &cap, 0.0, &mut m);
    assert_eq!(m.len, 1);
    assert!(m.points[0].normal.dot(cap.rot.col(2)).abs() < 1e-12);
    assert!((m.points[0].dist + 0.15).abs() < TOL);
    // Sphere centre at the box centre: least penetration through the thinnest side.
    let bx = shape(GeomKind::Box, v(0.3, 0.1, 0.2), s1.pos, rot(v(0.0, 0.0, 1.0), 0.5));
    m.clear();
    contact_sphere_box(&s1, &bx, 0.0, &mut m);
    assert_eq!(m.len, 1);
    assert!((m.points[0].dist + 0.2).abs() < TOL);
    assert!((m.points[0].normal.dot(bx.rot.col(1)).abs() - 1.0).abs() < 1e-12);
    // Crossing capsule segments that intersect: normal ⟂ both axes.
    let c2 = shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), s1.pos, rot(v(1.0, -1.0, 0.5), 1.2));
    m.clear();
    contact_capsule_capsule(&cap, &c2, 0.0, &mut m);
    assert_eq!(m.len, 1);
    let n = m.points[0].normal;
    assert!(n.dot(cap.rot.col(2)).abs() < 1e-12 && n.dot(c2.rot.col(2)).abs() < 1e-12);
    assert!((m.points[0].dist + 0.1).abs() < TOL);
    // Coincident collinear capsules.
    m.clear();
    contact_capsule_capsule(&cap, &cap, 0.0, &mut m);
    assert!(m.len >= 1 && m.as_slice().iter().all(|p| p.normal.is_finite() && (p.dist + 0.1).abs() < TOL));
    // Zero-length capsule behaves as a sphere.
    let dot = shape(GeomKind::Capsule, v(0.1, 0.0, 0.0), v(0.0, 0.0, 0.09), ident());
    m.clear();
    contact_plane_capsule(&plane(), &dot, 0.0, &mut m);
    assert_eq!(m.len, 2); // both (coincident) ends
    m.clear();
    contact_capsule_box(&dot, &bx, 1.0, &mut m);
    assert!(m.len >= 1 && m.as_slice().iter().all(|p| p.normal.is_finite()));
    // Identical boxes, and a capsule segment through the box centre.
    m.clear();
    contact_box_box(&bx, &bx, 0.0, &mut m);
    assert!(m.len >= 1 && m.as_slice().iter().all(|p| p.normal.is_finite() && (p.dist + 0.2).abs() < TOL));
    let through = shape(GeomKind::Capsule, v(0.05, 0.5, 0.0), bx.pos, bx.rot);
    m.clear();
    contact_capsule_box(&through, &bx, 0.0, &mut m);
    assert!(m.len >= 1 && m.as_slice().iter().all(|p| p.normal.is_finite()));
    // Flat boxes (zero thickness) resting on each other.
    let f1 = shape(GeomKind::Box, v(0.2, 0.2, 0.0), V::zero(), ident());
    let f2 = shape(GeomKind::Box, v(0.1, 0.1, 0.0), v(0.05, 0.0, 0.0), ident());
    m.clear();
    contact_box_box(&f1, &f2, 0.0, &mut m);
    assert!(m.as_slice().iter().all(|p| p.normal.is_finite() && p.pos.is_finite()));
}

// ------------------------------------------------------------------ margins

#[test]
fn margin_reports_near_pairs_with_positive_distance() {
    let gap = 0.004;
    let (inside, outside) = (2.0 * gap, 0.5 * gap);
    let lying = rot(v(0.0, 1.0, 0.0), std::f64::consts::FRAC_PI_2);
    let bx = shape(GeomKind::Box, v(0.2, 0.2, 0.1), V::zero(), ident());
    let sph = |z: f64| shape(GeomKind::Sphere, v(0.05, 0.0, 0.0), v(0.0, 0.0, z), ident());
    // (A, B) pairs separated by `gap` along +z.
    let pairs: Vec<(Shape<'static, f64>, Shape<'static, f64>)> = vec![
        (plane(), sph(0.05 + gap)),
        (plane(), shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), v(0.0, 0.0, 0.05 + gap), lying)),
        (plane(), shape(GeomKind::Box, v(0.1, 0.1, 0.1), v(0.0, 0.0, 0.1 + gap), ident())),
        (sph(0.0), sph(0.1 + gap)),
        (sph(0.0), shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), v(0.0, 0.0, 0.1 + gap), lying)),
        (sph(0.15 + gap), bx),
        (
            shape(GeomKind::Capsule, v(0.05, 0.2, 0.0), V::zero(), lying),
            shape(GeomKind::Capsule, v(0.05, 0.1, 0.0), v(0.0, 0.0, 0.1 + gap), lying),
        ),
        (shape(GeomKind::Capsule, v(0.05, 0.1, 0.0), v(0.0, 0.0, 0.15 + gap), lying), bx),
        (bx, shape(GeomKind::Box, v(0.1, 0.1, 0.1), v(0.05, 0.0, 0.2 + gap), rot(v(0.0, 0.0, 1.0), 0.3))),
    ];
    for (k, (a, b)) in pairs.iter().enumerate() {
        let m = run(a, b, inside);
        assert!(m.len >= 1, "pair {k}: nothing reported within the margin");
        let deepest = m.as_slice().iter().map(|p| p.dist).fold(f64::INFINITY, f64::min);
        assert!((deepest - gap).abs() < 1e-12, "pair {k}: φ {deepest} vs gap {gap}");
        let n_ab = if k == 5 || k == 7 { -1.0 } else { 1.0 }; // B below A
        assert!(m.as_slice().iter().all(|p| (p.normal.z - n_ab).abs() < 1e-12), "pair {k}: {:?}", m.as_slice());
        assert_eq!(run(a, b, outside).len, 0, "pair {k}: reported beyond the margin");
        assert_eq!(run(a, b, gap - 1e-9).len, 0, "pair {k}: φ just above the margin must not be reported");
    }
}

#[test]
fn plane_routines_use_the_plane_frame() {
    // A plane at height 1 facing −z (solid above): a sphere below it touches.
    let pl = shape(GeomKind::Plane, v(1.0, 1.0, 0.1), v(0.0, 0.0, 1.0), rot(v(1.0, 0.0, 0.0), std::f64::consts::PI));
    let s = shape(GeomKind::Sphere, v(0.1, 0.0, 0.0), v(0.5, 0.5, 0.91), ident());
    let mut m = Manifold::default();
    contact_plane_sphere(&pl, &s, 0.0, &mut m);
    assert_eq!(m.len, 1);
    assert!((m.points[0].dist + 0.01).abs() < 1e-12 && (m.points[0].normal - v(0.0, 0.0, -1.0)).norm() < 1e-12);
    assert!((m.points[0].pos - v(0.5, 0.5, 1.005)).norm() < 1e-12);
    // A box on the solid side is deep inside the half-space.
    let b = shape(GeomKind::Box, v(0.1, 0.1, 0.1), v(0.0, 0.0, 1.5), ident());
    m.clear();
    contact_plane_box(&pl, &b, 0.0, &mut m);
    assert_eq!(m.len, 4);
    assert!(m.as_slice().iter().all(|p| (p.dist + 0.6).abs() < 1e-12));
}

// ----------------------------------------------------------- collide() e2e

#[test]
fn collide_end_to_end() {
    let mut b = ModelBuilder::new("e2e");
    let mut floor = GeomSpec::new("floor", GeomKind::Plane, [2.0, 2.0, 0.1], WORLD);
    floor.material = Material { stiffness: 2e5, dissipation: 10.0, mu_static: 0.8, mu_dynamic: 0.6, soft: None };
    b.add_geom(floor);
    let cube = b.add_body(BodySpec::new("cube", WORLD, [0.0, 0.0, 0.099]));
    b.add_joint(JointSpec::new("", JointKind::Free, cube));
    let mut cg = GeomSpec::new("cube", GeomKind::Box, [0.1, 0.1, 0.1], cube);
    cg.material = Material { stiffness: 1e5, dissipation: 20.0, mu_static: 0.4, mu_dynamic: 0.3, soft: None };
    b.add_geom(cg);
    let ball = b.add_body(BodySpec::new("ball", WORLD, [0.0, 0.0, 0.248]));
    b.add_joint(JointSpec::new("", JointKind::Free, ball));
    b.add_geom(GeomSpec::new("ball", GeomKind::Sphere, [0.05, 0.0, 0.0], ball));
    let rod = b.add_body(BodySpec::new("rod", WORLD, [0.5, 0.0, 0.049]));
    b.add_joint(JointSpec::new("", JointKind::Free, rod));
    let mut rg = GeomSpec::new("rod", GeomKind::Capsule, [0.05, 0.2, 0.0], rod);
    rg.quat = [0.5f64.sqrt(), 0.0, 0.5f64.sqrt(), 0.0];
    b.add_geom(rg);
    let far = b.add_body(BodySpec::new("far", WORLD, [3.0, 3.0, 1.0]));
    b.add_joint(JointSpec::new("", JointKind::Free, far));
    b.add_geom(GeomSpec::new("far", GeomKind::Sphere, [0.05, 0.0, 0.0], far));
    let model = b.build().unwrap();
    let mut data = Data::<f64>::new(&model);
    kinematics(&model, &mut data);

    let mut contacts = Contacts::new(&model);
    collide(&model, &data, &mut contacts);
    // floor–cube: 4, ball–cube: 1 (sphere before box), floor–rod: 2.
    assert_eq!(contacts.len(), 7, "{:#?}", contacts.list);
    assert_eq!(contacts.overflow, 0);
    let (floor, cube_g, ball_g, rod_g) = (0, 1, 2, 3);
    let count = |ga: usize, gb: usize| contacts.list.iter().filter(|c| c.geom == [ga, gb]).count();
    assert_eq!((count(floor, cube_g), count(ball_g, cube_g), count(floor, rod_g)), (4, 1, 2));
    let mut m = Manifold::default();
    for c in &contacts.list {
        assert_eq!(c.body, [model.geoms[c.geom[0]].body, model.geoms[c.geom[1]].body]);
        assert_eq!(c.material, Material::combine(&model.geoms[c.geom[0]].material, &model.geoms[c.geom[1]].material));
        assert!((c.dist + 0.001).abs() < 1e-12, "{c:?}");
        // Same as the narrow phase on the pair.
        narrow_phase_pair(&model, &data, c.geom[0], c.geom[1], 0.0, &mut m);
        assert!(
            m.as_slice()
                .iter()
                .any(|p| p.pos == c.pos && p.normal == c.normal && p.dist == c.dist && p.feature == c.feature)
        );
    }
    let fc = contacts.list.iter().find(|c| c.geom == [floor, cube_g]).unwrap();
    assert!((fc.material.stiffness - 2e5 * 1e5 / 3e5).abs() < 1e-6);
    assert!((fc.material.mu_static - 2.0 * 0.8 * 0.4 / 1.2).abs() < 1e-12);
    assert!((fc.normal - v(0.0, 0.0, 1.0)).norm() < 1e-12);
    let cb = contacts.list.iter().find(|c| c.geom == [ball_g, cube_g] || c.geom == [cube_g, ball_g]).unwrap();
    assert_eq!(cb.geom, [ball_g, cube_g], "sphere comes before box");
    assert!((cb.normal - v(0.0, 0.0, -1.0)).norm() < 1e-12, "normal from the ball (A) to the cube (B)");
    assert!((cb.pos - v(0.0, 0.0, 0.1985)).norm() < 1e-12);

    // Small capacity: overflow counts what did not fit.
    let mut small = Contacts::with_capacity(&model, 3);
    collide(&model, &data, &mut small);
    assert_eq!(small.len(), 3);
    assert_eq!(small.overflow, 4);
    assert_eq!(&small.list[..], &contacts.list[..3]);
    // Reused across calls (cleared each time), f32 gives the same contacts.
    collide(&model, &data, &mut small);
    assert_eq!((small.len(), small.overflow), (3, 4));
    let mut d32 = Data::<f32>::new(&model);
    kinematics(&model, &mut d32);
    let mut c32 = Contacts::<f32>::new(&model);
    collide(&model, &d32, &mut c32);
    assert_eq!(c32.len(), 7);
    for (a, b) in c32.list.iter().zip(&contacts.list) {
        assert_eq!(a.geom, b.geom);
        assert!((a.dist as f64 - b.dist).abs() < 1e-6);
    }
}

#[test]
fn fuzz_degenerate_sizes_and_poses_stay_finite() {
    // Zero sizes, coincident centres, axis-aligned and random rotations:
    // no panic (manifold capacity is debug-asserted), no NaN, unit normals.
    let mut seed = 7u64;
    let mut rnd = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let kinds = [GeomKind::Plane, GeomKind::Sphere, GeomKind::Capsule, GeomKind::Box];
    for _ in 0..20000 {
        let pick = |rnd: &mut dyn FnMut() -> f64| {
            let kind = kinds[(rnd() * 4.0) as usize % 4];
            let mut size = v(rnd() * 0.3, rnd() * 0.3, rnd() * 0.3);
            for i in 0..3 {
                if rnd() < 0.2 {
                    size[i] = 0.0;
                }
            }
            let r = if rnd() < 0.3 { ident() } else { rot(v(rnd() - 0.5, rnd() - 0.5, rnd() - 0.5), 7.0 * rnd()) };
            let pos = if rnd() < 0.3 { V::zero() } else { v(rnd() - 0.5, rnd() - 0.5, rnd() - 0.5) * 0.5 };
            shape(kind, size, pos, r)
        };
        let mut a = pick(&mut rnd);
        let mut b = pick(&mut rnd);
        if a.kind > b.kind {
            std::mem::swap(&mut a, &mut b);
        }
        if a.kind == GeomKind::Plane && b.kind == GeomKind::Plane {
            continue;
        }
        let margin = if rnd() < 0.5 { 0.0 } else { 0.1 };
        run(&a, &b, margin);
    }
}

#[test]
fn resting_contacts_do_not_flicker_under_small_tilts() {
    // A box resting on a box and a capsule lying on a box face, with small
    // random tilts (≤ 1e-3 rad), yaws and offsets: the manifold stays a
    // face manifold (≥ 3 points for the box, 2 for the capsule) with the
    // face normal, instead of switching to single edge points.
    let mut seed = 11u64;
    let mut rnd = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let a = shape(GeomKind::Box, v(0.5, 0.4, 0.1), V::zero(), ident());
    for _ in 0..2000 {
        let tilt = rot(v(rnd() - 0.5, rnd() - 0.5, 0.0), 1e-3 * rnd());
        let r = tilt * rot(v(0.0, 0.0, 1.0), 6.3 * rnd());
        let hb = v(0.05 + 0.2 * rnd(), 0.05 + 0.2 * rnd(), 0.05 + 0.1 * rnd());
        let off = v(0.6 * (rnd() - 0.5), 0.5 * (rnd() - 0.5), 0.0);
        let pen = 1e-4 + 1e-3 * rnd();
        let b = shape(GeomKind::Box, hb, off + v(0.0, 0.0, 0.1 + hb.z - pen), r);
        let m = run(&a, &b, 0.01);
        assert!(m.len >= 3, "{} points for a resting box: {:?}", m.len, m.as_slice());
        // The normal of either box's face (or the exact edge point's), within 0.02 rad of z.
        assert!(m.as_slice().iter().all(|p| p.normal.z > 0.02f64.cos()), "{:?}", m.as_slice());
        let c = shape(
            GeomKind::Capsule,
            v(0.05, 0.15, 0.0),
            off + v(0.0, 0.0, 0.15 - pen),
            r * rot(v(0.0, 1.0, 0.0), std::f64::consts::FRAC_PI_2),
        );
        let m = run(&c, &a, 0.01);
        assert!(m.len >= 2, "capsule lying on a face: {:?}", m.as_slice());
        assert!(m.as_slice().iter().filter(|p| p.normal.z < -1.0 + 1e-12).count() >= 2, "{:?}", m.as_slice());
        assert!(m.as_slice().iter().all(|p| p.normal.z < -(0.02f64.cos())), "{:?}", m.as_slice());
    }
}
