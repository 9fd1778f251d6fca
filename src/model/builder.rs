//! [`ModelBuilder`]: write models in code; the MJCF loader uses it too.
//! `build()` validates everything and derives the compiled layout, returning
//! a [`ModelError`] (never panicking) on bad input.

use super::inertia::{InertiaAccumulator, geom_unit_mass_props};
use super::soft::Softness;
use super::*;
use crate::math::{Mat3, Quat, Vec3};

/// Index of the world body.
pub const WORLD: usize = 0;

/// Explicit inertial properties of a body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inertial {
    /// Mass (kg), > 0.
    pub mass: f64,
    /// Centre of mass in the body frame (m).
    pub pos: [f64; 3],
    /// Orientation of the principal axes in the body frame.
    pub quat: [f64; 4],
    /// Principal moments about the centre of mass (kg·m²), each > 0 and
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
            body,
            pos: [0.0; 3],
            quat: [1.0, 0.0, 0.0, 0.0],
            material: Material::default(),
            contype: 1,
            conaffinity: 1,
            margin: 0.0,
            mass: None,
            density: 1000.0,
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

/// Builds a [`Model`]. Add bodies (parents first), joints, geoms, sites,
/// actuators, tendons and keyframes, then call [`build`](Self::build).
#[derive(Clone, Debug)]
pub struct ModelBuilder {
    name: String,
    /// Global options.
    pub options: Options,
    /// How body inertias derive from geoms.
    pub inertia_from_geom: InertiaFromGeom,
    /// When set, all masses and inertias are scaled so the total mass equals this (kg).
    pub total_mass: Option<f64>,
    bodies: Vec<BodySpec>,
    joints: Vec<JointSpec>,
    geoms: Vec<GeomSpec>,
    sites: Vec<Site>,
    meshes: Vec<ConvexMesh>,
    actuators: Vec<Actuator>,
    tendons: Vec<FixedTendon>,
    keyframes: Vec<Keyframe>,
    warnings: Vec<String>,
}

impl ModelBuilder {
    /// A builder holding only the world body.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            options: Options::default(),
            inertia_from_geom: InertiaFromGeom::Auto,
            total_mass: None,
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
            actuators: vec![],
            tendons: vec![],
            keyframes: vec![],
            warnings: vec![],
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
    /// Adds a fixed tendon; returns its index.
    pub fn add_tendon(&mut self, t: FixedTendon) -> usize {
        self.tendons.push(t);
        self.tendons.len() - 1
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
            bodies: bspecs,
            joints: jspecs,
            geoms: gspecs,
            sites,
            meshes,
            actuators,
            tendons,
            keyframes,
            mut warnings,
        } = self;

        validate_options(&options)?;
        check_unique_names(bspecs.iter().map(|b| b.name.as_str()), Entity::Body)?;
        check_unique_names(jspecs.iter().map(|j| j.name.as_str()), Entity::Joint)?;
        check_unique_names(gspecs.iter().map(|g| g.name.as_str()), Entity::Geom)?;
        check_unique_names(sites.iter().map(|s| s.name.as_str()), Entity::Site)?;
        check_unique_names(actuators.iter().map(|a| a.name.as_str()), Entity::Actuator)?;

        // ---- bodies: topology and frames
        let nbody = bspecs.len();
        for (i, b) in bspecs.iter().enumerate().skip(1) {
            let e = |m: String| ModelError::invalid(Entity::Body(i), &b.name, m);
            if b.parent >= i {
                return Err(e(format!("parent index {} must refer to an earlier body", b.parent)));
            }
            finite3(&b.pos).map_err(|m| e(format!("pos {m}")))?;
            unit_quat(&b.quat).map_err(|m| e(format!("quat {m}")))?;
        }

