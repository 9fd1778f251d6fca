//! The immutable [`Model`]: a kinematic tree of bodies, joints and their
//! degrees of freedom, collision geoms with contact materials, actuators,
//! sites, fixed tendons and keyframes, plus global [`Options`].
//!
//! A model is built either in code with [`ModelBuilder`] or from MJCF with
//! [`Model::from_mjcf_file`] / [`Model::from_mjcf_str`]. Both paths end in
//! [`ModelBuilder::build`], which validates the model and derives the
//! compiled quantities (dof layout, weld groups, bounding radii).
//!
//! Conventions (MuJoCo-compatible): z up; quaternions (w, x, y, z); a body's
//! `pos`/`quat` give its frame relative to its parent's frame; joint `pos`
//! and `axis`, geom and site poses are in the body frame. Units are SI.

mod builder;
mod constraint;
mod error;
pub mod hfield;
pub mod inertia;
pub mod mesh;
pub mod mjcf;
mod sensor;
pub mod soft;
mod summary;
pub mod visual;

pub use builder::{BodySpec, EqualitySpec, GeomSpec, Inertial, JointSpec, ModelBuilder, TendonSpec, WORLD};
pub use constraint::{ContactPair, Equality, EqualityKind, Flags, SpatialElement, Tendon, TendonPath};
pub use error::{Entity, ModelError};
pub use hfield::HeightField;
pub use mesh::ConvexMesh;
pub use sensor::{FrameObject, Sensor, SensorKind};
pub use visual::{CameraMode, GeomVisual, ModelCamera, Visual};

/// Joint types, with MuJoCo's coordinate conventions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JointKind {
    /// Six degrees of freedom. q = [position (3, world, m), quaternion (4)];
    /// v = [linear velocity of the body origin (3, world, m/s), angular
    /// velocity (3, body frame, rad/s)].
    Free,
    /// Three rotational degrees of freedom about `pos`. q = quaternion (4);
    /// v = angular velocity (3, body frame, rad/s).
    Ball,
    /// Rotation about `axis` through `pos`. q in rad, v in rad/s.
    Hinge,
    /// Translation along `axis`. q in m, v in m/s.
    Slide,
}

impl JointKind {
    /// Number of position coordinates.
    pub fn nq(self) -> usize {
        match self {
            JointKind::Free => 7,
            JointKind::Ball => 4,
            JointKind::Hinge | JointKind::Slide => 1,
        }
    }
    /// Number of velocity coordinates (degrees of freedom).
    pub fn nv(self) -> usize {
        match self {
            JointKind::Free => 6,
            JointKind::Ball => 3,
            JointKind::Hinge | JointKind::Slide => 1,
        }
    }
    /// Lower-case name as written in MJCF.
    pub fn name(self) -> &'static str {
        match self {
            JointKind::Free => "free",
            JointKind::Ball => "ball",
            JointKind::Hinge => "hinge",
            JointKind::Slide => "slide",
        }
    }
}

/// Geom (collision shape) types. The meaning of [`Geom::size`] depends on the type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum GeomKind {
    /// Infinite plane z = 0 of the geom frame, solid below (normal +z).
    /// `size` = [half x, half y, grid spacing] is for rendering only.
    Plane = 0,
    /// Sphere, `size[0]` = radius (m).
    Sphere = 1,
    /// Capsule along the geom z axis, `size` = [radius, half-length of the segment] (m).
    Capsule = 2,
    /// Box, `size` = half-extents [x, y, z] (m).
    Box = 3,
    /// Cylinder along the geom z axis, `size` = [radius, half-height] (m).
    Cylinder = 4,
    /// Ellipsoid, `size` = semi-axes [x, y, z] (m).
    Ellipsoid = 5,
    /// Convex mesh ([`Geom::mesh`] indexes [`Model::meshes`]); vertices in the geom frame.
    Mesh = 6,
    /// Height field ([`Geom::hfield`] indexes [`Model::hfields`]), on static
    /// bodies; `size` is MuJoCo's [radius_x, radius_y, elevation/4 + base/2]
    /// (m), used for mass properties only (a box of these half-sizes).
    Hfield = 7,
}

