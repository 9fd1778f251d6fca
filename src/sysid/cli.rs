//! `cenic sysid fit` and `cenic sysid eval`: the command-line face of
//! [`crate::sysid`], in the library so that the Python package runs the same
//! command ([`run_args`], with a gradient source on a Ray cluster for
//! `--ray`).

use crate::Model;
use crate::diff::Cfd;
use crate::integrator::{CenicParams, Mode};
use crate::sysid::{self, CubeModel, FitConfig, FitParam, GradientSource, Predictor, ShardSpec};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;

/// Builds the gradient source of `--ray ADDRESS --ray-workers N` from the
/// address, the number of workers and the shard spec's JSON
/// ([`ShardSpec::to_json`]).
pub type RaySource<'a> = &'a mut dyn FnMut(&str, usize, &str) -> Result<Box<dyn GradientSource + Send>, String>;

/// The `cenic sysid` subcommands.
#[derive(Subcommand)]
pub enum SysidCommand {
    /// Fit a tossed box's parameters to recorded tosses; writes OUT/fitted.xml,
    /// OUT/report.json, OUT/loss.png and OUT/overlay.png.
    Fit(Box<FitArgs>),
    /// Multi-step prediction errors of a model on recorded tosses.
    Eval(EvalArgs),
}

/// Integration settings shared by fit and eval.
#[derive(Args)]
#[allow(missing_docs)]
pub struct SimArgs {
    /// CENIC accuracy (m, rad).
    #[arg(long, default_value_t = 1e-4, conflicts_with = "dt", allow_hyphen_values = true)]
    accuracy: f64,
    /// Fixed steps of this size (s) instead of error control.
    #[arg(long, allow_hyphen_values = true)]
    dt: Option<f64>,
    /// Largest CENIC step (s).
    #[arg(long, default_value_t = 0.1, allow_hyphen_values = true)]
    max_step: f64,
}

impl SimArgs {
    fn mode(&self) -> Result<Mode, String> {
        match self.dt {
            Some(dt) => Ok(Mode::Fixed { dt: positive("--dt", dt)? }),
            None => Ok(Mode::ErrorControlled(CenicParams {
                accuracy: positive("--accuracy", self.accuracy)?,
                max_step: positive("--max-step", self.max_step)?,
                ..CenicParams::default()
            })),
        }
    }

    fn describe(&self) -> String {
        match self.dt {
            Some(dt) => format!("fixed steps of {dt} s"),
            None => format!("CENIC, accuracy {}", self.accuracy),
        }
    }
}

