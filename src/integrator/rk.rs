//! Adaptive explicit Runge–Kutta on the compliant contact ODE
//! ([`super::compliant`]): the Dormand–Prince 5(4) embedded pair with a PI
//! step-size controller — the "adaptive explicit" integrator the DiffMJX
//! seed (Sec. 3.2, Suppl. B.2 and Fig. S6) runs through Diffrax.
//!
//! Follows DiffMJX: a 5th-order explicit pair with an embedded 4th-order
//! error estimate, local extrapolation (the 5th-order solution is
//! propagated), and Diffrax's PID controller with P = 0.2, I = 0.4, D = 0
//! (the coefficients the seed uses): after an accepted step
//! h' = h·0.9·r⁻⁰·¹²·r_prev⁰·⁰⁴, r = err/accuracy, clipped to [0.2, 10].
//! Quaternions are integrated exactly in the sense of DiffMJX's remark
//! ("exact integration of quaternions"): by Runge–Kutta–Munthe-Kaas on the
//! tangent increment s of q = q0 ⊕ s (see [`super::compliant::tangent_rate`]),
//! so unit norm holds to rounding and the order is kept on rotations.
//!
//! Departures: Dormand–Prince instead of Tsitouras's pair (same orders and
//! stage count, first-same-as-last too; its coefficients are exact
//! rationals, checked by the order conditions in the tests); the error is
//! measured in CENIC's norm (weighted max of position and rotation-angle
//! differences and of τ_v·Δv against an absolute accuracy) rather than
//! Diffrax's RMS norm with rtol/atol, so that an accuracy means the same
//! for both integrators; a rejected step shrinks by max(0.2, 0.9·r^(−1/5))
//! (the I-controller), as the PI formula is only defined after accepted
//! steps; no conservative advancement (as in DiffMJX: error control alone
//! guards against tunnelling).

use super::compliant::{OdeWork, acceleration, error_norm, retract, tangent_rate};
use super::{Simulator, StepError, WorldStats};
use crate::dynamics;
use crate::math::Real;
use crate::model::Model;

/// Settings of the adaptive Dormand–Prince 5(4) baseline ([`super::Mode::RungeKutta`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RkParams {
    /// Requested accuracy: the largest accepted local error estimate of a
    /// step in CENIC's norm (m and rad, scaled by `weights`).
    pub accuracy: f64,
    /// Largest step (s).
    pub max_step: f64,
    /// Smallest step (s); a step that misses the accuracy at this size fails the world.
    pub min_step: f64,
    /// First trial step (s); the model's `timestep` when `None`.
    pub initial_step: Option<f64>,
    /// Error weights per velocity coordinate (1/characteristic length), all 1 when empty.
    pub weights: Vec<f64>,
    /// τ_v (s): the velocity error times τ_v enters the norm, as in CENIC.
    pub velocity_time_scale: f64,
    /// Proportional coefficient of the PI controller (Diffrax convention).
    pub pcoeff: f64,
    /// Integral coefficient of the PI controller.
    pub icoeff: f64,
    /// Fixed steps of this size (s) without error control, when set
    /// (for convergence studies); the other settings are then unused.
    pub fixed_step: Option<f64>,
}

impl Default for RkParams {
    fn default() -> Self {
        Self {
            accuracy: 1e-3,
            max_step: 0.1,
            min_step: 1e-10,
            initial_step: None,
            weights: vec![],
            velocity_time_scale: 0.01,
            pcoeff: 0.2,
            icoeff: 0.4,
            fixed_step: None,
        }
    }
}

impl RkParams {
    /// The first trial step (s).
    pub fn first_step(&self, model: &Model) -> f64 {
        match self.fixed_step {
            Some(h) => h,
            None => self.initial_step.unwrap_or(model.options.timestep).min(self.max_step),
        }
    }
}

/// Dormand–Prince 5(4) nodes c_i.
pub const DP_C: [f64; 7] = [0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0, 1.0];
/// Dormand–Prince 5(4) coupling coefficients a_ij (row i, j < i).
pub const DP_A: [[f64; 6]; 7] = [
    [0.0; 6],
    [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0, 0.0],
    [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0, 0.0],
    [19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0, 0.0, 0.0],
    [9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0, 0.0],
    [35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0],
];
/// 5th-order weights (the last row of `DP_A`, weight 0 on stage 7).
pub const DP_B: [f64; 7] = [35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0, 0.0];
/// Embedded 4th-order weights.
pub const DP_B4: [f64; 7] =
    [5179.0 / 57600.0, 0.0, 7571.0 / 16695.0, 393.0 / 640.0, -92097.0 / 339200.0, 187.0 / 2100.0, 1.0 / 40.0];

/// Workspace of the Dormand–Prince integrator of one world.
#[derive(Clone, Debug)]
pub(crate) struct DormandPrince<T> {
    /// Stage accelerations v̇_i (7 × nv).
    kv: Vec<Vec<T>>,
    /// Stage tangent rates ṡ_i (7 × nv).
    ks: Vec<Vec<T>>,
    q0: Vec<T>,
    v0: Vec<T>,
    act0: Vec<T>,
    s: Vec<T>,
    ds: Vec<T>,
    dv: Vec<T>,
    /// Whether kv[0] holds v̇ at the current state (first same as last).
    fsal: bool,
    /// Error ratio of the last accepted step (PI memory).
    r_prev: f64,
    pub(crate) ode: OdeWork<T>,
}

