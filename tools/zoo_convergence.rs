//! Model-zoo convergence table: every model of
//! `shared/models/gymnasium` and the shared scenes, from the model's
//! initial state for 2 s, with zero controls and with the seeded smooth
//! controls of `cenic::zoo`, under CENIC at accuracies 1e-2 … 1e-6 against
//! a reference run (CENIC at 1e-8 by default).
//!
//! Writes `zoo_convergence.csv` and `zoo_convergence.png` (error against
//! accuracy, one line per case) into the output folder and prints a
//! Markdown table: the largest body-position error over the 10 ms samples,
//! the observed order of the error in the accuracy, steps, rejections,
//! Newton and line-search iterations per accepted step, peak body speed.
//!
//! `cargo run --release --example zoo_convergence -- [--out DIR]
//! [--horizon S] [--reference A] [--reference-for NAME=A[,NAME=A]]
//! [--only NAME[,NAME]] [--accuracies A,B,…]`
//!
//! A case with its own reference accuracy (`--reference-for`, e.g.
//! `clutter20=1e-6`, where 1e-8 would take hours) runs only the accuracies
//! at least 10× looser than its reference.
//!
//! Cases run in parallel (rayon); the wall times in the CSV are per run
//! under that load, not benchmarks.

#[path = "../examples/common/mod.rs"]
mod common;

use cenic::integrator::{CenicParams, Mode};
use cenic::zoo::{self, Case, Run};
use plotters::prelude::*;
use rayon::prelude::*;
use std::io::Write;
use std::path::PathBuf;

struct Row {
    case: String,
    controls: &'static str,
    accuracy: f64,
    error: f64,
    run: Run,
}

fn cenic(accuracy: f64) -> Mode {
    Mode::ErrorControlled(CenicParams { accuracy, ..Default::default() })
}

fn arg<T: std::str::FromStr>(name: &str) -> Option<T> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|s| s.parse().ok())
}

