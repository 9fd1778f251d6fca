//! The reverse (adjoint) pass: vector–Jacobian products of a recorded
//! rollout without forming Jacobians.
//!
//! For one recorded solve with inputs z = [q0, v0, u, θ] and cotangent
//! (q̄1, v̄1) of its outputs x1 = [q1, v1], q1 = q0 ⊕ h·v1 is reversed
//! first (q̄0 = (∂q1/∂q0)ᵀ q̄1, v̄1 += (∂q1/∂v1)ᵀ q̄1), then the implicit
//! function theorem on R(v1; z) = 0 gives z̄ += −λᵀ ∂R/∂z with λ = H⁻ᵀ v̄1,
//! H = ∂R/∂v1 the matrix the dense path factors. λᵀ ∂R/∂z is one reverse
//! sweep over the generic CPU pipeline recorded in [`Rev`] numbers at the
//! recorded state with z as leaves, where kinematics and the rigid-body
//! stages enter as leaves of their own with hand-written reverse rules
//! ([`super::kinematics_adjoint`], [`super::dynamics_adjoint`]). Every
//! branch of the dense path is mirrored: the contact check, the implicit
//! friction load's tangents and its coupling in H (LU, transposed solve),
//! contacts from distance.

use super::FrictionLoad;
use super::cfd::add_phantom;
use super::dynamics_adjoint::{DynamicsAdjoint, dynamics_leaves};
use super::jacobian::{Setup, add_load_coupling, check_contacts, implicit_load_tangents};
use super::kinematics_adjoint::{KinematicsAdjoint, kinematics_leaves};
use super::params::{set_controls, set_params};
use super::rev::{Rev, tape};
use super::{DiffError, SolveSite};
use crate::collision::Contacts;
use crate::dynamics::{integrate_q, normalize_quaternions};
use crate::icf::cost::{CostWork, evaluate};
use crate::integrator::linalg::{lu_factor, lu_solve_transpose};
use crate::integrator::{Simulator, Tape};
use crate::math::{cholesky_factor, cholesky_solve_in_place};
use crate::model::Model;
use std::sync::Arc;

/// Workspace of the reverse pass for one world (allocated once; the
/// thread's [`Rev`] tape keeps its capacity across solves).
pub(crate) struct Adjoint {
    model: Arc<Model>,
    sim: Simulator<Rev>,
    phantom: Contacts<Rev>,
    v1: Vec<Rev>,
    grad: Vec<Rev>,
    hess: Vec<Rev>,
    qd: Vec<Rev>,
    vd: Vec<Rev>,
    /// The leaves of the current recording (z, or [q0, v1], or q).
    leaves: Vec<Rev>,
    work: CostWork<Rev>,
    /// Kinematics' hand-written reverse rule.
    kinematics: KinematicsAdjoint,
    /// The velocity, mass-matrix and bias-force stages' reverse rule.
    dynamics: DynamicsAdjoint,
    /// Those stages' values, computed in `f64`.
    values: crate::dynamics::Data<f64>,
    factor: Vec<f64>,
    pivots: Vec<usize>,
    jt: Vec<f64>,
    jn: Vec<f64>,
    /// Adjoints of the tape's nodes.
    adj: Vec<f64>,
    /// v̄1, then λ = H⁻ᵀ v̄1.
    lam: Vec<f64>,
    /// q̄0 from the position update.
    qbar: Vec<f64>,
    /// Phantom pairs seen (statistics).
    pub phantom_pairs: usize,
    /// Largest tape recorded (nodes).
    pub peak_nodes: usize,
}

impl Adjoint {
    pub fn new(model: Arc<Model>, nc: usize, np: usize) -> Self {
        let (nq, nv) = (model.nq, model.nv);
        Self {
            sim: Simulator::new(model.clone()),
            phantom: Contacts::new(&model),
            v1: vec![Rev::cst(0.0); nv],
            grad: vec![Rev::cst(0.0); nv],
            hess: vec![Rev::cst(0.0); nv * nv],
            qd: vec![Rev::cst(0.0); nq],
            vd: vec![Rev::cst(0.0); nv],
            leaves: Vec::with_capacity(nq + nv + nc + np),
            work: CostWork::default(),
            kinematics: KinematicsAdjoint::new(&model),
            dynamics: DynamicsAdjoint::new(&model),
            values: crate::dynamics::Data::new(&model),
            factor: vec![0.0; nv * nv],
            pivots: vec![0; nv],
            jt: vec![0.0; nv],
            jn: vec![0.0; nv],
            adj: Vec::new(),
            lam: vec![0.0; nv],
            qbar: vec![0.0; nq],
            phantom_pairs: 0,
            peak_nodes: 0,
            model,
        }
    }

