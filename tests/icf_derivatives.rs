//! Derivative checks of the ICF cost in f64 (issue 4, acceptance 1):
//! gradient vs central finite differences of the cost, Hessian vs finite
//! differences of the gradient, and the line-search first and second
//! derivatives vs finite differences of ℓ(α), at random velocities, on
//! problems with sticking, sliding, separating and penetrating contacts,
//! clamped and unclamped actuators, and active joint limits. The Hessian
//! must be positive definite in every case.
//!
//! Tolerances: central differences with step δ have truncation error
//! O(δ²·ℓ''') and rounding error O(ε_mach·|ℓ|/δ). Friction curves on the
//! scale of the stiction tolerance (1e-4 m/s), so ℓ''' reaches ~1e7 and a
//! step δ = 1e-6 would already err by 1e-5; with δ = 1e-8 m/s both errors
//! are ≲ 1e-9 here, so we require |fd − exact| ≤ 1e-5·(|exact| + scale) — loose enough for
//! rounding, tight enough that any wrong term (a missing factor h, a sign,
//! a dropped n nᵀ block) fails by orders of magnitude. Samples within δ of
//! a kink (where γn or a gain clamp switches) are skipped and counted.

mod common;

use cenic::collision::Contact;
use cenic::dynamics::{self, Data};
use cenic::icf::cost::{CostWork, evaluate, line_eval, prepare_line};
use cenic::icf::{Actuation, IcfBuilder, IcfProblem, MaterialScale};
use cenic::math::{Vec3, cholesky_factor};
use cenic::model::{
    Actuator, ActuatorKind, BodySpec, GeomKind, GeomSpec, Inertial, JointKind, JointSpec, Material, Model,
    ModelBuilder, WORLD,
};
use common::Rng;

/// A free box on the ground and a two-joint position-servo arm with limits.
fn scene() -> Model {
    let mut b = ModelBuilder::new("icf_scene");
    b.add_geom(GeomSpec::new("ground", GeomKind::Plane, [1.0, 1.0, 0.1], WORLD));
    let bx = b.add_body(BodySpec::new("box", WORLD, [0.0, 0.0, 0.05]));
    b.add_joint(JointSpec::new("box_free", JointKind::Free, bx));
    b.add_geom(GeomSpec { mass: Some(0.5), ..GeomSpec::new("box_geom", GeomKind::Box, [0.05, 0.05, 0.05], bx) });
    let l1 = b.add_body(BodySpec {
        inertial: Some(Inertial {
            mass: 1.0,
            pos: [0.0, 0.0, -0.1],
            quat: [1.0, 0.0, 0.0, 0.0],
            diag: [0.01, 0.01, 0.002],
        }),
        ..BodySpec::new("l1", WORLD, [0.3, 0.0, 0.4])
    });
    b.add_joint(JointSpec {
        axis: [0.0, 1.0, 0.0],
        range: Some([-0.5, 0.5]),
        damping: 0.3,
        armature: 0.01,
        ..JointSpec::new("j1", JointKind::Hinge, l1)
    });
    let l2 = b.add_body(BodySpec {
        inertial: Some(Inertial {
            mass: 0.5,
            pos: [0.0, 0.0, -0.1],
            quat: [1.0, 0.0, 0.0, 0.0],
            diag: [0.005, 0.005, 0.001],
        }),
        ..BodySpec::new("l2", l1, [0.0, 0.0, -0.2])
    });
    b.add_joint(JointSpec {
        axis: [1.0, 0.0, 0.0],
        range: Some([-1.0, 1.0]),
        ..JointSpec::new("j2", JointKind::Hinge, l2)
    });
    b.add_geom(GeomSpec::new("tip", GeomKind::Sphere, [0.03, 0.0, 0.0], l2));
    b.add_actuator(Actuator {
        name: "a1".into(),
        joint: 1,
        kind: ActuatorKind::Position { kp: 200.0, kd: 5.0, effort_limit: 3.0 },
        ctrl_range: None,
    });
    b.add_actuator(Actuator {
        name: "a2".into(),
        joint: 2,
        kind: ActuatorKind::Position { kp: 50.0, kd: 1.0, effort_limit: f64::INFINITY },
        ctrl_range: None,
    });
    b.build().unwrap()
}

fn material(k: f64, d: f64, mus: f64, mud: f64) -> Material {
    Material { stiffness: k, dissipation: d, mu_static: mus, mu_dynamic: mud }
}

