//! # cenic
//!
//! A GPU-batched, differentiable rigid-body simulator for robots in contact,
//! built on CENIC (Convex Error-controlled Numerical Integration for
//! Contact): each environment advances with its own error-controlled time
//! step, each step solving a strictly convex contact problem (Lagged ICF)
//! with Newton's method.
#![warn(missing_docs)]

pub mod batch;
pub mod collision;
pub mod diff;
pub mod dynamics;
pub mod gpu;
pub mod icf;
pub mod integrator;
pub mod math;
pub mod model;
pub mod output;
pub mod scenes;

pub use model::{Model, ModelBuilder, ModelError};
