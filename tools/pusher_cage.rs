//! Diagnosis: can the pusher's arm hold the object between the
//! fork's tines for each evaluation goal? The pose asked for is the one the
//! task's reach and cage terms (and the earlier nose term) draw the fork
//! to (`mpc::tasks::PusherCost`):
//! the crossbar's centre 7 cm behind the object's centre against the push,
//! the two tine tips 3 cm ahead of it and 0.1 m to either side (the fork
//! level), all at the object's height. Inverse kinematics by damped
//! Gauss–Newton with the joint ranges as bounds (each step a box QP,
//! `mpc::box_qp`), from 48 seeded random starts per fork orientation (the
//! fork is symmetric, so its left tine may lie on either side); the best
//! residual is printed, at the object's start and at the goal.
//!
//! ```text
//! cargo run --release --example pusher_cage -- [GOALS (default 40)]
//! ```
//!
//! A residual of a few millimetres or less: the pose is reachable. More:
//! the arm cannot cage the object there (the arm's links do not collide
//! with the object, so only the joint ranges limit it).

use cenic::mpc::tasks::{PUSHER_NOSE_AHEAD, PUSHER_REACH_BEHIND, pusher};
use cenic::mpc::{Workspace, box_qp};
use cenic::rl::EnvRng;

/// Arm joints (the first seven; the object's two slides follow).
const ARM: usize = 7;
/// Fork points: crossbar centre, left and right tine tips (m, `tips_arm` frame).
const POINTS: [[f64; 3]; 3] = [[0.0; 3], [0.1, -0.1, 0.0], [0.1, 0.1, 0.0]];

/// The best rms residual (m) over the fork points, and the joints within
/// 2 % of a limit there, for object centre `o` and push direction `d`.
fn cage(ws: &mut Workspace, q0: &[f64], tip: usize, o: [f64; 3], d: [f64; 2], rng: &mut EnvRng) -> (f64, Vec<usize>) {
    let model = ws.model().clone();
    let nq = model.nq;
    let ranges: Vec<[f64; 2]> =
        (0..ARM).map(|j| model.joints[j].range.expect("the arm's hinges are limited")).collect();
    let mut best = (f64::INFINITY, vec![]);
    for side in [-1.0, 1.0] {
        let perp = [-d[1] * side, d[0] * side];
        let at = |s: f64, t: f64| [o[0] + s * d[0] + t * perp[0], o[1] + s * d[1] + t * perp[1], o[2]];
        let targets = [at(-PUSHER_REACH_BEHIND, 0.0), at(PUSHER_NOSE_AHEAD, -0.1), at(PUSHER_NOSE_AHEAD, 0.1)];
        let residual = |ws: &mut Workspace, q: &[f64]| -> Vec<f64> {
            POINTS
                .iter()
                .zip(&targets)
                .flat_map(|(p, t)| {
                    let w = ws.point(q, tip, *p);
                    [w[0] - t[0], w[1] - t[1], w[2] - t[2]]
                })
                .collect()
        };
        for _ in 0..48 {
            let mut q = q0.to_vec();
            for (j, r) in ranges.iter().enumerate() {
                q[j] = rng.uniform(r[0], r[1]);
            }
            let mut r = residual(ws, &q);
            let mut e: f64 = r.iter().map(|x| x * x).sum();
            let mut lambda = 1e-3;
            let mut jac = vec![0.0; 3 * nq];
            for _ in 0..150 {
                // J (9 × 7) of the three points in the arm's joints.
                let mut jj = vec![0.0; 9 * ARM];
                for (i, p) in POINTS.iter().enumerate() {
                    ws.point_jacobian(&q, tip, *p, &mut jac);
                    for c in 0..3 {
                        jj[(i * 3 + c) * ARM..(i * 3 + c + 1) * ARM].copy_from_slice(&jac[c * nq..c * nq + ARM]);
                    }
                }
                let mut h = vec![0.0; ARM * ARM];
                let mut g = vec![0.0; ARM];
                for a in 0..ARM {
                    for b in 0..ARM {
                        h[a * ARM + b] = (0..9).map(|m| jj[m * ARM + a] * jj[m * ARM + b]).sum();
                    }
                    h[a * ARM + a] += lambda;
                    g[a] = (0..9).map(|m| jj[m * ARM + a] * r[m]).sum();
                }
                let lo: Vec<f64> = (0..ARM).map(|j| ranges[j][0] - q[j]).collect();
                let hi: Vec<f64> = (0..ARM).map(|j| ranges[j][1] - q[j]).collect();
                let Some(step) = box_qp(&h, &g, &lo, &hi, &[0.0; ARM]) else { break };
                let mut trial = q.clone();
                (0..ARM).for_each(|j| trial[j] = (q[j] + step.x[j]).clamp(ranges[j][0], ranges[j][1]));
                let rt = residual(ws, &trial);
                let et: f64 = rt.iter().map(|x| x * x).sum();
                if et < e {
                    (q, r, e) = (trial, rt, et);
                    lambda = (lambda * 0.3).max(1e-9);
                } else {
                    lambda *= 10.0;
                }
            }
            let rms = (e / POINTS.len() as f64).sqrt();
            if rms < best.0 {
                let limits = (0..ARM)
                    .filter(|&j| {
                        let f = (q[j] - ranges[j][0]) / (ranges[j][1] - ranges[j][0]);
                        !(0.02..=0.98).contains(&f)
                    })
                    .collect();
                best = (rms, limits);
            }
        }
    }
    best
}

