//! System identification on a real cube toss (ContactNets data, shared
//! folder `data/contactnets_cube_toss/toss_000.csv`): fits friction, contact
//! stiffness, dissipation and the cube's side length of `scenes::cube_toss()`
//! with burn's Adam through differentiable CENIC rollouts.
//!
//! ```text
//! cargo run --release --example sysid_cube_toss [-- path/to/toss.csv [iterations]]
//! ```
//!
//! Setup (like DiffMJX Sec. 5.1 / C.2, short segments): the toss (148 Hz)
//! is cut into overlapping segments of 8 samples; each segment is one world
//! of a batched rollout starting from the recorded pose, with velocities
//! from central differences of the recorded poses (the recorded velocity
//! columns are backward differences and noisy). The loss compares the 7
//! predicted poses of each segment with the recording: squared position
//! error in units of 5 mm plus 1 − ⟨q_sim, q_data⟩² in units of 0.05² (sign-
//! invariant orientation error), averaged. Parameters are log-multipliers
//! on the model's values (positive by construction), shared by all worlds.

use burn::optim::{AdamConfig, Optimizer};
use burn::tensor::{DType, Device, Tensor, TensorData};
use cenic::diff::{DiffRollout, Param};
use cenic::integrator::{CenicParams, Mode};
use cenic::math::Quat;
use cenic::scenes;
use std::path::PathBuf;
use std::sync::Arc;

const SEGMENT: usize = 8;
const STRIDE: usize = 4;

struct Toss {
    dt: f64,
    /// Per sample: position (3), quaternion (4).
    pose: Vec<[f64; 7]>,
}

