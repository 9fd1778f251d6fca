//! Batch rendering for BENCHMARKS.md: frames per second of `cenic::render`
//! drawing every world of a batch of gymnasium's Ant (default camera, RGB
//! read back to the host), and what `render_mode="rgb_array"` adds to one
//! environment step.
//!
//! ```text
//! cargo run --release --example render_throughput -- [--worlds 1024,4096] [--sizes 64,128]
//!     [--sources gpu,cpu] [--details 28x16,8x4] [--budget SECONDS] [--renders N] [--step-sizes 480,64]
//!     [--no-batch] [--no-step]
//! ```
//!
//! Batch rows: each (source, worlds, frame size, detail) builds the Ant batch,
//! resets it with seed 0 and takes 10 environment steps of random actions
//! (so the ants are spread over their poses), renders once untimed, then
//! renders the same state until `--budget` seconds (2) are spent (at least
//! `--renders` renders, 3). `gpu`: a `GpuBatch`, poses gathered on the device
//! (`Renderer::render_gpu_batch`: kinematics, gather, draw and read-back in
//! one submission); `cpu`: a `CpuBatch`'s positions, kinematics on the host
//! and the poses uploaded (`Renderer::render_qpos`). Detail: slices ×
//! stacks of the round shapes (`Renderer::with_detail`; 28x16 is MuJoCo's,
//! the default). Frames per second =
//! worlds × renders / wall time; the CPU seconds of the process (all its
//! threads, lavapipe's included, from `/proc/self/stat`) are printed beside
//! the wall time, as `rl_throughput` does.
//!
//! Step rows: one Ant environment on the CPU (gymnasium's fixed steps):
//! environment steps per second without rendering and with one RGB frame
//! rendered after every step at each `--step-sizes` size (480 × 480 is
//! gymnasium's default), from alternating blocks of the same length.
//!
//! Needs the shared gymnasium models (`../shared/models/gymnasium` or
//! `$CENIC_SHARED`) and a wgpu adapter (lavapipe without a GPU).

use cenic::batch::{Batch, CpuBatch};
use cenic::gpu::rl::device_env;
use cenic::gpu::{GpuBatch, GpuContext};
use cenic::model::Model;
use cenic::render::geometry::Detail;
use cenic::render::{Camera, Outputs, Renderer};
use cenic::rl::tasks::{self, Builtin, Kind};
use cenic::rl::{EnvConfig, VecEnv};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// User + system CPU seconds of this process so far (all threads), from
/// `/proc/self/stat` in clock ticks of 1/100 s (Linux's USER_HZ); NaN
/// elsewhere.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return f64::NAN };
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return f64::NAN };
    let f: Vec<&str> = rest.split_whitespace().collect();
    match (f.get(11).and_then(|x| x.parse::<f64>().ok()), f.get(12).and_then(|x| x.parse::<f64>().ok())) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => f64::NAN,
    }
}

fn list(args: &[String], flag: &str, default: &str) -> Vec<String> {
    let v = args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(String::as_str).unwrap_or(default);
    v.split(',').map(str::to_string).collect()
}

/// gymnasium's default camera of the task, placed from the first world's state.
fn default_camera(model: &Model, q: &[f64]) -> Camera {
    let mut data = cenic::dynamics::Data::<f64>::new(model);
    data.q.copy_from_slice(&q[..model.nq]);
    cenic::dynamics::kinematics(model, &mut data);
    Camera::Free(Kind::Ant.default_camera(model, &data))
}

/// Steps `env` 10 times with random actions.
fn spread<B: Batch + Send + 'static>(env: &mut VecEnv<B>, model: &Model, n: usize) {
    let actions = cenic::rl::uniform_actions(model, n, 10, 3);
    env.reset(Some(0)).unwrap();
    for a in &actions {
        env.step(a).unwrap();
    }
}

/// Renders until `budget` seconds are spent, at least `min` times: (renders, wall s, CPU s).
fn time_renders(budget: f64, min: usize, mut render: impl FnMut()) -> (usize, f64, f64) {
    render();
    let (start, cpu0) = (Instant::now(), cpu_seconds());
    let mut k = 0;
    while k < min.max(1) || start.elapsed().as_secs_f64() < budget {
        render();
        k += 1;
    }
    (k, start.elapsed().as_secs_f64(), cpu_seconds() - cpu0)
}

