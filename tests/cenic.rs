//! CENIC error-controlled integration.

mod common;

use cenic::batch::{Batch, CpuBatch, WorldStatus};
use cenic::integrator::{CenicParams, Mode, World};
use cenic::math::{Quat, Vec3};
use cenic::model::{
    Actuator, ActuatorKind, BodySpec, GeomKind, GeomSpec, Inertial, JointKind, JointSpec, Material, Model,
    ModelBuilder, WORLD,
};
use cenic::scenes;
use std::sync::Arc;

fn cenic(accuracy: f64) -> Mode {
    Mode::ErrorControlled(CenicParams { accuracy, ..CenicParams::default() })
}

fn mat(k: f64, d: f64, mus: f64, mud: f64) -> Material {
    Material { stiffness: k, dissipation: d, mu_static: mus, mu_dynamic: mud, soft: None }
}

/// Position (m) and orientation (rad) distance between two free-body states.
fn free_body_distance(a: &[f64], b: &[f64]) -> f64 {
    let dp = (Vec3::from_slice(&a[0..3]) - Vec3::from_slice(&b[0..3])).norm();
    let da = Quat::from_slice(&a[3..7]).angle_to(Quat::from_slice(&b[3..7]));
    dp.max(da)
}

fn cube_toss_run(accuracy: f64, t_end: f64, v0: &[f64]) -> World<f64> {
    let mut w = World::<f64>::new(Arc::new(scenes::cube_toss()), cenic(accuracy));
    w.sim.set_state(&[0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0], v0);
    w.record_steps = true;
    w.advance(t_end).unwrap();
    w
}

/// The keyframe toss and eight perturbed ones (initial linear and angular velocity).
fn tosses() -> Vec<Vec<f64>> {
    let mut v = vec![vec![1.0, 0.0, 0.0, 0.0, 5.0, 3.0]];
    for k in 1..9 {
        let k = k as f64;
        v.push(vec![1.0 + 0.1 * k, 0.05 * k, 0.0, 0.3 * k, 5.0 - 0.4 * k, 3.0]);
    }
    v
}

/// Acceptance 1: on cube toss the error against a tight (1e-7) run falls
/// steadily as the accuracy tightens from 1e-1 to 1e-5, and accepted steps
/// shrink at impacts and grow in flight.
///
/// A tumbling cube's landing is sensitive: at loose accuracies a single toss
/// can land luckily close to the reference. So the error is the median, over
/// the keyframe toss and eight perturbed tosses, of the final-state distance
/// (max of position error in m and orientation error in rad) after 1 s.
#[test]
fn cube_toss_error_falls_with_accuracy_and_steps_adapt() {
    let t_end = 1.0;
    let accuracies = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5];
    let mut per_acc: Vec<Vec<f64>> = vec![vec![]; accuracies.len()];
    for v0 in tosses() {
        let reference = cube_toss_run(1e-7, t_end, &v0);
        for (i, &acc) in accuracies.iter().enumerate() {
            let w = cube_toss_run(acc, t_end, &v0);
            per_acc[i].push(free_body_distance(&w.sim.data.q, &reference.sim.data.q));
        }
    }
    let medians: Vec<f64> = per_acc
        .iter_mut()
        .map(|e| {
            e.sort_by(|a, b| a.partial_cmp(b).unwrap());
            e[e.len() / 2]
        })
        .collect();
    for (acc, (m, all)) in accuracies.iter().zip(medians.iter().zip(&per_acc)) {
        eprintln!("accuracy {acc:e}: median final-state error {m:.3e} (all {all:?})");
    }
    for k in 1..medians.len() {
        assert!(medians[k] < medians[k - 1], "error did not fall from accuracy index {} to {}: {medians:?}", k - 1, k);
    }
    // First order: local error ∝ h², so h ∝ √accuracy and the global error
    // falls ≈ √10 per decade asymptotically; require 30× over four decades.
    assert!(medians[4] < medians[0] / 30.0, "overall improvement too small: {medians:?}");

    // Step sizes at accuracy 1e-3 on the keyframe toss: the largest step of
    // the first flight (before any contact) against the smallest step around
    // the first impact.
    let w = cube_toss_run(1e-3, t_end, &tosses()[0]);
    let first_contact = w.steps.iter().position(|s| s.contacts > 0).expect("the cube never touched the ground");
    let flight_max = w.steps[..first_contact].iter().map(|s| s.h).fold(0.0, f64::max);
    let impact_min = w.steps[first_contact..(first_contact + 20).min(w.steps.len())]
        .iter()
        .map(|s| s.h)
        .fold(f64::INFINITY, f64::min);
    let first_h = w.steps[0].h;
    eprintln!(
        "first step {first_h:.3e} s, largest in flight {flight_max:.3e} s, smallest at impact {impact_min:.3e} s"
    );
    assert!(flight_max > 2.0 * first_h, "steps did not grow in flight");
    assert!(impact_min < 0.2 * flight_max, "steps did not shrink at the impact");
}

