//! Step and interval Jacobians from a recorded forward pass.
//!
//! For one recorded solve the inputs are z = [q0 (nq), v0 (nv), u (nc),
//! θ (np)] and the outputs x1 = [q1, v1]. The converged velocity satisfies
//! R(v1; z) = ∇ℓ = 0, so dv1/dz = −H⁻¹ ∂R/∂z with H = ∂R/∂v1 at v1. ∂R/∂z
//! comes from the generic CPU pipeline run in [`Dual`] numbers at the
//! recorded state, `N` inputs seeded per pass; H is the value part of the
//! same evaluation. Then q1 = q0 ⊕ h v1 is differentiated the same way
//! (seeds on q0 and v1). Solves of one control interval are chained into
//! [D_x | D_u | D_θ] = ∂x_end/∂[x_start, u, θ].

use super::FrictionLoad;
use super::cfd::{Cfd, add_phantom};
use super::dual::Dual;
use super::params::{ControlKind, Param, set_controls, set_params};
use super::{DiffError, SolveSite};
use crate::collision::Contacts;
use crate::dynamics::{integrate_q, normalize_quaternions};
use crate::icf::cost::{CostWork, evaluate, normal_potential};
use crate::integrator::linalg::lu_factor;
use crate::integrator::{ContactKey, Simulator, Tape};
use crate::math::{Real, cholesky_factor};
use crate::model::Model;
use std::sync::Arc;

/// What a [`Linearizer`] differentiates, shared by all solves of a rollout.
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    pub control: ControlKind,
    pub params: Vec<Param>,
    pub cfd: Option<Cfd>,
    pub friction_load: FrictionLoad,
}

/// Workspace for Jacobians of one world's solves (allocated once per task).
pub(crate) struct Linearizer<const N: usize> {
    model: Arc<Model>,
    sim: Simulator<Dual<N>>,
    phantom: Contacts<Dual<N>>,
    v1: Vec<Dual<N>>,
    grad: Vec<Dual<N>>,
    hess: Vec<Dual<N>>,
    qd: Vec<Dual<N>>,
    vd: Vec<Dual<N>>,
    work: CostWork<Dual<N>>,
    factor: Vec<f64>,
    /// Row permutation of the LU factorization (implicit friction load).
    pivots: Vec<usize>,
    /// Jᵀt and Jᵀn of one contact (nv each; implicit friction load).
    jt: Vec<f64>,
    jn: Vec<f64>,
    /// ∂R/∂z, then dv1/dz (nv × nz, row-major).
    dv: Vec<f64>,
    /// ∂q1/∂[q0, v1] (nq × (nq + nv)).
    dq: Vec<f64>,
    /// Step Jacobian ∂x1/∂z (nx × nz).
    step: Vec<f64>,
    /// Accumulated interval Jacobian and scratch (nx × nz).
    acc: Vec<f64>,
    tmp: Vec<f64>,
    /// Inputs of z in pass order (see `plan`).
    order: Vec<usize>,
    /// Passes as ranges of `order` (at most N inputs each).
    chunks: Vec<(usize, usize)>,
    /// Passes at the start of `chunks` that seed no input of the geometry.
    clean_passes: usize,
    /// Tangent slot of each input of z in the current pass (`NONE` if not seeded).
    slot: Vec<usize>,
    /// Phantom pairs seen (statistics).
    pub phantom_pairs: usize,
}

/// Marks an input of z that the current pass does not seed.
const NONE: usize = usize::MAX;

/// `out = a_x · b + [0 | a_rest]` for nx × nz matrices whose first nx
/// columns are the state inputs (step `a` applied after `b`). Row by row,
/// skipping the zeros of `a_x` (∂q1/∂q0 is mostly zero).
fn chain(a: &[f64], b: &[f64], nx: usize, nz: usize, out: &mut [f64]) {
    for r in 0..nx {
        let (a_row, out_row) = (&a[r * nz..(r + 1) * nz], &mut out[r * nz..(r + 1) * nz]);
        out_row[..nx].fill(0.0);
        out_row[nx..].copy_from_slice(&a_row[nx..]);
        for (k, &x) in a_row[..nx].iter().enumerate() {
            if x != 0.0 {
                axpy(x, &b[k * nz..(k + 1) * nz], out_row);
            }
        }
    }
}

