//! [`VecEnv`]: the vectorized environment, and the host evaluation of tasks.

use super::{EnvRng, EnvState, RlError, Task};
use crate::batch::{Batch, Grain, WorldStatus};
use crate::dynamics::{self, Data};
use crate::integrator::{CenicParams, Mode};
use crate::model::Model;
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

/// When finished environments are reset (gymnasium's `AutoresetMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Autoreset {
    /// Gymnasium ≥ 1.0's default: the step after the end resets the
    /// environment (its action ignored) and returns the first observation,
    /// reward 0, both flags false.
    #[default]
    NextStep,
    /// The ending step resets at once and returns the new episode's first
    /// observation; the final one is in [`VecEnv::final_obs`].
    SameStep,
}

/// How the physics advances over an environment step.
#[derive(Clone, Debug, PartialEq)]
pub enum Physics {
    /// Fixed steps of the model's own `timestep`, `frame_skip` of them per
    /// environment step (what gymnasium's MuJoCo environments do).
    Fixed,
    /// Fixed steps of this size (s); the last one of an environment step is
    /// shortened to land on its end.
    FixedStep(f64),
    /// CENIC error control; each environment step is one control interval.
    Cenic(CenicParams),
    /// MuJoCo's own integrator and step (the model's `<option integrator>`
    /// and `timestep`, `frame_skip` steps per environment step), so that an
    /// environment steps as gymnasium + MuJoCo does it
    /// ([`Mode::MuJoCo`]; models with MuJoCo's semantics, CPU only).
    MuJoCo,
}

impl Physics {
    /// CENIC at `accuracy` (m, rad) with the other parameters at their defaults.
    pub fn cenic(accuracy: f64) -> Self {
        Physics::Cenic(CenicParams { accuracy, ..Default::default() })
    }

    /// The integrator mode for `model`.
    pub fn mode(&self, model: &Model) -> Mode {
        match self {
            Physics::Fixed => Mode::Fixed { dt: model.options.timestep },
            Physics::FixedStep(dt) => Mode::Fixed { dt: *dt },
            Physics::Cenic(p) => Mode::ErrorControlled(p.clone()),
            Physics::MuJoCo => Mode::MuJoCo(crate::integrator::MuJoCoStep {
                dt: model.options.timestep,
                integrator: model.options.integrator,
            }),
        }
    }
}

/// Settings of a [`VecEnv`] (the task's defaults where `None`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EnvConfig {
    /// Model time steps per environment step.
    pub frame_skip: Option<usize>,
    /// Episode length (steps) after which `truncated` is set.
    pub max_episode_steps: Option<usize>,
    /// Autoreset mode.
    pub autoreset: Autoreset,
    /// Index of this environment's first environment in a larger one split
    /// across processes (default 0): environment i draws from
    /// [`EnvRng::new(seed, first_env + i)`](EnvRng::new), so that the shard
    /// of environments [a, b) with `first_env = a` draws what environments
    /// a..b of the whole draw, and the shards together reproduce it bit for bit.
    pub first_env: usize,
}

/// What an evaluation is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvalKind {
    /// After a step: observation, reward, terms, termination, carry, for every environment.
    Step,
    /// After resets: observation and carry of the environments flagged in
    /// the mask (zero controls, no forces); rewards are not written.
    Reset,
}

/// Where an evaluation writes (the [`VecEnv`]'s buffers).
#[derive(Debug)]
pub struct EvalOut<'a> {
    /// Observations (num_envs × obs_dim).
    pub obs: &'a mut [f32],
    /// Rewards (num_envs).
    pub reward: &'a mut [f32],
    /// Termination flags (num_envs).
    pub terminated: &'a mut [bool],
    /// Reward terms (num_envs × n_terms).
    pub terms: &'a mut [f32],
}

