//! MuJoCo's own fixed-step integrators ([`Mode::MuJoCo`](super::Mode)) on
//! models with MuJoCo's semantics: the step of `mj_Euler` (semi-implicit,
//! with joint damping integrated implicitly after the constraint solve:
//! MuJoCo's `eulerdamp`) and of `mj_RungeKutta` (the classic RK4, every
//! stage a full forward dynamics with collision and constraint solve), so
//! that a model steps as it does in MuJoCo, not only in continuous time.
//! For sim-to-sim comparisons and for training policies meant for MuJoCo.
//!
//! MuJoCo's forward dynamics at (q, v) is the minimiser of the Gauss cost
//! ½(a − a₀)ᵀM(a − a₀) plus the soft constraints' costs, with every force
//! other than the constraints explicit. The convex step solves exactly that
//! problem when joint damping and actuation are made explicit (A = M) and
//! its solution is read as a = (v₁ − v)/h: the soft rows' costs are h²
//! times MuJoCo's for any h ([`crate::icf::SoftRow`]), so a does not
//! depend on h.
//!
//! Departures: activations (`na`) advance with cenic's exact integration of
//! their dynamics over the step, not with MuJoCo's stages; MuJoCo's implicit
//! integrators (`implicit`, `implicitfast`) are stepped as Euler (joint and
//! position-actuator damping implicit, other velocity derivatives of the
//! actuators explicit).

use super::{Simulator, StepError, WorldStats};
use crate::dynamics;
use crate::icf::{IcfProblem, SolverParams};
use crate::math::{Real, cholesky_factor, cholesky_solve_in_place};
use crate::model::{Integrator, Semantics};

/// MuJoCo's step of a given integrator and size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MuJoCoStep {
    /// Step (s).
    pub dt: f64,
    /// MuJoCo's integrator (the model's `<option integrator>` by default).
    pub integrator: Integrator,
}

/// Scratch of [`MuJoCoStep`] for one world (allocated once).
#[derive(Clone, Debug)]
pub(crate) struct MuJoCoIntegrator<T> {
    q0: Vec<T>,
    v0: Vec<T>,
    act0: Vec<T>,
    /// Stage velocities and accelerations (RK4: 4 × nv each).
    vel: Vec<T>,
    acc: Vec<T>,
    /// Velocity and acceleration combinations.
    dv: Vec<T>,
    da: Vec<T>,
    vc: Vec<T>,
    /// (M + h·D') and its factor, M·(v_c − v0) (Euler's implicit damping).
    mat: Vec<T>,
    rhs: Vec<T>,
}

impl<T: Real> MuJoCoIntegrator<T> {
    pub(crate) fn new(nq: usize, nv: usize, na: usize) -> Self {
        Self {
            q0: vec![T::zero(); nq],
            v0: vec![T::zero(); nv],
            act0: vec![T::zero(); na],
            vel: vec![T::zero(); 4 * nv],
            acc: vec![T::zero(); 4 * nv],
            dv: vec![T::zero(); nv],
            da: vec![T::zero(); nv],
            vc: vec![T::zero(); nv],
            mat: vec![T::zero(); nv * nv],
            rhs: vec![T::zero(); nv],
        }
    }

