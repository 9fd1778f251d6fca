//! The `cenic` command line: inspect and run models.

use cenic::Model;
use cenic::batch::{Batch, CpuBatch, WorldStatus};
use cenic::gpu::{GpuBatch, GpuBatchOptions, GpuContext, GpuOptions};
use cenic::integrator::{CenicParams, Mode, WorldStats};
use cenic::output::{TRAJECTORY_HEADER, TrajectoryWriter};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(Parser)]
#[command(name = "cenic", version, about = "Error-controlled convex contact simulation for robots")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a summary of a model (bodies, joints, geoms, actuators, nq, nv, total mass),
    /// or with --adapters the GPU adapters and the one this process would use.
    Info {
        /// MJCF file; the built-in cube toss when omitted.
        model: Option<PathBuf>,
        /// List the GPU adapters in cenic's order (the `gpu:N` numbering), what
        /// CUDA_VISIBLE_DEVICES and LOCAL_RANK make visible, and the adapter
        /// `--device` (default `gpu`) selects in this process.
        #[arg(long, conflicts_with = "model")]
        adapters: bool,
        /// With --adapters: the request to resolve (`gpu`, `gpu:N`, `gpu:NAME`).
        #[arg(long, default_value = "gpu", requires = "adapters")]
        device: String,
    },
    /// Simulate a model (the built-in cube toss when no file is given).
    Run(RunArgs),
    /// System identification of a tossed box from recorded tosses.
    #[command(subcommand)]
    Sysid(cenic::sysid::cli::SysidCommand),
    /// Write a self-contained HTML replay (three.js, no network needed) of
    /// trajectories written by `cenic run --out`.
    View(ViewArgs),
}

#[derive(clap::Args)]
struct ViewArgs {
    /// MJCF file the trajectories were simulated with; the built-in cube toss when omitted.
    model: Option<PathBuf>,
    /// Trajectory CSV (`cenic run --out`); repeat for several files. Each world of each file is one track.
    #[arg(long = "traj", required = true)]
    traj: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(long, default_value = "replay.html")]
    out: PathBuf,
    /// Show the worlds overlaid (the first opaque, the others translucent) instead of side by side.
    #[arg(long)]
    overlay: bool,
    /// Page title (default: the model's name).
    #[arg(long)]
    title: Option<String>,
}

fn view(args: ViewArgs) -> Result<(), String> {
    let model = load(&args.model)?;
    let mut tracks = vec![];
    for path in &args.traj {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let prefix = if args.traj.len() > 1 { format!("{} ", path.display()) } else { String::new() };
        tracks.extend(
            cenic::view::tracks_from_csv(&model, &text, &prefix).map_err(|e| format!("{}: {e}", path.display()))?,
        );
    }
    let layout = if args.overlay { cenic::view::Layout::Overlay } else { cenic::view::Layout::SideBySide };
    let title = args.title.unwrap_or_else(|| model.name.clone());
    let html = cenic::view::replay_html(&model, &tracks, layout, &title)?;
    std::fs::write(&args.out, html).map_err(|e| format!("{}: {e}", args.out.display()))?;
    println!("wrote {} ({} tracks)", args.out.display(), tracks.len());
    Ok(())
}

