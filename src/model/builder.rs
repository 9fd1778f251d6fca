//! [`ModelBuilder`]: write models in code; the MJCF loader uses it too.
//! `build()` validates everything and derives the compiled layout, returning
//! a [`ModelError`] (never panicking) on bad input.

use super::inertia::{InertiaAccumulator, geom_unit_mass_props};
use super::soft::{Softness, SpringLaw};
use super::*;
use crate::math::{Mat3, Quat, Vec3};

/// Index of the world body.
pub const WORLD: usize = 0;

/// Explicit inertial properties of a body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inertial {
    /// Mass (kg), ≥ 0 (0: a massless body, e.g. a sensor frame welded to its parent).
    pub mass: f64,
    /// Centre of mass in the body frame (m).
    pub pos: [f64; 3],
    /// Orientation of the principal axes in the body frame.
    pub quat: [f64; 4],
    /// Principal moments about the centre of mass (kg·m²), each ≥ 0 and
    /// satisfying the triangle inequality.
    pub diag: [f64; 3],
}

impl Inertial {
    /// From a full inertia tensor about the centre of mass, body axes,
    /// given as [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] (kg·m²; MuJoCo's `fullinertia`
    /// order). Fails when the tensor is not positive definite.
    pub fn from_full(mass: f64, pos: [f64; 3], full: [f64; 6]) -> Result<Self, String> {
        let [xx, yy, zz, xy, xz, yz] = full;
        let m = Mat3::from_rows([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]);
        let (vals, vecs) = m.sym_eigen();
        if !(vals.x > 0.0) {
            return Err(format!("full inertia {full:?} is not positive definite (eigenvalues {:?})", vals.to_array()));
        }
        Ok(Self { mass, pos, quat: Quat::from_mat3(&vecs).to_array(), diag: vals.to_array() })
    }
}

/// A body to add. `inertial: None` computes mass properties from the
/// body's geoms (MuJoCo's `inertiafromgeom`).
#[derive(Clone, Debug, PartialEq)]
pub struct BodySpec {
    /// Name (may be empty; non-empty names must be unique).
    pub name: String,
    /// Parent body (must already exist; [`WORLD`] for top-level bodies).
    pub parent: usize,
    /// Position relative to the parent frame (m).
    pub pos: [f64; 3],
    /// Orientation relative to the parent frame (normalised by the builder).
    pub quat: [f64; 4],
    /// Explicit inertial properties, or `None` to derive them from geoms.
    pub inertial: Option<Inertial>,
}

impl BodySpec {
    /// A body at `pos` (m) under `parent`, identity orientation, inertia from geoms.
    pub fn new(name: &str, parent: usize, pos: [f64; 3]) -> Self {
        Self { name: name.into(), parent, pos, quat: [1.0, 0.0, 0.0, 0.0], inertial: None }
    }
}

/// A joint to add.
#[derive(Clone, Debug, PartialEq)]
pub struct JointSpec {
    /// Name (may be empty; non-empty names must be unique).
    pub name: String,
    /// Type.
    pub kind: JointKind,
    /// Body moved by the joint.
    pub body: usize,
    /// Anchor in the body frame (m); ignored for free joints.
    pub pos: [f64; 3],
    /// Axis in the body frame (normalised by the builder; hinge and slide).
    pub axis: [f64; 3],
    /// Position limits [lower, upper] (rad or m), hinge and slide only.
    pub range: Option<[f64; 2]>,
    /// Softness of the limits (MuJoCo's `solreflimit`, `solimplimit`;
    /// MuJoCo's defaults when built with [`JointSpec::new`]).
    pub limit_softness: Softness,
    /// Limit margin (rad or m), ≥ 0: a limit acts once q is closer to it than this.
    pub limit_margin: f64,
    /// Armature (kg·m² or kg), ≥ 0.
    pub armature: f64,
    /// Damping (N·m·s/rad or N·s/m), ≥ 0.
    pub damping: f64,
    /// Dry friction (N·m or N) opposing the joint's motion, ≥ 0.
    pub frictionloss: f64,
    /// Softness of the dry friction under [`Semantics::MuJoCo`](super::Semantics::MuJoCo)
    /// (MuJoCo's `solreffriction`, `solimpfriction`).
    pub friction_softness: Softness,
    /// Spring stiffness (N·m/rad or N/m), ≥ 0.
    pub stiffness: f64,
    /// Spring rest position (rad or m).
    pub springref: f64,
    /// Reference position (rad or m): the value of q at the model pose.
    pub reference: f64,
}

impl JointSpec {
    /// A joint of `kind` on `body` with default parameters (z axis, no
    /// limits, no armature, damping or stiffness).
    pub fn new(name: &str, kind: JointKind, body: usize) -> Self {
        Self {
            name: name.into(),
            kind,
            body,
            pos: [0.0; 3],
            axis: [0.0, 0.0, 1.0],
            range: None,
            limit_softness: Softness::default(),
            limit_margin: 0.0,
            armature: 0.0,
            damping: 0.0,
            frictionloss: 0.0,
            friction_softness: Softness::default(),
            stiffness: 0.0,
            springref: 0.0,
            reference: 0.0,
        }
    }
}

/// A geom to add.
#[derive(Clone, Debug, PartialEq)]
pub struct GeomSpec {
    /// Name (may be empty; non-empty names must be unique).
    pub name: String,
    /// Type.
    pub kind: GeomKind,
    /// Size parameters (m), see [`GeomKind`].
    pub size: [f64; 3],
    /// Mesh index for mesh geoms (from [`ModelBuilder::add_mesh`]).
    pub mesh: Option<usize>,
    /// Height-field index for height-field geoms (from
    /// [`ModelBuilder::add_hfield`]); their `size` is ignored (taken from the field).
    pub hfield: Option<usize>,
    /// Body.
    pub body: usize,
    /// Position in the body frame (m).
    pub pos: [f64; 3],
    /// Orientation in the body frame.
    pub quat: [f64; 4],
    /// Contact material.
    pub material: Material,
    /// Collision type bits.
    pub contype: u32,
    /// Collision affinity bits.
    pub conaffinity: u32,
    /// Reporting margin (m), ≥ 0.
    pub margin: f64,
    /// Mass (kg) used for body inertia; overrides `density` when set.
    pub mass: Option<f64>,
    /// Density (kg/m³) used for body inertia when `mass` is not set.
    pub density: f64,
    /// How the geom is drawn (no effect on the simulation).
    pub visual: GeomVisual,
}

impl GeomSpec {
    /// A geom of `kind` and `size` on `body` at the body origin, default
    /// material, collides with everything, density 1000 kg/m³.
    pub fn new(name: &str, kind: GeomKind, size: [f64; 3], body: usize) -> Self {
        Self {
            name: name.into(),
            kind,
            size,
            mesh: None,
            hfield: None,
            body,
            pos: [0.0; 3],
            quat: [1.0, 0.0, 0.0, 0.0],
            material: Material::default(),
            contype: 1,
            conaffinity: 1,
            margin: 0.0,
            mass: None,
            density: 1000.0,
            visual: GeomVisual::default(),
        }
    }
}

/// How body inertias are derived from geoms (MuJoCo's `inertiafromgeom`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InertiaFromGeom {
    /// From geoms only for bodies without explicit inertial properties.
    #[default]
    Auto,
    /// Always from geoms, ignoring explicit inertial properties.
    Always,
    /// Never: bodies without explicit inertial properties are massless.
    Never,
}

/// A tendon to add; the builder derives its length at qpos0, effective
/// mass and limit law.
#[derive(Clone, Debug, PartialEq)]
pub struct TendonSpec {
    /// Name (may be empty; non-empty names must be unique).
    pub name: String,
    /// Path (joints or sites).
    pub path: TendonPath,
    /// Length limits [lower, upper] (m), when limited.
    pub range: Option<[f64; 2]>,
    /// Softness of the limits (MuJoCo's defaults from [`TendonSpec::new`]).
    pub limit_softness: Softness,
    /// Limit margin (m), ≥ 0.
    pub limit_margin: f64,
    /// Spring stiffness (N/m), ≥ 0.
    pub stiffness: f64,
    /// Damping (N·s/m), ≥ 0.
    pub damping: f64,
    /// Dry friction force (N) opposing the length rate, ≥ 0.
    pub frictionloss: f64,
    /// Softness of the dry friction under [`Semantics::MuJoCo`](super::Semantics::MuJoCo)
    /// (MuJoCo's `solreffriction`, `solimpfriction`).
    pub friction_softness: Softness,
    /// Rest length range [low, high] (m); `None`: the length at qpos0.
    pub springlength: Option<[f64; 2]>,
}