impl<T: Real> DormandPrince<T> {
    pub(crate) fn new(nq: usize, nv: usize, na: usize) -> Self {
        Self {
            act0: vec![T::zero(); na],
            kv: vec![vec![T::zero(); nv]; 7],
            ks: vec![vec![T::zero(); nv]; 7],
            q0: vec![T::zero(); nq],
            v0: vec![T::zero(); nv],
            s: vec![T::zero(); nv],
            ds: vec![T::zero(); nv],
            dv: vec![T::zero(); nv],
            fsal: false,
            r_prev: 1.0,
            ode: OdeWork::new(nv),
        }
    }

    /// Forgets the stored first stage (the state or the controls changed).
    pub(crate) fn invalidate(&mut self) {
        self.fsal = false;
    }

    /// One accepted step towards an interval end `remaining` seconds away.
    /// Returns (h, error ratio) of the accepted step; `h_next` is the
    /// controller's state.
    pub(crate) fn step(
        &mut self,
        sim: &mut Simulator<T>,
        p: &RkParams,
        h_next: &mut f64,
        remaining: f64,
        stats: &mut WorldStats,
    ) -> Result<(f64, f64), StepError> {
        sim.check_finite()?;
        let model = sim.model.clone();
        self.q0.copy_from_slice(&sim.data.q);
        self.v0.copy_from_slice(&sim.data.v);
        self.act0.copy_from_slice(&sim.data.act);
        if !self.fsal {
            let mut k = std::mem::take(&mut self.kv[0]);
            let r = acceleration(sim, &mut self.ode, &mut k);
            self.kv[0] = k;
            r?;
            self.fsal = true;
        }
        if let Some(hf) = p.fixed_step {
            let h = hf.min(remaining);
            self.trial(sim, &model, h)?;
            self.finish(sim, &model, h);
            return Ok((h, 0.0));
        }
        let mut h = h_next.min(p.max_step).max(p.min_step);
        loop {
            let h_try = if h >= remaining {
                remaining
            } else if 2.0 * h > remaining {
                (0.5 * remaining).max(p.min_step)
            } else {
                h
            };
            let trial = self.trial(sim, &model, h_try);
            let est = match trial {
                Ok(()) => {
                    let e = error_norm(&model, &self.ds, &self.dv, &p.weights, p.velocity_time_scale);
                    Some(e)
                }
                // A stage that left the finite range: a rejected step.
                Err(StepError::NonFinite(_)) => None,
                Err(e) => return Err(e),
            };
            let r = est.map_or(f64::INFINITY, |e| e.error / p.accuracy);
            let at_min = h_try <= p.min_step * (1.0 + 1e-9);
            if r <= 1.0 {
                self.finish(sim, &model, h_try);
                let (b1, b2) = ((p.pcoeff + p.icoeff) / 5.0, -p.pcoeff / 5.0);
                let factor = if r > 0.0 {
                    (0.9 * r.powf(-b1) * self.r_prev.max(1e-10).powf(-b2)).clamp(0.2, 10.0)
                } else {
                    10.0
                };
                self.r_prev = r;
                // A step cut to land on the interval end keeps the controller's target.
                *h_next = if h_try < h { h.max(h_try * factor) } else { h_try * factor }.clamp(p.min_step, p.max_step);
                return Ok((h_try, r));
            }
            // Rejected: back to the start (its first stage stays valid).
            sim.data.q.copy_from_slice(&self.q0);
            sim.data.v.copy_from_slice(&self.v0);
            if at_min {
                let e =
                    est.unwrap_or(super::compliant::ErrorEstimate { error: f64::INFINITY, dof: 0, velocity: false });
                return Err(StepError::AccuracyNotMet {
                    error: e.error,
                    accuracy: p.accuracy,
                    h: h_try,
                    dof: e.dof,
                    velocity: e.velocity,
                });
            }
            stats.rejected += 1;
            h = (h_try * (0.9 * r.powf(-0.2)).clamp(0.2, 1.0)).max(p.min_step);
        }
    }

