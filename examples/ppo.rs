//! PPO (clipped objective, GAE, Gaussian MLP policy) in burn on the
//! vectorized gymnasium tasks of `cenic::rl`, on the CPU (burn's `flex`
//! backend with autodiff, Adam).
//!
//! Train (writes `<out>/<task>_curve.csv`, `<out>/<task>_curve.png` and the
//! policy `<out>/<task>_policy.bpk` with its observation statistics
//! `<out>/<task>_policy.json`):
//!
//! ```text
//! cargo run --release --example ppo -- --task InvertedPendulum-v5 --max-steps 300000
//! cargo run --release --example ppo -- --task HalfCheetah-v5 --max-steps 1000000
//! ```
//!
//! After saving, the policy is loaded back from the file and checked to
//! give the same actions and values as the trained one (bit for bit).
//!
//! Evaluate a saved policy (deterministic mean action, mean return over 10 episodes):
//!
//! ```text
//! cargo run --release --example ppo -- --task InvertedPendulum-v5 --eval target/ppo/InvertedPendulum-v5_policy
//! ```
//!
//! Export a saved policy's actor for other simulators (`<policy>.actor.json`:
//! the three layers' weights (input × output, row-major) and biases, and the
//! observation statistics; `scripts/eval_policy_mujoco.py` runs it in
//! gymnasium + MuJoCo):
//!
//! ```text
//! cargo run --release --example ppo -- --task HalfCheetah-v5 --export target/ppo/HalfCheetah-v5_policy
//! ```
//!
//! Options: `--envs N` (16), `--horizon T` steps per environment per
//! iteration (128), `--epochs E` (10), `--minibatch M` (256), `--lr` (3e-4),
//! `--seed S` (1), `--physics fixed|mujoco|cenic:ACCURACY` (cenic:1e-2; `mujoco`: MuJoCo's own
//! integrator and step, [`cenic::rl::Physics::MuJoCo`]), `--semantics mujoco|physical` (the
//! model file's own: MuJoCo's for gymnasium's models),
//! `--minutes M` wall-clock budget (30), `--max-steps N` environment steps,
//! `--target R` stop when the mean return of the last 10 episodes reaches R,
//! `--out DIR` (target/ppo), `--episodes K` for `--eval` (10).
//!
//! PPO as in Schulman et al. (2017) with the usual continuous-control
//! details: separate 64-64 tanh actor and critic, state-independent log
//! standard deviation, running observation normalisation (clipped to ±10)
//! and reward scaling by the running standard deviation of the discounted
//! return, advantages normalised per minibatch, value bootstrapped through
//! time-limit truncations (same-step autoreset gives the final observation),
//! linear learning-rate decay.

mod common;

use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::tanh;
use burn::tensor::{Device, Tensor, TensorData};
use cenic::batch::CpuBatch;
use cenic::model::{Model, Semantics};
use cenic::rl::{Autoreset, EnvConfig, Physics, VecEnv, tasks};
use common::arg;
use plotters::prelude::*;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

fn arg_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    arg(name).map(|s| s.parse().unwrap_or_else(|_| panic!("bad value for {name}: {s}"))).unwrap_or(default)
}

/// Actor and critic: two 64-64 tanh MLPs and a state-independent log std.
#[derive(Module, Debug)]
struct Agent {
    a1: Linear,
    a2: Linear,
    a3: Linear,
    c1: Linear,
    c2: Linear,
    c3: Linear,
    log_std: Param<Tensor<1>>,
}

impl Agent {
    fn new(obs: usize, act: usize, device: &Device) -> Self {
        let l = |i, o| LinearConfig::new(i, o).init(device);
        let mut a3 = l(64, act);
        // A small last layer: initial actions near zero (the usual PPO initialisation).
        a3.weight = Param::from_tensor(a3.weight.val().mul_scalar(0.01).detach());
        Self {
            a1: l(obs, 64),
            a2: l(64, 64),
            a3,
            c1: l(obs, 64),
            c2: l(64, 64),
            c3: l(64, 1),
            log_std: Param::from_tensor(Tensor::zeros([act], device)),
        }
    }

