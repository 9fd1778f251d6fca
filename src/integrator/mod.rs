//! Time stepping for one world: the fixed-step Lagged ICF scheme
//! ([`Simulator::step`]) and, on top of it, CENIC error control.
//!
//! One step runs the stages in order: kinematics → velocities → mass
//! matrix, bias and passive forces → collision → ICF builder → ICF solve →
//! position update q1 = q0 ⊕ h·N(q0)·v1 (symplectic Euler).
//!
//! Baselines from the seed papers, for work–precision comparisons on the
//! same models (guide: accuracy, §Fixed steps and the other integrators,
//! `docs/src/accuracy.md`), share the model, kinematics, collision and
//! contact parameters and differ only in the time discretisation of one
//! compliant contact ODE ([`compliant`]): [`tamsi`] (TAMSI, fixed step),
//! [`exponential`] (the exponential integrator, fixed step), [`rk`]
//! (adaptive Dormand–Prince 5(4)) and [`implicit_euler`] (error-controlled
//! implicit Euler), each a [`Mode`] variant that [`World`] (and so the CPU
//! batch) runs. They are CPU-only and have no gradient path.

mod cenic;
pub mod compliant;
pub mod exponential;
pub mod implicit_euler;
pub mod linalg;
pub mod mujoco;
pub mod rk;
pub mod tamsi;
mod tape;

pub use cenic::{
    CenicParams, GRADIENT_VELOCITY_TIME_SCALE, Mode, STICK_BAND, StepRecord, TrialRecord, World, WorldStats,
};
pub use exponential::ExponentialParams;
pub use implicit_euler::ImplicitEulerParams;
pub use mujoco::MuJoCoStep;
pub use rk::RkParams;
pub use tamsi::TamsiParams;
pub use tape::{ContactKey, Tape, TapeSolve};

use crate::collision::{Contacts, collide};
use crate::dynamics::{self, Data};
use crate::icf::{Actuation, IcfBuilder, IcfProblem, IcfSolver, MaterialScale, SolveError, SolveStats, SolverParams};
use crate::math::Real;
use crate::model::Model;
use std::sync::Arc;

/// Why a step failed. The world's state is left at the start of the step.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StepError {
    /// The contact solve failed.
    #[error("{0}")]
    Solve(#[from] SolveError),
    /// The state (q or v) holds NaN or infinite values.
    #[error("non-finite state ({0})")]
    NonFinite(&'static str),
    /// Error control could not meet the accuracy even at the minimum step
    /// (and [`CenicParams::accept_accuracy_misses`] is off).
    #[error(
        "accuracy {accuracy:e} not met at the minimum step {h:e} s: error {error:.3e} in the {} of dof {dof}",
        if *velocity { "velocity (times τ_v)" } else { "position" }
    )]
    AccuracyNotMet {
        /// The weighted error estimate of the step (m or rad).
        error: f64,
        /// The requested accuracy (m or rad).
        accuracy: f64,
        /// The step (s).
        h: f64,
        /// The velocity coordinate whose error is largest.
        dof: usize,
        /// Whether the velocity term of the error norm (τ_v·Δv) drove it.
        velocity: bool,
    },
    /// A baseline integrator was asked to step a model with MuJoCo's
    /// constraint semantics, which only the convex step (fixed steps or
    /// CENIC) implements.
    #[error(
        "the {0} baseline integrates cenic's physical contact and limit laws, but this model has MuJoCo's \
         semantics (use fixed steps or error control, or load the model with <option semantics=\"physical\">)"
    )]
    MuJoCoSemantics(&'static str),
    /// [`Mode::MuJoCo`] was asked to step a model with cenic's physical
    /// semantics: MuJoCo's integrators step MuJoCo's constraints.
    #[error(
        "MuJoCo's integrators (Mode::MuJoCo) step MuJoCo's soft constraints, but this model has cenic's physical \
         semantics (use fixed steps or error control, or load it with <option semantics=\"mujoco\">)"
    )]
    PhysicalSemantics,
}

