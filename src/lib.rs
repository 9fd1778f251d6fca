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

/// The Rust snippets of README.md and of the guide's chapters (`docs/src/`),
/// run as doc tests by `cargo test --doc` (nothing here is compiled
/// otherwise).
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../README.md")]
    mod readme {}
    #[doc = include_str!("../docs/src/introduction.md")]
    mod introduction {}
    #[doc = include_str!("../docs/src/getting-started.md")]
    mod getting_started {}
    #[doc = include_str!("../docs/src/models.md")]
    mod models {}
    #[doc = include_str!("../docs/src/accuracy.md")]
    mod accuracy {}
    #[doc = include_str!("../docs/src/batches.md")]
    mod batches {}
    #[doc = include_str!("../docs/src/python.md")]
    mod python {}
    #[doc = include_str!("../docs/src/rl.md")]
    mod rl {}
    #[doc = include_str!("../docs/src/gradients.md")]
    mod gradients {}
    #[doc = include_str!("../docs/src/mpc.md")]
    mod mpc {}
    #[doc = include_str!("../docs/src/sysid.md")]
    mod sysid {}
    #[doc = include_str!("../docs/src/rendering.md")]
    mod rendering {}
    #[doc = include_str!("../docs/src/cluster.md")]
    mod cluster {}
    #[doc = include_str!("../docs/src/layout.md")]
    mod layout {}
    #[doc = include_str!("../docs/src/troubleshooting.md")]
    mod troubleshooting {}
    #[doc = include_str!("../docs/src/design.md")]
    mod design {}
}
