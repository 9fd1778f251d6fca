//! The kinematic tree: `worldbody`, `body`, `frame`, `inertial`, `joint`,
//! `freejoint`, `geom`, `site`, `camera` (`replicate` is expanded into frames before,
//! by the `replicate` module).
//!
//! Bodies are added depth first and each body's joints, geoms and sites
//! before its child bodies, which reproduces MuJoCo's body, joint, dof and
//! geom order.

use super::Loader;
use super::contact::{FRICTION_DEFAULT, GeomContact, PAIR_FRICTION_DEFAULT, SOLIMP_DEFAULT, SOLREF_DEFAULT};
use super::defaults::DKind;
use super::frames;
use super::xml::{self, Elem, check_attrs, elements, own_attr, tag};
use crate::model::soft::Softness;
use crate::model::{
    BodySpec, CameraMode, GeomKind, GeomSpec, GeomVisual, Inertial, JointKind, JointSpec, Material, ModelCamera,
    ModelError, Site, WORLD,
};
use roxmltree::Node;

const IDENTITY: [f64; 4] = [1.0, 0.0, 0.0, 0.0];

/// Size (m), position (m) and orientation of a shape in its body frame.
type ShapePose = ([f64; 3], [f64; 3], [f64; 4]);

/// The pose of a `<frame>` in its body (m, unit quaternion): applied to
/// the poses of the elements inside it, as MuJoCo's compiler does
/// (`mjuu_frameaccumChild`). Nested frames compose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Frame {
    pub pos: [f64; 3],
    pub quat: [f64; 4],
}

impl Frame {
    /// No transformation (elements directly under their body).
    pub const IDENTITY: Frame = Frame { pos: [0.0; 3], quat: IDENTITY };

    /// `inner` written inside this frame, as a pose in the body.
    fn compose(self, inner: Frame) -> Frame {
        let (pos, quat) = self.apply(inner.pos, inner.quat);
        Frame { pos, quat }
    }
    /// A pose written inside the frame, as a pose in the body (the
    /// identity frame leaves it bit for bit).
    fn apply(self, pos: [f64; 3], quat: [f64; 4]) -> ([f64; 3], [f64; 4]) {
        if self == Frame::IDENTITY {
            return (pos, quat);
        }
        let q = frames::quat_mul(self.quat, quat);
        (self.point(pos), frames::normalize_quat(q).unwrap_or(q))
    }
    /// A point written inside the frame, in the body frame.
    fn point(self, p: [f64; 3]) -> [f64; 3] {
        if self == Frame::IDENTITY {
            return p;
        }
        let r = frames::quat_rotate(self.quat, p);
        [self.pos[0] + r[0], self.pos[1] + r[1], self.pos[2] + r[2]]
    }
    /// A direction written inside the frame, in the body frame.
    fn vector(self, v: [f64; 3]) -> [f64; 3] {
        if self == Frame::IDENTITY { v } else { frames::quat_rotate(self.quat, v) }
    }
}

impl<'c, 'a> Loader<'c, 'a> {
    pub(super) fn worldbody(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        if let Some(a) = node.attributes().next() {
            let at = own_attr(node, a.name()).unwrap();
            return Err(self.ctx.err_attr(&at, "the world body cannot have attributes"));
        }
        self.body_children(node, WORLD, 0)
    }

    /// Joints, geoms and sites of `body` first (through its `<frame>`s, in
    /// document order), then its child bodies.
    fn body_children(&mut self, node: Node<'a, 'a>, body: usize, class: usize) -> Result<(), ModelError> {
        let mut kids = vec![];
        self.frame_children(node, body, class, Frame::IDENTITY, &mut kids)?;
        for (k, frame, class) in kids {
            self.body(k, body, class, frame)?;
        }
        Ok(())
    }

