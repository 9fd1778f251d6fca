//! Receding-horizon control of the `cenic::mpc` tasks with the
//! gradient planner (iLQR on the interval Jacobians, with and without
//! contacts from distance), predictive sampling and the hybrid of the two
//! (sampling, then iLQR + CFD refinement; `--planner hybrid`).
//!
//! ```text
//! cargo run --release --example mpc -- --task pusher --planner ilqr-cfd --seed 3      # one episode + PNG
//! cargo run --release --example mpc -- --eval --task pusher --goals 20                # the evaluation table
//!     [--planners ilqr-cfd,ilqr,sampling,hybrid,sampling-gpu,hybrid-gpu (the sampling rounds on the GPU batch)] [--iters N | --budget-ms MS | --cpu-ms MS] [--samples S] [--out DIR]
//!     [--share F (hybrid: sampling's share of the budget)]
//!     [--horizon H] [--cfd-width M] [--cfd-strength N] [--reuse N] [--cfd-slack F] [--reach W (pusher)] [--verbose]
//!     [--plant-dt S (the plant at fixed steps of S s instead of CENIC 1e-3)] [--plan-dt S (the planner's fixed step)]
//!     [--plan-accuracy A (the planner under CENIC at accuracy A instead)] [--keep-best 0|1 (iLQR: end on the best plan)]
//!     [--shaping reach=W,follow=0|1,nose=W,plane=W,tines=0|1,effort=W,velocity=W,limits=W,reach3d=0|1,terminal=W,cage=W (pusher: tasks::PusherCost)]
//! ```
//!
//! One episode writes `DIR/mpc_<task>_<planner>_<seed>.png`: the tracked
//! point's path in the plane with its goal (speed over time for the half
//! cheetah), and the running cost and planning CPU time per interval; and
//! `DIR/mpc_<task>_<planner>_<seed>.html`, its replay page (`cenic view`). The
//! evaluation runs `--goals` seeded goals per planner at the same budget
//! and prints one Markdown row per planner: success rate, median and mean
//! final error, mean episode cost, planning CPU time per control interval
//! (mean and 95th percentile) and its ratio to the interval (real-time
//! factor of planning on one core), planning wall time per interval,
//! iterations (linearizations) per interval; per-goal rows go to
//! `DIR/mpc_eval_<task>.csv`. Set `RAYON_NUM_THREADS=1` for one core.

mod common;

use cenic::gpu::GpuContext;
use cenic::mpc::tasks::{Measure, NAMES, PusherCost, Task};
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
    budget: Option<Budget>,
    samples: usize,
    out: PathBuf,
    horizon: Option<usize>,
    cfd_width: Option<f64>,
    cfd_strength: Option<f64>,
    reuse: Option<usize>,
    cfd_slack: Option<f64>,
    keep_best: Option<bool>,
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
        budget: None,
        samples: 32,
        out: PathBuf::from("target/mpc"),
        horizon: None,
        cfd_width: None,
        cfd_strength: None,
        reuse: None,
        cfd_slack: None,
        keep_best: None,
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
    assert!(NAMES.contains(&a.task.as_str()), "--task: one of {NAMES:?}");
    a
}

/// The task of `seed` with the command line's overrides.
fn make_task(a: &Args, models: &Path, seed: u64) -> Task {
    let mut t = if a.task == "pusher" {
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
        Task::new(&a.task, models, seed).expect("task")
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
    if a.task != "billiards" && !models.join("reacher.xml").exists() {
        eprintln!(
            "skipping {}: the shared gymnasium models are not at {} (set CENIC_SHARED)",
            a.task,
            models.display()
        );
        return;
    }
    std::fs::create_dir_all(&a.out).expect("output folder");
    let threads = rayon::current_num_threads();
    if !a.eval {
        let task = make_task(&a, &models, a.seed);
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
        }
        return;
    }
    let task0 = make_task(&a, &models, 0);
    let dt_ms = 1e3 * task0.problem.dt;
    println!(
        "task {}: {} goals, budget {:?} per interval, {} rayon thread(s), planner {:?}, dt {} s × H {}, hybrid sampling share {}",
        a.task, a.goals, task0.budget, threads, task0.problem.mode, task0.problem.dt, task0.problem.horizon, a.share
    );
    println!(
        "| task | planner | success | final error median (mean) | episode cost mean | plan CPU ms / interval mean (p95) | CPU / interval | plan wall ms / interval mean | iterations (linearizations) / interval |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let csv_path = a.out.join(format!("mpc_eval_{}.csv", a.task));
    let mut csv = String::from(
        "task,planner,seed,success,error,cost,plan_cpu_ms_mean,plan_cpu_ms_p95,plan_wall_ms_mean,iterations,linearizations,planning_errors,failure\n",
    );
    for name in &a.planners {
        let (mut ok, mut errs, mut costs, mut cpu, mut wall, mut iters, mut lins) =
            (0, vec![], vec![], vec![], vec![], vec![], vec![]);
        let mut pname = name.clone();
        for seed in 0..a.goals {
            let task = make_task(&a, &models, seed);
            let mut p = planner(name, &task, a.samples, seed, a.share);
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
                a.task,
                name,
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
                "  {name} seed {seed}: error {e:.4} {}, plan {:.1} ms CPU / {:.1} ms wall, {it:.2} iterations{}",
                if s { "ok" } else { "FAIL" },
                mean(&c),
                mean(&w),
                approach(&task, &ep)
            );
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
            a.task,
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
    }
    std::fs::write(&csv_path, csv).expect("write CSV");
    eprintln!("wrote {}", csv_path.display());
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
        Measure::FinalDistance(_) => {
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
                .label(format!("goal (tolerance {} m)", task.tolerance))
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
