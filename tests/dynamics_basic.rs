//! Multibody dynamics checks that need no outside oracle beyond calculus:
//! point Jacobians against finite differences of point positions, unit-norm
//! quaternion integration, and energy conservation of a frictionless double
//! pendulum.

mod common;

use common::inertial;

use cenic::dynamics::{self, Data};
use cenic::math::{Quat, Vec3, cholesky_factor, cholesky_solve_in_place};
use cenic::model::{BodySpec, GeomKind, GeomSpec, Inertial, JointKind, JointSpec, Model, ModelBuilder, WORLD};
use common::Rng;

/// A free-floating base with a ball-jointed link, then a hinge, then a
/// slide: every joint type, off-centre anchors and inertias.
fn mixed_chain() -> Model {
    let mut b = ModelBuilder::new("mixed");
    let base = b.add_body(BodySpec {
        inertial: inertial(2.0, [0.05, -0.02, 0.01], [0.03, 0.04, 0.05]),
        ..BodySpec::new("base", WORLD, [0.1, 0.2, 1.0])
    });
    b.add_joint(JointSpec::new("free", JointKind::Free, base));
    let l1 = b.add_body(BodySpec {
        quat: [0.8, 0.0, 0.6, 0.0],
        inertial: inertial(0.7, [0.0, 0.0, -0.15], [0.01, 0.012, 0.004]),
        ..BodySpec::new("l1", base, [0.2, 0.0, -0.1])
    });
    b.add_joint(JointSpec { pos: [0.0, 0.02, 0.03], ..JointSpec::new("ball", JointKind::Ball, l1) });
    let l2 = b.add_body(BodySpec {
        inertial: inertial(0.4, [0.05, 0.01, -0.1], [0.005, 0.006, 0.002]),
        ..BodySpec::new("l2", l1, [0.0, 0.0, -0.3])
    });
    b.add_joint(JointSpec {
        axis: [0.3, 1.0, 0.1],
        pos: [0.01, 0.0, 0.02],
        reference: 0.2,
        ..JointSpec::new("hinge", JointKind::Hinge, l2)
    });
    let l3 = b.add_body(BodySpec {
        inertial: inertial(0.2, [0.0, 0.03, 0.0], [0.001, 0.002, 0.0015]),
        ..BodySpec::new("l3", l2, [0.1, 0.0, -0.2])
    });
    b.add_joint(JointSpec { axis: [1.0, 0.2, -0.4], ..JointSpec::new("slide", JointKind::Slide, l3) });
    b.add_geom(GeomSpec::new("g", GeomKind::Sphere, [0.05, 0.0, 0.0], l3));
    b.build().unwrap()
}

fn random_state(model: &Model, rng: &mut Rng, data: &mut Data<f64>) {
    for j in &model.joints {
        let a = j.qpos_adr;
        match j.kind {
            JointKind::Free => {
                for k in 0..3 {
                    data.q[a + k] = rng.range(-1.0, 1.0);
                }
                data.q[a + 3..a + 7].copy_from_slice(&rng.quat());
            }
            JointKind::Ball => data.q[a..a + 4].copy_from_slice(&rng.quat()),
            _ => data.q[a] = rng.range(-1.0, 1.0),
        }
    }
    for v in data.v.iter_mut() {
        *v = rng.normal();
    }
}