/// `y += x · b`.
#[inline]
fn axpy(x: f64, b: &[f64], y: &mut [f64]) {
    for (yj, bj) in y.iter_mut().zip(b) {
        *yj += x * bj;
    }
}

/// Rows `i` and `k` ≠ `i` of the row-major matrix `m` with rows of `len`: (row i mutable, row k).
fn rows_mut(m: &mut [f64], len: usize, i: usize, k: usize) -> (&mut [f64], &[f64]) {
    if i < k {
        let (lo, hi) = m.split_at_mut(k * len);
        (&mut lo[i * len..(i + 1) * len], &hi[..len])
    } else {
        let (lo, hi) = m.split_at_mut(i * len);
        (&mut hi[..len], &lo[k * len..(k + 1) * len])
    }
}

/// Solves A X = B in place for the nv × nz row-major `b` (all right-hand
/// sides at once, by row operations), A given by `lu_factor`'s factor and
/// pivots: the operations of `lu_solve` on each column, in the same order.
fn lu_solve_rows(lu: &[f64], n: usize, piv: &[usize], b: &mut [f64], nz: usize) {
    for (k, &p) in piv.iter().enumerate().take(n) {
        if p != k {
            for j in 0..nz {
                b.swap(k * nz + j, p * nz + j);
            }
        }
    }
    for i in 0..n {
        for k in 0..i {
            let l = lu[i * n + k];
            if l != 0.0 {
                let (row, rk) = rows_mut(b, nz, i, k);
                axpy(-l, rk, row);
            }
        }
    }
    for i in (0..n).rev() {
        for k in i + 1..n {
            let u = lu[i * n + k];
            if u != 0.0 {
                let (row, rk) = rows_mut(b, nz, i, k);
                axpy(-u, rk, row);
            }
        }
        let d = lu[i * n + i];
        b[i * nz..(i + 1) * nz].iter_mut().for_each(|x| *x /= d);
    }
}

/// Solves L Lᵀ X = B in place for the nv × nz row-major `b`, L from
/// `cholesky_factor` (the operations of `cholesky_solve_in_place` on each
/// column, the forward sums in plain order).
fn cholesky_solve_rows(l: &[f64], n: usize, b: &mut [f64], nz: usize) {
    for i in 0..n {
        for k in 0..i {
            let x = l[i * n + k];
            if x != 0.0 {
                let (row, rk) = rows_mut(b, nz, i, k);
                axpy(-x, rk, row);
            }
        }
        let d = l[i * n + i];
        b[i * nz..(i + 1) * nz].iter_mut().for_each(|x| *x /= d);
    }
    for i in (0..n).rev() {
        let d = l[i * n + i];
        b[i * nz..(i + 1) * nz].iter_mut().for_each(|x| *x /= d);
        for k in 0..i {
            let x = l[i * n + k];
            if x != 0.0 {
                let (row, ri) = rows_mut(b, nz, k, i);
                axpy(-x, ri, row);
            }
        }
    }
}

impl<const N: usize> Linearizer<N> {
    pub fn new(model: Arc<Model>, nc: usize, np: usize) -> Self {
        let (nq, nv) = (model.nq, model.nv);
        let nx = nq + nv;
        let nz = nx + nc + np;
        Self {
            sim: Simulator::new(model.clone()),
            phantom: Contacts::new(&model),
            v1: vec![Dual::cst(0.0); nv],
            grad: vec![Dual::cst(0.0); nv],
            hess: vec![Dual::cst(0.0); nv * nv],
            qd: vec![Dual::cst(0.0); nq],
            vd: vec![Dual::cst(0.0); nv],
            work: CostWork::default(),
            factor: vec![0.0; nv * nv],
            pivots: vec![0; nv],
            jt: vec![0.0; nv],
            jn: vec![0.0; nv],
            dv: vec![0.0; nv * nz],
            dq: vec![0.0; nq * nx],
            step: vec![0.0; nx * nz],
            acc: vec![0.0; nx * nz],
            tmp: vec![0.0; nx * nz],
            order: Vec::with_capacity(nz),
            chunks: Vec::with_capacity(nz.div_ceil(N) + 2),
            clean_passes: 0,
            slot: vec![NONE; nz],
            phantom_pairs: 0,
            model,
        }
    }

