//! Reinforcement learning: vectorized environments over any [`Batch`](crate::batch::Batch)
//! (CPU f64/f32, GPU) with gymnasium's interface, and the seven gymnasium
//! v5 MuJoCo tasks ([`tasks`]).
//!
//! A [`VecEnv`] steps `num_envs` worlds of one model together. One
//! environment step holds the (clipped) actions constant as controls for
//! `frame_skip × timestep` seconds of simulated time, integrated by the
//! batch's [`Mode`](crate::integrator::Mode): fixed steps, or CENIC error
//! control with the environment step as the control interval. Then a
//! [`Task`] reads each world's state and writes its observation, reward,
//! reward terms and termination flag.
//!
//! Every array is contiguous and world-first, allocated once:
//! observations `(num_envs, obs_dim)` f32, actions `(num_envs, act_dim)`
//! f32, rewards `(num_envs,)` f32, terminated / truncated `(num_envs,)`
//! bool, reward terms `(num_envs, n_terms)` f32. Stepping allocates nothing
//! per environment (resets included, on [`CpuBatch`](crate::batch::CpuBatch)).
//!
//! Semantics (gymnasium ≥ 1.0):
//! - **Autoreset** ([`Autoreset`]): by default *next-step* (gymnasium's
//!   `AutoresetMode.NEXT_STEP`): the step that ends an episode returns that
//!   episode's final observation with `terminated` or `truncated` set; the
//!   next call ignores that environment's action, resets it and returns
//!   its first observation with reward 0 and both flags false. In
//!   *same-step* mode the ending step resets at once: it returns the new
//!   episode's first observation and puts the final one in
//!   [`VecEnv::final_obs`] (flagged by [`VecEnv::has_final_obs`]).
//! - **Truncation**: `truncated` is set when an episode reaches
//!   `max_episode_steps` (gymnasium's `TimeLimit`, which may coincide with
//!   `terminated`), and when the simulator failed the world (its
//!   [`WorldStatus`](crate::batch::WorldStatus) is not Ok; counted in
//!   [`VecEnv::failures`]).
//! - **Seeds**: `reset(Some(seed))` gives environment i its own stream
//!   [`EnvRng::new(seed, first_env + i)`](EnvRng::new) (`first_env`: 0,
//!   or the offset of a shard of a larger environment, [`EnvConfig::first_env`]);
//!   [`VecEnv::reset_with_seeds`] one seed per environment; later resets
//!   continue the streams. The same seed and actions give the same rollout on the same
//!   backend (bit for bit). The draws are not numpy's: same distributions,
//!   not the same numbers as gymnasium.
//! - **Actions** are clipped to each actuator's `ctrlrange` before use
//!   (rewards see the clipped action; gymnasium's environments see the
//!   raw one unless wrapped in `ClipAction`). NaN actions are an error.
//!
//! Differences from gymnasium + MuJoCo that a task's numbers show:
//! - Terms are evaluated at the state after the step. MuJoCo's `mj_step`
//!   integrates after computing kinematics, so gymnasium's body positions,
//!   `cinert` and `cvel` after a step describe the state one physics
//!   substep earlier than its `qpos`.
//! - Contact forces (`cfrc_ext` in Ant and Humanoid, the slider's
//!   `qfrc_constraint` in Inverted Double Pendulum) come from cenic's
//!   contact model: see [`EnvState::body_wrench`] and [`mujoco::cfrc_ext`].
//! - States given to the batch have their quaternions normalised (a reset's
//!   noisy free-joint quaternion is normalised; MuJoCo keeps it raw in
//!   `qpos` until its first step).

mod env;
pub mod mujoco;
mod rng;
pub mod tasks;

pub use env::{Autoreset, EnvConfig, EvalKind, EvalOut, Evaluate, HostEvaluator, Physics, Step, StepTimes, VecEnv};
pub use rng::EnvRng;

use crate::batch::BatchError;
use crate::dynamics::Data;
use crate::model::{Model, ModelError};

/// `count` arrays of uniform random actions for `n` environments (n × nu
/// each), within each actuator's `ctrlrange` ([−1, 1] where it has none),
/// from one Xoshiro256++ stream seeded with `seed`: a reproducible random
/// policy for benchmarks and tests (`tools/rl_throughput.rs` cycles 16
/// of them with seed n).
pub fn uniform_actions(model: &Model, n: usize, count: usize, seed: u64) -> Vec<Vec<f32>> {
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::{RngExt, SeedableRng};
    let nu = model.nu();
    let bounds: Vec<[f64; 2]> = model.actuators.iter().map(|a| a.ctrl_range.unwrap_or([-1.0, 1.0])).collect();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            (0..n * nu)
                .map(|k| {
                    let [lo, hi] = bounds[k % nu];
                    rng.random_range(lo..hi) as f32
                })
                .collect()
        })
        .collect()
}