impl GeomKind {
    /// Number of geom kinds (size of pair dispatch tables).
    pub const COUNT: usize = 8;
    /// All kinds in index order.
    pub const ALL: [GeomKind; 8] = [
        GeomKind::Plane,
        GeomKind::Sphere,
        GeomKind::Capsule,
        GeomKind::Box,
        GeomKind::Cylinder,
        GeomKind::Ellipsoid,
        GeomKind::Mesh,
        GeomKind::Hfield,
    ];
    /// Lower-case name as written in MJCF.
    pub fn name(self) -> &'static str {
        match self {
            GeomKind::Plane => "plane",
            GeomKind::Sphere => "sphere",
            GeomKind::Capsule => "capsule",
            GeomKind::Box => "box",
            GeomKind::Cylinder => "cylinder",
            GeomKind::Ellipsoid => "ellipsoid",
            GeomKind::Mesh => "mesh",
            GeomKind::Hfield => "hfield",
        }
    }
}

/// MuJoCo's integrator of a model (`<option integrator>`), which
/// [`crate::integrator::Mode::MuJoCo`] reproduces (cenic's own modes, fixed
/// steps and error control, do not depend on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Integrator {
    /// Semi-implicit Euler with implicit joint damping (MuJoCo's default).
    #[default]
    Euler,
    /// The classic fourth-order Runge–Kutta method.
    Rk4,
    /// MuJoCo's implicit integrator (stepped as [`Integrator::Euler`]).
    Implicit,
    /// MuJoCo's implicitfast integrator (stepped as [`Integrator::Euler`]).
    ImplicitFast,
}

impl Integrator {
    /// The name as written in MJCF.
    pub fn name(self) -> &'static str {
        match self {
            Integrator::Euler => "Euler",
            Integrator::Rk4 => "RK4",
            Integrator::Implicit => "implicit",
            Integrator::ImplicitFast => "implicitfast",
        }
    }
}

/// How a model's contacts, limits, equality constraints and dry friction
/// respond (the guide's chapter on MuJoCo models explains both).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Semantics {
    /// cenic's physical laws with SI parameters: Hunt–Crossley contacts
    /// (stiffness N/m, dissipation s/m, static and dynamic friction),
    /// joint limits and equality constraints as spring–dampers mapped from
    /// `solref`/`solimp` ([`soft::SpringLaw`]). The default for models
    /// built in code and for MJCF that uses cenic's contact attributes
    /// (`stiffness`, `dissipation`, `friction_dynamic`).
    #[default]
    Physical,
    /// MuJoCo's soft constraints: each constraint row has the regulariser
    /// R = (1 − d)/d·Â and the reference acceleration from `solref` and
    /// `solimp` ([`soft::SoftLaw`]), contacts with pyramidal friction cones
    /// of `condim` 1 or 3, so that a model tuned for MuJoCo has MuJoCo's
    /// transients. The default for MJCF models.
    MuJoCo,
}

impl Semantics {
    /// Lower-case name as written in MJCF (`<option semantics="…">`).
    pub fn name(self) -> &'static str {
        match self {
            Semantics::Physical => "physical",
            Semantics::MuJoCo => "mujoco",
        }
    }
}

/// A geom's contact parameters under [`Semantics::MuJoCo`], as MJCF writes
/// them; a pair combines them as MuJoCo does ([`SoftMaterial::combine`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftMaterial {
    /// `solref`: (time constant s, damping ratio) or (−stiffness, −damping).
    pub solref: [f64; 2],
    /// `solimp`: d0, d_width, width (m), midpoint, power.
    pub solimp: [f64; 5],
    /// `solmix`: weight of this geom's solref/solimp in a pair.
    pub solmix: f64,
    /// `friction` as MuJoCo's 5-vector: sliding along the contact frame's
    /// two tangents (dimensionless), torsional (m), rolling (m, two); only
    /// sliding friction acts (condim 1 or 3).
    pub friction: [f64; 5],
    /// `condim`: 1 (frictionless) or 3 (sliding friction); 4 and 6 act as 3.
    pub condim: u8,
    /// `priority`: the higher of a pair gives the pair's parameters.
    pub priority: i32,
    /// `margin` (m): a pair's contacts act once their distance is below
    /// the sum of its geoms' margins (MuJoCo 4's margin).
    pub margin: f64,
    /// `gap` (m): a pair's contacts are detected, without acting, up to the
    /// summed margins plus the summed gaps.
    pub gap: f64,
}

impl Default for SoftMaterial {
    /// MuJoCo's defaults.
    fn default() -> Self {
        Self {
            solref: soft::SOLREF_DEFAULT,
            solimp: soft::SOLIMP_DEFAULT,
            solmix: 1.0,
            friction: [1.0, 1.0, 0.005, 0.0001, 0.0001],
            condim: 3,
            priority: 0,
            margin: 0.0,
            gap: 0.0,
        }
    }
}

