//! Is a robot's control gradient defined? A sweep over seeded control
//! sequences (smooth sinusoids plus uniform noise) on which the loss
//! L = torso x after `--intervals` control intervals of 10 ms is
//! differentiated with respect to all controls by the reverse pass, in
//! three fixed steps h, h/2, h/4 (the reference: "converged" when the three
//! agree pairwise within `--ref-tol`, 2 %) and at the gradient preset
//! (`CenicParams::for_gradients(ACCURACY)`), whose event diagnostic
//! (`Recording::event_sensitivity`) flags the sequences whose gradient sits
//! at a contact event.
//!
//! `cargo run --release --example grad_events -- [--models half_cheetah,ant] [--seeds 20] [--first-seed 1]
//! [--intervals 50] [--noise 0.2] [--h 4e-5] [--preset grad:1e-4] [--reference-load lagged|implicit]`
//!
//! `--steps fixed:5e-5+lagged,grad:1e-4,…` (with one `--seed S`) prints
//! instead the gradient projected on four seeded random unit directions of
//! the control space in each listed mode (mode names as in
//! tools/grad_convergence.rs), with each mode's event diagnostic.
//!
//! Per sequence the sweep prints: the reference's pairwise spread, the
//! preset's cosine and relative error against the finest fixed step, the
//! diagnostic and whether it flags, and the wall times.

use cenic::diff::{DiffRollout, Recording};
use cenic::zoo;
use std::sync::Arc;
use std::time::Instant;
#[path = "../examples/common/mod.rs"]
mod common;
use common::{arg, parse_grad_mode, parse_load};

const DT: f64 = 0.01;

/// SplitMix64: the next uniform number in [0, 1) from `state`.
fn splitmix(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    dot(a, b) / (norm(a) * norm(b))
}

fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt() / norm(b)
}

/// A mode's recording and its control gradient of the final torso x.
struct Grad {
    rec: Recording,
    gu: Vec<f64>,
    seconds: f64,
}

fn gradient(model: &Arc<cenic::Model>, mode: &str, x0: &[f64], u: &[f64], n: usize) -> Result<Grad, String> {
    let r = DiffRollout::new(model.clone(), parse_grad_mode(mode), DT).with_friction_load(parse_load(mode));
    let t = Instant::now();
    let rec = r.record(x0, u, &[], n).map_err(|e| format!("{mode}: {e}"))?;
    let nx = r.nx();
    let mut g = vec![0.0; (n + 1) * nx];
    g[n * nx] = 1.0;
    let (_, gu, _) = rec.vjp(&g).map_err(|e| format!("{mode}: {e}"))?;
    Ok(Grad { rec, gu, seconds: t.elapsed().as_secs_f64() })
}

