//! Mass matrix (composite rigid body algorithm), bias forces (recursive
//! Newton–Euler with v̇ = 0), passive spring forces and energy.

use super::Data;
use crate::math::{Force, Motion, Real, Vec3, v3};
use crate::model::{JointKind, Model};

/// Joint-space mass matrix M(q) (dense, row-major, nv × nv) with joint
/// armature on the diagonal; needs [`super::kinematics`]. Writes only the
/// entries of dof pairs on one ancestor chain; every other entry is zero
/// from [`Data::new`](super::Data::new) on and stays so (zeroing all nv²
/// entries per call cost 5 % of a clutter run).
pub fn mass_matrix<T: Real>(model: &Model, data: &mut Data<T>) {
    let nv = model.nv;
    let nb = model.bodies.len();
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

/// Passive forces: joint springs −k (q − springref) for hinge and slide
/// joints, and fluid forces when the model has a medium (needs
/// [`super::velocities`] then). Joint damping, tendon springs and dampers
/// are handled implicitly by the contact solve, not here.
pub fn passive_forces<T: Real>(model: &Model, data: &mut Data<T>) {
    data.passive.iter_mut().for_each(|x| *x = T::zero());
    for j in model.joints.iter().filter(|_| model.options.flags.spring) {
        if j.stiffness != 0.0 && matches!(j.kind, JointKind::Hinge | JointKind::Slide) {
            data.passive[j.dof_adr] = -T::c(j.stiffness) * (data.q[j.qpos_adr] - T::c(j.springref));
        }
    }
    if model.options.has_fluid() {
        fluid_forces(model, data);
    }
}

/// MuJoCo's inertia-box fluid model (MuJoCo documentation, "Fluid
/// forces"; `fluidshape="none"`): each moving body is the box with its mass
/// and principal inertia, sides b = √(6(I_j + I_k − I_i)/m), moving through
/// a medium of density ρ, viscosity μ and velocity `wind`. In the body's
/// inertial frame, with v and ω its velocity relative to the medium:
/// viscous (Stokes) force −3πμ·d·v and torque −πμ·d³·ω with d the mean
/// side; quadratic drag −½ρ·b_j·b_k·|v_i|·v_i per axis and torque
/// −ρ·b_i·(b_j⁴ + b_k⁴)/64·|ω_i|·ω_i, applied at the centre of mass.
/// Explicit (evaluated at the start of the step) like MuJoCo's.
fn fluid_forces<T: Real>(model: &Model, data: &mut Data<T>) {
    let o = &model.options;
    let (rho, mu) = (T::c(o.density), T::c(o.viscosity));
    let wind = v3::<T>(o.wind);
    let pi = T::c(std::f64::consts::PI);
    for (b, body) in model.bodies.iter().enumerate().skip(1) {
        if body.mass <= 0.0 || body.last_dof.is_none() {
            continue;
        }
        let i = body.inertia;
        let side = |a: usize, b: usize, c: usize| T::c(((i[b] + i[c] - i[a]).max(1e-15) / body.mass * 6.0).sqrt());
        let bx = [side(0, 1, 2), side(1, 0, 2), side(2, 0, 1)];
        let rot = data.xquat[b] * crate::math::Quat::from_array(body.iquat.map(T::c));
        let r = data.xipos[b] - data.body_ref[b];
        let w = rot.inv_rotate(data.cvel[b].ang);
        let v = rot.inv_rotate(data.cvel[b].point_velocity(r) - wind);
        let (mut tq, mut f) = (Vec3::zero(), Vec3::zero());
        if o.viscosity > 0.0 {
            let d = (bx[0] + bx[1] + bx[2]) / T::c(3.0);
            tq = w * (-pi * d * d * d * mu);
            f = v * (-T::c(3.0) * pi * d * mu);
        }
        if o.density > 0.0 {
            let half = T::c(0.5);
            let p4 = |x: T| x * x * x * x;
            for k in 0..3 {
                let (a, c) = ((k + 1) % 3, (k + 2) % 3);
                f[k] -= half * rho * bx[a] * bx[c] * v[k].abs() * v[k];
                tq[k] -= rho * bx[k] * (p4(bx[a]) + p4(bx[c])) * w[k].abs() * w[k] / T::c(64.0);
            }
        }
        let (f, tq) = (rot.rotate(f), rot.rotate(tq));
        // Generalized force of the wrench (f at the centre of mass, torque tq).
        let mut d = body.last_dof;
        while let Some(k) = d {
            let c = data.cdof[k];
            data.passive[k] += c.point_velocity(r).dot(f) + c.ang.dot(tq);
            d = model.dofs[k].parent;
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
