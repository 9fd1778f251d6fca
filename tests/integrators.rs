//! The baseline integrators of the seed papers: each converges
//! at its stated order on smooth problems against an independent reference
//! (a pendulum, and a frictionless sphere pressed into the floor — a
//! compliant contact that never opens and has no friction transition), and
//! conserves what it should on a contact-free model. The references are
//! the problems' own scalar ODEs integrated here with classical RK4 at a
//! tiny step, independent of the library's dynamics.

#[macro_use]
mod common;

use cenic::batch::{Batch, CpuBatch};
use cenic::diff::DiffRollout;
use cenic::integrator::{ExponentialParams, ImplicitEulerParams, Mode, RkParams, TamsiParams, World};
use cenic::model::{
    BodySpec, GeomKind, GeomSpec, Inertial, JointKind, JointSpec, Material, Model, ModelBuilder, WORLD,
};
use std::sync::Arc;

const G: f64 = 9.81;

/// Fixed-step versions of every scheme, with its stated order.
fn fixed_schemes(h: f64) -> Vec<(&'static str, Mode, f64)> {
    vec![
        ("tamsi", Mode::Tamsi(TamsiParams { dt: h, ..Default::default() }), 1.0),
        ("exponential", Mode::Exponential(ExponentialParams { dt: h, ..Default::default() }), 1.0),
        ("rk45 (fixed)", Mode::RungeKutta(RkParams { fixed_step: Some(h), ..Default::default() }), 5.0),
        (
            "implicit Euler (fixed)",
            Mode::ImplicitEuler(ImplicitEulerParams { fixed_step: Some(h), ..Default::default() }),
            1.0,
        ),
        ("lagged ICF (fixed)", Mode::Fixed { dt: h }, 1.0),
    ]
}

/// Classical RK4 on y' = f(y) for `t` seconds at step `h`.
fn rk4(f: impl Fn(&[f64; 2]) -> [f64; 2], mut y: [f64; 2], t: f64, h: f64) -> [f64; 2] {
    let n = (t / h).round() as usize;
    let add = |y: &[f64; 2], k: &[f64; 2], s: f64| [y[0] + s * k[0], y[1] + s * k[1]];
    for _ in 0..n {
        let k1 = f(&y);
        let k2 = f(&add(&y, &k1, 0.5 * h));
        let k3 = f(&add(&y, &k2, 0.5 * h));
        let k4 = f(&add(&y, &k3, h));
        for i in 0..2 {
            y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        }
    }
    y
}

/// A pendulum: a point-like 1 kg mass 0.5 m below a y-axis hinge.
fn pendulum() -> (Model, f64) {
    let (m, l, i_c) = (1.0, 0.5, 1e-3);
    let mut b = ModelBuilder::new("pendulum");
    b.options.gravity = [0.0, 0.0, -G];
    let body = b.add_body(BodySpec {
        inertial: Some(Inertial { mass: m, pos: [0.0, 0.0, -l], quat: [1.0, 0.0, 0.0, 0.0], diag: [i_c; 3] }),
        ..BodySpec::new("link", WORLD, [0.0, 0.0, 1.0])
    });
    b.add_joint(JointSpec { axis: [0.0, 1.0, 0.0], ..JointSpec::new("hinge", JointKind::Hinge, body) });
    // θ'' = −(m g l / I) sin θ, I = m l² + I_c about the hinge.
    (b.build().unwrap(), m * G * l / (m * l * l + i_c))
}

/// A 1 kg sphere (r = 0.1 m) on a frictionless floor, pair stiffness
/// 1e4 N/m, dissipation 0.5 s/m.
fn sphere_on_floor() -> Model {
    let mat = Material { stiffness: 2e4, dissipation: 0.5, mu_static: 0.0, mu_dynamic: 0.0, soft: None };
    let mut b = ModelBuilder::new("sphere");
    b.options.gravity = [0.0, 0.0, -G];
    b.add_geom(GeomSpec { material: mat, ..GeomSpec::new("floor", GeomKind::Plane, [5.0, 5.0, 0.1], WORLD) });
    let body = b.add_body(BodySpec::new("ball", WORLD, [0.0, 0.0, 0.1]));
    b.add_joint(JointSpec::new("free", JointKind::Free, body));
    b.add_geom(GeomSpec {
        material: mat,
        mass: Some(1.0),
        ..GeomSpec::new("ball", GeomKind::Sphere, [0.1, 0.0, 0.0], body)
    });
    b.build().unwrap()
}

