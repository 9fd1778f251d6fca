//! The burn surrogate graph of a differentiable rollout — values
//! equal the simulator's, gradients equal the `f64` vector–Jacobian products
//! of the interval Jacobians, and the step Jacobians equal finite
//! differences of the same discrete map.

mod common;

use burn::tensor::{DType, Device, Tensor, TensorData};
use cenic::diff::{ControlKind, DiffRollout, FrictionLoad, GradCheckOptions, Param, gradcheck};
use cenic::integrator::{CenicParams, Mode};
use cenic::scenes;
use std::sync::Arc;

fn toss_state() -> Vec<f64> {
    let m = scenes::cube_toss();
    let k = m.keyframe("toss").unwrap();
    k.qpos.iter().chain(&k.qvel).copied().collect()
}

fn values(t: &Tensor<3>) -> Vec<f64> {
    t.to_data().iter::<f64>().collect()
}

/// Two worlds, applied-force controls and three parameters through burn
/// (f64 tensors on the flex CPU backend with autodiff): the forward values
/// are bit-identical to plain simulation and every input gradient equals
/// the reverse product computed from the interval Jacobians in f64.
#[test]
fn burn_rollout_values_and_gradients_match_the_f64_path() {
    let model = Arc::new(scenes::cube_toss());
    let mode = Mode::ErrorControlled(CenicParams { accuracy: 1e-4, ..CenicParams::default() });
    let params = vec![Param::Friction, Param::Stiffness, Param::GeomSize(1)];
    let r = DiffRollout::new(model, mode, 0.02)
        .with_control(ControlKind::Applied)
        .with_params(params)
        .with_friction_load(FrictionLoad::Lagged);
    let (nworld, nsteps, nx, nc, np) = (2, 20, r.nx(), r.nc(), r.np());
    let mut x0 = toss_state();
    let mut second = toss_state();
    second[2] = 0.2;
    second[7] = -0.5;
    x0.extend_from_slice(&second);
    let u: Vec<f64> = (0..nworld * nsteps * nc).map(|i| 0.3 * ((i * 7 % 11) as f64 / 11.0 - 0.5)).collect();
    let theta = vec![1.0, 1.1, 0.9, 0.8, 1.0, 1.05];

    let device = Device::flex().autodiff();
    let opts = (&device, DType::F64);
    let x0_t = Tensor::<2>::from_data(TensorData::new(x0.clone(), [nworld, nx]), opts).require_grad();
    let u_t = Tensor::<3>::from_data(TensorData::new(u.clone(), [nworld, nsteps, nc]), opts).require_grad();
    let th_t = Tensor::<2>::from_data(TensorData::new(theta.clone(), [nworld, np]), opts).require_grad();
    let traj = r.rollout(x0_t.clone(), Some(u_t.clone()), Some(th_t.clone()), nsteps).unwrap();
    assert_eq!(traj.dims(), [nworld, nsteps + 1, nx]);

    // Forward values: exactly the plain simulation, world by world.
    let tv = values(&traj);
    for w in 0..nworld {
        let plain = r
            .simulate(
                &x0[w * nx..(w + 1) * nx],
                &u[w * nsteps * nc..(w + 1) * nsteps * nc],
                &theta[w * np..(w + 1) * np],
                nsteps,
            )
            .unwrap();
        let got = &tv[w * (nsteps + 1) * nx..(w + 1) * (nsteps + 1) * nx];
        assert!(plain.iter().zip(got).all(|(a, b)| a.to_bits() == b.to_bits()), "world {w}: values differ");
    }

    // A loss on positions along the trajectory and the final velocity.
    let weights: Vec<f64> = (0..nworld * (nsteps + 1) * nx).map(|i| ((i * 13 % 17) as f64 - 8.0) / 8.0).collect();
    let wt = Tensor::<3>::from_data(TensorData::new(weights.clone(), [nworld, nsteps + 1, nx]), opts);
    let loss = (traj * wt).sum();
    let grads = loss.backward();
    let gx: Vec<f64> = x0_t.grad(&grads).unwrap().to_data().iter::<f64>().collect();
    let gu: Vec<f64> = u_t.grad(&grads).unwrap().to_data().iter::<f64>().collect();
    let gt: Vec<f64> = th_t.grad(&grads).unwrap().to_data().iter::<f64>().collect();

    let lins = r.linearize_batch(&x0, &u, &theta, nworld, nsteps).unwrap();
    for (w, lin) in lins.iter().enumerate() {
        let g = &weights[w * (nsteps + 1) * nx..(w + 1) * (nsteps + 1) * nx];
        let (ex, eu, et) = lin.vjp(g);
        let close = |a: &[f64], b: &[f64], what: &str| {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert!((x - y).abs() <= 1e-10 * (1.0 + y.abs()), "world {w} {what}[{i}]: burn {x} vs vjp {y}");
            }
        };
        close(&gx[w * nx..(w + 1) * nx], &ex, "x0");
        close(&gu[w * nsteps * nc..(w + 1) * nsteps * nc], &eu, "u");
        close(&gt[w * np..(w + 1) * np], &et, "theta");
    }
}

/// In fixed-step mode the rollout is a fixed discrete map; its Jacobian
/// (initial state, applied forces, friction, stiffness, dissipation, mass
/// and cube size) matches central differences to 1e-4 relative (to 1% of
/// the largest entry for small entries) through the
/// first impact of the cube toss.
#[test]
fn fixed_step_jacobian_matches_finite_differences() {
    let model = Arc::new(scenes::cube_toss());
    let params = vec![Param::Friction, Param::Stiffness, Param::Dissipation, Param::GeomSize(1), Param::MassScale];
    let r = DiffRollout::new(model, Mode::Fixed { dt: 1e-3 }, 0.02)
        .with_control(ControlKind::Applied)
        .with_params(params)
        .with_friction_load(FrictionLoad::Lagged);
    let (n, nx, nc) = (12, r.nx(), r.nc());
    let x0 = toss_state();
    let u: Vec<f64> = (0..n * nc).map(|i| 0.1 * ((i % 5) as f64 - 2.0)).collect();
    let th = r.nominal_params();
    let lin = r.linearize(&x0, &u, &th, n).unwrap();
    assert!(lin.stats.solves == 240);
    let mut z = x0.clone();
    z.extend_from_slice(&u);
    z.extend_from_slice(&th);
    for out in [0, 2, 4, 7, 11] {
        let mut g = vec![0.0; (n + 1) * nx];
        g[n * nx + out] = 1.0;
        let (gx, gu, gt) = lin.vjp(&g);
        let grad: Vec<f64> = gx.iter().chain(&gu).chain(&gt).copied().collect();
        let f = |z: &[f64]| r.simulate(&z[..nx], &z[nx..nx + n * nc], &z[nx + n * nc..], n).unwrap()[n * nx + out];
        let floor = 1e-2 * grad.iter().fold(0.0f64, |m, g| m.max(g.abs()));
        let rep = gradcheck(f, &z, &grad, &GradCheckOptions { rel_step: 1e-7, floor, ..Default::default() });
        assert!(rep.max_rel_error() < 1e-4, "output {out}:\n{rep}");
    }
}
