//! The exponential integrator for stiff contacts of the seed
//! `exponential_integrators_stiff_contacts` (Hammoud, Olivieri, Righetti,
//! Carpentier, Del Prete: "Expo"), fixed step, on the compliant contact
//! model of [`super::compliant`].
//!
//! Follows the seed's Sec. III–IV: M, the bias forces and the contact
//! Jacobians are frozen at the start of the step (one geometry query per
//! step), the stiff contact forces are linearised into spring–dampers,
//! and the resulting linear ODE is integrated exactly with the matrix
//! exponential (its first-order exponential integrator, eq. 7) while the
//! remaining forces are held constant (explicit). The integrals of the
//! state that the update needs come from one exponential of an augmented
//! matrix (eq. 29–30), computed by scaling and squaring with a Padé
//! approximant (Sec. V-B, Higham's method, the seed's default "Expo"). A
//! contact whose force averaged over the step leaves its friction cone
//! (or pulls) is replaced by the projection of that average, held
//! constant over the step (Sec. IV-A, eq. 23–24).
//!
//! The linear system. With s the displacement of the configuration since
//! the start of the step (velocity coordinates) and Δv = v − v0, the
//! frozen dynamics M v̇ = G0 − K s − B Δv (G0 = −k + F at the start; K, B
//! the stiffness and damping of the linearised elements, see
//! [`super::compliant::ForceJacobians`]) read
//!
//!   d/dt (s, Δv) = [[0, I], [−M⁻¹K, −M⁻¹B]] (s, Δv) + (v0, M⁻¹G0),
//!
//! from (0, 0); then v1 = v0 + Δv(h) and q1 = q0 ⊕ s(h).
//!
//! Departures: the seed writes the same frozen linear system in contact
//! space ((Δp, Δṗ) of the stacked 3-D contact points, with Υ = J M⁻¹ Jᵀ);
//! here it is written in velocity coordinates, which is the same system
//! (given frozen J and M) and lets joint limits, joint damping, actuator
//! gains and row elements — stiff spring–dampers too, absent from the
//! seed's robots — join the exponential instead of being explicit; the
//! system is split into independent groups of kinematic trees (trees are
//! grouped when an element couples them) and trees without any linearised
//! element are advanced explicitly (the exponential of their nilpotent
//! system). The contact model is the shared Hunt–Crossley normal force
//! with regularised friction instead of the seed's linear spring–damper
//! with tangential anchor points (so no anchor-point state and no anchor
//! update, Sec. IV-B): the friction's slope at small slip is the
//! tangential damper. The term J̇v of the contact-point acceleration is
//! neglected (frozen Jacobians). Only eq. 24 (constant projected average
//! force for velocity and position) is used, not the refinement of eq.
//! 25–26. No matrix balancing; the Padé degree is 7 (accurate to rounding
//! after scaling), not the seed's reduced-cost variants.

use super::compliant::{ForceJacobians, contact_force, contact_forces, friction_coefficient, other_forces, solve_mass};
use super::linalg::{ExpmWork, expm};
use super::{Simulator, StepError, WorldStats};
use crate::dynamics;
use crate::math::{Real, Vec3, cholesky_factor, cholesky_solve_in_place};

/// Settings of the exponential-integrator baseline ([`super::Mode::Exponential`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ExponentialParams {
    /// Time step (s).
    pub dt: f64,
    /// Project the step-averaged contact forces onto their friction cones
    /// (the seed's Sec. IV-A); off leaves the linearised forces as they are.
    pub project_friction_cone: bool,
}

impl Default for ExponentialParams {
    fn default() -> Self {
        Self { dt: 1e-3, project_friction_cone: true }
    }
}

