//! Gradients through a slip→stick transition. A 1 kg block
//! (a sphere on horizontal and vertical slide joints, so it cannot roll)
//! slides on a plane from vx0 = 1 m/s and sticks after 0.2 s at
//! x* = vx0²/(2μg): the analytic derivative of the final position is
//! dx*/dvx0 = vx0/(μg). With `CenicParams::land_stick_events` a step ends
//! where the block sticks, and the gradient is checked against that value
//! (at accuracy 1e-3 / 1e-4 / 1e-5: 1.7 % / 0.0 % / 0.15 % off, against
//! 4.0 % / 0.7 % / 0.1 % unlanded). The block at rest has a tangential
//! velocity of exactly zero, where the derivative of |vt| in the friction
//! law's Stribeck blend was 0/0 (fixed in `IcfProblem::set_time_step`).

use cenic::diff::DiffRollout;
use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::{BodySpec, GeomKind, GeomSpec, JointKind, JointSpec, Material, Model, ModelBuilder, WORLD};
use std::sync::Arc;

const MU: f64 = 0.5;
const RADIUS: f64 = 0.05;
const STIFFNESS: f64 = 1e5;

fn sliding_block() -> Model {
    let mat = Material { stiffness: STIFFNESS, dissipation: 1.0, mu_static: MU, mu_dynamic: MU, soft: None };
    let mut b = ModelBuilder::new("sliding_block");
    b.add_geom(GeomSpec { material: mat, ..GeomSpec::new("ground", GeomKind::Plane, [1.0, 1.0, 0.1], WORLD) });
    let body = b.add_body(BodySpec::new("block", WORLD, [0.0, 0.0, 0.0]));
    b.add_joint(JointSpec { axis: [1.0, 0.0, 0.0], ..JointSpec::new("x", JointKind::Slide, body) });
    b.add_joint(JointSpec { axis: [0.0, 0.0, 1.0], ..JointSpec::new("z", JointKind::Slide, body) });
    b.add_geom(GeomSpec {
        material: mat,
        mass: Some(1.0),
        ..GeomSpec::new("block", GeomKind::Sphere, [RADIUS, 0.0, 0.0], body)
    });
    b.build().unwrap()
}

fn mode(accuracy: f64, land: bool) -> Mode {
    Mode::ErrorControlled(CenicParams { accuracy, land_stick_events: land, ..CenicParams::for_gradients(accuracy) })
}

/// (x(T), dx(T)/dvx0, steps shortened to land an event).
fn run(mode: Mode, vx0: f64) -> (f64, f64, u64) {
    let model = Arc::new(sliding_block());
    let g = -model.options.gravity[2];
    let z0 = RADIUS - g / STIFFNESS; // resting penetration
    let x0 = [0.0, z0, vx0, 0.0];
    let t_end = 0.3;
    let r = DiffRollout::new(model.clone(), mode.clone(), t_end);
    let lin = r.linearize(&x0, &[], &[], 1).unwrap();
    let (grad, _, _) = lin.vjp(&[0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
    let mut w = World::<f64>::new(model, mode);
    w.sim.set_state(&x0[..2], &x0[2..]);
    w.advance(t_end).unwrap();
    (lin.trajectory[4], grad[2], w.stats.event_limited)
}

#[test]
fn landing_the_stick_gives_the_analytic_stopping_distance_gradient() {
    let vx0 = 1.0;
    let g = 9.81;
    let (x_exact, d_exact) = (vx0 * vx0 / (2.0 * MU * g), vx0 / (MU * g));
    for accuracy in [1e-3, 1e-4, 1e-5] {
        let (x_plain, d_plain, _) = run(mode(accuracy, false), vx0);
        let (x_land, d_land, events) = run(mode(accuracy, true), vx0);
        eprintln!(
            "accuracy {accuracy:e}: x* {x_land:.5} (plain {x_plain:.5}, exact {x_exact:.5}); dx*/dvx0 landed {d_land:.4}, plain {d_plain:.4}, exact {d_exact:.4}; {events} landing steps"
        );
        assert!(events > 0, "no step was shortened to land the stick");
        // Implicit Euler's position error is first order in h (3.6 % at 1e-3).
        assert!((x_land - x_exact).abs() < 0.05 * x_exact, "stopping distance {x_land} vs {x_exact}");
        assert!((d_land - d_exact).abs() < 0.02 * d_exact, "gradient {d_land} vs analytic {d_exact}");
        if accuracy >= 1e-4 {
            // Unlanded, where in a step the block sticks biases the derivative.
            assert!(
                (d_land - d_exact).abs() < (d_plain - d_exact).abs(),
                "landing did not help: {d_land} vs {d_plain}"
            );
        }
    }
}