/// Acceptance 2: 20 spheres and cubes dropped into a bin with hard contact
/// (1e6 N/m per pair, stiction tolerance 1e-4 m/s), 3 s at accuracies
/// 1e-1 … 1e-3: no NaN and every object stays inside the bin, above the floor.
#[test]
fn clutter_in_a_bin_stays_finite_and_contained() {
    // 2e6 N/m per geom: 1e6 N/m per pair in series.
    let model = Arc::new(scenes::clutter(20, mat(2e6, 10.0, 0.5, 0.5)));
    for acc in [1e-1, 1e-2, 1e-3] {
        let mut w = World::<f64>::new(model.clone(), cenic(acc));
        w.advance(3.0).unwrap_or_else(|e| panic!("accuracy {acc}: {e}"));
        let q = &w.sim.data.q;
        assert!(q.iter().all(|x| x.is_finite()));
        for i in 0..20 {
            let p = Vec3::from_slice(&q[7 * i..7 * i + 3]);
            // Inside the walls (inner faces at ±0.2 m) and above the floor.
            assert!(p.x.abs() < 0.2 && p.y.abs() < 0.2, "accuracy {acc}: object {i} left the bin at {p:?}");
            assert!(p.z > 0.0 && p.z < 0.4, "accuracy {acc}: object {i} at height {}", p.z);
        }
        eprintln!(
            "clutter at accuracy {acc}: {} steps, {} rejected, {} Newton iterations, h in [{:.2e}, {:.2e}]",
            w.stats.accepted, w.stats.rejected, w.stats.newton_iterations, w.stats.min_h, w.stats.max_h
        );
    }
}

/// The fixed step's Newton tolerance (1e-6, `SolverParams::for_fixed_step`)
/// must keep the solve's effect on a trajectory far below the step's own:
/// 20 bodies dropped into a bin, 0.25 s of 1-ms steps (the first landings;
/// by 0.5 s the pile is chaotic and every perturbation grows alike) at the
/// default tolerance and at converged solves (1e-10) end within 1 % of how
/// far halving the step moves the pile (measured: 2.9e-5 against 5.9e-2;
/// on the shared clutter20 1 µm against 26 mm). Below 1 ms the tolerance
/// shrinks with the step.
#[test]
fn fixed_step_tolerance_error_is_far_below_the_step_error() {
    let model = Arc::new(scenes::clutter(20, mat(2e6, 10.0, 0.5, 0.5)));
    let run = |dt: f64, tolerance: Option<f64>| {
        let mut w = World::<f64>::new(model.clone(), Mode::Fixed { dt });
        if let Some(t) = tolerance {
            w.sim.solver_params.tolerance = t;
        }
        w.advance(0.25).unwrap();
        (w.sim.data.q.clone(), w.stats.newton_iterations)
    };
    let (default, n_default) = run(1e-3, None);
    let (converged, n_converged) = run(1e-3, Some(1e-10));
    let (half, _) = run(5e-4, Some(1e-10));
    let pile = |a: &[f64], b: &[f64]| (0..20).map(|i| free_body_distance(&a[7 * i..], &b[7 * i..])).fold(0.0, f64::max);
    let (solve, step) = (pile(&default, &converged), pile(&half, &converged));
    eprintln!(
        "0.25 s: default tolerance {solve:.2e} m from converged solves, half step {step:.2e} m; Newton {n_default} vs {n_converged}"
    );
    assert!(step > 1e-4, "the step error is too small to compare with: {step:e} m");
    assert!(solve < 1e-2 * step, "tolerance error {solve:e} m not far below the step error {step:e} m");
    assert!(n_default < n_converged, "no Newton iteration saved: {n_default} vs {n_converged}");
    let p = cenic::icf::SolverParams::default();
    assert_eq!(p.for_fixed_step(2e-3).tolerance, p.tolerance);
    assert!((p.for_fixed_step(1e-4).tolerance - 0.1 * p.tolerance).abs() < 1e-20);
}

