//! `GpuBatch` (the whole GPU step: multibody stages, contacts, ICF build
//! and Newton solve, position update, CENIC error control with a clock per
//! world) against the CPU f32 path (`CpuBatch<f32>` / `World<f32>`), and its
//! batch behaviour: contact overflow reported per world, bit-identical
//! runs, NaN worlds flagged while the others finish.
//!
//! The contacts come from the GPU collision kernels (the whole step in
//! WGSL); the per-step parity also runs with the CPU's collision on the
//! GPU's geom poses (`CollisionBackend::Host`), which checks the solve and
//! integration stages on exactly the CPU's contacts.
//!
//! Tolerances:
//! - Fixed steps from identical states (`TOL_STEP_Q`, `TOL_STEP_V`), one
//!   after the other along the CPU's 200-step trajectory: every stage
//!   matches its CPU twin to a few f32 ulps (`gpu_parity_dynamics.rs`,
//!   `gpu_parity_icf.rs`) and each Newton solve stops within
//!   1e-6·max(1, ‖Dr‖) of its own minimiser (or at the rounding floor),
//!   i.e. each velocity coordinate only to ~1e-6·‖Dr‖/√M_ii: for the
//!   clutter's small cubes (I ≈ 2.7e-4 kg·m², ‖Dr‖ ≈ 10) that is ~6e-4 rad/s,
//!   and positions, h·v later, ~1e-6 m. Measured (printed): cube toss
//!   q ≤ 6e-8, v ≤ 1e-6; clutter q ≤ 4e-7, v ≤ 5e-4. The bounds 1e-5 m/rad
//!   and 1e-2 m/s (rad/s) leave ≥ 20× margin and fail on a wrong term (a
//!   missing friction or damping impulse changes v by ≥ 0.1 m/s in a
//!   contact step).
//!   The same bounds hold for one step from each of 64 different states
//!   along the cube toss and the clutter runs (measured q ≤ 1.4e-7,
//!   v ≤ 1.2e-4).
//! - Free-running cube toss (`TOL_FREE_CUBE`): one tumbling body, 0.5 s with
//!   impacts and a slide, separates by ≤ 2.5e-5 (measured); bound 5e-4.
//!   Clutter falling into the bin is not compared free-running: a
//!   difference of 1e-6 m decides whether a body falling at 4 m/s touches
//!   down in one step or the next, after which the runs differ by the whole
//!   impact (measured: 3e-6 m after 140 steps, then 5 m/s velocity jumps):
//!   discrete-time contact, not a kernel error.
//! - Free-running clutter pile (`TOL_PILE_RATIO`): 200 steps from the
//!   settled pile, compared against how far the f32 CPU path itself drifts
//!   from f64 on the same run (see the test).
//! - Error-controlled step sizes (`TOL_STEPS`): both paths take the same
//!   decisions from error estimates that agree to ~1e-6 in flight (h to
//!   ~4e-7). Through the impact the estimates (differences of nearly equal
//!   f32 states, through a stiff contact) agree to a few 1e-3, and h, which
//!   grows as err^(−½), to ≤ 4e-3 over the first 50 steps (measured,
//!   printed). The bound 2e-2 fails on any different decision: a rejection
//!   (h·≤0.9·…), the hysteresis band (20%), the impact bound or the clamps,
//!   or a wrong error norm or step-size rule.

#[macro_use]
mod common;

use common::gpu::context;

use cenic::batch::{Batch, CpuBatch, WorldParams, WorldStatus};
use cenic::gpu::{CollisionBackend, GpuBatch, GpuBatchOptions, GpuContext, GpuError, Layout};
use cenic::icf::MaterialScale;
use cenic::integrator::{CenicParams, Mode, World};
use cenic::model::Model;
use cenic::scenes;
use common::Rng;
use std::sync::Arc;

const TOL_STEP_Q: f64 = 1e-5;
const TOL_STEP_V: f64 = 1e-2;
const TOL_FREE_CUBE: f64 = 5e-4;
const RATIO_FREE: f64 = 10.0;
const TOL_STEPS: f64 = 2e-2;
const TOL_PILE_RATIO: f64 = 0.5;

fn cube_toss() -> Arc<Model> {
    Arc::new(scenes::cube_toss())
}

fn clutter() -> Arc<Model> {
    Arc::new(scenes::clutter(20, scenes::CUBE_TOSS_MATERIAL))
}

/// The same initial states, controls and parameters in both batches:
/// keyframe `key` (if any) with world-dependent velocity perturbations, and
/// per-world parameters for world 1.
fn setup(model: &Model, batches: &mut [&mut dyn Batch], key: Option<&str>, nworld: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    for w in 0..nworld {
        let (mut q, mut v) = match key.and_then(|k| model.keyframe(k)) {
            Some(k) => (k.qpos.clone(), k.qvel.clone()),
            None => (model.qpos0.clone(), vec![0.0; model.nv]),
        };
        for x in v.iter_mut() {
            *x += 0.2 * rng.normal() * (w > 0) as u8 as f64;
        }
        q[0] += 0.01 * w as f64;
        let params = if w == 1 {
            WorldParams {
                mass_scale: 1.3,
                materials: MaterialScale { stiffness: 0.5, dissipation: 2.0, mu_static: 1.5, mu_dynamic: 1.2 },
            }
        } else {
            WorldParams::default()
        };
        for b in batches.iter_mut() {
            if let Some(k) = key {
                b.reset_to_keyframe(w, k).unwrap();
            }
            b.set_state(w, &q, &v).unwrap();
            b.set_params(w, params).unwrap();
        }
    }
}

