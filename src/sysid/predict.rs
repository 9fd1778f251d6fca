//! Multi-step predictions of recorded tosses and their errors.

use super::SysidError;
use super::data::{Segment, Toss};
use crate::diff::{DiffError, DiffRollout};
use crate::integrator::Mode;
use crate::model::{JointKind, Model};
use burn::tensor::Tensor;
use rayon::prelude::*;
use std::sync::Arc;

/// State size of a free body (nq + nv).
pub const NX: usize = 13;

/// Predicts tosses with a model: every prediction starts from a recorded
/// sample ([`Toss::state`]) and runs the simulator over the toss's sample
/// interval, `f64`, without controls.
#[derive(Clone, Debug)]
pub struct Predictor {
    /// The rollout (its `dt` is replaced by each toss's interval).
    pub rollout: DiffRollout,
    /// Parameter multipliers for `rollout.params`.
    pub theta: Vec<f64>,
}

impl Predictor {
    /// A predictor for `model` (one free body, nq = 7, nv = 6) in `mode`, with the model's own parameters.
    pub fn new(model: Arc<Model>, mode: Mode) -> Result<Self, SysidError> {
        if model.nq != 7 || model.nv != 6 || model.joints.first().map(|j| j.kind) != Some(JointKind::Free) {
            return Err(SysidError::Model(format!(
                "model '{}' has nq = {}, nv = {}: predicting tosses needs a single free body",
                model.name, model.nq, model.nv
            )));
        }
        Ok(Self { rollout: DiffRollout::new(model, mode, 1.0), theta: vec![] })
    }

    /// The rollout over `toss`'s sample interval ([`rollout_for`]).
    pub fn rollout_for(&self, toss: &Toss) -> DiffRollout {
        rollout_for(&self.rollout, toss)
    }

    /// The trajectory ((steps + 1) × [`NX`]) predicted from sample `start` of `toss`.
    pub fn predict(&self, toss: &Toss, start: usize, steps: usize) -> Result<Vec<f64>, DiffError> {
        self.rollout_for(toss).simulate(&toss.state(start), &[], &self.theta, steps)
    }
}

/// `rollout` over `toss`'s sample interval. A fixed step within 10⁻⁶ of the
/// interval is set to it exactly: the interval is computed from the CSV's
/// rounded times, and a step a few 10⁻¹² s short would leave a sliver step
/// at the end of every interval.
pub fn rollout_for(rollout: &DiffRollout, toss: &Toss) -> DiffRollout {
    let mode = match rollout.mode {
        Mode::Fixed { dt } if (dt / toss.dt - 1.0).abs() < 1e-6 => Mode::Fixed { dt: toss.dt },
        ref m => m.clone(),
    };
    DiffRollout { dt: toss.dt, mode, ..rollout.clone() }
}

/// Position error (m) and rotation angle (rad) of predicted state `x`
/// (≥ 7 values) against recorded sample `k` of `toss`.
pub fn pose_error(x: &[f64], toss: &Toss, k: usize) -> (f64, f64) {
    let s = &toss.poses[k];
    let dp = (0..3).map(|i| (x[i] - s.pos[i]).powi(2)).sum::<f64>().sqrt();
    let nq = (0..4).map(|i| x[3 + i] * x[3 + i]).sum::<f64>().sqrt();
    let dot = (0..4).map(|i| x[3 + i] * s.quat[i]).sum::<f64>().abs() / nq;
    (dp, 2.0 * dot.min(1.0).acos())
}

/// The loss of one predicted sample, from its pose error
/// e² = ‖Δp‖² + 4ℓ²(1 − ⟨q, q̂⟩²): the squared position error plus the
/// squared displacement of a point ℓ from the centre under the rotation
/// error (= ℓ²θ² for small angles θ). 1 − ⟨q, q̂⟩² = sin²(θ/2) is the same
/// for q and −q, and equals ‖R − R̂‖²_F / 8: the rotation-matrix loss
/// without its cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Loss {
    /// ℓ (m): weighs orientation against position errors.
    pub orientation_length: f64,
    /// δ (mm) of the pseudo-Huber loss √(e² + δ²) − δ (e in mm), which
    /// grows like e: large errors — chaotic bounces, tumbles onto another
    /// face — weigh as in the mean-error metric of [`evaluate`] instead of
    /// dominating as squares. `None`: the squared error e² (mm²), DiffMJX's MSE.
    pub huber_delta: Option<f64>,
}

