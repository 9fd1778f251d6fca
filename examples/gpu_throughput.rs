//! GPU batch throughput for BENCHMARKS.md (issue 6): accepted world-steps/s
//! of `GpuBatch` against the number of worlds, side by side with `CpuBatch`
//! (f64, all cores) on the same workload in the same run, for cube toss,
//! clutter (20 objects) and the Gymnasium ant and humanoid, in fixed-step
//! (2 ms) and error-controlled (accuracy 1e-3) mode.
//!
//! ```text
//! cargo run --release --example gpu_throughput -- [--quick] [--budget SECONDS] [--max-worlds N]
//!     [--scene NAME] [--mode fixed|accuracy] [--sizes N,N,...] [--dt SECONDS] [--horizon SECONDS]
//!     [--advance SECONDS] [--settle SECONDS] [--gpu-only] [--profile] [--layout field|world] [--fusion auto|full|none]
//!     [--collision auto|per-world|per-pair] [--solver serial|coop|wide] [--solver-state auto|storage]
//! ```
//!
//! `--dt` sets the fixed step (default 2 ms), `--horizon` the simulated time
//! per measurement (default per scene), `--advance` the interval of each
//! `advance` call (default: the whole horizon in one call; an RL loop
//! advances by one control period at a time), `--settle` the simulated
//! time before the common start state (default per scene: the clutter
//! 0.8 s, the robots 0.4 s, the cube toss 0: its toss is in flight until
//! 0.25 s, so a short horizon from there measures no contact), `--gpu-only`
//! skips the CPU batch. Below the table, one line per GPU measurement gives what the
//! host asked of the device: blocking waits and dispatches per `advance`
//! call, dispatches per iteration, bytes read back per world-step, and the
//! device memory per world. `--profile` adds the GPU time of each launch of
//! an iteration (timestamp queries, where the adapter has them). The other
//! options pick the GPU batch's structure (`GpuBatchOptions`: per-world
//! layout, fusion of the trial parts, collision launch, solver stage and
//! where it keeps its dense state), to compare them on one device.
//!
//! Every world starts from the scene's start state (the clutter after
//! 0.8 s, piled up in the bin, and the robots after 0.4 s, on the floor,
//! so that the measurement is contact-bound; the start's contact count is
//! printed) with its own small velocity perturbation, so error-controlled worlds run on different
//! clocks. A series (scene, mode, path) stops growing once one measurement
//! takes longer than the budget (default 20 s of wall time), when the
//! next size would exceed `--max-worlds` (default 65536), or when the
//! device refuses the buffers; the table says which.

