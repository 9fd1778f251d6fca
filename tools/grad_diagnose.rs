//! Where do a robot's gradients disagree between two integrations?
//! (gradient diagnostics)
//!
//! Runs the reference mode over the whole rollout, then re-integrates every
//! control interval alone from the reference state x_k with the test mode
//! and compares the interval Jacobians (local derivative error, no
//! trajectory drift). Prints per interval the difference of [D_x | D_u | D_θ]
//! weighted by the reference adjoint λ of the final-x loss (quaternion
//! columns projected on the tangent space), and the contact events of the
//! reference's solves in that interval: active contacts, stick↔slip
//! transitions (|vt| below/above 10 ε), touch-downs and lift-offs (the
//! activation gap crossing 0, which covers MuJoCo's soft contacts), joint
//! limits reached or left, and the smallest |vt|/ε of an active contact
//! (≫ 1: all feet slide; ε is 0 under MuJoCo's soft contacts).
//!
//! `cargo run --release --example grad_diagnose -- --model ant --mode cenic:1e-4 --reference fixed:1e-5+lagged
//! [--intervals 50] [--seed S [--noise 0.2]] [--from K] [--to K] [--dump K] [--richardson] [--no-limits] [--friction MU] [--theta a,b,c,d]`
//!
//! Mode names as in tools/grad_convergence.rs (`cenic:`, `grad:`,
//! `fixed:` with suffixes `+lagged`/`+implicit` ([`FrictionLoad`], default
//! implicit), `+land`, `+stick`, `+tv=S`). The last column splits λᵀΔD_θ
//! by parameter. `--dump K` prints interval K's differing adjoint columns
//! and every solve's joint limits and contacts (φ, vn, |vt|/ε, n0, k, d, w,
//! ε) in both modes; `--richardson` replaces a fixed-step test mode's
//! interval Jacobians by 2·D(h/2) − D(h).

use cenic::diff::{DiffRollout, Linearization, Param};
use cenic::integrator::{Mode, Tape, World};
use cenic::zoo;
use std::sync::Arc;
#[path = "../examples/common/mod.rs"]
mod common;
use common::{arg, parse_grad_mode, parse_load};

const DT: f64 = 0.01;

