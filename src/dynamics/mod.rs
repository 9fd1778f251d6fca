//! CPU multibody dynamics, generic over the scalar type, with MuJoCo's
//! conventions: forward kinematics, body spatial velocities, the joint-space
//! mass matrix (composite rigid body algorithm), bias forces (recursive
//! Newton–Euler), point Jacobians and the position update q ⊕ h·N(q)·v.
//!
//! Spatial quantities of a kinematic tree are expressed in world axes about
//! a per-tree reference point (the current position of the tree's root
//! body), like MuJoCo's com-based frames: this keeps lever arms short, which
//! matters for the f32 GPU path.
//!
//! Stage order (one call each, like `mj_step`'s stages):
//! [`kinematics`] → [`velocities`] → [`mass_matrix`] / [`bias_forces`].

mod data;
mod integrate;
mod jacobian;
mod kinematics;
mod rnea;
mod sensor;
mod transmission;

pub use data::Data;
pub use integrate::{integrate_act, integrate_q, normalize_quaternions, q_difference};
pub use jacobian::{point_jacobian, point_velocity};
pub use kinematics::{kinematics, velocities};
pub use rnea::{bias_forces, energy, mass_matrix, passive_forces};
pub use sensor::{ContactForce, SensorInput, actuator_force, sensors, subtree_com};
pub use transmission::transmissions;