fn batch_rows(
    ctx: &Arc<GpuContext>,
    model: &Arc<Model>,
    task: &Arc<Builtin>,
    args: &[String],
    budget: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let mode = cenic::integrator::Mode::Fixed { dt: model.options.timestep };
    let min: usize = list(args, "--renders", "3")[0].parse()?;
    let mut details = vec![];
    for d in list(args, "--details", "28x16,8x4") {
        let (a, b) = d.split_once('x').ok_or_else(|| format!("--details: '{d}' is not SLICESxSTACKS"))?;
        details.push(Detail { slices: a.parse()?, stacks: b.parse()? });
    }
    println!("| source | worlds | frame | detail | renders | wall s | CPU s | frames/s | ms per render |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for source in list(args, "--sources", "gpu,cpu") {
        for n in list(args, "--worlds", "1024,4096") {
            let n: usize = n.parse()?;
            for size in list(args, "--sizes", "64,128") {
                let size: usize = size.parse()?;
                for &detail in &details {
                    let (renders, wall, cpu) = match source.as_str() {
                        "gpu" => {
                            let batch = GpuBatch::new(ctx.clone(), model.clone(), n, mode.clone())?;
                            let mut env = device_env(batch, task.clone(), EnvConfig::default())?;
                            spread(&mut env, model, n);
                            let mut q = vec![0.0; n * model.nq];
                            env.batch().qpos(&mut q);
                            let camera = default_camera(model, &q);
                            let mut r = Renderer::new(ctx.clone(), model.clone(), n, size, size, Outputs::RGB, camera)?
                                .with_detail(detail)?;
                            time_renders(budget, min, || {
                                r.render_gpu_batch(env.batch()).unwrap();
                            })
                        }
                        "cpu" => {
                            let batch = CpuBatch::<f64>::new(model.clone(), n, mode.clone());
                            let mut env = VecEnv::new(batch, task.clone(), EnvConfig::default())?;
                            spread(&mut env, model, n);
                            let mut q = vec![0.0; n * model.nq];
                            env.batch().qpos(&mut q);
                            let camera = default_camera(model, &q);
                            let mut r = Renderer::new(ctx.clone(), model.clone(), n, size, size, Outputs::RGB, camera)?
                                .with_detail(detail)?;
                            time_renders(budget, min, || {
                                r.render_qpos(&q).unwrap();
                            })
                        }
                        s => return Err(format!("unknown source '{s}' (gpu, cpu)").into()),
                    };
                    println!(
                        "| {source} | {n} | {size}×{size} | {}×{} | {renders} | {wall:.2} | {cpu:.2} | {:.0} | {:.1} |",
                        detail.slices,
                        detail.stacks,
                        (n * renders) as f64 / wall,
                        1e3 * wall / renders as f64
                    );
                }
            }
        }
    }
    Ok(())
}

fn step_rows(
    ctx: &Arc<GpuContext>,
    model: &Arc<Model>,
    task: &Arc<Builtin>,
    args: &[String],
    budget: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let mode = cenic::integrator::Mode::Fixed { dt: model.options.timestep };
    println!("\n| one Ant env (CPU) | steps | wall s | steps/s | ms per step | added by rendering |");
    println!("|---|---|---|---|---|---|");
    let actions = cenic::rl::uniform_actions(model, 1, 64, 5);
    let mut env = VecEnv::new(CpuBatch::<f64>::new(model.clone(), 1, mode), task.clone(), EnvConfig::default())?;
    env.reset(Some(0))?;
    let mut q = vec![0.0; model.nq];
    env.batch().qpos(&mut q);
    let camera = default_camera(model, &q);
    let sizes: Vec<usize> = list(args, "--step-sizes", "480,64").iter().map(|s| s.parse()).collect::<Result<_, _>>()?;
    let mut renderers = vec![];
    for &s in &sizes {
        renderers.push(Renderer::new(ctx.clone(), model.clone(), 1, s, s, Outputs::RGB, camera)?);
    }
    // Alternating blocks of 64 steps: plain, then with each size; totals per variant.
    let mut totals = vec![(0usize, 0.0f64); 1 + sizes.len()];
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < budget * (1 + sizes.len()) as f64 || totals[0].0 < 64 {
        for (v, total) in totals.iter_mut().enumerate() {
            let t = Instant::now();
            for a in &actions {
                env.step(a)?;
                if v > 0 {
                    env.batch().qpos(&mut q);
                    renderers[v - 1].render_qpos(&q)?;
                }
            }
            total.0 += actions.len();
            total.1 += t.elapsed().as_secs_f64();
        }
    }
    let plain = totals[0].1 / totals[0].0 as f64;
    for (v, &(steps, wall)) in totals.iter().enumerate() {
        let per = wall / steps as f64;
        let name = if v == 0 { "step".to_string() } else { format!("step + rgb_array {0}×{0}", sizes[v - 1]) };
        let share = if v == 0 {
            "–".to_string()
        } else {
            format!("{:.3} ms ({:.0} % of the step)", 1e3 * (per - plain), 100.0 * (per - plain) / per)
        };
        println!("| {name} | {steps} | {wall:.2} | {:.0} | {:.3} | {share} |", 1.0 / per, 1e3 * per);
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let budget: f64 = list(&args, "--budget", "2")[0].parse()?;
    let shared = std::env::var_os("CENIC_SHARED").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("../shared"));
    let (model, task) = tasks::make("Ant-v5", &shared.join("models/gymnasium"))?;
    let ctx = Arc::new(GpuContext::new()?);
    println!("Ant-v5, RGB frames read back, adapter: {}\n", ctx.describe());
    if !args.iter().any(|a| a == "--no-batch") {
        batch_rows(&ctx, &model, &task, &args, budget)?;
    }
    if !args.iter().any(|a| a == "--no-step") {
        step_rows(&ctx, &model, &task, &args, budget)?;
    }
    Ok(())
}