        // ---- joints: grouped by body in body order
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
            for (what, x) in [("armature", j.armature), ("damping", j.damping), ("stiffness", j.stiffness)] {
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

        // ---- compiled joint / dof layout
        let mut joints = Vec::with_capacity(jspecs.len());
        let mut dofs: Vec<Dof> = vec![];
        let mut qpos0 = vec![];
        let mut bodies: Vec<Body> = Vec::with_capacity(nbody);
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
        let nq = qpos0.len();
        let nv = dofs.len();

        // ---- meshes and geoms
        let mut geoms = Vec::with_capacity(gspecs.len());
        for (gi, g) in gspecs.iter().enumerate() {
            let e = |m: String| ModelError::invalid(Entity::Geom(gi), &g.name, m);
            if g.body >= nbody {
                return Err(e(format!("body index {} does not exist", g.body)));
            }
            finite3(&g.pos).map_err(|m| e(format!("pos {m}")))?;
            unit_quat(&g.quat).map_err(|m| e(format!("quat {m}")))?;
            validate_size(g.kind, g.size).map_err(e)?;
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
            let [a, b, c] = g.size;
            let rbound = match g.kind {
                GeomKind::Plane => f64::INFINITY,
                GeomKind::Sphere => a,
                GeomKind::Capsule => a + b,
                GeomKind::Box => (a * a + b * b + c * c).sqrt(),
                GeomKind::Cylinder => (a * a + b * b).sqrt(),
                GeomKind::Ellipsoid => a.max(b).max(c),
                GeomKind::Mesh => mesh.map(|m| m.radius()).unwrap_or(0.0),
            };
            geoms.push(Geom {
                name: g.name.clone(),
                kind: g.kind,
                size: g.size,
                mesh: g.mesh,
                body: g.body,
                pos: g.pos,
                quat: Quat::from_array(g.quat).normalize().to_array(),
                material: g.material,
                contype: g.contype,
                conaffinity: g.conaffinity,
                margin: g.margin,
                rbound,
            });
        }

        // ---- body inertias
        for bi in 1..nbody {
            let spec = &bspecs[bi];
            let explicit = match inertia_from_geom {
                InertiaFromGeom::Always => None,
                _ => spec.inertial,
            };
            let e = |m: String| ModelError::invalid(Entity::Body(bi), &spec.name, m);
            let (mass, ipos, iquat, inertia) = if let Some(inl) = explicit {
                if !(inl.mass > 0.0 && inl.mass.is_finite()) {
                    return Err(e(format!("mass must be positive and finite, got {} kg", inl.mass)));
                }
                finite3(&inl.pos).map_err(|m| e(format!("inertial pos {m}")))?;
                unit_quat(&inl.quat).map_err(|m| e(format!("inertial quat {m}")))?;
                check_principal_inertia(inl.diag).map_err(e)?;
                (inl.mass, inl.pos, Quat::from_array(inl.quat).normalize().to_array(), inl.diag)
            } else if inertia_from_geom == InertiaFromGeom::Never && spec.inertial.is_none() {
                (0.0, [0.0; 3], [1.0, 0.0, 0.0, 0.0], [0.0; 3])
            } else {
                let mut acc = InertiaAccumulator::new();
                for (gi, g) in gspecs.iter().enumerate().filter(|(_, g)| g.body == bi) {
                    let mesh = g.mesh.map(|m| &meshes[m]);
                    let Some(p) = geom_unit_mass_props(g.kind, g.size, mesh) else {
                        continue;
                    };
                    let density = match g.mass {
                        Some(m) if p.volume > 0.0 => m / p.volume,
                        Some(_) => 0.0,
                        None => g.density,
                    };
                    let rot = Quat::from_array(geoms[gi].quat);
                    let com = Vec3::from_array(g.pos) + rot.rotate(p.com);
                    acc.add(p.volume * density, com, rot, p.inertia.scale(density));
                }
                match acc.principal() {
                    Some((c, q, d)) => (acc.mass(), c.to_array(), q.to_array(), d.to_array()),
                    None => (0.0, [0.0; 3], [1.0, 0.0, 0.0, 0.0], [0.0; 3]),
                }
            };
            let b = &mut bodies[bi];
            b.mass = mass;
            b.ipos = ipos;
            b.iquat = iquat;
            b.inertia = inertia;
        }
        if let Some(target) = total_mass {
            let total: f64 = bodies.iter().map(|b| b.mass).sum();
            if !(target > 0.0 && target.is_finite()) {
                return Err(ModelError::invalid(
                    Entity::Model,
                    &name,
                    format!("settotalmass must be positive, got {target}"),
                ));
            }
            if !(total > 0.0) {
                return Err(ModelError::invalid(Entity::Model, &name, "settotalmass given but the model has no mass"));
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
                return Err(ModelError::invalid(
                    Entity::Body(bi),
                    &b.name,
                    format!("mass must be ≥ 0, got {} kg", b.mass),
                ));
            }
        }

        // ---- sites
        for (si, s) in sites.iter().enumerate() {
            let e = |m: String| ModelError::invalid(Entity::Site(si), &s.name, m);
            if s.body >= nbody {
                return Err(e(format!("body index {} does not exist", s.body)));
            }
            finite3(&s.pos).map_err(|m| e(format!("pos {m}")))?;
            unit_quat(&s.quat).map_err(|m| e(format!("quat {m}")))?;
        }

        // ---- actuators
        for (ai, a) in actuators.iter().enumerate() {
            let e = |m: String| ModelError::invalid(Entity::Actuator(ai), &a.name, m);
            let Some(j) = joints.get(a.joint) else {
                return Err(e(format!("joint index {} does not exist", a.joint)));
            };
            if !matches!(j.kind, JointKind::Hinge | JointKind::Slide) {
                return Err(e(format!(
                    "actuators act on hinge or slide joints; joint '{}' is {}",
                    j.name,
                    j.kind.name()
                )));
            }
            match a.kind {
                ActuatorKind::Motor { gear, force_range } => {
                    if !gear.is_finite() {
                        return Err(e(format!("gear must be finite, got {gear}")));
                    }
                    if let Some([lo, hi]) = force_range {
                        if !(lo <= hi) || lo.is_nan() || hi.is_nan() {
                            return Err(e(format!("forcerange [{lo}, {hi}] must have lower ≤ upper")));
                        }
                    }
                }
                ActuatorKind::Position { kp, kd, effort_limit } => {
                    if !(kp >= 0.0 && kp.is_finite() && kd >= 0.0 && kd.is_finite()) {
                        return Err(e(format!("kp and kd must be finite and ≥ 0, got kp {kp}, kd {kd}")));
                    }
                    if !(effort_limit > 0.0) {
                        return Err(e(format!("effort limit must be > 0 (or infinite), got {effort_limit}")));
                    }
                }
            }
            if let Some([lo, hi]) = a.ctrl_range {
                if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                    return Err(e(format!("ctrlrange [{lo}, {hi}] must be finite with lower ≤ upper")));
                }
            }
        }

