//! The compliant contact ODE that the baseline integrators of the seed
//! papers discretise ([`Mode::Tamsi`](super::Mode::Tamsi),
//! [`Mode::Exponential`](super::Mode::Exponential),
//! [`Mode::RungeKutta`](super::Mode::RungeKutta),
//! [`Mode::ImplicitEuler`](super::Mode::ImplicitEuler)): one place for its
//! force law, so that only the time discretisation differs between them.
//!
//! The ODE is the limit h → 0 of the Lagged ICF step (guide: design, §One ICF
//! step, `docs/src/design.md`), so
//! CENIC and fixed-step ICF converge to the same trajectories and one
//! reference serves every scheme:
//!
//!   q̇ = N(q) v,   M(q) v̇ = −k(q, v) + F(q, v),
//!
//! with k the bias, passive, applied, motor and joint-damping forces the
//! ICF builder collects (`IcfProblem::force`), and F the constraint
//! elements the builder lists, evaluated in continuous time:
//! - contact (per pair, force on B; the ICF's law without lagging):
//!   π = k·max(0, −φ)·max(0, 1 − d·vn) (Hunt–Crossley),
//!   f = π·n − μ(s)·π·vt/√(|vt|² + ε²), ε = vs·[`STICTION_EPS_RATIO`],
//!   μ(s) the ICF's Stribeck blend from μs to μd at s = |vt|/vs, evaluated
//!   at the current slip instead of v0 (as ε is the ICF's ε without the
//!   h-dependent term, which vanishes as h → 0);
//! - actuator gains τ = clamp(kp·(q_ref − q) + kd·(v_ref − v), −e, e);
//! - joint limits f = max(0, F(g) − c·ġ) (F, c: the limit law at g);
//! - row elements (tendons, equality constraints, general actuators,
//!   frictionloss) f = clamp(f0(q) − c·s, lo, hi).
//!
//! Every element also takes a "position implicitness" h_pos: positions are
//! read at q0 + h_pos·v (for contacts φ = φ0 + h_pos·vn, the TAMSI seed's
//! eq. 19). h_pos = 0 gives the ODE's force; h_pos = h gives exactly the
//! ICF's normal, limit, gain and row laws, which TAMSI uses.

use super::{Simulator, StepError};
use crate::icf::{ContactConstraint, IcfProblem, STICTION_EPS_RATIO};
use crate::math::{Mat3, Quat, Real, Vec3, cholesky_factor, cholesky_solve_in_place};
use crate::model::{JointKind, Model};

/// The compliant contact force on body B and its partial derivatives.
#[derive(Clone, Copy, Debug)]
pub struct ContactForce<T> {
    /// Force on B (N, world frame); −force acts on A.
    pub force: Vec3<T>,
    /// ∂force/∂vc at fixed gap (N·s/m), vc the velocity of B relative to A.
    pub d_velocity: Mat3<T>,
    /// ∂force/∂φ at fixed velocity (N/m).
    pub d_gap: Vec3<T>,
}

/// The Stribeck blend of the ICF (from μs at rest to μd when sliding
/// faster than ~10 vs) at slip ratio s = |vt|/vs, and dμ/ds.
#[inline]
pub fn friction_coefficient<T: Real>(mu_static: T, mu_dynamic: T, s: T) -> (T, T) {
    let sig = |x: T| x / (T::one() + x * x).sqrt();
    let sig10 = sig(T::c(10.0));
    let x = s - T::c(10.0);
    let half = T::c(0.5);
    let mu = mu_dynamic + (mu_static - mu_dynamic) * half * (T::one() - sig(x) / sig10);
    let dsig = T::one() / ((T::one() + x * x) * (T::one() + x * x).sqrt());
    (mu, -(mu_static - mu_dynamic) * half * dsig / sig10)
}

