//! RL throughput for BENCHMARKS.md: environment steps per second
//! of `cenic::rl::VecEnv` on the gymnasium v5 tasks against the number of
//! environments, on the CPU batch and on the GPU batch (task evaluated on
//! the device). The gymnasium + MuJoCo side comes from
//! `scripts/rl_throughput.py`, which reads this example's CSV and prints
//! both side by side:
//!
//! ```text
//! cargo run --release --example rl_throughput -- --csv target/rl_throughput.csv && \
//!     /work/venv/bin/python scripts/rl_throughput.py --cenic target/rl_throughput.csv
//! ```
//!
//! Options: `--tasks Ant-v5,Humanoid-v5`, `--sizes 1,4,16,64,256,1024,4096`,
//! `--backends cpu-fixed,cpu-cenic,gpu-fixed` (`cpu-f32-fixed` also
//! exists), `--budget SECONDS` of timed stepping per measurement (2),
//! `--max-step SECONDS`: a series (task, backend) stops growing once one
//! environment step takes longer (10), `--csv PATH`.
//!
//! Every measurement builds a fresh environment, resets it with seed 0,
//! takes one untimed step, then steps with uniform random actions within
//! the control ranges (16 pregenerated batches, cycled) until the budget is
//! spent (at least 3 steps). Autoresets (Ant and Humanoid terminate when
//! the torso leaves its healthy height range) are part of the timing, as
//! in an RL loop. `fixed`: the model's time step, `frame_skip` of them per
//! environment step (gymnasium's physics step and interval); `cenic`: CENIC
//! error control at accuracy 1e-2 with the environment step as the control
//! interval (what `examples/ppo.rs` trains on).
//!
//! Besides the wall-clock rate, each row records the CPU time the process
//! (all its threads, lavapipe's included) used in the timed loop, from
//! `/proc/self/stat`: environment steps per CPU-second do not depend on
//! what else runs on the machine, so rows measured under load stay
//! comparable (`scripts/rl_throughput.py` records the same).

use cenic::batch::{Batch, CpuBatch};
use cenic::gpu::rl::device_env;
use cenic::gpu::{GpuBatch, GpuContext};
use cenic::rl::{EnvConfig, Physics, StepTimes, VecEnv, tasks};
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

/// One measurement.
struct Row {
    task: String,
    backend: &'static str,
    physics: &'static str,
    envs: usize,
    steps: usize,
    wall: f64,
    /// CPU seconds of the process over the timed loop (NaN where unknown).
    cpu: f64,
    ended: usize,
    failures: u64,
    /// Where the timed steps' time went.
    times: StepTimes,
}

impl Row {
    fn rate(&self) -> f64 {
        (self.steps * self.envs) as f64 / self.wall
    }
    fn cpu_rate(&self) -> f64 {
        (self.steps * self.envs) as f64 / self.cpu
    }
}

/// User + system CPU seconds of this process so far (all threads), from
/// `/proc/self/stat` in clock ticks of 1/100 s (Linux's USER_HZ); NaN
/// elsewhere.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return f64::NAN };
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return f64::NAN };
    let f: Vec<&str> = rest.split_whitespace().collect();
    match (f.get(11).and_then(|x| x.parse::<f64>().ok()), f.get(12).and_then(|x| x.parse::<f64>().ok())) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => f64::NAN,
    }
}

/// The episodes cut by world failures, and the last one's reason on stderr.
fn failure_note<B: Batch>(env: &VecEnv<B>) -> u64 {
    let (n, last) = env.failures();
    if let Some(reason) = last {
        eprintln!("{n} world failures; the last: {reason}");
    }
    n
}

