//! Differentiable rollouts: the `f64` forward simulation with a tape, the
//! interval Jacobians, and the burn surrogate graph.

use super::adjoint::Adjoint;
use super::cfd::Cfd;
use super::jacobian::{Linearizer, Setup};
use super::params::{ControlKind, Param, set_controls, set_params};
use super::{DiffError, FrictionLoad, SolveSite};
use crate::icf::SolverParams;
use crate::integrator::{Mode, Tape, World, WorldStats};
use crate::model::Model;
use burn::tensor::{Tensor, TensorData};
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

/// Inputs seeded per dual-number pass of the Jacobian computation (the `N`
/// of [`super::Dual`]). A solve with nz = nq + nv + nc + nθ inputs costs
/// about ⌈nz / LANES⌉ passes in `Dual<LANES>`: one geometry pass (kinematics,
/// mass matrix, collision) shared by the passes that seed only v0, u and
/// material multipliers, and one per pass that seeds q0 or a mass or
/// geom-shape parameter.
pub const LANES: usize = 4;

/// A differentiable rollout of one model: `nsteps` control intervals of
/// `dt` seconds, controls held constant over each interval, integrated in
/// `mode` (see the [module docs](super)).
#[derive(Clone, Debug)]
pub struct DiffRollout {
    /// The model.
    pub model: Arc<Model>,
    /// Fixed-step or CENIC integration inside each interval.
    pub mode: Mode,
    /// Control interval (s).
    pub dt: f64,
    /// What the controls drive.
    pub control: ControlKind,
    /// Differentiable parameters, in the order of the parameter vector.
    pub params: Vec<Param>,
    /// Contacts from distance in the backward pass (`None`: off).
    pub cfd: Option<Cfd>,
    /// How the Jacobian pass differentiates the friction load.
    pub friction_load: FrictionLoad,
}

/// Timing and counts of a rollout (summed over worlds).
#[derive(Clone, Copy, Debug, Default)]
pub struct RolloutStats {
    /// Recorded ICF solves.
    pub solves: usize,
    /// Wall time of the forward simulations (s).
    pub forward_seconds: f64,
    /// Wall time of the Jacobian pass (s).
    pub jacobian_seconds: f64,
    /// Phantom pairs used by contacts from distance, counted once per
    /// recorded solve.
    pub phantom_pairs: usize,
    /// Integration statistics, merged over worlds.
    pub world: WorldStats,
}

/// One world's rollout with its interval Jacobians (all row-major `f64`).
#[derive(Clone, Debug)]
pub struct Linearization {
    /// Control intervals.
    pub nsteps: usize,
    /// State size nq + nv.
    pub nx: usize,
    /// Controls per interval.
    pub nc: usize,
    /// Parameters.
    pub np: usize,
    /// States x_0 … x_nsteps ((nsteps + 1) × nx); x_0 as given.
    pub trajectory: Vec<f64>,
    /// D_x of each interval (nsteps × nx × nx).
    pub d_x: Vec<f64>,
    /// D_u of each interval (nsteps × nx × nc).
    pub d_u: Vec<f64>,
    /// D_θ of each interval (nsteps × nx × np).
    pub d_theta: Vec<f64>,
    /// Timing and counts.
    pub stats: RolloutStats,
}

impl Linearization {
    /// Reverse-mode product with the trajectory cotangent `g` ((nsteps + 1) ×
    /// nx, ∂L/∂x_k): returns (∂L/∂x_0, ∂L/∂u (nsteps × nc), ∂L/∂θ).
    pub fn vjp(&self, g: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (nx, nc, np, n) = (self.nx, self.nc, self.np, self.nsteps);
        assert_eq!(g.len(), (n + 1) * nx, "cotangent length");
        let mut lam = g[n * nx..].to_vec();
        let mut gu = vec![0.0; n * nc];
        let mut gt = vec![0.0; np];
        let mut next = vec![0.0; nx];
        for k in (0..n).rev() {
            let dx = &self.d_x[k * nx * nx..(k + 1) * nx * nx];
            let du = &self.d_u[k * nx * nc..(k + 1) * nx * nc];
            let dt = &self.d_theta[k * nx * np..(k + 1) * nx * np];
            for (j, out) in gu[k * nc..(k + 1) * nc].iter_mut().enumerate() {
                *out = (0..nx).map(|r| du[r * nc + j] * lam[r]).sum();
            }
            for (j, out) in gt.iter_mut().enumerate() {
                *out += (0..nx).map(|r| dt[r * np + j] * lam[r]).sum::<f64>();
            }
            for (j, out) in next.iter_mut().enumerate() {
                *out = (0..nx).map(|r| dx[r * nx + j] * lam[r]).sum::<f64>() + g[k * nx + j];
            }
            std::mem::swap(&mut lam, &mut next);
        }
        (lam, gu, gt)
    }
}