fn qpos(b: &dyn Batch) -> Vec<f64> {
    let mut q = vec![0.0; b.nworld() * b.model().nq];
    b.qpos(&mut q);
    q
}

fn qvel(b: &dyn Batch) -> Vec<f64> {
    let mut v = vec![0.0; b.nworld() * b.model().nv];
    b.qvel(&mut v);
    v
}

/// Runs `steps` fixed steps of `dt` on the GPU and on the CPU (f32) and
/// returns the largest position and velocity differences over the
/// trajectory. With `from_identical_states`, both batches restart every
/// step from the CPU's state (per-step parity along the CPU trajectory);
/// otherwise each runs freely from the common initial state.
fn fixed_step_parity(
    model: Arc<Model>,
    key: Option<&str>,
    nworld: usize,
    dt: f64,
    steps: usize,
    from_identical_states: bool,
    collision: CollisionBackend,
) -> (f64, f64) {
    let ctx = context().unwrap();
    let mode = Mode::Fixed { dt };
    let options = GpuBatchOptions { collision, ..Default::default() };
    let mut gpu = GpuBatch::with_options(ctx, model.clone(), nworld, mode.clone(), options).unwrap();
    let mut cpu = CpuBatch::<f32>::new(model.clone(), nworld, mode);
    setup(&model, &mut [&mut gpu, &mut cpu], key, nworld, 7);
    let (nq, nv) = (model.nq, model.nv);
    let (mut worst_q, mut worst_v): (f64, f64) = (0.0, 0.0);
    let max_diff = |a: Vec<f64>, b: Vec<f64>| a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
    for _ in 0..steps {
        if from_identical_states {
            let (q, v) = (qpos(&cpu), qvel(&cpu));
            for w in 0..nworld {
                for b in [&mut gpu as &mut dyn Batch, &mut cpu] {
                    b.set_state(w, &q[w * nq..(w + 1) * nq], &v[w * nv..(w + 1) * nv]).unwrap();
                }
            }
        }
        gpu.advance(dt).unwrap();
        cpu.advance(dt).unwrap();
        let dq = max_diff(qpos(&gpu), qpos(&cpu));
        let dv = max_diff(qvel(&gpu), qvel(&cpu));
        assert!(dq.is_finite() && dv.is_finite(), "non-finite GPU state");
        worst_q = worst_q.max(dq);
        worst_v = worst_v.max(dv);
    }
    for w in 0..nworld {
        assert_eq!(gpu.status(w), WorldStatus::Ok, "world {w}");
        assert_eq!(cpu.status(w), WorldStatus::Ok, "world {w}");
        let (g, c) = (gpu.stats(w), cpu.stats(w));
        assert_eq!(g.accepted, c.accepted, "world {w}: steps");
        assert!((gpu.times()[w] - cpu.times()[w]).abs() < 1e-9, "world {w}: time");
        assert_eq!(g.contact_overflow, 0);
    }
    let contacts: usize = (0..nworld).map(|w| cpu.world(w).sim.contacts.len()).sum();
    eprintln!(
        "{}: {nworld} worlds, {steps} fixed steps of {dt} s ({}, {collision:?} collision): \
         max |q_gpu − q_cpu| = {worst_q:.3e}, max |v_gpu − v_cpu| = {worst_v:.3e} ({contacts} contacts at the end)",
        model.name,
        if from_identical_states { "each from the CPU's state" } else { "free running" }
    );
    (worst_q, worst_v)
}

/// How far two CPU f32 runs of `fixed_step_parity`'s free-running setup
/// separate when one starts with every velocity scaled by 1 + 2^-20 (a few
/// f32 roundings): the trajectory's own sensitivity to rounding, the
/// yardstick for GPU − CPU differences that no kernel error causes (FMA
/// contraction and the drivers' division and square root round
/// differently from the CPU).
fn rounding_spread(model: Arc<Model>, key: Option<&str>, nworld: usize, dt: f64, steps: usize) -> f64 {
    let mode = Mode::Fixed { dt };
    let mut a = CpuBatch::<f32>::new(model.clone(), nworld, mode.clone());
    let mut b = CpuBatch::<f32>::new(model.clone(), nworld, mode);
    setup(&model, &mut [&mut a, &mut b], key, nworld, 7);
    let (q, v) = (qpos(&b), qvel(&b));
    let (nq, nv) = (model.nq, model.nv);
    for w in 0..nworld {
        let vp: Vec<f64> = v[w * nv..(w + 1) * nv].iter().map(|x| x * (1.0 + 2f64.powi(-20))).collect();
        b.set_state(w, &q[w * nq..(w + 1) * nq], &vp).unwrap();
    }
    let mut worst: f64 = 0.0;
    for _ in 0..steps {
        a.advance(dt).unwrap();
        b.advance(dt).unwrap();
        worst = worst.max(qpos(&a).iter().zip(&qpos(&b)).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max));
    }
    worst
}

