//! Gradients of articulated robots with intermittent foot contact.
//!
//! 1. The half_cheetah's control and parameter gradients through its first
//!    foot contacts converge as the CENIC accuracy tightens (1e-3, 1e-4,
//!    1e-5 against 1e-7), monotonically with the gradient preset, to a few
//!    percent at 1e-5.
//! 2. With cenic's physical contact law (the friction load is its
//!    concept), the ant's interval Jacobian over a sliding-foot interval: at 1 ms
//!    steps the exact derivative of the lagged friction load is O(1) off
//!    the derivative at 10 µs steps (its error is first order in h with a
//!    large constant, see `diff::FrictionLoad`), while the straight-through
//!    derivative of `FrictionLoad::Implicit` is within a few percent of it.
//! 3. The ant's (multi-contact) control and parameter gradients over 0.5 s
//!    on the default gradient path (`FrictionLoad::Implicit`,
//!    `CenicParams::for_gradients`) converge monotonically across 1e-3,
//!    1e-4, 1e-5, within 10 % at 1e-4.
//!
//! All read the Gymnasium models from the shared folder and skip without it.

mod common;

use cenic::diff::{DiffRollout, FrictionLoad, Param};
use cenic::integrator::{CenicParams, Mode};
use cenic::zoo;
use std::sync::Arc;

const DT: f64 = 0.01;

/// The zoo case `name`, its initial state and seeded smooth controls plus
/// noise over `n` intervals (`zoo::noisy_smooth_controls`, as tools/grad_convergence.rs).
fn setup(name: &str, n: usize) -> Option<(Arc<cenic::model::Model>, Vec<f64>, Vec<f64>)> {
    let shared = common::shared_dir()?;
    let cases = zoo::cases(&shared).expect("zoo models load");
    let case = cases.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("zoo has no {name}"));
    let model = case.model.clone();
    let u = zoo::noisy_smooth_controls(&model, n, DT);
    let x0 = case.qpos.iter().chain(&case.qvel).copied().collect();
    Some((model, x0, u))
}

/// [`setup`] with the model loaded under cenic's physical semantics.
fn setup_physical(name: &str, n: usize) -> Option<(Arc<cenic::model::Model>, Vec<f64>, Vec<f64>)> {
    let (model, x0, u) = setup(name, n)?;
    let path = common::shared_file(&format!("models/gymnasium/{name}.xml"))?;
    let physical = cenic::model::Model::from_mjcf_file_as(path, cenic::model::Semantics::Physical).unwrap();
    assert_eq!((physical.nq, physical.nv), (model.nq, model.nv));
    Some((Arc::new(physical), x0, u))
}

fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    let d = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt();
    d / b.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn cenic(accuracy: f64) -> Mode {
    Mode::ErrorControlled(CenicParams { accuracy, ..Default::default() })
}

#[test]
fn half_cheetah_gradients_converge_across_three_accuracies() {
    let n = 30;
    let Some((model, x0, u)) = setup("half_cheetah", n) else { return };
    let params = vec![Param::Friction, Param::Stiffness, Param::Dissipation, Param::MassScale];
    let theta = vec![1.0; params.len()];
    let nx = model.nq + model.nv;
    // d(root x at 0.3 s)/d(controls, parameters).
    let grad = |mode: Mode| {
        let r = DiffRollout::new(model.clone(), mode, DT).with_params(params.clone());
        let lin = r.linearize(&x0, &u, &theta, n).expect("rollout");
        let mut g = vec![0.0; (n + 1) * nx];
        g[n * nx] = 1.0;
        let (_, gu, gt) = lin.vjp(&g);
        (gu, gt)
    };
    let (ref_u, ref_t) = grad(cenic(1e-7));
    // The gradient preset (velocity-weighted error norm) converges
    // monotonically; CENIC's default norm gets within the same bounds at
    // 1e-4 and 1e-5, though not monotonically on the controls (MuJoCo's
    // soft contacts switch on with a force jump, whose timing the position
    // norm resolves more coarsely).
    for (name, preset) in [("gradient preset", true), ("default norm", false)] {
        let mut errs = vec![];
        for acc in [1e-3, 1e-4, 1e-5] {
            let mode = if preset { Mode::ErrorControlled(CenicParams::for_gradients(acc)) } else { cenic(acc) };
            let (gu, gt) = grad(mode);
            let e = (rel_err(&gu, &ref_u), rel_err(&gt, &ref_t));
            eprintln!(
                "{name}, accuracy {acc:e}: control gradient {:.2e}, parameter gradient {:.2e} off 1e-7",
                e.0, e.1
            );
            errs.push(e);
        }
        if preset {
            assert!(errs[0].0 > errs[1].0 && errs[1].0 > errs[2].0, "control gradient not converging: {errs:?}");
            assert!(errs[0].1 > errs[2].1, "parameter gradient not converging: {errs:?}");
        }
        assert!(errs[1].0 < 0.1 && errs[1].1 < 0.1, "{name}: 1e-4 not within 10 %: {errs:?}");
        assert!(errs[2].0 < 0.03 && errs[2].1 < 0.03, "{name}: 1e-5 not within 3 %: {errs:?}");
    }
}

