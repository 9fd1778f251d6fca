//! PNG plots of a fit: loss curves and trajectory overlays.

use super::fit::{FitResult, Overlay};
use crate::output::register_plot_font;
use plotters::prelude::*;
use std::path::Path;

type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// Training and validation loss per epoch above the side length per epoch.
pub fn loss_png(path: &Path, r: &FitResult) -> PlotResult {
    let labels = register_plot_font();
    let root = BitMapBackend::new(path, (900, 800)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(500);
    let series = |f: &dyn Fn(&super::fit::EpochRecord) -> f64| -> Vec<(f64, f64)> {
        r.epochs.iter().map(|e| (e.epoch as f64, f(e))).filter(|p| p.1.is_finite() && p.1 > 0.0).collect()
    };
    let train = series(&|e| e.train_loss);
    let val = series(&|e| e.val_loss);
    let xmax = r.epochs.len().saturating_sub(1).max(1) as f64;
    let hi = train.iter().chain(&val).fold(0.0f64, |a, p| a.max(p.1));
    let hi = if hi > 0.0 { hi * 1.1 } else { 1.0 };
    let mut b = ChartBuilder::on(&top);
    b.margin(15).x_label_area_size(if labels { 40 } else { 5 }).y_label_area_size(if labels { 70 } else { 5 });
    if labels {
        b.caption("loss per epoch", ("sans-serif", 22));
    }
    let mut chart = b.build_cartesian_2d(0.0..xmax, 0.0..hi)?;
    let mut mesh = chart.configure_mesh();
    let y_desc = format!("loss [{}]", r.loss_unit);
    if labels {
        mesh.x_desc("epoch").y_desc(y_desc.as_str());
    } else {
        mesh.disable_x_axis().disable_y_axis();
    }
    mesh.draw()?;
    for (name, pts, color) in [("train", &train, BLUE), ("validation", &val, RED)] {
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
        let s = chart.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?;
        if labels {
            s.label(name).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
    }
    if labels {
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    let side = series(&|e| 1e3 * e.params.side);
    let (slo, shi) = side.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let pad = ((shi - slo) * 0.1).max(0.5);
    let mut b = ChartBuilder::on(&bottom);
    b.margin(15).x_label_area_size(if labels { 40 } else { 5 }).y_label_area_size(if labels { 70 } else { 5 });
    let mut chart = b.build_cartesian_2d(0.0..xmax, (slo - pad)..(shi + pad))?;
    let mut mesh = chart.configure_mesh();
    if labels {
        mesh.x_desc("epoch").y_desc("side [mm]");
    } else {
        mesh.disable_x_axis().disable_y_axis();
    }
    mesh.draw()?;
    chart.draw_series(LineSeries::new(side.iter().copied(), BLACK.stroke_width(2)))?;
    chart.draw_series(side.iter().map(|p| Circle::new(*p, 3, BLACK.filled())))?;
    root.present()?;
    Ok(())
}

/// For each overlay toss, one panel with x, y and z over time: recorded
/// samples (dots), the fitted model's prediction from the first sample
/// (solid) and the initial model's (thin).
pub fn overlay_png(path: &Path, overlays: &[Overlay]) -> PlotResult {
    let labels = register_plot_font();
    let n = overlays.len().max(1);
    let root = BitMapBackend::new(path, (1000, 330 * n as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((n, 1));
    for (o, area) in overlays.iter().zip(panels.iter()) {
        let all = o.recorded.iter().chain(&o.fitted).chain(&o.initial).flat_map(|p| p.iter().copied());
        let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
        let (lo, hi) = if lo < hi { (lo, hi) } else { (-1.0, 1.0) };
        let pad = 0.05 * (hi - lo);
        let tmax = o.t.last().copied().unwrap_or(1.0).max(1e-3);
        let mut b = ChartBuilder::on(area);
        b.margin(10).x_label_area_size(if labels { 35 } else { 5 }).y_label_area_size(if labels { 60 } else { 5 });
        if labels {
            b.caption(format!("{}: recorded (dots), fitted (thick), initial (thin)", o.toss), ("sans-serif", 18));
        }
        let mut chart = b.build_cartesian_2d(0.0..tmax, (lo - pad)..(hi + pad))?;
        let mut mesh = chart.configure_mesh();
        if labels {
            mesh.x_desc("t [s]").y_desc("position [m]");
        } else {
            mesh.disable_x_axis().disable_y_axis();
        }
        mesh.draw()?;
        for (axis, color) in [(0, RED), (1, GREEN), (2, BLUE)] {
            let pts = |v: &[[f64; 3]]| -> Vec<(f64, f64)> { o.t.iter().zip(v).map(|(&t, p)| (t, p[axis])).collect() };
            chart.draw_series(pts(&o.recorded).into_iter().map(|p| Circle::new(p, 2, color.filled())))?;
            chart.draw_series(LineSeries::new(pts(&o.initial), color.mix(0.5).stroke_width(1)))?;
            let s = chart.draw_series(LineSeries::new(pts(&o.fitted), color.stroke_width(3)))?;
            if labels {
                s.label(["x", "y", "z"][axis]).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            }
        }
        if labels {
            chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        }
    }
    root.present()?;
    Ok(())
}
