//! Analytic narrow-phase routines for plane, sphere, capsule and box pairs
//! (A's kind ≤ B's kind). Each routine appends to the caller-cleared
//! manifold only the points with φ < margin, with φ in metres (negative when
//! overlapping), the unit normal from A to B, and the point midway between
//! the surfaces (`p_A + φ/2·n`). Plain fixed-size code (no allocation,
//! recursion or dynamic dispatch) so that each routine has a WGSL twin.
//!
//! Feature ids (`ContactPoint::feature = [on A, on B]`), for recomputing φ
//! from the same features differentiably:
//!
//! | pair | feature on A | feature on B |
//! |---|---|---|
//! | plane–sphere | 0 | 0 |
//! | plane–capsule | 0 | capsule end: 0 = −z end, 1 = +z end |
//! | plane–box | 0 | box corner 0..7, bit i set ⇔ corner at +h_i |
//! | sphere–sphere | 0 | 0 |
//! | sphere–capsule | 0 | segment feature: 0 = −z end, 1 = +z end, 2 = interior |
//! | sphere–box | 0 | box feature code |
//! | capsule–capsule | segment feature | segment feature |
//! | capsule–box | segment feature | box feature code |
//! | box–box | box feature code | box feature code |
//!
//! The box feature code is `k_0 + 3·k_1 + 9·k_2` with `k_i` = 0 when the
//! witness is at −h_i along the box's local axis i, 2 at +h_i, 1 strictly
//! between: one axis at a bound is a face, two an edge, three a corner.

mod box_box;
mod capsule;
mod common;
mod plane;
mod sphere;

pub use box_box::contact_box_box;
pub use capsule::{contact_capsule_box, contact_capsule_capsule};
pub use plane::{contact_plane_box, contact_plane_capsule, contact_plane_sphere};
pub use sphere::{contact_sphere_box, contact_sphere_capsule, contact_sphere_sphere};