/// A recorded forward rollout of one world, for vector–Jacobian products
/// by the reverse pass ([`vjp`](Self::vjp)); see [`DiffRollout::record`].
#[derive(Clone, Debug)]
pub struct Recording {
    rollout: DiffRollout,
    world: usize,
    nsteps: usize,
    x0: Vec<f64>,
    u: Vec<f64>,
    theta: Vec<f64>,
    forward: Forward,
}

/// Counts of one reverse pass ([`Recording::vjp_with_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VjpStats {
    /// Phantom pairs used by contacts from distance, counted once per
    /// recorded solve (the dense path's [`RolloutStats::phantom_pairs`] of
    /// the same rollout).
    pub phantom_pairs: usize,
    /// Largest reverse-mode tape of one solve (nodes).
    pub peak_nodes: usize,
}

/// Cotangents of a rollout's inputs: (∂L/∂x_0 (nx), ∂L/∂u (nsteps × nc), ∂L/∂θ (nθ)).
pub type Cotangents = (Vec<f64>, Vec<f64>, Vec<f64>);

impl Recording {
    /// States x_0 … x_nsteps ((nsteps + 1) × nx, row-major); x_0 as given.
    pub fn trajectory(&self) -> &[f64] {
        &self.forward.trajectory
    }

    /// Control intervals.
    pub fn nsteps(&self) -> usize {
        self.nsteps
    }

    /// Recorded ICF solves.
    pub fn solves(&self) -> usize {
        self.forward.tape.len()
    }

    /// Integration statistics of the forward run.
    pub fn world_stats(&self) -> WorldStats {
        self.forward.stats
    }

    /// Wall time of the forward run with its tape (s).
    pub fn forward_seconds(&self) -> f64 {
        self.forward.seconds
    }

    /// Bytes the recording keeps for the reverse pass: the solve tape
    /// (states, steps and contact keys of every solve) and the interval
    /// bounds; the trajectory and inputs not counted.
    pub fn tape_bytes(&self) -> usize {
        self.forward.tape.bytes() + self.forward.bounds.len() * core::mem::size_of::<usize>()
    }

    /// The reverse pass: given `g` = ∂L/∂trajectory ((nsteps + 1) × nx,
    /// the layout of [`trajectory`](Self::trajectory)), returns
    /// (∂L/∂x_0, ∂L/∂u, ∂L/∂θ), equal to [`Linearization::vjp`] of the
    /// same rollout up to rounding, without forming Jacobians (see the
    /// [module docs](super)).
    pub fn vjp(&self, g: &[f64]) -> Result<Cotangents, DiffError> {
        Ok(self.vjp_with_stats(g)?.0)
    }

    /// [`vjp`](Self::vjp) with the counts of its reverse pass.
    pub fn vjp_with_stats(&self, g: &[f64]) -> Result<(Cotangents, VjpStats), DiffError> {
        let r = &self.rollout;
        let (nx, nc, np, n) = (r.nx(), r.nc(), r.np(), self.nsteps);
        if g.len() != (n + 1) * nx {
            return Err(DiffError::Input(format!(
                "trajectory cotangent: expected (nsteps + 1) × nx = {} values, got {}",
                (n + 1) * nx,
                g.len()
            )));
        }
        let mut adj = Adjoint::new(r.model.clone(), nc, np);
        let c = self.vjp_with(&mut adj, g)?;
        Ok((c, VjpStats { phantom_pairs: adj.phantom_pairs, peak_nodes: adj.peak_nodes }))
    }

    /// The interval Jacobians of this rollout from its tape, without a
    /// new forward run: [`DiffRollout::linearize`] of the same inputs, bit
    /// for bit (see [`DiffRollout::linearize_recordings`]).
    pub fn linearize(&self) -> Result<Linearization, DiffError> {
        Ok(DiffRollout::linearize_recordings(std::slice::from_ref(self))?.pop().expect("one world"))
    }