/// Workspace of the exponential integrator for one world.
#[derive(Clone, Debug)]
pub(crate) struct Exponential<T> {
    g0: Vec<T>,
    a0: Vec<T>,
    /// Linearised contact damping and stiffness, and those of the other elements (nv × nv).
    b_con: Vec<T>,
    k_con: Vec<T>,
    b_oth: Vec<T>,
    k_oth: Vec<T>,
    factor: Vec<T>,
    /// Component (root tree block) of each tree block and of each dof;
    /// whether a block holds a linearised element.
    comp: Vec<usize>,
    dof_comp: Vec<usize>,
    stiff: Vec<bool>,
    /// Dofs of the component being solved.
    dofs: Vec<usize>,
    /// Scratch for one component's system.
    abar: Vec<T>,
    ebar: Vec<T>,
    mfac: Vec<T>,
    col: Vec<T>,
    ds: Vec<T>,
    dv: Vec<T>,
    ds_int: Vec<T>,
    dv_int: Vec<T>,
    projected: Vec<Vec3<T>>,
    expm: ExpmWork<T>,
}

impl<T: Real> Exponential<T> {
    pub(crate) fn new(nv: usize) -> Self {
        let z = |n: usize| vec![T::zero(); n];
        Self {
            g0: z(nv),
            a0: z(nv),
            b_con: z(nv * nv),
            k_con: z(nv * nv),
            b_oth: z(nv * nv),
            k_oth: z(nv * nv),
            factor: z(nv * nv),
            comp: vec![],
            dof_comp: vec![0; nv],
            stiff: vec![],
            dofs: vec![],
            abar: vec![],
            ebar: vec![],
            mfac: vec![],
            col: z(nv),
            ds: z(nv),
            dv: z(nv),
            ds_int: z(nv),
            dv_int: z(nv),
            projected: vec![],
            expm: ExpmWork::default(),
        }
    }

    /// One step of `h` seconds.
    #[allow(clippy::needless_range_loop)] // dof-indexed loops over several arrays
    pub(crate) fn step(
        &mut self,
        sim: &mut Simulator<T>,
        p: &ExponentialParams,
        h: f64,
        stats: &mut WorldStats,
    ) -> Result<(), StepError> {
        sim.check_finite()?;
        stats.contact_overflow += sim.compute_geometry();
        let prob = &sim.problem;
        let nv = prob.nv;
        let v0 = &sim.data.v;
        for m in [&mut self.b_con, &mut self.k_con, &mut self.b_oth, &mut self.k_oth] {
            m.iter_mut().for_each(|x| *x = T::zero());
        }
        for (g, k) in self.g0.iter_mut().zip(&prob.force) {
            *g = -*k;
        }
        let jac = ForceJacobians { damping: &mut self.b_con, stiffness: &mut self.k_con };
        contact_forces(prob, v0, T::zero(), &mut self.g0, Some(jac));
        let jac = ForceJacobians { damping: &mut self.b_oth, stiffness: &mut self.k_oth };
        other_forces(prob, v0, T::zero(), &mut self.g0, Some(jac));
        // Joint damping (inside k at v0) is linear in v: it joins the exponential.
        for i in 0..nv {
            self.b_oth[i * nv + i] += prob.damping[i];
        }
        solve_mass(prob, &mut self.factor, &self.g0, &mut self.a0)?;

        // Group tree blocks that an element couples (union–find on blocks).
        let nb = prob.block_count();
        let block_of = |i: usize| if prob.blocks.is_empty() { 0 } else { prob.dof_block[i] };
        self.comp.clear();
        self.comp.extend(0..nb);
        self.stiff.clear();
        self.stiff.resize(nb, false);
        for i in 0..nv {
            for j in 0..nv {
                let e = i * nv + j;
                let nz = self.b_con[e] != T::zero()
                    || self.k_con[e] != T::zero()
                    || self.b_oth[e] != T::zero()
                    || self.k_oth[e] != T::zero();
                if nz {
                    let (a, b) = (find(&mut self.comp, block_of(i)), find(&mut self.comp, block_of(j)));
                    self.comp[a.max(b)] = a.min(b);
                    self.stiff[block_of(i)] = true;
                }
            }
        }
        for b in 0..nb {
            let r = find(&mut self.comp, b);
            self.comp[b] = r;
            if self.stiff[b] {
                self.stiff[r] = true;
            }
        }
        for i in 0..nv {
            self.dof_comp[i] = self.comp[block_of(i)];
        }
        // Trees without linearised elements: the explicit update.
        let ht = T::c(h);
        let half_h2 = T::c(0.5 * h * h);
        for i in 0..nv {
            self.ds[i] = ht * v0[i] + half_h2 * self.a0[i];
            self.dv[i] = ht * self.a0[i];
        }
        for root in 0..nb {
            if self.comp[root] != root || !self.stiff[root] {
                continue;
            }
            self.dofs.clear();
            for i in 0..nv {
                if self.dof_comp[i] == root {
                    self.dofs.push(i);
                }
            }
            self.solve_component(sim, h, true)?;
            stats.factorizations += 1;
            if p.project_friction_cone && self.project_contacts(sim, h, root) {
                // Contacts held at their projected average force; the other elements stay linear.
                stats.line_search_iterations += 1;
                self.solve_component(sim, h, false)?;
                stats.factorizations += 1;
            }
        }
        let model = sim.model.clone();
        dynamics::integrate_q(&model, &mut sim.data.q, &self.ds, T::one());
        dynamics::integrate_act(&model, &mut sim.data.act, &sim.ctrl, ht);
        for i in 0..nv {
            self.col[i] = sim.data.v[i] + self.dv[i];
        }
        let v1 = std::mem::take(&mut self.col);
        sim.set_qacc(&v1, ht);
        sim.data.v.copy_from_slice(&v1);
        self.col = v1;
        sim.time += h;
        Ok(())
    }

