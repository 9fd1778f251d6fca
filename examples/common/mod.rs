//! Helpers shared by the examples (included with `mod common;`).
#![allow(dead_code)]

/// Registers DejaVu Sans as plotters' "sans-serif" font when it is
/// installed ([`cenic::output::register_plot_font`]); plot text needs a
/// TrueType font. Returns whether labels can be drawn.
pub fn register_font() -> bool {
    cenic::output::register_plot_font()
}
