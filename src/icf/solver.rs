//! Newton's method on the convex ICF cost with dense Cholesky and an exact
//! line search (guide: design, §The Newton solve, `docs/src/design.md`). The
//! solver sees only [`IcfProblem`].

use super::cost::{CostWork, evaluate_keep, line_eval, prepare_line_cached};
use super::problem::IcfProblem;
use super::sparse::BlockStructure;
use crate::math::{Real, TreeLdl, cholesky_factor, cholesky_solve_in_place};

/// The line search stops once |ℓ'(α)| ≤ this fraction of |ℓ'(0)| while the
/// residual is above 10³ times the tolerance or the relative tolerance is
/// at least [`LINE_SEARCH_EXACT_BELOW`]; otherwise it is exact (1e-10). The
/// loose search far from the solution saves line-search evaluations at the
/// same Newton iterations; the exact one near it keeps the final iterates
/// as precise as finite differences through a rollout need (measured on
/// clutter20: BENCHMARKS.md, "What each lever gave").
pub const LINE_SEARCH_TOLERANCE: f64 = 1e-2;

/// Relative solver tolerances below this get an exact line search near the
/// solution ([`LINE_SEARCH_TOLERANCE`]): the gradient path's converged
/// solves ([`SolverParams::tight`]), fixed steps shorter than 1 ms
/// ([`SolverParams::for_fixed_step`]) and tight error control; not fixed
/// steps of 1 ms and longer (1e-6) nor CENIC's κ·accuracy at everyday
/// accuracies.
pub const LINE_SEARCH_EXACT_BELOW: f64 = 1e-6;

/// A Newton step below one ulp of ‖D⁻¹v‖ ends the solve as converged
/// when the residual is within this factor of the tolerance (the iterate
/// is as good as the precision resolves it; see [`IcfSolver::solve`]).
pub const ROUNDING_STALL_RESIDUAL: f64 = 10.0;

/// Solver settings.
#[derive(Clone, Copy, Debug)]
pub struct SolverParams {
    /// Relative tolerance ε of the convergence tests: ‖D ∇ℓ‖ ≤ ε·‖D r‖,
    /// D = diag(M)^(−½). Never below 1e-10 in f64 (and 1e-6 in f32).
    pub tolerance: f64,
    /// Newton iteration cap; a solve that hits it is reported as failed.
    pub max_iterations: usize,
    /// Line-search iteration cap per Newton iteration.
    pub max_line_search_iterations: usize,
    /// Also accept when θ/(1−θ)·‖D⁻¹Δv‖ ≤ ε·‖D r‖ (θ: ratio of
    /// successive step norms), i.e. when the predicted remaining error of v is
    /// within tolerance; the reported residual may then exceed ε.
    pub theta_criterion: bool,
    /// Reuse the Hessian factorization across iterations and solves while the
    /// observed convergence rate predicts convergence within
    /// `reuse_target_iterations`.
    pub hessian_reuse: bool,
    /// Iteration budget used by the reuse rule.
    pub reuse_target_iterations: usize,
    /// Newton iterations (from the first) whose Hessian takes the secant
    /// curvature of each contact's friction along its slip instead of the
    /// exact one ([`crate::icf::cost::contact_terms_with`]). The solution is
    /// the same (the gradient is exact); the first iteration then brings
    /// every sliding contact near its stiction kink at once instead of one
    /// kink per line search. More than 1 converges linearly on contacts
    /// that keep sliding (measured on clutter20: BENCHMARKS.md, "What each
    /// lever gave").
    pub secant_friction_iterations: usize,
}

impl Default for SolverParams {
    /// Fixed-step defaults: ε = 1e-6
    /// ([`SolverParams::FIXED_STEP_TOLERANCE`], scaled down for steps
    /// below 1 ms by [`SolverParams::for_fixed_step`]), the residual test
    /// alone, 100 iterations, no reuse.
    fn default() -> Self {
        Self {
            tolerance: Self::FIXED_STEP_TOLERANCE,
            max_iterations: 100,
            max_line_search_iterations: 50,
            theta_criterion: false,
            hessian_reuse: false,
            reuse_target_iterations: 10,
            secant_friction_iterations: 1,
        }
    }
}

