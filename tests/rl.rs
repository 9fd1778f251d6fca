//! `cenic::rl`: gymnasium v5 parity of the built-in tasks (fixtures from
//! `scripts/gym_fixtures.py`), determinism for a fixed seed (and thread
//! count), next-step and same-step autoreset, action clipping, the contact
//! and constraint forces the tasks observe, and user tasks reading sensors.

mod common;
mod mujoco_fixture;

use cenic::batch::{Batch, CpuBatch};
use cenic::dynamics::{self, Data};
use cenic::rl::tasks::{self, Builtin, Kind};
use cenic::rl::{Autoreset, EnvConfig, EnvRng, EnvState, Needs, Physics, RlError, Task, TaskSpec, VecEnv};
use mujoco_fixture::{f, u, vec};
use std::sync::Arc;

fn models_dir() -> Option<std::path::PathBuf> {
    common::shared_file("models/gymnasium")
}

/// Evaluates `task` at (q, v) with controls `ctrl` and no forces: the
/// observation, and the carry.
fn eval(task: &Builtin, model: &cenic::Model, q: &[f64], v: &[f64], ctrl: &[f64], dt: f64) -> (Data<f64>, Vec<f64>) {
    let mut d = Data::<f64>::new(model);
    d.set_state(q, v);
    dynamics::kinematics(model, &mut d);
    dynamics::velocities(model, &mut d);
    let spec = task.spec();
    let wrench = vec![0.0; model.bodies.len() * 6];
    let qfrc = vec![0.0; model.nv];
    let s = EnvState { model, data: &d, ctrl, body_wrench: &wrench, qfrc_constraint: &qfrc, sensordata: &[], dt };
    let mut obs = vec![f64::NAN; spec.obs_dim];
    task.observe(&s, &mut obs);
    (d, obs)
}

#[test]
fn gymnasium_v5_parity() {
    let Some(dir) = models_dir() else { return };
    let fx = mujoco_fixture::load_from(".", "gym_v5");
    let mut checked = 0;
    for t in fx["tasks"].as_array().unwrap() {
        let id = t["id"].as_str().unwrap();
        let (model, task) = tasks::make(id, &dir).unwrap();
        let spec = task.spec();
        let dt = f(&t["dt"]);
        // Sizes, defaults and the model (Pusher-v5's derived masses included).
        assert_eq!(spec.obs_dim, u(&t["obs_dim"]), "{id}: obs_dim");
        assert_eq!(spec.frame_skip, u(&t["frame_skip"]), "{id}: frame_skip");
        assert_eq!(spec.max_episode_steps, u(&t["max_episode_steps"]), "{id}: max_episode_steps");
        assert!((spec.frame_skip as f64 * model.options.timestep - dt).abs() < 1e-12, "{id}: dt");
        let mass = vec(&t["body_mass"]);
        assert_eq!(mass.len(), model.bodies.len(), "{id}: bodies");
        for (b, m) in mass.iter().enumerate() {
            let ours = model.bodies[b].mass;
            assert!((ours - m).abs() <= 1e-9 * m.max(1e-9), "{id}: body {b} mass {ours} vs MuJoCo {m}");
        }
        let (lo, hi) = (vec(&t["action_low"]), vec(&t["action_high"]));
        for (k, a) in model.actuators.iter().enumerate() {
            // gymnasium's action space is float32.
            let [l, h] = a.ctrl_range.unwrap();
            assert!((l - lo[k]).abs() < 1e-6 && (h - hi[k]).abs() < 1e-6, "{id}: actuator {k} range");
        }
        let dynamic: Vec<usize> = t["dynamics_columns"].as_array().unwrap().iter().map(u).collect();
        for (n, r) in t["transitions"].as_array().unwrap().iter().enumerate() {
            let action = vec(&r["action"]);
            let zero = vec![0.0; action.len()];
            let (d0, _) = eval(&task, &model, &vec(&r["qpos0"]), &vec(&r["qvel0"]), &zero, dt);
            let wrench = vec![0.0; model.bodies.len() * 6];
            let qfrc = vec![0.0; model.nv];
            let s0 = EnvState {
                model: &model,
                data: &d0,
                ctrl: &zero,
                body_wrench: &wrench,
                qfrc_constraint: &qfrc,
                sensordata: &[],
                dt,
            };
            let mut carry = vec![0.0; spec.carry_dim];
            task.carry(&s0, &mut carry);
            let (d1, obs) = eval(&task, &model, &vec(&r["qpos"]), &vec(&r["qvel"]), &action, dt);
            let want = vec(&r["obs"]);
            assert_eq!(obs.len(), want.len(), "{id}: observation size");
            for (k, (a, b)) in obs.iter().zip(&want).enumerate() {
                // Columns that depend on the contact dynamics are zero in both here (no step taken).
                let tol = if dynamic.contains(&k) { 0.0 } else { 1e-6 };
                assert!((a - b).abs() <= tol, "{id} transition {n}: obs[{k}] = {a}, gymnasium {b}");
            }
            let s1 = EnvState {
                model: &model,
                data: &d1,
                ctrl: &action,
                body_wrench: &wrench,
                qfrc_constraint: &qfrc,
                sensordata: &[],
                dt,
            };
            let mut terms = vec![f64::NAN; spec.reward_terms.len()];
            let (reward, terminated) = task.reward(&s1, &carry, &mut terms);
            let want_terms = r["terms"].as_object().unwrap();
            assert_eq!(want_terms.len(), terms.len(), "{id}: reward terms {:?}", spec.reward_terms);
            for (name, value) in spec.reward_terms.iter().zip(&terms) {
                let w = f(&want_terms[*name]);
                assert!((value - w).abs() <= 1e-6, "{id} transition {n}: {name} = {value}, gymnasium {w}");
            }
            let w = f(&r["reward"]);
            assert!((reward - w).abs() <= 1e-6, "{id} transition {n}: reward {reward}, gymnasium {w}");
            assert_eq!(terminated, r["terminated"].as_bool().unwrap(), "{id} transition {n}: terminated");
            checked += 1;
        }
    }
    assert!(checked >= 7 * 10, "only {checked} transitions checked");
}