impl TendonSpec {
    /// A tendon along `path` without limits, spring or damping.
    pub fn new(name: &str, path: TendonPath) -> Self {
        Self {
            name: name.into(),
            path,
            range: None,
            limit_softness: Softness::default(),
            limit_margin: 0.0,
            stiffness: 0.0,
            damping: 0.0,
            frictionloss: 0.0,
            friction_softness: Softness::default(),
            springlength: None,
        }
    }
}

/// An equality constraint to add.
#[derive(Clone, Debug, PartialEq)]
pub struct EqualitySpec {
    /// Name (may be empty; non-empty names must be unique).
    pub name: String,
    /// Kind and objects.
    pub kind: EqualityKind,
    /// Whether it acts.
    pub active: bool,
    /// `solref`/`solimp`.
    pub softness: Softness,
    /// Complete the kind from the model pose at qpos0, so the constraint
    /// holds there (as MJCF does when the second point or the relative pose
    /// is not given): for a connect, `anchor[1]` becomes body 0's point
    /// `anchor[0]` seen from body 1; for a weld, `anchor[0]`/`quat[0]` become
    /// body 1's frame (`anchor[1]`, `quat[1]`) seen from body 0.
    pub fit_at_qpos0: bool,
}

/// Builds a [`Model`]. Add bodies (parents first), joints, geoms, sites,
/// actuators, tendons, equality constraints, contact pairs and exclusions,
/// sensors and keyframes, then call [`build`](Self::build).
#[derive(Clone, Debug)]
pub struct ModelBuilder {
    name: String,
    /// Global options.
    pub options: Options,
    /// How body inertias derive from geoms.
    pub inertia_from_geom: InertiaFromGeom,
    /// When set, all masses and inertias are scaled so the total mass equals this (kg).
    pub total_mass: Option<f64>,
    /// Materials, cameras and statistic ([`Model::visual`]); geoms refer to
    /// the materials by index, cameras to bodies.
    pub visual: Visual,
    bodies: Vec<BodySpec>,
    joints: Vec<JointSpec>,
    geoms: Vec<GeomSpec>,
    sites: Vec<Site>,
    meshes: Vec<ConvexMesh>,
    hfields: Vec<HeightField>,
    actuators: Vec<Actuator>,
    tendons: Vec<TendonSpec>,
    equalities: Vec<EqualitySpec>,
    pairs: Vec<ContactPair>,
    excludes: Vec<[usize; 2]>,
    sensors: Vec<Sensor>,
    keyframes: Vec<Keyframe>,
    warnings: Vec<String>,
    /// (actuator, damping ratio): the velocity gain is set from the
    /// actuator's effective inertia at qpos0 by `build`.
    dampratios: Vec<(usize, f64)>,
}

impl ModelBuilder {
    /// A builder holding only the world body.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            options: Options::default(),
            inertia_from_geom: InertiaFromGeom::Auto,
            total_mass: None,
            visual: Visual::default(),
            bodies: vec![BodySpec {
                name: "world".into(),
                parent: WORLD,
                pos: [0.0; 3],
                quat: [1.0, 0.0, 0.0, 0.0],
                inertial: None,
            }],
            joints: vec![],
            geoms: vec![],
            sites: vec![],
            meshes: vec![],
            hfields: vec![],
            actuators: vec![],
            tendons: vec![],
            equalities: vec![],
            pairs: vec![],
            excludes: vec![],
            sensors: vec![],
            keyframes: vec![],
            warnings: vec![],
            dampratios: vec![],
        }
    }
    /// Adds a body; returns its index.
    pub fn add_body(&mut self, b: BodySpec) -> usize {
        self.bodies.push(b);
        self.bodies.len() - 1
    }
    /// Adds a joint; returns its index (joints are kept in insertion order,
    /// which must group them by body in body order).
    pub fn add_joint(&mut self, j: JointSpec) -> usize {
        self.joints.push(j);
        self.joints.len() - 1
    }
    /// Adds a geom; returns its index.
    pub fn add_geom(&mut self, g: GeomSpec) -> usize {
        self.geoms.push(g);
        self.geoms.len() - 1
    }
    /// Adds a convex mesh from vertices (m, geom frame); returns its index.
    pub fn add_mesh(&mut self, name: &str, vertices: &[[f64; 3]]) -> Result<usize, ModelError> {
        let m = ConvexMesh::from_points(name, vertices)
            .map_err(|e| ModelError::invalid(Entity::Mesh(self.meshes.len()), name, e))?;
        self.meshes.push(m);
        Ok(self.meshes.len() - 1)
    }
    /// Adds a height field; returns its index.
    pub fn add_hfield(&mut self, field: HeightField) -> usize {
        self.hfields.push(field);
        self.hfields.len() - 1
    }
    /// Index of the height field with this (non-empty) name.
    pub fn hfield_by_name(&self, name: &str) -> Option<usize> {
        self.hfields.iter().position(|h| !name.is_empty() && h.name == name)
    }
    /// Adds a site; returns its index.
    pub fn add_site(&mut self, s: Site) -> usize {
        self.sites.push(s);
        self.sites.len() - 1
    }
    /// Adds an actuator; returns its index.
    pub fn add_actuator(&mut self, a: Actuator) -> usize {
        self.actuators.push(a);
        self.actuators.len() - 1
    }
    /// Adds a tendon; returns its index.
    pub fn add_tendon(&mut self, t: TendonSpec) -> usize {
        self.tendons.push(t);
        self.tendons.len() - 1
    }
    /// Adds an equality constraint; returns its index.
    pub fn add_equality(&mut self, e: EqualitySpec) -> usize {
        self.equalities.push(e);
        self.equalities.len() - 1
    }
    /// Adds an explicit contact pair; returns its index.
    pub fn add_pair(&mut self, p: ContactPair) -> usize {
        self.pairs.push(p);
        self.pairs.len() - 1
    }
    /// Excludes contacts between the geoms of bodies `a` and `b`.
    pub fn add_exclude(&mut self, a: usize, b: usize) {
        self.excludes.push([a.min(b), a.max(b)]);
    }
    /// Gives the position servo `actuator` (a [`ActuatorKind::Position`], or
    /// a general actuator with an affine bias) the velocity gain
    /// kd = 2·ratio·√(kp·m), with m the inertia its transmission moves at
    /// qpos0 (1/(m M⁻¹ mᵀ) for its moment m): MJCF's `dampratio`.
    pub fn set_actuator_dampratio(&mut self, actuator: usize, ratio: f64) {
        self.dampratios.push((actuator, ratio));
    }
    /// Adds a sensor (its `adr` is assigned by `build`); returns its index.
    pub fn add_sensor(&mut self, s: Sensor) -> usize {
        self.sensors.push(s);
        self.sensors.len() - 1
    }
    /// Adds a keyframe (its vectors are checked against nq, nv, nu by `build`).
    pub fn add_keyframe(&mut self, k: Keyframe) -> usize {
        self.keyframes.push(k);
        self.keyframes.len() - 1
    }
    /// Records a loader warning that `build` copies into [`Model::warnings`].
    pub fn warn(&mut self, w: impl Into<String>) {
        self.warnings.push(w.into());
    }
    /// Number of bodies so far (including the world).
    pub fn body_count(&self) -> usize {
        self.bodies.len()
    }
    /// Number of joints so far.
    pub fn joint_count(&self) -> usize {
        self.joints.len()
    }
    /// Number of geoms so far.
    pub fn geom_count(&self) -> usize {
        self.geoms.len()
    }
    /// Number of meshes so far.
    pub fn mesh_count(&self) -> usize {
        self.meshes.len()
    }
    /// Number of actuators so far.
    pub fn actuator_count(&self) -> usize {
        self.actuators.len()
    }
    /// Number of keyframes so far.
    pub fn keyframe_count(&self) -> usize {
        self.keyframes.len()
    }
    /// Number of tendons so far.
    pub fn tendon_count(&self) -> usize {
        self.tendons.len()
    }
    /// Number of sites so far.
    pub fn site_count(&self) -> usize {
        self.sites.len()
    }
    /// Number of actuator activations so far (general actuators with dynamics).
    pub fn activation_count(&self) -> usize {
        self.actuators
            .iter()
            .filter(|a| matches!(a.kind, ActuatorKind::General(g) if g.dynamics != ActDynamics::None))
            .count()
    }
    /// Index of the site with this (non-empty) name.
    pub fn site_by_name(&self, name: &str) -> Option<usize> {
        self.sites.iter().position(|s| !name.is_empty() && s.name == name)
    }
    /// Index of the geom with this (non-empty) name.
    pub fn geom_by_name(&self, name: &str) -> Option<usize> {
        self.geoms.iter().position(|g| !name.is_empty() && g.name == name)
    }
    /// Index of the tendon with this (non-empty) name.
    pub fn tendon_by_name(&self, name: &str) -> Option<usize> {
        self.tendons.iter().position(|t| !name.is_empty() && t.name == name)
    }
    /// Index of the actuator with this (non-empty) name.
    pub fn actuator_by_name(&self, name: &str) -> Option<usize> {
        self.actuators.iter().position(|a| !name.is_empty() && a.name == name)
    }
    /// Kind of joint `j` (when it exists).
    pub fn joint_kind(&self, j: usize) -> Option<JointKind> {
        self.joints.get(j).map(|j| j.kind)
    }
    /// Site `s` (when it exists).
    pub fn site(&self, s: usize) -> Option<&Site> {
        self.sites.get(s)
    }
    /// Index of the joint with this (non-empty) name.
    pub fn joint_by_name(&self, name: &str) -> Option<usize> {
        self.joints.iter().position(|j| !name.is_empty() && j.name == name)
    }
    /// Index of the body with this (non-empty) name.
    pub fn body_by_name(&self, name: &str) -> Option<usize> {
        self.bodies.iter().position(|b| !name.is_empty() && b.name == name)
    }
    /// Index of the mesh with this (non-empty) name.
    pub fn mesh_by_name(&self, name: &str) -> Option<usize> {
        self.meshes.iter().position(|m| !name.is_empty() && m.name == name)
    }

    /// Validates the model and derives its compiled layout.
    pub fn build(self) -> Result<Model, ModelError> {
        let ModelBuilder {
            name,
            options,
            inertia_from_geom,
            total_mass,
            visual,
            bodies: bspecs,
            joints: jspecs,
            geoms: gspecs,
            sites,
            meshes,
            hfields,
            mut actuators,
            tendons: tspecs,
            equalities: especs,
            pairs,
            mut excludes,
            mut sensors,
            keyframes,
            warnings,
            dampratios,
        } = self;

        validate_options(&options)?;
        validate_visual(&visual, bspecs.len(), &gspecs)?;
        check_unique_names(bspecs.iter().map(|b| b.name.as_str()), Entity::Body)?;
        check_unique_names(jspecs.iter().map(|j| j.name.as_str()), Entity::Joint)?;
        check_unique_names(gspecs.iter().map(|g| g.name.as_str()), Entity::Geom)?;
        check_unique_names(sites.iter().map(|s| s.name.as_str()), Entity::Site)?;
        check_unique_names(actuators.iter().map(|a| a.name.as_str()), Entity::Actuator)?;
        check_unique_names(tspecs.iter().map(|t| t.name.as_str()), Entity::Tendon)?;
        check_unique_names(especs.iter().map(|e| e.name.as_str()), Entity::Equality)?;
        check_unique_names(pairs.iter().map(|p| p.name.as_str()), Entity::Pair)?;
        check_unique_names(sensors.iter().map(|s| s.name.as_str()), Entity::Sensor)?;

        // Each stage checks its elements and reports the first bad one by
        // index and name; the later stages see only checked input.
        validate_bodies(&bspecs)?;
        validate_joints(&jspecs, &bspecs)?;
        let (mut bodies, joints, dofs, qpos0) = compile_tree(&bspecs, &jspecs);
        let nbody = bodies.len();
        let (nq, nv) = (qpos0.len(), dofs.len());
        let geoms = compile_geoms(&gspecs, &bodies, &meshes, &hfields)?;
        body_inertias(&mut bodies, &bspecs, &gspecs, &geoms, &meshes, inertia_from_geom)?;
        scale_total_mass(&mut bodies, total_mass, &name)?;
        validate_sites(&sites, nbody)?;
        let na = compile_actuators(&mut actuators, &joints, tspecs.len(), sites.len())?;
        validate_tendons(&tspecs, &joints, sites.len())?;
        validate_equalities(&especs, &jspecs, &bodies, tspecs.len())?;
        validate_pairs(&pairs, &mut excludes, geoms.len(), nbody)?;
        let nu = actuators.len();
        let targets = SensorTargets { nbody, ngeom: geoms.len(), nsite: sites.len(), ntendon: tspecs.len(), nu };
        let nsensordata = compile_sensors(&mut sensors, &joints, targets)?;
        validate_keyframes(&keyframes, nq, nv, nu, na)?;

        // Placeholder laws until the effective masses are known (below).
        let unit_law = Softness::default().law(1.0, options.timestep);
        let tendons = tspecs
            .into_iter()
            .map(|t| Tendon {
                name: t.name,
                path: t.path,
                range: t.range,
                limit_softness: t.limit_softness,
                limit_margin: t.limit_margin,
                limit_law: None,
                stiffness: t.stiffness,
                damping: t.damping,
                frictionloss: t.frictionloss,
                friction_softness: t.friction_softness,
                springlength: t.springlength.unwrap_or([f64::NAN; 2]),
                length0: 0.0,
                invweight0: 0.0,
            })
            .collect();
        let equalities = especs
            .iter()
            .map(|q| Equality {
                name: q.name.clone(),
                kind: q.kind,
                active: q.active,
                softness: q.softness,
                laws: [unit_law; 2],
                invweight0: [0.0; 2],
            })
            .collect();
        let mut model = Model {
            name,
            options,
            bodies,
            joints,
            dofs,
            geoms,
            sites,
            meshes,
            hfields,
            actuators,
            tendons,
            equalities,
            pairs,
            excludes,
            sensors,
            keyframes,
            nq,
            nv,
            na,
            nsensordata,
            qpos0,
            warnings,
            visual,
        };
        compile_at_qpos0(&mut model, &especs, &dampratios)?;
        Ok(model)
    }
}

