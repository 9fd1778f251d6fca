//! The DiffMJX bouncing-ball failure. Sweeping the
//! drop height, the gradient of the final height through fixed steps flips
//! sign between neighbouring heights, while the CENIC gradient is smooth and
//! matches finite differences.

mod common;
use common::bouncing_ball;

use cenic::diff::{DiffRollout, FrictionLoad};
use cenic::integrator::{CenicParams, Mode};
use rayon::prelude::*;
use std::sync::Arc;

const T_END: f64 = 1.0;
const HEIGHTS: usize = 41;

fn height(i: usize) -> f64 {
    0.3 + 2.5e-4 * i as f64
}

/// dz(T)/dz0 by the IFT adjoint and the final height, for each drop height.
fn sweep(mode: Mode) -> Vec<(f64, f64)> {
    let r = DiffRollout::new(Arc::new(bouncing_ball()), mode, T_END).with_friction_load(FrictionLoad::Lagged);
    (0..HEIGHTS)
        .into_par_iter()
        .map(|i| {
            let lin = r.linearize(&[height(i), 0.0], &[], &[], 1).unwrap();
            let (g, _, _) = lin.vjp(&[0.0, 0.0, 1.0, 0.0]);
            (g[0], lin.trajectory[2])
        })
        .collect()
}

fn sign_flips(g: &[(f64, f64)]) -> usize {
    g.windows(2).filter(|w| w[0].0 * w[1].0 < 0.0).count()
}

/// CENIC for gradients through bounces: tight accuracy, and steps landed
/// on touch-down and lift-off (`land_contact_events`), so that no step
/// contains the kink of the contact force — a kink inside a step makes the
/// step's derivative depend on where in the step it falls (an error of
/// order k·h/m per event), which is the DiffMJX sawtooth in miniature.
fn cenic(accuracy: f64) -> Mode {
    Mode::ErrorControlled(CenicParams {
        accuracy,
        land_contact_events: true,
        velocity_time_scale: 0.1,
        ..CenicParams::default()
    })
}

#[test]
fn fixed_step_gradient_flips_sign_while_cenic_gradient_is_smooth_and_matches_fd() {
    // Fixed steps of 10 µs resolve each 3 ms contact with 300 steps and the
    // final height is within 1.5 cm of the converged one, but the gradient
    // is dominated by where in a step each touch-down and lift-off falls.
    // (Coarser steps are worse: at 0.5–2 ms the ball loses its bounce to
    // numerical dissipation, at 0.1–0.2 ms the gradient is 10³–10⁶.)
    let t = std::time::Instant::now();
    let fixed = sweep(Mode::Fixed { dt: 1e-5 });
    let flips = sign_flips(&fixed);
    eprintln!(
        "fixed 1e-5 s ({:.1} s): {flips} sign flips; final height {:.4} m; dz/dz0 = {:.3?}",
        t.elapsed().as_secs_f64(),
        fixed[0].1,
        fixed.iter().map(|g| g.0).collect::<Vec<_>>()
    );
    assert!(flips >= 5, "expected the fixed-step gradient to flip sign often, got {flips} flips");

    let t = std::time::Instant::now();
    let adaptive = sweep(cenic(1e-8));
    let g: Vec<f64> = adaptive.iter().map(|g| g.0).collect();
    eprintln!("CENIC 1e-8 ({:.1} s): final height {:.4} m; dz/dz0 = {g:.3?}", t.elapsed().as_secs_f64(), adaptive[0].1);
    assert_eq!(sign_flips(&adaptive), 0, "CENIC gradient flips sign");
    // Smooth: neighbouring heights (0.25 mm apart) differ by little.
    let scale = g.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let jump = g.windows(2).map(|w| (w[1] - w[0]).abs()).fold(0.0, f64::max);
    assert!(jump < 0.05 * scale, "CENIC gradient not smooth: largest jump {jump} of {scale}");

    // Matches central differences of the CENIC map (tighter, 1e-9; step
    // 2e-4 m averages the step-sequence jitter, which is ~1e-8 m).
    let r = DiffRollout::new(Arc::new(bouncing_ball()), cenic(1e-9), T_END).with_friction_load(FrictionLoad::Lagged);
    let zt = |z0: f64| r.simulate(&[z0, 0.0], &[], &[], 1).unwrap()[2];
    let worst = [0, 10, 20, 30, 40]
        .par_iter()
        .map(|&i| {
            let (z0, d) = (height(i), 2e-4);
            let fd = (zt(z0 + d) - zt(z0 - d)) / (2.0 * d);
            let err = (g[i] - fd).abs() / fd.abs();
            eprintln!("z0 = {z0:.5} m: IFT {:+.5}  FD {fd:+.5}  rel error {err:.2e}", g[i]);
            err
        })
        .reduce(|| 0.0, f64::max);
    assert!(worst < 0.03, "CENIC gradient vs finite differences: {worst:.3e}");
}
