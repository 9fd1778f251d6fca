//! `<sensor>`: the sensors RL tasks read ([`SensorKind`]). Other MuJoCo
//! sensor types keep their place in the sensor data vector (NaN values)
//! with a warning: sensors do not change the dynamics.

use super::Loader;
use super::xml::{self, Elem, Schema, check_attrs, elements, tag};
use crate::model::{FrameObject, ModelError, Sensor, SensorKind};
use roxmltree::Node;

/// MuJoCo sensor types cenic does not compute, with their dimension.
const UNSUPPORTED: &[(&str, usize)] = &[
    ("force", 3),
    ("torque", 3),
    ("magnetometer", 3),
    ("rangefinder", 1),
    ("camprojection", 2),
    ("jointlimitpos", 1),
    ("jointlimitvel", 1),
    ("jointlimitfrc", 1),
    ("tendonlimitpos", 1),
    ("tendonlimitvel", 1),
    ("tendonlimitfrc", 1),
    ("ballquat", 4),
    ("ballangvel", 3),
    ("jointactuatorfrc", 1),
    ("tendonactuatorfrc", 1),
    ("framelinacc", 3),
    ("frameangacc", 3),
    ("subtreelinvel", 3),
    ("subtreeangmom", 3),
    ("e_potential", 1),
    ("e_kinetic", 1),
    ("clock", 1),
    ("geomdist", 1),
    ("geomnormal", 3),
    ("geomfromto", 6),
    ("insidesite", 1),
];

