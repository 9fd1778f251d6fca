//! MuJoCo's soft-constraint settings (`solref`, `solimp`), in the two
//! forms a model can use them ([`super::Semantics`]):
//! - under MuJoCo's semantics, as MuJoCo itself: [`SoftLaw`] gives each
//!   constraint row its reference acceleration and, with
//!   [`regulariser`], the R of MuJoCo's convex problem (used by the ICF
//!   builder, [`crate::icf`]);
//! - under the physical semantics, as physical springs (below): the one
//!   mapping used for contact materials (per geom, see [`super::mjcf`])
//!   and for joint limits (per joint, [`Joint::limit_law`]).
//!
//! MuJoCo's soft constraint obeys a₁ = (1 − d)·a₀ + d·a_ref with
//! a_ref = −B·v − K·d·r, where r ≥ 0 is the violation, d = d(r) the
//! impedance from `solimp`, K = 1/(d_max²τ²ζ²) and B = 2/(d_max·τ) from
//! `solref` = (τ, ζ) with d_max = `solimp[1]` (or K = −`solref[0]`/d_max²,
//! B = −`solref[1]`/d_max for negative solref) (MuJoCo XML reference,
//! "Solver parameters"). Under a constant load a₀ the constraint settles
//! where (1 − d)·a₀ = K·d²·r, so on an effective mass m it acts as the
//! spring
//!
//! **F(r) = m·K·d(r)²·r / (1 − d(r))**
//!
//! which reproduces MuJoCo's deflection under any load, including the
//! stiffening that `solimp`'s width, midpoint and power describe. The
//! damping keeps MuJoCo's damping ratio B/(2√K) (ζ for positive solref)
//! relative to the secant stiffness k = F/r:
//! **c(r) = (B/√K)·√(k·m)**.
//!
//! MuJoCo's constraint also inflates the inertia it acts on to m/(1 − d),
//! which a potential cannot express; with the true inertia the same spring
//! restores a violation over a time of order τζ·√(1 − d) (√0.1·20 ms ≈ 6 ms
//! with the defaults) instead of τ. The static behaviour (deflection under
//! load) is MuJoCo's; the transient is quicker by √(1 − d).
//!
//! Contacts map `solref` with the impedance fixed at d0 ([`Softness::spring`]),
//! then to a Hunt–Crossley dissipation (see [`super::mjcf`]); joint limits
//! use the full law ([`SpringLaw`]). d is clamped to [0.0001, 0.9999] and
//! τ to ≥ 2·timestep, as MuJoCo does.
//!
//! [`Joint::limit_law`]: super::Joint::limit_law

use crate::math::Real;

/// MuJoCo's default `solref` (time constant s, damping ratio).
pub const SOLREF_DEFAULT: [f64; 2] = [0.02, 1.0];
/// MuJoCo's default `solimp` (d0, dwidth, width m, midpoint, power).
pub const SOLIMP_DEFAULT: [f64; 5] = [0.9, 0.95, 0.001, 0.5, 2.0];
/// MuJoCo's bounds on the impedance d (mjMINIMP, mjMAXIMP).
const IMP_BOUNDS: [f64; 2] = [0.0001, 0.9999];
/// MuJoCo's smallest value (mjMINVAL): the floor of widths and of the
/// regulariser R.
pub const MIN_VAL: f64 = 1e-15;

/// A constraint's softness as MuJoCo writes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Softness {
    /// `solref`: (time constant τ in s, damping ratio ζ) when positive, or
    /// (−stiffness in 1/s², −damping in 1/s) per unit effective mass.
    pub solref: [f64; 2],
    /// `solimp`: impedance d0 at zero violation, d_width at the width,
    /// width (m or rad), midpoint and power of the transition.
    pub solimp: [f64; 5],
}

impl Default for Softness {
    /// MuJoCo's defaults: solref (0.02 s, 1), solimp (0.9, 0.95, 0.001, 0.5, 2).
    fn default() -> Self {
        Self { solref: SOLREF_DEFAULT, solimp: SOLIMP_DEFAULT }
    }
}

