//! The convex ICF problem of one time step, independent of the model: the
//! solver and the cost see only this.
//!
//! Geometry-dependent data (M, D, k, contact Jacobians, φ0, materials) is
//! filled once per configuration by [`super::IcfBuilder`]; the time-step
//! dependent terms (A, r, lagged impulses, gains, limit stiffness) are
//! derived by [`IcfProblem::set_time_step`], so the full and first half
//! steps of CENIC share one geometry query.

use crate::math::{Real, Vec3};

/// Friction regularisation ε as a fraction of the stiction tolerance vs.
/// The friction law μN·vt/√(|vt|² + ε²) reaches 99.5% of μN at slip vs
/// with ε = vs/10, so a sticking contact loaded up to 99% of its friction
/// capacity creeps slower than vs: the stiction tolerance means what it
/// says. (The original design's ε = vs gives only 71% of μN at vs; a contact loaded
/// beyond that would creep faster than vs.)
pub const STICTION_EPS_RATIO: f64 = 0.1;

/// MuJoCo's soft-constraint row in the convex step (models with
/// [`Semantics::MuJoCo`](crate::model::Semantics::MuJoCo)): over a step h
/// the row's impulse is γ = −D·(s − s_ref) clamped to the row's bounds,
/// with s = j·v its velocity, D = 1/R (MuJoCo's regulariser) and the
/// reference velocity s_ref = s0 + h·a_ref = (1 − h·B)·s0 − h·K·d·x, i.e.
/// MuJoCo's force −(a − a_ref)/R for the step's acceleration
/// a = (s − s0)/h. Its cost ½·D·(s − s_ref)² is h² times MuJoCo's
/// constraint cost, as ½‖v − v*‖²_A is h² times the Gauss cost, so a
/// fixed step of MuJoCo's size solves MuJoCo's own convex problem.
#[derive(Clone, Copy, Debug, Default)]
pub struct SoftRow<T> {
    /// D = 1/R (kg, kg·m² or the row's units); 0 for a row that does not
    /// act (a limit or contact not reached at q0).
    pub d: T,
    /// B (1/s): damping of the reference acceleration.
    pub b: T,
    /// K·d·x (m/s² or rad/s²): position part of the reference acceleration
    /// (x = pos − margin, negative when violated).
    pub kpos: T,
    /// The row's velocity at v0, s0 = j·v0 (m/s or rad/s).
    pub vel0: T,
    /// s_ref = (1 − h·B)·s0 − h·K·d·x (set by `set_time_step`).
    pub vref: T,
}

impl<T: Real> SoftRow<T> {
    /// Sets `vref` for step `h` (s).
    #[inline]
    pub fn set_time_step(&mut self, h: T) {
        self.vref = (T::one() - h * self.b) * self.vel0 - h * self.kpos;
    }
}

/// MuJoCo's soft contact (models with
/// [`Semantics::MuJoCo`](crate::model::Semantics::MuJoCo)): a frictionless
/// row along the normal (condim 1), or the four edges n ± μ_k·t_k of
/// MuJoCo's pyramidal friction cone (condim 3), each a unilateral
/// [`SoftRow`] with the same D, B and K·d·x (MuJoCo's `mj_makeImpedance`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SoftContact<T> {
    /// D = 1/R of each row (kg); 0 when the pair is farther apart than its
    /// margin (MuJoCo excludes such contacts).
    pub d: T,
    /// Friction slopes μ of the pyramid's edges along t1 and t2
    /// (dimensionless); [0, 0] for a frictionless contact.
    pub mu: [T; 2],
    /// B (1/s).
    pub b: T,
    /// K·d·(φ0 − margin) (m/s²).
    pub kpos: T,
    /// The pair's margin (m): the contact acts once φ is below it.
    pub reach: T,
    /// First tangent of MuJoCo's contact frame (unit; the second is n × t1).
    pub t1: Vec3<T>,
    /// (1 − h·B)·J v0 (m/s; set by `set_time_step`).
    pub w0: Vec3<T>,
    /// h·K·d·(φ0 − margin) (m/s; set by `set_time_step`).
    pub hk: T,
}

impl<T: Real> ContactConstraint<T> {
    /// How far the contact is from acting at q0 (m; negative once it
    /// acts): φ0 for the Hunt–Crossley law, φ0 − margin for MuJoCo's soft
    /// contact. Contact events happen where it crosses 0.
    #[inline]
    pub fn activation_gap(&self) -> T {
        match &self.soft {
            Some(s) => self.phi0 - s.reach,
            None => self.phi0,
        }
    }
}

