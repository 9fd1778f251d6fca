//! Model-predictive control: a receding-horizon controller that plans on
//! the differentiable simulator's interval Jacobians (iLQR / Gauss–Newton
//! with contacts from distance), against MuJoCo MPC's predictive sampling.
//!
//! # Design
//!
//! **Problem** ([`Problem`]). A plan is H control intervals of `dt`
//! seconds, controls held over each interval and kept inside their bounds
//! (the actuators' `ctrlrange` by default), simulated by the planner's own
//! model and integration mode (e.g. one fixed step per interval: the
//! planner's model may be coarser than the plant). The objective is
//! J = Σ dt·l(x_k, u_k) + l_T(x_H) with a [`Cost`] (running rate and
//! terminal terms with gradients and Gauss–Newton Hessians: [`QuadraticTracking`],
//! [`TargetDistance`], [`OrientationError`], [`ControlEffort`], sums of them, and [`BurnCost`] for
//! residuals written in burn tensor ops).
//!
//! **Gradient planner** ([`Ilqr`]). Each iteration linearises the plan
//! with [`crate::diff::DiffRollout::linearize`] (exact Jacobians of the
//! discrete map, D_x and D_u per interval; with [`Cfd`] on they carry the
//! phantom impulses of near misses), runs the Riccati backward pass on the
//! Gauss–Newton cost model with Levenberg–Marquardt damping μI on Q_uu, and
//! solves a small box-constrained QP per interval for the feedforward step
//! (projected Newton, [`box_qp`]), so that bounds are met exactly and the
//! feedback gains act only on the free controls (Tassa, Mansard & Todorov,
//! "Control-limited differential dynamic programming", ICRA 2014). The
//! forward pass applies u = clamp(ū + α k + K (x − x̄)) on the planner's
//! nonlinear model for every α of a short list (a rollout is 25–80×
//! cheaper than a linearisation, so all of them are tried) and keeps the
//! best; a step that does not lower J is rejected and μ grows. Exception:
//! with contacts from distance, a full step whose J rises by at most a
//! fraction ([`IlqrOptions::cfd_slack`]) of the model's predicted decrease
//! is accepted, and μ grows as after a rejection: the phantom impulses
//! predict progress that only materialises once contact is made, so
//! before the first touch a step toward contact leaves the task cost
//! unchanged and adds a little control effort, and a strict decrease test
//! would stall there. Such a step may also raise J once contact is made,
//! so the planning step hands the controller the best plan it has seen
//! (of equal costs the latest, costs that differ only by the controls'
//! own cost counting as equal: [`IlqrOptions::keep_best`]), not its last
//! iterate. The phantom gradient's size depends on how the touched body
//! responds in the linearization (a box held by static friction absorbs
//! nearly all of it, `BENCHMARKS.md`, "Push"), so its strength may be
//! continued: it grows tenfold after a fresh linearization whose step does
//! not lower J and falls back after one whose full step does
//! ([`IlqrOptions::cfd_boost`], off by default, on for the push task). Jacobian reuse ([`IlqrOptions::reuse`]): a
//! linearisation may serve further iterations on the plan's new rollout
//! (cost derivatives recomputed, interval Jacobians kept and shifted with
//! the plan between intervals), since the Jacobian pass dominates the cost
//! of an iteration; when a fresh linearization would overrun a time
//! budget, iterations on the last one continue while they lower the cost
//! (a reuse iteration is a backward pass and a few rollouts). Warm start: the previous plan shifted by one interval
//! (last control repeated).
//!
//! **Sampling planner** ([`PredictiveSampling`]): MuJoCo MPC's predictive
//! sampling (Howell et al., 2022): the plan is a spline of a few knots;
//! each iteration rolls out the nominal and Gaussian perturbations of its
//! knots (σ times each control's half range, clamped to the bounds) in a
//! [`crate::batch::CpuBatch`] and keeps the best. Warm start: the spline
//! re-sampled one interval later. [`PredictiveSampling::on_gpu`] rolls
//! the candidates out on the GPU batch instead (f32; objectives on the
//! host), any [`crate::batch::Batch`] with one world per sample serves
//! ([`PredictiveSampling::with_batch`]). A round costs the GPU's latency
//! per step, whatever the sample count up to a few thousand
//! (`BENCHMARKS.md`, "Pusher on the GPU: predictive sampling on an H200").
//!
//! **Hybrid planner** ([`Hybrid`]): the two in series within one budget
//! per interval: a share of it for rounds of sampling around the current
//! plan (the nominal is a full-rate control sequence, the perturbations a
//! spline of Gaussian knots, as above), the rest for iLQR on the best
//! candidate. Warm start: the refined plan shifted by one interval.
//!
//! **Closed loop** ([`closed_loop`]): plan from the plant's state within a
//! [`Budget`] (iterations, wall time or the process's CPU time, the last
//! being the compute a planner may spend on one core whatever else the
//! machine runs), apply the first control for one
//! interval on the plant (a separate world, possibly at a finer accuracy
//! or with perturbed parameters, [`Plant`]), shift, repeat.
//!
//! **Tasks** ([`tasks`]): reacher, pusher, a billiards-like push, the
//! half cheetah and a finger pushing a box (`push`), with seeded goals
//! and success tests, shared by the examples (`examples/mpc.rs`), the
//! evaluation (`BENCHMARKS.md`) and the tests.
//!
//! Units: states and controls as in [`crate::integrator::Simulator`];
//! times in s; costs as the terms define them.

