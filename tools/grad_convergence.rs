//! Gradient convergence on robots: do the gradients of a
//! rollout agree with each other as the integration tightens?
//!
//! For each model, a rollout of `--intervals` control intervals of 10 ms
//! from the model's initial pose under the seeded smooth controls of
//! `cenic::zoo` plus seeded noise, and two losses: the torso's x position
//! at the end ("final") and the mean torso x velocity over the intervals
//! ("running"). The gradient of each loss with respect to the controls
//! (all intervals), the initial state and four parameters (friction,
//! contact stiffness, dissipation and mass multipliers) comes from
//! `DiffRollout::linearize` + `Linearization::vjp` in every mode: CENIC at
//! accuracies 1e-3 … 1e-8 and fixed steps of 2 ms … 10 µs. Each gradient
//! block (controls, state, parameters) is compared with the same block of a
//! reference mode (by default the finest fixed step) by cosine similarity
//! and relative error ‖g − g_ref‖/‖g_ref‖, and the gradient's cost is
//! reported as (forward + Jacobians + vjp) / forward wall time.
//!
//! `cargo run --release --example grad_convergence -- [--models half_cheetah,ant]
//! [--intervals 50] [--modes grad:1e-3,cenic:1e-4,…,fixed:1e-5] [--reference fixed:1e-5+lagged]
//! [--land-events] [--land-stick] [--print-theta] [--horizons 10,20,…] [--csv FILE] [--no-contacts] [--no-limits] [--friction MU]`
//!
//! Modes (`examples/common`): `cenic:ACCURACY` (CENIC's defaults),
//! `grad:ACCURACY` (`CenicParams::for_gradients`: velocity errors weighed
//! over τ_v = 1 s), `fixed:STEP`; suffixes `+lagged` (the exact derivative
//! of the lagged friction load, `FrictionLoad::Lagged`) or `+implicit`
//! (its straight-through derivative through the step's implicit normal
//! impulse, `FrictionLoad::Implicit`, DiffRollout's default, also without
//! a suffix), `+land` (land touch-downs and lift-offs), `+stick` (land
//! slip→stick), `+tv=SECONDS` (the error norm's velocity time scale).
//! `--horizons` adds a table of the final-x
//! gradient at each listed horizon (in control intervals), from the same
//! rollouts, to locate where along the trajectory the gradients part;
//! with `--anchored` also the gradient chained from the mode's interval
//! Jacobians started at the reference's states (no trajectory drift).
//!
//! The last three are ablations (no contacts, no joint limits, one
//! friction coefficient for every geom) for finding what breaks convergence.

use cenic::diff::{DiffRollout, Linearization, Param};

use cenic::zoo;
use std::io::Write;
use std::time::Instant;
#[path = "../examples/common/mod.rs"]
mod common;
use common::{arg, parse_grad_mode, parse_load};

const DT: f64 = 0.01;

/// (controls, initial state, parameters) gradients of one loss.
struct Gradient {
    u: Vec<f64>,
    x0: Vec<f64>,
    theta: Vec<f64>,
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 { f64::NAN } else { dot / (na * nb) }
}

fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    let d = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt();
    d / b.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// Final-x and running-velocity losses' gradients through the interval Jacobians.
fn gradients(lin: &Linearization, torso_q: usize, torso_v: usize, nq: usize) -> [Gradient; 2] {
    let (nx, n) = (lin.nx, lin.nsteps);
    let mut g_final = vec![0.0; (n + 1) * nx];
    g_final[n * nx + torso_q] = 1.0;
    let mut g_run = vec![0.0; (n + 1) * nx];
    for k in 1..=n {
        g_run[k * nx + nq + torso_v] = 1.0 / n as f64;
    }
    [g_final, g_run].map(|g| {
        let (x0, u, theta) = lin.vjp(&g);
        Gradient { u, x0, theta }
    })
}

