//! The identified parameters: physical values, their unconstrained
//! coordinates for the optimizer, the multipliers a [`DiffRollout`] takes,
//! and the fitted model written back as MJCF.
//!
//! [`DiffRollout`]: crate::diff::DiffRollout

use super::SysidError;
use crate::diff::Param;
use crate::model::{GeomKind, JointKind, Material, Model};
use burn::tensor::activation::sigmoid;
use burn::tensor::{Tensor, TensorData};
use std::fmt::Write as _;

/// Physical parameters of a tossed box on static geoms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubeParams {
    /// Edge length along the box's x axis (m); the other edges keep their
    /// ratio to it. As the collision stages see it: mass properties follow
    /// `mass`, not the size (a hollow or dense cube is allowed).
    pub side: f64,
    /// Mass (kg); the inertia scales with it.
    pub mass: f64,
    /// Static friction coefficient of the contact pair (dimensionless).
    pub mu_static: f64,
    /// Dynamic friction coefficient of the contact pair, ≤ `mu_static`.
    pub mu_dynamic: f64,
    /// Contact stiffness of the pair (N/m; the two geoms' springs in series).
    pub stiffness: f64,
    /// Hunt–Crossley dissipation of the pair (s/m).
    pub dissipation: f64,
    /// Radius of the box's rounded corners (m); 0 for sharp corners. A
    /// rounded box is modelled as a non-colliding box of the full size with
    /// 8 colliding spheres of this radius at the corners of the box shrunk
    /// by it ([`CubeModel`]): against a plane, exactly a box with rounded
    /// edges and corners.
    pub corner_radius: f64,
}

impl CubeParams {
    /// The value of one parameter.
    pub fn get(&self, p: FitParam) -> f64 {
        match p {
            FitParam::Side => self.side,
            FitParam::Mass => self.mass,
            FitParam::MuStatic => self.mu_static,
            FitParam::MuDynamic => self.mu_dynamic,
            FitParam::Stiffness => self.stiffness,
            FitParam::Dissipation => self.dissipation,
            FitParam::CornerRadius => self.corner_radius,
        }
    }

    /// Sets one parameter.
    pub fn set(&mut self, p: FitParam, x: f64) {
        match p {
            FitParam::Side => self.side = x,
            FitParam::Mass => self.mass = x,
            FitParam::MuStatic => self.mu_static = x,
            FitParam::MuDynamic => self.mu_dynamic = x,
            FitParam::Stiffness => self.stiffness = x,
            FitParam::Dissipation => self.dissipation = x,
            FitParam::CornerRadius => self.corner_radius = x,
        }
    }

    /// Checks that every value is finite and positive (the corner radius:
    /// ≥ 0 and less than half the side), and μd ≤ μs.
    pub fn validate(&self) -> Result<(), SysidError> {
        let r = self.corner_radius;
        if !(r >= 0.0 && r < 0.5 * self.side) {
            return Err(SysidError::Input(format!(
                "corner_radius must be ≥ 0 and less than half the side ({} m), got {r}",
                0.5 * self.side
            )));
        }
        for p in FitParam::ALL.into_iter().filter(|&p| p != FitParam::CornerRadius) {
            let x = self.get(p);
            if !(x > 0.0 && x.is_finite()) {
                return Err(SysidError::Input(format!("{} must be finite and positive, got {x}", p.name())));
            }
        }
        if self.mu_dynamic > self.mu_static {
            return Err(SysidError::Input(format!(
                "mu_dynamic {} must not exceed mu_static {}",
                self.mu_dynamic, self.mu_static
            )));
        }
        Ok(())
    }

    /// One line: every parameter with its unit.
    pub fn summary(&self) -> String {
        let corners = if self.corner_radius > 0.0 {
            format!(", corner radius {:.2} mm", 1e3 * self.corner_radius)
        } else {
            String::new()
        };
        format!(
            "side {:.2} mm{corners}, mass {:.4} kg, mu_static {:.4}, mu_dynamic {:.4}, stiffness {:.4e} N/m, dissipation {:.3} s/m",
            1e3 * self.side,
            self.mass,
            self.mu_static,
            self.mu_dynamic,
            self.stiffness,
            self.dissipation
        )
    }
}

