//! `<tendon>` (`fixed`, `spatial`) and `<equality>` (`connect`, `weld`,
//! `joint`, `tendon`).

use super::Loader;
use super::contact::{SOLIMP_DEFAULT, SOLREF_DEFAULT};
use super::defaults::DKind;
use super::frames;
use super::xml::{self, Elem, Schema, check_attrs, elements, tag};
use crate::model::soft::Softness;
use crate::model::{EqualityKind, EqualitySpec, ModelError, SpatialElement, TendonPath, TendonSpec, WORLD};
use roxmltree::Node;

impl<'c, 'a> Loader<'c, 'a> {
    pub(super) fn tendon(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &Schema { supported: &[], ignored: &[] }, false)?;
        for child in elements(node) {
            match tag(child) {
                t @ ("fixed" | "spatial") => self.one_tendon(child, t == "spatial")?,
                t => return Err(self.ctx.err_node(child, format!("unknown element <{t}> in <tendon>"))),
            }
        }
        Ok(())
    }

    fn one_tendon(&mut self, node: Node<'a, 'a>, spatial: bool) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::TENDON, false)?;
        let class = self.class_of(node, 0)?;
        let el = self.elem(node, class, DKind::Tendon);
        let name = el.str("name").unwrap_or("").to_string();
        let range = self.limits(&el, "limited", "range")?;
        if el.real("armature")?.unwrap_or(0.0) != 0.0 {
            return Err(el.err_attr(&el.attr("armature").unwrap(), "tendon armature is not supported"));
        }
        if self.limits(&el, "actuatorfrclimited", "actuatorfrcrange")?.is_some() {
            return Err(el.err_attr(
                &el.attr("actuatorfrcrange").unwrap(),
                "actuator force limits at tendons are not supported (use the actuator's forcerange)",
            ));
        }
        let springlength = match el.reals("springlength", 1, 2)? {
            // MuJoCo's default "-1 -1" (and a negative single value): the length at qpos0.
            None => None,
            Some(v) if v.len() == 1 => (v[0] >= 0.0).then_some([v[0]; 2]),
            Some(v) if v[0] == -1.0 && v[1] == -1.0 => None,
            Some(v) => Some([v[0], v[1]]),
        };
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
        let frictionloss = el.nonneg("frictionloss")?.unwrap_or(0.0);
        if frictionloss > 0.0
            && let Err(m) = friction_softness.check()
        {
            let a = el.attr("solreffriction").or_else(|| el.attr("solimpfriction")).unwrap();
            return Err(el.err_attr(&a, m));
        }
        let path = if spatial { self.spatial_path(node)? } else { self.fixed_path(node)? };
        self.src.tendon.push(node);
        self.tendon_ranges.push(range);
        self.b.add_tendon(TendonSpec {
            range,
            limit_softness,
            limit_margin: el.nonneg("margin")?.unwrap_or(0.0),
            stiffness: el.nonneg("stiffness")?.unwrap_or(0.0),
            damping: el.nonneg("damping")?.unwrap_or(0.0),
            frictionloss,
            friction_softness,
            springlength,
            ..TendonSpec::new(&name, path)
        });
        Ok(())
    }

    fn fixed_path(&self, node: Node<'a, 'a>) -> Result<TendonPath, ModelError> {
        let mut joints = vec![];
        for j in elements(node) {
            if tag(j) != "joint" {
                return Err(self
                    .ctx
                    .err_node(j, format!("<{}> in a fixed tendon is not supported (only <joint>)", tag(j))));
            }
            check_attrs(self.ctx, j, &xml::TENDON_JOINT, false)?;
            let je = Elem::plain(self.ctx, j);
            let Some(coef) = je.real("coef")? else { return Err(je.err("missing required attribute 'coef'")) };
            joints.push((self.joint_ref(&je)?, coef));
        }
        if joints.is_empty() {
            return Err(self.ctx.err_node(node, "a fixed tendon needs at least one <joint>"));
        }
        Ok(TendonPath::Fixed(joints))
    }

    fn spatial_path(&self, node: Node<'a, 'a>) -> Result<TendonPath, ModelError> {
        let mut path = vec![];
        for p in elements(node) {
            match tag(p) {
                "site" => {
                    check_attrs(self.ctx, p, &xml::TENDON_SITE, false)?;
                    let pe = Elem::plain(self.ctx, p);
                    path.push(SpatialElement::Site(self.site_ref(&pe, "site")?));
                }
                "pulley" => {
                    check_attrs(self.ctx, p, &xml::PULLEY, false)?;
                    let pe = Elem::plain(self.ctx, p);
                    let Some(divisor) = pe.real("divisor")? else {
                        return Err(pe.err("missing required attribute 'divisor'"));
                    };
                    if !(divisor > 0.0) {
                        return Err(pe.err_attr(
                            &pe.attr("divisor").unwrap(),
                            format!("divisor must be positive, got {divisor}"),
                        ));
                    }
                    path.push(SpatialElement::Pulley { divisor });
                }
                "geom" => {
                    let what = p.attribute("geom").unwrap_or("?");
                    return Err(self.ctx.err_node(
                        p,
                        format!(
                            "tendon wrapping around geom \"{what}\" is not supported: cenic's spatial tendons are \
                             straight segments between sites (add sites along the path instead)"
                        ),
                    ));
                }
                t => return Err(self.ctx.err_node(p, format!("unknown element <{t}> in a spatial tendon"))),
            }
        }
        let sites_in_branch = path.split(|e| matches!(e, SpatialElement::Pulley { .. })).map(<[_]>::len).min();
        if sites_in_branch.unwrap_or(0) < 2 {
            return Err(self.ctx.err_node(node, "each branch of a spatial tendon needs at least two <site> elements"));
        }
        Ok(TendonPath::Spatial(path))
    }

    /// The site named by attribute `attr`.
    pub(super) fn site_ref(&self, el: &Elem<'c, 'a>, attr: &str) -> Result<usize, ModelError> {
        let Some(a) = el.attr(attr) else { return Err(el.err(format!("missing required attribute '{attr}'"))) };
        self.b.site_by_name(a.value).ok_or_else(|| el.err_attr(&a, format!("unknown site \"{}\"", a.value)))
    }

    /// The body named by attribute `attr` (`world` is the world body).
    pub(super) fn body_ref(&self, el: &Elem<'c, 'a>, attr: &str) -> Result<usize, ModelError> {
        let Some(a) = el.attr(attr) else { return Err(el.err(format!("missing required attribute '{attr}'"))) };
        if a.value == "world" {
            return Ok(WORLD);
        }
        self.b.body_by_name(a.value).ok_or_else(|| el.err_attr(&a, format!("unknown body \"{}\"", a.value)))
    }

    pub(super) fn equality(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &Schema { supported: &[], ignored: &[] }, false)?;
        for child in elements(node) {
            let t = tag(child);
            let schema = match t {
                "connect" => &xml::CONNECT,
                "weld" => &xml::WELD,
                "joint" => &xml::EQ_JOINT,
                "tendon" => &xml::EQ_TENDON,
                "flex" | "flexvert" | "flexstrain" | "distance" => {
                    return Err(self.ctx.err_node(
                        child,
                        format!("<{t}> equality constraints are not supported (cenic supports connect, weld, joint and tendon)"),
                    ));
                }
                _ => return Err(self.ctx.err_node(child, format!("unknown element <{t}> in <equality>"))),
            };
            check_attrs(self.ctx, child, schema, false)?;
            let class = self.class_of(child, 0)?;
            let el = self.elem(child, class, DKind::Equality);
            let softness = Softness {
                solref: el.arr::<2>("solref")?.unwrap_or(SOLREF_DEFAULT),
                solimp: el.solimp("solimp")?.unwrap_or(SOLIMP_DEFAULT),
            };
            if let Err(m) = softness.check() {
                let a = el.attr("solref").or_else(|| el.attr("solimp")).unwrap();
                return Err(el.err_attr(&a, m));
            }
            let (kind, fit_at_qpos0) = match t {
                "connect" | "weld" => self.connect_or_weld(&el, t == "weld")?,
                _ => (self.coupling(&el, t == "joint")?, false),
            };
            self.src.equality.push(child);
            self.b.add_equality(EqualitySpec {
                name: el.str("name").unwrap_or("").to_string(),
                kind,
                active: el.bool("active")?.unwrap_or(true),
                softness,
                fit_at_qpos0,
            });
        }
        Ok(())
    }

    /// A connect or weld between bodies (`body1`, `body2` default world,
    /// `anchor`, weld `relpose`) or between sites (`site1`, `site2`).
    fn connect_or_weld(&self, el: &Elem<'c, 'a>, weld: bool) -> Result<(EqualityKind, bool), ModelError> {
        const IDENTITY: [f64; 4] = [1.0, 0.0, 0.0, 0.0];
        let sites = el.attr("site1").is_some() || el.attr("site2").is_some();
        if sites {
            for a in ["body1", "body2", "anchor", "relpose"] {
                if let Some(at) = el.attr(a) {
                    return Err(el.err_attr(&at, "give either bodies or sites ('site1', 'site2'), not both"));
                }
            }
            let s = [self.site_ref(el, "site1")?, self.site_ref(el, "site2")?];
            let site = |k: usize| self.b.site(s[k]).unwrap();
            let body = [site(0).body, site(1).body];
            let anchor = [site(0).pos, site(1).pos];
            let kind = if weld {
                let quat = [site(0).quat, site(1).quat];
                EqualityKind::Weld { body, anchor, quat, torquescale: el.real("torquescale")?.unwrap_or(1.0) }
            } else {
                EqualityKind::Connect { body, anchor }
            };
            return Ok((kind, false));
        }
        let b1 = self.body_ref(el, "body1")?;
        let b2 = if el.attr("body2").is_some() { self.body_ref(el, "body2")? } else { WORLD };
        let body = [b1, b2];
        if !weld {
            let Some(anchor) = el.arr::<3>("anchor")? else {
                return Err(el.err("missing required attribute 'anchor'"));
            };
            return Ok((EqualityKind::Connect { body, anchor: [anchor, [0.0; 3]] }, true));
        }
        let anchor = el.arr::<3>("anchor")?.unwrap_or([0.0; 3]);
        let relpose = el.reals("relpose", 7, 7)?;
        let torquescale = el.real("torquescale")?.unwrap_or(1.0);
        // MuJoCo: a relpose whose quaternion is zero (the default "0 1 0 0 0 0 0")
        // means "the relative pose at qpos0".
        let (kind, fit) = match relpose.filter(|r| r[3..].iter().any(|x| *x != 0.0)) {
            Some(r) => {
                let q = frames::normalize_quat([r[3], r[4], r[5], r[6]])
                    .map_err(|m| el.err_attr(&el.attr("relpose").unwrap(), m))?;
                let kind =
                    EqualityKind::Weld { body, anchor: [[r[0], r[1], r[2]], anchor], quat: [q, IDENTITY], torquescale };
                (kind, false)
            }
            None => (EqualityKind::Weld { body, anchor: [[0.0; 3], anchor], quat: [IDENTITY; 2], torquescale }, true),
        };
        Ok((kind, fit))
    }

    /// A joint or tendon coupling (`joint1`/`joint2` or `tendon1`/`tendon2`, `polycoef`).
    fn coupling(&self, el: &Elem<'c, 'a>, joint: bool) -> Result<EqualityKind, ModelError> {
        let (a1, a2) = if joint { ("joint1", "joint2") } else { ("tendon1", "tendon2") };
        let lookup = |attr: &str| -> Result<Option<usize>, ModelError> {
            let Some(a) = el.attr(attr) else { return Ok(None) };
            let found = if joint { self.b.joint_by_name(a.value) } else { self.b.tendon_by_name(a.value) };
            let what = if joint { "joint" } else { "tendon" };
            found.map(Some).ok_or_else(|| el.err_attr(&a, format!("unknown {what} \"{}\"", a.value)))
        };
        let first = lookup(a1)?;
        if first.is_none() {
            return Err(el.err(format!("missing required attribute '{a1}'")));
        }
        let objects = [first, lookup(a2)?];
        let mut polycoef = [0.0, 1.0, 0.0, 0.0, 0.0];
        if let Some(p) = el.reals("polycoef", 1, 5)? {
            polycoef = [0.0; 5];
            polycoef[..p.len()].copy_from_slice(&p);
        }
        Ok(if joint {
            EqualityKind::Joint { joint: objects, polycoef }
        } else {
            EqualityKind::Tendon { tendon: objects, polycoef }
        })
    }
}

