//! Cost of gradients against a plain forward pass (`DiffRollout::simulate`),
//! on the gymnasium robots, the cube toss and the MPC pusher's planning
//! problem, in one run: the reverse pass (`DiffRollout::record` +
//! `Recording::vjp` of one scalar loss) and the dense path
//! (`DiffRollout::linearize`: the taped forward pass plus the dual-number
//! interval Jacobians, then `Linearization::vjp`).
//!
//! ```text
//! RAYON_NUM_THREADS=1 cargo run --release --example jacobian_cost [-- --repeat N] [--case NAME] [--no-dense] [--no-reverse]
//! ```
//!
//! `--case` keeps the cases whose name contains NAME; `--no-dense` skips
//! the dense path (for profiling the reverse pass), `--no-reverse` the
//! reverse pass; `--dump FILE` writes each case's interval Jacobians
//! (D_x, D_u, D_θ of `linearize`, little-endian `f64`, cases in table
//! order) to FILE, to compare two builds bit for bit.
//!
//! Cases: half_cheetah, ant and humanoid (zoo poses, smooth controls) under
//! `CenicParams::for_gradients(1e-4)`, 50 control intervals of 10 ms,
//! parameters friction, stiffness, dissipation and mass; the cube toss
//! (`scenes::cube_toss`, keyframe "toss") under the same preset, 100
//! intervals of 10 ms, parameters friction, stiffness and cube size; the
//! pusher task's problem (`mpc::tasks::pusher`, goal 3): 10 intervals of
//! 50 ms, 4 fixed steps of 12.5 ms each, contacts from distance on, fixed
//! pseudo-random controls. The loss is a fixed random linear function of
//! the trajectory. Times: mean wall time of N repeats after one warm-up
//! (one rayon thread for one core); the dense path also in process CPU
//! time (all threads), which is what it costs when the intervals run on
//! several threads.
//!
//! Memory: the bytes a recording keeps for the reverse pass per accepted
//! step (`Recording::tape_bytes`: the solve tape), the reverse pass's own
//! peak (`cenic::diff::rev_tape::capacity_bytes` after one pass from an
//! empty tape: one solve's recording, independent of the horizon), and the longest horizon whose recording, trajectory and
//! gradient fit in 1 GB at the measured rate.

use cenic::diff::{DiffRollout, Param, rev_tape};
use cenic::integrator::{CenicParams, Mode};
use cenic::mpc::tasks::Task;
use std::sync::Arc;
use std::time::Instant;

/// A timed case: name, rollout, initial state, controls, parameters, intervals.
type Case = (String, DiffRollout, Vec<f64>, Vec<f64>, Vec<f64>, usize);