impl SolverParams {
    /// The fixed step's relative Newton tolerance ε at steps of
    /// [`FIXED_STEP_REFERENCE`](Self::FIXED_STEP_REFERENCE) and longer:
    /// one Newton iteration fewer than 1e-8 on contact-rich steps, whose
    /// last iterations converge quadratically, while the solve's error stays
    /// far below the step's own (clutter20 at 1 ms: the pile 1 µm from the
    /// converged solves' after 0.25 s, where halving the step moves it by
    /// 26 mm; guide: design.md, "The Newton solve"). It is also the f32
    /// floor, to which the GPU and the CPU f32 path already solved.
    pub const FIXED_STEP_TOLERANCE: f64 = 1e-6;

    /// The step (s) at and above which a fixed step solves to the tolerance
    /// as given; a shorter step h solves to tolerance·h/(1 ms).
    pub const FIXED_STEP_REFERENCE: f64 = 1e-3;

    /// These settings for fixed steps of `h` seconds: the tolerance scaled
    /// by min(1, h / 1 ms). ε bounds a solve's error relative to the step's
    /// momentum scale whatever the step, so without the scaling the solve
    /// errors per simulated second would grow as the step shrinks.
    pub fn for_fixed_step(&self, h: f64) -> Self {
        Self { tolerance: self.tolerance * (h / Self::FIXED_STEP_REFERENCE).min(1.0), ..*self }
    }

    /// Converged solves (ε = 1e-8, scaled for steps below 1 ms as in
    /// [`for_fixed_step`](Self::for_fixed_step); the residual test only):
    /// what the gradient path and finite differences through a fixed-step
    /// rollout need, where a solve's error must stay below a perturbation's
    /// effect.
    pub fn tight() -> Self {
        Self { tolerance: 1e-8, theta_criterion: false, ..Self::default() }
    }
}

/// Statistics of one solve.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolveStats {
    /// Newton iterations.
    pub iterations: usize,
    /// Line-search iterations (cost evaluations along the line).
    pub line_search_iterations: usize,
    /// Cholesky factorizations.
    pub factorizations: usize,
    /// Final scaled momentum residual ‖D ∇ℓ‖ (√kg·m/s).
    pub residual: f64,
    /// The tolerance it was compared with, ε·‖D r‖, or the residual's
    /// rounding floor of the residual when that is larger (f32, stiff contacts:
    /// EPS·‖D |H| |v|‖, what a one-ulp change of v can change ∇ℓ by).
    pub tolerance: f64,
    /// Whether a convergence test passed.
    pub converged: bool,
}

/// Why a solve failed.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum SolveError {
    /// The iteration cap was reached.
    #[error("ICF Newton solve did not converge in {0} iterations")]
    MaxIterations(usize),
    /// The Hessian could not be factorized even after regularisation.
    #[error("ICF Hessian is not positive definite (pivot {0})")]
    NotPositiveDefinite(usize),
    /// The line search found no decrease along a fresh Newton direction
    /// before the tolerance was met (the residual is at rounding level).
    #[error("ICF line search stalled at scaled residual {0:e}")]
    Stalled(f64),
    /// The iterate became NaN or infinite.
    #[error("ICF solve produced a non-finite value")]
    NonFinite,
}

/// The factorizations of H the solver chooses from, per factorization.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FactorKind {
    /// Dense Cholesky (one tree whose pattern is not exploited, or a
    /// pattern broken by a term coupling two branches).
    #[default]
    Dense,
    /// Dense Cholesky of tree blocks in a minimum-degree order
    /// (`icf::sparse`): several trees that contacts couple.
    Blocks,
    /// LᵀDL over the dof forest ([`TreeLdl`]): every contact and row lies
    /// on one path to a root, so H keeps the mass matrix's pattern.
    Tree,
}

