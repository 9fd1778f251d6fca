//! Gradients through contact: differentiable rollouts for [burn], with an
//! implicit-function-theorem adjoint of every ICF solve and contacts from
//! distance (guide: design, §Gradients, `docs/src/design.md`).
//!
//! # Design
//!
//! **Forward.** A rollout is the ordinary CPU simulator in `f64`
//! ([`crate::integrator::World::advance`], fixed-step or CENIC) over
//! `nsteps` control intervals of `dt` seconds, with a [`Tape`] recording the
//! ICF solves behind every accepted state. Nothing else changes: the
//! trajectory is bit-identical to a plain run.
//!
//! **Step Jacobians (IFT).** Each solve's v1 satisfies R(v1; q0, v0, u, θ)
//! = ∇ℓ = 0, so dv1 = −H⁻¹ ∂R/∂(q0, v0, u, θ) with H = ∂R/∂v1 at v1
//! (factored once per solve). ∂R/∂(·) is exact: the very CPU code that ran
//! forward — kinematics, velocities, mass matrix, bias and passive forces,
//! collision, [`crate::icf::IcfBuilder::build`],
//! [`crate::icf::IcfProblem::set_time_step`] and [`crate::icf::cost::evaluate`]
//! — runs again at the recorded state in forward-mode [`Dual`] numbers,
//! seeding a few inputs per pass. Dual values are computed with the same
//! `f64` operations as the forward pass, so every branch (contact set,
//! manifold features, clamps) is the same; the contact list is checked
//! against the recorded one and a mismatch is an error naming the world,
//! interval and solve. q1 = q0 ⊕ h·v1 is differentiated the same way. Step
//! sizes are constants (discretize-then-optimize); for CENIC the two
//! accepted half steps of each accepted step are chained (the full step
//! only estimates the error). Chaining the solves of a control interval
//! gives dense interval Jacobians D_x = ∂x_{k+1}/∂x_k, D_u, D_θ.
//!
//! **Reverse pass (vector–Jacobian products).** Callers that need only
//! the gradient of a scalar loss — given g = ∂L/∂trajectory — use
//! [`DiffRollout::record`] and [`Recording::vjp`] (or [`DiffRollout::vjp`],
//! [`DiffRollout::vjp_batch`] over worlds in parallel) instead of the
//! dense Jacobians. Solves are visited in reverse order with the running
//! cotangent (q̄1, v̄1) of the solve's end state: q1 = q0 ⊕ h·v1 is
//! reversed (q̄0 = (∂q1/∂q0)ᵀ q̄1, v̄1 += (∂q1/∂v1)ᵀ q̄1), then
//! λ = H⁻ᵀ v̄1 with the factorization the dense path uses (Cholesky, or
//! LU with a transposed solve for [`FrictionLoad::Implicit`]'s coupled H),
//! and z̄ += −λᵀ ∂R/∂z for z = (q0, v0, u, θ). That product is one reverse
//! sweep: the same generic CPU pipeline runs once at the recorded state in
//! [`Rev`] numbers (value + node on a thread-local tape, values
//! bit-identical to `f64` as with [`Dual`]) with z as leaves, recording
//! R = ∇ℓ(v1); H's values come from the same run with recording paused,
//! the contacts are checked against the recorded ones, and the implicit
//! friction load's tangents and contacts from distance enter R exactly as
//! in the dense path. Cotangents chain across solves and intervals
//! (adding g at each interval end) and through the first interval's
//! quaternion normalisation. Kinematics and the rigid-body stages after it
//! (velocities, mass matrix, bias forces) are not recorded: they run in
//! `f64`, enter the tape as leaves, and hand-written reverse rules carry
//! their adjoints back (`kinematics_adjoint`, `dynamics_adjoint`). Per solve it costs one recorded pipeline
//! evaluation and one O(nv³) factorization instead of ⌈nz/LANES⌉ dual
//! passes and nz triangular solves, and no nx × nz matrix is formed; the
//! forward keeps only the solve tape (states, steps, contact keys).
//! It equals [`Linearization::vjp`] to rounding (`tests/diff_adjoint.rs`).
//! [`crate::sysid`] uses it; iLQR ([`crate::mpc`]) and the burn surrogate
//! keep the dense Jacobians.
//!
//! **Departure from the original design** (R written in burn tensor ops): R's
//! Jacobians come from dual numbers through the CPU pipeline instead. Every
//! model feature — joint types, geom pairs (analytic and GJK/EPA), gains,
//! limits, friction regimes — is differentiable with nothing written twice,
//! and φ, n and J are recomputed at the recorded features automatically.
//! The cost is about ⌈nz/LANES⌉ dual passes per solve (nz = nq + nv + nc +
//! nθ), of which only those that seed positions or mass and shape
//! parameters redo the geometry ([`LANES`]), spent only when gradients are
//! requested.
//!
//! **burn.** [`DiffRollout::rollout`] takes burn tensors: initial states
//! (nworld, nq + nv), controls (nworld, nsteps, nc), parameters
//! (nworld, nθ). It simulates each world (rayon), forms the interval
//! Jacobians, and returns the trajectory (nworld, nsteps + 1, nq + nv) as
//! the linearised straight-through surrogate
//!
//!   x_{k+1} = sg(x̄_{k+1}) + D_x (x_k − sg x_k) + D_u (u_k − sg u_k) + D_θ (θ − sg θ)
//!
//! (sg = detach, D constant): its values are exactly the simulator's (in the
//! input tensors' dtype) and burn's reverse mode gives the exact
//! vector–Jacobian products of any loss, policy or optimizer built around
//! it. burn 0.22 tensors carry their backend in their device (there is no
//! backend type parameter): the rollout works on whatever device the inputs
//! live on, e.g. `Device::flex().autodiff()`.
//!
//! **Contacts from distance** ([`Cfd`], DiffMJX Sec. 4 and B.3): in the
//! Jacobian pass only, pairs with 0 ≤ φ0 < w_c add a smooth phantom normal
//! impulse to R; near misses then have informative gradients while the
//! forward trajectory stays bit-identical.
//!
//! **Parameters** ([`Param`]) are multipliers on modelled values: mass,
//! contact stiffness, dissipation, μs, μd (per world, all pairs) and
//! per-geom size (the shape the collision stages see; mass properties stay
//! as modelled). [`gradcheck`] compares any gradient with central finite
//! differences of the `f64` path ([`DiffRollout::simulate`]).
//!
//! **Gradient accuracy.** With [`FrictionLoad::Lagged`] the gradients are
//! exact derivatives of the discrete map (checked against finite
//! differences of the map with the recorded step sequence); that map
//! converges to the physical flow at first order, like √accuracy under
//! CENIC, and sensitivities through impacts converge more slowly than
//! states. Measured on the 1 s cube toss (`tests/diff_cube_toss.rs`,
//! `tools/grad_bench.rs`): tens of % error at accuracy 1e-4, below 1%
//! at 1e-8 when the error norm weighs velocity errors over τ_v = 0.1 s
//! ([`crate::integrator::CenicParams::velocity_time_scale`]; the 10 ms
//! default leaves ~1% at 3e-8). Fixed steps are worse: a contact
//! touch-down or lift-off inside a step makes the step's derivative depend
//! on where in the step it falls (an error of order k·h/m per event, the
//! DiffMJX sawtooth), so fixed-step gradients through bounces flip sign
//! even at 10 µs steps (`tests/diff_bouncing_ball.rs`). With CENIC, set
//! [`crate::integrator::CenicParams::land_contact_events`] for bouncing
//! contacts: steps then end just before each touch-down and lift-off and
//! the gradient is smooth.
//!
//! **Robots with sliding feet** (BENCHMARKS.md "Gradient
//! convergence on robots"). Two things make a legged robot's gradients
//! converge, and both are what gradients get by default or by preset:
//! - The friction load n0 is lagged at the start of each step, so the
//!   exact derivative lets a perturbation of a foot's normal state change
//!   the friction impulse for a whole step, although it relaxes within the
//!   contact's time scale (≈ 0.1 ms on the ant's feet): that derivative's
//!   error is first order in h with a constant ≈ 1/τ, O(1) at CENIC's
//!   millisecond steps while the trajectory itself is accurate.
//!   [`FrictionLoad::Implicit`], **the default of [`DiffRollout`]**,
//!   differentiates the load through the step's implicit normal impulse
//!   instead (straight-through: values unchanged, same h → 0 limit), which
//!   cuts that error 30–100× on the ant's sliding intervals. Choose
//!   [`FrictionLoad::Lagged`] ([`DiffRollout::with_friction_load`]) for the
//!   exact derivative of the forward map, e.g. to compare with finite
//!   differences.
//! - The contact forces depend on velocities (Hunt–Crossley damping near
//!   its kink, friction direction, stick–slip), and CENIC's default error
//!   norm hardly weighs velocity errors (τ_v = 10 ms): at accuracy 1e-4
//!   the ant's feet decelerate ~10 % off, stick a fraction of a millisecond
//!   late, and the gradients stay 25 % (controls) and > 100 % (mass) off.
//!   [`crate::integrator::CenicParams::for_gradients`] weighs velocity
//!   errors over τ_v = 1 s: the ant's control and parameter gradients at
//!   accuracy 1e-3 / 1e-4 / 1e-5 are then 8 % / 2.7 % / 0.7 % and 19 % /
//!   6 % / 0.5 % off, monotone (`tests/diff_robots.rs`), for ~9× the steps
//!   of the default norm at the same accuracy.
//!
//! **Gradients at events.** On some control sequences a series of contact
//! events inside the horizon (a hopping ant's touch-downs, lift-offs and
//! joint limits) makes the derivative of the trajectory depend on the
//! events' discrete timing: fixed steps h, h/2, h/4 disagree by up to
//! 20 %, the gradient preset's gradient moves as much between accuracies,
//! and no setting gives "the" gradient. [`Recording::gradient_spread`]
//! says when a rollout's gradient sits at such an event (the reverse pass
//! at the recording's setting and at one tightened by a factor, flagged
//! above a tolerance); tools/grad_events.rs measures it against converged
//! fixed-step references (BENCHMARKS.md "Gradients at contact events").
//!
//! Landing slip→stick transitions
//! ([`crate::integrator::CenicParams::land_stick_events`]) and touch-downs
//! helps little once velocities are controlled; not landed: the
//! Hunt–Crossley kink at vn = 1/d.
//!
//! Units: states and controls as in [`crate::integrator::Simulator`] (m,
//! rad, m/s, rad/s, N, N·m); times in s; parameters dimensionless.
//!
//! # Example
//!
//! ```no_run
//! use burn::tensor::{DType, Device, Tensor, TensorData};
//! use cenic::diff::{DiffRollout, Param};
//! use cenic::integrator::{CenicParams, Mode};
//! use std::sync::Arc;
//!
//! let model = Arc::new(cenic::scenes::cube_toss());
//! let mode = Mode::ErrorControlled(CenicParams::for_gradients(1e-5));
//! let r = DiffRollout::new(model, mode, 0.01).with_params(vec![Param::Friction, Param::GeomSize(1)]);
//! let device = Device::flex().autodiff();
//! let x0 = vec![0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 5.0, 3.0];
//! let x0 = Tensor::<2>::from_data(TensorData::new(x0, [1, 13]), (&device, DType::F64)).require_grad();
//! let theta = Tensor::<2>::from_data(TensorData::new(vec![1.0, 1.0], [1, 2]), (&device, DType::F64)).require_grad();
//! let traj = r.rollout(x0.clone(), None, Some(theta.clone()), 100).unwrap(); // (1, 101, 13)
//! let final_x = traj.slice([0..1, 100..101, 0..1]).sum();
//! let grads = final_x.backward();
//! let d_theta = theta.grad(&grads).unwrap(); // d x(1 s) / d(friction, size multipliers)
//! ```
//!
//! [burn]: https://burn.dev