#[derive(clap::Args)]
struct RunArgs {
    /// MJCF file; the built-in cube toss (from keyframe "toss") when omitted.
    model: Option<PathBuf>,
    /// Number of parallel worlds.
    #[arg(long, default_value_t = 1)]
    worlds: usize,
    /// Simulated duration (s).
    #[arg(long, default_value_t = 2.0, allow_hyphen_values = true)]
    time: f64,
    /// Error-controlled mode: requested accuracy (m, rad).
    #[arg(long, default_value_t = 1e-3, conflicts_with = "dt", allow_hyphen_values = true)]
    accuracy: f64,
    /// Fixed-step mode with this step (s) instead of error control.
    #[arg(long, allow_hyphen_values = true)]
    dt: Option<f64>,
    /// Largest step in error-controlled mode (s).
    #[arg(long, default_value_t = 0.1, allow_hyphen_values = true)]
    max_step: f64,
    /// Smallest step in error-controlled mode (s); a step that misses the
    /// accuracy at this size fails the world (see --accept-accuracy-misses).
    #[arg(long, default_value_t = CenicParams::default().min_step, conflicts_with = "dt", allow_hyphen_values = true)]
    min_step: f64,
    /// Degraded mode: accept (and count) steps that miss the accuracy at
    /// the minimum step instead of failing the world.
    #[arg(long, conflicts_with = "dt")]
    accept_accuracy_misses: bool,
    /// Error-controlled mode, second order: local extrapolation of each
    /// step's pair of results (CPU only; see `CenicParams::extrapolate`).
    #[arg(long, conflicts_with = "dt")]
    extrapolate: bool,
    /// Start from this keyframe (name or index).
    #[arg(long)]
    key: Option<String>,
    /// Write a trajectory CSV (one row per sample, world and body).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Sampling interval of the trajectory (s).
    #[arg(long, default_value_t = 0.01, allow_hyphen_values = true)]
    sample_dt: f64,
    /// Simulate in single precision (the GPU parity reference) instead of f64.
    #[arg(long, conflicts_with = "gpu")]
    f32: bool,
    /// Simulate on the GPU (f32; any wgpu adapter, e.g. Mesa's lavapipe).
    /// LOCAL_RANK, CUDA_VISIBLE_DEVICES, WGPU_BACKEND, WGPU_ADAPTER_NAME and
    /// WGPU_POWER_PREF choose the adapter (`cenic info --adapters`).
    #[arg(long)]
    gpu: bool,
    /// With --gpu: the adapter, `gpu:N` (visible GPU N) or `gpu:NAME` (part of its name).
    #[arg(long, default_value = "gpu", requires = "gpu")]
    device: String,
    /// GPU: contacts kept per world (default: 8 per geom on a moving body);
    /// more are counted as overflow and reported.
    #[arg(long, requires = "gpu")]
    contact_capacity: Option<usize>,
}

