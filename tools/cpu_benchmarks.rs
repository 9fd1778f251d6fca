//! CPU benchmarks for BENCHMARKS.md:
//! 1. single thread: wall time and real-time factor of cube toss (2 s) and
//!    clutter (3 s) at accuracies 1e-1, 1e-2, 1e-3 and fixed 1 ms steps;
//! 2. batch throughput (accepted world-steps/s) of cube toss for 1 … 1024
//!    worlds on all cores, error-controlled (1e-3) and fixed 1 ms.
//!
//! `cargo run --release --example cpu_benchmarks [-- --quick]`
//!
//! Clutter is `shared/scenes/clutter20.xml` when present (the comparison
//! scene), else the built-in `scenes::clutter(20, …)`.

use cenic::batch::{Batch, CpuBatch};
use cenic::integrator::{CenicParams, Mode, World, WorldStats};
use cenic::model::{Material, Model};
use std::sync::Arc;
use std::time::Instant;

fn modes() -> Vec<(String, Mode)> {
    let mut v: Vec<(String, Mode)> = [1e-1, 1e-2, 1e-3]
        .iter()
        .map(|&a| (format!("accuracy {a:e}"), Mode::ErrorControlled(CenicParams { accuracy: a, ..Default::default() })))
        .collect();
    v.push(("fixed 1 ms".into(), Mode::Fixed { dt: 1e-3 }));
    v
}

fn single(model: &Arc<Model>, key: Option<&str>, mode: &Mode, horizon: f64, repeat: usize) -> (f64, WorldStats) {
    let mut best = f64::INFINITY;
    let mut stats = WorldStats::default();
    for _ in 0..repeat {
        let mut w = World::<f64>::new(model.clone(), mode.clone());
        if let Some(k) = key {
            w.sim.reset_to_keyframe(k).unwrap();
        }
        let t = Instant::now();
        w.advance(horizon).expect("simulation failed");
        best = best.min(t.elapsed().as_secs_f64());
        stats = w.stats;
    }
    (best, stats)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let cube = Arc::new(cenic::scenes::cube_toss());
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/scenes/clutter20.xml");
    let (clutter, clutter_name) = match Model::from_mjcf_file(&shared) {
        Ok(m) => (Arc::new(m), "clutter20.xml"),
        Err(_) => (
            Arc::new(cenic::scenes::clutter(
                20,
                Material { stiffness: 2e5, dissipation: 10.0, mu_static: 0.5, mu_dynamic: 0.5, soft: None },
            )),
            "scenes::clutter(20)",
        ),
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap().trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    println!("CPU: {cpu}, {} threads available", rayon::current_num_threads());
    println!("\n## Single thread (best of {} runs)\n", if quick { 1 } else { 3 });
    println!("| scene | mode | sim time [s] | wall [s] | real-time factor | steps | rejected | Newton it./step |");
    println!("|---|---|---|---|---|---|---|---|");
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    for (name, model, key, horizon) in
        [("cube toss", &cube, Some("toss"), 2.0), (clutter_name, &clutter, None, if quick { 0.5 } else { 3.0 })]
    {
        for (mname, mode) in modes() {
            let (wall, s) = pool.install(|| single(model, key, &mode, horizon, if quick { 1 } else { 3 }));
            println!(
                "| {name} | {mname} | {horizon} | {wall:.4} | {:.2} | {} | {} | {:.2} |",
                horizon / wall,
                s.accepted,
                s.rejected,
                s.newton_iterations as f64 / s.accepted.max(1) as f64
            );
        }
    }
    println!("\n## Batch throughput, cube toss, 1 s from keyframe 'toss', {} threads\n", rayon::current_num_threads());
    println!("| worlds | mode | wall [s] | world-steps/s | real-time factor (all worlds) |");
    println!("|---|---|---|---|---|");
    let sizes: &[usize] = if quick { &[1, 16, 256] } else { &[1, 4, 16, 64, 256, 1024] };
    for &n in sizes {
        for (mname, mode) in [
            ("accuracy 1e-3", Mode::ErrorControlled(CenicParams { accuracy: 1e-3, ..Default::default() })),
            ("fixed 1 ms", Mode::Fixed { dt: 1e-3 }),
        ] {
            let mut b = CpuBatch::<f64>::new(cube.clone(), n, mode);
            for w in 0..n {
                b.reset_to_keyframe(w, "toss").unwrap();
            }
            let t = Instant::now();
            b.advance(1.0).unwrap();
            let wall = t.elapsed().as_secs_f64();
            let steps: u64 = (0..n).map(|w| b.stats(w).accepted).sum();
            println!("| {n} | {mname} | {wall:.4} | {:.0} | {:.1} |", steps as f64 / wall, n as f64 / wall);
        }
    }
}