/// Newton solver workspace (allocated once; no allocation per solve once sized).
#[derive(Clone, Debug, Default)]
pub struct IcfSolver<T> {
    grad: Vec<T>,
    hess: Vec<T>,
    factor: Vec<T>,
    w: Vec<T>,
    work: CostWork<T>,
    factor_valid: bool,
    /// Tree-block elimination structure when the factor is block sparse.
    structure: BlockStructure,
    /// Ancestor lists of the problem's dofs, for the tree factorization.
    tree: TreeLdl,
    /// Which factorization `factor` holds.
    kind: FactorKind,
    blocks: Vec<(usize, usize)>,
    /// Scratch: which pairs of tree blocks a contact couples (rounding floor).
    coupled: Vec<bool>,
}

impl<T: Real> IcfSolver<T> {
    /// Workspace for problems with `nv` velocities.
    pub fn new(nv: usize) -> Self {
        let mut s = Self::default();
        s.resize(nv);
        s
    }

    fn resize(&mut self, nv: usize) {
        if self.grad.len() != nv {
            self.grad = vec![T::zero(); nv];
            self.hess = vec![T::zero(); nv * nv];
            self.factor = vec![T::zero(); nv * nv];
            self.w = vec![T::zero(); nv];
            self.factor_valid = false;
        }
    }

    /// Forgets a stored factorization (the next solve factorizes afresh).
    pub fn invalidate_factor(&mut self) {
        self.factor_valid = false;
    }

    /// The gradient ∇ℓ at the last evaluated iterate.
    pub fn gradient(&self) -> &[T] {
        &self.grad
    }

