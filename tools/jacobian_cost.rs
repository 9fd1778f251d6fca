//! Cost of the Jacobian pass (`DiffRollout::linearize`: the taped forward
//! pass plus the dual-number interval Jacobians) against a plain forward
//! pass (`DiffRollout::simulate`), on the gymnasium robots and the MPC
//! pusher's planning problem.
//!
//! ```text
//! RAYON_NUM_THREADS=1 cargo run --release --example jacobian_cost [-- --repeat N]
//! ```
//!
//! Cases: half_cheetah and ant under `CenicParams::for_gradients(1e-4)`,
//! 20 control intervals of 10 ms from the model pose with smooth
//! controls; the pusher task's problem (`mpc::tasks::pusher`, goal 3):
//! 10 intervals of 50 ms, 4 fixed steps of 12.5 ms each, contacts from
//! distance on, fixed pseudo-random controls. Times: mean wall time of N
//! repeats after one warm-up (one rayon thread for one core).

use cenic::diff::DiffRollout;
use cenic::integrator::{CenicParams, Mode};
use cenic::model::Model;
use cenic::mpc::tasks::Task;
use std::sync::Arc;
use std::time::Instant;

/// A timed case: name, rollout, initial state, controls, intervals.
type Case = (String, DiffRollout, Vec<f64>, Vec<f64>, usize);

fn time(repeat: usize, mut f: impl FnMut()) -> f64 {
    f();
    let t = Instant::now();
    (0..repeat).for_each(|_| f());
    t.elapsed().as_secs_f64() / repeat as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let repeat =
        args.iter().position(|a| a == "--repeat").map(|i| args[i + 1].parse().expect("--repeat N")).unwrap_or(5);
    let Some(shared) = cenic::zoo::shared_dir() else {
        eprintln!("skipping: the shared gymnasium models are not found (set CENIC_SHARED)");
        return;
    };
    let gym = shared.join("models/gymnasium");
    println!("| case | intervals | forward (ms) | linearize (ms) | ratio |");
    println!("|---|---|---|---|---|");
    let mut cases: Vec<Case> = vec![];
    for name in ["half_cheetah", "ant"] {
        let path = gym.join(format!("{name}.xml"));
        let m = Arc::new(Model::from_mjcf_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
        let n = 20;
        let r = DiffRollout::new(m.clone(), Mode::ErrorControlled(CenicParams::for_gradients(1e-4)), 0.01);
        let u: Vec<f64> = (0..n * m.nu()).map(|i| 0.5 * (0.7 * i as f64).sin()).collect();
        let x0: Vec<f64> = m.qpos0.iter().copied().chain(std::iter::repeat_n(0.0, m.nv)).collect();
        cases.push((format!("{name}, CENIC grad:1e-4"), r, x0, u, n));
    }
    let task = Task::new("pusher", &gym, 3).expect("pusher task");
    let p = &task.problem;
    let u: Vec<f64> = (0..p.horizon * p.nc()).map(|i| ((i * 37 % 11) as f64 / 5.5 - 1.0) * 1.5).collect();
    cases.push((
        "pusher MPC problem, fixed 12.5 ms, CFD".into(),
        p.rollout(Some(task.cfd)),
        task.x0.clone(),
        u,
        p.horizon,
    ));
    for (name, r, x0, u, n) in &cases {
        let fwd = time(repeat, || {
            r.simulate(x0, u, &[], *n).expect("forward");
        });
        let lin = time(repeat, || {
            r.linearize(x0, u, &[], *n).expect("linearize");
        });
        println!("| {name} | {n} | {:.2} | {:.2} | {:.1} |", 1e3 * fwd, 1e3 * lin, lin / fwd);
    }
}
