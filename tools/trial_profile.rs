//! Step-size controller diagnosis: every CENIC trial (accepted and
//! rejected) on one model under the seeded smooth controls, with the
//! global error against a tighter reference run.
//!
//! ```text
//! cargo run --release --example trial_profile -- --model FILE.xml [--key NAME]
//!     [--interval S] [--intervals N] [--accuracies 1e-2,1e-3,…] [--reference A]
//!     [--cache FILE] [--csv FILE] [--land-events] [--tau S]
//! ```
//!
//! The run is the one of `work_precision_mujoco` (keyframe `--key` or the
//! reference pose at rest, `cenic::zoo::smooth_control` seed 1 held over
//! `--interval` s, default 0.01, for `--intervals`, default 200). The error
//! of a run is the largest distance of any body from its place in the
//! reference run (CENIC at `--reference`, default 1e-8; cached in
//! `--cache` when given) over the interval ends. Per accuracy it prints
//! accepted and rejected trials, the error, and a breakdown of the
//! rejections: the error ratio, the part of the error norm that was largest
//! (velocity or position), whether the set of acting constraints changed
//! between the trial's start and its midpoint, whether the trial retried a
//! rejection, how much the step had grown over the last accepted one, and
//! the observed exponent of the error estimate in h between an accepted
//! step and the rejected trial after it. `--csv` writes every trial.
//! `--land-events` turns on [`CenicParams::land_contact_events`] and
//! `--tau` sets [`CenicParams::velocity_time_scale`] (s) for the runs (not
//! the reference, which keeps the defaults).

use cenic::dynamics::{self, Data};
use cenic::integrator::{CenicParams, Mode, TrialRecord, World};
use cenic::model::Model;
use cenic::zoo::smooth_control;
use std::io::Write;
use std::sync::Arc;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

struct Run {
    xpos: Vec<f64>,
    trials: Vec<TrialRecord>,
    accepted: u64,
    rejected: u64,
    failure: Option<String>,
}

/// Settings of the runs besides the accuracy.
#[derive(Clone, Copy)]
struct Opts {
    interval: f64,
    intervals: usize,
    land: bool,
    tau: f64,
}

fn run(model: &Arc<Model>, q0: &[f64], v0: &[f64], accuracy: f64, o: Opts) -> Run {
    let (interval, intervals) = (o.interval, o.intervals);
    let p = CenicParams { accuracy, land_contact_events: o.land, velocity_time_scale: o.tau, ..Default::default() };
    let mode = Mode::ErrorControlled(p);
    let mut world = World::<f64>::new(model.clone(), mode);
    world.sim.set_state(q0, v0);
    world.record_trials = true;
    let mut scratch = Data::<f64>::new(model);
    let mut xpos = vec![];
    let mut sample = |world: &World<f64>, xpos: &mut Vec<f64>| {
        scratch.set_state(&world.sim.data.q, &world.sim.data.v);
        dynamics::kinematics(model, &mut scratch);
        for b in 1..model.bodies.len() {
            let p = scratch.xpos[b];
            xpos.extend_from_slice(&[p.x, p.y, p.z]);
        }
    };
    sample(&world, &mut xpos);
    let mut failure = None;
    for k in 0..intervals {
        let t = k as f64 * interval;
        for i in 0..model.nu() {
            world.sim.ctrl[i] = smooth_control(model, 1, i, t);
        }
        if let Err(e) = world.advance(interval) {
            failure = Some(format!("t = {:.4} s: {}", world.time(), e.describe(model)));
            break;
        }
        sample(&world, &mut xpos);
    }
    let s = world.stats;
    Run { xpos, trials: std::mem::take(&mut world.trials), accepted: s.accepted, rejected: s.rejected, failure }
}