fn cpu_env(name: &str, n: usize, physics: Physics, config: EnvConfig) -> Option<VecEnv<CpuBatch<f64>>> {
    let dir = models_dir()?;
    let (model, task) = tasks::make(name, &dir).unwrap();
    let batch = CpuBatch::<f64>::new(model.clone(), n, physics.mode(&model));
    Some(VecEnv::new(batch, task, config).unwrap())
}

/// Uniform random actions in [−1.5, 1.5]·range from a seeded generator.
fn actions(rng: &mut common::Rng, env: &VecEnv<CpuBatch<f64>>) -> Vec<f32> {
    let mut a = vec![0.0f32; env.num_envs() * env.act_dim()];
    for (k, x) in a.iter_mut().enumerate() {
        let [lo, hi] = env.action_bounds()[k % env.act_dim()];
        *x = rng.range(1.5 * lo, 1.5 * hi) as f32;
    }
    a
}

/// Obs, rewards and flags of `steps` random steps from `reset(seed)`.
fn rollout(name: &str, seed: u64, steps: usize, config: EnvConfig) -> Option<Vec<Vec<u32>>> {
    let mut env = cpu_env(name, 3, Physics::cenic(1e-2), config)?;
    let mut rng = common::Rng::new(7);
    let mut out = vec![env.reset(Some(seed)).unwrap().iter().map(|x| x.to_bits()).collect()];
    for _ in 0..steps {
        let a = actions(&mut rng, &env);
        let s = env.step(&a).unwrap();
        let mut row: Vec<u32> = s.obs.iter().chain(s.reward).map(|x| x.to_bits()).collect();
        row.extend(s.terminated.iter().chain(s.truncated).map(|&b| b as u32));
        out.push(row);
    }
    Some(out)
}

#[test]
fn same_seed_same_rollout() {
    let config = EnvConfig { max_episode_steps: Some(7), ..Default::default() };
    let Some(a) = rollout("Ant-v5", 3, 20, config.clone()) else { return };
    let b = rollout("Ant-v5", 3, 20, config.clone()).unwrap();
    assert_eq!(a, b, "same seed, same actions: bitwise the same observations, rewards and flags");
    // Independent of the thread count (environments are evaluated and stepped in parallel).
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let d = one.install(|| rollout("Ant-v5", 3, 20, config.clone())).unwrap();
    assert_eq!(a, d, "same seed on one thread: bitwise the same rollout");
    let c = rollout("Ant-v5", 4, 20, config).unwrap();
    assert_ne!(a[0], c[0], "another seed draws other initial states");
    // Different environments draw different initial states.
    let od = 105;
    assert_ne!(a[0][..od], a[0][od..2 * od]);
}

