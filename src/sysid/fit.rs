//! The fit: mini-batch Adam on multi-step segment losses through
//! differentiable rollouts.

use super::SysidError;
use super::data::{Segment, Toss, segments};
use super::params::{CubeModel, CubeParams, FitParam, Parametrization, interior_start};
use super::predict::{Evaluation, Loss, NX, Predictor, evaluate, finite_or_null, segment_loss};
use super::shard::{GradientSource, Shard, training_rollout};
use crate::diff::{Cfd, DiffError};
use crate::integrator::{CenicParams, Mode};
use burn::optim::{AdamConfig, Optimizer};
use burn::tensor::{DType, Device, Tensor, TensorData};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use std::sync::Arc;
use std::time::Instant;

/// Settings of [`fit`].
#[derive(Clone, Debug)]
pub struct FitConfig {
    /// Parameters to fit.
    pub fit: Vec<FitParam>,
    /// Initial values of every parameter (the fixed ones keep theirs).
    pub init: CubeParams,
    /// Samples per training segment, the start included (≥ 2; 5 = DiffMJX's
    /// four predicted steps).
    pub segment: usize,
    /// Samples between the starts of consecutive training segments (≥ 1).
    pub stride: usize,
    /// Passes over the training segments.
    pub epochs: usize,
    /// Segments per Adam step.
    pub batch: usize,
    /// Initial learning rate (in the log coordinates: ~ relative change per step).
    pub lr: f64,
    /// Final learning rate; the rate follows a cosine from `lr` to it.
    pub lr_final: f64,
    /// Integration (CENIC or fixed steps).
    pub mode: Mode,
    /// Contacts from distance in the gradients (`None`: off).
    pub cfd: Option<Cfd>,
    /// The per-sample loss.
    pub loss: Loss,
    /// Seed of the segment shuffling.
    pub seed: u64,
    /// Horizons of the final validation ([`evaluate`]).
    pub horizons: Vec<usize>,
    /// Start stride of the final validation.
    pub eval_stride: usize,
    /// Validation tosses drawn in the overlay.
    pub overlay_tosses: usize,
    /// Show a progress bar on the terminal.
    pub progress: bool,
}

impl FitConfig {
    /// The command line's defaults for fitting `fit` of `cube` from `init`
    /// (moved inside the parameter domain by [`interior_start`]): segments of
    /// 5 samples (4 predicted steps, DiffMJX) that do not overlap, 3 epochs,
    /// batches of 64, learning rate 0.05 → 0.0005, CENIC at accuracy 1e-4,
    /// contacts from distance 5 cm wide with the body's weight, pseudo-Huber
    /// loss with δ = 1 mm and ℓ = 5 cm, validation at horizons 4, 16 and 64.
    pub fn new(cube: &CubeModel, fit: Vec<FitParam>, init: CubeParams) -> Self {
        let g = cube.model.options.gravity.iter().map(|g| g * g).sum::<f64>().sqrt();
        Self {
            init: interior_start(&fit, init),
            fit,
            segment: 5,
            stride: 4,
            epochs: 3,
            batch: 64,
            lr: 0.05,
            lr_final: 5e-4,
            mode: Mode::ErrorControlled(CenicParams { accuracy: 1e-4, ..CenicParams::default() }),
            cfd: Some(Cfd { width: 0.05, strength: (cube.nominal.mass * g).max(1e-6) }),
            loss: Loss { orientation_length: 0.05, huber_delta: Some(1.0) },
            seed: 0,
            horizons: vec![4, 16, 64],
            eval_stride: 1,
            overlay_tosses: 3,
            progress: false,
        }
    }
}

/// Adam's β₁ (DiffMJX's choice, C.2): short momentum, since mini-batch
/// gradients of segment losses are noisy and the loss changes shape as the
/// cube's size moves contacts in and out of segments.
pub const ADAM_BETA_1: f32 = 0.5;
/// Adam's β₂ (DiffMJX C.2).
pub const ADAM_BETA_2: f32 = 0.9;
/// Adam's ε (DiffMJX C.2).
pub const ADAM_EPSILON: f32 = 1e-6;

/// The state after one epoch (epoch 0: the initial values).
#[derive(Clone, Debug)]
pub struct EpochRecord {
    /// Epoch (0 = before training).
    pub epoch: usize,
    /// Learning rate of the epoch's last step.
    pub lr: f64,
    /// Mean of the epoch's mini-batch losses ([`Loss::unit`]; for epoch 0,
    /// the training loss at the initial values).
    pub train_loss: f64,
    /// Validation loss at the end of the epoch.
    pub val_loss: f64,
    /// Parameters at the end of the epoch.
    pub params: CubeParams,
    /// Training segments whose rollout failed (left out of their batch).
    pub failed_train: usize,
    /// Validation segments whose rollout failed.
    pub failed_val: usize,
    /// First failure message, if any.
    pub first_failure: Option<String>,
    /// Mean ICF solves per training segment (0 for epoch 0).
    pub solves_per_segment: f64,
    /// Wall time since the start of the fit (s).
    pub seconds: f64,
}

