//! The gradients of a fit's mini-batches, per segment, and their
//! distribution: [`Shard`] computes them for any list of training segments,
//! [`ShardSpec`] describes a shard completely (as JSON, for another process
//! or machine), and [`GradientSource`] is what [`super::fit_with`] asks for
//! each Adam step's segments.
//!
//! Every segment's loss and gradient is computed on its own (its own copy
//! of the fit coordinates in the autodiff graph), and the fit sums them in
//! the batch's order: so a batch split over any number of shards gives the
//! same sums, bit for bit, as one shard.

use super::SysidError;
use super::data::{Pose, Segment, Toss};
use super::params::{CubeModel, CubeParams, FitParam, Parametrization};
use super::predict::{Loss, NX, rollout_for};
use crate::diff::{Cfd, DiffError, DiffRollout, FrictionLoad, Recording};
use crate::integrator::{CenicParams, Mode};
use burn::tensor::{DType, Device, Tensor, TensorData};
use rayon::prelude::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

/// Per-segment losses and gradients of a list of segments (the answer of
/// a [`GradientSource`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SegmentGradients {
    /// Each segment's loss: the mean [`Loss`] over its predicted samples
    /// (NaN where its rollout failed).
    pub loss: Vec<f64>,
    /// Each segment's gradient of its loss in the fit coordinates
    /// (segments × coordinates, row-major; zeros where its rollout failed).
    pub gradient: Vec<f64>,
    /// ICF solves of each segment's rollout.
    pub solves: Vec<usize>,
    /// The segments whose rollout failed: position in the list and message.
    pub failures: Vec<(usize, String)>,
}

impl SegmentGradients {
    /// Checks the sizes against `segments` segments and `coordinates` coordinates.
    pub fn check(&self, segments: usize, coordinates: usize) -> Result<(), SysidError> {
        let ok = self.loss.len() == segments
            && self.gradient.len() == segments * coordinates
            && self.solves.len() == segments
            && self.failures.iter().all(|(i, _)| *i < segments);
        if ok {
            Ok(())
        } else {
            Err(SysidError::Input(format!(
                "gradient source answered {} losses, {} gradient entries and {} solve counts for {segments} segments \
                 of {coordinates} coordinates",
                self.loss.len(),
                self.gradient.len(),
                self.solves.len()
            )))
        }
    }
}

/// Where a fit gets the per-segment losses and gradients of a mini-batch:
/// a local [`Shard`], or one that spreads the segments over processes or
/// machines (the Python package's `cenic.ray.RayGradients`).
pub trait GradientSource {
    /// Losses and gradients of `segments` (positions in the training
    /// tosses) at fit coordinates `phi`.
    fn gradients(&mut self, phi: &[f64], segments: &[Segment]) -> Result<SegmentGradients, SysidError>;
}

/// Everything a shard needs, to build it elsewhere: the model (MJCF text,
/// or the built-in cube toss), the training tosses as the fit sees them
/// (after `--level`), the fitted parameters with their start, the
/// integration, contacts from distance and the loss. Floats travel as their
/// bit patterns, so a shard built from the JSON computes what the fit's
/// own would, bit for bit.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardSpec {
    /// MJCF text of the model; `None`: [`crate::scenes::cube_toss`].
    pub model_mjcf: Option<String>,
    /// The corner radius given to [`CubeModel::with_corner_radius`], if any.
    pub corner_radius: Option<f64>,
    /// The training tosses (segments index into them).
    pub tosses: Vec<Toss>,
    /// Fitted parameters.
    pub fit: Vec<FitParam>,
    /// Initial values (the fit's `init`, which the parametrization keeps for the fixed ones).
    pub init: CubeParams,
    /// Integration.
    pub mode: Mode,
    /// Contacts from distance.
    pub cfd: Option<Cfd>,
    /// Per-sample loss.
    pub loss: Loss,
}

fn bits(x: f64) -> Value {
    Value::from(x.to_bits())
}

fn opt_bits(x: Option<f64>) -> Value {
    x.map_or(Value::Null, bits)
}

/// Reads a float written by [`bits`], naming `what` in errors.
fn unbits(v: &Value, what: &str) -> Result<f64, SysidError> {
    v.as_u64().map(f64::from_bits).ok_or_else(|| SysidError::Input(format!("shard spec: {what} is not a float's bits")))
}

