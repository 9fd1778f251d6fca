//! Helpers shared by the examples (included with `mod common;`).
#![allow(dead_code)]

use plotters::style::FontStyle;

/// Registers DejaVu Sans as plotters' "sans-serif" font when it is
/// installed; plot text needs a TrueType font. Returns whether labels can
/// be drawn.
pub fn register_font() -> bool {
    let font = ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf"]
        .iter()
        .find_map(|p| std::fs::read(p).ok());
    match font {
        Some(bytes) => {
            plotters::style::register_font("sans-serif", FontStyle::Normal, Box::leak(bytes.into_boxed_slice())).is_ok()
        }
        None => false,
    }
}