    /// Action means (B × act).
    fn mean(&self, x: Tensor<2>) -> Tensor<2> {
        self.a3.forward(tanh(self.a2.forward(tanh(self.a1.forward(x)))))
    }

    /// Values (B).
    fn value(&self, x: Tensor<2>) -> Tensor<1> {
        let v: Tensor<2> = self.c3.forward(tanh(self.c2.forward(tanh(self.c1.forward(x)))));
        v.flatten(0, 1)
    }
}

/// Running mean and variance (Welford over batches), for observations and returns.
#[derive(Clone, Debug)]
struct RunningStats {
    mean: Vec<f64>,
    var: Vec<f64>,
    count: f64,
}

impl RunningStats {
    fn new(n: usize) -> Self {
        Self { mean: vec![0.0; n], var: vec![1.0; n], count: 1e-4 }
    }
    /// Adds a batch of rows (len a multiple of the dimension).
    fn update(&mut self, rows: &[f32]) {
        let d = self.mean.len();
        let n = (rows.len() / d) as f64;
        for k in 0..d {
            let col = rows.iter().skip(k).step_by(d).map(|&x| x as f64);
            let m = col.clone().sum::<f64>() / n;
            let v = col.map(|x| (x - m) * (x - m)).sum::<f64>() / n;
            let delta = m - self.mean[k];
            let tot = self.count + n;
            self.mean[k] += delta * n / tot;
            let m2 = self.var[k] * self.count + v * n + delta * delta * self.count * n / tot;
            self.var[k] = m2 / tot;
        }
        self.count += n;
    }
    fn normalize(&self, rows: &[f32], out: &mut [f32]) {
        let d = self.mean.len();
        for (i, (o, x)) in out.iter_mut().zip(rows).enumerate() {
            let k = i % d;
            *o = (((*x as f64) - self.mean[k]) / (self.var[k] + 1e-8).sqrt()).clamp(-10.0, 10.0) as f32;
        }
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"mean": self.mean, "var": self.var, "count": self.count})
    }
    fn from_json(v: &serde_json::Value) -> Self {
        let f = |k: &str| v[k].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect::<Vec<f64>>();
        Self { mean: f("mean"), var: f("var"), count: v["count"].as_f64().unwrap() }
    }
}

fn tensor2(data: Vec<f32>, rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(data, [rows, cols]), device)
}

fn values_of(t: Tensor<1>) -> Vec<f32> {
    t.into_data().iter::<f32>().collect()
}

fn values_of2(t: Tensor<2>) -> Vec<f32> {
    t.into_data().iter::<f32>().collect()
}

const LOG_2PI: f64 = 1.8378770664093453;

struct Settings {
    task: String,
    envs: usize,
    horizon: usize,
    epochs: usize,
    minibatch: usize,
    lr: f64,
    seed: u64,
    physics: String,
    minutes: f64,
    max_steps: usize,
    target: f64,
    out: PathBuf,
}

/// The physics named `p` (`fixed`, `mujoco` or `cenic:ACCURACY`).
fn physics_of(p: &str) -> Physics {
    if p == "fixed" {
        Physics::Fixed
    } else if p == "mujoco" {
        Physics::MuJoCo
    } else if let Some(a) = p.strip_prefix("cenic:") {
        Physics::cenic(a.parse().expect("--physics cenic:ACCURACY"))
    } else {
        panic!("--physics fixed|mujoco|cenic:ACCURACY, got {p}")
    }
}

/// `--physics`, or `default`.
fn physics_arg(default: &str) -> String {
    let p = arg("--physics").unwrap_or_else(|| default.into());
    physics_of(&p);
    p
}

/// `--semantics mujoco|physical`: load the task's model under these
/// constraint semantics instead of the file's own (MuJoCo's for gymnasium's
/// models); `physical` trains on cenic's compliant contact law.
fn semantics_arg() -> Option<Semantics> {
    arg("--semantics").map(|s| match s.as_str() {
        "mujoco" => Semantics::MuJoCo,
        "physical" => Semantics::Physical,
        _ => panic!("--semantics mujoco|physical, got {s}"),
    })
}

