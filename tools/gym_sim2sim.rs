//! Sim-to-sim with gymnasium + MuJoCo: how many environment steps the
//! observations of cenic and MuJoCo 4.0 stay within 1e-2 of each other,
//! from MuJoCo's reset states under the same random actions
//! (`tests/fixtures/gym_sim2sim.json`, written by `scripts/gym_sim2sim.py`).
//!
//! ```sh
//! cargo run --release --example gym_sim2sim [-- --task Reacher-v5]
//! ```
//!
//! For each task and each physics (MuJoCo's own integrator and step, cenic's
//! fixed steps of the model's size, CENIC at 1e-3 and 1e-5), prints the
//! steps until parting per rollout and their mean.

#[path = "../examples/common/sim2sim.rs"]
mod sim2sim;

use cenic::rl::Physics;

fn main() {
    let only = std::env::args().skip_while(|a| a != "--task").nth(1);
    let Some(dir) = cenic::zoo::shared_dir() else {
        eprintln!("shared folder not found (set CENIC_SHARED)");
        std::process::exit(2)
    };
    let models = dir.join("models/gymnasium");
    let fixture = sim2sim::load();
    println!("steps until an observation entry differs by more than {} (per rollout; mean)", sim2sim::PART);
    for task in fixture["tasks"].as_array().unwrap() {
        let id = task["id"].as_str().unwrap();
        if only.as_deref().is_some_and(|o| o != id) {
            continue;
        }
        for (name, physics) in [
            ("mujoco", Physics::MuJoCo),
            ("fixed", Physics::Fixed),
            ("cenic 1e-3", Physics::cenic(1e-3)),
            ("cenic 1e-5", Physics::cenic(1e-5)),
        ] {
            let Some(p) = sim2sim::compare(task, &physics, &models) else {
                eprintln!("{id}: cannot build the task");
                continue;
            };
            let each: Vec<String> = p.iter().map(|x| format!("{}/{}", x.steps, x.of)).collect();
            println!("{id:<26} {name:<11} {:>7.1}   [{}]", sim2sim::mean_steps(&p), each.join(" "));
        }
    }
}