impl StepError {
    /// The message with the model's names added (the joint of a dof).
    pub fn describe(&self, model: &Model) -> String {
        match self {
            StepError::AccuracyNotMet { dof, .. } => match model.dofs.get(*dof) {
                Some(d) => format!("{self} (joint '{}')", model.joints[d.joint].name),
                None => self.to_string(),
            },
            _ => self.to_string(),
        }
    }
}

/// One world simulated on the CPU. Owns all per-world storage, so stepping
/// does not allocate (except when an unbounded contact list grows).
#[derive(Clone, Debug)]
pub struct Simulator<T: Real> {
    /// The model.
    pub model: Arc<Model>,
    /// State (q, v) and the multibody quantities of the last geometry pass.
    pub data: Data<T>,
    /// Contacts of the last geometry pass.
    pub contacts: Contacts<T>,
    /// The ICF problem of the last geometry pass.
    pub problem: IcfProblem<T>,
    /// Controls, one per actuator (motor input or servo target).
    pub ctrl: Vec<T>,
    /// Servo target velocities, one per actuator (rad/s or m/s).
    pub target_velocity: Vec<T>,
    /// External generalized forces (nv; N or N·m), held constant over steps.
    pub applied: Vec<T>,
    /// Per-world contact material multipliers.
    pub materials: MaterialScale<T>,
    /// Contact-solve settings (fixed steps scale the tolerance with
    /// [`SolverParams::for_fixed_step`]; CENIC derives its own).
    pub solver_params: SolverParams,
    /// Simulation time (s).
    pub time: f64,
    /// Statistics of the last solve.
    pub last_solve: SolveStats,
    /// Generalized acceleration of the last accepted step, (v1 − v0)/h (nv;
    /// for accelerometers and the warm start); zero after
    /// [`set_state`](Self::set_state) and [`restart`](Self::restart).
    pub qacc: Vec<T>,
    /// Whether the next step's solve starts from v0 + h·qacc rather than v0:
    /// set by each fixed step and each CENIC full step, true where that
    /// extrapolation predicted the step's solution better than v0 did
    /// (`warm_start`, `extrapolation_wins`).
    pub(crate) warm_qacc: bool,
    /// Whether fixed steps may start at v0 + h·qacc (true by default). The
    /// gradient path (`diff::DiffRollout`) turns it off: finite differences
    /// through its rollouts must see a smooth map, and the choice between
    /// v0 and the extrapolation is discrete, so where it flips between two
    /// nearby inputs the iterate moves within the solve's tolerance.
    pub warm_start_fixed_steps: bool,
    /// Geometry passes ([`compute_geometry`](Self::compute_geometry) calls) since creation.
    pub geometry_passes: u64,
    /// Scratch: contact forces for touch sensors.
    contact_forces: Vec<dynamics::ContactForce<T>>,
    builder: IcfBuilder,
    solver: IcfSolver<T>,
    v_next: Vec<T>,
}

impl<T: Real> Simulator<T> {
    /// A world at the model's reference configuration (q = qpos0, v = 0).
    pub fn new(model: Arc<Model>) -> Self {
        let nv = model.nv;
        Self {
            data: Data::new(&model),
            contacts: Contacts::new(&model),
            problem: IcfProblem::new(nv),
            ctrl: vec![T::zero(); model.nu()],
            target_velocity: vec![T::zero(); model.nu()],
            applied: vec![T::zero(); nv],
            materials: MaterialScale::default(),
            solver_params: SolverParams::default(),
            time: 0.0,
            last_solve: SolveStats::default(),
            qacc: vec![T::zero(); nv],
            warm_qacc: false,
            warm_start_fixed_steps: true,
            geometry_passes: 0,
            contact_forces: Vec::new(),
            builder: IcfBuilder::new(&model),
            solver: IcfSolver::new(nv),
            v_next: vec![T::zero(); nv],
            model,
        }
    }