use cenic::batch::{Batch, CpuBatch};
use cenic::gpu::icf::{SolverState, SolverVariant};
use cenic::gpu::{CollisionLaunch, Fusion, GpuBatch, GpuBatchOptions, GpuContext, Layout};
use cenic::integrator::{CenicParams, Mode};
use cenic::model::Model;
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
    // The robots start from their state after 0.4 s (standing or fallen on
    // the floor): from qpos0 the ant's first contact is at 0.2 s and the
    // humanoid's at 0.15 s, so a measurement from there ran in flight
    // (as the H200 rows of 2026-11-26 did; BENCHMARKS.md).
    for (name, horizon) in [("ant", 0.2), ("humanoid", 0.1)] {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../shared/models/gymnasium/{name}.xml"));
        match Model::from_mjcf_file(&path) {
            Ok(m) => v.push(Scene { name, model: Arc::new(m), key: None, horizon, settle: 0.4 }),
            Err(e) => eprintln!("{name} skipped: {} ({e})", path.display()),
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

/// One untimed `advance` of `step` (s) before a measurement (a software
/// adapter compiles each kernel at its first launch); the accepted steps so far.
fn warm_up(batch: &mut dyn Batch, step: f64) -> u64 {
    batch.advance(step).expect("warm-up advance");
    let _ = batch.times();
    (0..batch.nworld()).map(|w| batch.stats(w).accepted).sum()
}

/// Wall time (s) and accepted steps after `accepted0`, or why it could not
/// run: `horizon` (s) in `advance` calls of `step` (s) each, every world's
/// clock read at the end (the GPU batch returns from `advance` before the
/// device is done; reading waits for it), then the statistics and statuses
/// (not timed).
fn measure(batch: &mut dyn Batch, horizon: f64, step: f64, accepted0: u64) -> Result<(f64, u64), String> {
    let calls = (horizon / step).round().max(1.0) as usize;
    let t = Instant::now();
    for _ in 0..calls {
        batch.advance(horizon / calls as f64).map_err(|e| e.to_string())?;
    }
    let _ = batch.times();
    let wall = t.elapsed().as_secs_f64();
    let failed = (0..batch.nworld()).filter(|&w| batch.status(w) != cenic::batch::WorldStatus::Ok).count();
    if failed > 0 {
        eprintln!("  ({failed} worlds failed)");
    }
    Ok((wall, (0..batch.nworld()).map(|w| batch.stats(w).accepted).sum::<u64>() - accepted0))
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let quick = args.iter().any(|a| a == "--quick");
    let budget: f64 = arg("--budget").map_or(if quick { 5.0 } else { 20.0 }, |s| s.parse().expect("--budget SECONDS"));
    let max_worlds: usize = arg("--max-worlds").map_or(65536, |s| s.parse().expect("--max-worlds N"));
    let fixed_dt: f64 = arg("--dt").map_or(2e-3, |s| s.parse().expect("--dt SECONDS"));
    let horizon: Option<f64> = arg("--horizon").map(|s| s.parse().expect("--horizon SECONDS"));
    let advance: Option<f64> = arg("--advance").map(|s| s.parse().expect("--advance SECONDS"));
    let settle: Option<f64> = arg("--settle").map(|s| s.parse().expect("--settle SECONDS"));
    let gpu_only = args.iter().any(|a| a == "--gpu-only");
    let profile = args.iter().any(|a| a == "--profile");
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
    let mut counts = vec![];
    let mut profiles = vec![];
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
    println!("CPU: {cpu}, {} threads (CpuBatch<f64> on all of them)", rayon::current_num_threads());
    println!("load average at start: {}; budget {budget} s per measurement\n", load());
    println!(
        "| scene | mode | worlds | GPU wall [s] | GPU world-steps/s | CPU wall [s] | CPU world-steps/s | GPU/CPU |"
    );
    println!("|---|---|---|---|---|---|---|---|");
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
        let contacts = {
            let mut w = cenic::integrator::World::<f64>::new(scene.model.clone(), Mode::Fixed { dt: 1e-3 });
            w.sim.set_state(&start.0, &start.1);
            w.sim.compute_geometry();
            w.sim.contacts.len()
        };
        eprintln!("{}: start after {} s, {contacts} contacts", scene.name, scene.settle);
        let fixed_name = format!("fixed {} ms", fixed_dt * 1e3);
        for (mname, mode) in [
            (fixed_name.as_str(), Mode::Fixed { dt: fixed_dt }),
            ("accuracy 1e-3", Mode::ErrorControlled(CenicParams { accuracy: 1e-3, ..Default::default() })),
        ] {
            if only_mode.as_ref().is_some_and(|m| !mname.starts_with(m.as_str())) {
                continue;
            }
            let (mut gpu_on, mut cpu_on) = (true, !gpu_only);
            let step = advance.unwrap_or(scene.horizon);
            let mut stopped = vec![];
            for &n in &sizes {
                if !gpu_on && !cpu_on {
                    break;
                }
                let gpu = if gpu_on {
                    match GpuBatch::with_options(ctx.clone(), scene.model.clone(), n, mode.clone(), options.clone()) {
                        Ok(mut b) => {
                            init(&mut b, &start);
                            let accepted0 = warm_up(&mut b, step.min(scene.horizon));
                            if profile && !b.enable_profiling(1 << 15).unwrap_or(false) {
                                eprintln!("no timestamps between dispatches on this adapter: no profile");
                            }
                            let (c0, i0) = (ctx.counters(), b.iterations());
                            let r = measure(&mut b, scene.horizon, step, accepted0);
                            let (c, iters) = (ctx.counters() - c0, b.iterations() - i0);
                            if let Ok((_, steps)) = &r {
                                let calls = (scene.horizon / step).round().max(1.0);
                                counts.push(format!(
                                    "{} | {mname} | {n} | {:.2} | {:.1} | {:.1} | {:.1} | {} |",
                                    scene.name,
                                    c.waits as f64 / calls,
                                    c.dispatches as f64 / calls,
                                    c.dispatches as f64 / iters.max(1) as f64,
                                    c.bytes_read as f64 / (*steps).max(1) as f64,
                                    b.device_bytes() / n as u64,
                                ));
                            }
                            if let Ok((times, missed)) = b.profile() {
                                let total: f64 = times.iter().map(|t| t.seconds).sum();
                                for t in times.iter().filter(|t| t.count > 0) {
                                    profiles.push(format!(
                                        "| {} | {mname} | {n} | {} | {} | {:.1} | {:.2} | {:.0} % |",
                                        scene.name,
                                        t.name,
                                        t.count,
                                        t.seconds * 1e3,
                                        t.seconds * 1e6 / t.count as f64,
                                        100.0 * t.seconds / total.max(1e-30),
                                    ));
                                }
                                if missed > 0 {
                                    profiles.push(format!(
                                        "| {} | {mname} | {n} | ({missed} launches not timed) | | | | |",
                                        scene.name
                                    ));
                                }
                            }
                            if r.as_ref().map_or(true, |(wall, _)| *wall > budget) {
                                gpu_on = false;
                                stopped.push(format!("GPU stops after {n} worlds (over the {budget} s budget)"));
                            }
                            r.ok()
                        }
                        Err(e) => {
                            gpu_on = false;
                            stopped.push(format!("GPU: {n} worlds refused: {e}"));
                            None
                        }
                    }
                } else {
                    None
                };
                let cpu = if cpu_on {
                    let mut b = CpuBatch::<f64>::new(scene.model.clone(), n, mode.clone());
                    init(&mut b, &start);
                    let accepted0 = warm_up(&mut b, step.min(scene.horizon));
                    let r = measure(&mut b, scene.horizon, step, accepted0);
                    if r.as_ref().map_or(true, |(wall, _)| *wall > budget) {
                        cpu_on = false;
                        stopped.push(format!("CPU stops after {n} worlds (over the {budget} s budget)"));
                    }
                    r.ok()
                } else {
                    None
                };
                let cell = |r: &Option<(f64, u64)>| match r {
                    Some((wall, steps)) => (format!("{wall:.3}"), format!("{:.0}", *steps as f64 / wall)),
                    None => ("–".into(), "–".into()),
                };
                let ratio = match (&gpu, &cpu) {
                    (Some((gw, gs)), Some((cw, cs))) => format!("{:.2}", (*gs as f64 / gw) / (*cs as f64 / cw)),
                    _ => "–".into(),
                };
                let ((gw, gr), (cw, cr)) = (cell(&gpu), cell(&cpu));
                println!("| {} | {mname} | {n} | {gw} | {gr} | {cw} | {cr} | {ratio} |", scene.name);
            }
            for s in stopped {
                println!("|  | {mname} | {s} | | | | | |");
            }
        }
    }
    println!(
        "\nPer GPU measurement (host side; advance = one `advance` call, iteration = one trial of every running world):\n"
    );
    println!(
        "| scene | mode | worlds | waits / advance | dispatches / advance | dispatches / iteration | bytes read / world-step | device bytes / world |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for c in counts {
        println!("| {c}");
    }
    if !profiles.is_empty() {
        println!("\nGPU time per launch (timestamp queries):\n");
        println!("| scene | mode | worlds | launch | count | total [ms] | per launch [µs] | share |");
        println!("|---|---|---|---|---|---|---|---|");
        for p in profiles {
            println!("{p}");
        }
    }
    println!("\nload average at the end: {}", load());
}
