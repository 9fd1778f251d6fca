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
        }
    }

    /// Checks that every value is finite and positive and μd ≤ μs.
    pub fn validate(&self) -> Result<(), SysidError> {
        for p in FitParam::ALL {
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
        format!(
            "side {:.2} mm, mass {:.4} kg, mu_static {:.4}, mu_dynamic {:.4}, stiffness {:.4e} N/m, dissipation {:.3} s/m",
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
}

impl FitParam {
    /// Every parameter, in report order.
    pub const ALL: [FitParam; 6] = [
        FitParam::Side,
        FitParam::Mass,
        FitParam::MuStatic,
        FitParam::MuDynamic,
        FitParam::Stiffness,
        FitParam::Dissipation,
    ];

    /// Everything but the mass (which a single free body cannot tell from
    /// the contact stiffness).
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

/// A model for system identification: one body with a free joint and one
/// box geom, moving among static geoms, with its nominal [`CubeParams`].
#[derive(Clone, Debug)]
pub struct CubeModel {
    /// The model as loaded.
    pub model: Model,
    /// The moving body.
    pub body: usize,
    /// Its box geom.
    pub geom: usize,
    /// The model's own parameters (pair values with the first static geom).
    pub nominal: CubeParams,
}

impl CubeModel {
    /// Checks that `model` is a single free body with one box geom among
    /// static geoms (no actuators, tendons or other joints).
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
        if moving.len() != 1 || model.geoms[moving[0]].kind != GeomKind::Box {
            return Err(bad(format!(
                "the body '{}' must have exactly one geom, a box ({} geoms)",
                model.bodies[body].name,
                moving.len()
            )));
        }
        let geom = moving[0];
        let Some(ground) = (0..model.geoms.len()).find(|&g| model.geoms[g].body == 0) else {
            return Err(bad("no static geom for the body to land on".into()));
        };
        for g in &model.geoms {
            if g.kind == GeomKind::Mesh {
                return Err(bad(format!("geom '{}' is a mesh; only primitive geoms are supported", g.name)));
            }
        }
        let pair = Material::combine(&model.geoms[geom].material, &model.geoms[ground].material);
        let nominal = CubeParams {
            side: 2.0 * model.geoms[geom].size[0],
            mass: model.bodies[body].mass,
            mu_static: pair.mu_static,
            mu_dynamic: pair.mu_dynamic,
            stiffness: pair.stiffness,
            dissipation: pair.dissipation,
        };
        nominal.validate().map_err(|e| bad(format!("nominal parameters: {e}")))?;
        Ok(Self { model, body, geom, nominal })
    }

    /// The model with parameters `p`, as MJCF text that [`Model::from_mjcf_str`]
    /// (and `cenic run`) loads: every geom's material is multiplied by the
    /// ratio of `p` to the nominal pair values (so every pair gets exactly
    /// `p`'s multipliers), the box is scaled, and the body gets an explicit
    /// `<inertial>` (the nominal inertia times the mass ratio). Keyframes are
    /// kept. `note` becomes an XML comment (no `--`).
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
        let geom = |s: &mut String, g: usize, indent: &str, scale: f64| -> Result<(), SysidError> {
            let geom = &m.geoms[g];
            let size: &[f64] = match geom.kind {
                GeomKind::Sphere => &geom.size[..1],
                GeomKind::Capsule | GeomKind::Cylinder => &geom.size[..2],
                GeomKind::Mesh => return Err(SysidError::Model(format!("geom '{}' is a mesh", geom.name))),
                _ => &geom.size,
            };
            let size: Vec<f64> = size.iter().map(|x| x * scale).collect();
            let mat = &geom.material;
            let _ = write!(s, "{indent}<geom");
            if !geom.name.is_empty() {
                let _ = write!(s, " name=\"{}\"", xml_escape(&geom.name));
            }
            let _ = write!(
                s,
                " type=\"{}\" size=\"{}\" pos=\"{}\" quat=\"{}\" contype=\"{}\" conaffinity=\"{}\" margin=\"{}\"",
                geom.kind.name(),
                v(&size),
                v(&geom.pos),
                v(&geom.quat),
                geom.contype,
                geom.conaffinity,
                geom.margin
            );
            if mat.stiffness.is_finite() {
                let _ = write!(s, " stiffness=\"{}\" dissipation=\"{}\"", mat.stiffness * ks, mat.dissipation * ds);
            }
            let _ =
                writeln!(s, " friction=\"{} 0 0\" friction_dynamic=\"{}\"/>", mat.mu_static * ms, mat.mu_dynamic * md);
            Ok(())
        };
        s.push_str("  <worldbody>\n");
        for g in (0..m.geoms.len()).filter(|&g| m.geoms[g].body == 0) {
            geom(&mut s, g, "    ", 1.0)?;
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
        geom(&mut s, self.geom, "      ", p.side / n.side)?;
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
/// stiffness and dissipation, and logit(μd/μs) for μd. Parameters not
/// fitted keep the values they were given.
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
    /// The parametrization fitting `fit` starting from `init`, for a model
    /// whose nominal values are `nominal` (`geom` is the box's index).
    pub fn new(fit: Vec<FitParam>, init: CubeParams, nominal: CubeParams, geom: usize) -> Self {
        let moves = |p: FitParam| fit.contains(&p) || init.get(p) != nominal.get(p);
        let friction = moves(FitParam::MuStatic) || moves(FitParam::MuDynamic);
        let mut rollout_params = vec![];
        for (p, rp) in [
            (FitParam::Side, Param::GeomSize(geom)),
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
        Self { fit, fixed: init, nominal, rollout_params }
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
        self.fit
            .iter()
            .map(|&f| match f {
                FitParam::MuDynamic => {
                    let r = p.mu_dynamic / p.mu_static;
                    (r / (1.0 - r)).ln()
                }
                _ => p.get(f).ln(),
            })
            .collect()
    }

    /// Parameters at coordinates `phi`.
    pub fn from_phi(&self, phi: &[f64]) -> CubeParams {
        let mut p = self.fixed;
        let ratio = self.fixed.mu_dynamic / self.fixed.mu_static;
        let mut r = ratio;
        for (&f, &x) in self.fit.iter().zip(phi) {
            match f {
                FitParam::MuDynamic => r = 1.0 / (1.0 + (-x).exp()),
                _ => p.set(f, x.exp()),
            }
        }
        p.mu_dynamic = p.mu_static * r;
        p
    }

    /// Multipliers on the nominal model for [`Self::rollout_params`].
    pub fn multipliers(&self, p: &CubeParams) -> Vec<f64> {
        let n = &self.nominal;
        self.rollout_params
            .iter()
            .map(|rp| match rp {
                Param::GeomSize(_) => p.side / n.side,
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
        // Physical value of a log-parametrised quantity, divided by its nominal value.
        let ratio_of = |f: FitParam| -> Tensor<2> {
            let nominal = self.nominal.get(f);
            match column(f) {
                Some(c) => c.exp().div_scalar(nominal),
                None => constant(self.fixed.get(f) / nominal),
            }
        };
        let cols: Vec<Tensor<2>> = self
            .rollout_params
            .iter()
            .map(|rp| match rp {
                Param::GeomSize(_) => ratio_of(FitParam::Side),
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
/// stiffness and dissipation 0.1 … 10 × nominal.
pub fn random_start(fit: &[FitParam], base: CubeParams, nominal: CubeParams, rng: &mut impl rand::Rng) -> CubeParams {
    use rand::RngExt;
    let mut p = base;
    let mut log_uniform = |lo: f64, hi: f64| (lo.ln() + (hi.ln() - lo.ln()) * rng.random::<f64>()).exp();
    for &f in FitParam::ALL.iter().filter(|f| fit.contains(f)) {
        let x = match f {
            FitParam::Side => log_uniform(0.06, 0.14),
            FitParam::Mass => log_uniform(0.5 * nominal.mass, 2.0 * nominal.mass),
            FitParam::MuStatic => log_uniform(0.05, 0.6),
            FitParam::MuDynamic => 0.0, // set from the ratio below
            FitParam::Stiffness => log_uniform(0.1 * nominal.stiffness, 10.0 * nominal.stiffness),
            FitParam::Dissipation => log_uniform(0.1 * nominal.dissipation, 10.0 * nominal.dissipation),
        };
        if f != FitParam::MuDynamic {
            p.set(f, x);
        }
    }
    let ratio =
        if fit.contains(&FitParam::MuDynamic) { log_uniform(0.5, 0.95) } else { base.mu_dynamic / base.mu_static };
    p.mu_dynamic = p.mu_static * ratio;
    p
}