/// A compliant point contact. `vc = J v` is the velocity of body B relative
/// to body A at the contact point (world frame).
#[derive(Clone, Copy, Debug, Default)]
pub struct ContactConstraint<T> {
    /// Signed distance at q0 (m), negative when overlapping.
    pub phi0: T,
    /// Unit normal from A to B.
    pub normal: Vec3<T>,
    /// Combined stiffness k (N/m).
    pub stiffness: T,
    /// Combined Hunt–Crossley dissipation d (s/m).
    pub dissipation: T,
    /// Static friction coefficient μs.
    pub mu_static: T,
    /// Dynamic friction coefficient μd.
    pub mu_dynamic: T,
    /// Delassus-operator estimate w (1/kg) used for friction regularisation.
    pub delassus: T,
    /// First entry of this contact's Jacobian columns in the problem's pools.
    pub jac_start: usize,
    /// Number of dofs with non-zero Jacobian columns.
    pub jac_len: usize,
    /// Contact velocity at v0: J v0 (m/s).
    pub vc0: Vec3<T>,
    /// Elastic force at q0, fe0 = −k φ0 (N; negative when separated).
    pub fe0: T,
    /// Lagged normal impulse h·max(0, fe0)·max(0, 1 − d vn0) (N·s).
    pub n0: T,
    /// Lagged friction coefficient from μs, μd and the slip speed at v0.
    pub mu: T,
    /// Friction regularisation ε = max(vs/10, μ·R·n0) (m/s), R = 1e-3·w.
    pub eps: T,
    /// MuJoCo's soft contact, which then replaces the Hunt–Crossley law
    /// and friction above.
    pub soft: Option<SoftContact<T>>,
}

/// An implicit actuator law on one dof: τ(v) = clamp(−K v + b, −e, e).
#[derive(Clone, Copy, Debug, Default)]
pub struct GainConstraint<T> {
    /// Velocity coordinate.
    pub dof: usize,
    /// Position gain kp (N·m/rad or N/m).
    pub kp: T,
    /// Velocity gain kd (N·m·s/rad or N·s/m).
    pub kd: T,
    /// Target minus current position, q_ref − q0 (rad or m).
    pub q_err: T,
    /// Target velocity (rad/s or m/s).
    pub v_ref: T,
    /// Effort limit e (N·m or N), may be infinite.
    pub effort: T,
    /// K = h kp + kd.
    pub gain: T,
    /// b = kp (q_ref − q0) + kd v_ref.
    pub bias: T,
}

/// A one-sided compliant joint limit on g = sign·(q − q_limit) ≥ 0: a
/// spring–damper whose force, tangent stiffness and damping at q0 come from
/// the joint's [`limit_law`](crate::model::Joint::limit_law) (MJCF's
/// `solreflimit`/`solimplimit`), so a violated limit is restored over a
/// physical time whatever the step size. Impulse
/// γ = h·max(0, fe0 − (h·k + c)·vn), vn = sign·v: the spring force lagged at
/// q0 plus its implicit change over the step. With the spring's linear
/// extension fe0 < 0 before the limit, the damping engages within about
/// (h + c/k)·|v| of it (a smooth onset the gradients rely on); MuJoCo's
/// semantics, where a limit acts only once reached, use a unilateral
/// [`SoftRow`] instead.
#[derive(Clone, Copy, Debug, Default)]
pub struct LimitConstraint<T> {
    /// Velocity coordinate.
    pub dof: usize,
    /// +1 for a lower limit, −1 for an upper limit.
    pub sign: T,
    /// Distance to the limit at q0 less the margin, g0 (rad or m); negative when violated.
    pub g0: T,
    /// Spring force at q0 (N·m or N; negative while not violated: the
    /// linear extension that engages a limit about to be crossed).
    pub fe0: T,
    /// Tangent stiffness at q0 (N·m/rad or N/m), ≥ 0.
    pub stiffness: T,
    /// Damping (N·m·s/rad or N·s/m).
    pub damping: T,
    /// MuJoCo's soft limit, which then replaces the spring–damper.
    pub soft: Option<SoftRow<T>>,
}

