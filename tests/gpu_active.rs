//! The Newton solves of a `GpuBatch` launch only the worlds whose solve is
//! unfinished (a list built on the device, launched indirectly): with
//! worlds that finish their advances and their solves at different times,
//! each world steps bit for bit as the same world in a batch of its own,
//! the solve launches run each world exactly as often as its own solves
//! need (the batch's count is the sum of the single-world batches'), far
//! fewer than every world in every solve launch, and the per-step results
//! match the CPU f32 path within `gpu_batch.rs`'s per-step bounds.

#[macro_use]
mod common;

use cenic::batch::{Batch, CpuBatch, WorldStatus};
use cenic::gpu::icf::SolverVariant;
use cenic::gpu::{GpuBatch, GpuBatchOptions, GpuContext};
use cenic::integrator::{CenicParams, Mode};
use cenic::model::Model;
use cenic::scenes;
use common::Rng;
use std::sync::Arc;

/// Per-step bounds against the CPU f32 path (`gpu_batch.rs` TOL_STEP_Q, TOL_STEP_V).
const TOL_STEP_Q: f64 = 1e-5;
const TOL_STEP_V: f64 = 1e-2;

fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// `states` (q, v per world) advanced by `advances` in one batch and each
/// in a batch of its own: every world bit for bit alike (q, v, clock,
/// statistics), the batch's solve world-launches the sum of the single
/// batches', and fewer than `max_share` of every world in every solve
/// launch. Returns the batch's final state.
fn alone_and_together(
    ctx: &Arc<GpuContext>,
    model: &Arc<Model>,
    mode: &Mode,
    options: &GpuBatchOptions,
    states: &[(Vec<f64>, Vec<f64>)],
    advances: &[f64],
    max_share: f64,
) -> (Vec<f64>, Vec<f64>) {
    let n = states.len();
    let run = |states: &[(Vec<f64>, Vec<f64>)]| {
        let mut b =
            GpuBatch::with_options(ctx.clone(), model.clone(), states.len(), mode.clone(), options.clone()).unwrap();
        for (w, (q, v)) in states.iter().enumerate() {
            b.set_state(w, q, v).unwrap();
        }
        let listed = b.solve_world_launches();
        let launches = b.solve_launches();
        for dt in advances {
            b.advance(*dt).unwrap();
        }
        let listed = b.solve_world_launches().wrapping_sub(listed) as u64;
        let launches = b.solve_launches() - launches;
        (b, listed, launches)
    };
    let (together, listed, launches) = run(states);
    let (q, v) = common::batch_state(&together);
    let (nq, nv) = (model.nq, model.nv);
    let mut listed_alone = 0;
    for w in 0..n {
        let (alone, l, _) = run(&states[w..w + 1]);
        listed_alone += l;
        let (qa, va) = common::batch_state(&alone);
        assert_eq!(bits(&q[w * nq..(w + 1) * nq]), bits(&qa), "world {w}: q differs from the world alone");
        assert_eq!(bits(&v[w * nv..(w + 1) * nv]), bits(&va), "world {w}: v differs from the world alone");
        assert_eq!(together.times()[w].to_bits(), alone.times()[0].to_bits(), "world {w}: clock");
        assert_eq!(together.stats(w), alone.stats(0), "world {w}: statistics differ from the world alone");
        assert_eq!(together.status(w), WorldStatus::Ok, "world {w}");
    }
    let every = n as u64 * launches;
    eprintln!(
        "{} worlds, {:?}: {listed} world-solve launches ({listed_alone} alone) in {launches} solve launches, \
         {every} if every solve launch ran every world",
        n, options.solver_variant
    );
    assert_eq!(listed, listed_alone, "the batch ran other solves than its worlds need alone");
    assert!(listed > 0, "no solve ran");
    assert!((listed as f64) < max_share * every as f64, "{listed} world-solve launches of {every}");
    (q, v)
}

/// Error control on the cube toss: six worlds with different throws, so
/// that they take different steps and finish each advance after different
/// iterations (some rest on the floor, some still bounce), on the serial
/// and on the cooperative solver stage.
#[test]
fn worlds_finishing_at_different_times_step_as_alone() {
    let ctx = gpu_or_skip!();
    let model = Arc::new(scenes::cube_toss());
    let key = model.keyframe("toss").unwrap().clone();
    let mut rng = Rng::new(5);
    let states: Vec<(Vec<f64>, Vec<f64>)> = (0..6)
        .map(|w| {
            let v: Vec<f64> = key.qvel.iter().map(|x| x * (0.5 + 0.3 * w as f64) + 0.3 * rng.normal()).collect();
            (key.qpos.clone(), v)
        })
        .collect();
    let mode = Mode::ErrorControlled(CenicParams::default());
    let advances = [0.1, 0.05, 0.05, 0.05];
    for variant in [SolverVariant::Serial, SolverVariant::Cooperative] {
        let options = GpuBatchOptions { solver_variant: Some(variant), ..Default::default() };
        alone_and_together(&ctx, &model, &mode, &options, &states, &advances, 0.5);
    }
}

/// Fixed steps on the clutter pile (nv = 120, the cooperative stage on
/// lavapipe, whose loop budget pauses its solves: they resume in repeated
/// listed launches): three worlds nudged differently, whose solves take
/// different numbers of Newton iterations and launches, alike alone and
/// together; and one step from the CPU's state matches the CPU f32 path.
#[test]
fn clutter_solves_of_different_lengths_step_as_alone_and_match_cpu_f32() {
    let ctx = gpu_or_skip!();
    let model = Arc::new(scenes::clutter(20, scenes::CUBE_TOSS_MATERIAL));
    let mut settle = CpuBatch::<f64>::new(model.clone(), 1, Mode::ErrorControlled(CenicParams::default()));
    settle.advance(1.0).unwrap();
    let (q0, v0) = common::batch_state(&settle);
    let states: Vec<(Vec<f64>, Vec<f64>)> =
        (0..3).map(|w| (q0.clone(), v0.iter().map(|x| x + 0.05 * w as f64).collect())).collect();
    let mode = Mode::Fixed { dt: 2e-3 };
    let options = GpuBatchOptions::default();
    alone_and_together(&ctx, &model, &mode, &options, &states, &[2e-3, 4e-3], 0.85);
    // One step from the same states on the CPU f32 path.
    let mut gpu = GpuBatch::with_options(ctx.clone(), model.clone(), 3, mode.clone(), options).unwrap();
    let mut cpu = CpuBatch::<f32>::new(model.clone(), 3, mode);
    for (w, (q, v)) in states.iter().enumerate() {
        gpu.set_state(w, q, v).unwrap();
        cpu.set_state(w, q, v).unwrap();
    }
    gpu.advance(2e-3).unwrap();
    cpu.advance(2e-3).unwrap();
    let ((qg, vg), (qc, vc)) = (common::batch_state(&gpu), common::batch_state(&cpu));
    let max_diff = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
    let (dq, dv) = (max_diff(&qg, &qc), max_diff(&vg, &vc));
    eprintln!("clutter, one step of 3 worlds: GPU vs CPU f32 {dq:.2e} (q), {dv:.2e} (v)");
    assert!(dq <= TOL_STEP_Q && dv <= TOL_STEP_V, "GPU and CPU f32 differ by {dq:e} (q), {dv:e} (v)");
}