/// Steps `env` with `actions` (cycled) for `budget` seconds (at least 3
/// steps) after one untimed step: (steps, seconds, CPU seconds, episodes
/// ended); the step times stay readable on `env`.
fn measure<B: Batch>(env: &mut VecEnv<B>, actions: &[Vec<f32>], budget: f64) -> (usize, f64, f64, usize) {
    env.reset(Some(0)).expect("reset");
    env.step(&actions[0]).expect("step");
    env.reset_step_times();
    let (mut steps, mut ended) = (0, 0);
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    while steps < 3 || start.elapsed().as_secs_f64() < budget {
        let s = env.step(&actions[(steps + 1) % actions.len()]).expect("step");
        ended += s.terminated.iter().zip(s.truncated).filter(|(a, b)| **a || **b).count();
        steps += 1;
    }
    (steps, start.elapsed().as_secs_f64(), cpu_seconds() - cpu0, ended)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let list = |name: &str, default: &str| -> Vec<String> {
        arg(name).unwrap_or_else(|| default.into()).split(',').map(str::to_string).collect()
    };
    let task_names = list("--tasks", "Ant-v5,Humanoid-v5");
    let sizes: Vec<usize> =
        list("--sizes", "1,4,16,64,256,1024,4096").iter().map(|s| s.parse().expect("--sizes N,N,...")).collect();
    let backends = list("--backends", "cpu-fixed,cpu-cenic,gpu-fixed");
    let budget: f64 = arg("--budget").map_or(2.0, |s| s.parse().expect("--budget SECONDS"));
    let max_step: f64 = arg("--max-step").map_or(10.0, |s| s.parse().expect("--max-step SECONDS"));
    let csv = arg("--csv").unwrap_or_else(|| "target/rl_throughput.csv".into());
    let dir = cenic::zoo::shared_dir()
        .unwrap_or_else(|| {
            eprintln!("shared folder not found (set CENIC_SHARED)");
            std::process::exit(2)
        })
        .join("models/gymnasium");
    let ctx = if backends.iter().any(|b| b.starts_with("gpu")) {
        match GpuContext::new() {
            Ok(c) => {
                println!("GPU adapter: {}", c.describe());
                Some(Arc::new(c))
            }
            Err(e) => {
                eprintln!("no GPU rows: {e}");
                None
            }
        }
    } else {
        None
    };
    println!("CPU batch on {} rayon threads; load average at start: {}", rayon::current_num_threads(), load());
    println!("budget {budget} s per measurement; a series stops after an environment step over {max_step} s\n");
    println!(
        "| task | backend | physics | envs | steps | wall [s] | env steps/s | CPU [s] | env steps/CPU-s | episodes ended |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut rows: Vec<Row> = vec![];
    for name in &task_names {
        let (model, task) = tasks::make(name, &dir).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        });
        for backend in &backends {
            let (backend, physics_name, physics): (&'static str, &'static str, Physics) = match backend.as_str() {
                "cpu-fixed" => ("CPU f64", "fixed", Physics::Fixed),
                "cpu-f32-fixed" => ("CPU f32", "fixed", Physics::Fixed),
                "cpu-cenic" => ("CPU f64", "cenic 1e-2", Physics::cenic(1e-2)),
                "gpu-fixed" => ("GPU", "fixed", Physics::Fixed),
                "gpu-cenic" => ("GPU", "cenic 1e-2", Physics::cenic(1e-2)),
                other => panic!("unknown backend {other}"),
            };
            if backend == "GPU" && ctx.is_none() {
                continue;
            }
            let mode = physics.mode(&model);
            for &n in &sizes {
                let actions = cenic::rl::uniform_actions(&model, n, 16, n as u64);
                let config = EnvConfig::default();
                let (steps, wall, cpu, ended, failures, times) = match backend {
                    "CPU f64" => {
                        let mut env =
                            VecEnv::new(CpuBatch::<f64>::new(model.clone(), n, mode.clone()), task.clone(), config)
                                .unwrap();
                        let (s, w, c, e) = measure(&mut env, &actions, budget);
                        (s, w, c, e, failure_note(&env), env.step_times())
                    }
                    "CPU f32" => {
                        let mut env =
                            VecEnv::new(CpuBatch::<f32>::new(model.clone(), n, mode.clone()), task.clone(), config)
                                .unwrap();
                        let (s, w, c, e) = measure(&mut env, &actions, budget);
                        (s, w, c, e, failure_note(&env), env.step_times())
                    }
                    _ => {
                        let ctx = ctx.clone().unwrap();
                        let batch = match GpuBatch::new(ctx, model.clone(), n, mode.clone()) {
                            Ok(b) => b,
                            Err(e) => {
                                println!("|  | {backend} | {physics_name} | {n} | device refused: {e} | | | | | |");
                                break;
                            }
                        };
                        let mut env = device_env(batch, task.clone(), config).unwrap();
                        let (s, w, c, e) = measure(&mut env, &actions, budget);
                        (s, w, c, e, failure_note(&env), env.step_times())
                    }
                };
                let row = Row {
                    task: name.clone(),
                    backend,
                    physics: physics_name,
                    envs: n,
                    steps,
                    wall,
                    cpu,
                    ended,
                    failures,
                    times,
                };
                let gpu_note = if backend == "GPU" { " (lavapipe)" } else { "" };
                let gpu_note =
                    if ctx.as_ref().is_some_and(|c| !c.describe().contains("llvmpipe")) { "" } else { gpu_note };
                println!(
                    "| {} | {}{} | {} | {} | {} | {:.2} | {:.0} | {:.2} | {:.0} | {} |",
                    row.task,
                    row.backend,
                    gpu_note,
                    row.physics,
                    n,
                    steps,
                    wall,
                    row.rate(),
                    cpu,
                    row.cpu_rate(),
                    ended
                );
                let slow = wall / steps as f64 > max_step;
                rows.push(row);
                if slow {
                    println!(
                        "|  | {backend} | {physics_name} | series stops after {n} envs (step over {max_step} s) | | | | | | |"
                    );
                    break;
                }
            }
        }
    }
    println!(
        "\nWhere an environment step's time went (ms per step; on the GPU the device time shows where the host first waits, mostly in evaluate):\n"
    );
    println!("| task | backend | envs | controls | advance | evaluate | resets | autoresets / step |");
    println!("|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let t = &r.times;
        let per = |x: f64| 1e3 * x / t.steps.max(1) as f64;
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} |",
            r.task,
            r.backend,
            r.envs,
            per(t.controls),
            per(t.advance),
            per(t.evaluate),
            per(t.resets),
            t.reset_envs as f64 / t.steps.max(1) as f64
        );
    }
    let mut f = std::fs::File::create(&csv).expect("CSV file");
    writeln!(f, "task,backend,physics,num_envs,env_steps,wall_s,env_steps_per_s,cpu_s,env_steps_per_cpu_s,episodes_ended,failures,adapter")
        .unwrap();
    let adapter = ctx.as_ref().map(|c| c.describe().replace(',', ";")).unwrap_or_default();
    for r in &rows {
        let adapter = if r.backend == "GPU" { adapter.as_str() } else { "" };
        writeln!(
            f,
            "{},{},{},{},{},{:.4},{:.1},{:.2},{:.1},{},{},{}",
            r.task,
            r.backend,
            r.physics,
            r.envs,
            r.steps * r.envs,
            r.wall,
            r.rate(),
            r.cpu,
            r.cpu_rate(),
            r.ended,
            r.failures,
            adapter
        )
        .unwrap();
    }
    println!("\nwrote {csv}; load average at end: {}", load());
}