impl SoftMaterial {
    /// A pair's parameters (MuJoCo's `mj_contactParam`): those of the geom
    /// with the higher priority; at equal priority the larger condim and
    /// friction, solref and solimp mixed with the weights
    /// solmix_a/(solmix_a + solmix_b) (the element-wise minimum for direct
    /// solref); in every case the sums of the margins and of the gaps.
    pub fn combine(a: &SoftMaterial, b: &SoftMaterial) -> SoftMaterial {
        let (margin, gap) = (a.margin + b.margin, a.gap + b.gap);
        if a.priority != b.priority {
            let w = if a.priority > b.priority { a } else { b };
            return SoftMaterial { margin, gap, ..*w };
        }
        let min = soft::MIN_VAL;
        let mix = match (a.solmix >= min, b.solmix >= min) {
            (true, true) => a.solmix / (a.solmix + b.solmix),
            (false, false) => 0.5,
            (false, true) => 0.0,
            (true, false) => 1.0,
        };
        let solref = if a.solref[0] > 0.0 && b.solref[0] > 0.0 {
            std::array::from_fn(|i| mix * a.solref[i] + (1.0 - mix) * b.solref[i])
        } else {
            std::array::from_fn(|i| a.solref[i].min(b.solref[i]))
        };
        SoftMaterial {
            solref,
            solimp: std::array::from_fn(|i| mix * a.solimp[i] + (1.0 - mix) * b.solimp[i]),
            solmix: 0.5 * (a.solmix + b.solmix),
            friction: std::array::from_fn(|i| a.friction[i].max(b.friction[i])),
            condim: a.condim.max(b.condim),
            priority: a.priority,
            margin,
            gap,
        }
    }
}

/// Contact material of a geom. Two geoms in contact combine their materials
/// as Drake does ([`Material::combine`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material {
    /// Point-contact stiffness k (N/m). `f64::INFINITY` marks a rigid geom:
    /// the pair then takes the other geom's stiffness.
    pub stiffness: f64,
    /// Hunt–Crossley dissipation d (s/m): normal force k·(−φ)·(1 − d·vn).
    pub dissipation: f64,
    /// Static friction coefficient μs (dimensionless).
    pub mu_static: f64,
    /// Dynamic (kinetic) friction coefficient μd ≤ μs (dimensionless).
    pub mu_dynamic: f64,
    /// MuJoCo's contact parameters, used instead of the fields above when
    /// both geoms of a pair have them (models with [`Semantics::MuJoCo`]).
    pub soft: Option<SoftMaterial>,
}

impl Default for Material {
    /// 1e5 N/m, 10 s/m, μs = μd = 1 (how MJCF files without cenic's
    /// extension attributes are mapped: the guide's "Models and MJCF",
    /// `docs/src/models.md`).
    fn default() -> Self {
        Self { stiffness: 1e5, dissipation: 10.0, mu_static: 1.0, mu_dynamic: 1.0, soft: None }
    }
}

impl Material {
    /// Combined material of a contact pair (guide: design, §One ICF step,
    /// `docs/src/design.md`): springs in
    /// series k = k1 k2/(k1 + k2), d = (k2 d1 + k1 d2)/(k1 + k2) and the
    /// harmonic mean μ = 2 μ1 μ2/(μ1 + μ2) for each friction coefficient.
    /// A rigid geom (infinite stiffness) yields the other geom's k and d.
    pub fn combine(a: &Material, b: &Material) -> Material {
        let (k, d) = match (a.stiffness.is_finite(), b.stiffness.is_finite()) {
            (true, true) => {
                let s = a.stiffness + b.stiffness;
                if s > 0.0 {
                    (a.stiffness * b.stiffness / s, (b.stiffness * a.dissipation + a.stiffness * b.dissipation) / s)
                } else {
                    (0.0, 0.5 * (a.dissipation + b.dissipation))
                }
            }
            (false, true) => (b.stiffness, b.dissipation),
            (true, false) => (a.stiffness, a.dissipation),
            (false, false) => (f64::INFINITY, 0.5 * (a.dissipation + b.dissipation)),
        };
        let harmonic = |x: f64, y: f64| {
            if x + y > 0.0 { 2.0 * x * y / (x + y) } else { 0.0 }
        };
        Material {
            stiffness: k,
            dissipation: d,
            mu_static: harmonic(a.mu_static, b.mu_static),
            mu_dynamic: harmonic(a.mu_dynamic, b.mu_dynamic),
            soft: match (&a.soft, &b.soft) {
                (Some(x), Some(y)) => Some(SoftMaterial::combine(x, y)),
                _ => None,
            },
        }
    }
}

