//! The MPC suite's tasks with unshaped costs: the orientation error
//! against the quaternion geodesic and its gradient against finite
//! differences, the cube turn's goals, cost and fingertip mechanics, the
//! plain pusher's cost (the object's distance and the effort, nothing
//! else), and short closed-loop episodes of both.

mod common;

use cenic::mpc::tasks::{self, Measure, Task};
use cenic::mpc::{
    Budget, Cost, CostDerivatives, Ilqr, IlqrOptions, OrientationError, Penalty, PredictiveSampling, SamplingOptions,
    Workspace, closed_loop,
};
use std::f64::consts::PI;
use std::sync::Arc;

/// Unit quaternion (w, x, y, z) of a rotation by `angle` about `axis`.
fn quat(axis: [f64; 3], angle: f64) -> [f64; 4] {
    let n = (axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]).sqrt();
    let (s, c) = (0.5 * angle).sin_cos();
    [c, s * axis[0] / n, s * axis[1] / n, s * axis[2] / n]
}

/// The geodesic angle between two unit quaternions: 2 acos |⟨a, b⟩|.
fn geodesic(a: [f64; 4], b: [f64; 4]) -> f64 {
    let d: f64 = (0..4).map(|i| a[i] * b[i]).sum();
    2.0 * d.abs().min(1.0).acos()
}

/// The cube turn's state with the cube's orientation `q` (its free joint
/// comes first: position, then the quaternion) and fingertip slides `f`.
fn cube_state(task: &Task, q: [f64; 4], f: [f64; 4]) -> Vec<f64> {
    let mut x = task.x0.clone();
    x[3..7].copy_from_slice(&q);
    x[7..11].copy_from_slice(&f);
    x
}

fn orientation(task: &Task) -> OrientationError {
    match &task.measure {
        Measure::FinalAngle(o) => o.clone(),
        _ => panic!("the cube turn measures an angle"),
    }
}

#[test]
fn orientation_error_is_the_geodesic_angle_and_its_gradient_equals_finite_differences() {
    let task = tasks::cube_turn(3).unwrap();
    let model = task.problem.model.clone();
    assert_eq!((model.nq, model.nv, model.nu()), (11, 10, 4), "cube free joint + four fingertip slides");
    let cube = model.body_id("cube").unwrap();
    let goal_yaw = 0.7;
    let goal_q = quat([0.0, 0.0, 1.0], goal_yaw);
    let mut ws = Workspace::new(model.clone());
    let (nx, nc) = (model.nq + model.nv, model.nu());
    // Turned about z, tilted, near the goal and far from it.
    let cases = [
        quat([0.0, 0.0, 1.0], goal_yaw + 0.4),
        quat([0.0, 0.0, 1.0], goal_yaw - 1e-4),
        quat([0.3, -0.2, 1.0], 1.3),
        quat([1.0, 0.5, 0.2], -2.4),
    ];
    for penalty in [Penalty::Quadratic, Penalty::SmoothAbs { epsilon: 0.05 }] {
        let cost = OrientationError {
            body: cube,
            goal: OrientationError::yaw(goal_yaw),
            running_weight: 1.3,
            terminal_weight: 0.0,
            penalty,
        };
        for q in cases {
            let x = cube_state(&task, q, [0.01, -0.02, 0.03, 0.0]);
            let angle = cost.angle(&mut ws, &x);
            assert!((angle - geodesic(q, goal_q)).abs() < 1e-9, "angle {angle} vs geodesic {}", geodesic(q, goal_q));
            let u = vec![0.0; nc];
            let mut d = CostDerivatives::new(nx, nc);
            let l = cost.running(&mut ws, &x, &u, Some(&mut d));
            let r = angle;
            let expected = match penalty {
                Penalty::Quadratic => 1.3 * 0.5 * r * r,
                Penalty::SmoothAbs { epsilon } => 1.3 * ((r * r + epsilon * epsilon).sqrt() - epsilon),
            };
            assert!((l - expected).abs() < 1e-9, "cost {l} vs {expected}");
            let h = 1e-6;
            for i in 0..nx {
                let (mut xp, mut xm) = (x.clone(), x.clone());
                xp[i] += h;
                xm[i] -= h;
                let fd = (cost.running(&mut ws, &xp, &u, None) - cost.running(&mut ws, &xm, &u, None)) / (2.0 * h);
                assert!(
                    (d.lx[i] - fd).abs() < 1e-6 * (1.0 + fd.abs()),
                    "{penalty:?}, case {q:?}: ∂l/∂x[{i}] = {} vs finite differences {fd}",
                    d.lx[i]
                );
            }
            // Gauss–Newton Hessian: symmetric, positive semidefinite on the quaternion block.
            for a in 0..nx {
                for b in 0..nx {
                    assert!((d.lxx[a * nx + b] - d.lxx[b * nx + a]).abs() < 1e-9);
                }
                assert!(d.lxx[a * nx + a] >= -1e-12);
            }
        }
    }
}