    /// The children of `node` (a body, or a `<frame>` of `body` at pose
    /// `frame` in the body): joints, geoms and sites are added now; child
    /// bodies are collected into `kids` with their frame and class.
    fn frame_children(
        &mut self,
        node: Node<'a, 'a>,
        body: usize,
        class: usize,
        frame: Frame,
        kids: &mut Vec<(Node<'a, 'a>, Frame, usize)>,
    ) -> Result<(), ModelError> {
        let in_frame = tag(node) == "frame";
        for c in elements(node) {
            match tag(c) {
                "body" => kids.push((c, frame, class)),
                "geom" => self.geom(c, body, class, frame)?,
                "site" => self.site(c, body, class, frame)?,
                "joint" | "freejoint" if body == WORLD => {
                    return Err(self.ctx.err_node(c, "the world body cannot have joints"));
                }
                "joint" => self.joint(c, body, class, frame)?,
                "freejoint" => self.freejoint(c, body)?,
                "inertial" if in_frame => {
                    return Err(self.ctx.err_node(
                        c,
                        "<inertial> cannot be inside <frame>: write it directly under its <body> (with its own pos and \
                         orientation)",
                    ));
                }
                "inertial" if body != WORLD => {} // read with its body
                "camera" => self.camera(c, body, frame)?,
                "light" => {}
                "frame" => {
                    check_attrs(self.ctx, c, &xml::FRAME, false)?;
                    let class = self.defaults.resolve(self.ctx, own_attr(c, "childclass"))?.unwrap_or(class);
                    let el = Elem::plain(self.ctx, c);
                    let pos = el.arr::<3>("pos")?.unwrap_or([0.0; 3]);
                    let quat = frames::orientation(&el, &self.compiler)?.unwrap_or(IDENTITY);
                    let inner = frame.compose(Frame { pos, quat });
                    self.frame_children(c, body, class, inner, kids)?;
                }
                t @ ("composite" | "flexcomp" | "attach") => {
                    return Err(self.ctx.err_node(
                        c,
                        format!(
                            "<{t}> is not supported: cenic reads the bodies written out in the file (MuJoCo can save \
                             the expanded model with mj_saveLastXML)"
                        ),
                    ));
                }
                "plugin" => {
                    return Err(self.ctx.err_node(c, "<plugin> is not supported: cenic has no engine plugins"));
                }
                t => return Err(self.ctx.err_node(c, format!("unknown element <{t}> in <{}>", tag(node)))),
            }
        }
        Ok(())
    }

