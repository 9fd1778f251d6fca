//! Cost ℓ(v), gradient and Hessian of the ICF problem (guide: design, §One ICF
//! step, `docs/src/design.md`), and
//! the cost along a search line for the exact line search.

use super::problem::{
    ContactConstraint, GainConstraint, IcfProblem, LimitConstraint, RowConstraint, SoftContact, SoftRow,
};
use crate::math::{Mat3, Real, Vec3, dense_dot};

/// Hunt–Crossley normal impulse and its potential for normal velocity `vn`
/// (m/s): returns (P(vn), γn(vn), g' = −dγn/dvn), with
/// γn = h·max(0, fe0 − h k vn)·max(0, 1 − d vn) and P(vn) = ∫_vn^v̂ γn ≥ 0,
/// v̂ = min(fe0/(h k), 1/d) the velocity where the impulse vanishes.
///
/// P equals the original design's antiderivative −Nn up to a constant (guide:
/// design, §Contacts under the physical semantics). The constant is chosen so that
/// P = 0 when the contact does not push: the closed form below expands the
/// integrand around v̂ (x = v̂ − vn ≥ 0), where one factor vanishes, so every
/// term is non-negative and nothing cancels — important in f32, where the
/// raw antiderivative of a far-separated pair would swamp the cost.
#[inline]
pub fn normal_potential<T: Real>(h: T, k: T, d: T, fe0: T, vn: T) -> (T, T, T) {
    let a = h * k;
    let v_hat = if d > T::zero() { (fe0 / a).min(T::one() / d) } else { fe0 / a };
    if !(vn < v_hat) {
        return (T::zero(), T::zero(), T::zero());
    }
    let x = v_hat - vn;
    // Factor values at v̂ (one of them is zero) and their growth with x.
    let fs = (fe0 - a * v_hat).max(T::zero());
    let fd = (T::one() - d * v_hat).max(T::zero());
    let pot = h * x * (fs * fd + x * (T::c(0.5) * (fs * d + a * fd) + x * (a * d / T::c(3.0))));
    let spring = fs + a * x;
    let damp = fd + d * x;
    (pot, h * spring * damp, h * (a * damp + d * spring))
}

/// Contact cost ℓ_c at contact velocity `vc`, the impulse γ on body B (N·s)
/// and the 3×3 Hessian G = −dγ/dvc.
#[inline]
pub fn contact_terms<T: Real>(c: &ContactConstraint<T>, h: T, vc: Vec3<T>) -> (T, Vec3<T>, Mat3<T>) {
    contact_terms_with(c, h, vc, false)
}

/// [`contact_terms`] with, when `secant` is set, the friction term's
/// curvature along the slip direction raised to its secant value μn₀/s
/// (the 3×3 matrix is then the Hessian's positive-definite majorant on the
/// tangent plane, not the Hessian). The exact curvature along a fast slip
/// is μn₀ε²/s³ ≈ 0: a Newton step predicts the slip to carry on and the
/// line search has to locate each contact's stiction kink (width ε) by
/// itself, one per Newton iteration. With the secant curvature every
/// sliding contact's model reaches its kink at the same step (an IRLS /
/// Weiszfeld step), so one such iteration brings all contacts near their
/// regime at once; exact iterations then converge quadratically.
#[inline]
pub fn contact_terms_with<T: Real>(c: &ContactConstraint<T>, h: T, vc: Vec3<T>, secant: bool) -> (T, Vec3<T>, Mat3<T>) {
    if let Some(s) = &c.soft {
        return soft_contact_terms(s, c.normal, vc);
    }
    let n = c.normal;
    let vn = n.dot(vc);
    let vt = vc - n * vn;
    let (pot, gn, gp) = normal_potential(h, c.stiffness, c.dissipation, c.fe0, vn);
    let s = (vt.norm2() + c.eps * c.eps).sqrt();
    let mn = c.mu * c.n0;
    let cost = mn * (s - c.eps) + pot;
    let t = vt / s;
    let impulse = n * gn - t * mn;
    let proj = if secant {
        Mat3::identity() - Mat3::outer(n, n)
    } else {
        Mat3::identity() - Mat3::outer(t, t) - Mat3::outer(n, n)
    };
    let hess = proj.scale(mn / s) + Mat3::outer(n, n).scale(gp);
    (cost, impulse, hess)
}

