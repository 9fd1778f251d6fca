//! GPU batch throughput for BENCHMARKS.md, in the terms of MuJoCo Warp's
//! benchmark: per row (scene, mode, worlds), accepted world-steps/s of
//! `GpuBatch`, the realtime factor (simulated seconds of all worlds per
//! wall second), the mean contacts per world (at the start of each accepted
//! step), Newton iterations per contact solve, launches (dispatches) per
//! `advance`, GPU time per world-step and per stage (each launch of an
//! iteration), device memory per world and the batch's setup time, side by
//! side with `CpuBatch` (f64, all cores) on the same workload in the same
//! run.
//!
//! ```text
//! cargo run --release --example gpu_throughput -- [--suite [--scale S]] [--budget SECONDS]
//!     [--max-worlds N] [--scene NAME] [--mode fixed|accuracy] [--sizes N,N,...] [--dt SECONDS]
//!     [--horizon SECONDS] [--advance SECONDS] [--settle SECONDS] [--gpu-only] [--no-stages]
//!     [--layout field|world] [--fusion auto|full|none] [--collision auto|per-world|per-pair]
//!     [--solver serial|coop|wide] [--solver-state auto|storage] [--cpu-f32] [--levels] [--no-tree]
//! ```
//!
//! `--suite` runs the rows the GPU work is judged by, in one go (see
//! [`suite`]): the humanoid at fixed 2 ms (1024 and 16 384 worlds) and under
//! error control at accuracy 1e-3, the ant at 1024 worlds (both modes), the
//! shared clutter scene `clutter20.xml` (both modes, 256 and 4096 worlds),
//! the cube toss at 65 536, 262 144 and 1 048 576 worlds (GPU only), and the
//! Ant-v5 and Humanoid-v5 environments at 16 384 envs (environment steps
//! per second, task evaluated on the device). `--scale S` (or the
//! environment variable `SUITE_SCALE`) divides every world and env count by
//! S (at least 1 each), to try the suite on a small device.
//!
//! Without `--suite`, one series per scene and mode: `--dt` sets the fixed
//! step (default 2 ms), `--horizon` the simulated time per measurement
//! (default per scene), `--advance` the interval of each `advance` call
//! (default: the whole horizon in one call; an RL loop advances by one
//! control period at a time), `--settle` the simulated time before the
//! common start state (default per scene: the clutters 0.8 s, the ant 1 s,
//! the humanoid 2 s, the cube toss 0: its toss is in flight until 0.25 s,
//! so a short horizon from there measures no contact), `--gpu-only` skips the CPU
//! batch, `--cpu-f32` runs it in f32 (the GPU's precision and algorithm:
//! the notes then give its Newton iterations per solve beside the GPU's). A series stops growing once one measurement takes longer than
//! the budget (default 20 s of wall time), when the next size would exceed
//! `--max-worlds` (default 65536), or when the device refuses the buffers;
//! the table says which. The other options pick the GPU batch's structure
//! (`GpuBatchOptions`), to compare them on one device; `--levels` runs the
//! Newton solves' structured factorization by elimination levels
//! (`GpuBatch::set_level_factorization`), `--no-tree` forbids their
//! factorization over the dof tree (`GpuBatch::set_tree_factorization`).
//!
//! Each GPU row is measured twice: first the throughput (nothing timed on
//! the device), then the stages (`--no-stages` skips it): the same
//! advances again from the same start (the worlds are deterministic) with
//! every launch timed, by timestamp queries where the adapter has them
//! between dispatches, else on the host (each launch its own submission
//! and wait: the shares hold, the totals include the round trips; the table
//! says which).
//!
//! Every world starts from the scene's start state (the clutters after
//! 0.8 s, piled up in the bin; the ant after 1 s, standing on its four
//! feet; the humanoid after 2 s, fallen on the floor: so that the
//! measurement is contact-bound) with its own small velocity
//! perturbation, so error-controlled worlds run on different clocks.

