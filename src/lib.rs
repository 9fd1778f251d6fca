//! # cenic
//!
//! A GPU-batched, differentiable rigid-body simulator for robots in contact,
//! built on CENIC (Convex Error-controlled Numerical Integration for
//! Contact): each environment advances with its own error-controlled time
//! step, each step solving a strictly convex contact problem (Lagged ICF)
//! with Newton's method.
//!
//! Pipeline (one file per stage; the same names in `kernels/` for the GPU):
//! [`model`] → [`dynamics`] (kinematics, mass matrix, bias forces) →
//! [`collision`] → [`icf`] (builder, cost, Newton solver) → [`integrator`]
//! (fixed-step Lagged ICF and CENIC error control) → [`batch`] (many worlds);
//! [`render`] draws the worlds (offscreen, wgpu).
//!
//! ```
//! use cenic::integrator::{CenicParams, Mode, World};
//! use std::sync::Arc;
//!
//! // The built-in cube toss: a 0.1 m, 0.37 kg cube thrown onto the ground.
//! let model = Arc::new(cenic::scenes::cube_toss());
//! let mode = Mode::ErrorControlled(CenicParams { accuracy: 1e-3, ..Default::default() });
//! let mut world = World::<f64>::new(model, mode);
//! world.sim.reset_to_keyframe("toss").unwrap();
//! world.advance(2.0).unwrap();
//! // After 2 s the cube rests on the ground (its centre 5 cm up).
//! assert!((world.sim.data.q[2] - 0.05).abs() < 1e-3);
//! println!("{} steps, {} rejected", world.stats.accepted, world.stats.rejected);
//! ```
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
pub mod mpc;
pub mod output;
pub mod render;
pub mod rl;
pub mod scenes;
pub mod sysid;
pub mod view;
pub mod zoo;

pub use model::{Model, ModelBuilder, ModelError};