/// A vector environment split into shards (`EnvConfig::first_env`, as
/// `cenic.ray.RayVecEnv` splits one) draws what the whole draws: 5 Ant
/// environments against shards [0, 2) and [2, 5) under the same seed and
/// actions, bit for bit over 20 steps with autoresets (episodes of 7 steps);
/// `reset_with_seeds` gives environment i the stream of a one-environment
/// env reset with seeds[i], whatever its index.
#[test]
fn shards_with_first_env_step_as_the_whole() {
    let config = EnvConfig { max_episode_steps: Some(7), ..Default::default() };
    let Some(mut whole) = cpu_env("Ant-v5", 5, Physics::cenic(1e-2), config.clone()) else { return };
    let mut a = cpu_env("Ant-v5", 2, Physics::cenic(1e-2), config.clone()).unwrap();
    let mut b = cpu_env("Ant-v5", 3, Physics::cenic(1e-2), EnvConfig { first_env: 2, ..config.clone() }).unwrap();
    let (od, ad) = (whole.obs_dim(), whole.act_dim());
    let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
    let w0 = bits(whole.reset(Some(11)).unwrap());
    let mut parts = bits(a.reset(Some(11)).unwrap());
    parts.extend(bits(b.reset(Some(11)).unwrap()));
    assert_eq!(w0, parts, "first observations of the shards = the whole's");
    let mut rng = common::Rng::new(5);
    let mut ends = 0;
    for step in 0..20 {
        let u = actions(&mut rng, &whole);
        let sw = whole.step(&u).unwrap();
        let (ow, tw) = (bits(sw.obs), sw.truncated.to_vec());
        ends += tw.iter().filter(|&&t| t).count();
        let sa = a.step(&u[..2 * ad]).unwrap();
        let mut o = bits(sa.obs);
        let mut t = sa.truncated.to_vec();
        let sb = b.step(&u[2 * ad..]).unwrap();
        o.extend(bits(sb.obs));
        t.extend_from_slice(sb.truncated);
        assert_eq!(ow, o, "step {step}: shard observations differ from the whole's");
        assert_eq!(tw, t, "step {step}: truncations");
    }
    assert!(ends >= 10, "only {ends} episode ends: the autoresets were not exercised");
    // Per-environment seeds: environment 3 seeded 9 starts where a
    // one-environment env reset with seed 9 starts, whatever the others' seeds.
    let s = bits(whole.reset_with_seeds(&[1, 2, 3, 9, 4]).unwrap());
    let mut one = cpu_env("Ant-v5", 1, Physics::cenic(1e-2), config).unwrap();
    let o = bits(one.reset(Some(9)).unwrap());
    assert_eq!(s[3 * od..4 * od], o[..], "reset_with_seeds: environment 3's stream");
    assert_ne!(s[2 * od..3 * od], s[3 * od..4 * od]);
    let e = whole.reset_with_seeds(&[1, 2]).unwrap_err().to_string();
    assert!(e.contains("2 seeds for 5 environments"), "{e}");
}