use cenic::batch::{Batch, CpuBatch, WorldStatus};
use cenic::gpu::icf::{SolverState, SolverVariant};
use cenic::gpu::rl::device_env;
use cenic::gpu::{CollisionLaunch, Fusion, GpuBatch, GpuBatchOptions, GpuContext, GpuCounters, LaunchTime, Layout};
use cenic::integrator::{CenicParams, Mode};
use cenic::model::Model;
use cenic::rl::{EnvConfig, Physics, Task, VecEnv, tasks};
use std::sync::Arc;
use std::time::Instant;

struct Scene {
    name: &'static str,
    model: Arc<Model>,
    key: Option<&'static str>,
    /// Simulated time per measurement (s).
    horizon: f64,
    /// Simulated time (s, CPU f64, accuracy 1e-3) before the common start
    /// state, so that the measurement runs in contact (the clutter piles up).
    settle: f64,
}

fn scenes() -> Vec<Scene> {
    let mut v = vec![
        Scene {
            name: "cube toss",
            model: Arc::new(cenic::scenes::cube_toss()),
            key: Some("toss"),
            horizon: 0.5,
            settle: 0.0,
        },
        Scene {
            name: "clutter (20)",
            model: Arc::new(cenic::scenes::clutter(20, cenic::scenes::CUBE_TOSS_MATERIAL)),
            key: None,
            horizon: 0.1,
            settle: 0.8,
        },
    ];
    let shared = cenic::zoo::shared_dir();
    let load = |rel: &str| -> Option<Model> {
        let path = shared.as_ref()?.join(rel);
        Model::from_mjcf_file(&path).map_err(|e| eprintln!("{rel} skipped: {} ({e})", path.display())).ok()
    };
    // The shared comparison scene (its own materials; `clutter (20)` is the
    // built-in scene with the cube toss's).
    if let Some(m) = load("scenes/clutter20.xml") {
        v.push(Scene { name: "clutter20", model: Arc::new(m), key: None, horizon: 0.1, settle: 0.8 });
    }
    // The robots start in contact with the floor. Under MuJoCo's soft
    // contacts the ant, dropped from qpos0, lands at 0.2 s and bounces:
    // after 0.4 s its feet are in the air (0 contacts per world), after
    // 1 s it stands on all four (4.0). The humanoid has 2 contacts after
    // 0.4 s (its feet) and lies on the floor after 2 s (8.8).
    for (name, horizon, settle) in [("ant", 0.2, 1.0), ("humanoid", 0.1, 2.0)] {
        if let Some(m) = load(&format!("models/gymnasium/{name}.xml")) {
            v.push(Scene { name, model: Arc::new(m), key: None, horizon, settle });
        }
    }
    v
}

/// The scene's start state: its keyframe (or qpos0 at rest), advanced by
/// `settle` seconds.
fn start_state(scene: &Scene) -> (Vec<f64>, Vec<f64>) {
    let m = &scene.model;
    let mut b = CpuBatch::<f64>::new(m.clone(), 1, Mode::ErrorControlled(CenicParams::default()));
    if let Some(k) = scene.key {
        b.reset_to_keyframe(0, k).unwrap();
    }
    if scene.settle > 0.0 {
        b.advance(scene.settle).unwrap();
    }
    let (mut q, mut v) = (vec![0.0; m.nq], vec![0.0; m.nv]);
    b.qpos(&mut q);
    b.qvel(&mut v);
    (q, v)
}