/// The flags of `cenic sysid fit`.
#[derive(Args)]
pub struct FitArgs {
    /// Directory of toss CSVs (t,px,py,pz,qw,qx,qy,qz[,...]).
    #[arg(long)]
    data: PathBuf,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// MJCF model of the box and the ground; the built-in cube toss when omitted.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Training tosses: index range A-B (inclusive; the number in the file name).
    #[arg(long, default_value = "0-399")]
    train: String,
    /// Validation tosses: index range C-D.
    #[arg(long, default_value = "400-455")]
    val: String,
    /// Samples per training segment, the start included (4 predicted steps for 5).
    #[arg(long, default_value_t = 5)]
    segment: usize,
    /// Samples between segment starts; segment − 1 (predicted samples do not overlap) when omitted.
    #[arg(long)]
    stride: Option<usize>,
    /// Parameters to fit, comma-separated: side, mass, mu_static, mu_dynamic, stiffness,
    /// dissipation, corner_radius (a sharp box is given corners of --corner-radius, 3 mm by
    /// default). The default is the recipe of the guide's system-identification chapter:
    /// side, rounded corners and an effective contact (stiffness, dissipation) with
    /// orientation weighed at 0.3 m beat the nominal cube at every validation horizon on
    /// the ContactNets tosses, in position and orientation (BENCHMARKS.md); `side` alone
    /// is DiffMJX's fit.
    #[arg(long, default_value = "side,corner_radius,stiffness,dissipation")]
    fit: String,
    /// Initial side length (m).
    #[arg(long, allow_hyphen_values = true)]
    init_side: Option<f64>,
    /// Radius of the box's rounded corners (m), the initial value when corner_radius is
    /// fitted: the box's contacts become 8 spheres of this radius at the corners of the box
    /// shrunk by it (exact against a plane); 0: sharp corners. When omitted: the model's
    /// own, or 3 mm for a sharp box whose corner_radius is fitted.
    #[arg(long, allow_hyphen_values = true)]
    corner_radius: Option<f64>,
    /// Initial mass (kg).
    #[arg(long, allow_hyphen_values = true)]
    init_mass: Option<f64>,
    /// Initial static friction coefficient.
    #[arg(long, allow_hyphen_values = true)]
    init_mu_static: Option<f64>,
    /// Initial dynamic friction coefficient.
    #[arg(long, allow_hyphen_values = true)]
    init_mu_dynamic: Option<f64>,
    /// Initial contact stiffness of the pair (N/m).
    #[arg(long, allow_hyphen_values = true)]
    init_stiffness: Option<f64>,
    /// Initial Hunt–Crossley dissipation of the pair (s/m).
    #[arg(long, allow_hyphen_values = true)]
    init_dissipation: Option<f64>,
    /// Draw the initial values of the fitted parameters at random with this seed
    /// (side 60–140 mm, μs 0.05–0.6, μd/μs 0.5–0.95, stiffness and dissipation
    /// 0.1–10 × nominal, mass 0.5–2 × nominal); --init-* flags take precedence.
    #[arg(long)]
    random_init: Option<u64>,
    /// Passes over the training segments.
    #[arg(long, default_value_t = 3)]
    epochs: usize,
    /// Segments per Adam step.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Initial learning rate (log coordinates).
    #[arg(long, default_value_t = 0.05, allow_hyphen_values = true)]
    lr: f64,
    /// Final learning rate (cosine schedule).
    #[arg(long, default_value_t = 5e-4, allow_hyphen_values = true)]
    lr_final: f64,
    #[command(flatten)]
    sim: SimArgs,
    /// Contacts-from-distance width (m); 0 turns CFD off.
    #[arg(long, default_value_t = 0.05, allow_hyphen_values = true)]
    cfd_width: f64,
    /// Contacts-from-distance strength (N); the body's weight when omitted.
    #[arg(long, allow_hyphen_values = true)]
    cfd_strength: Option<f64>,
    /// Length (m) that converts orientation errors into position errors in the loss.
    #[arg(long, default_value_t = 0.3, allow_hyphen_values = true)]
    orientation_length: f64,
    /// δ (mm) of the pseudo-Huber loss √(e² + δ²) − δ of the pose error e; 0: squared error (MSE).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    huber_delta: f64,
    /// Seed of the segment shuffling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Level every toss (training and validation): one constant body-frame rotation per toss
    /// makes its last sample lie exactly flat on a face (a per-toss tracking offset; see
    /// `cenic::sysid::Toss::level`). Evaluate the fitted model with `sysid eval --level` too.
    /// With `--fit side,corner_radius --corner-radius 0.003 --orientation-length 0.3` this is
    /// the fit that beats the nominal cube at every horizon on levelled validation tosses
    /// (BENCHMARKS.md; on raw poses it loses horizon-4 orientation).
    #[arg(long)]
    level: bool,
    /// Horizons of the final validation (repeatable).
    #[arg(long = "horizon", default_values_t = [4, 16, 64])]
    horizons: Vec<usize>,
    /// Validation tosses drawn in overlay.png.
    #[arg(long, default_value_t = 3)]
    overlay: usize,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Shard each Adam step's segments over a Ray cluster: an address as `ray.init`
    /// takes it (`auto`, `HOST:PORT`, `ray://HOST:PORT`), `local` to start a cluster
    /// here, or `default` for Ray's own discovery. Runs the fit through the Python
    /// package (`python -m cenic.ray`, with $CENIC_PYTHON or python3; `pip install
    /// cenic[ray]`); the result equals the local fit.
    #[arg(long, value_name = "ADDRESS")]
    ray: Option<String>,
    /// With --ray: the number of worker actors (one CPU each).
    #[arg(long, default_value_t = 2, requires = "ray")]
    ray_workers: usize,
}

/// The flags of `cenic sysid eval`.
#[derive(Args)]
pub struct EvalArgs {
    /// MJCF model (one free body), e.g. a fitted.xml.
    #[arg(long)]
    model: PathBuf,
    /// Directory of toss CSVs.
    #[arg(long)]
    data: PathBuf,
    /// Only the tosses with indices in this range A-B.
    #[arg(long)]
    tosses: Option<String>,
    /// Prediction horizons in samples (repeatable).
    #[arg(long = "horizon", default_values_t = [4, 16, 64])]
    horizons: Vec<usize>,
    /// Samples between segment starts.
    #[arg(long, default_value_t = 1)]
    stride: usize,
    /// Level every toss first (as `sysid fit --level`): errors against the recorded
    /// orientations of a predictor with a per-toss orientation offset.
    #[arg(long)]
    level: bool,
    #[command(flatten)]
    sim: SimArgs,
    /// Print the errors as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also write an HTML replay (as `cenic view`) of the first `--video-tosses`
    /// tosses: each recorded toss with the model's prediction from its first
    /// sample overlaid (translucent), the tosses side by side.
    #[arg(long)]
    video: Option<PathBuf>,
    /// Tosses in the replay of `--video`.
    #[arg(long, default_value_t = 3)]
    video_tosses: usize,
}