    /// The event diagnostic: the reverse pass of `g` (as [`vjp`](Self::vjp))
    /// here and on a new rollout of the same inputs with the integration
    /// tightened by `factor` (> 1: CENIC's accuracy or the fixed step
    /// divided by it), and their relative difference per input block,
    /// flagged above `tolerance`. Where the gradient is a derivative of the
    /// flow the two agree to the integration's error; where an event
    /// (a touch-down, lift-off or stick–slip transition) falls so that its
    /// discrete timing matters, they part by O(1) however tight both are
    /// (guide: design, §Gradients, "Gradients at events"). Costs one more
    /// recorded rollout at the tighter setting and two reverse passes. A
    /// flag is a statement about this rollout: the gradient there is
    /// ill-defined, not wrong; a gradient-based optimizer should treat it
    /// as noisy (e.g. average over perturbed controls) rather than exact.
    ///
    /// Recommended: `factor` 10, `tolerance` 0.05 (tools/grad_events.rs
    /// measures what that flags on half_cheetah and the ant).
    pub fn gradient_spread(&self, g: &[f64], factor: f64, tolerance: f64) -> Result<GradientSpread, DiffError> {
        if !(factor > 1.0 && factor.is_finite()) {
            return Err(DiffError::Input(format!("gradient spread: factor must be finite and > 1, got {factor}")));
        }
        if tolerance.is_nan() || tolerance < 0.0 {
            return Err(DiffError::Input(format!("gradient spread: tolerance must be ≥ 0, got {tolerance}")));
        }
        let r = &self.rollout;
        let mode = match &r.mode {
            Mode::Fixed { dt } => Mode::Fixed { dt: dt / factor },
            Mode::ErrorControlled(p) => {
                Mode::ErrorControlled(crate::integrator::CenicParams { accuracy: p.accuracy / factor, ..p.clone() })
            }
            m => {
                return Err(DiffError::Input(format!(
                    "gradient spread: integrator '{}' cannot be tightened",
                    m.name()
                )));
            }
        };
        let gradient = self.vjp(g)?;
        let tight_rollout = DiffRollout { mode: mode.clone(), ..r.clone() };
        let tight = Recording {
            rollout: tight_rollout.clone(),
            world: self.world,
            nsteps: self.nsteps,
            x0: self.x0.clone(),
            u: self.u.clone(),
            theta: self.theta.clone(),
            forward: tight_rollout.forward(self.world, &self.x0, &self.u, &self.theta, self.nsteps, true)?,
        };
        let tightened = tight.vjp(g)?;
        let initial_state = rel_diff(&gradient.0, &tightened.0);
        let controls = rel_diff(&gradient.1, &tightened.1);
        let params = rel_diff(&gradient.2, &tightened.2);
        let spread = controls.max(initial_state).max(params);
        Ok(GradientSpread {
            gradient,
            tightened,
            tightened_mode: mode,
            controls,
            initial_state,
            params,
            spread,
            flagged: spread > tolerance,
        })
    }

    fn vjp_with(&self, adj: &mut Adjoint, g: &[f64]) -> Result<Cotangents, DiffError> {
        let r = &self.rollout;
        let (nx, nc, np, n) = (r.nx(), r.nc(), r.np(), self.nsteps);
        let setup = r.setup();
        let f = &self.forward;
        let mut xbar = g[n * nx..].to_vec();
        let mut ubar = vec![0.0; n * nc];
        let mut tbar = vec![0.0; np];
        for k in (0..n).rev() {
            let start = if k == 0 { 0 } else { f.bounds[k - 1] };
            let site = SolveSite { world: self.world, interval: k, solve: 0, time: k as f64 * r.dt };
            let x_raw = if k == 0 { Some(&self.x0[..]) } else { None };
            let uk = &self.u[k * nc..(k + 1) * nc];
            let ub = &mut ubar[k * nc..(k + 1) * nc];
            adj.interval(&setup, &f.tape, start..f.bounds[k], uk, &self.theta, x_raw, site, &mut xbar, ub, &mut tbar)?;
            for (x, gk) in xbar.iter_mut().zip(&g[k * nx..(k + 1) * nx]) {
                *x += gk;
            }
        }
        Ok((xbar, ubar, tbar))
    }
}

/// How much a rollout's gradient moves when its integration tightens
/// ([`Recording::gradient_spread`]): the diagnostic of a gradient that sits
/// at a contact event whose discrete timing the derivative depends on.
#[derive(Clone, Debug)]
pub struct GradientSpread {
    /// The recording's own cotangents (∂L/∂x_0, ∂L/∂u, ∂L/∂θ).
    pub gradient: Cotangents,
    /// The same cotangents from a rollout with the tightened integration.
    pub tightened: Cotangents,
    /// The tightened integration: the recording's accuracy (CENIC) or
    /// step (fixed) divided by the factor.
    pub tightened_mode: Mode,
    /// ‖∂L/∂u − ∂L/∂u′‖ / ‖∂L/∂u′‖ (0 when both vanish; 1 when only the
    /// tightened one does), ′ the tightened rollout.
    pub controls: f64,
    /// The same for ∂L/∂x_0.
    pub initial_state: f64,
    /// The same for ∂L/∂θ.
    pub params: f64,
    /// The largest of the three relative differences.
    pub spread: f64,
    /// Whether `spread` exceeds the tolerance: the gradient is not
    /// resolved at this integration setting (an event inside the horizon
    /// makes it depend on the step sequence).
    pub flagged: bool,
}

