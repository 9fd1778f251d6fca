//! Articulated speed: the gymnasium robots under the
//! seeded smooth controls of `cenic::zoo` for 2 s from their initial pose,
//! single thread, at accuracies 1e-2 and 1e-3 and at a fixed 2 ms step.
//! `scripts/mujoco_bench.py --zoo` runs MuJoCo on the same models with the
//! same controls at each model's own time step and integrator; run both
//! back to back for the side-by-side table in BENCHMARKS.md.
//!
//! `cargo run --release --example robot_bench -- [--repeat N] [--only humanoid,ant] [--mode 1e-3|fixed2ms]`
//!
//! Prints, per model and mode: best-of-N wall time, real-time factor,
//! accepted and rejected steps, Newton iterations per convex solve,
//! line-search evaluations per Newton iteration, factorizations per solve.

use cenic::integrator::{CenicParams, Mode};
use cenic::zoo::{self, Case};
#[path = "../examples/common/mod.rs"]
mod common;
use common::arg;

const MODELS: [&str; 5] = ["humanoid", "ant", "half_cheetah", "inverted_pendulum", "inverted_double_pendulum"];
const HORIZON: f64 = 2.0;

fn modes() -> Vec<(&'static str, Mode)> {
    let cenic = |accuracy| Mode::ErrorControlled(CenicParams { accuracy, ..Default::default() });
    vec![("1e-2", cenic(1e-2)), ("1e-3", cenic(1e-3)), ("fixed2ms", Mode::Fixed { dt: 2e-3 })]
}

fn main() {
    let Some(shared) = zoo::shared_dir() else {
        eprintln!("shared folder not found (set CENIC_SHARED)");
        std::process::exit(2);
    };
    let repeat: usize = arg("--repeat").and_then(|s| s.parse().ok()).unwrap_or(5);
    let only: Vec<String> =
        arg("--only").map(|s| s.split(',').map(String::from).collect()).unwrap_or(MODELS.map(String::from).to_vec());
    let mode_filter = arg("--mode");
    let cases: Vec<Case> =
        zoo::cases(&shared).expect("zoo models load").into_iter().filter(|c| only.contains(&c.name)).collect();
    println!(
        "| model | mode | wall (s) | real-time factor | accepted | rejected | Newton / solve | line search / Newton | factorizations / solve |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for name in &only {
        let Some(case) = cases.iter().find(|c| &c.name == name) else { continue };
        for (label, mode) in modes() {
            if mode_filter.as_deref().is_some_and(|m| m != label) {
                continue;
            }
            let mut best = f64::INFINITY;
            let mut last = None;
            for _ in 0..repeat {
                let run = zoo::run(case, &mode, Some(1), HORIZON);
                if let Some(f) = &run.failure {
                    panic!("{name} {label}: {f}");
                }
                best = best.min(run.wall_seconds);
                last = Some(run);
            }
            let s = last.unwrap().stats;
            let solves = match mode {
                Mode::Fixed { .. } => s.accepted,
                Mode::ErrorControlled(_) => 3 * (s.accepted + s.rejected),
                ref m => unreachable!("robot_bench runs Lagged ICF, not {}", m.name()),
            } as f64;
            println!(
                "| {name} | {} | {best:.4} | {:.1} | {} | {} | {:.2} | {:.2} | {:.2} |",
                if label == "fixed2ms" { "fixed 2 ms".into() } else { format!("accuracy {label}") },
                HORIZON / best,
                s.accepted,
                s.rejected,
                s.newton_iterations as f64 / solves,
                s.line_search_iterations as f64 / s.newton_iterations.max(1) as f64,
                s.factorizations as f64 / solves,
            );
        }
    }
}
