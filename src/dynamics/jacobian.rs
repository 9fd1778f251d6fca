//! Jacobians of body-fixed points.

use super::Data;
use crate::math::{Real, Vec3};
use crate::model::Model;

/// Translational Jacobian of the point `p` (world, m) moving with `body`:
/// writes the 3 × nv row-major matrix `jac` so that the point's velocity is
/// `jac · v`. When `jac_rot` is given, also writes the body's rotational
/// Jacobian (angular velocity = `jac_rot · v`). Only the dofs on the path
/// from the world to `body` are non-zero; others are set to zero.
pub fn point_jacobian<T: Real>(
    model: &Model,
    data: &Data<T>,
    body: usize,
    p: Vec3<T>,
    jac: &mut [T],
    mut jac_rot: Option<&mut [T]>,
) {
    let nv = model.nv;
    jac[..3 * nv].iter_mut().for_each(|x| *x = T::zero());
    if let Some(jr) = jac_rot.as_deref_mut() {
        jr[..3 * nv].iter_mut().for_each(|x| *x = T::zero());
    }
    let r = p - data.body_ref[body];
    let mut d = model.bodies[body].last_dof;
    while let Some(k) = d {
        let c = data.cdof[k];
        let lin = c.point_velocity(r);
        for row in 0..3 {
            jac[row * nv + k] = lin[row];
        }
        if let Some(jr) = jac_rot.as_deref_mut() {
            for row in 0..3 {
                jr[row * nv + k] = c.ang[row];
            }
        }
        d = model.dofs[k].parent;
    }
}

/// Velocity of the point `p` (world, m) moving with `body` (m/s); needs
/// [`super::velocities`].
pub fn point_velocity<T: Real>(data: &Data<T>, body: usize, p: Vec3<T>) -> Vec3<T> {
    data.cvel[body].point_velocity(p - data.body_ref[body])
}
