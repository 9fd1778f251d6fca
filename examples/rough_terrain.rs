//! Rough terrain: the gymnasium ant on the height field of
//! `examples/scenes/ant_rough_terrain.xml` (the ant included from the shared
//! folder by path) against the same ant on its flat floor, under the seeded
//! smooth controls of `cenic::zoo` for 2 s from the initial pose, single
//! thread, at accuracies 1e-2 and 1e-3 and a fixed 2 ms step: what the
//! height field costs (prism by prism GJK/EPA) in the same run.
//! `scripts/mujoco_bench.py --rough` runs MuJoCo on both with the same
//! controls at the ant's own step and integrator.
//!
//! `cargo run --release --example rough_terrain -- [--repeat N]`
//!
//! Prints, per model and mode: best-of-N wall time, real-time factor,
//! accepted and rejected steps, mean contacts per sample (every 10 ms), and
//! the rough/flat ratio of the real-time factors. Set `CENIC_SHARED` when
//! the shared folder is not `../shared`.

use cenic::collision::{Contacts, collide};
use cenic::dynamics::{self, Data};
use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::Model;
use cenic::zoo::{self, Case};
use std::path::Path;
use std::sync::Arc;
mod common;
use common::arg;

const HORIZON: f64 = 2.0;

fn modes() -> Vec<(&'static str, Mode)> {
    let cenic = |accuracy| Mode::ErrorControlled(CenicParams { accuracy, ..Default::default() });
    vec![("accuracy 1e-2", cenic(1e-2)), ("accuracy 1e-3", cenic(1e-3)), ("fixed 2 ms", Mode::Fixed { dt: 2e-3 })]
}

/// The scene, with its include of the ant pointed at `shared`.
fn scene(shared: &Path) -> Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/ant_rough_terrain.xml");
    let text = std::fs::read_to_string(&path).expect("scene file");
    let ant = shared.join("models/gymnasium/ant.xml");
    let text = text.replace("../../../shared/models/gymnasium/ant.xml", &ant.display().to_string());
    Model::from_mjcf_str_named(&text, &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"))
}

/// Mean number of contacts at the end of each 10 ms control interval, in
/// one more (untimed) run with the same controls.
fn mean_contacts(case: &Case, mode: &Mode) -> f64 {
    let model = &case.model;
    let mut world = World::<f64>::new(model.clone(), mode.clone());
    world.sim.set_state(&case.qpos, &case.qvel);
    let mut contacts = Contacts::new(model);
    let mut d = Data::<f64>::new(model);
    let n = (HORIZON / zoo::CONTROL_INTERVAL).round() as usize;
    let mut total = 0;
    for k in 0..n {
        for i in 0..model.nu() {
            world.sim.ctrl[i] = zoo::smooth_control(model, 1, i, k as f64 * zoo::CONTROL_INTERVAL);
        }
        world.advance(zoo::CONTROL_INTERVAL).expect("the timed runs passed");
        d.set_state(&world.sim.data.q, &world.sim.data.v);
        dynamics::kinematics(model, &mut d);
        collide(model, &d, &mut contacts);
        total += contacts.len();
    }
    total as f64 / n as f64
}

fn main() {
    let Some(shared) = zoo::shared_dir() else {
        eprintln!("shared folder not found (set CENIC_SHARED)");
        std::process::exit(2);
    };
    let repeat: usize = arg("--repeat").and_then(|s| s.parse().ok()).unwrap_or(3);
    let flat = Model::from_mjcf_file(shared.join("models/gymnasium/ant.xml")).expect("ant");
    let cases =
        [Case::new("ant", Arc::new(flat), None), Case::new("ant_rough_terrain", Arc::new(scene(&shared)), None)];
    println!("| model | mode | wall (s) | real-time factor | accepted | rejected | mean contacts | RTF rough / flat |");
    println!("|---|---|---|---|---|---|---|---|");
    for (label, mode) in modes() {
        let mut flat_rtf = None;
        for case in &cases {
            let mut best = f64::INFINITY;
            let mut last = None;
            for _ in 0..repeat {
                let run = zoo::run(case, &mode, Some(1), HORIZON);
                if let Some(f) = &run.failure {
                    panic!("{} {label}: {f}", case.name);
                }
                best = best.min(run.wall_seconds);
                last = Some(run);
            }
            let run = last.unwrap();
            let rtf = HORIZON / best;
            let ratio = match flat_rtf {
                None => {
                    flat_rtf = Some(rtf);
                    String::new()
                }
                Some(f) => format!("{:.2}", rtf / f),
            };
            let contacts = mean_contacts(case, &mode);
            println!(
                "| {} | {label} | {best:.4} | {rtf:.1} | {} | {} | {contacts:.1} | {ratio} |",
                case.name, run.stats.accepted, run.stats.rejected
            );
        }
    }
}