/// Bodies: parents before children, finite frames.
fn validate_bodies(bspecs: &[BodySpec]) -> Result<(), ModelError> {
    for (i, b) in bspecs.iter().enumerate().skip(1) {
        let e = |m: String| ModelError::invalid(Entity::Body(i), &b.name, m);
        if b.parent >= i {
            return Err(e(format!("parent index {} must refer to an earlier body", b.parent)));
        }
        finite3(&b.pos).map_err(|m| e(format!("pos {m}")))?;
        unit_quat(&b.quat).map_err(|m| e(format!("quat {m}")))?;
    }
    Ok(())
}

/// Joints: grouped by body in body order, valid axes, limits and
/// passive parameters; a free joint alone on a top-level body.
fn validate_joints(jspecs: &[JointSpec], bspecs: &[BodySpec]) -> Result<(), ModelError> {
    let nbody = bspecs.len();
    for (i, j) in jspecs.iter().enumerate() {
        let e = |m: String| ModelError::invalid(Entity::Joint(i), &j.name, m);
        if j.body == WORLD || j.body >= nbody {
            return Err(e(format!("body index {} is not a movable body", j.body)));
        }
        if i > 0 && jspecs[i - 1].body > j.body {
            return Err(e("joints must be added grouped by body, in body order".into()));
        }
        finite3(&j.pos).map_err(|m| e(format!("pos {m}")))?;
        if matches!(j.kind, JointKind::Hinge | JointKind::Slide) {
            let a = Vec3::from_array(j.axis);
            if !a.is_finite() || a.norm() < 1e-10 {
                return Err(e(format!("axis {:?} must be a non-zero finite vector", j.axis)));
            }
        }
        if let Some([lo, hi]) = j.range {
            if !matches!(j.kind, JointKind::Hinge | JointKind::Slide) {
                return Err(e(format!(
                    "position limits are supported on hinge and slide joints, not {}",
                    j.kind.name()
                )));
            }
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                return Err(e(format!("range [{lo}, {hi}] must be finite with lower < upper")));
            }
            j.limit_softness.check().map_err(|m| e(format!("limit softness: {m}")))?;
            if !(j.limit_margin >= 0.0 && j.limit_margin.is_finite()) {
                return Err(e(format!("limit margin must be finite and ≥ 0, got {}", j.limit_margin)));
            }
        }
        if j.frictionloss > 0.0 {
            j.friction_softness.check().map_err(|m| e(format!("friction softness: {m}")))?;
        }
        for (what, x) in [
            ("armature", j.armature),
            ("damping", j.damping),
            ("frictionloss", j.frictionloss),
            ("stiffness", j.stiffness),
        ] {
            if !(x >= 0.0 && x.is_finite()) {
                return Err(e(format!("{what} must be finite and ≥ 0, got {x}")));
            }
        }
        if !(j.springref.is_finite() && j.reference.is_finite()) {
            return Err(e("springref and ref must be finite".into()));
        }
        if j.kind == JointKind::Free {
            let count = jspecs.iter().filter(|k| k.body == j.body).count();
            if count != 1 {
                return Err(e("a free joint must be the only joint of its body".into()));
            }
            if bspecs[j.body].parent != WORLD {
                return Err(e(format!(
                    "a free joint must be on a top-level body (its body '{}' has a parent other than the world)",
                    bspecs[j.body].name
                )));
            }
        }
    }
    Ok(())
}

