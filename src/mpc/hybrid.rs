//! The hybrid planner: predictive sampling for the initial guess, iLQR
//! refinement of the best candidate (see the [module docs](super)).

use super::{Budget, Ilqr, IlqrOptions, MpcError, PlanStats, Planner, PredictiveSampling, Problem, SamplingOptions};
use super::{cpu_seconds, run_budget};
use crate::gpu::GpuContext;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Settings of [`Hybrid`].
#[derive(Clone, Debug, PartialEq)]
pub struct HybridOptions {
    /// The sampling phase (samples per round, knots of the perturbation
    /// spline, σ, seed; its interpolation shapes the perturbations).
    pub sampling: SamplingOptions,
    /// The refinement (contacts from distance, damping, reuse, …).
    pub ilqr: IlqrOptions,
    /// Share of each planning budget given to sampling, in [0, 1]: of a
    /// time budget, that fraction of the time (less where the refinement's
    /// first linearization would not fit in the rest); of an iteration budget,
    /// that fraction of the iterations, rounded (at least one round when
    /// the share is positive). The refinement gets the rest, and at least
    /// one iteration. Default 0.25: on the pusher at 40 ms per interval
    /// 0.25 solved 19, 18 and 18/20 goals where 0.4 solved 15–17/20
    /// (`BENCHMARKS.md`); billiards 17/20 and 18/20.
    pub sampling_share: f64,
}

impl Default for HybridOptions {
    fn default() -> Self {
        Self { sampling: SamplingOptions::default(), ilqr: IlqrOptions::default(), sampling_share: 0.25 }
    }
}

/// Sampling, then gradient refinement, within one budget per interval.
///
/// Each [`Planner::plan`] call first runs rounds of predictive sampling
/// around the current plan (the previous interval's refined plan, shifted:
/// the nominal is always a candidate, so sampling never makes the plan
/// worse on the planner's model), then hands the best candidate to
/// [`Ilqr`] for the rest of the budget. The sampling escapes the flat or
/// non-convex regions where the gradient gives no direction (an arm swung
/// out of reach of contacts from distance); the refinement then does what
/// random perturbations of a coarse spline cannot (precise, full-rate
/// controls). When sampling replaces the plan, the refinement linearizes
/// afresh (its reusable Jacobians belonged to the old plan).
pub struct Hybrid {
    sampler: PredictiveSampling,
    ilqr: Ilqr,
    /// Settings (`ilqr` and `sampling` are copied into the two planners at
    /// construction; changing them later has no effect).
    options: HybridOptions,
    /// The plan after the last sampling phase (H × nc) and its objective.
    sampled: Vec<f64>,
    sampled_cost: f64,
    /// Expected duration of a sampling round (for [`Budget`]s in time).
    round_cost: [f64; 1],
}

impl Hybrid {
    /// A hybrid planner for `problem` (actuator controls with finite
    /// bounds, as [`PredictiveSampling`] needs).
    pub fn new(problem: Problem, options: HybridOptions) -> Result<Self, MpcError> {
        let sampler = PredictiveSampling::new(problem.clone(), options.sampling.clone())?;
        Self::with_sampler(problem, options, sampler)
    }

    /// [`Hybrid::new`] with its sampling rounds on the GPU
    /// ([`PredictiveSampling::on_gpu`]); the refinement stays on the CPU.
    pub fn on_gpu(problem: Problem, options: HybridOptions, ctx: Arc<GpuContext>) -> Result<Self, MpcError> {
        let sampler = PredictiveSampling::on_gpu(problem.clone(), options.sampling.clone(), ctx)?;
        Self::with_sampler(problem, options, sampler)
    }

    /// A hybrid of `sampler` (built for `problem` with `options.sampling`)
    /// and iLQR with `options.ilqr`.
    fn with_sampler(problem: Problem, options: HybridOptions, sampler: PredictiveSampling) -> Result<Self, MpcError> {
        if !(0.0..=1.0).contains(&options.sampling_share) {
            return Err(MpcError::Input(format!(
                "hybrid planner: sampling share {} must lie in [0, 1]",
                options.sampling_share
            )));
        }
        let ilqr = Ilqr::new(problem, options.ilqr.clone());
        let sampled = ilqr.controls().to_vec();
        Ok(Self { sampler, ilqr, options, sampled, sampled_cost: f64::NAN, round_cost: [0.0] })
    }

    /// The settings.
    pub fn options(&self) -> &HybridOptions {
        &self.options
    }