    /// Writes ∂x1/∂z of recorded solve `i` into `self.step`.
    fn solve_jacobian(
        &mut self,
        setup: &Setup,
        tape: &Tape,
        i: usize,
        u: &[f64],
        theta: &[f64],
        site: SolveSite,
    ) -> Result<(), DiffError> {
        let model = self.model.clone();
        let (nq, nv, nc, np) = (model.nq, model.nv, u.len(), theta.len());
        let nx = nq + nv;
        let nz = nx + nc + np;
        let s = tape.solve(i);
        let h = Dual::<N>::cst(s.h);
        for k in 0..nv {
            self.v1[k] = Dual::cst(s.v1[k]);
        }
        self.plan(setup, nc);
        let mut clean_geometry = false;
        let mut pairs_counted = false;
        for pass in 0..self.chunks.len() {
            let (lo, hi) = self.chunks[pass];
            for (slot, &j) in self.order[lo..hi].iter().enumerate() {
                self.slot[j] = slot;
            }
            let first = pass == 0;
            let clean = pass < self.clean_passes;
            let (sim, slots) = (&mut self.sim, &self.slot);
            // Input j of z as a dual number, seeded in its slot of this pass.
            let seed = |j: usize, value: f64| match slots[j] {
                NONE => Dual::<N>::cst(value),
                slot => Dual::var(value, slot),
            };
            for k in 0..nq {
                sim.data.q[k] = seed(k, s.q0[k]);
            }
            for k in 0..nv {
                sim.data.v[k] = seed(nq + k, s.v0[k]);
            }
            set_controls(sim, setup.control, u.iter().enumerate().map(|(k, &x)| seed(nx + k, x)));
            set_params(sim, &setup.params, theta.iter().enumerate().map(|(k, &x)| seed(nx + nc + k, x)));
            if clean && clean_geometry {
                sim.compute_velocity_terms();
            } else {
                sim.contacts.skin = s.skin;
                sim.compute_geometry();
                clean_geometry = clean;
            }
            if first {
                check_contacts(&sim.contacts.list, s.contacts, site)?;
            }
            sim.problem.set_time_step(h);
            let implicit = setup.friction_load == FrictionLoad::Implicit;
            if implicit {
                implicit_load_tangents(&mut sim.problem, &self.v1);
            }
            let hess = if first {
                // evaluate writes only the tree blocks and the contact-coupled
                // blocks; a dense factorization reads everything, so blocks a
                // previous step's contacts coupled must not survive.
                self.hess.fill(Dual::cst(0.0));
                Some(&mut self.hess[..])
            } else {
                None
            };
            evaluate(&sim.problem, &self.v1, &mut self.grad, hess, &mut self.work);
            if let Some(cfd) = setup.cfd.as_ref().filter(|_| !clean) {
                let pairs = add_phantom(cfd, &model, &sim.data, &mut self.phantom, h, &mut self.grad);
                // Every position or parameter pass of a solve meets the same pairs: count them once.
                if !pairs_counted {
                    self.phantom_pairs += pairs;
                    pairs_counted = true;
                }
            }
            for (slot, &j) in self.order[lo..hi].iter().enumerate() {
                for r in 0..nv {
                    self.dv[r * nz + j] = self.grad[r].d[slot];
                }
                self.slot[j] = NONE;
            }
            if first {
                for (f, hh) in self.factor.iter_mut().zip(&self.hess) {
                    *f = hh.v;
                }
                if implicit {
                    add_load_coupling(&sim.problem, &self.v1, &mut self.factor, &mut self.jt, &mut self.jn);
                    lu_factor(&mut self.factor, nv, &mut self.pivots)
                        .map_err(|pivot| DiffError::Hessian { site, pivot })?;
                } else {
                    cholesky_factor(&mut self.factor, nv).map_err(|e| DiffError::Hessian { site, pivot: e.pivot })?;
                }
            }
        }
        // dv1/dz = −H⁻¹ ∂R/∂z, all columns at once.
        if setup.friction_load == FrictionLoad::Implicit {
            lu_solve_rows(&self.factor, nv, &self.pivots, &mut self.dv, nz);
        } else {
            cholesky_solve_rows(&self.factor, nv, &mut self.dv, nz);
        }
        self.dv.iter_mut().for_each(|x| *x = -*x);
        // ∂q1/∂[q0, v1] for q1 = q0 ⊕ h v1.
        let seed = |j: usize, value: f64, start: usize, end: usize| {
            if j >= start && j < end { Dual::<N>::var(value, j - start) } else { Dual::cst(value) }
        };
        let mut start = 0;
        while start < nx {
            for k in 0..nq {
                self.qd[k] = seed(k, s.q0[k], start, start + N);
            }
            for k in 0..nv {
                self.vd[k] = seed(nq + k, s.v1[k], start, start + N);
            }
            integrate_q(&model, &mut self.qd, &self.vd, h);
            for r in 0..nq {
                for slot in 0..N.min(nx - start) {
                    self.dq[r * nx + start + slot] = self.qd[r].d[slot];
                }
            }
            if start == 0 && i + 1 < tape.len() {
                // The recorded solves must chain exactly: q1 here is the next solve's q0
                // (the state at an interval end is the next interval's start).
                let next = tape.solve(i + 1);
                if (0..nq).any(|k| self.qd[k].v.to_bits() != next.q0[k].to_bits())
                    || (0..nv).any(|k| s.v1[k].to_bits() != next.v0[k].to_bits())
                {
                    return Err(DiffError::Tape { site });
                }
            }
            start += N;
        }
        // Step Jacobian: v rows = dv; q rows = ∂q1/∂q0 · E_q + ∂q1/∂v1 · dv
        // (∂q1/∂v1 is sparse: h, or a quaternion's 4 × 3 block).
        for r in 0..nq {
            let row = &mut self.step[r * nz..(r + 1) * nz];
            row[..nq].copy_from_slice(&self.dq[r * nx..r * nx + nq]);
            row[nq..].fill(0.0);
            for k in 0..nv {
                let x = self.dq[r * nx + nq + k];
                if x != 0.0 {
                    axpy(x, &self.dv[k * nz..(k + 1) * nz], row);
                }
            }
        }
        self.step[nq * nz..nx * nz].copy_from_slice(&self.dv[..nv * nz]);
        Ok(())
    }