/// Computes the task's outputs at a batch's current state. The host
/// evaluator ([`HostEvaluator`]) serves any batch and any task; a backend
/// may evaluate built-in tasks on its own device
/// ([`crate::gpu::rl::DeviceEvaluator`]).
pub trait Evaluate<B: Batch>: Send {
    /// Evaluates (see [`EvalKind`]); `ctrl` (num_envs × nu) holds the
    /// controls of the step, `mask` (num_envs) the environments to write
    /// after resets.
    fn evaluate(
        &mut self,
        batch: &B,
        task: &dyn Task,
        kind: EvalKind,
        ctrl: &[f64],
        mask: &[bool],
        out: EvalOut<'_>,
    ) -> Result<(), RlError>;
}

/// Per-environment scratch of the host evaluator.
#[derive(Clone, Debug)]
struct Scratch {
    data: Data<f64>,
    obs: Vec<f64>,
    terms: Vec<f64>,
    carry: Vec<f64>,
    reward: f64,
    terminated: bool,
}

/// Evaluates a task on the host (rayon over environments) from the
/// batch's q, v and, when the task needs them, constraint forces and
/// sensor values. All storage is allocated at creation.
#[derive(Clone, Debug)]
pub struct HostEvaluator {
    scratch: Vec<Scratch>,
    qpos: Vec<f64>,
    qvel: Vec<f64>,
    wrench: Vec<f64>,
    qfrc: Vec<f64>,
    sensordata: Vec<f64>,
    zeros_ctrl: Vec<f64>,
    zeros_wrench: Vec<f64>,
    zeros_qfrc: Vec<f64>,
    dt: f64,
    /// Task size of the per-environment evaluation.
    grain: Grain,
}

impl HostEvaluator {
    /// Storage for `num_envs` environments of `task` on `model`, environment steps of `dt` seconds.
    pub fn new(model: &Model, task: &dyn Task, num_envs: usize, dt: f64) -> Self {
        let spec = task.spec();
        let (nq, nv, nu, nb) = (model.nq, model.nv, model.nu(), model.bodies.len());
        let one = Scratch {
            data: Data::new(model),
            obs: vec![0.0; spec.obs_dim],
            terms: vec![0.0; spec.reward_terms.len()],
            carry: vec![0.0; spec.carry_dim],
            reward: 0.0,
            terminated: false,
        };
        Self {
            scratch: vec![one; num_envs],
            qpos: vec![0.0; num_envs * nq],
            qvel: vec![0.0; num_envs * nv],
            wrench: vec![0.0; num_envs * nb * 6],
            qfrc: vec![0.0; num_envs * nv],
            sensordata: vec![0.0; if spec.needs.sensordata { num_envs * model.nsensordata } else { 0 }],
            zeros_ctrl: vec![0.0; nu],
            zeros_wrench: vec![0.0; nb * 6],
            zeros_qfrc: vec![0.0; nv],
            dt,
            grain: Grain::default(),
        }
    }
}