    /// Zeroed adjoints for the current tape.
    fn reset_adjoints(&mut self) {
        let n = tape::len();
        self.peak_nodes = self.peak_nodes.max(n);
        self.adj.clear();
        self.adj.resize(n, 0.0);
    }

    /// Reverse of recorded solve `i`: `xbar` holds ∂L/∂x1 on entry and
    /// ∂L/∂x0 on exit; ∂L/∂u and ∂L/∂θ are added to `ubar`, `tbar`.
    #[allow(clippy::too_many_arguments)]
    fn solve_vjp(
        &mut self,
        setup: &Setup,
        rec: &Tape,
        i: usize,
        u: &[f64],
        theta: &[f64],
        site: SolveSite,
        xbar: &mut [f64],
        ubar: &mut [f64],
        tbar: &mut [f64],
    ) -> Result<(), DiffError> {
        let model = self.model.clone();
        let (nq, nv, nc) = (model.nq, model.nv, u.len());
        let nx = nq + nv;
        let s = rec.solve(i);
        let h = Rev::cst(s.h);

        // q1 = q0 ⊕ h·v1 with leaves [q0, v1].
        tape::clear();
        self.leaves.clear();
        self.leaves.extend(s.q0.iter().chain(s.v1).map(|&x| Rev::var(x)));
        self.qd.copy_from_slice(&self.leaves[..nq]);
        self.vd.copy_from_slice(&self.leaves[nq..]);
        integrate_q(&model, &mut self.qd, &self.vd, h);
        if i + 1 < rec.len() {
            // The recorded solves must chain exactly: q1 here is the next solve's q0.
            let next = rec.solve(i + 1);
            if (0..nq).any(|k| self.qd[k].v.to_bits() != next.q0[k].to_bits())
                || (0..nv).any(|k| s.v1[k].to_bits() != next.v0[k].to_bits())
            {
                return Err(DiffError::Tape { site });
            }
        }
        self.reset_adjoints();
        for (q, &b) in self.qd.iter().zip(&xbar[..nq]) {
            self.adj[q.index()] += b;
        }
        tape::backward(&mut self.adj);
        for k in 0..nq {
            self.qbar[k] = self.adj[self.leaves[k].index()];
        }
        for k in 0..nv {
            self.lam[k] = xbar[nq + k] + self.adj[self.leaves[nq + k].index()];
        }

        // R(v1; z) with leaves z = [q0, v0, u, θ].
        tape::clear();
        self.leaves.clear();
        self.leaves.extend(s.q0.iter().chain(s.v0).chain(u).chain(theta).map(|&x| Rev::var(x)));
        for k in 0..nv {
            self.v1[k] = Rev::cst(s.v1[k]);
        }
        let sim = &mut self.sim;
        sim.data.q.copy_from_slice(&self.leaves[..nq]);
        sim.data.v.copy_from_slice(&self.leaves[nq..nx]);
        set_controls(sim, setup.control, self.leaves[nx..nx + nc].iter().copied());
        set_params(sim, &setup.params, self.leaves[nx + nc..].iter().copied());
        sim.contacts.skin = s.skin;
        // Kinematics and the rigid-body stages enter as leaves with rules of
        // their own (below).
        let kin = kinematics_leaves(&model, &mut self.values, &mut sim.data, &mut self.kinematics);
        let dynamics = dynamics_leaves(&model, &mut self.values, &mut sim.data, &mut self.dynamics);
        sim.compute_geometry_from_dynamics(false);
        check_contacts(&sim.contacts.list, s.contacts, site)?;
        sim.problem.set_time_step(h);
        let implicit = setup.friction_load == FrictionLoad::Implicit;
        if implicit {
            implicit_load_tangents(&mut sim.problem, &self.v1);
        }
        // H's values only (the dense path's factor), then R recorded.
        let was = tape::set_recording(false);
        self.hess.fill(Rev::cst(0.0));
        evaluate(&sim.problem, &self.v1, &mut self.grad, Some(&mut self.hess[..]), &mut self.work);
        tape::set_recording(was);
        evaluate(&sim.problem, &self.v1, &mut self.grad, None, &mut self.work);
        if let Some(cfd) = setup.cfd.as_ref() {
            self.phantom_pairs += add_phantom(cfd, &model, &sim.data, &mut self.phantom, h, &mut self.grad);
        }
        for (f, hh) in self.factor.iter_mut().zip(&self.hess) {
            *f = hh.v;
        }
        if implicit {
            add_load_coupling(&sim.problem, &self.v1, &mut self.factor, &mut self.jt, &mut self.jn);
            lu_factor(&mut self.factor, nv, &mut self.pivots).map_err(|pivot| DiffError::Hessian { site, pivot })?;
            lu_solve_transpose(&self.factor, nv, &self.pivots, &mut self.lam);
        } else {
            cholesky_factor(&mut self.factor, nv).map_err(|e| DiffError::Hessian { site, pivot: e.pivot })?;
            cholesky_solve_in_place(&self.factor, nv, &mut self.lam);
        }
        // z̄ += −λᵀ ∂R/∂z in one sweep.
        self.reset_adjoints();
        for (r, &l) in self.grad.iter().zip(&self.lam) {
            self.adj[r.index()] -= l;
        }
        // Kinematics' and the rigid-body stages' leaves have no parents:
        // their adjoints go straight to the hand-written rules.
        tape::backward_range(&mut self.adj, dynamics.end..tape::len());
        self.dynamics.pull_back(&model, &self.values, &self.sim.data, &mut self.adj);
        tape::backward_range(&mut self.adj, kin.end..dynamics.start);
        self.kinematics.pull_back(&model, &self.values, &self.sim.data, &mut self.adj);
        tape::backward_range(&mut self.adj, 0..kin.start);
        let adj = &self.adj;
        let leaf = |k: usize| adj[self.leaves[k].index()];
        for k in 0..nq {
            xbar[k] = self.qbar[k] + leaf(k);
        }
        for k in nq..nx {
            xbar[k] = leaf(k);
        }
        for (k, b) in ubar.iter_mut().enumerate() {
            *b += leaf(nx + k);
        }
        for (k, b) in tbar.iter_mut().enumerate() {
            *b += leaf(nx + nc + k);
        }
        Ok(())
    }