mod adjoint;
mod cfd;
mod dual;
mod dynamics_adjoint;
mod gradcheck;
mod jacobian;
mod kinematics_adjoint;
mod params;
mod rev;
mod rollout;
mod rules;

pub use cfd::{Cfd, SOFTPLUS_SHARPNESS, phantom_impulse};
pub use dual::Dual;
pub use gradcheck::{GradCheck, GradCheckOptions, GradCheckReport, gradcheck};
pub use params::{ControlKind, Param};
pub use rev::{Rev, tape as rev_tape};
pub use rollout::{Cotangents, DiffRollout, GradientSpread, LANES, Linearization, Recording, RolloutStats, VjpStats};

use crate::integrator::StepError;
pub use crate::integrator::Tape;

/// How the Jacobian pass differentiates a contact's friction load (the
/// normal impulse that scales the friction cone). The forward step lags it
/// at the start of the step, n0 = h·max(fe0, 0)·max(1 − d·vn0, 0), which
/// keeps the ICF problem convex.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrictionLoad {
    /// The exact derivative of the forward map: ∂n0/∂(q0, v0, θ). What
    /// finite differences of [`DiffRollout::simulate`] check; its error
    /// against the flow's derivative is first order in h with a constant
    /// ≈ 1/τ (τ the contact's time scale), O(1) at millisecond steps on
    /// sliding feet.
    Lagged,
    /// Straight-through (the default of [`DiffRollout`]): the value stays
    /// n0, the derivative is that of the step's implicit normal impulse
    /// γn(vn1) (the impulse the step applies), coupled to v1 in the Hessian
    /// (then non-symmetric, factored by LU). Same h → 0 limit as `Lagged`.
    #[default]
    Implicit,
}