/// A palm on a vertical slide (lifted by a servo) with two fingers on
/// horizontal slides squeezing a 0.2 kg box by position servos
/// (kp = 1e4, kd = 1e2 per joint).
fn gripper() -> Model {
    let mut b = ModelBuilder::new("gripper");
    let servo = |name: &str, joint, limit: f64| Actuator {
        name: name.into(),
        joint,
        kind: ActuatorKind::Position { kp: 1e4, kd: 1e2, effort_limit: limit },
        ctrl_range: None,
    };
    let grip = mat(1e5, 10.0, 1.0, 0.8);
    b.add_geom(GeomSpec { material: grip, ..GeomSpec::new("floor", GeomKind::Plane, [1.0; 3], WORLD) });
    let inertial = |m: f64| Some(Inertial { mass: m, pos: [0.0; 3], quat: [1.0, 0.0, 0.0, 0.0], diag: [1e-3; 3] });
    let palm = b.add_body(BodySpec { inertial: inertial(1.0), ..BodySpec::new("palm", WORLD, [0.0, 0.0, 0.3]) });
    let lift = b.add_joint(JointSpec { axis: [0.0, 0.0, 1.0], ..JointSpec::new("lift", JointKind::Slide, palm) });
    let mut fingers = vec![];
    for (name, y, axis) in [("left", 0.06, -1.0), ("right", -0.06, 1.0)] {
        let f = b.add_body(BodySpec { inertial: inertial(0.1), ..BodySpec::new(name, palm, [0.0, y, 0.0]) });
        fingers.push(b.add_joint(JointSpec { axis: [0.0, axis, 0.0], ..JointSpec::new(name, JointKind::Slide, f) }));
        b.add_geom(GeomSpec { material: grip, ..GeomSpec::new(name, GeomKind::Box, [0.03, 0.01, 0.05], f) });
    }
    let obj = b.add_body(BodySpec::new("box", WORLD, [0.0, 0.0, 0.3]));
    b.add_joint(JointSpec::new("box_free", JointKind::Free, obj));
    b.add_geom(GeomSpec { mass: Some(0.2), material: grip, ..GeomSpec::new("box", GeomKind::Box, [0.04; 3], obj) });
    b.add_actuator(servo("lift", lift, 200.0));
    b.add_actuator(servo("left", fingers[0], 60.0));
    b.add_actuator(servo("right", fingers[1], 60.0));
    b.build().unwrap()
}

/// Acceptance 3: the gripper holds the box while lifting it; the box slips
/// less than 1 mm relative to the fingers over 2 s at accuracy 1e-3.
#[test]
fn servo_gripper_holds_a_box() {
    let model = Arc::new(gripper());
    let mut w = World::<f64>::new(model.clone(), cenic(1e-3));
    // Fingers close 2.5 cm each: 1 cm past the box faces (squeeze ≈ kp·1 cm = 100 N, limited to 60 N).
    w.sim.ctrl.copy_from_slice(&[0.0, 0.025, 0.025]);
    w.advance(0.5).unwrap();
    let rel = |w: &World<f64>| w.sim.data.q[3 + 2] - w.sim.data.q[0];
    let start = rel(&w);
    // Lift 10 cm over the next second, then hold.
    let mut max_slip: f64 = 0.0;
    for i in 0..200 {
        let t = i as f64 * 0.01;
        w.sim.ctrl[0] = 0.1 * (t / 1.0).min(1.0);
        w.advance(0.01).unwrap();
        max_slip = max_slip.max((rel(&w) - start).abs());
    }
    eprintln!("box slip relative to the palm over 2 s: {max_slip:.3e} m; box height {:.4} m", w.sim.data.q[3 + 2]);
    assert!(w.sim.data.q[3 + 2] > 0.35, "the box was not lifted");
    assert!(max_slip < 1e-3, "slip {max_slip} m");
}

