//! Fixed-step Lagged ICF against analytic answers.
//! Each test states its tolerance and why.

use cenic::integrator::Simulator;
use cenic::math::{Quat, Vec3};
use cenic::model::{
    Actuator, ActuatorKind, BodySpec, GeomKind, GeomSpec, Inertial, JointKind, JointSpec, Material, Model,
    ModelBuilder, WORLD,
};
use std::sync::Arc;

const G: f64 = 9.81;

fn mat(k: f64, d: f64, mus: f64, mud: f64) -> Material {
    Material { stiffness: k, dissipation: d, mu_static: mus, mu_dynamic: mud, soft: None }
}

/// A ground plane tilted by `incline` (rad) about the y axis and a free
/// box (half size 0.05 m, mass 1 kg) resting on it. Rigid ground: the pair
/// takes the box's stiffness.
fn incline_box(incline: f64, mus: f64, mud: f64) -> Model {
    let mut b = ModelBuilder::new("incline");
    b.options.stiction_tolerance = 1e-4;
    let q = Quat::from_axis_angle(Vec3::new(0.0, 1.0, 0.0), incline);
    b.add_geom(GeomSpec {
        quat: q.to_array(),
        material: mat(f64::INFINITY, 0.0, mus, mud),
        ..GeomSpec::new("ground", GeomKind::Plane, [5.0, 5.0, 0.1], WORLD)
    });
    let normal = q.rotate(Vec3::new(0.0, 0.0, 1.0));
    let pos = normal * 0.05;
    let bx = b.add_body(BodySpec { quat: q.to_array(), ..BodySpec::new("box", WORLD, pos.to_array()) });
    b.add_joint(JointSpec::new("free", JointKind::Free, bx));
    b.add_geom(GeomSpec {
        mass: Some(1.0),
        material: mat(1e6, 10.0, mus, mud),
        ..GeomSpec::new("box", GeomKind::Box, [0.05, 0.05, 0.05], bx)
    });
    b.build().unwrap()
}

fn settle(sim: &mut Simulator<f64>, h: f64, t: f64) {
    for _ in 0..(t / h).round() as usize {
        sim.step(h).unwrap();
    }
}

fn pos(sim: &Simulator<f64>) -> Vec3<f64> {
    Vec3::from_slice(&sim.data.q[0..3])
}

/// Which way is down the slope, measured rather than assumed: the direction
/// of gravity projected on the plane.
fn downslope(normal: Vec3<f64>) -> Vec3<f64> {
    let g = Vec3::new(0.0, 0.0, -1.0);
    (g - normal * g.dot(normal)).normalize()
}

#[test]
fn box_on_20_degree_incline_with_mu_05_stays_put() {
    let theta = 20f64.to_radians();
    let model = incline_box(theta, 0.5, 0.5);
    let normal = Quat::from_axis_angle(Vec3::new(0.0, 1.0, 0.0), theta).rotate(Vec3::new(0.0, 0.0, 1.0));
    let mut sim = Simulator::<f64>::new(Arc::new(model));
    let h = 1e-3;
    settle(&mut sim, h, 0.2);
    let p0 = pos(&sim);
    let duration = 2.0;
    settle(&mut sim, h, duration);
    let creep = (pos(&sim) - p0).dot(downslope(normal));
    let bound = sim.model.options.stiction_tolerance * duration;
    eprintln!("creep over {duration} s: {creep:e} m (bound {bound:e} m)");
    // Regularised static friction creeps slower than the stiction tolerance.
    assert!(creep.abs() < bound, "creep {creep:e} m exceeds vs·T = {bound:e} m");
}