impl<B: Batch> Evaluate<B> for HostEvaluator {
    fn evaluate(
        &mut self,
        batch: &B,
        task: &dyn Task,
        kind: EvalKind,
        ctrl: &[f64],
        mask: &[bool],
        out: EvalOut<'_>,
    ) -> Result<(), RlError> {
        let model = &**batch.model();
        let (nq, nv, nu, nb) = (model.nq, model.nv, model.nu(), model.bodies.len());
        batch.qpos(&mut self.qpos);
        batch.qvel(&mut self.qvel);
        let step = kind == EvalKind::Step;
        let needs = task.spec().needs;
        if step && (needs.contact_forces || needs.constraint_forces) {
            batch.constraint_forces(&mut self.wrench, &mut self.qfrc);
        }
        if needs.sensordata {
            batch.sensordata(&mut self.sensordata)?;
        }
        let ns = if needs.sensordata { model.nsensordata } else { 0 };
        // The scratch is moved out so the closure can borrow the rest.
        let mut scratch = std::mem::take(&mut self.scratch);
        let this = &*self;
        let dt = this.dt;
        let run = |(i, sc): (usize, &mut Scratch)| {
            if !step && !mask[i] {
                return;
            }
            sc.data.set_state(&this.qpos[i * nq..(i + 1) * nq], &this.qvel[i * nv..(i + 1) * nv]);
            dynamics::kinematics(model, &mut sc.data);
            dynamics::velocities(model, &mut sc.data);
            let (ctrl, body_wrench, qfrc_constraint) = if step {
                (
                    &ctrl[i * nu..(i + 1) * nu],
                    &this.wrench[i * nb * 6..(i + 1) * nb * 6],
                    &this.qfrc[i * nv..(i + 1) * nv],
                )
            } else {
                (&this.zeros_ctrl[..], &this.zeros_wrench[..], &this.zeros_qfrc[..])
            };
            let sensordata = &this.sensordata[i * ns..(i + 1) * ns];
            let s = EnvState { model, data: &sc.data, ctrl, body_wrench, qfrc_constraint, sensordata, dt };
            task.observe(&s, &mut sc.obs);
            if step {
                let (r, t) = task.reward(&s, &sc.carry, &mut sc.terms);
                sc.reward = r;
                sc.terminated = t;
            }
            task.carry(&s, &mut sc.carry);
        };
        this.grain
            .timed(scratch.len(), |min_len| scratch.par_iter_mut().enumerate().with_min_len(min_len).for_each(run));
        self.scratch = scratch;
        let (od, nt) = (task.spec().obs_dim, task.spec().reward_terms.len());
        for (i, sc) in self.scratch.iter().enumerate() {
            if !step && !mask[i] {
                continue;
            }
            for (d, s) in out.obs[i * od..(i + 1) * od].iter_mut().zip(&sc.obs) {
                *d = *s as f32;
            }
            if step {
                out.reward[i] = sc.reward as f32;
                out.terminated[i] = sc.terminated;
                for (d, s) in out.terms[i * nt..(i + 1) * nt].iter_mut().zip(&sc.terms) {
                    *d = *s as f32;
                }
            }
        }
        Ok(())
    }
}

/// The outputs of [`VecEnv::step`], borrowed from the environment's buffers.
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    /// Observations (num_envs × obs_dim).
    pub obs: &'a [f32],
    /// Rewards (num_envs).
    pub reward: &'a [f32],
    /// Episode ended by the task (num_envs).
    pub terminated: &'a [bool],
    /// Episode cut by the time limit or a simulator failure (num_envs).
    pub truncated: &'a [bool],
}

/// Where [`VecEnv::step`]'s wall time went, summed over the steps since
/// the last [`VecEnv::reset_step_times`] (s). On a device batch the device
/// time of an advance shows where the host first waits for it: mostly in
/// `evaluate`, which reads the observations back.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTimes {
    /// Steps timed.
    pub steps: u64,
    /// Clipping the actions and uploading the controls (s).
    pub controls: f64,
    /// [`Batch::advance`] (s).
    pub advance: f64,
    /// Observations, rewards and terminations (s).
    pub evaluate: f64,
    /// Episode bookkeeping and autoresets, with the reset environments'
    /// first observations (s).
    pub resets: f64,
    /// Environments reset by autoresets.
    pub reset_envs: u64,
}

/// A vectorized environment: `num_envs` copies of a task on one batch.
/// See the [module documentation](super) for the semantics.
pub struct VecEnv<B: Batch> {
    batch: B,
    task: Arc<dyn Task>,
    eval: Box<dyn Evaluate<B>>,
    config: EnvConfig,
    dt: f64,
    max_steps: usize,
    ctrl_range: Vec<[f64; 2]>,
    rngs: Vec<EnvRng>,
    elapsed: Vec<usize>,
    pending: Vec<bool>,
    ctrl: Vec<f64>,
    obs: Vec<f32>,
    reward: Vec<f32>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    terms: Vec<f32>,
    final_obs: Vec<f32>,
    has_final: Vec<bool>,
    episode_return: Vec<f64>,
    episode_length: Vec<usize>,
    mask: Vec<bool>,
    /// Sampled start states (num_envs × nq, num_envs × nv; rows of reset environments).
    reset_q: Vec<f64>,
    reset_v: Vec<f64>,
    fresh: Vec<bool>,
    failures: u64,
    last_failure: Option<String>,
    started: bool,
    times: StepTimes,
}