    /// Orders the inputs z = [q0, v0, u, θ] into passes of at most N
    /// seeds: first those that leave the geometry's tangents zero (v0, u
    /// and the material multipliers, which enter only the ICF build), so
    /// that the first pass computes the geometry and the others reuse it
    /// (`compute_velocity_terms`), and none needs the phantom pairs (they
    /// depend on the geometry only); then q0 and the parameters that enter
    /// the geometry (mass, geom sizes and offsets), which share passes.
    fn plan(&mut self, setup: &Setup, nc: usize) {
        let (nq, nx) = (self.model.nq, self.model.nq + self.model.nv);
        let theta = |k: usize| (nx + nc + k, setup.params[k].is_material());
        self.order.clear();
        self.order.extend(nq..nx + nc);
        self.order.extend((0..setup.params.len()).map(theta).filter(|t| t.1).map(|t| t.0));
        let clean = self.order.len();
        self.order.extend(0..nq);
        self.order.extend((0..setup.params.len()).map(theta).filter(|t| !t.1).map(|t| t.0));
        self.chunks.clear();
        for (lo, hi) in [(0, clean), (clean, self.order.len())] {
            self.chunks.extend((lo..hi).step_by(N).map(|c| (c, (c + N).min(hi))));
        }
        self.clean_passes = clean.div_ceil(N);
    }