#[test]
fn fixed_step_cube_toss_matches_cpu_f32() {
    let _ctx = gpu_or_skip!();
    // 200 steps of 2.5 ms: flight, the first impacts and the slide; the
    // contacts from the GPU collision and (the solve stages alone) from the CPU's.
    for collision in [CollisionBackend::Gpu, CollisionBackend::Host] {
        let (dq, dv) = fixed_step_parity(cube_toss(), Some("toss"), 4, 2.5e-3, 200, true, collision);
        assert!(dq <= TOL_STEP_Q && dv <= TOL_STEP_V, "cube toss steps differ by {dq:e} (q), {dv:e} (v)");
    }
    let (dq, _) = fixed_step_parity(cube_toss(), Some("toss"), 4, 2.5e-3, 200, false, CollisionBackend::Gpu);
    let spread = rounding_spread(cube_toss(), Some("toss"), 4, 2.5e-3, 200);
    eprintln!("cube toss, free running: CPU f32 against itself with velocities × (1 + 2^-20): {spread:.3e}");
    assert!(
        dq <= TOL_FREE_CUBE.max(RATIO_FREE * spread),
        "cube toss trajectories differ by {dq:e} (CPU f32 rounding spread {spread:.1e})"
    );
}

#[test]
fn fixed_step_clutter_matches_cpu_f32() {
    let _ctx = gpu_or_skip!();
    // 200 steps of 2 ms: the lower objects land and pile up, the top ones
    // are still falling (at up to 4 m/s).
    for collision in [CollisionBackend::Gpu, CollisionBackend::Host] {
        let (dq, dv) = fixed_step_parity(clutter(), None, 2, 2e-3, 200, true, collision);
        assert!(dq <= TOL_STEP_Q && dv <= TOL_STEP_V, "clutter steps differ by {dq:e} (q), {dv:e} (v)");
    }
}

/// Free-running clutter from the settled pile (1 s of CPU f64 at accuracy
/// 1e-3, then world 1 nudged): 200 fixed steps of 2 ms on the GPU, on the
/// CPU in f32 and on the CPU in f64, all from the same state. A pile with
/// stick–slip amplifies rounding: the f32 CPU path itself leaves the f64
/// one by 7e-4 m within 20 steps and 8 cm by step 200 (measured). The GPU
/// must track its f32 twin far more closely than f32 tracks f64: within the
/// per-step bounds for the first 20 steps, then within `TOL_PILE_RATIO`
/// of the f32–f64 separation (measured: 0.085 in q, 0.06 in v).
#[test]
fn free_running_clutter_pile_matches_cpu_f32() {
    let ctx = gpu_or_skip!();
    let model = clutter();
    let mut settle = CpuBatch::<f64>::new(model.clone(), 1, Mode::ErrorControlled(CenicParams::default()));
    settle.advance(1.0).unwrap();
    let (q0, v0) = (qpos(&settle), qvel(&settle));
    let mode = Mode::Fixed { dt: 2e-3 };
    let nworld = 2;
    let mut gpu = GpuBatch::new(ctx, model.clone(), nworld, mode.clone()).unwrap();
    let mut cpu = CpuBatch::<f32>::new(model.clone(), nworld, mode.clone());
    let mut cpu64 = CpuBatch::<f64>::new(model.clone(), nworld, mode);
    for w in 0..nworld {
        // World 1 is nudged (0.05 m/s, rad/s on every coordinate) so that it moves.
        let v: Vec<f64> = v0.iter().map(|x| x + 0.05 * w as f64).collect();
        for b in [&mut gpu as &mut dyn Batch, &mut cpu, &mut cpu64] {
            b.set_state(w, &q0, &v).unwrap();
        }
    }
    let max_diff = |a: Vec<f64>, b: Vec<f64>| a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
    let (mut gpu_q, mut gpu_v, mut f64_q, mut f64_v): (f64, f64, f64, f64) = (0.0, 0.0, 0.0, 0.0);
    for k in 0..200 {
        gpu.advance(2e-3).unwrap();
        cpu.advance(2e-3).unwrap();
        cpu64.advance(2e-3).unwrap();
        let (dq, dv) = (max_diff(qpos(&gpu), qpos(&cpu)), max_diff(qvel(&gpu), qvel(&cpu)));
        assert!(dq.is_finite() && dv.is_finite(), "step {k}: non-finite GPU state");
        if k < 20 {
            assert!(dq <= TOL_STEP_Q && dv <= TOL_STEP_V, "step {k}: GPU and CPU f32 differ by {dq:e} (q), {dv:e} (v)");
        }
        gpu_q = gpu_q.max(dq);
        gpu_v = gpu_v.max(dv);
        f64_q = f64_q.max(max_diff(qpos(&cpu64), qpos(&cpu)));
        f64_v = f64_v.max(max_diff(qvel(&cpu64), qvel(&cpu)));
    }
    let contacts: usize = (0..nworld).map(|w| cpu.world(w).sim.contacts.len()).sum();
    eprintln!(
        "clutter pile, free running, 200 steps of 2 ms ({contacts} contacts at the end): \
         GPU vs CPU f32: {gpu_q:.3e} (q), {gpu_v:.3e} (v); CPU f64 vs CPU f32: {f64_q:.3e} (q), {f64_v:.3e} (v)"
    );
    assert!(contacts > 40, "the pile should be in contact ({contacts} contacts)");
    assert!(
        gpu_q <= TOL_PILE_RATIO * f64_q && gpu_v <= TOL_PILE_RATIO * f64_v,
        "GPU left CPU f32 by {gpu_q:e} (q), {gpu_v:e} (v); f32 left f64 by {f64_q:e}, {f64_v:e}"
    );
}