    fn body(&mut self, node: Node<'a, 'a>, parent: usize, inherited: usize, frame: Frame) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::BODY, false)?;
        let class = self.defaults.resolve(self.ctx, own_attr(node, "childclass"))?.unwrap_or(inherited);
        let el = Elem::plain(self.ctx, node);
        if el.bool("mocap")? == Some(true) {
            if parent != WORLD || elements(node).any(|c| matches!(tag(c), "joint" | "freejoint")) {
                return Err(
                    el.err_attr(&el.attr("mocap").unwrap(), "a mocap body must be a child of the world without joints")
                );
            }
            let name = el.str("name").unwrap_or("");
            self.b.warn(format!(
                "mocap body '{name}' is a static body in cenic (its pose cannot be moved while simulating)"
            ));
        }
        if el.real("gravcomp")?.unwrap_or(0.0) != 0.0 {
            return Err(el.err_attr(&el.attr("gravcomp").unwrap(), "gravity compensation is not supported"));
        }
        let pos = el.arr::<3>("pos")?.unwrap_or([0.0; 3]);
        let quat = frames::orientation(&el, &self.compiler)?.unwrap_or(IDENTITY);
        let (pos, quat) = frame.apply(pos, quat);
        let inertials: Vec<Node> = elements(node).filter(|c| tag(*c) == "inertial").collect();
        if inertials.len() > 1 {
            return Err(self.ctx.err_node(inertials[1], "a body can have only one <inertial>"));
        }
        let inertial = match inertials.first() {
            Some(n) => Some(self.inertial(*n)?),
            None => None,
        };
        let name = el.str("name").unwrap_or("").to_string();
        let idx = self.b.add_body(BodySpec { name, parent, pos, quat, inertial });
        self.src.body.push(node);
        self.src.inertial.push(inertials.first().copied());
        self.body_pose.push((pos, quat));
        debug_assert_eq!(idx + 1, self.src.body.len());
        self.body_children(node, idx, class)
    }

    fn inertial(&self, node: Node<'a, 'a>) -> Result<Inertial, ModelError> {
        check_attrs(self.ctx, node, &xml::INERTIAL, false)?;
        let el = Elem::plain(self.ctx, node);
        let Some(pos) = el.arr::<3>("pos")? else { return Err(el.err("missing required attribute 'pos'")) };
        let Some(mass) = el.real("mass")? else { return Err(el.err("missing required attribute 'mass'")) };
        let quat = frames::orientation(&el, &self.compiler)?;
        match (el.arr::<3>("diaginertia")?, el.arr::<6>("fullinertia")?) {
            (Some(_), Some(_)) => {
                Err(el
                    .err_attr(&el.attr("fullinertia").unwrap(), "give either 'diaginertia' or 'fullinertia', not both"))
            }
            (_, Some(full)) => {
                let a = el.attr("fullinertia").unwrap();
                if quat.is_some() {
                    return Err(el.err_attr(&a, "'fullinertia' cannot be combined with an orientation"));
                }
                Inertial::from_full(mass, pos, full).map_err(|m| el.err_attr(&a, m))
            }
            // No inertia given: a point mass (MuJoCo allows it on bodies that do not rotate).
            (diag, None) => Ok(Inertial { mass, pos, quat: quat.unwrap_or(IDENTITY), diag: diag.unwrap_or([0.0; 3]) }),
        }
    }

    fn joint(&mut self, node: Node<'a, 'a>, body: usize, inherited: usize, frame: Frame) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::JOINT, false)?;
        let class = self.class_of(node, inherited)?;
        let el = self.elem(node, class, DKind::Joint);
        let kind = match el.attr("type") {
            None => JointKind::Hinge,
            Some(a) => match a.value.trim() {
                "free" => JointKind::Free,
                "ball" => JointKind::Ball,
                "hinge" => JointKind::Hinge,
                "slide" => JointKind::Slide,
                v => {
                    return Err(
                        el.err_attr(&a, format!("unknown joint type \"{v}\" (expected free, ball, hinge or slide)"))
                    );
                }
            },
        };
        let name = el.str("name").unwrap_or("").to_string();
        let angle = |x: f64| if kind == JointKind::Hinge && self.compiler.degree { x.to_radians() } else { x };
        let mut range = self.limits(&el, "limited", "range")?;
        if range.is_some() && matches!(kind, JointKind::Free | JointKind::Ball) {
            let a = el.attr("range").unwrap();
            return Err(el.err_attr(&a, format!("limits on {} joints are not supported", kind.name())));
        }
        range = range.map(|r| r.map(angle));
        let frictionloss = el.nonneg("frictionloss")?.unwrap_or(0.0);
        if frictionloss > 0.0 && matches!(kind, JointKind::Free | JointKind::Ball) {
            return Err(el.err_attr(
                &el.attr("frictionloss").unwrap(),
                format!(
                    "frictionloss on {} joints is not supported (cenic supports it on hinge and slide joints)",
                    kind.name()
                ),
            ));
        }
        // MuJoCo: stiffness and damping from a time constant and damping ratio,
        // on the dof's effective mass at qpos0 (set once the model is built).
        let springdamper = match el.arr::<2>("springdamper")? {
            Some(v) if v != [0.0, 0.0] => {
                if !(v[0] > 0.0 && v[1] > 0.0 && v[0].is_finite() && v[1].is_finite()) {
                    return Err(el.err_attr(
                        &el.attr("springdamper").unwrap(),
                        format!(
                            "springdamper values (time constant s, damping ratio) must be positive and finite, got \
                             {} {}",
                            v[0], v[1]
                        ),
                    ));
                }
                if matches!(kind, JointKind::Free | JointKind::Ball) {
                    self.b.warn(format!(
                        "joint '{name}': the spring of springdamper on a {} joint is not simulated (its damping is)",
                        kind.name()
                    ));
                }
                Some(v)
            }
            _ => None,
        };
        if self.limits(&el, "actuatorfrclimited", "actuatorfrcrange")?.is_some() {
            return Err(el.err_attr(
                &el.attr("actuatorfrcrange").unwrap(),
                "actuator force limits at joints are not supported (use the actuator's forcerange)",
            ));
        }
        if el.bool("actuatorgravcomp")? == Some(true) {
            return Err(el.err_attr(&el.attr("actuatorgravcomp").unwrap(), "actuatorgravcomp is not supported"));
        }
        let stiffness = el.real("stiffness")?.unwrap_or(0.0);
        if stiffness != 0.0 && matches!(kind, JointKind::Free | JointKind::Ball) {
            self.b.warn(format!("joint '{name}': stiffness on a {} joint is not simulated", kind.name()));
        }
        let reference = el.real("ref")?.map(angle).unwrap_or(0.0);
        let limit_softness = Softness {
            solref: el.arr::<2>("solreflimit")?.unwrap_or(SOLREF_DEFAULT),
            solimp: el.solimp("solimplimit")?.unwrap_or(SOLIMP_DEFAULT),
        };
        if range.is_some()
            && let Err(m) = limit_softness.check()
        {
            let a = el.attr("solreflimit").or_else(|| el.attr("solimplimit")).unwrap();
            return Err(el.err_attr(&a, m));
        }
        let friction_softness = Softness {
            solref: el.arr::<2>("solreffriction")?.unwrap_or(SOLREF_DEFAULT),
            solimp: el.solimp("solimpfriction")?.unwrap_or(SOLIMP_DEFAULT),
        };
        if frictionloss > 0.0
            && let Err(m) = friction_softness.check()
        {
            let a = el.attr("solreffriction").or_else(|| el.attr("solimpfriction")).unwrap();
            return Err(el.err_attr(&a, m));
        }
        let spec = JointSpec {
            name,
            kind,
            body,
            pos: frame.point(el.arr::<3>("pos")?.unwrap_or([0.0; 3])),
            axis: frame.vector(el.arr::<3>("axis")?.unwrap_or([0.0, 0.0, 1.0])),
            range,
            limit_softness,
            limit_margin: el.nonneg("margin")?.unwrap_or(0.0), // MuJoCo does not convert it from degrees
            armature: el.real("armature")?.unwrap_or(0.0),
            damping: el.real("damping")?.unwrap_or(0.0),
            frictionloss,
            friction_softness,
            stiffness,
            springref: el.real("springref")?.map(angle).unwrap_or(0.0),
            reference,
        };
        if let Some(v) = springdamper {
            self.springdampers.push((self.src.joint.len(), v));
        }
        self.push_joint(node, body, spec);
        Ok(())
    }

    fn freejoint(&mut self, node: Node<'a, 'a>, body: usize) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::FREEJOINT, false)?;
        let el = Elem::plain(self.ctx, node);
        if let Some(a) = el.attr("align").filter(|a| a.value.trim() == "true") {
            return Err(el.err_attr(&a, "align=\"true\" is not supported"));
        }
        let spec = JointSpec::new(el.str("name").unwrap_or(""), JointKind::Free, body);
        self.push_joint(node, body, spec);
        Ok(())
    }

    /// Adds the joint and extends the reference configuration as the builder will.
    fn push_joint(&mut self, node: Node<'a, 'a>, body: usize, spec: JointSpec) {
        match spec.kind {
            JointKind::Free => {
                let (p, q) = self.body_pose[body];
                self.qpos0.extend_from_slice(&p);
                self.qpos0.extend_from_slice(&frames::normalize_quat(q).unwrap_or(IDENTITY));
            }
            JointKind::Ball => self.qpos0.extend_from_slice(&IDENTITY),
            JointKind::Hinge | JointKind::Slide => self.qpos0.push(spec.reference),
        }
        self.nv += spec.kind.nv();
        self.joint_ranges.push(spec.range);
        self.src.joint.push(node);
        self.b.add_joint(spec);
    }

    fn geom(&mut self, node: Node<'a, 'a>, body: usize, inherited: usize, frame: Frame) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::GEOM, false)?;
        let class = self.class_of(node, inherited)?;
        let el = self.elem(node, class, DKind::Geom);
        let kind = match el.attr("type") {
            None => GeomKind::Sphere,
            Some(a) => match a.value.trim() {
                "plane" => GeomKind::Plane,
                "sphere" => GeomKind::Sphere,
                "capsule" => GeomKind::Capsule,
                "box" => GeomKind::Box,
                "cylinder" => GeomKind::Cylinder,
                "ellipsoid" => GeomKind::Ellipsoid,
                "mesh" => GeomKind::Mesh,
                "hfield" => GeomKind::Hfield,
                v @ "sdf" => {
                    return Err(el.err_attr(&a, format!("geom type \"{v}\" is not supported: {}", super::GEOM_TYPES)));
                }
                v => {
                    return Err(el.err_attr(
                        &a,
                        format!(
                            "unknown geom type \"{v}\" (expected plane, hfield, sphere, capsule, box, cylinder, \
                             ellipsoid or mesh)"
                        ),
                    ));
                }
            },
        };
        if el.keyword("fluidshape", &["none", "ellipsoid"])? == Some("ellipsoid") && self.b.options.has_fluid() {
            return Err(el.err_attr(
                &el.attr("fluidshape").unwrap(),
                "MuJoCo's ellipsoid fluid model is not supported: cenic applies the inertia-box fluid model \
                 (fluidshape=\"none\") to every body",
            ));
        }
        let hfield = match (kind, el.attr("hfield")) {
            (GeomKind::Hfield, Some(a)) => Some(self.b.hfield_by_name(a.value).ok_or_else(|| {
                el.err_attr(&a, format!("unknown height field \"{}\" (declare it with <asset><hfield>)", a.value))
            })?),
            (GeomKind::Hfield, None) => return Err(el.err("a height-field geom needs an 'hfield' attribute")),
            (_, Some(a)) => {
                return Err(el.err_attr(&a, format!("'hfield' needs type=\"hfield\" (this geom is a {})", kind.name())));
            }
            (_, None) => None,
        };
        for (attr, what) in [("shellinertia", "shell inertia")] {
            if let Some(a) = el.attr(attr).filter(|a| a.value.trim() != "false") {
                return Err(el.err_attr(&a, format!("{what} are not supported")));
            }
        }
        let (size, pos, quat) = self.shape_pose(&el, kind, true)?;
        let (pos, quat) = frame.apply(pos, quat);
        let mesh = match (kind, el.attr("mesh")) {
            (GeomKind::Mesh, Some(a)) => Some(
                self.b.mesh_by_name(a.value).ok_or_else(|| el.err_attr(&a, format!("unknown mesh \"{}\"", a.value)))?,
            ),
            (GeomKind::Mesh, None) => return Err(el.err("a mesh geom needs a 'mesh' attribute")),
            (_, Some(a)) => {
                return Err(el.err_attr(
                    &a,
                    "fitting a primitive to a mesh is not supported: use type=\"mesh\" to collide with the mesh",
                ));
            }
            (_, None) => None,
        };
        let mass = el.nonneg("mass")?;
        let density = el.nonneg("density")?.unwrap_or(1000.0);
        let contact = self.contact_settings(&el, FRICTION_DEFAULT[0], 3)?;
        let mu = contact.mu;
        let mask = |attr: &str| -> Result<u32, ModelError> {
            match el.int(attr)? {
                None => Ok(1),
                Some(v) => u32::try_from(v).map_err(|_| {
                    el.err_attr(&el.attr(attr).unwrap(), format!("{attr} must be a non-negative bit mask"))
                }),
            }
        };
        let (contype, conaffinity) = (mask("contype")?, mask("conaffinity")?);
        let name = el.str("name").unwrap_or("").to_string();
        let (stiffness, dissipation, mu_dynamic) = (contact.stiffness, contact.dissipation, contact.mu_dynamic);
        // Placeholder stiffness and dissipation: the mapping needs the built
        // model's masses (see `contact::assign_materials`). Friction values
        // and explicit extension values are validated by the builder here.
        let material = Material {
            stiffness: stiffness.unwrap_or(1.0),
            dissipation: dissipation.unwrap_or(0.0),
            mu_static: mu,
            mu_dynamic: mu_dynamic.unwrap_or(mu),
            soft: None,
        };
        let margin = contact.margin;
        let visual = self.geom_visual(&el)?;
        self.contacts.push(contact);
        self.src.geom.push(node);
        self.b.add_geom(GeomSpec {
            name,
            kind,
            size,
            mesh,
            hfield,
            body,
            pos,
            quat,
            material,
            contype,
            conaffinity,
            margin,
            mass,
            density,
            visual,
        });
        Ok(())
    }

    /// A `camera` (fixed, `track` or `trackcom`; perspective).
    fn camera(&mut self, node: Node<'a, 'a>, body: usize, frame: Frame) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::CAMERA, false)?;
        let el = Elem::plain(self.ctx, node);
        for name in ["focal", "focalpixel", "principal", "principalpixel", "sensorsize"] {
            if let Some(a) = el.attr(name) {
                return Err(
                    el.err_attr(&a, "camera intrinsics are not supported: cenic's cameras take 'fovy' (degrees)")
                );
            }
        }
        if el.bool("orthographic")? == Some(true) {
            let a = el.attr("orthographic").unwrap();
            return Err(el.err_attr(&a, "orthographic cameras are not supported (cenic renders perspective views)"));
        }
        let mode = match el.keyword("mode", &["fixed", "track", "trackcom", "targetbody", "targetbodycom"])? {
            None | Some("fixed") => CameraMode::Fixed,
            Some("track") => CameraMode::Track,
            Some("trackcom") => CameraMode::TrackCom,
            Some(m) => {
                let a = el.attr("mode").unwrap();
                return Err(el.err_attr(&a, format!("camera mode \"{m}\" is not supported (fixed, track, trackcom)")));
            }
        };
        let pos = el.arr::<3>("pos")?.unwrap_or([0.0; 3]);
        let quat = frames::orientation(&el, &self.compiler)?.unwrap_or(IDENTITY);
        let (pos, quat) = frame.apply(pos, quat);
        let fovy = el.real("fovy")?.unwrap_or(45.0);
        if !(fovy > 0.0 && fovy < 180.0) {
            return Err(el.err_attr(&el.attr("fovy").unwrap(), format!("fovy must be in (0, 180) degrees, got {fovy}")));
        }
        self.src.camera.push(node);
        let name = el.str("name").unwrap_or("").to_string();
        self.b.visual.cameras.push(ModelCamera { name, body, mode, pos, quat, fovy });
        Ok(())
    }

    fn site(&mut self, node: Node<'a, 'a>, body: usize, inherited: usize, frame: Frame) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::SITE, false)?;
        let class = self.class_of(node, inherited)?;
        let el = self.elem(node, class, DKind::Site);
        let kind = match el.keyword("type", &["sphere", "capsule", "ellipsoid", "cylinder", "box"])? {
            None | Some("sphere") => GeomKind::Sphere,
            Some("capsule") => GeomKind::Capsule,
            Some("ellipsoid") => GeomKind::Ellipsoid,
            Some("cylinder") => GeomKind::Cylinder,
            Some(_) => GeomKind::Box,
        };
        let (mut size, pos, quat) = self.shape_pose(&el, kind, false)?;
        if el.attr("size").is_none() && el.attr("fromto").is_none() {
            size = [0.005; 3]; // MuJoCo's default site size
        }
        let (pos, quat) = frame.apply(pos, quat);
        self.src.site.push(node);
        self.b.add_site(Site { name: el.str("name").unwrap_or("").to_string(), body, pos, quat, kind, size });
        Ok(())
    }

    /// The contact settings of a geom or an explicit pair: `friction[0]`
    /// (`default_mu` when absent; at most `nfriction` values), `condim`, `solref`, `solimp` and the
    /// extensions `stiffness`, `dissipation`, `friction_dynamic`.
    pub(super) fn contact_settings(
        &self,
        el: &Elem<'c, 'a>,
        default_mu: f64,
        nfriction: usize,
    ) -> Result<GeomContact, ModelError> {
        let mu = el.reals("friction", 1, nfriction)?.map(|f| f[0]).unwrap_or(default_mu);
        if !(mu >= 0.0 && mu.is_finite()) {
            return Err(
                el.err_attr(&el.attr("friction").unwrap(), format!("friction must be finite and ≥ 0, got {mu}"))
            );
        }
        let condim = el.int("condim")?.unwrap_or(3);
        if ![1, 3, 4, 6].contains(&condim) {
            return Err(el.err_attr(&el.attr("condim").unwrap(), format!("condim must be 1, 3, 4 or 6, got {condim}")));
        }
        // MuJoCo's 5-vector: geoms give (sliding, torsional, rolling), pairs all five.
        let given = el.reals("friction", 1, nfriction)?;
        let mut friction = if nfriction == 5 {
            PAIR_FRICTION_DEFAULT
        } else {
            let [s, t, r] = FRICTION_DEFAULT;
            [s, s, t, r, r]
        };
        if let Some(f) = given {
            if nfriction == 5 {
                friction[..f.len()].copy_from_slice(&f);
            } else {
                let g = |i: usize| f.get(i).copied();
                friction =
                    [f[0], f[0], g(1).unwrap_or(friction[2]), g(2).unwrap_or(friction[3]), g(2).unwrap_or(friction[4])];
            }
            if let Some(x) = friction.iter().find(|x| !(**x >= 0.0 && x.is_finite())) {
                return Err(
                    el.err_attr(&el.attr("friction").unwrap(), format!("friction must be finite and ≥ 0, got {x}"))
                );
            }
        }
        let solmix = el.nonneg("solmix")?.unwrap_or(1.0);
        let priority = match el.int("priority")? {
            None => 0,
            Some(p) => i32::try_from(p)
                .map_err(|_| el.err_attr(&el.attr("priority").unwrap(), format!("priority {p} is out of range")))?,
        };
        Ok(GeomContact {
            mu,
            mu_dynamic: el.real("friction_dynamic")?,
            condim,
            solref: el.arr::<2>("solref")?.unwrap_or(SOLREF_DEFAULT),
            solimp: el.solimp("solimp")?.unwrap_or(SOLIMP_DEFAULT),
            stiffness: el.real("stiffness")?,
            dissipation: el.real("dissipation")?,
            friction,
            solmix,
            priority,
            margin: el.nonneg("margin")?.unwrap_or(0.0),
            gap: el.nonneg("gap")?.unwrap_or(0.0),
        })
    }

    /// A geom's `rgba`, `material` (by name) and `group`.
    fn geom_visual(&self, el: &Elem<'c, 'a>) -> Result<GeomVisual, ModelError> {
        let rgba = match el.arr::<4>("rgba")? {
            None => None,
            Some(c) if c.iter().all(|x| (0.0..=1.0).contains(x)) => Some(c.map(|x| x as f32)),
            Some(c) => {
                return Err(
                    el.err_attr(&el.attr("rgba").unwrap(), format!("rgba components must be in [0, 1], got {c:?}"))
                );
            }
        };
        let material = match el.attr("material") {
            None => None,
            Some(a) => match self.b.visual.materials.iter().position(|m| m.name == a.value) {
                Some(i) => Some(i),
                None => return Err(el.err_attr(&a, format!("unknown material \"{}\"", a.value))),
            },
        };
        let group = el.int("group")?.unwrap_or(0);
        let group = i32::try_from(group)
            .map_err(|_| el.err_attr(&el.attr("group").unwrap(), format!("group {group} out of range")))?;
        Ok(GeomVisual { rgba, material, group })
    }

    /// Size, position and orientation of a geom or site, from `size`, `pos`,
    /// the orientation alternatives or `fromto`. With `check_size`, the sizes
    /// the shape needs must be present and positive.
    fn shape_pose(&mut self, el: &Elem<'c, 'a>, kind: GeomKind, check_size: bool) -> Result<ShapePose, ModelError> {
        let given = el.reals("size", 0, 3)?.unwrap_or_default();
        let mut size = [0.0; 3];
        size[..given.len()].copy_from_slice(&given);
        let mut pos = el.arr::<3>("pos")?.unwrap_or([0.0; 3]);
        let mut quat = frames::orientation(el, &self.compiler)?.unwrap_or(IDENTITY);
        let fromto = el.arr::<6>("fromto")?;
        if let (Some(ft), Some(a)) = (fromto, el.attr("fromto")) {
            if !matches!(kind, GeomKind::Capsule | GeomKind::Cylinder | GeomKind::Box | GeomKind::Ellipsoid) {
                return Err(
                    el.err_attr(&a, format!("fromto needs a capsule, cylinder, box or ellipsoid, not {}", kind.name()))
                );
            }
            if el.has_own("pos") && el.has_own("fromto") {
                return Err(el.err_attr(&el.attr("pos").unwrap(), "both 'pos' and 'fromto' are given"));
            }
            if xml::ORIENTATION_ATTRS.iter().any(|o| el.has_own(o)) && el.has_own("fromto") {
                let o = xml::ORIENTATION_ATTRS.iter().find(|o| el.has_own(o)).unwrap();
                self.b.warn(format!(
                    "{}: '{o}' ignored because 'fromto' defines the orientation (as in MuJoCo)",
                    xml::element_label(el.node)
                ));
            }
            let (p, q, half) = frames::fromto(ft).map_err(|m| el.err_attr(&a, m))?;
            (pos, quat) = (p, q);
            match kind {
                GeomKind::Capsule | GeomKind::Cylinder => size[1] = half,
                _ => (size[1], size[2]) = (size[0], half),
            }
        }
        if check_size {
            let needed = match kind {
                GeomKind::Plane | GeomKind::Mesh | GeomKind::Hfield => 0,
                GeomKind::Sphere => 1,
                _ if fromto.is_some() => 1,
                GeomKind::Capsule | GeomKind::Cylinder => 2,
                GeomKind::Box | GeomKind::Ellipsoid => 3,
            };
            let what = match kind {
                GeomKind::Sphere => "radius",
                GeomKind::Capsule | GeomKind::Cylinder => "radius and half-length",
                _ => "three half-sizes",
            };
            if given.len() < needed {
                let msg = format!("a {} geom needs {needed} size value(s) ({what}), got {}", kind.name(), given.len());
                return Err(match el.attr("size") {
                    Some(a) => el.err_attr(&a, msg),
                    None => el.err(msg),
                });
            }
            if let Some(i) = (0..needed).find(|&i| !(size[i] > 0.0 && size[i].is_finite())) {
                return Err(
                    el.err_attr(&el.attr("size").unwrap(), format!("size[{i}] must be positive, got {}", size[i]))
                );
            }
        }
        Ok((size, pos, quat))
    }
}