fn positive(flag: &str, x: f64) -> Result<f64, String> {
    if x > 0.0 && x.is_finite() { Ok(x) } else { Err(format!("{flag} must be a positive finite number, got {x}")) }
}

impl SysidCommand {
    /// The `--ray` address of a fit, if given.
    pub fn ray_address(&self) -> Option<&str> {
        match self {
            SysidCommand::Fit(a) => a.ray.as_deref(),
            SysidCommand::Eval(_) => None,
        }
    }
}

/// Runs a `cenic sysid` subcommand; `ray` builds the gradient source of a
/// fit with `--ray` (an error when it is needed and `None`).
pub fn run(cmd: SysidCommand, ray: Option<RaySource<'_>>) -> Result<(), String> {
    match cmd {
        SysidCommand::Fit(a) => fit(*a, ray),
        SysidCommand::Eval(a) => eval(a),
    }
}

#[derive(Parser)]
#[command(name = "cenic sysid", no_binary_name = true)]
struct SysidCli {
    #[command(subcommand)]
    command: SysidCommand,
}

/// Parses `argv` (what follows `cenic sysid`, e.g. `["fit", "--data", …]`)
/// and runs it as [`run`] does.
pub fn run_args(argv: &[String], ray: Option<RaySource<'_>>) -> Result<(), String> {
    let cli = SysidCli::try_parse_from(argv).map_err(|e| e.render().to_string())?;
    run(cli.command, ray)
}

fn load_tosses(dir: &std::path::Path, level: bool) -> Result<Vec<sysid::Toss>, String> {
    let mut tosses = sysid::load_dir(dir, 3).map_err(|e| e.to_string())?;
    if level {
        for t in &mut tosses {
            t.level().map_err(|e| format!("--level: {e}"))?;
        }
    }
    Ok(tosses)
}

/// Initial corner radius (m) of a sharp box whose `corner_radius` is fitted
/// (the guide's recipe; BENCHMARKS.md "The FD recipe from default starts").
const DEFAULT_CORNER_RADIUS: f64 = 0.003;