    /// Sets q, v (f64 slices of length nq, nv); time, controls and the
    /// contact capacity are kept. The state has no last step: the next
    /// solve starts from v (no warm start from another state's
    /// acceleration, no kept Hessian factor), so a step from a set state
    /// does not depend on what the world did before; until then the last
    /// step's acceleration, constraint forces and touch sensors read zero.
    /// The GPU batch's `set_state` does the same.
    pub fn set_state(&mut self, q: &[f64], v: &[f64]) {
        self.data.set_state(q, v);
        dynamics::normalize_quaternions(&self.model, &mut self.data.q);
        self.forget_last_step();
    }

    /// Forgets the last step: its acceleration, the warm-start choice, the
    /// solve's step (so its forces read zero) and a kept factorization.
    fn forget_last_step(&mut self) {
        self.qacc.iter_mut().for_each(|a| *a = T::zero());
        self.warm_qacc = false;
        self.problem.h = T::zero();
        self.solver.invalidate_factor();
    }

    /// Back to the state of a new simulator (q = qpos0, v = 0, zero
    /// controls, target velocities and applied forces, default parameters,
    /// time 0, no constraints) without allocating: the storage is kept.
    pub fn restart(&mut self) {
        let fresh = |x: &mut Vec<T>| x.iter_mut().for_each(|x| *x = T::zero());
        for (q, q0) in self.data.q.iter_mut().zip(&self.model.qpos0) {
            *q = T::c(*q0);
        }
        fresh(&mut self.data.v);
        fresh(&mut self.data.act);
        self.forget_last_step();
        self.data.mass_scale = T::one();
        self.data.geom_size_scale.iter_mut().for_each(|s| *s = T::one());
        self.data.geom_offset_scale.iter_mut().for_each(|s| *s = T::one());
        fresh(&mut self.ctrl);
        fresh(&mut self.target_velocity);
        fresh(&mut self.applied);
        self.materials = MaterialScale::default();
        self.time = 0.0;
        self.last_solve = SolveStats::default();
        self.contacts.list.clear();
        self.contacts.overflow = 0;
        self.problem.clear_constraints();
    }

    /// The constraint forces of the last solve at its solution (the
    /// current v after a step): into `body_wrench` (nbody × 6) the contact
    /// wrench on each body as [torque about the world origin (N·m), force
    /// (N)] (world frame; the world body's row stays zero), and into `qfrc`
    /// (nv) the generalized force of contacts and joint limits (N or N·m).
    /// Both are the solve's impulses divided by its step. Zero before any
    /// step and after [`restart`](Self::restart).
    pub fn constraint_forces(&self, body_wrench: &mut [f64], qfrc: &mut [f64]) {
        body_wrench.fill(0.0);
        qfrc.fill(0.0);
        let p = &self.problem;
        let h = p.h.f64();
        if h.is_nan() || h <= 0.0 {
            return;
        }
        let v = &self.data.v;
        for (c, k) in p.contacts.iter().zip(&self.contacts.list) {
            let (_, impulse, _) = crate::icf::cost::contact_terms(c, p.h, p.contact_velocity(c, v));
            // Generalized force Jᵀγ/h (J maps v to B's velocity relative to A).
            for e in c.jac_start..c.jac_start + c.jac_len {
                qfrc[p.jac_dof[e]] += p.jac_col[e].dot(impulse).f64() / h;
            }
            let f = [impulse.x.f64() / h, impulse.y.f64() / h, impulse.z.f64() / h];
            let x = [k.pos.x.f64(), k.pos.y.f64(), k.pos.z.f64()];
            let tau = [x[1] * f[2] - x[2] * f[1], x[2] * f[0] - x[0] * f[2], x[0] * f[1] - x[1] * f[0]];
            for (body, sign) in [(k.body[1], 1.0), (k.body[0], -1.0)] {
                if body == 0 {
                    continue;
                }
                let row = &mut body_wrench[body * 6..body * 6 + 6];
                for i in 0..3 {
                    row[i] += sign * tau[i];
                    row[3 + i] += sign * f[i];
                }
            }
        }
        for l in &p.limits {
            let (_, impulse, _) = crate::icf::cost::limit_terms(l, p.h, v[l.dof]);
            qfrc[l.dof] += (l.sign * impulse).f64() / h;
        }
    }