fn opt_unbits(v: &Value, what: &str) -> Result<Option<f64>, SysidError> {
    if v.is_null() { Ok(None) } else { unbits(v, what).map(Some) }
}

fn get_bool(v: &Value, what: &str) -> Result<bool, SysidError> {
    v.as_bool().ok_or_else(|| SysidError::Input(format!("shard spec: {what} is not a boolean")))
}

const PARAM_KEYS: [&str; 7] = ["side", "mass", "mu_static", "mu_dynamic", "stiffness", "dissipation", "corner_radius"];

fn params_to_json(p: &CubeParams) -> Value {
    let v = [p.side, p.mass, p.mu_static, p.mu_dynamic, p.stiffness, p.dissipation, p.corner_radius];
    Value::Object(PARAM_KEYS.iter().zip(v).map(|(k, x)| (k.to_string(), bits(x))).collect())
}

fn params_from_json(v: &Value) -> Result<CubeParams, SysidError> {
    let g = |k: &str| unbits(&v[k], &format!("init.{k}"));
    Ok(CubeParams {
        side: g("side")?,
        mass: g("mass")?,
        mu_static: g("mu_static")?,
        mu_dynamic: g("mu_dynamic")?,
        stiffness: g("stiffness")?,
        dissipation: g("dissipation")?,
        corner_radius: g("corner_radius")?,
    })
}

fn mode_to_json(mode: &Mode) -> Result<Value, SysidError> {
    Ok(match mode {
        Mode::Fixed { dt } => json!({ "fixed": bits(*dt) }),
        Mode::ErrorControlled(p) => json!({ "cenic": {
            "accuracy": bits(p.accuracy),
            "max_step": bits(p.max_step),
            "min_step": bits(p.min_step),
            "initial_step": opt_bits(p.initial_step),
            "kappa": bits(p.kappa),
            "weights": p.weights.iter().map(|&w| bits(w)).collect::<Vec<_>>(),
            "velocity_time_scale": bits(p.velocity_time_scale),
            "skin": bits(p.skin),
            "conservative_advancement": p.conservative_advancement,
            "hessian_reuse": p.hessian_reuse,
            "land_contact_events": p.land_contact_events,
            "land_stick_events": p.land_stick_events,
            "accept_accuracy_misses": p.accept_accuracy_misses,
            "extrapolate": p.extrapolate,
        }}),
        m => {
            return Err(SysidError::Input(format!(
                "a distributed fit integrates with fixed steps or CENIC, not {}",
                m.name()
            )));
        }
    })
}