#[test]
fn ant_implicit_friction_load_matches_fine_step_derivative_of_sliding_feet() {
    // Interval 30 of the rollout: two feet sliding at 0.2–0.4 m/s, both hip
    // limits engaged (tools/grad_diagnose.rs).
    let (k, n) = (30, 31);
    // The friction load is a concept of cenic's physical law (MuJoCo's soft
    // contacts have none): the ant with Hunt–Crossley contacts.
    let Some((model, x0, u)) = setup_physical("ant", n) else { return };
    let params = vec![Param::Friction, Param::Stiffness, Param::Dissipation, Param::MassScale];
    let theta = vec![1.0; params.len()];
    let (nq, nx, nu) = (model.nq, model.nq + model.nv, model.nu());
    let fine = DiffRollout::new(model.clone(), Mode::Fixed { dt: 1e-5 }, DT)
        .with_params(params.clone())
        .with_friction_load(FrictionLoad::Lagged);
    let traj = fine.simulate(&x0, &u[..k * nu], &theta, k).expect("forward");
    let xk = &traj[k * nx..(k + 1) * nx];
    let uk = &u[k * nu..(k + 1) * nu];
    // Interval Jacobian columns that do not depend on the quaternion's
    // parametrisation: root position, joint angles, all velocities, controls, θ.
    let jac = |r: &DiffRollout| {
        let lin = r.linearize(xk, uk, &theta, 1).expect("interval");
        let mut out = vec![];
        for row in 0..nx {
            for col in (0..3).chain(7..nq).chain(nq..nx) {
                out.push(lin.d_x[row * nx + col]);
            }
            out.extend_from_slice(&lin.d_u[row * nu..(row + 1) * nu]);
            out.extend_from_slice(&lin.d_theta[row * params.len()..(row + 1) * params.len()]);
        }
        out
    };
    let reference = jac(&fine);
    let coarse = DiffRollout::new(model.clone(), Mode::Fixed { dt: 1e-3 }, DT)
        .with_params(params.clone())
        .with_friction_load(FrictionLoad::Lagged);
    let lagged = jac(&coarse);
    let implicit = jac(&coarse.clone().with_friction_load(FrictionLoad::Implicit));
    let (e_lag, e_imp) = (rel_err(&lagged, &reference), rel_err(&implicit, &reference));
    eprintln!("1 ms interval Jacobian vs 10 µs: lagged load {e_lag:.3e}, implicit load {e_imp:.3e}");
    assert!(e_imp < 0.1, "implicit friction load {e_imp:.3e} off the 10 µs derivative");
    assert!(e_lag > 5.0 * e_imp, "lagged {e_lag:.3e} vs implicit {e_imp:.3e}: the surrogate should be much closer");
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    dot / (a.iter().map(|x| x * x).sum::<f64>().sqrt() * b.iter().map(|x| x * x).sum::<f64>().sqrt())
}

#[test]
fn ant_gradients_converge_across_three_accuracies_on_the_default_gradient_path() {
    // The ant over 0.5 s: first touch-down at 0.18 s, sliding feet and
    // stick–slip, hip limits, a leg impact at 0.36 s (up to three contacts).
    // Reference: the exact derivative (lagged friction load) at fixed 10 µs
    // steps, within 1 % of 5 µs over the same 0.5 s (BENCHMARKS.md).
    // Tested: DiffRollout's default derivative (implicit friction load) under
    // `CenicParams::for_gradients`, against the same at CENIC's defaults.
    let n = 50;
    let Some((model, x0, u)) = setup("ant", n) else { return };
    let params = vec![Param::Friction, Param::Stiffness, Param::Dissipation, Param::MassScale];
    let theta = vec![1.0; params.len()];
    let nx = model.nq + model.nv;
    let grad = |r: DiffRollout| {
        let lin = r.with_params(params.clone()).linearize(&x0, &u, &theta, n).expect("rollout");
        let mut g = vec![0.0; (n + 1) * nx];
        g[n * nx] = 1.0;
        let (_, gu, gt) = lin.vjp(&g);
        (gu, gt)
    };
    let fine = DiffRollout::new(model.clone(), Mode::Fixed { dt: 1e-5 }, DT).with_friction_load(FrictionLoad::Lagged);
    let (ref_u, ref_t) = grad(fine);
    let errs: Vec<[f64; 4]> = [1e-3, 1e-4, 1e-5]
        .iter()
        .map(|&acc| {
            let mode = Mode::ErrorControlled(CenicParams::for_gradients(acc));
            let (gu, gt) = grad(DiffRollout::new(model.clone(), mode, DT));
            let e = [rel_err(&gu, &ref_u), cosine(&gu, &ref_u), rel_err(&gt, &ref_t), cosine(&gt, &ref_t)];
            eprintln!(
                "accuracy {acc:e}: control gradient {:.2e} off (cos {:.4}), parameters {:.2e} (cos {:.4})",
                e[0], e[1], e[2], e[3]
            );
            e
        })
        .collect();
    let (plain_u, plain_t) = grad(DiffRollout::new(model.clone(), cenic(1e-4), DT));
    let plain = (rel_err(&plain_u, &ref_u), rel_err(&plain_t, &ref_t));
    eprintln!("accuracy 1e-4 with CENIC's default error norm: control {:.2e}, parameters {:.2e}", plain.0, plain.1);
    assert!(errs.windows(2).all(|w| w[0][0] > w[1][0] && w[0][2] > w[1][2]), "not monotone: {errs:?}");
    assert!(errs[1][0] < 0.1 && errs[1][2] < 0.1, "1e-4 not within 10 %: {errs:?}");
    assert!(errs[1][1] >= 0.99 && errs[1][3] >= 0.99, "1e-4 cosine below 0.99: {errs:?}");
    assert!(errs[2][0] < 0.03 && errs[2][2] < 0.03, "1e-5 not within 3 %: {errs:?}");
    assert!(plain.1 > errs[1][2], "the velocity-weighted norm should help at 1e-4: {plain:?} vs {errs:?}");
}