    /// One step of `p` (the last one shortened to `remaining`, s).
    pub(crate) fn step(
        &mut self,
        sim: &mut Simulator<T>,
        p: &MuJoCoStep,
        remaining: f64,
        stats: &mut WorldStats,
    ) -> Result<f64, StepError> {
        if sim.model.options.semantics != Semantics::MuJoCo {
            return Err(StepError::PhysicalSemantics);
        }
        sim.check_finite()?;
        let params = sim.solver_params.for_fixed_step(p.dt);
        let h = p.dt.min(remaining);
        let ht = T::c(h);
        let nv = sim.model.nv;
        self.q0.copy_from_slice(&sim.data.q);
        self.v0.copy_from_slice(&sim.data.v);
        self.act0.copy_from_slice(&sim.data.act);
        match p.integrator {
            Integrator::Rk4 => {
                // mj_RungeKutta with RK4's tableau: stage i at X0 '+' h·Σ_j A_ij F_j.
                const A: [[f64; 3]; 3] = [[0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 1.0]];
                const B: [f64; 4] = [1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0];
                for i in 0..4 {
                    if i > 0 {
                        self.dv.fill(T::zero());
                        self.da.fill(T::zero());
                        for j in 0..i {
                            let a = T::c(A[i - 1][j]);
                            for k in 0..nv {
                                self.dv[k] += a * self.vel[j * nv + k];
                                self.da[k] += a * self.acc[j * nv + k];
                            }
                        }
                        sim.data.q.copy_from_slice(&self.q0);
                        dynamics::integrate_q(&sim.model, &mut sim.data.q, &self.dv, ht);
                        for k in 0..nv {
                            sim.data.v[k] = self.v0[k] + ht * self.da[k];
                        }
                    }
                    self.vel[i * nv..(i + 1) * nv].copy_from_slice(&sim.data.v);
                    let (acc, vc) = (&mut self.acc[i * nv..(i + 1) * nv], &mut self.vc);
                    acceleration(sim, ht, &params, vc, acc, stats)?;
                }
                self.dv.fill(T::zero());
                self.da.fill(T::zero());
                for (j, b) in B.iter().enumerate() {
                    for k in 0..nv {
                        self.dv[k] += T::c(*b) * self.vel[j * nv + k];
                        self.da[k] += T::c(*b) * self.acc[j * nv + k];
                    }
                }
                sim.data.q.copy_from_slice(&self.q0);
                dynamics::integrate_q(&sim.model, &mut sim.data.q, &self.dv, ht);
                for k in 0..nv {
                    sim.data.v[k] = self.v0[k] + ht * self.da[k];
                }
                for k in 0..nv {
                    sim.qacc[k] = self.da[k];
                }
            }
            Integrator::Euler | Integrator::Implicit | Integrator::ImplicitFast => {
                let acc = &mut self.acc[..nv];
                acceleration(sim, ht, &params, &mut self.vc, acc, stats)?;
                // MuJoCo's eulerdamp: qacc = (M + h·D')⁻¹·M·a, D' the dofs'
                // damping and their position actuators' velocity gains.
                let p_ = &sim.problem;
                let flags = sim.model.options.flags;
                let damped = flags.damper && flags.eulerdamp && implicit_damping(&sim.model, &mut self.rhs);
                if damped {
                    for i in 0..nv {
                        let mut s = T::zero();
                        for j in 0..nv {
                            let m = p_.mass[i * nv + j];
                            self.mat[i * nv + j] = m;
                            s += m * acc[j];
                        }
                        self.mat[i * nv + i] += ht * self.rhs[i];
                        self.da[i] = s;
                    }
                    cholesky_factor(&mut self.mat, nv).map_err(|_| StepError::NonFinite("M + hD"))?;
                    cholesky_solve_in_place(&self.mat, nv, &mut self.da);
                    acc.copy_from_slice(&self.da);
                }
                for k in 0..nv {
                    sim.data.v[k] = self.v0[k] + ht * acc[k];
                    sim.qacc[k] = acc[k];
                }
                sim.data.q.copy_from_slice(&self.q0);
                let d = &mut sim.data;
                dynamics::integrate_q(&sim.model, &mut d.q, &d.v, ht);
            }
        }
        sim.data.act.copy_from_slice(&self.act0);
        dynamics::integrate_act(&sim.model, &mut sim.data.act, &sim.ctrl, ht);
        sim.time += h;
        Ok(h)
    }
}

/// MuJoCo's forward dynamics at the simulator's (q, v) into `acc` (nv):
/// the convex problem with explicit damping and actuation, solved for step
/// `h` from the warm start v (`vc`: scratch), read as (v₁ − v)/h.
fn acceleration<T: Real>(
    sim: &mut Simulator<T>,
    h: T,
    params: &SolverParams,
    vc: &mut [T],
    acc: &mut [T],
    stats: &mut WorldStats,
) -> Result<(), StepError> {
    stats.contact_overflow += sim.compute_geometry();
    stats.geometry_passes += 1;
    make_explicit(&mut sim.problem);
    vc.copy_from_slice(&sim.data.v);
    let s = sim.solve_velocity(h, vc, params)?;
    stats.add_solve(&s);
    for ((a, x1), x0) in acc.iter_mut().zip(vc.iter()).zip(&sim.data.v) {
        *a = (*x1 - *x0) / h;
    }
    Ok(())
}

/// Makes everything but the constraints explicit at v0, as MuJoCo's forward
/// dynamics treats it: joint damping (its force at v0 is already in
/// `force`; A becomes M), servo gain laws (kp·(q_ref − q0) + kd·(v_ref −
/// v0), clamped) and the non-constraint rows (general actuators, tendon
/// springs and dampers: their force at v0, clamped).
fn make_explicit<T: Real>(p: &mut IcfProblem<T>) {
    p.damping.iter_mut().for_each(|d| *d = T::zero());
    for g in p.gains.drain(..) {
        let v = p.v0[g.dof];
        let tau = (g.kp * g.q_err + g.kd * (g.v_ref - v)).max(-g.effort).min(g.effort);
        p.force[g.dof] -= tau;
    }
    let mut k = 0;
    while k < p.rows.len() {
        let r = p.rows[k];
        if r.soft.is_some() {
            k += 1;
            continue;
        }
        let s = p.row_velocity(&r, &p.v0);
        let f = (r.force - r.damping * s).max(r.lo).min(r.hi);
        for e in r.jac_start..r.jac_start + r.jac_len {
            p.force[p.row_dof[e]] -= p.row_coef[e] * f;
        }
        p.rows.remove(k);
    }
}

/// D' of MuJoCo's eulerdamp into `d` (nv): the dofs' damping plus the
/// velocity gains of position servos on them. Whether any is positive.
fn implicit_damping<T: Real>(model: &crate::model::Model, d: &mut [T]) -> bool {
    for (i, dof) in model.dofs.iter().enumerate() {
        d[i] = T::c(dof.damping);
    }
    for a in &model.actuators {
        if let crate::model::ActuatorKind::Position { kd, .. } = a.kind {
            d[model.joints[a.joint].dof_adr] += T::c(kd);
        }
    }
    d.iter().any(|x| *x > T::zero())
}