/// The compiled tree: bodies with their joint and dof ranges, weld groups
/// and roots, joints, dofs (each with its parent dof) and qpos0.
fn compile_tree(bspecs: &[BodySpec], jspecs: &[JointSpec]) -> (Vec<Body>, Vec<Joint>, Vec<Dof>, Vec<f64>) {
    let mut joints = Vec::with_capacity(jspecs.len());
    let mut dofs: Vec<Dof> = vec![];
    let mut qpos0 = vec![];
    let mut bodies: Vec<Body> = Vec::with_capacity(bspecs.len());
    for (bi, b) in bspecs.iter().enumerate() {
        let q = Quat::from_array(b.quat).normalize();
        bodies.push(Body {
            name: b.name.clone(),
            parent: b.parent,
            pos: b.pos,
            quat: q.to_array(),
            mass: 0.0,
            ipos: [0.0; 3],
            iquat: [1.0, 0.0, 0.0, 0.0],
            inertia: [0.0; 3],
            jnt_adr: joints.len(),
            jnt_num: 0,
            dof_adr: dofs.len(),
            dof_num: 0,
            weld: 0,
            root: 0,
            last_dof: None,
            invweight0: [0.0; 2],
        });
        let parent_last = if bi == 0 { None } else { bodies[b.parent].last_dof };
        let mut last = parent_last;
        for (ji, j) in jspecs.iter().enumerate().filter(|(_, j)| j.body == bi) {
            let axis = Vec3::from_array(j.axis).normalize().to_array();
            let qpos_adr = qpos0.len();
            let dof_adr = dofs.len();
            match j.kind {
                JointKind::Free => {
                    qpos0.extend_from_slice(&b.pos);
                    qpos0.extend_from_slice(&q.to_array());
                }
                JointKind::Ball => qpos0.extend_from_slice(&[1.0, 0.0, 0.0, 0.0]),
                JointKind::Hinge | JointKind::Slide => qpos0.push(j.reference),
            }
            for _ in 0..j.kind.nv() {
                dofs.push(Dof {
                    body: bi,
                    joint: ji,
                    parent: last,
                    armature: j.armature,
                    damping: j.damping,
                    invweight0: 0.0, // from M(qpos0) once the model is complete
                });
                last = Some(dofs.len() - 1);
            }
            joints.push(Joint {
                name: j.name.clone(),
                kind: j.kind,
                body: bi,
                pos: if j.kind == JointKind::Free { [0.0; 3] } else { j.pos },
                axis,
                qpos_adr,
                dof_adr,
                range: j.range,
                limit_softness: j.limit_softness,
                limit_margin: j.limit_margin,
                limit_law: None, // from invweight0 once the model is complete
                armature: j.armature,
                damping: j.damping,
                frictionloss: j.frictionloss,
                friction_softness: j.friction_softness,
                stiffness: j.stiffness,
                springref: j.springref,
                reference: j.reference,
            });
        }
        let parent_weld = bodies[b.parent].weld;
        let body = bodies.last_mut().unwrap();
        body.jnt_num = joints.len() - body.jnt_adr;
        body.dof_num = dofs.len() - body.dof_adr;
        body.last_dof = last;
        body.weld = if bi == 0 {
            0
        } else if body.jnt_num > 0 {
            bi
        } else {
            parent_weld
        };
        let root = if bi == 0 {
            0
        } else if b.parent == WORLD {
            bi
        } else {
            bodies[b.parent].root
        };
        bodies[bi].root = root;
    }
    (bodies, joints, dofs, qpos0)
}

/// Geoms: shapes, sizes, meshes and height fields checked, bounding radii.
fn compile_geoms(
    gspecs: &[GeomSpec],
    bodies: &[Body],
    meshes: &[ConvexMesh],
    hfields: &[HeightField],
) -> Result<Vec<Geom>, ModelError> {
    let nbody = bodies.len();
    let mut geoms = Vec::with_capacity(gspecs.len());
    for (gi, g) in gspecs.iter().enumerate() {
        let e = |m: String| ModelError::invalid(Entity::Geom(gi), &g.name, m);
        if g.body >= nbody {
            return Err(e(format!("body index {} does not exist", g.body)));
        }
        finite3(&g.pos).map_err(|m| e(format!("pos {m}")))?;
        unit_quat(&g.quat).map_err(|m| e(format!("quat {m}")))?;
        let field = match (g.kind, g.hfield) {
            (GeomKind::Hfield, Some(h)) if h < hfields.len() => Some(&hfields[h]),
            (GeomKind::Hfield, h) => {
                return Err(e(format!("height-field geom needs a valid height-field index, got {h:?}")));
            }
            (_, Some(_)) => {
                return Err(e(format!(
                    "only height-field geoms may reference a height field (type {})",
                    g.kind.name()
                )));
            }
            (_, None) => None,
        };
        // A height field's size comes from the field (MuJoCo's geom_size).
        let size = field.map_or(g.size, |f| f.geom_size());
        validate_size(g.kind, size).map_err(e)?;
        if field.is_some() && bodies[g.body].weld != 0 {
            return Err(e(
                "a height field must be on a static body (the world, or a body welded to it without joints)".into(),
            ));
        }
        let mesh = match (g.kind, g.mesh) {
            (GeomKind::Mesh, Some(m)) if m < meshes.len() => Some(&meshes[m]),
            (GeomKind::Mesh, m) => {
                return Err(e(format!("mesh geom needs a valid mesh index, got {m:?}")));
            }
            (_, Some(_)) => {
                return Err(e(format!("only mesh geoms may reference a mesh (type {})", g.kind.name())));
            }
            (_, None) => None,
        };
        validate_material(&g.material).map_err(e)?;
        if g.material.stiffness.is_infinite() && bodies[g.body].weld != 0 {
            return Err(e("infinite (rigid) stiffness is allowed only on geoms of static bodies".into()));
        }
        if !(g.margin >= 0.0 && g.margin.is_finite()) {
            return Err(e(format!("margin must be finite and ≥ 0, got {}", g.margin)));
        }
        if let Some(m) = g.mass {
            if !(m >= 0.0 && m.is_finite()) {
                return Err(e(format!("mass must be finite and ≥ 0, got {m} kg")));
            }
        } else if !(g.density >= 0.0 && g.density.is_finite()) {
            return Err(e(format!("density must be finite and ≥ 0, got {} kg/m³", g.density)));
        }
        let [a, b, c] = size;
        let rbound = match g.kind {
            GeomKind::Plane => f64::INFINITY,
            GeomKind::Sphere => a,
            GeomKind::Capsule => a + b,
            GeomKind::Box => (a * a + b * b + c * c).sqrt(),
            GeomKind::Cylinder => (a * a + b * b).sqrt(),
            GeomKind::Ellipsoid => a.max(b).max(c),
            GeomKind::Mesh => mesh.map(|m| m.radius()).unwrap_or(0.0),
            GeomKind::Hfield => field.map(|f| f.radius()).unwrap_or(0.0),
        };
        geoms.push(Geom {
            name: g.name.clone(),
            kind: g.kind,
            size,
            mesh: g.mesh,
            hfield: g.hfield,
            body: g.body,
            pos: g.pos,
            quat: Quat::from_array(g.quat).normalize().to_array(),
            material: g.material,
            contype: g.contype,
            conaffinity: g.conaffinity,
            margin: g.margin,
            rbound,
            visual: g.visual,
        });
    }
    Ok(geoms)
}

