//! Contact-free dynamics against MuJoCo. The fixtures
//! (`scripts/mujoco_zoo_fixtures.py`, committed under
//! `tests/fixtures/mujoco_zoo`) are MuJoCo 4.0.0 RK4 trajectories at a
//! 0.1 ms step (converged: the script records the change when halving it,
//! ≤ 6e-11), with contacts and joint limits disabled, under the seeded
//! smooth controls of `cenic::zoo`. CENIC at accuracy 1e-7 must follow them
//! for 1 s, and at 1e-8 more closely still. This separates the multibody
//! dynamics (mass matrix, bias forces, passive damping, stiffness and
//! armature, gear) from the contact and limit models, which differ from
//! MuJoCo's by design.
//!
//! Measured (largest qpos deviation over 1 s, m or rad): at 1e-7, 1.1e-4
//! (pusher) … 2.1e-3 (ant in the air); at 1e-8 about √10 smaller, at 1e-9
//! √10 smaller again (humanoid: 6.2e-3, 1.9e-3, 6.1e-4, 1.9e-4 at 1e-6 …
//! 1e-9): CENIC is first order, its steps scale as √accuracy and so does
//! the global error, and the deviation converges to zero — no model
//! difference is left at the 1e-5 level.

mod common;
mod mujoco_fixture;

use cenic::integrator::{CenicParams, Mode, World};
use cenic::math::Quat;
use cenic::model::{JointKind, Model};
use cenic::zoo::{CONTROL_INTERVAL, smooth_control};
use mujoco_fixture::{f, mat};
use std::sync::Arc;

/// Largest deviation of qpos from the fixture (m or rad; rotations of free
/// joints as angles) over the samples.
fn deviation(model: &Model, q: &[f64], reference: &[f64]) -> f64 {
    let mut worst: f64 = 0.0;
    for j in &model.joints {
        let a = j.qpos_adr;
        match j.kind {
            JointKind::Free => {
                for k in 0..3 {
                    worst = worst.max((q[a + k] - reference[a + k]).abs());
                }
                let angle = Quat::from_slice(&q[a + 3..a + 7]).angle_to(Quat::from_slice(&reference[a + 3..a + 7]));
                worst = worst.max(angle);
            }
            JointKind::Ball => {
                worst = worst.max(Quat::from_slice(&q[a..a + 4]).angle_to(Quat::from_slice(&reference[a..a + 4])));
            }
            JointKind::Hinge | JointKind::Slide => worst = worst.max((q[a] - reference[a]).abs()),
        }
    }
    worst
}

/// Runs one fixture at `accuracy`; returns the largest qpos deviation over the 1 s.
fn check(case: &str, accuracy: f64) -> Option<f64> {
    let fx = mujoco_fixture::load_from("mujoco_zoo", case);
    let stem = fx["model"].as_str().unwrap();
    let path = common::shared_file(&format!("models/gymnasium/{stem}.xml"))?;
    let mut model = Model::from_mjcf_file(&path).unwrap();
    // As the script: no contacts, no limits, gravity as recorded.
    for g in model.geoms.iter_mut() {
        g.contype = 0;
        g.conaffinity = 0;
    }
    for j in model.joints.iter_mut() {
        j.range = None;
        j.limit_law = None;
    }
    if !fx["gravity"].as_bool().unwrap() {
        model.options.gravity = [0.0; 3];
    }
    let model = Arc::new(model);
    let qpos = mat(&fx["qpos"]);
    assert_eq!(qpos[0].len(), model.nq, "{case}: nq");
    assert!(f(&fx["rk4_step_change"]) < 1e-9, "{case}: the fixture is not converged");
    let mode = Mode::ErrorControlled(CenicParams { accuracy, ..Default::default() });
    let mut world = World::<f64>::new(model.clone(), mode);
    let mut worst = deviation(&model, &world.sim.data.q, &qpos[0]);
    for (k, reference) in qpos.iter().enumerate().skip(1) {
        let t = (k - 1) as f64 * CONTROL_INTERVAL;
        for i in 0..model.nu() {
            world.sim.ctrl[i] = smooth_control(&model, 1, i, t);
        }
        world.advance(CONTROL_INTERVAL).unwrap_or_else(|e| panic!("{case}: {e}"));
        worst = worst.max(deviation(&model, &world.sim.data.q, reference));
    }
    eprintln!(
        "{case}: max qpos deviation from MuJoCo over 1 s at accuracy {accuracy:e}: {worst:.2e} ({} steps)",
        world.stats.accepted
    );
    Some(worst)
}

/// Within 5e-3 (m or rad) at accuracy 1e-7, and at 1e-8 within half of
/// that run's deviation (the error converges: it does not stall at a
/// model difference).
macro_rules! fixture_test {
    ($name:ident) => {
        #[test]
        fn $name() {
            let case = stringify!($name);
            let Some(coarse) = check(case, 1e-7) else { return };
            assert!(coarse < 5e-3, "{case}: deviation {coarse:e} ≥ 5e-3 at accuracy 1e-7");
            let fine = check(case, 1e-8).unwrap();
            assert!(fine < 0.5 * coarse, "{case}: deviation {fine:e} at 1e-8 is not below half of {coarse:e} at 1e-7");
        }
    };
}

fixture_test!(inverted_pendulum);
fixture_test!(inverted_double_pendulum);
fixture_test!(reacher);
fixture_test!(pusher);
fixture_test!(half_cheetah_air);
fixture_test!(ant_air);
fixture_test!(humanoid_air);