#[test]
fn point_jacobians_match_finite_differences() {
    let model = mixed_chain();
    let nv = model.nv;
    let mut rng = Rng::new(7);
    let mut data = Data::<f64>::new(&model);
    let mut probe = Data::<f64>::new(&model);
    let eps = 1e-6;
    let mut worst: f64 = 0.0;
    for _trial in 0..10 {
        random_state(&model, &mut rng, &mut data);
        dynamics::kinematics(&model, &mut data);
        for body in 1..model.bodies.len() {
            // A body-fixed point, given in the body frame.
            let local = Vec3::new(rng.range(-0.2, 0.2), rng.range(-0.2, 0.2), rng.range(-0.2, 0.2));
            let p = data.xpos[body] + data.xquat[body].rotate(local);
            let mut jac = vec![0.0; 3 * nv];
            let mut jrot = vec![0.0; 3 * nv];
            dynamics::point_jacobian(&model, &data, body, p, &mut jac, Some(&mut jrot));
            for k in 0..nv {
                // Central difference along the k-th velocity direction on the manifold.
                let mut dv = vec![0.0; nv];
                dv[k] = 1.0;
                let mut eval = |sign: f64| {
                    probe.q.copy_from_slice(&data.q);
                    dynamics::integrate_q(&model, &mut probe.q, &dv, sign * eps);
                    dynamics::kinematics(&model, &mut probe);
                    (probe.xpos[body] + probe.xquat[body].rotate(local), probe.xquat[body])
                };
                let (pp, qp) = eval(1.0);
                let (pm, qm) = eval(-1.0);
                let fd_lin = (pp - pm) * (0.5 / eps);
                // Angular velocity in the world frame from the quaternion change.
                let fd_ang = (qp * qm.conj()).log() * (0.5 / eps);
                for r in 0..3 {
                    let e1 = (fd_lin[r] - jac[r * nv + k]).abs();
                    let e2 = (fd_ang[r] - jrot[r * nv + k]).abs();
                    worst = worst.max(e1).max(e2);
                    assert!(e1 < 1e-7 && e2 < 1e-7, "body {body} dof {k} row {r}: lin {e1:e} ang {e2:e}");
                }
            }
        }
    }
    eprintln!("max |J − J_fd| = {worst:e}");
}

#[test]
fn point_velocity_equals_jacobian_times_v() {
    let model = mixed_chain();
    let nv = model.nv;
    let mut rng = Rng::new(11);
    let mut data = Data::<f64>::new(&model);
    random_state(&model, &mut rng, &mut data);
    dynamics::kinematics(&model, &mut data);
    dynamics::velocities(&model, &mut data);
    let mut jac = vec![0.0; 3 * nv];
    for body in 1..model.bodies.len() {
        let p = data.xpos[body] + Vec3::new(0.1, -0.2, 0.05);
        dynamics::point_jacobian(&model, &data, body, p, &mut jac, None);
        let v = dynamics::point_velocity(&data, body, p);
        for r in 0..3 {
            let jv: f64 = (0..nv).map(|k| jac[r * nv + k] * data.v[k]).sum();
            assert!((jv - v[r]).abs() < 1e-12, "body {body} row {r}: {jv} vs {}", v[r]);
        }
    }
}

/// Quaternion integration by the exact exponential map keeps unit norm to
/// 1e-12 over a million steps (renormalising-free).
#[test]
fn quaternion_integration_keeps_unit_norm_over_a_million_steps() {
    let model = mixed_chain();
    let mut q: Vec<f64> = model.qpos0.clone();
    let mut v = vec![0.0; model.nv];
    // Large, non-axis-aligned rates on the free and ball joints.
    v[3..6].copy_from_slice(&[3.0, -7.0, 11.0]);
    v[6..9].copy_from_slice(&[-5.0, 2.0, 13.0]);
    let h = 1e-3;
    let mut worst: f64 = 0.0;
    for step in 0..1_000_000 {
        dynamics::integrate_q(&model, &mut q, &v, h);
        if step % 1000 == 999 {
            for a in [3usize, 7] {
                let n = Quat::from_slice(&q[a..a + 4]).norm();
                worst = worst.max((n - 1.0).abs());
            }
        }
    }
    eprintln!("max |‖q‖ − 1| over 1e6 steps: {worst:e}");
    assert!(worst < 1e-12, "quaternion norm drifted by {worst:e}");
}