/// Initial states: the scene's start in every world, each with a small
/// velocity perturbation, set in one `reset_worlds_all` (per-world resets
/// take ~35 small writes each on the GPU: minutes at a million worlds).
fn init(batch: &mut dyn Batch, start: &(Vec<f64>, Vec<f64>)) {
    let n = batch.nworld();
    let (mut q, mut v) = (Vec::with_capacity(n * start.0.len()), Vec::with_capacity(n * start.1.len()));
    for w in 0..n {
        q.extend_from_slice(&start.0);
        // Deterministic, world-dependent perturbation (m/s, rad/s).
        let x = (w as f64 * 0.618_033_988_75).fract() - 0.5;
        v.extend(start.1.iter().enumerate().map(|(i, vi)| vi + 0.05 * x * ((i % 3) as f64 - 1.0)));
    }
    batch.reset_worlds_all(&q, &v).unwrap();
}

/// Accepted steps, Newton iterations, contact solves and contacts (at the
/// start of each accepted step) of every world together.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    steps: u64,
    newton: u64,
    solves: u64,
    contacts: u64,
}

impl std::ops::Sub for Totals {
    type Output = Totals;
    fn sub(self, o: Totals) -> Totals {
        Totals {
            steps: self.steps - o.steps,
            newton: self.newton - o.newton,
            solves: self.solves - o.solves,
            contacts: self.contacts - o.contacts,
        }
    }
}

fn totals(batch: &dyn Batch) -> Totals {
    let mut t = Totals::default();
    for w in 0..batch.nworld() {
        let s = batch.stats(w);
        t.steps += s.accepted;
        t.newton += s.newton_iterations;
        t.solves += s.solves;
        t.contacts += s.contacts;
    }
    t
}

/// One untimed `advance` of `step` (s) before a measurement (a software
/// adapter compiles each kernel at its first launch).
fn warm_up(batch: &mut dyn Batch, step: f64) {
    batch.advance(step).expect("warm-up advance");
    let _ = batch.times();
}

/// Wall time (s) and what the worlds did, or why it could not run:
/// `horizon` (s) in `advance` calls of `step` (s) each, every world's clock
/// read at the end (the GPU batch returns from `advance` before the device
/// is done; reading waits for it), then the statistics and statuses (not
/// timed, and outside what `counters` (the device's, when given) counts).
fn measure(
    batch: &mut dyn Batch,
    horizon: f64,
    step: f64,
    counters: Option<&GpuContext>,
) -> Result<(f64, Totals, Option<GpuCounters>), String> {
    let calls = (horizon / step).round().max(1.0) as usize;
    let before = totals(batch);
    let c0 = counters.map(|c| c.counters());
    let t = Instant::now();
    for _ in 0..calls {
        batch.advance(horizon / calls as f64).map_err(|e| e.to_string())?;
    }
    let _ = batch.times();
    let wall = t.elapsed().as_secs_f64();
    let used = counters.zip(c0).map(|(c, c0)| c.counters() - c0);
    let failed = (0..batch.nworld()).filter(|&w| batch.status(w) != WorldStatus::Ok).count();
    if failed > 0 {
        eprintln!("  ({failed} worlds failed)");
    }
    Ok((wall, totals(batch) - before, used))
}

