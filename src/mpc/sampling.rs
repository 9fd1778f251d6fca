//! Predictive sampling (MuJoCo MPC's baseline planner; see the
//! [module docs](super)).

use super::cost::{Workspace, objective};
use super::{Budget, MpcError, PlanStats, Planner, Problem, run_budget};
use crate::batch::{Batch, CpuBatch, WorldStatus};
use crate::diff::ControlKind;
use crate::gpu::{GpuBatch, GpuContext};
use crate::rl::EnvRng;
use rayon::prelude::*;
use std::sync::Arc;

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
    /// The rollouts' batch: one world per sample.
    batch: Box<dyn Batch + Send>,
    /// ", GPU" when [`PredictiveSampling::on_gpu`] built the batch, for
    /// [`Planner::name`]; "" otherwise.
    device: &'static str,
    rng: EnvRng,
    workspaces: Vec<Workspace>,
    /// Candidates' knots, controls and states, reused across iterations.
    cand_knots: Vec<Vec<f64>>,
    cand_u: Vec<Vec<f64>>,
    cand_x: Vec<Vec<f64>>,
    /// The batch's inputs and outputs (samples × nq, × nv, × nc), reused.
    rows_q: Vec<f64>,
    rows_v: Vec<f64>,
    rows_ctrl: Vec<f64>,
    /// Objectives of the last evaluation (samples).
    costs: Vec<f64>,
    failed: Vec<bool>,
    /// Expected duration of an iteration (for [`Budget`]s in time).
    iteration_cost: f64,
}

impl PredictiveSampling {
    /// A planner for `problem` (actuator controls with finite bounds),
    /// its rollouts in a [`CpuBatch<f64>`] (on rayon's threads).
    pub fn new(problem: Problem, options: SamplingOptions) -> Result<Self, MpcError> {
        let batch = CpuBatch::<f64>::new(problem.model.clone(), options.samples, problem.mode.clone());
        Self::with_batch(problem, options, Box::new(batch))
    }

    /// A planner for `problem` whose rollouts run on the GPU (one
    /// [`GpuBatch`] world per sample, f32, the problem's integration);
    /// the objectives are summed on the host. Worth it from a few hundred
    /// samples on: each interval of a rollout round is one launch and one
    /// read-back of every world's state.
    pub fn on_gpu(problem: Problem, options: SamplingOptions, ctx: Arc<GpuContext>) -> Result<Self, MpcError> {
        let batch = GpuBatch::new(ctx, problem.model.clone(), options.samples.max(1), problem.mode.clone())
            .map_err(|e| MpcError::Input(format!("predictive sampling on the GPU: {e}")))?;
        let mut me = Self::with_batch(problem, options, Box::new(batch))?;
        me.device = ", GPU";
        Ok(me)
    }

    /// A planner for `problem` whose rollouts run in `batch`: one world per
    /// sample (`batch.nworld() == options.samples`), the problem's model
    /// and integration (the batch's own mode is used as it is).
    pub fn with_batch(
        problem: Problem,
        options: SamplingOptions,
        batch: Box<dyn Batch + Send>,
    ) -> Result<Self, MpcError> {
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
        let (m, bm) = (&problem.model, batch.model());
        if batch.nworld() != options.samples || (bm.nq, bm.nv, bm.nu()) != (m.nq, m.nv, m.nu()) {
            return Err(MpcError::Input(format!(
                "predictive sampling: the batch has {} worlds of model '{}' (nq {}, nv {}, nu {}); \
                 the planner needs {} worlds of model '{}' (nq {}, nv {}, nu {})",
                batch.nworld(),
                bm.name,
                bm.nq,
                bm.nv,
                bm.nu(),
                options.samples,
                m.name,
                m.nq,
                m.nv,
                m.nu()
            )));
        }
        let (nx, nc, h, s) = (problem.nx(), problem.nc(), problem.horizon, options.samples);
        let (nq, nv) = (m.nq, m.nv);
        let mid = problem.initial_controls();
        let knots = (0..options.knots).flat_map(|_| mid[..nc].to_vec()).collect();
        let mut me = Self {
            batch,
            device: "",
            rng: EnvRng::new(options.seed, 0),
            workspaces: (0..s).map(|_| Workspace::new(problem.model.clone())).collect(),
            cand_knots: vec![vec![0.0; options.knots * nc]; s],
            cand_u: vec![vec![0.0; h * nc]; s],
            cand_x: vec![vec![0.0; (h + 1) * nx]; s],
            rows_q: vec![0.0; s * nq],
            rows_v: vec![0.0; s * nv],
            rows_ctrl: vec![0.0; s * nc],
            costs: vec![0.0; s],
            failed: vec![false; s],
            u: vec![0.0; h * nc],
            iteration_cost: 0.0,
            knots,
            problem,
            options,
        };
        me.spline().controls(&me.knots, &mut me.u);
        Ok(me)
    }