/// Frictionless double pendulum (two hinges, capsule-like links) integrated
/// with classical RK4 on M(q) v̇ = −bias(q, v) at h = 1e-4 s for 5 s.
/// Total energy must stay within 1e-8 relative: RK4's truncation error at
/// this step is ~1e-12, so a larger drift means M and the bias forces are
/// inconsistent (e.g. a wrong Coriolis term).
#[test]
fn double_pendulum_conserves_energy() {
    let mut b = ModelBuilder::new("double_pendulum");
    let l1 = b.add_body(BodySpec {
        inertial: Some(Inertial {
            mass: 1.0,
            pos: [0.0, 0.0, -0.25],
            quat: [1.0, 0.0, 0.0, 0.0],
            diag: [0.02, 0.021, 0.001],
        }),
        ..BodySpec::new("l1", WORLD, [0.0, 0.0, 2.0])
    });
    b.add_joint(JointSpec { axis: [0.0, 1.0, 0.0], ..JointSpec::new("j1", JointKind::Hinge, l1) });
    let l2 = b.add_body(BodySpec {
        inertial: Some(Inertial {
            mass: 0.6,
            pos: [0.02, 0.0, -0.2],
            quat: [1.0, 0.0, 0.0, 0.0],
            diag: [0.01, 0.012, 0.003],
        }),
        ..BodySpec::new("l2", l1, [0.0, 0.0, -0.5])
    });
    b.add_joint(JointSpec { axis: [0.0, 1.0, 0.0], ..JointSpec::new("j2", JointKind::Hinge, l2) });
    let model = b.build().unwrap();
    let mut data = Data::<f64>::new(&model);
    data.q.copy_from_slice(&[1.2, -0.7]);
    data.v.copy_from_slice(&[0.5, 2.0]);

    let accel = |q: &[f64], v: &[f64], data: &mut Data<f64>| -> Vec<f64> {
        data.q.copy_from_slice(q);
        data.v.copy_from_slice(v);
        dynamics::kinematics(&model, data);
        dynamics::velocities(&model, data);
        dynamics::mass_matrix(&model, data);
        dynamics::bias_forces(&model, data);
        let mut m = data.mass.clone();
        cholesky_factor(&mut m, 2).unwrap();
        let mut a: Vec<f64> = data.bias.iter().map(|x| -x).collect();
        cholesky_solve_in_place(&m, 2, &mut a);
        a
    };
    let energy = |data: &mut Data<f64>| {
        dynamics::kinematics(&model, data);
        dynamics::mass_matrix(&model, data);
        let (k, p) = dynamics::energy(&model, data);
        k + p
    };
    let e0 = energy(&mut data);
    let (mut q, mut v) = (data.q.clone(), data.v.clone());
    let h = 1e-4;
    let mut worst: f64 = 0.0;
    let mut scratch = Data::<f64>::new(&model);
    for step in 0..50_000 {
        let add = |x: &[f64], d: &[f64], s: f64| -> Vec<f64> { x.iter().zip(d).map(|(a, b)| a + s * b).collect() };
        let a1 = accel(&q, &v, &mut scratch);
        let (q2, v2) = (add(&q, &v, h / 2.0), add(&v, &a1, h / 2.0));
        let a2 = accel(&q2, &v2, &mut scratch);
        let (q3, v3) = (add(&q, &v2, h / 2.0), add(&v, &a2, h / 2.0));
        let a3 = accel(&q3, &v3, &mut scratch);
        let (q4, v4) = (add(&q, &v3, h), add(&v, &a3, h));
        let a4 = accel(&q4, &v4, &mut scratch);
        for i in 0..2 {
            q[i] += h / 6.0 * (v[i] + 2.0 * v2[i] + 2.0 * v3[i] + v4[i]);
            v[i] += h / 6.0 * (a1[i] + 2.0 * a2[i] + 2.0 * a3[i] + a4[i]);
        }
        if step % 500 == 0 {
            data.q.copy_from_slice(&q);
            data.v.copy_from_slice(&v);
            worst = worst.max(((energy(&mut data) - e0) / e0.abs()).abs());
        }
    }
    eprintln!("double pendulum: max relative energy drift {worst:e} (E0 = {e0} J)");
    assert!(worst < 1e-8, "energy drift {worst:e}");
    // The pendulum really moved (guards against a vacuous pass).
    assert!((q[0] - 1.2).abs() > 0.1 || (q[1] + 0.7).abs() > 0.1);
}
