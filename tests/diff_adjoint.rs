//! The reverse pass (`Recording::vjp`) against the dense path
//! (`DiffRollout::linearize` + `Linearization::vjp`): the same
//! vector–Jacobian products to 1e-10 relative, and the same Jacobians bit
//! for bit when formed later from the recording (`Recording::linearize`,
//! `DiffRollout::linearize_recordings`), for random trajectory
//! cotangents, on the cube toss (CENIC, fixed steps, contacts from
//! distance, both friction loads, parameters) and the gymnasium
//! half_cheetah and ant (controls and parameters; MuJoCo's soft contacts
//! with and without contacts from distance, cenic's physical contacts with
//! both friction loads), and briefly every other gymnasium model (read from the shared
//! folder, skipped without it unless `CENIC_REQUIRE_SHARED=1` or
//! `CI=true`, which make a missing folder a failure).

mod common;

use cenic::diff::{Cfd, DiffRollout, FrictionLoad, Param};
use cenic::integrator::{CenicParams, Mode};
use cenic::model::Semantics;
use cenic::{scenes, zoo};
use common::Rng;
use std::sync::Arc;

/// ‖a − b‖ / ‖b‖.
fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    let d = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt();
    d / b.iter().map(|x| x * x).sum::<f64>().sqrt().max(f64::MIN_POSITIVE)
}

/// Compares both paths for three random cotangents (x̄0, ū, θ̄ each
/// non-trivial); returns the dense [x̄0, θ̄] of the first cotangent and the
/// phantom pairs of contacts from distance.
fn compare(r: &DiffRollout, x0: &[f64], u: &[f64], theta: &[f64], n: usize, what: &str) -> (Vec<f64>, usize) {
    let lin = r.linearize(x0, u, theta, n).unwrap_or_else(|e| panic!("{what}: dense path: {e}"));
    let rec = r.record(x0, u, theta, n).unwrap_or_else(|e| panic!("{what}: record: {e}"));
    assert_eq!(rec.trajectory(), &lin.trajectory[..], "{what}: the recording's trajectory differs");
    assert_eq!(rec.solves(), lin.stats.solves, "{what}: solve counts differ");
    // The Jacobians formed later from the recording's tape are the dense path's, bit for bit.
    let relin = rec.linearize().unwrap_or_else(|e| panic!("{what}: Jacobians from the tape: {e}"));
    assert!(
        relin.d_x == lin.d_x && relin.d_u == lin.d_u && relin.d_theta == lin.d_theta,
        "{what}: the Jacobians from the recording's tape differ from the dense path's"
    );
    assert_eq!(relin.stats.phantom_pairs, lin.stats.phantom_pairs, "{what}: phantom pairs differ");
    let nx = r.nx();
    let mut rng = Rng::new(0x5eed ^ n as u64);
    let mut gs = vec![];
    let mut first = vec![];
    for c in 0..3 {
        let g: Vec<f64> = (0..(n + 1) * nx).map(|_| rng.normal()).collect();
        let (ex, eu, et) = lin.vjp(&g);
        let ((ax, au, at), stats) = rec.vjp_with_stats(&g).unwrap_or_else(|e| panic!("{what}: reverse pass: {e}"));
        assert_eq!(stats.phantom_pairs, lin.stats.phantom_pairs, "{what}: phantom pairs of the two passes differ");
        for (name, a, e) in [("x0", &ax, &ex), ("u", &au, &eu), ("theta", &at, &et)] {
            assert_eq!(a.len(), e.len(), "{what}: {name} length");
            if e.is_empty() {
                continue;
            }
            assert!(e.iter().any(|x| *x != 0.0), "{what}: dense {name} gradient is zero");
            let err = rel_err(a, e);
            eprintln!("{what}, cotangent {c}: {name} relative difference {err:.2e}");
            assert!(err <= 1e-10, "{what}, cotangent {c}: {name} differs by {err:e}\nreverse {a:?}\ndense   {e:?}");
        }
        if c == 0 {
            first = ex.iter().chain(&et).copied().collect();
        }
        gs.extend(g);
    }
    // The batch entry point gives the same products.
    let recs = vec![rec.clone(), rec.clone(), rec];
    let batch = DiffRollout::vjp_batch(&recs, &gs).unwrap();
    for (w, (bx, _, _)) in batch.iter().enumerate() {
        let (ex, _, _) = lin.vjp(&gs[w * (n + 1) * nx..(w + 1) * (n + 1) * nx]);
        assert!(rel_err(bx, &ex) <= 1e-10, "{what}: batch world {w}");
    }
    (first, lin.stats.phantom_pairs)
}

