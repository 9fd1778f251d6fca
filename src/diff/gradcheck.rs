//! Gradient checks against central finite differences.
//!
//! Step sizes. A central difference with step δ has truncation error
//! ≈ f'''δ²/6 and rounding error ≈ ε_f/δ, where ε_f is the noise of the
//! function evaluation: machine rounding (≈1e-16·|f|) for a fixed-step
//! simulation, but for an error-controlled one the step-size sequence
//! changes with the inputs, which makes f piecewise smooth with jumps of the
//! order of the integrator's accuracy. The default relative step (1e-4 of
//! max(|x|, `scale`)) suits smooth `f64` functions; through an adaptive
//! integrator choose δ so that accuracy/δ is well below the gradient
//! accuracy you want to check, and turn on Richardson extrapolation
//! (central differences at δ and δ/2, combined to cancel the δ² term) so
//! such large steps stay free of truncation error.

/// Settings of [`gradcheck`].
#[derive(Clone, Debug, PartialEq)]
pub struct GradCheckOptions {
    /// Step δ_i = `rel_step` · max(|x_i|, `scale`) when `steps` is empty.
    pub rel_step: f64,
    /// Lower bound of the magnitude used for relative steps (units of x).
    pub scale: f64,
    /// Explicit absolute steps per component (overrides `rel_step`).
    pub steps: Vec<f64>,
    /// Combine central differences at δ and δ/2 as (4 D(δ/2) − D(δ))/3.
    pub richardson: bool,
    /// Absolute floor of the relative error's denominator (units of the gradient):
    /// rel = |analytic − numeric| / max(|numeric|, |analytic|, floor).
    pub floor: f64,
}

impl Default for GradCheckOptions {
    fn default() -> Self {
        Self { rel_step: 1e-4, scale: 1.0, steps: vec![], richardson: false, floor: 1e-12 }
    }
}

/// One checked component.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradCheck {
    /// Component index.
    pub index: usize,
    /// Step used (units of x).
    pub step: f64,
    /// The gradient under test.
    pub analytic: f64,
    /// The finite-difference estimate.
    pub numeric: f64,
    /// |analytic − numeric|.
    pub abs_error: f64,
    /// abs_error / max(|numeric|, |analytic|, floor).
    pub rel_error: f64,
}

/// Per-component results of [`gradcheck`].
#[derive(Clone, Debug, PartialEq)]
pub struct GradCheckReport {
    /// One entry per component.
    pub components: Vec<GradCheck>,
}

impl GradCheckReport {
    /// Largest relative error.
    pub fn max_rel_error(&self) -> f64 {
        self.components.iter().map(|c| c.rel_error).fold(0.0, f64::max)
    }
    /// Largest absolute error.
    pub fn max_abs_error(&self) -> f64 {
        self.components.iter().map(|c| c.abs_error).fold(0.0, f64::max)
    }
    /// ‖analytic − numeric‖ / ‖numeric‖ over all components (Euclidean norms).
    pub fn rel_error_norm(&self) -> f64 {
        let (mut e, mut n) = (0.0, 0.0);
        for c in &self.components {
            e += c.abs_error * c.abs_error;
            n += c.numeric * c.numeric;
        }
        (e / n.max(f64::MIN_POSITIVE)).sqrt()
    }
    /// The finite-difference gradient.
    pub fn numeric(&self) -> Vec<f64> {
        self.components.iter().map(|c| c.numeric).collect()
    }
}

impl core::fmt::Display for GradCheckReport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for c in &self.components {
            writeln!(
                f,
                "  [{:>3}] step {:.2e}  analytic {:+.6e}  numeric {:+.6e}  rel error {:.2e}",
                c.index, c.step, c.analytic, c.numeric, c.rel_error
            )?;
        }
        Ok(())
    }
}

/// Checks `grad` (the gradient of `f` at `x` under test) against central
/// finite differences of `f`, component by component (2 or 4 evaluations
/// of `f` per component; see the module docs for choosing steps).
pub fn gradcheck(f: impl Fn(&[f64]) -> f64, x: &[f64], grad: &[f64], opts: &GradCheckOptions) -> GradCheckReport {
    assert_eq!(x.len(), grad.len(), "gradcheck: x and grad lengths differ");
    let mut xp = x.to_vec();
    let mut central = |i: usize, d: f64| {
        xp[i] = x[i] + d;
        let fp = f(&xp);
        xp[i] = x[i] - d;
        let fm = f(&xp);
        xp[i] = x[i];
        (fp - fm) / (2.0 * d)
    };
    let components = (0..x.len())
        .map(|i| {
            let step = opts.steps.get(i).copied().unwrap_or(opts.rel_step * x[i].abs().max(opts.scale));
            let numeric = if opts.richardson {
                let d1 = central(i, step);
                let d2 = central(i, 0.5 * step);
                (4.0 * d2 - d1) / 3.0
            } else {
                central(i, step)
            };
            let analytic = grad[i];
            let abs_error = (analytic - numeric).abs();
            let rel_error = abs_error / numeric.abs().max(analytic.abs()).max(opts.floor);
            GradCheck { index: i, step, analytic, numeric, abs_error, rel_error }
        })
        .collect();
    GradCheckReport { components }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_gradient_passes_and_wrong_one_fails() {
        let f = |x: &[f64]| x[0].sin() * x[1].exp() + x[0] * x[0];
        let x = [0.3f64, -0.7];
        let g = [x[0].cos() * x[1].exp() + 2.0 * x[0], x[0].sin() * x[1].exp()];
        let r = gradcheck(f, &x, &g, &GradCheckOptions::default());
        assert!(r.max_rel_error() < 1e-8, "{r}");
        let r = gradcheck(f, &x, &[g[0], 1.1 * g[1]], &GradCheckOptions { richardson: true, ..Default::default() });
        assert!(r.components[0].rel_error < 1e-9 && (r.components[1].rel_error - 0.1 / 1.1).abs() < 1e-6);
    }
}