/// [`contact_terms`] along a search line: the cost at `vc`, and the
/// impulse and Hessian contracted with the line's contact velocity `u`
/// (γ·u and uᵀGu), without forming the 3×3 Hessian.
#[inline]
pub fn contact_line_terms<T: Real>(c: &ContactConstraint<T>, h: T, vc: Vec3<T>, u: Vec3<T>) -> (T, T, T) {
    if let Some(s) = &c.soft {
        return soft_contact_line_terms(s, c.normal, vc, u);
    }
    let n = c.normal;
    let vn = n.dot(vc);
    let vt = vc - n * vn;
    let (pot, gn, gp) = normal_potential(h, c.stiffness, c.dissipation, c.fe0, vn);
    let s = (vt.norm2() + c.eps * c.eps).sqrt();
    let mn = c.mu * c.n0;
    let (un, tu) = (n.dot(u), vt.dot(u) / s);
    // γ = γn n − μn0 vt/s;  G = μn0/s (I − t tᵀ − n nᵀ) + g' n nᵀ with t = vt/s.
    let gamma_u = gn * un - mn * tu;
    let ugu = mn / s * (u.norm2() - tu * tu - un * un) + gp * un * un;
    (mn * (s - c.eps) + pot, gamma_u, ugu)
}

/// The rows of a [`SoftContact`] with normal `n`: each row's direction
/// d (n alone, or the pyramid edges n ± μ_k·t_k) and the row's velocity
/// residual s − s_ref at contact velocity `vc`, handed to `f`.
#[inline]
fn soft_contact_rows<T: Real>(s: &SoftContact<T>, n: Vec3<T>, vc: Vec3<T>, mut f: impl FnMut(Vec3<T>, T)) {
    let x = vc - s.w0;
    let xn = n.dot(x) + s.hk;
    if s.mu[0] == T::zero() && s.mu[1] == T::zero() {
        return f(n, xn);
    }
    let t2 = n.cross(s.t1);
    for (t, mu) in [(s.t1, s.mu[0]), (t2, s.mu[1])] {
        let y = mu * t.dot(x);
        f(n + t * mu, xn + y);
        f(n - t * mu, xn - y);
    }
}

/// MuJoCo's soft contact at contact velocity `vc`: the cost Σ ½·D·r²
/// over its rows with residual r = d·(vc − w0) + h·K·d·x < 0, the
/// impulse on body B Σ −D·r·d and the Hessian Σ D·d dᵀ over those rows.
#[inline]
pub fn soft_contact_terms<T: Real>(s: &SoftContact<T>, n: Vec3<T>, vc: Vec3<T>) -> (T, Vec3<T>, Mat3<T>) {
    let (mut cost, mut impulse, mut hess) = (T::zero(), Vec3::zero(), Mat3::zero());
    let half = T::c(0.5);
    soft_contact_rows(s, n, vc, |d, r| {
        if r < T::zero() {
            cost += half * s.d * r * r;
            impulse += d * (-s.d * r);
            hess = hess + Mat3::outer(d, d).scale(s.d);
        }
    });
    (cost, impulse, hess)
}

/// [`soft_contact_terms`] along a search line with contact velocity `u`:
/// the cost, γ·u and uᵀGu.
#[inline]
pub fn soft_contact_line_terms<T: Real>(s: &SoftContact<T>, n: Vec3<T>, vc: Vec3<T>, u: Vec3<T>) -> (T, T, T) {
    let (mut cost, mut gu, mut ugu) = (T::zero(), T::zero(), T::zero());
    let half = T::c(0.5);
    soft_contact_rows(s, n, vc, |d, r| {
        if r < T::zero() {
            let du = d.dot(u);
            cost += half * s.d * r * r;
            gu -= s.d * r * du;
            ugu += s.d * du * du;
        }
    });
    (cost, gu, ugu)
}