mod boxqp;
mod closed_loop;
pub mod cost;
mod hybrid;
mod ilqr;
mod sampling;
pub mod tasks;

pub use boxqp::{BoxQp, box_qp};
pub use closed_loop::{Episode, Plant, closed_loop};
pub use cost::{
    BurnCost, ControlEffort, Cost, CostDerivatives, CostSum, JointLimitMargin, OrientationError, Penalty,
    QuadraticTracking, Target, TargetDistance, Workspace,
};
pub use hybrid::{Hybrid, HybridOptions};
pub use ilqr::{Ilqr, IlqrOptions};
pub use sampling::{Interpolation, PredictiveSampling, SamplingOptions};

use crate::diff::{Cfd, ControlKind, DiffError, DiffRollout};
use crate::integrator::{Mode, StepError, World};
use crate::model::Model;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Errors of planning and closed-loop control.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MpcError {
    /// Bad problem or planner settings.
    #[error("{0}")]
    Input(String),
    /// The differentiable rollout failed.
    #[error("rollout: {0}")]
    Diff(#[from] DiffError),
    /// A sampling planner's rollout batch refused a call (on the GPU: the
    /// device failed).
    #[error("rollout batch: {0}")]
    Batch(#[from] crate::batch::BatchError),
    /// A simulation step failed.
    #[error("simulation failed in interval {interval}: {message}")]
    Step {
        /// Control interval.
        interval: usize,
        /// What went wrong.
        message: String,
    },
}

/// The planning budget per control interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    /// A fixed number of planner iterations.
    Iterations(usize),
    /// Wall time: iterations continue while the next one (expected to
    /// last as long as the longest recent one of its kind) still ends
    /// within it; at least one always runs.
    WallTime(Duration),
    /// CPU time of the process (all its threads, see [`cpu_seconds`]),
    /// counted like [`Budget::WallTime`]: the compute a planner may spend
    /// whatever else the machine runs (on one core and an idle machine it
    /// equals wall time).
    CpuTime(Duration),
}

impl Budget {
    /// Whether another iteration fits after `done` iterations, `elapsed`
    /// time so far and `next` the expected duration of the next iteration
    /// (wall or CPU time, as the budget counts).
    pub fn allows(&self, done: usize, elapsed: Duration, next: Duration) -> bool {
        match *self {
            Budget::Iterations(n) => done < n,
            Budget::WallTime(t) | Budget::CpuTime(t) => done == 0 || elapsed + next <= t,
        }
    }
}

/// CPU time consumed by this process so far (s), all threads together
/// (`CLOCK_PROCESS_CPUTIME_ID`); wall time since the first call on
/// platforms without that clock.
pub fn cpu_seconds() -> f64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
        if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } == 0 {
            return ts.tv_sec as f64 + 1e-9 * ts.tv_nsec as f64;
        }
    }
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// What one call of [`Planner::plan`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlanStats {
    /// Iterations run.
    pub iterations: usize,
    /// Iterations whose step was accepted (the plan changed).
    pub accepted: usize,
    /// Horizon rollouts simulated (forward passes, samples).
    pub rollouts: usize,
    /// Linearisations (Jacobian passes).
    pub linearizations: usize,
    /// Objective of the warm start at the current state.
    pub initial_cost: f64,
    /// Objective of the plan returned.
    pub cost: f64,
    /// Wall time (s).
    pub seconds: f64,
    /// CPU time of the process over the planning (s, see [`cpu_seconds`]).
    pub cpu_seconds: f64,
}