fn mode_from_json(v: &Value) -> Result<Mode, SysidError> {
    if !v["fixed"].is_null() {
        return Ok(Mode::Fixed { dt: unbits(&v["fixed"], "mode.fixed")? });
    }
    let c = &v["cenic"];
    if !c.is_object() {
        return Err(SysidError::Input("shard spec: mode is neither 'fixed' nor 'cenic'".into()));
    }
    let f = |k: &str| unbits(&c[k], &format!("mode.cenic.{k}"));
    let b = |k: &str| get_bool(&c[k], &format!("mode.cenic.{k}"));
    let weights = c["weights"]
        .as_array()
        .ok_or_else(|| SysidError::Input("shard spec: mode.cenic.weights is not a list".into()))?
        .iter()
        .map(|w| unbits(w, "mode.cenic.weights"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Mode::ErrorControlled(CenicParams {
        accuracy: f("accuracy")?,
        max_step: f("max_step")?,
        min_step: f("min_step")?,
        initial_step: opt_unbits(&c["initial_step"], "mode.cenic.initial_step")?,
        kappa: f("kappa")?,
        weights,
        velocity_time_scale: f("velocity_time_scale")?,
        skin: f("skin")?,
        conservative_advancement: b("conservative_advancement")?,
        hessian_reuse: b("hessian_reuse")?,
        land_contact_events: b("land_contact_events")?,
        land_stick_events: b("land_stick_events")?,
        accept_accuracy_misses: b("accept_accuracy_misses")?,
        extrapolate: b("extrapolate")?,
    }))
}

impl ShardSpec {
    /// The spec of a fit of `cfg`'s parameters on `train` (the model's MJCF
    /// text, or `None` for the built-in cube toss, and the corner radius
    /// given to it, as the fit's [`CubeModel`] was built).
    pub fn new(model_mjcf: Option<String>, corner_radius: Option<f64>, train: &[Toss], cfg: &super::FitConfig) -> Self {
        Self {
            model_mjcf,
            corner_radius,
            tosses: train.to_vec(),
            fit: cfg.fit.clone(),
            init: cfg.init,
            mode: cfg.mode.clone(),
            cfd: cfg.cfd,
            loss: cfg.loss,
        }
    }

    /// The spec as JSON (floats as their bits).
    pub fn to_json(&self) -> Result<String, SysidError> {
        let tosses: Vec<Value> = self
            .tosses
            .iter()
            .map(|t| {
                let poses: Vec<Value> = t
                    .poses
                    .iter()
                    .map(|p| Value::Array(p.pos.iter().chain(&p.quat).map(|&x| bits(x)).collect()))
                    .collect();
                json!({ "path": t.path.display().to_string(), "index": t.index, "dt": bits(t.dt), "poses": poses })
            })
            .collect();
        let v = json!({
            "model_mjcf": self.model_mjcf,
            "corner_radius": opt_bits(self.corner_radius),
            "tosses": tosses,
            "fit": self.fit.iter().map(|p| p.name()).collect::<Vec<_>>(),
            "init": params_to_json(&self.init),
            "mode": mode_to_json(&self.mode)?,
            "cfd": self.cfd.map_or(Value::Null, |c| json!({ "width": bits(c.width), "strength": bits(c.strength) })),
            "loss": json!({
                "orientation_length": bits(self.loss.orientation_length),
                "huber_delta": opt_bits(self.loss.huber_delta),
            }),
        });
        Ok(v.to_string())
    }

    /// Reads [`Self::to_json`]'s output.
    pub fn from_json(text: &str) -> Result<Self, SysidError> {
        let v: Value = serde_json::from_str(text).map_err(|e| SysidError::Input(format!("shard spec: {e}")))?;
        let model_mjcf = match &v["model_mjcf"] {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            _ => return Err(SysidError::Input("shard spec: model_mjcf is not text".into())),
        };
        let list = |k: &str| v[k].as_array().ok_or_else(|| SysidError::Input(format!("shard spec: {k} is not a list")));
        let mut tosses = vec![];
        for (i, t) in list("tosses")?.iter().enumerate() {
            let what = |f: &str| format!("tosses[{i}].{f}");
            let poses = t["poses"]
                .as_array()
                .ok_or_else(|| SysidError::Input(format!("shard spec: {} is not a list", what("poses"))))?
                .iter()
                .map(|p| -> Result<Pose, SysidError> {
                    let x = p.as_array().filter(|a| a.len() == 7).ok_or_else(|| {
                        SysidError::Input(format!("shard spec: a pose of {} is not 7 floats", what("poses")))
                    })?;
                    let g = |j: usize| unbits(&x[j], &what("poses"));
                    Ok(Pose { pos: [g(0)?, g(1)?, g(2)?], quat: [g(3)?, g(4)?, g(5)?, g(6)?] })
                })
                .collect::<Result<Vec<_>, _>>()?;
            tosses.push(Toss {
                path: PathBuf::from(t["path"].as_str().unwrap_or_default()),
                index: t["index"].as_u64().ok_or_else(|| SysidError::Input(format!("shard spec: {}", what("index"))))?
                    as usize,
                dt: unbits(&t["dt"], &what("dt"))?,
                poses,
            });
        }
        let names: Vec<&str> = list("fit")?.iter().filter_map(Value::as_str).collect();
        let fit =
            FitParam::parse_list(&names.join(",")).map_err(|e| SysidError::Input(format!("shard spec: fit: {e}")))?;
        let cfd = match &v["cfd"] {
            Value::Null => None,
            c => Some(Cfd {
                width: unbits(&c["width"], "cfd.width")?,
                strength: unbits(&c["strength"], "cfd.strength")?,
            }),
        };
        Ok(Self {
            model_mjcf,
            corner_radius: opt_unbits(&v["corner_radius"], "corner_radius")?,
            tosses,
            fit,
            init: params_from_json(&v["init"])?,
            mode: mode_from_json(&v["mode"])?,
            cfd,
            loss: Loss {
                orientation_length: unbits(&v["loss"]["orientation_length"], "loss.orientation_length")?,
                huber_delta: opt_unbits(&v["loss"]["huber_delta"], "loss.huber_delta")?,
            },
        })
    }

    /// The cube model the spec describes.
    pub fn cube(&self) -> Result<CubeModel, SysidError> {
        let model = match &self.model_mjcf {
            Some(text) => crate::Model::from_mjcf_str_named(text, "shard model")
                .map_err(|e| SysidError::Model(format!("shard model: {e}")))?,
            None => crate::scenes::cube_toss(),
        };
        let cube = CubeModel::new(model)?;
        match self.corner_radius {
            Some(r) => cube.with_corner_radius(r),
            None => Ok(cube),
        }
    }
}

/// The differentiable rollout of a fit: the exact derivative of the fitted
/// map (lagged friction load), with the parametrization's parameters and
/// contacts from distance.
pub(super) fn training_rollout(
    cube: &CubeModel,
    param: &Parametrization,
    mode: &Mode,
    cfd: Option<Cfd>,
) -> DiffRollout {
    DiffRollout::new(Arc::new(cube.model.clone()), mode.clone(), 1.0)
        .with_params(param.rollout_params.clone())
        .with_cfd(cfd)
        .with_friction_load(FrictionLoad::Lagged)
}

/// Computes the per-segment losses and gradients of training segments.
pub struct Shard {
    tosses: Vec<Toss>,
    param: Parametrization,
    rollout: DiffRollout,
    loss: Loss,
    device: Device,
}

impl std::fmt::Debug for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shard")
            .field("tosses", &self.tosses.len())
            .field("fit", &self.param.fit)
            .finish_non_exhaustive()
    }
}