impl<B: Batch> std::fmt::Debug for VecEnv<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VecEnv")
            .field("task", &self.task.spec().name)
            .field("num_envs", &self.num_envs())
            .field("dt", &self.dt)
            .finish_non_exhaustive()
    }
}

impl<B: Batch + Sync> VecEnv<B> {
    /// An environment over `batch` (one environment per world) evaluated on
    /// the host. The batch's mode sets the physics; its current states are
    /// replaced at [`reset`](Self::reset).
    pub fn new(batch: B, task: Arc<dyn Task>, config: EnvConfig) -> Result<Self, RlError> {
        let dt = Self::step_duration(batch.model(), task.as_ref(), &config)?;
        let eval = Box::new(HostEvaluator::new(batch.model(), task.as_ref(), batch.nworld(), dt));
        Self::with_evaluator(batch, task, config, eval)
    }
}

impl<B: Batch> VecEnv<B> {
    /// Duration (s) of an environment step of `task` on `model` under `config`.
    pub fn step_duration(model: &Model, task: &dyn Task, config: &EnvConfig) -> Result<f64, RlError> {
        let frame_skip = config.frame_skip.unwrap_or(task.spec().frame_skip);
        if frame_skip == 0 {
            return Err(RlError::Config("frame_skip must be at least 1".into()));
        }
        Ok(frame_skip as f64 * model.options.timestep)
    }

    /// [`VecEnv::new`] with a given evaluator (e.g. a device evaluator).
    pub fn with_evaluator(
        batch: B,
        task: Arc<dyn Task>,
        config: EnvConfig,
        eval: Box<dyn Evaluate<B>>,
    ) -> Result<Self, RlError> {
        let model = batch.model().clone();
        let dt = Self::step_duration(&model, task.as_ref(), &config)?;
        let spec = task.spec().clone();
        let max_steps = config.max_episode_steps.unwrap_or(spec.max_episode_steps);
        if max_steps == 0 {
            return Err(RlError::Config("max_episode_steps must be at least 1".into()));
        }
        let n = batch.nworld();
        if n == 0 {
            return Err(RlError::Config("the batch has no worlds".into()));
        }
        let (nq, nv, nu) = (model.nq, model.nv, model.nu());
        let ctrl_range =
            model.actuators.iter().map(|a| a.ctrl_range.unwrap_or([f64::NEG_INFINITY, f64::INFINITY])).collect();
        let nt = spec.reward_terms.len();
        let first_env = config.first_env;
        Ok(Self {
            batch,
            task,
            eval,
            config,
            dt,
            max_steps,
            ctrl_range,
            rngs: (0..n).map(|i| EnvRng::new(0, first_env + i)).collect(),
            elapsed: vec![0; n],
            pending: vec![false; n],
            ctrl: vec![0.0; n * nu],
            obs: vec![0.0; n * spec.obs_dim],
            reward: vec![0.0; n],
            terminated: vec![false; n],
            truncated: vec![false; n],
            terms: vec![0.0; n * nt],
            final_obs: vec![0.0; n * spec.obs_dim],
            has_final: vec![false; n],
            episode_return: vec![0.0; n],
            episode_length: vec![0; n],
            mask: vec![false; n],
            reset_q: vec![0.0; n * nq],
            reset_v: vec![0.0; n * nv],
            fresh: vec![true; n],
            failures: 0,
            last_failure: None,
            started: false,
            times: StepTimes::default(),
        })
    }