/// ‖a − b‖ / ‖b‖, 0 when both vanish.
fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let d = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    if d == 0.0 {
        0.0
    } else if nb == 0.0 {
        1.0
    } else {
        d / nb
    }
}

/// A forward run with its tape.
#[derive(Clone, Debug)]
struct Forward {
    trajectory: Vec<f64>,
    tape: Tape,
    /// Tape length after each interval.
    bounds: Vec<usize>,
    stats: WorldStats,
    seconds: f64,
}

/// One world's forward run with the inputs it was run from.
struct Run<'a> {
    forward: &'a Forward,
    x0: &'a [f64],
    u: &'a [f64],
    theta: &'a [f64],
}

impl DiffRollout {
    /// A rollout of `model` in `mode` with control interval `dt` (s),
    /// actuator controls, no parameters and contacts from distance off.
    pub fn new(model: Arc<Model>, mode: Mode, dt: f64) -> Self {
        Self {
            model,
            mode,
            dt,
            control: ControlKind::Actuators,
            params: vec![],
            cfd: None,
            friction_load: FrictionLoad::Implicit,
        }
    }

    /// Sets what the controls drive.
    pub fn with_control(mut self, control: ControlKind) -> Self {
        self.control = control;
        self
    }

    /// Sets the differentiable parameters (the layout of the parameter vector).
    pub fn with_params(mut self, params: Vec<Param>) -> Self {
        self.params = params;
        self
    }

    /// Turns contacts from distance on (`Some`) or off.
    pub fn with_cfd(mut self, cfd: Option<Cfd>) -> Self {
        self.cfd = cfd;
        self
    }

    /// Sets how the Jacobian pass differentiates the friction load ([`FrictionLoad`]).
    pub fn with_friction_load(mut self, load: FrictionLoad) -> Self {
        self.friction_load = load;
        self
    }

    /// State size nq + nv.
    pub fn nx(&self) -> usize {
        self.model.nq + self.model.nv
    }

    /// Controls per interval.
    pub fn nc(&self) -> usize {
        self.control.len(&self.model)
    }

    /// Number of parameters.
    pub fn np(&self) -> usize {
        self.params.len()
    }

    /// The parameter vector that reproduces the model (all multipliers 1).
    pub fn nominal_params(&self) -> Vec<f64> {
        vec![1.0; self.np()]
    }

    fn validate(&self, x0: usize, u: usize, theta: usize, nworld: usize, nsteps: usize) -> Result<(), DiffError> {
        let check = |what: &str, expected: usize, got: usize| {
            if expected == got {
                Ok(())
            } else {
                Err(DiffError::Input(format!("{what}: expected {expected} values, got {got}")))
            }
        };
        if !(self.dt > 0.0 && self.dt.is_finite()) {
            return Err(DiffError::Input(format!("control interval dt = {} s must be positive", self.dt)));
        }
        if !self.mode.is_icf() {
            return Err(DiffError::Input(format!(
                "integrator '{}' has no gradient path: differentiable rollouts run Lagged ICF (Mode::Fixed or Mode::ErrorControlled)",
                self.mode.name()
            )));
        }
        if let Mode::ErrorControlled(p) = &self.mode
            && p.extrapolate
        {
            return Err(DiffError::Input(
                "CenicParams::extrapolate has no gradient path (the tape records the half steps): turn it off".into(),
            ));
        }
        if self.model.na > 0 {
            return Err(DiffError::Input(format!(
                "the model has {} actuator activation states, which the differentiable state (q, v) does not carry yet",
                self.model.na
            )));
        }
        for p in &self.params {
            p.validate(&self.model)?;
        }
        check("initial states (nworld × (nq + nv))", nworld * self.nx(), x0)?;
        check("controls (nworld × nsteps × nc)", nworld * nsteps * self.nc(), u)?;
        check("parameters (nworld × nθ)", nworld * self.np(), theta)
    }

