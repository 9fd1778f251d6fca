//! TAMSI, the Transition-Aware Modified Semi-Implicit scheme of the seed
//! `tamsi_transition_aware_implicit_integration` (Castro et al.), fixed
//! step, on the compliant contact model of [`super::compliant`].
//!
//! Follows the seed's Sec. V-C (eq. 21–23) with the line search of Sec.
//! III-A. The configuration is frozen at q0 (one geometry query per step);
//! penetrations are predicted implicitly to first order, δ ≈ δ0 − h·vn
//! (eq. 19), and the next velocity solves the residual (eq. 21)
//!
//!   r(v) = M0 (v − v0) + h·k(q0, v0) − h·Σ Jᵀ f(φ0 + h·vn, J v),
//!
//! with f the Hunt–Crossley normal force (eq. 5) and regularised friction
//! (eq. 6) in which the current normal force multiplies the friction — the
//! two-way coupling that makes the Jacobian M0 + h(Wnn + Wtt + Wtn)
//! (eq. 23) non-symmetric. Newton–Raphson with that exact Jacobian (LU),
//! each update limited by the Transition-Aware Line Search (TALS): for
//! every contact that slides (|vt| > vs), an update whose line crosses the
//! stiction disc |vt| < vs is cut at the point closest to the origin
//! (vt_{k+1}·Δvt = 0), and the slip direction may turn by at most
//! θ_max = π/3; α is the smallest cut. The position update is
//! q1 = q0 ⊕ h·v1. Fixed steps with the seed's "convergence control"
//! (Sec. III-B): a step whose Newton iteration fails is retried as two
//! half steps, recursively.
//!
//! Departures: the friction law is [`super::compliant`]'s smooth
//! regularisation μ(s)·π·vt/√(|vt|²+ε²) with ε = vs/10 instead of the
//! seed's piecewise-linear μ̃ (eq. 7, "smoother functions can be used"),
//! so that TAMSI, the ODE integrators and Lagged ICF share one contact
//! model; joint damping is implicit (M0 + hD) and joint limits, actuator
//! gains and row elements use the same first-order implicit positions as
//! the contacts (the seed's robots have none of them); the Newton
//! iteration stops on the ICF's scaled momentum residual
//! ‖diag(M)^-½ r‖ ≤ ε·max(1, ‖diag(M)^-½ p*‖), ε = 1e-8 by default,
//! rather than Drake's velocity-change test.

use super::compliant::{ForceJacobians, element_forces};
use super::linalg::{lu_factor, lu_solve};
use super::{Simulator, StepError, WorldStats};
use crate::dynamics;
use crate::icf::{IcfProblem, SolveError};
use crate::math::{Real, Vec3};

/// Settings of the TAMSI baseline ([`super::Mode::Tamsi`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TamsiParams {
    /// Time step (s).
    pub dt: f64,
    /// Relative tolerance of the Newton residual (see the module docs).
    pub tolerance: f64,
    /// Newton iteration cap per solve; a solve that reaches it is retried as two half steps.
    pub max_iterations: usize,
    /// Limit Newton updates with the transition-aware line search.
    pub tals: bool,
    /// Largest turn of a sliding contact's slip direction per update (rad).
    pub theta_max: f64,
    /// How many times a step may be halved when Newton fails (convergence control).
    pub max_halvings: usize,
}

impl Default for TamsiParams {
    fn default() -> Self {
        Self {
            dt: 1e-3,
            tolerance: 1e-8,
            max_iterations: 100,
            tals: true,
            theta_max: std::f64::consts::FRAC_PI_3,
            max_halvings: 12,
        }
    }
}

/// The TALS limit α ∈ (0, 1] for the update v → v + Δv of the problem's
/// contacts (tangential velocities with the frozen Jacobians at q0), with
/// stiction tolerance vs (m/s) and largest turn θ_max (rad).
pub fn tals_alpha<T: Real>(p: &IcfProblem<T>, v: &[T], dv: &[T], theta_max: f64) -> f64 {
    let vs = p.stiction_tolerance.f64();
    let tan_max = theta_max.tan();
    let mut alpha: f64 = 1.0;
    for c in &p.contacts {
        let n: Vec3<f64> = c.normal.cast();
        let tangential = |x: Vec3<f64>| x - n * n.dot(x);
        let x = tangential(p.contact_velocity(c, v).cast());
        let d = tangential(p.contact_velocity(c, dv).cast());
        let (xn, dd) = (x.norm(), d.norm2());
        if xn <= vs || dd == 0.0 {
            continue; // only sliding contacts are limited
        }
        // Crossing the stiction disc: stop at the closest point to the origin.
        let a_star = -x.dot(d) / dd;
        if a_star > 0.0 && a_star < 1.0 && (x + d * a_star).norm() < vs {
            alpha = alpha.min(a_star);
            continue;
        }
        // Turning the slip direction by more than θ_max: stop at θ_max.
        let end = x + d;
        if end.norm() > vs {
            let cos = x.dot(end) / (xn * end.norm());
            if cos < theta_max.cos() {
                let along = x.dot(d) / xn;
                let across = (d - x * (x.dot(d) / (xn * xn))).norm();
                let den = across - tan_max * along;
                if den > 0.0 {
                    alpha = alpha.min((tan_max * xn / den).clamp(0.0, 1.0));
                }
            }
        }
    }
    alpha
}