/// Body masses and inertias: explicit, or from the body's geoms (as MuJoCo's
/// `inertiafromgeom`).
fn body_inertias(
    bodies: &mut [Body],
    bspecs: &[BodySpec],
    gspecs: &[GeomSpec],
    geoms: &[Geom],
    meshes: &[ConvexMesh],
    inertia_from_geom: InertiaFromGeom,
) -> Result<(), ModelError> {
    let nbody = bodies.len();
    for bi in 1..nbody {
        let spec = &bspecs[bi];
        let explicit = match inertia_from_geom {
            InertiaFromGeom::Always => None,
            _ => spec.inertial,
        };
        let e = |m: String| ModelError::invalid(Entity::Body(bi), &spec.name, m);
        let (mass, ipos, iquat, inertia) = if let Some(inl) = explicit {
            // Zero is allowed (MuJoCo's massless bodies: frames welded to their
            // parent); whether every dof still moves mass is checked below.
            if !(inl.mass >= 0.0 && inl.mass.is_finite()) {
                return Err(e(format!("mass must be finite and ≥ 0, got {} kg", inl.mass)));
            }
            finite3(&inl.pos).map_err(|m| e(format!("inertial pos {m}")))?;
            unit_quat(&inl.quat).map_err(|m| e(format!("inertial quat {m}")))?;
            check_principal_inertia(inl.diag).map_err(e)?;
            (inl.mass, inl.pos, Quat::from_array(inl.quat).normalize().to_array(), inl.diag)
        } else if inertia_from_geom == InertiaFromGeom::Never && spec.inertial.is_none() {
            (0.0, [0.0; 3], [1.0, 0.0, 0.0, 0.0], [0.0; 3])
        } else {
            let mut acc = InertiaAccumulator::new();
            // As MuJoCo, a body whose mass comes from one primitive geom
            // keeps that geom's frame as its inertial frame (moments in
            // the geom's axis order); several geoms give principal axes.
            let mut single = None;
            let mut count = 0;
            for (gi, g) in gspecs.iter().enumerate().filter(|(_, g)| g.body == bi) {
                let mesh = g.mesh.map(|m| &meshes[m]);
                let Some(p) = geom_unit_mass_props(g.kind, geoms[gi].size, mesh) else {
                    continue;
                };
                let density = match g.mass {
                    Some(m) if p.volume > 0.0 => m / p.volume,
                    Some(_) => 0.0,
                    None => g.density,
                };
                let rot = Quat::from_array(geoms[gi].quat);
                let com = Vec3::from_array(g.pos) + rot.rotate(p.com);
                let inertia = p.inertia.scale(density);
                acc.add(p.volume * density, com, rot, inertia);
                count += 1;
                let m = &inertia.m;
                let diagonal = m[0][1] == 0.0 && m[0][2] == 0.0 && m[1][2] == 0.0;
                single = (g.kind != GeomKind::Mesh && diagonal)
                    .then(|| (com.to_array(), rot.to_array(), [m[0][0], m[1][1], m[2][2]]));
            }
            match (acc.principal(), single) {
                (Some(_), Some((c, q, d))) if count == 1 => (acc.mass(), c, q, d),
                (Some((c, q, d)), _) => (acc.mass(), c.to_array(), q.to_array(), d.to_array()),
                (None, _) => (0.0, [0.0; 3], [1.0, 0.0, 0.0, 0.0], [0.0; 3]),
            }
        };
        let b = &mut bodies[bi];
        b.mass = mass;
        b.ipos = ipos;
        b.iquat = iquat;
        b.inertia = inertia;
    }
    Ok(())
}

/// `settotalmass`: every mass and inertia scaled to the total `total_mass`
/// (kg); then every body mass checked.
fn scale_total_mass(bodies: &mut [Body], total_mass: Option<f64>, name: &str) -> Result<(), ModelError> {
    let nbody = bodies.len();
    if let Some(target) = total_mass {
        let total: f64 = bodies.iter().map(|b| b.mass).sum();
        if !(target > 0.0 && target.is_finite()) {
            return Err(ModelError::invalid(
                Entity::Model,
                name,
                format!("settotalmass must be positive, got {target}"),
            ));
        }
        if !(total > 0.0) {
            return Err(ModelError::invalid(Entity::Model, name, "settotalmass given but the model has no mass"));
        }
        let s = target / total;
        for b in bodies.iter_mut() {
            b.mass *= s;
            for x in b.inertia.iter_mut() {
                *x *= s;
            }
        }
    }
    // A moving body that is a leaf of its weld group chain must carry mass,
    // or the mass matrix is singular (checked exactly below for dofs).
    for bi in 1..nbody {
        let b = &bodies[bi];
        if !(b.mass >= 0.0 && b.mass.is_finite()) {
            return Err(ModelError::invalid(Entity::Body(bi), &b.name, format!("mass must be ≥ 0, got {} kg", b.mass)));
        }
    }
    Ok(())
}

/// Sites: on existing bodies, finite frames.
fn validate_sites(sites: &[Site], nbody: usize) -> Result<(), ModelError> {
    for (si, s) in sites.iter().enumerate() {
        let e = |m: String| ModelError::invalid(Entity::Site(si), &s.name, m);
        if s.body >= nbody {
            return Err(e(format!("body index {} does not exist", s.body)));
        }
        finite3(&s.pos).map_err(|m| e(format!("pos {m}")))?;
        unit_quat(&s.quat).map_err(|m| e(format!("quat {m}")))?;
    }
    Ok(())
}

/// Actuators: transmissions, gains and ranges checked; activation addresses
/// assigned. Returns na, the number of activations.
fn compile_actuators(
    actuators: &mut [Actuator],
    joints: &[Joint],
    ntendon: usize,
    nsite: usize,
) -> Result<usize, ModelError> {
    let mut na = 0;
    for (ai, a) in actuators.iter_mut().enumerate() {
        let e = |m: String| ModelError::invalid(Entity::Actuator(ai), &a.name, m);
        let hinge_or_slide = |j: usize| -> Result<(), ModelError> {
            let Some(jt) = joints.get(j) else {
                return Err(e(format!("joint index {j} does not exist")));
            };
            if !matches!(jt.kind, JointKind::Hinge | JointKind::Slide) {
                return Err(e(format!(
                    "actuators act on hinge or slide joints; joint '{}' is {}",
                    jt.name,
                    jt.kind.name()
                )));
            }
            Ok(())
        };
        match &mut a.kind {
            ActuatorKind::Motor { gear, force_range } => {
                hinge_or_slide(a.joint)?;
                if !gear.is_finite() {
                    return Err(e(format!("gear must be finite, got {gear}")));
                }
                check_range(*force_range, "forcerange").map_err(e)?;
            }
            ActuatorKind::Position { kp, kd, effort_limit } => {
                hinge_or_slide(a.joint)?;
                if !(*kp >= 0.0 && kp.is_finite() && *kd >= 0.0 && kd.is_finite()) {
                    return Err(e(format!("kp and kd must be finite and ≥ 0, got kp {kp}, kd {kd}")));
                }
                if !(*effort_limit > 0.0) {
                    return Err(e(format!("effort limit must be > 0 (or infinite), got {effort_limit}")));
                }
            }
            ActuatorKind::General(g) => {
                match g.transmission {
                    Transmission::Joint(j) => {
                        hinge_or_slide(j)?;
                        if a.joint != j {
                            return Err(e(format!("joint {} differs from the transmission's joint {j}", a.joint)));
                        }
                    }
                    Transmission::Tendon(t) if t >= ntendon => {
                        return Err(e(format!("tendon index {t} does not exist")));
                    }
                    Transmission::Site(si) if si >= nsite => {
                        return Err(e(format!("site index {si} does not exist")));
                    }
                    _ => {}
                }
                if !g.gear.iter().chain(&g.gain).chain(&g.bias).all(|x| x.is_finite()) {
                    return Err(e("gear, gain and bias parameters must be finite".into()));
                }
                check_range(g.force_range, "forcerange").map_err(e)?;
                check_range(g.act_range, "actrange").map_err(e)?;
                match g.dynamics {
                    ActDynamics::Filter { tau } | ActDynamics::FilterExact { tau }
                        if !(tau > 0.0 && tau.is_finite()) =>
                    {
                        return Err(e(format!("filter time constant must be positive, got {tau} s")));
                    }
                    ActDynamics::None => g.act_adr = None,
                    _ => {
                        g.act_adr = Some(na);
                        na += 1;
                    }
                }
            }
        }
        if let Some([lo, hi]) = a.ctrl_range
            && !(lo.is_finite() && hi.is_finite() && lo <= hi)
        {
            return Err(e(format!("ctrlrange [{lo}, {hi}] must be finite with lower ≤ upper")));
        }
    }
    Ok(na)
}

