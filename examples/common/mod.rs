//! Helpers shared by the examples (included with `mod common;`).
#![allow(dead_code)]

/// Registers DejaVu Sans as plotters' "sans-serif" font when it is
/// installed ([`cenic::output::register_plot_font`]); plot text needs a
/// TrueType font. Returns whether labels can be drawn.
pub fn register_font() -> bool {
    cenic::output::register_plot_font()
}

/// The value after the command-line flag `name` (`--flag VALUE`), if given.
pub fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

/// The gradient sweeps' common arguments: the shared folder (the process
/// exits with a message when it is absent), `--models` (names of zoo
/// models, default `half_cheetah,ant`) and `--intervals` (control
/// intervals per sequence, default 50).
pub fn sweep_args() -> (std::path::PathBuf, Vec<String>, usize) {
    let Some(shared) = cenic::zoo::shared_dir() else {
        eprintln!("shared folder not found (set CENIC_SHARED)");
        std::process::exit(2);
    };
    let models = arg("--models").unwrap_or("half_cheetah,ant".into()).split(',').map(String::from).collect();
    let n = arg("--intervals").and_then(|s| s.parse().ok()).unwrap_or(50);
    (shared, models, n)
}

/// The friction-load derivative a mode name KIND:VALUE[+implicit|+lagged][+…]
/// asks for: `+implicit` differentiates the friction load straight through
/// the step's implicit normal impulse ([`cenic::diff::FrictionLoad::Implicit`],
/// the default), `+lagged` takes the exact derivative of the forward map.
pub fn parse_load(mode: &str) -> cenic::diff::FrictionLoad {
    use cenic::diff::FrictionLoad;
    if has_suffix(mode, "lagged") {
        FrictionLoad::Lagged
    } else if has_suffix(mode, "implicit") {
        FrictionLoad::Implicit
    } else {
        FrictionLoad::default()
    }
}

/// Whether a mode name KIND:VALUE+A+B… carries the suffix `+tag`.
pub fn has_suffix(mode: &str, tag: &str) -> bool {
    mode.split('+').skip(1).any(|t| t == tag)
}

/// The integration mode of a gradient-harness mode name
/// `cenic:ACCURACY`, `grad:ACCURACY` ([`cenic::integrator::CenicParams::for_gradients`])
/// or `fixed:STEP_S`, with optional suffixes `+land`
/// (land touch-down/lift-off, [`cenic::integrator::CenicParams::land_contact_events`])
/// `+stick` (land slip→stick, `land_stick_events`) and `+tv=SECONDS` (the
/// error norm's velocity time scale); `+implicit` is read
/// by [`parse_load`]. Flags `--land-events`/`--land-stick` set both for every mode.
pub fn parse_grad_mode(s: &str) -> cenic::integrator::Mode {
    use cenic::integrator::{CenicParams, Mode};
    let flag = |f: &str| std::env::args().any(|a| a == f);
    let base = s.split('+').next().unwrap_or(s);
    let (kind, value) = base.split_once(':').expect("mode KIND:VALUE");
    let x: f64 = value.parse().expect("mode value");
    // `+tv=SECONDS`: the error norm's velocity time scale τ_v.
    let tv = s.split('+').skip(1).find_map(|t| t.strip_prefix("tv=")).map(|v| v.parse::<f64>().expect("+tv=SECONDS"));
    // `grad:ACCURACY`: CENIC with the gradient preset (CenicParams::for_gradients).
    let preset = if kind == "grad" { CenicParams::for_gradients(x) } else { CenicParams::default() };
    match kind {
        "cenic" | "grad" => Mode::ErrorControlled(CenicParams {
            accuracy: x,
            velocity_time_scale: tv.unwrap_or(preset.velocity_time_scale),
            land_contact_events: has_suffix(s, "land") || flag("--land-events"),
            land_stick_events: has_suffix(s, "stick") || flag("--land-stick"),
            ..preset
        }),
        "fixed" => Mode::Fixed { dt: x },
        _ => panic!("mode kind must be cenic, grad or fixed, got {kind}"),
    }
}

/// SplitMix64: the next uniform number in [0, 1) from `state`.
pub fn splitmix_uniform(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}