    fn forward(
        &self,
        world: usize,
        x0: &[f64],
        u: &[f64],
        theta: &[f64],
        nsteps: usize,
        record: bool,
    ) -> Result<Forward, DiffError> {
        let t0 = Instant::now();
        let (nq, nv, nc) = (self.model.nq, self.model.nv, self.nc());
        let mut w = World::<f64>::new(self.model.clone(), self.mode.clone());
        // Fixed steps solve to convergence from v0: the derivative is the
        // converged map's, and finite differences through the rollout must
        // resolve it (Simulator::warm_start_fixed_steps).
        w.sim.solver_params = SolverParams::tight();
        w.sim.warm_start_fixed_steps = false;
        set_params(&mut w.sim, &self.params, theta.iter().copied());
        w.sim.set_state(&x0[..nq], &x0[nq..]);
        if record {
            w.tape = Some(Tape::new(nq, nv));
        }
        let mut trajectory = Vec::with_capacity((nsteps + 1) * (nq + nv));
        trajectory.extend_from_slice(x0);
        let mut bounds = Vec::with_capacity(nsteps);
        for k in 0..nsteps {
            set_controls(&mut w.sim, self.control, u[k * nc..(k + 1) * nc].iter().copied());
            let time = w.time();
            w.advance(self.dt).map_err(|source| DiffError::Step { world, interval: k, time, source })?;
            trajectory.extend_from_slice(&w.sim.data.q);
            trajectory.extend_from_slice(&w.sim.data.v);
            bounds.push(w.tape.as_ref().map_or(0, |t| t.len()));
        }
        Ok(Forward {
            trajectory,
            tape: w.tape.take().unwrap_or_default(),
            bounds,
            stats: w.stats,
            seconds: t0.elapsed().as_secs_f64(),
        })
    }

    /// Forward simulation only (`f64`, no tape): the trajectory
    /// ((nsteps + 1) × nx, x_0 as given) from initial state `x0` (nx),
    /// controls `u` (nsteps × nc) and parameters `theta` (nθ). This is the
    /// function whose derivatives [`linearize`](Self::linearize) computes;
    /// use it for finite differences.
    pub fn simulate(&self, x0: &[f64], u: &[f64], theta: &[f64], nsteps: usize) -> Result<Vec<f64>, DiffError> {
        self.validate(x0.len(), u.len(), theta.len(), 1, nsteps)?;
        Ok(self.forward(0, x0, u, theta, nsteps, false)?.trajectory)
    }

    fn setup(&self) -> Setup {
        Setup { control: self.control, params: self.params.clone(), cfd: self.cfd, friction_load: self.friction_load }
    }

    /// One world's forward rollout recorded for the reverse pass (see
    /// [`simulate`](Self::simulate) for the arguments): the trajectory is
    /// available at once, vector–Jacobian products on demand
    /// ([`Recording::vjp`]).
    pub fn record(&self, x0: &[f64], u: &[f64], theta: &[f64], nsteps: usize) -> Result<Recording, DiffError> {
        Ok(self.record_batch(x0, u, theta, 1, nsteps)?.pop().expect("one world"))
    }

    /// [`record`](Self::record) for `nworld` worlds (layouts of
    /// [`linearize_batch`](Self::linearize_batch)), in parallel (rayon).
    pub fn record_batch(
        &self,
        x0: &[f64],
        u: &[f64],
        theta: &[f64],
        nworld: usize,
        nsteps: usize,
    ) -> Result<Vec<Recording>, DiffError> {
        self.validate(x0.len(), u.len(), theta.len(), nworld, nsteps)?;
        (0..nworld)
            .into_par_iter()
            .map(|w| {
                let (x, uw, th) = self.world_inputs(x0, u, theta, w, nsteps);
                Ok(Recording {
                    rollout: self.clone(),
                    world: w,
                    nsteps,
                    x0: x.to_vec(),
                    u: uw.to_vec(),
                    theta: th.to_vec(),
                    forward: self.forward(w, x, uw, th, nsteps, true)?,
                })
            })
            .collect()
    }

    /// Vector–Jacobian products of recorded rollouts in parallel (rayon
    /// over worlds): `g` holds each world's trajectory cotangent
    /// (nworld × (nsteps + 1) × nx, row-major).
    pub fn vjp_batch(recordings: &[Recording], g: &[f64]) -> Result<Vec<Cotangents>, DiffError> {
        let Some(first) = recordings.first() else { return Ok(vec![]) };
        let per = (first.nsteps + 1) * first.rollout.nx();
        if g.len() != recordings.len() * per {
            return Err(DiffError::Input(format!(
                "trajectory cotangents: expected nworld × (nsteps + 1) × nx = {} values, got {}",
                recordings.len() * per,
                g.len()
            )));
        }
        recordings
            .par_iter()
            .enumerate()
            .map(|(w, rec)| {
                if (rec.nsteps + 1) * rec.rollout.nx() != per {
                    return Err(DiffError::Input(format!("world {w}: recording shape differs from world 0")));
                }
                rec.vjp(&g[w * per..(w + 1) * per])
            })
            .collect()
    }