/// Recorded and predicted positions of one toss, for the overlay plot.
#[derive(Clone, Debug)]
pub struct Overlay {
    /// The toss's file name.
    pub toss: String,
    /// Sample times (s).
    pub t: Vec<f64>,
    /// Recorded positions (m).
    pub recorded: Vec<[f64; 3]>,
    /// Predicted by the initial model from the first sample (m); shorter when it failed.
    pub initial: Vec<[f64; 3]>,
    /// Predicted by the fitted model (m).
    pub fitted: Vec<[f64; 3]>,
}

/// The outcome of [`fit`].
#[derive(Clone, Debug)]
pub struct FitResult {
    /// Starting values.
    pub initial: CubeParams,
    /// Final values.
    pub fitted: CubeParams,
    /// One record per epoch, epoch 0 first.
    pub epochs: Vec<EpochRecord>,
    /// Unit of the losses ([`Loss::unit`]).
    pub loss_unit: &'static str,
    /// Training segments.
    pub train_segments: usize,
    /// Validation segments.
    pub val_segments: usize,
    /// Validation errors of the initial model.
    pub eval_initial: Evaluation,
    /// Validation errors of the fitted model.
    pub eval_fitted: Evaluation,
    /// Overlays of a few validation tosses.
    pub overlays: Vec<Overlay>,
    /// Wall time of the training (s).
    pub fit_seconds: f64,
    /// Wall time including the final validation (s).
    pub total_seconds: f64,
}

/// A segment whose rollout failed, with the message.
type SegmentFailure = (Segment, String);

/// Fits `cfg.fit` of `cube` to the `train` tosses, validating on `val`
/// (see the [module docs](super)).
pub fn fit(cube: &CubeModel, train: &[Toss], val: &[Toss], cfg: &FitConfig) -> Result<FitResult, SysidError> {
    fit_with(cube, train, val, cfg, None)
}