impl<'c, 'a> Loader<'c, 'a> {
    /// `<contact>`: `<exclude>` body pairs and explicit `<pair>`s.
    pub(super) fn contact(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &Schema { supported: &[], ignored: &[] }, false)?;
        for child in elements(node) {
            match tag(child) {
                "exclude" => {
                    check_attrs(self.ctx, child, &xml::EXCLUDE, false)?;
                    let el = Elem::plain(self.ctx, child);
                    let (a, b) = (self.body_ref(&el, "body1")?, self.body_ref(&el, "body2")?);
                    self.b.add_exclude(a, b);
                }
                "pair" => self.pair(child)?,
                t => return Err(self.ctx.err_node(child, format!("unknown element <{t}> in <contact>"))),
            }
        }
        Ok(())
    }

    fn pair(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::PAIR, false)?;
        let class = self.class_of(node, 0)?;
        let el = self.elem(node, class, DKind::Pair);
        let geom = |attr: &str| -> Result<usize, ModelError> {
            let Some(a) = el.attr(attr) else { return Err(el.err(format!("missing required attribute '{attr}'"))) };
            self.b.geom_by_name(a.value).ok_or_else(|| el.err_attr(&a, format!("unknown geom \"{}\"", a.value)))
        };
        let g = [geom("geom1")?, geom("geom2")?];
        let name = el.str("name").unwrap_or("").to_string();
        // MuJoCo's pair defaults are the pair's own, not the geoms'.
        let contact = self.contact_settings(&el, super::contact::PAIR_FRICTION_DEFAULT[0], 5)?;
        if contact.condim > 3 {
            self.b.warn(format!(
                "contact pair '{name}': torsional and rolling friction (condim {}) are not modelled; sliding friction only",
                contact.condim
            ));
        }
        let margin = contact.margin;
        self.pair_contacts.push(contact);
        self.src.pair.push(node);
        self.b.add_pair(crate::model::ContactPair {
            name,
            geom: g,
            material: crate::model::Material::default(), // mapped once masses are known
            margin,
        });
        Ok(())
    }
}