/// Tendons: fixed tendons on hinge and slide joints, spatial paths of
/// sites and pulleys, limits and passive parameters.
fn validate_tendons(tspecs: &[TendonSpec], joints: &[Joint], nsite: usize) -> Result<(), ModelError> {
    for (ti, t) in tspecs.iter().enumerate() {
        let e = |m: String| ModelError::invalid(Entity::Tendon(ti), &t.name, m);
        match &t.path {
            TendonPath::Fixed(list) => {
                if list.is_empty() {
                    return Err(e("a fixed tendon needs at least one joint".into()));
                }
                for &(j, c) in list {
                    let Some(jt) = joints.get(j) else {
                        return Err(e(format!("joint index {j} does not exist")));
                    };
                    if !matches!(jt.kind, JointKind::Hinge | JointKind::Slide) {
                        return Err(e(format!(
                            "fixed tendons couple hinge or slide joints; '{}' is {}",
                            jt.name,
                            jt.kind.name()
                        )));
                    }
                    if !c.is_finite() {
                        return Err(e(format!("coefficient must be finite, got {c}")));
                    }
                }
            }
            TendonPath::Spatial(path) => {
                // Every branch (between pulleys) needs two or more sites.
                let mut branch = 0;
                for (k, el) in path.iter().enumerate() {
                    match *el {
                        SpatialElement::Site(si) => {
                            if si >= nsite {
                                return Err(e(format!("site index {si} does not exist")));
                            }
                            branch += 1;
                        }
                        SpatialElement::Pulley { divisor } => {
                            if !(divisor > 0.0 && divisor.is_finite()) {
                                return Err(e(format!("pulley divisor must be positive, got {divisor}")));
                            }
                            if k == 0 || branch < 2 {
                                return Err(e("each branch of a spatial tendon needs at least two sites".into()));
                            }
                            branch = 0;
                        }
                    }
                }
                if branch < 2 {
                    return Err(e("each branch of a spatial tendon needs at least two sites".into()));
                }
            }
        }
        if let Some([lo, hi]) = t.range {
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                return Err(e(format!("range [{lo}, {hi}] must be finite with lower < upper")));
            }
            t.limit_softness.check().map_err(|m| e(format!("limit softness: {m}")))?;
            if !(t.limit_margin >= 0.0 && t.limit_margin.is_finite()) {
                return Err(e(format!("limit margin must be finite and ≥ 0, got {}", t.limit_margin)));
            }
        }
        if t.frictionloss > 0.0 {
            t.friction_softness.check().map_err(|m| e(format!("friction softness: {m}")))?;
        }
        for (what, x) in [("stiffness", t.stiffness), ("damping", t.damping), ("frictionloss", t.frictionloss)] {
            if !(x >= 0.0 && x.is_finite()) {
                return Err(e(format!("{what} must be finite and ≥ 0, got {x}")));
            }
        }
        if let Some([lo, hi]) = t.springlength
            && !(lo.is_finite() && hi.is_finite() && lo <= hi)
        {
            return Err(e(format!("springlength [{lo}, {hi}] must be finite with low ≤ high")));
        }
    }
    Ok(())
}

/// Equality constraints: existing, movable bodies, joints and tendons.
fn validate_equalities(
    especs: &[EqualitySpec],
    jspecs: &[JointSpec],
    bodies: &[Body],
    ntendon: usize,
) -> Result<(), ModelError> {
    let nbody = bodies.len();
    for (ei, q) in especs.iter().enumerate() {
        let e = |m: String| ModelError::invalid(Entity::Equality(ei), &q.name, m);
        q.softness.check().map_err(|m| e(format!("softness: {m}")))?;
        match q.kind {
            EqualityKind::Connect { body, anchor } | EqualityKind::Weld { body, anchor, .. } => {
                if body.iter().any(|&b| b >= nbody) {
                    return Err(e(format!("body indices {body:?} must exist")));
                }
                if body[0] == body[1] {
                    return Err(e("the two bodies must differ".into()));
                }
                if bodies[body[0]].weld == 0 && bodies[body[1]].weld == 0 {
                    return Err(e("both bodies are static: the constraint cannot act".into()));
                }
                for a in &anchor {
                    finite3(a).map_err(|m| e(format!("anchor {m}")))?;
                }
                if let EqualityKind::Weld { quat, torquescale, .. } = q.kind {
                    for qq in &quat {
                        unit_quat(qq).map_err(|m| e(format!("relative orientation {m}")))?;
                    }
                    if !torquescale.is_finite() {
                        return Err(e(format!("torquescale must be finite, got {torquescale}")));
                    }
                }
            }
            EqualityKind::Joint { joint, polycoef } => {
                let Some(j0) = joint[0] else { return Err(e("the first joint is required".into())) };
                for j in [Some(j0), joint[1]].into_iter().flatten() {
                    match jspecs.get(j) {
                        Some(js) if matches!(js.kind, JointKind::Hinge | JointKind::Slide) => {}
                        Some(js) => {
                            return Err(e(format!(
                                "joint equality couples hinge or slide joints; '{}' is {}",
                                js.name,
                                js.kind.name()
                            )));
                        }
                        None => return Err(e(format!("joint index {j} does not exist"))),
                    }
                }
                if !polycoef.iter().all(|c| c.is_finite()) {
                    return Err(e(format!("polycoef {polycoef:?} must be finite")));
                }
            }
            EqualityKind::Tendon { tendon, polycoef } => {
                let Some(t0) = tendon[0] else { return Err(e("the first tendon is required".into())) };
                for t in [Some(t0), tendon[1]].into_iter().flatten() {
                    if t >= ntendon {
                        return Err(e(format!("tendon index {t} does not exist")));
                    }
                }
                if !polycoef.iter().all(|c| c.is_finite()) {
                    return Err(e(format!("polycoef {polycoef:?} must be finite")));
                }
            }
        }
    }
    Ok(())
}

/// Explicit contact pairs and body exclusions (sorted, deduplicated).
fn validate_pairs(
    pairs: &[ContactPair],
    excludes: &mut Vec<[usize; 2]>,
    ngeom: usize,
    nbody: usize,
) -> Result<(), ModelError> {
    for (pi, p) in pairs.iter().enumerate() {
        let e = |m: String| ModelError::invalid(Entity::Pair(pi), &p.name, m);
        if p.geom.iter().any(|&g| g >= ngeom) || p.geom[0] == p.geom[1] {
            return Err(e(format!("geoms {:?} must be two different existing geoms", p.geom)));
        }
        validate_material(&p.material).map_err(e)?;
        if !(p.margin >= 0.0 && p.margin.is_finite()) {
            return Err(e(format!("margin must be finite and ≥ 0, got {}", p.margin)));
        }
    }
    for x in excludes.iter() {
        if x[1] >= nbody {
            return Err(ModelError::invalid(Entity::Body(x[1]), "", "excluded body does not exist"));
        }
    }
    excludes.sort_unstable();
    excludes.dedup();
    Ok(())
}

/// Sensors: objects exist and have the right type; data addresses
/// assigned. Returns nsensordata.
fn compile_sensors(sensors: &mut [Sensor], joints: &[Joint], sizes: SensorTargets) -> Result<usize, ModelError> {
    let SensorTargets { nbody, ngeom, nsite, ntendon, nu } = sizes;
    let mut nsensordata = 0;
    for (si, sn) in sensors.iter_mut().enumerate() {
        let e = |m: String| ModelError::invalid(Entity::Sensor(si), &sn.name, m);
        let frame_ok = |f: &FrameObject| match *f {
            FrameObject::Body(b) | FrameObject::XBody(b) => b < nbody,
            FrameObject::Geom(g) => g < ngeom,
            FrameObject::Site(s) => s < nsite,
        };
        let ok = match &sn.kind {
            SensorKind::JointPos(j) | SensorKind::JointVel(j) => {
                joints.get(*j).is_some_and(|j| matches!(j.kind, JointKind::Hinge | JointKind::Slide))
            }
            SensorKind::TendonPos(t) | SensorKind::TendonVel(t) => *t < ntendon,
            SensorKind::ActuatorPos(a) | SensorKind::ActuatorVel(a) | SensorKind::ActuatorFrc(a) => *a < nu,
            SensorKind::FramePos(o, r)
            | SensorKind::FrameQuat(o, r)
            | SensorKind::FrameXAxis(o, r)
            | SensorKind::FrameYAxis(o, r)
            | SensorKind::FrameZAxis(o, r) => frame_ok(o) && r.as_ref().is_none_or(frame_ok),
            SensorKind::FrameLinVel(o) | SensorKind::FrameAngVel(o) => frame_ok(o),
            SensorKind::SubtreeCom(b) => *b < nbody,
            SensorKind::Touch(s) | SensorKind::Accelerometer(s) | SensorKind::Gyro(s) | SensorKind::Velocimeter(s) => {
                *s < nsite
            }
            SensorKind::Unsupported { .. } => true,
        };
        if !ok {
            return Err(e(format!(
                "{} sensor refers to an object that does not exist or has the wrong type",
                sn.kind.name()
            )));
        }
        if !(sn.cutoff >= 0.0) {
            return Err(e(format!("cutoff must be ≥ 0, got {}", sn.cutoff)));
        }
        sn.adr = nsensordata;
        nsensordata += sn.kind.dim();
    }
    Ok(nsensordata)
}

/// Keyframes: sizes match the model, values finite.
fn validate_keyframes(keyframes: &[Keyframe], nq: usize, nv: usize, nu: usize, na: usize) -> Result<(), ModelError> {
    for (ki, k) in keyframes.iter().enumerate() {
        let e = |m: String| ModelError::invalid(Entity::Keyframe(ki), &k.name, m);
        if k.qpos.len() != nq {
            return Err(e(format!("qpos has {} values, the model has nq = {nq}", k.qpos.len())));
        }
        if k.qvel.len() != nv {
            return Err(e(format!("qvel has {} values, the model has nv = {nv}", k.qvel.len())));
        }
        if k.ctrl.len() != nu {
            return Err(e(format!("ctrl has {} values, the model has nu = {nu}", k.ctrl.len())));
        }
        if k.act.len() != na {
            return Err(e(format!("act has {} values, the model has na = {na}", k.act.len())));
        }
        if !k.qpos.iter().chain(&k.qvel).chain(&k.ctrl).chain(&k.act).all(|x| x.is_finite()) || !k.time.is_finite() {
            return Err(e("values must be finite".into()));
        }
    }
    Ok(())
}