    /// Stages 2–7 of a step of `h` from (q0, v0), with kv[0] at (q0, v0):
    /// leaves the 5th-order solution in the simulator (with its geometry
    /// and v̇ in kv[6]) and the embedded error in ds, dv.
    #[allow(clippy::needless_range_loop)] // tableau indices
    fn trial(&mut self, sim: &mut Simulator<T>, model: &Model, h: f64) -> Result<(), StepError> {
        let nv = self.v0.len();
        // At s = 0 the tangent rate is v itself.
        self.ks[0].copy_from_slice(&self.v0);
        for i in 1..7 {
            // s_i = h Σ a_ij ṡ_j, V_i = v0 + h Σ a_ij v̇_j.
            for d in 0..nv {
                let (mut s, mut v) = (T::zero(), T::zero());
                for j in 0..i {
                    let a = T::c(h * DP_A[i][j]);
                    s += a * self.ks[j][d];
                    v += a * self.kv[j][d];
                }
                self.s[d] = s;
                sim.data.v[d] = self.v0[d] + v;
            }
            retract(model, &self.q0, &self.s, &mut sim.data.q);
            let mut k = std::mem::take(&mut self.kv[i]);
            let r = acceleration(sim, &mut self.ode, &mut k);
            self.kv[i] = k;
            r?;
            let mut ks = std::mem::take(&mut self.ks[i]);
            tangent_rate(model, &self.s, &sim.data.v, &mut ks);
            self.ks[i] = ks;
        }
        // Stage 7 was evaluated at the 5th-order solution (DP_A[6] = DP_B).
        for d in 0..nv {
            let (mut es, mut ev) = (T::zero(), T::zero());
            for j in 0..7 {
                let e = T::c(h * (DP_B[j] - DP_B4[j]));
                es += e * self.ks[j][d];
                ev += e * self.kv[j][d];
            }
            self.ds[d] = es;
            self.dv[d] = ev;
        }
        Ok(())
    }

    /// Accepts the trial: the state is already the 5th-order solution;
    /// records v̇ for the next step (first same as last), activations,
    /// qacc and time.
    fn finish(&mut self, sim: &mut Simulator<T>, model: &Model, h: f64) {
        self.kv.swap(0, 6);
        sim.data.act.copy_from_slice(&self.act0);
        dynamics::integrate_act(model, &mut sim.data.act, &sim.ctrl, T::c(h));
        // qacc: the mean acceleration over the step.
        for ((a, v1), v0) in sim.qacc.iter_mut().zip(&sim.data.v).zip(&self.v0) {
            *a = (*v1 - *v0) / T::c(h);
        }
        sim.time += h;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Dormand–Prince tableau satisfies the order conditions up to
    /// order 5 for b and order 4 for the embedded b̂, and row sums c_i.
    #[test]
    fn tableau_satisfies_order_conditions() {
        let (a, c) = (DP_A, DP_C);
        for i in 0..7 {
            let row: f64 = a[i].iter().sum();
            assert!((row - c[i]).abs() < 1e-14, "row {i}");
        }
        let a7 = |i: usize, j: usize| if j < 6 { a[i][j] } else { 0.0 };
        let check = |b: &[f64; 7], order: usize| {
            let s = |f: &dyn Fn(usize) -> f64| (0..7).map(|i| b[i] * f(i)).sum::<f64>();
            let ac = |i: usize| (0..7).map(|j| a7(i, j) * c[j]).sum::<f64>();
            let ac2 = |i: usize| (0..7).map(|j| a7(i, j) * c[j] * c[j]).sum::<f64>();
            let aac = |i: usize| (0..7).map(|j| a7(i, j) * ac(j)).sum::<f64>();
            let mut conds: Vec<(f64, f64)> = vec![(s(&|_| 1.0), 1.0), (s(&|i| c[i]), 0.5)];
            if order >= 3 {
                conds.push((s(&|i| c[i] * c[i]), 1.0 / 3.0));
                conds.push((s(&ac), 1.0 / 6.0));
            }
            if order >= 4 {
                conds.push((s(&|i| c[i].powi(3)), 0.25));
                conds.push((s(&|i| c[i] * ac(i)), 1.0 / 8.0));
                conds.push((s(&ac2), 1.0 / 12.0));
                conds.push((s(&aac), 1.0 / 24.0));
            }
            if order >= 5 {
                conds.push((s(&|i| c[i].powi(4)), 0.2));
                conds.push((s(&|i| c[i] * c[i] * ac(i)), 1.0 / 10.0));
                conds.push((s(&|i| ac(i) * ac(i)), 1.0 / 20.0));
                conds.push((s(&|i| c[i] * ac2(i)), 1.0 / 15.0));
                conds.push((s(&|i| c[i] * aac(i)), 1.0 / 30.0));
                let ac3 = |i: usize| (0..7).map(|j| a7(i, j) * c[j].powi(3)).sum::<f64>();
                conds.push((s(&ac3), 1.0 / 20.0));
                let acac = |i: usize| (0..7).map(|j| a7(i, j) * c[j] * ac(j)).sum::<f64>();
                conds.push((s(&acac), 1.0 / 40.0));
                let aac2 = |i: usize| (0..7).map(|j| a7(i, j) * ac2(j)).sum::<f64>();
                conds.push((s(&aac2), 1.0 / 60.0));
                let aaac = |i: usize| (0..7).map(|j| a7(i, j) * aac(j)).sum::<f64>();
                conds.push((s(&aaac), 1.0 / 120.0));
            }
            for (k, (got, want)) in conds.iter().enumerate() {
                assert!((got - want).abs() < 1e-13, "order {order}, condition {k}: {got} vs {want}");
            }
        };
        check(&DP_B, 5);
        check(&DP_B4, 4);
    }
}