        // ---- tendons
        for (ti, t) in tendons.iter().enumerate() {
            let e = |m: String| ModelError::invalid(Entity::Tendon(ti), &t.name, m);
            for &(j, c) in &t.joints {
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
            if t.range.is_some() || t.stiffness != 0.0 || t.damping != 0.0 {
                warnings.push(format!(
                    "fixed tendon '{}' has limits, stiffness or damping, which are not simulated",
                    t.name
                ));
            }
        }

        // ---- keyframes
        let nu = actuators.len();
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
            if !k.qpos.iter().chain(&k.qvel).chain(&k.ctrl).all(|x| x.is_finite()) || !k.time.is_finite() {
                return Err(e("values must be finite".into()));
            }
        }

        let mut model = Model {
            name,
            options,
            bodies,
            joints,
            dofs,
            geoms,
            sites,
            meshes,
            actuators,
            tendons,
            keyframes,
            nq,
            nv,
            qpos0,
            warnings,
        };
        let invweight = inverse_mass_diagonal(&model)?;
        for (dof, w) in model.dofs.iter_mut().zip(&invweight) {
            dof.invweight0 = *w;
        }
        let timestep = model.options.timestep;
        for j in model.joints.iter_mut().filter(|j| j.range.is_some()) {
            j.limit_law = Some(j.limit_softness.law(1.0 / invweight[j.dof_adr], timestep));
        }
        Ok(model)
    }
}

/// The diagonal of M⁻¹ at the reference pose (MuJoCo's `dof_invweight0`
/// for hinge and slide dofs). Fails unless M is positive definite there:
/// every degree of freedom must move some mass (or carry armature).
fn inverse_mass_diagonal(model: &Model) -> Result<Vec<f64>, ModelError> {
    if model.nv == 0 {
        return Ok(vec![]);
    }
    let mut data = crate::dynamics::Data::<f64>::new(model);
    data.q.copy_from_slice(&model.qpos0);
    crate::dynamics::kinematics(model, &mut data);
    crate::dynamics::mass_matrix(model, &mut data);
    let n = model.nv;
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
    let mut diag = vec![0.0; n];
    let mut e = vec![0.0; n];
    for i in 0..n {
        e.iter_mut().for_each(|x| *x = 0.0);
        e[i] = 1.0;
        crate::math::cholesky_solve_in_place(&m, n, &mut e);
        diag[i] = e[i];
    }
    Ok(diag)
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
    if !d.iter().all(|x| *x > 0.0 && x.is_finite()) {
        return Err(format!("inertia {d:?} is not positive definite (every principal moment must be > 0)"));
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
        GeomKind::Box | GeomKind::Ellipsoid => 3,
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