/// Counts of the objects sensors may refer to.
struct SensorTargets {
    nbody: usize,
    ngeom: usize,
    nsite: usize,
    ntendon: usize,
    nu: usize,
}

/// The quantities that need the model at qpos0: effective masses
/// (`dof_invweight0`, `body_invweight0`, `tendon_invweight0`), tendon rest
/// lengths, equality poses fitted at qpos0, and the soft-constraint laws of
/// joint limits, tendon limits and equality constraints.
fn compile_at_qpos0(model: &mut Model, especs: &[EqualitySpec], dampratios: &[(usize, f64)]) -> Result<(), ModelError> {
    let (nv, nb) = (model.nv, model.bodies.len());
    let mut data = crate::dynamics::Data::<f64>::new(model);
    data.q.copy_from_slice(&model.qpos0);
    crate::dynamics::kinematics(model, &mut data);
    crate::dynamics::transmissions(model, &mut data);
    let minv = inverse_mass(model, &mut data)?;
    // x_i M⁻¹ x_j for rows x of length nv.
    let quad = |x: &[f64], y: &[f64]| -> f64 {
        let mut s = 0.0;
        for i in 0..nv {
            if x[i] != 0.0 {
                for j in 0..nv {
                    s += x[i] * minv[i * nv + j] * y[j];
                }
            }
        }
        s
    };
    // MuJoCo's dof_invweight0: the diagonal of M⁻¹, averaged over the
    // translations and over the rotations of free and ball joints.
    for j in &model.joints {
        let d = j.dof_adr;
        let mean = |a: usize, n: usize| (a..a + n).map(|k| minv[k * nv + k]).sum::<f64>() / n as f64;
        let groups: &[(usize, usize)] = match j.kind {
            JointKind::Free => &[(0, 3), (3, 3)],
            JointKind::Ball => &[(0, 3)],
            JointKind::Hinge | JointKind::Slide => &[(0, 1)],
        };
        for &(o, n) in groups {
            let w = mean(d + o, n);
            (d + o..d + o + n).for_each(|k| model.dofs[k].invweight0 = w);
        }
    }
    let mut jp = vec![0.0; 3 * nv];
    let mut jr = vec![0.0; 3 * nv];
    for b in 1..nb {
        if model.bodies[b].weld == 0 {
            continue;
        }
        if slides_only(model, b) {
            // MuJoCo's "simple" body: its inverse inertia is its mass alone
            // (armature ignored), for the body and for its dofs.
            let w = 1.0 / model.bodies[b].mass.max(1e-15);
            model.bodies[b].invweight0 = [w, 0.0];
            let body = &model.bodies[b];
            (body.dof_adr..body.dof_adr + body.dof_num).for_each(|k| model.dofs[k].invweight0 = w);
            continue;
        }
        crate::dynamics::point_jacobian(model, &data, b, data.xipos[b], &mut jp, Some(&mut jr));
        let mut w = [0.0; 2];
        for r in 0..3 {
            w[0] += quad(&jp[r * nv..(r + 1) * nv], &jp[r * nv..(r + 1) * nv]) / 3.0;
            w[1] += quad(&jr[r * nv..(r + 1) * nv], &jr[r * nv..(r + 1) * nv]) / 3.0;
        }
        model.bodies[b].invweight0 = w;
    }
    for &(ai, ratio) in dampratios {
        let a = &mut model.actuators[ai];
        let e = |m: &str| ModelError::invalid(Entity::Actuator(ai), &a.name, m);
        let row = &data.actuator_moment[ai * nv..(ai + 1) * nv];
        let w = quad(row, row);
        if !(w > 0.0 && ratio >= 0.0) {
            return Err(e("dampratio needs a non-negative ratio and a transmission that moves some inertia at qpos0"));
        }
        match &mut a.kind {
            ActuatorKind::Position { kp, kd, .. } => *kd = 2.0 * ratio * (*kp / w).sqrt(),
            ActuatorKind::General(g) => g.bias[2] = -2.0 * ratio * (-g.bias[1] / w).max(0.0).sqrt(),
            ActuatorKind::Motor { .. } => return Err(e("dampratio applies to position servos")),
        }
    }
    let flags = model.options.flags;
    let timestep = if flags.refsafe { model.options.timestep } else { 0.0 };
    for j in model.joints.iter_mut() {
        j.limit_law = match (j.range, flags.limit) {
            (Some(_), true) => Some(j.limit_softness.law(1.0 / model.dofs[j.dof_adr].invweight0, timestep)),
            _ => None,
        };
    }
    for (ti, t) in model.tendons.iter_mut().enumerate() {
        let row = &data.ten_jac[ti * nv..(ti + 1) * nv];
        t.length0 = data.ten_length[ti];
        t.invweight0 = quad(row, row);
        if t.springlength[0].is_nan() {
            t.springlength = [t.length0; 2];
        }
        if t.range.is_some() && flags.limit {
            if !(t.invweight0 > 0.0) {
                return Err(ModelError::invalid(
                    Entity::Tendon(ti),
                    &t.name,
                    "a limited tendon must move some degree of freedom at qpos0",
                ));
            }
            t.limit_law = Some(t.limit_softness.law(1.0 / t.invweight0, timestep));
        }
    }
    for (ei, spec) in especs.iter().enumerate() {
        let e = |m: &str| ModelError::invalid(Entity::Equality(ei), &spec.name, m);
        let mut kind = spec.kind;
        if spec.fit_at_qpos0 {
            let pose = |b: usize| (data.xpos[b], data.xquat[b]);
            match &mut kind {
                EqualityKind::Connect { body, anchor } => {
                    let ((p0, q0), (p1, q1)) = (pose(body[0]), pose(body[1]));
                    let world = p0 + q0.rotate(Vec3::from_array(anchor[0]));
                    anchor[1] = q1.conj().rotate(world - p1).to_array();
                }
                EqualityKind::Weld { body, anchor, quat, .. } => {
                    let ((p0, q0), (p1, q1)) = (pose(body[0]), pose(body[1]));
                    let world = p1 + q1.rotate(Vec3::from_array(anchor[1]));
                    anchor[0] = q0.conj().rotate(world - p0).to_array();
                    let frame1 = q1 * Quat::from_array(quat[1]).normalize();
                    quat[0] = (q0.conj() * frame1).normalize().to_array();
                }
                _ => {}
            }
        }
        let iw = |b: usize, k: usize| model.bodies[b].invweight0[k];
        let masses = match kind {
            EqualityKind::Connect { body, .. } | EqualityKind::Weld { body, .. } => {
                [iw(body[0], 0) + iw(body[1], 0), iw(body[0], 1) + iw(body[1], 1)]
            }
            EqualityKind::Joint { joint, .. } => {
                let w: f64 = joint.iter().flatten().map(|&j| model.dofs[model.joints[j].dof_adr].invweight0).sum();
                [w, w]
            }
            EqualityKind::Tendon { tendon, .. } => {
                let w: f64 = tendon.iter().flatten().map(|&t| model.tendons[t].invweight0).sum();
                [w, w]
            }
        };
        let rows = if matches!(kind, EqualityKind::Weld { .. }) { 2 } else { 1 };
        if masses[..rows].iter().all(|w| !(*w > 0.0)) {
            return Err(e("the constraint moves no degree of freedom at qpos0 (zero effective inverse mass)"));
        }
        let q = &mut model.equalities[ei];
        q.kind = kind;
        q.invweight0 = masses;
        // Rows that move nothing (a weld's rotation rows on a body that only
        // slides) get a law without force.
        q.laws = masses.map(|w| {
            if w > 0.0 { q.softness.law(1.0 / w, timestep) } else { SpringLaw { mk: 0.0, damp: 0.0, ..q.laws[0] } }
        });
    }
    Ok(())
}

/// MuJoCo's "simple body with no rotations": a child of the world without
/// children, with its centre of mass at its origin and principal axes
/// along its frame, moved only by slide joints with orthogonal axes.
fn slides_only(model: &Model, b: usize) -> bool {
    let body = &model.bodies[b];
    let centred = body.ipos.iter().all(|x| x.abs() < 1e-12) && (body.iquat[0].abs() - 1.0).abs() < 1e-12;
    let joints = &model.joints[body.jnt_adr..body.jnt_adr + body.jnt_num];
    let orthogonal = joints.iter().enumerate().all(|(i, a)| {
        joints[i + 1..].iter().all(|c| {
            let d: f64 = (0..3).map(|k| a.axis[k] * c.axis[k]).sum();
            d.abs() < 1e-10
        })
    });
    body.parent == WORLD
        && centred
        && !joints.is_empty()
        && joints.iter().all(|j| j.kind == JointKind::Slide)
        && orthogonal
        && !model.bodies.iter().any(|c| c.parent == b)
}

