//! Mass matrix (composite rigid body algorithm), bias forces (recursive
//! Newton–Euler with v̇ = 0), passive spring forces and energy.

use super::Data;
use crate::math::{Force, Motion, Real, Vec3, v3};
use crate::model::{JointKind, Model};

/// Joint-space mass matrix M(q) (dense, row-major, nv × nv) with joint
/// armature on the diagonal; needs [`super::kinematics`].
pub fn mass_matrix<T: Real>(model: &Model, data: &mut Data<T>) {
    let nv = model.nv;
    let nb = model.bodies.len();
    data.mass.iter_mut().for_each(|x| *x = T::zero());
    // Composite inertias: each body plus its subtree.
    data.crb[..nb].copy_from_slice(&data.cinert[..nb]);
    for bi in (1..nb).rev() {
        let p = model.bodies[bi].parent;
        if p != 0 {
            let c = data.crb[bi];
            data.crb[p] += c;
        }
    }
    for i in 0..nv {
        let dof = &model.dofs[i];
        let f: Force<T> = data.crb[dof.body] * data.cdof[i];
        // Walk the chain of ancestor dofs (including i itself).
        let mut j = Some(i);
        while let Some(jj) = j {
            let mij = data.cdof[jj].dot(f);
            data.mass[i * nv + jj] = mij;
            data.mass[jj * nv + i] = mij;
            j = model.dofs[jj].parent;
        }
        data.mass[i * nv + i] += T::c(dof.armature);
    }
}

/// Bias forces (Coriolis, centrifugal and gravity) at (q, v): the
/// generalized force that gives zero acceleration; needs
/// [`super::kinematics`] and [`super::velocities`].
pub fn bias_forces<T: Real>(model: &Model, data: &mut Data<T>) {
    let nb = model.bodies.len();
    let g = v3::<T>(model.options.gravity);
    // Gravity as an upward acceleration of the world frame.
    data.cacc[0] = Motion::new(Vec3::zero(), -g);
    for bi in 1..nb {
        let body = &model.bodies[bi];
        let mut a = data.cacc[body.parent];
        for k in body.dof_adr..body.dof_adr + body.dof_num {
            a += data.cdof_dot[k].scale(data.v[k]);
        }
        data.cacc[bi] = a;
        let iv = data.cinert[bi] * data.cvel[bi];
        data.cfrc[bi] = data.cinert[bi] * a + data.cvel[bi].cross_force(iv);
    }
    for bi in (1..nb).rev() {
        let p = model.bodies[bi].parent;
        if p != 0 {
            let f = data.cfrc[bi];
            data.cfrc[p] += f;
        }
    }
    for (i, dof) in model.dofs.iter().enumerate() {
        data.bias[i] = data.cdof[i].dot(data.cfrc[dof.body]);
    }
}

/// Passive joint spring forces −k (q − springref) for hinge and slide joints
/// (joint damping is handled implicitly by the contact solve, not here).
pub fn passive_forces<T: Real>(model: &Model, data: &mut Data<T>) {
    data.passive.iter_mut().for_each(|x| *x = T::zero());
    for j in &model.joints {
        if j.stiffness != 0.0 && matches!(j.kind, JointKind::Hinge | JointKind::Slide) {
            data.passive[j.dof_adr] = -T::c(j.stiffness) * (data.q[j.qpos_adr] - T::c(j.springref));
        }
    }
}

/// Kinetic energy ½ vᵀ M v and gravitational potential energy −Σ m g·c (J),
/// plus joint spring energy; needs [`mass_matrix`].
pub fn energy<T: Real>(model: &Model, data: &Data<T>) -> (T, T) {
    let nv = model.nv;
    let mut kin = T::zero();
    for i in 0..nv {
        for j in 0..nv {
            kin += data.v[i] * data.mass[i * nv + j] * data.v[j];
        }
    }
    kin *= T::c(0.5);
    let g = v3::<T>(model.options.gravity);
    let mut pot = T::zero();
    for (bi, b) in model.bodies.iter().enumerate().skip(1) {
        pot -= T::c(b.mass) * data.mass_scale * g.dot(data.xipos[bi]);
    }
    for j in &model.joints {
        if j.stiffness != 0.0 && matches!(j.kind, JointKind::Hinge | JointKind::Slide) {
            let d = data.q[j.qpos_adr] - T::c(j.springref);
            pot += T::c(0.5 * j.stiffness) * d * d;
        }
    }
    (kin, pot)
}