/// Per-step parity on 64 worlds with different states: snapshots along a
/// CPU f32 run (every `every` steps of `dt`), each world stepped `steps`
/// times by both batches from the CPU's state.
fn per_step_parity_64(model: Arc<Model>, key: Option<&str>, dt: f64, every: usize, steps: usize) -> (f64, f64) {
    const NWORLD: usize = 64;
    let ctx = context().unwrap();
    let mode = Mode::Fixed { dt };
    let (nq, nv) = (model.nq, model.nv);
    let mut reference = CpuBatch::<f32>::new(model.clone(), 1, mode.clone());
    if let Some(k) = key {
        reference.reset_to_keyframe(0, k).unwrap();
    }
    let mut snaps = vec![];
    for _ in 0..NWORLD {
        reference.advance(dt * every as f64).unwrap();
        snaps.push((qpos(&reference), qvel(&reference)));
    }
    let mut gpu = GpuBatch::new(ctx, model.clone(), NWORLD, mode.clone()).unwrap();
    let mut cpu = CpuBatch::<f32>::new(model.clone(), NWORLD, mode);
    for (w, (q, v)) in snaps.iter().enumerate() {
        cpu.set_state(w, q, v).unwrap();
    }
    let max_diff = |a: Vec<f64>, b: Vec<f64>| a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
    let (mut worst_q, mut worst_v): (f64, f64) = (0.0, 0.0);
    let (mut contacts, mut in_contact) = (0, 0);
    for _ in 0..steps {
        let (q, v) = (qpos(&cpu), qvel(&cpu));
        for w in 0..NWORLD {
            gpu.set_state(w, &q[w * nq..(w + 1) * nq], &v[w * nv..(w + 1) * nv]).unwrap();
        }
        gpu.advance(dt).unwrap();
        cpu.advance(dt).unwrap();
        contacts += (0..NWORLD).map(|w| cpu.world(w).sim.contacts.len()).sum::<usize>();
        in_contact += (0..NWORLD).filter(|&w| !cpu.world(w).sim.contacts.is_empty()).count();
        worst_q = worst_q.max(max_diff(qpos(&gpu), qpos(&cpu)));
        worst_v = worst_v.max(max_diff(qvel(&gpu), qvel(&cpu)));
    }
    for w in 0..NWORLD {
        assert_eq!(gpu.status(w), WorldStatus::Ok, "world {w}");
    }
    assert!(
        in_contact * 4 >= NWORLD * steps,
        "{}: too few worlds in contact ({in_contact}) to test the contact stages",
        model.name
    );
    eprintln!(
        "{}: {NWORLD} worlds at different states, {steps} steps of {dt} s each from the CPU's state ({contacts} contacts, {in_contact} world-steps in contact): \
         max |q_gpu − q_cpu| = {worst_q:.3e}, max |v_gpu − v_cpu| = {worst_v:.3e}",
        model.name
    );
    assert!(worst_q.is_finite() && worst_v.is_finite());
    (worst_q, worst_v)
}

#[test]
fn per_step_parity_on_64_worlds_at_different_states() {
    let _ctx = gpu_or_skip!();
    // Cube toss: 64 states 3 steps apart over 0.48 s (flight, impacts, slide).
    let (dq, dv) = per_step_parity_64(cube_toss(), Some("toss"), 2.5e-3, 3, 2);
    assert!(dq <= TOL_STEP_Q && dv <= TOL_STEP_V, "cube toss steps differ by {dq:e} (q), {dv:e} (v)");
    // Clutter: 64 states 3 steps apart over 0.38 s (landing and piling up).
    let (dq, dv) = per_step_parity_64(clutter(), None, 2e-3, 3, 1);
    assert!(dq <= TOL_STEP_Q && dv <= TOL_STEP_V, "clutter steps differ by {dq:e} (q), {dv:e} (v)");
}