    /// The plan's spline parameters.
    fn spline(&self) -> Spline {
        let p = &self.problem;
        let knots = self.options.knots;
        Spline {
            knots,
            span: p.horizon as f64 * p.dt / (knots - 1) as f64,
            dt: p.dt,
            nc: p.nc(),
            interpolation: self.options.interpolation,
        }
    }

    /// ", GPU" when [`PredictiveSampling::on_gpu`] built the batch, else "".
    pub(crate) fn device(&self) -> &'static str {
        self.device
    }

    /// The knot values (knots × nc).
    pub fn knots(&self) -> &[f64] {
        &self.knots
    }

    /// The objectives of the last round's candidates (samples; the nominal
    /// plan first; ∞ where a rollout failed).
    pub fn objectives(&self) -> &[f64] {
        &self.costs
    }

    /// Objectives of the first `count` candidates' control sequences (each
    /// H × nc, `cand_u`) rolled out from `x0` in the batch, into `costs`
    /// (∞ for rollouts that failed); the states land in `cand_x`. The
    /// batch's other worlds repeat candidate 0.
    fn evaluate(&mut self, x0: &[f64], count: usize) -> Result<(), MpcError> {
        let p = &self.problem;
        let (nq, nv, nx, nc, h) = (p.model.nq, p.model.nv, p.nx(), p.nc(), p.horizon);
        for (q, v) in self.rows_q.chunks_mut(nq.max(1)).zip(self.rows_v.chunks_mut(nv.max(1))) {
            q[..nq].copy_from_slice(&x0[..nq]);
            v[..nv].copy_from_slice(&x0[nq..]);
        }
        self.batch.reset_worlds_all(&self.rows_q, &self.rows_v)?;
        for xs in &mut self.cand_x[..count] {
            xs[..nx].copy_from_slice(x0);
        }
        for k in 0..h {
            for (w, c) in self.rows_ctrl.chunks_mut(nc.max(1)).enumerate() {
                let src = if w < count { &self.cand_u[w] } else { &self.cand_u[0] };
                c[..nc].copy_from_slice(&src[k * nc..(k + 1) * nc]);
            }
            self.batch.set_ctrl_all(&self.rows_ctrl)?;
            self.batch.advance(p.dt)?;
            self.batch.qpos(&mut self.rows_q);
            self.batch.qvel(&mut self.rows_v);
            for (w, xs) in self.cand_x[..count].iter_mut().enumerate() {
                let x = &mut xs[(k + 1) * nx..(k + 2) * nx];
                x[..nq].copy_from_slice(&self.rows_q[w * nq..(w + 1) * nq]);
                x[nq..].copy_from_slice(&self.rows_v[w * nv..(w + 1) * nv]);
            }
        }
        for (w, f) in self.failed[..count].iter_mut().enumerate() {
            *f = self.batch.status(w) != WorldStatus::Ok;
        }
        let (cost, dt) = (&p.cost, p.dt);
        self.workspaces[..count]
            .par_iter_mut()
            .zip(self.cand_x[..count].par_iter().zip(self.cand_u[..count].par_iter()))
            .zip(self.failed[..count].par_iter())
            .zip(self.costs[..count].par_iter_mut())
            .for_each(|(((ws, (xs, us)), &f), c)| {
                *c = if f { f64::INFINITY } else { objective(cost.as_ref(), ws, xs, us, dt) };
            });
        Ok(())
    }

    /// The candidate of least objective among the first `count`.
    fn best(&self, count: usize) -> usize {
        (0..count).min_by(|&a, &b| self.costs[a].total_cmp(&self.costs[b])).expect("at least one sample")
    }

    /// One round of sampling around a full-resolution nominal plan `u`
    /// (H × nc; for the [`super::Hybrid`] planner): the candidates are `u`
    /// itself and `u` plus spline perturbations of the knots (σ times each
    /// control's half range, the sum clamped into the bounds); `u` becomes
    /// the best. Returns the objectives of the nominal and of the best.
    pub(crate) fn sample_around(
        &mut self,
        x0: &[f64],
        u: &mut [f64],
        stats: &mut PlanStats,
    ) -> Result<(f64, f64), MpcError> {
        let nc = self.problem.nc();
        let s = self.options.samples;
        let spline = self.spline();
        self.cand_u[0].copy_from_slice(u);
        for c in 1..s {
            let p = &self.problem;
            for (i, v) in self.cand_knots[c].iter_mut().enumerate() {
                *v = self.options.sigma * 0.5 * (p.upper[i % nc] - p.lower[i % nc]) * self.rng.normal();
            }
            let cu = &mut self.cand_u[c];
            spline.controls(&self.cand_knots[c], cu);
            cu.iter_mut().zip(u.iter()).for_each(|(d, n)| *d += n);
            p.clamp(cu);
        }
        self.evaluate(x0, s)?;
        stats.rollouts += s;
        let best = self.best(s);
        if best != 0 && self.costs[best] < self.costs[0] {
            u.copy_from_slice(&self.cand_u[best]);
            stats.accepted += 1;
        }
        Ok((self.costs[0], self.costs[best].min(self.costs[0])))
    }

    fn iterate(&mut self, x0: &[f64], stats: &mut PlanStats) -> Result<(), MpcError> {
        let nc = self.problem.nc();
        let s = self.options.samples;
        let spline = self.spline();
        self.cand_knots[0].copy_from_slice(&self.knots);
        for c in 1..s {
            let p = &self.problem;
            for (i, v) in self.cand_knots[c].iter_mut().enumerate() {
                let j = i % nc;
                let half = 0.5 * (p.upper[j] - p.lower[j]);
                *v = (self.knots[i] + self.options.sigma * half * self.rng.normal()).clamp(p.lower[j], p.upper[j]);
            }
        }
        for c in 0..s {
            spline.controls(&self.cand_knots[c], &mut self.cand_u[c]);
        }
        self.evaluate(x0, s)?;
        stats.rollouts += s;
        if stats.iterations == 0 {
            stats.initial_cost = self.costs[0];
        }
        let best = self.best(s);
        if best != 0 && self.costs[best] < self.costs[0] {
            self.knots.copy_from_slice(&self.cand_knots[best]);
            self.u.copy_from_slice(&self.cand_u[best]);
            stats.accepted += 1;
        }
        stats.cost = self.costs[best].min(self.costs[0]);
        Ok(())
    }
}