/// A parameter that can be fitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FitParam {
    /// [`CubeParams::side`].
    Side,
    /// [`CubeParams::mass`]. For a single free body it is degenerate with
    /// the stiffness (the motion depends on k/m, not on k and m apart), so
    /// fit it only with the stiffness held fixed.
    Mass,
    /// [`CubeParams::mu_static`].
    MuStatic,
    /// [`CubeParams::mu_dynamic`], fitted as the ratio μd/μs ∈ (0, 1);
    /// without it the ratio stays at its initial value.
    MuDynamic,
    /// [`CubeParams::stiffness`].
    Stiffness,
    /// [`CubeParams::dissipation`].
    Dissipation,
    /// [`CubeParams::corner_radius`], fitted as the fraction 2r/side ∈ (0, 1)
    /// (logit); only for a model with rounded corners. Without it the radius
    /// stays at its initial value (m).
    CornerRadius,
}

impl FitParam {
    /// Every parameter, in report order.
    pub const ALL: [FitParam; 7] = [
        FitParam::Side,
        FitParam::Mass,
        FitParam::MuStatic,
        FitParam::MuDynamic,
        FitParam::Stiffness,
        FitParam::Dissipation,
        FitParam::CornerRadius,
    ];

    /// The parameters of a box with sharp corners (all but the corner radius).
    pub const SHARP: [FitParam; 6] = [
        FitParam::Side,
        FitParam::Mass,
        FitParam::MuStatic,
        FitParam::MuDynamic,
        FitParam::Stiffness,
        FitParam::Dissipation,
    ];

    /// Everything but the mass (which a single free body cannot tell from
    /// the contact stiffness) and the corner radius.
    pub const ALL_BUT_MASS: [FitParam; 5] =
        [FitParam::Side, FitParam::MuStatic, FitParam::MuDynamic, FitParam::Stiffness, FitParam::Dissipation];

    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            FitParam::Side => "side",
            FitParam::Mass => "mass",
            FitParam::MuStatic => "mu_static",
            FitParam::MuDynamic => "mu_dynamic",
            FitParam::Stiffness => "stiffness",
            FitParam::Dissipation => "dissipation",
            FitParam::CornerRadius => "corner_radius",
        }
    }

    /// Parses a comma-separated list of names (no repeats).
    pub fn parse_list(s: &str) -> Result<Vec<FitParam>, String> {
        let mut out = vec![];
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let p = FitParam::ALL.into_iter().find(|p| p.name() == name).ok_or_else(|| {
                let all: Vec<&str> = FitParam::ALL.iter().map(|p| p.name()).collect();
                format!("unknown parameter '{name}' (one of {})", all.join(", "))
            })?;
            if out.contains(&p) {
                return Err(format!("parameter '{name}' given twice"));
            }
            out.push(p);
        }
        if out.is_empty() {
            return Err("no parameter to fit".into());
        }
        Ok(out)
    }
}

/// Largest initial ratio μd/μs when μd is fitted: the ratio is a sigmoid
/// of its coordinate, so it must start inside (0, 1). A larger ratio is
/// met by raising μs (which acts only below a few times the stiction
/// tolerance) rather than lowering μd.
pub const MAX_INITIAL_FRICTION_RATIO: f64 = 0.95;

/// Relative tolerance of the corner-sphere layout check of [`CubeModel::new`].
const LAYOUT_TOLERANCE: f64 = 1e-9;