    /// One world's forward rollout and the reverse pass: (trajectory,
    /// ∂L/∂x_0, ∂L/∂u, ∂L/∂θ) for `g` = ∂L/∂trajectory. Equals
    /// [`linearize`](Self::linearize) followed by [`Linearization::vjp`]
    /// up to rounding, at a fraction of the cost.
    pub fn vjp(
        &self,
        x0: &[f64],
        u: &[f64],
        theta: &[f64],
        nsteps: usize,
        g: &[f64],
    ) -> Result<(Vec<f64>, Cotangents), DiffError> {
        let rec = self.record(x0, u, theta, nsteps)?;
        let c = rec.vjp(g)?;
        Ok((rec.forward.trajectory, c))
    }

    /// One world's rollout with interval Jacobians (see [`simulate`](Self::simulate) for the arguments).
    pub fn linearize(&self, x0: &[f64], u: &[f64], theta: &[f64], nsteps: usize) -> Result<Linearization, DiffError> {
        Ok(self.linearize_batch(x0, u, theta, 1, nsteps)?.pop().expect("one world"))
    }

    /// Rollouts of `nworld` worlds with interval Jacobians: `x0` (nworld ×
    /// nx), `u` (nworld × nsteps × nc), `theta` (nworld × nθ), all
    /// row-major. Worlds and intervals are processed in parallel (rayon).
    pub fn linearize_batch(
        &self,
        x0: &[f64],
        u: &[f64],
        theta: &[f64],
        nworld: usize,
        nsteps: usize,
    ) -> Result<Vec<Linearization>, DiffError> {
        self.validate(x0.len(), u.len(), theta.len(), nworld, nsteps)?;
        let inputs = |w: usize| self.world_inputs(x0, u, theta, w, nsteps);
        let forwards: Vec<Forward> = (0..nworld)
            .into_par_iter()
            .map(|w| {
                let (x, uw, th) = inputs(w);
                self.forward(w, x, uw, th, nsteps, true)
            })
            .collect::<Result<_, _>>()?;
        let runs: Vec<Run<'_>> = forwards
            .iter()
            .enumerate()
            .map(|(w, forward)| {
                let (x0, u, theta) = inputs(w);
                Run { forward, x0, u, theta }
            })
            .collect();
        self.jacobians(&runs, nsteps)
    }

    /// The interval Jacobians of recorded rollouts, from their tapes (no
    /// forward run): equal to [`linearize_batch`](Self::linearize_batch) of
    /// the same inputs, bit for bit. For callers that record first
    /// ([`record_batch`](Self::record_batch)) for cheap vector–Jacobian
    /// products and form the Jacobians only when asked. Worlds and
    /// intervals are processed in parallel (rayon). The recordings must
    /// come from one rollout (the same model, integrator, interval, controls,
    /// parameters, contacts from distance and friction load) and hold the
    /// same number of intervals; a recording that differs is an input error
    /// naming its world.
    pub fn linearize_recordings(recordings: &[Recording]) -> Result<Vec<Linearization>, DiffError> {
        let Some(first) = recordings.first() else { return Ok(vec![]) };
        let r = &first.rollout;
        for (w, rec) in recordings.iter().enumerate() {
            if !rec.rollout.same_map(r) || rec.nsteps != first.nsteps {
                return Err(DiffError::Input(format!(
                    "world {w}: recorded by a different rollout or over a different number of intervals than world 0"
                )));
            }
        }
        let runs: Vec<Run<'_>> = recordings
            .iter()
            .map(|rec| Run { forward: &rec.forward, x0: &rec.x0, u: &rec.u, theta: &rec.theta })
            .collect();
        r.jacobians(&runs, first.nsteps)
    }