/// A receding-horizon planner.
pub trait Planner {
    /// A short name for tables and plots.
    fn name(&self) -> String;
    /// The problem it solves.
    fn problem(&self) -> &Problem;
    /// Improves the plan from state `x0` (nx) within `budget`.
    fn plan(&mut self, x0: &[f64], budget: Budget) -> Result<PlanStats, MpcError>;
    /// The plan's controls (H × nc, within the bounds).
    fn controls(&self) -> &[f64];
    /// Warm start for the next interval: the plan moved one interval ahead.
    fn shift(&mut self);
    /// Back to the initial guess (controls at the middle of their bounds,
    /// zero where unbounded).
    fn reset(&mut self);
}

/// A finite-horizon optimal control problem (see the [module docs](self)).
#[derive(Clone)]
pub struct Problem {
    /// The planner's model.
    pub model: Arc<Model>,
    /// The planner's integration inside each interval.
    pub mode: Mode,
    /// Control interval (s).
    pub dt: f64,
    /// Intervals in the horizon (H).
    pub horizon: usize,
    /// What the controls drive.
    pub control: ControlKind,
    /// Lower control bounds (nc; −∞ allowed).
    pub lower: Vec<f64>,
    /// Upper control bounds (nc; +∞ allowed).
    pub upper: Vec<f64>,
    /// The cost.
    pub cost: Arc<dyn Cost>,
}

impl Problem {
    /// A problem on the actuators of `model`, bounded by their `ctrlrange`
    /// (unbounded where an actuator has none).
    pub fn new(model: Arc<Model>, mode: Mode, dt: f64, horizon: usize, cost: Arc<dyn Cost>) -> Result<Self, MpcError> {
        if !(dt > 0.0 && dt.is_finite()) {
            return Err(MpcError::Input(format!("control interval dt = {dt} s must be positive and finite")));
        }
        if horizon == 0 {
            return Err(MpcError::Input("the horizon needs at least one interval".into()));
        }
        if model.nu() == 0 {
            return Err(MpcError::Input(format!("model '{}' has no actuators to control", model.name)));
        }
        let range = |i: usize| model.actuators[i].ctrl_range.unwrap_or([f64::NEG_INFINITY, f64::INFINITY]);
        let lower = (0..model.nu()).map(|i| range(i)[0]).collect();
        let upper = (0..model.nu()).map(|i| range(i)[1]).collect();
        Ok(Self { model, mode, dt, horizon, control: ControlKind::Actuators, lower, upper, cost })
    }