#[test]
fn next_step_autoreset() {
    let config = EnvConfig { max_episode_steps: Some(30), ..Default::default() };
    let Some(mut env) = cpu_env("InvertedPendulum-v5", 4, Physics::Fixed, config) else { return };
    env.reset(Some(1)).unwrap();
    // Full push to the right: the pole falls back past 0.2 rad within ~10 steps.
    let push = vec![3.0f32; 4];
    let mut ended_at = [None; 4];
    let mut since_reset = [0usize; 4];
    for t in 0..40 {
        let was_pending: Vec<bool> = ended_at.iter().map(|e| e == &Some(t - 1)).collect();
        let s = env.step(&push).unwrap();
        let (all_obs, reward) = (s.obs.to_vec(), s.reward.to_vec());
        let (terminated, truncated) = (s.terminated.to_vec(), s.truncated.to_vec());
        for i in 0..4 {
            let obs = &all_obs[i * 4..i * 4 + 4];
            if was_pending[i] {
                // The reset step: first observation of a new episode, reward 0, no flags.
                assert_eq!(reward[i], 0.0, "env {i} step {t}: reset step reward");
                assert!(!terminated[i] && !truncated[i], "env {i} step {t}: reset step flags");
                assert!(obs.iter().all(|x| x.abs() <= 0.01), "env {i} step {t}: reset observation {obs:?}");
                assert_eq!(env.episode_lengths()[i], since_reset[i], "the finished episode's length stays");
                since_reset[i] = 0;
                continue;
            }
            since_reset[i] += 1;
            assert_eq!(env.episode_lengths()[i], since_reset[i]);
            if terminated[i] {
                // The final observation of the episode: pole past 0.2 rad, reward 0.
                assert!(obs[1].abs() > 0.2, "env {i} step {t}: terminal observation {obs:?}");
                assert_eq!(reward[i], 0.0);
                ended_at[i] = Some(t);
            } else {
                assert_eq!(reward[i], 1.0);
                assert!(!truncated[i]);
            }
        }
    }
    assert!(ended_at.iter().all(|e| e.is_some()), "every pendulum fell: {ended_at:?}");

    // Truncation at the episode limit, with a reset on the next step.
    let config = EnvConfig { max_episode_steps: Some(5), ..Default::default() };
    let mut env = cpu_env("HalfCheetah-v5", 2, Physics::Fixed, config).unwrap();
    env.reset(Some(2)).unwrap();
    let zero = vec![0.0f32; 12];
    for t in 1..=12 {
        let s = env.step(&zero).unwrap();
        let truncated = t % 6 == 5;
        assert_eq!(s.truncated, &[truncated, truncated], "step {t}");
        assert_eq!(s.terminated, &[false, false]);
        if t % 6 == 0 {
            assert_eq!(s.reward, &[0.0, 0.0], "step {t}: reset step");
        }
    }
}

#[test]
fn same_step_autoreset() {
    let config = EnvConfig { autoreset: Autoreset::SameStep, ..Default::default() };
    let Some(mut env) = cpu_env("InvertedPendulum-v5", 3, Physics::Fixed, config) else { return };
    env.reset(Some(5)).unwrap();
    let push = vec![-3.0f32; 3];
    let mut ends = 0;
    for t in 0..30 {
        let s = env.step(&push).unwrap();
        let (terminated, obs) = (s.terminated.to_vec(), s.obs.to_vec());
        for i in 0..3 {
            assert_eq!(env.has_final_obs()[i], terminated[i], "step {t}");
            if terminated[i] {
                ends += 1;
                let fin = &env.final_obs()[i * 4..i * 4 + 4];
                assert!(fin[1].abs() > 0.2, "final observation {fin:?}");
                assert!(obs[i * 4..i * 4 + 4].iter().all(|x| x.abs() <= 0.01), "new episode's first observation");
                assert!(env.episode_lengths()[i] >= 1, "the ended episode's length");
            }
        }
    }
    assert!(ends >= 3);
}

#[test]
fn actions_are_clipped_and_checked() {
    let Some(mut env) = cpu_env("Reacher-v5", 2, Physics::Fixed, EnvConfig::default()) else { return };
    env.reset(Some(0)).unwrap();
    let s = env.step(&[10.0, -0.5, -7.0, 0.25]).unwrap();
    let _ = s;
    // The worlds got the clipped controls (ctrlrange [−1, 1]) ...
    let batch = env.batch();
    let ctrl: Vec<f64> = (0..2).flat_map(|w| batch.world(w).sim.ctrl.clone()).collect();
    assert_eq!(ctrl, vec![1.0, -0.5, -1.0, 0.25]);
    // ... and the control cost is that of the clipped action (weight 1).
    let terms = env.reward_terms();
    assert!((terms[1] - -(1.0 + 0.25)).abs() < 1e-6, "{terms:?}");
    assert!((terms[3] - -(1.0 + 0.0625)).abs() < 1e-6, "{terms:?}");
    // Bad input names the environment and actuator.
    match env.step(&[0.0, 0.0, 0.0, f32::NAN]) {
        Err(RlError::Action { env: 1, actuator: 1, .. }) => {}
        other => panic!("expected a NaN action error, got {other:?}"),
    }
    match env.step(&[0.0; 3]) {
        Err(RlError::Length { expected: 4, got: 3, .. }) => {}
        other => panic!("expected a length error, got {other:?}"),
    }
}

#[test]
fn step_before_reset_is_an_error() {
    let Some(mut env) = cpu_env("HalfCheetah-v5", 1, Physics::Fixed, EnvConfig::default()) else { return };
    assert!(matches!(env.step(&[0.0; 6]), Err(RlError::NotReset)));
}

