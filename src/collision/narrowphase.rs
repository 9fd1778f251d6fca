//! Narrow phase: one `contact_<a>_<b>` routine per geom-kind pair, selected
//! by [`narrow_phase_fn`]. Analytic routines for plane, sphere, capsule and
//! box pairs live in `analytic`; pairs with a cylinder, ellipsoid or convex
//! mesh use the general convex routine in `convex` (support functions).

mod analytic;
mod convex;

pub use analytic::*;
pub use convex::*;

use super::{Manifold, Shape};
use crate::math::Real;
use crate::model::GeomKind;

/// Signature of a narrow-phase routine: shapes A and B (A's kind ≤ B's
/// kind), the pair's margin (m), and the output manifold (cleared by the caller).
pub type NarrowPhaseFn<T> = fn(&Shape<'_, T>, &Shape<'_, T>, T, &mut Manifold<T>);

/// The 18 kind pairs (ordered) served by the general convex routine: every
/// pair with a cylinder, ellipsoid or convex mesh.
pub const CONVEX_PAIRS: [(GeomKind, GeomKind); 18] = {
    use GeomKind::*;
    [
        (Plane, Cylinder),
        (Plane, Ellipsoid),
        (Plane, Mesh),
        (Sphere, Cylinder),
        (Sphere, Ellipsoid),
        (Sphere, Mesh),
        (Capsule, Cylinder),
        (Capsule, Ellipsoid),
        (Capsule, Mesh),
        (Box, Cylinder),
        (Box, Ellipsoid),
        (Box, Mesh),
        (Cylinder, Cylinder),
        (Cylinder, Ellipsoid),
        (Cylinder, Mesh),
        (Ellipsoid, Ellipsoid),
        (Ellipsoid, Mesh),
        (Mesh, Mesh),
    ]
};

/// No contact (plane–plane: planes are static).
pub fn contact_plane_plane<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {}

/// The dispatch table: the routine for kinds `a` ≤ `b`.
/// Panics if `a > b` (callers order pairs with [`super::order_pair`]).
pub fn narrow_phase_fn<T: Real>(a: GeomKind, b: GeomKind) -> NarrowPhaseFn<T> {
    use GeomKind::*;
    match (a, b) {
        (Plane, Plane) => contact_plane_plane::<T>,
        (Plane, Sphere) => contact_plane_sphere::<T>,
        (Plane, Capsule) => contact_plane_capsule::<T>,
        (Plane, Box) => contact_plane_box::<T>,
        (Plane, Cylinder) => contact_plane_cylinder::<T>,
        (Plane, Ellipsoid) => contact_plane_ellipsoid::<T>,
        (Plane, Mesh) => contact_plane_mesh::<T>,
        (Sphere, Sphere) => contact_sphere_sphere::<T>,
        (Sphere, Capsule) => contact_sphere_capsule::<T>,
        (Sphere, Box) => contact_sphere_box::<T>,
        (Sphere, Cylinder) => contact_sphere_cylinder::<T>,
        (Sphere, Ellipsoid) => contact_sphere_ellipsoid::<T>,
        (Sphere, Mesh) => contact_sphere_mesh::<T>,
        (Capsule, Capsule) => contact_capsule_capsule::<T>,
        (Capsule, Box) => contact_capsule_box::<T>,
        (Capsule, Cylinder) => contact_capsule_cylinder::<T>,
        (Capsule, Ellipsoid) => contact_capsule_ellipsoid::<T>,
        (Capsule, Mesh) => contact_capsule_mesh::<T>,
        (Box, Box) => contact_box_box::<T>,
        (Box, Cylinder) => contact_box_cylinder::<T>,
        (Box, Ellipsoid) => contact_box_ellipsoid::<T>,
        (Box, Mesh) => contact_box_mesh::<T>,
        (Cylinder, Cylinder) => contact_cylinder_cylinder::<T>,
        (Cylinder, Ellipsoid) => contact_cylinder_ellipsoid::<T>,
        (Cylinder, Mesh) => contact_cylinder_mesh::<T>,
        (Ellipsoid, Ellipsoid) => contact_ellipsoid_ellipsoid::<T>,
        (Ellipsoid, Mesh) => contact_ellipsoid_mesh::<T>,
        (Mesh, Mesh) => contact_mesh_mesh::<T>,
        _ => panic!("narrow_phase_fn: kinds must be ordered, got ({}, {})", a.name(), b.name()),
    }
}