    /// Reverse of one control interval (recorded solves `solves`): `xbar`
    /// holds ∂L/∂x_end on entry and ∂L/∂x_start on exit; ∂L/∂u of the
    /// interval is added to `ubar` (nc), ∂L/∂θ to `tbar`. `x_raw`, when
    /// given, is the user's initial state before quaternion normalisation
    /// (first interval), which `xbar` then refers to.
    #[allow(clippy::too_many_arguments)]
    pub fn interval(
        &mut self,
        setup: &Setup,
        rec: &Tape,
        solves: core::ops::Range<usize>,
        u: &[f64],
        theta: &[f64],
        x_raw: Option<&[f64]>,
        site: SolveSite,
        xbar: &mut [f64],
        ubar: &mut [f64],
        tbar: &mut [f64],
    ) -> Result<(), DiffError> {
        let first = solves.start;
        let mut time = site.time + (first..solves.end).map(|i| rec.solve(i).h).sum::<f64>();
        for i in solves.rev() {
            time -= rec.solve(i).h;
            let at = SolveSite { solve: i - first, time, ..site };
            self.solve_vjp(setup, rec, i, u, theta, at, xbar, ubar, tbar)?;
        }
        if let Some(x) = x_raw {
            self.normalization(&x[..self.model.nq], xbar);
        }
        if let Some(bad) = xbar.iter().chain(ubar.iter()).chain(tbar.iter()).position(|x| !x.is_finite()) {
            return Err(DiffError::NonFinite { site, entry: bad });
        }
        Ok(())
    }

    /// q̄ ← (∂normalize(q)/∂q)ᵀ q̄ at the raw q.
    fn normalization(&mut self, q: &[f64], xbar: &mut [f64]) {
        let nq = q.len();
        tape::clear();
        self.leaves.clear();
        self.leaves.extend(q.iter().map(|&x| Rev::var(x)));
        self.qd.copy_from_slice(&self.leaves);
        normalize_quaternions(&self.model, &mut self.qd);
        self.reset_adjoints();
        for (r, &b) in self.qd.iter().zip(&xbar[..nq]) {
            self.adj[r.index()] += b;
        }
        tape::backward(&mut self.adj);
        for k in 0..nq {
            xbar[k] = self.adj[self.leaves[k].index()];
        }
    }
}
