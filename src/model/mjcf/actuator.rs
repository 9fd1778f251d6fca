//! `<actuator>`: `motor`, `position`, `velocity`, `intvelocity`, `damper`,
//! `cylinder` and `general`, on joint, tendon and site transmissions, with
//! MuJoCo's parameters for each shortcut (MuJoCo XML reference,
//! "actuator"). A motor on a joint becomes [`ActuatorKind::Motor`], a
//! position servo on a joint with gear 1, no activation and a symmetric
//! (or no) force range becomes [`ActuatorKind::Position`] (both simulated
//! on the GPU too); everything else becomes a [`GeneralActuator`].

use super::Loader;
use super::defaults::DKind;
use super::xml::{self, Elem, Schema, check_attrs, elements, tag};
use crate::model::{ActDynamics, Actuator, ActuatorKind, GeneralActuator, JointKind, ModelError, Transmission};
use roxmltree::Node;

/// π/4: cylinder area from its diameter.
const QUARTER_PI: f64 = std::f64::consts::FRAC_PI_4;

impl<'c, 'a> Loader<'c, 'a> {
    pub(super) fn actuator(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &Schema { supported: &[], ignored: &[] }, false)?;
        for child in elements(node) {
            let t = tag(child);
            let schema = match t {
                "motor" => &xml::MOTOR,
                "position" => &xml::POSITION,
                "intvelocity" => &xml::INTVELOCITY,
                "velocity" => &xml::VELOCITY,
                "damper" => &xml::DAMPER,
                "cylinder" => &xml::CYLINDER,
                "general" => &xml::GENERAL,
                "muscle" | "adhesion" | "plugin" => {
                    return Err(self.ctx.err_node(
                        child,
                        format!(
                            "<{t}> actuators are not supported (cenic supports motor, position, velocity, \
                             intvelocity, damper, cylinder and general actuators with gaintype and biastype \
                             fixed/affine/none)"
                        ),
                    ));
                }
                _ => return Err(self.ctx.err_node(child, format!("unknown element <{t}> in <actuator>"))),
            };
            check_attrs(self.ctx, child, schema, false)?;
            let class = self.class_of(child, 0)?;
            let el = self.elem(child, class, DKind::Actuator);
            self.one_actuator(&el, t)?;
        }
        Ok(())
    }

    fn one_actuator(&mut self, el: &Elem<'c, 'a>, t: &str) -> Result<(), ModelError> {
        // Parameters inherited from a default written for another actuator
        // type would be translated by MuJoCo (e.g. a <general gainprm>
        // default sets a <position>'s kp); cenic does not translate them.
        // A motor resets every parameter, as in MuJoCo.
        for p in xml::ACTUATOR_PARAMS.iter().filter(|_| t != "motor") {
            if let Some(a) = el.attr(p).filter(|a| a.node != el.node && tag(a.node) != t) {
                return Err(el.err_attr(
                    &a,
                    format!(
                        "'{p}' comes from a <{}> default but this is a <{t}>: cenic does not translate actuator \
                         parameters between actuator types as MuJoCo does; give '{p}' on the element or use a \
                         <{t}> default",
                        tag(a.node)
                    ),
                ));
            }
        }
        let name = el.str("name").unwrap_or("").to_string();
        let (transmission, joint) = self.transmission(el)?;
        let mut gear = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        if let Some(g) = el.reals("gear", 1, 6)? {
            gear = [0.0; 6];
            gear[..g.len()].copy_from_slice(&g);
        }
        let mut ctrl_range = self.limits(el, "ctrllimited", "ctrlrange")?;
        let force_range = self.limits(el, "forcelimited", "forcerange")?;
        let mut act_range = self.limits(el, "actlimited", "actrange")?;
        let positive = |attr: &str, default: f64| -> Result<f64, ModelError> {
            let v = el.nonneg(attr)?.unwrap_or(default);
            Ok(v)
        };
        let mut dampratio = None;
        let (dynamics, gain, bias) = match t {
            "motor" => (ActDynamics::None, [1.0, 0.0, 0.0], [0.0; 3]),
            "position" | "intvelocity" => {
                let kp = positive("kp", 1.0)?;
                let kv = el.nonneg("kv")?;
                dampratio = el.nonneg("dampratio")?;
                if let (Some(_), Some(_)) = (kv, dampratio) {
                    return Err(el.err_attr(&el.attr("dampratio").unwrap(), "kv and dampratio cannot both be given"));
                }
                let inherit = el.nonneg("inheritrange")?.filter(|s| *s > 0.0);
                if let Some(s) = inherit {
                    let a = el.attr("inheritrange").unwrap();
                    let Some([lo, hi]) = self.transmission_range(transmission) else {
                        return Err(el.err_attr(&a, "inheritrange needs a limited joint or tendon"));
                    };
                    let (c, h) = (0.5 * (lo + hi), 0.5 * (hi - lo) * s);
                    if t == "position" {
                        if el.has_own("ctrlrange") {
                            return Err(el.err_attr(&a, "ctrlrange and inheritrange cannot both be given"));
                        }
                        ctrl_range = Some([c - h, c + h]);
                    } else {
                        act_range = Some([c - h, c + h]);
                    }
                }
                let dynamics = if t == "intvelocity" {
                    if act_range.is_none() {
                        return Err(el.err("an intvelocity actuator needs 'actrange' (its activation is limited)"));
                    }
                    ActDynamics::Integrator
                } else {
                    match el.nonneg("timeconst")? {
                        Some(tau) if tau > 0.0 => ActDynamics::FilterExact { tau },
                        _ => ActDynamics::None,
                    }
                };
                (dynamics, [kp, 0.0, 0.0], [0.0, -kp, -kv.unwrap_or(0.0)])
            }
            "velocity" => {
                let kv = positive("kv", 1.0)?;
                (ActDynamics::None, [kv, 0.0, 0.0], [0.0, 0.0, -kv])
            }
            "damper" => {
                let kv = positive("kv", 0.0)?;
                match ctrl_range {
                    Some([lo, _]) if lo >= 0.0 => {}
                    Some(_) => {
                        let a = el.attr("ctrlrange").unwrap();
                        return Err(el.err_attr(&a, "a damper's control range must not be negative"));
                    }
                    None => return Err(el.err("a damper needs 'ctrlrange' (MuJoCo limits its control)")),
                }
                (ActDynamics::None, [0.0, 0.0, -kv], [0.0; 3])
            }
            "cylinder" => {
                let tau = el.nonneg("timeconst")?.unwrap_or(1.0);
                let area = match el.nonneg("diameter")? {
                    Some(d) => QUARTER_PI * d * d,
                    None => el.nonneg("area")?.unwrap_or(1.0),
                };
                let b = el.reals("bias", 1, 3)?.unwrap_or_default();
                let mut bias = [0.0; 3];
                bias[..b.len()].copy_from_slice(&b);
                (filter(el, tau, false)?, [area, 0.0, 0.0], bias)
            }
            _ => self.general_params(el)?,
        };
        let i = self.b.actuator_count();
        let kind = match (t, transmission) {
            ("motor", Transmission::Joint(_)) => ActuatorKind::Motor { gear: gear[0], force_range },
            ("position", Transmission::Joint(_)) if gear[0] == 1.0 && dynamics == ActDynamics::None => {
                match force_range {
                    None => ActuatorKind::Position { kp: gain[0], kd: -bias[2], effort_limit: f64::INFINITY },
                    Some([lo, hi]) if lo == -hi && hi > 0.0 => {
                        ActuatorKind::Position { kp: gain[0], kd: -bias[2], effort_limit: hi }
                    }
                    Some(_) => general(transmission, gear, dynamics, gain, bias, force_range, act_range),
                }
            }
            _ => general(transmission, gear, dynamics, gain, bias, force_range, act_range),
        };
        if let Some(r) = dampratio {
            self.b.set_actuator_dampratio(i, r);
        }
        self.src.actuator.push(el.node);
        self.b.add_actuator(Actuator { name, joint, kind, ctrl_range });
        Ok(())
    }

    /// `dyntype`, `gaintype`, `biastype` and their parameters of a `<general>`.
    fn general_params(&self, el: &Elem<'c, 'a>) -> Result<(ActDynamics, [f64; 3], [f64; 3]), ModelError> {
        const NOT_SUPPORTED: &str = "is not supported (cenic supports none, integrator, filter and filterexact \
                                     dynamics; fixed and affine gains; none and affine biases)";
        let prm = |attr: &str, default: f64| -> Result<[f64; 3], ModelError> {
            let v = el.reals(attr, 0, 10)?.unwrap_or_default();
            let mut p = [default, 0.0, 0.0];
            for (k, x) in v.iter().enumerate() {
                if k < 3 {
                    p[k] = *x;
                } else if *x != 0.0 {
                    let a = el.attr(attr).unwrap();
                    return Err(
                        el.err_attr(&a, format!("{attr}[{k}] = {x} has no meaning for the types cenic supports"))
                    );
                }
            }
            Ok(p)
        };
        let dynprm = prm("dynprm", 1.0)?;
        let dynamics =
            match el.keyword("dyntype", &["none", "integrator", "filter", "filterexact", "muscle", "user"])? {
                None | Some("none") => ActDynamics::None,
                Some("integrator") => ActDynamics::Integrator,
                Some("filter") => filter(el, dynprm[0], false)?,
                Some("filterexact") => filter(el, dynprm[0], true)?,
                Some(d) => {
                    return Err(el.err_attr(&el.attr("dyntype").unwrap(), format!("dyntype \"{d}\" {NOT_SUPPORTED}")));
                }
            };
        let gain = match el.keyword("gaintype", &["fixed", "affine", "muscle", "user"])? {
            None | Some("fixed") => [prm("gainprm", 1.0)?[0], 0.0, 0.0],
            Some("affine") => prm("gainprm", 1.0)?,
            Some(g) => {
                return Err(el.err_attr(&el.attr("gaintype").unwrap(), format!("gaintype \"{g}\" {NOT_SUPPORTED}")));
            }
        };
        let bias = match el.keyword("biastype", &["none", "affine", "muscle", "user"])? {
            None | Some("none") => [0.0; 3],
            Some("affine") => prm("biasprm", 0.0)?,
            Some(b) => {
                return Err(el.err_attr(&el.attr("biastype").unwrap(), format!("biastype \"{b}\" {NOT_SUPPORTED}")));
            }
        };
        if el.bool("actearly")? == Some(true) {
            return Err(el.err_attr(
                &el.attr("actearly").unwrap(),
                "actearly=\"true\" is not supported (cenic's actuator force uses the activation at the start of each step)",
            ));
        }
        if el.int("actdim")?.is_some_and(|d| d != -1 && d != i64::from(dynamics != ActDynamics::None)) {
            return Err(
                el.err_attr(&el.attr("actdim").unwrap(), "actdim must match the dynamics (one activation or none)")
            );
        }
        Ok((dynamics, gain, bias))
    }

    /// The transmission (`joint`, `jointinparent`, `tendon`, `site`) and the
    /// actuated joint (`usize::MAX` unless a joint).
    fn transmission(&self, el: &Elem<'c, 'a>) -> Result<(Transmission, usize), ModelError> {
        for other in ["refsite", "cranksite", "slidersite", "body"] {
            if let Some(a) = el.attr(other) {
                return Err(el.err_attr(
                    &a,
                    format!("'{other}' transmissions are not supported (cenic supports joint, tendon and site)"),
                ));
            }
        }
        let given: Vec<_> =
            ["joint", "jointinparent", "tendon", "site"].into_iter().filter_map(|a| el.attr(a)).collect();
        let Some(a) = given.first() else {
            return Err(el.err("an actuator needs a transmission: 'joint', 'tendon' or 'site'"));
        };
        if given.len() > 1 {
            return Err(el.err_attr(&given[1], "an actuator has exactly one transmission"));
        }
        match a.name {
            "joint" | "jointinparent" => {
                let j = self
                    .b
                    .joint_by_name(a.value)
                    .ok_or_else(|| el.err_attr(a, format!("unknown joint \"{}\"", a.value)))?;
                let kind = self.b.joint_kind(j).unwrap();
                if !matches!(kind, JointKind::Hinge | JointKind::Slide) {
                    return Err(el.err_attr(
                        a,
                        format!(
                            "actuators on {} joints are not supported (cenic actuates hinge and slide joints)",
                            kind.name()
                        ),
                    ));
                }
                Ok((Transmission::Joint(j), j))
            }
            "tendon" => {
                let t = self
                    .b
                    .tendon_by_name(a.value)
                    .ok_or_else(|| el.err_attr(a, format!("unknown tendon \"{}\"", a.value)))?;
                Ok((Transmission::Tendon(t), usize::MAX))
            }
            _ => {
                let s = self
                    .b
                    .site_by_name(a.value)
                    .ok_or_else(|| el.err_attr(a, format!("unknown site \"{}\"", a.value)))?;
                Ok((Transmission::Site(s), usize::MAX))
            }
        }
    }

    /// The limits of a joint or tendon transmission (for `inheritrange`).
    fn transmission_range(&self, t: Transmission) -> Option<[f64; 2]> {
        match t {
            Transmission::Joint(j) => self.joint_range(j),
            Transmission::Tendon(t) => self.tendon_ranges.get(t).copied().flatten(),
            Transmission::Site(_) => None,
        }
    }
}

/// A filter with time constant `tau` (s), which must be positive.
fn filter(el: &Elem, tau: f64, exact: bool) -> Result<ActDynamics, ModelError> {
    if !(tau > 0.0 && tau.is_finite()) {
        let a = el.attr("dynprm").or_else(|| el.attr("timeconst"));
        let msg = format!("the filter time constant must be positive, got {tau} s");
        return Err(match a {
            Some(a) => el.err_attr(&a, msg),
            None => el.err(msg),
        });
    }
    Ok(if exact { ActDynamics::FilterExact { tau } } else { ActDynamics::Filter { tau } })
}

fn general(
    transmission: Transmission,
    gear: [f64; 6],
    dynamics: ActDynamics,
    gain: [f64; 3],
    bias: [f64; 3],
    force_range: Option<[f64; 2]>,
    act_range: Option<[f64; 2]>,
) -> ActuatorKind {
    ActuatorKind::General(GeneralActuator {
        transmission,
        gear,
        dynamics,
        gain,
        bias,
        force_range,
        act_range,
        act_adr: None,
    })
}