/// MuJoCo's test of moving bodies (`CheckBodyMassInertia`, MuJoCo 4.0): a
/// body with joints must have mass and all three principal moments of
/// inertia of at least 1e-15 (MuJoCo's `mjMINVAL`), its own or those of a
/// descendant welded to it (reached through bodies without joints). Bodies
/// without joints may be massless. Returns the first joint of the first
/// body that fails, with the message.
pub(super) fn massless_moving_body(model: &crate::model::Model) -> Option<(usize, String)> {
    const MIN: f64 = 1e-15;
    let bodies = &model.bodies;
    let valid = |b: usize| bodies[b].mass >= MIN && bodies[b].inertia.iter().all(|&i| i >= MIN);
    // Parents precede children, so one backward pass finds, for every body,
    // whether it or a jointless descendant chain carries mass and inertia.
    let mut carries = vec![false; bodies.len()];
    for b in (1..bodies.len()).rev() {
        carries[b] |= valid(b);
        let p = bodies[b].parent;
        if p != b && bodies[b].jnt_num == 0 && carries[b] {
            carries[p] = true;
        }
    }
    let b = (1..bodies.len()).find(|&b| bodies[b].jnt_num > 0 && !carries[b])?;
    let body = &bodies[b];
    let j = body.jnt_adr;
    let joint = &model.joints[j];
    Some((
        j,
        format!(
            "body '{}' moves (joint '{}', dof {}) but has no mass or inertia: MuJoCo requires a moving body, or a \
             body welded to it, to have mass and all three principal moments of inertia ≥ 1e-15; give the body \
             <inertial> mass and diaginertia (massless bodies are allowed only without joints)",
            body.name, joint.name, joint.dof_adr
        ),
    ))
}