fn models_dir() -> PathBuf {
    cenic::zoo::shared_dir()
        .unwrap_or_else(|| {
            eprintln!("shared folder not found (set CENIC_SHARED)");
            std::process::exit(2)
        })
        .join("models/gymnasium")
}

fn make_env(name: &str, n: usize, physics: &Physics, autoreset: Autoreset) -> VecEnv<CpuBatch<f64>> {
    let (mut model, task) = tasks::make(name, &models_dir()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    if let Some(sem) = semantics_arg() {
        // The same file under the other constraint semantics (the task reads
        // body and joint indices only, which do not depend on it).
        let kind = tasks::Kind::parse(name).expect("task");
        let path = models_dir().join(kind.model_file());
        model = Arc::new(Model::from_mjcf_file_as(&path, sem).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        }));
    }
    let batch = CpuBatch::<f64>::new(model.clone(), n, physics.mode(&model));
    VecEnv::new(batch, task, EnvConfig { autoreset, ..Default::default() }).expect("environment")
}

fn main() {
    let task = arg("--task").unwrap_or_else(|| "InvertedPendulum-v5".into());
    let out: PathBuf = arg("--out").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("target/ppo"));
    if let Some(path) = arg("--export") {
        let path = Path::new(&path);
        let (od, ad) = {
            let env = make_env(&task, 1, &Physics::Fixed, Autoreset::NextStep);
            (env.obs_dim(), env.act_dim())
        };
        let agent = load_agent(path, od, ad, &Device::flex());
        let stats = std::fs::read_to_string(path.with_extension("json")).expect("the policy's statistics");
        let stats: serde_json::Value = serde_json::from_str(&stats).expect("statistics JSON");
        export_actor(&agent, &stats, path);
        return;
    }
    if let Some(path) = arg("--eval") {
        let episodes = arg_or("--episodes", 10usize);
        evaluate(&task, Path::new(&path), episodes, arg("--physics"), arg_or("--seed", 1000u64));
        return;
    }
    let s = Settings {
        task,
        envs: arg_or("--envs", 16),
        horizon: arg_or("--horizon", 128),
        epochs: arg_or("--epochs", 10),
        minibatch: arg_or("--minibatch", 256),
        lr: arg_or("--lr", 3e-4),
        seed: arg_or("--seed", 1),
        physics: physics_arg("cenic:1e-2"),
        minutes: arg_or("--minutes", 30.0),
        max_steps: arg_or("--max-steps", usize::MAX),
        target: arg_or("--target", f64::INFINITY),
        out,
    };
    std::fs::create_dir_all(&s.out).expect("output folder");
    train(&s);
}

/// One iteration's record for the learning curve.
struct Point {
    iteration: usize,
    env_steps: usize,
    wall: f64,
    mean_return: f64,
    mean_length: f64,
    episodes: usize,
}

