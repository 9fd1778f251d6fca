//! iLQR / Gauss–Newton planning on the interval Jacobians (see the
//! [module docs](super)).

use super::cost::{CostDerivatives, Workspace};
use super::{Budget, MpcError, PlanStats, Planner, Problem, box_qp, run_budget};
use crate::diff::{Cfd, DiffRollout};
use crate::integrator::World;

/// Settings of [`Ilqr`].
#[derive(Clone, Debug, PartialEq)]
pub struct IlqrOptions {
    /// Contacts from distance in the Jacobians (`None`: off).
    pub cfd: Option<Cfd>,
    /// Initial Levenberg–Marquardt damping μ added to Q_uu (units of Q_uu).
    pub mu_init: f64,
    /// Smallest damping.
    pub mu_min: f64,
    /// Largest damping: an iteration that needs more stops the planning
    /// step (the plan is as good as this model can make it).
    pub mu_max: f64,
    /// Factor by which μ grows after a rejected step and shrinks after a full one.
    pub mu_factor: f64,
    /// Step lengths α tried by the line search, in order.
    pub line_search: Vec<f64>,
    /// Armijo fraction: a step is taken at once when it achieves this
    /// fraction of the predicted decrease; otherwise the best tried step
    /// that lowers J is taken.
    pub armijo: f64,
    /// With contacts from distance on: a full step is also accepted when
    /// J rises by at most this fraction of the model's predicted decrease
    /// (negative: never). The phantom impulses predict progress that only
    /// materialises once contact is made, so before the first touch a
    /// step toward contact leaves the task cost unchanged and adds a
    /// little control effort; a strict decrease test would stall there
    /// (see the [module docs](super)). μ then grows as after a rejected
    /// step, so these steps shrink until contact is made.
    pub cfd_slack: f64,
    /// Converged when the predicted decrease of a full step is below this
    /// fraction of |J| (plus 1e-12).
    pub tolerance: f64,
    /// Further iterations a linearization serves after the one that
    /// formed it, on the plan's new rollout with the same interval
    /// Jacobians (shifted with the plan between control intervals): a
    /// rollout is 25–60× cheaper than a linearization on the tasks here.
    /// A reuse iteration that finds no better plan forces a fresh
    /// linearization. 0: linearize every iteration (exact iLQR).
    pub reuse: usize,
    /// Whether a planning step ends on the best plan it has seen (by its
    /// cost on the planner's model; of equal costs the latest) rather than
    /// on its last iterate. The slack steps ([`IlqrOptions::cfd_slack`])
    /// may raise the cost while they search for contact; they still guide
    /// the step's later iterations, but the controller does not apply a
    /// plan worse than one it had (pusher: 28–32/40 goals → 33/40, with
    /// the cage term 33–36/40, `BENCHMARKS.md`). Steps that leave the
    /// state part of the cost unchanged (J with the controls at the
    /// initial guess: before the first touch the task cost is flat, and J
    /// changes by the controls' own cost) count as equal and are kept.
    pub keep_best: bool,
    /// With contacts from distance on: the factor (≤ 1: off) by which the
    /// phantom strength grows after a fresh linearization whose step does
    /// not lower J (rejected, accepted only by [`IlqrOptions::cfd_slack`],
    /// or converged), and shrinks after one whose full step does, between
    /// 1 and [`IlqrOptions::cfd_boost_max`] times the strength of
    /// [`IlqrOptions::cfd`]. The phantom impulses' gradient points toward
    /// contact, but its size is set by how the touched body responds in
    /// the linearization: a box held by static friction absorbs nearly all
    /// of it, and the step it gives is too small to reach contact against
    /// even a small control effort. The continuation raises it until the
    /// step does reach contact, and lets it fall back once steps succeed.
    /// Off by default: where steps stall in contact (billiards, cube turn)
    /// a stronger phantom misleads them (`BENCHMARKS.md`, "Push"); the
    /// push task turns it on (10).
    pub cfd_boost: f64,
    /// The largest factor of [`IlqrOptions::cfd_boost`].
    pub cfd_boost_max: f64,
}