impl Softness {
    /// Stiffness k (N/m or N·m/rad) and linear damping c (N·s/m or
    /// N·m·s/rad) of the spring that stands for this soft constraint on an
    /// effective mass `mass` (kg or kg·m²) with the impedance held at d0
    /// (d_max = d0): k = m/((1 − d0)(τζ)²), c = 2ζ√(k·m); for negative
    /// solref k = m·(−`solref[0]`)/(1 − d0), c = m·(−`solref[1]`)/(1 − d0).
    /// `timestep` (s) applies MuJoCo's clamp τ ≥ 2·timestep. The contact
    /// mapping uses it.
    pub fn spring(&self, mass: f64, timestep: f64) -> (f64, f64) {
        let d0 = self.solimp[0].clamp(IMP_BOUNDS[0], IMP_BOUNDS[1]);
        if self.solref[0] > 0.0 {
            let (tau, zeta) = (self.solref[0].max(2.0 * timestep), self.solref[1]);
            let k = mass / ((1.0 - d0) * (tau * zeta) * (tau * zeta));
            (k, 2.0 * zeta * (k * mass).sqrt())
        } else {
            // Direct stiffness and damping per unit mass, both scaled as the static deflection.
            (mass * (-self.solref[0]) / (1.0 - d0), mass * (-self.solref[1]) / (1.0 - d0))
        }
    }

    /// The force law on an effective mass `mass` (kg or kg·m²) for a model
    /// with time step `timestep` (s).
    pub fn law(&self, mass: f64, timestep: f64) -> SpringLaw {
        let [d0, dw, width, mid, power] = self.solimp;
        let clamp = |d: f64| d.clamp(IMP_BOUNDS[0], IMP_BOUNDS[1]);
        let dmax = clamp(dw);
        let (k, b) = if self.solref[0] > 0.0 {
            let (tau, zeta) = (self.solref[0].max(2.0 * timestep), self.solref[1]);
            (1.0 / (dmax * dmax * tau * tau * zeta * zeta), 2.0 / (dmax * tau))
        } else {
            (-self.solref[0] / (dmax * dmax), -self.solref[1] / dmax)
        };
        SpringLaw {
            mk: mass * k,
            damp: b / k.sqrt() * mass.sqrt(),
            imp: [clamp(d0), dmax, width.max(0.0), clamp(mid), power.max(1.0)],
        }
    }

    /// Why these values cannot describe a spring, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        let [a, b] = self.solref;
        let ok_ref = a.is_finite() && b.is_finite() && ((a > 0.0 && b > 0.0) || (a < 0.0 && b <= 0.0));
        if !ok_ref {
            return Err(format!(
                "solref ({a}, {b}) must be (time constant > 0 s, damping ratio > 0) or (−stiffness < 0, −damping ≤ 0)"
            ));
        }
        let [d0, dw, width, mid, power] = self.solimp;
        if !self.solimp.iter().all(|x| x.is_finite()) {
            return Err(format!("solimp {:?} must be finite", self.solimp));
        }
        if !((0.0..1.0).contains(&d0) && dw > 0.0 && dw < 1.0) {
            return Err(format!("solimp d0 = {d0} and dwidth = {dw} must lie in [0, 1) and (0, 1)"));
        }
        if !(width >= 0.0 && mid > 0.0 && mid < 1.0 && power >= 1.0) {
            return Err(format!(
                "solimp width = {width} must be ≥ 0, midpoint = {mid} in (0, 1) and power = {power} ≥ 1"
            ));
        }
        Ok(())
    }
}

/// MuJoCo's soft constraint on one constraint row, as the convex step uses
/// it under [`Semantics::MuJoCo`](super::Semantics::MuJoCo): the reference
/// acceleration a_ref = −B·(j·v0) − K·d·x and the regulariser
/// R = (1 − d)/d·Â, with x = pos − margin the row's coordinate (negative
/// when violated), d = d(|x|) the impedance and Â MuJoCo's diagonal
/// approximation of the constraint-space inverse inertia. The row's force
/// is f = −(a − a_ref)/R for its acceleration a = j·v̇ (clamped to the
/// row's bounds), the minimiser of ½(a − a_ref)²/R added to the Gauss
/// cost (MuJoCo documentation, "Computation"); the convex step writes it
/// over the step's velocity change (see [`crate::icf`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftLaw {
    /// K (1/s²): stiffness of the reference per unit impedance,
    /// 1/(d_max²τ²ζ²), or −`solref[0]`/d_max² for direct solref; 0 for
    /// friction rows.
    pub k: f64,
    /// B (1/s): damping of the reference, 2/(d_max·τ), or −`solref[1]`/d_max.
    pub b: f64,
    /// solimp as MuJoCo clamps it: d0, d_max, width (m or rad), midpoint, power.
    pub imp: [f64; 5],
}