    /// Starts from keyframe `key` (name or index): q, v, activations, controls and time.
    pub fn reset_to_keyframe(&mut self, key: &str) -> Option<()> {
        let k = self.model.keyframe(key)?.clone();
        self.set_state(&k.qpos, &k.qvel);
        for (c, x) in self.ctrl.iter_mut().zip(&k.ctrl) {
            *c = T::c(*x);
        }
        for (a, x) in self.data.act.iter_mut().zip(&k.act) {
            *a = T::c(*x);
        }
        self.time = k.time;
        Some(())
    }

    /// Evaluates everything that depends on the configuration at the
    /// current (q, v): kinematics, velocities, M, bias and passive forces,
    /// contacts, and the h-independent part of the ICF problem. Returns the
    /// number of contacts dropped for lack of capacity (for the caller's
    /// [`WorldStats::contact_overflow`]).
    pub fn compute_geometry(&mut self) -> u64 {
        let m = &*self.model;
        // What depends on q alone, then the rest (the Jacobian passes rerun only the rest).
        dynamics::kinematics(m, &mut self.data);
        dynamics::mass_matrix(m, &mut self.data);
        self.compute_geometry_from_dynamics(true)
    }

    /// [`compute_geometry`](Self::compute_geometry) on the kinematics and
    /// mass matrix already in `data`, and with `velocities` false also on
    /// the body velocities and bias forces there (the reverse pass computes
    /// them itself, as leaves of its tape).
    pub(crate) fn compute_geometry_from_dynamics(&mut self, velocities: bool) -> u64 {
        self.geometry_passes += 1;
        let m = &*self.model;
        dynamics::transmissions(m, &mut self.data);
        collide(m, &self.data, &mut self.contacts);
        if velocities {
            self.compute_velocity_terms();
        } else {
            self.compute_forces_and_problem();
        }
        self.contacts.overflow as u64
    }

    /// The second half of [`compute_geometry`](Self::compute_geometry):
    /// what depends on v and the controls — body velocities, bias and
    /// passive forces, the ICF problem — on the kinematics, mass matrix,
    /// transmissions and contacts already computed. Alone, it equals
    /// `compute_geometry` when q, the model and the parameters are
    /// unchanged since (the Jacobian passes that seed only v and u use it:
    /// the geometry is most of a pass's cost).
    pub fn compute_velocity_terms(&mut self) {
        let m = &*self.model;
        dynamics::velocities(m, &mut self.data);
        dynamics::bias_forces(m, &mut self.data);
        self.compute_forces_and_problem();
    }

    /// Passive forces and the ICF problem, on everything else computed.
    fn compute_forces_and_problem(&mut self) {
        let m = &*self.model;
        dynamics::passive_forces(m, &mut self.data);
        let act = Actuation { ctrl: &self.ctrl, target_velocity: &self.target_velocity, applied: &self.applied };
        self.builder.build(m, &self.data, &self.contacts.list, act, &self.materials, &mut self.problem);
    }

    /// Solves the ICF problem of the last [`compute_geometry`](Self::compute_geometry)
    /// for step `h` (s); `v` holds the warm start and receives v1.
    pub fn solve_velocity(&mut self, h: T, v: &mut [T], params: &SolverParams) -> Result<SolveStats, SolveError> {
        self.problem.set_time_step(h);
        let s = self.solver.solve(&self.problem, v, params)?;
        self.last_solve = s;
        Ok(s)
    }

    /// Checks that q, v and the activations are finite.
    pub fn check_finite(&self) -> Result<(), StepError> {
        if !self.data.q.iter().all(|x| x.is_finite()) {
            return Err(StepError::NonFinite("q"));
        }
        if !self.data.v.iter().all(|x| x.is_finite()) {
            return Err(StepError::NonFinite("v"));
        }
        if !self.data.act.iter().all(|x| x.is_finite()) {
            return Err(StepError::NonFinite("act"));
        }
        Ok(())
    }