/// A [`SoftRow`] at row velocity `v` with impulse bounds [lo, hi] (N·s or
/// N·m·s): the cost, the impulse γ = clamp(−D·(v − s_ref), lo, hi) and
/// −dγ/dv. The cost is ½·D·r² inside the bounds and continues linearly
/// (C¹, convex) where the impulse is clamped.
#[inline]
pub fn soft_row_terms<T: Real>(s: &SoftRow<T>, v: T, lo: T, hi: T) -> (T, T, T) {
    let r = v - s.vref;
    let g = -s.d * r;
    let half = T::c(0.5);
    if g > hi {
        (-hi * r - half * hi * hi / s.d, hi, T::zero())
    } else if g < lo {
        (-lo * r - half * lo * lo / s.d, lo, T::zero())
    } else {
        (half * s.d * r * r, g, s.d)
    }
}

/// Cost, generalized impulse h·τ (N·s or N·m·s) and its stiffness
/// −d(hτ)/dv of an implicit gain law τ(v) = clamp(−K v + b, −e, e) over a
/// step of `h` seconds: ℓ_a = −h∫τ dv, a Huber function of u = b − K v.
#[inline]
pub fn gain_terms<T: Real>(g: &GainConstraint<T>, h: T, v: T) -> (T, T, T) {
    let e = g.effort;
    if g.gain > T::zero() {
        let u = g.bias - g.gain * v;
        let half = T::c(0.5);
        if u.abs() <= e {
            (h * half * u * u / g.gain, h * u, h * g.gain)
        } else {
            // Huber: e|u| − e²/2, continuous with the quadratic part.
            (h * (e * u.abs() - half * e * e) / g.gain, h * e.copysign(u), T::zero())
        }
    } else {
        // No velocity dependence: a constant (clamped) force.
        let tau = g.bias.max(-e).min(e);
        (-h * tau * v, h * tau, T::zero())
    }
}

/// Joint-limit cost, the impulse along +sign (N·s or N·m·s) and −dγ/dvn, for
/// the dof velocity `v`: an implicit one-sided spring–damper with impulse
/// γ = h·max(0, fe0 − (h k + c) vn), vn = sign·v, and potential
/// ∫_vn^v̂ γ = h (h k + c) x²/2, x = max(0, v̂ − vn) (zero when inactive).
#[inline]
pub fn limit_terms<T: Real>(l: &LimitConstraint<T>, h: T, v: T) -> (T, T, T) {
    if let Some(s) = &l.soft {
        if !(s.d > T::zero()) {
            return (T::zero(), T::zero(), T::zero());
        }
        return soft_row_terms(s, l.sign * v, T::zero(), T::infinity());
    }
    let kappa = h * l.stiffness + l.damping;
    if !(kappa > T::zero()) {
        return (T::zero(), T::zero(), T::zero());
    }
    let v_hat = l.fe0 / kappa;
    let x = v_hat - l.sign * v;
    if x > T::zero() {
        (T::c(0.5) * h * kappa * x * x, h * kappa * x, h * kappa)
    } else {
        (T::zero(), T::zero(), T::zero())
    }
}

/// Cost, impulse h·f (N·s or N·m·s) along the row and −d(h·f)/ds of a
/// row force element at row velocity `s`: f = clamp(f0 − κ s, lo, hi),
/// cost −h∫f ds = (h/κ)·H(u) with u = f0 − κ s and H' = clamp(u, lo, hi)
/// (a quadratic inside the bounds, linear outside: convex and C¹). With
/// κ = 0 the force is the constant clamp(f0, lo, hi).
#[inline]
pub fn row_terms<T: Real>(r: &RowConstraint<T>, h: T, s: T) -> (T, T, T) {
    if let Some(soft) = &r.soft {
        if !(soft.d > T::zero()) {
            return (T::zero(), T::zero(), T::zero());
        }
        return soft_row_terms(soft, s, h * r.lo, h * r.hi);
    }
    let half = T::c(0.5);
    if !(r.kappa > T::zero()) {
        let f = r.force.max(r.lo).min(r.hi);
        return (-h * f * s, h * f, T::zero());
    }
    let u = r.force - r.kappa * s;
    if u > r.hi {
        (h * (r.hi * u - half * r.hi * r.hi) / r.kappa, h * r.hi, T::zero())
    } else if u < r.lo {
        (h * (r.lo * u - half * r.lo * r.lo) / r.kappa, h * r.lo, T::zero())
    } else {
        (h * half * u * u / r.kappa, h * u, h * r.kappa)
    }
}