/// Acceptance 4: a 1 kg block on a heavy belt oscillating underneath it
/// (amplitude 0.1 m at 1.25 Hz, ramped in over 2 s: peak acceleration
/// 6.2 m/s², above μs g = 5.9 m/s² only near the turning points) sticks and
/// slides in turn — a rigid-Coulomb simulation of the same motion sticks
/// 24% of the time with ~29 transitions in 6 s; the friction force
/// (m × block acceleration) peaks at about μs·N at break-away and sits at
/// about μd·N while sliding.
#[test]
fn block_on_oscillating_belt_sticks_and_slips_at_the_friction_levels() {
    let (mus, mud) = (0.6, 0.3);
    let mut b = ModelBuilder::new("belt");
    let belt = b.add_body(BodySpec {
        inertial: Some(Inertial { mass: 100.0, pos: [0.0; 3], quat: [1.0, 0.0, 0.0, 0.0], diag: [1.0; 3] }),
        ..BodySpec::new("belt", WORLD, [0.0, 0.0, 0.0])
    });
    b.add_joint(JointSpec { axis: [1.0, 0.0, 0.0], ..JointSpec::new("belt_x", JointKind::Slide, belt) });
    // Stiff belt surface (1e7 N/m; a moving geom cannot be rigid): ~9e5 N/m per pair.
    b.add_geom(GeomSpec {
        material: mat(1e7, 0.0, mus, mud),
        ..GeomSpec::new("belt", GeomKind::Box, [1.0, 0.2, 0.05], belt)
    });
    let block = b.add_body(BodySpec::new("block", WORLD, [0.0, 0.0, 0.1]));
    b.add_joint(JointSpec::new("block_free", JointKind::Free, block));
    b.add_geom(GeomSpec {
        mass: Some(1.0),
        material: mat(1e6, 10.0, mus, mud),
        ..GeomSpec::new("block", GeomKind::Box, [0.05; 3], block)
    });
    b.add_actuator(Actuator {
        name: "drive".into(),
        joint: 0,
        kind: ActuatorKind::Position { kp: 1e6, kd: 2e4, effort_limit: f64::INFINITY },
        ctrl_range: None,
    });
    let model = Arc::new(b.build().unwrap());
    let mut w = World::<f64>::new(model, cenic(1e-4));
    w.advance(0.2).unwrap();
    let (amp, omega, ramp) = (0.1, 2.0 * std::f64::consts::PI * 1.25, 2.0);
    let dt = 1e-3;
    let n_normal = 9.81;
    let (mut stick, mut slide) = (0usize, 0usize);
    let mut switches = 0;
    let mut last_sliding = false;
    let mut slide_forces = vec![];
    let mut peak: f64 = 0.0;
    for i in 0..8000 {
        let t = i as f64 * dt;
        // Amplitude ramp r(t) so the block starts in stick: target r A sin ωt.
        let (r, dr) = if t < ramp { (t / ramp, 1.0 / ramp) } else { (1.0, 0.0) };
        w.sim.ctrl[0] = r * amp * (omega * t).sin();
        w.sim.target_velocity[0] = amp * (r * omega * (omega * t).cos() + dr * (omega * t).sin());
        let vx0 = w.sim.data.v[1];
        w.advance(dt).unwrap();
        let (vb, vx) = (w.sim.data.v[0], w.sim.data.v[1]);
        let force = (vx - vx0) / dt; // m = 1 kg
        let slip = (vx - vb).abs();
        if t < ramp {
            continue; // let the motion develop
        }
        peak = peak.max(force.abs());
        let sliding = slip > 1e-2;
        if sliding {
            slide += 1;
            if slip > 5e-2 {
                slide_forces.push(force.abs());
            }
        } else if slip < 1e-3 {
            stick += 1;
        }
        if sliding != last_sliding {
            switches += 1;
        }
        last_sliding = sliding;
    }
    let (ref_stick, ref_switches) = rigid_coulomb_belt(amp, omega, ramp, 8.0, mus, mud);
    eprintln!("rigid Coulomb reference: stick {ref_stick:.3} s, {ref_switches} switches");
    let stick_time = stick as f64 * dt;
    assert!((stick_time - ref_stick).abs() < 0.15 * ref_stick, "stick time {stick_time} vs {ref_stick}");
    assert!((switches as f64 - ref_switches as f64).abs() <= 0.15 * ref_switches as f64, "switches {switches}");
    slide_forces.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = slide_forces[slide_forces.len() / 2];
    eprintln!(
        "stick samples {stick}, slide samples {slide}, switches {switches}; peak friction {peak:.3} N (μs N = {:.3}), median sliding friction {median:.3} N (μd N = {:.3})",
        mus * n_normal,
        mud * n_normal
    );
    assert!(stick > 100 && slide > 100 && switches >= 4, "no stick–slip alternation");
    assert!((peak - mus * n_normal).abs() < 0.1 * mus * n_normal, "peak {peak}");
    assert!((median - mud * n_normal).abs() < 0.05 * mud * n_normal, "sliding {median}");
}