/// Global simulation options.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Default time step for fixed-step mode and the initial step of error control (s).
    pub timestep: f64,
    /// Gravitational acceleration (m/s², world frame).
    pub gravity: [f64; 3],
    /// Stiction tolerance vs (m/s): the slip speed below which friction is
    /// regularised (static friction is modelled as creep slower than this).
    pub stiction_tolerance: f64,
    /// Contacts are reported while the signed distance φ is below this (m);
    /// each geom's own [`Geom::margin`] can raise it for that geom.
    pub margin: f64,
    /// Physics switches (MuJoCo's `<option><flag>`).
    pub flags: Flags,
    /// Contact and constraint semantics.
    pub semantics: Semantics,
    /// MuJoCo's `impratio` under [`Semantics::MuJoCo`]: the ratio of the
    /// friction rows' impedance to the normal's (1 by default; larger
    /// values make friction harder).
    pub impratio: f64,
    /// MuJoCo's integrator (`<option integrator>`), for
    /// [`crate::integrator::Mode::MuJoCo`].
    pub integrator: Integrator,
    /// Density of the surrounding medium (kg/m³) for fluid forces.
    pub density: f64,
    /// Dynamic viscosity of the medium (Pa·s) for fluid forces.
    pub viscosity: f64,
    /// Velocity of the medium (m/s, world frame) for fluid forces.
    pub wind: [f64; 3],
}

impl Default for Options {
    fn default() -> Self {
        Self {
            timestep: 0.002,
            gravity: [0.0, 0.0, -9.81],
            stiction_tolerance: 1e-4,
            margin: 0.0,
            flags: Flags::default(),
            semantics: Semantics::Physical,
            impratio: 1.0,
            integrator: Integrator::Euler,
            density: 0.0,
            viscosity: 0.0,
            wind: [0.0; 3],
        }
    }
}

impl Options {
    /// Whether fluid forces act (a medium with density or viscosity, and
    /// fluid forces switched on).
    pub fn has_fluid(&self) -> bool {
        self.flags.fluid && (self.density > 0.0 || self.viscosity > 0.0)
    }
}

/// A rigid body. Index 0 of [`Model::bodies`] is the world.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    /// Name (may be empty).
    pub name: String,
    /// Parent body index (the world's parent is itself, 0). Parents precede children.
    pub parent: usize,
    /// Position of the body frame in the parent frame (m).
    pub pos: [f64; 3],
    /// Orientation of the body frame relative to the parent frame (unit quaternion).
    pub quat: [f64; 4],
    /// Mass (kg).
    pub mass: f64,
    /// Centre of mass in the body frame (m).
    pub ipos: [f64; 3],
    /// Orientation of the principal axes of inertia in the body frame.
    pub iquat: [f64; 4],
    /// Principal moments of inertia about the centre of mass (kg·m²).
    pub inertia: [f64; 3],
    /// First joint of this body in [`Model::joints`].
    pub jnt_adr: usize,
    /// Number of joints of this body (0: welded to the parent).
    pub jnt_num: usize,
    /// First degree of freedom of this body.
    pub dof_adr: usize,
    /// Number of degrees of freedom of this body.
    pub dof_num: usize,
    /// The body this one moves with: itself if it has joints, else its
    /// parent's weld (0 for bodies fixed to the world).
    pub weld: usize,
    /// Root of this body's kinematic tree (the ancestor whose parent is the world; 0 for the world).
    pub root: usize,
    /// Last degree of freedom on the path from the world to this body (None if the body is static).
    pub last_dof: Option<usize>,
    /// Inverse effective mass of the body at qpos0 for translation (1/kg)
    /// and rotation (1/(kg·m²)): the mean diagonal of J M⁻¹ Jᵀ for the
    /// Jacobian J of its centre of mass (MuJoCo's `body_invweight0`; 0 for
    /// static bodies).
    pub invweight0: [f64; 2],
}