/// A model for system identification: one body with a free joint moving
/// among static geoms, and its nominal [`CubeParams`]. The body's collision
/// geometry is either
/// - one box (sharp corners), or
/// - a cube with rounded corners: one box with `contype` = `conaffinity` =
///   0 (its full size, for looks and the side length) at the body origin,
///   and 8 colliding spheres of one radius r at (±(h − r), ±(h − r), ±(h − r))
///   in the box frame, h the box's half-side. Against a plane this is exact
///   for a box whose edges and corners are rounded with radius r; MJCF has no
///   rounded box, and MuJoCo loads this form too. [`CubeModel::to_mjcf`]
///   writes it for parameters with `corner_radius > 0`.
#[derive(Clone, Debug)]
pub struct CubeModel {
    /// The model as loaded.
    pub model: Model,
    /// The moving body.
    pub body: usize,
    /// Its box geom.
    pub geom: usize,
    /// The corner spheres (empty for a sharp box), in corner order: bit i of
    /// the index set means + along axis i.
    pub corners: Vec<usize>,
    /// The model's own parameters (pair values of its colliding geom with
    /// the first static geom).
    pub nominal: CubeParams,
}

impl CubeModel {
    /// Checks that `model` is a single free body with one box geom, or one
    /// box and its 8 corner spheres (see the type's docs), among static
    /// geoms (no actuators, tendons or other joints).
    pub fn new(model: Model) -> Result<Self, SysidError> {
        let bad = |why: String| SysidError::Model(format!("model '{}': {why}", model.name));
        if model.bodies.len() != 2 || model.joints.len() != 1 || model.joints[0].kind != JointKind::Free {
            return Err(bad(format!(
                "system identification needs exactly one body with a free joint ({} bodies besides the world, {} joints)",
                model.bodies.len() - 1,
                model.joints.len()
            )));
        }
        if model.nu() > 0 || !model.tendons.is_empty() {
            return Err(bad("actuators and tendons are not supported".into()));
        }
        if model.options.margin != 0.0 {
            return Err(bad("a global contact margin cannot be written to MJCF".into()));
        }
        let body = 1;
        let moving: Vec<usize> = (0..model.geoms.len()).filter(|&g| model.geoms[g].body == body).collect();
        let boxes: Vec<usize> = moving.iter().copied().filter(|&g| model.geoms[g].kind == GeomKind::Box).collect();
        let spheres: Vec<usize> = moving.iter().copied().filter(|&g| model.geoms[g].kind == GeomKind::Sphere).collect();
        let shape_err = || {
            bad(format!(
                "the body '{}' must have exactly one geom, a box, or a non-colliding box and 8 corner spheres ({} geoms: {} boxes, {} spheres)",
                model.bodies[body].name,
                moving.len(),
                boxes.len(),
                spheres.len()
            ))
        };
        if boxes.len() != 1 || boxes.len() + spheres.len() != moving.len() {
            return Err(shape_err());
        }
        let geom = boxes[0];
        let b = &model.geoms[geom];
        let corners = match spheres.len() {
            0 => vec![],
            8 => {
                if b.contype != 0 || b.conaffinity != 0 {
                    return Err(bad(format!(
                        "box '{}' has corner spheres, so it must not collide itself (contype = conaffinity = 0)",
                        b.name
                    )));
                }
                if b.pos != [0.0; 3]
                    || b.quat != [1.0, 0.0, 0.0, 0.0]
                    || b.size[1] != b.size[0]
                    || b.size[2] != b.size[0]
                {
                    return Err(bad(format!(
                        "box '{}' with corner spheres must be a cube at the body origin, unrotated",
                        b.name
                    )));
                }
                let r = model.geoms[spheres[0]].size[0];
                let a = b.size[0] - r;
                let tol = LAYOUT_TOLERANCE * b.size[0];
                let mut corners = vec![usize::MAX; 8];
                for &s in &spheres {
                    let g = &model.geoms[s];
                    let c = (0..3).fold(0, |c, i| c | (usize::from(g.pos[i] > 0.0) << i));
                    let at_corner = (0..3).all(|i| (g.pos[i].abs() - a).abs() <= tol);
                    if (g.size[0] - r).abs() > tol || !at_corner || !(r > 0.0 && a > 0.0) || corners[c] != usize::MAX {
                        return Err(bad(format!(
                            "sphere '{}' (radius {}, at {:?}) is not a corner sphere of box '{}': 8 spheres of one radius r at (±(h − r), ±(h − r), ±(h − r)), h = {}",
                            g.name, g.size[0], g.pos, b.name, b.size[0]
                        )));
                    }
                    let (c0, s0) = (&model.geoms[spheres[0]], g);
                    if (s0.contype, s0.conaffinity, s0.margin, &s0.material)
                        != (c0.contype, c0.conaffinity, c0.margin, &c0.material)
                    {
                        return Err(bad(format!(
                            "corner sphere '{}' differs from '{}' in contype, conaffinity, margin or material",
                            s0.name, c0.name
                        )));
                    }
                    corners[c] = s;
                }
                corners
            }
            _ => return Err(shape_err()),
        };
        let contact = corners.first().copied().unwrap_or(geom);
        let Some(ground) = (0..model.geoms.len()).find(|&g| model.geoms[g].body == 0) else {
            return Err(bad("no static geom for the body to land on".into()));
        };
        for g in &model.geoms {
            if g.kind == GeomKind::Mesh {
                return Err(bad(format!("geom '{}' is a mesh; only primitive geoms are supported", g.name)));
            }
        }
        let pair = Material::combine(&model.geoms[contact].material, &model.geoms[ground].material);
        let nominal = CubeParams {
            side: 2.0 * model.geoms[geom].size[0],
            mass: model.bodies[body].mass,
            mu_static: pair.mu_static,
            mu_dynamic: pair.mu_dynamic,
            stiffness: pair.stiffness,
            dissipation: pair.dissipation,
            corner_radius: corners.first().map_or(0.0, |&s| model.geoms[s].size[0]),
        };
        nominal.validate().map_err(|e| bad(format!("nominal parameters: {e}")))?;
        Ok(Self { model, body, geom, corners, nominal })
    }