    /// Number of environments.
    pub fn num_envs(&self) -> usize {
        self.elapsed.len()
    }
    /// Observation size.
    pub fn obs_dim(&self) -> usize {
        self.task.spec().obs_dim
    }
    /// Action size (the model's actuators).
    pub fn act_dim(&self) -> usize {
        self.ctrl_range.len()
    }
    /// Action bounds per actuator: the `ctrlrange` (±∞ when unlimited).
    pub fn action_bounds(&self) -> &[[f64; 2]] {
        &self.ctrl_range
    }
    /// Duration of an environment step (s).
    pub fn dt(&self) -> f64 {
        self.dt
    }
    /// Episode length limit (steps).
    pub fn max_episode_steps(&self) -> usize {
        self.max_steps
    }
    /// The task.
    pub fn task(&self) -> &Arc<dyn Task> {
        &self.task
    }
    /// The batch (statistics, statuses).
    pub fn batch(&self) -> &B {
        &self.batch
    }
    /// The batch, mutable: e.g. per-world parameters for domain
    /// randomization ([`Batch::set_params`]; resets keep them). Changing
    /// states or clocks here bypasses the environments' bookkeeping.
    pub fn batch_mut(&mut self) -> &mut B {
        &mut self.batch
    }
    /// The settings.
    pub fn config(&self) -> &EnvConfig {
        &self.config
    }
    /// Observations of the last reset or step (num_envs × obs_dim).
    pub fn obs(&self) -> &[f32] {
        &self.obs
    }
    /// Reward terms of the last step (num_envs × n_terms, named by the task's
    /// [`reward_terms`](super::TaskSpec::reward_terms)); zeros for environments reset in that step.
    pub fn reward_terms(&self) -> &[f32] {
        &self.terms
    }
    /// Same-step autoreset: the final observations of the episodes that ended
    /// in the last step (num_envs × obs_dim; rows valid where
    /// [`has_final_obs`](Self::has_final_obs)).
    pub fn final_obs(&self) -> &[f32] {
        &self.final_obs
    }
    /// Which rows of [`final_obs`](Self::final_obs) are valid.
    pub fn has_final_obs(&self) -> &[bool] {
        &self.has_final
    }
    /// Undiscounted return of each environment's current episode so far
    /// (after a step that ended an episode: that episode's return).
    pub fn episode_returns(&self) -> &[f64] {
        &self.episode_return
    }
    /// Steps of each environment's current episode (after a step that ended
    /// an episode: that episode's length).
    pub fn episode_lengths(&self) -> &[usize] {
        &self.episode_length
    }
    /// The controls of the last step (num_envs × act_dim): the actions
    /// clipped to the control ranges (zeros for environments reset in it).
    pub fn controls(&self) -> &[f64] {
        &self.ctrl
    }
    /// Episodes cut because the simulator failed their world, and the last reason.
    pub fn failures(&self) -> (u64, Option<&str>) {
        (self.failures, self.last_failure.as_deref())
    }
    /// Where the steps' time went since the last [`Self::reset_step_times`].
    pub fn step_times(&self) -> StepTimes {
        self.times
    }
    /// Zeroes [`Self::step_times`].
    pub fn reset_step_times(&mut self) {
        self.times = StepTimes::default();
    }

    /// Resets every environment. With a seed, environment i draws from
    /// [`EnvRng::new(seed, first_env + i)`](EnvRng::new) from now on
    /// ([`EnvConfig::first_env`]); without, the streams continue (seed 0 if
    /// never seeded). Returns the observations.
    pub fn reset(&mut self, seed: Option<u64>) -> Result<&[f32], RlError> {
        if let Some(seed) = seed {
            let first = self.config.first_env;
            for (i, r) in self.rngs.iter_mut().enumerate() {
                *r = EnvRng::new(seed, first + i);
            }
        }
        self.reset_all()
    }