/// A joint connecting a body to its parent.
#[derive(Clone, Debug, PartialEq)]
pub struct Joint {
    /// Name (may be empty).
    pub name: String,
    /// Joint type.
    pub kind: JointKind,
    /// Body moved by this joint.
    pub body: usize,
    /// Anchor in the body frame (m).
    pub pos: [f64; 3],
    /// Unit axis in the body frame (hinge and slide).
    pub axis: [f64; 3],
    /// Index of the first position coordinate in q.
    pub qpos_adr: usize,
    /// Index of the first velocity coordinate in v.
    pub dof_adr: usize,
    /// Position limits (rad or m) when present; only hinge and slide joints.
    pub range: Option<[f64; 2]>,
    /// Softness of the limits as MuJoCo's `solreflimit` (time constant s,
    /// damping ratio; or −stiffness, −damping) and `solimplimit` (see [`soft`]).
    pub limit_softness: soft::Softness,
    /// Limit margin (rad or m): each limit acts once q is closer to it than this.
    pub limit_margin: f64,
    /// The force law of each limit (when `range` is set), compiled from
    /// `limit_softness` and the dof's effective mass 1/[`Dof::invweight0`].
    pub limit_law: Option<soft::SpringLaw>,
    /// Reflected rotor inertia added to the mass-matrix diagonal (kg·m² or kg).
    pub armature: f64,
    /// Viscous damping (N·m·s/rad or N·s/m), integrated implicitly.
    pub damping: f64,
    /// Dry friction (N·m or N): a friction force of at most this magnitude
    /// opposes the joint's motion (MuJoCo's `frictionloss`, regularised like
    /// contact friction, see [`crate::icf`]).
    pub frictionloss: f64,
    /// Softness of the dry friction under [`Semantics::MuJoCo`] (MuJoCo's
    /// `solreffriction`, `solimpfriction`).
    pub friction_softness: soft::Softness,
    /// Passive spring stiffness (N·m/rad or N/m) towards `springref`.
    pub stiffness: f64,
    /// Spring rest position (rad or m), hinge and slide only.
    pub springref: f64,
    /// Reference position (the joint value at which the body sits at its
    /// model pose); the value of q at `qpos0`.
    pub reference: f64,
}

/// One degree of freedom (velocity coordinate).
#[derive(Clone, Debug, PartialEq)]
pub struct Dof {
    /// Body this dof moves.
    pub body: usize,
    /// Joint this dof belongs to.
    pub joint: usize,
    /// Previous dof on the path to the world (None at a tree root).
    pub parent: Option<usize>,
    /// Armature (kg·m² or kg).
    pub armature: f64,
    /// Damping (N·m·s/rad or N·s/m).
    pub damping: f64,
    /// Inverse effective mass of the dof at `qpos0`, the diagonal entry of
    /// M⁻¹ (1/(kg·m²) or 1/kg; MuJoCo's `dof_invweight0` for hinge and slide
    /// dofs): the inertia a force on this dof alone feels when every other
    /// dof moves freely.
    pub invweight0: f64,
}

/// A collision geom attached to a body.
#[derive(Clone, Debug, PartialEq)]
pub struct Geom {
    /// Name (may be empty).
    pub name: String,
    /// Shape type.
    pub kind: GeomKind,
    /// Shape parameters (m); meaning per [`GeomKind`].
    pub size: [f64; 3],
    /// Index into [`Model::meshes`] for mesh geoms.
    pub mesh: Option<usize>,
    /// Index into [`Model::hfields`] for height-field geoms.
    pub hfield: Option<usize>,
    /// Body the geom is attached to.
    pub body: usize,
    /// Position in the body frame (m).
    pub pos: [f64; 3],
    /// Orientation in the body frame.
    pub quat: [f64; 4],
    /// Contact material.
    pub material: Material,
    /// Collision type bit mask.
    pub contype: u32,
    /// Collision affinity bit mask. Two geoms may collide when
    /// `(contype1 & conaffinity2) | (contype2 & conaffinity1) != 0`.
    pub conaffinity: u32,
    /// Contact reporting margin of this geom (m); the pair uses the larger of
    /// the two geoms' margins and [`Options::margin`].
    pub margin: f64,
    /// Radius of a sphere about the geom origin that bounds the shape (m);
    /// infinite for planes.
    pub rbound: f64,
    /// How the geom is drawn (no effect on the simulation).
    pub visual: GeomVisual,
}

/// A named frame on a body (for sensors, targets, tendons, tests).
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    /// Name (may be empty).
    pub name: String,
    /// Body the site is attached to.
    pub body: usize,
    /// Position in the body frame (m).
    pub pos: [f64; 3],
    /// Orientation in the body frame.
    pub quat: [f64; 4],
    /// Shape of the site's volume (touch sensors count contacts inside it):
    /// sphere, capsule, cylinder, ellipsoid or box.
    pub kind: GeomKind,
    /// Size of the volume (m), as for a geom of `kind`.
    pub size: [f64; 3],
}