fn main() {
    let Some(shared) = zoo::shared_dir() else {
        eprintln!("shared folder not found (set CENIC_SHARED)");
        std::process::exit(2);
    };
    let out: PathBuf = arg("--out").unwrap_or_else(|| PathBuf::from("."));
    let horizon: f64 = arg("--horizon").unwrap_or(2.0);
    let reference: f64 = arg("--reference").unwrap_or(1e-8);
    let accuracies: Vec<f64> = arg::<String>("--accuracies")
        .map(|s| s.split(',').map(|x| x.parse().expect("accuracy")).collect())
        .unwrap_or_else(|| vec![1e-2, 1e-3, 1e-4, 1e-5, 1e-6]);
    let only: Option<Vec<String>> = arg::<String>("--only").map(|s| s.split(',').map(String::from).collect());
    let reference_for: Vec<(String, f64)> = arg::<String>("--reference-for")
        .map(|s| {
            s.split(',')
                .map(|kv| {
                    let (k, v) = kv.split_once('=').expect("--reference-for NAME=ACCURACY");
                    (k.to_string(), v.parse().expect("reference accuracy"))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut cases = zoo::cases(&shared).expect("zoo models load");
    if let Some(only) = &only {
        cases.retain(|c| only.contains(&c.name));
    }
    // Zero controls for every case, and the smooth controls where there are actuators.
    let jobs: Vec<(&Case, Option<u64>)> =
        cases.iter().flat_map(|c| [(c, None), (c, Some(1))]).filter(|(c, s)| s.is_none() || c.model.nu() > 0).collect();
    let rows: Vec<Vec<Row>> = jobs
        .par_iter()
        .map(|&(case, seed)| {
            let controls = if seed.is_some() { "smooth" } else { "zero" };
            let reference = reference_for.iter().find(|(k, _)| *k == case.name).map_or(reference, |kv| kv.1);
            let reference = zoo::run(case, &cenic(reference), seed, horizon);
            if let Some(f) = &reference.failure {
                eprintln!("{} ({controls}): reference failed: {f}", case.name);
            }
            let floor = reference_for.iter().find(|(k, _)| *k == case.name).map_or(0.0, |kv| 10.0 * kv.1);
            accuracies
                .iter()
                .filter(|&&a| a >= floor)
                .map(|&a| {
                    let run = zoo::run(case, &cenic(a), seed, horizon);
                    let error = run.max_position_error(&reference);
                    Row { case: case.name.clone(), controls, accuracy: a, error, run }
                })
                .collect()
        })
        .collect();

    std::fs::create_dir_all(&out).expect("output folder");
    let mut csv = std::fs::File::create(out.join("zoo_convergence.csv")).expect("csv");
    writeln!(
        csv,
        "case,controls,accuracy,max_position_error_m,accepted,rejected,newton_per_step,line_search_per_step,max_speed_m_s,wall_s,failure"
    )
    .unwrap();
    println!(
        "| case | controls | error at 1e-2 … 1e-6 (m) | order | steps at 1e-3 | rejected at 1e-3 | Newton / step at 1e-3 | line search / Newton at 1e-3 | peak speed (m/s) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for group in &rows {
        for r in group {
            let s = &r.run.stats;
            let per = |x: u64| x as f64 / s.accepted.max(1) as f64;
            writeln!(
                csv,
                "{},{},{:e},{:e},{},{},{:.3},{:.3},{:.4},{:.4},{}",
                r.case,
                r.controls,
                r.accuracy,
                r.error,
                s.accepted,
                s.rejected,
                per(s.newton_iterations),
                per(s.line_search_iterations),
                r.run.max_speed,
                r.run.wall_seconds,
                r.run.failure.clone().unwrap_or_default().replace(',', ";")
            )
            .unwrap();
        }
        let errs: Vec<String> = group.iter().map(|r| format!("{:.1e}", r.error)).collect();
        let order = zoo::convergence_order(&group.iter().map(|r| (r.accuracy, r.error)).collect::<Vec<_>>());
        let at = group.iter().find(|r| r.accuracy == 1e-3).unwrap_or(&group[0]);
        let s = &at.run.stats;
        let failures: Vec<&str> = group.iter().filter_map(|r| r.run.failure.as_deref()).collect();
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} |{}",
            at.case,
            at.controls,
            errs.join(" · "),
            order.map_or("–".into(), |o| format!("{o:.2}")),
            s.accepted,
            s.rejected,
            s.newton_iterations as f64 / s.accepted.max(1) as f64,
            s.line_search_iterations as f64 / s.newton_iterations.max(1) as f64,
            group.iter().map(|r| r.run.max_speed).fold(0.0, f64::max),
            if failures.is_empty() { String::new() } else { format!(" FAILED: {}", failures.join("; ")) }
        );
    }
    plot(&rows, &out.join("zoo_convergence.png")).expect("plot");
    eprintln!("wrote {}", out.join("zoo_convergence.csv").display());
}

fn plot(rows: &[Vec<Row>], path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    if !common::register_font() {
        eprintln!("no TrueType font found (DejaVu Sans): {} not written", path.display());
        return Ok(());
    }
    let root = BitMapBackend::new(path, (1100, 800)).into_drawing_area();
    root.fill(&WHITE)?;
    let finite = rows.iter().flatten().map(|r| r.error).filter(|e| e.is_finite() && *e > 0.0);
    let (lo, hi) = finite.fold((f64::INFINITY, 0.0f64), |(lo, hi), e| (lo.min(e), hi.max(e)));
    let (lo, hi) = if lo < hi { (lo / 2.0, hi * 2.0) } else { (1e-12, 1.0) };
    let mut chart = ChartBuilder::on(&root)
        .caption("Model zoo: max body-position error vs requested accuracy (2 s, vs CENIC 1e-8)", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .right_y_label_area_size(0)
        .build_cartesian_2d((1e-6f64..1e-2f64).log_scale(), (lo..hi).log_scale())?;
    chart.configure_mesh().x_desc("accuracy (m, rad)").y_desc("max position error (m)").draw()?;
    for (i, group) in rows.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> =
            group.iter().filter(|r| r.error.is_finite() && r.error > 0.0).map(|r| (r.accuracy, r.error)).collect();
        let label = format!("{} ({})", group[0].case, group[0].controls);
        let dashed = group[0].controls == "zero";
        if dashed {
            chart
                .draw_series(DashedLineSeries::new(pts.clone(), 6, 4, color.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        } else {
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .draw_series(LineSeries::new(vec![(1e-6, 1e-6), (1e-2, 1e-2)], BLACK.stroke_width(1)))?
        .label("error = accuracy");
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .draw()?;
    root.present()?;
    Ok(())
}