fn load(path: &Option<PathBuf>) -> Result<Model, String> {
    match path {
        Some(p) => Model::from_mjcf_file(p).map_err(|e| e.to_string()),
        None => Ok(cenic::scenes::cube_toss()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info { adapters: true, device, .. } => print_adapters(&device),
        Command::Info { model, .. } => load(&model).map(|m| print!("{}", m.summary())),
        Command::Run(args) => run(args),
        Command::Sysid(cmd) if cmd.ray_address().is_some() => ray_fit(),
        Command::Sysid(cmd) => cenic::sysid::cli::run(cmd, None),
        Command::View(args) => view(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `cenic sysid fit --ray ADDRESS ...`: the Python package runs the same
/// command with its Ray gradient source (`python -m cenic.ray sysid fit ...`,
/// the interpreter from $CENIC_PYTHON, else python3).
fn ray_fit() -> Result<(), String> {
    let python = std::env::var("CENIC_PYTHON").unwrap_or_else(|_| "python3".into());
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let status = std::process::Command::new(&python).args(["-m", "cenic.ray"]).args(&argv).status().map_err(|e| {
        format!("--ray runs the fit through Python, but '{python}' did not start ({e}); set CENIC_PYTHON")
    })?;
    match status.code() {
        Some(0) => Ok(()),
        // python -m cenic.ray printed its error already (a missing package included).
        _ => Err(format!("the Ray fit through '{python} -m cenic.ray' failed ({status})")),
    }
}

/// `cenic info --adapters`: the adapter list, each adapter's `gpu:N` name in
/// this process, and the adapter `device` selects.
fn print_adapters(device: &str) -> Result<(), String> {
    let options = GpuOptions::for_device(device).map_err(|e| e.to_string())?;
    let (list, chosen) = cenic::gpu::list_adapters(&options).map_err(|e| e.to_string())?;
    let sel = &options.selection;
    let show = |v: &Option<String>| v.as_ref().map_or("unset".to_string(), |s| format!("'{s}'"));
    println!(
        "CUDA_VISIBLE_DEVICES {}, LOCAL_RANK {}, WGPU_ADAPTER_NAME {}",
        show(&sel.visible_devices),
        show(&sel.local_rank),
        show(&sel.adapter_name)
    );
    let visible = sel.visible(&list).map_err(|e| e.to_string())?;
    if list.is_empty() {
        println!("no adapter (wgpu lists none for backends {:?})", options.backends);
    }
    for (i, a) in list.iter().enumerate() {
        let name = match visible.iter().position(|&v| v == i) {
            Some(k) => format!("gpu:{k}"),
            None => "(by name)".into(),
        };
        let bus = if a.pci_bus_id.is_empty() { "no bus id".to_string() } else { format!("bus {}", a.pci_bus_id) };
        let mark = if chosen.as_ref().is_ok_and(|&c| c == i) { "  <- selected" } else { "" };
        println!("{name:>10}  {} ({:?}, {:?}, {bus}, driver {}){mark}", a.name, a.device_type, a.backend, a.driver);
    }
    match chosen {
        Ok(i) => println!("device '{device}' selects {}", list[i].name),
        Err(e) => println!("device '{device}' selects nothing: {e}"),
    }
    Ok(())
}

/// `Ok` when `x` is finite and positive, else an error naming the flag.
fn positive(flag: &str, x: f64) -> Result<f64, String> {
    if x > 0.0 && x.is_finite() { Ok(x) } else { Err(format!("{flag} must be a positive finite number, got {x}")) }
}

/// Memory the machine has available (bytes), from /proc/meminfo where it exists.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Refuses a CPU batch that cannot fit in memory, saying how much it needs.
fn check_memory(model: &Model, worlds: usize, f32: bool) -> Result<(), String> {
    let per_world =
        if f32 { CpuBatch::<f32>::memory_per_world(model) } else { CpuBatch::<f64>::memory_per_world(model) };
    let need = (per_world as f64) * worlds as f64;
    let gb = |b: f64| b / 1e9;
    match available_memory() {
        Some(avail) if need > 0.8 * avail as f64 => Err(format!(
            "--worlds {worlds} would need about {:.1} GB ({:.1} kB per world), more than the {:.1} GB of memory available",
            gb(need),
            per_world as f64 / 1e3,
            gb(avail as f64)
        )),
        _ => Ok(()),
    }
}

fn run(args: RunArgs) -> Result<(), String> {
    if args.worlds == 0 {
        return Err("--worlds must be at least 1".into());
    }
    positive("--time", args.time)?;
    positive("--sample-dt", args.sample_dt)?;
    let model = Arc::new(load(&args.model)?);
    for w in &model.warnings {
        eprintln!("warning: {w}");
    }
    let key = args.key.clone().or_else(|| args.model.is_none().then(|| "toss".to_string()));
    let mode = match args.dt {
        Some(dt) => Mode::Fixed { dt: positive("--dt", dt)? },
        None => {
            let p = CenicParams {
                accuracy: positive("--accuracy", args.accuracy)?,
                max_step: positive("--max-step", args.max_step)?,
                min_step: positive("--min-step", args.min_step)?,
                accept_accuracy_misses: args.accept_accuracy_misses,
                extrapolate: args.extrapolate,
                ..CenicParams::default()
            };
            if p.max_step < p.min_step {
                return Err(format!("--max-step {} s is below the minimum step {} s", p.max_step, p.min_step));
            }
            Mode::ErrorControlled(p)
        }
    };
    if !args.gpu {
        check_memory(&model, args.worlds, args.f32)?;
    }
    let (mut batch, precision): (Box<dyn Batch>, String) = if args.gpu {
        // A missing adapter is a clear error; the CPU path does not need one.
        let ctx = Arc::new(GpuContext::for_device(&args.device).map_err(|e| e.to_string())?);
        println!("GPU adapter: {}", ctx.describe());
        let options = GpuBatchOptions { contact_capacity: args.contact_capacity, ..Default::default() };
        let b = GpuBatch::with_options(ctx.clone(), model.clone(), args.worlds, mode.clone(), options)
            .map_err(|e| e.to_string())?;
        let label = format!("GPU f32 on {}, {} contacts per world", ctx.adapter_name(), b.contact_capacity());
        (Box::new(b), label)
    } else if args.f32 {
        (Box::new(CpuBatch::<f32>::new(model.clone(), args.worlds, mode.clone())), "f32".into())
    } else {
        (Box::new(CpuBatch::<f64>::new(model.clone(), args.worlds, mode.clone())), "f64".into())
    };
    if let Some(k) = &key {
        for w in 0..args.worlds {
            batch
                .reset_to_keyframe(w, k)
                .map_err(|e| format!("{e} (the model has {} keyframes)", model.keyframes.len()))?;
        }
    }
    let mut writer = match &args.out {
        Some(p) => Some(TrajectoryWriter::create(p, model.clone()).map_err(|e| format!("{}: {e}", p.display()))?),
        None => None,
    };
    let n_samples = (args.time / args.sample_dt).round().max(1.0) as usize;
    let interval = args.time / n_samples as f64;
    let bar = indicatif::ProgressBar::new(n_samples as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} samples, {elapsed} elapsed, eta {eta}")
            .map_err(|e| e.to_string())?,
    );
    let (mut qpos, mut qvel) = (vec![0.0; args.worlds * model.nq], vec![0.0; args.worlds * model.nv]);
    let start = Instant::now();
    let mut write_sample = |batch: &dyn Batch, writer: &mut Option<TrajectoryWriter>| -> Result<(), String> {
        if let Some(wr) = writer {
            batch.qpos(&mut qpos);
            batch.qvel(&mut qvel);
            wr.write_batch(&batch.times(), &qpos, &qvel).map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    write_sample(batch.as_ref(), &mut writer)?;
    for _ in 0..n_samples {
        batch.advance(interval).map_err(|e| e.to_string())?;
        write_sample(batch.as_ref(), &mut writer)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let wall = start.elapsed().as_secs_f64();
    if let Some(w) = writer {
        w.finish().map_err(|e| e.to_string())?;
    }

    let mut total = WorldStats::default();
    let mut failed = vec![];
    for w in 0..args.worlds {
        total.merge(&batch.stats(w));
        if let WorldStatus::Failed { time, reason } = batch.status(w) {
            failed.push(format!("world {w} failed at t = {time:.6} s: {reason}"));
        }
    }
    let steps = total.accepted.max(1) as f64;
    println!(
        "model '{}': {} world(s), {} s simulated, {} ({})",
        model.name,
        args.worlds,
        args.time,
        match &mode {
            Mode::Fixed { dt } => format!("fixed step {dt} s"),
            Mode::ErrorControlled(p) if p.extrapolate => {
                format!("error-controlled, accuracy {}, extrapolated (second order)", p.accuracy)
            }
            Mode::ErrorControlled(p) => format!("error-controlled, accuracy {}", p.accuracy),
            m => format!("baseline integrator {}", m.name()),
        },
        precision
    );
    println!(
        "wall time {:.3} s, real-time factor {:.2} (per world {:.2}), {:.0} world-steps/s",
        wall,
        args.time * args.worlds as f64 / wall,
        args.time / wall,
        total.accepted as f64 / wall
    );
    let h_range = if total.accepted > 0 {
        format!("h in [{:.3e}, {:.3e}] s", total.min_h, total.max_h)
    } else {
        "no step".into()
    };
    println!(
        "steps: {} accepted, {} rejected, {h_range}; {:.2} Newton iterations/step, {:.2} line-search iterations/step, {:.2} factorizations/step",
        total.accepted,
        total.rejected,
        total.newton_iterations as f64 / steps,
        total.line_search_iterations as f64 / steps,
        total.factorizations as f64 / steps
    );
    if total.accuracy_misses > 0 {
        let last = match total.last_miss {
            Some((t, dof)) => {
                format!(
                    ", the last at t = {t:.6} s in dof {dof} (joint '{}')",
                    model.joints[model.dofs[dof].joint].name
                )
            }
            None => String::new(),
        };
        println!(
            "warning (degraded mode): {} step(s) accepted at the minimum step above the requested accuracy{last}",
            total.accuracy_misses
        );
    }
    if total.contact_overflow > 0 {
        let worlds: Vec<String> = (0..args.worlds)
            .filter(|&w| batch.stats(w).contact_overflow > 0)
            .map(|w| format!("{w} ({})", batch.stats(w).contact_overflow))
            .collect();
        println!(
            "warning: {} contact(s) exceeded the contact capacity, in world(s) {}{}",
            total.contact_overflow,
            worlds.iter().take(10).cloned().collect::<Vec<_>>().join(", "),
            if worlds.len() > 10 { format!(" and {} more", worlds.len() - 10) } else { String::new() }
        );
    }
    if let Some(p) = &args.out {
        println!("trajectory: {} ({} samples; columns {})", p.display(), n_samples + 1, TRAJECTORY_HEADER);
    }
    for f in &failed {
        println!("{f}");
    }
    if failed.len() == args.worlds {
        return Err("every world failed".into());
    }
    Ok(())
}
