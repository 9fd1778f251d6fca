//! CENIC's second-order mode (`CenicParams::extrapolate`, local Richardson
//! extrapolation of the step-doubling pair) against analytic solutions.

use cenic::diff::DiffRollout;
use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::Model;
use std::sync::Arc;

/// Mass 2 kg on a slide joint with spring stiffness 50 N/m and damping
/// 1 N·s/m, no gravity: ẍ = −25 x − 0.5 ẋ.
const OSCILLATOR: &str = r#"
<mujoco model="oscillator">
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="mass">
      <joint name="x" type="slide" axis="1 0 0" stiffness="50" damping="1"/>
      <geom type="sphere" size="0.05" mass="2" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>"#;

/// x(t) of ẍ + 2ζω ẋ + ω² x = 0 with x(0) = x0, ẋ(0) = 0 (underdamped).
fn oscillator_exact(t: f64, x0: f64) -> f64 {
    let (w, zw) = (5.0f64, 0.25f64);
    let wd = (w * w - zw * zw).sqrt();
    x0 * (-zw * t).exp() * ((wd * t).cos() + zw / wd * (wd * t).sin())
}

fn params(accuracy: f64, extrapolate: bool) -> CenicParams {
    CenicParams { accuracy, extrapolate, ..CenicParams::default() }
}

/// Largest |x − x_exact| (m) over 2 s sampled every 0.25 s (intervals
/// longer than the steps, so that the accuracy alone sets them), and the world.
fn oscillator_error(accuracy: f64, extrapolate: bool) -> (f64, World<f64>) {
    let model = Arc::new(Model::from_mjcf_str(OSCILLATOR).unwrap());
    let mut w = World::<f64>::new(model, Mode::ErrorControlled(params(accuracy, extrapolate)));
    w.sim.set_state(&[0.1], &[0.0]);
    let mut err = 0.0f64;
    for k in 1..=8 {
        w.advance(0.25).unwrap();
        err = err.max((w.sim.data.q[0] - oscillator_exact(0.25 * k as f64, 0.1)).abs());
    }
    (err, w)
}

/// Step doubling bounds a first-order step's local error, so the global
/// error of plain CENIC falls as accuracy^½ (10× over four decades of
/// accuracy would be 100×); extrapolated, every step is second order and
/// the error falls as accuracy¹, far below plain CENIC's at the same
/// accuracy, with the same steps.
#[test]
fn extrapolation_makes_cenic_second_order_on_a_damped_oscillator() {
    // Measured: plain 3.2e-3 → 1.0e-4 m, extrapolated 3.7e-4 → 4.0e-7 m.
    let (plain_loose, _) = oscillator_error(1e-4, false);
    let (plain_tight, wp) = oscillator_error(1e-7, false);
    let (x_loose, _) = oscillator_error(1e-4, true);
    let (x_tight, wx) = oscillator_error(1e-7, true);
    let msg =
        format!("errors (m): plain {plain_loose:.2e} → {plain_tight:.2e}, extrapolated {x_loose:.2e} → {x_tight:.2e}");
    // Order ½: three decades of accuracy buy about 30× (between 10× and 100×).
    assert!(plain_loose / plain_tight > 10.0 && plain_loose / plain_tight < 100.0, "{msg}");
    // Order 1 or better: at least 300×.
    assert!(x_loose / x_tight > 300.0, "{msg}");
    assert!(x_tight * 30.0 < plain_tight, "{msg}");
    // Same controller, same steps to within a few per cent; every step extrapolated (no constraints).
    let (sp, sx) = (wp.stats.accepted as f64, wx.stats.accepted as f64);
    assert!((sx / sp - 1.0).abs() < 0.05, "steps plain {sp}, extrapolated {sx}");
    assert_eq!(wx.stats.extrapolated, wx.stats.accepted);
    assert_eq!(wp.stats.extrapolated, 0);
}

/// A free body in a uniform spin about a principal axis with a linear
/// velocity, no gravity: the exact motion is known, and the extrapolation
/// of quaternions on the manifold must keep it (unit norm, second order).
#[test]
fn extrapolation_of_a_spinning_free_body_stays_on_the_manifold() {
    let xml = r#"
<mujoco model="spin">
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="b" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.2 0.3" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>"#;
    let model = Arc::new(Model::from_mjcf_str(xml).unwrap());
    let mut w = World::<f64>::new(model, Mode::ErrorControlled(params(1e-4, true)));
    // Spin about the body z axis (a principal axis): ω constant, q(t) = exp(ω t / 2).
    let omega = 3.0;
    w.sim.set_state(&[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], &[0.5, 0.0, 0.0, 0.0, 0.0, omega]);
    w.advance(1.0).unwrap();
    let q = &w.sim.data.q;
    let norm = (q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]).sqrt();
    assert!((norm - 1.0).abs() < 1e-12, "quaternion norm {norm}");
    let half = 0.5 * omega * 1.0;
    assert!((q[3] - half.cos()).abs() < 1e-6 && (q[6] - half.sin()).abs() < 1e-6, "q {q:?}");
    assert!((q[0] - 0.5).abs() < 1e-9, "x {}", q[0]);
    assert_eq!(w.stats.extrapolated, w.stats.accepted);
}

/// A ball dropped on the floor: steps in which the contact starts or stops
/// acting keep the first-order result and the touch-downs are landed
/// (event-limited steps), the rest are extrapolated; the bounce height
/// agrees with a tight plain run.
#[test]
fn extrapolation_skips_the_steps_of_contact_events() {
    let xml = r#"
<mujoco model="drop">
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <body name="ball" pos="0 0 0.3">
      <freejoint/>
      <geom type="sphere" size="0.05" mass="0.2"/>
    </body>
  </worldbody>
</mujoco>"#;
    let model = Arc::new(Model::from_mjcf_str(xml).unwrap());
    let run = |p: CenicParams| {
        let mut w = World::<f64>::new(model.clone(), Mode::ErrorControlled(p));
        w.advance(0.6).unwrap();
        w
    };
    let x = run(params(1e-4, true));
    let reference = run(params(1e-8, false));
    let s = x.stats;
    assert!(s.event_limited > 0, "{s:?}");
    assert!(s.extrapolated > 0 && s.extrapolated < s.accepted, "{s:?}");
    let dz = (x.sim.data.q[2] - reference.sim.data.q[2]).abs();
    assert!(dz < 1e-3, "height {} against the tight run's {}", x.sim.data.q[2], reference.sim.data.q[2]);
}

/// Gradients run on the tape of the half steps, which the extrapolated
/// state leaves: a differentiable rollout refuses the option by name.
#[test]
fn differentiable_rollouts_refuse_extrapolation() {
    let model = Arc::new(Model::from_mjcf_str(OSCILLATOR).unwrap());
    let r = DiffRollout::new(model, Mode::ErrorControlled(params(1e-4, true)), 0.01);
    let Err(err) = r.record(&[0.1, 0.0], &[], &[], 2) else { panic!("extrapolation must be refused") };
    assert!(err.to_string().contains("extrapolate"), "{err}");
}
