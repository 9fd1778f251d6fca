//! A model written for MuJoCo behaves as in MuJoCo: its soft constraints'
//! transients (impacts, joint limits, friction), compared with MuJoCo 4.0
//! from the same states (fixtures: `scripts/mujoco_soft_fixtures.py`,
//! `tests/fixtures/mujoco/soft_constraints.json`).
//!
//! cenic is run at MuJoCo's own time step with fixed steps (the convex
//! step then solves MuJoCo's own problem, so the trajectories agree to the
//! solvers' tolerances) and under error control at a tight accuracy (the
//! continuous-time limit of MuJoCo's model, which MuJoCo's step
//! approximates to its own discretisation error).

use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::{Model, Semantics};
use serde_json::Value;
use std::sync::Arc;

fn fixtures() -> Value {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mujoco/soft_constraints.json"))
            .expect("tests/fixtures/mujoco/soft_constraints.json (scripts/mujoco_soft_fixtures.py writes it)");
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn model(case: &Value) -> Arc<Model> {
    let m = Model::from_mjcf_str(case["xml"].as_str().unwrap()).unwrap();
    assert_eq!(
        m.options.semantics,
        Semantics::MuJoCo,
        "an MJCF model without cenic's attributes gets MuJoCo's semantics"
    );
    Arc::new(m)
}

/// Runs `case` in cenic under `mode` for `t_end` s, sampling every `every` s; returns (t, q, v) samples.
fn simulate(case: &Value, mode: Mode, t_end: f64, every: f64) -> Vec<(f64, Vec<f64>, Vec<f64>)> {
    let m = model(case);
    let mut w = World::<f64>::new(m, mode);
    w.sim.set_state(&floats(&case["qpos0"]), &floats(&case["qvel0"]));
    let mut out = vec![(0.0, w.sim.data.q.clone(), w.sim.data.v.clone())];
    let n = (t_end / every).round() as usize;
    for k in 1..=n {
        let target = k as f64 * every;
        w.advance(target - w.time()).unwrap();
        out.push((w.time(), w.sim.data.q.clone(), w.sim.data.v.clone()));
    }
    out
}

fn modes(case: &Value) -> Vec<(&'static str, Mode)> {
    let dt = case["timestep"].as_f64().unwrap();
    vec![
        ("fixed (MuJoCo's step)", Mode::Fixed { dt }),
        ("CENIC 1e-5", Mode::ErrorControlled(CenicParams { accuracy: 1e-5, ..Default::default() })),
    ]
}

/// A 1 kg ball dropped from 0.6 m onto a plane with MuJoCo's default
/// solref/solimp sinks 22.9 mm at impact in MuJoCo (its inertia, inflated
/// by the regulariser, is what the constraint stops) and rests at 0.37 mm.
#[test]
fn ball_drop_penetrates_and_rests_as_in_mujoco() {
    let f = fixtures();
    for case in f["ball_drop"].as_array().unwrap() {
        let dt = case["timestep"].as_f64().unwrap();
        let largest = case["largest_penetration"].as_f64().unwrap();
        let resting = case["resting_penetration"].as_f64().unwrap();
        for (name, mode) in modes(case) {
            let every = dt.max(2e-4);
            let traj = simulate(case, mode, 1.5, every);
            let pen: Vec<f64> = traj.iter().map(|(_, q, _)| 0.1 - q[2]).collect();
            let peak = pen.iter().cloned().fold(f64::MIN, f64::max);
            let rest = *pen.last().unwrap();
            println!(
                "ball drop dt {dt} condim {} {name}: largest {:.2} mm (MuJoCo {:.2}), resting {:.4} mm (MuJoCo {:.4})",
                case["condim"],
                peak * 1e3,
                largest * 1e3,
                rest * 1e3,
                resting * 1e3
            );
            assert!((peak - largest).abs() < 0.1 * largest, "{name}: largest penetration {peak} vs MuJoCo's {largest}");
            assert!(
                (rest - resting).abs() < 0.05 * resting,
                "{name}: resting penetration {rest} vs MuJoCo's {resting}"
            );
        }
    }
}

/// A hinge swung at 14 rad/s into its +0.5 rad limit moves freely up to the
/// limit, overshoots it by 97 mrad and rebounds at −1.8 rad/s in MuJoCo.
#[test]
fn joint_limit_overshoots_and_rebounds_as_in_mujoco() {
    let f = fixtures();
    let case = &f["hinge_limit"][0];
    let overshoot = case["overshoot"].as_f64().unwrap();
    let rebound = case["rebound_speed"].as_f64().unwrap();
    let dt = case["timestep"].as_f64().unwrap();
    for (name, mode) in modes(case) {
        let traj = simulate(case, mode, 0.4, dt);
        let (imax, qmax) = traj
            .iter()
            .enumerate()
            .map(|(i, (_, q, _))| (i, q[0]))
            .fold((0, f64::MIN), |a, b| if b.1 > a.1 { b } else { a });
        let vmin = traj[imax..].iter().map(|(_, _, v)| v[0]).fold(f64::MAX, f64::min);
        // Free motion until the limit: only the damping (1 N·m·s) decelerates it.
        let before = traj.iter().take_while(|(_, q, _)| q[0] < 0.5).last().unwrap();
        println!(
            "hinge {name}: overshoot {:.1} mrad (MuJoCo {:.1}), rebound {:.3} rad/s (MuJoCo {:.3}), speed at the limit {:.3}",
            (qmax - 0.5) * 1e3,
            overshoot * 1e3,
            vmin,
            rebound,
            before.2[0]
        );
        assert!(((qmax - 0.5) - overshoot).abs() < 0.1 * overshoot, "{name}: overshoot {} vs {overshoot}", qmax - 0.5);
        assert!((vmin - rebound).abs() < 0.1 * rebound.abs(), "{name}: rebound {vmin} vs {rebound}");
    }
}

/// A box launched at 2 m/s on a plane (μ = 0.5) slides 0.406 m in MuJoCo.
#[test]
fn box_slides_as_far_as_in_mujoco() {
    let f = fixtures();
    let case = &f["box_slide"][0];
    let dist = case["slide_distance"].as_f64().unwrap();
    for (name, mode) in modes(case) {
        let traj = simulate(case, mode, 1.0, 0.01);
        let x0 = traj[0].1[0];
        let stop = traj.iter().find(|(_, _, v)| v[0].abs() < 1e-3).unwrap();
        println!("slide {name}: {:.4} m (MuJoCo {:.4})", stop.1[0] - x0, dist);
        assert!(((stop.1[0] - x0) - dist).abs() < 0.02 * dist, "{name}: {} vs {dist}", stop.1[0] - x0);
    }
}

/// A tall box tipped over its edge follows MuJoCo's trajectory while it
/// pivots and lands on its side: with fixed steps MuJoCo's own at its step,
/// under error control MuJoCo's at 1/8 of it (nearer the continuous model).
#[test]
fn box_tips_over_as_in_mujoco() {
    let f = fixtures();
    let cases = f["box_tip"].as_array().unwrap();
    let (coarse, fine) = (&cases[0], &cases[1]);
    for ((name, mode), reference, tol) in
        modes(coarse).into_iter().zip([(coarse, 1e-6), (fine, 5e-3)]).map(|((n, m), (r, t))| ((n, m), r, t))
    {
        let t = floats(&reference["trajectory"]["t"]);
        let q: Vec<Vec<f64>> = reference["trajectory"]["qpos"].as_array().unwrap().iter().map(floats).collect();
        let traj = simulate(coarse, mode, 1.5, 0.01);
        let mut worst: f64 = 0.0;
        for (k, (tk, qk, _)) in traj.iter().enumerate() {
            assert!((tk - t[k]).abs() < 1e-9);
            let d = ((qk[0] - q[k][0]).powi(2) + (qk[1] - q[k][1]).powi(2) + (qk[2] - q[k][2]).powi(2)).sqrt();
            worst = worst.max(d);
        }
        println!(
            "tip {name}: largest position difference {:.3} mm from MuJoCo at {} s steps",
            worst * 1e3,
            reference["timestep"]
        );
        assert!(worst < tol, "{name}: {worst} m");
    }
}

/// MuJoCo corrects the reference of connect and weld rows by J̇·v, the
/// velocity-product part of the violation's acceleration (its Jdot
/// correction); cenic's rows carry it in `SoftRow::kpos`. Checked against
/// central differences of the rows' rates J(q)·v along q̇ = v, on a
/// four-bar loop (connect) and a box welded to an arm (weld).
#[test]
fn connect_and_weld_rows_carry_jdot_v() {
    use cenic::dynamics::{self, Data};
    use cenic::icf::{Actuation, IcfBuilder, IcfProblem, MaterialScale};
    let xml = r#"<mujoco><compiler angle="radian"/><option><flag contact="disable"/></option>
      <worldbody>
        <body name="crank" pos="0 0 1"><joint axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.02"/>
          <body name="coupler" pos="0.1 0 0"><joint axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 0.4" size="0.02"/>
            <body name="rocker" pos="0 0 0.4"><joint axis="0 1 0"/><geom type="capsule" fromto="0 0 0 -0.3 0 0" size="0.02"/></body>
          </body></body>
        <body name="arm" pos="1 0 1"><joint axis="1 0 0"/><joint axis="0 0 1"/><geom type="capsule" fromto="0 0 0 0 0.3 0" size="0.02"/></body>
        <body name="box" pos="1 0.35 1" euler="0.1 0 0.2"><freejoint/><geom type="box" size="0.05 0.05 0.05"/></body>
      </worldbody>
      <equality><connect body1="rocker" anchor="-0.3 0 0"/><weld body1="box" body2="arm" torquescale="2"/></equality>
    </mujoco>"#;
    let model = Model::from_mjcf_str(xml).unwrap();
    let rows = |q: &[f64], v: &[f64]| {
        let mut data = Data::<f64>::new(&model);
        data.q.copy_from_slice(q);
        data.v.copy_from_slice(v);
        dynamics::kinematics(&model, &mut data);
        dynamics::velocities(&model, &mut data);
        dynamics::transmissions(&model, &mut data);
        dynamics::mass_matrix(&model, &mut data);
        dynamics::bias_forces(&model, &mut data);
        dynamics::passive_forces(&model, &mut data);
        let mut p = IcfProblem::new(model.nv);
        let act = Actuation { ctrl: &[], target_velocity: &[], applied: &[] };
        IcfBuilder::new(&model).build(&model, &data, &[], act, &MaterialScale::default(), &mut p);
        p
    };
    let mut q = model.qpos0.clone();
    let v: Vec<f64> = (0..model.nv).map(|k| [0.8, -1.3, 2.1, 0.7, -1.1, 0.4, 0.3, -0.2, 1.5, -0.9, 0.6][k]).collect();
    q[0] += 0.3;
    q[3] -= 0.2;
    let p = rows(&q, &v);
    assert_eq!(p.rows.len(), 9);
    let eq = &model.equalities;
    let timestep = model.options.timestep;
    let eps = 1e-6;
    let advance = |s: f64| {
        let mut qs = q.clone();
        dynamics::integrate_q(&model, &mut qs, &v, s);
        rows(&qs, &v)
    };
    let (pp, pm) = (advance(eps), advance(-eps));
    let mut largest: f64 = 0.0;
    for (i, r) in p.rows.iter().enumerate() {
        let (e, k) = if i < 3 {
            (0, 0)
        } else if i < 6 {
            (1, 0)
        } else {
            (1, 1)
        };
        let norm: f64 = if i < 3 {
            p.rows[..3].iter().map(|r| r.pos * r.pos).sum::<f64>().sqrt()
        } else {
            p.rows[3..].iter().map(|r| r.pos * r.pos).sum::<f64>().sqrt()
        };
        let law = eq[e].softness.soft_law(timestep, false);
        let (imp, _) = law.at(norm);
        let soft = r.soft.unwrap();
        let jdot_v = soft.kpos - law.k * imp * r.pos;
        let fd = (pp.row_velocity(&pp.rows[i], &v) - pm.row_velocity(&pm.rows[i], &v)) / (2.0 * eps);
        assert!((jdot_v - fd).abs() < 1e-5 * (1.0 + fd.abs()), "row {i} (kind {k}): J̇v {jdot_v} vs fd {fd}");
        largest = largest.max(fd.abs());
    }
    assert!(largest > 0.1, "the state should have sizeable J̇v terms, largest {largest}");
}

#[path = "../examples/common/sim2sim.rs"]
mod sim2sim;

/// Gymnasium's tasks under the same random actions from MuJoCo's reset
/// states (`scripts/gym_sim2sim.py`): with MuJoCo's own integrator and step
/// (`Physics::MuJoCo`: RK4 for Reacher-v5, Euler with implicit damping for
/// HalfCheetah-v5) the observations stay within 1e-2 of gymnasium + MuJoCo
/// for every one of Reacher's 300 steps and for 50 steps or more on average
/// in the half cheetah's contacts (cenic's other physics, and every physics
/// before MuJoCo's semantics, part within 1–45 steps: BENCHMARKS.md).
#[test]
fn gymnasium_tasks_step_as_in_mujoco_with_its_integrator() {
    let Some(dir) = cenic::zoo::shared_dir() else {
        assert!(
            std::env::var("CENIC_REQUIRE_SHARED").as_deref() != Ok("1"),
            "CENIC_REQUIRE_SHARED=1 but the shared folder is missing (set CENIC_SHARED)"
        );
        eprintln!("SKIPPED: the shared folder is missing (set CENIC_SHARED)");
        return;
    };
    let fixture = sim2sim::load();
    for task in fixture["tasks"].as_array().unwrap() {
        let id = task["id"].as_str().unwrap();
        let (min_each, min_mean) = match id {
            "Reacher-v5" => (300, 300.0),
            "HalfCheetah-v5" => (40, 50.0),
            _ => continue,
        };
        let p = sim2sim::compare(task, &cenic::rl::Physics::MuJoCo, &dir.join("models/gymnasium")).unwrap();
        let mean = sim2sim::mean_steps(&p);
        eprintln!("{id}: {:?}, mean {mean}", p.iter().map(|x| x.steps).collect::<Vec<_>>());
        assert!(p.iter().all(|x| x.steps >= min_each) && mean >= min_mean, "{id}: steps until parting {p:?}");
    }
}