impl Shard {
    /// The shard a spec describes.
    pub fn new(spec: &ShardSpec) -> Result<Self, SysidError> {
        let cube = spec.cube()?;
        let param = Parametrization::new(spec.fit.clone(), spec.init, &cube)?;
        Ok(Self::from_parts(&cube, spec.tosses.clone(), param, &spec.mode, spec.cfd, spec.loss))
    }

    pub(super) fn from_parts(
        cube: &CubeModel,
        tosses: Vec<Toss>,
        param: Parametrization,
        mode: &Mode,
        cfd: Option<Cfd>,
        loss: Loss,
    ) -> Self {
        let rollout = training_rollout(cube, &param, mode, cfd);
        Self { tosses, param, rollout, loss, device: Device::flex().autodiff() }
    }

    /// Number of fit coordinates.
    pub fn coordinates(&self) -> usize {
        self.param.fit.len()
    }

    /// Number of training tosses.
    pub fn tosses(&self) -> usize {
        self.tosses.len()
    }
}

impl GradientSource for Shard {
    fn gradients(&mut self, phi: &[f64], batch: &[Segment]) -> Result<SegmentGradients, SysidError> {
        let nphi = self.coordinates();
        if phi.len() != nphi {
            return Err(SysidError::Input(format!("{} fit coordinates given, the shard fits {nphi}", phi.len())));
        }
        for (i, s) in batch.iter().enumerate() {
            let ok = self
                .tosses
                .get(s.toss)
                .is_some_and(|t| s.samples >= 2 && s.start >= 1 && s.start + s.samples <= t.len());
            if !ok {
                return Err(SysidError::Input(format!(
                    "segment {i} (toss {}, samples {}..{}) is not inside the shard's {} training tosses",
                    s.toss,
                    s.start,
                    s.start + s.samples,
                    self.tosses.len()
                )));
            }
            if s.samples != batch[0].samples {
                return Err(SysidError::Input(format!(
                    "segment {i} has {} samples, segment 0 {}: one batch, one length",
                    s.samples, batch[0].samples
                )));
            }
        }
        let m = batch.len();
        let mut out = SegmentGradients {
            loss: vec![f64::NAN; m],
            gradient: vec![0.0; m * nphi],
            solves: vec![0; m],
            failures: vec![],
        };
        if m == 0 {
            return Ok(out);
        }
        let theta = self.param.multipliers(&self.param.from_phi(phi));
        let results: Vec<Result<Recording, DiffError>> = batch
            .par_iter()
            .map(|s| {
                let toss = &self.tosses[s.toss];
                rollout_for(&self.rollout, toss).record(&toss.state(s.start), &[], &theta, s.steps())
            })
            .collect();
        let mut recs = Vec::with_capacity(m);
        let mut kept = Vec::with_capacity(m);
        for (i, r) in results.into_iter().enumerate() {
            match r {
                Ok(rec) => {
                    out.solves[i] = rec.solves();
                    recs.push(rec);
                    kept.push(i);
                }
                Err(e) => out.failures.push((i, e.to_string())),
            }
        }
        if recs.is_empty() {
            return Ok(out);
        }
        let nw = recs.len();
        let steps = batch[0].steps();
        let opts = (&self.device, DType::F64);
        let mut traj = Vec::with_capacity(nw * (steps + 1) * NX);
        let mut pos = Vec::with_capacity(nw * steps * 3);
        let mut quat = Vec::with_capacity(nw * steps * 4);
        for (&i, rec) in kept.iter().zip(&recs) {
            let s = &batch[i];
            traj.extend_from_slice(rec.trajectory());
            for j in 1..s.samples {
                let p = &self.tosses[s.toss].poses[s.start + j];
                pos.extend_from_slice(&p.pos);
                quat.extend_from_slice(&p.quat);
            }
        }
        // The loss and its cotangent on the trajectory (burn), then the
        // reverse pass per segment for ∂loss/∂θ, then θ(φ) (burn).
        let traj = Tensor::<3>::from_data(TensorData::new(traj, [nw, steps + 1, NX]), opts).require_grad();
        let pos = Tensor::<3>::from_data(TensorData::new(pos, [nw, steps, 3]), opts);
        let quat = Tensor::<3>::from_data(TensorData::new(quat, [nw, steps, 4]), opts);
        let p: Tensor<3> = traj.clone().slice([0..nw, 1..steps + 1, 0..3]);
        let q: Tensor<3> = traj.clone().slice([0..nw, 1..steps + 1, 3..7]);
        let dp2 = (p - pos).powi_scalar(2).sum_dim(2);
        let dot = (q * quat).sum_dim(2);
        let per_segment = self.loss.tensor(dp2, dot).mean_dim(1);
        let values: Vec<f64> = per_segment.to_data().iter::<f64>().collect();
        let grads = per_segment.sum().backward();
        let per = (steps + 1) * NX;
        let g: Vec<f64> = traj.grad(&grads).map_or(vec![0.0; nw * per], |g| g.to_data().iter::<f64>().collect());
        let np = self.rollout.np();
        let mut theta_bar = vec![0.0; nw * np];
        let mut vjp_failed = vec![false; nw];
        let cot = recs.par_iter().enumerate().map(|(k, rec)| rec.vjp(&g[k * per..(k + 1) * per])).collect::<Vec<_>>();
        for (k, c) in cot.into_iter().enumerate() {
            match c {
                Ok((_, _, tb)) => theta_bar[k * np..(k + 1) * np].copy_from_slice(&tb),
                Err(e) => {
                    out.failures.push((kept[k], e.to_string()));
                    vjp_failed[k] = true;
                }
            }
        }
        // One row of coordinates per segment: the gradient of Σ θ̄_k · θ(φ_k)
        // with respect to row k is segment k's own gradient.
        let rows: Vec<f64> = (0..nw).flat_map(|_| phi.iter().copied()).collect();
        let phi_t = Tensor::<2>::from_data(TensorData::new(rows, [nw, nphi]), opts).require_grad();
        let theta_t = Tensor::cat(
            (0..nw).map(|k| self.param.multipliers_tensor(phi_t.clone().slice([k..k + 1, 0..nphi]))).collect(),
            0,
        );
        let tb = Tensor::<2>::from_data(TensorData::new(theta_bar, [nw, np]), opts);
        let grads = (theta_t * tb).sum().backward();
        let g: Vec<f64> = phi_t.grad(&grads).map_or(vec![0.0; nw * nphi], |g| g.to_data().iter::<f64>().collect());
        for (k, &i) in kept.iter().enumerate() {
            if vjp_failed[k] {
                continue;
            }
            out.loss[i] = values[k];
            out.gradient[i * nphi..(i + 1) * nphi].copy_from_slice(&g[k * nphi..(k + 1) * nphi]);
        }
        Ok(out)
    }
}