/// A scalar force element along a row j of the generalized velocities
/// (s = j·v): f(s) = clamp(f0 − κ·s, lo, hi) with κ = h·k + c, applied as
/// the generalized impulse h·jᵀ f. The spring's change over the step
/// (−h·k·s) and the damping (−c·s) are implicit, f0 is lagged at q0; the
/// potential −h∫f ds is convex because f decreases in s.
///
/// One kind covers tendon limits (unilateral: lo = 0, hi = ∞),
/// equality constraints and tendon springs (bilateral: no clamp) and
/// implicit general actuators (the actuator's force range), each with a
/// Jacobian row stored in the problem's row pools.
#[derive(Clone, Copy, Debug, Default)]
pub struct RowConstraint<T> {
    /// First entry of this row in the problem's row pools.
    pub jac_start: usize,
    /// Number of entries (dofs with non-zero coefficients).
    pub jac_len: usize,
    /// The row's coordinate at q0, for diagnostics (MuJoCo's `efc_pos`):
    /// the violation of an equality row, the distance to a tendon limit
    /// less its margin, the stretch beyond the rest-length band of a tendon
    /// spring; 0 for actuators and friction.
    pub pos: T,
    /// Force at s = 0 from the state at q0, f0 (N or N·m).
    pub force: T,
    /// Stiffness k ≥ 0 (N/m or N·m/rad per unit of the row coordinate).
    pub stiffness: T,
    /// Damping c ≥ 0 (N·s/m or N·m·s/rad).
    pub damping: T,
    /// Lower force bound (N or N·m; may be −∞).
    pub lo: T,
    /// Upper force bound (may be +∞).
    pub hi: T,
    /// κ = h·k + c (set by `set_time_step`).
    pub kappa: T,
    /// MuJoCo's soft row, which then replaces the force law above (its
    /// bounds stay `lo`, `hi`).
    pub soft: Option<SoftRow<T>>,
}

/// The convex problem: minimise ℓ(v) = ½ vᵀ A v − rᵀ v + Σ contacts + Σ gains + Σ limits + Σ rows.
#[derive(Clone, Debug)]
pub struct IcfProblem<T> {
    /// Number of velocity coordinates.
    pub nv: usize,
    /// Mass matrix M(q0) incl. armature (nv × nv, row-major).
    pub mass: Vec<T>,
    /// Joint damping, diagonal D (nv).
    pub damping: Vec<T>,
    /// Generalized force k(q0, v0) = bias − applied + D v0 (nv): everything
    /// treated explicitly, with damping made implicit through A.
    pub force: Vec<T>,
    /// Velocity at the start of the step (nv).
    pub v0: Vec<T>,
    /// Stiction tolerance vs (m/s).
    pub stiction_tolerance: T,
    /// Contacts.
    pub contacts: Vec<ContactConstraint<T>>,
    /// Dof indices of contact Jacobian columns (pool).
    pub jac_dof: Vec<usize>,
    /// Contact Jacobian columns (pool, 3 values per entry, world frame).
    pub jac_col: Vec<Vec3<T>>,
    /// Actuator gains.
    pub gains: Vec<GainConstraint<T>>,
    /// Joint limits.
    pub limits: Vec<LimitConstraint<T>>,
    /// Row force elements (tendons, equality constraints, general actuators).
    pub rows: Vec<RowConstraint<T>>,
    /// Dof indices of row entries (pool).
    pub row_dof: Vec<usize>,
    /// Coefficients of row entries (pool).
    pub row_coef: Vec<T>,
    /// Dof ranges (start, len) of the kinematic trees, contiguous and in
    /// order; A is block diagonal over them. Empty: treat as one dense block.
    pub blocks: Vec<(usize, usize)>,
    /// Tree block of each dof (nv), when `blocks` is not empty.
    pub dof_block: Vec<usize>,
    /// Parent dof of each dof on the path to the world (`usize::MAX` at a
    /// tree root; nv), or empty when unknown. A's entry (i, j) is zero
    /// unless one of i, j is the other or its ancestor; the solver's
    /// tree factorization uses it ([`crate::math::TreeLdl`]).
    pub dof_parent: Vec<usize>,

    /// Time step h (s) of the last `set_time_step`.
    pub h: T,
    /// A = M + h D (nv × nv).
    pub a: Vec<T>,
    /// r = A v0 − h k (nv).
    pub r: Vec<T>,
    /// Convergence scaling diag(M)^(−½) (nv).
    pub scale: Vec<T>,
}

impl<T: Real> IcfProblem<T> {
    /// An empty problem with storage for `nv` velocities.
    pub fn new(nv: usize) -> Self {
        Self {
            nv,
            mass: vec![T::zero(); nv * nv],
            damping: vec![T::zero(); nv],
            force: vec![T::zero(); nv],
            v0: vec![T::zero(); nv],
            stiction_tolerance: T::c(1e-4),
            contacts: Vec::new(),
            jac_dof: Vec::new(),
            jac_col: Vec::new(),
            gains: Vec::new(),
            limits: Vec::new(),
            rows: Vec::new(),
            row_dof: Vec::new(),
            row_coef: Vec::new(),
            blocks: Vec::new(),
            dof_block: Vec::new(),
            dof_parent: Vec::new(),
            h: T::zero(),
            a: vec![T::zero(); nv * nv],
            r: vec![T::zero(); nv],
            scale: vec![T::one(); nv],
        }
    }