impl Default for IlqrOptions {
    fn default() -> Self {
        Self {
            cfd: None,
            mu_init: 1e-6,
            mu_min: 1e-9,
            mu_max: 1e8,
            mu_factor: 10.0,
            line_search: vec![1.0, 0.5, 0.25, 0.1, 0.03],
            armijo: 0.1,
            cfd_slack: 0.5,
            tolerance: 1e-6,
            reuse: 0,
            keep_best: true,
            cfd_boost: 0.0,
            cfd_boost_max: 100.0,
        }
    }
}

/// The gradient-based planner: iLQR with box-constrained controls (see the
/// [module docs](super)).
pub struct Ilqr {
    problem: Problem,
    /// Settings.
    pub options: IlqrOptions,
    rollout: DiffRollout,
    world: World<f64>,
    ws: Workspace,
    /// Plan controls (H × nc).
    u: Vec<f64>,
    /// States of the plan's last rollout ((H + 1) × nx; empty before the first plan).
    xs: Vec<f64>,
    mu: f64,
    derivs: Vec<CostDerivatives>,
    /// Feedforward (H × nc) and feedback gains (H × nc × nx).
    kff: Vec<f64>,
    kfb: Vec<f64>,
    trial_x: Vec<f64>,
    trial_u: Vec<f64>,
    /// The planning step's best plan so far ([`IlqrOptions::keep_best`]):
    /// controls (H × nc) and, when known, their rollout ((H + 1) × nx).
    best_u: Vec<f64>,
    best_xs: Vec<f64>,
    /// Interval Jacobians D_x (H × nx × nx) and D_u (H × nx × nc) of the
    /// last linearization, shifted with the plan.
    jac_x: Vec<f64>,
    jac_u: Vec<f64>,
    /// Iterations run on them (`usize::MAX`: none, or stale).
    jac_uses: usize,
    /// Whether `xs` is the rollout of `u` from `xs[..nx]`.
    xs_valid: bool,
    /// Expected duration of a reuse and of a fresh iteration (for [`Budget`]s in time).
    iteration_cost: [f64; 2],
    /// The initial guess (H × nc): the state part of J is J with these controls.
    u_ref: Vec<f64>,
    /// The state part of J of the plan the planning step started from.
    start_state_cost: f64,
    /// The current factor on the phantom strength ([`IlqrOptions::cfd_boost`]).
    boost: f64,
}

/// The expected decrease of J along a step of length α is
/// −(α·dv1 + α²·dv2).
struct Backward {
    dv1: f64,
    dv2: f64,
}

impl Ilqr {
    /// A planner for `problem`, starting from its initial guess.
    pub fn new(problem: Problem, options: IlqrOptions) -> Self {
        let (nx, nc, h) = (problem.nx(), problem.nc(), problem.horizon);
        Self {
            rollout: problem.rollout(options.cfd),
            world: problem.world(),
            ws: Workspace::new(problem.model.clone()),
            u: problem.initial_controls(),
            xs: vec![],
            mu: options.mu_init,
            derivs: (0..=h).map(|_| CostDerivatives::new(nx, nc)).collect(),
            kff: vec![0.0; h * nc],
            kfb: vec![0.0; h * nc * nx],
            trial_x: vec![0.0; (h + 1) * nx],
            trial_u: vec![0.0; h * nc],
            best_u: vec![0.0; h * nc],
            best_xs: vec![0.0; (h + 1) * nx],
            jac_x: vec![],
            jac_u: vec![],
            jac_uses: usize::MAX,
            xs_valid: false,
            iteration_cost: [0.0; 2],
            u_ref: problem.initial_controls(),
            start_state_cost: 0.0,
            boost: 1.0,
            problem,
            options,
        }
    }

    /// Sets the plan's controls (H × nc; clamped into the bounds). The
    /// Jacobians kept for reuse belong to the previous plan: the next
    /// iteration linearizes afresh.
    pub fn set_controls(&mut self, u: &[f64]) {
        assert_eq!(u.len(), self.u.len(), "plan controls: H × nc values");
        self.u.copy_from_slice(u);
        self.problem.clamp(&mut self.u);
        self.xs_valid = false;
        self.jac_uses = usize::MAX;
    }

    /// States of the plan's last rollout ((H + 1) × nx), empty before the first plan.
    pub fn states(&self) -> &[f64] {
        &self.xs
    }

    /// The kind of the next iteration: 1 when it linearizes, 0 when it reuses a linearization.
    fn next_kind(&self) -> usize {
        usize::from(self.jac_uses == usize::MAX || self.jac_uses > self.options.reuse)
    }

