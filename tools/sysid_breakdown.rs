//! Diagnostic: multi-step prediction errors of cube models on recorded
//! tosses, broken down by what the recorded cube does over the segment
//! (free flight, resting, sliding flat, impact/tumbling). Models are MJCF
//! files; every model sees the same segments and the same initial states.
//!
//! ```text
//! cargo run --release --example sysid_breakdown -- DATA_DIR A-B HORIZON MODEL.xml [MODEL.xml ...]
//! ```
//!
//! Environment switches (each applied identically to every model):
//! `LEVEL=1` levels every toss first (`Toss::level`, as `sysid eval --level`);
//! `VW=w` takes initial velocities from a least-squares line through the
//! 2w + 1 samples around the start instead of central differences (w = 1);
//! `LIFT=1` lifts an initial state that penetrates the model's box straight
//! up until it touches; `ACC=a` sets the CENIC accuracy (1e-4); `DUMP=n`
//! lists the n segments where model 2 is worse than model 1 in orientation.

use cenic::integrator::{CenicParams, Mode};
use cenic::math::{Quat, Vec3};
use cenic::sysid::{self, NX, Predictor, Toss};
use rayon::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;

/// Half-size used for classifying contact (m): the mean resting height of the tracked centre.
const HALF: f64 = 0.0512;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Free,
    Resting,
    Sliding,
    Impact,
}
const KINDS: [Kind; 4] = [Kind::Free, Kind::Resting, Kind::Sliding, Kind::Impact];

/// One segment's errors: kind, mean position error (m), mean rotation angle
/// (rad), rotation angle per step (rad), initial lowest-corner height (m).
type SegErr = (Kind, f64, f64, Vec<f64>, f64);

fn lowest_corner(t: &Toss, k: usize) -> f64 {
    lowest(&t.poses[k].pos, &t.poses[k].quat, HALF)
}

/// Height (m) of the lowest corner of a cube of half-size `half` at a pose.
fn lowest(pos: &[f64], quat: &[f64], half: f64) -> f64 {
    let r = Quat::from_array([quat[0], quat[1], quat[2], quat[3]]).to_mat3();
    let mut zmin = f64::INFINITY;
    for c in 0..8 {
        let s = |i: usize| if (c >> i) & 1 == 1 { half } else { -half };
        let z = pos[2] + (0..3).map(|i| r.row(2)[i] * s(i)).sum::<f64>();
        zmin = zmin.min(z);
    }
    zmin
}

/// Tilt (rad) of the body axis nearest to the vertical.
fn tilt(t: &Toss, k: usize) -> f64 {
    let r = Quat::from_array(t.poses[k].quat).to_mat3();
    let c = r.row(2);
    (0..3).map(|i| c[i].abs()).fold(0.0, f64::max).min(1.0).acos()
}

/// [`Toss::state`] with velocities from a least-squares line through the
/// 2w + 1 samples k − w … k + w (w shrunk to fit; w = 1: central differences).
fn state_window(t: &Toss, k: usize, w: usize) -> [f64; 13] {
    let w = w.min(k).min(t.len().saturating_sub(k + 1));
    let mut x = t.state(k);
    if w <= 1 {
        return x;
    }
    let p = |i: usize| Vec3::from_array(t.poses[i].pos);
    let q = |i: usize| Quat::from_array(t.poses[i].quat);
    let (mut v, mut r, mut s2) = (Vec3::zero(), Vec3::zero(), 0.0);
    for j in 1..=w {
        let jf = j as f64;
        v += (p(k + j) - p(k - j)) * jf;
        r += ((q(k).conj() * q(k + j)).log() - (q(k).conj() * q(k - j)).log()) * jf;
        s2 += 2.0 * jf * jf;
    }
    x[7..10].copy_from_slice(&(v * (1.0 / (s2 * t.dt))).to_array());
    x[10..13].copy_from_slice(&(r * (1.0 / (s2 * t.dt))).to_array());
    x
}

