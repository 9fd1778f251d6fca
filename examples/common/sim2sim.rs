//! Sim-to-sim against gymnasium + MuJoCo: replays the random-action
//! rollouts of `tests/fixtures/gym_sim2sim.json` (`scripts/gym_sim2sim.py`)
//! in cenic from MuJoCo's reset states and counts the environment steps
//! until the observations part. Shared by `tools/gym_sim2sim.rs` and
//! `tests/mujoco_semantics.rs` (included with `#[path]`).
#![allow(dead_code)]

use cenic::batch::CpuBatch;
use cenic::rl::{EnvConfig, Physics, VecEnv, tasks};
use serde_json::Value;
use std::path::Path;

/// Observations part when an entry differs by more than this.
pub const PART: f64 = 1e-2;

/// The fixture file.
pub fn load() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/gym_sim2sim.json");
    let text = std::fs::read_to_string(path).expect("tests/fixtures/gym_sim2sim.json (scripts/gym_sim2sim.py)");
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

/// One rollout's comparison: the steps until the observations part (the
/// rollout's length when they never do) and the largest difference seen
/// before.
#[derive(Clone, Copy, Debug)]
pub struct Parting {
    /// Environment steps with all observation entries within [`PART`].
    pub steps: usize,
    /// Steps in the rollout.
    pub of: usize,
}

/// Replays every rollout of `task` (a fixture entry) in cenic with
/// `physics`; `None` when the task cannot be built (no shared models).
pub fn compare(task: &Value, physics: &Physics, models: &Path) -> Option<Vec<Parting>> {
    let id = task["id"].as_str().unwrap();
    let (model, builtin) = tasks::make(id, models).ok()?;
    let columns: Vec<usize> =
        task["columns"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap() as usize).collect();
    let mut out = vec![];
    for r in task["rollouts"].as_array().unwrap() {
        let batch = CpuBatch::<f64>::new(model.clone(), 1, physics.mode(&model));
        // No time limit: a rollout runs past an episode's length.
        let config = EnvConfig { max_episode_steps: Some(1 << 30), ..Default::default() };
        let mut env = VecEnv::new(batch, builtin.clone(), config).unwrap();
        env.reset(Some(0)).unwrap();
        env.reset_env_to(0, &floats(&r["qpos0"]), &floats(&r["qvel0"])).unwrap();
        let actions = r["actions"].as_array().unwrap();
        let obs_mj = r["obs"].as_array().unwrap();
        let mut steps = actions.len();
        for (k, (a, o)) in actions.iter().zip(obs_mj).enumerate() {
            let a: Vec<f32> = floats(a).iter().map(|x| *x as f32).collect();
            env.step(&a).unwrap();
            // Re-seat the state so that a termination never resets the
            // environment (the MuJoCo rollout runs on through it).
            let (q, v) = {
                let w = env.batch().world(0);
                (w.sim.data.q.clone(), w.sim.data.v.clone())
            };
            env.reset_env_to(0, &q, &v).unwrap();
            let ours = env.obs();
            if std::env::var("SIM2SIM_DEBUG").is_ok() && k < 2 {
                let o = floats(o);
                let d: Vec<String> =
                    columns.iter().zip(&o).map(|(&c, x)| format!("{:+.4}/{:+.4}", ours[c], x)).collect();
                eprintln!("step {k}: {}", d.join(" "));
            }
            let parted = columns.iter().zip(floats(o)).any(|(&c, x)| !((ours[c] as f64 - x).abs() <= PART));
            if parted {
                steps = k;
                break;
            }
        }
        out.push(Parting { steps, of: actions.len() });
    }
    Some(out)
}

/// Mean steps until parting.
pub fn mean_steps(p: &[Parting]) -> f64 {
    p.iter().map(|x| x.steps as f64).sum::<f64>() / p.len() as f64
}
