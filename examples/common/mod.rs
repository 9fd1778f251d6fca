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

/// The friction-load derivative a mode name KIND:VALUE[+implicit] asks for:
/// the suffix differentiates the friction load straight through the step's
/// implicit normal impulse ([`cenic::diff::FrictionLoad::Implicit`]).
pub fn parse_load(mode: &str) -> cenic::diff::FrictionLoad {
    if mode.ends_with("+implicit") { cenic::diff::FrictionLoad::Implicit } else { cenic::diff::FrictionLoad::Lagged }
}
