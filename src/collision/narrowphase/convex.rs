//! General convex narrow phase (support functions) for pairs with a cylinder, ellipsoid or convex mesh.
//! TODO(session): placeholder bodies, being implemented.

use crate::collision::{Manifold, Shape};
use crate::math::Real;

/// Contact between plane (A) and cylinder (B).
pub fn contact_plane_cylinder<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_plane_cylinder")
}

/// Contact between plane (A) and ellipsoid (B).
pub fn contact_plane_ellipsoid<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_plane_ellipsoid")
}

/// Contact between plane (A) and mesh (B).
pub fn contact_plane_mesh<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_plane_mesh")
}

/// Contact between sphere (A) and cylinder (B).
pub fn contact_sphere_cylinder<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_sphere_cylinder")
}

/// Contact between sphere (A) and ellipsoid (B).
pub fn contact_sphere_ellipsoid<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_sphere_ellipsoid")
}

/// Contact between sphere (A) and mesh (B).
pub fn contact_sphere_mesh<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_sphere_mesh")
}

/// Contact between capsule (A) and cylinder (B).
pub fn contact_capsule_cylinder<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_capsule_cylinder")
}

/// Contact between capsule (A) and ellipsoid (B).
pub fn contact_capsule_ellipsoid<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_capsule_ellipsoid")
}

/// Contact between capsule (A) and mesh (B).
pub fn contact_capsule_mesh<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_capsule_mesh")
}

/// Contact between box (A) and cylinder (B).
pub fn contact_box_cylinder<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_box_cylinder")
}

/// Contact between box (A) and ellipsoid (B).
pub fn contact_box_ellipsoid<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_box_ellipsoid")
}

/// Contact between box (A) and mesh (B).
pub fn contact_box_mesh<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_box_mesh")
}

/// Contact between cylinder (A) and cylinder (B).
pub fn contact_cylinder_cylinder<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_cylinder_cylinder")
}

/// Contact between cylinder (A) and ellipsoid (B).
pub fn contact_cylinder_ellipsoid<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_cylinder_ellipsoid")
}

/// Contact between cylinder (A) and mesh (B).
pub fn contact_cylinder_mesh<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_cylinder_mesh")
}

/// Contact between ellipsoid (A) and ellipsoid (B).
pub fn contact_ellipsoid_ellipsoid<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_ellipsoid_ellipsoid")
}

/// Contact between ellipsoid (A) and mesh (B).
pub fn contact_ellipsoid_mesh<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_ellipsoid_mesh")
}

/// Contact between mesh (A) and mesh (B).
pub fn contact_mesh_mesh<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_mesh_mesh")
}
