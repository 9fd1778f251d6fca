//! Predictive sampling (MuJoCo MPC's baseline planner; see the
//! [module docs](super)).

use super::cost::{Workspace, objective};
use super::{Budget, MpcError, PlanStats, Planner, Problem, run_budget};
use crate::batch::{Batch, CpuBatch, WorldStatus};
use crate::diff::ControlKind;
use crate::rl::EnvRng;
use rayon::prelude::*;

/// How the spline between knots gives each interval's control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    /// The value of the last knot at or before the interval's start.
    Zero,
    /// Linear between the neighbouring knots.
    Linear,
}

/// Settings of [`PredictiveSampling`].
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingOptions {
    /// Rollouts per iteration, the nominal plan included (≥ 1).
    pub samples: usize,
    /// Spline knots spread evenly over the horizon (≥ 2).
    pub knots: usize,
    /// Standard deviation of the knot perturbations, as a fraction of
    /// each control's half range.
    pub sigma: f64,
    /// Spline interpolation.
    pub interpolation: Interpolation,
    /// Seed of the perturbations.
    pub seed: u64,
}

impl Default for SamplingOptions {
    fn default() -> Self {
        Self { samples: 64, knots: 6, sigma: 0.2, interpolation: Interpolation::Linear, seed: 0 }
    }
}

/// The sampling planner (see the [module docs](super)).
pub struct PredictiveSampling {
    problem: Problem,
    /// Settings.
    pub options: SamplingOptions,
    /// Knot values (knots × nc).
    knots: Vec<f64>,
    /// The nominal plan's controls (H × nc), from the knots.
    u: Vec<f64>,
    batch: CpuBatch<f64>,
    rng: EnvRng,
    workspaces: Vec<Workspace>,
    /// Candidates' knots, controls and states, reused across iterations.
    cand_knots: Vec<Vec<f64>>,
    cand_u: Vec<Vec<f64>>,
    cand_x: Vec<Vec<f64>>,
    /// Expected duration of an iteration (for [`Budget`]s in time).
    iteration_cost: f64,
}

impl PredictiveSampling {
    /// A planner for `problem` (actuator controls with finite bounds).
    pub fn new(problem: Problem, options: SamplingOptions) -> Result<Self, MpcError> {
        if problem.control != ControlKind::Actuators {
            return Err(MpcError::Input("predictive sampling drives actuator controls only".into()));
        }
        if let Some(i) = (0..problem.nc()).find(|&i| !(problem.lower[i].is_finite() && problem.upper[i].is_finite())) {
            return Err(MpcError::Input(format!(
                "predictive sampling needs finite control bounds (its noise scales with the range); control {i} has [{}, {}]",
                problem.lower[i], problem.upper[i]
            )));
        }
        if options.samples == 0 || options.knots < 2 || !(options.sigma >= 0.0) {
            return Err(MpcError::Input(format!(
                "predictive sampling needs ≥ 1 sample, ≥ 2 knots and σ ≥ 0 (got {}, {}, {})",
                options.samples, options.knots, options.sigma
            )));
        }
        let (nx, nc, h, s) = (problem.nx(), problem.nc(), problem.horizon, options.samples);
        let mid = problem.initial_controls();
        let knots = (0..options.knots).flat_map(|_| mid[..nc].to_vec()).collect();
        let mut me = Self {
            batch: CpuBatch::new(problem.model.clone(), s, problem.mode.clone()),
            rng: EnvRng::new(options.seed, 0),
            workspaces: (0..s).map(|_| Workspace::new(problem.model.clone())).collect(),
            cand_knots: vec![vec![0.0; options.knots * nc]; s],
            cand_u: vec![vec![0.0; h * nc]; s],
            cand_x: vec![vec![0.0; (h + 1) * nx]; s],
            u: vec![0.0; h * nc],
            iteration_cost: 0.0,
            knots,
            problem,
            options,
        };
        me.u = me.controls_of(&me.knots);
        Ok(me)
    }

    /// Time (s, from the plan's start) of knot `j`.
    fn knot_time(&self, j: usize) -> f64 {
        j as f64 * self.problem.horizon as f64 * self.problem.dt / (self.options.knots - 1) as f64
    }