    /// Minimises ℓ starting from the warm start in `v`, which receives the
    /// solution (m/s, rad/s).
    pub fn solve(&mut self, p: &IcfProblem<T>, v: &mut [T], params: &SolverParams) -> Result<SolveStats, SolveError> {
        let nv = p.nv;
        self.resize(nv);
        let floor = if T::EPS.f64() < 1e-10 { 1e-10 } else { 1e-6 };
        let eps = params.tolerance.max(floor);
        let dr: f64 = (0..nv).map(|i| (p.scale[i] * p.r[i]).f64().powi(2)).sum::<f64>().sqrt();
        // Relative to the step's own momentum scale ‖D r‖, with no absolute
        // floor: a heavy body's small momentum change is not dropped.
        let tol = eps * dr;
        let mut stats = SolveStats { tolerance: tol, ..Default::default() };
        if !params.hessian_reuse {
            self.factor_valid = false;
        }
        let mut prev_step = f64::INFINITY;
        let mut prev_residual = f64::INFINITY;
        for iter in 0..params.max_iterations {
            // The Hessian is always assembled (cheap next to factorizing it),
            // so the reuse decision can be taken with the new residual in hand.
            self.work.secant_friction = iter < params.secant_friction_iterations;
            let cost = evaluate_keep(p, v, &mut self.grad, Some(&mut self.hess), &mut self.work);
            let gnorm = scaled_norm(&self.grad, &p.scale, false);
            stats.residual = gnorm;
            if !gnorm.is_finite() {
                return Err(SolveError::NonFinite);
            }
            // Never ask for less than the rounding floor of the residual. In
            // f64 it lies far below any tolerance until the residual nears it.
            let tol = if T::EPS.f64() > 1e-10 || gnorm < 1e3 * tol || tol == 0.0 {
                tol.max(rounding_floor(p, &self.hess, v, &mut self.coupled))
            } else {
                tol
            };
            stats.tolerance = tol;
            if gnorm <= tol {
                stats.converged = true;
                stats.iterations = iter;
                return Ok(stats);
            }
            let mut need_factor = !self.factor_valid || !params.hessian_reuse;
            if !need_factor && iter > 0 {
                // Stale factor: linear convergence at rate ρ. Keep it only if
                // ρ predicts reaching the tolerance within the iteration budget.
                let rho = gnorm / prev_residual;
                let budget = params.reuse_target_iterations.saturating_sub(iter).max(1) as f64;
                let predicted = if rho < 1.0 { (tol / gnorm).ln() / rho.ln() } else { f64::INFINITY };
                need_factor = !(predicted <= budget);
            }
            prev_residual = gnorm;
            if need_factor {
                self.factorize(p)?;
                stats.factorizations += 1;
            }
            for i in 0..nv {
                self.w[i] = -self.grad[i];
            }
            self.solve_factored();
            // Far from the solution, or for a loose tolerance, an approximate
            // minimiser along the line serves as well; near the solution of a
            // tight solve the search is exact, so the final iterates (and
            // finite differences through them) are as precise as quadratic
            // convergence makes them.
            let loose = gnorm > 1e3 * tol || eps >= LINE_SEARCH_EXACT_BELOW;
            let ls_tol = if loose { LINE_SEARCH_TOLERANCE } else { 1e-10 };
            let (alpha, ls_iters) = self.line_search(p, v, cost, ls_tol, params.max_line_search_iterations);
            stats.line_search_iterations += ls_iters;
            let (mut step, mut vnorm) = (0.0f64, 0.0f64);
            for i in 0..nv {
                let dv = alpha * self.w[i];
                v[i] += dv;
                let s = (dv / p.scale[i]).f64();
                step += s * s;
                vnorm += (v[i] / p.scale[i]).f64().powi(2);
            }
            let (step, vnorm) = (step.sqrt(), vnorm.sqrt());
            stats.iterations = iter + 1;
            // θ, the contraction of successive steps, needs two steps: the
            // first iteration never exits here.
            let theta = step / prev_step;
            let contracted = params.theta_criterion && prev_step.is_finite() && theta < 1.0;
            // Or a step below one ulp of ‖D⁻¹v‖ near the tolerance: v is as
            // good as this precision resolves it. In f32 the rounding floor's
            // estimate can be low by a small factor, and Newton then creeps
            // at rounding level to the iteration cap (an Ant-v5 RL rollout:
            // residual 1.5× the floor, steps of 0.06 ulp, 100 iterations).
            let resolved = step <= T::EPS.f64() * vnorm && gnorm <= ROUNDING_STALL_RESIDUAL * tol;
            if (contracted && theta / (1.0 - theta) * step <= tol) || resolved {
                evaluate_keep(p, v, &mut self.grad, None, &mut self.work);
                stats.residual = scaled_norm(&self.grad, &p.scale, false);
                stats.converged = true;
                return Ok(stats);
            }
            if alpha == T::zero() || step == 0.0 {
                // No descent possible at this precision from a fresh factor:
                // the iterate is as good as it gets.
                if need_factor {
                    return Err(SolveError::Stalled(gnorm));
                }
                self.factor_valid = false;
            }
            prev_step = step;
        }
        Err(SolveError::MaxIterations(params.max_iterations))
    }

    /// The factorization this problem's pattern allows at the least cost:
    /// the tree LᵀDL when every contact and row lies on one path to a root
    /// and that costs fewer operations than dense factors of the tree
    /// blocks; else block sparse over kinematic trees when the problem has
    /// several; else dense.
    fn choose_factorization(&mut self, p: &IcfProblem<T>) -> FactorKind {
        // `analyze` keeps the structure while the parents are unchanged; the
        // tree must beat the trees' dense blocks without coupling.
        let tree = p.dof_parent.len() == p.nv
            && self.tree.analyze(&p.dof_parent)
            && self.tree.beats_dense_blocks((0..p.block_count()).map(|b| p.block(b).1))
            && p.contacts
                .iter()
                .all(|c| self.tree.on_one_path(p.jac_dof[c.jac_start..c.jac_start + c.jac_len].iter().copied()))
            && p.rows
                .iter()
                .all(|r| self.tree.on_one_path(p.row_dof[r.jac_start..r.jac_start + r.jac_len].iter().copied()));
        if tree {
            FactorKind::Tree
        } else if BlockStructure::applies(p) {
            FactorKind::Blocks
        } else {
            FactorKind::Dense
        }
    }

    /// The factorization of the last Newton iteration that factorized.
    pub fn factor_kind(&self) -> FactorKind {
        self.kind
    }