#[test]
fn cube_turn_goals_are_seeded_and_the_cost_is_zero_at_the_goal() {
    let mut signs = [0, 0];
    for seed in 0..12 {
        let task = tasks::cube_turn(seed).unwrap();
        assert_eq!(task.name, "cube_turn");
        let again = tasks::cube_turn(seed).unwrap();
        assert_eq!(task.goal, again.goal, "seed {seed}: the same goal twice");
        let o = orientation(&task);
        let g = o.goal;
        let yaw = g[1][0].atan2(g[0][0]);
        assert!((30.0..=90.0).contains(&yaw.abs().to_degrees()), "seed {seed}: goal yaw {}°", yaw.to_degrees());
        assert!(g[2][2] == 1.0 && g[0][2] == 0.0 && g[2][0] == 0.0, "a turn about z");
        signs[(yaw > 0.0) as usize] += 1;
        let mut ws = Workspace::new(task.problem.model.clone());
        // At the start the error is the goal's yaw; at the goal (fingertips
        // anywhere, controls zero) cost and error vanish.
        assert!((o.angle(&mut ws, &task.x0) - yaw.abs()).abs() < 1e-12);
        let at_goal = cube_state(&task, quat([0.0, 0.0, 1.0], yaw), [0.02, -0.03, 0.0, 0.05]);
        let cost = task.problem.cost.clone();
        let nc = task.problem.nc();
        assert!(cost.running(&mut ws, &at_goal, &vec![0.0; nc], None).abs() < 1e-12);
        assert!(cost.terminal(&mut ws, &at_goal, None).abs() < 1e-12);
        assert!(o.angle(&mut ws, &at_goal) < 1e-9);
        // The effort is the only other term: ½ 10⁻³ |u|².
        let u = [0.1, -0.05, 0.02, 0.0];
        let effort = 0.5e-3 * u.iter().map(|v| v * v).sum::<f64>();
        assert!((cost.running(&mut ws, &at_goal, &u, None) - effort).abs() < 1e-15);
    }
    assert!(signs[0] > 0 && signs[1] > 0, "goals on both sides: {signs:?}");
}

/// Fingertips dragged along opposite faces in opposite directions (a
/// couple about +z) turn the cube counter-clockwise and leave it on the
/// table; the mirrored drag turns it the other way.
#[test]
fn fingertips_sliding_along_opposite_faces_turn_the_cube() {
    let task = tasks::cube_turn(0).unwrap();
    let o = orientation(&task);
    for sign in [1.0, -1.0] {
        let mut plant = task.plant();
        // Each fingertip pressed 1.5 cm into its face and dragged 5 cm along it.
        let u = [-0.028, sign * 0.05, 0.028, -sign * 0.05];
        for _ in 0..20 {
            plant.step(&u, 0.05).unwrap();
        }
        let x = plant.state();
        let q = [x[3], x[4], x[5], x[6]];
        let yaw = 2.0 * q[3].atan2(q[0]);
        assert!(sign * yaw > 10f64.to_radians(), "sign {sign}: yaw {}°", yaw.to_degrees());
        let tilt = geodesic(q, quat([0.0, 0.0, 1.0], yaw));
        assert!(tilt < 2f64.to_radians(), "tilted by {}°", tilt.to_degrees());
        assert!((x[2] - 0.04).abs() < 5e-3, "cube centre at z = {}", x[2]);
        assert!(x[0].hypot(x[1]) < 0.03, "the couple turns the cube in place: centre at {:?}", &x[..2]);
        let mut ws = Workspace::new(task.problem.model.clone());
        let angle = o.angle(&mut ws, &x);
        assert!(angle.is_finite());
    }
}