    /// The plan the last sampling phase handed to the refinement (H × nc).
    pub fn sampled_controls(&self) -> &[f64] {
        &self.sampled
    }

    /// The planner-model objective of [`Hybrid::sampled_controls`] (NaN
    /// before the first plan or when the share is 0).
    pub fn sampled_cost(&self) -> f64 {
        self.sampled_cost
    }

    /// The sampling phase's budget out of `budget` (`None`: no sampling).
    /// Of a time budget, the share, but no more than leaves room for one
    /// linearization (the refinement always runs one iteration, and after
    /// sampling has replaced the plan that one linearizes): otherwise the
    /// two phases together would overrun the budget.
    fn split(&self, budget: Budget) -> Option<Budget> {
        let share = self.options.sampling_share;
        if share == 0.0 {
            return None;
        }
        let reserve = Duration::from_secs_f64(self.ilqr.expected_linearization());
        let time = |t: Duration| Some(t.mul_f64(share).min(t.saturating_sub(reserve))).filter(|s| !s.is_zero());
        match budget {
            Budget::Iterations(n) => Some(Budget::Iterations(((n as f64 * share).round() as usize).max(1))),
            Budget::WallTime(t) => time(t).map(Budget::WallTime),
            Budget::CpuTime(t) => time(t).map(Budget::CpuTime),
        }
    }
}

impl Planner for Hybrid {
    fn name(&self) -> String {
        let cfd = if self.options.ilqr.cfd.is_some() { " + CFD" } else { "" };
        format!("hybrid ({}{}){cfd}", self.options.sampling.samples, self.sampler.device())
    }

    fn problem(&self) -> &Problem {
        self.ilqr.problem()
    }

    fn plan(&mut self, x0: &[f64], budget: Budget) -> Result<PlanStats, MpcError> {
        if x0.len() != self.problem().nx() {
            return Err(MpcError::Input(format!("state: expected {} values, got {}", self.problem().nx(), x0.len())));
        }
        let (start, cpu0) = (Instant::now(), cpu_seconds());
        let mut stats = PlanStats::default();
        let mut rounds = 0;
        if let Some(sampling) = self.split(budget) {
            let mut u = self.ilqr.controls().to_vec();
            let (sampler, cost) = (&mut self.sampler, &mut self.sampled_cost);
            let mut first = true;
            (rounds, _, _) = run_budget(sampling, 0, &mut self.round_cost, |_| {
                let (nominal, best) = sampler.sample_around(x0, &mut u, &mut stats)?;
                if first {
                    stats.initial_cost = nominal;
                    first = false;
                }
                *cost = best;
                Ok((false, 0, None))
            })?;
            if u != self.ilqr.controls() {
                self.ilqr.set_controls(&u);
            }
            self.sampled = u;
        }
        let rest = match budget {
            Budget::Iterations(n) => Budget::Iterations(n.saturating_sub(rounds).max(1)),
            Budget::WallTime(t) => Budget::WallTime(t.saturating_sub(start.elapsed())),
            Budget::CpuTime(t) => Budget::CpuTime(t.saturating_sub(Duration::from_secs_f64(cpu_seconds() - cpu0))),
        };
        // The refinement's first iteration always runs once started: when
        // sampling has left less than one fresh iteration of a time budget,
        // the sampled plan stands for this interval (the next one
        // linearizes it) rather than overrunning the interval.
        let fits = match rest {
            Budget::Iterations(_) => true,
            Budget::WallTime(t) | Budget::CpuTime(t) => {
                rounds == 0 || t.as_secs_f64() >= self.ilqr.expected_linearization()
            }
        };
        stats.iterations = rounds;
        stats.cost = self.sampled_cost;
        if fits {
            let refined = self.ilqr.plan(x0, rest)?;
            if rounds == 0 {
                stats.initial_cost = refined.initial_cost;
            }
            stats.iterations += refined.iterations;
            stats.accepted += refined.accepted;
            stats.rollouts += refined.rollouts;
            stats.linearizations = refined.linearizations;
            stats.cost = refined.cost;
        }
        stats.seconds = start.elapsed().as_secs_f64();
        stats.cpu_seconds = cpu_seconds() - cpu0;
        Ok(stats)
    }

    fn controls(&self) -> &[f64] {
        self.ilqr.controls()
    }

    fn shift(&mut self) {
        self.ilqr.shift();
    }

    fn reset(&mut self) {
        self.ilqr.reset();
        self.sampler.reset();
        self.sampled.copy_from_slice(self.ilqr.controls());
        self.sampled_cost = f64::NAN;
    }
}
