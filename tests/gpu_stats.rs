//! The work statistics the benchmarks report per solve and per step
//! (`WorldStats::solves`, `WorldStats::contacts`) on the CPU and the GPU:
//! a fixed step is one contact solve and a step-doubling trial three; the
//! contacts summed over the accepted steps equal the sum of the step
//! records' contacts at the start of each step (which
//! `tests/gpu_batch.rs` compares between the two paths); and at fixed
//! steps the GPU's counts equal the CPU f32 path's on the cube toss, whose
//! landing and slide make the contact count change.

#[macro_use]
mod common;

use cenic::batch::Batch;
use cenic::gpu::{GpuBatch, GpuBatchOptions};
use cenic::integrator::{CenicParams, Mode, World, WorldStats};
use std::sync::Arc;

/// (accepted, rejected, solves, contacts) and the contacts of the step records.
fn counts(s: &WorldStats, recorded: impl Iterator<Item = usize>) -> ([u64; 4], u64) {
    ([s.accepted, s.rejected, s.solves, s.contacts], recorded.map(|c| c as u64).sum())
}

#[test]
fn solves_and_contacts_are_counted_on_both_paths() {
    let ctx = gpu_or_skip!();
    let model = Arc::new(cenic::scenes::cube_toss());
    for mode in [Mode::Fixed { dt: 1e-3 }, Mode::ErrorControlled(CenicParams::default())] {
        let mut cpu = World::<f32>::new(model.clone(), mode.clone());
        cpu.sim.reset_to_keyframe("toss").unwrap();
        cpu.record_steps = true;
        cpu.advance(0.4).unwrap();
        let (c, c_rec) = counts(&cpu.stats, cpu.steps.iter().map(|s| s.contacts));
        let options = GpuBatchOptions { record_steps: 1024, ..Default::default() };
        let mut gpu = GpuBatch::with_options(ctx.clone(), model.clone(), 1, mode.clone(), options).unwrap();
        gpu.reset_to_keyframe(0, "toss").unwrap();
        gpu.advance(0.4).unwrap();
        let records = gpu.step_records(0).unwrap();
        assert!(records.len() < 1024, "records cut short");
        let (g, g_rec) = counts(&gpu.stats(0), records.iter().map(|r| r.3));
        eprintln!("{}: CPU f32 (accepted, rejected, solves, contacts) {c:?}, GPU {g:?}", mode.name());
        assert_eq!(c[3], c_rec, "CPU: contacts against the step records");
        assert_eq!(g[3], g_rec, "GPU: contacts against the step records");
        assert!(c[3] > 0 && g[3] > 0, "the toss lands within 0.4 s");
        match mode {
            Mode::Fixed { .. } => {
                assert_eq!(c[2], c[0], "CPU: one solve per fixed step");
                assert_eq!(g, c, "GPU against CPU f32");
            }
            _ => {
                for (path, [acc, rej, solves, _]) in [("CPU", c), ("GPU", g)] {
                    // A trial solves the full step and two half steps; a
                    // failed solve ends it early (as a rejection).
                    assert!(solves >= 3 * acc && solves <= 3 * (acc + rej), "{path}: {solves} solves");
                }
            }
        }
    }
}