/// Ant resting on its legs: the contact forces the observation is built
/// from carry its weight, and MuJoCo's layout (torque about the tree's
/// centre of mass) makes the torques balance the forces' moments.
#[test]
fn ant_contact_forces_carry_its_weight() {
    let Some(dir) = models_dir() else { return };
    let (model, task) = tasks::make("Ant-v5", &dir).unwrap();
    let mut batch = CpuBatch::<f64>::new(model.clone(), 1, Physics::cenic(1e-3).mode(&model));
    batch.reset_world(0, &model.qpos0, &vec![0.0; model.nv]).unwrap();
    for _ in 0..40 {
        batch.advance(0.05).unwrap();
    }
    let nb = model.bodies.len();
    let mut wrench = vec![0.0; nb * 6];
    let mut qfrc = vec![0.0; model.nv];
    assert!(batch.constraint_forces(&mut wrench, &mut qfrc));
    let weight = model.total_mass() * 9.81;
    let fz: f64 = (0..nb).map(|b| wrench[b * 6 + 5]).sum();
    assert!((fz - weight).abs() < 0.02 * weight, "contact forces {fz} N vs weight {weight} N");
    // The free joint's generalized constraint force holds the weight too.
    assert!((qfrc[2] - weight).abs() < 0.02 * weight, "qfrc_constraint z {}", qfrc[2]);
    // In the observation (clipped to ±1 N per entry): the feet push up.
    let d = &batch.world(0).sim.data;
    let mut data = Data::<f64>::new(&model);
    data.set_state(&d.q, &d.v);
    dynamics::kinematics(&model, &mut data);
    dynamics::velocities(&model, &mut data);
    let ctrl = vec![0.0; model.nu()];
    let s = EnvState {
        model: &model,
        data: &data,
        ctrl: &ctrl,
        body_wrench: &wrench,
        qfrc_constraint: &qfrc,
        sensordata: &[],
        dt: 0.05,
    };
    let mut obs = vec![0.0; task.spec().obs_dim];
    task.observe(&s, &mut obs);
    let contact = &obs[27..];
    let up: f64 = contact.chunks(6).map(|r| r[5]).sum();
    assert!(up > 1.0 && contact.iter().all(|x| x.abs() <= 1.0), "clipped contact forces {contact:?}");
    let mut terms = vec![0.0; 4];
    let mut carry = vec![0.0; 2];
    task.carry(&s, &mut carry);
    task.reward(&s, &carry, &mut terms);
    let sq: f64 = contact.iter().map(|x| x * x).sum();
    assert!((terms[2] + 5e-4 * sq).abs() < 1e-12, "contact cost {} vs {}", terms[2], -5e-4 * sq);
}

/// The double pendulum's cart pushed against the end of its rail: the
/// slider's constraint force balances the motor (gear 500 N), and the
/// observation clips it to −10; away from the ends it is zero.
#[test]
fn double_pendulum_rail_end_constraint_force() {
    let Some(dir) = models_dir() else { return };
    let (model, task) = tasks::make("InvertedDoublePendulum-v5", &dir).unwrap();
    let mut batch = CpuBatch::<f64>::new(model.clone(), 2, Physics::cenic(1e-4).mode(&model));
    // World 0 in the middle of the rail, world 1 at its end (range ±1, margin 0.01); both pushed right.
    batch.reset_world(0, &[0.0, 0.0, 0.0], &[0.0; 3]).unwrap();
    batch.reset_world(1, &[0.995, 0.0, 0.0], &[0.0; 3]).unwrap();
    batch.set_ctrl_all(&[1.0, 1.0]).unwrap();
    batch.advance(0.05).unwrap();
    let mut wrench = vec![0.0; 2 * model.bodies.len() * 6];
    let mut qfrc = vec![0.0; 2 * 3];
    batch.constraint_forces(&mut wrench, &mut qfrc);
    assert_eq!(qfrc[0], 0.0, "no limit force in the middle of the rail");
    assert!((qfrc[3] + 500.0).abs() < 25.0, "limit force {} N against the 500 N motor", qfrc[3]);
    let w = batch.world(1);
    let mut data = Data::<f64>::new(&model);
    data.set_state(&w.sim.data.q, &w.sim.data.v);
    dynamics::kinematics(&model, &mut data);
    let nb = model.bodies.len();
    let s = EnvState {
        model: &model,
        data: &data,
        ctrl: &[1.0],
        body_wrench: &wrench[nb * 6..],
        qfrc_constraint: &qfrc[3..],
        sensordata: &[],
        dt: 0.05,
    };
    let mut obs = vec![0.0; 9];
    task.observe(&s, &mut obs);
    assert_eq!(obs[8], -10.0);
}