    /// Resets every environment, environment i drawing from
    /// [`EnvRng::new(seeds[i], 0)`](EnvRng::new) from now on: the stream of
    /// a one-environment [`VecEnv`] reset with that seed, whatever the
    /// environment's index (gymnasium's per-environment seeds; seeded
    /// evaluation episodes that do not depend on how they are packed).
    pub fn reset_with_seeds(&mut self, seeds: &[u64]) -> Result<&[f32], RlError> {
        if seeds.len() != self.num_envs() {
            return Err(RlError::Config(format!(
                "reset_with_seeds: {} seeds for {} environments",
                seeds.len(),
                self.num_envs()
            )));
        }
        for (r, &s) in self.rngs.iter_mut().zip(seeds) {
            *r = EnvRng::new(s, 0);
        }
        self.reset_all()
    }

    fn reset_all(&mut self) -> Result<&[f32], RlError> {
        self.mask.fill(true);
        self.reset_masked(true)?;
        self.truncated.fill(false);
        self.terminated.fill(false);
        self.reward.fill(0.0);
        self.terms.fill(0.0);
        self.has_final.fill(false);
        self.pending.fill(false);
        self.episode_return.fill(0.0);
        self.episode_length.fill(0);
        self.started = true;
        Ok(&self.obs)
    }

    /// Starts a new episode of environment `env` at the given state (q: nq,
    /// v: nv) instead of a sampled one (e.g. a curriculum's start states);
    /// its row of [`obs`](Self::obs) becomes the first observation. Other
    /// environments are not touched.
    pub fn reset_env_to(&mut self, env: usize, q: &[f64], v: &[f64]) -> Result<(), RlError> {
        let n = self.num_envs();
        if env >= n {
            return Err(RlError::Batch(crate::batch::BatchError::World { world: env, nworld: n }));
        }
        self.batch.reset_world(env, q, v)?;
        let nu = self.act_dim();
        self.ctrl[env * nu..(env + 1) * nu].fill(0.0);
        self.elapsed[env] = 0;
        self.fresh[env] = true;
        self.pending[env] = false;
        self.mask.fill(false);
        self.mask[env] = true;
        let out = EvalOut {
            obs: &mut self.obs,
            reward: &mut self.reward,
            terminated: &mut self.terminated,
            terms: &mut self.terms,
        };
        self.eval.evaluate(&self.batch, self.task.as_ref(), EvalKind::Reset, &self.ctrl, &self.mask, out)
    }

    /// Samples and sets new states for the environments in `mask`, then
    /// evaluates their first observations: in one [`Batch::reset_worlds`]
    /// (`all`: [`Batch::reset_worlds_all`]), without allocating.
    fn reset_masked(&mut self, all: bool) -> Result<(), RlError> {
        let model = self.batch.model().clone();
        let (nq, nv) = (model.nq, model.nv);
        for i in 0..self.mask.len() {
            if !self.mask[i] {
                continue;
            }
            let (q, v) = (&mut self.reset_q[i * nq..(i + 1) * nq], &mut self.reset_v[i * nv..(i + 1) * nv]);
            q.copy_from_slice(&model.qpos0);
            v.fill(0.0);
            self.task.reset(&mut self.rngs[i], q, v);
            self.elapsed[i] = 0;
            // The finished episode's return and length stay readable until the next step.
            self.fresh[i] = true;
        }
        if all {
            self.batch.reset_worlds_all(&self.reset_q, &self.reset_v)?;
        } else {
            self.batch.reset_worlds(&self.mask, &self.reset_q, &self.reset_v)?;
        }
        let out = EvalOut {
            obs: &mut self.obs,
            reward: &mut self.reward,
            terminated: &mut self.terminated,
            terms: &mut self.terms,
        };
        self.eval.evaluate(&self.batch, self.task.as_ref(), EvalKind::Reset, &self.ctrl, &self.mask, out)
    }