/// The compliant contact law of contact `c` at gap `phi` (m) and contact
/// velocity `vc` (m/s), with stiction tolerance `vs` (m/s); see the module
/// docs. Uses the material, normal and Jacobian of `c`, not its lagged
/// (h-dependent) fields.
#[inline]
pub fn contact_force<T: Real>(c: &ContactConstraint<T>, phi: T, vc: Vec3<T>, vs: T) -> ContactForce<T> {
    let n = c.normal;
    let vn = n.dot(vc);
    let vt = vc - n * vn;
    let zero = T::zero();
    let (k, d) = (c.stiffness, c.dissipation);
    let a = (-phi).max(zero);
    let b = (T::one() - d * vn).max(zero);
    let pi = k * a * b;
    // ∂π/∂φ and ∂π/∂vn (zero where a factor is clamped).
    let pi_phi = if a > zero { -k * b } else { zero };
    let pi_vn = if b > zero { -k * a * d } else { zero };
    let eps = vs * T::c(STICTION_EPS_RATIO);
    let slip = vt.norm();
    let s_reg = (slip * slip + eps * eps).sqrt();
    let (mu, dmu) = friction_coefficient(c.mu_static, c.mu_dynamic, slip / vs);
    let u = vt / s_reg;
    let force = n * pi - u * (mu * pi);
    let proj = Mat3::identity() - Mat3::outer(n, n);
    // ∂(vt/S)/∂vc = (P − u uᵀ)/S on the tangent plane.
    let mut dv = (proj - Mat3::outer(u, u)).scale(-mu * pi / s_reg);
    dv = dv + Mat3::outer(n, n).scale(pi_vn) - Mat3::outer(u, n).scale(mu * pi_vn);
    if slip > zero && dmu != zero {
        // μ's own slope along the slip direction.
        dv = dv - Mat3::outer(u, vt / slip).scale(pi * dmu / vs);
    }
    ContactForce { force, d_velocity: dv, d_gap: (n - u * mu) * pi_phi }
}

/// Optional derivative outputs of [`element_forces`], both nv × nv
/// row-major and accumulated into (the caller zeroes them).
pub struct ForceJacobians<'a, T> {
    /// −∂F/∂v at fixed positions (N·s/m or N·m·s/rad): the damping.
    pub damping: &'a mut [T],
    /// −∂F/∂s, s a displacement of the configuration in velocity
    /// coordinates (q = q0 ⊕ s) (N/m or N·m/rad): the stiffness. It omits
    /// the change of Jacobians, normals and masses with q (frozen, as in
    /// every scheme here) and keeps what makes the forces stiff.
    pub stiffness: &'a mut [T],
}

/// Adds to `out` (nv) the generalized force F of every constraint element
/// of `p` (contacts, gains, limits, rows; N or N·m) at velocity `v`, with
/// positions read at q0 + h_pos·v (h_pos in s; 0 for the ODE itself), and
/// when `jac` is given the partial derivatives at that point. `p` must be
/// built at q0 (its lagged, h-dependent fields are not used).
pub fn element_forces<T: Real>(
    p: &IcfProblem<T>,
    v: &[T],
    h_pos: T,
    out: &mut [T],
    mut jac: Option<ForceJacobians<'_, T>>,
) {
    contact_forces(p, v, h_pos, out, jac.as_mut().map(|j| j.reborrow()));
    other_forces(p, v, h_pos, out, jac);
}

impl<T> ForceJacobians<'_, T> {
    /// A shorter-lived copy of the borrows.
    pub fn reborrow(&mut self) -> ForceJacobians<'_, T> {
        ForceJacobians { damping: self.damping, stiffness: self.stiffness }
    }
}

/// The contact part of [`element_forces`].
pub fn contact_forces<T: Real>(
    p: &IcfProblem<T>,
    v: &[T],
    h_pos: T,
    out: &mut [T],
    mut jac: Option<ForceJacobians<'_, T>>,
) {
    let nv = p.nv;
    let vs = p.stiction_tolerance;
    for c in &p.contacts {
        let vc = p.contact_velocity(c, v);
        let phi = c.phi0 + h_pos * c.normal.dot(vc);
        let law = contact_force(c, phi, vc, vs);
        let range = c.jac_start..c.jac_start + c.jac_len;
        for e in range.clone() {
            out[p.jac_dof[e]] += p.jac_col[e].dot(law.force);
        }
        if let Some(j) = jac.as_mut() {
            // −Jᵀ (∂f/∂vc) J and −Jᵀ (∂f/∂φ) nᵀ J over the contact's columns.
            let stiff = Mat3::outer(law.d_gap, c.normal);
            for e1 in range.clone() {
                let (i, ci) = (p.jac_dof[e1], p.jac_col[e1]);
                let (ri, si) = (law.d_velocity.tmul(ci), stiff.tmul(ci));
                for e2 in range.clone() {
                    let (k, ck) = (p.jac_dof[e2], p.jac_col[e2]);
                    j.damping[i * nv + k] -= ri.dot(ck);
                    j.stiffness[i * nv + k] -= si.dot(ck);
                }
            }
        }
    }
}