/// Builds a problem at a random state with hand-made contacts of every kind.
fn random_problem(model: &Model, rng: &mut Rng, h: f64, box_at_rest: bool) -> (IcfProblem<f64>, Data<f64>) {
    let mut data = Data::<f64>::new(model);
    // Box slightly penetrating, arm near/over its limits.
    data.q[0..3].copy_from_slice(&[rng.range(-0.1, 0.1), rng.range(-0.1, 0.1), 0.049]);
    data.q[3..7].copy_from_slice(&[1.0, 0.0, 0.0, 0.0]);
    data.q[7] = rng.range(-0.55, 0.55);
    data.q[8] = rng.range(-1.05, 1.05);
    for v in data.v.iter_mut() {
        *v = 0.3 * rng.normal();
    }
    if box_at_rest {
        // Slip far below the stiction tolerance: the sticking regime.
        for v in data.v[0..6].iter_mut() {
            *v = 1e-6 * rng.normal();
        }
    }
    dynamics::kinematics(model, &mut data);
    dynamics::velocities(model, &mut data);
    dynamics::mass_matrix(model, &mut data);
    dynamics::bias_forces(model, &mut data);
    dynamics::passive_forces(model, &mut data);
    let z = Vec3::new(0.0, 0.0, 1.0);
    let mut contacts = vec![];
    // Four box corners on the ground: penetrating, touching, separated inside the margin.
    let phis = [-1e-3, -2e-4, 0.0, 4e-4];
    for (i, (dx, dy)) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)].into_iter().enumerate() {
        let corner = data.xpos[1] + Vec3::new(0.05 * dx, 0.05 * dy, -0.05);
        contacts.push(Contact {
            geom: [0, 1],
            body: [0, 1],
            pos: corner,
            normal: z,
            dist: phis[i],
            feature: [0, i as u32],
            material: material(1e5, 10.0, 0.6, 0.3),
        });
    }
    // Arm tip against the box side (both bodies dynamic), tilted normal.
    let n = Vec3::new(-0.9, 0.1, 0.3).normalize();
    contacts.push(Contact {
        geom: [1, 2],
        body: [1, 3],
        pos: data.xpos[3] + Vec3::new(0.0, 0.0, -0.1),
        normal: n,
        dist: -5e-4,
        feature: [0, 0],
        material: material(3e4, 0.5, 0.8, 0.5),
    });
    let ctrl = [rng.range(-0.6, 0.6), rng.range(-1.2, 1.2)];
    let vref = [rng.normal(), 0.0];
    let mut p = IcfProblem::new(model.nv);
    let mut builder = IcfBuilder::new(model);
    builder.build(
        model,
        &data,
        &contacts,
        Actuation { ctrl: &ctrl, target_velocity: &vref },
        &MaterialScale::default(),
        &mut p,
    );
    p.set_time_step(h);
    (p, data)
}

/// A velocity around v0 with a mix of sticking (tiny slip), sliding and
/// separating contact velocities.
fn random_velocity(p: &IcfProblem<f64>, rng: &mut Rng, spread: f64) -> Vec<f64> {
    p.v0.iter().map(|x| x + spread * rng.normal()).collect()
}

struct Counts {
    checked: usize,
    skipped: usize,
    stick: usize,
    slide: usize,
    separate: usize,
    press: usize,
    gain_clamped: usize,
    gain_free: usize,
    limit_active: usize,
}

fn classify(p: &IcfProblem<f64>, v: &[f64], c: &mut Counts) {
    for con in &p.contacts {
        let vc = p.contact_velocity(con, v);
        let vn = con.normal.dot(vc);
        let vt = (vc - con.normal * vn).norm();
        let v_hat = (con.fe0 / (p.h * con.stiffness)).min(1.0 / con.dissipation.max(1e-300));
        if vn >= v_hat {
            c.separate += 1;
        } else {
            c.press += 1;
            if con.n0 > 0.0 {
                if vt < p.stiction_tolerance { c.stick += 1 } else { c.slide += 1 }
            }
        }
    }
    for g in &p.gains {
        let u = g.bias - g.gain * v[g.dof];
        if u.abs() > g.effort { c.gain_clamped += 1 } else { c.gain_free += 1 }
    }
    for l in &p.limits {
        let vn = l.sign * v[l.dof];
        let v_hat = -l.stiffness * l.g0 / (p.h * l.stiffness + l.damping);
        if vn < v_hat {
            c.limit_active += 1;
        }
    }
}

/// True if v is within δ of a point where some term switches branch.
fn near_kink(p: &IcfProblem<f64>, v: &[f64], delta: f64) -> bool {
    let mut norm_j = 0.0f64;
    for con in &p.contacts {
        for e in con.jac_start..con.jac_start + con.jac_len {
            norm_j = norm_j.max(p.jac_col[e].norm());
        }
    }
    let tol = 10.0 * delta * norm_j.max(1.0);
    for con in &p.contacts {
        let vn = con.normal.dot(p.contact_velocity(con, v));
        let a = con.fe0 / (p.h * con.stiffness);
        let b = 1.0 / con.dissipation.max(1e-300);
        if (vn - a).abs() < tol || (vn - b).abs() < tol {
            return true;
        }
    }
    for g in &p.gains {
        let u = g.bias - g.gain * v[g.dof];
        if (u.abs() - g.effort).abs() < 10.0 * delta * g.gain.max(1.0) {
            return true;
        }
    }
    for l in &p.limits {
        let v_hat = -l.stiffness * l.g0 / (p.h * l.stiffness + l.damping);
        if (l.sign * v[l.dof] - v_hat).abs() < 10.0 * delta {
            return true;
        }
    }
    false
}

