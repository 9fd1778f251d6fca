//! Regression tests named after the bugs they guard against.

use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::{BodySpec, GeomKind, GeomSpec, JointKind, JointSpec, Material, ModelBuilder, WORLD};
use std::sync::Arc;

fn mat() -> Material {
    Material { stiffness: 2e5, dissipation: 10.0, mu_static: 0.5, mu_dynamic: 0.5, soft: None }
}

/// Two spheres resting on the floor with a horizontal gap just above the
/// contact skin. The conservative-advancement bound once evaluated
/// (−v + √(v² + 2·a·s))/a with a = |n·g| ≈ 1e-15 for a horizontal normal,
/// which cancels to 0 and pinned the step to its 1e-7 s minimum.
#[test]
fn conservative_advancement_does_not_stall_on_horizontal_gaps() {
    let mut b = ModelBuilder::new("gap");
    b.add_geom(GeomSpec { material: mat(), ..GeomSpec::new("floor", GeomKind::Plane, [1.0; 3], WORLD) });
    let r = 0.05;
    let mass = 4.0 / 3.0 * std::f64::consts::PI * r * r * r * 1000.0; // water-dense sphere, 0.5236 kg
    let pen = mass * 9.81 / 1e5; // static penetration, per pair stiffness 1e5 N/m
    for (i, x) in [-(r + 0.0006), r + 0.0006].into_iter().enumerate() {
        let body = b.add_body(BodySpec::new(&format!("s{i}"), WORLD, [x, 0.0, r - pen]));
        b.add_joint(JointSpec::new(&format!("f{i}"), JointKind::Free, body));
        b.add_geom(GeomSpec {
            mass: Some(mass),
            material: mat(),
            ..GeomSpec::new(&format!("g{i}"), GeomKind::Sphere, [r, 0.0, 0.0], body)
        });
    }
    let model = Arc::new(b.build().unwrap());
    let mut w = World::<f64>::new(model, Mode::ErrorControlled(CenicParams { accuracy: 1e-2, ..Default::default() }));
    // In chunks, so a regression fails fast instead of taking millions of steps.
    for _ in 0..50 {
        w.advance(0.01).unwrap();
        assert!(w.stats.accepted < 400, "stalled: {} steps by t = {}", w.stats.accepted, w.time());
    }
    eprintln!("{} steps, h in [{:e}, {:e}]", w.stats.accepted, w.stats.min_h, w.stats.max_h);
    assert!(w.stats.accepted < 200, "{} steps for 0.5 s at rest", w.stats.accepted);
    assert!(w.stats.min_h > 1e-5, "step collapsed to {:e} s", w.stats.min_h);
}

/// Objects resting next to each other must not be throttled by
/// conservative advancement: it once used total speed bounds plus g·h for
/// every body, so a settled pile with millimetre gaps kept 0.6 ms steps.
#[test]
fn settled_neighbours_do_not_throttle_the_step() {
    let mut b = ModelBuilder::new("row");
    b.add_geom(GeomSpec { material: mat(), ..GeomSpec::new("floor", GeomKind::Plane, [1.0; 3], WORLD) });
    let h = 0.04;
    for i in 0..4 {
        // Cubes in a row, 2 mm apart, resting on the floor.
        let body = b.add_body(BodySpec::new(&format!("c{i}"), WORLD, [i as f64 * (2.0 * h + 0.002), 0.0, h - 1e-4]));
        b.add_joint(JointSpec::new(&format!("f{i}"), JointKind::Free, body));
        b.add_geom(GeomSpec {
            mass: Some(0.512),
            material: mat(),
            ..GeomSpec::new(&format!("g{i}"), GeomKind::Box, [h; 3], body)
        });
    }
    let model = Arc::new(b.build().unwrap());
    let mut w = World::<f64>::new(model, Mode::ErrorControlled(CenicParams { accuracy: 1e-2, ..Default::default() }));
    w.advance(0.3).unwrap();
    let settled = w.stats.accepted;
    w.advance(1.0).unwrap();
    let steps = w.stats.accepted - settled;
    eprintln!("{steps} steps for 1 s at rest, largest {:e} s", w.stats.max_h);
    assert!(steps < 100, "{steps} steps for 1 s of resting cubes");
}

/// A model without degrees of freedom (only static geoms) steps: the dense
/// matrix product of the convex solve once split its rows by nv = 0 and
/// panicked (found by the loader fuzzer).
#[test]
fn a_model_without_degrees_of_freedom_steps() {
    let model = Arc::new(
        cenic::model::Model::from_mjcf_str(
            r#"<mujoco><worldbody><geom type="plane" size="1 1 0.1"/><geom type="sphere" size="0.1" pos="0 0 0.05"/></worldbody></mujoco>"#,
        )
        .unwrap(),
    );
    assert_eq!(model.nv, 0);
    for mode in [Mode::Fixed { dt: 0.01 }, Mode::ErrorControlled(CenicParams::default())] {
        let mut w = World::<f64>::new(model.clone(), mode);
        w.advance(0.1).unwrap();
        assert!((w.time() - 0.1).abs() < 1e-12, "time {}", w.time());
    }
}

/// `set_state` kept the last step's acceleration, which warm-starts the
/// next solve (v0 + h·qacc): a step from a set state then depended, within
/// the Newton tolerance, on what the world had done before, so two
/// rollouts or a finite difference from the same state disagreed. Now a set
/// state has no last step: a world that ran elsewhere and a fresh one step
/// alike from it, bit for bit (the GPU's twin: `gpu_batch.rs`,
/// `set_state_forgets_the_last_step_on_the_gpu`).
#[test]
fn set_state_forgets_the_last_steps_acceleration() {
    let model = Arc::new(cenic::scenes::clutter(20, cenic::scenes::CUBE_TOSS_MATERIAL));
    let mode = Mode::Fixed { dt: 1e-3 };
    let mut ran = World::<f64>::new(model.clone(), mode.clone());
    // The bodies falling into the bin: every step has a large acceleration.
    ran.advance(0.2).unwrap();
    let (q, v) = (ran.sim.data.q.clone(), ran.sim.data.v.clone());
    ran.advance(0.01).unwrap();
    assert!(ran.sim.qacc.iter().any(|a| a.abs() > 1.0), "no acceleration to forget");
    let mut fresh = World::<f64>::new(model, mode);
    let mut newton = vec![];
    for w in [&mut ran, &mut fresh] {
        w.sim.set_state(&q, &v);
        assert!(w.sim.qacc.iter().all(|a| *a == 0.0), "set_state kept the acceleration");
        let before = w.stats.newton_iterations;
        w.advance(5e-3).unwrap();
        newton.push(w.stats.newton_iterations - before);
    }
    assert_eq!(ran.sim.data.q, fresh.sim.data.q, "positions after 5 steps from the same set state");
    assert_eq!(ran.sim.data.v, fresh.sim.data.v, "velocities after 5 steps from the same set state");
    assert_eq!(newton[0], newton[1], "Newton iterations from the same set state");
}