    /// The interval Jacobian [D_x | D_u | D_θ] (nx × nz, row-major) of the
    /// recorded solves `solves` (one control interval), written to `out`.
    /// `x_raw`, when given, is the user's initial state before quaternion
    /// normalisation (first interval): D_x then includes the normalisation.
    #[allow(clippy::too_many_arguments)]
    pub fn interval(
        &mut self,
        setup: &Setup,
        tape: &Tape,
        solves: core::ops::Range<usize>,
        u: &[f64],
        theta: &[f64],
        x_raw: Option<&[f64]>,
        site: SolveSite,
        out: &mut [f64],
    ) -> Result<(), DiffError> {
        let model = self.model.clone();
        let (nq, nv) = (model.nq, model.nv);
        let nx = nq + nv;
        let nz = nx + u.len() + theta.len();
        self.acc.iter_mut().for_each(|x| *x = 0.0);
        for k in 0..nx {
            self.acc[k * nz + k] = 1.0;
        }
        if let Some(x) = x_raw {
            self.normalization(&x[..nq]);
        }
        let mut site = site;
        for i in solves {
            self.solve_jacobian(setup, tape, i, u, theta, site)?;
            // acc ← S_x · acc + [0 | S_u | S_θ].
            chain(&self.step, &self.acc, nx, nz, &mut self.tmp);
            std::mem::swap(&mut self.acc, &mut self.tmp);
            site.solve += 1;
            site.time += tape.solve(i).h;
        }
        if let Some(bad) = self.acc.iter().position(|x| !x.is_finite()) {
            return Err(DiffError::NonFinite { site, entry: bad });
        }
        out.copy_from_slice(&self.acc);
        Ok(())
    }

    /// Sets the q block of `acc` to ∂normalize(q)/∂q at the raw q.
    fn normalization(&mut self, q: &[f64]) {
        let nq = q.len();
        let nz = self.acc.len() / (nq + self.model.nv);
        let mut start = 0;
        while start < nq {
            for (k, (d, &x)) in self.qd.iter_mut().zip(q).enumerate() {
                *d = if k >= start && k < start + N { Dual::var(x, k - start) } else { Dual::cst(x) };
            }
            normalize_quaternions(&self.model, &mut self.qd);
            for r in 0..nq {
                for slot in 0..N.min(nq - start) {
                    self.acc[r * nz + start + slot] = self.qd[r].d[slot];
                }
            }
            start += N;
        }
    }
}