/// The cases must exercise what they name: the friction loads give
/// different gradients (contacts with friction took part) and contacts
/// from distance found phantom pairs.
fn check_coverage(results: &[(FrictionLoad, bool, Vec<f64>, usize)], what: &str) {
    for (load, cfd, _, pairs) in results {
        assert_eq!(*cfd, *pairs > 0, "{what}, {load:?}, CFD {cfd}: {pairs} phantom pairs");
    }
    let grad = |l: FrictionLoad| &results.iter().find(|r| r.0 == l && !r.1).expect("case").2;
    let d = rel_err(grad(FrictionLoad::Implicit), grad(FrictionLoad::Lagged));
    assert!(d > 1e-6, "{what}: implicit and lagged friction loads give the same gradient ({d:e})");
}

fn toss_state() -> Vec<f64> {
    let m = scenes::cube_toss();
    let k = m.keyframe("toss").unwrap();
    k.qpos.iter().chain(&k.qvel).copied().collect()
}

fn cube_params() -> Vec<Param> {
    vec![Param::Friction, Param::Stiffness, Param::Dissipation, Param::MassScale, Param::GeomSize(1)]
}

#[test]
fn cube_toss_reverse_pass_equals_dense_vjp() {
    let model = Arc::new(scenes::cube_toss());
    let theta = vec![1.0; cube_params().len()];
    let mut x0 = toss_state();
    // A raw (unnormalised) quaternion exercises the normalisation's reverse.
    for q in &mut x0[3..7] {
        *q *= 1.3;
    }
    let n = 40;
    let modes = [
        ("CENIC 1e-4", Mode::ErrorControlled(CenicParams::for_gradients(1e-4))),
        ("fixed 2 ms", Mode::Fixed { dt: 0.002 }),
    ];
    for (mname, mode) in modes {
        let mut results = vec![];
        for load in [FrictionLoad::Implicit, FrictionLoad::Lagged] {
            for cfd in [None, Some(Cfd { width: 0.05, strength: 5.0 })] {
                let r = DiffRollout::new(model.clone(), mode.clone(), 0.025)
                    .with_params(cube_params())
                    .with_friction_load(load)
                    .with_cfd(cfd);
                let what = format!("cube toss, {mname}, {load:?}, CFD {}", cfd.is_some());
                let (g, pairs) = compare(&r, &x0, &[], &theta, n, &what);
                results.push((load, cfd.is_some(), g, pairs));
            }
        }
        check_coverage(&results, &format!("cube toss, {mname}"));
    }
}

/// The shared gymnasium model `name` with its zoo pose and smooth controls,
/// or `None` (skip) without the shared folder.
fn robot(name: &str, n: usize, dt: f64) -> Option<(Arc<cenic::model::Model>, Vec<f64>, Vec<f64>)> {
    let Some(shared) = common::shared_dir() else {
        let strict = std::env::var("CENIC_REQUIRE_SHARED").is_ok_and(|v| v == "1")
            || std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(!strict, "the shared gymnasium models are required (CENIC_REQUIRE_SHARED=1 or CI=true)");
        return None;
    };
    let cases = zoo::cases(&shared).expect("zoo models load");
    let case = cases.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("zoo has no {name}"));
    let u = zoo::noisy_smooth_controls(&case.model, n, dt);
    let x0 = case.qpos.iter().chain(&case.qvel).copied().collect();
    Some((case.model.clone(), x0, u))
}

