//! [`Model::summary`]: the text `cenic info` prints.

use super::*;
use std::fmt::Write;

impl Model {
    /// A short human-readable summary (used by `cenic info`): sizes,
    /// options, bodies, geoms, actuators, tendons, equality constraints,
    /// contact pairs and exclusions, sensors, keyframes and warnings.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "model '{}'", self.name);
        let _ = writeln!(
            s,
            "  nq = {}, nv = {}, nu = {}, na = {}, nsensordata = {}, total mass = {:.6} kg",
            self.nq,
            self.nv,
            self.nu(),
            self.na,
            self.nsensordata,
            self.total_mass()
        );
        let o = &self.options;
        let _ = writeln!(s, "  timestep = {} s, gravity = {:?}", o.timestep, o.gravity);
        if o.has_fluid() {
            let _ = writeln!(
                s,
                "  fluid: density {} kg/m³, viscosity {} Pa·s, wind {:?} m/s (inertia-box model)",
                o.density, o.viscosity, o.wind
            );
        }
        let f = o.flags;
        let off: Vec<&str> = [
            (f.contact, "contact"),
            (f.limit, "limit"),
            (f.equality, "equality"),
            (f.frictionloss, "frictionloss"),
            (f.gravity, "gravity"),
            (f.actuation, "actuation"),
            (f.spring, "spring"),
            (f.damper, "damper"),
            (f.fluid, "fluid"),
            (f.clampctrl, "clampctrl"),
            (f.filterparent, "filterparent"),
            (f.refsafe, "refsafe"),
            (f.sensor, "sensor"),
        ]
        .into_iter()
        .filter(|(on, _)| !on)
        .map(|(_, n)| n)
        .collect();
        if !off.is_empty() {
            let _ = writeln!(s, "  switched off: {}", off.join(", "));
        }
        let _ = writeln!(s, "  bodies ({}):", self.bodies.len());
        for (i, b) in self.bodies.iter().enumerate() {
            let joints: Vec<String> = (b.jnt_adr..b.jnt_adr + b.jnt_num)
                .map(|j| format!("{}:{}", self.joints[j].kind.name(), display_name(&self.joints[j].name, j)))
                .collect();
            let _ = writeln!(
                s,
                "    [{i}] {:<20} parent {:<3} mass {:>10.5} kg  joints [{}]",
                display_name(&b.name, i),
                b.parent,
                b.mass,
                joints.join(", ")
            );
        }
        let _ = writeln!(s, "  geoms ({}):", self.geoms.len());
        for (i, g) in self.geoms.iter().enumerate() {
            let _ = writeln!(
                s,
                "    [{i}] {:<20} {:<9} body {:<3} size {:?}  k {:.3e} N/m  d {} s/m  mu {}/{}",
                display_name(&g.name, i),
                g.kind.name(),
                g.body,
                g.size,
                g.material.stiffness,
                g.material.dissipation,
                g.material.mu_static,
                g.material.mu_dynamic
            );
        }
        let _ = writeln!(s, "  actuators ({}):", self.actuators.len());
        for (i, a) in self.actuators.iter().enumerate() {
            let _ = writeln!(s, "    [{i}] {:<20} {}", display_name(&a.name, i), self.actuator_text(a));
        }
        if !self.tendons.is_empty() {
            let _ = writeln!(s, "  tendons ({}):", self.tendons.len());
            for (i, t) in self.tendons.iter().enumerate() {
                let path = match &t.path {
                    TendonPath::Fixed(list) => format!("fixed over {} joint(s)", list.len()),
                    TendonPath::Spatial(p) => {
                        let sites = p.iter().filter(|e| matches!(e, SpatialElement::Site(_))).count();
                        format!("spatial through {sites} site(s)")
                    }
                };
                let _ = writeln!(
                    s,
                    "    [{i}] {:<20} {path}, length0 {:.6} m, range {:?}, stiffness {} N/m, damping {} N·s/m, frictionloss {} N",
                    display_name(&t.name, i),
                    t.length0,
                    t.range,
                    t.stiffness,
                    t.damping,
                    t.frictionloss
                );
            }
        }
        if !self.equalities.is_empty() {
            let _ = writeln!(s, "  equality constraints ({}):", self.equalities.len());
            for (i, e) in self.equalities.iter().enumerate() {
                let objects = match e.kind {
                    EqualityKind::Connect { body, .. } | EqualityKind::Weld { body, .. } => {
                        format!("bodies {} and {}", self.body_label(body[0]), self.body_label(body[1]))
                    }
                    EqualityKind::Joint { joint, .. } => {
                        let n: Vec<String> =
                            joint.iter().flatten().map(|&j| display_name(&self.joints[j].name, j)).collect();
                        format!("joints {}", n.join(", "))
                    }
                    EqualityKind::Tendon { tendon, .. } => {
                        let n: Vec<String> =
                            tendon.iter().flatten().map(|&t| display_name(&self.tendons[t].name, t)).collect();
                        format!("tendons {}", n.join(", "))
                    }
                };
                let _ = writeln!(
                    s,
                    "    [{i}] {:<20} {} of {objects}{}, solref {:?}",
                    display_name(&e.name, i),
                    e.kind_name(),
                    if e.active { "" } else { " (inactive)" },
                    e.softness.solref
                );
            }
        }
        if !self.pairs.is_empty() || !self.excludes.is_empty() {
            let _ =
                writeln!(s, "  contact pairs ({}), excluded body pairs ({}):", self.pairs.len(), self.excludes.len());
            for (i, p) in self.pairs.iter().enumerate() {
                let [a, b] = p.geom;
                let _ = writeln!(
                    s,
                    "    pair [{i}] {} – {}: k {:.3e} N/m, d {} s/m, mu {}, margin {} m",
                    display_name(&self.geoms[a].name, a),
                    display_name(&self.geoms[b].name, b),
                    p.material.stiffness,
                    p.material.dissipation,
                    p.material.mu_static,
                    p.margin
                );
            }
            for [a, b] in &self.excludes {
                let _ = writeln!(s, "    exclude {} – {}", self.body_label(*a), self.body_label(*b));
            }
        }
        if !self.sensors.is_empty() {
            let _ = writeln!(s, "  sensors ({}):", self.sensors.len());
            for (i, sn) in self.sensors.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "    [{i}] {:<20} {:<14} values {}..{}",
                    display_name(&sn.name, i),
                    sn.kind.name(),
                    sn.adr,
                    sn.adr + sn.kind.dim()
                );
            }
        }
        if !self.keyframes.is_empty() {
            let names: Vec<String> = self.keyframes.iter().enumerate().map(|(i, k)| display_name(&k.name, i)).collect();
            let _ = writeln!(s, "  keyframes: {}", names.join(", "));
        }
        for w in &self.warnings {
            let _ = writeln!(s, "  warning: {w}");
        }
        s
    }

    fn body_label(&self, b: usize) -> String {
        display_name(&self.bodies[b].name, b)
    }

    /// One line describing an actuator's transmission and force law.
    fn actuator_text(&self, a: &Actuator) -> String {
        let joint = |j: usize| format!("joint {}", display_name(&self.joints[j].name, j));
        match a.kind {
            ActuatorKind::Motor { gear, force_range } => {
                format!("{} motor gear {gear} force range {force_range:?}", joint(a.joint))
            }
            ActuatorKind::Position { kp, kd, effort_limit } => {
                format!("{} position kp {kp} kd {kd} effort limit {effort_limit} (implicit)", joint(a.joint))
            }
            ActuatorKind::General(g) => {
                let on = match g.transmission {
                    Transmission::Joint(j) => joint(j),
                    Transmission::Tendon(t) => format!("tendon {}", display_name(&self.tendons[t].name, t)),
                    Transmission::Site(si) => format!("site {}", display_name(&self.sites[si].name, si)),
                };
                let dynamics = match g.dynamics {
                    ActDynamics::None => String::new(),
                    ActDynamics::Integrator => ", activation: integrator".into(),
                    ActDynamics::Filter { tau } | ActDynamics::FilterExact { tau } => {
                        format!(", activation: filter τ = {tau} s")
                    }
                };
                let implicit = g.bias[1] <= 0.0
                    && g.bias[2] <= 0.0
                    && g.gain[1] == 0.0
                    && (g.bias[1] < 0.0 || g.bias[2] < 0.0 || g.gain[2] < 0.0);
                format!(
                    "{on} general gear {:?} gain {:?} bias {:?} force range {:?}{dynamics} ({})",
                    &g.gear[..if matches!(g.transmission, Transmission::Site(_)) { 6 } else { 1 }],
                    g.gain,
                    g.bias,
                    g.force_range,
                    if implicit { "implicit" } else { "explicit" }
                )
            }
        }
    }
}