/// Where in a rollout a solve happened.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolveSite {
    /// World index.
    pub world: usize,
    /// Control interval index.
    pub interval: usize,
    /// Solve index within the interval.
    pub solve: usize,
    /// Simulation time at the start of the solve (s).
    pub time: f64,
}

impl core::fmt::Display for SolveSite {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "world {}, interval {}, solve {} (t = {:.6} s)", self.world, self.interval, self.solve, self.time)
    }
}

/// Errors of differentiable rollouts.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DiffError {
    /// Bad arguments (shapes, parameter specification).
    #[error("{0}")]
    Input(String),
    /// The forward simulation failed.
    #[error("forward simulation failed in world {world}, interval {interval} (t = {time:.6} s): {source}")]
    Step {
        /// World index.
        world: usize,
        /// Control interval index.
        interval: usize,
        /// Simulation time at the start of the interval (s).
        time: f64,
        /// The step error.
        source: StepError,
    },
    /// The Jacobian pass found other contacts than the forward pass.
    #[error("contact mismatch at {site}: forward pass had {forward} contacts, Jacobian pass {jacobian} ({detail})")]
    ContactMismatch {
        /// The solve.
        site: SolveSite,
        /// Contacts recorded by the forward pass.
        forward: usize,
        /// Contacts found by the Jacobian pass.
        jacobian: usize,
        /// First difference.
        detail: String,
    },
    /// The Hessian at v1 could not be factored.
    #[error("Jacobian pass failed at {site}: Hessian at v1 not positive definite (pivot {pivot})")]
    Hessian {
        /// The solve.
        site: SolveSite,
        /// Failing pivot.
        pivot: usize,
    },
    /// Recomputing a recorded step did not reproduce the next recorded state.
    #[error("Jacobian pass failed at {site}: q0 ⊕ h·v1 does not reproduce the recorded next state")]
    Tape {
        /// The solve.
        site: SolveSite,
    },
    /// An interval Jacobian holds a NaN or infinite entry.
    #[error("non-finite interval Jacobian at {site} (entry {entry})")]
    NonFinite {
        /// The end of the interval.
        site: SolveSite,
        /// Row-major index of the first bad entry.
        entry: usize,
    },
}