impl Loss {
    /// The loss of predicted state `x` (≥ 7 values) against sample `k` of `toss`.
    pub fn sample(&self, x: &[f64], toss: &Toss, k: usize) -> f64 {
        let s = &toss.poses[k];
        let dp2 = (0..3).map(|i| (x[i] - s.pos[i]).powi(2)).sum::<f64>();
        let dot = (0..4).map(|i| x[3 + i] * s.quat[i]).sum::<f64>();
        let e2 = (dp2 + 4.0 * self.orientation_length.powi(2) * (1.0 - dot * dot)) * 1e6;
        match self.huber_delta {
            Some(d) => (e2 + d * d).sqrt() - d,
            None => e2,
        }
    }

    /// The same loss on burn tensors: squared position errors `dp2` (m²)
    /// and quaternion dot products `dot`, any matching shape.
    pub fn tensor<const D: usize>(&self, dp2: Tensor<D>, dot: Tensor<D>) -> Tensor<D> {
        let rot = dot.powi_scalar(2).neg().add_scalar(1.0).mul_scalar(4.0 * self.orientation_length.powi(2));
        let e2 = (dp2 + rot).mul_scalar(1e6);
        match self.huber_delta {
            Some(d) => e2.add_scalar(d * d).sqrt().sub_scalar(d),
            None => e2,
        }
    }

    /// Unit of the loss values.
    pub fn unit(&self) -> &'static str {
        if self.huber_delta.is_some() { "mm" } else { "mm²" }
    }
}

/// Mean [`Loss::sample`] over the predicted samples of `segments` (forward
/// only, rayon over segments), and the segments whose simulation failed.
pub fn segment_loss(
    pred: &Predictor,
    tosses: &[Toss],
    segments: &[Segment],
    loss: &Loss,
) -> (f64, Vec<(Segment, DiffError)>) {
    let results: Vec<Result<f64, (Segment, DiffError)>> = segments
        .par_iter()
        .map(|s| {
            let toss = &tosses[s.toss];
            let x = pred.predict(toss, s.start, s.steps()).map_err(|e| (*s, e))?;
            Ok((1..s.samples).map(|j| loss.sample(&x[j * NX..], toss, s.start + j)).sum::<f64>())
        })
        .collect();
    let (mut sum, mut n, mut failed) = (0.0, 0, vec![]);
    for (s, r) in segments.iter().zip(results) {
        match r {
            Ok(l) => {
                sum += l;
                n += s.steps();
            }
            Err(f) => failed.push(f),
        }
    }
    (if n > 0 { sum / n as f64 } else { f64::NAN }, failed)
}

/// Mean errors at one prediction horizon.
#[derive(Clone, Debug, PartialEq)]
pub struct HorizonErrors {
    /// Predicted steps; `None` for whole tosses from their first sample.
    pub horizon: Option<usize>,
    /// Segments (or tosses) predicted.
    pub segments: usize,
    /// Predicted samples averaged over.
    pub samples: usize,
    /// Mean position error (mm).
    pub position_mm: f64,
    /// Mean rotation angle error (degrees).
    pub orientation_deg: f64,
}

impl HorizonErrors {
    /// `horizon N: position P mm, orientation R deg` (or `whole toss: …`).
    pub fn line(&self) -> String {
        let what = match self.horizon {
            Some(n) => format!("horizon {n}"),
            None => "whole toss".into(),
        };
        format!("{what}: position {:.3} mm, orientation {:.3} deg", self.position_mm, self.orientation_deg)
    }
}

/// A simulation that failed during an evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The toss's file name.
    pub toss: String,
    /// The sample the prediction started from.
    pub start: usize,
    /// What went wrong.
    pub error: String,
}

/// Multi-step prediction errors of a model on a set of tosses.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// One entry per horizon, in the order asked for.
    pub horizons: Vec<HorizonErrors>,
    /// Whole tosses from their first sample.
    pub whole: HorizonErrors,
    /// Predictions that failed (left out of the means).
    pub failures: Vec<Failure>,
    /// Predictions run.
    pub simulations: usize,
}

