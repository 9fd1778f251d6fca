//! Solver counts of one contact-rich run, small enough to run
//! under `valgrind --tool=callgrind` for instruction counts: the shared
//! clutter20 scene (or cube toss from keyframe `toss`), one mode, one run.
//!
//! `cargo run --release --example contact_profile -- [--scene clutter20|cube_toss] [--mode 1e-2|fixed1ms] [--horizon 1] [options]`
//!
//! Options: `--perturb SEED` moves every body's start by up to 1 µm (the
//! pile is chaotic: average counts over seeds); `--windows N` prints the
//! counts of N equal time windows; `--steps FILE.csv` writes every accepted
//! step (start time, size, error ratio, contacts); `--kappa K`, `--reuse`
//! (Hessian reuse), `--reuse-target N`, `--secant N`, `--theta` and
//! `--tol T` (fixed-step tolerance) override the solver settings.
//! `scripts/callgrind_count.sh` runs it under callgrind.
//!
//! Prints accepted and rejected steps, steps shortened by conservative
//! advancement, Newton iterations per convex solve and per accepted step,
//! line-search evaluations per Newton iteration, factorizations per solve,
//! the final state's highest and lowest body, and how many bodies lie
//! inside clutter20's bin (to check that the pile stayed in it).

use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::Model;
use std::sync::Arc;
use std::time::Instant;
#[path = "../examples/common/mod.rs"]
mod common;
use common::arg;

fn main() {
    let scene = arg("--scene").unwrap_or_else(|| "clutter20".into());
    let mode_name = arg("--mode").unwrap_or_else(|| "1e-2".into());
    let horizon: f64 = arg("--horizon").and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let (model, key) = match scene.as_str() {
        "cube_toss" => (cenic::scenes::cube_toss(), Some("toss")),
        "clutter20" => {
            let Some(shared) = cenic::zoo::shared_dir() else {
                eprintln!("shared folder not found (set CENIC_SHARED)");
                std::process::exit(2);
            };
            (Model::from_mjcf_file(shared.join("scenes/clutter20.xml")).expect("clutter20.xml loads"), None)
        }
        s => panic!("unknown scene {s} (clutter20 or cube_toss)"),
    };
    let mode = match mode_name.as_str() {
        "fixed1ms" => Mode::Fixed { dt: 1e-3 },
        a => Mode::ErrorControlled(CenicParams {
            accuracy: a.parse().expect("--mode: an accuracy or fixed1ms"),
            ..Default::default()
        }),
    };
    let reuse = std::env::args().any(|a| a == "--reuse");
    let mode = match mode {
        Mode::ErrorControlled(p) => Mode::ErrorControlled(CenicParams {
            hessian_reuse: reuse,
            kappa: arg("--kappa").map(|k| k.parse().unwrap()).unwrap_or(p.kappa),
            ..p
        }),
        m => m,
    };
    let mut w = World::<f64>::new(Arc::new(model), mode.clone());
    w.sim.solver_params.hessian_reuse = reuse;
    w.sim.solver_params.theta_criterion = std::env::args().any(|a| a == "--theta");
    if let Some(t) = arg("--tol") {
        w.sim.solver_params.tolerance = t.parse().unwrap();
    }
    if let Some(n) = arg("--secant") {
        w.sim.solver_params.secant_friction_iterations = n.parse().unwrap();
    }
    if let Some(n) = arg("--reuse-target") {
        w.sim.solver_params.reuse_target_iterations = n.parse().unwrap();
    }
    if let Some(k) = key {
        w.sim.reset_to_keyframe(k).unwrap();
    }
    if let Some(seed) = arg("--perturb").and_then(|s| s.parse::<u64>().ok()) {
        // Chaotic piles: average counts over starts moved by up to 1 µm.
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut q = w.sim.data.q.clone();
        let v = w.sim.data.v.clone();
        for j in &w.sim.model.joints {
            for k in 0..3 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                q[j.qpos_adr + k] += 1e-6 * ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5);
            }
        }
        w.sim.set_state(&q, &v);
    }
    let steps_file = arg("--steps");
    w.record_steps = steps_file.is_some();
    let windows = arg("--windows").and_then(|s| s.parse::<usize>().ok()).unwrap_or(1);
    let t = Instant::now();
    let mut last = w.stats;
    for k in 0..windows {
        w.advance(horizon / windows as f64).expect("simulation failed");
        if windows > 1 {
            let s = w.stats;
            let steps = (s.accepted - last.accepted) as f64;
            let newton = (s.newton_iterations - last.newton_iterations) as f64;
            eprintln!(
                "t {:.2}: {steps} steps, {} rejected, Newton/step {:.2}, line search/Newton {:.2}, contacts {}",
                (k + 1) as f64 * horizon / windows as f64,
                s.rejected - last.rejected,
                newton / steps,
                (s.line_search_iterations - last.line_search_iterations) as f64 / newton.max(1.0),
                w.sim.contacts.len()
            );
            last = s;
        }
    }
    let wall = t.elapsed().as_secs_f64();
    let s = w.stats;
    if let Some(f) = steps_file {
        let rows: Vec<String> = w.steps.iter().map(|r| format!("{},{},{},{}", r.t, r.h, r.err, r.contacts)).collect();
        std::fs::write(&f, format!("t,h,err,contacts\n{}\n", rows.join("\n"))).expect("write --steps file");
    }
    let solves = match mode {
        Mode::Fixed { .. } => s.accepted,
        Mode::ErrorControlled(_) => 3 * (s.accepted + s.rejected),
        _ => unreachable!("--mode builds only fixed and error-controlled CENIC"),
    } as f64;
    let m = &w.sim.model;
    let q = &w.sim.data.q;
    let pos: Vec<[f64; 3]> = m.joints.iter().map(|j| [q[j.qpos_adr], q[j.qpos_adr + 1], q[j.qpos_adr + 2]]).collect();
    // clutter20's bin: inner walls at |x|, |y| = 0.2 m, 0.4 m high.
    let in_bin = pos.iter().filter(|p| p[0].abs() < 0.2 && p[1].abs() < 0.2 && p[2] > 0.0 && p[2] < 0.4).count();
    let (lo, hi) = pos.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p[2]), b.max(p[2])));
    println!(
        "{scene} {mode_name} {horizon} s: wall {wall:.3} s, accepted {}, rejected {}, impact-limited {}, \
         Newton/solve {:.2}, Newton/accepted step {:.2}, line search/Newton {:.2}, factorizations/solve {:.2}, \
         body heights [{lo:.3}, {hi:.3}] m, {in_bin} of {} bodies inside the bin's walls",
        s.accepted,
        s.rejected,
        s.impact_limited,
        s.newton_iterations as f64 / solves,
        s.newton_iterations as f64 / s.accepted as f64,
        s.line_search_iterations as f64 / s.newton_iterations.max(1) as f64,
        s.factorizations as f64 / solves,
        pos.len(),
    );
}
