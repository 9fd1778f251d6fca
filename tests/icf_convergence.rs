//! Fixed-step Lagged ICF converges at first order in h: a sphere rolling down an
//! incline (smooth sustained contact) and cube toss through its first impact
//! and bounces.
//!
//! Error: max(position error (m), orientation error (rad)) of the free body
//! against a run with a much smaller step, at a time every h divides. The
//! observed order is the least-squares slope of log(error) vs log(h); a
//! first-order method gives 1. We require 0.8–1.25 and every halving of h
//! to reduce the error by 1.6–2.6×.
//!
//! Cube toss is evaluated at t = 0.2432 s, after the first impact
//! (t ≈ 0.21 s) and a bounce: once the cube settles flat it rattles on 3–4
//! corners, which amplifies any difference, so errors there become
//! asymptotic only at much smaller steps (measured, see the issue note).

use cenic::integrator::Simulator;
use cenic::math::{Quat, Vec3};
use cenic::model::{BodySpec, GeomKind, GeomSpec, JointKind, JointSpec, Material, Model, ModelBuilder, WORLD};
use std::sync::Arc;

fn error(a: &[f64], b: &[f64]) -> f64 {
    let dp = (Vec3::from_slice(&a[0..3]) - Vec3::from_slice(&b[0..3])).norm();
    dp.max(Quat::from_slice(&a[3..7]).angle_to(Quat::from_slice(&b[3..7])))
}

fn run(model: &Arc<Model>, q: &[f64], v: &[f64], h: f64, t: f64) -> Vec<f64> {
    let n = (t / h).round() as usize;
    assert!((n as f64 * h - t).abs() < 1e-12, "h = {h} does not divide t = {t}");
    let mut s = Simulator::<f64>::new(model.clone());
    s.set_state(q, v);
    for _ in 0..n {
        s.step(h).unwrap();
    }
    s.data.q.clone()
}

fn check_first_order(name: &str, hs: &[f64], errs: &[f64]) {
    let lx: Vec<f64> = hs.iter().map(|h| h.ln()).collect();
    let ly: Vec<f64> = errs.iter().map(|e| e.ln()).collect();
    let n = lx.len() as f64;
    let (mx, my) = (lx.iter().sum::<f64>() / n, ly.iter().sum::<f64>() / n);
    let slope = lx.iter().zip(&ly).map(|(x, y)| (x - mx) * (y - my)).sum::<f64>()
        / lx.iter().map(|x| (x - mx) * (x - mx)).sum::<f64>();
    eprintln!("{name}: h {hs:?}\n  errors {errs:?}\n  observed order {slope:.3}");
    assert!((0.8..=1.25).contains(&slope), "{name}: observed order {slope}");
    for w in errs.windows(2) {
        let r = w[0] / w[1];
        assert!((1.6..=2.6).contains(&r), "{name}: halving h reduced the error by {r:.2}× ({errs:?})");
    }
}

#[test]
fn rolling_sphere_converges_at_first_order() {
    let theta = 10f64.to_radians();
    let tilt = Quat::from_axis_angle(Vec3::new(0.0, 1.0, 0.0), theta);
    let mut b = ModelBuilder::new("rolling");
    let rigid = Material { stiffness: f64::INFINITY, dissipation: 0.0, mu_static: 0.5, mu_dynamic: 0.5, soft: None };
    b.add_geom(GeomSpec {
        quat: tilt.to_array(),
        material: rigid,
        ..GeomSpec::new("slope", GeomKind::Plane, [1.0; 3], WORLD)
    });
    let n = tilt.rotate(Vec3::new(0.0, 0.0, 1.0));
    // Start at the static penetration m g cos θ / k so the contact is settled.
    let c = n * (0.05 - 9.81 * theta.cos() / 1e5);
    let s = b.add_body(BodySpec::new("ball", WORLD, c.to_array()));
    b.add_joint(JointSpec::new("free", JointKind::Free, s));
    b.add_geom(GeomSpec {
        mass: Some(1.0),
        material: Material { stiffness: 1e5, dissipation: 10.0, mu_static: 0.5, mu_dynamic: 0.5, soft: None },
        ..GeomSpec::new("ball", GeomKind::Sphere, [0.05, 0.0, 0.0], s)
    });
    let model = Arc::new(b.build().unwrap());
    let q0 = [c.x, c.y, c.z, 1.0, 0.0, 0.0, 0.0];
    let t = 0.512;
    let reference = run(&model, &q0, &[0.0; 6], 1e-5, t);
    // The reference rolls (no slip): 5/7 g sin θ down the slope.
    let travelled = (Vec3::from_slice(&reference[0..3]) - c).norm();
    let expected = 0.5 * 5.0 / 7.0 * 9.81 * theta.sin() * t * t;
    assert!((travelled - expected).abs() < 0.01 * expected, "rolled {travelled} m, expected {expected} m");
    let hs = [4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4];
    let errs: Vec<f64> = hs.iter().map(|&h| error(&run(&model, &q0, &[0.0; 6], h, t), &reference)).collect();
    check_first_order("rolling sphere", &hs, &errs);
}

#[test]
fn cube_toss_converges_at_first_order_through_the_impact() {
    let model = Arc::new(cenic::scenes::cube_toss());
    let key = model.keyframe("toss").unwrap().clone();
    let t = 0.2432;
    let reference = run(&model, &key.qpos, &key.qvel, 1.5625e-6, t);
    assert!(reference[2] < 0.08, "the cube has not reached the ground by t = {t}");
    let hs = [1e-4, 5e-5, 2.5e-5, 1.25e-5];
    let errs: Vec<f64> = hs.iter().map(|&h| error(&run(&model, &key.qpos, &key.qvel, h, t), &reference)).collect();
    check_first_order("cube toss", &hs, &errs);
}
