//! Work-precision of the seed papers' integrators against CENIC on the same
//! models: cube toss (landing on its corners), clutter20 and the
//! gymnasium humanoid falling, each integrator over its range of steps or
//! accuracies, against one reference per scene (Dormand–Prince at 1e-10
//! for cube toss, CENIC at 1e-6 for the others), itself checked against a
//! second integrator (the distance is the floor of resolvable errors).
//!
//! `cargo run --release --example work_precision_seeds -- [OUT] [--quick] [--cap SECONDS] [--only SCENE]`
//!
//! Writes `OUT/work_precision_seeds.csv` and `OUT/work_precision_seeds.png`
//! (OUT defaults to `out`). Scenes come from `../shared` (skipped with a
//! message when absent).
//!
//! Error of a run: the mean over samples (every 10 ms) of the largest
//! deviation from the reference of any joint: free joints by position (m)
//! and rotation angle (rad), ball joints by angle, hinges and slides by
//! |Δq|. Work: single-thread wall time (best of up to 3 runs while a run
//! takes under 3 s) and geometry passes (kinematics, dynamics, collision
//! and the contact-problem build at one state: the seeds' "function
//! evaluations", independent of machine load). A run that passes the wall
//! time cap (default 60 s) is stopped and reported as skipped, and the
//! tighter settings of that integrator are skipped too.

#[path = "../examples/common/mod.rs"]
mod common;

use cenic::integrator::{
    CenicParams, ExponentialParams, ImplicitEulerParams, Mode, RkParams, TamsiParams, World, WorldStats,
};
use cenic::math::{Quat, Vec3};
use cenic::model::{JointKind, Model};
use plotters::prelude::*;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

const SAMPLE: f64 = 0.01;

/// (integrator, [(cost, error)]) per integrator.
type Series = Vec<(String, Vec<(f64, f64)>)>;
/// (scene, its series) per scene.
type Panels = Vec<(String, Series)>;

