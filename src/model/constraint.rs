//! Model elements that constrain or couple the tree: tendons, equality
//! constraints, explicit contact pairs and contact exclusions, and the
//! physics switches of MuJoCo's `<option><flag>`.

use super::Material;
use super::soft::{Softness, SpringLaw};

/// MuJoCo's `<option><flag>` switches that change the physics (all on by
/// default). A switched-off feature stays in the model (and in `cenic
/// info`) but is not simulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flags {
    /// Contacts (`contact`; also off with `constraint`).
    pub contact: bool,
    /// Joint and tendon limits (`limit`; also off with `constraint`).
    pub limit: bool,
    /// Equality constraints (`equality`; also off with `constraint`).
    pub equality: bool,
    /// Joint and tendon friction loss (`frictionloss`; also off with `constraint`).
    pub frictionloss: bool,
    /// Gravity (`gravity`).
    pub gravity: bool,
    /// Actuator forces (`actuation`).
    pub actuation: bool,
    /// Joint and tendon springs (`spring`; MuJoCo 2's `passive` switches both this and `damper`).
    pub spring: bool,
    /// Joint and tendon damping (`damper`), and fluid forces with `passive`.
    pub damper: bool,
    /// Fluid forces (MuJoCo 2's `passive`; on unless that is disabled).
    pub fluid: bool,
    /// Clamping controls to `ctrlrange` (`clampctrl`).
    pub clampctrl: bool,
    /// No contacts between a body and its parent (`filterparent`).
    pub filterparent: bool,
    /// The safety clamp of soft-constraint time constants τ ≥ 2·timestep (`refsafe`).
    pub refsafe: bool,
    /// Sensor evaluation (`sensor`).
    pub sensor: bool,
    /// MuJoCo's Euler step integrates joint damping implicitly (`eulerdamp`;
    /// [`crate::integrator::Mode::MuJoCo`] only).
    pub eulerdamp: bool,
}

impl Default for Flags {
    fn default() -> Self {
        Self {
            contact: true,
            limit: true,
            equality: true,
            frictionloss: true,
            gravity: true,
            actuation: true,
            spring: true,
            damper: true,
            fluid: true,
            clampctrl: true,
            filterparent: true,
            refsafe: true,
            sensor: true,
            eulerdamp: true,
        }
    }
}

/// One element of a spatial tendon's path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SpatialElement {
    /// A site the tendon passes through (index into [`super::Model::sites`]).
    Site(usize),
    /// A pulley: the path continues as a new branch whose length is divided
    /// by `divisor` (MJCF `<pulley divisor>`).
    Pulley {
        /// Divisor of the following branch's length (> 0).
        divisor: f64,
    },
}

/// How a tendon's length is computed.
#[derive(Clone, Debug, PartialEq)]
pub enum TendonPath {
    /// A linear combination Σ coef·q of hinge and slide joint positions
    /// (MJCF `<fixed>`): (joint index, coefficient) pairs.
    Fixed(Vec<(usize, f64)>),
    /// Straight segments between consecutive sites of each branch, each
    /// branch's length divided by its pulley divisor (MJCF `<spatial>`).
    Spatial(Vec<SpatialElement>),
}

/// A tendon: a length L(q) with a Jacobian, optional length limits (soft,
/// like joint limits), a spring and a damper along it.
#[derive(Clone, Debug, PartialEq)]
pub struct Tendon {
    /// Name (may be empty).
    pub name: String,
    /// Path.
    pub path: TendonPath,
    /// Length limits [lower, upper] (m, or rad for fixed tendons of hinges), when limited.
    pub range: Option<[f64; 2]>,
    /// Softness of the limits (`solreflimit`, `solimplimit`).
    pub limit_softness: Softness,
    /// Limit margin (m): each limit acts once the length is closer to it than this.
    pub limit_margin: f64,
    /// The force law of each limit, from `limit_softness` and the tendon's
    /// effective mass 1/`invweight0` (compiled; `None` without limits or with
    /// limits switched off).
    pub limit_law: Option<SpringLaw>,
    /// Spring stiffness (N/m) towards the rest length range `springlength`.
    pub stiffness: f64,
    /// Damping (N·s/m) of the length rate.
    pub damping: f64,
    /// Dry friction force (N) opposing the length rate (MuJoCo's `frictionloss`).
    pub frictionloss: f64,
    /// Softness of the dry friction under [`Semantics::MuJoCo`](super::Semantics::MuJoCo)
    /// (MuJoCo's `solreffriction`, `solimpfriction`).
    pub friction_softness: Softness,
    /// Rest length range [low, high] (m): no spring force inside it (a dead
    /// band); MJCF's default is the length at qpos0.
    pub springlength: [f64; 2],
    /// Length at qpos0 (m; compiled).
    pub length0: f64,
    /// Inverse effective mass J M⁻¹ Jᵀ at qpos0 (1/kg; compiled, MuJoCo's `tendon_invweight0`).
    pub invweight0: f64,
}