fn train(s: &Settings) {
    let device = Device::flex().autodiff();
    let plain = Device::flex();
    let mut env = make_env(&s.task, s.envs, &physics_of(&s.physics), Autoreset::SameStep);
    let (n, od, ad) = (env.num_envs(), env.obs_dim(), env.act_dim());
    println!(
        "PPO on {} ({} envs × {} steps per iteration, obs {od}, act {ad}, dt {} s, physics {}), {} rayon threads",
        s.task,
        n,
        s.horizon,
        env.dt(),
        s.physics,
        rayon::current_num_threads()
    );
    // The initial weights come from burn's generator: seeded, so a run repeats itself.
    device.seed(s.seed);
    let mut agent = Agent::new(od, ad, &device);
    let mut optim = AdamConfig::new().with_epsilon(1e-5).init();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(s.seed);
    let mut obs_stats = RunningStats::new(od);
    let mut ret_stats = RunningStats::new(1);
    let gamma = 0.99f64;
    let lambda = 0.95f64;
    let clip = 0.2f32;

    let t_len = s.horizon;
    let batch = t_len * n;
    let mut b_obs = vec![0.0f32; batch * od];
    let mut b_act = vec![0.0f32; batch * ad];
    let mut b_logp = vec![0.0f32; batch];
    let mut b_rew = vec![0.0f64; batch];
    let mut b_done = vec![false; batch];
    let mut b_val = vec![0.0f64; batch];
    let mut norm = vec![0.0f32; n * od];
    let mut act = vec![0.0f32; n * ad];
    let mut disc_ret = vec![0.0f64; n];
    let mut recent: std::collections::VecDeque<(f64, usize)> = Default::default();
    let mut curve: Vec<Point> = vec![];

    let raw = env.reset(Some(s.seed)).unwrap().to_vec();
    obs_stats.update(&raw);
    let mut cur_obs = raw;
    let start = Instant::now();
    let mut env_steps = 0usize;
    let mut iteration = 0usize;
    let total_iters_guess = (s.max_steps / batch).max(1);
    let mut sim_time = 0.0;
    let mut learn_time = 0.0;
    loop {
        let elapsed = start.elapsed().as_secs_f64();
        if elapsed > s.minutes * 60.0 || env_steps >= s.max_steps {
            break;
        }
        iteration += 1;
        // Linear decay over the wall-clock budget (or the step budget when smaller).
        let progress = if s.max_steps < usize::MAX {
            (iteration - 1) as f64 / total_iters_guess as f64
        } else {
            elapsed / (s.minutes * 60.0)
        };
        let lr = s.lr * (1.0 - progress).max(0.05);
        let policy = agent.valid();
        let log_std: Vec<f32> = values_of(policy.log_std.val());
        let std: Vec<f64> = log_std.iter().map(|&l| (l as f64).exp()).collect();
        let sum_log_std: f64 = log_std.iter().map(|&l| l as f64).sum();
        // Rollout.
        for t in 0..t_len {
            obs_stats.normalize(&cur_obs, &mut norm);
            let x = tensor2(norm.clone(), n, od, &plain);
            let mean = values_of2(policy.mean(x.clone()));
            let value = values_of(policy.value(x));
            for i in 0..n {
                let mut logp = -0.5 * ad as f64 * LOG_2PI - sum_log_std;
                for k in 0..ad {
                    let z: f64 = rng.sample(StandardNormal);
                    act[i * ad + k] = (mean[i * ad + k] as f64 + std[k] * z) as f32;
                    logp -= 0.5 * z * z;
                }
                let row = t * n + i;
                b_logp[row] = logp as f32;
                b_val[row] = value[i] as f64;
            }
            b_obs[t * n * od..(t + 1) * n * od].copy_from_slice(&norm);
            b_act[t * n * ad..(t + 1) * n * ad].copy_from_slice(&act);
            let ts = Instant::now();
            let st = env.step(&act).expect("step");
            sim_time += ts.elapsed().as_secs_f64();
            let reward = st.reward.to_vec();
            let (terminated, truncated) = (st.terminated.to_vec(), st.truncated.to_vec());
            cur_obs = st.obs.to_vec();
            // Reward scaling by the std of the discounted return.
            for i in 0..n {
                disc_ret[i] = disc_ret[i] * gamma + reward[i] as f64;
            }
            let rows: Vec<f32> = disc_ret.iter().map(|&x| x as f32).collect();
            ret_stats.update(&rows);
            let scale = (ret_stats.var[0] + 1e-8).sqrt();
            let finals: Vec<usize> = (0..n).filter(|&i| truncated[i] && !terminated[i]).collect();
            let mut boot = vec![0.0f64; n];
            if !finals.is_empty() {
                // Bootstrap through time-limit truncations from the final observation's value.
                let mut fin = vec![0.0f32; finals.len() * od];
                for (j, &i) in finals.iter().enumerate() {
                    obs_stats.normalize(&env.final_obs()[i * od..(i + 1) * od], &mut fin[j * od..(j + 1) * od]);
                }
                let v = values_of(policy.value(tensor2(fin, finals.len(), od, &plain)));
                for (j, &i) in finals.iter().enumerate() {
                    boot[i] = gamma * v[j] as f64;
                }
            }
            for i in 0..n {
                let row = t * n + i;
                b_rew[row] = reward[i] as f64 / scale + boot[i];
                b_done[row] = terminated[i] || truncated[i];
                if b_done[row] {
                    disc_ret[i] = 0.0;
                    recent.push_back((env.episode_returns()[i], env.episode_lengths()[i]));
                    if recent.len() > 10 {
                        recent.pop_front();
                    }
                }
            }
            obs_stats.update(&cur_obs);
            env_steps += n;
        }
        // GAE.
        obs_stats.normalize(&cur_obs, &mut norm);
        let last_v = values_of(policy.value(tensor2(norm.clone(), n, od, &plain)));
        let mut adv = vec![0.0f64; batch];
        let mut next_adv = vec![0.0f64; n];
        for t in (0..t_len).rev() {
            for i in 0..n {
                let row = t * n + i;
                let next_v = if t + 1 == t_len { last_v[i] as f64 } else { b_val[row + n] };
                let live = if b_done[row] { 0.0 } else { 1.0 };
                let delta = b_rew[row] + gamma * next_v * live - b_val[row];
                next_adv[i] = delta + gamma * lambda * live * next_adv[i];
                adv[row] = next_adv[i];
            }
        }
        let returns: Vec<f32> = adv.iter().zip(&b_val).map(|(a, v)| (a + v) as f32).collect();
        // Update.
        let tl = Instant::now();
        let mut idx: Vec<usize> = (0..batch).collect();
        let mb = s.minibatch.min(batch);
        for _ in 0..s.epochs {
            for k in (1..idx.len()).rev() {
                let j = rng.random_range(0..=k);
                idx.swap(k, j);
            }
            for chunk in idx.chunks(mb) {
                let m = chunk.len();
                let mut o = Vec::with_capacity(m * od);
                let mut a = Vec::with_capacity(m * ad);
                let (mut lp, mut ad_v, mut rt) = (vec![0.0f32; m], vec![0.0f32; m], vec![0.0f32; m]);
                for (j, &r) in chunk.iter().enumerate() {
                    o.extend_from_slice(&b_obs[r * od..(r + 1) * od]);
                    a.extend_from_slice(&b_act[r * ad..(r + 1) * ad]);
                    lp[j] = b_logp[r];
                    ad_v[j] = adv[r] as f32;
                    rt[j] = returns[r];
                }
                let mean_a = ad_v.iter().sum::<f32>() / m as f32;
                let std_a = (ad_v.iter().map(|x| (x - mean_a).powi(2)).sum::<f32>() / m as f32).sqrt() + 1e-8;
                ad_v.iter_mut().for_each(|x| *x = (*x - mean_a) / std_a);
                let obs_t = tensor2(o, m, od, &device);
                let act_t = tensor2(a, m, ad, &device);
                let old_t = Tensor::<1>::from_data(TensorData::new(lp, [m]), &device);
                let adv_t = Tensor::<1>::from_data(TensorData::new(ad_v, [m]), &device);
                let ret_t = Tensor::<1>::from_data(TensorData::new(rt, [m]), &device);
                let mean = agent.mean(obs_t.clone());
                let log_std = agent.log_std.val();
                let ls2: Tensor<2> = log_std.clone().unsqueeze::<2>().expand([m, ad]);
                let z = (act_t - mean).div(ls2.clone().exp());
                let logp: Tensor<1> = (z.powi_scalar(2).mul_scalar(-0.5) - ls2)
                    .sum_dim(1)
                    .flatten(0, 1)
                    .sub_scalar(0.5 * ad as f64 * LOG_2PI);
                let ratio = (logp - old_t).exp();
                let surr1 = ratio.clone() * adv_t.clone();
                let surr2 = ratio.clamp(1.0 - clip, 1.0 + clip) * adv_t;
                let policy_loss = surr1.min_pair(surr2).mean().neg();
                let value_loss = (agent.value(obs_t) - ret_t).powi_scalar(2).mean().mul_scalar(0.5);
                let loss = policy_loss + value_loss;
                let grads = GradientsParams::from_grads(loss.backward(), &agent);
                agent = optim.step(lr, agent, grads);
            }
        }
        learn_time += tl.elapsed().as_secs_f64();
        let wall = start.elapsed().as_secs_f64();
        let (mean_return, mean_length) = if recent.is_empty() {
            (f64::NAN, f64::NAN)
        } else {
            let k = recent.len() as f64;
            (recent.iter().map(|r| r.0).sum::<f64>() / k, recent.iter().map(|r| r.1 as f64).sum::<f64>() / k)
        };
        curve.push(Point { iteration, env_steps, wall, mean_return, mean_length, episodes: recent.len() });
        if iteration % 5 == 1 || mean_return >= s.target {
            println!(
                "iter {iteration:>4}  steps {env_steps:>8}  wall {wall:>7.1} s (sim {sim_time:.0} s, learn {learn_time:.0} s)  return(last 10) {mean_return:>9.2}  length {mean_length:>6.1}  std {:.3}",
                std.iter().sum::<f64>() / ad as f64
            );
        }
        if recent.len() >= 10 && mean_return >= s.target {
            println!("target {} reached", s.target);
            break;
        }
    }
    let stem = s.out.join(format!("{}_", s.task));
    let policy_path = PathBuf::from(format!("{}policy", stem.display()));
    let trained = agent.valid();
    trained.clone().save_file(policy_path.with_extension("bpk")).expect("save the policy");
    let stats = serde_json::json!({"task": s.task, "obs": obs_stats.to_json(), "physics": s.physics});
    std::fs::write(policy_path.with_extension("json"), stats.to_string()).expect("save the statistics");
    // The saved file must give back the same policy: mean actions and values at the last observations, bit for bit.
    let loaded = load_agent(&policy_path, od, ad, &plain);
    obs_stats.normalize(&cur_obs, &mut norm);
    let x = tensor2(norm.clone(), n, od, &plain);
    let same = |a: Vec<f32>, b: Vec<f32>| a.iter().map(|v| v.to_bits()).eq(b.iter().map(|v| v.to_bits()));
    assert!(
        same(values_of2(trained.mean(x.clone())), values_of2(loaded.mean(x.clone())))
            && same(values_of(trained.value(x.clone())), values_of(loaded.value(x))),
        "the policy loaded from {} differs from the trained one",
        policy_path.display()
    );
    println!("saved and reloaded {}.bpk: same actions and values", policy_path.display());
    export_actor(&trained, &stats, &policy_path);
    write_curve(&curve, &PathBuf::from(format!("{}curve.csv", stem.display())));
    if let Err(e) = plot(&curve, &s.task, &PathBuf::from(format!("{}curve.png", stem.display()))) {
        eprintln!("plot: {e}");
    }
    println!(
        "{} env steps in {:.1} s ({:.0} env steps/s; simulation {:.1} s, learning {:.1} s); policy {}",
        env_steps,
        start.elapsed().as_secs_f64(),
        env_steps as f64 / start.elapsed().as_secs_f64(),
        sim_time,
        learn_time,
        policy_path.display()
    );
}