/// The non-contact part of [`element_forces`]: gains, limits and rows.
pub fn other_forces<T: Real>(
    p: &IcfProblem<T>,
    v: &[T],
    h_pos: T,
    out: &mut [T],
    mut jac: Option<ForceJacobians<'_, T>>,
) {
    let nv = p.nv;
    let zero = T::zero();
    for g in &p.gains {
        // τ = clamp(kp (q_ref − q0 − h_pos v) + kd (v_ref − v), −e, e).
        let x = v[g.dof];
        let raw = g.kp * (g.q_err - h_pos * x) + g.kd * (g.v_ref - x);
        let tau = raw.max(-g.effort).min(g.effort);
        out[g.dof] += tau;
        if let Some(j) = jac.as_mut()
            && raw.abs() < g.effort
        {
            j.damping[g.dof * nv + g.dof] += g.kd;
            j.stiffness[g.dof * nv + g.dof] += g.kp;
        }
    }
    for l in &p.limits {
        // f = max(0, F(g0 + h_pos ġ) − c ġ), linearised in g as the ICF does.
        let rate = l.sign * v[l.dof];
        let f = l.fe0 - (h_pos * l.stiffness + l.damping) * rate;
        if f > zero {
            out[l.dof] += l.sign * f;
            if let Some(j) = jac.as_mut() {
                j.damping[l.dof * nv + l.dof] += l.damping;
                j.stiffness[l.dof * nv + l.dof] += l.stiffness;
            }
        }
    }
    for r in &p.rows {
        let s = p.row_velocity(r, v);
        let raw = r.force - (h_pos * r.stiffness + r.damping) * s;
        let f = raw.max(r.lo).min(r.hi);
        let range = r.jac_start..r.jac_start + r.jac_len;
        for e in range.clone() {
            out[p.row_dof[e]] += p.row_coef[e] * f;
        }
        if let Some(j) = jac.as_mut()
            && raw > r.lo
            && raw < r.hi
        {
            for e1 in range.clone() {
                for e2 in range.clone() {
                    let (i, k) = (p.row_dof[e1], p.row_dof[e2]);
                    let cc = p.row_coef[e1] * p.row_coef[e2];
                    j.damping[i * nv + k] += r.damping * cc;
                    j.stiffness[i * nv + k] += r.stiffness * cc;
                }
            }
        }
    }
}

/// Scratch for [`acceleration`].
#[derive(Clone, Debug, Default)]
pub struct OdeWork<T> {
    force: Vec<T>,
    factor: Vec<T>,
    /// Geometry passes (kinematics, dynamics, collision, builder) so far.
    pub evaluations: u64,
}

impl<T: Real> OdeWork<T> {
    /// Scratch for `nv` velocities.
    pub fn new(nv: usize) -> Self {
        Self { force: vec![T::zero(); nv], factor: vec![T::zero(); nv * nv], evaluations: 0 }
    }
}

/// The ODE's right-hand side at the simulator's state (q, v): evaluates
/// the geometry there (kinematics, M, bias, collision, ICF builder) and
/// writes v̇ = M⁻¹(F − k) into `vdot` (nv).
pub fn acceleration<T: Real>(sim: &mut Simulator<T>, work: &mut OdeWork<T>, vdot: &mut [T]) -> Result<(), StepError> {
    if !sim.data.q.iter().chain(sim.data.v.iter()).all(|x| x.is_finite()) {
        return Err(StepError::NonFinite("Runge–Kutta stage"));
    }
    sim.compute_geometry();
    work.evaluations += 1;
    let p = &sim.problem;
    let nv = p.nv;
    for (f, k) in work.force.iter_mut().zip(&p.force) {
        *f = -*k;
    }
    element_forces(p, &sim.data.v, T::zero(), &mut work.force, None);
    solve_mass(p, &mut work.factor, &work.force, vdot)?;
    debug_assert_eq!(vdot.len(), nv);
    Ok(())
}