/// [`fit`], the mini-batch gradients coming from `source` (e.g. shards on
/// other machines, built from a [`super::ShardSpec`] of this fit) instead
/// of a local [`Shard`]. Each Adam step sums the per-segment losses and
/// gradients in the batch's order, whichever the source: the same source
/// answers give the same fit, bit for bit.
pub fn fit_with(
    cube: &CubeModel,
    train: &[Toss],
    val: &[Toss],
    cfg: &FitConfig,
    source: Option<&mut dyn GradientSource>,
) -> Result<FitResult, SysidError> {
    let start = Instant::now();
    if cfg.segment < 2 || cfg.stride == 0 || cfg.batch == 0 {
        return Err(SysidError::Input(format!(
            "segments need ≥ 2 samples, a stride ≥ 1 and batches ≥ 1 (got {}, {}, {})",
            cfg.segment, cfg.stride, cfg.batch
        )));
    }
    let huber_ok = cfg.loss.huber_delta.is_none_or(|d| d > 0.0 && d.is_finite());
    if !(cfg.lr > 0.0 && cfg.lr_final > 0.0 && cfg.loss.orientation_length >= 0.0 && huber_ok) {
        return Err(SysidError::Input(
            "learning rates and the Huber δ must be positive, the orientation length ≥ 0".into(),
        ));
    }
    cfg.init.validate()?;
    if cfg.fit.is_empty() {
        return Err(SysidError::Input("no parameter to fit".into()));
    }
    let mut train_segs = segments(train, cfg.segment, cfg.stride);
    let val_segs = segments(val, cfg.segment, cfg.stride);
    if train_segs.is_empty() {
        return Err(SysidError::Input(format!(
            "no training segment: {} tosses, none with ≥ {} samples",
            train.len(),
            cfg.segment + 1
        )));
    }
    let param = Parametrization::new(cfg.fit.clone(), cfg.init, cube)?;
    // The exact derivative of the fitted map, not DiffRollout's
    // straight-through default.
    let rollout = training_rollout(cube, &param, &cfg.mode, cfg.cfd);
    let mut local;
    let source: &mut dyn GradientSource = match source {
        Some(s) => s,
        None => {
            local = Shard::from_parts(cube, train.to_vec(), param.clone(), &cfg.mode, cfg.cfd, cfg.loss);
            &mut local
        }
    };
    let predictor = |p: &CubeParams| Predictor { rollout: rollout.clone(), theta: param.multipliers(p) };
    let failure_text =
        |tosses: &[Toss], f: &SegmentFailure| format!("{} from sample {}: {}", tosses[f.0.toss].name(), f.0.start, f.1);
    let text_failures =
        |fails: Vec<(Segment, DiffError)>| fails.into_iter().map(|(s, e)| (s, e.to_string())).collect::<Vec<_>>();

    let mut phi = param.to_phi(&cfg.init);
    let initial = param.from_phi(&phi);
    let (train0, ftrain0) = segment_loss(&predictor(&initial), train, &train_segs, &cfg.loss);
    let (val0, fval0) = segment_loss(&predictor(&initial), val, &val_segs, &cfg.loss);
    let (ftrain0, fval0) = (text_failures(ftrain0), text_failures(fval0));
    let first = ftrain0.first().map(|f| failure_text(train, f)).or_else(|| fval0.first().map(|f| failure_text(val, f)));
    let mut epochs = vec![EpochRecord {
        epoch: 0,
        lr: 0.0,
        train_loss: train0,
        val_loss: val0,
        params: initial,
        failed_train: ftrain0.len(),
        failed_val: fval0.len(),
        first_failure: first,
        solves_per_segment: 0.0,
        seconds: start.elapsed().as_secs_f64(),
    }];

    let adam = AdamConfig::new().with_beta_1(ADAM_BETA_1).with_beta_2(ADAM_BETA_2).with_epsilon(ADAM_EPSILON).build();
    let mut state = None;
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
    let per_epoch = train_segs.len().div_ceil(cfg.batch);
    let total = per_epoch * cfg.epochs;
    let bar = if cfg.progress { indicatif::ProgressBar::new(total as u64) } else { indicatif::ProgressBar::hidden() };
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} Adam steps, {elapsed} elapsed, eta {eta}  {msg}")
    {
        bar.set_style(style);
    }
    let device = Device::flex().autodiff();
    let opts = (&device, DType::F64);
    let nphi = phi.len();
    let mut step = 0;
    for epoch in 1..=cfg.epochs {
        train_segs.shuffle(&mut rng);
        let (mut sum, mut n, mut failed, mut first, mut solves) = (0.0, 0usize, 0usize, None, 0usize);
        let mut lr = cfg.lr;
        for batch in train_segs.chunks(cfg.batch) {
            // Cosine decay from lr to lr_final over all steps.
            let c = 0.5 * (1.0 + (std::f64::consts::PI * step as f64 / total.max(1) as f64).cos());
            lr = cfg.lr_final + (cfg.lr - cfg.lr_final) * c;
            step += 1;
            let answer = source.gradients(&phi, batch)?;
            answer.check(batch.len(), nphi)?;
            failed += answer.failures.len();
            if first.is_none() {
                first = answer.failures.first().map(|(i, msg)| failure_text(train, &(batch[*i], msg.clone())));
            }
            let mut ok = vec![true; batch.len()];
            for (i, _) in &answer.failures {
                ok[*i] = false;
            }
            let kept = ok.iter().filter(|&&k| k).count();
            if kept == 0 {
                bar.inc(1);
                continue;
            }
            // Means over the kept segments, summed in the batch's order.
            let (mut loss, mut g) = (0.0, vec![0.0; nphi]);
            for i in (0..batch.len()).filter(|&i| ok[i]) {
                loss += answer.loss[i];
                for (gj, x) in g.iter_mut().zip(&answer.gradient[i * nphi..(i + 1) * nphi]) {
                    *gj += x;
                }
                solves += answer.solves[i];
            }
            loss /= kept as f64;
            g.iter_mut().for_each(|x| *x /= kept as f64);
            sum += loss * kept as f64;
            n += kept;
            let x = Tensor::<2>::from_data(TensorData::new(phi.clone(), [1, phi.len()]), opts);
            let g = Tensor::<2>::from_data(TensorData::new(g, [1, phi.len()]), opts);
            let (next, s) = adam.step(lr, x, g, state);
            state = s;
            phi = next.to_data().iter::<f64>().collect();
            let p = param.from_phi(&phi);
            bar.set_message(format!(
                "epoch {epoch}/{}, loss {loss:.3} {}, side {:.2} mm",
                cfg.epochs,
                cfg.loss.unit(),
                1e3 * p.side
            ));
            bar.inc(1);
        }
        let params = param.from_phi(&phi);
        let (val_loss, fval) = segment_loss(&predictor(&params), val, &val_segs, &cfg.loss);
        let fval = text_failures(fval);
        if first.is_none() {
            first = fval.first().map(|f| failure_text(val, f));
        }
        epochs.push(EpochRecord {
            epoch,
            lr,
            train_loss: if n > 0 { sum / n as f64 } else { f64::NAN },
            val_loss,
            params,
            failed_train: failed,
            failed_val: fval.len(),
            first_failure: first,
            solves_per_segment: solves as f64 / n.max(1) as f64,
            seconds: start.elapsed().as_secs_f64(),
        });
        let u = cfg.loss.unit();
        let line = format!(
            "epoch {epoch}: train {:.3} {u}, validation {val_loss:.3} {u}, {} ({:.0} s)",
            epochs[epoch].train_loss,
            params.summary(),
            start.elapsed().as_secs_f64()
        );
        if bar.is_hidden() { println!("{line}") } else { bar.println(line) }
    }
    bar.finish_and_clear();
    let fit_seconds = start.elapsed().as_secs_f64();
    let fitted = param.from_phi(&phi);

    // Final validation with the models as written to MJCF.
    let model_predictor = |p: &CubeParams| -> Result<Predictor, SysidError> {
        let mut pr = Predictor::new(Arc::new(cube.with_params(p)?), cfg.mode.clone())?;
        pr.rollout.cfd = None;
        Ok(pr)
    };
    let (pi, pf) = (model_predictor(&initial)?, model_predictor(&fitted)?);
    let eval_initial = evaluate(&pi, val, &cfg.horizons, cfg.eval_stride);
    let eval_fitted = evaluate(&pf, val, &cfg.horizons, cfg.eval_stride);
    let overlays = pick_spread(val.len(), cfg.overlay_tosses)
        .into_iter()
        .map(|i| {
            let t = &val[i];
            let positions = |pr: &Predictor| -> Vec<[f64; 3]> {
                pr.predict(t, 0, t.len() - 1)
                    .map(|x| x.chunks(NX).map(|s| [s[0], s[1], s[2]]).collect())
                    .unwrap_or_default()
            };
            Overlay {
                toss: t.name(),
                t: (0..t.len()).map(|k| k as f64 * t.dt).collect(),
                recorded: t.poses.iter().map(|p| p.pos).collect(),
                initial: positions(&pi),
                fitted: positions(&pf),
            }
        })
        .collect();
    Ok(FitResult {
        initial,
        fitted,
        epochs,
        loss_unit: cfg.loss.unit(),
        train_segments: train_segs.len(),
        val_segments: val_segs.len(),
        eval_initial,
        eval_fitted,
        overlays,
        fit_seconds,
        total_seconds: start.elapsed().as_secs_f64(),
    })
}