    /// Sets what the controls drive and their bounds (nc each).
    pub fn with_controls(mut self, control: ControlKind, lower: Vec<f64>, upper: Vec<f64>) -> Result<Self, MpcError> {
        let nc = control.len(&self.model);
        if lower.len() != nc || upper.len() != nc {
            return Err(MpcError::Input(format!(
                "control bounds: expected {nc} lower and upper values, got {} and {}",
                lower.len(),
                upper.len()
            )));
        }
        if let Some(i) = (0..nc).find(|&i| lower[i].is_nan() || upper[i].is_nan() || !(lower[i] <= upper[i])) {
            return Err(MpcError::Input(format!(
                "control {i}: bounds [{}, {}] are not an interval",
                lower[i], upper[i]
            )));
        }
        self.control = control;
        self.lower = lower;
        self.upper = upper;
        Ok(self)
    }

    /// State size nq + nv.
    pub fn nx(&self) -> usize {
        self.model.nq + self.model.nv
    }

    /// Controls per interval.
    pub fn nc(&self) -> usize {
        self.lower.len()
    }

    /// Clamps a control sequence (n × nc) into the bounds.
    pub fn clamp(&self, u: &mut [f64]) {
        let nc = self.nc();
        for (i, x) in u.iter_mut().enumerate() {
            *x = x.max(self.lower[i % nc]).min(self.upper[i % nc]);
        }
    }

    /// The initial guess: each control at the middle of its bounds (zero
    /// where a bound is infinite), over the horizon.
    pub fn initial_controls(&self) -> Vec<f64> {
        let mid: Vec<f64> = (0..self.nc())
            .map(|i| {
                let (l, h) = (self.lower[i], self.upper[i]);
                if l.is_finite() && h.is_finite() { 0.5 * (l + h) } else { 0.0f64.max(l).min(h) }
            })
            .collect();
        (0..self.horizon).flat_map(|_| mid.iter().copied()).collect()
    }

    /// The differentiable rollout of this problem, with contacts from distance `cfd`.
    pub fn rollout(&self, cfd: Option<Cfd>) -> DiffRollout {
        DiffRollout::new(self.model.clone(), self.mode.clone(), self.dt).with_control(self.control).with_cfd(cfd)
    }

    /// A world of the planner's model (for forward passes). Its fixed steps
    /// start at v0, as [`Self::rollout`]'s do
    /// ([`Simulator::warm_start_fixed_steps`](crate::integrator::Simulator::warm_start_fixed_steps)),
    /// so the planner's rollouts are the map its linearizations describe.
    pub fn world(&self) -> World<f64> {
        let mut w = World::new(self.model.clone(), self.mode.clone());
        w.sim.warm_start_fixed_steps = false;
        w
    }

    /// Simulates the horizon from `x0` in `world` (restarted), choosing
    /// each interval's control with `policy(k, x_k, u_k)` (which writes
    /// u_k; it is then clamped into the bounds): the trajectory into `xs`
    /// ((H + 1) × nx) and the controls into `us` (H × nc).
    pub fn simulate_policy(
        &self,
        world: &mut World<f64>,
        x0: &[f64],
        mut policy: impl FnMut(usize, &[f64], &mut [f64]),
        xs: &mut [f64],
        us: &mut [f64],
    ) -> Result<(), MpcError> {
        let (nq, nx, nc) = (self.model.nq, self.nx(), self.nc());
        world.restart();
        world.sim.set_state(&x0[..nq], &x0[nq..]);
        xs[..nx].copy_from_slice(x0);
        for k in 0..self.horizon {
            let u = &mut us[k * nc..(k + 1) * nc];
            policy(k, &xs[k * nx..(k + 1) * nx], u);
            self.clamp(u);
            apply_controls(world, self.control, u);
            world
                .advance(self.dt)
                .map_err(|e: StepError| MpcError::Step { interval: k, message: e.describe(&self.model) })?;
            let x = &mut xs[(k + 1) * nx..(k + 2) * nx];
            x[..nq].copy_from_slice(&world.sim.data.q);
            x[nq..].copy_from_slice(&world.sim.data.v);
        }
        Ok(())
    }
}