    /// True for the form with corner spheres.
    pub fn is_rounded(&self) -> bool {
        !self.corners.is_empty()
    }

    /// The same model with corners of radius `r` (m; 0: sharp), all else nominal.
    pub fn with_corner_radius(&self, r: f64) -> Result<Self, SysidError> {
        let p = CubeParams { corner_radius: r, ..self.nominal };
        Self::new(self.with_params(&p)?)
    }

    /// The model with parameters `p`, as MJCF text that [`Model::from_mjcf_str`]
    /// (and `cenic run`) loads: every geom's material is multiplied by the
    /// ratio of `p` to the nominal pair values (so every pair gets exactly
    /// `p`'s multipliers), the box is scaled, its contacts are the box itself
    /// (`p.corner_radius` = 0) or 8 corner spheres (> 0, see the type's
    /// docs; these need a cube), and the body gets an explicit `<inertial>`
    /// (the nominal inertia times the mass ratio). Keyframes are kept.
    /// `note` becomes an XML comment (no `--`).
    pub fn to_mjcf(&self, p: &CubeParams, note: &str) -> Result<String, SysidError> {
        p.validate()?;
        let m = &self.model;
        let n = &self.nominal;
        let (ks, ds) = (p.stiffness / n.stiffness, p.dissipation / n.dissipation);
        let (ms, md) = (p.mu_static / n.mu_static, p.mu_dynamic / n.mu_dynamic);
        let v = |a: &[f64]| a.iter().map(|x| format!("{x}")).collect::<Vec<_>>().join(" ");
        let mut s = String::new();
        let o = &m.options;
        let _ = writeln!(s, "<mujoco model=\"{}\">", xml_escape(&format!("{}_fitted", m.name)));
        let _ = writeln!(s, "  <!-- {} -->", note.replace("--", "- -"));
        let _ = writeln!(
            s,
            "  <option timestep=\"{}\" gravity=\"{}\" stiction_tolerance=\"{}\"/>",
            o.timestep,
            v(&o.gravity),
            o.stiction_tolerance
        );
        // One <geom>: `like` gives the name, kind, contact masks, margin and material.
        struct Spec<'a> {
            name: String,
            kind: GeomKind,
            size: &'a [f64],
            pos: [f64; 3],
            quat: [f64; 4],
            collides: bool,
        }
        let geom = |s: &mut String, like: usize, spec: Spec, indent: &str| {
            let geom = &m.geoms[like];
            let mat = &geom.material;
            let _ = write!(s, "{indent}<geom");
            if !spec.name.is_empty() {
                let _ = write!(s, " name=\"{}\"", xml_escape(&spec.name));
            }
            let (contype, conaffinity) = if spec.collides { (geom.contype, geom.conaffinity) } else { (0, 0) };
            let _ = write!(
                s,
                " type=\"{}\" size=\"{}\" pos=\"{}\" quat=\"{}\" contype=\"{contype}\" conaffinity=\"{conaffinity}\" margin=\"{}\"",
                spec.kind.name(),
                v(spec.size),
                v(&spec.pos),
                v(&spec.quat),
                geom.margin
            );
            if mat.stiffness.is_finite() {
                let _ = write!(s, " stiffness=\"{}\" dissipation=\"{}\"", mat.stiffness * ks, mat.dissipation * ds);
            }
            let _ =
                writeln!(s, " friction=\"{} 0 0\" friction_dynamic=\"{}\"/>", mat.mu_static * ms, mat.mu_dynamic * md);
        };
        let own_size = |g: usize| -> Result<&[f64], SysidError> {
            let geom = &m.geoms[g];
            Ok(match geom.kind {
                GeomKind::Sphere => &geom.size[..1],
                GeomKind::Capsule | GeomKind::Cylinder => &geom.size[..2],
                GeomKind::Mesh => return Err(SysidError::Model(format!("geom '{}' is a mesh", geom.name))),
                _ => &geom.size,
            })
        };
        s.push_str("  <worldbody>\n");
        for g in (0..m.geoms.len()).filter(|&g| m.geoms[g].body == 0) {
            let e = &m.geoms[g];
            let spec = Spec {
                name: e.name.clone(),
                kind: e.kind,
                size: own_size(g)?,
                pos: e.pos,
                quat: e.quat,
                collides: true,
            };
            geom(&mut s, g, spec, "    ");
        }
        let b = &m.bodies[self.body];
        let mass_scale = p.mass / n.mass;
        let _ =
            writeln!(s, "    <body name=\"{}\" pos=\"{}\" quat=\"{}\">", xml_escape(&b.name), v(&b.pos), v(&b.quat));
        let _ = writeln!(s, "      <freejoint name=\"{}\"/>", xml_escape(&m.joints[0].name));
        let inertia: Vec<f64> = b.inertia.iter().map(|i| i * mass_scale).collect();
        let _ = writeln!(
            s,
            "      <inertial pos=\"{}\" quat=\"{}\" mass=\"{}\" diaginertia=\"{}\"/>",
            v(&b.ipos),
            v(&b.iquat),
            p.mass,
            v(&inertia)
        );
        let bx = &m.geoms[self.geom];
        let size: Vec<f64> = bx.size.iter().map(|x| x * p.side / n.side).collect();
        let contact = self.corners.first().copied().unwrap_or(self.geom);
        let r = p.corner_radius;
        let spec = Spec {
            name: bx.name.clone(),
            kind: GeomKind::Box,
            size: &size,
            pos: bx.pos,
            quat: bx.quat,
            collides: r == 0.0,
        };
        geom(&mut s, contact, spec, "      ");
        if r > 0.0 {
            if size[1] != size[0] || size[2] != size[0] || bx.pos != [0.0; 3] || bx.quat != [1.0, 0.0, 0.0, 0.0] {
                return Err(SysidError::Model(format!(
                    "rounded corners need a cube at the body origin, unrotated; box '{}' has half-sizes {:?} at {:?}",
                    bx.name, bx.size, bx.pos
                )));
            }
            let a = size[0] - r;
            for c in 0..8 {
                let pos = [0, 1, 2].map(|i| if (c >> i) & 1 == 1 { a } else { -a });
                let name = if bx.name.is_empty() { String::new() } else { format!("{}_corner{c}", bx.name) };
                let spec =
                    Spec { name, kind: GeomKind::Sphere, size: &[r], pos, quat: [1.0, 0.0, 0.0, 0.0], collides: true };
                geom(&mut s, contact, spec, "      ");
            }
        }
        s.push_str("    </body>\n  </worldbody>\n");
        if !m.keyframes.is_empty() {
            s.push_str("  <keyframe>\n");
            for k in &m.keyframes {
                let _ = writeln!(
                    s,
                    "    <key name=\"{}\" time=\"{}\" qpos=\"{}\" qvel=\"{}\"/>",
                    xml_escape(&k.name),
                    k.time,
                    v(&k.qpos),
                    v(&k.qvel)
                );
            }
            s.push_str("  </keyframe>\n");
        }
        s.push_str("</mujoco>\n");
        Ok(s)
    }

    /// The model with parameters `p` ([`to_mjcf`](Self::to_mjcf), loaded back).
    pub fn with_params(&self, p: &CubeParams) -> Result<Model, SysidError> {
        let xml = self.to_mjcf(p, "cenic sysid")?;
        Model::from_mjcf_str(&xml).map_err(|e| SysidError::Model(format!("fitted model does not load: {e}")))
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The map between [`CubeParams`] and the optimizer's unconstrained
/// coordinates φ (positive by construction): ln of the side, mass, μs,
/// stiffness and dissipation, logit(μd/μs) for μd and logit(2r/side) for
/// the corner radius r. Parameters not fitted keep the values they were
/// given (the corner radius in metres).
#[derive(Clone, Debug)]
pub struct Parametrization {
    /// The fitted parameters, in the order of φ.
    pub fit: Vec<FitParam>,
    /// Values of the parameters not fitted (and the nominal μd/μs ratio when μd is not fitted).
    pub fixed: CubeParams,
    /// The model's nominal values: multipliers are relative to these.
    pub nominal: CubeParams,
    /// Multipliers a [`crate::diff::DiffRollout`] takes, in this order.
    pub rollout_params: Vec<Param>,
}

impl Parametrization {
    /// The parametrization fitting `fit` of `cube`, starting from `init`.
    /// The corner radius can only be fitted, or differ from 0, for a cube
    /// with corner spheres ([`CubeModel::with_corner_radius`]), and is
    /// never 0 for one.
    pub fn new(fit: Vec<FitParam>, init: CubeParams, cube: &CubeModel) -> Result<Self, SysidError> {
        let nominal = cube.nominal;
        if cube.is_rounded() != (init.corner_radius > 0.0) {
            return Err(SysidError::Input(format!(
                "corner radius {} m for a model with {} corners: build the model with CubeModel::with_corner_radius (--corner-radius)",
                init.corner_radius,
                if cube.is_rounded() { "rounded" } else { "sharp" }
            )));
        }
        if fit.contains(&FitParam::CornerRadius) && !cube.is_rounded() {
            return Err(SysidError::Input(
                "the corner radius can only be fitted for a box with rounded corners (--corner-radius > 0)".into(),
            ));
        }
        init.validate()?;
        let moves = |p: FitParam| fit.contains(&p) || init.get(p) != nominal.get(p);
        let friction = moves(FitParam::MuStatic) || moves(FitParam::MuDynamic);
        let mut rollout_params = vec![];
        if cube.is_rounded() {
            if moves(FitParam::Side) || moves(FitParam::CornerRadius) {
                rollout_params.extend([Param::BodyGeomOffset(cube.body), Param::BodyGeomSize(cube.body)]);
            }
        } else if moves(FitParam::Side) {
            rollout_params.push(Param::GeomSize(cube.geom));
        }
        for (p, rp) in [
            (FitParam::Mass, Param::MassScale),
            (FitParam::Stiffness, Param::Stiffness),
            (FitParam::Dissipation, Param::Dissipation),
        ] {
            if moves(p) {
                rollout_params.push(rp);
            }
        }
        if friction {
            rollout_params.extend([Param::MuStatic, Param::MuDynamic]);
        }
        Ok(Self { fit, fixed: init, nominal, rollout_params })
    }

    /// Number of coordinates.
    pub fn len(&self) -> usize {
        self.fit.len()
    }

    /// True when nothing is fitted.
    pub fn is_empty(&self) -> bool {
        self.fit.is_empty()
    }

    /// Coordinates of `p`.
    pub fn to_phi(&self, p: &CubeParams) -> Vec<f64> {
        let logit = |r: f64| (r / (1.0 - r)).ln();
        self.fit
            .iter()
            .map(|&f| match f {
                FitParam::MuDynamic => logit(p.mu_dynamic / p.mu_static),
                FitParam::CornerRadius => logit(2.0 * p.corner_radius / p.side),
                _ => p.get(f).ln(),
            })
            .collect()
    }

    /// Parameters at coordinates `phi`.
    pub fn from_phi(&self, phi: &[f64]) -> CubeParams {
        let mut p = self.fixed;
        let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
        let mut r = self.fixed.mu_dynamic / self.fixed.mu_static;
        let mut corner_fraction = None;
        for (&f, &x) in self.fit.iter().zip(phi) {
            match f {
                FitParam::MuDynamic => r = sigmoid(x),
                FitParam::CornerRadius => corner_fraction = Some(sigmoid(x)),
                _ => p.set(f, x.exp()),
            }
        }
        p.mu_dynamic = p.mu_static * r;
        if let Some(c) = corner_fraction {
            p.corner_radius = c * 0.5 * p.side;
        }
        p
    }

    /// Multipliers on the nominal model for [`Self::rollout_params`]. For
    /// corner spheres: the offset multiplier (side/2 − r)/(side₀/2 − r₀) and
    /// the radius multiplier r/r₀.
    pub fn multipliers(&self, p: &CubeParams) -> Vec<f64> {
        let n = &self.nominal;
        let inner = |q: &CubeParams| 0.5 * q.side - q.corner_radius;
        self.rollout_params
            .iter()
            .map(|rp| match rp {
                Param::GeomSize(_) => p.side / n.side,
                Param::BodyGeomOffset(_) => inner(p) / inner(n),
                Param::BodyGeomSize(_) => p.corner_radius / n.corner_radius,
                Param::MassScale => p.mass / n.mass,
                Param::Stiffness => p.stiffness / n.stiffness,
                Param::Dissipation => p.dissipation / n.dissipation,
                Param::MuStatic => p.mu_static / n.mu_static,
                Param::MuDynamic => p.mu_dynamic / n.mu_dynamic,
                Param::Friction => unreachable!("not used by the parametrization"),
            })
            .collect()
    }

    /// [`multipliers`](Self::multipliers) of [`from_phi`](Self::from_phi)
    /// as a differentiable burn expression: `phi` (1, len) → (1, rollout params).
    pub fn multipliers_tensor(&self, phi: Tensor<2>) -> Tensor<2> {
        let device = phi.device();
        let opts = (&device, phi.dtype());
        let constant = |x: f64| Tensor::<2>::from_data(TensorData::new(vec![x], [1, 1]), opts);
        let column = |f: FitParam| -> Option<Tensor<2>> {
            let i = self.fit.iter().position(|&g| g == f)?;
            Some(phi.clone().slice([0..1, i..i + 1]))
        };
        // Physical value of a log-parametrised quantity.
        let value = |f: FitParam| -> Tensor<2> {
            match column(f) {
                Some(c) => c.exp(),
                None => constant(self.fixed.get(f)),
            }
        };
        let ratio_of = |f: FitParam| value(f).div_scalar(self.nominal.get(f));
        let radius = || match column(FitParam::CornerRadius) {
            Some(c) => sigmoid(c) * value(FitParam::Side).mul_scalar(0.5),
            None => constant(self.fixed.corner_radius),
        };
        let n = &self.nominal;
        let cols: Vec<Tensor<2>> = self
            .rollout_params
            .iter()
            .map(|rp| match rp {
                Param::GeomSize(_) => ratio_of(FitParam::Side),
                Param::BodyGeomOffset(_) => {
                    (value(FitParam::Side).mul_scalar(0.5) - radius()).div_scalar(0.5 * n.side - n.corner_radius)
                }
                Param::BodyGeomSize(_) => radius().div_scalar(n.corner_radius),
                Param::MassScale => ratio_of(FitParam::Mass),
                Param::Stiffness => ratio_of(FitParam::Stiffness),
                Param::Dissipation => ratio_of(FitParam::Dissipation),
                Param::MuStatic => ratio_of(FitParam::MuStatic),
                Param::MuDynamic => {
                    let mu_s = ratio_of(FitParam::MuStatic).mul_scalar(self.nominal.mu_static);
                    let r = match column(FitParam::MuDynamic) {
                        Some(c) => sigmoid(c),
                        None => constant(self.fixed.mu_dynamic / self.fixed.mu_static),
                    };
                    (mu_s * r).div_scalar(self.nominal.mu_dynamic)
                }
                Param::Friction => unreachable!("not used by the parametrization"),
            })
            .collect();
        Tensor::cat(cols, 1)
    }
}

/// Starting values for a fit: `init` with the friction ratio moved inside
/// (0, 1) when μd is fitted (μs raised to μd / [`MAX_INITIAL_FRICTION_RATIO`]).
pub fn interior_start(fit: &[FitParam], mut init: CubeParams) -> CubeParams {
    if fit.contains(&FitParam::MuDynamic) && init.mu_dynamic > MAX_INITIAL_FRICTION_RATIO * init.mu_static {
        init.mu_static = init.mu_dynamic / MAX_INITIAL_FRICTION_RATIO;
    }
    init
}

/// Random starting values for the fitted parameters (the others stay as in
/// `base`), log-uniform over ranges around the nominal values: side 60 …
/// 140 mm, mass 0.5 … 2 × nominal, μs 0.05 … 0.6, μd/μs 0.5 … 0.95,
/// stiffness and dissipation 0.1 … 10 × nominal, corner radius 2 … 20 % of
/// the half side.
pub fn random_start(fit: &[FitParam], base: CubeParams, nominal: CubeParams, rng: &mut impl rand::Rng) -> CubeParams {
    use rand::RngExt;
    let mut p = base;
    let mut log_uniform = |lo: f64, hi: f64| (lo.ln() + (hi.ln() - lo.ln()) * rng.random::<f64>()).exp();
    let mut corner_fraction = None;
    for &f in FitParam::ALL.iter().filter(|f| fit.contains(f)) {
        let x = match f {
            FitParam::Side => log_uniform(0.06, 0.14),
            FitParam::Mass => log_uniform(0.5 * nominal.mass, 2.0 * nominal.mass),
            FitParam::MuStatic => log_uniform(0.05, 0.6),
            FitParam::MuDynamic => continue, // set from the ratio below
            FitParam::Stiffness => log_uniform(0.1 * nominal.stiffness, 10.0 * nominal.stiffness),
            FitParam::Dissipation => log_uniform(0.1 * nominal.dissipation, 10.0 * nominal.dissipation),
            FitParam::CornerRadius => {
                corner_fraction = Some(log_uniform(0.02, 0.2));
                continue;
            }
        };
        p.set(f, x);
    }
    let ratio =
        if fit.contains(&FitParam::MuDynamic) { log_uniform(0.5, 0.95) } else { base.mu_dynamic / base.mu_static };
    p.mu_dynamic = p.mu_static * ratio;
    if let Some(c) = corner_fraction {
        p.corner_radius = c * 0.5 * p.side;
    }
    p
}
