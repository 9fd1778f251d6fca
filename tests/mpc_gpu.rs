//! Predictive sampling with its rollouts on the GPU batch
//! (`PredictiveSampling::on_gpu`, `Hybrid::on_gpu`) against the same
//! planner on the CPU f32 batch, the GPU's parity reference: the same
//! seeded candidates must get the same objectives (to f32 rounding) and the
//! planner must pick the same one, on the billiards task, where the first
//! contact decides the objective.

#[macro_use]
mod common;

use cenic::batch::CpuBatch;
use cenic::mpc::tasks::Task;
use cenic::mpc::{Budget, Hybrid, HybridOptions, IlqrOptions, Planner, PredictiveSampling, SamplingOptions};
use std::path::Path;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-12)
}

#[test]
fn sampling_on_the_gpu_picks_what_the_cpu_f32_batch_picks() {
    let ctx = gpu_or_skip!();
    // Billiards needs no shared model file (its MJCF is built in).
    let task = Task::new("billiards", Path::new("."), 3).unwrap();
    let p = task.problem.clone();
    let opts = SamplingOptions { samples: 48, sigma: 0.5, seed: 11, ..Default::default() };
    let f32_batch = CpuBatch::<f32>::new(p.model.clone(), opts.samples, p.mode.clone());
    let mut cpu = PredictiveSampling::with_batch(p.clone(), opts.clone(), Box::new(f32_batch)).unwrap();
    let mut gpu = PredictiveSampling::on_gpu(p.clone(), opts.clone(), ctx.clone()).unwrap();
    let mut x = task.x0.clone();
    let (mut decisive, mut improved) = (0, 0);
    for round in 0..6 {
        let (a, b) = (cpu.plan(&x, Budget::Iterations(1)).unwrap(), gpu.plan(&x, Budget::Iterations(1)).unwrap());
        assert_eq!((a.rollouts, b.rollouts), (opts.samples, opts.samples));
        // Every candidate's objective, the same seeded candidates on both.
        // (MuJoCo's soft contact, the task's semantics, switches on with a
        // force jump, so the f32 rounding of the step it starts in moves an
        // objective by up to a few 1e-3. Each side's fixed steps are
        // warm-started from its own last step where that predicts, so the
        // two solves can start from different points and agree only to the
        // Newton tolerance: then, rarely, a strike starts its contact a step
        // earlier on one side and that candidate's objective moves by more.
        // Measured on lavapipe over the 6 rounds: 287 of 288 candidates
        // within 4e-4 relative, one at 6e-2. So at most one candidate per
        // round may part, never the pick, whose objective is checked below.)
        let mut parted = vec![];
        for (c, (&u, &v)) in cpu.objectives().iter().zip(gpu.objectives()).enumerate() {
            assert!(u.is_finite() && v.is_finite(), "round {round}, candidate {c}: CPU f32 {u}, GPU {v}");
            if !close(u, v, 5e-3) {
                parted.push((c, u, v));
            }
        }
        assert!(parted.len() <= 1, "round {round}: objectives part (candidate, CPU f32, GPU): {parted:?}");
        // The pick is the same unless two candidates tie within f32
        // rounding; after such a tie the plans may part, so the
        // comparison ends there.
        let mut sorted = cpu.objectives().to_vec();
        sorted.sort_by(f64::total_cmp);
        if sorted[1] - sorted[0] < 5e-3 * sorted[0].abs() {
            break;
        }
        decisive += 1;
        assert_eq!(a.accepted, b.accepted, "round {round}: ({a:?} / {b:?})");
        assert_eq!(cpu.controls(), gpu.controls(), "round {round}: the planners picked different candidates");
        let best = (0..opts.samples).min_by(|&i, &j| cpu.objectives()[i].total_cmp(&cpu.objectives()[j])).unwrap();
        assert!(parted.iter().all(|p| p.0 != best), "round {round}: the pick's objective parts: {parted:?}");
        improved += a.accepted;
        // Every other round, the next interval: one step of the plan later
        // (the planner's own model stands in for the plant).
        if round % 2 == 1 {
            let mut plant = cenic::mpc::Plant::new(p.model.clone(), p.mode.clone(), Default::default());
            plant.set_state(&x);
            plant.step(&cpu.controls()[..p.nc()], p.dt).unwrap();
            x = plant.state();
            cpu.shift();
            gpu.shift();
        }
    }
    // Picks were compared, and sampling found better plans at all (else
    // only nominal plans were compared).
    assert!(decisive >= 3 && improved > 0, "{decisive} decisive rounds, {improved} improvements");
    // A batch of the wrong size is refused with both sizes named.
    let small = CpuBatch::<f64>::new(p.model.clone(), 4, p.mode.clone());
    let err = PredictiveSampling::with_batch(p.clone(), opts.clone(), Box::new(small)).err().unwrap().to_string();
    assert!(err.contains("4 worlds") && err.contains("48 worlds"), "{err}");
    // The hybrid with its sampling on the GPU plans, and its sampling phase
    // lowers the objective of the initial guess as on the CPU.
    let hopts = HybridOptions {
        sampling: opts.clone(),
        ilqr: IlqrOptions { cfd: Some(task.cfd), ..task.ilqr.clone() },
        sampling_share: 0.5,
    };
    let mut h_gpu = Hybrid::on_gpu(p.clone(), hopts.clone(), ctx).unwrap();
    let mut h_cpu = Hybrid::new(p.clone(), hopts).unwrap();
    let (s, c) =
        (h_gpu.plan(&task.x0, Budget::Iterations(2)).unwrap(), h_cpu.plan(&task.x0, Budget::Iterations(2)).unwrap());
    assert!(
        close(s.initial_cost, c.initial_cost, 2e-3),
        "hybrid nominal: GPU {}, CPU f64 {}",
        s.initial_cost,
        c.initial_cost
    );
    assert!(h_gpu.sampled_cost() <= s.initial_cost && s.cost <= h_gpu.sampled_cost() * (1.0 + 1e-9), "{s:?}");
}
