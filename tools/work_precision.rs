//! Work-precision: error against a tight reference vs wall time, for CENIC
//! at accuracies 1e-1 … 1e-5 and fixed steps 10 ms … 0.1 ms, on cube toss
//! and a clutter of 20 objects in a bin. Writes `OUT/work_precision.csv` and
//! `OUT/work_precision.png` (OUT = first argument, default `out`).
//!
//! `cargo run --release --example work_precision -- [OUT] [--quick]`
//!
//! Error of a run: the mean over samples (every 10 ms) of the largest
//! position (m) or orientation (rad) deviation of any free body from the
//! reference run (CENIC at accuracy 1e-7; 1e-6 with `--quick`).
//! Wall time: single thread, best of `REPEAT` runs.

#[path = "../examples/common/mod.rs"]
mod common;

use cenic::integrator::{CenicParams, Mode, World};
use cenic::math::{Quat, Vec3};
use cenic::model::{Material, Model};
use plotters::prelude::*;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

const SAMPLE: f64 = 0.01;
const REPEAT: usize = 3;

struct Scene {
    name: &'static str,
    model: Arc<Model>,
    q0: Vec<f64>,
    v0: Vec<f64>,
    horizon: f64,
    reference_accuracy: f64,
}

fn simulate(scene: &Scene, mode: &Mode) -> (Vec<Vec<f64>>, f64, u64) {
    let mut best = f64::INFINITY;
    let mut out = (vec![], 0);
    for _ in 0..REPEAT {
        let mut w = World::<f64>::new(scene.model.clone(), mode.clone());
        w.sim.set_state(&scene.q0, &scene.v0);
        let n = (scene.horizon / SAMPLE).round() as usize;
        let mut traj = Vec::with_capacity(n);
        let start = Instant::now();
        for _ in 0..n {
            w.advance(SAMPLE).expect("simulation failed");
            traj.push(w.sim.data.q.clone());
        }
        best = best.min(start.elapsed().as_secs_f64());
        out = (traj, w.stats.accepted);
    }
    (out.0, best, out.1)
}

/// Mean over samples of the largest free-body deviation (m or rad).
fn trajectory_error(model: &Model, a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    let mut sum = 0.0;
    for (qa, qb) in a.iter().zip(b) {
        let mut worst: f64 = 0.0;
        for j in &model.joints {
            let k = j.qpos_adr;
            let dp = (Vec3::from_slice(&qa[k..k + 3]) - Vec3::from_slice(&qb[k..k + 3])).norm();
            let da = Quat::from_slice(&qa[k + 3..k + 7]).angle_to(Quat::from_slice(&qb[k + 3..k + 7]));
            worst = worst.max(dp).max(da);
        }
        sum += worst;
    }
    sum / a.len() as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out_dir = args.iter().find(|a| !a.starts_with("--")).cloned().unwrap_or_else(|| "out".into());
    std::fs::create_dir_all(&out_dir)?;
    // One thread: the numbers are per-world costs.
    rayon::ThreadPoolBuilder::new().num_threads(1).build_global().ok();

    let cube = Arc::new(cenic::scenes::cube_toss());
    let key = cube.keyframe("toss").unwrap().clone();
    let clutter = Arc::new(cenic::scenes::clutter(
        20,
        Material { stiffness: 2e5, dissipation: 10.0, mu_static: 0.5, mu_dynamic: 0.5, soft: None },
    ));
    let scenes = [
        Scene {
            name: "cube_toss",
            q0: key.qpos.clone(),
            v0: key.qvel.clone(),
            model: cube,
            horizon: if quick { 0.5 } else { 2.0 },
            reference_accuracy: if quick { 1e-6 } else { 1e-7 },
        },
        Scene {
            name: "clutter20",
            q0: clutter.qpos0.clone(),
            v0: vec![0.0; clutter.nv],
            model: clutter,
            horizon: if quick { 0.3 } else { 1.0 },
            reference_accuracy: if quick { 1e-6 } else { 1e-7 },
        },
    ];
    let accuracies = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5];
    let steps = [1e-2, 3e-3, 1e-3, 3e-4, 1e-4];

    let mut csv = std::fs::File::create(format!("{out_dir}/work_precision.csv"))?;
    writeln!(csv, "scene,method,parameter,wall_s,error,steps")?;
    let mut series: Vec<(String, Vec<(f64, f64)>)> = vec![];
    for scene in &scenes {
        eprintln!("{}: reference at accuracy {:e} …", scene.name, scene.reference_accuracy);
        let reference_mode =
            Mode::ErrorControlled(CenicParams { accuracy: scene.reference_accuracy, ..Default::default() });
        let (reference, _, _) = simulate(scene, &reference_mode);
        let mut cenic_pts = vec![];
        for &acc in &accuracies {
            let (traj, wall, n) =
                simulate(scene, &Mode::ErrorControlled(CenicParams { accuracy: acc, ..Default::default() }));
            let e = trajectory_error(&scene.model, &traj, &reference);
            writeln!(csv, "{},cenic,{acc:e},{wall:.6},{e:.6e},{n}", scene.name)?;
            eprintln!("  cenic accuracy {acc:e}: wall {wall:.4} s, error {e:.3e}, {n} steps");
            cenic_pts.push((wall, e));
        }
        let mut fixed_pts = vec![];
        for &h in &steps {
            let (traj, wall, n) = simulate(scene, &Mode::Fixed { dt: h });
            let e = trajectory_error(&scene.model, &traj, &reference);
            writeln!(csv, "{},fixed,{h:e},{wall:.6},{e:.6e},{n}", scene.name)?;
            eprintln!("  fixed step {h:e} s: wall {wall:.4} s, error {e:.3e}, {n} steps");
            fixed_pts.push((wall, e));
        }
        series.push((format!("{} CENIC", scene.name), cenic_pts));
        series.push((format!("{} fixed step", scene.name), fixed_pts));
    }
    plot(&format!("{out_dir}/work_precision.png"), &series)?;
    eprintln!("wrote {out_dir}/work_precision.csv and {out_dir}/work_precision.png");
    Ok(())
}

/// Log-log plot of error vs wall time. Text needs a TrueType font; DejaVu
/// Sans is used when installed, otherwise the plot has no labels.
fn plot(path: &str, series: &[(String, Vec<(f64, f64)>)]) -> Result<(), Box<dyn std::error::Error>> {
    let labels = common::register_font();
    let all: Vec<(f64, f64)> = series.iter().flat_map(|s| s.1.iter().copied()).collect();
    let (xmin, xmax) = all.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (ymin, ymax) = all.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let root = BitMapBackend::new(path, (1000, 700)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(&root);
    builder.margin(20).x_label_area_size(if labels { 50 } else { 10 }).y_label_area_size(if labels { 70 } else { 10 });
    if labels {
        builder.caption("work-precision (single thread)", ("sans-serif", 24));
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
    let colors = [RED, BLUE, GREEN, MAGENTA];
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = colors[i % colors.len()];
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))?;
        let line = chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?;
        if labels {
            line.label(name.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
        }
    }
    if labels {
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    root.present()?;
    Ok(())
}