/// Actuator dynamics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ActuatorKind {
    /// Direct torque/force motor: τ = gear · clamp(ctrl, force_range) (explicit).
    Motor {
        /// Transmission ratio (N·m or N per unit of actuator force).
        gear: f64,
        /// Limits on the actuator force before the gear (MJCF `forcerange`), when present.
        force_range: Option<[f64; 2]>,
    },
    /// Position servo with an effort limit, treated implicitly:
    /// τ = clamp(kp (ctrl − q) + kd (v_ref − v), −effort_limit, effort_limit).
    Position {
        /// Position gain (N·m/rad or N/m).
        kp: f64,
        /// Velocity gain (N·m·s/rad or N·s/m).
        kd: f64,
        /// Largest magnitude of the generalized force (N·m or N); infinite when unlimited.
        effort_limit: f64,
    },
    /// MuJoCo's general actuator (MJCF `<general>` and the shortcuts that
    /// are not a plain motor or position servo): force
    /// f = gain·input + bias, clamped to the force range, on a joint,
    /// tendon or site; see [`GeneralActuator`].
    General(GeneralActuator),
}

/// Where a general actuator applies its force (its transmission), with
/// `gear` scaling (MJCF `joint`, `tendon`, `site`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Transmission {
    /// A hinge or slide joint: length L = `gear[0]`·q, generalized force `gear[0]`·f.
    Joint(usize),
    /// A tendon: L = `gear[0]`·(tendon length), force along the tendon `gear[0]`·f.
    Tendon(usize),
    /// A site: a force `gear[0..3]`·f and torque `gear[3..6]`·f in the site's
    /// frame at the site (a thruster); the length is 0 (MuJoCo without `refsite`).
    Site(usize),
}

/// Activation dynamics of a general actuator (MJCF `dyntype`), with
/// actuation input u = ctrl (clamped to the control range).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ActDynamics {
    /// No activation: the force input is u itself.
    None,
    /// ȧ = u (`integrator`).
    Integrator,
    /// ȧ = (u − a)/τ (`filter`; cenic integrates it exactly, like `filterexact`).
    Filter {
        /// Time constant τ (s), > 0.
        tau: f64,
    },
    /// The same filter, integrated exactly (`filterexact`).
    FilterExact {
        /// Time constant τ (s), > 0.
        tau: f64,
    },
}

/// A general actuator: length L and velocity L̇ = m·v of its transmission
/// (moment vector m, gear included), force
/// f = (g0 + g1·L + g2·L̇)·input + b0 + b1·L + b2·L̇, clamped to
/// `force_range`, generalized force mᵀ f. The input is the activation
/// when the actuator has one, else the control.
///
/// When the force does not increase with the actuator's own motion
/// (∂f/∂L ≤ 0 and ∂f/∂L̇ ≤ 0: a position or velocity servo, a damper) it is
/// treated implicitly in the convex step, like [`ActuatorKind::Position`]:
/// f(v) = clamp(f0 − (h·kp + kd)·m·v, lo, hi) with kp = −∂f/∂L and
/// kd = −∂f/∂L̇. Otherwise it is explicit, evaluated at the start of the step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeneralActuator {
    /// Transmission.
    pub transmission: Transmission,
    /// Gear (only the first entry for joints and tendons).
    pub gear: [f64; 6],
    /// Activation dynamics.
    pub dynamics: ActDynamics,
    /// Gain parameters [g0, g1, g2] (`gaintype` fixed: [g0, 0, 0]).
    pub gain: [f64; 3],
    /// Bias parameters [b0, b1, b2] (`biastype` none: zeros).
    pub bias: [f64; 3],
    /// Limits of the force f (before the transmission), when present.
    pub force_range: Option<[f64; 2]>,
    /// Limits of the activation, when present (`actlimited`).
    pub act_range: Option<[f64; 2]>,
    /// Index of the activation in the activation vector (when it has one).
    pub act_adr: Option<usize>,
}

/// An actuator. Motor and position actuators act on one hinge or slide
/// joint ([`Actuator::joint`]); general actuators name their transmission.
#[derive(Clone, Debug, PartialEq)]
pub struct Actuator {
    /// Name (may be empty).
    pub name: String,
    /// Actuated joint (hinge or slide) of motor and position actuators and
    /// of general actuators with a joint transmission; `usize::MAX` for
    /// other transmissions.
    pub joint: usize,
    /// Dynamics.
    pub kind: ActuatorKind,
    /// Controls are clamped to this range when present (motor: control
    /// units; position: rad or m).
    pub ctrl_range: Option<[f64; 2]>,
}