/// Errors of environment construction and stepping.
#[derive(Debug, thiserror::Error)]
pub enum RlError {
    /// A batch call failed.
    #[error("batch: {0}")]
    Batch(#[from] BatchError),
    /// The model could not be loaded.
    #[error("model: {0}")]
    Model(#[from] ModelError),
    /// A slice of the wrong length.
    #[error("{what}: expected {expected} values, got {got}")]
    Length {
        /// Which argument.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// A non-finite action.
    #[error("action of environment {env}, actuator {actuator} is {value}")]
    Action {
        /// Environment index.
        env: usize,
        /// Actuator index.
        actuator: usize,
        /// The value.
        value: f32,
    },
    /// A task that does not fit the model (wrong sizes or missing names).
    #[error("task {task}: {message}")]
    Task {
        /// Task name.
        task: String,
        /// What does not fit.
        message: String,
    },
    /// An unknown task name.
    #[error("unknown task '{0}' (known: {known})", known = tasks::NAMES.join(", "))]
    UnknownTask(String),
    /// A bad setting.
    #[error("{0}")]
    Config(String),
    /// Step called before reset.
    #[error("step before reset: call reset first")]
    NotReset,
}

/// What a task needs from the simulator beyond (q, v) and kinematics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Contact wrenches on the bodies ([`EnvState::body_wrench`]).
    pub contact_forces: bool,
    /// Generalized constraint forces ([`EnvState::qfrc_constraint`]).
    pub constraint_forces: bool,
    /// The model's sensor values ([`EnvState::sensordata`]; the batch must
    /// compute them, as [`CpuBatch`](crate::batch::CpuBatch) and
    /// [`GpuBatch`](crate::gpu::GpuBatch) do).
    pub sensordata: bool,
}

/// A task's sizes and defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskSpec {
    /// Name (the gymnasium id for the built-in tasks, e.g. `Ant-v5`).
    pub name: String,
    /// Observation size.
    pub obs_dim: usize,
    /// Physics time steps of the model per environment step (the
    /// environment step lasts `frame_skip × timestep` seconds).
    pub frame_skip: usize,
    /// Episode length after which `truncated` is set.
    pub max_episode_steps: usize,
    /// Values per environment that the task keeps from one state to the
    /// next ([`Task::carry`]), e.g. the position a forward reward differences.
    pub carry_dim: usize,
    /// Names of the reward terms [`Task::reward`] writes (gymnasium's `info` keys).
    pub reward_terms: Vec<&'static str>,
    /// Forces the task reads.
    pub needs: Needs,
}

/// One environment's state as a task sees it. Units SI; world frame.
#[derive(Clone, Copy, Debug)]
pub struct EnvState<'a> {
    /// The model.
    pub model: &'a Model,
    /// q (nq) and v (nv) with kinematics and body velocities evaluated at
    /// them ([`crate::dynamics::kinematics`], [`crate::dynamics::velocities`]):
    /// body and site poses, `xipos`, `cinert`, `cvel` (about `body_ref`).
    pub data: &'a Data<f64>,
    /// The controls applied over the step that led here (nu, clipped to
    /// `ctrlrange`); zeros right after a reset.
    pub ctrl: &'a [f64],
    /// Contact wrench on each body over the last physics step (nbody × 6):
    /// [torque about the world origin (N·m), force (N)], the impulse of
    /// cenic's convex contact solve for that step divided by its duration
    /// (for CENIC, the last accepted half step of the environment step).
    /// Zeros after a reset, and on backends that do not provide them.
    pub body_wrench: &'a [f64],
    /// Generalized force of contacts and joint limits over the same step (nv; N or N·m).
    pub qfrc_constraint: &'a [f64],
    /// The model's sensor values (nsensordata, MuJoCo's `sensordata`
    /// layout, each sensor's units) at this state: after a step as the
    /// batch computed them at its end ([`Batch::sensordata`](crate::batch::Batch::sensordata)),
    /// after a reset at the reset state with zero controls and no contacts.
    /// Empty unless the task asks for them ([`Needs::sensordata`]).
    pub sensordata: &'a [f64],
    /// Duration of an environment step (s).
    pub dt: f64,
}

/// A task: observation, reward, termination and reset distribution,
/// computed from the state. Implement it to train on your own tasks
/// (built-in examples in [`tasks`]).
///
/// A task is built for one model and must be `Send + Sync`: environments
/// are evaluated in parallel. All methods are called per environment;
/// slices have the lengths given by [`Task::spec`].
pub trait Task: Send + Sync {
    /// Sizes, defaults and reward-term names.
    fn spec(&self) -> &TaskSpec;

    /// Samples an initial state: `qpos` (nq) arrives as the model's qpos0
    /// and `qvel` (nv) as zeros; draw noise from `rng` only (the same
    /// draws give the same state).
    fn reset(&self, rng: &mut EnvRng, qpos: &mut [f64], qvel: &mut [f64]);

    /// Writes the observation (obs_dim) of state `s`.
    fn observe(&self, s: &EnvState, obs: &mut [f64]);

    /// Writes the values (carry_dim) the next [`Task::reward`] compares
    /// against, at state `s` (after each reset and each step).
    fn carry(&self, s: &EnvState, carry: &mut [f64]) {
        let _ = (s, carry);
    }

    /// The reward of the step that ended in state `s`, given the previous
    /// state's `carry`; writes the reward terms (one per
    /// [`TaskSpec::reward_terms`]) and returns (reward, terminated).
    fn reward(&self, s: &EnvState, carry: &[f64], terms: &mut [f64]) -> (f64, bool);

    /// The built-in task this is, for batches that evaluate tasks on their
    /// own device (the GPU batch); `None` for user tasks, which are
    /// evaluated on the host.
    fn builtin(&self) -> Option<&tasks::Builtin> {
        None
    }
}