    /// Derives the step-size dependent terms for step `h` (s): A, r, the
    /// lagged contact quantities and the gain laws. Needs no
    /// new geometry: call it again with another h to rescale.
    pub fn set_time_step(&mut self, h: T) {
        let nv = self.nv;
        self.h = h;
        // A is block diagonal over trees (entries outside the blocks stay zero).
        for bi in 0..self.block_count() {
            let (s, m) = self.block(bi);
            for i in s..s + m {
                for j in s..s + m {
                    self.a[i * nv + j] = self.mass[i * nv + j];
                }
                self.a[i * nv + i] += h * self.damping[i];
                self.scale[i] = T::one() / self.mass[i * nv + i].max(T::min_positive_value()).sqrt();
            }
            for i in s..s + m {
                let mut acc = T::zero();
                for j in s..s + m {
                    acc += self.a[i * nv + j] * self.v0[j];
                }
                self.r[i] = acc - h * self.force[i];
            }
        }
        let vs = self.stiction_tolerance;
        let half = T::c(0.5);
        let sig = |x: T| x / (T::one() + x * x).sqrt();
        let sig10 = sig(T::c(10.0));
        for c in self.contacts.iter_mut() {
            let vn0 = c.normal.dot(c.vc0);
            let vt0 = c.vc0 - c.normal * vn0;
            c.fe0 = -c.stiffness * c.phi0;
            c.n0 = h * c.fe0.max(T::zero()) * (T::one() - c.dissipation * vn0).max(T::zero());
            // Stribeck-like blend from μs (sticking) to μd (sliding), lagged at v0 so ℓ stays convex.
            // |vt0| with a zero derivative at vt0 = 0 (a contact at rest on
            // slide joints): the norm's derivative there is 0/0 in dual numbers.
            let vt2 = vt0.norm2();
            let s = if vt2.f64() > 0.0 { vt2.sqrt() / vs } else { T::zero() };
            c.mu = c.mu_dynamic + (c.mu_static - c.mu_dynamic) * half * (T::one() - sig(s - T::c(10.0)) / sig10);
            let reg = T::c(1e-3) * c.delassus;
            c.eps = (vs * T::c(STICTION_EPS_RATIO)).max(c.mu * reg * c.n0);
            if let Some(s) = c.soft.as_mut() {
                s.w0 = c.vc0 * (T::one() - h * s.b);
                s.hk = h * s.kpos;
            }
        }
        for l in self.limits.iter_mut() {
            if let Some(s) = l.soft.as_mut() {
                s.set_time_step(h);
            }
        }
        for g in self.gains.iter_mut() {
            g.gain = h * g.kp + g.kd;
            g.bias = g.kp * g.q_err + g.kd * g.v_ref;
        }
        for r in self.rows.iter_mut() {
            r.kappa = h * r.stiffness + r.damping;
            if let Some(s) = r.soft.as_mut() {
                s.set_time_step(h);
            }
        }
    }

    /// Number of dense diagonal blocks of A (1 when `blocks` is empty).
    #[inline]
    pub fn block_count(&self) -> usize {
        self.blocks.len().max(1)
    }

    /// Dof range (start, len) of diagonal block `i` of A.
    #[inline]
    pub fn block(&self, i: usize) -> (usize, usize) {
        if self.blocks.is_empty() { (0, self.nv) } else { self.blocks[i] }
    }

    /// Contact velocity J v for contact `c` (m/s).
    #[inline]
    pub fn contact_velocity(&self, c: &ContactConstraint<T>, v: &[T]) -> Vec3<T> {
        let mut out = Vec3::zero();
        for e in c.jac_start..c.jac_start + c.jac_len {
            out += self.jac_col[e] * v[self.jac_dof[e]];
        }
        out
    }

    /// s = j·v for row `r` (row units per second).
    #[inline]
    pub fn row_velocity(&self, r: &RowConstraint<T>, v: &[T]) -> T {
        let mut s = T::zero();
        for e in r.jac_start..r.jac_start + r.jac_len {
            s += self.row_coef[e] * v[self.row_dof[e]];
        }
        s
    }

    /// Clears all constraints (keeps storage).
    pub fn clear_constraints(&mut self) {
        self.contacts.clear();
        self.jac_dof.clear();
        self.jac_col.clear();
        self.gains.clear();
        self.limits.clear();
        self.rows.clear();
        self.row_dof.clear();
        self.row_coef.clear();
    }
}