/// A named state: positions, velocities and controls.
#[derive(Clone, Debug, PartialEq)]
pub struct Keyframe {
    /// Name (may be empty).
    pub name: String,
    /// Simulation time (s).
    pub time: f64,
    /// Positions (length nq).
    pub qpos: Vec<f64>,
    /// Velocities (length nv).
    pub qvel: Vec<f64>,
    /// Controls (length nu).
    pub ctrl: Vec<f64>,
    /// Actuator activations (length na).
    pub act: Vec<f64>,
}

/// An immutable, validated model. See the module docs for conventions.
#[derive(Clone, Debug)]
pub struct Model {
    /// Model name.
    pub name: String,
    /// Global options.
    pub options: Options,
    /// Bodies; index 0 is the world. Parents precede children.
    pub bodies: Vec<Body>,
    /// Joints, ordered by body.
    pub joints: Vec<Joint>,
    /// Degrees of freedom, ordered by joint.
    pub dofs: Vec<Dof>,
    /// Collision geoms.
    pub geoms: Vec<Geom>,
    /// Sites.
    pub sites: Vec<Site>,
    /// Convex meshes referenced by mesh geoms.
    pub meshes: Vec<ConvexMesh>,
    /// Height fields referenced by height-field geoms.
    pub hfields: Vec<HeightField>,
    /// Actuators; the control vector has one entry per actuator.
    pub actuators: Vec<Actuator>,
    /// Tendons.
    pub tendons: Vec<Tendon>,
    /// Equality constraints.
    pub equalities: Vec<Equality>,
    /// Explicit contact pairs.
    pub pairs: Vec<ContactPair>,
    /// Body pairs that never collide (MJCF `<contact><exclude>`), each sorted.
    pub excludes: Vec<[usize; 2]>,
    /// Sensors; their outputs fill the sensor data vector in order.
    pub sensors: Vec<Sensor>,
    /// Number of actuator activation states.
    pub na: usize,
    /// Length of the sensor data vector.
    pub nsensordata: usize,
    /// Keyframes.
    pub keyframes: Vec<Keyframe>,
    /// Number of position coordinates.
    pub nq: usize,
    /// Number of velocity coordinates (degrees of freedom).
    pub nv: usize,
    /// Reference configuration (joint references; identity quaternions; free
    /// joints at the body's model pose).
    pub qpos0: Vec<f64>,
    /// Warnings collected while loading (unsupported but harmless settings).
    pub warnings: Vec<String>,
    /// Colours, materials and cameras ([`crate::render`]; no effect on the simulation).
    pub visual: Visual,
}