fn fit(a: FitArgs, ray: Option<RaySource<'_>>) -> Result<(), String> {
    let started = std::time::Instant::now();
    let model = match &a.model {
        Some(p) => Model::from_mjcf_file(p).map_err(|e| e.to_string())?,
        None => crate::scenes::cube_toss(),
    };
    let mut cube = CubeModel::new(model).map_err(|e| e.to_string())?;
    let fit_params = FitParam::parse_list(&a.fit).map_err(|e| format!("--fit: {e}"))?;
    // The recipe fits the corners: a sharp box starts from the radius it measured best.
    let corner_radius = a.corner_radius.or_else(|| {
        (fit_params.contains(&FitParam::CornerRadius) && !cube.is_rounded()).then_some(DEFAULT_CORNER_RADIUS)
    });
    if let Some(r) = corner_radius {
        if !(r >= 0.0 && r.is_finite()) {
            return Err(format!("--corner-radius must be ≥ 0, got {r}"));
        }
        cube = cube.with_corner_radius(r).map_err(|e| format!("--corner-radius: {e}"))?;
    }
    let mut init = cube.nominal;
    if let Some(seed) = a.random_init {
        use rand::SeedableRng;
        init = sysid::random_start(&fit_params, init, cube.nominal, &mut rand::rngs::StdRng::seed_from_u64(seed));
    }
    for (flag, value, p) in [
        ("--init-side", a.init_side, FitParam::Side),
        ("--init-mass", a.init_mass, FitParam::Mass),
        ("--init-mu-static", a.init_mu_static, FitParam::MuStatic),
        ("--init-mu-dynamic", a.init_mu_dynamic, FitParam::MuDynamic),
        ("--init-stiffness", a.init_stiffness, FitParam::Stiffness),
        ("--init-dissipation", a.init_dissipation, FitParam::Dissipation),
    ] {
        if let Some(x) = value {
            init.set(p, positive(flag, x)?);
        }
    }
    if a.init_mu_static.is_some() && a.init_mu_dynamic.is_none() {
        init.mu_dynamic = init.mu_dynamic.min(init.mu_static);
    }
    init.validate().map_err(|e| format!("initial values: {e}"))?;
    let init = sysid::interior_start(&fit_params, init);
    let train_range = sysid::parse_range(&a.train).map_err(|e| format!("--train: {e}"))?;
    let val_range = sysid::parse_range(&a.val).map_err(|e| format!("--val: {e}"))?;
    let tosses = load_tosses(&a.data, a.level)?;
    let train = sysid::select(&tosses, &train_range);
    let val = sysid::select(&tosses, &val_range);
    if train.is_empty() || val.is_empty() {
        return Err(format!(
            "{}: {} tosses, {} in --train {} and {} in --val {}",
            a.data.display(),
            tosses.len(),
            train.len(),
            a.train,
            val.len(),
            a.val
        ));
    }
    if a.huber_delta < 0.0 || !a.huber_delta.is_finite() {
        return Err(format!("--huber-delta must be ≥ 0, got {}", a.huber_delta));
    }
    if a.cfd_width < 0.0 || !a.cfd_width.is_finite() {
        return Err(format!("--cfd-width must be ≥ 0, got {}", a.cfd_width));
    }
    let weight = cube.nominal.mass * cube.model.options.gravity.iter().map(|g| g * g).sum::<f64>().sqrt();
    let cfd = if a.cfd_width > 0.0 {
        let strength = match a.cfd_strength {
            Some(s) => positive("--cfd-strength", s)?,
            None => weight.max(1e-6),
        };
        Some(Cfd { width: a.cfd_width, strength })
    } else {
        None
    };
    let cfg = FitConfig {
        fit: fit_params.clone(),
        init,
        segment: a.segment,
        stride: a.stride.unwrap_or(a.segment.saturating_sub(1).max(1)),
        epochs: a.epochs,
        batch: a.batch,
        lr: positive("--lr", a.lr)?,
        lr_final: positive("--lr-final", a.lr_final)?,
        mode: a.sim.mode()?,
        cfd,
        loss: sysid::Loss {
            orientation_length: a.orientation_length,
            huber_delta: (a.huber_delta > 0.0).then_some(a.huber_delta),
        },
        seed: a.seed,
        horizons: a.horizons.clone(),
        eval_stride: 1,
        overlay_tosses: a.overlay,
        progress: !a.quiet,
    };
    println!(
        "{}: {} training tosses ({}), {} validation tosses ({}); {}; fitting {}",
        a.data.display(),
        train.len(),
        a.train,
        val.len(),
        a.val,
        a.sim.describe(),
        a.fit
    );
    println!("initial: {}", init.summary());
    let mut remote = match (&a.ray, ray) {
        (None, _) => None,
        (Some(address), Some(make)) => {
            if a.ray_workers == 0 {
                return Err("--ray-workers must be at least 1".into());
            }
            let text = match &a.model {
                Some(p) => Some(std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?),
                None => None,
            };
            let spec = ShardSpec::new(text, corner_radius, &train, &cfg).to_json().map_err(|e| e.to_string())?;
            println!("sharding each Adam step over {} Ray workers ({address})", a.ray_workers);
            Some(make(address, a.ray_workers, &spec).map_err(|e| format!("--ray {address}: {e}"))?)
        }
        (Some(_), None) => {
            return Err("--ray needs the Python package: run `python -m cenic.ray sysid fit ...` \
                        (the cenic command does this itself)"
                .into());
        }
    };
    let source = remote.as_mut().map(|r| r.as_mut() as &mut dyn GradientSource);
    let result = sysid::fit_with(&cube, &train, &val, &cfg, source).map_err(|e| e.to_string())?;
    let settings = serde_json::json!({
        "data": a.data.display().to_string(),
        "model": a.model.as_ref().map(|p| p.display().to_string()),
        "train": a.train, "val": a.val,
        "train_tosses": train.len(), "val_tosses": val.len(),
        "segment": a.segment, "stride": cfg.stride,
        "fit": fit_params.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "corner_radius_m": cube.nominal.corner_radius,
        "random_init": a.random_init,
        "epochs": a.epochs, "batch": a.batch, "lr": a.lr, "lr_final": a.lr_final,
        "integration": a.sim.describe(),
        "cfd_width_m": a.cfd_width, "cfd_strength_n": cfd.map(|c| c.strength),
        "orientation_length_m": a.orientation_length,
        "huber_delta_mm": (a.huber_delta > 0.0).then_some(a.huber_delta),
        "seed": a.seed,
        "level": a.level,
        "adam": { "beta_1": sysid::ADAM_BETA_1, "beta_2": sysid::ADAM_BETA_2, "epsilon": sysid::ADAM_EPSILON },
        "threads": rayon::current_num_threads(),
        "ray": a.ray, "ray_workers": a.ray.as_ref().map(|_| a.ray_workers),
    });
    sysid::write_outputs(&a.out, &cube, &result, settings).map_err(|e| e.to_string())?;
    let failed: usize = result.epochs.iter().map(|e| e.failed_train + e.failed_val).sum();
    if failed > 0 {
        let first = result.epochs.iter().find_map(|e| e.first_failure.clone()).unwrap_or_default();
        println!("warning: {failed} segment rollouts failed and were left out (see report.json); first: {first}");
    }
    for (what, e) in [("initial", &result.eval_initial), ("fitted", &result.eval_fitted)] {
        println!("validation, {what} model:\n{}", indent(&e.text()));
        if let Some(w) = e.warning() {
            println!("  {w}");
        }
    }
    println!(
        "fit {:.1} s ({} epochs of {} segments), total {:.1} s",
        result.fit_seconds,
        a.epochs,
        result.train_segments,
        started.elapsed().as_secs_f64()
    );
    println!("wrote {0}/fitted.xml, {0}/report.json, {0}/loss.png, {0}/overlay.png", a.out.display());
    println!("fitted: {}", result.fitted.summary());
    Ok(())
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

fn eval(a: EvalArgs) -> Result<(), String> {
    if a.horizons.contains(&0) || a.stride == 0 {
        return Err("--horizon and --stride must be at least 1".into());
    }
    let model = Arc::new(Model::from_mjcf_file(&a.model).map_err(|e| e.to_string())?);
    let pred = Predictor::new(model.clone(), a.sim.mode()?).map_err(|e| e.to_string())?;
    let mut tosses = load_tosses(&a.data, a.level)?;
    if let Some(r) = &a.tosses {
        let range = sysid::parse_range(r).map_err(|e| format!("--tosses: {e}"))?;
        tosses = sysid::select(&tosses, &range);
        if tosses.is_empty() {
            return Err(format!("{}: no toss with an index in {r}", a.data.display()));
        }
    }
    let e = sysid::evaluate(&pred, &tosses, &a.horizons, a.stride);
    if let Some(w) = e.warning() {
        eprintln!("{w}");
    }
    if a.json {
        let mut j = e.to_json();
        j["model"] = serde_json::json!(a.model.display().to_string());
        j["data"] = serde_json::json!(a.data.display().to_string());
        j["tosses"] = serde_json::json!(tosses.len());
        j["integration"] = serde_json::json!(a.sim.describe());
        j["level"] = serde_json::json!(a.level);
        println!("{}", serde_json::to_string_pretty(&j).expect("JSON values serialise"));
    } else {
        println!("{}", e.text());
    }
    if let Some(path) = &a.video {
        write_replay(path, &model, &pred, &tosses[..a.video_tosses.min(tosses.len())])?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// The replay page of `tosses`: per toss the recording and the prediction
/// from its first sample, overlaid in one group.
fn write_replay(path: &std::path::Path, model: &Model, pred: &Predictor, tosses: &[sysid::Toss]) -> Result<(), String> {
    use crate::view::{Layout, Track, replay_html};
    if tosses.is_empty() {
        return Err("--video: no toss to show (--video-tosses 0)".into());
    }
    let mut tracks = vec![];
    for (g, toss) in tosses.iter().enumerate() {
        let times: Vec<f64> = (0..toss.len()).map(|k| k as f64 * toss.dt).collect();
        let recorded: Vec<f64> = toss.poses.iter().flat_map(|p| p.pos.iter().chain(&p.quat).copied()).collect();
        let mut rec = Track::from_qpos(model, &format!("{} recorded", toss.name()), &times, &recorded)?;
        rec.group = Some(g);
        tracks.push(rec);
        match pred.predict(toss, 0, toss.len() - 1) {
            Ok(x) => {
                let qpos: Vec<f64> = x.chunks(sysid::NX).flat_map(|s| s[..7].iter().copied()).collect();
                let mut sim = Track::from_qpos(model, &format!("{} simulated", toss.name()), &times, &qpos)?;
                sim.group = Some(g);
                tracks.push(sim);
            }
            Err(e) => eprintln!("{}: the prediction failed ({e}); the replay shows the recording alone", toss.name()),
        }
    }
    let html =
        replay_html(model, &tracks, Layout::SideBySide, &format!("{}: recorded and simulated tosses", model.name))?;
    std::fs::write(path, html).map_err(|e| format!("{}: {e}", path.display()))
}