impl Softness {
    /// The soft-constraint law of a row for a model with time step
    /// `timestep` (s; MuJoCo's clamp τ ≥ 2·timestep, 0 to disable);
    /// `friction` rows have no position reference (K = 0).
    pub fn soft_law(&self, timestep: f64, friction: bool) -> SoftLaw {
        let [d0, dw, width, mid, power] = self.solimp;
        let clamp = |d: f64| d.clamp(IMP_BOUNDS[0], IMP_BOUNDS[1]);
        let dmax = clamp(dw);
        let mut solref = self.solref;
        if solref[0] > 0.0 {
            solref[0] = solref[0].max(2.0 * timestep);
        }
        let k = if friction {
            0.0
        } else if solref[0] > 0.0 {
            1.0 / (dmax * dmax * solref[0] * solref[0] * solref[1] * solref[1]).max(MIN_VAL)
        } else {
            -solref[0] / (dmax * dmax).max(MIN_VAL)
        };
        let b = if solref[1] > 0.0 { 2.0 / (dmax * solref[0]).max(MIN_VAL) } else { -solref[1] / dmax.max(MIN_VAL) };
        SoftLaw { k, b, imp: [clamp(d0), dmax, width.max(0.0), clamp(mid), power.max(1.0)] }
    }
}

impl SoftLaw {
    /// At row coordinate `x` = pos − margin (m or rad; negative when
    /// violated): the impedance d(|x|) and the position part of the
    /// reference K·d·x (m/s² or rad/s²; a_ref = −B·vel − K·d·x).
    pub fn at<T: Real>(&self, x: T) -> (T, T) {
        let (d, _) = impedance(&self.imp, x.abs());
        (d, T::c(self.k) * d * x)
    }
}

/// MuJoCo's regulariser R = max(mjMINVAL, (1 − d)/d·Â) for impedance `d`
/// and diagonal approximation `diag_a` (1/kg, 1/(kg·m²) or the row's units).
#[inline]
pub fn regulariser<T: Real>(d: T, diag_a: T) -> T {
    ((T::one() - d) * diag_a / d).max(T::c(MIN_VAL))
}

/// A soft constraint's force law on one effective mass, compiled from
/// [`Softness`]: F(r) = mk·d(r)²·r/(1 − d(r)), damping
/// c = damp·√(F/r) (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpringLaw {
    /// m·K (N/m or N·m/rad).
    pub mk: f64,
    /// (B/√K)·√m (√kg or √(kg·m²)): the damping is damp·√k for a secant stiffness k.
    pub damp: f64,
    /// solimp clamped as MuJoCo does: d0, d_max, width (m or rad), midpoint, power.
    pub imp: [f64; 5],
}

impl SpringLaw {
    /// For violation `r` (m or rad; negative while not violated): the
    /// restoring force F (N or N·m; for r ≤ 0 the tangent at 0 extended
    /// linearly, so F < 0 and a constraint about to be crossed within a
    /// step engages), the tangent stiffness dF/dr ≥ 0 and the damping c,
    /// both evaluated at max(r, 0).
    pub fn at<T: Real>(&self, r: T) -> (T, T, T) {
        let (ks, kt, c) = self.stiffness(r.max(T::zero()));
        (ks * r, kt, c)
    }