/// Multi-step prediction errors of `pred` on `tosses`: for each horizon N,
/// every segment of N + 1 samples whose start is at least the second sample
/// (central-difference velocities) and a multiple of `stride` (≥ 1) is
/// predicted N steps ahead, and the position and rotation errors are averaged over
/// all predicted samples of all segments; for whole tosses, each toss is
/// predicted from its first sample to its last (one-sided velocities) and
/// the errors are averaged over all predicted samples. A start's N-step
/// prediction is the first N steps of its longest one, so each start is
/// simulated once. Failed predictions are listed and left out.
pub fn evaluate(pred: &Predictor, tosses: &[Toss], horizons: &[usize], stride: usize) -> Evaluation {
    let hmax = horizons.iter().copied().max().unwrap_or(0);
    // Jobs: (toss, start, steps); start 0 is the whole toss.
    let mut jobs: Vec<(usize, usize, usize)> = vec![];
    for (i, t) in tosses.iter().enumerate() {
        jobs.push((i, 0, t.len() - 1));
        if hmax > 0 {
            for start in (1..t.len().saturating_sub(1)).filter(|s| s % stride.max(1) == 0) {
                let steps = hmax.min(t.len() - 1 - start);
                if horizons.iter().any(|&h| h <= steps) {
                    jobs.push((i, start, steps));
                }
            }
        }
    }
    // Largest jobs first so that rayon's last tasks are short.
    jobs.sort_by_key(|j| std::cmp::Reverse(j.2));
    let results: Vec<Result<Vec<(f64, f64)>, DiffError>> = jobs
        .par_iter()
        .map(|&(i, start, steps)| {
            let t = &tosses[i];
            let x = pred.predict(t, start, steps)?;
            Ok((1..=steps).map(|j| pose_error(&x[j * NX..], t, start + j)).collect())
        })
        .collect();
    let mut sums = vec![(0usize, 0usize, 0.0, 0.0); horizons.len()];
    let mut whole = (0usize, 0usize, 0.0, 0.0);
    let mut failures = vec![];
    for (&(i, start, steps), r) in jobs.iter().zip(results) {
        let errs = match r {
            Ok(e) => e,
            Err(e) => {
                failures.push(Failure { toss: tosses[i].name(), start, error: e.to_string() });
                continue;
            }
        };
        let add = |acc: &mut (usize, usize, f64, f64), n: usize| {
            acc.0 += 1;
            acc.1 += n;
            for &(p, a) in &errs[..n] {
                acc.2 += p;
                acc.3 += a;
            }
        };
        if start == 0 {
            add(&mut whole, steps);
        } else {
            for (acc, &h) in sums.iter_mut().zip(horizons) {
                if h <= steps {
                    add(acc, h);
                }
            }
        }
    }
    let finish = |horizon: Option<usize>, acc: (usize, usize, f64, f64)| {
        let n = acc.1.max(1) as f64;
        let nan_if_empty = |x: f64| if acc.1 == 0 { f64::NAN } else { x };
        HorizonErrors {
            horizon,
            segments: acc.0,
            samples: acc.1,
            position_mm: nan_if_empty(1e3 * acc.2 / n),
            orientation_deg: nan_if_empty((acc.3 / n).to_degrees()),
        }
    };
    Evaluation {
        horizons: horizons.iter().zip(sums).map(|(&h, acc)| finish(Some(h), acc)).collect(),
        whole: finish(None, whole),
        failures,
        simulations: jobs.len(),
    }
}

impl Evaluation {
    /// The text report: one line per horizon, then the whole toss.
    pub fn text(&self) -> String {
        let mut lines: Vec<String> = self.horizons.iter().map(HorizonErrors::line).collect();
        lines.push(self.whole.line());
        lines.join("\n")
    }

    /// A warning naming the failed predictions, if any.
    pub fn warning(&self) -> Option<String> {
        self.failures.first().map(|f| {
            format!(
                "warning: {} of {} predictions failed and are left out of the means; first: {} from sample {}: {}",
                self.failures.len(),
                self.simulations,
                f.toss,
                f.start,
                f.error
            )
        })
    }

    /// The report as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let row = |h: &HorizonErrors| {
            serde_json::json!({
                "horizon": h.horizon,
                "segments": h.segments,
                "samples": h.samples,
                "position_mm": finite_or_null(h.position_mm),
                "orientation_deg": finite_or_null(h.orientation_deg),
            })
        };
        serde_json::json!({
            "horizons": self.horizons.iter().map(row).collect::<Vec<_>>(),
            "whole_toss": row(&self.whole),
            "simulations": self.simulations,
            "failures": self.failures.iter().map(|f| serde_json::json!({
                "toss": f.toss, "start": f.start, "error": f.error
            })).collect::<Vec<_>>(),
        })
    }
}

/// JSON number, or null for NaN and infinities (which JSON cannot hold).
pub(crate) fn finite_or_null(x: f64) -> serde_json::Value {
    if x.is_finite() { serde_json::json!(x) } else { serde_json::Value::Null }
}
