//! The kinematic tree: `worldbody`, `body`, `inertial`, `joint`,
//! `freejoint`, `geom`, `site`.
//!
//! Bodies are added depth first and each body's joints, geoms and sites
//! before its child bodies, which reproduces MuJoCo's body, joint, dof and
//! geom order.

use super::Loader;
use super::contact::{FRICTION_DEFAULT, GeomContact, SOLIMP_DEFAULT, SOLREF_DEFAULT};
use super::defaults::DKind;
use super::frames;
use super::xml::{self, Elem, check_attrs, elements, own_attr, tag};
use crate::model::soft::Softness;
use crate::model::{BodySpec, GeomKind, GeomSpec, Inertial, JointKind, JointSpec, Material, ModelError, Site, WORLD};
use roxmltree::Node;

const IDENTITY: [f64; 4] = [1.0, 0.0, 0.0, 0.0];

/// Size (m), position (m) and orientation of a shape in its body frame.
type ShapePose = ([f64; 3], [f64; 3], [f64; 4]);

impl<'c, 'a> Loader<'c, 'a> {
    pub(super) fn worldbody(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        if let Some(a) = node.attributes().next() {
            let at = own_attr(node, a.name()).unwrap();
            return Err(self.ctx.err_attr(&at, "the world body cannot have attributes"));
        }
        self.body_children(node, WORLD, 0)
    }

    /// Joints, geoms and sites of `body` first, then its child bodies.
    fn body_children(&mut self, node: Node<'a, 'a>, body: usize, class: usize) -> Result<(), ModelError> {
        let mut kids = vec![];
        for c in elements(node) {
            match tag(c) {
                "body" => kids.push(c),
                "geom" => self.geom(c, body, class)?,
                "site" => self.site(c, body, class)?,
                "joint" | "freejoint" if body == WORLD => {
                    return Err(self.ctx.err_node(c, "the world body cannot have joints"));
                }
                "joint" => self.joint(c, body, class)?,
                "freejoint" => self.freejoint(c, body)?,
                "inertial" if body != WORLD => {} // read with its body
                "camera" | "light" => {}
                "frame" => {
                    return Err(self.ctx.err_node(
                        c,
                        "<frame> is not supported: move its pose into the pos/quat of its children (cenic reads \
                         bodies, joints, geoms and sites directly under <body>)",
                    ));
                }
                t @ ("replicate" | "composite" | "flexcomp" | "attach") => {
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
        for k in kids {
            self.body(k, body, class)?;
        }
        Ok(())
    }

    fn body(&mut self, node: Node<'a, 'a>, parent: usize, inherited: usize) -> Result<(), ModelError> {
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

    fn joint(&mut self, node: Node<'a, 'a>, body: usize, inherited: usize) -> Result<(), ModelError> {
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
        if el.arr::<2>("springdamper")?.is_some_and(|v| v != [0.0, 0.0]) {
            return Err(el.err_attr(&el.attr("springdamper").unwrap(), "springdamper is not supported"));
        }
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
        let spec = JointSpec {
            name,
            kind,
            body,
            pos: el.arr::<3>("pos")?.unwrap_or([0.0; 3]),
            axis: el.arr::<3>("axis")?.unwrap_or([0.0, 0.0, 1.0]),
            range,
            limit_softness,
            limit_margin: el.nonneg("margin")?.unwrap_or(0.0), // MuJoCo does not convert it from degrees
            armature: el.real("armature")?.unwrap_or(0.0),
            damping: el.real("damping")?.unwrap_or(0.0),
            frictionloss,
            stiffness,
            springref: el.real("springref")?.map(angle).unwrap_or(0.0),
            reference,
        };
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

    fn geom(&mut self, node: Node<'a, 'a>, body: usize, inherited: usize) -> Result<(), ModelError> {
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
                v @ ("hfield" | "sdf") => {
                    return Err(el.err_attr(&a, format!("geom type \"{v}\" is not supported: {}", super::GEOM_TYPES)));
                }
                v => {
                    return Err(el.err_attr(
                        &a,
                        format!(
                            "unknown geom type \"{v}\" (expected plane, sphere, capsule, box, cylinder, ellipsoid or mesh)"
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
        if let Some(a) = el.attr("hfield") {
            return Err(el.err_attr(&a, format!("height fields are not supported: {}", super::GEOM_TYPES)));
        }
        for (attr, what) in [("shellinertia", "shell inertia")] {
            if let Some(a) = el.attr(attr).filter(|a| a.value.trim() != "false") {
                return Err(el.err_attr(&a, format!("{what} are not supported")));
            }
        }
        let (size, pos, quat) = self.shape_pose(&el, kind, true)?;
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
        if el.int("priority")?.unwrap_or(0) != 0 {
            self.b.warn(format!(
                "geom '{name}': priority ignored (cenic combines the materials of a pair symmetrically)"
            ));
        }
        if el.real("gap")?.unwrap_or(0.0) != 0.0 {
            self.b.warn(format!("geom '{name}': gap ignored (contacts are reported within the margin)"));
        }
        let (stiffness, dissipation, mu_dynamic) = (contact.stiffness, contact.dissipation, contact.mu_dynamic);
        // Placeholder stiffness and dissipation: the mapping needs the built
        // model's masses (see `contact::assign_materials`). Friction values
        // and explicit extension values are validated by the builder here.
        let material = Material {
            stiffness: stiffness.unwrap_or(1.0),
            dissipation: dissipation.unwrap_or(0.0),
            mu_static: mu,
            mu_dynamic: mu_dynamic.unwrap_or(mu),
        };
        self.contacts.push(contact);
        self.src.geom.push(node);
        self.b.add_geom(GeomSpec {
            name,
            kind,
            size,
            mesh,
            body,
            pos,
            quat,
            material,
            contype,
            conaffinity,
            margin: el.nonneg("margin")?.unwrap_or(0.0),
            mass,
            density,
        });
        Ok(())
    }

    fn site(&mut self, node: Node<'a, 'a>, body: usize, inherited: usize) -> Result<(), ModelError> {
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
        Ok(GeomContact {
            mu,
            mu_dynamic: el.real("friction_dynamic")?,
            condim,
            solref: el.arr::<2>("solref")?.unwrap_or(SOLREF_DEFAULT),
            solimp: el.solimp("solimp")?.unwrap_or(SOLIMP_DEFAULT),
            stiffness: el.real("stiffness")?,
            dissipation: el.real("dissipation")?,
        })
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
                GeomKind::Plane | GeomKind::Mesh => 0,
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