fn write_curve(curve: &[Point], path: &Path) {
    let mut f = std::fs::File::create(path).expect("curve file");
    writeln!(f, "iteration,env_steps,wall_s,mean_return_last10,mean_length_last10,episodes_in_mean").unwrap();
    for p in curve {
        writeln!(
            f,
            "{},{},{:.2},{:.4},{:.2},{}",
            p.iteration, p.env_steps, p.wall, p.mean_return, p.mean_length, p.episodes
        )
        .unwrap();
    }
    println!("wrote {}", path.display());
}

fn plot(curve: &[Point], task: &str, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    if !common::register_font() {
        eprintln!("no TrueType font found (DejaVu Sans): {} not written", path.display());
        return Ok(());
    }
    let pts: Vec<(f64, f64)> =
        curve.iter().filter(|p| p.mean_return.is_finite()).map(|p| (p.env_steps as f64, p.mean_return)).collect();
    if pts.is_empty() {
        return Ok(());
    }
    let root = BitMapBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let x_max = pts.last().unwrap().0.max(1.0);
    let (lo, hi) = pts.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), p| (l.min(p.1), h.max(p.1)));
    let pad = 0.05 * (hi - lo).max(1.0);
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("PPO on cenic {task}: mean return of the last 10 episodes"), ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, (lo - pad)..(hi + pad))?;
    chart
        .configure_mesh()
        .x_desc("environment steps")
        .y_desc("return")
        .x_label_formatter(&|x| if x_max >= 1e6 { format!("{:.1}M", x / 1e6) } else { format!("{:.0}k", x / 1e3) })
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    chart.draw_series(LineSeries::new(pts, BLUE.stroke_width(2)))?;
    root.present()?;
    println!("wrote {}", path.display());
    Ok(())
}