/// Mean wall and process CPU time (s) of `repeat` calls after a warm-up.
fn time(repeat: usize, mut f: impl FnMut()) -> (f64, f64) {
    f();
    let (t, cpu) = (Instant::now(), cenic::mpc::cpu_seconds());
    (0..repeat).for_each(|_| f());
    (t.elapsed().as_secs_f64() / repeat as f64, (cenic::mpc::cpu_seconds() - cpu) / repeat as f64)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let repeat =
        args.iter().position(|a| a == "--repeat").map(|i| args[i + 1].parse().expect("--repeat N")).unwrap_or(5);
    let only = args.iter().position(|a| a == "--case").map(|i| args[i + 1].clone());
    let skip_dense = args.iter().any(|a| a == "--no-dense");
    let skip_rev = args.iter().any(|a| a == "--no-reverse");
    let dump = args.iter().position(|a| a == "--dump").map(|i| args[i + 1].clone());
    let mut dumped: Vec<u8> = vec![];
    let Some(shared) = cenic::zoo::shared_dir() else {
        eprintln!("skipping: the shared gymnasium models are not found (set CENIC_SHARED)");
        return;
    };
    let gym = shared.join("models/gymnasium");
    let grad = Mode::ErrorControlled(CenicParams::for_gradients(1e-4));
    let mut cases: Vec<Case> = vec![];
    let zoo = cenic::zoo::cases(&shared).expect("zoo models load");
    for name in ["half_cheetah", "ant", "humanoid"] {
        let case = zoo.iter().find(|c| c.name == name).expect("zoo case");
        let m = case.model.clone();
        let n = 50;
        let params = vec![Param::Friction, Param::Stiffness, Param::Dissipation, Param::MassScale];
        let theta = vec![1.0; params.len()];
        let r = DiffRollout::new(m.clone(), grad.clone(), 0.01).with_params(params);
        let u = cenic::zoo::noisy_smooth_controls(&m, n, 0.01);
        let x0: Vec<f64> = case.qpos.iter().chain(&case.qvel).copied().collect();
        cases.push((format!("{name}, CENIC grad:1e-4"), r, x0, u, theta, n));
    }
    let cube = Arc::new(cenic::scenes::cube_toss());
    let k = cube.keyframe("toss").expect("toss keyframe");
    let x0: Vec<f64> = k.qpos.iter().chain(&k.qvel).copied().collect();
    let r = DiffRollout::new(cube.clone(), grad, 0.01).with_params(vec![
        Param::Friction,
        Param::Stiffness,
        Param::GeomSize(1),
    ]);
    cases.push(("cube toss, CENIC grad:1e-4".into(), r, x0, vec![], vec![1.0; 3], 100));
    let task = Task::new("pusher", &gym, 3).expect("pusher task");
    let p = &task.problem;
    let u: Vec<f64> = (0..p.horizon * p.nc()).map(|i| ((i * 37 % 11) as f64 / 5.5 - 1.0) * 1.5).collect();
    cases.push((
        "pusher MPC problem, fixed 12.5 ms, CFD".into(),
        p.rollout(Some(task.cfd)),
        task.x0.clone(),
        u,
        vec![],
        p.horizon,
    ));
    println!(
        "| case | intervals | accepted steps | forward (ms) | reverse: record + vjp (ms) | reverse / forward | dense: linearize + vjp (ms) | dense / forward | dense / reverse | forward CPU (ms) | dense CPU (ms) | dense / forward, CPU |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut memory = vec![];
    for (name, r, x0, u, theta, n) in &cases {
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let nx = r.nx();
        // A fixed pseudo-random loss L = g · trajectory.
        let g: Vec<f64> = (0..(n + 1) * nx).map(|i| (i * 7919 % 101) as f64 / 50.0 - 1.0).collect();
        let (fwd, fwd_cpu) = time(repeat, || {
            r.simulate(x0, u, theta, *n).expect("forward");
        });
        let rev = if skip_rev {
            f64::NAN
        } else {
            time(repeat, || {
                let rec = r.record(x0, u, theta, *n).expect("record");
                rec.vjp(&g).expect("reverse pass");
            })
            .0
        };
        let (dense, dense_cpu) = if skip_dense {
            (f64::NAN, f64::NAN)
        } else {
            time(repeat, || {
                let lin = r.linearize(x0, u, theta, *n).expect("linearize");
                lin.vjp(&g);
            })
        };
        if dump.is_some() {
            let lin = r.linearize(x0, u, theta, *n).expect("linearize");
            for x in lin.d_x.iter().chain(&lin.d_u).chain(&lin.d_theta) {
                dumped.extend_from_slice(&x.to_le_bytes());
            }
        }
        let rec = r.record(x0, u, theta, *n).expect("record");
        if !skip_rev {
            rev_tape::release();
            rec.vjp(&g).expect("reverse pass");
        }
        let accepted = rec.world_stats().accepted;
        println!(
            "| {name} | {n} | {accepted} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} | {:.2} | {:.2} | {:.1} |",
            1e3 * fwd,
            1e3 * rev,
            rev / fwd,
            1e3 * dense,
            dense / fwd,
            dense / rev,
            1e3 * fwd_cpu,
            1e3 * dense_cpu,
            dense_cpu / fwd_cpu
        );
        if skip_rev {
            continue;
        }
        // Memory of the reverse pass.
        let (ux, nc, np) = (nx, r.nc(), r.np());
        let per_interval = rec.tape_bytes() as f64 / *n as f64 + 8.0 * (ux + 2 * nc) as f64;
        let work = rev_tape::capacity_bytes();
        let horizon = ((1e9 - work as f64 - 8.0 * (2 * ux + 2 * np) as f64) / per_interval).floor();
        memory.push((
            name.clone(),
            rec.tape_bytes() as f64 / accepted as f64,
            rec.solves() as f64 / accepted as f64,
            work,
            horizon,
            r.dt,
        ));
    }
    if let Some(path) = &dump {
        std::fs::write(path, &dumped).expect("write the Jacobians");
    }
    println!();
    println!(
        "| case | recorded bytes per accepted step | solves per accepted step | reverse-pass peak (bytes) | longest horizon in 1 GB (intervals) | (s) |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, per_step, solves, work, horizon, dt) in memory {
        println!("| {name} | {per_step:.0} | {solves:.2} | {work} | {horizon:.0} | {:.0} |", horizon * dt);
    }
}