/// What one GPU measurement found.
struct GpuRow {
    wall: f64,
    work: Totals,
    /// Host waits, dispatches and bytes read per `advance` call.
    waits: f64,
    launches: f64,
    /// Worlds run by the Newton solve launches per `advance` call (a world
    /// once per launch its solve was unfinished in).
    solve_worlds: f64,
    bytes_per_step: f64,
    device_bytes: u64,
    setup: f64,
    /// GPU time per launch of the stage pass, its world-steps and how it was timed.
    stages: Option<(Vec<LaunchTime>, u64, &'static str)>,
}

/// How a measurement runs.
#[derive(Clone, Copy)]
struct Plan {
    horizon: f64,
    step: f64,
    stages: bool,
    /// The structured factorization by elimination levels (`--levels`).
    levels: bool,
    /// The factorization over the dof tree where it pays (not `--no-tree`).
    tree: bool,
}

fn gpu_row(
    ctx: &Arc<GpuContext>,
    scene: &Scene,
    start: &(Vec<f64>, Vec<f64>),
    mode: &Mode,
    n: usize,
    options: &GpuBatchOptions,
    plan: Plan,
) -> Result<GpuRow, String> {
    let t0 = Instant::now();
    let mut b = GpuBatch::with_options(ctx.clone(), scene.model.clone(), n, mode.clone(), options.clone())
        .map_err(|e| format!("{n} worlds refused: {e}"))?;
    b.set_level_factorization(plan.levels);
    if !plan.tree {
        b.set_tree_factorization(false);
    }
    init(&mut b, start);
    let _ = b.times();
    let setup = t0.elapsed().as_secs_f64();
    warm_up(&mut b, plan.step.min(plan.horizon));
    let listed = b.solve_world_launches();
    let (wall, work, c) = measure(&mut b, plan.horizon, plan.step, Some(ctx))?;
    let listed = b.solve_world_launches().wrapping_sub(listed);
    let c = c.expect("counted");
    let calls = (plan.horizon / plan.step).round().max(1.0);
    let stages = if plan.stages {
        // The same advances again (from the same start: the worlds are
        // deterministic), every launch timed.
        init(&mut b, start);
        warm_up(&mut b, plan.step.min(plan.horizon));
        let how = if b.enable_profiling(1 << 15).unwrap_or(false) {
            "timestamps"
        } else {
            b.enable_host_timing();
            "host timing"
        };
        let (_, w, _) = measure(&mut b, plan.horizon, plan.step, None)?;
        let (times, missed) = b.profile().map_err(|e| e.to_string())?;
        if missed > 0 {
            eprintln!("  ({missed} launches not timed: query set full)");
        }
        Some((times, w.steps, how))
    } else {
        None
    };
    Ok(GpuRow {
        wall,
        work,
        waits: c.waits as f64 / calls,
        launches: c.dispatches as f64 / calls,
        solve_worlds: listed as f64 / calls,
        bytes_per_step: c.bytes_read as f64 / work.steps.max(1) as f64,
        device_bytes: b.device_bytes() / n as u64,
        setup,
        stages,
    })
}

/// The CPU batch's row: `CpuBatch<f64>`, or `CpuBatch<f32>` with `f32`
/// (the GPU's precision: its Newton iterations per solve compare with the
/// device's).
fn cpu_row(
    scene: &Scene,
    start: &(Vec<f64>, Vec<f64>),
    mode: &Mode,
    n: usize,
    plan: Plan,
    f32: bool,
) -> Result<(f64, Totals), String> {
    let mut b: Box<dyn Batch> = if f32 {
        Box::new(CpuBatch::<f32>::new(scene.model.clone(), n, mode.clone()))
    } else {
        Box::new(CpuBatch::<f64>::new(scene.model.clone(), n, mode.clone()))
    };
    init(b.as_mut(), start);
    warm_up(b.as_mut(), plan.step.min(plan.horizon));
    measure(b.as_mut(), plan.horizon, plan.step, None).map(|(wall, work, _)| (wall, work))
}

/// A rate with a unit prefix (k, M).
fn si(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else if x >= 10.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// The output tables, filled row by row and printed at the end.
#[derive(Default)]
struct Report {
    rows: Vec<String>,
    stages: Vec<String>,
    notes: Vec<String>,
    rl: Vec<String>,
}

impl Report {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        scene: &str,
        mname: &str,
        n: usize,
        horizon: f64,
        gpu: &Result<GpuRow, String>,
        cpu: Option<&Result<(f64, Totals), String>>,
    ) {
        let cpu_rate = match cpu {
            Some(Ok((wall, t))) => {
                self.notes.push(format!(
                    "{scene}, {mname}, {n} worlds: CPU {:.2} Newton iterations per solve, {:.1} contacts per world",
                    t.newton as f64 / t.solves.max(1) as f64,
                    t.contacts as f64 / t.steps.max(1) as f64
                ));
                Some(t.steps as f64 / wall)
            }
            Some(Err(e)) => {
                self.notes.push(format!("{scene}, {mname}, {n} worlds: CPU: {e}"));
                None
            }
            None => None,
        };
        let cpu_cell = cpu_rate.map_or("–".into(), si);
        let g = match gpu {
            Ok(g) => g,
            Err(e) => {
                self.rows.push(format!("| {scene} | {mname} | {n} | – | – | – | – | – | – | – | – | {cpu_cell} | – |"));
                if !e.is_empty() {
                    self.notes.push(format!("{scene}, {mname}: GPU: {e}"));
                }
                return;
            }
        };
        let rate = g.work.steps as f64 / g.wall;
        let rtf = n as f64 * horizon / g.wall;
        let contacts = g.work.contacts as f64 / g.work.steps.max(1) as f64;
        let newton = g.work.newton as f64 / g.work.solves.max(1) as f64;
        let gpu_us = g.stages.as_ref().map_or("–".into(), |(times, steps, how)| {
            let total: f64 = times.iter().map(|t| t.seconds).sum();
            let mark = if *how == "timestamps" { "" } else { " (host)" };
            format!("{:.3}{mark}", total * 1e6 / (*steps).max(1) as f64)
        });
        let ratio = cpu_rate.map_or("–".into(), |c| format!("{:.2}", rate / c));
        self.rows.push(format!(
            "| {scene} | {mname} | {n} | {} | {} | {contacts:.1} | {newton:.2} | {:.1} | {gpu_us} | {:.0} | {:.1} | {cpu_cell} | {ratio} |",
            si(rate),
            si(rtf),
            g.launches,
            g.device_bytes as f64 / 1024.0,
            g.setup,
        ));
        self.notes.push(format!(
            "{scene}, {mname}, {n} worlds: {:.2} host waits, {:.1} dispatches and {:.1} world-solve launches per advance, {:.1} bytes read per world-step",
            g.waits, g.launches, g.solve_worlds, g.bytes_per_step
        ));
        if let Some((times, steps, how)) = &g.stages {
            let total: f64 = times.iter().map(|t| t.seconds).sum();
            // Iterations: the launches of the first run of parts (a
            // listing and solve pair may repeat within an iteration).
            let calls = times.first().map_or(0, |t| t.count).max(1);
            for t in times.iter().filter(|t| t.count > 0) {
                self.stages.push(format!(
                    "| {scene} | {mname} | {n} | {} | {:.2} | {:.3} | {:.3} | {:.0} % | {how} |",
                    t.name,
                    t.count as f64 / calls as f64,
                    t.seconds * 1e3,
                    t.seconds * 1e6 / (*steps).max(1) as f64,
                    100.0 * t.seconds / total.max(1e-30),
                ));
            }
        }
    }

    fn print(&self) {
        println!(
            "| scene | mode | worlds | GPU world-steps/s | realtime factor | contacts / world | Newton it. / solve | launches / advance | GPU µs / world-step | device KiB / world | setup [s] | CPU world-steps/s | GPU/CPU |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for r in &self.rows {
            println!("{r}");
        }
        if !self.stages.is_empty() {
            println!("\nGPU time per stage (each launch of an iteration, over the stage pass):\n");
            println!(
                "| scene | mode | worlds | launch | per iteration | total [ms] | per world-step [µs] | share | timed by |"
            );
            println!("|---|---|---|---|---|---|---|---|---|");
            for s in &self.stages {
                println!("{s}");
            }
        }
        if !self.rl.is_empty() {
            println!("\nEnvironment steps per second (random actions, autoresets included):\n");
            println!("| task | envs | GPU env steps/s | GPU physics steps/s | CPU env steps/s | GPU/CPU |");
            println!("|---|---|---|---|---|---|");
            for r in &self.rl {
                println!("{r}");
            }
        }
        if !self.notes.is_empty() {
            println!();
            for n in &self.notes {
                println!("- {n}");
            }
        }
    }
}

/// Environment steps per second of `env` with `actions` (cycled) for
/// `budget` seconds (at least 3 steps) after one untimed step.
fn env_rate<B: Batch>(env: &mut VecEnv<B>, actions: &[Vec<f32>], budget: f64) -> f64 {
    env.reset(Some(0)).expect("reset");
    env.step(&actions[0]).expect("step");
    let mut steps = 0;
    let start = Instant::now();
    while steps < 3 || start.elapsed().as_secs_f64() < budget {
        env.step(&actions[(steps + 1) % actions.len()]).expect("step");
        steps += 1;
    }
    (steps * env.num_envs()) as f64 / start.elapsed().as_secs_f64()
}

/// The RL row of task `name` at `n` envs: the GPU batch with the task on the
/// device, beside the CPU batch, fixed steps (gymnasium's `frame_skip`).
fn rl_row(ctx: &Arc<GpuContext>, name: &str, n: usize, budget: f64, cpu: bool) -> String {
    let Some(dir) = cenic::zoo::shared_dir() else {
        return format!("| {name} | {n} | shared folder not found | | | |");
    };
    let (model, task) = match tasks::make(name, &dir.join("models/gymnasium")) {
        Ok(x) => x,
        Err(e) => return format!("| {name} | {n} | {e} | | | |"),
    };
    let actions = cenic::rl::uniform_actions(&model, n, 16, n as u64);
    let mode = Physics::Fixed.mode(&model);
    let config = EnvConfig::default();
    let frame_skip = task.spec().frame_skip as f64;
    let gpu = GpuBatch::new(ctx.clone(), model.clone(), n, mode.clone())
        .map_err(|e| e.to_string())
        .and_then(|b| device_env(b, task.clone(), config.clone()).map_err(|e| e.to_string()))
        .map(|mut env| env_rate(&mut env, &actions, budget));
    let cpu = cpu.then(|| {
        let mut env = VecEnv::new(CpuBatch::<f64>::new(model.clone(), n, mode), task.clone(), config).unwrap();
        env_rate(&mut env, &actions, budget)
    });
    match gpu {
        Ok(g) => format!(
            "| {name} | {n} | {} | {} | {} | {} |",
            si(g),
            si(g * frame_skip),
            cpu.map_or("–".into(), si),
            cpu.map_or("–".into(), |c| format!("{:.2}", g / c))
        ),
        Err(e) => format!("| {name} | {n} | refused: {e} | | {} | |", cpu.map_or("–".into(), si)),
    }
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// A row of the suite: a scene and mode at some world counts.
struct SuiteRow {
    scene: &'static str,
    /// `Some(dt)`: fixed steps of dt; `None`: error control at accuracy 1e-3.
    fixed: Option<f64>,
    sizes: &'static [usize],
    cpu: bool,
    horizon: f64,
    advance: f64,
    settle: Option<f64>,
}

/// The suite's rows (before scaling). Sized so that all of it, CPU rows
/// included, runs within a few minutes on an H100 or H200 with 16 host
/// threads (`scripts/device_gpu_check.sh`).
fn suite() -> Vec<SuiteRow> {
    let row = |scene, fixed, sizes, cpu, horizon, advance, settle| SuiteRow {
        scene,
        fixed,
        sizes,
        cpu,
        horizon,
        advance,
        settle,
    };
    vec![
        row("humanoid", Some(2e-3), &[1024, 16384][..], true, 0.05, 0.01, None),
        row("humanoid", None, &[1024, 16384], true, 0.05, 0.01, None),
        row("ant", Some(2e-3), &[1024], true, 0.05, 0.01, None),
        row("ant", None, &[1024], true, 0.05, 0.01, None),
        row("clutter20", Some(2e-3), &[256, 4096], true, 0.02, 0.01, None),
        row("clutter20", None, &[256, 4096], true, 0.02, 0.01, None),
        row("cube toss", Some(1e-3), &[65536, 262144, 1048576], false, 0.05, 0.01, Some(0.3)),
    ]
}

/// Environments of the suite's RL rows (before scaling).
const SUITE_ENVS: usize = 16384;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let budget: f64 = arg("--budget").map_or(20.0, |s| s.parse().expect("--budget SECONDS"));
    let max_worlds: usize = arg("--max-worlds").map_or(65536, |s| s.parse().expect("--max-worlds N"));
    let fixed_dt: f64 = arg("--dt").map_or(2e-3, |s| s.parse().expect("--dt SECONDS"));
    let horizon: Option<f64> = arg("--horizon").map(|s| s.parse().expect("--horizon SECONDS"));
    let advance: Option<f64> = arg("--advance").map(|s| s.parse().expect("--advance SECONDS"));
    let settle: Option<f64> = arg("--settle").map(|s| s.parse().expect("--settle SECONDS"));
    let gpu_only = flag("--gpu-only");
    let stages = !flag("--no-stages");
    let levels = flag("--levels");
    let tree = !flag("--no-tree");
    let cpu_f32 = flag("--cpu-f32");
    let options = GpuBatchOptions {
        layout: match arg("--layout").as_deref() {
            Some("world") => Layout::WorldMajor,
            None | Some("field") => Layout::FieldMajor,
            Some(x) => panic!("--layout field|world, not {x}"),
        },
        fusion: match arg("--fusion").as_deref() {
            None | Some("auto") => Fusion::Auto,
            Some("full") => Fusion::Full,
            Some("none") => Fusion::None,
            Some(x) => panic!("--fusion auto|full|none, not {x}"),
        },
        collision_launch: match arg("--collision").as_deref() {
            None | Some("auto") => CollisionLaunch::Auto,
            Some("per-world") => CollisionLaunch::PerWorld,
            Some("per-pair") => CollisionLaunch::PerPair,
            Some(x) => panic!("--collision auto|per-world|per-pair, not {x}"),
        },
        solver_variant: match arg("--solver").as_deref() {
            None => None,
            Some("serial") => Some(SolverVariant::Serial),
            Some("coop") => Some(SolverVariant::Cooperative),
            Some("wide") => Some(SolverVariant::Wide),
            Some(x) => panic!("--solver serial|coop|wide, not {x}"),
        },
        solver_state: match arg("--solver-state").as_deref() {
            None | Some("auto") => None,
            Some("storage") => Some(SolverState::Storage),
            Some(x) => panic!("--solver-state auto|storage, not {x}"),
        },
        ..GpuBatchOptions::default()
    };
    let ctx = match GpuContext::new() {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap().trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    println!("GPU adapter: {}", ctx.describe());
    println!(
        "CPU: {cpu}, {} threads (CpuBatch<{}> on all of them); stage times by {}",
        rayon::current_num_threads(),
        if cpu_f32 { "f32" } else { "f64" },
        if ctx.supports_timestamps() { "timestamp queries" } else { "host timing (no timestamps between dispatches)" }
    );
    println!("load average at start: {}\n", load());
    let mut report = Report::default();
    let all = scenes();
    let scene_by_name = |name: &str| all.iter().find(|s| s.name == name);
    let mode_of = |fixed: Option<f64>| match fixed {
        Some(dt) => (format!("fixed {} ms", dt * 1e3), Mode::Fixed { dt }),
        None => {
            ("accuracy 1e-3".to_string(), Mode::ErrorControlled(CenicParams { accuracy: 1e-3, ..Default::default() }))
        }
    };
    if flag("--suite") {
        let scale: usize = arg("--scale")
            .or_else(|| std::env::var("SUITE_SCALE").ok())
            .map_or(1, |s| s.parse().expect("--scale S (SUITE_SCALE): a positive integer"))
            .max(1);
        if scale > 1 {
            println!("suite scaled down: every world and env count divided by {scale}\n");
        }
        let scaled = |n: usize| (n / scale).max(1);
        let t_suite = Instant::now();
        for r in suite() {
            let Some(scene) = scene_by_name(r.scene) else {
                report.notes.push(format!("{}: scene not found (shared folder missing?)", r.scene));
                continue;
            };
            let mut scene = Scene {
                name: scene.name,
                model: scene.model.clone(),
                key: scene.key,
                horizon: r.horizon,
                settle: scene.settle,
            };
            scene.settle = r.settle.unwrap_or(scene.settle);
            let start = start_state(&scene);
            let (mname, mode) = mode_of(r.fixed);
            let plan = Plan { horizon: r.horizon, step: r.advance, stages, levels, tree };
            for &n in r.sizes {
                let n = scaled(n);
                eprintln!("[{:.0} s] {} {mname} {n}", t_suite.elapsed().as_secs_f64(), scene.name);
                let g = gpu_row(&ctx, &scene, &start, &mode, n, &options, plan);
                let c = (r.cpu && !gpu_only).then(|| cpu_row(&scene, &start, &mode, n, plan, cpu_f32));
                report.add(scene.name, &mname, n, r.horizon, &g, c.as_ref());
            }
        }
        for task in ["Ant-v5", "Humanoid-v5"] {
            eprintln!("[{:.0} s] {task}", t_suite.elapsed().as_secs_f64());
            report.rl.push(rl_row(&ctx, task, scaled(SUITE_ENVS), 2.0, !gpu_only));
        }
        report.print();
        println!("\nsuite: {:.0} s; load average at the end: {}", t_suite.elapsed().as_secs_f64(), load());
        return;
    }
    let sizes: Vec<usize> = match arg("--sizes") {
        Some(list) => list.split(',').map(|x| x.trim().parse().expect("--sizes N,N,...")).collect(),
        None => std::iter::successors(Some(1usize), |n| Some(n * 4)).take_while(|&n| n <= max_worlds).collect(),
    };
    let only_mode = arg("--mode");
    let only = arg("--scene");
    for mut scene in scenes() {
        scene.horizon = horizon.unwrap_or(scene.horizon);
        scene.settle = settle.unwrap_or(scene.settle);
        if only.as_ref().is_some_and(|o| !scene.name.starts_with(o.as_str())) {
            continue;
        }
        let start = start_state(&scene);
        for fixed in [Some(fixed_dt), None] {
            let (mname, mode) = mode_of(fixed);
            if only_mode.as_ref().is_some_and(|m| !mname.starts_with(m.as_str())) {
                continue;
            }
            let plan = Plan { horizon: scene.horizon, step: advance.unwrap_or(scene.horizon), stages, levels, tree };
            let (mut gpu_on, mut cpu_on) = (true, !gpu_only);
            for &n in &sizes {
                if !gpu_on && !cpu_on {
                    break;
                }
                let g =
                    if gpu_on { gpu_row(&ctx, &scene, &start, &mode, n, &options, plan) } else { Err(String::new()) };
                match &g {
                    Ok(r) if r.wall > budget => {
                        gpu_on = false;
                        report.notes.push(format!(
                            "{} {mname}: GPU stops after {n} worlds (over the {budget} s budget)",
                            scene.name
                        ));
                    }
                    Err(_) => gpu_on = false,
                    _ => {}
                }
                let c = cpu_on.then(|| cpu_row(&scene, &start, &mode, n, plan, cpu_f32));
                if let Some(r) = &c
                    && r.as_ref().map_or(true, |(wall, _)| *wall > budget)
                {
                    cpu_on = false;
                    report.notes.push(format!(
                        "{} {mname}: CPU stops after {n} worlds (over the {budget} s budget)",
                        scene.name
                    ));
                }
                report.add(scene.name, &mname, n, scene.horizon, &g, c.as_ref());
            }
        }
    }
    report.print();
    println!("\nload average at the end: {}", load());
}
