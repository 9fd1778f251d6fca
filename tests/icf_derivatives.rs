//! Derivative checks of the ICF cost in f64:
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

use cenic::icf::IcfProblem;
use cenic::icf::cost::{CostWork, evaluate, line_eval, prepare_line};
use cenic::math::cholesky_factor;
use common::Rng;
use common::icf::{random_problem, random_problem_with, scene};

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

/// At velocity `v`: the gradient against central differences of the cost
/// (step `delta`), the Hessian against differences of the gradient, the
/// Hessian positive definite, and along a random unit max-norm direction at
/// each α of `alphas` (skipping points `near` a kink): ℓ(α) = ℓ(v + αw),
/// ℓ' and ℓ'' against differences, ℓ'' > 0.
#[allow(clippy::too_many_arguments)]
fn check_derivatives(
    p: &IcfProblem<f64>,
    v: &[f64],
    rng: &mut Rng,
    work: &mut CostWork<f64>,
    delta: f64,
    trial: usize,
    alphas: &[f64],
    near: &dyn Fn(&[f64]) -> bool,
) {
    let nv = p.nv;
    let mut g = vec![0.0; nv];
    let mut hmat = vec![0.0; nv * nv];
    let f = evaluate(p, v, &mut g, Some(&mut hmat), work);
    assert!(f.is_finite());
    let gscale = g.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-3);
    let hscale = hmat.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let (mut gp, mut gm) = (vec![0.0; nv], vec![0.0; nv]);
    for k in 0..nv {
        let (mut vp, mut vm) = (v.to_vec(), v.to_vec());
        vp[k] += delta;
        vm[k] -= delta;
        let fd = (evaluate(p, &vp, &mut gp, None, work) - evaluate(p, &vm, &mut gm, None, work)) / (2.0 * delta);
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
    let mut fac = hmat.clone();
    assert!(cholesky_factor(&mut fac, nv).is_ok(), "trial {trial}: Hessian not PD");
    // Unit max-norm direction, so the FD step below is a 1e-8 m/s change in v.
    let w: Vec<f64> = (0..nv).map(|_| rng.normal()).collect();
    let wmax = w.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let w: Vec<f64> = w.iter().map(|x| x / wmax).collect();
    prepare_line(p, v, &w, work);
    for &alpha in alphas {
        let (l0, d1, d2) = line_eval(p, v, &w, alpha, work);
        let va: Vec<f64> = v.iter().zip(&w).map(|(a, b)| a + alpha * b).collect();
        if near(&va) {
            continue;
        }
        let direct = evaluate(p, &va, &mut gp, None, &mut work.clone());
        assert!((l0 - direct).abs() <= 1e-10 * (1.0 + direct.abs()), "ℓ(α) {l0} vs {direct}");
        let da = 1e-8;
        let (lp, dp, _) = line_eval(p, v, &w, alpha + da, work);
        let (lm, dm, _) = line_eval(p, v, &w, alpha - da, work);
        let fd1 = (lp - lm) / (2.0 * da);
        assert!(close(fd1, d1, d1.abs().max(1e-6)), "trial {trial}: ℓ'({alpha}) fd {fd1:e} vs {d1:e}");
        let fd2 = (dp - dm) / (2.0 * da);
        assert!(close(fd2, d2, d2.abs().max(1e-6)), "trial {trial}: ℓ''({alpha}) fd {fd2:e} vs {d2:e}");
        assert!(d2 > 0.0, "ℓ'' must be positive (strict convexity), got {d2}");
    }
}