impl Model {
    /// Number of actuators (length of the control vector).
    pub fn nu(&self) -> usize {
        self.actuators.len()
    }
    /// Total mass of all bodies (kg).
    pub fn total_mass(&self) -> f64 {
        self.bodies.iter().map(|b| b.mass).sum()
    }
    /// Index of the body with this name.
    pub fn body_id(&self, name: &str) -> Option<usize> {
        self.bodies.iter().position(|b| b.name == name)
    }
    /// Index of the joint with this name.
    pub fn joint_id(&self, name: &str) -> Option<usize> {
        self.joints.iter().position(|j| j.name == name)
    }
    /// Index of the geom with this name.
    pub fn geom_id(&self, name: &str) -> Option<usize> {
        self.geoms.iter().position(|g| g.name == name)
    }
    /// Index of the site with this name.
    pub fn site_id(&self, name: &str) -> Option<usize> {
        self.sites.iter().position(|s| s.name == name)
    }
    /// Index of the actuator with this name.
    pub fn actuator_id(&self, name: &str) -> Option<usize> {
        self.actuators.iter().position(|a| a.name == name)
    }
    /// Keyframe by name, or by index when `key` parses as an integer.
    pub fn keyframe(&self, key: &str) -> Option<&Keyframe> {
        if let Ok(i) = key.parse::<usize>() {
            return self.keyframes.get(i);
        }
        self.keyframes.iter().find(|k| k.name == key)
    }
    /// True when the body moves (belongs to a tree with degrees of freedom).
    pub fn body_is_dynamic(&self, b: usize) -> bool {
        self.bodies[b].weld != 0
    }
    /// Whether geoms `a` and `b` may collide through MuJoCo's dynamic
    /// filtering: contacts switched on, contype/conaffinity masks, not on
    /// the same weld group, not parent–child (unless the parent is the world
    /// or `filterparent` is off), their bodies not excluded
    /// ([`Model::excludes`]), and no explicit pair for them (an explicit
    /// pair replaces the dynamic one, see [`Model::contact_pair`]).
    pub fn geoms_can_collide(&self, a: usize, b: usize) -> bool {
        if !self.options.flags.contact {
            return false;
        }
        let (ga, gb) = (&self.geoms[a], &self.geoms[b]);
        if (ga.contype & gb.conaffinity) == 0 && (gb.contype & ga.conaffinity) == 0 {
            return false;
        }
        let wa = self.bodies[ga.body].weld;
        let wb = self.bodies[gb.body].weld;
        if wa == wb {
            return false;
        }
        // Parent–child exclusion on weld groups, except with the world.
        let pa = self.bodies[self.bodies[wa].parent].weld;
        let pb = self.bodies[self.bodies[wb].parent].weld;
        let parent_child = wa != 0 && wb != 0 && (pa == wb || pb == wa);
        if self.options.flags.filterparent && parent_child {
            return false;
        }
        let body_pair = [ga.body.min(gb.body), ga.body.max(gb.body)];
        if self.excludes.contains(&body_pair) {
            return false;
        }
        self.contact_pair(a, b).is_none()
    }
    /// The explicit contact pair of geoms `a` and `b` (either order), when
    /// there is one and contacts are switched on.
    pub fn contact_pair(&self, a: usize, b: usize) -> Option<&ContactPair> {
        if !self.options.flags.contact || self.pairs.is_empty() {
            return None;
        }
        self.pairs.iter().find(|p| (p.geom[0] == a && p.geom[1] == b) || (p.geom[0] == b && p.geom[1] == a))
    }
    /// Whether geoms `a` and `b` can be in contact at all: dynamically
    /// ([`Model::geoms_can_collide`]) or through an explicit pair.
    pub fn geoms_may_touch(&self, a: usize, b: usize) -> bool {
        self.geoms_can_collide(a, b) || self.contact_pair(a, b).is_some()
    }
    /// The first feature of this model that the GPU batch does not simulate,
    /// naming the element, or `None` when the GPU path covers the model:
    /// tendons that act (limits, spring, damping, friction loss), joint
    /// friction loss, equality constraints, general actuators (and with them
    /// activation states and tendon or site transmissions), explicit contact
    /// pairs, fluid forces, and switched-off actuation, springs, dampers or
    /// control clamping. (Contact exclusions, `filterparent` and switched-off
    /// contacts, limits or gravity act through the model itself and run on
    /// the GPU.)
    pub fn gpu_unsupported(&self) -> Option<String> {
        for (i, t) in self.tendons.iter().enumerate() {
            if t.range.is_some() || t.stiffness != 0.0 || t.damping != 0.0 || t.frictionloss != 0.0 {
                return Some(format!(
                    "tendon '{}' (limits, stiffness, damping or friction loss)",
                    display_name(&t.name, i)
                ));
            }
        }
        if let Some((i, j)) = self.joints.iter().enumerate().find(|(_, j)| j.frictionloss > 0.0) {
            return Some(format!("friction loss of joint '{}'", display_name(&j.name, i)));
        }
        if let Some((i, e)) = self.equalities.iter().enumerate().next() {
            return Some(format!("equality constraint '{}' ({})", display_name(&e.name, i), e.kind_name()));
        }
        for (i, a) in self.actuators.iter().enumerate() {
            if let ActuatorKind::General(g) = &a.kind {
                let what =
                    if g.act_adr.is_some() { "general actuator with an activation state" } else { "general actuator" };
                return Some(format!("{what} '{}'", display_name(&a.name, i)));
            }
        }
        if let Some((i, p)) = self.pairs.iter().enumerate().next() {
            return Some(format!("explicit contact pair '{}'", display_name(&p.name, i)));
        }
        if self.options.has_fluid() {
            return Some("fluid forces (option density/viscosity)".into());
        }
        let f = self.options.flags;
        for (off, what) in [
            (!f.actuation, "option flag actuation=\"disable\""),
            (!f.spring, "option flag spring=\"disable\""),
            (!f.damper, "option flag damper=\"disable\""),
            (!f.clampctrl, "option flag clampctrl=\"disable\""),
        ] {
            if off {
                return Some(what.into());
            }
        }
        None
    }
}

/// A name for messages: the name, or `#index` when it is empty.
pub(crate) fn display_name(name: &str, i: usize) -> String {
    if name.is_empty() { format!("#{i}") } else { name.to_string() }
}
