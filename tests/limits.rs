//! Joint limits under cenic's physical semantics (MuJoCo's: see
//! `tests/mujoco_semantics.rs`) behave as a physical stop from any state,
//! including one that starts violated. A violated limit is a spring
//! (`model::soft`): restoring it may release at most the spring's
//! potential U(r0) = ∫₀^r0 F(r) dr as kinetic energy, never more, under
//! error control and with fixed steps.

mod common;

use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::{JointKind, Model, Semantics};
use cenic::zoo;
use std::sync::Arc;

/// The limit springs' potential (J) stored in the violated limits of state
/// q: Σ over limits of ∫₀^r F(r) dr (Simpson), with r the violation.
fn limit_potential(model: &Model, q: &[f64]) -> f64 {
    let mut u = 0.0;
    for j in &model.joints {
        let (Some([lo, hi]), Some(law)) = (j.range, j.limit_law) else { continue };
        let x = q[j.qpos_adr];
        for r in [lo + j.limit_margin - x, x - (hi - j.limit_margin)] {
            if r > 0.0 {
                let n = 2000;
                let dr = r / n as f64;
                let f = |s: f64| law.at::<f64>(s).0;
                let mut s = f(0.0) + f(r);
                for i in 1..n {
                    s += if i % 2 == 1 { 4.0 } else { 2.0 } * f(i as f64 * dr);
                }
                u += s * dr / 3.0;
            }
        }
    }
    u
}

/// Largest kinetic energy over `t_end` seconds, sampled every fixed step
/// or every 0.5 ms under error control.
fn peak_kinetic_energy(model: &Arc<Model>, mode: Mode, q0: &[f64], t_end: f64) -> f64 {
    let every = match mode {
        Mode::Fixed { dt } => dt,
        Mode::ErrorControlled(_) => 5e-4,
        ref m => panic!("this test runs Lagged ICF, not {}", m.name()),
    };
    let mut w = World::<f64>::new(model.clone(), mode);
    w.sim.set_state(q0, &vec![0.0; model.nv]);
    let mut peak: f64 = 0.0;
    while w.time() < t_end - 1e-12 {
        w.advance(every).unwrap();
        peak = peak.max(zoo::kinetic_energy(model, &w.sim.data.q, &w.sim.data.v));
    }
    peak
}

fn modes() -> Vec<(&'static str, Mode)> {
    vec![
        ("CENIC 1e-3", Mode::ErrorControlled(CenicParams { accuracy: 1e-3, ..Default::default() })),
        ("CENIC 1e-6", Mode::ErrorControlled(CenicParams { accuracy: 1e-6, ..Default::default() })),
        ("fixed 1 ms", Mode::Fixed { dt: 1e-3 }),
        ("fixed 10 ms", Mode::Fixed { dt: 1e-2 }),
    ]
}

/// A hinge without gravity starts 0.1 rad below its lower limit (lightly
/// damped limit, ζ = 0.2, and the stiffening impedance of `solimplimit`):
/// it is pushed back out, swings freely to its upper limit and bounces.
/// Its kinetic energy never exceeds the potential of the initial
/// violation, and with accurate integration it retains most of it (the
/// limit restores the pose instead of absorbing it).
#[test]
fn violated_limit_releases_no_more_than_its_potential() {
    let model = Arc::new(
        Model::from_mjcf_str_as(
            r#"<mujoco><option gravity="0 0 0" timestep="0.002"/>
            <worldbody><body><joint name="hinge" type="hinge" axis="0 1 0" range="0 90"
                solreflimit="0.05 0.2" solimplimit="0.8 0.95 0.2 0.5 2"/>
              <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03" mass="1"/></body></worldbody></mujoco>"#,
            Semantics::Physical,
        )
        .unwrap(),
    );
    let q0 = [-0.1];
    let u0 = limit_potential(&model, &q0);
    assert!(u0 > 0.0);
    for (name, mode) in modes() {
        let peak = peak_kinetic_energy(&model, mode, &q0, 1.0);
        eprintln!("{name}: peak kinetic energy {peak:.5} J, initial limit potential {u0:.5} J");
        assert!(peak <= u0 * (1.0 + 1e-3), "{name}: gained energy: {peak} J > {u0} J");
        if name.starts_with("CENIC") {
            assert!(peak > 0.4 * u0, "{name}: the limit absorbed the violation instead of restoring it: {peak} J");
        }
    }
}

/// The humanoid in the air with gravity off and contacts off starts with
/// both knees outside their range ([−160°, −2°] at qpos0 = 0): passive
/// otherwise, it may gain at most the knee springs' potential.
#[test]
fn humanoid_with_violated_knees_gains_no_energy() {
    let Some(path) = common::shared_file("models/gymnasium/humanoid.xml") else { return };
    let mut model = Model::from_mjcf_file_as(&path, Semantics::Physical).unwrap();
    model.options.gravity = [0.0; 3];
    for g in model.geoms.iter_mut() {
        g.contype = 0;
        g.conaffinity = 0;
    }
    let model = Arc::new(model);
    let q0 = model.qpos0.clone();
    let knees = model.joints.iter().filter(|j| j.kind == JointKind::Hinge && j.name.contains("knee")).count();
    assert_eq!(knees, 2);
    let u0 = limit_potential(&model, &q0);
    assert!(u0 > 0.0, "the knees start violated");
    for (name, mode) in modes() {
        let peak = peak_kinetic_energy(&model, mode, &q0, 1.0);
        eprintln!("humanoid, {name}: peak kinetic energy {peak:.5} J, initial limit potential {u0:.5} J");
        assert!(peak <= u0 * (1.0 + 1e-3), "{name}: gained energy: {peak} J > {u0} J");
    }
}