#[test]
fn gradient_hessian_and_line_derivatives_match_finite_differences() {
    let model = scene();
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
        check_derivatives(&p, &v, &mut rng, &mut work, delta, trial, &[0.0, 0.3, 1.0], &|va| near_kink(&p, va, delta));
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

/// A model with every row element of the ICF problem: tendon limits
/// (one-sided), tendon springs and dampers and equality constraints
/// (connect, weld, joint coupling: two-sided), implicit general actuators
/// with force ranges (clamped and free) and dry friction.
const ROWS_MODEL: &str = r#"<mujoco>
  <compiler angle="radian"/>
  <option semantics="physical"><flag contact="disable"/></option>
  <worldbody>
    <site name="top" pos="0 0 2"/>
    <body name="a" pos="0 0 1">
      <joint name="a" axis="0 1 0" frictionloss="0.3"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <site name="a_end" pos="0.3 0 0"/>
      <body name="b" pos="0.3 0 0">
        <joint name="b" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
      </body>
    </body>
    <body name="ball" pos="0.4 0 0.6">
      <freejoint/>
      <geom type="sphere" size="0.05"/>
      <site name="ball"/>
    </body>
    <body name="c" pos="1 0 1">
      <joint name="c" type="slide" axis="1 0 0"/>
      <geom type="box" size="0.05 0.05 0.05"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="rope" range="0.3 0.45" stiffness="50" damping="1">
      <site site="a_end"/><site site="ball"/>
    </spatial>
    <fixed name="sum" range="-0.2 0.2" frictionloss="0.1"><joint joint="a" coef="1"/><joint joint="b" coef="1"/></fixed>
  </tendon>
  <equality>
    <connect body1="ball" body2="c" anchor="0 0 0.1"/>
    <weld body1="c" anchor="0 0 0"/>
    <joint joint1="b" joint2="a" polycoef="0 0.5 0.3 0 0"/>
  </equality>
  <actuator>
    <position tendon="sum" kp="40" kv="2" forcerange="-1 0.5"/>
    <damper joint="c" kv="3" ctrlrange="0 1"/>
    <intvelocity joint="b" kp="10" actrange="-1 1"/>
  </actuator>
</mujoco>"#;

#[test]
fn row_elements_match_finite_differences() {
    let model = cenic::model::Model::from_mjcf_str(ROWS_MODEL).unwrap();
    let nv = model.nv;
    let mut rng = Rng::new(7);
    let mut work = CostWork::default();
    let mut builder = cenic::icf::IcfBuilder::new(&model);
    let (mut checked, mut clamped, mut free, mut inactive) = (0, 0, 0, 0);
    let delta = 1e-8;
    for trial in 0..40 {
        let h = [1e-3, 5e-3, 2e-2][trial % 3];
        let mut data = cenic::dynamics::Data::<f64>::new(&model);
        for (k, x) in data.q.iter_mut().enumerate() {
            *x = model.qpos0[k] + 0.2 * rng.normal();
        }
        cenic::dynamics::normalize_quaternions(&model, &mut data.q);
        for v in data.v.iter_mut() {
            *v = rng.normal();
        }
        data.act[0] = rng.range(-1.0, 1.0);
        cenic::dynamics::kinematics(&model, &mut data);
        cenic::dynamics::velocities(&model, &mut data);
        cenic::dynamics::transmissions(&model, &mut data);
        cenic::dynamics::mass_matrix(&model, &mut data);
        cenic::dynamics::bias_forces(&model, &mut data);
        cenic::dynamics::passive_forces(&model, &mut data);
        let ctrl = [rng.range(-0.5, 0.5), rng.range(0.0, 1.0), rng.range(-1.0, 1.0)];
        let act = cenic::icf::Actuation { ctrl: &ctrl, target_velocity: &[], applied: &[] };
        let mut p = IcfProblem::new(nv);
        builder.build(&model, &data, &[], act, &cenic::icf::MaterialScale::default(), &mut p);
        p.set_time_step(h);
        let v = random_velocity(&p, &mut rng, [1e-3, 0.1, 1.0][trial % 3]);
        // Skip samples within δ of a clamp switch.
        let near = |v: &[f64]| {
            p.rows.iter().any(|r| {
                let u = r.force - r.kappa * p.row_velocity(r, v);
                let jsum: f64 = (r.jac_start..r.jac_start + r.jac_len).map(|e| p.row_coef[e].abs()).sum();
                let scale = 10.0 * delta * r.kappa * (1.0 + jsum);
                (u - r.lo).abs() < scale || (u - r.hi).abs() < scale
            })
        };
        if near(&v) {
            continue;
        }
        for r in &p.rows {
            let u = r.force - r.kappa * p.row_velocity(r, &v);
            if u > r.hi || u < r.lo {
                if r.lo == 0.0 { inactive += 1 } else { clamped += 1 }
            } else {
                free += 1;
            }
        }
        checked += 1;
        check_derivatives(&p, &v, &mut rng, &mut work, delta, trial, &[0.0, 0.5, 1.0], &near);
    }
    eprintln!(
        "rows: checked {checked} problems; row samples free {free}, clamped {clamped}, inactive one-sided {inactive}"
    );
    assert!(checked >= 30, "too many samples skipped near clamps");
    assert!(free >= 20 && clamped >= 5 && inactive >= 5, "free {free}, clamped {clamped}, inactive {inactive}");
}

/// The residuals r = d·v − s_ref of every soft row at `v` (contact edges,
/// limits, rows) and the impulse clamps of the rows, for kink detection and
/// counting: (residuals, clamped-row residual distances).
fn soft_residuals(p: &IcfProblem<f64>, v: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (mut res, mut clamp) = (vec![], vec![]);
    for c in &p.contacts {
        let Some(s) = &c.soft else { continue };
        let x = p.contact_velocity(c, v) - s.w0;
        let xn = c.normal.dot(x) + s.hk;
        if s.mu == [0.0, 0.0] {
            res.push(xn);
            continue;
        }
        let t2 = c.normal.cross(s.t1);
        for (t, mu) in [(s.t1, s.mu[0]), (t2, s.mu[1])] {
            res.push(xn + mu * t.dot(x));
            res.push(xn - mu * t.dot(x));
        }
    }
    for l in &p.limits {
        if let Some(s) = l.soft.filter(|s| s.d > 0.0) {
            res.push(l.sign * v[l.dof] - s.vref);
        }
    }
    for r in &p.rows {
        if let Some(s) = r.soft.filter(|s| s.d > 0.0) {
            let g = -s.d * (p.row_velocity(r, v) - s.vref);
            clamp.push((g - p.h * r.lo).abs().min((g - p.h * r.hi).abs()) / s.d);
        }
    }
    (res, clamp)
}

/// MuJoCo's soft constraints (contacts frictionless and with pyramidal
/// friction, within a margin and a gap, limits, and the rows of every kind:
/// equality constraints, tendon limits, dry friction): gradient, Hessian
/// and line derivatives against finite differences, the Hessian positive
/// definite.
#[test]
fn soft_constraint_terms_match_finite_differences() {
    let mut model = scene();
    model.options.semantics = cenic::model::Semantics::MuJoCo;
    let rows = cenic::model::Model::from_mjcf_str(&ROWS_MODEL.replace(r#"semantics="physical""#, "")).unwrap();
    assert_eq!(rows.options.semantics, cenic::model::Semantics::MuJoCo);
    let mut rng = Rng::new(11);
    let mut work = CostWork::default();
    let mut builder = cenic::icf::IcfBuilder::new(&rows);
    let delta = 1e-8;
    let (mut checked, mut active, mut inactive, mut clamped) = (0, 0, 0, 0);
    for trial in 0..80 {
        let h = [1e-3, 5e-3, 2e-2][trial % 3];
        let p = if trial % 2 == 0 {
            random_problem_with(&model, &mut rng, h, trial % 4 == 0, true).0
        } else {
            let mut data = cenic::dynamics::Data::<f64>::new(&rows);
            for (k, x) in data.q.iter_mut().enumerate() {
                *x = rows.qpos0[k] + 0.2 * rng.normal();
            }
            cenic::dynamics::normalize_quaternions(&rows, &mut data.q);
            data.v.iter_mut().for_each(|v| *v = rng.normal());
            for stage in [cenic::dynamics::kinematics, cenic::dynamics::velocities, cenic::dynamics::transmissions] {
                stage(&rows, &mut data);
            }
            cenic::dynamics::mass_matrix(&rows, &mut data);
            cenic::dynamics::bias_forces(&rows, &mut data);
            cenic::dynamics::passive_forces(&rows, &mut data);
            let ctrl = [rng.range(-0.5, 0.5), rng.range(0.0, 1.0), rng.range(-1.0, 1.0)];
            let act = cenic::icf::Actuation { ctrl: &ctrl, target_velocity: &[], applied: &[] };
            let mut p = IcfProblem::new(rows.nv);
            builder.build(&rows, &data, &[], act, &cenic::icf::MaterialScale::default(), &mut p);
            p.set_time_step(h);
            p
        };
        let v = random_velocity(&p, &mut rng, [1e-3, 0.1, 1.0][trial % 3]);
        let near = |v: &[f64]| {
            let (res, clamp) = soft_residuals(&p, v);
            res.iter().chain(&clamp).any(|r| r.abs() < 1e-5)
        };
        if near(&v) {
            continue;
        }
        let (res, clamp) = soft_residuals(&p, &v);
        active += res.iter().filter(|r| **r < 0.0).count();
        inactive += res.iter().filter(|r| **r > 0.0).count();
        clamped += p
            .rows
            .iter()
            .filter(|r| r.soft.is_some_and(|s| s.d > 0.0 && r.lo.is_finite()))
            .filter(|r| {
                let s = r.soft.unwrap();
                let g = -s.d * (p.row_velocity(r, &v) - s.vref);
                g > p.h * r.hi || g < p.h * r.lo
            })
            .count();
        assert!(p.contacts.iter().all(|c| c.soft.is_some()) && p.limits.iter().all(|l| l.soft.is_some()));
        assert!(!clamp.is_empty() || !p.contacts.is_empty());
        checked += 1;
        check_derivatives(&p, &v, &mut rng, &mut work, delta, trial, &[0.0, 0.5, 1.0], &near);
    }
    eprintln!("soft: checked {checked} problems; rows active {active}, inactive {inactive}; rows clamped {clamped}");
    assert!(checked >= 60 && active >= 50 && inactive >= 50 && clamped >= 5);
}