/// What an equality constraint holds together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EqualityKind {
    /// Point `anchor[0]` (body 0's frame) coincides with point `anchor[1]`
    /// (body 1's frame): 3 rows, MJCF `<connect>`.
    Connect {
        /// Bodies (either may be the world).
        body: [usize; 2],
        /// The points in each body's frame (m).
        anchor: [[f64; 3]; 2],
    },
    /// Frames (`anchor[i]`, `quat[i]`) fixed to body i coincide: 3 position
    /// rows and 3 orientation rows (the vector part of the relative
    /// quaternion, times `torquescale`), MJCF `<weld>`.
    Weld {
        /// Bodies (either may be the world).
        body: [usize; 2],
        /// Frame origins in each body's frame (m).
        anchor: [[f64; 3]; 2],
        /// Frame orientations in each body's frame.
        quat: [[f64; 4]; 2],
        /// Scale of the orientation rows (MJCF `torquescale`).
        torquescale: f64,
    },
    /// `q[j0] − q0[j0] = Σ_k polycoef[k]·(q[j1] − q0[j1])^k`, or
    /// `q[j0] − q0[j0] = polycoef[0]` without a second joint (MJCF `<joint>`).
    Joint {
        /// Hinge or slide joints; the second is optional.
        joint: [Option<usize>; 2],
        /// Polynomial coefficients c0 … c4.
        polycoef: [f64; 5],
    },
    /// The same polynomial coupling between tendon lengths (relative to
    /// their lengths at qpos0), MJCF `<tendon>` in `<equality>`.
    Tendon {
        /// Tendons; the second is optional.
        tendon: [Option<usize>; 2],
        /// Polynomial coefficients c0 … c4.
        polycoef: [f64; 5],
    },
}

/// An equality constraint, enforced as a stiff spring-damper per row
/// (see [`super::soft`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Equality {
    /// Name (may be empty).
    pub name: String,
    /// Kind and objects.
    pub kind: EqualityKind,
    /// Whether it acts (MJCF `active`).
    pub active: bool,
    /// `solref`/`solimp`.
    pub softness: Softness,
    /// Force laws (compiled): translation rows (or the single row of joint
    /// and tendon couplings) and rotation rows, from the effective masses
    /// MuJoCo uses (`body_invweight0`, `dof_invweight0`, `tendon_invweight0`).
    pub laws: [SpringLaw; 2],
    /// MuJoCo's diagonal approximation of the rows' inverse inertia
    /// (compiled): translation rows (or the single row of joint and tendon
    /// couplings) and rotation rows (1/kg, 1/(kg·m²)).
    pub invweight0: [f64; 2],
}

impl Equality {
    /// Number of constraint rows.
    pub fn rows(&self) -> usize {
        match self.kind {
            EqualityKind::Connect { .. } => 3,
            EqualityKind::Weld { .. } => 6,
            EqualityKind::Joint { .. } | EqualityKind::Tendon { .. } => 1,
        }
    }
    /// Lower-case name of the kind as written in MJCF.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            EqualityKind::Connect { .. } => "connect",
            EqualityKind::Weld { .. } => "weld",
            EqualityKind::Joint { .. } => "joint",
            EqualityKind::Tendon { .. } => "tendon",
        }
    }
}

/// An explicit contact pair (MJCF `<contact><pair>`): the two geoms are
/// checked for contact whatever their masks, parents and exclusions say,
/// with this pair's own material and margin (replacing the geoms' own).
#[derive(Clone, Debug, PartialEq)]
pub struct ContactPair {
    /// Name (may be empty).
    pub name: String,
    /// The geoms.
    pub geom: [usize; 2],
    /// Contact material of the pair.
    pub material: Material,
    /// Contact reporting margin (m).
    pub margin: f64,
}