#[test]
fn error_controlled_step_sizes_match_cpu_f32() {
    let ctx = gpu_or_skip!();
    let model = cube_toss();
    let mode = Mode::ErrorControlled(CenicParams::default());
    let t_end = 0.4;
    let mut cpu = World::<f32>::new(model.clone(), mode.clone());
    cpu.sim.reset_to_keyframe("toss").unwrap();
    cpu.record_steps = true;
    cpu.advance(t_end).unwrap();
    let options = GpuBatchOptions { record_steps: 256, ..Default::default() };
    let mut gpu = GpuBatch::with_options(ctx, model, 2, mode, options).unwrap();
    gpu.reset_to_keyframe(0, "toss").unwrap();
    gpu.reset_to_keyframe(1, "toss").unwrap();
    gpu.advance(t_end).unwrap();
    let steps = gpu.step_records(0).unwrap();
    assert!(cpu.steps.len() >= 50 && steps.len() >= 50, "fewer than 50 steps: {} / {}", cpu.steps.len(), steps.len());
    let mut worst: f64 = 0.0;
    for (k, (g, c)) in steps.iter().zip(&cpu.steps).take(50).enumerate() {
        let rel = (g.1 - c.h).abs() / c.h;
        assert!(
            rel <= TOL_STEPS,
            "step {k}: GPU h = {:.6e} s at t = {:.6} s, CPU h = {:.6e} s at t = {:.6} s",
            g.1,
            g.0,
            c.h,
            c.t
        );
        assert_eq!(g.3, c.contacts, "step {k}: contacts at the start");
        worst = worst.max(rel);
    }
    assert_eq!(gpu.step_records(1).unwrap(), steps, "identical worlds took different steps");
    let first_contact = cpu.steps.iter().position(|s| s.contacts > 0).unwrap();
    eprintln!(
        "first 50 accepted steps (the first contact at step {first_contact}): largest relative difference of h \
         {worst:.2e}; h from {:.2e} to {:.2e} s",
        cpu.steps[..50].iter().map(|s| s.h).fold(f64::INFINITY, f64::min),
        cpu.steps[..50].iter().map(|s| s.h).fold(0.0, f64::max)
    );
    assert!(first_contact < 50, "the first 50 steps should include the impact");
}

#[test]
fn contact_overflow_is_reported_and_isolated() {
    let ctx = gpu_or_skip!();
    let model = cube_toss();
    let nworld = 6;
    let options = || GpuBatchOptions { contact_capacity: Some(2), ..Default::default() };
    let mode = Mode::Fixed { dt: 2e-3 };
    // Worlds in flight, except (in the first batch) world 3 resting flat on
    // the ground with four corner contacts, two more than fit.
    let flying = [0.0, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0];
    let resting = [0.0, 0.0, 0.0499, 1.0, 0.0, 0.0, 0.0];
    let run = |overflowing: bool| {
        let mut b = GpuBatch::with_options(ctx.clone(), model.clone(), nworld, mode.clone(), options()).unwrap();
        for w in 0..nworld {
            let q = if overflowing && w == 3 { resting } else { flying };
            b.set_state(w, &q, &[0.1 * w as f64, 0.0, 0.0, 0.0, 0.2, 0.0]).unwrap();
        }
        b.advance(0.04).unwrap();
        b
    };
    let with = run(true);
    let without = run(false);
    let report = with.overflowing_worlds();
    assert_eq!(report.len(), 1, "overflow report {report:?}");
    assert_eq!(report[0].0, 3);
    // Four corners on the ground at the start, two fit: at least one per step.
    assert!(report[0].1 >= 20, "world 3 overflowed only {} times", report[0].1);
    assert!(without.overflowing_worlds().is_empty());
    let (qa, qb, va, vb) = (qpos(&with), qpos(&without), qvel(&with), qvel(&without));
    let (nq, nv) = (model.nq, model.nv);
    for w in (0..nworld).filter(|&w| w != 3) {
        assert_eq!(with.stats(w).contact_overflow, 0, "world {w}");
        assert_eq!(qa[w * nq..(w + 1) * nq], qb[w * nq..(w + 1) * nq], "world {w}: q changed");
        assert_eq!(va[w * nv..(w + 1) * nv], vb[w * nv..(w + 1) * nv], "world {w}: v changed");
        assert_eq!(with.stats(w), without.stats(w), "world {w}: statistics changed");
    }
    eprintln!("world 3: {} contacts beyond the capacity of {}", report[0].1, with.contact_capacity());
}

/// The GPU's `set_state` leaves a world without a last step, as the CPU's
/// does (`regression.rs`, `set_state_forgets_the_last_steps_acceleration`):
/// a batch that ran elsewhere and a fresh one step alike from the same set
/// state, bit for bit, Newton iterations included (the last step's
/// acceleration would otherwise warm-start the next solve).
#[test]
fn set_state_forgets_the_last_step_on_the_gpu() {
    let ctx = gpu_or_skip!();
    let model = clutter();
    let mode = Mode::Fixed { dt: 1e-3 };
    let mut ran = GpuBatch::new(ctx.clone(), model.clone(), 1, mode.clone()).unwrap();
    ran.advance(0.2).unwrap();
    let (q, v) = (qpos(&ran), qvel(&ran));
    ran.advance(0.01).unwrap();
    let mut fresh = GpuBatch::new(ctx, model, 1, mode).unwrap();
    let mut newton = vec![];
    for b in [&mut ran, &mut fresh] {
        b.set_state(0, &q, &v).unwrap();
        let before = b.stats(0).newton_iterations;
        b.advance(5e-3).unwrap();
        assert_eq!(b.status(0), WorldStatus::Ok);
        newton.push(b.stats(0).newton_iterations - before);
    }
    assert_eq!(qpos(&ran), qpos(&fresh), "positions after 5 steps from the same set state");
    assert_eq!(qvel(&ran), qvel(&fresh), "velocities after 5 steps from the same set state");
    assert_eq!(newton[0], newton[1], "Newton iterations from the same set state");
}