/// x = M⁻¹ b for the problem's mass matrix (dense Cholesky into `factor`).
pub fn solve_mass<T: Real>(p: &IcfProblem<T>, factor: &mut [T], b: &[T], x: &mut [T]) -> Result<(), StepError> {
    let nv = p.nv;
    factor[..nv * nv].copy_from_slice(&p.mass[..nv * nv]);
    cholesky_factor(factor, nv).map_err(|_| StepError::NonFinite("mass matrix (not positive definite)"))?;
    x.copy_from_slice(b);
    cholesky_solve_in_place(factor, nv, x);
    Ok(())
}

/// q ← q0 ⊕ s: positions add, rotations (free and ball joints) compose
/// with the exponential of the body-frame rotation vector (rad).
pub fn retract<T: Real>(model: &Model, q0: &[T], s: &[T], q: &mut [T]) {
    q.copy_from_slice(q0);
    crate::dynamics::integrate_q(model, q, s, T::one());
}

/// ṡ for q(t) = q0 ⊕ s(t) moving with velocity v: v itself for positions,
/// and J_r(θ)⁻¹ ω for rotations (the inverse right Jacobian of SO(3), ω
/// in the body frame), so that a Runge–Kutta scheme on s (a vector space)
/// keeps its order on rotations (Munthe-Kaas).
pub fn tangent_rate<T: Real>(model: &Model, s: &[T], v: &[T], out: &mut [T]) {
    out.copy_from_slice(v);
    for j in &model.joints {
        let d = match j.kind {
            JointKind::Free => j.dof_adr + 3,
            JointKind::Ball => j.dof_adr,
            _ => continue,
        };
        let th = Vec3::from_slice(&s[d..d + 3]);
        let w = Vec3::from_slice(&v[d..d + 3]);
        inverse_right_jacobian(th, w).write(&mut out[d..d + 3]);
    }
}

/// J_r(θ)⁻¹ w = w + ½ θ×w + (1/θ² − (1 + cos θ)/(2θ sin θ)) θ×(θ×w).
#[inline]
pub fn inverse_right_jacobian<T: Real>(th: Vec3<T>, w: Vec3<T>) -> Vec3<T> {
    let t2 = th.norm2();
    let t = t2.sqrt();
    let coef = if t < T::c(1e-3) {
        // Series: 1/12 + θ²/720.
        T::c(1.0 / 12.0) + t2 / T::c(720.0)
    } else {
        T::one() / t2 - (T::one() + t.cos()) / (T::c(2.0) * t * t.sin())
    };
    let tw = th.cross(w);
    w + tw * T::c(0.5) + th.cross(tw) * coef
}

/// An error estimate in CENIC's norm and where it is largest.
#[derive(Clone, Copy, Debug)]
pub struct ErrorEstimate {
    /// Weighted max-norm (m or rad).
    pub error: f64,
    /// The velocity coordinate where it is largest.
    pub dof: usize,
    /// Whether the velocity term τ_v·Δv is the largest.
    pub velocity: bool,
}

/// CENIC's error norm (see `cenic.rs`) of a configuration difference `ds`
/// in velocity coordinates (nv; m, or rad as body-frame rotation vectors)
/// and a velocity difference `dv` (nv): the weighted max over dofs of
/// |ds| (a rotation counts by its angle |θ|) and of τ_v·|dv|. NaN reads as
/// an infinite error.
pub fn error_norm<T: Real>(model: &Model, ds: &[T], dv: &[T], weights: &[f64], tau: f64) -> ErrorEstimate {
    let w = |dof: usize| weights.get(dof).copied().unwrap_or(1.0);
    let mut est = ErrorEstimate { error: 0.0, dof: 0, velocity: false };
    let mut at = |x: f64, dof: usize, velocity: bool| {
        if x > est.error || x.is_nan() {
            est = ErrorEstimate { error: x, dof, velocity };
        }
    };
    for j in &model.joints {
        let d = j.dof_adr;
        let angle = |k: usize| Vec3::from_slice(&ds[k..k + 3]).norm().f64();
        match j.kind {
            JointKind::Free => {
                for k in 0..3 {
                    at(w(d + k) * ds[d + k].abs().f64(), d + k, false);
                }
                at(w(d + 3) * angle(d + 3), d + 3, false);
            }
            JointKind::Ball => at(w(d) * angle(d), d, false),
            JointKind::Hinge | JointKind::Slide => at(w(d) * ds[d].abs().f64(), d, false),
        }
    }
    if tau > 0.0 {
        for (i, x) in dv.iter().enumerate() {
            at(tau * w(i) * x.abs().f64(), i, true);
        }
    }
    if est.error.is_nan() {
        est.error = f64::INFINITY;
    }
    est
}