    /// Clips `actions` (num_envs × act_dim) to the control ranges into the
    /// controls; environments about to be reset get zero controls.
    fn set_controls(&mut self, actions: &[f32]) -> Result<(), RlError> {
        let nu = self.act_dim();
        let expected = self.num_envs() * nu;
        if actions.len() != expected {
            return Err(RlError::Length { what: "actions", expected, got: actions.len() });
        }
        for i in 0..self.num_envs() {
            for k in 0..nu {
                let a = actions[i * nu + k];
                if !a.is_finite() && !self.pending[i] {
                    return Err(RlError::Action { env: i, actuator: k, value: a });
                }
                let [lo, hi] = self.ctrl_range[k];
                self.ctrl[i * nu + k] = if self.pending[i] { 0.0 } else { (a as f64).clamp(lo, hi) };
            }
        }
        self.batch.set_ctrl_all(&self.ctrl)?;
        Ok(())
    }

    /// Steps every environment with `actions` (num_envs × act_dim, clipped
    /// to the control ranges), resetting finished ones as the autoreset
    /// mode says.
    pub fn step(&mut self, actions: &[f32]) -> Result<Step<'_>, RlError> {
        if !self.started {
            return Err(RlError::NotReset);
        }
        let t0 = Instant::now();
        self.set_controls(actions)?;
        let t1 = Instant::now();
        self.batch.advance(self.dt)?;
        let t2 = Instant::now();
        let out = EvalOut {
            obs: &mut self.obs,
            reward: &mut self.reward,
            terminated: &mut self.terminated,
            terms: &mut self.terms,
        };
        self.eval.evaluate(&self.batch, self.task.as_ref(), EvalKind::Step, &self.ctrl, &self.mask, out)?;
        let t3 = Instant::now();
        self.times.steps += 1;
        self.times.controls += (t1 - t0).as_secs_f64();
        self.times.advance += (t2 - t1).as_secs_f64();
        self.times.evaluate += (t3 - t2).as_secs_f64();
        let n = self.num_envs();
        let nt = self.task.spec().reward_terms.len();
        self.has_final.fill(false);
        for i in 0..n {
            if self.pending[i] {
                continue;
            }
            if self.fresh[i] {
                self.episode_return[i] = 0.0;
                self.episode_length[i] = 0;
                self.fresh[i] = false;
            }
            self.elapsed[i] += 1;
            self.truncated[i] = self.elapsed[i] >= self.max_steps;
            if let WorldStatus::Failed { time, reason } = self.batch.status(i) {
                self.truncated[i] = true;
                self.failures += 1;
                self.last_failure = Some(format!("environment {i}, t = {time:.4} s: {reason}"));
            }
            self.episode_return[i] += self.reward[i] as f64;
            self.episode_length[i] += 1;
        }
        // Resets: the pending ones (next-step) or the ones that just ended (same-step).
        let od = self.obs_dim();
        let same_step = self.config.autoreset == Autoreset::SameStep;
        for i in 0..n {
            let ended = self.terminated[i] || self.truncated[i];
            self.mask[i] = if same_step { ended && !self.pending[i] } else { self.pending[i] };
            if same_step && self.mask[i] {
                self.final_obs[i * od..(i + 1) * od].copy_from_slice(&self.obs[i * od..(i + 1) * od]);
                self.has_final[i] = true;
            }
        }
        let resets = self.mask.iter().filter(|&&m| m).count();
        if resets > 0 {
            self.times.reset_envs += resets as u64;
            self.reset_masked(false)?;
        }
        for i in 0..n {
            if !same_step && self.pending[i] {
                // The reset step of next-step autoreset.
                self.reward[i] = 0.0;
                self.terminated[i] = false;
                self.truncated[i] = false;
                self.terms[i * nt..(i + 1) * nt].fill(0.0);
                self.pending[i] = false;
            } else if !same_step {
                self.pending[i] = self.terminated[i] || self.truncated[i];
            }
        }
        self.times.resets += t3.elapsed().as_secs_f64();
        Ok(Step { obs: &self.obs, reward: &self.reward, terminated: &self.terminated, truncated: &self.truncated })
    }
}