#[test]
fn runs_of_1000_worlds_are_bit_identical() {
    let ctx = gpu_or_skip!();
    let model = cube_toss();
    let nworld = 1000;
    let run = || {
        let mode = Mode::ErrorControlled(CenicParams::default());
        let mut b = GpuBatch::new(ctx.clone(), model.clone(), nworld, mode).unwrap();
        let mut rng = Rng::new(11);
        for w in 0..nworld {
            b.reset_to_keyframe(w, "toss").unwrap();
            let k = model.keyframe("toss").unwrap();
            let v: Vec<f64> = k.qvel.iter().map(|x| x + 0.5 * rng.normal()).collect();
            b.set_state(w, &k.qpos, &v).unwrap();
        }
        b.advance(0.1).unwrap();
        b.advance(0.1).unwrap();
        b
    };
    let (a, b) = (run(), run());
    let bits = |x: Vec<f64>| x.into_iter().map(f64::to_bits).collect::<Vec<_>>();
    assert_eq!(bits(qpos(&a)), bits(qpos(&b)), "positions differ between runs");
    assert_eq!(bits(qvel(&a)), bits(qvel(&b)), "velocities differ between runs");
    assert_eq!(bits(a.times()), bits(b.times()));
    let mut steps = 0;
    for w in 0..nworld {
        assert_eq!(a.stats(w), b.stats(w), "world {w}: statistics differ");
        assert_eq!(a.status(w), WorldStatus::Ok);
        assert!((a.times()[w] - 0.2).abs() < 1e-9);
        steps += a.stats(w).accepted;
    }
    let distinct = (0..nworld).map(|w| a.stats(w).accepted).collect::<std::collections::BTreeSet<_>>().len();
    eprintln!(
        "{nworld} worlds: {steps} accepted steps in {} iterations, {distinct} distinct step counts",
        a.iterations()
    );
    assert!(distinct > 1, "every world took the same steps: the clocks are not per world");
}

#[test]
fn nan_world_is_flagged_and_the_others_finish() {
    let ctx = gpu_or_skip!();
    let model = cube_toss();
    let nworld = 8;
    for mode in [Mode::Fixed { dt: 2e-3 }, Mode::ErrorControlled(CenicParams::default())] {
        let run = |poison: bool| {
            let mut b = GpuBatch::new(ctx.clone(), model.clone(), nworld, mode.clone()).unwrap();
            for w in 0..nworld {
                b.reset_to_keyframe(w, "toss").unwrap();
            }
            b.advance(0.05).unwrap();
            if poison {
                let k = model.keyframe("toss").unwrap();
                let mut v = k.qvel.clone();
                v[2] = f64::NAN;
                b.set_state(5, &k.qpos, &v).unwrap();
            }
            b.advance(0.25).unwrap();
            b
        };
        let (bad, good) = (run(true), run(false));
        match bad.status(5) {
            WorldStatus::Failed { time, reason } => {
                assert!((time - 0.05).abs() < 1e-9, "failed at {time}");
                assert_eq!(reason, "non-finite state (v)");
            }
            s => panic!("{mode:?}: NaN world not flagged: {s:?}"),
        }
        let (qa, qb) = (qpos(&bad), qpos(&good));
        let nq = model.nq;
        for w in (0..nworld).filter(|&w| w != 5) {
            assert_eq!(bad.status(w), WorldStatus::Ok, "world {w}");
            assert!((bad.times()[w] - 0.3).abs() < 1e-9, "world {w} did not finish");
            assert_eq!(qa[w * nq..(w + 1) * nq], qb[w * nq..(w + 1) * nq], "world {w} changed");
        }
        assert!((bad.times()[5] - 0.05).abs() < 1e-9, "the failed world kept running");
        // A later advance leaves it frozen, a reset revives it.
        let mut bad = bad;
        bad.advance(0.01).unwrap();
        assert!(matches!(bad.status(5), WorldStatus::Failed { .. }));
        bad.reset_to_keyframe(5, "toss").unwrap();
        bad.advance(0.01).unwrap();
        assert_eq!(bad.status(5), WorldStatus::Ok);
    }
}

/// Actuated model: servo targets, target velocities and motor inputs
/// through `set_ctrl` / `set_target_velocity`, in error-controlled mode.
#[test]
fn actuated_model_matches_cpu_f32() {
    let _ctx = gpu_or_skip!();
    let ctx = context().unwrap();
    let model = Arc::new(common::icf::scene());
    let nworld = 3;
    let mode = Mode::ErrorControlled(CenicParams { accuracy: 1e-3, ..CenicParams::default() });
    let mut gpu = GpuBatch::new(ctx, model.clone(), nworld, mode.clone()).unwrap();
    let mut cpu = CpuBatch::<f32>::new(model.clone(), nworld, mode);
    for w in 0..nworld {
        let ctrl = [0.3 * w as f64 - 0.2, 0.5];
        let vref = [0.1, -0.2 * w as f64];
        for b in [&mut gpu as &mut dyn Batch, &mut cpu] {
            b.set_ctrl(w, &ctrl).unwrap();
            b.set_target_velocity(w, &vref).unwrap();
        }
    }
    gpu.advance(0.3).unwrap();
    cpu.advance(0.3).unwrap();
    let d = qpos(&gpu).iter().zip(qpos(&cpu)).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    for w in 0..nworld {
        let (g, c) = (gpu.stats(w), cpu.stats(w));
        eprintln!("world {w}: GPU {} steps ({} rejected), CPU {} ({})", g.accepted, g.rejected, c.accepted, c.rejected);
        assert_eq!(gpu.status(w), WorldStatus::Ok);
        assert!(g.accepted.abs_diff(c.accepted) <= 2, "world {w}: step counts {} vs {}", g.accepted, c.accepted);
    }
    eprintln!("servo arm + box: max |q_gpu − q_cpu| after 0.3 s = {d:.3e}");
    assert!(d <= 1e-3, "actuated trajectories differ by {d:e}");
    // The servo moved the arm towards its targets.
    let q = qpos(&gpu);
    let nq = model.nq;
    assert!((q[2 * nq + 7] - 0.4).abs() < 0.1, "servo 1 did not track: {}", q[2 * nq + 7]);
}