fn run(model: &Arc<Model>, mode: Mode, q0: &[f64], v0: &[f64], t: f64) -> World<f64> {
    let mut w = World::<f64>::new(model.clone(), mode);
    w.sim.set_state(q0, v0);
    w.advance(t).unwrap_or_else(|e| panic!("{}: {e}", w.mode.name()));
    w
}

/// Observed orders log2(e_k / e_{k+1}) of successive halvings.
fn orders(errors: &[f64]) -> Vec<f64> {
    errors.windows(2).map(|e| (e[0] / e[1]).log2()).collect()
}

fn check_order(name: &str, problem: &str, errors: &[f64], order: f64) {
    let p = orders(errors);
    eprintln!("{problem}, {name}: errors {errors:?}, observed orders {p:.2?} (stated {order})");
    let last = *p.last().unwrap();
    assert!(
        last > order - 0.3 && last < order + 0.6,
        "{problem}, {name}: observed order {last:.2} on the finest pair, stated {order} (errors {errors:?})"
    );
}

#[test]
fn each_scheme_converges_at_its_order_on_a_pendulum() {
    let (model, w2) = pendulum();
    let model = Arc::new(model);
    let (theta0, t) = (1.0, 1.0);
    let exact = rk4(|y| [y[1], -w2 * y[0].sin()], [theta0, 0.0], t, 1e-5);
    for (i, (name, _, order)) in fixed_schemes(1.0).into_iter().enumerate() {
        // Steps in the asymptotic range and above rounding for each order.
        let steps: Vec<f64> = if order > 2.0 { vec![0.1, 0.05, 0.025] } else { vec![4e-3, 2e-3, 1e-3] };
        let errors: Vec<f64> = steps
            .iter()
            .map(|&h| {
                let mode = fixed_schemes(h).swap_remove(i).1;
                let w = run(&model, mode, &[theta0], &[0.0], t);
                (w.sim.data.q[0] - exact[0]).abs().max(0.1 * (w.sim.data.v[0] - exact[1]).abs())
            })
            .collect();
        check_order(name, "pendulum", &errors, order);
    }
}

#[test]
fn each_scheme_converges_at_its_order_on_a_pressed_sphere() {
    let model = Arc::new(sphere_on_floor());
    let (k, d, m, r) = (1e4, 0.5, 1.0, 0.1);
    // Static penetration mg/k ≈ 1 mm; pressed further at 5 cm/s: the
    // contact never opens (amplitude 0.5 mm) and 1 − d·ż stays near 1.
    let (z0, vz0, t) = (r - m * G / k, -0.05, 0.1);
    let f = |y: &[f64; 2]| {
        let pen = (r - y[0]).max(0.0);
        [y[1], -G + k / m * pen * (1.0 - d * y[1]).max(0.0)]
    };
    let exact = rk4(f, [z0, vz0], t, 1e-7);
    let q0 = [0.0, 0.0, z0, 1.0, 0.0, 0.0, 0.0];
    let v0 = [0.0, 0.0, vz0, 0.0, 0.0, 0.0];
    for (i, (name, _, order)) in fixed_schemes(1.0).into_iter().enumerate() {
        // Here everything that varies over a step is a linearised contact
        // force, which the exponential integrator re-linearises every step
        // (exponential Rosenbrock–Euler): second order. Forces it holds
        // constant (the pendulum's gravity torque) make it first order.
        let order = if name == "exponential" { 2.0 } else { order };
        let steps: Vec<f64> = if order > 2.0 { vec![2e-3, 1e-3, 5e-4] } else { vec![2e-4, 1e-4, 5e-5] };
        let errors: Vec<f64> = steps
            .iter()
            .map(|&h| {
                let mode = fixed_schemes(h).swap_remove(i).1;
                let w = run(&model, mode, &q0, &v0, t);
                let (q, v) = (&w.sim.data.q, &w.sim.data.v);
                // Only z moves: x, y and the rotation stay put.
                assert!(q[0].abs() + q[1].abs() + v[3].abs() < 1e-12, "{name}: {q:?} {v:?}");
                (q[2] - exact[0]).abs().max(0.01 * (v[2] - exact[1]).abs())
            })
            .collect();
        check_order(name, "pressed sphere", &errors, order);
    }
}

