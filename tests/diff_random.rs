//! No NaN or infinite gradient over 1000 randomised
//! short cube tosses, including resting and grazing contacts, with random
//! parameters, applied forces, both integration modes and contacts from
//! distance on or off.

mod common;

use cenic::diff::{Cfd, ControlKind, DiffRollout, Param};
use cenic::integrator::{CenicParams, Mode};
use cenic::scenes;
use common::Rng;
use std::sync::Arc;

/// A random cube state: resting on a face (at its static penetration, zero
/// or tiny velocity), grazing (a corner or edge within ±1 µm of the ground,
/// sliding or spinning), or tossed (random pose and velocity near the
/// ground).
fn random_state(rng: &mut Rng, kind: usize) -> Vec<f64> {
    let half = 0.05;
    let mut x = vec![0.0; 13];
    match kind {
        0 => {
            // Resting flat, possibly yawed, with tiny velocities.
            let yaw = rng.range(-3.0, 3.0);
            x[..7].copy_from_slice(&[
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                half - 0.37 * 9.81 / 1e5 / 4.0 * rng.range(0.0, 2.0),
                (yaw / 2.0).cos(),
                0.0,
                0.0,
                (yaw / 2.0).sin(),
            ]);
            for v in &mut x[7..13] {
                *v = if rng.uniform() < 0.5 { 0.0 } else { rng.range(-1e-3, 1e-3) };
            }
        }
        1 => {
            // Grazing: lowest corner within ±1 µm of the plane.
            let q = rng.quat();
            let rot = cenic::math::Quat::new(q[0], q[1], q[2], q[3]);
            let mut lowest = f64::INFINITY;
            for c in 0..8 {
                let p = cenic::math::Vec3::new(
                    if c & 1 == 1 { half } else { -half },
                    if c & 2 == 2 { half } else { -half },
                    if c & 4 == 4 { half } else { -half },
                );
                lowest = lowest.min(rot.rotate(p).z);
            }
            x[..3].copy_from_slice(&[0.0, 0.0, -lowest + rng.range(-1e-6, 1e-6)]);
            x[3..7].copy_from_slice(&q);
            for v in &mut x[7..10] {
                *v = rng.range(-1.0, 1.0);
            }
            x[9] = rng.range(-0.2, 0.0);
            for w in &mut x[10..13] {
                *w = rng.range(-5.0, 5.0);
            }
        }
        _ => {
            // Tossed from just above the ground.
            x[..3].copy_from_slice(&[rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(0.05, 0.15)]);
            x[3..7].copy_from_slice(&rng.quat());
            for v in &mut x[7..10] {
                *v = rng.range(-2.0, 2.0);
            }
            for w in &mut x[10..13] {
                *w = rng.range(-10.0, 10.0);
            }
        }
    }
    x
}

#[test]
fn thousand_random_tosses_have_finite_gradients() {
    let model = Arc::new(scenes::cube_toss());
    let params = vec![Param::Friction, Param::Stiffness, Param::Dissipation, Param::GeomSize(1), Param::MassScale];
    let (nsteps, dt) = (2, 0.05);
    let mut rng = Rng::new(7);
    let mut checked = 0;
    // Four configurations of 250 worlds: CENIC / fixed step × CFD off / on.
    for (c, (mode, cfd)) in [
        (Mode::ErrorControlled(CenicParams { accuracy: 1e-3, ..Default::default() }), None),
        (
            Mode::ErrorControlled(CenicParams { accuracy: 1e-3, land_contact_events: true, ..Default::default() }),
            Some(Cfd { width: 0.05, strength: 3.0 }),
        ),
        (Mode::Fixed { dt: 2e-3 }, None),
        (Mode::Fixed { dt: 5e-4 }, Some(Cfd { width: 0.02, strength: 1.0 })),
    ]
    .into_iter()
    .enumerate()
    {
        let r = DiffRollout::new(model.clone(), mode, dt)
            .with_control(ControlKind::Applied)
            .with_params(params.clone())
            .with_cfd(cfd);
        let (nworld, nx, nc, np) = (250, r.nx(), r.nc(), r.np());
        let mut x0 = vec![];
        let mut u = vec![];
        let mut theta = vec![];
        for w in 0..nworld {
            x0.extend(random_state(&mut rng, w % 3));
            u.extend((0..nsteps * nc).map(|_| rng.range(-1.0, 1.0)));
            theta.extend((0..np).map(|_| rng.range(0.5, 2.0)));
        }
        let t = std::time::Instant::now();
        let lins = r.linearize_batch(&x0, &u, &theta, nworld, nsteps).unwrap_or_else(|e| panic!("config {c}: {e}"));
        let steps: u64 = lins.iter().map(|l| l.stats.world.accepted).sum();
        let phantom: usize = lins.iter().map(|l| l.stats.phantom_pairs).sum();
        eprintln!(
            "config {c}: {nworld} worlds, {steps} steps, {phantom} phantom pairs, {:.2} s",
            t.elapsed().as_secs_f64()
        );
        if cfd.is_some() {
            assert!(phantom > 0, "config {c}: no phantom pairs exercised");
        }
        for (w, lin) in lins.iter().enumerate() {
            let all = lin.d_x.iter().chain(&lin.d_u).chain(&lin.d_theta).chain(&lin.trajectory);
            assert!(all.clone().all(|v| v.is_finite()), "config {c}, world {w}: non-finite Jacobian entry");
            let g: Vec<f64> = (0..(nsteps + 1) * nx).map(|i| ((i * 7) % 5) as f64 - 2.0).collect();
            let (gx, gu, gt) = lin.vjp(&g);
            assert!(
                gx.iter().chain(&gu).chain(&gt).all(|v| v.is_finite()),
                "config {c}, world {w}: non-finite gradient"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 1000);
}