    /// At violation magnitude `r` ≥ 0 (m or rad): the secant stiffness
    /// F(r)/r, the tangent stiffness dF/dr ≥ 0 and the damping c. For
    /// constraints with several rows (connect, weld) MuJoCo evaluates the
    /// impedance at the norm of the violation vector; each row then acts
    /// with the secant stiffness on its own component.
    pub fn stiffness<T: Real>(&self, r: T) -> (T, T, T) {
        let mk = T::c(self.mk);
        if !(r > T::zero()) {
            // Not violated (the common case): the impedance is d0.
            let d0 = T::c(self.imp[0]);
            let k0 = mk * d0 * d0 / (T::one() - d0);
            return (k0, k0, T::c(self.damp) * k0.sqrt());
        }
        let (d, dd) = impedance(&self.imp, r);
        let one = T::one();
        let ks = mk * d * d / (one - d);
        let kt = ks + mk * r * dd * d * (T::c(2.0) - d) / ((one - d) * (one - d));
        (ks, kt.max(T::zero()), T::c(self.damp) * ks.sqrt())
    }
}

/// MuJoCo's impedance d(r) for violation r ≥ 0 and its derivative dd/dr,
/// from solimp (d0, d_max, width, midpoint, power) already clamped.
pub fn impedance<T: Real>(imp: &[f64; 5], r: T) -> (T, T) {
    // MuJoCo's flat function: equal ends or no width give the mean, constant.
    if imp[0] == imp[1] || imp[2] <= MIN_VAL {
        return (T::c(0.5 * (imp[0] + imp[1])), T::zero());
    }
    let [d0, dw, width, mid, power] = imp.map(T::c);
    let one = T::one();
    let x = r / width;
    if !(x < one) {
        return (dw, T::zero());
    }
    let (y, dy) = if power == one {
        (x, one)
    } else if power == T::c(2.0) {
        // MuJoCo's default power, without pow().
        if x <= mid {
            let a = one / mid;
            (a * x * x, T::c(2.0) * a * x)
        } else {
            let b = one / (one - mid);
            (one - b * (one - x) * (one - x), T::c(2.0) * b * (one - x))
        }
    } else if x <= mid {
        let a = one / mid.powf(power - one);
        (a * x.powf(power), a * power * x.powf(power - one))
    } else {
        let b = one / (one - mid).powf(power - one);
        (one - b * (one - x).powf(power), b * power * (one - x).powf(power - one))
    };
    let d = d0 + y * (dw - d0);
    let (lo, hi) = (T::c(IMP_BOUNDS[0]), T::c(IMP_BOUNDS[1]));
    if d < lo || d > hi { (d.max(lo).min(hi), T::zero()) } else { (d, dy * (dw - d0) / width) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Static deflection predicted by the mapping equals MuJoCo's: a 2 kg
    /// sphere resting on a plane (condim 1, constant impedance solimp
    /// "d d 0.001", timestep 0.5 ms) settles in MuJoCo 4.0.0 at these
    /// penetrations (simulated once, hard-coded here).
    #[test]
    fn stiffness_reproduces_mujoco_equilibrium_penetration() {
        let (m, g) = (2.0, 9.81);
        for (d0, solref, pen) in [
            (0.9, [0.02, 1.0], 0.000392399999950388),
            (0.9, [0.05, 0.5], 0.0006131250004883793),
            (0.9, [-1000.0, -10.0], 0.0009810000052107304),
            (0.5, [0.02, 1.0], 0.0019620000003197913),
            (0.5, [0.05, 0.5], 0.003065624997573499),
            (0.5, [-1000.0, -10.0], 0.004904999974126897),
        ] {
            let s = Softness { solref, solimp: [d0, d0, 0.001, 0.5, 2.0] };
            let (k, _) = s.spring(m, 0.0005);
            assert!((m * g / k - pen).abs() < 1e-6 * pen, "{d0} {solref:?}: {} vs {pen}", m * g / k);
            // The full law gives the same equilibrium: F(pen) = m g.
            let (f, _, _) = s.law(m, 0.0005).at::<f64>(pen);
            assert!((f - m * g).abs() < 1e-5 * m * g, "{d0} {solref:?}: F = {f}");
        }
    }

    #[test]
    fn damping_gives_the_damping_ratio() {
        let m = 1.5;
        let s = |solref| Softness { solref, solimp: [0.9, 0.9, 0.001, 0.5, 2.0] };
        let (k, c) = s([0.02, 0.7]).spring(m, 0.001);
        assert!((c / (2.0 * (k * m).sqrt()) - 0.7).abs() < 1e-12);
        // Time constant below 2·timestep is clamped as MuJoCo does.
        let (k_small, _) = s([0.001, 1.0]).spring(m, 0.01);
        assert!((k_small - m / (0.1 * 0.02 * 0.02)).abs() < 1e-9 * k_small);
        // Negative solref: direct stiffness and damping per unit mass.
        let (k, c) = s([-1000.0, -10.0]).spring(m, 0.001);
        assert!((k - m * 1000.0 / 0.1).abs() < 1e-9 * k);
        assert!((c - m * 10.0 / 0.1).abs() < 1e-9 * c);
        // The full law keeps MuJoCo's damping ratio B/(2√K) relative to its stiffness.
        for solref in [[0.02, 0.7], [-1000.0, -10.0]] {
            let law = s(solref).law(m, 0.001);
            let (f, _, c) = law.at::<f64>(0.01);
            let ratio = if solref[0] > 0.0 { 0.7 } else { 10.0 / (2.0 * f64::sqrt(1000.0)) };
            assert!((c / (2.0 * (f / 0.01 * m).sqrt()) - ratio).abs() < 1e-12, "{solref:?}");
        }
    }

    /// The impedance follows MuJoCo's sigmoid: d0 at 0, d_width from the
    /// width on, the midpoint value halfway, and dd/dr matches differences.
    #[test]
    fn impedance_shape_and_derivative() {
        let imp = [0.1, 0.8, 0.03, 0.3, 3.0];
        assert!((impedance::<f64>(&imp, 0.0).0 - 0.1_f64).abs() < 1e-15);
        assert!((impedance::<f64>(&imp, 0.05).0 - 0.8_f64).abs() < 1e-15);
        // y(midpoint) = midpoint for every power.
        assert!((impedance::<f64>(&imp, 0.3 * 0.03).0 - (0.1 + 0.3 * 0.7_f64)).abs() < 1e-12);
        let law = Softness { solref: [0.02, 1.0], solimp: imp }.law(2.0, 0.002);
        for r in [1e-4, 0.005, 0.0089, 0.0091, 0.02, 0.0299] {
            let (_, dd) = impedance::<f64>(&imp, r);
            let e = 1e-7;
            let fd = (impedance::<f64>(&imp, r + e).0 - impedance::<f64>(&imp, r - e).0) / (2.0 * e);
            assert!((dd - fd).abs() < 1e-5 * fd.abs().max(1.0), "r = {r}: {dd} vs {fd}");
            let (_, kt, _) = law.at::<f64>(r);
            let fdk = (law.at::<f64>(r + e).0 - law.at::<f64>(r - e).0) / (2.0 * e);
            assert!((kt - fdk).abs() < 1e-5 * fdk, "r = {r}: {kt} vs {fdk}");
        }
        // Not violated: the tangent at zero, extended linearly.
        let (f, kt, _) = law.at::<f64>(-0.01);
        assert!((f + 0.01 * kt).abs() < 1e-12 * kt && kt > 0.0);
    }

    #[test]
    fn rejects_values_that_are_no_spring() {
        assert!(Softness::default().check().is_ok());
        assert!(Softness { solref: [-100.0, 0.0], ..Default::default() }.check().is_ok());
        // half_cheetah.xml's solimplimit "0 .8 .03": d0 = 0 is allowed (MuJoCo clamps it).
        assert!(Softness { solimp: [0.0, 0.8, 0.03, 0.5, 2.0], ..Default::default() }.check().is_ok());
        for bad in [
            Softness { solref: [0.0, 1.0], ..Default::default() },
            Softness { solref: [0.02, -1.0], ..Default::default() },
            Softness { solref: [f64::NAN, 1.0], ..Default::default() },
            Softness { solimp: [0.9, 1.0, 0.001, 0.5, 2.0], ..Default::default() },
            Softness { solimp: [0.9, 0.95, 0.001, 0.5, 0.5], ..Default::default() },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }
}