/// Rows of the horizon table: the final-x loss at each of `horizons`
/// (control intervals) from the same linearizations, so the first horizon
/// whose gradient disagrees locates the event that breaks convergence.
fn horizon_table(
    name: &str,
    mode: &str,
    horizons: &[usize],
    lin: &Linearization,
    lin_ref: &Linearization,
    torso_q: usize,
) -> String {
    let (nx, n) = (lin.nx, lin.nsteps);
    let mut rows = String::new();
    for &m in horizons.iter().filter(|&&m| m >= 1 && m <= n) {
        let mut g = vec![0.0; (n + 1) * nx];
        g[m * nx + torso_q] = 1.0;
        let (_, u, theta) = lin.vjp(&g);
        let (_, ur, tr) = lin_ref.vjp(&g);
        // Controls after the horizon do not act on the loss.
        let k = m * lin.nc;
        rows += &format!(
            "| {name} | {mode} | {:.2} | {:.4} | {:.2e} | {:.4} | {:.2e} |",
            m as f64 * DT,
            cosine(&u[..k], &ur[..k]),
            rel_err(&u[..k], &ur[..k]),
            cosine(&theta, &tr),
            rel_err(&theta, &tr)
        );
        if std::env::args().any(|a| a == "--print-theta") {
            rows += &format!(" dθ {theta:.4?} ref {tr:.4?} |");
        }
        rows += "\n";
    }
    rows
}

