//! Narrow phase: one `contact_<a>_<b>` routine per geom-kind pair, selected
//! by [`narrow_phase_fn`]. Analytic routines for plane, sphere, capsule and
//! box pairs live in `analytic`; pairs with a cylinder, ellipsoid or convex
//! mesh use the general convex routine in `convex` (support functions);
//! height fields collide prism by prism through the same convex code
//! (`hfield`).

mod analytic;
mod convex;
mod hfield;

pub use analytic::*;
pub use convex::*;
pub use hfield::*;

use super::{Manifold, Shape};
use crate::math::Real;
use crate::model::GeomKind;

/// Signature of a narrow-phase routine: shapes A and B (A's kind ≤ B's
/// kind), the pair's margin (m), and the output manifold (cleared by the caller).
pub type NarrowPhaseFn<T> = fn(&Shape<'_, T>, &Shape<'_, T>, T, &mut Manifold<T>);

/// A geom-kind pair (`a` ≤ `b`) and how its contacts are found: one row of
/// [`PAIR_KINDS`], the single table that the CPU dispatch
/// ([`narrow_phase_fn`]), [`CONVEX_PAIRS`], the GPU's dispatch and GJK/EPA
/// passes (generated WGSL constants, `src/gpu/collision.rs`) and the GPU
/// contact capacity are derived from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairKind {
    /// Kind of geom A.
    pub a: GeomKind,
    /// Kind of geom B (`a` ≤ `b`).
    pub b: GeomKind,
    /// The routine, `contact_<a>_<b>` (the same name on the CPU and in WGSL).
    pub routine: &'static str,
    /// Served by the general convex code (support functions; `convex.rs`),
    /// directly or (height fields) prism by prism.
    pub convex: bool,
    /// A height-field pair (`hfield.rs`): B is the field, collided prism by
    /// prism with A through the convex code.
    pub hfield: bool,
    /// Runs GJK/EPA (the convex pairs without a closed form: plane and
    /// sphere–cylinder pairs have one).
    pub uses_epa: bool,
    /// Most contact points one call produces (≤ [`super::MAX_MANIFOLD`]).
    pub max_points: usize,
}

macro_rules! pair_kinds {
    ($($a:ident $b:ident $routine:ident convex: $convex:literal epa: $epa:literal max: $max:literal;)*) => {
        /// Every ordered geom-kind pair, in kind order.
        pub const PAIR_KINDS: [PairKind; [$($max),*].len()] = {
            use GeomKind::*;
            [$(PairKind {
                a: $a,
                b: $b,
                routine: stringify!($routine),
                convex: $convex,
                hfield: matches!($b, Hfield) && $max > 0,
                uses_epa: $epa,
                max_points: $max,
            }),*]
        };

        /// The dispatch table: the routine for kinds `a` ≤ `b` ([`PAIR_KINDS`]).
        /// Panics if `a > b` (callers order pairs with [`super::order_pair`]).
        pub fn narrow_phase_fn<T: Real>(a: GeomKind, b: GeomKind) -> NarrowPhaseFn<T> {
            use GeomKind::*;
            match (a, b) {
                $(($a, $b) => $routine::<T>,)*
                _ => panic!("narrow_phase_fn: kinds must be ordered, got ({}, {})", a.name(), b.name()),
            }
        }
    };
}

pair_kinds! {
    Plane Plane contact_plane_plane convex: false epa: false max: 0;
    Plane Sphere contact_plane_sphere convex: false epa: false max: 1;
    Plane Capsule contact_plane_capsule convex: false epa: false max: 2;
    Plane Box contact_plane_box convex: false epa: false max: 4;
    Plane Cylinder contact_plane_cylinder convex: true epa: false max: 8;
    Plane Ellipsoid contact_plane_ellipsoid convex: true epa: false max: 1;
    Plane Mesh contact_plane_mesh convex: true epa: false max: 8;
    Plane Hfield contact_plane_hfield convex: false epa: false max: 0;
    Sphere Sphere contact_sphere_sphere convex: false epa: false max: 1;
    Sphere Capsule contact_sphere_capsule convex: false epa: false max: 1;
    Sphere Box contact_sphere_box convex: false epa: false max: 1;
    Sphere Cylinder contact_sphere_cylinder convex: true epa: false max: 1;
    Sphere Ellipsoid contact_sphere_ellipsoid convex: true epa: true max: 1;
    Sphere Mesh contact_sphere_mesh convex: true epa: true max: 1;
    Sphere Hfield contact_sphere_hfield convex: true epa: true max: 8;
    Capsule Capsule contact_capsule_capsule convex: false epa: false max: 3;
    Capsule Box contact_capsule_box convex: false epa: false max: 3;
    Capsule Cylinder contact_capsule_cylinder convex: true epa: true max: 3;
    Capsule Ellipsoid contact_capsule_ellipsoid convex: true epa: true max: 1;
    Capsule Mesh contact_capsule_mesh convex: true epa: true max: 3;
    Capsule Hfield contact_capsule_hfield convex: true epa: true max: 8;
    Box Box contact_box_box convex: false epa: false max: 8;
    Box Cylinder contact_box_cylinder convex: true epa: true max: 8;
    Box Ellipsoid contact_box_ellipsoid convex: true epa: true max: 1;
    Box Mesh contact_box_mesh convex: true epa: true max: 8;
    Box Hfield contact_box_hfield convex: true epa: true max: 8;
    Cylinder Cylinder contact_cylinder_cylinder convex: true epa: true max: 8;
    Cylinder Ellipsoid contact_cylinder_ellipsoid convex: true epa: true max: 1;
    Cylinder Mesh contact_cylinder_mesh convex: true epa: true max: 8;
    Cylinder Hfield contact_cylinder_hfield convex: true epa: true max: 8;
    Ellipsoid Ellipsoid contact_ellipsoid_ellipsoid convex: true epa: true max: 1;
    Ellipsoid Mesh contact_ellipsoid_mesh convex: true epa: true max: 1;
    Ellipsoid Hfield contact_ellipsoid_hfield convex: true epa: true max: 8;
    Mesh Mesh contact_mesh_mesh convex: true epa: true max: 8;
    Mesh Hfield contact_mesh_hfield convex: true epa: true max: 8;
    Hfield Hfield contact_hfield_hfield convex: false epa: false max: 0;
}

/// The row of [`PAIR_KINDS`] for kinds `a` ≤ `b`.
pub fn pair_kind(a: GeomKind, b: GeomKind) -> &'static PairKind {
    PAIR_KINDS
        .iter()
        .find(|p| p.a == a && p.b == b)
        .unwrap_or_else(|| panic!("pair_kind: kinds must be ordered, got ({}, {})", a.name(), b.name()))
}

/// The 18 kind pairs (ordered) served by the general convex routine
/// directly: every pair with a cylinder, ellipsoid or convex mesh
/// ([`PairKind::convex`], height-field pairs aside).
pub const CONVEX_PAIRS: [(GeomKind, GeomKind); 18] = {
    let mut out = [(GeomKind::Plane, GeomKind::Plane); 18];
    let (mut i, mut n) = (0, 0);
    while i < PAIR_KINDS.len() {
        if PAIR_KINDS[i].convex && !PAIR_KINDS[i].hfield {
            out[n] = (PAIR_KINDS[i].a, PAIR_KINDS[i].b);
            n += 1;
        }
        i += 1;
    }
    assert!(n == 18, "CONVEX_PAIRS lists every convex row of PAIR_KINDS");
    out
};

/// No contact (plane–plane: planes are static).
pub fn contact_plane_plane<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {}
