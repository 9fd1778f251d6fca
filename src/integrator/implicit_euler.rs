//! Error-controlled implicit Euler on the compliant contact ODE
//! ([`super::compliant`]): the reference integrator of the TAMSI seed's
//! Sec. III–IV (Drake's implicit Euler with the transition-aware line
//! search, error-controlled or fixed) and the variable-step first-order
//! scheme of the adaptive-integration seed (Sec. III-B: error from one
//! full step against two half steps).
//!
//! One step Φ_h from (q0, v0) solves the fully implicit equations
//!
//!   q1 = q0 ⊕ h·v1,   M(q1)(v1 − v0) = h·(F(q1, v1) − k(q1, v1)),
//!
//! by Newton–Raphson on v1, re-evaluating the geometry (kinematics, M,
//! bias, collision, contact Jacobians) at every iterate — unlike TAMSI and
//! Lagged ICF, which freeze it at q0. The Newton matrix is
//! M + h(B + D) + h²K (B, K: [`super::compliant::ForceJacobians`]; D the
//! joint damping), the exact Jacobian up to the change of M, J and the
//! bias forces with q; updates are limited by TALS. Error control is step
//! doubling as in CENIC: x_full = Φ_h(x0), x_prop = Φ_{h/2}(Φ_{h/2}(x0)),
//! the error is CENIC's norm of x_prop − x_full, x_prop is propagated and
//! the next step is h·clamp(0.9·r^(−1/2), 0.1, 5).
//!
//! Departures: Drake estimates IE's error with the implicit trapezoid rule
//! by default; step doubling is the alternative it offers and the one the
//! adaptive-integration seed uses, and it makes the error estimate the
//! same as CENIC's. The Newton tolerance is κ·accuracy (κ = 10⁻³, never
//! below 10⁻¹⁰) on the scaled momentum residual, as in CENIC.

use super::compliant::{ErrorEstimate, ForceJacobians, OdeWork, element_forces, error_norm};
use super::linalg::{lu_factor, lu_solve};
use super::tamsi::tals_alpha;
use super::{Simulator, StepError, WorldStats};
use crate::dynamics;
use crate::icf::SolveError;
use crate::math::Real;
use crate::model::Model;

/// Settings of the implicit Euler baseline ([`super::Mode::ImplicitEuler`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ImplicitEulerParams {
    /// Requested accuracy of a step in CENIC's norm (m and rad).
    pub accuracy: f64,
    /// Largest step (s).
    pub max_step: f64,
    /// Smallest step (s).
    pub min_step: f64,
    /// First trial step (s); the model's `timestep` when `None`.
    pub initial_step: Option<f64>,
    /// Error weights per velocity coordinate, all 1 when empty.
    pub weights: Vec<f64>,
    /// τ_v (s) of the error norm, as in CENIC.
    pub velocity_time_scale: f64,
    /// Newton tolerance as a fraction of the accuracy (never below 1e-10).
    pub kappa: f64,
    /// Newton iteration cap per solve (a failed solve is retried at a quarter of the step).
    pub max_iterations: usize,
    /// Fixed steps of this size (s), one implicit Euler step each, without
    /// error control, when set (Newton tolerance 1e-10).
    pub fixed_step: Option<f64>,
}

impl Default for ImplicitEulerParams {
    fn default() -> Self {
        Self {
            accuracy: 1e-3,
            max_step: 0.1,
            min_step: 1e-10,
            initial_step: None,
            weights: vec![],
            velocity_time_scale: 0.01,
            kappa: 1e-3,
            max_iterations: 50,
            fixed_step: None,
        }
    }
}

impl ImplicitEulerParams {
    /// The first trial step (s).
    pub fn first_step(&self, model: &Model) -> f64 {
        match self.fixed_step {
            Some(h) => h,
            None => self.initial_step.unwrap_or(model.options.timestep).min(self.max_step),
        }
    }
}

/// Workspace of implicit Euler for one world.
#[derive(Clone, Debug)]
pub(crate) struct ImplicitEuler<T> {
    q0: Vec<T>,
    v0: Vec<T>,
    act0: Vec<T>,
    /// Start of the solve in progress.
    qs: Vec<T>,
    vs: Vec<T>,
    q_full: Vec<T>,
    v_full: Vec<T>,
    v: Vec<T>,
    res: Vec<T>,
    dv: Vec<T>,
    damping: Vec<T>,
    stiffness: Vec<T>,
    jac: Vec<T>,
    piv: Vec<usize>,
    ds: Vec<T>,
    ddv: Vec<T>,
    pub(crate) ode: OdeWork<T>,
}