fn main() {
    let (shared, models, n) = common::sweep_args();
    let mode_names: Vec<String> = arg("--modes")
        .unwrap_or("cenic:1e-3,cenic:1e-4,cenic:1e-5,cenic:1e-6,cenic:1e-7,cenic:1e-8,fixed:2e-3,fixed:1e-3,fixed:2e-4,fixed:5e-5,fixed:1e-5".into())
        .split(',')
        .map(String::from)
        .collect();
    let reference = arg("--reference").unwrap_or("fixed:1e-5+lagged".into());
    let horizons: Vec<usize> = arg("--horizons")
        .map(|s| s.split(',').map(|x| x.parse().expect("--horizons: interval counts")).collect())
        .unwrap_or_default();
    let mut horizon_rows = vec![];
    let anchored = std::env::args().any(|a| a == "--anchored");
    let mut csv = arg("--csv").map(|p| std::fs::File::create(p).expect("csv"));
    if let Some(f) = csv.as_mut() {
        writeln!(f, "model,mode,loss,block,cosine,rel_err,cost_ratio,forward_s,jacobian_s,accepted").unwrap();
    }
    let params = vec![Param::Friction, Param::Stiffness, Param::Dissipation, Param::MassScale];
    println!(
        "| model | mode | loss | cos u | err u | cos x0 | err x0 | cos θ | err θ | cost (× forward) | steps | root x error (m) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for name in &models {
        let cases = zoo::cases(&shared).expect("models load");
        let case = cases.iter().find(|c| &c.name == name).unwrap_or_else(|| panic!("no model {name}"));
        // Ablations to find what breaks convergence.
        let mut m = (*case.model).clone();
        if std::env::args().any(|a| a == "--no-contacts") {
            m.geoms.iter_mut().for_each(|g| (g.contype, g.conaffinity) = (0, 0));
        }
        if std::env::args().any(|a| a == "--no-limits") {
            m.joints.iter_mut().for_each(|j| (j.range, j.limit_law) = (None, None));
        }
        if let Some(mu) = arg("--friction").and_then(|s| s.parse::<f64>().ok()) {
            m.geoms.iter_mut().for_each(|g| (g.material.mu_static, g.material.mu_dynamic) = (mu, mu));
        }
        let model = std::sync::Arc::new(m);
        let (nq, nu) = (model.nq, model.nu());
        // The root body's x position and x velocity (a free joint, or a root slide).
        let (torso_q, torso_v) = (0, 0);
        let x0: Vec<f64> = case.qpos.iter().chain(&case.qvel).copied().collect();
        let u = zoo::noisy_smooth_controls(&model, n, DT);
        let theta = vec![1.0; params.len()];
        let run = |mode_name: &str| -> Option<([Gradient; 2], f64, f64, u64, Linearization)> {
            let r = DiffRollout::new(model.clone(), parse_grad_mode(mode_name), DT)
                .with_params(params.clone())
                .with_friction_load(parse_load(mode_name));
            let t = Instant::now();
            r.simulate(&x0, &u, &theta, n).ok()?;
            let forward = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let lin = match r.linearize(&x0, &u, &theta, n) {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("{name} {mode_name}: {e}");
                    return None;
                }
            };
            let g = gradients(&lin, torso_q, torso_v, nq);
            let total = t.elapsed().as_secs_f64();
            Some((g, total / forward, forward, lin.stats.world.accepted, lin))
        };
        eprintln!("{name}: reference {reference} …");
        let Some((g_ref, _, _, _, lin_ref)) = run(&reference) else { continue };
        let traj_ref = &lin_ref.trajectory;
        for mode_name in &mode_names {
            let Some((g, cost, forward, steps, lin)) = run(mode_name) else { continue };
            let traj = &lin.trajectory;
            if !horizons.is_empty() {
                horizon_rows.push(horizon_table(name, mode_name, &horizons, &lin, &lin_ref, torso_q));
                if anchored {
                    // The mode's interval Jacobians taken from the reference's states:
                    // the derivative error without the trajectory's drift.
                    let r = DiffRollout::new(model.clone(), parse_grad_mode(mode_name), DT)
                        .with_params(params.clone())
                        .with_friction_load(parse_load(mode_name));
                    let nx = lin_ref.nx;
                    let mut a = lin_ref.clone();
                    let (nc, np) = (a.nc, a.np);
                    for k in 0..n {
                        let xk = &lin_ref.trajectory[k * nx..(k + 1) * nx];
                        let Ok(l) = r.linearize(xk, &u[k * nu..(k + 1) * nu], &theta, 1) else { continue };
                        a.d_x[k * nx * nx..(k + 1) * nx * nx].copy_from_slice(&l.d_x);
                        a.d_u[k * nx * nc..(k + 1) * nx * nc].copy_from_slice(&l.d_u);
                        a.d_theta[k * nx * np..(k + 1) * nx * np].copy_from_slice(&l.d_theta);
                    }
                    let tag = format!("{mode_name} anchored");
                    horizon_rows.push(horizon_table(name, &tag, &horizons, &a, &lin_ref, torso_q));
                }
            }
            // Largest deviation of the root's position coordinates from the reference's.
            let nx = nq + model.nv;
            let state_err = (0..=n).map(|k| (traj[k * nx] - traj_ref[k * nx]).abs()).fold(0.0, f64::max);
            for (li, loss) in ["final x", "mean vx"].iter().enumerate() {
                let (a, b) = (&g[li], &g_ref[li]);
                if std::env::args().any(|a| a == "--print-theta") {
                    eprintln!("{name} {mode_name} {loss}: dL/dθ {:.4?} reference {:.4?}", a.theta, b.theta);
                }
                let blocks = [("u", &a.u, &b.u), ("x0", &a.x0, &b.x0), ("theta", &a.theta, &b.theta)];
                let stats: Vec<(f64, f64)> = blocks.iter().map(|(_, x, y)| (cosine(x, y), rel_err(x, y))).collect();
                println!(
                    "| {name} | {mode_name} | {loss} | {:.4} | {:.2e} | {:.4} | {:.2e} | {:.4} | {:.2e} | {cost:.1} | {steps} | {state_err:.1e} |",
                    stats[0].0, stats[0].1, stats[1].0, stats[1].1, stats[2].0, stats[2].1
                );
                if let Some(f) = csv.as_mut() {
                    for ((block, _, _), (c, e)) in blocks.iter().zip(&stats) {
                        writeln!(
                            f,
                            "{name},{mode_name},{loss},{block},{c},{e},{cost},{forward},{},{steps}",
                            cost * forward
                        )
                        .unwrap();
                    }
                }
            }
        }
    }
    if !horizon_rows.is_empty() {
        println!("\n| model | mode | horizon (s) | cos u | err u | cos θ | err θ |");
        println!("|---|---|---|---|---|---|---|");
        horizon_rows.iter().for_each(|r| print!("{r}"));
    }
}