/// Adaptive Dormand–Prince meets its accuracy on the pressed sphere, and
/// tightening the accuracy 100× shrinks the error by about 100^(5/5)…100^(4/5).
#[test]
fn adaptive_rk_error_follows_the_accuracy() {
    let model = Arc::new(sphere_on_floor());
    let (k, d, m, r) = (1e4, 0.5, 1.0, 0.1);
    let (z0, vz0, t) = (r - m * G / k, -0.05, 0.1);
    let exact = rk4(|y| [y[1], -G + k / m * (r - y[0]).max(0.0) * (1.0 - d * y[1]).max(0.0)], [z0, vz0], t, 1e-7);
    let q0 = [0.0, 0.0, z0, 1.0, 0.0, 0.0, 0.0];
    let v0 = [0.0, 0.0, vz0, 0.0, 0.0, 0.0];
    let mut errs = vec![];
    for acc in [1e-6, 1e-8] {
        let mode = Mode::RungeKutta(RkParams { accuracy: acc, ..Default::default() });
        let w = run(&model, mode, &q0, &v0, t);
        let e = (w.sim.data.q[2] - exact[0]).abs();
        eprintln!("rk45 accuracy {acc:e}: error {e:.3e}, {} accepted, {} rejected", w.stats.accepted, w.stats.rejected);
        assert!(e < 20.0 * acc, "accuracy {acc:e}: error {e:e}");
        errs.push(e);
    }
    assert!(errs[1] < errs[0] / 10.0, "{errs:?}");
}

/// Adaptive implicit Euler's error follows its accuracy as a first-order
/// scheme with step doubling does: 100× tighter gives about 10× smaller.
#[test]
fn adaptive_implicit_euler_error_follows_the_accuracy() {
    let (model, w2) = pendulum();
    let model = Arc::new(model);
    let exact = rk4(|y| [y[1], -w2 * y[0].sin()], [1.0, 0.0], 1.0, 1e-5);
    let mut errs = vec![];
    for acc in [1e-4, 1e-6] {
        let mode = Mode::ImplicitEuler(ImplicitEulerParams { accuracy: acc, ..Default::default() });
        let w = run(&model, mode, &[1.0], &[0.0], 1.0);
        let e = (w.sim.data.q[0] - exact[0]).abs();
        eprintln!("implicit Euler accuracy {acc:e}: error {e:.3e}, {} accepted", w.stats.accepted);
        errs.push(e);
    }
    // First order with step doubling: local error ∝ h², global ∝ h ∝ accuracy^½ (10× here).
    assert!(errs[1] < errs[0] / 5.0 && errs[1] > errs[0] / 20.0, "{errs:?}");
}

