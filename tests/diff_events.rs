//! The gradient event diagnostic ([`Recording::gradient_spread`]): a
//! gradient that sits at a contact event whose discrete timing it depends
//! on moves by O(1) when the integration tightens and is flagged; a
//! gradient of the flow moves by the integration error and is not.
//!
//! Self-contained: a bouncing ball, whose fixed-step gradient through a
//! bounce depends on where in a step the touch-down falls, and the same
//! ball under CENIC with steps landed on touch-down and lift-off. With the
//! shared Gymnasium models (skipped without them): the control sequences
//! of tools/grad_events.rs on which the gradient preset's gradient is off
//! the converged fixed-step reference (the ant, sequence 6: touch-down of
//! the feet) and on which it is within 1 % (half_cheetah, sequence 1).

mod common;
use common::bouncing_ball;

use cenic::diff::{DiffRollout, FrictionLoad, Recording};
use cenic::integrator::{CenicParams, Mode};
use cenic::zoo;
use std::sync::Arc;

fn rel(a: &[f64], b: &[f64]) -> f64 {
    let d = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt();
    d / b.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// The ball dropped from 0.3 m, recorded over one interval of `t` s; the
/// cotangent of its final height.
fn ball(mode: Mode, t: f64) -> (Recording, [f64; 4]) {
    let r = DiffRollout::new(Arc::new(bouncing_ball()), mode, t).with_friction_load(FrictionLoad::Lagged);
    (r.record(&[0.3, 0.0], &[], &[], 1).unwrap(), [0.0, 0.0, 1.0, 0.0])
}

#[test]
fn bounce_inside_fixed_steps_is_flagged_landed_bounce_and_free_flight_are_not() {
    // Fixed 0.1 ms steps through the first bounce (0.6 s: down at ≈ 0.22 s,
    // up again by 0.45 s): the derivative of the final height depends on
    // where in a step touch-down and lift-off fall, at 0.1 ms as at 10 µs.
    let (rec, g) = ball(Mode::Fixed { dt: 1e-4 }, 0.6);
    let s = rec.gradient_spread(&g, 10.0, 0.05).unwrap();
    eprintln!(
        "fixed 1e-4 s through a bounce: dz/dz0 {:.4} vs {:.4} at 1e-5 s, spread {:.3}",
        s.gradient.0[0], s.tightened.0[0], s.spread
    );
    assert!(s.flagged, "bounce inside fixed steps not flagged: spread {:.3}", s.spread);
    // The spread is what it says: the relative difference from an
    // independent rollout at the tightened step.
    let (tight, _) = ball(Mode::Fixed { dt: 1e-5 }, 0.6);
    let gt = tight.vjp(&g).unwrap();
    assert_eq!(s.tightened_mode, Mode::Fixed { dt: 1e-5 });
    assert!((s.spread - rel(&s.gradient.0, &gt.0)).abs() < 1e-12 * (1.0 + s.spread));

    // CENIC with steps landed on touch-down and lift-off: the bounce's
    // derivative is resolved, the two accuracies agree.
    let landed = Mode::ErrorControlled(CenicParams {
        accuracy: 1e-6,
        land_contact_events: true,
        velocity_time_scale: 0.1,
        ..CenicParams::default()
    });
    let (rec, g) = ball(landed, 0.6);
    let s = rec.gradient_spread(&g, 10.0, 0.05).unwrap();
    eprintln!(
        "landed CENIC 1e-6 through a bounce: dz/dz0 {:.4} vs {:.4} at 1e-7, spread {:.2e}",
        s.gradient.0[0], s.tightened.0[0], s.spread
    );
    assert!(!s.flagged, "landed bounce flagged: spread {:.3}", s.spread);

    // Free flight (0.15 s, no contact) at 1 ms fixed steps.
    let (rec, g) = ball(Mode::Fixed { dt: 1e-3 }, 0.15);
    let s = rec.gradient_spread(&g, 10.0, 0.05).unwrap();
    assert!(!s.flagged && s.spread < 1e-9, "free flight flagged: spread {:.3e}", s.spread);
}

#[test]
fn gradient_spread_rejects_bad_arguments() {
    let (rec, g) = ball(Mode::Fixed { dt: 1e-3 }, 0.05);
    for (factor, tol) in [(1.0, 0.05), (f64::NAN, 0.05), (10.0, -1.0)] {
        let e = rec.gradient_spread(&g, factor, tol).unwrap_err().to_string();
        assert!(e.contains("gradient spread"), "{e}");
    }
}

/// A Gymnasium model's initial state and control sequence `seed` of
/// tools/grad_events.rs (50 intervals of 10 ms, noise ±0.2), recorded at
/// `CenicParams::for_gradients(1e-4)`, and the cotangent of the torso's
/// final x.
fn robot(name: &str, seed: u64) -> Option<(Recording, Vec<f64>)> {
    let shared = common::shared_dir()?;
    let cases = zoo::cases(&shared).expect("zoo models load");
    let c = cases.iter().find(|c| c.name == name).expect("model in the zoo");
    let (n, dt) = (50, 0.01);
    let x0: Vec<f64> = c.qpos.iter().chain(&c.qvel).copied().collect();
    let u = zoo::seeded_noisy_controls(&c.model, seed, n, dt, 0.2);
    let r = DiffRollout::new(c.model.clone(), Mode::ErrorControlled(CenicParams::for_gradients(1e-4)), dt);
    let nx = r.nx();
    let mut g = vec![0.0; (n + 1) * nx];
    g[n * nx] = 1.0;
    Some((r.record(&x0, &u, &[], n).unwrap(), g))
}

#[test]
fn ant_touch_down_sequence_is_flagged_half_cheetah_sequence_is_not() {
    let Some((rec, g)) = robot("ant", 6) else { return };
    let s = rec.gradient_spread(&g, 10.0, 0.05).unwrap();
    eprintln!("ant sequence 6: spread {:.3} (controls {:.3})", s.spread, s.controls);
    assert!(s.flagged, "ant sequence 6 not flagged: spread {:.3}", s.spread);

    let Some((rec, g)) = robot("half_cheetah", 1) else { return };
    let s = rec.gradient_spread(&g, 10.0, 0.05).unwrap();
    eprintln!("half_cheetah sequence 1: spread {:.4}", s.spread);
    assert!(!s.flagged, "half_cheetah sequence 1 flagged: spread {:.3}", s.spread);
}