fn main() {
    let goals: u64 = std::env::args().nth(1).map(|s| s.parse().expect("GOALS: a count")).unwrap_or(40);
    let Some(shared) = cenic::zoo::shared_dir() else {
        eprintln!("skipping: the shared models are not found (set CENIC_SHARED)");
        return;
    };
    let models = shared.join("models/gymnasium");
    let names = |v: &[usize], model: &cenic::model::Model| {
        v.iter()
            .map(|&j| model.joints[j].name.trim_start_matches("r_").trim_end_matches("_joint").to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "| seed | push (m) | off the shoulder→object line (°) | object from the shoulder (m) | residual at the start (mm) | at the goal (mm) | joints at a limit (start) |"
    );
    println!("|---|---|---|---|---|---|---|");
    let (mut blocked_start, mut blocked_goal) = (0, 0);
    for seed in 0..goals {
        let task = pusher(&models, seed).expect("pusher task");
        let model = task.problem.model.clone();
        let mut ws = Workspace::new(model.clone());
        let (object, tip) = (model.body_id("object").unwrap(), model.body_id("tips_arm").unwrap());
        let shoulder = model.body_id("r_shoulder_lift_link").unwrap();
        let q0 = task.x0[..model.nq].to_vec();
        let o = ws.point(&q0, object, [0.0; 3]);
        let s = ws.point(&q0, shoulder, [0.0; 3]);
        let g = task.goal;
        let push = ((g[0] - o[0]).powi(2) + (g[1] - o[1]).powi(2)).sqrt();
        let d = [(g[0] - o[0]) / push, (g[1] - o[1]) / push];
        let radial = [o[0] - s[0], o[1] - s[1]];
        let reach = (radial[0].powi(2) + radial[1].powi(2)).sqrt();
        let off = ((d[0] * radial[0] + d[1] * radial[1]) / reach).clamp(-1.0, 1.0).acos().to_degrees();
        let mut rng = EnvRng::new(seed, 1);
        let (start, limits) = cage(&mut ws, &q0, tip, o, d, &mut rng);
        let (end, _) = cage(&mut ws, &q0, tip, [g[0], g[1], o[2]], d, &mut rng);
        blocked_start += usize::from(start > 0.005);
        blocked_goal += usize::from(end > 0.005);
        println!(
            "| {seed} | {push:.2} | {off:.0} | {reach:.2} | {:.1} | {:.1} | {} |",
            1e3 * start,
            1e3 * end,
            names(&limits, &model)
        );
    }
    println!(
        "\ncaging pose out of reach (residual > 5 mm): {blocked_start} of {goals} goals at the start, {blocked_goal} at the goal"
    );
}