/// M⁻¹ at the configuration in `data` (after kinematics), row-major
/// nv × nv. Fails unless M is positive definite there: every degree of
/// freedom must move some mass (or carry armature).
fn inverse_mass(model: &Model, data: &mut crate::dynamics::Data<f64>) -> Result<Vec<f64>, ModelError> {
    let n = model.nv;
    if n == 0 {
        return Ok(vec![]);
    }
    crate::dynamics::mass_matrix(model, data);
    let mut m = data.mass.clone();
    if let Err(err) = crate::math::cholesky_factor(&mut m, n) {
        let dof = &model.dofs[err.pivot];
        let j = &model.joints[dof.joint];
        let b = &model.bodies[dof.body];
        return Err(ModelError::invalid(
            Entity::Joint(dof.joint),
            &j.name,
            format!(
                "the mass matrix is singular at dof {} (body '{}'): the joint moves no mass or inertia; give the body (or its children) mass and inertia, or the joint armature",
                err.pivot, b.name
            ),
        ));
    }
    let mut inv = vec![0.0; n * n];
    let mut e = vec![0.0; n];
    for i in 0..n {
        e.iter_mut().for_each(|x| *x = 0.0);
        e[i] = 1.0;
        crate::math::cholesky_solve_in_place(&m, n, &mut e);
        for k in 0..n {
            inv[k * n + i] = e[k];
        }
    }
    Ok(inv)
}

/// Checks an optional [lower, upper] range.
fn check_range(r: Option<[f64; 2]>, what: &str) -> Result<(), String> {
    match r {
        Some([lo, hi]) if !(lo <= hi) || lo.is_nan() || hi.is_nan() => {
            Err(format!("{what} [{lo}, {hi}] must have lower ≤ upper"))
        }
        _ => Ok(()),
    }
}

fn validate_options(o: &Options) -> Result<(), ModelError> {
    let e = |m: String| ModelError::invalid(Entity::Model, "option", m);
    if !(o.timestep > 0.0 && o.timestep.is_finite()) {
        return Err(e(format!("timestep must be positive, got {} s", o.timestep)));
    }
    finite3(&o.gravity).map_err(|m| e(format!("gravity {m}")))?;
    if !(o.stiction_tolerance > 0.0 && o.stiction_tolerance.is_finite()) {
        return Err(e(format!("stiction_tolerance must be positive, got {} m/s", o.stiction_tolerance)));
    }
    if !(o.margin >= 0.0 && o.margin.is_finite()) {
        return Err(e(format!("margin must be finite and ≥ 0, got {} m", o.margin)));
    }
    Ok(())
}

fn check_unique_names<'a>(names: impl Iterator<Item = &'a str>, ent: fn(usize) -> Entity) -> Result<(), ModelError> {
    let mut seen = std::collections::HashMap::new();
    for (i, n) in names.enumerate() {
        if n.is_empty() {
            continue;
        }
        if let Some(first) = seen.insert(n, i) {
            return Err(ModelError::invalid(ent(i), n, format!("repeated name (first used by {})", ent(first))));
        }
    }
    Ok(())
}

fn finite3(v: &[f64; 3]) -> Result<(), String> {
    if v.iter().all(|x| x.is_finite()) { Ok(()) } else { Err(format!("{v:?} must be finite")) }
}

fn unit_quat(q: &[f64; 4]) -> Result<(), String> {
    let n = q.iter().map(|x| x * x).sum::<f64>().sqrt();
    if n.is_finite() && n > 1e-10 { Ok(()) } else { Err(format!("{q:?} must be a finite non-zero quaternion")) }
}

/// Principal moments must be positive and satisfy the triangle inequality
/// (A + B ≥ C for every permutation) to be physical.
fn check_principal_inertia(d: [f64; 3]) -> Result<(), String> {
    if !d.iter().all(|x| *x >= 0.0 && x.is_finite()) {
        return Err(format!("inertia {d:?} must be finite and ≥ 0 (principal moments)"));
    }
    let tol = 1e-12 * (d[0] + d[1] + d[2]);
    if d[0] + d[1] + tol < d[2] || d[0] + d[2] + tol < d[1] || d[1] + d[2] + tol < d[0] {
        return Err(format!("inertia {d:?} violates the triangle inequality (A + B ≥ C)"));
    }
    Ok(())
}

fn validate_size(kind: GeomKind, size: [f64; 3]) -> Result<(), String> {
    let needed = match kind {
        GeomKind::Plane | GeomKind::Mesh => 0,
        GeomKind::Sphere => 1,
        GeomKind::Capsule | GeomKind::Cylinder => 2,
        GeomKind::Box | GeomKind::Ellipsoid | GeomKind::Hfield => 3,
    };
    if !size.iter().all(|x| x.is_finite()) {
        return Err(format!("size {size:?} must be finite"));
    }
    for (i, s) in size.iter().take(needed).enumerate() {
        if !(*s > 0.0) {
            return Err(format!("{} size[{i}] must be positive, got {s} m", kind.name()));
        }
    }
    Ok(())
}

fn validate_material(m: &Material) -> Result<(), String> {
    if !(m.stiffness > 0.0) || m.stiffness.is_nan() {
        return Err(format!("stiffness must be positive, got {} N/m", m.stiffness));
    }
    if !(m.dissipation >= 0.0 && m.dissipation.is_finite()) {
        return Err(format!("dissipation must be finite and ≥ 0, got {} s/m", m.dissipation));
    }
    if !(m.mu_static >= 0.0 && m.mu_static.is_finite() && m.mu_dynamic >= 0.0 && m.mu_dynamic.is_finite()) {
        return Err(format!("friction must be finite and ≥ 0, got μs {} μd {}", m.mu_static, m.mu_dynamic));
    }
    if m.mu_dynamic > m.mu_static {
        return Err(format!("dynamic friction {} must not exceed static friction {}", m.mu_dynamic, m.mu_static));
    }
    Ok(())
}

/// Camera bodies, material indices, colours and fields of view in range.
fn validate_visual(visual: &Visual, nbody: usize, geoms: &[GeomSpec]) -> Result<(), ModelError> {
    for (i, c) in visual.cameras.iter().enumerate() {
        let e = |m: String| ModelError::invalid(Entity::Camera(i), &c.name, m);
        if c.body >= nbody {
            return Err(e(format!("body index {} out of range ({nbody} bodies)", c.body)));
        }
        if !(c.fovy > 0.0 && c.fovy < 180.0) {
            return Err(e(format!("fovy must be in (0, 180) degrees, got {}", c.fovy)));
        }
    }
    for (i, g) in geoms.iter().enumerate() {
        let e = |m: String| ModelError::invalid(Entity::Geom(i), &g.name, m);
        if let Some(m) = g.visual.material
            && m >= visual.materials.len()
        {
            return Err(e(format!("visual material index {m} out of range ({} materials)", visual.materials.len())));
        }
        if let Some(c) = g.visual.rgba
            && c.iter().any(|x| !(0.0..=1.0).contains(x))
        {
            return Err(e(format!("rgba components must be in [0, 1], got {c:?}")));
        }
    }
    if !(visual.fovy > 0.0 && visual.fovy < 180.0) {
        return Err(ModelError::invalid(
            Entity::Model,
            "",
            format!("the free camera's fovy must be in (0, 180) degrees, got {}", visual.fovy),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_mass_is_rejected_with_body_name() {
        let mut b = ModelBuilder::new("m");
        b.add_body(BodySpec {
            inertial: Some(Inertial { mass: -1.0, pos: [0.0; 3], quat: [1.0, 0.0, 0.0, 0.0], diag: [1.0; 3] }),
            ..BodySpec::new("heavy", WORLD, [0.0; 3])
        });
        let err = b.build().unwrap_err().to_string();
        assert!(err.contains("'heavy'") && err.contains("mass"), "{err}");
    }

    #[test]
    fn non_pd_inertia_is_rejected() {
        let mut b = ModelBuilder::new("m");
        b.add_body(BodySpec {
            inertial: Some(Inertial { mass: 1.0, pos: [0.0; 3], quat: [1.0, 0.0, 0.0, 0.0], diag: [1.0, 1.0, 3.0] }),
            ..BodySpec::new("b", WORLD, [0.0; 3])
        });
        let err = b.build().unwrap_err().to_string();
        assert!(err.contains("triangle inequality"), "{err}");
        assert!(Inertial::from_full(1.0, [0.0; 3], [1.0, 1.0, 1.0, 2.0, 0.0, 0.0]).is_err());
    }
}