#[test]
fn box_on_20_degree_incline_with_mu_02_slides_at_the_analytic_rate() {
    let theta = 20f64.to_radians();
    let mu = 0.2;
    let model = incline_box(theta, mu, mu);
    let normal = Quat::from_axis_angle(Vec3::new(0.0, 1.0, 0.0), theta).rotate(Vec3::new(0.0, 0.0, 1.0));
    let d = downslope(normal);
    let mut sim = Simulator::<f64>::new(Arc::new(model));
    let h = 1e-3;
    settle(&mut sim, h, 0.1);
    let v_at = |sim: &Simulator<f64>| Vec3::from_slice(&sim.data.v[0..3]).dot(d);
    let (t0, v0) = (sim.time, v_at(&sim));
    settle(&mut sim, h, 0.5);
    let a = (v_at(&sim) - v0) / (sim.time - t0);
    let expected = G * (theta.sin() - mu * theta.cos());
    eprintln!("sliding acceleration {a} m/s² vs g(sin θ − μ cos θ) = {expected} m/s²");
    assert!((a - expected).abs() < 0.01 * expected, "{a} vs {expected}");
}

/// A 1 kg box on flat ground pushed horizontally by a force that grows at
/// 0.5 N/s. It must start sliding near μs·m·g and then be resisted by about
/// μd·m·g. "About": the lagged Stribeck blend reaches μd at slip speeds ≫ vs
/// and the onset is detected at a finite slip speed, so 5% is allowed.
#[test]
fn static_then_dynamic_friction_under_a_slow_push() {
    let (mus, mud) = (0.6, 0.3);
    let model = incline_box(0.0, mus, mud);
    let mut sim = Simulator::<f64>::new(Arc::new(model));
    let h = 1e-3;
    settle(&mut sim, h, 0.2);
    let rate = 0.5; // N/s
    let mut push = 0.0;
    let mut onset = None;
    let mut t_slide = 0.0;
    let mut samples = vec![];
    for _ in 0..40_000 {
        match onset {
            None => push += rate * h,
            // Once sliding, hold the push between μd m g and μs m g.
            Some(_) => push = 0.45 * G,
        }
        sim.applied[0] = push;
        let v_before = sim.data.v[0];
        sim.step(h).unwrap();
        let v = sim.data.v[0];
        if onset.is_none() && v > 1e-2 {
            onset = Some(push);
            t_slide = sim.time;
        }
        if onset.is_some() && sim.time > t_slide + 0.05 {
            // Friction = push − m a.
            samples.push(push - (v - v_before) / h);
            if samples.len() > 200 {
                break;
            }
        }
    }
    let onset = onset.expect("the box never slid");
    let friction = samples.iter().sum::<f64>() / samples.len() as f64;
    eprintln!(
        "slide onset at push {onset:.4} N (μs m g = {:.4}); sliding friction {friction:.4} N (μd m g = {:.4})",
        mus * G,
        mud * G
    );
    assert!((onset - mus * G).abs() < 0.05 * mus * G, "onset {onset}");
    assert!((friction - mud * G).abs() < 0.05 * mud * G, "friction {friction}");
}

/// A sphere (radius 0.05 m, 2 kg) at rest on rigid ground penetrates m·g/k.
/// The static solution of the implicit step is exact up to the Newton tolerance.
#[test]
fn sphere_at_rest_penetrates_mg_over_k() {
    let k = 5e4;
    let mut b = ModelBuilder::new("sphere_rest");
    b.add_geom(GeomSpec {
        material: mat(f64::INFINITY, 0.0, 1.0, 1.0),
        ..GeomSpec::new("g", GeomKind::Plane, [1.0; 3], WORLD)
    });
    let s = b.add_body(BodySpec::new("s", WORLD, [0.0, 0.0, 0.05]));
    b.add_joint(JointSpec::new("free", JointKind::Free, s));
    b.add_geom(GeomSpec {
        mass: Some(2.0),
        material: mat(k, 20.0, 1.0, 1.0),
        ..GeomSpec::new("ball", GeomKind::Sphere, [0.05, 0.0, 0.0], s)
    });
    let mut sim = Simulator::<f64>::new(Arc::new(b.build().unwrap()));
    settle(&mut sim, 1e-3, 1.0);
    let pen = 0.05 - sim.data.q[2];
    let expected = 2.0 * G / k;
    eprintln!("penetration {pen:e} m vs m g / k = {expected:e} m");
    assert!((pen - expected).abs() < 1e-3 * expected);
}