impl<T: Real> ImplicitEuler<T> {
    pub(crate) fn new(nq: usize, nv: usize, na: usize) -> Self {
        let z = |n: usize| vec![T::zero(); n];
        Self {
            q0: z(nq),
            v0: z(nv),
            act0: z(na),
            qs: z(nq),
            vs: z(nv),
            q_full: z(nq),
            v_full: z(nv),
            v: z(nv),
            res: z(nv),
            dv: z(nv),
            damping: z(nv * nv),
            stiffness: z(nv * nv),
            jac: z(nv * nv),
            piv: vec![0; nv],
            ds: z(nv),
            ddv: z(nv),
            ode: OdeWork::new(nv),
        }
    }

    /// One accepted step towards an interval end `remaining` seconds away;
    /// returns (h, error ratio).
    pub(crate) fn step(
        &mut self,
        sim: &mut Simulator<T>,
        p: &ImplicitEulerParams,
        h_next: &mut f64,
        remaining: f64,
        stats: &mut WorldStats,
    ) -> Result<(f64, f64), StepError> {
        sim.check_finite()?;
        let model = sim.model.clone();
        self.q0.copy_from_slice(&sim.data.q);
        self.v0.copy_from_slice(&sim.data.v);
        self.act0.copy_from_slice(&sim.data.act);
        if let Some(hf) = p.fixed_step {
            let h = hf.min(remaining);
            self.v.copy_from_slice(&self.v0);
            self.solve(sim, &model, h, 1e-10, p.max_iterations, stats)?;
            self.finish(sim, &model, h);
            return Ok((h, 0.0));
        }
        let tol = (p.kappa * p.accuracy).max(1e-10);
        let mut h = h_next.min(p.max_step).max(p.min_step);
        loop {
            let h_try = if h >= remaining {
                remaining
            } else if 2.0 * h > remaining {
                (0.5 * remaining).max(p.min_step)
            } else {
                h
            };
            let at_min = h_try <= p.min_step * (1.0 + 1e-9);
            match self.try_doubling(sim, &model, p, h_try, tol, stats) {
                Ok(e) => {
                    let r = e.error / p.accuracy;
                    if r <= 1.0 {
                        self.finish(sim, &model, h_try);
                        let factor = if r > 0.0 { (0.9 * r.powf(-0.5)).clamp(0.1, 5.0) } else { 5.0 };
                        *h_next = if h_try < h { h.max(h_try * factor) } else { h_try * factor }
                            .clamp(p.min_step, p.max_step);
                        return Ok((h_try, r));
                    }
                    self.restore(sim);
                    if at_min {
                        return Err(StepError::AccuracyNotMet {
                            error: e.error,
                            accuracy: p.accuracy,
                            h: h_try,
                            dof: e.dof,
                            velocity: e.velocity,
                        });
                    }
                    stats.rejected += 1;
                    h = (h_try * (0.9 * r.powf(-0.5)).clamp(0.1, 1.0)).max(p.min_step);
                }
                Err(StepError::Solve(_) | StepError::NonFinite(_)) if !at_min => {
                    self.restore(sim);
                    stats.rejected += 1;
                    h = (h_try * 0.25).max(p.min_step);
                }
                Err(e) => {
                    self.restore(sim);
                    return Err(e);
                }
            }
        }
    }

    fn restore(&self, sim: &mut Simulator<T>) {
        sim.data.q.copy_from_slice(&self.q0);
        sim.data.v.copy_from_slice(&self.v0);
        sim.data.act.copy_from_slice(&self.act0);
    }

    /// x_full = Φ_h(x0), x_prop = Φ_{h/2}(Φ_{h/2}(x0)); leaves the
    /// simulator at x_prop and returns the error estimate.
    fn try_doubling(
        &mut self,
        sim: &mut Simulator<T>,
        model: &Model,
        p: &ImplicitEulerParams,
        h: f64,
        tol: f64,
        stats: &mut WorldStats,
    ) -> Result<ErrorEstimate, StepError> {
        self.v.copy_from_slice(&self.v0);
        self.solve(sim, model, h, tol, p.max_iterations, stats)?;
        self.q_full.copy_from_slice(&sim.data.q);
        self.v_full.copy_from_slice(&sim.data.v);
        self.restore(sim);
        for i in 0..self.v.len() {
            self.v[i] = T::c(0.5) * (self.v0[i] + self.v_full[i]);
        }
        self.solve(sim, model, 0.5 * h, tol, p.max_iterations, stats)?;
        self.v.copy_from_slice(&self.v_full);
        self.solve(sim, model, 0.5 * h, tol, p.max_iterations, stats)?;
        dynamics::q_difference(model, &sim.data.q, &self.q_full, &mut self.ds);
        for i in 0..self.ddv.len() {
            self.ddv[i] = sim.data.v[i] - self.v_full[i];
        }
        Ok(error_norm(model, &self.ds, &self.ddv, &p.weights, p.velocity_time_scale))
    }