/// Writes the actor of `agent` with the observation statistics of `stats`
/// to `<path>.actor.json`: the mean action is
/// a3(tanh(a2(tanh(a1(clip((obs − mean)/√(var + 1e-8), ±10)))))), each
/// layer y = x·W + b with W (input × output).
fn export_actor(agent: &Agent, stats: &serde_json::Value, path: &Path) {
    let layer = |l: &Linear| {
        let w = l.weight.val();
        let [rows, cols] = w.dims();
        let values = values_of2(w);
        let b = values_of(l.bias.as_ref().expect("bias").val());
        serde_json::json!({"w": values.chunks(cols).map(|r| r.to_vec()).collect::<Vec<_>>(), "b": b, "in": rows, "out": cols})
    };
    let out = serde_json::json!({
        "task": stats["task"],
        "physics": stats["physics"],
        "obs": stats["obs"],
        "clip": 10.0,
        "layers": [layer(&agent.a1), layer(&agent.a2), layer(&agent.a3)],
    });
    let file = path.with_extension("actor.json");
    std::fs::write(&file, out.to_string()).expect("write the actor");
    println!("wrote {}", file.display());
}

/// The policy saved at `path` (`.bpk`) for `od` observations and `ad` actions.
fn load_agent(path: &Path, od: usize, ad: usize, device: &Device) -> Agent {
    let file = path.with_extension("bpk");
    Agent::new(od, ad, device).try_load_file(&file).unwrap_or_else(|e| {
        eprintln!("policy {}: {e:?}", file.display());
        std::process::exit(2)
    })
}

