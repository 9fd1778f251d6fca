//! Issue 7 benchmark: forward and backward wall time of cube-toss gradients
//! (1 s horizon) at several CENIC accuracies, and the gradient error against
//! finite differences.
//!
//! ```text
//! cargo run --release --example grad_bench [-- --quick]
//! ```
//!
//! Gradients: d(final position and orientation) / d(initial linear and
//! angular velocity, friction, stiffness, cube size) — 7 outputs × 9
//! inputs — for `scenes::cube_toss()` from keyframe "toss", control
//! interval 10 ms (100 intervals). Times (median of repeats, wall clock):
//! - forward: plain simulation (`DiffRollout::simulate`, no tape);
//! - tape: the forward pass recording its solves (part of `linearize`);
//! - Jacobians: the dual-number IFT pass forming the interval Jacobians (rayon over intervals);
//! - burn: building the surrogate graph and `backward()` through it for a
//!   scalar loss (on `Device::flex().autodiff()`, f64), excluding the above.
//!
//! Error: per output, ‖g − g_FD‖ / ‖g_FD‖ over the 9 inputs, against
//! central differences (Richardson, δ = 6e-4) of CENIC at accuracy 1e-8
//! with τ_v = 0.1 s (the reference of `tests/diff_cube_toss.rs`).

use burn::tensor::{DType, Device, Tensor, TensorData};
use cenic::diff::{DiffRollout, Param};
use cenic::integrator::{CenicParams, Mode};
use cenic::scenes;
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

const DT: f64 = 0.01;
const NSTEPS: usize = 100;

fn mode(accuracy: f64, tau_v: f64) -> Mode {
    Mode::ErrorControlled(CenicParams { accuracy, velocity_time_scale: tau_v, ..CenicParams::default() })
}

fn params() -> Vec<Param> {
    vec![Param::Friction, Param::Stiffness, Param::GeomSize(1)]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The gradient (7 outputs × 9 inputs) from a linearization.
fn gradient(lin: &cenic::diff::Linearization) -> Vec<[f64; 9]> {
    let nx = lin.nx;
    (0..7)
        .map(|o| {
            let mut g = vec![0.0; (NSTEPS + 1) * nx];
            g[NSTEPS * nx + o] = 1.0;
            let (gx, _, gt) = lin.vjp(&g);
            let mut row = [0.0; 9];
            row[..6].copy_from_slice(&gx[7..13]);
            row[6..].copy_from_slice(&gt);
            row
        })
        .collect()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let model = Arc::new(scenes::cube_toss());
    let k = model.keyframe("toss").unwrap();
    let x0: Vec<f64> = k.qpos.iter().chain(&k.qvel).copied().collect();
    let th = [1.0; 3];
    let nx = x0.len();

    // Reference gradient by finite differences.
    let t = Instant::now();
    let reference = DiffRollout::new(model.clone(), mode(1e-8, 0.1), DT).with_params(params());
    let mut z = x0.clone();
    z.extend_from_slice(&th);
    let inputs: Vec<usize> = (7..13).chain(nx..nx + 3).collect();
    let fd: Vec<Vec<f64>> = inputs
        .par_iter()
        .map(|&i| {
            let run = |d: f64| {
                let mut zp = z.clone();
                zp[i] += d;
                reference.simulate(&zp[..nx], &[], &zp[nx..], NSTEPS).unwrap()[NSTEPS * nx..NSTEPS * nx + 7].to_vec()
            };
            let step = 6e-4 * z[i].abs().max(1.0);
            let central = |d: f64| {
                let (p, m) = (run(d), run(-d));
                p.iter().zip(&m).map(|(a, b)| (a - b) / (2.0 * d)).collect::<Vec<f64>>()
            };
            let (d1, d2) = (central(step), central(0.5 * step));
            d1.iter().zip(&d2).map(|(a, b)| (4.0 * b - a) / 3.0).collect()
        })
        .collect();
    eprintln!("reference gradient: {:.1} s", t.elapsed().as_secs_f64());

    println!(
        "| accuracy | τ_v (s) | steps | forward (ms) | tape (ms) | Jacobians (ms) | burn (ms) | backward / forward | gradient error max (mean) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let repeats_at = |acc: f64| if quick || acc < 1e-5 { 1 } else { 5 };
    let device = Device::flex().autodiff();
    for &tau_v in &[0.01, 0.1] {
        for &acc in &[1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7] {
            if quick && acc < 1e-5 {
                continue;
            }
            let r = DiffRollout::new(model.clone(), mode(acc, tau_v), DT).with_params(params());
            let mut fwd = vec![];
            let mut tape = vec![];
            let mut jac = vec![];
            let mut burn_t = vec![];
            let mut lin = None;
            for _ in 0..repeats_at(acc) {
                let t = Instant::now();
                r.simulate(&x0, &[], &th, NSTEPS).unwrap();
                fwd.push(t.elapsed().as_secs_f64());
                let l = r.linearize(&x0, &[], &th, NSTEPS).unwrap();
                tape.push(l.stats.forward_seconds);
                jac.push(l.stats.jacobian_seconds);
                lin = Some(l);
                // The same through burn: rollout + a scalar loss + backward.
                let opts = (&device, DType::F64);
                let xt = Tensor::<2>::from_data(TensorData::new(x0.clone(), [1, nx]), opts).require_grad();
                let pt = Tensor::<2>::from_data(TensorData::new(th.to_vec(), [1, 3]), opts).require_grad();
                let t = Instant::now();
                let (stats, traj) = r.rollout_with_stats(xt.clone(), None, Some(pt.clone()), NSTEPS).unwrap();
                let loss = traj.slice([0..1, NSTEPS..NSTEPS + 1, 0..7]).sum();
                let grads = loss.backward();
                let _ = (xt.grad(&grads), pt.grad(&grads));
                let total = t.elapsed().as_secs_f64();
                burn_t.push(total - stats[0].forward_seconds - stats[0].jacobian_seconds);
            }
            let lin = lin.unwrap();
            let g = gradient(&lin);
            let errs: Vec<f64> = (0..7)
                .map(|o| {
                    let num: Vec<f64> = fd.iter().map(|row| row[o]).collect();
                    let e: f64 = g[o].iter().zip(&num).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
                    e / num.iter().map(|x| x * x).sum::<f64>().sqrt()
                })
                .collect();
            let max = errs.iter().fold(0.0f64, |m, e| m.max(*e));
            let mean = errs.iter().sum::<f64>() / errs.len() as f64;
            let (f, tp, j, b) = (median(fwd), median(tape), median(jac), median(burn_t));
            println!(
                "| {acc:e} | {tau_v} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1}% ({:.1}%) |",
                lin.stats.world.accepted,
                f * 1e3,
                tp * 1e3,
                j * 1e3,
                b * 1e3,
                (tp + j + b) / f,
                100.0 * max,
                100.0 * mean
            );
        }
    }
}