fn load(path: &PathBuf) -> Result<Toss, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty file")?.split(',').collect();
    let col = |name: &str| header.iter().position(|h| h.trim() == name).ok_or(format!("no column '{name}'"));
    let idx = [col("t")?, col("px")?, col("py")?, col("pz")?, col("qw")?, col("qx")?, col("qy")?, col("qz")?];
    let mut t = vec![];
    let mut pose = vec![];
    for (n, line) in lines.enumerate() {
        let f: Vec<f64> = line
            .split(',')
            .map(|s| s.trim().parse::<f64>().map_err(|e| format!("line {}: {e}", n + 2)))
            .collect::<Result<_, _>>()?;
        t.push(f[idx[0]]);
        let mut p = [0.0; 7];
        for k in 0..7 {
            p[k] = f[idx[k + 1]];
        }
        pose.push(p);
    }
    if pose.len() < SEGMENT + 2 {
        return Err("too few samples".into());
    }
    Ok(Toss { dt: (t[t.len() - 1] - t[0]) / (t.len() - 1) as f64, pose })
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/contactnets_cube_toss/toss_000.csv")
    });
    let iterations: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(40);
    if !path.exists() {
        println!("SKIPPED: {} not found (pass the path of a ContactNets toss CSV)", path.display());
        return;
    }
    let toss = match load(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let dt = toss.dt;

    // Segments: start k (≥ 1 for central differences), samples k..k+SEGMENT.
    let starts: Vec<usize> = (1..toss.pose.len() - SEGMENT).step_by(STRIDE).collect();
    let nworld = starts.len();
    let mut x0 = vec![];
    let mut pos_data = vec![];
    let mut quat_data = vec![];
    for &k in &starts {
        let (a, p, b) = (toss.pose[k - 1], toss.pose[k], toss.pose[k + 1]);
        x0.extend_from_slice(&p);
        for i in 0..3 {
            x0.push((b[i] - a[i]) / (2.0 * dt));
        }
        // Body-frame angular velocity from the relative rotation q(k−1)⁻¹ q(k+1).
        let w = (Quat::from_slice(&a[3..7]).conj() * Quat::from_slice(&b[3..7])).log() * (1.0 / (2.0 * dt));
        x0.extend_from_slice(&w.to_array());
        for j in 1..SEGMENT {
            let s = toss.pose[k + j];
            pos_data.extend_from_slice(&s[..3]);
            quat_data.extend_from_slice(&s[3..7]);
        }
    }
    println!(
        "{}: {} samples at {:.1} Hz, {nworld} segments of {SEGMENT} samples",
        path.display(),
        toss.pose.len(),
        1.0 / dt
    );

    let params = vec![Param::Friction, Param::Stiffness, Param::Dissipation, Param::GeomSize(1)];
    let mode =
        Mode::ErrorControlled(CenicParams { accuracy: 1e-4, velocity_time_scale: 0.1, ..CenicParams::default() });
    let rollout = DiffRollout::new(Arc::new(scenes::cube_toss()), mode, dt).with_params(params);
    let nsteps = SEGMENT - 1;

    let device = Device::flex().autodiff();
    let opts = (&device, DType::F64);
    let x0_t = Tensor::<2>::from_data(TensorData::new(x0, [nworld, 13]), opts);
    let pos_t = Tensor::<3>::from_data(TensorData::new(pos_data, [nworld, nsteps, 3]), opts);
    let quat_t = Tensor::<3>::from_data(TensorData::new(quat_data, [nworld, nsteps, 4]), opts);
    let loss_of = |log_theta: Tensor<2>| -> Result<Tensor<1>, String> {
        let theta = log_theta.exp().repeat_dim(0, nworld);
        let traj = rollout.rollout(x0_t.clone(), None, Some(theta), nsteps).map_err(|e| e.to_string())?;
        let pos: Tensor<3> = traj.clone().slice([0..nworld, 1..SEGMENT, 0..3]);
        let quat: Tensor<3> = traj.slice([0..nworld, 1..SEGMENT, 3..7]);
        let pos_err = (pos - pos_t.clone()).powi_scalar(2).sum_dim(2).div_scalar(0.005 * 0.005);
        let dot = (quat * quat_t.clone()).sum_dim(2);
        let rot_err = dot.powi_scalar(2).neg().add_scalar(1.0).div_scalar(0.05 * 0.05);
        Ok((pos_err + rot_err).mean())
    };

    let adam = AdamConfig::new().with_beta_1(0.5).with_beta_2(0.9).with_epsilon(1e-6).build();
    let mut state = None;
    let mut log_theta = Tensor::<2>::from_data(TensorData::new(vec![0.0; 4], [1, 4]), opts);
    let report = |it: usize, loss: f64, lt: &Tensor<2>| {
        let th: Vec<f64> = lt.to_data().iter::<f64>().map(f64::exp).collect();
        let m = scenes::CUBE_TOSS_MATERIAL;
        println!(
            "iteration {it:>3}: loss {loss:8.3}  μ {:.3}  k {:.3e} N/m  d {:.2} s/m  side {:.4} m",
            m.mu_static * th[0],
            0.5 * m.stiffness * th[1],
            m.dissipation * th[2],
            0.1 * th[3]
        );
    };
    let t = std::time::Instant::now();
    let mut first = None;
    let mut last = 0.0;
    let mut best = f64::INFINITY;
    for it in 0..=iterations {
        let lt = log_theta.clone().require_grad();
        let loss = match loss_of(lt.clone()) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        };
        let value: f64 = loss.to_data().iter::<f64>().next().unwrap();
        first.get_or_insert(value);
        last = value;
        best = best.min(value);
        if it % 5 == 0 || it == iterations {
            report(it, value, &log_theta);
        }
        if it == iterations {
            break;
        }
        let grads = loss.backward();
        let g = lt.grad(&grads).expect("gradient of the parameters");
        // Learning rate on the log-multipliers, decaying linearly from 0.05 to 0.01.
        let lr = 0.05 * (1.0 - 0.8 * it as f64 / iterations as f64);
        let (next, s) = adam.step(lr, log_theta.clone(), g, state);
        state = s;
        log_theta = next.detach();
    }
    let first = first.unwrap();
    println!(
        "loss {first:.3} → {last:.3} ({:+.1}%; best {best:.3}) in {iterations} Adam steps, {:.1} s",
        100.0 * (last - first) / first,
        t.elapsed().as_secs_f64()
    );
    println!("(reported by the ContactNets authors: μ ≈ 0.18, side 0.1048 m)");
}