    /// Expected duration (s, on the last time budget's clock) of an
    /// iteration that linearizes: the longest recent one, 0 before any.
    pub fn expected_linearization(&self) -> f64 {
        self.iteration_cost[1]
    }

    /// The current Levenberg–Marquardt damping μ.
    pub fn damping(&self) -> f64 {
        self.mu
    }

    /// The Riccati pass with box-constrained feedforward steps; `None` when
    /// Q_uu + μI is not positive definite somewhere.
    fn backward(&mut self, d_x: &[f64], d_u: &[f64]) -> Option<Backward> {
        let p = &self.problem;
        let (nx, nc, h) = (p.nx(), p.nc(), p.horizon);
        let term = &self.derivs[h];
        let mut vx = term.lx.clone();
        let mut vxx = term.lxx.clone();
        let (mut qx, mut qu) = (vec![0.0; nx], vec![0.0; nc]);
        let (mut qxx, mut quu, mut qux) = (vec![0.0; nx * nx], vec![0.0; nc * nc], vec![0.0; nc * nx]);
        let (mut va, mut vb) = (vec![0.0; nx * nx], vec![0.0; nx * nc]);
        let mut hreg = vec![0.0; nc * nc];
        let (mut lo, mut hi) = (vec![0.0; nc], vec![0.0; nc]);
        let mut out = Backward { dv1: 0.0, dv2: 0.0 };
        for k in (0..h).rev() {
            let a = &d_x[k * nx * nx..(k + 1) * nx * nx];
            let b = &d_u[k * nx * nc..(k + 1) * nx * nc];
            let l = &self.derivs[k];
            // V_xx A and V_xx B.
            for r in 0..nx {
                for c in 0..nx {
                    va[r * nx + c] = (0..nx).map(|s| vxx[r * nx + s] * a[s * nx + c]).sum();
                }
                for c in 0..nc {
                    vb[r * nc + c] = (0..nx).map(|s| vxx[r * nx + s] * b[s * nc + c]).sum();
                }
            }
            for i in 0..nx {
                qx[i] = l.lx[i] + (0..nx).map(|s| a[s * nx + i] * vx[s]).sum::<f64>();
                for j in 0..nx {
                    qxx[i * nx + j] = l.lxx[i * nx + j] + (0..nx).map(|s| a[s * nx + i] * va[s * nx + j]).sum::<f64>();
                }
            }
            for i in 0..nc {
                qu[i] = l.lu[i] + (0..nx).map(|s| b[s * nc + i] * vx[s]).sum::<f64>();
                for j in 0..nc {
                    quu[i * nc + j] = l.luu[i * nc + j] + (0..nx).map(|s| b[s * nc + i] * vb[s * nc + j]).sum::<f64>();
                }
                for j in 0..nx {
                    qux[i * nx + j] = l.lux[i * nx + j] + (0..nx).map(|s| b[s * nc + i] * va[s * nx + j]).sum::<f64>();
                }
            }
            // Symmetrise Q_uu (round-off) and damp it.
            for i in 0..nc {
                for j in 0..nc {
                    hreg[i * nc + j] = 0.5 * (quu[i * nc + j] + quu[j * nc + i]) + if i == j { self.mu } else { 0.0 };
                }
            }
            let uk = &self.u[k * nc..(k + 1) * nc];
            for i in 0..nc {
                lo[i] = p.lower[i] - uk[i];
                hi[i] = p.upper[i] - uk[i];
            }
            let warm: Vec<f64> = self.kff[k * nc..(k + 1) * nc].to_vec();
            let qp = box_qp(&hreg, &qu, &lo, &hi, &warm)?;
            let kk = &mut self.kff[k * nc..(k + 1) * nc];
            kk.copy_from_slice(&qp.x);
            // Feedback on the free controls: K_f = −H_ff⁻¹ Q_ux,f; clamped rows 0.
            let gains = &mut self.kfb[k * nc * nx..(k + 1) * nc * nx];
            gains.fill(0.0);
            let free = qp.free_indices();
            let mut col = vec![0.0; free.len()];
            for j in 0..nx {
                for (a_, &i) in free.iter().enumerate() {
                    col[a_] = qux[i * nx + j];
                }
                qp.solve_free(&mut col);
                for (a_, &i) in free.iter().enumerate() {
                    gains[i * nx + j] = -col[a_];
                }
            }
            let kk = &self.kff[k * nc..(k + 1) * nc];
            out.dv1 += (0..nc).map(|i| kk[i] * qu[i]).sum::<f64>();
            out.dv2 +=
                0.5 * (0..nc).map(|i| kk[i] * (0..nc).map(|j| quu[i * nc + j] * kk[j]).sum::<f64>()).sum::<f64>();
            // V_x = Q_x + Kᵀ Q_uu k + Kᵀ Q_u + Q_uxᵀ k;
            // V_xx = Q_xx + Kᵀ Q_uu K + Kᵀ Q_ux + Q_uxᵀ K.
            let quu_k: Vec<f64> = (0..nc).map(|i| (0..nc).map(|j| quu[i * nc + j] * kk[j]).sum()).collect();
            for i in 0..nx {
                vx[i] = qx[i]
                    + (0..nc).map(|r| gains[r * nx + i] * (quu_k[r] + qu[r]) + qux[r * nx + i] * kk[r]).sum::<f64>();
            }
            let mut quu_kk = vec![0.0; nc * nx];
            for r in 0..nc {
                for j in 0..nx {
                    quu_kk[r * nx + j] = (0..nc).map(|s| quu[r * nc + s] * gains[s * nx + j]).sum();
                }
            }
            for i in 0..nx {
                for j in 0..nx {
                    vxx[i * nx + j] = qxx[i * nx + j]
                        + (0..nc)
                            .map(|r| {
                                gains[r * nx + i] * (quu_kk[r * nx + j] + qux[r * nx + j])
                                    + qux[r * nx + i] * gains[r * nx + j]
                            })
                            .sum::<f64>();
                }
            }
            for i in 0..nx {
                for j in 0..i {
                    let s = 0.5 * (vxx[i * nx + j] + vxx[j * nx + i]);
                    vxx[i * nx + j] = s;
                    vxx[j * nx + i] = s;
                }
            }
        }
        Some(out)
    }