    /// The spline of `knots` at time `t` (s) into `out` (nc); held constant beyond the last knot.
    fn spline_at(&self, knots: &[f64], t: f64, out: &mut [f64]) {
        let nc = self.problem.nc();
        let p = self.options.knots;
        let span = self.knot_time(1);
        let s = (t / span).max(0.0);
        let j = (s.floor() as usize).min(p - 1);
        let frac = if j == p - 1 { 0.0 } else { s - j as f64 };
        for i in 0..nc {
            let a = knots[j * nc + i];
            out[i] = match self.options.interpolation {
                Interpolation::Zero => a,
                Interpolation::Linear if j + 1 < p => a + frac * (knots[(j + 1) * nc + i] - a),
                Interpolation::Linear => a,
            };
        }
    }

    /// The control sequence (H × nc) of a knot vector.
    fn controls_of(&self, knots: &[f64]) -> Vec<f64> {
        let nc = self.problem.nc();
        let mut u = vec![0.0; self.problem.horizon * nc];
        for (k, uk) in u.chunks_mut(nc).enumerate() {
            self.spline_at(knots, k as f64 * self.problem.dt, uk);
        }
        u
    }

    /// The knot values (knots × nc).
    pub fn knots(&self) -> &[f64] {
        &self.knots
    }

    /// Objectives of control sequences (each H × nc) rolled out from `x0`
    /// in the batch (∞ for rollouts that failed); the states land in `cand_x`.
    fn evaluate(&mut self, x0: &[f64], count: usize) -> Vec<f64> {
        let p = &self.problem;
        let (nq, nx, nc, h) = (p.model.nq, p.nx(), p.nc(), p.horizon);
        let nworld = self.batch.nworld();
        let mut ctrl = vec![0.0; nworld * nc];
        let (mut qpos, mut qvel) = (vec![0.0; nworld * nq], vec![0.0; nworld * p.model.nv]);
        for w in 0..nworld {
            self.batch.reset_world(w, &x0[..nq], &x0[nq..]).expect("state sizes checked");
            self.cand_x[w][..nx].copy_from_slice(x0);
        }
        for k in 0..h {
            for w in 0..nworld {
                let src = if w < count {
                    &self.cand_u[w][k * nc..(k + 1) * nc]
                } else {
                    &self.cand_u[0][k * nc..(k + 1) * nc]
                };
                ctrl[w * nc..(w + 1) * nc].copy_from_slice(src);
            }
            self.batch.set_ctrl_all(&ctrl).expect("control sizes checked");
            self.batch.advance(p.dt).expect("CPU batches do not fail as a whole");
            self.batch.qpos(&mut qpos);
            self.batch.qvel(&mut qvel);
            for w in 0..count {
                let x = &mut self.cand_x[w][(k + 1) * nx..(k + 2) * nx];
                x[..nq].copy_from_slice(&qpos[w * nq..(w + 1) * nq]);
                x[nq..].copy_from_slice(&qvel[w * p.model.nv..(w + 1) * p.model.nv]);
            }
        }
        let failed: Vec<bool> = (0..count).map(|w| self.batch.status(w) != WorldStatus::Ok).collect();
        let (cost, dt) = (&p.cost, p.dt);
        self.workspaces[..count]
            .par_iter_mut()
            .zip(self.cand_x[..count].par_iter().zip(self.cand_u[..count].par_iter()))
            .zip(failed.par_iter())
            .map(|((ws, (xs, us)), &f)| if f { f64::INFINITY } else { objective(cost.as_ref(), ws, xs, us, dt) })
            .collect()
    }