/// MuJoCo's `springdamper` (`mjCModel::AutoSpringDamper`): with the joint's
/// mean effective inverse mass w̄ at qpos0 (the mean `dof_invweight0` of its
/// dofs, so I = 1/w̄), time constant τ and damping ratio ζ, stiffness
/// I/(τ²ζ²) and damping 2I/τ (N·m/rad and N·m·s/rad, or N/m and N·s/m), as
/// MuJoCo's solref maps to a spring. Overrides `stiffness` and `damping`.
pub(super) fn apply_springdamper(model: &mut crate::model::Model, joint: usize, [tc, ratio]: [f64; 2]) {
    const MINVAL: f64 = 1e-15;
    let j = &model.joints[joint];
    let (adr, n) = (j.dof_adr, j.kind.nv());
    let w: f64 = model.dofs[adr..adr + n].iter().map(|d| d.invweight0).sum();
    let inertia = n as f64 / w.max(MINVAL);
    let stiffness = inertia / (tc * tc * ratio * ratio).max(MINVAL);
    let damping = 2.0 * inertia / tc.max(MINVAL);
    let j = &mut model.joints[joint];
    j.stiffness = stiffness;
    j.damping = damping;
    for d in &mut model.dofs[adr..adr + n] {
        d.damping = damping;
    }
}