/// A ball dropped from 0.2 m: its first rebound height must fall strictly as
/// the Hunt–Crossley dissipation grows (0 → 0.5 → 2 → 10 s/m).
#[test]
fn rebound_decreases_with_dissipation() {
    let mut heights = vec![];
    for d in [0.0, 0.5, 2.0, 10.0] {
        let mut b = ModelBuilder::new("drop");
        b.add_geom(GeomSpec {
            material: mat(f64::INFINITY, 0.0, 0.5, 0.5),
            ..GeomSpec::new("g", GeomKind::Plane, [1.0; 3], WORLD)
        });
        let s = b.add_body(BodySpec::new("s", WORLD, [0.0, 0.0, 0.25]));
        b.add_joint(JointSpec::new("free", JointKind::Free, s));
        b.add_geom(GeomSpec {
            mass: Some(0.5),
            material: mat(1e5, d, 0.5, 0.5),
            ..GeomSpec::new("ball", GeomKind::Sphere, [0.05, 0.0, 0.0], s)
        });
        let mut sim = Simulator::<f64>::new(Arc::new(b.build().unwrap()));
        let h = 1e-4;
        let mut bounced = false;
        let mut apex: f64 = 0.0;
        for _ in 0..12_000 {
            sim.step(h).unwrap();
            let (z, vz) = (sim.data.q[2], sim.data.v[2]);
            if z < 0.05 {
                bounced = true;
            }
            if bounced {
                apex = apex.max(z);
                if vz < 0.0 && z > 0.05 {
                    break;
                }
            }
        }
        eprintln!("d = {d} s/m: rebound apex {:.5} m", apex);
        heights.push(apex);
    }
    for w in heights.windows(2) {
        assert!(w[1] < w[0] - 1e-4, "rebound heights not decreasing: {heights:?}");
    }
    // Without dissipation the rebound is nearly elastic (the implicit step loses a little).
    assert!(heights[0] > 0.2, "{heights:?}");
}

/// A 1 kg slider on a vertical slide joint with a position servo pulling it
/// up (target +1 m, kp 1e4, kd 100) but an effort limit of 5 N < m g: the
/// servo saturates at exactly 5 N, so the slider falls at (5 − m g)/m.
#[test]
fn position_servo_saturates_at_its_effort_limit() {
    let mut b = ModelBuilder::new("servo");
    let s = b.add_body(BodySpec {
        inertial: Some(Inertial { mass: 1.0, pos: [0.0; 3], quat: [1.0, 0.0, 0.0, 0.0], diag: [0.01; 3] }),
        ..BodySpec::new("slider", WORLD, [0.0; 3])
    });
    b.add_joint(JointSpec { axis: [0.0, 0.0, 1.0], ..JointSpec::new("z", JointKind::Slide, s) });
    b.add_actuator(Actuator {
        name: "servo".into(),
        joint: 0,
        kind: ActuatorKind::Position { kp: 1e4, kd: 100.0, effort_limit: 5.0 },
        ctrl_range: None,
    });
    let mut sim = Simulator::<f64>::new(Arc::new(b.build().unwrap()));
    sim.ctrl[0] = 1.0;
    let h = 1e-3;
    let v0 = sim.data.v[0];
    let steps = 500;
    for _ in 0..steps {
        sim.step(h).unwrap();
    }
    let a = (sim.data.v[0] - v0) / (steps as f64 * h);
    let expected = (5.0 - G) / 1.0;
    eprintln!("acceleration {a} m/s² vs (e − m g)/m = {expected} m/s²");
    // The implicit clamp is exact: the only error is the Newton tolerance.
    assert!((a - expected).abs() < 1e-9 * expected.abs(), "{a} vs {expected}");
    // And the servo's impulse at the last solution is the limit itself times h.
    let g = sim.problem.gains[0];
    let (_, impulse, _) = cenic::icf::cost::gain_terms(&g, sim.problem.h, sim.data.v[0]);
    assert!((impulse - 5.0 * h).abs() < 1e-15, "{impulse}");
}