fn close(fd: f64, exact: f64, scale: f64) -> bool {
    (fd - exact).abs() <= 1e-5 * (exact.abs() + scale)
}

#[test]
fn gradient_hessian_and_line_derivatives_match_finite_differences() {
    let model = scene();
    let nv = model.nv;
    let mut rng = Rng::new(42);
    let mut work = CostWork::default();
    let mut counts = Counts {
        checked: 0,
        skipped: 0,
        stick: 0,
        slide: 0,
        separate: 0,
        press: 0,
        gain_clamped: 0,
        gain_free: 0,
        limit_active: 0,
    };
    let delta = 1e-8;
    for trial in 0..60 {
        let h = [1e-3, 5e-3, 2e-2][trial % 3];
        let (p, _data) = random_problem(&model, &mut rng, h, trial % 5 < 2);
        let spread = [1e-6, 1e-3, 0.1, 1.0][trial % 4];
        let v = random_velocity(&p, &mut rng, spread);
        if near_kink(&p, &v, delta) {
            counts.skipped += 1;
            continue;
        }
        classify(&p, &v, &mut counts);
        counts.checked += 1;
        let mut g = vec![0.0; nv];
        let mut hmat = vec![0.0; nv * nv];
        let f = evaluate(&p, &v, &mut g, Some(&mut hmat), &mut work);
        assert!(f.is_finite());
        let gscale = g.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-3);
        let hscale = hmat.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let mut gp = vec![0.0; nv];
        let mut gm = vec![0.0; nv];
        for k in 0..nv {
            let mut vp = v.clone();
            let mut vm = v.clone();
            vp[k] += delta;
            vm[k] -= delta;
            let fp = evaluate(&p, &vp, &mut gp, None, &mut work);
            let fm = evaluate(&p, &vm, &mut gm, None, &mut work);
            let fd = (fp - fm) / (2.0 * delta);
            assert!(close(fd, g[k], gscale), "trial {trial}: dℓ/dv[{k}] fd {fd:e} vs {:e}", g[k]);
            for i in 0..nv {
                let fdh = (gp[i] - gm[i]) / (2.0 * delta);
                assert!(
                    close(fdh, hmat[i * nv + k], hscale),
                    "trial {trial}: H[{i}][{k}] fd {fdh:e} vs {:e}",
                    hmat[i * nv + k]
                );
            }
        }
        // Positive definite.
        let mut fac = hmat.clone();
        assert!(cholesky_factor(&mut fac, nv).is_ok(), "trial {trial}: Hessian not PD");
        // Line derivatives along a random direction, at several α.
        // Unit max-norm direction, so the FD step below is a 1e-8 m/s change in v.
        let w: Vec<f64> = (0..nv).map(|_| rng.normal()).collect();
        let wmax = w.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let w: Vec<f64> = w.iter().map(|x| x / wmax).collect();
        prepare_line(&p, &v, &w, &mut work);
        for &alpha in &[0.0, 0.3, 1.0] {
            let (l0, d1, d2) = line_eval(&p, &v, &w, alpha, &work);
            // ℓ(α) must equal ℓ(v + αw).
            let va: Vec<f64> = v.iter().zip(&w).map(|(a, b)| a + alpha * b).collect();
            if near_kink(&p, &va, delta) {
                continue;
            }
            let direct = evaluate(&p, &va, &mut gp, None, &mut work.clone());
            assert!((l0 - direct).abs() <= 1e-10 * (1.0 + direct.abs()), "ℓ(α) {l0} vs {direct}");
            let da = 1e-8;
            let (lp, dp, _) = line_eval(&p, &v, &w, alpha + da, &work);
            let (lm, dm, _) = line_eval(&p, &v, &w, alpha - da, &work);
            let s1 = d1.abs().max(1e-6);
            assert!(close((lp - lm) / (2.0 * da), d1, s1), "ℓ'({alpha}): {:e} vs {d1:e}", (lp - lm) / (2.0 * da));
            assert!(close((dp - dm) / (2.0 * da), d2, d2.abs().max(1e-6)), "ℓ''({alpha})");
            assert!(d2 > 0.0, "ℓ'' must be positive (strict convexity), got {d2}");
        }
    }
    eprintln!(
        "checked {} problems (skipped {} near kinks): stick {}, slide {}, separate {}, press {}, gain clamped {}, gain free {}, limits active {}",
        counts.checked,
        counts.skipped,
        counts.stick,
        counts.slide,
        counts.separate,
        counts.press,
        counts.gain_clamped,
        counts.gain_free,
        counts.limit_active
    );
    assert!(counts.checked >= 50, "too many skipped samples: {}", counts.skipped);
    for (what, n) in [
        ("sticking", counts.stick),
        ("sliding", counts.slide),
        ("separating", counts.separate),
        ("pressing", counts.press),
        ("clamped gain", counts.gain_clamped),
        ("unclamped gain", counts.gain_free),
        ("active limit", counts.limit_active),
    ] {
        assert!(n >= 5, "only {n} {what} cases were exercised");
    }
}