/// `k` indices spread evenly over 0..n (all of them when k ≥ n).
fn pick_spread(n: usize, k: usize) -> Vec<usize> {
    if k >= n {
        return (0..n).collect();
    }
    (0..k).map(|i| if k == 1 { 0 } else { i * (n - 1) / (k - 1) }).collect()
}

/// JSON of a parameter set (SI units).
pub fn params_json(p: &CubeParams) -> serde_json::Value {
    serde_json::json!({
        "side_m": p.side,
        "mass_kg": p.mass,
        "mu_static": p.mu_static,
        "mu_dynamic": p.mu_dynamic,
        "stiffness_n_per_m": p.stiffness,
        "dissipation_s_per_m": p.dissipation,
        "corner_radius_m": p.corner_radius,
    })
}

impl FitResult {
    /// The JSON report: settings (`settings`, supplied by the caller),
    /// parameters and losses per epoch, validation errors of the initial and
    /// fitted models, wall times.
    pub fn to_json(&self, settings: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "settings": settings,
            "loss_unit": self.loss_unit,
            "train_segments": self.train_segments,
            "val_segments": self.val_segments,
            "initial": params_json(&self.initial),
            "fitted": params_json(&self.fitted),
            "epochs": self.epochs.iter().map(|e| serde_json::json!({
                "epoch": e.epoch,
                "lr": e.lr,
                "train_loss": finite_or_null(e.train_loss),
                "val_loss": finite_or_null(e.val_loss),
                "params": params_json(&e.params),
                "failed_train_segments": e.failed_train,
                "failed_val_segments": e.failed_val,
                "first_failure": e.first_failure,
                "solves_per_segment": e.solves_per_segment,
                "seconds": e.seconds,
            })).collect::<Vec<_>>(),
            "validation_initial": self.eval_initial.to_json(),
            "validation_fitted": self.eval_fitted.to_json(),
            "fit_seconds": self.fit_seconds,
            "total_seconds": self.total_seconds,
        })
    }
}