/// Reusable storage for evaluations (no allocation once sized).
#[derive(Clone, Debug, Default)]
pub struct CostWork<T> {
    /// Contact velocities J v at the current iterate.
    pub vc: Vec<Vec3<T>>,
    /// J w along the search direction.
    pub uc: Vec<Vec3<T>>,
    /// A v.
    pub av: Vec<T>,
    /// A w.
    pub aw: Vec<T>,
    /// Row velocities j·v at the current iterate.
    pub rv: Vec<T>,
    /// j·w along the search direction.
    pub rw: Vec<T>,
    /// The quadratic part ½xᵀAx − rᵀx along x = v + αw is q0 + α q1 + ½α² q2
    /// ([`prepare_line`]).
    pub quad: [T; 3],
    /// Whether `av`, `vc` and `rv` hold A v, J v and the row velocities of
    /// the iterate the solver just evaluated (its line search then needs
    /// only A w, J w and the rows' j·w).
    pub(crate) current: bool,
    /// The Hessian's friction terms take the secant curvature along the
    /// slip ([`contact_terms_with`]): set by the solver for its first
    /// iterations, never for derivatives.
    pub(crate) secant_friction: bool,
}

impl<T: Real> CostWork<T> {
    /// Sizes the storage for `p` (allocates only when it grows).
    pub fn resize(&mut self, p: &IcfProblem<T>) {
        if self.vc.len() != p.contacts.len() || self.av.len() != p.nv || self.rv.len() != p.rows.len() {
            self.current = false;
        }
        self.vc.resize(p.contacts.len(), Vec3::zero());
        self.uc.resize(p.contacts.len(), Vec3::zero());
        self.av.resize(p.nv, T::zero());
        self.aw.resize(p.nv, T::zero());
        self.rv.resize(p.rows.len(), T::zero());
        self.rw.resize(p.rows.len(), T::zero());
    }
}

/// The (at most two) tree blocks a contact's Jacobian spans.
#[inline]
pub fn contact_blocks<T: Real>(p: &IcfProblem<T>, c: &super::problem::ContactConstraint<T>) -> (usize, usize) {
    let first = p.dof_block[p.jac_dof[c.jac_start]];
    let mut other = first;
    for e in c.jac_start..c.jac_start + c.jac_len {
        let b = p.dof_block[p.jac_dof[e]];
        if b != first {
            other = b;
        }
    }
    (first, other)
}

/// A x for the problem's A, using its block-diagonal structure over trees.
fn matvec_a<T: Real>(p: &IcfProblem<T>, x: &[T], out: &mut [T]) {
    let n = p.nv;
    if p.blocks.len() <= 1 {
        return matvec(&p.a, n, x, out);
    }
    for &(s, m) in &p.blocks {
        let xs = &x[s..s + m];
        for (i, o) in (s..s + m).zip(&mut out[s..s + m]) {
            *o = dense_dot(&p.a[i * n + s..i * n + s + m], xs);
        }
    }
}

fn matvec<T: Real>(a: &[T], n: usize, x: &[T], out: &mut [T]) {
    if n == 0 {
        return; // a model without degrees of freedom (only static geoms)
    }
    for (row, o) in a.chunks_exact(n).zip(out.iter_mut()) {
        *o = dense_dot(row, &x[..n]);
    }
}

/// Evaluates ℓ(v) and writes ∇ℓ into `grad`; when `hess` is given, also
/// writes the Hessian (nv × nv, row-major). Only its structurally non-zero
/// blocks are written — the tree blocks of A and the blocks coupling two
/// trees through a contact; every other entry of the true Hessian is zero,
/// so pass a zeroed buffer to obtain the full dense matrix.
pub fn evaluate<T: Real>(
    p: &IcfProblem<T>,
    v: &[T],
    grad: &mut [T],
    hess: Option<&mut [T]>,
    work: &mut CostWork<T>,
) -> T {
    let cost = evaluate_keep(p, v, grad, hess, work);
    work.current = false;
    cost
}