    /// One implicit Euler step of `h` from the simulator's state, Newton
    /// warm-started at `self.v`; leaves the simulator at (q1, v1) with its
    /// geometry. Relative tolerance `tol` on the scaled residual.
    fn solve(
        &mut self,
        sim: &mut Simulator<T>,
        model: &Model,
        h: f64,
        tol: f64,
        max_iterations: usize,
        stats: &mut WorldStats,
    ) -> Result<(), StepError> {
        self.qs.copy_from_slice(&sim.data.q);
        self.vs.copy_from_slice(&sim.data.v);
        let nv = self.v.len();
        let ht = T::c(h);
        let mut threshold = f64::NAN;
        for iter in 0..max_iterations {
            // The iterate's configuration q0 ⊕ h·v and its geometry.
            sim.data.q.copy_from_slice(&self.qs);
            dynamics::integrate_q(model, &mut sim.data.q, &self.v, ht);
            sim.data.v.copy_from_slice(&self.v);
            if !sim.data.q.iter().all(|x| x.is_finite()) {
                return Err(StepError::Solve(SolveError::NonFinite));
            }
            stats.contact_overflow += sim.compute_geometry();
            self.ode.evaluations += 1;
            let prob = &sim.problem;
            self.damping.iter_mut().for_each(|x| *x = T::zero());
            self.stiffness.iter_mut().for_each(|x| *x = T::zero());
            self.res.iter_mut().for_each(|x| *x = T::zero());
            let jac = ForceJacobians { damping: &mut self.damping, stiffness: &mut self.stiffness };
            element_forces(prob, &self.v, T::zero(), &mut self.res, Some(jac));
            // R = M (v − v_s) − h (F − k); scale diag(M)^-½.
            let (mut norm, mut mom) = (0.0f64, 0.0f64);
            for i in 0..nv {
                let (mut mdv, mut mv) = (T::zero(), T::zero());
                for j in 0..nv {
                    mdv += prob.mass[i * nv + j] * (self.v[j] - self.vs[j]);
                    mv += prob.mass[i * nv + j] * self.vs[j];
                }
                self.res[i] = mdv - ht * (self.res[i] - prob.force[i]);
                let sc = T::one() / prob.mass[i * nv + i].max(T::min_positive_value()).sqrt();
                norm += (self.res[i] * sc).f64().powi(2);
                mom += (mv * sc).f64().powi(2);
            }
            let norm = norm.sqrt();
            if !norm.is_finite() {
                return Err(StepError::Solve(SolveError::NonFinite));
            }
            if iter == 0 {
                threshold = tol * mom.sqrt().max(1.0);
            }
            if norm <= threshold {
                stats.newton_iterations += iter as u64;
                dynamics::integrate_act(model, &mut sim.data.act, &sim.ctrl, ht);
                return Ok(());
            }
            for i in 0..nv {
                for j in 0..nv {
                    let e = i * nv + j;
                    self.jac[e] = prob.mass[e] + ht * (self.damping[e] + ht * self.stiffness[e]);
                }
                self.jac[i * nv + i] += ht * prob.damping[i];
            }
            lu_factor(&mut self.jac, nv, &mut self.piv)
                .map_err(|k| StepError::Solve(SolveError::NotPositiveDefinite(k)))?;
            stats.factorizations += 1;
            for i in 0..nv {
                self.dv[i] = -self.res[i];
            }
            lu_solve(&self.jac, nv, &self.piv, &mut self.dv);
            let alpha = tals_alpha(prob, &self.v, &self.dv, std::f64::consts::FRAC_PI_3);
            if alpha < 1.0 {
                stats.line_search_iterations += 1;
            }
            for i in 0..nv {
                self.v[i] += T::c(alpha) * self.dv[i];
            }
        }
        stats.newton_iterations += max_iterations as u64;
        sim.data.q.copy_from_slice(&self.qs);
        sim.data.v.copy_from_slice(&self.vs);
        Err(StepError::Solve(SolveError::MaxIterations(max_iterations)))
    }

    /// Accepts the state in the simulator after a step of `h`: qacc and time.
    fn finish(&mut self, sim: &mut Simulator<T>, _model: &Model, h: f64) {
        for ((a, v1), v0) in sim.qacc.iter_mut().zip(&sim.data.v).zip(&self.v0) {
            *a = (*v1 - *v0) / T::c(h);
        }
        sim.time += h;
    }
}