/// Acceptance 5: a 5 cm cube thrown at 20 m/s at a 5 mm thick fixed plate,
/// at accuracy 1e-1 with a 0.1 s maximum step, ends on the near side.
#[test]
fn fast_cube_never_tunnels_through_a_thin_plate() {
    let mut b = ModelBuilder::new("plate");
    b.add_geom(GeomSpec {
        pos: [0.0025, 0.0, 0.0],
        material: mat(f64::INFINITY, 0.0, 0.3, 0.3),
        ..GeomSpec::new("plate", GeomKind::Box, [0.0025, 1.0, 1.0], WORLD)
    });
    let cube = b.add_body(BodySpec::new("cube", WORLD, [-1.0, 0.0, 0.0]));
    b.add_joint(JointSpec::new("free", JointKind::Free, cube));
    b.add_geom(GeomSpec {
        mass: Some(0.1),
        material: mat(1e5, 1.0, 0.3, 0.3),
        ..GeomSpec::new("cube", GeomKind::Box, [0.025; 3], cube)
    });
    b.options.gravity = [0.0, 0.0, -9.81];
    let model = Arc::new(b.build().unwrap());
    let mode = Mode::ErrorControlled(CenicParams { accuracy: 1e-1, max_step: 0.1, ..CenicParams::default() });
    let mut w = World::<f64>::new(model, mode);
    w.sim.set_state(&[-1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], &[20.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    let mut max_x = f64::NEG_INFINITY;
    for _ in 0..20 {
        w.advance(0.025).unwrap();
        max_x = max_x.max(w.sim.data.q[0]);
    }
    eprintln!("cube final x {:.4} m, furthest {:.4} m, {} steps", w.sim.data.q[0], max_x, w.stats.accepted);
    // The cube's far face must never reach the plate's far face (x = 5 mm).
    assert!(max_x + 0.025 < 0.005, "the cube went through the plate (max x {max_x})");
    assert!(w.sim.data.q[0] < 0.0);
}

/// Acceptance 6: the batch gives the same per-world results as single-world
/// runs (with the same advance schedule: adaptive steps are truncated at
/// interval ends, so the schedule is part of the computation), for 1 and 2
/// threads; a world fed a NaN state is flagged and the others finish.
#[test]
fn batch_matches_single_worlds_for_any_thread_count_and_isolates_nan() {
    let model = Arc::new(scenes::cube_toss());
    let n = 6;
    let init = |w: usize| -> (Vec<f64>, Vec<f64>) {
        let q = vec![0.1 * w as f64, 0.0, 0.2 + 0.02 * w as f64, 1.0, 0.0, 0.0, 0.0];
        let v = vec![1.0, 0.2 * w as f64, 0.0, 0.5, 3.0 - w as f64, 1.0];
        (q, v)
    };
    let singles: Vec<Vec<f64>> = (0..n)
        .map(|w| {
            let mut world = World::<f64>::new(model.clone(), cenic(1e-3));
            let (q, v) = init(w);
            world.sim.set_state(&q, &v);
            for _ in 0..6 {
                world.advance(0.1).unwrap();
            }
            world.sim.data.q.clone()
        })
        .collect();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut batch = CpuBatch::<f64>::new(model.clone(), n + 1, cenic(1e-3));
        for w in 0..n {
            let (q, v) = init(w);
            batch.set_state(w, &q, &v).unwrap();
        }
        let mut bad = init(0);
        bad.1[2] = f64::NAN;
        batch.set_state(n, &bad.0, &bad.1).unwrap();
        pool.install(|| {
            for _ in 0..6 {
                batch.advance(0.1).unwrap();
            }
        });
        let mut q = vec![0.0; (n + 1) * model.nq];
        batch.qpos(&mut q);
        for w in 0..n {
            assert_eq!(&q[w * 7..w * 7 + 7], singles[w].as_slice(), "world {w} differs with {threads} threads");
            assert_eq!(batch.status(w), WorldStatus::Ok);
            assert!((batch.times()[w] - 0.6).abs() < 1e-12);
        }
        match batch.status(n) {
            WorldStatus::Failed { reason, .. } => assert!(reason.contains("non-finite"), "{reason}"),
            s => panic!("NaN world not flagged: {s:?}"),
        }
    }
}

/// Independent reference for the belt test: a rigid block with exact
/// Coulomb friction (sticks while the belt's acceleration is below μs g,
/// slides at ±μd g otherwise, re-sticks when velocities meet), integrated
/// with a 10 µs explicit step. Returns (time stuck after the ramp (s),
/// stick/slide switches after the ramp).
fn rigid_coulomb_belt(amp: f64, omega: f64, ramp: f64, t_end: f64, mus: f64, mud: f64) -> (f64, usize) {
    let g = 9.81;
    let dt = 1e-5;
    let (mut vx, mut stick, mut last) = (0.0f64, true, true);
    let (mut stuck, mut switches) = (0.0, 0);
    for i in 0..(t_end / dt) as usize {
        let t = i as f64 * dt;
        let (r, dr) = if t < ramp { (t / ramp, 1.0 / ramp) } else { (1.0, 0.0) };
        let (s, c) = (omega * t).sin_cos();
        let vb = amp * (r * omega * c + dr * s);
        let ab = amp * (2.0 * dr * omega * c - r * omega * omega * s);
        if stick && ab.abs() > mus * g {
            stick = false;
        }
        if stick {
            vx = vb;
        } else {
            let rel = vx - vb;
            let dir = if rel != 0.0 { rel.signum() } else { -ab.signum() };
            let vn = vx - dir * mud * g * dt;
            if (vn - vb) * rel <= 0.0 && ab.abs() < mus * g {
                stick = true;
                vx = vb;
            } else {
                vx = vn;
            }
        }
        if t >= ramp {
            if stick {
                stuck += dt;
            }
            if stick != last {
                switches += 1;
            }
        }
        last = stick;
    }
    (stuck, switches)
}

/// `World::record_trials` records every trial of the step-size controller
/// once: the accepted ones as the statistics count them, the rejected ones
/// with their error ratio above 1 and a shrinking retry, in time order.
#[test]
fn trial_records_match_the_step_statistics() {
    let model = Arc::new(cenic::scenes::cube_toss());
    let mode = Mode::ErrorControlled(CenicParams { accuracy: 1e-4, ..Default::default() });
    let mut world = World::<f64>::new(model.clone(), mode.clone());
    world.sim.reset_to_keyframe("toss").unwrap();
    world.record_trials = true;
    world.advance(0.5).unwrap();
    let (s, trials) = (&world.stats, &world.trials);
    assert!(s.rejected > 0, "the toss must reject some trials to test them");
    assert_eq!(trials.len() as u64, s.accepted + s.rejected, "one record per trial");
    let accepted: Vec<_> = trials.iter().filter(|r| r.accepted).collect();
    assert_eq!(accepted.len() as u64, s.accepted);
    for r in &accepted {
        assert!(r.err <= 1.0 && r.h > 0.0 && r.h <= r.h_asked * (1.0 + 1e-12), "{r:?}");
    }
    for r in trials.iter().filter(|r| !r.accepted) {
        assert!(r.err > 1.0 && r.growth < 1.0, "a rejection retries shorter: {r:?}");
    }
    assert!(trials.windows(2).all(|w| w[1].t >= w[0].t), "records in time order");
    // Recording changes nothing, and off it records nothing.
    let mut plain = World::<f64>::new(model, mode);
    plain.sim.reset_to_keyframe("toss").unwrap();
    plain.advance(0.5).unwrap();
    assert!(plain.trials.is_empty());
    assert_eq!(plain.sim.data.q, world.sim.data.q);
    assert_eq!((plain.stats.accepted, plain.stats.rejected), (s.accepted, s.rejected));
}