#[test]
fn unknown_task_and_model_mismatch_are_clear() {
    let Some(dir) = models_dir() else { return };
    let e = tasks::make("Hopper-v5", &dir).unwrap_err().to_string();
    assert!(e.contains("Hopper-v5") && e.contains("Ant-v5"), "{e}");
    let cheetah = tasks::load_model(Kind::HalfCheetah, &dir).unwrap();
    let e = Builtin::new(Kind::Reacher, &cheetah).unwrap_err().to_string();
    assert!(e.contains("Reacher-v5"), "{e}");
    let _ = Arc::new(cheetah);
}

/// A world the simulator fails (accuracy impossible at the minimum step)
/// truncates its episode, is counted with its reason, and runs again after
/// the autoreset.
#[test]
fn simulator_failure_truncates_and_resets() {
    let physics =
        Physics::Cenic(cenic::integrator::CenicParams { accuracy: 1e-12, min_step: 1e-3, ..Default::default() });
    let Some(mut env) = cpu_env("HalfCheetah-v5", 2, physics, EnvConfig::default()) else { return };
    env.reset(Some(0)).unwrap();
    let s = env.step(&[0.5; 12]).unwrap();
    assert_eq!(s.truncated, &[true, true]);
    assert_eq!(s.terminated, &[false, false]);
    let (count, reason) = env.failures();
    assert_eq!(count, 2);
    assert!(reason.unwrap().contains("accuracy"), "{reason:?}");
    // The reset step brings both worlds back.
    let s = env.step(&[0.0; 12]).unwrap();
    assert_eq!(s.truncated, &[false, false]);
    assert!(env.batch().status(0) == cenic::batch::WorldStatus::Ok);
}

/// A user task that observes the model's sensors: its observation is
/// `sensordata`, its reward the shoulder's `jointpos` sensor, and its
/// episodes last 3 steps.
struct SensorTask(TaskSpec);

impl Task for SensorTask {
    fn spec(&self) -> &TaskSpec {
        &self.0
    }
    fn reset(&self, rng: &mut EnvRng, qpos: &mut [f64], qvel: &mut [f64]) {
        rng.add_uniform(&mut qpos[7..], 0.5);
        rng.add_uniform(qvel, 0.5);
    }
    fn observe(&self, s: &EnvState, obs: &mut [f64]) {
        obs.copy_from_slice(s.sensordata);
    }
    fn reward(&self, s: &EnvState, _carry: &[f64], _terms: &mut [f64]) -> (f64, bool) {
        (s.sensordata[0], false)
    }
}