#[test]
fn cube_turn_closed_loop_runs_with_both_planners() {
    let task = tasks::cube_turn(1).unwrap();
    let nx = task.problem.nx();
    let mut sampling =
        PredictiveSampling::new(task.problem.clone(), SamplingOptions { samples: 8, ..Default::default() }).unwrap();
    let mut ilqr = Ilqr::new(task.problem.clone(), IlqrOptions { cfd: Some(task.cfd), ..task.ilqr.clone() });
    for planner in [&mut sampling as &mut dyn cenic::mpc::Planner, &mut ilqr] {
        let mut plant = task.plant();
        let ep = closed_loop(planner, &mut plant, &task.x0, 4, Budget::Iterations(1)).unwrap();
        assert!(ep.failure.is_none() && ep.planning_errors.is_empty(), "{:?} {:?}", ep.failure, ep.planning_errors);
        assert_eq!(ep.states.len(), 5 * nx);
        let (e, lo, hi) = (task.error(&ep), task.problem.lower.clone(), task.problem.upper.clone());
        assert!(e.is_finite() && e < PI);
        for u in ep.controls.chunks(task.problem.nc()) {
            assert!(
                u.iter().zip(&lo).zip(&hi).all(|((u, l), h)| l <= u && u <= h),
                "controls within the slides' range"
            );
        }
        assert_eq!(task.success(&ep), e <= tasks::CUBE_TURN_TOLERANCE);
    }
}

#[test]
fn plain_pusher_cost_is_the_objects_distance_and_the_effort() {
    let Some(dir) = common::shared_file("models/gymnasium") else { return };
    for seed in 0..3 {
        let plain = tasks::pusher_plain(&dir, seed).unwrap();
        let shaped = tasks::pusher(&dir, seed).unwrap();
        assert_eq!(plain.name, "pusher_plain");
        assert_eq!(plain.x0, shaped.x0, "the pusher's start");
        assert_eq!(plain.goal, shaped.goal, "the pusher's goal");
        assert_eq!(plain.tolerance, 0.05);
        let Measure::FinalDistance(push) = plain.measure.clone() else { panic!("a distance") };
        let model = plain.problem.model.clone();
        let mut ws = Workspace::new(model.clone());
        let cost: Arc<dyn Cost> = plain.problem.cost.clone();
        let nc = plain.problem.nc();
        let u: Vec<f64> = (0..nc).map(|i| 0.3 - 0.1 * i as f64).collect();
        let effort = 0.5e-3 * u.iter().map(|v| v * v).sum::<f64>();
        // The arm moved to any pose: only the object's distance and the effort count.
        let mut x = plain.x0.clone();
        for (i, v) in [0.4, -0.3, 0.5, -0.6, 0.2, -0.4, 0.3].iter().enumerate() {
            x[i] += v;
        }
        for x in [&plain.x0, &x] {
            let d = push.distance(&mut ws, x);
            let smooth = (d * d + 1e-4).sqrt() - 0.01;
            assert!((cost.running(&mut ws, x, &u, None) - (smooth + effort)).abs() < 1e-12);
            assert!((cost.terminal(&mut ws, x, None) - smooth).abs() < 1e-12);
        }
        // The shaped pusher's cost differs once the arm is away from the object.
        assert!(
            (shaped.problem.cost.running(&mut ws, &x, &u, None) - cost.running(&mut ws, &x, &u, None)).abs() > 1e-3
        );
    }
    let task = Task::new("pusher_plain", &dir, 4).unwrap();
    let mut p =
        PredictiveSampling::new(task.problem.clone(), SamplingOptions { samples: 4, ..Default::default() }).unwrap();
    let mut plant = task.plant();
    let ep = closed_loop(&mut p, &mut plant, &task.x0, 3, Budget::Iterations(1)).unwrap();
    assert!(ep.failure.is_none() && ep.planning_errors.is_empty());
    assert!(task.error(&ep).is_finite());
}

#[test]
fn the_suite_names_tasks_the_library_knows_or_reports_unknown() {
    for name in tasks::SUITE {
        let dir = std::path::Path::new("/nonexistent");
        match Task::new(name, dir, 0) {
            Ok(t) => assert_eq!(t.name, name),
            Err(e) if tasks::NAMES.contains(&name) => {
                assert!(!tasks::BUILT_IN.contains(&name), "{name} is built in: {e}");
                assert!(e.to_string().contains("/nonexistent"), "names the folder: {e}");
            }
            Err(e) => assert!(e.to_string().contains(&format!("unknown task '{name}'")), "{e}"),
        }
    }
}