/// Energy on the contact-free pendulum over 20 s: adaptive RK keeps it to
/// its accuracy; TAMSI (symplectic Euler without contact) keeps a bounded
/// error with no drift; implicit Euler loses and the exponential
/// integrator (explicit without stiff elements) gains energy at first
/// order (the change halves with the step).
#[test]
fn energy_behaviour_on_a_contact_free_pendulum() {
    let (model, _) = pendulum();
    let model = Arc::new(model);
    let energy = |w: &mut World<f64>| {
        w.sim.compute_geometry();
        let (k, u) = cenic::dynamics::energy(&w.sim.model, &w.sim.data);
        k + u
    };
    let trace = |mode: Mode, t: f64| -> (f64, Vec<f64>) {
        let mut w = World::<f64>::new(model.clone(), mode);
        w.sim.set_state(&[1.0], &[0.0]);
        let e0 = energy(&mut w);
        let mut out = vec![];
        for _ in 0..(t / 0.05).round() as usize {
            w.advance(0.05).unwrap();
            out.push(energy(&mut w) - e0);
        }
        (e0, out)
    };
    // Adaptive RK at 1e-8.
    let (e0, de) = trace(Mode::RungeKutta(RkParams { accuracy: 1e-8, ..Default::default() }), 20.0);
    let worst = de.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    eprintln!("rk45 1e-8: worst |ΔE|/|E0| {:.2e}", worst / e0.abs());
    assert!(worst < 1e-6 * e0.abs(), "rk45 energy error {worst:e} (E0 {e0})");
    // TAMSI at 2 ms: bounded, and the second half no worse than the first.
    let (e0, de) = trace(Mode::Tamsi(TamsiParams { dt: 2e-3, ..Default::default() }), 20.0);
    let half = de.len() / 2;
    let max = |s: &[f64]| s.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    let (first, second) = (max(&de[..half]), max(&de[half..]));
    eprintln!("tamsi 2 ms: |ΔE| first half {first:.3e}, second half {second:.3e} (E0 {e0:.3})");
    assert!(first < 0.02 * e0.abs() && second < 1.2 * first, "tamsi energy: {first:e} then {second:e}");
    // First-order dissipation (implicit Euler) and gain (exponential), halving with the step.
    for (name, mk, sign) in [
        (
            "implicit Euler",
            Box::new(|h| Mode::ImplicitEuler(ImplicitEulerParams { fixed_step: Some(h), ..Default::default() }))
                as Box<dyn Fn(f64) -> Mode>,
            -1.0,
        ),
        ("exponential", Box::new(|h| Mode::Exponential(ExponentialParams { dt: h, ..Default::default() })), 1.0),
    ] {
        let d1 = *trace(mk(1e-3), 5.0).1.last().unwrap();
        let d2 = *trace(mk(5e-4), 5.0).1.last().unwrap();
        eprintln!("{name}: ΔE over 5 s {d1:.3e} at 1 ms, {d2:.3e} at 0.5 ms");
        assert!(sign * d1 > 0.0 && sign * d2 > 0.0, "{name}: energy change has the wrong sign: {d1:e}, {d2:e}");
        let ratio = d1 / d2;
        assert!(ratio > 1.7 && ratio < 2.3, "{name}: energy change ratio {ratio} (first order: 2)");
    }
}

/// Every baseline runs in a CPU batch (worlds of different states), and
/// the gradient path and the GPU batch refuse them by name.
#[test]
fn baselines_run_in_the_cpu_batch_and_are_refused_elsewhere() {
    let model = Arc::new(sphere_on_floor());
    let modes: Vec<(&str, Mode)> = fixed_schemes(1e-3)
        .into_iter()
        .map(|(n, m, _)| (n, m))
        .chain([("rk45 (adaptive)", Mode::RungeKutta(RkParams { accuracy: 1e-5, ..Default::default() }))])
        .chain([(
            "implicit Euler (adaptive)",
            Mode::ImplicitEuler(ImplicitEulerParams { accuracy: 1e-4, ..Default::default() }),
        )])
        .collect();
    for (name, mode) in &modes {
        let mut batch = CpuBatch::<f64>::new(model.clone(), 3, mode.clone());
        for w in 0..3 {
            let z = 0.1 - 1e-3 * w as f64;
            let q = [0.0, 0.0, z, 1.0, 0.0, 0.0, 0.0];
            batch.set_state(w, &q, &[0.1 * w as f64, 0.0, 0.0, 0.0, 0.0, 0.0]).unwrap();
        }
        batch.advance(0.02).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        for w in 0..3 {
            let st = batch.stats(w);
            assert!(st.accepted > 0 && st.geometry_passes >= st.accepted, "{name}: {st:?}");
            assert!((batch.times()[w] - 0.02).abs() < 1e-12, "{name}");
        }
        if mode.is_icf() {
            continue;
        }
        let x0 = [0.0, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let err = DiffRollout::new(model.clone(), mode.clone(), 0.01)
            .simulate(&x0, &[], &[], 1)
            .expect_err("the gradient path must refuse a baseline");
        assert!(err.to_string().contains(mode.name()) && err.to_string().contains("gradient"), "{err}");
    }
    let ctx = gpu_or_skip!();
    for (name, mode) in modes.iter().filter(|(_, m)| !m.is_icf()) {
        match cenic::gpu::GpuBatch::new(ctx.clone(), model.clone(), 2, mode.clone()) {
            Err(cenic::gpu::GpuError::Unsupported(msg)) => assert!(msg.contains(mode.name()), "{msg}"),
            Err(e) => panic!("{name}: expected Unsupported, got {e}"),
            Ok(_) => panic!("{name}: the GPU batch accepted a CPU baseline"),
        }
    }
}