/// Workspace of TAMSI for one world.
#[derive(Clone, Debug)]
pub(crate) struct Tamsi<T> {
    v: Vec<T>,
    res: Vec<T>,
    dv: Vec<T>,
    damping: Vec<T>,
    stiffness: Vec<T>,
    jac: Vec<T>,
    piv: Vec<usize>,
}

impl<T: Real> Tamsi<T> {
    pub(crate) fn new(nv: usize) -> Self {
        let z = |n: usize| vec![T::zero(); n];
        Self {
            v: z(nv),
            res: z(nv),
            dv: z(nv),
            damping: z(nv * nv),
            stiffness: z(nv * nv),
            jac: z(nv * nv),
            piv: vec![0; nv],
        }
    }

    /// Advances the simulator by `h` seconds: one TAMSI step, or, when its
    /// Newton iteration fails, two half steps (recursively, at most
    /// `max_halvings` deep). Failed attempts count as rejected steps.
    pub(crate) fn step(
        &mut self,
        sim: &mut Simulator<T>,
        p: &TamsiParams,
        h: f64,
        stats: &mut WorldStats,
    ) -> Result<(), StepError> {
        self.step_depth(sim, p, h, stats, 0)
    }

    fn step_depth(
        &mut self,
        sim: &mut Simulator<T>,
        p: &TamsiParams,
        h: f64,
        stats: &mut WorldStats,
        depth: usize,
    ) -> Result<(), StepError> {
        match self.try_step(sim, p, h, stats) {
            Ok(()) => Ok(()),
            Err(StepError::Solve(_)) if depth < p.max_halvings => {
                stats.rejected += 1;
                self.step_depth(sim, p, 0.5 * h, stats, depth + 1)?;
                self.step_depth(sim, p, 0.5 * h, stats, depth + 1)
            }
            Err(e) => Err(e),
        }
    }

    /// One TAMSI step of `h` seconds; on error the state is unchanged.
    fn try_step(
        &mut self,
        sim: &mut Simulator<T>,
        p: &TamsiParams,
        h: f64,
        stats: &mut WorldStats,
    ) -> Result<(), StepError> {
        sim.check_finite()?;
        stats.contact_overflow += sim.compute_geometry();
        let ht = T::c(h);
        sim.problem.set_time_step(ht);
        let prob = &sim.problem;
        let nv = prob.nv;
        self.v.copy_from_slice(&sim.data.v);
        // Tolerance scaled like the ICF's: ε·max(1, ‖D p*‖), p* = r = A v0 − h k.
        let scaled = |x: &[T]| x.iter().zip(&prob.scale).map(|(a, s)| (*a * *s).f64().powi(2)).sum::<f64>().sqrt();
        let tol = p.tolerance.max(1e-14) * scaled(&prob.r).max(1.0);
        let mut converged = false;
        for iter in 0..p.max_iterations {
            // r(v) = A v − r − h F(v; h) and its Jacobian A + h (B + h K).
            self.damping.iter_mut().for_each(|x| *x = T::zero());
            self.stiffness.iter_mut().for_each(|x| *x = T::zero());
            self.res.iter_mut().for_each(|x| *x = T::zero());
            let jac = ForceJacobians { damping: &mut self.damping, stiffness: &mut self.stiffness };
            element_forces(prob, &self.v, ht, &mut self.res, Some(jac));
            for i in 0..nv {
                let mut av = T::zero();
                for j in 0..nv {
                    av += prob.a[i * nv + j] * self.v[j];
                }
                self.res[i] = av - prob.r[i] - ht * self.res[i];
            }
            let norm = scaled(&self.res);
            if !norm.is_finite() {
                return Err(StepError::Solve(SolveError::NonFinite));
            }
            if norm <= tol {
                stats.newton_iterations += iter as u64;
                converged = true;
                break;
            }
            for i in 0..nv * nv {
                self.jac[i] = prob.a[i] + ht * (self.damping[i] + ht * self.stiffness[i]);
            }
            lu_factor(&mut self.jac, nv, &mut self.piv)
                .map_err(|k| StepError::Solve(SolveError::NotPositiveDefinite(k)))?;
            stats.factorizations += 1;
            for i in 0..nv {
                self.dv[i] = -self.res[i];
            }
            lu_solve(&self.jac, nv, &self.piv, &mut self.dv);
            let alpha = if p.tals { tals_alpha(prob, &self.v, &self.dv, p.theta_max) } else { 1.0 };
            if alpha < 1.0 {
                stats.line_search_iterations += 1;
            }
            let a = T::c(alpha);
            for i in 0..nv {
                self.v[i] += a * self.dv[i];
            }
        }
        if !converged {
            stats.newton_iterations += p.max_iterations as u64;
            return Err(StepError::Solve(SolveError::MaxIterations(p.max_iterations)));
        }
        let model = sim.model.clone();
        dynamics::integrate_q(&model, &mut sim.data.q, &self.v, ht);
        dynamics::integrate_act(&model, &mut sim.data.act, &sim.ctrl, ht);
        sim.set_qacc(&self.v, ht);
        sim.data.v.copy_from_slice(&self.v);
        sim.time += h;
        Ok(())
    }
}