/// Adds the friction–load coupling of [`FrictionLoad::Implicit`] to the
/// factor (which holds ∂R/∂v1 of the lagged problem): the friction term
/// of R is +Jᵀ t μ N with t = vt/√(|vt|² + ε²); with N = γn(vn(v)) it
/// gains ∂R/∂v = μ (dγn/dvn) (Jᵀt)(Jᵀn)ᵀ = −μ g' (Jᵀt)(Jᵀn)ᵀ, which is
/// not symmetric.
pub(crate) fn add_load_coupling<T: Real>(
    p: &crate::icf::IcfProblem<T>,
    v1: &[T],
    factor: &mut [f64],
    jt: &mut [f64],
    jn: &mut [f64],
) {
    let nv = p.nv;
    let h = p.h.f64();
    // MuJoCo's soft contacts have no lagged friction load.
    for c in p.contacts.iter().filter(|c| c.soft.is_none()) {
        let mut vc = [0.0; 3];
        for e in c.jac_start..c.jac_start + c.jac_len {
            let (col, x) = (p.jac_col[e], v1[p.jac_dof[e]].f64());
            vc[0] += col.x.f64() * x;
            vc[1] += col.y.f64() * x;
            vc[2] += col.z.f64() * x;
        }
        let n = [c.normal.x.f64(), c.normal.y.f64(), c.normal.z.f64()];
        let vn = n[0] * vc[0] + n[1] * vc[1] + n[2] * vc[2];
        let (_, _, gp) = normal_potential(h, c.stiffness.f64(), c.dissipation.f64(), c.fe0.f64(), vn);
        if gp == 0.0 {
            continue;
        }
        let vt = [vc[0] - n[0] * vn, vc[1] - n[1] * vn, vc[2] - n[2] * vn];
        let s = (vt[0] * vt[0] + vt[1] * vt[1] + vt[2] * vt[2] + c.eps.f64() * c.eps.f64()).sqrt();
        let t = [vt[0] / s, vt[1] / s, vt[2] / s];
        jt.fill(0.0);
        jn.fill(0.0);
        for e in c.jac_start..c.jac_start + c.jac_len {
            let col = p.jac_col[e];
            let col = [col.x.f64(), col.y.f64(), col.z.f64()];
            let k = p.jac_dof[e];
            jt[k] += col[0] * t[0] + col[1] * t[1] + col[2] * t[2];
            jn[k] += col[0] * n[0] + col[1] * n[1] + col[2] * n[2];
        }
        let scale = -c.mu.f64() * gp;
        for i in 0..nv {
            if jt[i] == 0.0 {
                continue;
            }
            for j in 0..nv {
                factor[i * nv + j] += scale * jt[i] * jn[j];
            }
        }
    }
}

/// [`FrictionLoad::Implicit`]: each contact's friction load keeps the
/// lagged value n0 of the forward solve but takes the tangents of the
/// step's implicit normal impulse γn(vn1) at the recorded v1 (a
/// straight-through surrogate; v1 is a constant here, its coupling is
/// [`add_load_coupling`]).
pub(crate) fn implicit_load_tangents<T: StraightThrough>(p: &mut crate::icf::IcfProblem<T>, v1: &[T]) {
    let h = p.h;
    for ci in 0..p.contacts.len() {
        let c = p.contacts[ci];
        if c.soft.is_some() {
            continue; // no lagged friction load
        }
        let vn = c.normal.dot(p.contact_velocity(&c, v1));
        let (_, gn, _) = normal_potential(h, c.stiffness, c.dissipation, c.fe0, vn);
        p.contacts[ci].n0 = gn.with_value(c.n0.f64());
    }
}

/// Scalars whose derivative part can be kept under another value (the
/// straight-through friction load of [`FrictionLoad::Implicit`]).
pub(crate) trait StraightThrough: Real {
    /// The derivatives of `self` with value `v`.
    fn with_value(self, v: f64) -> Self;
}

impl<const N: usize> StraightThrough for Dual<N> {
    fn with_value(self, v: f64) -> Self {
        Dual { v, d: self.d }
    }
}

impl StraightThrough for super::rev::Rev {
    fn with_value(self, v: f64) -> Self {
        super::rev::Rev::with_value(self, v)
    }
}

/// The contacts of the Jacobian pass must be those of the forward solve.
pub(crate) fn check_contacts<T: Real>(
    found: &[crate::collision::Contact<T>],
    recorded: &[ContactKey],
    site: SolveSite,
) -> Result<(), DiffError> {
    let same = found.len() == recorded.len() && found.iter().zip(recorded).all(|(c, k)| ContactKey::of(c) == *k);
    if same {
        return Ok(());
    }
    let first = found.iter().zip(recorded).position(|(c, k)| ContactKey::of(c) != *k);
    Err(DiffError::ContactMismatch {
        site,
        forward: recorded.len(),
        jacobian: found.len(),
        detail: match first {
            Some(i) => format!("contact {i}: forward {:?}, Jacobian pass {:?}", recorded[i], ContactKey::of(&found[i])),
            None => "different contact counts".into(),
        },
    })
}