    /// Grows (`grow`) or shrinks the factor on the phantom strength
    /// ([`IlqrOptions::cfd_boost`]); returns whether it changed. A change
    /// asks for a fresh linearization (and resets μ: the model is new).
    fn boost_cfd(&mut self, grow: bool) -> bool {
        let o = &self.options;
        let Some(cfd) = o.cfd.filter(|_| o.cfd_boost > 1.0) else { return false };
        let boost = if grow {
            (self.boost * o.cfd_boost).min(o.cfd_boost_max.max(1.0))
        } else {
            (self.boost / o.cfd_boost).max(1.0)
        };
        if boost == self.boost {
            return false;
        }
        self.boost = boost;
        self.rollout = self.problem.rollout(Some(Cfd { strength: cfd.strength * boost, ..cfd }));
        if grow {
            self.jac_uses = usize::MAX;
            self.mu = o.mu_init;
        }
        true
    }

    /// The state part of J (J with the controls at the initial guess) of
    /// the plan's rollout (`trial`: of the trial rollout).
    fn state_cost(&mut self, trial: bool) -> f64 {
        let p = &self.problem;
        let xs = if trial { &self.trial_x } else { &self.xs };
        p.cost.trajectory(&mut self.ws, xs, &self.u_ref, p.dt, None)
    }

    /// The factor on the phantom strength now ([`IlqrOptions::cfd_boost`]).
    pub fn cfd_boost(&self) -> f64 {
        self.boost
    }