    /// One fixed step of Lagged ICF with step `h` (s): v1 from the convex
    /// solve warm-started at v0, or at v0 + h·qacc while that extrapolation
    /// predicted the last step's solution better than v0 did, then
    /// q1 = q0 ⊕ h·v1.
    pub fn step(&mut self, h: f64) -> Result<SolveStats, StepError> {
        let params = self.solver_params.for_fixed_step(h);
        self.step_with(h, &params)
    }

    /// [`step`](Self::step) with explicit solver settings.
    pub fn step_with(&mut self, h: f64, params: &SolverParams) -> Result<SolveStats, StepError> {
        self.check_finite()?;
        self.compute_geometry();
        let mut v = std::mem::take(&mut self.v_next);
        let ht = T::c(h);
        warm_start(self.warm_qacc && self.warm_start_fixed_steps, ht, &self.data.v, &self.qacc, &mut v);
        let r = self.solve_velocity(ht, &mut v, params);
        let out = match r {
            Ok(s) => {
                self.warm_qacc = extrapolation_wins(ht, &self.data.v, &self.qacc, &v);
                dynamics::integrate_q(&self.model, &mut self.data.q, &v, ht);
                dynamics::integrate_act(&self.model, &mut self.data.act, &self.ctrl, ht);
                self.set_qacc(&v, ht);
                self.data.v.copy_from_slice(&v);
                self.time += h;
                Ok(s)
            }
            Err(e) => Err(StepError::Solve(e)),
        };
        self.v_next = v;
        out
    }

    /// Records the acceleration (v1 − v) / h of a step from the current
    /// velocity to `v1`.
    pub(crate) fn set_qacc(&mut self, v1: &[T], h: T) {
        for ((a, x1), x0) in self.qacc.iter_mut().zip(v1).zip(&self.data.v) {
            *a = (*x1 - *x0) / h;
        }
    }

    /// Evaluates the sensors at the current state into
    /// `data.sensordata`: positions and velocities exactly; accelerometers
    /// from the last step's velocity change ([`Simulator::qacc`]); touch
    /// sensors from the contact forces of the last contact solve at the
    /// current velocity. Runs the kinematics stages (no allocation once the
    /// contact scratch has grown).
    pub fn compute_sensors(&mut self) {
        let m = &*self.model;
        dynamics::kinematics(m, &mut self.data);
        dynamics::velocities(m, &mut self.data);
        dynamics::transmissions(m, &mut self.data);
        self.contact_forces.clear();
        let h = self.problem.h;
        if h > T::zero() {
            for (c, con) in self.contacts.list.iter().zip(&self.problem.contacts) {
                let vc = self.problem.contact_velocity(con, &self.data.v);
                let (_, impulse, _) = crate::icf::cost::contact_terms(con, h, vc);
                self.contact_forces.push(dynamics::ContactForce {
                    body: c.body,
                    pos: c.pos,
                    normal: impulse.dot(con.normal) / h,
                });
            }
        }
        let input = dynamics::SensorInput {
            ctrl: &self.ctrl,
            target_velocity: &self.target_velocity,
            qacc: &self.qacc,
            contacts: &self.contact_forces,
        };
        dynamics::sensors(m, &mut self.data, input);
    }

    /// Read access to the solver (e.g. its gradient after a solve).
    pub fn solver(&self) -> &IcfSolver<T> {
        &self.solver
    }
}

/// The warm start of a step of `h` (s) from `v0` into `v`: v0 + h·qacc
/// when `extrapolate`, else v0. Fixed steps ([`Simulator::step_with`]) and
/// CENIC's full step (`World::try_step`) use it; the GPU's twin is
/// `part_choose` (kernels/cenic.wgsl).
pub(crate) fn warm_start<T: Real>(extrapolate: bool, h: T, v0: &[T], qacc: &[T], v: &mut [T]) {
    for ((v, v0), a) in v.iter_mut().zip(v0).zip(qacc) {
        *v = if extrapolate { *v0 + h * *a } else { *v0 };
    }
}