#[test]
fn bad_arguments_are_errors() {
    let ctx = gpu_or_skip!();
    let model = cube_toss();
    let mut b = GpuBatch::new(ctx.clone(), model.clone(), 2, Mode::Fixed { dt: 1e-3 }).unwrap();
    assert!(b.set_state(2, &[0.0; 7], &[0.0; 6]).is_err());
    assert!(b.set_state(0, &[0.0; 6], &[0.0; 6]).is_err());
    assert!(b.set_ctrl(0, &[1.0]).is_err());
    assert!(b.reset_to_keyframe(0, "nope").is_err());
    assert!(b.step_records(5).is_err());
    // An option the GPU does not implement is refused, not ignored.
    let events = Mode::ErrorControlled(CenicParams { land_contact_events: true, ..CenicParams::default() });
    match GpuBatch::new(ctx, model, 2, events) {
        Err(GpuError::Unsupported(m)) => assert!(m.contains("land_contact_events"), "{m}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("land_contact_events accepted on the GPU"),
    }
}

/// Two identical GPU batches of `n` cube-toss worlds (`setup` with `seed`),
/// 0.3 s into the toss, under error control.
fn tossed_pair(
    ctx: &Arc<GpuContext>,
    model: &Arc<Model>,
    n: usize,
    options: GpuBatchOptions,
    seed: u64,
) -> (GpuBatch, GpuBatch) {
    let mode = Mode::ErrorControlled(CenicParams::default());
    let mut a = GpuBatch::with_options(ctx.clone(), model.clone(), n, mode.clone(), options.clone()).unwrap();
    let mut b = GpuBatch::with_options(ctx.clone(), model.clone(), n, mode, options).unwrap();
    setup(model, &mut [&mut a, &mut b], Some("toss"), n, seed);
    a.advance(0.3).unwrap();
    b.advance(0.3).unwrap();
    (a, b)
}

/// `rounds` times: a and b hold bit-identical q, v, clocks, statuses and
/// statistics, then both advance 0.05 s.
fn advance_alike(a: &mut GpuBatch, b: &mut GpuBatch, rounds: usize, what: &str) {
    let bits = |x: Vec<f64>| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
    for round in 0..rounds {
        assert_eq!(bits(qpos(a)), bits(qpos(b)), "{what} round {round}: q");
        assert_eq!(bits(qvel(a)), bits(qvel(b)), "{what} round {round}: v");
        assert_eq!(bits(a.times()), bits(b.times()), "{what} round {round}: times");
        for w in 0..a.nworld() {
            assert_eq!(a.status(w), b.status(w));
            assert_eq!(a.stats(w), b.stats(w), "{what} round {round}, world {w}");
        }
        a.advance(0.05).unwrap();
        b.advance(0.05).unwrap();
    }
}

/// `reset_worlds_all` (whole fields at once) leaves the GPU batch exactly
/// as `reset_world` of each world does: states, clocks, statuses and
/// statistics, and the steps that follow, bit for bit.
#[test]
fn bulk_reset_equals_per_world_resets() {
    let ctx = gpu_or_skip!();
    let model = cube_toss();
    let n = 6;
    let (mut a, mut b) = tossed_pair(&ctx, &model, n, GpuBatchOptions::default(), 3);
    let (nq, nv) = (model.nq, model.nv);
    let mut rng = Rng::new(9);
    let k = model.keyframe("toss").unwrap();
    let mut q = Vec::new();
    let mut v = Vec::new();
    for _ in 0..n {
        // An unnormalised quaternion, as a caller may pass.
        let mut qw = k.qpos.clone();
        qw[3] *= 1.3;
        q.extend(qw);
        v.extend(k.qvel.iter().map(|x| x + 0.5 * rng.normal()));
    }
    a.reset_worlds_all(&q, &v).unwrap();
    for w in 0..n {
        b.reset_world(w, &q[w * nq..(w + 1) * nq], &v[w * nv..(w + 1) * nv]).unwrap();
    }
    advance_alike(&mut a, &mut b, 2, "bulk");
    assert!(a.stats(0).accepted > 0);
    assert!(a.reset_worlds_all(&q[nq..], &v).is_err(), "a short q is refused");
}

/// Masked resets (one upload and one `cenic_reset_worlds` launch, RL
/// autoresets) leave every world bit for bit as per-world resets do, the
/// unmasked ones untouched, in both layouts; and the state then advances
/// identically.
#[test]
fn masked_resets_equal_per_world_resets() {
    let ctx = gpu_or_skip!();
    let model = cube_toss();
    let n = 7;
    for layout in [Layout::FieldMajor, Layout::WorldMajor] {
        let (mut a, mut b) = tossed_pair(&ctx, &model, n, GpuBatchOptions { layout, ..Default::default() }, 5);
        let (nq, nv) = (model.nq, model.nv);
        let mut rng = Rng::new(11);
        let k = model.keyframe("toss").unwrap();
        // Rows of unmasked worlds are garbage: they must not be read.
        let mut q = vec![f64::NAN; n * nq];
        let mut v = vec![f64::NAN; n * nv];
        let mask: Vec<bool> = (0..n).map(|w| w % 3 != 1).collect();
        for w in (0..n).filter(|&w| mask[w]) {
            let mut qw = k.qpos.clone();
            qw[3] *= 1.3; // unnormalised, as a caller may pass
            q[w * nq..(w + 1) * nq].copy_from_slice(&qw);
            for (x, y) in v[w * nv..(w + 1) * nv].iter_mut().zip(&k.qvel) {
                *x = y + 0.5 * rng.normal();
            }
        }
        a.reset_worlds(&mask, &q, &v).unwrap();
        for w in (0..n).filter(|&w| mask[w]) {
            b.reset_world(w, &q[w * nq..(w + 1) * nq], &v[w * nv..(w + 1) * nv]).unwrap();
        }
        advance_alike(&mut a, &mut b, 3, &format!("{layout:?}"));
        // The reset worlds restarted their clocks, the others did not.
        for w in 0..n {
            let t = a.times()[w];
            if mask[w] {
                assert!((t - 0.15).abs() < 1e-9, "world {w}: t {t}")
            } else {
                assert!(t > 0.44, "world {w}: t {t}")
            }
        }
        assert!(a.reset_worlds(&mask[1..], &q, &v).is_err(), "a short mask is refused");
        assert!(a.reset_worlds(&mask, &q[nq..], &v).is_err(), "a short q is refused");
    }
}

/// Per-world parameters survive every kind of reset, on the CPU and the GPU
/// batch (domain randomization across episodes): a world whose parameters
/// were set before a reset moves, bit for bit, like one whose parameters
/// were set after it, through the toss's impacts (stiffness, friction and
/// mass all act there).
#[test]
fn parameters_survive_every_reset() {
    let model = cube_toss();
    let n = 4;
    let mode = Mode::ErrorControlled(CenicParams::default());
    let p = WorldParams {
        mass_scale: 1.7,
        materials: MaterialScale { stiffness: 0.3, dissipation: 3.0, mu_static: 0.4, mu_dynamic: 0.3 },
    };
    let k = model.keyframe("toss").unwrap().clone();
    let (q, v) = (k.qpos.repeat(n), k.qvel.repeat(n));
    type Reset<'a> = (&'a str, &'a dyn Fn(&mut dyn Batch));
    let resets: [Reset; 5] = [
        ("reset_world", &|b| b.reset_world(1, &k.qpos, &k.qvel).unwrap()),
        ("reset_worlds", &|b| b.reset_worlds(&[false, true, false, true], &q, &v).unwrap()),
        ("reset_worlds_all", &|b| b.reset_worlds_all(&q, &v).unwrap()),
        ("reset_to_keyframe", &|b| b.reset_to_keyframe(1, "toss").unwrap()),
        ("reset", &|b| {
            b.reset();
            b.set_state(1, &k.qpos, &k.qvel).unwrap();
        }),
    ];
    let ctx = context();
    for (name, reset) in resets {
        let mut pairs: Vec<(Box<dyn Batch>, Box<dyn Batch>)> = vec![(
            Box::new(CpuBatch::<f64>::new(model.clone(), n, mode.clone())),
            Box::new(CpuBatch::<f64>::new(model.clone(), n, mode.clone())),
        )];
        if let Some(ctx) = &ctx {
            pairs.push((
                Box::new(GpuBatch::new(ctx.clone(), model.clone(), n, mode.clone()).unwrap()),
                Box::new(GpuBatch::new(ctx.clone(), model.clone(), n, mode.clone()).unwrap()),
            ));
        }
        for (mut a, mut b) in pairs {
            for x in [&mut a, &mut b] {
                for w in 0..n {
                    x.set_state(w, &k.qpos, &k.qvel).unwrap();
                }
                x.advance(0.1).unwrap();
            }
            a.set_params(1, p).unwrap();
            reset(a.as_mut());
            reset(b.as_mut());
            b.set_params(1, p).unwrap();
            a.advance(0.5).unwrap();
            b.advance(0.5).unwrap();
            let (qa, qb) = (qpos(a.as_ref()), qpos(b.as_ref()));
            assert_eq!(qa, qb, "{name}: parameters set before the reset were lost");
            // And they matter: world 1 ends elsewhere than world 0 (default parameters).
            let nq = model.nq;
            let d: f64 = (0..3).map(|i| (qa[nq + i] - qa[i]).powi(2)).sum::<f64>().sqrt();
            assert!(d > 1e-3, "{name}: the parameters did not change the motion ({d:e} m)");
        }
    }
}