/// Writes controls into a world's actuators or applied forces.
pub(crate) fn apply_controls(world: &mut World<f64>, control: ControlKind, u: &[f64]) {
    let dst = match control {
        ControlKind::Actuators => &mut world.sim.ctrl,
        ControlKind::Applied => &mut world.sim.applied,
    };
    dst.copy_from_slice(u);
}

/// Runs planner iterations while `budget` allows. Iterations come in kinds
/// of different cost (a linearization, or a reuse of one): `iterate(kind)`
/// runs one of kind `kind` and returns whether the planner has converged
/// (no further iteration needed), the kind it would run next and a
/// cheaper kind it can run instead when that one does not fit the budget
/// (`None`: none); `kind` is the first one's. `cost` holds the expected
/// duration (s, on the budget's clock) of each kind, carried between
/// calls: the longest seen, decaying by 10 % per call. Returns the
/// iterations run, wall and CPU seconds.
pub(crate) fn run_budget(
    budget: Budget,
    mut kind: usize,
    cost: &mut [f64],
    mut iterate: impl FnMut(usize) -> Result<(bool, usize, Option<usize>), MpcError>,
) -> Result<(usize, f64, f64), MpcError> {
    let start = Instant::now();
    let cpu0 = cpu_seconds();
    // The clock the budget counts, in s since the start.
    let clock = || match budget {
        Budget::CpuTime(_) => cpu_seconds() - cpu0,
        _ => start.elapsed().as_secs_f64(),
    };
    cost.iter_mut().for_each(|c| *c *= 0.9);
    let mut fallback = None;
    let mut done = 0;
    loop {
        let fits = |k: usize| budget.allows(done, Duration::from_secs_f64(clock()), Duration::from_secs_f64(cost[k]));
        if !fits(kind) {
            match fallback.filter(|&k| fits(k)) {
                Some(k) => kind = k,
                None => break,
            }
        }
        let t = clock();
        let (converged, next, cheaper) = iterate(kind)?;
        cost[kind] = cost[kind].max(clock() - t);
        (kind, fallback) = (next, cheaper);
        done += 1;
        if converged {
            break;
        }
    }
    Ok((done, start.elapsed().as_secs_f64(), cpu_seconds() - cpu0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A budget of 100 ms with an expected fresh iteration of 80 ms and a
    /// reuse of 1 ms: after the first (fresh, 30 ms) iteration the next
    /// fresh one does not fit, so reuse iterations run while the planner offers them
    /// and stop when it does not.
    #[test]
    fn a_budget_that_cannot_fit_a_linearization_runs_the_cheaper_kind_while_offered() {
        let spin = |s: f64| {
            let t = Instant::now();
            while t.elapsed().as_secs_f64() < s {}
        };
        let budget = Budget::WallTime(Duration::from_millis(100));
        let mut kinds = vec![];
        let mut cost = [0.001 / 0.9, 0.08 / 0.9];
        let (n, ..) = run_budget(budget, 1, &mut cost, |kind| {
            kinds.push(kind);
            spin(if kind == 1 { 0.03 } else { 0.0005 });
            // Offer the cheaper kind for the first three iterations only.
            Ok((false, 1, (kinds.len() < 3).then_some(0)))
        })
        .unwrap();
        assert_eq!(kinds, vec![1, 0, 0], "one fresh iteration, then reuse while offered");
        assert_eq!(n, 3);
        // Without a fallback the loop stops once the fresh kind does not fit.
        let mut cost = [0.001 / 0.9, 0.08 / 0.9];
        let mut runs = 0;
        run_budget(budget, 1, &mut cost, |_| {
            runs += 1;
            spin(0.03);
            Ok((false, 1, None))
        })
        .unwrap();
        assert_eq!(runs, 1);
    }
}