/// [`evaluate`], leaving A v and J v in `work` marked as current for `v`,
/// so that the solver's [`prepare_line_cached`] along a direction from this
/// same v does not recompute them.
pub(crate) fn evaluate_keep<T: Real>(
    p: &IcfProblem<T>,
    v: &[T],
    grad: &mut [T],
    hess: Option<&mut [T]>,
    work: &mut CostWork<T>,
) -> T {
    let nv = p.nv;
    work.resize(p);
    matvec_a(p, v, &mut work.av);
    for (ci, c) in p.contacts.iter().enumerate() {
        work.vc[ci] = p.contact_velocity(c, v);
    }
    work.current = true;
    let mut cost = T::zero();
    for i in 0..nv {
        cost += T::c(0.5) * v[i] * work.av[i] - p.r[i] * v[i];
        grad[i] = work.av[i] - p.r[i];
    }
    let mut hess = hess;
    if let Some(hh) = hess.as_deref_mut() {
        // Only the tree blocks and the blocks that contacts couple are ever
        // read (by the block-sparse factorization): fill just those.
        for bi in 0..p.block_count() {
            let (s, m) = p.block(bi);
            for i in s..s + m {
                hh[i * nv + s..i * nv + s + m].copy_from_slice(&p.a[i * nv + s..i * nv + s + m]);
            }
        }
        if p.blocks.len() > 1 {
            for c in &p.contacts {
                let (a, b) = contact_blocks(p, c);
                if a != b {
                    for (x, y) in [(a, b), (b, a)] {
                        let ((sx, mx), (sy, my)) = (p.blocks[x], p.blocks[y]);
                        for i in sx..sx + mx {
                            hh[i * nv + sy..i * nv + sy + my].iter_mut().for_each(|h| *h = T::zero());
                        }
                    }
                }
            }
        }
    }
    for (ci, c) in p.contacts.iter().enumerate() {
        let (lc, gamma, g) = contact_terms_with(c, p.h, work.vc[ci], work.secant_friction && hess.is_some());
        cost += lc;
        let range = c.jac_start..c.jac_start + c.jac_len;
        for e in range.clone() {
            grad[p.jac_dof[e]] -= p.jac_col[e].dot(gamma);
        }
        if let Some(hh) = hess.as_deref_mut() {
            // Jᵀ G J over the contact's non-zero columns only; G is symmetric,
            // so each pair of columns is computed once and written twice.
            let (dofs, cols) = (&p.jac_dof[range.clone()], &p.jac_col[range]);
            for (k1, (&i, c1)) in dofs.iter().zip(cols).enumerate() {
                let gj = g * *c1;
                for (&j, c2) in dofs[..k1].iter().zip(&cols[..k1]) {
                    let x = gj.dot(*c2);
                    hh[i * nv + j] += x;
                    hh[j * nv + i] += x;
                }
                hh[i * nv + i] += gj.dot(*c1);
            }
        }
    }
    for g in &p.gains {
        let (lg, tau, k) = gain_terms(g, p.h, v[g.dof]);
        cost += lg;
        grad[g.dof] -= tau;
        if let Some(hh) = hess.as_deref_mut() {
            hh[g.dof * nv + g.dof] += k;
        }
    }
    for l in &p.limits {
        let (ll, gamma, gp) = limit_terms(l, p.h, v[l.dof]);
        cost += ll;
        grad[l.dof] -= l.sign * gamma;
        if let Some(hh) = hess.as_deref_mut() {
            hh[l.dof * nv + l.dof] += gp;
        }
    }
    for (ri, r) in p.rows.iter().enumerate() {
        let s = p.row_velocity(r, v);
        work.rv[ri] = s;
        let (lr, gamma, gp) = row_terms(r, p.h, s);
        cost += lr;
        let range = r.jac_start..r.jac_start + r.jac_len;
        for e in range.clone() {
            grad[p.row_dof[e]] -= p.row_coef[e] * gamma;
        }
        if let Some(hh) = hess.as_deref_mut()
            && gp > T::zero()
        {
            // A row's dofs lie in one tree block (the builder merges the
            // blocks of trees a row couples).
            for e1 in range.clone() {
                let (i, ci) = (p.row_dof[e1], gp * p.row_coef[e1]);
                for e2 in range.clone() {
                    hh[i * nv + p.row_dof[e2]] += ci * p.row_coef[e2];
                }
            }
        }
    }
    cost
}