impl<'c, 'a> Loader<'c, 'a> {
    pub(super) fn sensor(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &Schema { supported: &[], ignored: &[] }, false)?;
        for child in elements(node) {
            let t = tag(child);
            let el = Elem::plain(self.ctx, child);
            let unsupported = |what: &str, dim: usize| SensorKind::Unsupported { what: what.to_string(), dim };
            let kind = if let Some(&(_, dim)) = UNSUPPORTED.iter().find(|(n, _)| *n == t) {
                unsupported(t, dim)
            } else if t == "user" {
                let dim = el.int("dim")?.unwrap_or(0);
                unsupported(
                    t,
                    usize::try_from(dim).map_err(|_| el.err_attr(&el.attr("dim").unwrap(), "dim must be ≥ 0"))?,
                )
            } else if matches!(t, "contact" | "tactile" | "plugin") {
                return Err(self.ctx.err_node(
                    child,
                    format!(
                        "<{t}> sensors are not supported (their size depends on options cenic does not read); \
                         remove it or use touch sensors"
                    ),
                ));
            } else {
                check_attrs(self.ctx, child, &xml::SENSOR, false)?;
                self.sensor_kind(&el, t)?
            };
            if let SensorKind::Unsupported { what, .. } = &kind {
                let name = el.str("name").unwrap_or("");
                self.b.warn(format!("sensor '{name}' ({what}) is not computed by cenic: its values are NaN"));
            }
            let cutoff = el.nonneg("cutoff")?.unwrap_or(0.0);
            self.src.sensor.push(child);
            self.b.add_sensor(Sensor { name: el.str("name").unwrap_or("").to_string(), kind, cutoff, adr: 0 });
        }
        Ok(())
    }

    fn sensor_kind(&self, el: &Elem<'c, 'a>, t: &str) -> Result<SensorKind, ModelError> {
        let named = |attr: &str, find: &dyn Fn(&str) -> Option<usize>, what: &str| -> Result<usize, ModelError> {
            let Some(a) = el.attr(attr) else { return Err(el.err(format!("missing required attribute '{attr}'"))) };
            find(a.value).ok_or_else(|| el.err_attr(&a, format!("unknown {what} \"{}\"", a.value)))
        };
        let joint = || named("joint", &|n| self.b.joint_by_name(n), "joint");
        let tendon = || named("tendon", &|n| self.b.tendon_by_name(n), "tendon");
        let actuator = || named("actuator", &|n| self.b.actuator_by_name(n), "actuator");
        let site = || self.site_ref(el, "site");
        let hinge_or_slide = |j: usize| -> Result<usize, ModelError> {
            match self.b.joint_kind(j) {
                Some(crate::model::JointKind::Hinge | crate::model::JointKind::Slide) => Ok(j),
                Some(k) => Err(el.err_attr(
                    &el.attr("joint").unwrap(),
                    format!(
                        "{t} reads hinge and slide joints, not {} joints (MuJoCo: use ballquat/ballangvel)",
                        k.name()
                    ),
                )),
                None => unreachable!("joint looked up by name"),
            }
        };
        Ok(match t {
            "jointpos" => SensorKind::JointPos(hinge_or_slide(joint()?)?),
            "jointvel" => SensorKind::JointVel(hinge_or_slide(joint()?)?),
            "tendonpos" => SensorKind::TendonPos(tendon()?),
            "tendonvel" => SensorKind::TendonVel(tendon()?),
            "actuatorpos" => SensorKind::ActuatorPos(actuator()?),
            "actuatorvel" => SensorKind::ActuatorVel(actuator()?),
            "actuatorfrc" => SensorKind::ActuatorFrc(actuator()?),
            "subtreecom" => SensorKind::SubtreeCom(self.body_ref(el, "body")?),
            "touch" => SensorKind::Touch(site()?),
            "accelerometer" => SensorKind::Accelerometer(site()?),
            "gyro" => SensorKind::Gyro(site()?),
            "velocimeter" => SensorKind::Velocimeter(site()?),
            "framepos" | "framequat" | "framexaxis" | "frameyaxis" | "framezaxis" | "framelinvel" | "frameangvel" => {
                let Some(obj) = self.frame_object(el, "objtype", "objname")? else {
                    return Ok(SensorKind::Unsupported {
                        what: format!("{t} of a camera"),
                        dim: if t == "framequat" { 4 } else { 3 },
                    });
                };
                let reference = if el.attr("reftype").is_some() || el.attr("refname").is_some() {
                    match self.frame_object(el, "reftype", "refname")? {
                        Some(r) => Some(r),
                        None => {
                            return Ok(SensorKind::Unsupported { what: format!("{t} relative to a camera"), dim: 3 });
                        }
                    }
                } else {
                    None
                };
                match (t, reference) {
                    ("framepos", r) => SensorKind::FramePos(obj, r),
                    ("framequat", r) => SensorKind::FrameQuat(obj, r),
                    ("framexaxis", r) => SensorKind::FrameXAxis(obj, r),
                    ("frameyaxis", r) => SensorKind::FrameYAxis(obj, r),
                    ("framezaxis", r) => SensorKind::FrameZAxis(obj, r),
                    ("framelinvel", None) => SensorKind::FrameLinVel(obj),
                    ("frameangvel", None) => SensorKind::FrameAngVel(obj),
                    _ => SensorKind::Unsupported { what: format!("{t} relative to a reference frame"), dim: 3 },
                }
            }
            _ => return Err(el.err(format!("unknown sensor type <{t}>"))),
        })
    }

    /// The frame named by `objtype`/`objname` (or `reftype`/`refname`);
    /// `None` for cameras.
    fn frame_object(
        &self,
        el: &Elem<'c, 'a>,
        type_attr: &str,
        name_attr: &str,
    ) -> Result<Option<FrameObject>, ModelError> {
        let Some(kind) = el.keyword(type_attr, &["body", "xbody", "geom", "site", "camera"])? else {
            return Err(el.err(format!("missing required attribute '{type_attr}'")));
        };
        let Some(a) = el.attr(name_attr) else {
            return Err(el.err(format!("missing required attribute '{name_attr}'")));
        };
        let unknown = || el.err_attr(&a, format!("unknown {kind} \"{}\"", a.value));
        Ok(Some(match kind {
            "body" | "xbody" => {
                let b = if a.value == "world" { Some(0) } else { self.b.body_by_name(a.value) };
                let b = b.ok_or_else(unknown)?;
                if kind == "body" { FrameObject::Body(b) } else { FrameObject::XBody(b) }
            }
            "geom" => FrameObject::Geom(self.b.geom_by_name(a.value).ok_or_else(unknown)?),
            "site" => FrameObject::Site(self.b.site_by_name(a.value).ok_or_else(unknown)?),
            _ => return Ok(None),
        }))
    }
}