/// Whether v0 + h·qacc lies nearer to a step's solution `v1` than v0 does
/// (Euclidean): the next step is warm-started by extrapolation only while
/// it predicted the last one better. After a contact impulse that does not
/// recur (a pile's impacts) v0 is the better guess; in smooth motion and
/// sustained contact the extrapolation is (BENCHMARKS.md, "Warm start of
/// the full step" and "Warm start of the fixed step"). The GPU's twin of
/// the same name is in kernels/cenic.wgsl.
pub(crate) fn extrapolation_wins<T: Real>(h: T, v0: &[T], qacc: &[T], v1: &[T]) -> bool {
    let (mut miss_extrapolated, mut miss_v0) = (T::zero(), T::zero());
    for ((v1, v0), a) in v1.iter().zip(v0).zip(qacc) {
        let (e, d) = (*v1 - (*v0 + h * *a), *v1 - *v0);
        miss_extrapolated += e * e;
        miss_v0 += d * d;
    }
    miss_extrapolated < miss_v0
}

/// Workspaces of the baseline integrators of one world, created on first use.
#[derive(Clone, Debug)]
pub(crate) struct Baselines<T> {
    rk: Option<Box<rk::DormandPrince<T>>>,
    tamsi: Option<Box<tamsi::Tamsi<T>>>,
    exponential: Option<Box<exponential::Exponential<T>>>,
    implicit_euler: Option<Box<implicit_euler::ImplicitEuler<T>>>,
    mujoco: Option<Box<mujoco::MuJoCoIntegrator<T>>>,
}

impl<T> Default for Baselines<T> {
    fn default() -> Self {
        Self { rk: None, tamsi: None, exponential: None, implicit_euler: None, mujoco: None }
    }
}

impl<T: Real> Baselines<T> {
    /// Start of an `advance`: the state or the controls may have changed,
    /// so Runge–Kutta must not reuse its last stage.
    pub(crate) fn new_interval(&mut self) {
        if let Some(rk) = &mut self.rk {
            rk.invalidate();
        }
    }

    /// One accepted step of a baseline `mode` towards an interval end
    /// `remaining` seconds away; returns (h, error ratio; 0 for fixed steps).
    pub(crate) fn step(
        &mut self,
        sim: &mut Simulator<T>,
        mode: &Mode,
        h_next: &mut f64,
        remaining: f64,
        stats: &mut WorldStats,
    ) -> Result<(f64, f64), StepError> {
        let (nq, nv, na) = (sim.model.nq, sim.model.nv, sim.model.na);
        if let Mode::MuJoCo(p) = mode {
            let w = self.mujoco.get_or_insert_with(|| Box::new(mujoco::MuJoCoIntegrator::new(nq, nv, na)));
            return Ok((w.step(sim, p, remaining, stats)?, 0.0));
        }
        if sim.model.options.semantics == crate::model::Semantics::MuJoCo {
            return Err(StepError::MuJoCoSemantics(mode.name()));
        }
        match mode {
            Mode::Tamsi(p) => {
                let h = p.dt.min(remaining);
                let w = self.tamsi.get_or_insert_with(|| Box::new(tamsi::Tamsi::new(nv)));
                w.step(sim, p, h, stats)?;
                Ok((h, 0.0))
            }
            Mode::Exponential(p) => {
                let h = p.dt.min(remaining);
                let w = self.exponential.get_or_insert_with(|| Box::new(exponential::Exponential::new(nv)));
                w.step(sim, p, h, stats)?;
                Ok((h, 0.0))
            }
            Mode::RungeKutta(p) => {
                let w = self.rk.get_or_insert_with(|| Box::new(rk::DormandPrince::new(nq, nv, na)));
                w.step(sim, p, h_next, remaining, stats)
            }
            Mode::ImplicitEuler(p) => {
                let w =
                    self.implicit_euler.get_or_insert_with(|| Box::new(implicit_euler::ImplicitEuler::new(nq, nv, na)));
                w.step(sim, p, h_next, remaining, stats)
            }
            Mode::Fixed { .. } | Mode::ErrorControlled(_) => unreachable!("Lagged ICF modes step in World"),
            Mode::MuJoCo(_) => unreachable!("stepped above"),
        }
    }
}
