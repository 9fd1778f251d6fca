//! Receding-horizon control of the `cenic::mpc` tasks with the
//! gradient planner (iLQR on the interval Jacobians, with and without
//! contacts from distance), predictive sampling and the hybrid of the two
//! (sampling, then iLQR + CFD refinement; `--planner hybrid`).
//!
//! ```text
//! cargo run --release --example mpc -- --task pusher --planner ilqr-cfd --seed 3      # one episode + PNG
//! cargo run --release --example mpc -- --eval --task pusher --goals 20                # the evaluation table
//! cargo run --release --example mpc -- --suite --goals 20                             # the suite (tasks::SUITE): a table, CSV and plot per task
//!     [--planners ilqr-cfd,ilqr,sampling,hybrid,sampling-gpu,hybrid-gpu (the sampling rounds on the GPU batch)] [--iters N | --budget-ms MS | --cpu-ms MS] [--samples S] [--out DIR]
//!     [--share F (hybrid: sampling's share of the budget)]
//!     [--horizon H] [--cfd-width M] [--cfd-strength N] [--reuse N] [--cfd-slack F] [--reach W (pusher)] [--verbose]
//!     [--plant-dt S (the plant at fixed steps of S s instead of CENIC 1e-3)] [--plan-dt S (the planner's fixed step)]
//!     [--plan-accuracy A (the planner under CENIC at accuracy A instead)] [--keep-best 0|1 (iLQR: end on the best plan)]
//!     [--cfd-boost F (iLQR + CFD: phantom strength continuation factor)]
//!     [--shaping reach=W,follow=0|1,nose=W,plane=W,tines=0|1,effort=W,velocity=W,limits=W,reach3d=0|1,terminal=W,cage=W (pusher: tasks::PusherCost)]
//! ```
//!
//! One episode writes `DIR/mpc_<task>_<planner>_<seed>.png`: the tracked
//! point's path in the plane with its goal (speed over time for the half
//! cheetah), and the running cost and planning CPU time per interval; and
//! `DIR/mpc_<task>_<planner>_<seed>.html`, its replay page (`cenic view`),
//! and `DIR/mpc_<task>_<planner>_<seed>.csv`, its states and controls. The
//! evaluation runs `--goals` seeded goals per planner at the same budget
//! and prints one Markdown row per planner: success rate, median and mean
//! final error, mean episode cost, planning CPU time per control interval
//! (mean and 95th percentile) and its ratio to the interval (real-time
//! factor of planning on one core), planning wall time per interval,
//! iterations (linearizations) per interval; per-goal rows go to
//! `DIR/mpc_eval_<task>.csv`. Set `RAYON_NUM_THREADS=1` for one core.
//!
//! `--suite` runs the evaluation over every task of `tasks::SUITE` (a name
//! the library does not know is reported and skipped; `--tasks a,b` picks
//! some), each task at its own budget, the same for every planner (default
//! planners: ilqr-cfd, ilqr, sampling, hybrid), writes per task the CSV and
//! `DIR/mpc_suite_<task>.png` (success rate, the final errors of every goal
//! with their median, planning CPU time per interval, mean and 95th
//! percentile, per planner) and ends with one Markdown table: task ×
//! planner → success rate, median final error, planning CPU ms per interval
//! (mean, p95) and the real-time factor of planning (interval over p95
//! planning CPU time: above 1 is faster than real time on one core).

mod common;

use cenic::gpu::GpuContext;
use cenic::mpc::tasks::{BUILT_IN, Measure, NAMES, PusherCost, SUITE, Task};
use cenic::mpc::{
    Budget, Episode, Hybrid, HybridOptions, Ilqr, IlqrOptions, Planner, PredictiveSampling, SamplingOptions, Workspace,
    closed_loop,
};
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

struct Args {
    task: String,
    planners: Vec<String>,
    seed: u64,
    goals: u64,
    eval: bool,
    suite: bool,
    tasks: Option<Vec<String>>,
    budget: Option<Budget>,
    samples: usize,
    out: PathBuf,
    horizon: Option<usize>,
    cfd_width: Option<f64>,
    cfd_strength: Option<f64>,
    reuse: Option<usize>,
    cfd_slack: Option<f64>,
    keep_best: Option<bool>,
    boost: Option<f64>,
    reach: Option<f64>,
    shaping: Option<String>,
    plant_dt: Option<f64>,
    plan_dt: Option<f64>,
    plan_accuracy: Option<f64>,
    share: f64,
    verbose: bool,
}