/// Tasks read `sensordata` after steps and after (auto)resets: the
/// observation is the batch's sensor values, and the `jointpos` /
/// `jointvel` sensors equal the state's coordinates (not a stale episode's).
#[test]
fn tasks_observe_sensordata() {
    let model = Arc::new(
        cenic::Model::from_mjcf_file(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/models/features/sensors.xml"))
            .unwrap(),
    );
    let ns = model.nsensordata;
    let spec = TaskSpec {
        name: "sensors".into(),
        obs_dim: ns,
        frame_skip: 10,
        max_episode_steps: 3,
        carry_dim: 0,
        reward_terms: vec![],
        needs: Needs { sensordata: true, ..Needs::default() },
    };
    let n = 2;
    let batch = CpuBatch::<f64>::new(model.clone(), n, Physics::cenic(1e-3).mode(&model));
    let mut env = VecEnv::new(batch, Arc::new(SensorTask(spec)), EnvConfig::default()).unwrap();
    // qpos 7 is the shoulder hinge; dof 7 the elbow (jointpos shoulder, jointvel elbow come first).
    let check = |env: &VecEnv<CpuBatch<f64>>, what: &str| {
        let (mut q, mut v, mut sd) = (vec![0.0; n * model.nq], vec![0.0; n * model.nv], vec![0.0; n * ns]);
        env.batch().qpos(&mut q);
        env.batch().qvel(&mut v);
        env.batch().sensordata(&mut sd).unwrap();
        for i in 0..n {
            let obs = &env.obs()[i * ns..(i + 1) * ns];
            assert!(
                (obs[0] as f64 - q[i * model.nq + 7]).abs() < 1e-6,
                "{what} env {i}: jointpos {} vs q {}",
                obs[0],
                q[i * model.nq + 7]
            );
            assert!(
                (obs[1] as f64 - v[i * model.nv + 7]).abs() < 1e-5,
                "{what} env {i}: jointvel {} vs v {}",
                obs[1],
                v[i * model.nv + 7]
            );
            for (k, (a, b)) in obs.iter().zip(&sd[i * ns..(i + 1) * ns]).enumerate() {
                // NaN in both for sensors cenic does not compute (the magnetometer).
                assert_eq!(a.to_bits(), (*b as f32).to_bits(), "{what} env {i}: sensordata[{k}] {a} vs {b}");
            }
        }
    };
    env.reset(Some(9)).unwrap();
    check(&env, "reset");
    assert!(env.obs()[0].abs() > 1e-3, "the reset moved the shoulder");
    let mut resets = 0;
    for t in 0..8 {
        let s = env.step(&[0.3, -0.5, 0.2, 0.1, 0.4, -0.2]).unwrap();
        let reward = s.reward.to_vec();
        let reset_step = t % 4 == 3;
        resets += reset_step as usize;
        check(&env, &format!("step {t}"));
        for (i, r) in reward.iter().enumerate() {
            let want = if reset_step { 0.0 } else { env.obs()[i * ns] };
            assert_eq!(*r, want, "step {t} env {i}: reward");
        }
    }
    assert_eq!(resets, 2);
}

/// Regression: an f32 Newton solve that stalls at rounding level. In an
/// Ant-v5 rollout with random actions (the `rl_throughput` example's, 1024
/// environments), environment 807's solve at t = 7.27 s crept with steps
/// of 0.06 ulp of ‖D⁻¹v‖ at a residual 1.5× its rounding floor's estimate
/// until the 100-iteration cap, and the world failed (the GPU batch failed
/// such worlds too: 2–4 per H200 run). A step below one ulp of v near the
/// tolerance now ends the solve as converged.
#[test]
fn f32_ant_rollout_does_not_stall_at_rounding_level() {
    let Some(dir) = models_dir() else { return };
    let (model, task) = tasks::make("Ant-v5", &dir).unwrap();
    let n = 1024;
    let actions = cenic::rl::uniform_actions(&model, n, 16, n as u64);
    let batch = CpuBatch::<f32>::new(model.clone(), n, Physics::Fixed.mode(&model));
    let mut env = VecEnv::new(batch, task, EnvConfig::default()).unwrap();
    env.reset(Some(0)).unwrap();
    for step in 0..150 {
        env.step(&actions[step % actions.len()]).unwrap();
        let (failures, reason) = env.failures();
        assert_eq!(failures, 0, "step {step}: {reason:?}");
    }
}

/// Domain randomization through `VecEnv::batch_mut`: per-world parameters
/// set before `reset` act as if set after it (resets keep them), and they
/// change what the environment observes.
#[test]
fn per_world_parameters_survive_env_resets() {
    use cenic::batch::WorldParams;
    let p = WorldParams { mass_scale: 2.0, ..Default::default() };
    // When env 1's parameters are set: before the reset, after it, or never.
    let run = |when: Option<bool>| -> Option<Vec<f32>> {
        let mut env = cpu_env("HalfCheetah-v5", 2, Physics::Fixed, EnvConfig::default())?;
        if when == Some(true) {
            env.batch_mut().set_params(1, p).unwrap();
        }
        env.reset(Some(3)).unwrap();
        if when == Some(false) {
            env.batch_mut().set_params(1, p).unwrap();
        }
        let a = vec![0.7f32; env.num_envs() * env.act_dim()];
        for _ in 0..20 {
            env.step(&a).unwrap();
        }
        Some(env.obs().to_vec())
    };
    let (Some(before), Some(after), Some(plain)) = (run(Some(true)), run(Some(false)), run(None)) else { return };
    assert_eq!(before, after, "parameters set before the reset were lost");
    let od = plain.len() / 2;
    assert_eq!(before[..od], plain[..od], "env 0 has default parameters");
    assert_ne!(before[od..], plain[od..], "the parameters did not change env 1's observation");
}