    /// Integrates the linear system of the component whose dofs are in
    /// `self.dofs` over h, writing s(h), Δv(h) and their integrals for
    /// those dofs. With `with_contacts` off, the contacts' linearisation is
    /// left out and their forces are `self.projected`, held constant.
    fn solve_component(&mut self, sim: &Simulator<T>, h: f64, with_contacts: bool) -> Result<(), StepError> {
        let prob = &sim.problem;
        let nv = prob.nv;
        let m = self.dofs.len();
        let n = 2 * m + 2;
        self.abar.clear();
        self.abar.resize(n * n, T::zero());
        self.ebar.resize(n * n, T::zero());
        self.mfac.resize(m * m, T::zero());
        // Cholesky of the component's mass matrix (the trees' diagonal blocks).
        for (a, &i) in self.dofs.iter().enumerate() {
            for (b, &j) in self.dofs.iter().enumerate() {
                self.mfac[a * m + b] = prob.mass[i * nv + j];
            }
        }
        cholesky_factor(&mut self.mfac, m).map_err(|_| StepError::NonFinite("mass matrix (not positive definite)"))?;
        // The constant term G0 of this component (contacts replaced when projected).
        if !with_contacts {
            for (a, &i) in self.dofs.iter().enumerate() {
                self.col[a] = -prob.force[i];
            }
            let v0 = &sim.data.v;
            let mut g = std::mem::take(&mut self.g0);
            g.iter_mut().for_each(|x| *x = T::zero());
            other_forces(prob, v0, T::zero(), &mut g, None);
            for (ci, c) in prob.contacts.iter().enumerate() {
                for e in c.jac_start..c.jac_start + c.jac_len {
                    g[prob.jac_dof[e]] += prob.jac_col[e].dot(self.projected[ci]);
                }
            }
            for (a, &i) in self.dofs.iter().enumerate() {
                self.col[a] += g[i];
            }
            self.g0 = g;
            cholesky_solve_in_place(&self.mfac, m, &mut self.col[..m]);
            for (a, &i) in self.dofs.iter().enumerate() {
                self.a0[i] = self.col[a];
            }
        }
        // Ā = [[0, I, v0, 0], [−M⁻¹K, −M⁻¹B, a0, 0], [0, 0, 0, 1], [0, 0, 0, 0]]·h.
        let ht = T::c(h);
        for a in 0..m {
            self.abar[a * n + m + a] = ht;
            self.abar[a * n + 2 * m] = ht * sim.data.v[self.dofs[a]];
            self.abar[(m + a) * n + 2 * m] = ht * self.a0[self.dofs[a]];
        }
        self.abar[2 * m * n + 2 * m + 1] = ht;
        for (which, off) in [(0usize, 0usize), (1, m)] {
            // Column b of −M⁻¹K (which = 0) or −M⁻¹B (which = 1).
            for (b, &j) in self.dofs.iter().enumerate() {
                let mut any = false;
                for (a, &i) in self.dofs.iter().enumerate() {
                    let e = i * nv + j;
                    let mut x = if which == 0 { self.k_oth[e] } else { self.b_oth[e] };
                    if with_contacts {
                        x += if which == 0 { self.k_con[e] } else { self.b_con[e] };
                    }
                    any |= x != T::zero();
                    self.col[a] = x;
                }
                if !any {
                    continue;
                }
                cholesky_solve_in_place(&self.mfac, m, &mut self.col[..m]);
                for a in 0..m {
                    self.abar[(m + a) * n + off + b] = -ht * self.col[a];
                }
            }
        }
        expm(&mut self.abar, n, &mut self.ebar, &mut self.expm)
            .map_err(|_| StepError::NonFinite("matrix exponential (singular Padé denominator)"))?;
        for (a, &i) in self.dofs.iter().enumerate() {
            self.ds[i] = self.ebar[a * n + 2 * m];
            self.dv[i] = self.ebar[(m + a) * n + 2 * m];
            self.ds_int[i] = self.ebar[a * n + 2 * m + 1];
            self.dv_int[i] = self.ebar[(m + a) * n + 2 * m + 1];
        }
        Ok(())
    }