fn parse() -> Args {
    let mut a = Args {
        task: "pusher".into(),
        planners: vec!["ilqr-cfd".into()],
        seed: 0,
        goals: 20,
        eval: false,
        suite: false,
        tasks: None,
        budget: None,
        samples: 32,
        out: PathBuf::from("target/mpc"),
        horizon: None,
        cfd_width: None,
        cfd_strength: None,
        reuse: None,
        cfd_slack: None,
        keep_best: None,
        boost: None,
        reach: None,
        shaping: None,
        plant_dt: None,
        plan_dt: None,
        plan_accuracy: None,
        share: HybridOptions::default().sampling_share,
        verbose: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    let mut planners_given = false;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--task" => a.task = v,
            "--tasks" => a.tasks = Some(v.split(',').map(String::from).collect()),
            "--planner" | "--planners" => {
                a.planners = v.split(',').map(String::from).collect();
                planners_given = true;
            }
            "--seed" => a.seed = v.parse().expect("--seed N"),
            "--goals" => a.goals = v.parse().expect("--goals N"),
            "--iters" => a.budget = Some(Budget::Iterations(v.parse().expect("--iters N"))),
            "--budget-ms" => {
                a.budget =
                    Some(Budget::WallTime(Duration::from_secs_f64(v.parse::<f64>().expect("--budget-ms MS") * 1e-3)))
            }
            "--cpu-ms" => {
                a.budget = Some(Budget::CpuTime(Duration::from_secs_f64(v.parse::<f64>().expect("--cpu-ms MS") * 1e-3)))
            }
            "--samples" => a.samples = v.parse().expect("--samples N"),
            "--out" => a.out = PathBuf::from(v),
            "--horizon" => a.horizon = Some(v.parse().expect("--horizon H")),
            "--cfd-width" => a.cfd_width = Some(v.parse().expect("--cfd-width M")),
            "--cfd-strength" => a.cfd_strength = Some(v.parse().expect("--cfd-strength N")),
            "--reuse" => a.reuse = Some(v.parse().expect("--reuse N")),
            "--cfd-slack" => a.cfd_slack = Some(v.parse().expect("--cfd-slack F")),
            "--cfd-boost" => a.boost = Some(v.parse().expect("--cfd-boost F")),
            "--keep-best" => a.keep_best = Some(v.parse::<u8>().expect("--keep-best 0|1") != 0),
            "--reach" => a.reach = Some(v.parse().expect("--reach W")),
            "--shaping" => a.shaping = Some(v),
            "--plant-dt" => a.plant_dt = Some(v.parse().expect("--plant-dt S")),
            "--plan-dt" => a.plan_dt = Some(v.parse().expect("--plan-dt S")),
            "--plan-accuracy" => a.plan_accuracy = Some(v.parse().expect("--plan-accuracy A")),
            "--share" => a.share = v.parse().expect("--share F"),
            "--eval" => {
                a.eval = true;
                i += 1;
                continue;
            }
            "--suite" => {
                a.suite = true;
                i += 1;
                continue;
            }
            "--verbose" => {
                a.verbose = true;
                i += 1;
                continue;
            }
            other => panic!("unknown argument {other} (see the example's docs)"),
        }
        i += 2;
    }
    if a.eval && !planners_given {
        a.planners = vec!["ilqr-cfd".into(), "ilqr".into(), "sampling".into()];
    }
    if a.suite && !planners_given {
        a.planners = vec!["ilqr-cfd".into(), "ilqr".into(), "sampling".into(), "hybrid".into()];
    }
    if !a.suite {
        assert!(NAMES.contains(&a.task.as_str()), "--task: one of {NAMES:?}");
    }
    a
}

/// The task `name` of `seed` with the command line's overrides.
fn make_task(a: &Args, name: &str, models: &Path, seed: u64) -> Task {
    let mut t = if name == "pusher" {
        let mut c = PusherCost::default();
        if let Some(w) = a.reach {
            c.reach = w;
        }
        for kv in a.shaping.iter().flat_map(|s| s.split(',')) {
            let (k, v) = kv.split_once('=').expect("--shaping KEY=VALUE,...");
            let x: f64 = v.parse().unwrap_or_else(|_| panic!("--shaping {k}: not a number: {v}"));
            match k {
                "reach" => c.reach = x,
                "follow" => c.reach_follows = x != 0.0,
                "plane" => c.plane = x,
                "tines" => c.plane_tines = x != 0.0,
                "nose" => c.nose = x,
                "effort" => c.effort = x,
                "velocity" => c.velocity = x,
                "limits" => c.limits = x,
                "reach3d" => c.reach_3d = x != 0.0,
                "terminal" => c.push_terminal = x,
                "cage" => c.cage = x,
                _ => panic!(
                    "--shaping: unknown key {k} (reach, follow, nose, plane, tines, effort, velocity, limits, reach3d, terminal, cage)"
                ),
            }
        }
        cenic::mpc::tasks::pusher_with(models, seed, c).expect("task")
    } else {
        assert!(a.reach.is_none() && a.shaping.is_none(), "--reach, --shaping: only for the pusher");
        Task::new(name, models, seed).expect("task")
    };
    if let Some(dt) = a.plant_dt {
        t.plant_mode = cenic::integrator::Mode::Fixed { dt };
    }
    if let Some(dt) = a.plan_dt {
        t.problem.mode = cenic::integrator::Mode::Fixed { dt };
    }
    if let Some(accuracy) = a.plan_accuracy {
        t.problem.mode =
            cenic::integrator::Mode::ErrorControlled(cenic::integrator::CenicParams { accuracy, ..Default::default() });
    }
    if let Some(b) = a.budget {
        t.budget = b;
    }
    if let Some(r) = a.reuse {
        t.ilqr.reuse = r;
    }
    if let Some(b) = a.keep_best {
        t.ilqr.keep_best = b;
    }
    if let Some(f) = a.boost {
        t.ilqr.cfd_boost = f;
    }
    if let Some(s) = a.cfd_slack {
        t.ilqr.cfd_slack = s;
    }
    if let Some(h) = a.horizon {
        t.problem.horizon = h;
    }
    if let Some(w) = a.cfd_width {
        t.cfd.width = w;
    }
    if let Some(f) = a.cfd_strength {
        t.cfd.strength = f;
    }
    t
}