    /// One iteration from `x0`, a fresh linearization when `linearize` (or
    /// when there is none to reuse); returns whether planning has converged.
    fn iterate(&mut self, x0: &[f64], linearize: bool, stats: &mut PlanStats) -> Result<bool, MpcError> {
        let p = self.problem.clone();
        let (nx, nc, h) = (p.nx(), p.nc(), p.horizon);
        let o = self.options.clone();
        let fresh = linearize || self.jac_x.is_empty();
        if fresh {
            let lin = self.rollout.linearize(x0, &self.u, &[], h)?;
            stats.linearizations += 1;
            stats.rollouts += 1;
            self.jac_x = lin.d_x;
            self.jac_u = lin.d_u;
            self.xs = lin.trajectory;
            self.xs_valid = true;
            self.jac_uses = 0;
        } else if !(self.xs_valid && self.xs[..nx] == *x0) {
            self.xs.resize((h + 1) * nx, 0.0);
            let u = &self.u;
            p.simulate_policy(
                &mut self.world,
                x0,
                |k, _, uk| uk.copy_from_slice(&u[k * nc..(k + 1) * nc]),
                &mut self.xs,
                &mut self.trial_u,
            )?;
            stats.rollouts += 1;
            self.xs_valid = true;
        }
        self.jac_uses = self.jac_uses.saturating_add(1);
        let j0 = p.cost.trajectory(&mut self.ws, &self.xs, &self.u, p.dt, Some(&mut self.derivs));
        if stats.iterations == 0 {
            stats.initial_cost = j0;
            if o.keep_best {
                self.start_state_cost = self.state_cost(false);
            }
        }
        stats.cost = j0;
        // A reuse iteration that cannot improve asks for a fresh linearization.
        let stale = |me: &mut Self| {
            me.jac_uses = usize::MAX;
            Ok(false)
        };
        let (d_x, d_u) = (std::mem::take(&mut self.jac_x), std::mem::take(&mut self.jac_u));
        let bw = loop {
            match self.backward(&d_x, &d_u) {
                Some(b) => break Some(b),
                None if self.mu < o.mu_max => self.mu = (self.mu * o.mu_factor).max(o.mu_min),
                None => break None,
            }
        };
        (self.jac_x, self.jac_u) = (d_x, d_u);
        let Some(bw) = bw else { return if fresh { Ok(!self.boost_cfd(true)) } else { stale(self) } };
        let predicted = |a: f64| -(a * bw.dv1 + a * a * bw.dv2);
        if predicted(1.0) <= o.tolerance * j0.abs() + 1e-12 {
            return if fresh { Ok(!self.boost_cfd(true)) } else { stale(self) };
        }
        // Forward passes on the nonlinear model.
        let slack = if o.cfd.is_some() && o.cfd_slack >= 0.0 { Some(o.cfd_slack * predicted(1.0)) } else { None };
        let mut best: Option<(f64, f64, Vec<f64>, Vec<f64>)> = None;
        let mut neutral: Option<(f64, Vec<f64>, Vec<f64>)> = None;
        for &alpha in &o.line_search {
            let (u_nom, x_nom, kff, kfb) = (&self.u, &self.xs, &self.kff, &self.kfb);
            let policy = |k: usize, x: &[f64], u: &mut [f64]| {
                for i in 0..nc {
                    let g = &kfb[(k * nc + i) * nx..(k * nc + i + 1) * nx];
                    let dx: f64 = (0..nx).map(|j| g[j] * (x[j] - x_nom[k * nx + j])).sum();
                    u[i] = u_nom[k * nc + i] + alpha * kff[k * nc + i] + dx;
                }
            };
            stats.rollouts += 1;
            if p.simulate_policy(&mut self.world, x0, policy, &mut self.trial_x, &mut self.trial_u).is_err() {
                continue;
            }
            let j = p.cost.trajectory(&mut self.ws, &self.trial_x, &self.trial_u, p.dt, None);
            if !j.is_finite() {
                continue;
            }
            if j < j0 && best.as_ref().is_none_or(|b| j < b.1) {
                best = Some((alpha, j, self.trial_x.clone(), self.trial_u.clone()));
                if j0 - j >= o.armijo * predicted(alpha) {
                    break;
                }
            }
            if alpha == 1.0 && slack.is_some_and(|s| j <= j0 + 1e-9 * j0.abs() + s) {
                neutral = Some((j, self.trial_x.clone(), self.trial_u.clone()));
            }
        }
        if let Some((alpha, j, x, u)) = best {
            self.u = u;
            self.xs = x;
            stats.cost = j;
            stats.accepted += 1;
            if alpha == 1.0 {
                self.mu = (self.mu / o.mu_factor).max(o.mu_min);
                if fresh {
                    self.boost_cfd(false);
                }
            }
            return Ok(false);
        }
        if let Some((j, x, u)) = neutral {
            // Progress the model predicted but the plan does not show yet: take it, trust the model less.
            self.u = u;
            self.xs = x;
            stats.cost = j;
            stats.accepted += 1;
            self.mu = (self.mu * o.mu_factor).min(o.mu_max);
            if fresh {
                self.boost_cfd(true);
            }
            return Ok(false);
        }
        self.mu *= o.mu_factor;
        if fresh && self.boost_cfd(true) {
            return Ok(false);
        }
        if fresh { Ok(self.mu > o.mu_max) } else { stale(self) }
    }
}