fn main() {
    let (shared, models, n) = common::sweep_args();
    let noise: f64 = arg("--noise").and_then(|s| s.parse().ok()).unwrap_or(0.2);
    let cases = zoo::cases(&shared).expect("models load");
    let case = |name: &str| cases.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no model {name}"));

    if let Some(steps) = arg("--steps") {
        let seed: u64 = arg("--seed").and_then(|s| s.parse().ok()).unwrap_or(1);
        for name in &models {
            let c = case(name);
            let x0: Vec<f64> = c.qpos.iter().chain(&c.qvel).copied().collect();
            let u = zoo::seeded_noisy_controls(&c.model, seed, n, DT, noise);
            let mut s = 12345u64;
            let dirs: Vec<Vec<f64>> = (0..4)
                .map(|_| {
                    let d: Vec<f64> = (0..u.len()).map(|_| 2.0 * splitmix(&mut s) - 1.0).collect();
                    let l = norm(&d);
                    d.iter().map(|x| x / l).collect()
                })
                .collect();
            println!("| model | seed | mode | dL/du · d1…d4 | ‖dL/du‖ | final x (m) | steps | s |");
            println!("|---|---|---|---|---|---|---|---|");
            for mode in steps.split(',') {
                match gradient(&c.model, mode, &x0, &u, n) {
                    Ok(g) => {
                        let p: Vec<String> = dirs.iter().map(|d| format!("{:+.4}", dot(d, &g.gu))).collect();
                        let nx = c.model.nq + c.model.nv;
                        println!(
                            "| {name} | {seed} | {mode} | {} | {:.4} | {:.6} | {} | {:.1} |",
                            p.join(" "),
                            norm(&g.gu),
                            g.rec.trajectory()[n * nx],
                            g.rec.world_stats().accepted,
                            g.seconds
                        );
                    }
                    Err(e) => println!("| {name} | {seed} | {mode} | failed: {e} |"),
                }
            }
        }
        return;
    }
    let seeds: u64 = arg("--seeds").and_then(|s| s.parse().ok()).unwrap_or(20);
    let first: u64 = arg("--first-seed").and_then(|s| s.parse().ok()).unwrap_or(1);
    let h: f64 = arg("--h").and_then(|s| s.parse().ok()).unwrap_or(2e-5);
    let load = arg("--reference-load").unwrap_or("implicit".into());
    let preset = arg("--preset").unwrap_or("grad:1e-4".into());
    let ref_tol: f64 = arg("--ref-tol").and_then(|s| s.parse().ok()).unwrap_or(0.02);
    let factor: f64 = arg("--factor").and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let tol: f64 = arg("--tol").and_then(|s| s.parse().ok()).unwrap_or(0.05);
    println!(
        "| model | seed | ref spread h,h/2,h/4 | ref converged | cos(preset, h/4) | err(preset, h/4) | within 10 % | spread (÷{factor}) | flagged | s ref | s preset | s diagnostic |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut summary = vec![];
    for name in &models {
        let (mut total, mut flagged, mut ok_unflagged, mut bad_unflagged) = (0, 0, 0, vec![]);
        let c = case(name);
        let x0: Vec<f64> = c.qpos.iter().chain(&c.qvel).copied().collect();
        for seed in first..first + seeds {
            let u = zoo::seeded_noisy_controls(&c.model, seed, n, DT, noise);
            let t = Instant::now();
            let refs: Result<Vec<Grad>, String> = [h, h / 2.0, h / 4.0]
                .iter()
                .map(|hh| gradient(&c.model, &format!("fixed:{hh:e}+{load}"), &x0, &u, n))
                .collect();
            let t_ref = t.elapsed().as_secs_f64();
            let (refs, g) = match (refs, gradient(&c.model, &preset, &x0, &u, n)) {
                (Ok(r), Ok(g)) => (r, g),
                (Err(e), _) | (_, Err(e)) => {
                    println!("| {name} | {seed} | failed: {e} |");
                    continue;
                }
            };
            let spread = rel_err(&refs[0].gu, &refs[2].gu)
                .max(rel_err(&refs[1].gu, &refs[2].gu))
                .max(rel_err(&refs[0].gu, &refs[1].gu));
            let (cos, err) = (cosine(&g.gu, &refs[2].gu), rel_err(&g.gu, &refs[2].gu));
            let t = Instant::now();
            let nx = c.model.nq + c.model.nv;
            let mut gl = vec![0.0; (n + 1) * nx];
            gl[n * nx] = 1.0;
            let d = match g.rec.gradient_spread(&gl, factor, tol) {
                Ok(d) => d,
                Err(e) => {
                    println!("| {name} | {seed} | diagnostic failed: {e} |");
                    continue;
                }
            };
            let t_diag = t.elapsed().as_secs_f64();
            let (converged, within) = (spread <= ref_tol, err <= 0.1 && cos >= 0.99);
            total += 1;
            if d.flagged {
                flagged += 1;
            } else if converged && within {
                ok_unflagged += 1;
            } else {
                bad_unflagged.push(seed);
            }
            println!(
                "| {name} | {seed} | {:.2} % | {} | {cos:.4} | {:.2} % | {} | {:.2} % | {} | {t_ref:.1} | {:.2} | {t_diag:.2} |",
                100.0 * spread,
                if converged { "yes" } else { "no" },
                100.0 * err,
                if within { "yes" } else { "no" },
                100.0 * d.spread,
                if d.flagged { "yes" } else { "no" },
                g.seconds
            );
        }
        summary.push(format!(
            "{name}: {flagged}/{total} flagged ({:.0} %); unflagged with a converged reference and within 10 %: {ok_unflagged}; unflagged otherwise: {bad_unflagged:?}",
            100.0 * flagged as f64 / total.max(1) as f64
        ));
    }
    println!();
    summary.iter().for_each(|l| println!("{l}"));
}