/// The robot under MuJoCo's soft contacts (the gymnasium default: no
/// lagged friction load, so one load) with and without contacts from
/// distance, and under cenic's physical contacts with both friction loads.
fn robot_case(name: &str) {
    let (n, dt) = (25, 0.01);
    let Some((model, x0, u)) = robot(name, n, dt) else { return };
    let params = vec![Param::Friction, Param::Stiffness, Param::Dissipation, Param::MassScale];
    let theta: Vec<f64> = (0..params.len()).map(|i| 1.0 + 0.05 * i as f64).collect();
    let mode = Mode::ErrorControlled(CenicParams::for_gradients(1e-4));
    let rollout = |m: &Arc<cenic::model::Model>, load, cfd| {
        DiffRollout::new(m.clone(), mode.clone(), dt).with_params(params.clone()).with_friction_load(load).with_cfd(cfd)
    };
    for cfd in [None, Some(Cfd { width: 0.02, strength: 20.0 })] {
        let r = rollout(&model, FrictionLoad::Implicit, cfd);
        let (_, pairs) = compare(&r, &x0, &u, &theta, n, &format!("{name} (MuJoCo contacts), CFD {}", cfd.is_some()));
        assert_eq!(cfd.is_some(), pairs > 0, "{name}: {pairs} phantom pairs");
    }
    let path = common::shared_file(&format!("models/gymnasium/{name}.xml")).expect("model file");
    let physical = Arc::new(cenic::model::Model::from_mjcf_file_as(path, Semantics::Physical).unwrap());
    let mut results = vec![];
    for load in [FrictionLoad::Implicit, FrictionLoad::Lagged] {
        let r = rollout(&physical, load, None);
        let (g, pairs) = compare(&r, &x0, &u, &theta, n, &format!("{name} (physical contacts), {load:?}"));
        results.push((load, false, g, pairs));
    }
    check_coverage(&results, name);
}

#[test]
fn half_cheetah_reverse_pass_equals_dense_vjp() {
    robot_case("half_cheetah");
}

#[test]
fn ant_reverse_pass_equals_dense_vjp() {
    robot_case("ant");
}

#[test]
fn wrong_cotangent_length_is_named() {
    let model = Arc::new(scenes::cube_toss());
    let r = DiffRollout::new(model, Mode::Fixed { dt: 0.01 }, 0.01);
    let rec = r.record(&toss_state(), &[], &[], 3).unwrap();
    let e = rec.vjp(&[0.0; 5]).unwrap_err().to_string();
    assert!(e.contains("trajectory cotangent") && e.contains("got 5"), "{e}");
}

#[test]
fn jacobians_of_a_recorded_batch_equal_the_dense_batch() {
    let model = Arc::new(scenes::cube_toss());
    let mode = Mode::ErrorControlled(CenicParams::for_gradients(1e-4));
    let r = DiffRollout::new(model.clone(), mode.clone(), 0.025).with_params(cube_params());
    let mut x0 = toss_state();
    let mut second = toss_state();
    second[9] += 0.7; // a different throw: world 1 differs from world 0
    x0.extend(second);
    let theta: Vec<f64> = (0..2 * cube_params().len()).map(|i| 1.0 + 0.03 * i as f64).collect();
    let n = 12;
    let lins = r.linearize_batch(&x0, &[], &theta, 2, n).unwrap();
    let recs = r.record_batch(&x0, &[], &theta, 2, n).unwrap();
    let relins = DiffRollout::linearize_recordings(&recs).unwrap();
    assert_eq!(relins.len(), 2);
    assert_ne!(lins[0].d_x, lins[1].d_x, "the two worlds must differ");
    for (w, (a, b)) in relins.iter().zip(&lins).enumerate() {
        assert_eq!(a.trajectory, b.trajectory, "world {w}: trajectory");
        assert!(a.d_x == b.d_x && a.d_u == b.d_u && a.d_theta == b.d_theta, "world {w}: Jacobians differ");
    }
    // Recordings of a different map are refused, naming the world.
    let other = DiffRollout::new(model, mode, 0.025).with_params(vec![Param::Friction]);
    let alien = other.record(&toss_state(), &[], &[1.0], n).unwrap();
    let e = DiffRollout::linearize_recordings(&[recs[0].clone(), alien]).unwrap_err().to_string();
    assert!(e.contains("world 1") && e.contains("different rollout"), "{e}");
}

/// The other gymnasium models (the humanoid's multi-hinge bodies, the
/// pendulums' cart slides, the pusher's and reacher's arms, the point's
/// slides and hinge) under their own MuJoCo contacts, a short horizon each:
/// the hand-written kinematics and rigid-body rules of the reverse pass on
/// models they were not written against.
#[test]
fn every_other_gymnasium_model_reverse_pass_equals_dense_vjp() {
    for name in ["humanoid", "inverted_double_pendulum", "inverted_pendulum", "point", "pusher", "reacher"] {
        let (n, dt) = (8, 0.01);
        let Some((model, x0, u)) = robot(name, n, dt) else { return };
        let params = vec![Param::Friction, Param::MassScale];
        let theta = vec![1.0, 1.1];
        let mode = Mode::ErrorControlled(CenicParams::for_gradients(1e-4));
        let r = DiffRollout::new(model, mode, dt).with_params(params);
        compare(&r, &x0, &u, &theta, n, name);
    }
}