    /// One round of sampling around a full-resolution nominal plan `u`
    /// (H × nc; for the [`super::Hybrid`] planner): the candidates are `u`
    /// itself and `u` plus spline perturbations of the knots (σ times each
    /// control's half range, the sum clamped into the bounds); `u` becomes
    /// the best. Returns the objectives of the nominal and of the best.
    pub(crate) fn sample_around(&mut self, x0: &[f64], u: &mut [f64], stats: &mut PlanStats) -> (f64, f64) {
        let p = &self.problem;
        let nc = p.nc();
        let s = self.options.samples;
        self.cand_u[0].copy_from_slice(u);
        for c in 1..s {
            for (i, v) in self.cand_knots[c].iter_mut().enumerate() {
                *v = self.options.sigma * 0.5 * (p.upper[i % nc] - p.lower[i % nc]) * self.rng.normal();
            }
            let mut cu = self.controls_of(&self.cand_knots[c]);
            cu.iter_mut().zip(u.iter()).for_each(|(d, n)| *d += n);
            self.problem.clamp(&mut cu);
            self.cand_u[c] = cu;
        }
        let costs = self.evaluate(x0, s);
        stats.rollouts += s;
        let best = (0..s).min_by(|&a, &b| costs[a].total_cmp(&costs[b])).expect("at least one sample");
        if best != 0 && costs[best] < costs[0] {
            u.copy_from_slice(&self.cand_u[best]);
            stats.accepted += 1;
        }
        (costs[0], costs[best].min(costs[0]))
    }

    fn iterate(&mut self, x0: &[f64], stats: &mut PlanStats) -> bool {
        let p = &self.problem;
        let nc = p.nc();
        let s = self.options.samples;
        self.cand_knots[0].copy_from_slice(&self.knots);
        for c in 1..s {
            let knots = &mut self.cand_knots[c];
            for (i, v) in knots.iter_mut().enumerate() {
                let j = i % nc;
                let half = 0.5 * (p.upper[j] - p.lower[j]);
                *v = (self.knots[i] + self.options.sigma * half * self.rng.normal()).clamp(p.lower[j], p.upper[j]);
            }
        }
        for c in 0..s {
            self.cand_u[c] = self.controls_of(&self.cand_knots[c]);
        }
        let costs = self.evaluate(x0, s);
        stats.rollouts += s;
        if stats.iterations == 0 {
            stats.initial_cost = costs[0];
        }
        let best = (0..s).min_by(|&a, &b| costs[a].total_cmp(&costs[b])).expect("at least one sample");
        if best != 0 && costs[best] < costs[0] {
            self.knots.copy_from_slice(&self.cand_knots[best]);
            self.u.clone_from(&self.cand_u[best]);
            stats.accepted += 1;
        }
        stats.cost = costs[best].min(costs[0]);
        false
    }
}

impl Planner for PredictiveSampling {
    fn name(&self) -> String {
        format!("sampling ({})", self.options.samples)
    }

    fn problem(&self) -> &Problem {
        &self.problem
    }

    fn plan(&mut self, x0: &[f64], budget: Budget) -> Result<PlanStats, MpcError> {
        if x0.len() != self.problem.nx() {
            return Err(MpcError::Input(format!("state: expected {} values, got {}", self.problem.nx(), x0.len())));
        }
        let mut stats = PlanStats::default();
        let mut cost = [self.iteration_cost];
        let (n, seconds, cpu) = run_budget(budget, 0, &mut cost, |_| {
            let r = self.iterate(x0, &mut stats);
            stats.iterations += 1;
            Ok((r, 0, None))
        })?;
        self.iteration_cost = cost[0];
        stats.iterations = n;
        stats.seconds = seconds;
        stats.cpu_seconds = cpu;
        Ok(stats)
    }

    fn controls(&self) -> &[f64] {
        &self.u
    }

    fn shift(&mut self) {
        let nc = self.problem.nc();
        let old = self.knots.clone();
        let mut v = vec![0.0; nc];
        for j in 0..self.options.knots {
            let t = self.knot_time(j) + self.problem.dt;
            self.spline_at(&old, t, &mut v);
            self.knots[j * nc..(j + 1) * nc].copy_from_slice(&v);
        }
        self.u = self.controls_of(&self.knots);
    }

    fn reset(&mut self) {
        let nc = self.problem.nc();
        let mid = self.problem.initial_controls();
        for j in 0..self.options.knots {
            self.knots[j * nc..(j + 1) * nc].copy_from_slice(&mid[..nc]);
        }
        self.u = self.controls_of(&self.knots);
        self.rng = EnvRng::new(self.options.seed, 0);
    }
}