    /// Factorizes the Hessian as [`choose_factorization`](Self::choose_factorization)
    /// decides; on failure (rounding in f32) retries with a growing
    /// diagonal shift relative to the diagonal.
    fn factorize(&mut self, p: &IcfProblem<T>) -> Result<(), SolveError> {
        let nv = p.nv;
        self.kind = self.choose_factorization(p);
        if self.kind == FactorKind::Blocks {
            self.structure.analyze(p);
            self.blocks.clone_from(&p.blocks);
        }
        let mut shift = T::zero();
        for attempt in 0..6 {
            match self.kind {
                FactorKind::Blocks => self.structure.load(&self.hess, &mut self.factor, nv, &self.blocks),
                FactorKind::Tree => self.tree.load(&self.hess, nv, &mut self.factor),
                FactorKind::Dense => self.factor.copy_from_slice(&self.hess),
            }
            if shift > T::zero() {
                for i in 0..nv {
                    let d = self.hess[i * nv + i];
                    let at = if self.kind == FactorKind::Tree { self.tree.diag_index(i) } else { i * nv + i };
                    self.factor[at] = d + shift * d.abs().max(T::one());
                }
            }
            let r = match self.kind {
                FactorKind::Blocks => self.structure.factor(&mut self.factor, nv, &self.blocks),
                FactorKind::Tree => self.tree.factor(&mut self.factor),
                FactorKind::Dense => cholesky_factor(&mut self.factor, nv),
            };
            match r {
                Ok(()) => {
                    self.factor_valid = true;
                    return Ok(());
                }
                Err(e) if attempt == 5 => return Err(SolveError::NotPositiveDefinite(e.pivot)),
                Err(_) => shift = if shift == T::zero() { T::EPS * T::c(16.0) } else { shift * T::c(100.0) },
            }
        }
        unreachable!()
    }

    /// w ← H⁻¹ w with the current factor.
    fn solve_factored(&mut self) {
        let mut w = std::mem::take(&mut self.w);
        self.solve_with_factor(&mut w);
        self.w = w;
    }

    /// Solves H x = b in place with the factor of the last factorization
    /// (at the last iterate that needed one, not necessarily the solution).
    pub fn solve_with_factor(&self, b: &mut [T]) {
        let nv = b.len();
        match self.kind {
            FactorKind::Blocks => self.structure.solve(&self.factor, nv, &self.blocks, b),
            FactorKind::Tree => self.tree.solve(&self.factor, b),
            FactorKind::Dense => cholesky_solve_in_place(&self.factor, nv, b),
        }
    }

    /// Exact line search along w from v, where the cost is `f0` and the
    /// gradient `self.grad`: α = 1 when ℓ'(1) ≤ 0; otherwise the root of
    /// ℓ'(α) in (0, 1) (to |ℓ'(α)| ≤ `rel_tol`·|ℓ'(0)|) by Newton with
    /// bisection fallback, starting from the minimiser of the cubic Hermite
    /// interpolant. Returns (α, cost evaluations along the line).
    fn line_search(&mut self, p: &IcfProblem<T>, v: &[T], f0: T, rel_tol: f64, max_iter: usize) -> (T, usize) {
        prepare_line_cached(p, v, &self.w, &mut self.work);
        // ℓ'(0) = ∇ℓ·w, known without evaluating along the line.
        let d0: T = self.grad.iter().zip(&self.w).map(|(g, w)| *g * *w).sum();
        if !(d0 < T::zero()) {
            return (T::zero(), 0);
        }
        let (f1, d1, _) = line_eval(p, v, &self.w, T::one(), &self.work);
        if d1 <= T::zero() {
            return (T::one(), 1);
        }
        // Cubic Hermite p(t) = f0 + d0 t + c2 t² + c3 t³ through both ends.
        let df = f1 - f0;
        let c2 = T::c(3.0) * df - T::c(2.0) * d0 - d1;
        let c3 = d0 + d1 - T::c(2.0) * df;
        let mut alpha = hermite_min(d0, c2, c3).unwrap_or(T::c(0.5));
        let (mut lo, mut hi) = (T::zero(), T::one());
        let tol = d0.abs() * T::c(rel_tol).max(T::EPS * T::c(10.0));
        let mut iters = 1;
        for _ in 0..max_iter {
            let (_, d, dd) = line_eval(p, v, &self.w, alpha, &self.work);
            iters += 1;
            if d.abs() <= tol {
                break;
            }
            if d < T::zero() {
                lo = alpha;
            } else {
                hi = alpha;
            }
            let newton = alpha - d / dd;
            alpha = if dd > T::zero() && newton > lo && newton < hi { newton } else { T::c(0.5) * (lo + hi) };
            if hi - lo <= T::EPS * T::c(4.0) {
                break;
            }
        }
        (alpha, iters)
    }
}