    /// The step-averaged force of every contact of the current component
    /// (from the integrals of the linear solution); when one is outside its
    /// friction cone, stores the projections of all of them in
    /// `self.projected` and returns true.
    fn project_contacts(&mut self, sim: &Simulator<T>, h: f64, root: usize) -> bool {
        let prob = &sim.problem;
        let vs = prob.stiction_tolerance;
        let inv_h = T::c(1.0 / h);
        self.projected.resize(prob.contacts.len(), Vec3::zero());
        let mut any = false;
        for (ci, c) in prob.contacts.iter().enumerate() {
            let vc0 = c.vc0;
            let law = contact_force(c, c.phi0, vc0, vs);
            if c.jac_len == 0 || self.dof_comp[prob.jac_dof[c.jac_start]] != root {
                self.projected[ci] = law.force;
                continue;
            }
            // λ̄ = f0 + (∂f/∂φ (n·J ∫s) + ∂f/∂vc (J ∫Δv)) / h.
            let js = prob.contact_velocity(c, &self.ds_int);
            let jv = prob.contact_velocity(c, &self.dv_int);
            let mean = law.force + (law.d_gap * c.normal.dot(js) + law.d_velocity * jv) * inv_h;
            let n = c.normal;
            let fn_ = n.dot(mean);
            let ft = mean - n * fn_;
            let slip = (vc0 - n * n.dot(vc0)).norm();
            let (mu, _) = friction_coefficient(c.mu_static, c.mu_dynamic, slip / vs);
            let t = ft.norm();
            let proj = if t <= mu * fn_ * T::c(1.0 + 1e-9) {
                mean
            } else {
                any = true;
                if mu * t <= -fn_ {
                    Vec3::zero()
                } else {
                    let pn = (fn_ + mu * t) / (T::one() + mu * mu);
                    n * pn + ft * (mu * pn / t)
                }
            };
            self.projected[ci] = proj;
        }
        any
    }
}

/// Union–find root with path halving.
fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}