struct Scene {
    name: &'static str,
    model: Arc<Model>,
    q0: Vec<f64>,
    v0: Vec<f64>,
    horizon: f64,
    /// The one reference every run is compared with.
    reference: (&'static str, Mode),
    /// A second, independent reference: its distance to the first bounds
    /// the smallest error the comparison can resolve.
    check: (&'static str, Mode),
    /// Sweep to the tightest settings (cheap scenes) or stop a decade earlier.
    full_sweep: bool,
}

/// One integrator setting.
struct Setting {
    method: &'static str,
    parameter: f64,
    mode: Mode,
}

enum Outcome {
    Done { traj: Vec<Vec<f64>>, wall: f64, stats: WorldStats },
    Skipped { at: f64, wall: f64 },
    Failed { at: f64, error: String },
}

fn simulate_once(scene: &Scene, mode: &Mode, cap: f64) -> Outcome {
    let mut w = World::<f64>::new(scene.model.clone(), mode.clone());
    w.sim.set_state(&scene.q0, &scene.v0);
    let n = (scene.horizon / SAMPLE).round() as usize;
    let mut traj = Vec::with_capacity(n);
    let start = Instant::now();
    for _ in 0..n {
        if let Err(e) = w.advance(SAMPLE) {
            return Outcome::Failed { at: w.time(), error: e.describe(&scene.model) };
        }
        traj.push(w.sim.data.q.clone());
        let wall = start.elapsed().as_secs_f64();
        if wall > cap {
            return Outcome::Skipped { at: w.time(), wall };
        }
    }
    Outcome::Done { traj, wall: start.elapsed().as_secs_f64(), stats: w.stats }
}

/// Best of up to three runs while a run takes under 3 s.
fn simulate(scene: &Scene, mode: &Mode, cap: f64) -> Outcome {
    let mut best = simulate_once(scene, mode, cap);
    for _ in 0..2 {
        let Outcome::Done { wall, .. } = &best else { break };
        if *wall > 3.0 {
            break;
        }
        if let Outcome::Done { wall: w2, .. } = simulate_once(scene, mode, cap)
            && let Outcome::Done { wall, .. } = &mut best
        {
            *wall = wall.min(w2);
        }
    }
    best
}

/// Mean over samples of the largest joint deviation (m or rad).
fn trajectory_error(model: &Model, a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    let mut sum = 0.0;
    for (qa, qb) in a.iter().zip(b) {
        let mut worst: f64 = 0.0;
        for j in &model.joints {
            let k = j.qpos_adr;
            let angle = |k: usize| Quat::from_slice(&qa[k..k + 4]).angle_to(Quat::from_slice(&qb[k..k + 4]));
            let d = match j.kind {
                JointKind::Free => {
                    let dp = (Vec3::from_slice(&qa[k..k + 3]) - Vec3::from_slice(&qb[k..k + 3])).norm();
                    dp.max(angle(k + 3))
                }
                JointKind::Ball => angle(k),
                JointKind::Hinge | JointKind::Slide => (qa[k] - qb[k]).abs(),
            };
            worst = worst.max(d);
        }
        sum += worst;
    }
    sum / a.len() as f64
}

fn settings(quick: bool, full: bool) -> Vec<Setting> {
    let cut = |v: &'static [f64]| if full { v } else { &v[..v.len() - 1] };
    let accuracies: &[f64] = if quick { &[1e-1, 1e-2, 1e-3] } else { cut(&[1e-1, 1e-2, 1e-3, 1e-4, 1e-5]) };
    let steps: &[f64] = if quick { &[1e-2, 1e-3] } else { cut(&[1e-2, 3e-3, 1e-3, 3e-4, 1e-4]) };
    let rk_acc: &[f64] = if quick { &[1e-2, 1e-4] } else { cut(&[1e-2, 1e-3, 1e-4, 1e-5, 1e-6]) };
    let mut out = vec![];
    for &a in accuracies {
        let mode = Mode::ErrorControlled(CenicParams { accuracy: a, ..Default::default() });
        out.push(Setting { method: "cenic", parameter: a, mode });
    }
    for &h in steps {
        out.push(Setting { method: "fixed_icf", parameter: h, mode: Mode::Fixed { dt: h } });
    }
    for &h in steps {
        let mode = Mode::Tamsi(TamsiParams { dt: h, ..Default::default() });
        out.push(Setting { method: "tamsi", parameter: h, mode });
    }
    for &h in steps {
        let mode = Mode::Exponential(ExponentialParams { dt: h, ..Default::default() });
        out.push(Setting { method: "exponential", parameter: h, mode });
    }
    for &a in rk_acc {
        let mode = Mode::RungeKutta(RkParams { accuracy: a, ..Default::default() });
        out.push(Setting { method: "rk45", parameter: a, mode });
    }
    for &a in accuracies {
        let mode = Mode::ImplicitEuler(ImplicitEulerParams { accuracy: a, ..Default::default() });
        out.push(Setting { method: "implicit_euler", parameter: a, mode });
    }
    out
}

fn shared(rel: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared").join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("SKIPPED: {} not found (the shared inputs are expected next to the repository)", p.display());
        None
    }
}

fn cenic(a: f64) -> Mode {
    Mode::ErrorControlled(CenicParams { accuracy: a, ..Default::default() })
}

fn rk(a: f64) -> Mode {
    Mode::RungeKutta(RkParams { accuracy: a, ..Default::default() })
}

fn scenes(quick: bool) -> Result<Vec<Scene>, Box<dyn std::error::Error>> {
    let mut out = vec![];
    // Cube toss is cheap: Dormand–Prince at 1e-10 (converged to ~1e-6 m)
    // is the reference, CENIC at 1e-8 the check. The others: CENIC at 1e-6
    // (a decade below the tightest setting swept), Dormand–Prince the check.
    let (tight, check) = if quick { (1e-6, 1e-4) } else { (1e-6, 1e-5) };
    if let Some(p) = shared("scenes/cube_toss.xml") {
        let model = Arc::new(Model::from_mjcf_file(&p)?);
        let key = model.keyframe("toss").ok_or("cube_toss.xml has no keyframe 'toss'")?.clone();
        let horizon = if quick { 0.5 } else { 2.0 };
        let (reference, check) = if quick {
            (("rk45 1e-8", rk(1e-8)), ("cenic 1e-6", cenic(1e-6)))
        } else {
            (("rk45 1e-10", rk(1e-10)), ("cenic 1e-8", cenic(1e-8)))
        };
        out.push(Scene {
            name: "cube_toss",
            q0: key.qpos,
            v0: key.qvel,
            model,
            horizon,
            reference,
            check,
            full_sweep: true,
        });
    }
    if let Some(p) = shared("scenes/clutter20.xml") {
        let model = Arc::new(Model::from_mjcf_file(&p)?);
        let horizon = if quick { 0.2 } else { 0.5 };
        out.push(Scene {
            name: "clutter20",
            q0: model.qpos0.clone(),
            v0: vec![0.0; model.nv],
            model,
            horizon,
            reference: ("cenic 1e-6", cenic(tight)),
            check: ("rk45 1e-5", rk(check)),
            full_sweep: false,
        });
    }
    if let Some(p) = shared("models/gymnasium/humanoid.xml") {
        let model = Arc::new(Model::from_mjcf_file(&p)?);
        let horizon = if quick { 0.3 } else { 1.0 };
        out.push(Scene {
            name: "humanoid",
            q0: model.qpos0.clone(),
            v0: vec![0.0; model.nv],
            model,
            horizon,
            reference: ("cenic 1e-6", cenic(tight)),
            check: ("rk45 1e-5", rk(check)),
            full_sweep: false,
        });
    }
    Ok(out)
}

/// CENIC's wall time (or geometry passes) at error `e`, interpolated
/// log-log along its curve (None outside its range).
fn at_error(curve: &[(f64, f64)], e: f64) -> Option<f64> {
    let mut pts: Vec<(f64, f64)> = curve.iter().map(|&(w, err)| (err.ln(), w.ln())).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts.windows(2).find(|p| p[0].0 <= e.ln() && e.ln() <= p[1].0).map(|p| {
        let t = if p[1].0 > p[0].0 { (e.ln() - p[0].0) / (p[1].0 - p[0].0) } else { 0.0 };
        (p[0].1 + t * (p[1].1 - p[0].1)).exp()
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let cap: f64 = flag("--cap").map(|s| s.parse()).transpose()?.unwrap_or(60.0);
    let only = flag("--only");
    let skip_values: Vec<String> = [flag("--cap"), flag("--only")].into_iter().flatten().collect();
    let out_dir =
        args.iter().find(|a| !a.starts_with("--") && !skip_values.contains(a)).cloned().unwrap_or_else(|| "out".into());
    std::fs::create_dir_all(&out_dir)?;
    rayon::ThreadPoolBuilder::new().num_threads(1).build_global().ok();

    let mut csv = std::fs::File::create(format!("{out_dir}/work_precision_seeds.csv"))?;
    writeln!(csv, "scene,method,parameter,wall_s,error,accepted,rejected,geometry_passes,status")?;
    let mut panels: Panels = vec![];
    for scene in scenes(quick)?.iter().filter(|s| only.as_deref().is_none_or(|o| o == s.name)) {
        eprintln!("{} ({} s): reference {} …", scene.name, scene.horizon, scene.reference.0);
        let Outcome::Done { traj: reference, wall, stats } = simulate_once(scene, &scene.reference.1, f64::INFINITY)
        else {
            return Err(format!("{}: the reference run failed", scene.name).into());
        };
        eprintln!("  reference: {wall:.2} s, {} steps, {} geometry passes", stats.accepted, stats.geometry_passes);
        writeln!(
            csv,
            "{},reference {},,{wall:.6},0,{},{},{},ok",
            scene.name, scene.reference.0, stats.accepted, stats.rejected, stats.geometry_passes
        )?;
        match simulate_once(scene, &scene.check.1, 4.0 * cap) {
            Outcome::Done { traj, wall, stats } => {
                let e = trajectory_error(&scene.model, &traj, &reference);
                eprintln!("  check {}: {wall:.2} s, error vs the reference {e:.3e}", scene.check.0);
                writeln!(
                    csv,
                    "{},check {},,{wall:.6},{e:.6e},{},{},{},ok",
                    scene.name, scene.check.0, stats.accepted, stats.rejected, stats.geometry_passes
                )?;
            }
            _ => {
                eprintln!("  check {}: not completed within {} s", scene.check.0, 4.0 * cap);
                writeln!(csv, "{},check {},,,,,,,not completed within {} s", scene.name, scene.check.0, 4.0 * cap)?;
            }
        }
        let mut series: Series = vec![];
        let mut passes: Series = vec![];
        let mut given_up: Vec<&str> = vec![];
        for s in settings(quick, scene.full_sweep) {
            let line = |csv: &mut std::fs::File, wall: f64, e: f64, st: Option<&WorldStats>, status: &str| {
                let (a, r, g) = st.map_or((0, 0, 0), |s| (s.accepted, s.rejected, s.geometry_passes));
                writeln!(csv, "{},{},{:e},{wall:.6},{e:.6e},{a},{r},{g},{status}", scene.name, s.method, s.parameter)
            };
            if given_up.contains(&s.method) {
                line(&mut csv, f64::NAN, f64::NAN, None, "skipped (a looser setting passed the cap)")?;
                continue;
            }
            match simulate(scene, &s.mode, cap) {
                Outcome::Done { traj, wall, stats } => {
                    let e = trajectory_error(&scene.model, &traj, &reference);
                    eprintln!(
                        "  {:>14} {:>8.0e}: wall {wall:8.4} s, error {e:.3e}, {} steps ({} rejected), {} geometry passes",
                        s.method, s.parameter, stats.accepted, stats.rejected, stats.geometry_passes
                    );
                    line(&mut csv, wall, e, Some(&stats), "ok")?;
                    let push = |v: &mut Series, x: f64| match v.iter_mut().find(|p| p.0 == s.method) {
                        Some(p) => p.1.push((x, e)),
                        None => v.push((s.method.to_string(), vec![(x, e)])),
                    };
                    push(&mut series, wall);
                    push(&mut passes, stats.geometry_passes as f64);
                }
                Outcome::Skipped { at, wall } => {
                    eprintln!(
                        "  {:>14} {:>8.0e}: stopped at t = {at:.3} s after {wall:.1} s (cap {cap} s)",
                        s.method, s.parameter
                    );
                    line(&mut csv, wall, f64::NAN, None, &format!("over the {cap} s cap at t = {at:.3} s"))?;
                    given_up.push(s.method);
                }
                Outcome::Failed { at, error } => {
                    eprintln!("  {:>14} {:>8.0e}: failed at t = {at:.4} s: {error}", s.method, s.parameter);
                    line(
                        &mut csv,
                        f64::NAN,
                        f64::NAN,
                        None,
                        &format!("failed at t = {at:.4} s: {}", error.replace(',', ";")),
                    )?;
                }
            }
        }
        // Ratios to CENIC at equal error (wall time and geometry passes).
        let cenic_w = series.iter().find(|p| p.0 == "cenic").map(|p| p.1.clone()).unwrap_or_default();
        let cenic_g = passes.iter().find(|p| p.0 == "cenic").map(|p| p.1.clone()).unwrap_or_default();
        eprintln!("  {}: cost / CENIC's cost at equal error (wall time; geometry passes):", scene.name);
        for ((name, pts), (_, gpts)) in series.iter().zip(&passes).filter(|(p, _)| p.0 != "cenic") {
            let mut cells = vec![];
            for (&(w, e), &(g, _)) in pts.iter().zip(gpts) {
                if let (Some(cw), Some(cg)) = (at_error(&cenic_w, e), at_error(&cenic_g, e)) {
                    cells.push(format!("{e:.1e}: {:.2}; {:.2}", w / cw, g / cg));
                }
            }
            eprintln!(
                "    {name:>14}: {}",
                if cells.is_empty() { "no overlap in error".into() } else { cells.join(" | ") }
            );
        }
        panels.push((scene.name.to_string(), series));
    }
    let png = format!("{out_dir}/work_precision_seeds.png");
    plot(&png, &panels)?;
    eprintln!("wrote {out_dir}/work_precision_seeds.csv and {png}");
    Ok(())
}

/// One log-log panel per scene: error vs wall time per integrator. Text
/// needs a TrueType font; DejaVu Sans is used when installed, otherwise the
/// plot has no labels.
fn plot(path: &str, panels: &[(String, Series)]) -> Result<(), Box<dyn std::error::Error>> {
    let labels = common::register_font();
    let n = panels.len().max(1);
    let root = BitMapBackend::new(path, (640 * n as u32, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let areas = root.split_evenly((1, n));
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    let methods = ["cenic", "fixed_icf", "tamsi", "exponential", "rk45", "implicit_euler"];
    for ((name, series), area) in panels.iter().zip(areas) {
        let all: Vec<(f64, f64)> = series.iter().flat_map(|s| s.1.iter().copied()).filter(|p| p.1 > 0.0).collect();
        if all.is_empty() {
            continue;
        }
        let (xmin, xmax) = all.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
        let (ymin, ymax) = all.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));
        let mut builder = ChartBuilder::on(&area);
        builder.margin(15).x_label_area_size(if labels { 45 } else { 10 }).y_label_area_size(if labels {
            65
        } else {
            10
        });
        if labels {
            builder.caption(format!("{name} (single thread)"), ("sans-serif", 22));
        }
        let mut chart =
            builder.build_cartesian_2d((xmin * 0.7..xmax * 1.4).log_scale(), (ymin * 0.5..ymax * 2.0).log_scale())?;
        let mut mesh = chart.configure_mesh();
        if labels {
            mesh.x_desc("wall time [s]")
                .y_desc("mean error vs reference [m, rad]")
                .x_label_formatter(&|x| format!("{x:.0e}"))
                .y_label_formatter(&|y| format!("{y:.0e}"));
        } else {
            mesh.disable_x_axis().disable_y_axis();
        }
        mesh.draw()?;
        for (method, pts) in series {
            let i = methods.iter().position(|m| m == method).unwrap_or(0);
            let c = colors[i % colors.len()];
            let pts: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.1 > 0.0).collect();
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))?;
            let line = chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?;
            if labels {
                line.label(method.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
            }
        }
        if labels {
            chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        }
    }
    root.present()?;
    Ok(())
}