/// The angle (rad) between two unit quaternions, for tests and examples.
pub fn rotation_angle<T: Real>(a: &[T], b: &[T]) -> f64 {
    Quat::from_slice(a).angle_to(Quat::from_slice(b)).f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inverse right Jacobian inverts J_r(θ) = I − (1−cos θ)/θ² [θ]× + (θ − sin θ)/θ³ [θ]×².
    #[test]
    fn inverse_right_jacobian_inverts_the_right_jacobian() {
        for th in [Vec3::new(0.3, -0.2, 0.5), Vec3::new(1e-5, 2e-5, 0.0), Vec3::new(2.0, 1.0, -0.5)] {
            let w = Vec3::new(0.7, -1.1, 0.4);
            let t = th.norm();
            let jr = |x: Vec3<f64>| {
                let tx = th.cross(x);
                let (a, b) =
                    if t < 1e-3 { (0.5, 1.0 / 6.0) } else { ((1.0 - t.cos()) / (t * t), (t - t.sin()) / (t * t * t)) };
                x - tx * a + th.cross(tx) * b
            };
            let back = jr(inverse_right_jacobian(th, w));
            assert!((back - w).norm() < 1e-12, "{back:?} vs {w:?}");
        }
    }

    /// d/dt Exp(θ(t)) with θ̇ = J_r⁻¹ ω reproduces body angular velocity ω (finite differences).
    #[test]
    fn tangent_rate_moves_the_quaternion_with_body_rate() {
        let th = Vec3::new(0.4, -0.3, 0.9);
        let w = Vec3::new(-0.5, 0.8, 0.2);
        let rate = inverse_right_jacobian(th, w);
        let h = 1e-6;
        let q1 = Quat::exp(th + rate * h);
        let q0 = Quat::exp(th);
        // Body rate of q0 → q1: log(q0⁻¹ q1)/h.
        let body = (q0.conj() * q1).log() / h;
        assert!((body - w).norm() < 1e-5, "{body:?}");
    }

    /// The contact law's derivatives match central differences.
    #[test]
    fn contact_law_derivatives_match_finite_differences() {
        let c = ContactConstraint {
            normal: Vec3::new(0.0, 0.6, 0.8),
            stiffness: 1e5,
            dissipation: 3.0,
            mu_static: 0.7,
            mu_dynamic: 0.4,
            ..Default::default()
        };
        let vs = 1e-2;
        for (phi, vc) in [(-1e-3, Vec3::new(0.02, -0.05, 0.01)), (-2e-4, Vec3::new(1e-3, 2e-3, -0.04))] {
            let law = contact_force(&c, phi, vc, vs);
            let e = 1e-8;
            for k in 0..3 {
                let dvk = Vec3::unit(k) * e;
                let fd = (contact_force(&c, phi, vc + dvk, vs).force - contact_force(&c, phi, vc - dvk, vs).force)
                    / (2.0 * e);
                let an = law.d_velocity.col(k);
                assert!((fd - an).norm() <= 1e-5 * (1.0 + an.norm()), "d/dvc[{k}]: {fd:?} vs {an:?}");
            }
            let e = 1e-10;
            let fd = (contact_force(&c, phi + e, vc, vs).force - contact_force(&c, phi - e, vc, vs).force) / (2.0 * e);
            assert!((fd - law.d_gap).norm() <= 1e-5 * (1.0 + fd.norm()), "d/dφ: {fd:?} vs {:?}", law.d_gap);
        }
    }
}