    /// World `w`'s initial state, controls and parameters in the batch
    /// layouts of [`linearize_batch`](Self::linearize_batch).
    fn world_inputs<'a>(
        &self,
        x0: &'a [f64],
        u: &'a [f64],
        theta: &'a [f64],
        w: usize,
        nsteps: usize,
    ) -> (&'a [f64], &'a [f64], &'a [f64]) {
        let (nx, nc, np) = (self.nx(), self.nc(), self.np());
        (&x0[w * nx..(w + 1) * nx], &u[w * nsteps * nc..(w + 1) * nsteps * nc], &theta[w * np..(w + 1) * np])
    }

    /// Whether `other` simulates and differentiates the same map.
    fn same_map(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.model, &other.model)
            && self.mode == other.mode
            && self.dt == other.dt
            && self.control == other.control
            && self.params == other.params
            && self.cfd == other.cfd
            && self.friction_load == other.friction_load
    }

    /// The Jacobian pass over recorded forward runs, one task per (world,
    /// interval); each chains its own solves.
    fn jacobians(&self, runs: &[Run<'_>], nsteps: usize) -> Result<Vec<Linearization>, DiffError> {
        let (nx, nc, np) = (self.nx(), self.nc(), self.np());
        let nz = nx + nc + np;
        let nworld = runs.len();
        let setup = self.setup();
        let t0 = Instant::now();
        let tasks: Vec<(usize, usize)> = (0..nworld).flat_map(|w| (0..nsteps).map(move |k| (w, k))).collect();
        let results: Vec<(Vec<f64>, usize)> = tasks
            .par_iter()
            .map_init(
                || Linearizer::<LANES>::new(self.model.clone(), nc, np),
                |lin, &(w, k)| {
                    let run = &runs[w];
                    let f = run.forward;
                    let start = if k == 0 { 0 } else { f.bounds[k - 1] };
                    let site = SolveSite { world: w, interval: k, solve: 0, time: k as f64 * self.dt };
                    let uk = &run.u[k * nc..(k + 1) * nc];
                    let x_raw = if k == 0 { Some(run.x0) } else { None };
                    let mut out = vec![0.0; nx * nz];
                    let before = lin.phantom_pairs;
                    lin.interval(&setup, &f.tape, start..f.bounds[k], uk, run.theta, x_raw, site, &mut out)?;
                    Ok((out, lin.phantom_pairs - before))
                },
            )
            .collect::<Result<_, DiffError>>()?;
        let jac_seconds = t0.elapsed().as_secs_f64();
        let mut out = Vec::with_capacity(nworld);
        let mut results = results.into_iter();
        for run in runs {
            let f = run.forward;
            let mut lin = Linearization {
                nsteps,
                nx,
                nc,
                np,
                d_x: Vec::with_capacity(nsteps * nx * nx),
                d_u: Vec::with_capacity(nsteps * nx * nc),
                d_theta: Vec::with_capacity(nsteps * nx * np),
                trajectory: f.trajectory.clone(),
                stats: RolloutStats {
                    solves: f.tape.len(),
                    forward_seconds: f.seconds,
                    jacobian_seconds: jac_seconds / nworld as f64,
                    phantom_pairs: 0,
                    world: f.stats,
                },
            };
            for _ in 0..nsteps {
                let (m, phantom) = results.next().expect("one result per task");
                lin.stats.phantom_pairs += phantom;
                for r in 0..nx {
                    let row = &m[r * nz..(r + 1) * nz];
                    lin.d_x.extend_from_slice(&row[..nx]);
                }
                for r in 0..nx {
                    lin.d_u.extend_from_slice(&m[r * nz + nx..r * nz + nx + nc]);
                }
                for r in 0..nx {
                    lin.d_theta.extend_from_slice(&m[r * nz + nx + nc..(r + 1) * nz]);
                }
            }
            out.push(lin);
        }
        Ok(out)
    }

    /// The differentiable rollout on burn tensors: initial states `x0`
    /// (nworld, nq + nv), controls (nworld, nsteps, nc) or `None` (zero),
    /// parameters (nworld, nθ) or `None` (nominal, not differentiated).
    /// Returns the trajectory (nworld, nsteps + 1, nq + nv), x_0 first,
    /// in `x0`'s dtype and device. Values are the `f64` simulation's
    /// (rounded to the dtype); gradients flow to every input through the
    /// interval Jacobians (see the [module docs](super)).
    pub fn rollout(
        &self,
        x0: Tensor<2>,
        controls: Option<Tensor<3>>,
        params: Option<Tensor<2>>,
        nsteps: usize,
    ) -> Result<Tensor<3>, DiffError> {
        Ok(self.rollout_with_stats(x0, controls, params, nsteps)?.1)
    }

    /// [`rollout`](Self::rollout), also returning each world's [`RolloutStats`].
    pub fn rollout_with_stats(
        &self,
        x0: Tensor<2>,
        controls: Option<Tensor<3>>,
        params: Option<Tensor<2>>,
        nsteps: usize,
    ) -> Result<(Vec<RolloutStats>, Tensor<3>), DiffError> {
        let (nx, nc, np) = (self.nx(), self.nc(), self.np());
        let [nworld, nx_in] = x0.dims();
        let shape_err = |what: &str, got: Vec<usize>, want: Vec<usize>| {
            DiffError::Input(format!("{what}: expected shape {want:?}, got {got:?}"))
        };
        if nx_in != nx {
            return Err(shape_err("initial states", vec![nworld, nx_in], vec![nworld, nx]));
        }
        if nworld == 0 {
            return Err(DiffError::Input("initial states: no worlds".into()));
        }
        let values = |t: &TensorData| t.iter::<f64>().collect::<Vec<f64>>();
        let xv = values(&x0.to_data());
        let uv = match &controls {
            Some(c) => {
                if c.dims() != [nworld, nsteps, nc] {
                    return Err(shape_err("controls", c.dims().to_vec(), vec![nworld, nsteps, nc]));
                }
                values(&c.to_data())
            }
            None => vec![0.0; nworld * nsteps * nc],
        };
        let pv = match &params {
            Some(p) => {
                if p.dims() != [nworld, np] {
                    return Err(shape_err("parameters", p.dims().to_vec(), vec![nworld, np]));
                }
                values(&p.to_data())
            }
            None => vec![1.0; nworld * np],
        };
        let lins = self.linearize_batch(&xv, &uv, &pv, nworld, nsteps)?;
        let stats = lins.iter().map(|l| l.stats).collect();
        Ok((stats, Self::surrogate(&lins, x0, controls, params)))
    }

    /// The straight-through surrogate graph (see the [module docs](super))
    /// of rollouts already computed: `lins[w]` must be the linearization of
    /// world w at the values of `x0` (nworld, nx), `controls` (nworld,
    /// nsteps, nc) and `params` (nworld, nθ), which is not checked. Returns
    /// the trajectory (nworld, nsteps + 1, nx) in `x0`'s dtype and device.
    /// For callers that run the worlds themselves, e.g. with a different
    /// control interval per world or to drop worlds that failed.
    ///
    /// # Panics
    /// If `lins` is empty or the linearizations disagree in shape.
    pub fn surrogate(
        lins: &[Linearization],
        x0: Tensor<2>,
        controls: Option<Tensor<3>>,
        params: Option<Tensor<2>>,
    ) -> Tensor<3> {
        let (nsteps, nx, nc, np) = (lins[0].nsteps, lins[0].nx, lins[0].nc, lins[0].np);
        assert!(lins.iter().all(|l| (l.nsteps, l.nx, l.nc, l.np) == (nsteps, nx, nc, np)), "linearization shapes");
        let nworld = lins.len();
        let device = x0.device();
        let opts = (&device, x0.dtype());
        // Per-interval constants, batched over worlds.
        let gather = |k: usize, len: usize, pick: &dyn Fn(&Linearization) -> &[f64]| -> Vec<f64> {
            let mut v = Vec::with_capacity(nworld * len);
            for l in lins {
                v.extend_from_slice(&pick(l)[k * len..(k + 1) * len]);
            }
            v
        };
        let tensor3 =
            |v: Vec<f64>, a: usize, b: usize| Tensor::<3>::from_data(TensorData::new(v, [nworld, a, b]), opts);
        let dparam = params.filter(|_| np > 0).map(|p| p.clone() - p.detach());
        let controls = controls.filter(|_| nc > 0);
        let mut x = x0.clone();
        let mut outs = Vec::with_capacity(nsteps + 1);
        outs.push(x0);
        for k in 0..nsteps {
            let xbar = gather(k + 1, nx, &|l| &l.trajectory);
            let mut next = Tensor::<2>::from_data(TensorData::new(xbar, [nworld, nx]), opts);
            let d_x = tensor3(gather(k, nx * nx, &|l| &l.d_x), nx, nx);
            next = next + bmv(d_x, x.clone() - x.detach());
            if let Some(c) = &controls {
                let uk: Tensor<2> = c.clone().slice([0..nworld, k..k + 1, 0..nc]).reshape([nworld, nc]);
                let d_u = tensor3(gather(k, nx * nc, &|l| &l.d_u), nx, nc);
                next = next + bmv(d_u, uk.clone() - uk.detach());
            }
            if let Some(dp) = &dparam {
                let d_t = tensor3(gather(k, nx * np, &|l| &l.d_theta), nx, np);
                next = next + bmv(d_t, dp.clone());
            }
            outs.push(next.clone());
            x = next;
        }
        Tensor::stack(outs, 1)
    }
}

/// Batched matrix–vector product: a (W, n, m) · b (W, m) → (W, n).
fn bmv(a: Tensor<3>, b: Tensor<2>) -> Tensor<2> {
    a.matmul(b.unsqueeze_dim::<3>(2)).squeeze_dim::<2>(2)
}
