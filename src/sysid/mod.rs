//! System identification of a tossed box from recorded poses (the
//! ContactNets cube tosses; DiffMJX Sec. 5.1 and C.2), behind the
//! `cenic sysid fit` and `cenic sysid eval` commands.
//!
//! # Data
//! A directory of toss CSVs ([`load_dir`]): a header with at least
//! `t,px,py,pz,qw,qx,qy,qz` (SI units, orientation body to world), one row
//! per sample at a uniform interval. Bad files are errors naming the file
//! and line. Tosses are split into training and validation sets by the
//! number in their file name ([`select`]).
//!
//! # Segments and initial states
//! A segment is N consecutive samples ([`segments`]); the simulation starts
//! from the first and predicts the other N − 1. The initial velocities come
//! from the recorded poses by central differences over the neighbouring
//! samples ([`Toss::state`]); the recorded velocity columns are not used.
//!
//! # Parameters
//! [`CubeParams`]: side length, mass, μs, μd, contact stiffness and
//! dissipation of the box's contact pair. The optimizer works on
//! unconstrained coordinates ([`Parametrization`]): logarithms, and the
//! logit of μd/μs, so every value stays positive and μd ≤ μs by
//! construction. The simulator sees them as multipliers on the model
//! ([`crate::diff::Param`]); the fitted model is written back as MJCF
//! ([`CubeModel::to_mjcf`]) that reproduces those multipliers exactly.
//!
//! # Loss and optimizer
//! Per predicted sample, the pose error e² = ‖Δp‖² + 4ℓ²(1 − ⟨q, q̂⟩²)
//! ([`Loss`]): the orientation term is the displacement of a point ℓ from
//! the centre, free of the quaternion sign ambiguity; the loss is e² or the
//! pseudo-Huber √(e² + δ²) − δ, averaged over the predicted samples. Mini-batches of segments are
//! rolled out in parallel (rayon), each a [`crate::diff::DiffRollout`]
//! (CENIC or fixed steps, optional contacts from distance) recorded for
//! the reverse pass: burn's autodiff gives the loss's cotangent on the
//! trajectory, the reverse pass ([`crate::diff::Recording::vjp`]) its
//! pull-back to the parameter multipliers θ, and burn again the chain
//! through θ(φ) to the fit coordinates; burn's
//! Adam takes the step with a cosine learning-rate schedule ([`fit`]). A
//! segment whose simulation fails is left out of its batch and counted in
//! the report.
//!
//! # Distributed fits
//! Each segment's loss and gradient is computed on its own ([`Shard`]) and
//! the Adam step sums them in the batch's order, so the segments of a step
//! can be computed anywhere: [`fit_with`] takes a [`GradientSource`], and
//! a [`ShardSpec`] (JSON) carries what a remote shard needs. The Python
//! package's `cenic.ray.RayGradients` spreads them over Ray actors (`cenic
//! sysid fit --ray ADDRESS`); the result equals the local fit.
//!
//! # Evaluation
//! [`evaluate`]: mean position (mm) and orientation (degrees) errors of
//! N-step predictions over all segments, for several N, and of whole tosses
//! predicted from their first sample.
//!
//! # Example
//! ```no_run
//! use cenic::sysid::{self, CubeModel, FitConfig, FitParam};
//! use std::path::Path;
//!
//! let tosses = sysid::load_dir(Path::new("../shared/data/contactnets_cube_toss"), 6)?;
//! let train = sysid::select(&tosses, &(0..=399));
//! let val = sysid::select(&tosses, &(400..=455));
//! let cube = CubeModel::new(cenic::scenes::cube_toss())?;
//! let mut init = cube.nominal;
//! init.side = 0.06; // a bad initial guess (m)
//! let cfg = FitConfig { progress: true, ..FitConfig::new(&cube, vec![FitParam::Side], init) };
//! let result = sysid::fit(&cube, &train, &val, &cfg)?;
//! println!("{}", result.fitted.summary());
//! # Ok::<(), cenic::sysid::SysidError>(())
//! ```

pub mod cli;
mod data;
mod fit;
mod params;
pub mod plot;
mod predict;
mod shard;

pub use data::{
    INTERVAL_TOLERANCE, LEVEL_MAX_TILT_DEG, Pose, QUAT_NORM_TOLERANCE, REQUIRED_COLUMNS, Segment, Toss, load_dir,
    load_toss, parse_range, parse_toss, segments, select,
};
pub use fit::{
    ADAM_BETA_1, ADAM_BETA_2, ADAM_EPSILON, EpochRecord, FitConfig, FitResult, Overlay, fit, fit_with, params_json,
};
pub use params::{
    CubeModel, CubeParams, FitParam, MAX_INITIAL_FRICTION_RATIO, Parametrization, interior_start, random_start,
};
pub use predict::{
    Evaluation, Failure, HorizonErrors, Loss, NX, Predictor, evaluate, pose_error, rollout_for, segment_loss,
};
pub use shard::{GradientSource, SegmentGradients, Shard, ShardSpec};

use std::path::{Path, PathBuf};

/// Errors of system identification.
#[derive(Debug, thiserror::Error)]
pub enum SysidError {
    /// A toss file is malformed.
    #[error("{}:{line}: {message}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The model is not one system identification supports.
    #[error("{0}")]
    Model(String),
    /// Bad settings or parameters.
    #[error("{0}")]
    Input(String),
}

/// Writes a fit's outputs into `dir` (created if needed): `fitted.xml` (the
/// fitted model, MJCF), `report.json` ([`FitResult::to_json`] with
/// `settings`), `loss.png` and `overlay.png`.
pub fn write_outputs(
    dir: &Path,
    cube: &CubeModel,
    result: &FitResult,
    settings: serde_json::Value,
) -> Result<(), SysidError> {
    let io = |path: PathBuf| move |e: std::io::Error| SysidError::Io { path, source: e };
    std::fs::create_dir_all(dir).map_err(io(dir.to_path_buf()))?;
    let note = format!(
        "fitted by cenic sysid: {}; validation whole-toss error {:.2} mm (initial {:.2} mm)",
        result.fitted.summary(),
        result.eval_fitted.whole.position_mm,
        result.eval_initial.whole.position_mm
    );
    let xml = cube.to_mjcf(&result.fitted, &note)?;
    let path = dir.join("fitted.xml");
    std::fs::write(&path, xml).map_err(io(path.clone()))?;
    let path = dir.join("report.json");
    let json = serde_json::to_string_pretty(&result.to_json(settings)).expect("JSON values serialise");
    std::fs::write(&path, json + "\n").map_err(io(path.clone()))?;
    let plot_err = |path: PathBuf| {
        move |e: Box<dyn std::error::Error>| SysidError::Io { path, source: std::io::Error::other(e.to_string()) }
    };
    let path = dir.join("loss.png");
    plot::loss_png(&path, result).map_err(plot_err(path.clone()))?;
    let path = dir.join("overlay.png");
    plot::overlay_png(&path, &result.overlays).map_err(plot_err(path.clone()))?;
    Ok(())
}
