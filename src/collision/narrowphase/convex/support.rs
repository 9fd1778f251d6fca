//! Support functions of the convex geom kinds, the input of GJK and EPA.
//!
//! A shape is seen as a *core* inflated by a radius: a sphere is its centre
//! point inflated by its radius, a capsule its segment inflated by its radius;
//! boxes, cylinders, ellipsoids and meshes are their own core (radius 0).
//! GJK/EPA run on the cores and the radii are subtracted afterwards, which is
//! exact (the signed distance of a set inflated by a ball of radius r is the
//! set's signed distance minus r) and makes sphere/capsule pairs with
//! polytopes exact instead of limited by EPA's convergence on a curved
//! surface.
//!
//! Feature ids of support points: mesh vertex index; box corner
//! `(x > 0) | (y > 0) << 1 | (z > 0) << 2`; capsule segment end (0: −z,
//! 1: +z); height-field prism vertex (0–2 bottom, 3–5 top); 0 for sphere,
//! cylinder and ellipsoid (smooth or rim points).

use crate::collision::Shape;
use crate::math::{Real, Vec3, v3};
use crate::model::GeomKind;

/// Radius (m) by which the core of `s` is inflated: the radius of a sphere
/// or capsule, 0 for the other kinds.
#[inline]
pub fn core_radius<T: Real>(s: &Shape<'_, T>) -> T {
    match s.kind {
        GeomKind::Sphere | GeomKind::Capsule => s.size.x,
        _ => T::zero(),
    }
}

/// Support point (m, geom frame) of the core of `s` in the geom-frame
/// direction `d` (any length; a zero direction gives some point of the core),
/// with its feature id (see the module docs). Planes have no support point
/// (they are handled analytically); the geom origin is returned.
#[inline]
pub fn support_core_local<T: Real>(s: &Shape<'_, T>, d: Vec3<T>) -> (Vec3<T>, u32) {
    let zero = T::zero();
    match s.kind {
        GeomKind::Plane | GeomKind::Sphere => (Vec3::zero(), 0),
        GeomKind::Capsule => {
            let top = d.z >= zero;
            (Vec3::new(zero, zero, if top { s.size.y } else { -s.size.y }), top as u32)
        }
        GeomKind::Box => {
            let (px, py, pz) = (d.x >= zero, d.y >= zero, d.z >= zero);
            let p = Vec3::new(
                if px { s.size.x } else { -s.size.x },
                if py { s.size.y } else { -s.size.y },
                if pz { s.size.z } else { -s.size.z },
            );
            (p, px as u32 | (py as u32) << 1 | (pz as u32) << 2)
        }
        GeomKind::Cylinder => {
            let rho2 = d.x * d.x + d.y * d.y;
            let z = if d.z >= zero { s.size.y } else { -s.size.y };
            // A direction along the axis: any cap point is a support point; take the centre.
            if rho2 > T::min_positive_value() {
                let k = s.size.x / rho2.sqrt();
                (Vec3::new(d.x * k, d.y * k, z), 0)
            } else {
                (Vec3::new(zero, zero, z), 0)
            }
        }
        GeomKind::Ellipsoid => {
            // Maximiser of d·x on x = A u, |u| = 1 (A = diag(a)): x = A² d / |A d|.
            let ad = s.size.cmul(d);
            let n = ad.norm();
            if n > T::min_positive_value() { (s.size.cmul(ad) * (T::one() / n), 0) } else { (Vec3::zero(), 0) }
        }
        GeomKind::Mesh => {
            let Some(m) = s.mesh else { return (Vec3::zero(), 0) };
            // Plain scan: branch-light and GPU friendly; hulls are small.
            let mut best = T::neg_infinity();
            let mut idx = 0usize;
            for (i, p) in m.vertices.iter().enumerate() {
                let v = d.x * T::c(p[0]) + d.y * T::c(p[1]) + d.z * T::c(p[2]);
                if v > best {
                    best = v;
                    idx = i;
                }
            }
            if m.vertices.is_empty() { (Vec3::zero(), 0) } else { (v3(m.vertices[idx]), idx as u32) }
        }
        GeomKind::Hfield => {
            // A prism (MuJoCo's mjc_prism_support): the best of the bottom
            // triangle when d points down, else of the top one.
            let Some(p) = s.prism else { return (Vec3::zero(), 0) };
            let start = if d.z < zero { 0 } else { 3 };
            let mut best = start;
            let mut best_v = p[start].dot(d);
            for i in start + 1..start + 3 {
                let v = p[i].dot(d);
                if v > best_v {
                    best_v = v;
                    best = i;
                }
            }
            (p[best], best as u32)
        }
    }
}

/// Support point (m, world) of the core of `s` in the world direction `d`, with its feature id.
#[inline]
pub fn support_core<T: Real>(s: &Shape<'_, T>, d: Vec3<T>) -> (Vec3<T>, u32) {
    let (p, f) = support_core_local(s, s.rot.tmul(d));
    (s.pos + s.rot * p, f)
}

/// Support point (m, world) of the whole shape `s` (core inflated by
/// [`core_radius`]) in the world direction `d`, with its feature id.
#[inline]
pub fn support<T: Real>(s: &Shape<'_, T>, d: Vec3<T>) -> (Vec3<T>, u32) {
    let (p, f) = support_core(s, d);
    let r = core_radius(s);
    if r > T::zero() { (p + d.normalize() * r, f) } else { (p, f) }
}

/// A rough size of `s` (m): the radius of a ball about the geom origin that
/// contains the shape. Sets the scale of the GJK/EPA tolerances.
#[inline]
pub fn bounding_radius<T: Real>(s: &Shape<'_, T>) -> T {
    let z = s.size;
    match s.kind {
        GeomKind::Plane => T::zero(),
        GeomKind::Sphere => z.x,
        GeomKind::Capsule => z.x + z.y,
        GeomKind::Box => z.norm(),
        GeomKind::Cylinder => (z.x * z.x + z.y * z.y).sqrt(),
        GeomKind::Ellipsoid => z.max_elem(),
        GeomKind::Mesh => s.mesh.map_or(T::zero(), |m| T::c(m.radius())),
        GeomKind::Hfield => match (s.prism, s.hfield) {
            (Some(p), _) => p.iter().fold(T::zero(), |r, v| r.max(v.norm())),
            (None, Some(f)) => T::c(f.radius()),
            (None, None) => T::zero(),
        },
    }
}