/// Mean return over `episodes` episodes of the saved policy's mean action,
/// on the physics it was trained on unless `physics` names another.
fn evaluate(task: &str, path: &Path, episodes: usize, physics: Option<String>, seed: u64) {
    let plain = Device::flex();
    let json = path.with_extension("json");
    let stats_text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        eprintln!("policy statistics {}: {e}", json.display());
        std::process::exit(2)
    });
    let stats: serde_json::Value = serde_json::from_str(&stats_text).unwrap_or_else(|e| {
        eprintln!("policy statistics {}: {e}", json.display());
        std::process::exit(2)
    });
    if let Some(trained_on) = stats["task"].as_str().filter(|t| *t != task) {
        eprintln!("{} was trained on {trained_on}, not {task} (pass --task {trained_on})", json.display());
        std::process::exit(2)
    }
    let obs_stats = RunningStats::from_json(&stats["obs"]);
    let physics = physics.unwrap_or_else(|| stats["physics"].as_str().unwrap_or("cenic:1e-2").to_string());
    let mut env = make_env(task, episodes, &physics_of(&physics), Autoreset::NextStep);
    let (n, od, ad) = (env.num_envs(), env.obs_dim(), env.act_dim());
    let agent = load_agent(path, od, ad, &plain);
    let mut obs = env.reset(Some(seed)).unwrap().to_vec();
    let mut norm = vec![0.0f32; n * od];
    let mut done = vec![None; n];
    while done.iter().any(|d| d.is_none()) {
        obs_stats.normalize(&obs, &mut norm);
        let act = values_of2(agent.mean(tensor2(norm.clone(), n, od, &plain)));
        let st = env.step(&act).expect("step");
        let ended: Vec<bool> = st.terminated.iter().zip(st.truncated).map(|(a, b)| *a || *b).collect();
        obs = st.obs.to_vec();
        for i in 0..n {
            if ended[i] && done[i].is_none() {
                done[i] = Some((env.episode_returns()[i], env.episode_lengths()[i]));
            }
        }
    }
    let returns: Vec<f64> = done.iter().map(|d| d.unwrap().0).collect();
    let mean = returns.iter().sum::<f64>() / n as f64;
    let std = (returns.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    println!(
        "{task} ({physics}): mean return over {n} episodes {mean:.2} (std {std:.2}; lengths {:?})",
        done.iter().map(|d| d.unwrap().1).collect::<Vec<_>>()
    );
}