/// A spline of `knots` knots spread evenly over a plan, sampled per control interval.
#[derive(Clone, Copy)]
struct Spline {
    knots: usize,
    /// Time between knots (s).
    span: f64,
    /// Control interval (s).
    dt: f64,
    nc: usize,
    interpolation: Interpolation,
}

impl Spline {
    /// Time (s, from the plan's start) of knot `j`.
    fn knot_time(&self, j: usize) -> f64 {
        j as f64 * self.span
    }

    /// The spline of `knots` at time `t` (s) into `out` (nc); held constant beyond the last knot.
    fn at(&self, knots: &[f64], t: f64, out: &mut [f64]) {
        let (nc, p) = (self.nc, self.knots);
        let s = (t / self.span).max(0.0);
        let j = (s.floor() as usize).min(p - 1);
        let frac = if j == p - 1 { 0.0 } else { s - j as f64 };
        for i in 0..nc {
            let a = knots[j * nc + i];
            out[i] = match self.interpolation {
                Interpolation::Zero => a,
                Interpolation::Linear if j + 1 < p => a + frac * (knots[(j + 1) * nc + i] - a),
                Interpolation::Linear => a,
            };
        }
    }

    /// The control sequence (H × nc) of a knot vector into `u`.
    fn controls(&self, knots: &[f64], u: &mut [f64]) {
        for (k, uk) in u.chunks_mut(self.nc.max(1)).enumerate() {
            self.at(knots, k as f64 * self.dt, uk);
        }
    }
}

impl Planner for PredictiveSampling {
    fn name(&self) -> String {
        format!("sampling ({}{})", self.options.samples, self.device)
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
            self.iterate(x0, &mut stats)?;
            stats.iterations += 1;
            Ok((false, 0, None))
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
        let spline = self.spline();
        // The old knots from a candidate's buffer (rewritten by the next round anyway).
        let old = &mut self.cand_knots[0];
        old.copy_from_slice(&self.knots);
        for j in 0..self.options.knots {
            spline.at(old, spline.knot_time(j) + self.problem.dt, &mut self.knots[j * nc..(j + 1) * nc]);
        }
        spline.controls(&self.knots, &mut self.u);
    }

    fn reset(&mut self) {
        let nc = self.problem.nc();
        let mid = self.problem.initial_controls();
        for j in 0..self.options.knots {
            self.knots[j * nc..(j + 1) * nc].copy_from_slice(&mid[..nc]);
        }
        self.spline().controls(&self.knots, &mut self.u);
        self.rng = EnvRng::new(self.options.seed, 0);
    }
}