/// Minimiser in (0, 1) of the cubic with derivative d0 + 2 c2 t + 3 c3 t².
fn hermite_min<T: Real>(d0: T, c2: T, c3: T) -> Option<T> {
    let (a, b, c) = (T::c(3.0) * c3, T::c(2.0) * c2, d0);
    let t = if a.abs() <= T::EPS * (b.abs() + c.abs()) {
        if b > T::zero() { -c / b } else { return None }
    } else {
        let disc = b * b - T::c(4.0) * a * c;
        if disc < T::zero() {
            return None;
        }
        // The root where the derivative crosses from negative to positive.
        let s = disc.sqrt();
        let q = -T::c(0.5) * (b + s.copysign(b));
        let (r1, r2) = (q / a, c / q);
        let good = |t: T| t > T::zero() && t < T::one() && b + T::c(2.0) * a * t > T::zero();
        if good(r1) {
            r1
        } else if good(r2) {
            r2
        } else {
            return None;
        }
    };
    if t > T::zero() && t < T::one() { Some(t) } else { None }
}

/// The smallest residual ‖D∇ℓ‖ worth asking for at iterate `v` with
/// Hessian `hess`: v is only known to about EPS·|v| per entry, which moves
/// the gradient by up to |H|·EPS|v|. In f64 this is far below any
/// tolerance; in f32 with stiff contacts (a hard impact: contact stiffness
/// k·h² and friction μn0/ε against the mass) it can exceed ε·‖D r‖,
/// and Newton would wander at rounding level until the iteration cap.
/// Reads only the structurally non-zero blocks of `hess` (the tree blocks
/// and the pairs a contact couples; [`evaluate`] leaves the others stale);
/// `coupled` is scratch.
fn rounding_floor<T: Real>(p: &IcfProblem<T>, hess: &[T], v: &[T], coupled: &mut Vec<bool>) -> f64 {
    let n = p.nv;
    let nb = p.block_count();
    coupled.clear();
    coupled.resize(nb * nb, false);
    for b in 0..nb {
        coupled[b * nb + b] = true;
    }
    if nb > 1 {
        for c in &p.contacts {
            let (a, b) = super::cost::contact_blocks(p, c);
            coupled[a * nb + b] = true;
            coupled[b * nb + a] = true;
        }
    }
    let mut sum = 0.0f64;
    for bi in 0..nb {
        let (si, mi) = p.block(bi);
        for i in si..si + mi {
            let mut s = T::zero();
            for bj in (0..nb).filter(|&bj| coupled[bi * nb + bj]) {
                let (sj, mj) = p.block(bj);
                for j in sj..sj + mj {
                    s += (hess[i * n + j] * v[j]).abs();
                }
            }
            let y = (s * p.scale[i]).f64();
            sum += y * y;
        }
    }
    T::EPS.f64() * sum.sqrt()
}

/// ‖D x‖ (or ‖D⁻¹ x‖ when `inverse`) in f64.
fn scaled_norm<T: Real>(x: &[T], scale: &[T], inverse: bool) -> f64 {
    x.iter()
        .zip(scale)
        .map(|(a, s)| {
            let y = if inverse { *a / *s } else { *a * *s };
            y.f64() * y.f64()
        })
        .sum::<f64>()
        .sqrt()
}