fn quantiles(mut x: Vec<f64>) -> String {
    if x.is_empty() {
        return "-".into();
    }
    x.sort_by(f64::total_cmp);
    let q = |f: f64| x[((x.len() - 1) as f64 * f).round() as usize];
    format!("{:.2}/{:.2}/{:.2}", q(0.25), q(0.5), q(0.75))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = arg(&args, "--model").ok_or("--model FILE.xml is required")?;
    let interval: f64 = arg(&args, "--interval").map_or(Ok(0.01), |s| s.parse())?;
    let intervals: usize = arg(&args, "--intervals").map_or(Ok(200), |s| s.parse())?;
    let reference: f64 = arg(&args, "--reference").map_or(Ok(1e-8), |s| s.parse())?;
    let accuracies: Vec<f64> = arg(&args, "--accuracies")
        .unwrap_or_else(|| "1e-2,1e-3,1e-4,1e-5".into())
        .split(',')
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    let model = Arc::new(Model::from_mjcf_file(&path)?);
    let (q0, v0) = match arg(&args, "--key") {
        Some(k) => {
            let key = model.keyframe(&k).ok_or_else(|| format!("{path}: no keyframe named {k:?}"))?;
            (key.qpos.clone(), key.qvel.clone())
        }
        None => (model.qpos0.clone(), vec![0.0; model.nv]),
    };
    let cache = arg(&args, "--cache");
    let land = args.iter().any(|a| a == "--land-events");
    let tau: f64 = arg(&args, "--tau").map_or(Ok(CenicParams::default().velocity_time_scale), |s| s.parse())?;
    let opts = Opts { interval, intervals, land, tau };
    let reference_xpos: Vec<f64> = match cache.as_deref().and_then(|c| std::fs::read(c).ok()) {
        Some(bytes) => bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect(),
        None => {
            let r = run(
                &model,
                &q0,
                &v0,
                reference,
                Opts { land: false, tau: CenicParams::default().velocity_time_scale, ..opts },
            );
            if let Some(f) = &r.failure {
                return Err(format!("reference run failed at {f}").into());
            }
            if let Some(c) = &cache {
                std::fs::write(c, r.xpos.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())?;
            }
            r.xpos
        }
    };
    let mut csv = arg(&args, "--csv").map(std::fs::File::create).transpose()?;
    if let Some(f) = &mut csv {
        writeln!(f, "accuracy,t,h,h_asked,h_prev,err,dof,velocity,accepted,acting_start,acting_mid,growth")?;
    }
    println!(
        "| accuracy | accepted | rejected | trials | error (m) | rej.: err ratio q25/50/75 | velocity part | \
         acting set changed (rej. / acc.) | retry of a rejection | grown >1.2× over last accepted | \
         cut | observed exponent q25/50/75 | top dofs |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &a in &accuracies {
        let r = run(&model, &q0, &v0, a, opts);
        let n = r.xpos.len().min(reference_xpos.len());
        let error = (0..n / 3)
            .map(|i| (0..3).map(|k| (r.xpos[3 * i + k] - reference_xpos[3 * i + k]).powi(2)).sum::<f64>().sqrt())
            .fold(0.0, f64::max);
        let tr = &r.trials;
        if let Some(f) = &mut csv {
            for x in tr {
                writeln!(
                    f,
                    "{a},{},{},{},{},{},{},{},{},{},{},{}",
                    x.t,
                    x.h,
                    x.h_asked,
                    x.h_prev,
                    x.err,
                    x.dof,
                    x.velocity as u8,
                    x.accepted as u8,
                    x.acting_start,
                    x.acting_mid,
                    x.growth
                )?;
            }
        }
        let rej: Vec<usize> = (0..tr.len()).filter(|&i| !tr[i].accepted).collect();
        let acc: Vec<usize> = (0..tr.len()).filter(|&i| tr[i].accepted).collect();
        let pct = |k: usize, of: usize| if of == 0 { 0.0 } else { 100.0 * k as f64 / of as f64 };
        let changed = |i: &usize| tr[*i].acting_start != tr[*i].acting_mid;
        let velocity = rej.iter().filter(|&&i| tr[i].velocity).count();
        let ch_rej = rej.iter().filter(|i| changed(i)).count();
        let ch_acc = acc.iter().filter(|i| changed(i)).count();
        let retry = rej.iter().filter(|&&i| i > 0 && !tr[i - 1].accepted).count();
        let grown = rej.iter().filter(|&&i| tr[i].h_prev > 0.0 && tr[i].h > 1.2 * tr[i].h_prev).count();
        let cut = rej.iter().filter(|&&i| tr[i].h < tr[i].h_asked * (1.0 - 1e-9)).count();
        // Error estimate ~ C·h^k: k from an accepted step and the first trial after it,
        // where the step changed by at least 20 % and neither was cut.
        let exponents: Vec<f64> = (1..tr.len())
            .filter(|&i| {
                let (p, c) = (&tr[i - 1], &tr[i]);
                p.accepted
                    && p.err > 0.0
                    && c.err.is_finite()
                    && c.err > 0.0
                    && (c.h / p.h - 1.0).abs() > 0.2
                    && p.h >= p.h_asked * (1.0 - 1e-9)
                    && c.h >= c.h_asked * (1.0 - 1e-9)
            })
            .map(|i| (tr[i].err / tr[i - 1].err).ln() / (tr[i].h / tr[i - 1].h).ln())
            .collect();
        let mut dofs = vec![0usize; model.nv];
        for &i in &rej {
            dofs[tr[i].dof] += 1;
        }
        let mut top: Vec<(usize, usize)> = dofs.iter().copied().enumerate().filter(|x| x.1 > 0).collect();
        top.sort_by_key(|y| std::cmp::Reverse(y.1));
        let top: Vec<String> = top.iter().take(3).map(|(d, k)| format!("{d}:{k}")).collect();
        let fail = r.failure.map(|f| format!(" (failed {f})")).unwrap_or_default();
        println!(
            "| {a:.0e} | {} | {} | {} | {error:.2e}{fail} | {} | {:.0} % | {:.0} % / {:.0} % | {:.0} % | {:.0} % | {:.0} % | {} | {} |",
            r.accepted,
            r.rejected,
            r.accepted + r.rejected,
            quantiles(rej.iter().map(|&i| tr[i].err).filter(|e| e.is_finite()).collect()),
            pct(velocity, rej.len()),
            pct(ch_rej, rej.len()),
            pct(ch_acc, acc.len()),
            pct(retry, rej.len()),
            pct(grown, rej.len()),
            pct(cut, rej.len()),
            quantiles(exponents),
            top.join(" ")
        );
    }
    Ok(())
}
