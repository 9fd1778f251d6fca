//! cenic's half of the work-precision comparison with MuJoCo
//! (`scripts/mujoco_work_precision.py` drives it and runs MuJoCo's half):
//! one model, a list of settings, one run of each, single thread.
//!
//! ```text
//! cargo run --release --example work_precision_mujoco -- --model FILE.xml
//!     [--key NAME] [--interval S] [--intervals N] [--settings cenic:1e-3,fixed:0.002,…]
//!     [--traj DIR]
//! ```
//!
//! Each run starts from keyframe `--key` (else the model's reference pose at
//! rest), holds `cenic::zoo::smooth_control` (seed 1) at each interval's
//! start for `--interval` seconds (default 0.01), and advances `--intervals`
//! intervals (default 200). A setting is `cenic:A` (CENIC error control at
//! accuracy A), `cenicx:A` (the same, second order by local extrapolation,
//! `CenicParams::extrapolate`) or `fixed:H` (fixed steps of H seconds).
//!
//! Prints one CSV line per setting: `mode,parameter,cpu_s,steps,rejected,failure`.
//! `cpu_s` is the CPU time of this process (all threads; rayon runs one)
//! spent in `World::advance`, the sampling excluded. With `--traj DIR` the
//! positions of every moving body (world frame, m) at t = 0 and after each
//! interval are written to `DIR/KIND_VALUE.f64` (VALUE as given) as raw little-endian
//! f64, (intervals + 1) × (nbody − 1) × 3.

use cenic::dynamics::{self, Data};
use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::Model;
use cenic::mpc::cpu_seconds;
use cenic::zoo::smooth_control;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = arg(&args, "--model").ok_or("--model FILE.xml is required")?;
    let key = arg(&args, "--key");
    let interval: f64 = arg(&args, "--interval").map_or(Ok(0.01), |s| s.parse())?;
    let intervals: usize = arg(&args, "--intervals").map_or(Ok(200), |s| s.parse())?;
    let settings = arg(&args, "--settings").unwrap_or_else(|| "cenic:1e-3".into());
    let traj_dir = arg(&args, "--traj").map(PathBuf::from);
    rayon::ThreadPoolBuilder::new().num_threads(1).build_global().ok();

    let model = Arc::new(Model::from_mjcf_file(&path)?);
    let (q0, v0) = match &key {
        Some(k) => {
            let key = model.keyframe(k).ok_or_else(|| format!("{path}: no keyframe named {k:?}"))?;
            (key.qpos.clone(), key.qvel.clone())
        }
        None => (model.qpos0.clone(), vec![0.0; model.nv]),
    };
    if let Some(d) = &traj_dir {
        std::fs::create_dir_all(d)?;
    }
    let stdout = std::io::stdout();
    for setting in settings.split(',') {
        let (kind, value) =
            setting.split_once(':').ok_or_else(|| format!("setting {setting:?}: expected KIND:VALUE"))?;
        let raw = value;
        let value: f64 = value.parse().map_err(|_| format!("setting {setting:?}: {value:?} is not a number"))?;
        let mode = match kind {
            "cenic" => Mode::ErrorControlled(CenicParams { accuracy: value, ..Default::default() }),
            "cenicx" => Mode::ErrorControlled(CenicParams { accuracy: value, extrapolate: true, ..Default::default() }),
            "fixed" => Mode::Fixed { dt: value },
            _ => return Err(format!("setting {setting:?}: kind must be cenic, cenicx or fixed").into()),
        };
        let mut world = World::<f64>::new(model.clone(), mode);
        world.sim.set_state(&q0, &v0);
        let mut scratch = Data::<f64>::new(&model);
        let mut xpos = Vec::with_capacity((intervals + 1) * (model.bodies.len() - 1) * 3);
        let mut sample = |world: &World<f64>, xpos: &mut Vec<f64>| {
            scratch.set_state(&world.sim.data.q, &world.sim.data.v);
            dynamics::kinematics(&model, &mut scratch);
            for b in 1..model.bodies.len() {
                let p = scratch.xpos[b];
                xpos.extend_from_slice(&[p.x, p.y, p.z]);
            }
        };
        sample(&world, &mut xpos);
        let mut cpu = 0.0;
        let mut failure = String::new();
        for k in 0..intervals {
            let t = k as f64 * interval;
            for i in 0..model.nu() {
                world.sim.ctrl[i] = smooth_control(&model, 1, i, t);
            }
            let start = cpu_seconds();
            let r = world.advance(interval);
            cpu += cpu_seconds() - start;
            if let Err(e) = r {
                failure = format!("t = {:.4} s: {}", world.time(), e.describe(&model)).replace(',', ";");
                break;
            }
            sample(&world, &mut xpos);
        }
        if let Some(d) = &traj_dir {
            let bytes: Vec<u8> = xpos.iter().flat_map(|x| x.to_le_bytes()).collect();
            std::fs::write(d.join(format!("{kind}_{raw}.f64")), bytes)?;
        }
        let s = world.stats;
        writeln!(stdout.lock(), "{kind},{raw},{cpu:.6},{},{},{failure}", s.accepted, s.rejected)?;
    }
    Ok(())
}
