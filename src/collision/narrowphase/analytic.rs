//! Analytic narrow-phase routines for plane, sphere, capsule and box pairs.
//! TODO(session): placeholder bodies, being implemented.

use crate::collision::{Manifold, Shape};
use crate::math::Real;

/// Contact between plane (A) and sphere (B).
pub fn contact_plane_sphere<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_plane_sphere")
}

/// Contact between plane (A) and capsule (B).
pub fn contact_plane_capsule<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_plane_capsule")
}

/// Contact between plane (A) and box (B).
pub fn contact_plane_box<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_plane_box")
}

/// Contact between sphere (A) and sphere (B).
pub fn contact_sphere_sphere<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_sphere_sphere")
}

/// Contact between sphere (A) and capsule (B).
pub fn contact_sphere_capsule<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_sphere_capsule")
}

/// Contact between sphere (A) and box (B).
pub fn contact_sphere_box<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_sphere_box")
}

/// Contact between capsule (A) and capsule (B).
pub fn contact_capsule_capsule<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_capsule_capsule")
}

/// Contact between capsule (A) and box (B).
pub fn contact_capsule_box<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_capsule_box")
}

/// Contact between box (A) and box (B).
pub fn contact_box_box<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {
    todo!("contact_box_box")
}