fn norm(a: &[f64]) -> f64 {
    a.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// λᵀ D for D (nx × m) row-major.
fn left(lam: &[f64], d: &[f64], m: usize) -> Vec<f64> {
    let mut out = vec![0.0; m];
    for (r, l) in lam.iter().enumerate() {
        for j in 0..m {
            out[j] += l * d[r * m + j];
        }
    }
    out
}

fn main() {
    let shared = zoo::shared_dir().expect("shared folder");
    let name = arg("--model").unwrap_or("ant".into());
    let n: usize = arg("--intervals").and_then(|s| s.parse().ok()).unwrap_or(50);
    let mode = arg("--mode").unwrap_or("cenic:1e-4".into());
    let reference = arg("--reference").unwrap_or("fixed:1e-5+lagged".into());
    let cases = zoo::cases(&shared).expect("models load");
    let case = cases.iter().find(|c| c.name == name).expect("model");
    let mut m = (*case.model).clone();
    if std::env::args().any(|a| a == "--no-limits") {
        m.joints.iter_mut().for_each(|j| (j.range, j.limit_law) = (None, None));
    }
    if let Some(mu) = arg("--friction").and_then(|s| s.parse::<f64>().ok()) {
        m.geoms.iter_mut().for_each(|g| (g.material.mu_static, g.material.mu_dynamic) = (mu, mu));
    }
    let model = Arc::new(m);
    let (nq, nv, nu) = (model.nq, model.nv, model.nu());
    let nx = nq + nv;
    let x0: Vec<f64> = case.qpos.iter().chain(&case.qvel).copied().collect();
    // `--seed S [--noise X]`: tools/grad_events.rs's control sequence S.
    let u = match arg("--seed").and_then(|s| s.parse::<u64>().ok()) {
        Some(seed) => {
            zoo::seeded_noisy_controls(&model, seed, n, DT, arg("--noise").and_then(|s| s.parse().ok()).unwrap_or(0.2))
        }
        None => zoo::noisy_smooth_controls(&model, n, DT),
    };
    let params = vec![Param::Friction, Param::Stiffness, Param::Dissipation, Param::MassScale];
    let nominal = vec![1.0; params.len()];
    let theta: Vec<f64> = arg("--theta")
        .map(|s| s.split(',').map(|x| x.parse().expect("theta")).collect())
        .unwrap_or(vec![1.0; params.len()]);
    let np = params.len();
    let rr = DiffRollout::new(model.clone(), parse_grad_mode(&reference), DT)
        .with_params(params.clone())
        .with_friction_load(parse_load(&reference));
    let ra = DiffRollout::new(model.clone(), parse_grad_mode(&mode), DT)
        .with_params(params.clone())
        .with_friction_load(parse_load(&mode));
    let lr: Linearization = rr.linearize(&x0, &u, &nominal, n).expect("reference");
    // Adjoint of final x along the reference.
    let mut lams = vec![vec![0.0; nx]; n + 1];
    lams[n][0] = 1.0;
    for k in (0..n).rev() {
        lams[k] = left(&lams[k + 1], &lr.d_x[k * nx * nx..(k + 1) * nx * nx], nx);
    }
    // Reference tape for events.
    let mut w = World::<f64>::new(model.clone(), parse_grad_mode(&reference));
    w.sim.set_state(&x0[..nq], &x0[nq..]);
    w.tape = Some(Tape::new(nq, nv));
    let mut bounds = vec![0];
    for k in 0..n {
        for i in 0..nu {
            w.sim.ctrl[i] = u[k * nu + i];
        }
        w.advance(DT).unwrap();
        bounds.push(w.tape.as_ref().unwrap().len());
    }
    let tape = w.tape.take().unwrap();
    let mut sim = cenic::integrator::Simulator::<f64>::new(model.clone());
    println!(
        "k | rel ΔD_u | ‖λᵀΔD_x‖ | ‖λᵀD_x‖ | ‖λᵀΔD_u‖ | ‖λᵀD_u‖ | ‖λᵀΔD_θ‖ | contacts | stick↔slip | td/lo | limit on/off | min|vt|/ε | λᵀΔD_θ per θ"
    );
    let mut prev: std::collections::HashMap<[u32; 2], bool> = Default::default();
    let mut prev_limits: std::collections::HashSet<(usize, bool)> = Default::default();
    let quats: Vec<usize> = model
        .joints
        .iter()
        .filter_map(|j| match j.kind {
            cenic::model::JointKind::Free => Some(j.qpos_adr + 3),
            cenic::model::JointKind::Ball => Some(j.qpos_adr),
            _ => None,
        })
        .collect();
    let from: usize = arg("--from").and_then(|s| s.parse().ok()).unwrap_or(0);
    let to: usize = arg("--to").and_then(|s| s.parse().ok()).unwrap_or(n);
    let dump: Option<usize> = arg("--dump").and_then(|s| s.parse().ok());
    for k in 0..n {
        if k < from || k >= to {
            continue;
        }
        let xk = &lr.trajectory[k * nx..(k + 1) * nx];
        let mut la = ra.linearize(xk, &u[k * nu..(k + 1) * nu], &theta, 1).expect("test mode");
        if let (true, Mode::Fixed { dt: h }) = (std::env::args().any(|a| a == "--richardson"), &ra.mode) {
            // Global Richardson on the interval: 2·D(h/2) − D(h).
            let r2 = DiffRollout::new(model.clone(), Mode::Fixed { dt: h / 2.0 }, DT)
                .with_params(params.clone())
                .with_friction_load(parse_load(&mode));
            let l2 = r2.linearize(xk, &u[k * nu..(k + 1) * nu], &theta, 1).expect("half");
            for (a, b) in la.d_x.iter_mut().zip(&l2.d_x) {
                *a = 2.0 * b - *a;
            }
            for (a, b) in la.d_u.iter_mut().zip(&l2.d_u) {
                *a = 2.0 * b - *a;
            }
            for (a, b) in la.d_theta.iter_mut().zip(&l2.d_theta) {
                *a = 2.0 * b - *a;
            }
        }
        let lr1 = rr.linearize(xk, &u[k * nu..(k + 1) * nu], &theta, 1).expect("ref 1");
        let dxa = &la.d_x;
        let dxr = &lr1.d_x;
        let dua = &la.d_u;
        let dur = &lr1.d_u;
        let diff = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<f64>>();
        let rel = norm(&diff(dua, dur)) / norm(dur);
        let lam = &lams[k + 1];
        // Quaternion columns: only the tangent part of a perturbation of x_k is meaningful.
        let project = |mut g: Vec<f64>| {
            for a in &quats {
                let qk = &xk[*a..*a + 4];
                let dot: f64 = (0..4).map(|i| g[a + i] * qk[i]).sum::<f64>() / qk.iter().map(|x| x * x).sum::<f64>();
                for i in 0..4 {
                    g[a + i] -= dot * qk[i];
                }
            }
            g
        };
        let ex = norm(&project(left(lam, &diff(dxa, dxr), nx)));
        let gx = norm(&project(left(lam, dxr, nx)));
        let eu = norm(&left(lam, &diff(dua, dur), nu));
        let gu = norm(&left(lam, dur, nu));
        let et_vec = left(lam, &diff(&la.d_theta, &lr1.d_theta), np);
        let et = norm(&et_vec);
        if dump == Some(k) {
            let la_l = project(left(lam, dxa, nx));
            let lr_l = project(left(lam, dxr, nx));
            println!(
                "λ (nonzero): {:?}",
                lam.iter()
                    .enumerate()
                    .filter(|(_, x)| x.abs() > 1e-3)
                    .map(|(i, x)| (i, (x * 1e3).round() / 1e3))
                    .collect::<Vec<_>>()
            );
            for j in 0..nx {
                if (la_l[j] - lr_l[j]).abs() > 1e-2 {
                    println!("  col {j}: test {:.4} ref {:.4}", la_l[j], lr_l[j]);
                }
            }
            for (tag, mode_name) in [("ref", &reference), ("test", &mode)] {
                let mut w = World::<f64>::new(model.clone(), parse_grad_mode(mode_name));
                w.sim.set_state(&xk[..nq], &xk[nq..]);
                w.tape = Some(Tape::new(nq, nv));
                for i in 0..nu {
                    w.sim.ctrl[i] = u[k * nu + i];
                }
                w.advance(DT).unwrap();
                let tp = w.tape.take().unwrap();
                let mut t = 0.0;
                for i in 0..tp.len() {
                    let s = tp.solve(i);
                    sim.set_state(s.q0, s.v0);
                    sim.contacts.skin = s.skin;
                    sim.compute_geometry();
                    sim.problem.set_time_step(s.h);
                    let p = &sim.problem;
                    let mut line = format!("{tag} t={t:.5} h={:.2e}", s.h);
                    for l in &p.limits {
                        let vn = l.sign * s.v1[l.dof];
                        let kappa = s.h * l.stiffness + l.damping;
                        let arg = l.fe0 - kappa * vn;
                        if arg > 0.0 || l.fe0 > 0.0 {
                            line += &format!(
                                " L{}{}:fe0={:.2},arg={:.2}",
                                l.dof,
                                if l.sign > 0.0 { "-" } else { "+" },
                                l.fe0,
                                arg
                            );
                        }
                    }
                    for c in &p.contacts {
                        let vc = p.contact_velocity(c, s.v1);
                        let vn = c.normal.dot(vc);
                        let vt = (vc - c.normal * vn).norm();
                        line += &format!(
                            " C(phi={:.2e},vn={:.2e},vt/eps={:.1e},n0={:.2e},k={:.0},d={:.2},w={:.1},eps={:.1e})",
                            c.phi0,
                            vn,
                            vt / c.eps,
                            c.n0,
                            c.stiffness,
                            c.dissipation,
                            c.delassus,
                            c.eps
                        );
                    }
                    if i % (tp.len() / 40).max(1) == 0 || tp.len() < 60 {
                        println!("{line}");
                    }
                    t += s.h;
                }
            }
        }
        // Events in the reference's solves of interval k.
        let (mut trans, mut events, mut maxc, mut min_ratio, mut limit_events) = (0, 0, 0, f64::INFINITY, 0);
        for i in bounds[k]..bounds[k + 1] {
            let s = tape.solve(i);
            sim.set_state(s.q0, s.v0);
            sim.contacts.skin = s.skin;
            sim.compute_geometry();
            sim.problem.set_time_step(s.h);
            let mut active = 0;
            // Acting: the activation gap is negative (φ0 for the Hunt–Crossley
            // law, φ0 − margin under MuJoCo's soft contacts, whose n0 is 0).
            for c in &sim.problem.contacts {
                if c.activation_gap() >= 0.0 {
                    continue;
                }
                active += 1;
                let vc = sim.problem.contact_velocity(c, s.v1);
                let vt = vc - c.normal * c.normal.dot(vc);
                min_ratio = min_ratio.min(vt.norm() / c.eps);
            }
            maxc = maxc.max(active);
            // Transitions keyed by contact order (approximate: contact lists are ordered by geom pair).
            let keys: Vec<[u32; 2]> = s.contacts.iter().map(|c| c.geom).collect();
            let mut states: std::collections::HashMap<[u32; 2], bool> = Default::default();
            for (c, key) in sim.problem.contacts.iter().zip(&keys) {
                if c.activation_gap() >= 0.0 {
                    continue;
                }
                let vc = sim.problem.contact_velocity(c, s.v1);
                let vt = vc - c.normal * c.normal.dot(vc);
                states.insert(*key, vt.norm() < 10.0 * c.eps);
            }
            for (key, st) in &states {
                match prev.get(key) {
                    Some(p) if p != st => trans += 1,
                    None => events += 1,
                    _ => {}
                }
            }
            events += prev.keys().filter(|key| !states.contains_key(*key)).count();
            prev = states;
            // Joint limits reached or left (g0 crossing 0).
            let acting: std::collections::HashSet<(usize, bool)> =
                sim.problem.limits.iter().filter(|l| l.g0 < 0.0).map(|l| (l.dof, l.sign > 0.0)).collect();
            limit_events += acting.symmetric_difference(&prev_limits).count();
            prev_limits = acting;
        }
        println!(
            "{k:2} | {rel:.2e} | {ex:.2e} | {gx:.2e} | {eu:.2e} | {gu:.2e} | {et:.2e} | {maxc} | {trans} | {events} | {limit_events} | {min_ratio:.1e} | {}",
            et_vec.iter().map(|x| format!("{x:+.1e}")).collect::<Vec<_>>().join(" ")
        );
    }
}