/// ℓ along the line v + α w: (ℓ(α), ℓ'(α), ℓ''(α)). Needs
/// [`prepare_line`] for the same (v, w) first.
pub fn line_eval<T: Real>(p: &IcfProblem<T>, v: &[T], w: &[T], alpha: T, work: &CostWork<T>) -> (T, T, T) {
    let half = T::c(0.5);
    // Quadratic part: ½ xᵀAx − rᵀx with x = v + αw.
    let [q0, q1, q2] = work.quad;
    let mut f = q0 + alpha * q1 + half * alpha * alpha * q2;
    let mut d1 = q1 + alpha * q2;
    let mut d2 = q2;
    for (ci, c) in p.contacts.iter().enumerate() {
        let u = work.uc[ci];
        let (lc, gamma_u, ugu) = contact_line_terms(c, p.h, work.vc[ci] + u * alpha, u);
        f += lc;
        d1 -= gamma_u;
        d2 += ugu;
    }
    for g in &p.gains {
        let (lg, tau, k) = gain_terms(g, p.h, v[g.dof] + alpha * w[g.dof]);
        f += lg;
        d1 -= tau * w[g.dof];
        d2 += k * w[g.dof] * w[g.dof];
    }
    for l in &p.limits {
        let wd = w[l.dof];
        let (ll, gamma, gp) = limit_terms(l, p.h, v[l.dof] + alpha * wd);
        f += ll;
        d1 -= l.sign * gamma * wd;
        d2 += gp * wd * wd;
    }
    for (ri, r) in p.rows.iter().enumerate() {
        let u = work.rw[ri];
        let (lr, gamma, gp) = row_terms(r, p.h, work.rv[ri] + alpha * u);
        f += lr;
        d1 -= gamma * u;
        d2 += gp * u * u;
    }
    (f, d1, d2)
}

/// Precomputes A v, A w, J v and J w for line evaluations along v + α w.
pub fn prepare_line<T: Real>(p: &IcfProblem<T>, v: &[T], w: &[T], work: &mut CostWork<T>) {
    work.current = false;
    prepare_line_cached(p, v, w, work);
    work.current = false;
}

/// [`prepare_line`] reusing A v and J v when [`evaluate_keep`] left them
/// current for this same `v`.
pub(crate) fn prepare_line_cached<T: Real>(p: &IcfProblem<T>, v: &[T], w: &[T], work: &mut CostWork<T>) {
    work.resize(p);
    if !work.current {
        matvec_a(p, v, &mut work.av);
        for (ci, c) in p.contacts.iter().enumerate() {
            work.vc[ci] = p.contact_velocity(c, v);
        }
        for (ri, r) in p.rows.iter().enumerate() {
            work.rv[ri] = p.row_velocity(r, v);
        }
        work.current = true;
    }
    matvec_a(p, w, &mut work.aw);
    for (ci, c) in p.contacts.iter().enumerate() {
        work.uc[ci] = p.contact_velocity(c, w);
    }
    for (ri, r) in p.rows.iter().enumerate() {
        work.rw[ri] = p.row_velocity(r, w);
    }
    let half = T::c(0.5);
    let (mut q0, mut q1, mut q2) = (T::zero(), T::zero(), T::zero());
    for i in 0..p.nv {
        q0 += half * v[i] * work.av[i] - p.r[i] * v[i];
        q1 += w[i] * (work.av[i] - p.r[i]);
        q2 += w[i] * work.aw[i];
    }
    work.quad = [q0, q1, q2];
}