fn classify(t: &Toss, start: usize, steps: usize) -> Kind {
    let ks = start..=start + steps;
    let zmin = ks.clone().map(|k| lowest_corner(t, k)).fold(f64::INFINITY, f64::min);
    if zmin > 0.005 {
        return Kind::Free;
    }
    let speed = |k: usize| {
        let k = k.clamp(1, t.len() - 2);
        let s = t.state(k);
        let v = (s[7] * s[7] + s[8] * s[8] + s[9] * s[9]).sqrt();
        let w = (s[10] * s[10] + s[11] * s[11] + s[12] * s[12]).sqrt();
        (v, w)
    };
    let near = ks.clone().all(|k| lowest_corner(t, k) < 0.003);
    if near && ks.clone().all(|k| speed(k).0 < 0.01 && speed(k).1 < 0.2) {
        return Kind::Resting;
    }
    if near && ks.clone().all(|k| tilt(t, k) < 2f64.to_radians()) {
        return Kind::Sliding;
    }
    Kind::Impact
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: sysid_breakdown DATA_DIR A-B HORIZON MODEL.xml [MODEL.xml ...]");
        std::process::exit(2);
    }
    let mut tosses = sysid::load_dir(&PathBuf::from(&args[0]), 3).expect("tosses");
    // LEVEL: level every toss first (`Toss::level`, as `sysid eval --level`).
    if std::env::var("LEVEL").is_ok() {
        for t in &mut tosses {
            t.level().expect("level");
        }
    }
    let tosses = sysid::select(&tosses, &sysid::parse_range(&args[1]).expect("range"));
    let h: usize = args[2].parse().expect("horizon");
    let accuracy: f64 = std::env::var("ACC").ok().and_then(|s| s.parse().ok()).unwrap_or(1e-4);
    let mode = Mode::ErrorControlled(CenicParams { accuracy, ..Default::default() });
    let mut jobs = vec![];
    for (i, t) in tosses.iter().enumerate() {
        for start in 1..t.len().saturating_sub(h) {
            jobs.push((i, start, classify(t, start, h)));
        }
    }
    for k in KINDS {
        let n = jobs.iter().filter(|j| j.2 == k).count();
        println!("{k:?}: {n} segments");
    }
    let mut all_errs: Vec<Vec<SegErr>> = vec![];
    for m in &args[3..] {
        let model = cenic::Model::from_mjcf_file(PathBuf::from(m)).expect("model");
        let half = model.geoms.iter().find(|g| g.body == 1).expect("box").size[0];
        let lift = std::env::var("LIFT").is_ok();
        let vw: usize = std::env::var("VW").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
        let pred = Predictor::new(Arc::new(model), mode.clone()).expect("predictor");
        let errs: Vec<SegErr> = jobs
            .par_iter()
            .map(|&(i, start, kind)| {
                let t = &tosses[i];
                let mut x0 = state_window(t, start, vw);
                let depth = lowest(&x0[..3], &x0[3..7], half);
                if lift && depth < 0.0 {
                    x0[2] -= depth;
                }
                let x = pred.rollout_for(t).simulate(&x0, &[], &pred.theta, h).expect("predict");
                let e: Vec<(f64, f64)> = (1..=h).map(|j| sysid::pose_error(&x[j * NX..], t, start + j)).collect();
                let ori: Vec<f64> = e.iter().map(|e| e.1).collect();
                (kind, e.iter().map(|e| e.0).sum::<f64>() / h as f64, ori.iter().sum::<f64>() / h as f64, ori, depth)
            })
            .collect();
        println!("{m} (CENIC {accuracy}), horizon {h}: mean position mm / orientation deg");
        let mut line = String::new();
        for k in KINDS {
            let sel: Vec<_> = errs.iter().filter(|e| e.0 == k).collect();
            let n = sel.len().max(1) as f64;
            let p = 1e3 * sel.iter().map(|e| e.1).sum::<f64>() / n;
            let o = sel.iter().map(|e| e.2).sum::<f64>().to_degrees() / n;
            line += &format!("  {k:?} {p:.3}/{o:.3}");
        }
        let n = errs.len() as f64;
        let p = 1e3 * errs.iter().map(|e| e.1).sum::<f64>() / n;
        let o = errs.iter().map(|e| e.2).sum::<f64>().to_degrees() / n;
        println!("{line}  | all {p:.3}/{o:.3}");
        // Orientation error by predicted step, all segments.
        let by_step: Vec<String> = (0..h.min(8))
            .map(|j| format!("{:.3}", errs.iter().map(|e| e.3[j]).sum::<f64>().to_degrees() / n))
            .collect();
        println!("  orientation by step 1..: {}", by_step.join(" "));
        // Share of the total orientation error sum by kind.
        let tot: f64 = errs.iter().map(|e| e.2).sum();
        let shares: Vec<String> = KINDS
            .iter()
            .map(|k| format!("{k:?} {:.0}%", 100.0 * errs.iter().filter(|e| e.0 == *k).map(|e| e.2).sum::<f64>() / tot))
            .collect();
        println!("  share of orientation error: {}", shares.join(", "));
        // Orientation error by the initial lowest-corner height of this model's box.
        let bins = [-1.0, -0.0005, -0.0002, 0.0, 0.0002, 0.0005, 0.001, 0.002, 0.005, 1.0];
        let mut row = String::new();
        for b in bins.windows(2) {
            let sel: Vec<_> = errs.iter().filter(|e| e.4 >= b[0] && e.4 < b[1]).collect();
            let o = sel.iter().map(|e| e.2).sum::<f64>().to_degrees() / sel.len().max(1) as f64;
            row += &format!(" [{:.1},{:.1}) mm: {} {o:.3};", 1e3 * b[0], 1e3 * b[1], sel.len());
        }
        println!("  orientation by initial lowest corner:{row}");
        all_errs.push(errs);
    }
    let dump: usize = std::env::var("DUMP").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    if dump > 0 && all_errs.len() >= 2 {
        let mut idx: Vec<usize> = (0..jobs.len()).collect();
        idx.sort_by(|&a, &b| {
            let d = |i: usize| all_errs[1][i].2 - all_errs[0][i].2;
            d(b).total_cmp(&d(a))
        });
        let total: f64 = (0..jobs.len()).map(|i| all_errs[1][i].2 - all_errs[0][i].2).sum::<f64>().to_degrees();
        let top: f64 = idx[..dump].iter().map(|&i| all_errs[1][i].2 - all_errs[0][i].2).sum::<f64>().to_degrees();
        println!("sum of (model 2 - model 1) orientation: {total:.1} deg·segments; top {dump}: {top:.1}");
        for &i in idx.iter().take(dump) {
            let (ti, start, kind) = jobs[i];
            let t = &tosses[ti];
            let x = t.state(start);
            let f = |v: &[f64]| v.iter().map(|x| format!("{:.2}", x.to_degrees())).collect::<Vec<_>>().join(" ");
            println!(
                "{} start {start} {kind:?}: z {:.2} mm, lowest {:.2}/{:.2} mm, v ({:.3} {:.3} {:.3}) w ({:.2} {:.2} {:.2}); ori m1 [{}] m2 [{}]",
                t.name(),
                1e3 * x[2],
                1e3 * all_errs[0][i].4,
                1e3 * all_errs[1][i].4,
                x[7],
                x[8],
                x[9],
                x[10],
                x[11],
                x[12],
                f(&all_errs[0][i].3),
                f(&all_errs[1][i].3)
            );
        }
    }
}
