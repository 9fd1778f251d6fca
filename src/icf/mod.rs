//! The convex contact problem of one time step ("Lagged ICF"; guide: design,
//! §One ICF step and §The Newton solve, `docs/src/design.md`).
//!
//! - [`IcfBuilder`] is the only code that reads the model, the multibody
//!   data and the contacts; it fills an [`IcfProblem`].
//! - [`IcfProblem::set_time_step`] derives every h-dependent term, so a new
//!   h needs no new geometry.
//! - [`cost`] evaluates ℓ, ∇ℓ, the Hessian and the cost along a line.
//! - [`IcfSolver`] runs Newton's method with dense Cholesky and an exact line search.
//!
//! The next velocity is v1 = argmin ℓ(v),
//! ℓ(v) = ½ vᵀ A v − rᵀ v + Σ_contacts ℓ_c(J_c v) + Σ_gains ℓ_a + Σ_limits ℓ_l + Σ_rows ℓ_r(j·v),
//! with A = M + hD and r = A v0 − h k.
//!
//! Under MuJoCo's semantics ([`crate::model::Semantics::MuJoCo`]) contacts,
//! limits and rows are MuJoCo's soft constraints instead ([`SoftRow`],
//! [`SoftContact`]): each row's cost is ½·D·(j·v − s_ref)², h² times
//! MuJoCo's constraint cost, so a fixed step of MuJoCo's size solves the
//! convex problem of MuJoCo's own step.
//!
//! Departure from the original design (guide: design, §Contacts under the
//! physical semantics): the normal impulse uses the signed elastic force
//! fe0 = −k φ0 (so a pair reported inside the margin, φ0 > 0, pushes only
//! once the predicted gap φ0 + h vn closes); the clamp max(0, ·) applies to
//! the lagged friction impulse n0 only.

mod builder;
pub mod cost;
mod problem;
mod rows;
pub mod soft;
mod solver;
mod sparse;

pub(crate) use builder::tree_blocks;
pub use builder::{Actuation, IcfBuilder, MaterialScale};
pub use problem::{
    ContactConstraint, GainConstraint, IcfProblem, LimitConstraint, RowConstraint, STICTION_EPS_RATIO, SoftContact,
    SoftRow,
};
pub use solver::{
    FactorKind, IcfSolver, LINE_SEARCH_EXACT_BELOW, LINE_SEARCH_TOLERANCE, SolveError, SolveStats, SolverParams,
};