fn planner(name: &str, task: &Task, samples: usize, seed: u64, share: f64) -> Box<dyn Planner> {
    let p = task.problem.clone();
    let sampling = SamplingOptions { samples, seed, ..Default::default() };
    let with_cfd = IlqrOptions { cfd: Some(task.cfd), ..task.ilqr.clone() };
    let hybrid = HybridOptions { sampling: sampling.clone(), ilqr: with_cfd.clone(), sampling_share: share };
    match name {
        "ilqr-cfd" => Box::new(Ilqr::new(p, with_cfd)),
        "ilqr" => Box::new(Ilqr::new(p, IlqrOptions { cfd: None, ..task.ilqr.clone() })),
        "sampling" => Box::new(PredictiveSampling::new(p, sampling).expect("sampling planner")),
        "hybrid" => Box::new(Hybrid::new(p, hybrid).expect("hybrid planner")),
        "sampling-gpu" => {
            Box::new(PredictiveSampling::on_gpu(p, sampling, gpu()).expect("sampling planner on the GPU"))
        }
        "hybrid-gpu" => Box::new(Hybrid::on_gpu(p, hybrid, gpu()).expect("hybrid planner on the GPU")),
        other => panic!("unknown planner {other} (ilqr-cfd, ilqr, sampling, hybrid, sampling-gpu, hybrid-gpu)"),
    }
}

/// The GPU of the `-gpu` planners, opened once (the usual `WGPU_*` variables choose it).
fn gpu() -> Arc<GpuContext> {
    static CTX: OnceLock<Arc<GpuContext>> = OnceLock::new();
    CTX.get_or_init(|| {
        let ctx = GpuContext::new().expect("a GPU adapter for the -gpu planners");
        eprintln!("GPU: {}", ctx.adapter_name());
        Arc::new(ctx)
    })
    .clone()
}

fn run(task: &Task, planner: &mut dyn Planner) -> Episode {
    let mut plant = task.plant();
    closed_loop(planner, &mut plant, &task.x0, task.steps, task.budget).expect("closed loop")
}

fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[((s.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let a = parse();
    let shared = cenic::zoo::shared_dir();
    let models = shared.as_ref().map(|s| s.join("models/gymnasium")).unwrap_or_default();
    if !a.suite && !BUILT_IN.contains(&a.task.as_str()) && !models.join("reacher.xml").exists() {
        eprintln!(
            "skipping {}: the shared gymnasium models are not at {} (set CENIC_SHARED)",
            a.task,
            models.display()
        );
        return;
    }
    std::fs::create_dir_all(&a.out).expect("output folder");
    if !a.eval && !a.suite {
        let task = make_task(&a, &a.task, &models, a.seed);
        for name in &a.planners {
            let mut p = planner(name, &task, a.samples, a.seed, a.share);
            let ep = run(&task, p.as_mut());
            if a.verbose {
                let paths: Vec<Vec<[f64; 3]>> = (0..task.draw.len()).map(|i| path_of(&task, &ep, i)).collect();
                // The planner's model's one-interval prediction from each plant state, against the plant.
                let (nx, nq, nc) = (task.problem.nx(), task.problem.model.nq, task.problem.nc());
                let mut model_plant = cenic::mpc::Plant::new(
                    task.problem.model.clone(),
                    task.problem.mode.clone(),
                    cenic::batch::WorldParams::default(),
                );
                let mut ws = Workspace::new(task.problem.model.clone());
                for (k, s) in ep.plans.iter().enumerate() {
                    let mismatch = if (k + 2) * nx <= ep.states.len() {
                        model_plant.set_state(&ep.states[k * nx..(k + 1) * nx]);
                        model_plant.step(&ep.controls[k * nc..(k + 1) * nc], task.problem.dt).expect("model step");
                        let xp = model_plant.state();
                        let xt = &ep.states[(k + 1) * nx..(k + 2) * nx];
                        let mut err = |i: usize| {
                            let (_, b, o) = task.draw[i];
                            let (a, c) = (ws.point(&xp[..nq], b, o), ws.point(&xt[..nq], b, o));
                            1e3 * ((a[0] - c[0]).powi(2) + (a[1] - c[1]).powi(2) + (a[2] - c[2]).powi(2)).sqrt()
                        };
                        let errs: Vec<String> = (0..task.draw.len()).map(|i| format!("{:.1}", err(i))).collect();
                        format!(", model vs plant after one interval (mm): {}", errs.join("/"))
                    } else {
                        String::new()
                    };
                    let gap = if paths.len() > 1 {
                        let (a, b) = (paths[0][k], paths[1][k]);
                        // The second point relative to the first, along the first's direction to the goal and across it.
                        let g = task.goal;
                        let (ex, ey) = (g[0] - a[0], g[1] - a[1]);
                        let n = (ex * ex + ey * ey).sqrt().max(1e-9);
                        let (rx, ry) = (b[0] - a[0], b[1] - a[1]);
                        format!(
                            ", goal {:.3} m, {} at {:+.3} along {:+.3} across {:+.3} up",
                            n,
                            task.draw[1].0,
                            (rx * ex + ry * ey) / n,
                            (ry * ex - rx * ey) / n,
                            b[2] - a[2]
                        )
                    } else {
                        String::new()
                    };
                    let u = &ep.controls[k * task.problem.nc()..(k + 1) * task.problem.nc()];
                    eprintln!(
                        "  interval {k:3}: cost {:.5} -> {:.5}, iterations {}, accepted {}, rollouts {}, {:.1} ms cpu{gap}, |u| {:.2}",
                        s.initial_cost,
                        s.cost,
                        s.iterations,
                        s.accepted,
                        s.rollouts,
                        1e3 * s.cpu_seconds,
                        u.iter().map(|x| x * x).sum::<f64>().sqrt(),
                    );
                    eprintln!("      {mismatch}");
                }
            }
            let path = a.out.join(format!("mpc_{}_{}_{}.png", a.task, name, a.seed));
            println!(
                "{} {} seed {}: error {:.4} ({}), cost {:.4}, planning {:.1} ms CPU ({:.1} ms wall) per {:.0} ms interval, {} planning errors{}",
                a.task,
                p.name(),
                a.seed,
                task.error(&ep),
                if task.success(&ep) { "success" } else { "failure" },
                ep.total_cost(),
                1e3 * ep.mean_plan_cpu_seconds(),
                1e3 * ep.mean_plan_seconds(),
                1e3 * task.problem.dt,
                ep.planning_errors.len(),
                ep.failure.as_ref().map(|f| format!(", plant failed: {f}")).unwrap_or_default()
            );
            plot(&task, &ep, &p.name(), &path).expect("plot");
            let page = path.with_extension("html");
            replay(&task, &ep, &p.name(), &page).expect("replay page");
            println!("wrote {}", page.display());
            let csv = path.with_extension("csv");
            episode_csv(&task, &ep, &csv).expect("episode CSV");
            println!("wrote {}", csv.display());
        }
        return;
    }
    if a.suite {
        suite(&a, &models);
        return;
    }
    evaluate(&a, &a.task, &models);
}

/// One planner's results on one task: per goal the final error, per
/// control interval the planning CPU time.
struct Row {
    task: String,
    planner: String,
    successes: usize,
    errors: Vec<f64>,
    cpu_ms: Vec<f64>,
    dt_ms: f64,
    tolerance: f64,
    /// The error's unit.
    unit: &'static str,
}

/// The evaluation of task `name` over `--goals` seeds for every planner:
/// prints its table and writes its CSV.
fn evaluate(a: &Args, name: &str, models: &Path) -> Vec<Row> {
    let threads = rayon::current_num_threads();
    let task0 = make_task(a, name, models, 0);
    let dt_ms = 1e3 * task0.problem.dt;
    println!(
        "task {}: {} goals, budget {:?} per interval, {} rayon thread(s), planner {:?}, dt {} s × H {}, hybrid sampling share {}",
        name, a.goals, task0.budget, threads, task0.problem.mode, task0.problem.dt, task0.problem.horizon, a.share
    );
    println!(
        "| task | planner | success | final error median (mean) | episode cost mean | plan CPU ms / interval mean (p95) | CPU / interval | plan wall ms / interval mean | iterations (linearizations) / interval |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let csv_path = a.out.join(format!("mpc_eval_{name}.csv"));
    let mut csv = String::from(
        "task,planner,seed,success,error,cost,plan_cpu_ms_mean,plan_cpu_ms_p95,plan_wall_ms_mean,iterations,linearizations,planning_errors,failure\n",
    );
    let mut rows = vec![];
    for planner_name in &a.planners {
        let (mut ok, mut errs, mut costs, mut cpu, mut wall, mut iters, mut lins) =
            (0, vec![], vec![], vec![], vec![], vec![], vec![]);
        let mut pname = planner_name.clone();
        for seed in 0..a.goals {
            let task = make_task(a, name, models, seed);
            let mut p = planner(planner_name, &task, a.samples, seed, a.share);
            pname = p.name();
            let ep = run(&task, p.as_mut());
            let (e, s) = (task.error(&ep), task.success(&ep));
            ok += s as usize;
            let c: Vec<f64> = ep.plans.iter().map(|s| 1e3 * s.cpu_seconds).collect();
            let w: Vec<f64> = ep.plans.iter().map(|s| 1e3 * s.seconds).collect();
            let per = |f: fn(&cenic::mpc::PlanStats) -> usize| {
                ep.plans.iter().map(|s| f(s) as f64).sum::<f64>() / ep.plans.len().max(1) as f64
            };
            let (it, li) = (per(|s| s.iterations), per(|s| s.linearizations));
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
            csv += &format!(
                "{},{},{},{},{:.5},{:.5},{:.3},{:.3},{:.3},{:.2},{:.2},{},{}\n",
                name,
                planner_name,
                seed,
                s,
                e,
                ep.total_cost(),
                mean(&c),
                percentile(&c, 0.95),
                mean(&w),
                it,
                li,
                ep.planning_errors.len(),
                ep.failure.clone().unwrap_or_default().replace(',', ";")
            );
            eprintln!(
                "  {name} {planner_name} seed {seed}: error {e:.4} {}, plan {:.1} ms CPU / {:.1} ms wall, {it:.2} iterations{}",
                if s { "ok" } else { "FAIL" },
                mean(&c),
                mean(&w),
                approach(&task, &ep)
            );
            // Written after every episode, so that a run cut short keeps what it measured.
            std::fs::write(&csv_path, &csv).expect("write CSV");
            errs.push(e);
            costs.push(ep.total_cost());
            cpu.extend(c);
            wall.extend(w);
            iters.push(it);
            lins.push(li);
        }
        let n = a.goals as f64;
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        println!(
            "| {} | {} | {}/{} ({:.0} %) | {:.4} ({:.4}) | {:.4} | {:.1} ({:.1}) | {:.2} | {:.1} | {:.2} ({:.2}) |",
            name,
            pname,
            ok,
            a.goals,
            100.0 * ok as f64 / n,
            percentile(&errs, 0.5),
            mean(&errs),
            mean(&costs),
            mean(&cpu),
            percentile(&cpu, 0.95),
            mean(&cpu) / dt_ms,
            mean(&wall),
            mean(&iters),
            mean(&lins)
        );
        rows.push(Row {
            task: name.to_string(),
            planner: pname,
            successes: ok,
            errors: errs,
            cpu_ms: cpu,
            dt_ms,
            tolerance: task0.tolerance,
            unit: match task0.measure {
                Measure::FinalDistance(_) => "m",
                Measure::FinalAngle(_) => "rad",
                Measure::MeanSpeed { .. } => "relative",
            },
        });
    }
    std::fs::write(&csv_path, csv).expect("write CSV");
    eprintln!("wrote {}", csv_path.display());
    rows
}

/// For a final-distance task: the closest the tracked point came to its
/// target, when, and when it first came within the tolerance (to tell a
/// slow push from one that overshoots or drifts off at the end).
fn approach(task: &Task, ep: &Episode) -> String {
    let Measure::FinalDistance(d) = &task.measure else { return String::new() };
    let (nx, dt) = (task.problem.nx(), task.problem.dt);
    let mut ws = Workspace::new(task.problem.model.clone());
    let dist: Vec<f64> = ep.states.chunks(nx).map(|x| d.distance(&mut ws, x)).collect();
    let (k_min, min) =
        dist.iter().copied().enumerate().fold((0, f64::INFINITY), |a, (k, e)| if e < a.1 { (k, e) } else { a });
    let first = dist.iter().position(|&e| e <= task.tolerance);
    format!(
        ", closest {min:.3} m at {:.2} s, first within tolerance {}",
        k_min as f64 * dt,
        first.map(|k| format!("at {:.2} s", k as f64 * dt)).unwrap_or_else(|| "never".into())
    )
}

/// The episode's replay page (`cenic view`): the plant's states, the goal
/// where the model carries it (the pusher's and the reacher's goal bodies).
fn replay(task: &Task, ep: &Episode, planner: &str, path: &Path) -> Result<(), String> {
    let (nx, nq) = (task.problem.nx(), task.problem.model.nq);
    let qpos: Vec<f64> = ep.states.chunks(nx).flat_map(|x| x[..nq].iter().copied()).collect();
    let times: Vec<f64> = (0..ep.states.len() / nx).map(|k| k as f64 * ep.dt).collect();
    let model = &task.problem.model;
    let track = cenic::view::Track::from_qpos(model, &format!("{} {planner}", task.name), &times, &qpos)?;
    let html = cenic::view::replay_html(
        model,
        &[track],
        cenic::view::Layout::SideBySide,
        &format!("MPC {} ({planner})", task.name),
    )?;
    std::fs::write(path, html).map_err(|e| format!("{}: {e}", path.display()))
}

/// The episode as CSV, one row per control interval: time (s), the plant's
/// state at its start (`x0…`: the model's qpos then qvel) and the control
/// applied over it (`u0…`, the model's actuator order);
/// the last row has the final state and no control. A replay in another
/// simulator reads it (`scripts/mujoco_pusher_replay.py`).
fn episode_csv(task: &Task, ep: &Episode, path: &Path) -> Result<(), String> {
    let (nx, nc) = (task.problem.nx(), task.problem.nc());
    let mut out = String::from("t");
    for i in 0..nx {
        out += &format!(",x{i}");
    }
    for i in 0..nc {
        out += &format!(",u{i}");
    }
    out.push('\n');
    for (k, x) in ep.states.chunks(nx).enumerate() {
        out += &format!("{}", k as f64 * ep.dt);
        for v in x {
            out += &format!(",{v:e}");
        }
        for i in 0..nc {
            match ep.controls.get(k * nc + i) {
                Some(u) => out += &format!(",{u:e}"),
                None => out.push(','),
            }
        }
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}

/// World positions of the drawn point `i` over the episode.
fn path_of(task: &Task, ep: &Episode, i: usize) -> Vec<[f64; 3]> {
    let nx = task.problem.nx();
    let nq = task.problem.model.nq;
    let mut ws = Workspace::new(task.problem.model.clone());
    let (_, body, offset) = task.draw[i];
    ep.states.chunks(nx).map(|x| ws.point(&x[..nq], body, offset)).collect()
}

fn plot(task: &Task, ep: &Episode, planner: &str, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    if !common::register_font() {
        eprintln!("no TrueType font found (DejaVu Sans): {} not written", path.display());
        return Ok(());
    }
    let root = BitMapBackend::new(path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(600);
    let nx = task.problem.nx();
    let dt = ep.dt;
    match &task.measure {
        Measure::MeanSpeed { dof, goal } => {
            let nq = task.problem.model.nq;
            let v: Vec<(f64, f64)> =
                ep.states.chunks(nx).enumerate().map(|(k, x)| (k as f64 * dt, x[nq + dof])).collect();
            let t_end = (v.len() as f64 - 1.0).max(1.0) * dt;
            let hi = v.iter().map(|p| p.1).fold(goal * 1.3, f64::max);
            let lo = v.iter().map(|p| p.1).fold(-0.5, f64::min);
            let mut c = ChartBuilder::on(&left)
                .caption(format!("{} ({planner}): forward speed", task.name), ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(55)
                .build_cartesian_2d(0.0..t_end, lo..hi)?;
            c.configure_mesh().x_desc("time (s)").y_desc("speed (m/s)").draw()?;
            c.draw_series(LineSeries::new(v, BLUE.stroke_width(2)))?
                .label("plant")
                .legend(|(x, y)| PathElement::new([(x, y), (x + 15, y)], BLUE.stroke_width(2)));
            c.draw_series(LineSeries::new([(0.0, *goal), (t_end, *goal)], RED.stroke_width(2)))?
                .label("goal")
                .legend(|(x, y)| PathElement::new([(x, y), (x + 15, y)], RED.stroke_width(2)));
            c.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        }
        Measure::FinalDistance(_) | Measure::FinalAngle(_) => {
            let paths: Vec<Vec<[f64; 3]>> = (0..task.draw.len()).map(|i| path_of(task, ep, i)).collect();
            let goal = task.goal;
            let all = paths.iter().flatten().chain(std::iter::once(&goal));
            let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
            for p in all {
                x0 = x0.min(p[0]);
                x1 = x1.max(p[0]);
                y0 = y0.min(p[1]);
                y1 = y1.max(p[1]);
            }
            let span = (x1 - x0).max(y1 - y0).max(0.05) * 0.6 + 0.02;
            let (cx, cy) = (0.5 * (x0 + x1), 0.5 * (y0 + y1));
            let mut c = ChartBuilder::on(&left)
                .caption(format!("{} ({planner}): paths seen from above", task.name), ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(55)
                .build_cartesian_2d((cx - span)..(cx + span), (cy - span)..(cy + span))?;
            c.configure_mesh().x_desc("x (m)").y_desc("y (m)").draw()?;
            let colors = [BLUE, GREEN, MAGENTA];
            for (i, pts) in paths.iter().enumerate().skip(1) {
                let col = colors[i % 3];
                let xy: Vec<(f64, f64)> = pts.iter().map(|p| (p[0], p[1])).collect();
                c.draw_series(LineSeries::new(xy, col.stroke_width(1)))?
                    .label(task.draw[i].0.clone())
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 15, y)], col.stroke_width(1)));
            }
            let xy: Vec<(f64, f64)> = paths[0].iter().map(|p| (p[0], p[1])).collect();
            c.draw_series(LineSeries::new(xy.clone(), BLUE.stroke_width(2)))?
                .label(task.draw[0].0.clone())
                .legend(|(x, y)| PathElement::new([(x, y), (x + 15, y)], BLUE.stroke_width(2)));
            c.draw_series([Circle::new(xy[0], 5, BLUE.filled())])?
                .label("start")
                .legend(|(x, y)| Circle::new((x, y), 4, BLUE.filled()));
            c.draw_series([Circle::new((goal[0], goal[1]), 6, RED.filled())])?
                .label(match task.measure {
                    Measure::FinalAngle(_) => format!("goal (tolerance {:.0}°)", task.tolerance.to_degrees()),
                    _ => format!("goal (tolerance {} m)", task.tolerance),
                })
                .legend(|(x, y)| Circle::new((x, y), 4, RED.filled()));
            c.draw_series([Cross::new(*xy.last().unwrap(), 7, BLACK.stroke_width(2))])?
                .label("end")
                .legend(|(x, y)| Cross::new((x, y), 4, BLACK.stroke_width(2)));
            c.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        }
    }
    let cost: Vec<(f64, f64)> = ep.running_cost.iter().enumerate().map(|(k, c)| (k as f64 * dt, *c)).collect();
    let plan: Vec<(f64, f64)> =
        ep.plans.iter().enumerate().map(|(k, s)| (k as f64 * dt, 1e3 * s.cpu_seconds)).collect();
    let t_end = (cost.len().max(1) as f64) * dt;
    let c_hi = cost.iter().map(|p| p.1).fold(1e-9, f64::max) * 1.1;
    let p_hi = plan.iter().map(|p| p.1).fold(1e3 * dt, f64::max) * 1.1;
    let mut c = ChartBuilder::on(&right)
        .caption("running cost (blue) and planning CPU time (grey)", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .right_y_label_area_size(55)
        .build_cartesian_2d(0.0..t_end, 0.0..c_hi)?
        .set_secondary_coord(0.0..t_end, 0.0..p_hi);
    c.configure_mesh().x_desc("time (s)").y_desc("cost rate").draw()?;
    c.configure_secondary_axes().y_desc("planning CPU time (ms)").draw()?;
    c.draw_series(LineSeries::new(cost, BLUE.stroke_width(2)))?;
    c.draw_secondary_series(LineSeries::new(plan, RGBColor(120, 120, 120).stroke_width(1)))?;
    c.draw_secondary_series(LineSeries::new([(0.0, 1e3 * dt), (t_end, 1e3 * dt)], RED.mix(0.6).stroke_width(1)))?;
    root.present()?;
    println!("wrote {}", path.display());
    Ok(())
}

/// `--suite`: the evaluation of every task of [`SUITE`] (or `--tasks`),
/// a plot per task and one summary table.
fn suite(a: &Args, models: &Path) {
    let names: Vec<String> = a.tasks.clone().unwrap_or_else(|| SUITE.iter().map(|s| s.to_string()).collect());
    let mut all = vec![];
    for name in &names {
        if !NAMES.contains(&name.as_str()) {
            eprintln!("suite: skipping '{name}': not a task of this build (known: {})", NAMES.join(", "));
            continue;
        }
        if !BUILT_IN.contains(&name.as_str()) && !models.join("reacher.xml").exists() {
            eprintln!(
                "suite: skipping '{name}': the shared gymnasium models are not at {} (set CENIC_SHARED)",
                models.display()
            );
            continue;
        }
        let rows = evaluate(a, name, models);
        let path = a.out.join(format!("mpc_suite_{name}.png"));
        match suite_plot(name, &rows, &path) {
            Ok(true) => eprintln!("wrote {}", path.display()),
            Ok(false) => eprintln!("no TrueType font found (DejaVu Sans): {} not written", path.display()),
            Err(e) => eprintln!("{}: {e}", path.display()),
        }
        all.extend(rows);
    }
    println!();
    println!(
        "| task | planner | success | final error median | plan CPU ms / interval mean (p95) | real-time factor (interval / p95) |"
    );
    println!("|---|---|---|---|---|---|");
    for r in &all {
        let n = r.errors.len();
        let p95 = percentile(&r.cpu_ms, 0.95);
        println!(
            "| {} | {} | {}/{} ({:.0} %) | {:.4} {} | {:.1} ({:.1}) | {:.2} |",
            r.task,
            r.planner,
            r.successes,
            n,
            100.0 * r.successes as f64 / n.max(1) as f64,
            percentile(&r.errors, 0.5),
            r.unit,
            r.cpu_ms.iter().sum::<f64>() / r.cpu_ms.len().max(1) as f64,
            p95,
            r.dt_ms / p95
        );
    }
}

/// The suite's plot of one task: success rate, final errors (every goal,
/// median marked, the tolerance as a line) and planning CPU time per
/// interval (mean and p95, the interval as a line) per planner. Returns
/// false when no font is found.
fn suite_plot(task: &str, rows: &[Row], path: &Path) -> Result<bool, Box<dyn std::error::Error>> {
    if rows.is_empty() {
        return Ok(true);
    }
    if !common::register_font() {
        return Ok(false);
    }
    let tolerance = rows[0].tolerance;
    let root = BitMapBackend::new(path, (1500, 450)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 3));
    let n = rows.len();
    let xr = -0.5..(n as f64 - 0.5);
    let labels: Vec<String> = rows.iter().map(|r| r.planner.clone()).collect();
    let label = move |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let bar = |i: usize, v: f64, c: RGBColor| Rectangle::new([(i as f64 - 0.3, 0.0), (i as f64 + 0.3, v)], c.filled());
    // Success rate.
    let mut c = ChartBuilder::on(&panels[0])
        .caption(format!("{task}: success rate"), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(xr.clone(), 0.0..100.0)?;
    c.configure_mesh().x_labels(n + 1).x_label_formatter(&label).y_desc("% of goals").disable_x_mesh().draw()?;
    c.draw_series(
        rows.iter()
            .enumerate()
            .map(|(i, r)| bar(i, 100.0 * r.successes as f64 / r.errors.len().max(1) as f64, RGBColor(70, 110, 190))),
    )?;
    // Final errors.
    let hi = rows.iter().flat_map(|r| r.errors.iter().copied()).fold(tolerance, f64::max) * 1.1;
    let mut c = ChartBuilder::on(&panels[1])
        .caption(format!("{task}: final error per goal (bar: median, red: tolerance)"), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(xr.clone(), 0.0..hi)?;
    c.configure_mesh()
        .x_labels(n + 1)
        .x_label_formatter(&label)
        .y_desc(format!("error ({})", rows[0].unit))
        .disable_x_mesh()
        .draw()?;
    for (i, r) in rows.iter().enumerate() {
        let k = r.errors.len().max(1) as f64;
        c.draw_series(
            r.errors
                .iter()
                .enumerate()
                .map(|(j, &e)| Circle::new((i as f64 - 0.25 + 0.5 * j as f64 / k, e), 3, BLUE.mix(0.7).filled())),
        )?;
        let m = percentile(&r.errors, 0.5);
        c.draw_series(LineSeries::new([(i as f64 - 0.3, m), (i as f64 + 0.3, m)], BLACK.stroke_width(2)))?;
    }
    c.draw_series(LineSeries::new([(-0.5, tolerance), (n as f64 - 0.5, tolerance)], RED.mix(0.6).stroke_width(1)))?;
    // Planning CPU time per interval.
    let dt = rows[0].dt_ms;
    let hi = rows.iter().map(|r| percentile(&r.cpu_ms, 0.95)).fold(dt, f64::max) * 1.15;
    let mut c = ChartBuilder::on(&panels[2])
        .caption(format!("{task}: planning CPU / interval (mean, p95; red: interval)"), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(xr, 0.0..hi)?;
    c.configure_mesh().x_labels(n + 1).x_label_formatter(&label).y_desc("ms").disable_x_mesh().draw()?;
    for (i, r) in rows.iter().enumerate() {
        let mean = r.cpu_ms.iter().sum::<f64>() / r.cpu_ms.len().max(1) as f64;
        let p95 = percentile(&r.cpu_ms, 0.95);
        c.draw_series([bar(i, mean, RGBColor(120, 120, 120))])?;
        c.draw_series(LineSeries::new([(i as f64 - 0.3, p95), (i as f64 + 0.3, p95)], BLACK.stroke_width(2)))?;
    }
    c.draw_series(LineSeries::new([(-0.5, dt), (n as f64 - 0.5, dt)], RED.mix(0.6).stroke_width(1)))?;
    root.present()?;
    Ok(true)
}