impl Planner for Ilqr {
    fn name(&self) -> String {
        if self.options.cfd.is_some() { "iLQR + CFD".into() } else { "iLQR".into() }
    }

    fn problem(&self) -> &Problem {
        &self.problem
    }

    fn plan(&mut self, x0: &[f64], budget: Budget) -> Result<PlanStats, MpcError> {
        if x0.len() != self.problem.nx() {
            return Err(MpcError::Input(format!("state: expected {} values, got {}", self.problem.nx(), x0.len())));
        }
        // Damping grows while steps fail; a new planning step starts afresh
        // (a plan stuck at μ_max would otherwise never move again).
        self.mu = self.options.mu_init;
        let mut stats = PlanStats::default();
        let mut cost = self.iteration_cost;
        let first = self.next_kind();
        let keep_best = self.options.keep_best;
        // The best plan's cost, the state part of it and whether `best_xs`
        // is its rollout: the plan the step starts from has none until the
        // first iteration.
        let mut best: Option<(f64, f64, bool)> = None;
        self.best_u.copy_from_slice(&self.u);
        let (n, seconds, cpu) = run_budget(budget, first, &mut cost, |kind| {
            let accepted = stats.accepted;
            let r = self.iterate(x0, kind == 1, &mut stats);
            stats.iterations += 1;
            if keep_best && r.is_ok() {
                let (floor, floor_state) = best.map_or((stats.initial_cost, self.start_state_cost), |b| (b.0, b.1));
                // A plan whose J rose by its controls' cost alone (the state
                // part unchanged: before the first touch) counts as equal.
                let state = self.state_cost(false);
                let tie = (state - floor_state).abs() <= 1e-9 * floor_state.abs() + 1e-12;
                if stats.cost <= floor || tie {
                    self.best_u.copy_from_slice(&self.u);
                    self.best_xs.copy_from_slice(&self.xs);
                    best = Some((stats.cost, state, true));
                } else if best.is_none() {
                    best = Some((floor, floor_state, false));
                }
            }
            // When a fresh linearization does not fit the budget, another
            // iteration on the last one still may, as long as they progress.
            let fallback = (stats.accepted > accepted && !self.jac_x.is_empty()).then_some(0);
            r.map(|converged| (converged, self.next_kind(), fallback))
        })?;
        self.iteration_cost = cost;
        let last_is_best = best.is_some_and(|b| b.2 && self.best_u == self.u);
        if let Some((j, _, rolled_out)) = best.filter(|_| !last_is_best) {
            self.u.copy_from_slice(&self.best_u);
            self.xs_valid = rolled_out;
            if rolled_out {
                self.xs.copy_from_slice(&self.best_xs);
            }
            stats.cost = j;
        }
        stats.iterations = n;
        stats.seconds = seconds;
        stats.cpu_seconds = cpu;
        Ok(stats)
    }

    fn controls(&self) -> &[f64] {
        &self.u
    }

    fn shift(&mut self) {
        let nc = self.problem.nc();
        let nx = self.problem.nx();
        shift_sequence(&mut self.u, nc);
        shift_sequence(&mut self.kff, nc);
        shift_sequence(&mut self.jac_x, nx * nx);
        shift_sequence(&mut self.jac_u, nx * nc);
        self.xs_valid = false;
    }

    fn reset(&mut self) {
        self.u = self.problem.initial_controls();
        self.kff.fill(0.0);
        self.xs.clear();
        self.xs_valid = false;
        self.jac_uses = usize::MAX;
        self.mu = self.options.mu_init;
        if self.boost != 1.0 {
            self.boost = 1.0;
            self.rollout = self.problem.rollout(self.options.cfd);
        }
    }
}

/// Moves a sequence of blocks of `width` one block earlier, repeating the last block.
pub(crate) fn shift_sequence(v: &mut [f64], width: usize) {
    let n = v.len();
    if n > width {
        v.copy_within(width.., 0);
        v.copy_within(n - 2 * width..n - width, n - width);
    }
}
