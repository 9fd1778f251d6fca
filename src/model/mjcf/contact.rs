//! MJCF contact settings → cenic [`Material`] (the mapping and why it is
//! built this way: the guide's "Models and MJCF", section "Contact materials
//! under the physical semantics", `docs/src/models.md`).

use crate::model::soft::Softness;
use crate::model::{Material, Model, Semantics, SoftMaterial};

pub(super) use crate::model::soft::{SOLIMP_DEFAULT, SOLREF_DEFAULT};
/// MuJoCo's default geom `friction` (sliding, torsional, rolling).
pub(super) const FRICTION_DEFAULT: [f64; 3] = [1.0, 0.005, 0.0001];
/// MuJoCo's default `<pair>` friction (two sliding, torsional, two rolling).
pub(super) const PAIR_FRICTION_DEFAULT: [f64; 5] = [1.0, 1.0, 0.005, 0.0001, 0.0001];
/// |g| used for the dissipation when the model has no gravity (m/s²).
const G_FALLBACK: f64 = 9.81;

/// Contact settings of one geom as written in MJCF.
#[derive(Clone, Debug)]
pub(super) struct GeomContact {
    /// `friction[0]`: sliding friction, taken as the static coefficient.
    pub mu: f64,
    /// Extension `friction_dynamic`.
    pub mu_dynamic: Option<f64>,
    pub condim: i64,
    pub solref: [f64; 2],
    /// `solimp` (only d0, the impedance at zero penetration, is used).
    pub solimp: [f64; 5],
    /// Extension `stiffness` (N/m).
    pub stiffness: Option<f64>,
    /// Extension `dissipation` (s/m).
    pub dissipation: Option<f64>,
    /// `friction` as MuJoCo's 5-vector (two sliding, torsional, two rolling).
    pub friction: [f64; 5],
    /// `solmix` (geoms; 1 for pairs).
    pub solmix: f64,
    /// `priority` (geoms; 0 for pairs).
    pub priority: i32,
    /// `margin` (m).
    pub margin: f64,
    /// `gap` (m).
    pub gap: f64,
}

impl GeomContact {
    /// Whether cenic's physical contact attributes are set.
    pub fn physical(&self) -> bool {
        self.stiffness.is_some() || self.dissipation.is_some() || self.mu_dynamic.is_some()
    }

    /// MuJoCo's contact parameters.
    pub fn soft(&self) -> SoftMaterial {
        SoftMaterial {
            solref: self.solref,
            solimp: self.solimp,
            solmix: self.solmix,
            friction: self.friction,
            condim: self.condim as u8,
            priority: self.priority,
            margin: self.margin,
            gap: self.gap,
        }
    }
}

/// Stiffness (N/m) and dissipation (s/m) for a geom whose kinematic tree has
/// mass `m_ref` (kg), from MuJoCo's solref/solimp. `timestep` (s) applies
/// MuJoCo's safety clamp τ ≥ 2·timestep; `g` is |gravity| (m/s²).
pub(super) fn solref_to_kd(solref: [f64; 2], solimp: [f64; 5], m_ref: f64, timestep: f64, g: f64) -> (f64, f64) {
    let g = if g > 0.0 { g } else { G_FALLBACK };
    let (k, c) = Softness { solref, solimp }.spring(m_ref, timestep);
    // Hunt–Crossley d with the linear damping c at the static equilibrium
    // x0 = m g/k: c = k·x0·d = m·g·d.
    (k, c / (m_ref * g))
}

/// Computes every geom's material on the built model. Returns the geoms
/// (index, message) whose settings could not be mapped, and warnings.
pub(super) fn assign_materials(model: &mut Model, contacts: &[GeomContact]) -> (Vec<(usize, String)>, Vec<String>) {
    let mut errors = vec![];
    let mut warnings = vec![];
    let g = model.options.gravity.iter().map(|x| x * x).sum::<f64>().sqrt();
    let dt = model.options.timestep;
    // Mass of each kinematic tree, by root body.
    let mut tree_mass = vec![0.0; model.bodies.len()];
    for b in &model.bodies[1..] {
        tree_mass[b.root] += b.mass;
    }
    let ng = model.geoms.len();
    let mujoco = model.options.semantics == Semantics::MuJoCo;
    let mut condim1_kept = vec![];
    let mut condim1_partners: Vec<String> = vec![];
    let mut condim_high = vec![];
    let mut static_no_d = vec![];
    let mut ignored = vec![];
    for i in 0..ng {
        let c = &contacts[i];
        let body = model.geoms[i].body;
        let is_static = !model.body_is_dynamic(body);
        let name = geom_label(model, i);
        if !mujoco && (c.priority != 0 || c.gap != 0.0) {
            ignored.push(name.clone());
        }
        // Friction: MuJoCo uses the larger condim of a pair, so condim 1 is
        // frictionless only when every possible partner also has condim 1
        // (MuJoCo's semantics combine condim per pair and need no such rule).
        let (mut mu_s, mut mu_d) = (c.mu, c.mu_dynamic.unwrap_or(c.mu));
        if c.condim == 1 && !mujoco {
            let partner = (0..ng).find(|&j| j != i && contacts[j].condim > 1 && model.geoms_can_collide(i, j));
            match partner {
                None => (mu_s, mu_d) = (0.0, 0.0),
                Some(j) => {
                    condim1_kept.push(name.clone());
                    let p = geom_label(model, j);
                    if !condim1_partners.contains(&p) {
                        condim1_partners.push(p);
                    }
                }
            }
        } else if c.condim > 3 {
            condim_high.push(format!("{name} (condim {})", c.condim));
        }
        if is_static && c.stiffness.is_some() && c.dissipation.is_none() {
            static_no_d.push(name.clone());
        }
        // Under MuJoCo's semantics the physical mapping is for information
        // only (`cenic info`); a geom it cannot map keeps a placeholder.
        let (k, d) = match spring_of(c, is_static, tree_mass[model.bodies[body].root], dt, g) {
            Ok(kd) => kd,
            Err(_) if mujoco => (f64::INFINITY, 0.0),
            Err(m) => {
                errors.push((i, m));
                continue;
            }
        };
        let soft = mujoco.then(|| c.soft());
        model.geoms[i].material = Material { stiffness: k, dissipation: d, mu_static: mu_s, mu_dynamic: mu_d, soft };
    }
    if !ignored.is_empty() {
        warnings.push(format!(
            "geom priority and gap act only under MuJoCo's semantics (<option semantics=\"mujoco\">); ignored: {}",
            ignored.join(", ")
        ));
    }
    if !condim1_kept.is_empty() {
        warnings.push(format!(
            "condim=\"1\" geoms keep friction μ = friction[0] because they can touch geoms with condim ≥ 3 ({}), \
             where MuJoCo uses the larger condim of the pair: {}",
            condim1_partners.join(", "),
            condim1_kept.join(", ")
        ));
    }
    if !condim_high.is_empty() {
        warnings.push(format!(
            "torsional and rolling friction (condim 4 or 6) are not modelled; sliding friction only: {}",
            condim_high.join(", ")
        ));
    }
    if !static_no_d.is_empty() {
        warnings.push(format!(
            "static geoms with 'stiffness' but no 'dissipation' get dissipation 0 s/m: {}",
            static_no_d.join(", ")
        ));
    }
    (errors, warnings)
}

/// Stiffness (N/m) and dissipation (s/m) of one side of a contact with
/// settings `c`: rigid on static bodies, else mapped from solref/solimp on
/// the kinematic tree's mass `m_ref` (kg), explicit values as given.
fn spring_of(c: &GeomContact, is_static: bool, m_ref: f64, dt: f64, g: f64) -> Result<(f64, f64), String> {
    let (k, d) = if is_static {
        (c.stiffness.unwrap_or(f64::INFINITY), c.dissipation.unwrap_or(0.0))
    } else {
        if m_ref <= 0.0 && (c.stiffness.is_none() || c.dissipation.is_none()) {
            return Err("cannot map solref/solimp to a stiffness: the geom's kinematic tree has no mass; \
                        give 'stiffness' and 'dissipation' explicitly"
                .to_string());
        }
        let (k_map, d_map) = solref_to_kd(c.solref, c.solimp, m_ref, dt, g);
        let k = c.stiffness.unwrap_or(k_map);
        // The damping ratio (or damping) of solref applies to the actual spring.
        let d = c.dissipation.unwrap_or(if c.solref[0] > 0.0 { d_map * (k / k_map).sqrt() } else { d_map });
        (k, d)
    };
    if !(k > 0.0 && d >= 0.0 && d.is_finite()) {
        return Err(format!(
            "mapped contact stiffness {k} N/m and dissipation {d} s/m are invalid (check solref/solimp)"
        ));
    }
    Ok((k, d))
}

/// Computes the material of every explicit contact pair from its own
/// settings (`pairs[i]`), mapped on each side's kinematic tree as for
/// geoms and combined in series ([`Material::combine`]); friction is the
/// pair's. Returns the first pair that could not be mapped.
pub(super) fn assign_pair_materials(model: &mut Model, pairs: &[GeomContact]) -> Option<(usize, String)> {
    let g = model.options.gravity.iter().map(|x| x * x).sum::<f64>().sqrt();
    let dt = model.options.timestep;
    let mut tree_mass = vec![0.0; model.bodies.len()];
    for b in &model.bodies[1..] {
        tree_mass[b.root] += b.mass;
    }
    let mujoco = model.options.semantics == Semantics::MuJoCo;
    for (pi, c) in pairs.iter().enumerate() {
        let mut side = [Material::default(); 2];
        for (s, &geom) in side.iter_mut().zip(&model.pairs[pi].geom) {
            let body = model.geoms[geom].body;
            let is_static = !model.body_is_dynamic(body);
            match spring_of(c, is_static, tree_mass[model.bodies[body].root], dt, g) {
                Ok((stiffness, dissipation)) => *s = Material { stiffness, dissipation, ..*s },
                Err(_) if mujoco => *s = Material { stiffness: f64::INFINITY, dissipation: 0.0, ..*s },
                Err(m) => return Some((pi, m)),
            }
        }
        let mut m = Material::combine(&side[0], &side[1]);
        let mu = if c.condim == 1 { 0.0 } else { c.mu };
        (m.mu_static, m.mu_dynamic) = (mu, if c.condim == 1 { 0.0 } else { c.mu_dynamic.unwrap_or(mu) });
        if model.pairs[pi].geom.iter().all(|&g| !model.body_is_dynamic(model.geoms[g].body)) {
            return Some((pi, "both geoms of the pair are static: the pair can never touch".into()));
        }
        // The pair's own parameters replace the geoms' (MuJoCo's <pair>).
        m.soft = mujoco.then(|| c.soft());
        model.pairs[pi].material = m;
    }
    None
}

fn geom_label(model: &Model, i: usize) -> String {
    let g = &model.geoms[i];
    if g.name.is_empty() { format!("geom #{i}") } else { format!("'{}'", g.name) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Hunt–Crossley dissipation, linearised at the static equilibrium,
    /// is the spring's damping (the spring itself is tested in `model::soft`).
    #[test]
    fn dissipation_gives_the_damping_ratio() {
        let (m, g) = (1.5, 9.81);
        let (k, d) = solref_to_kd([0.02, 0.7], SOLIMP_DEFAULT, m, 0.001, g);
        // Linearised at x0 = m g / k, the Hunt–Crossley damping is c = k x0 d = m g d.
        let c = m * g * d;
        assert!((c / (2.0 * (k * m).sqrt()) - 0.7).abs() < 1e-12);
        let (k, d) = solref_to_kd([-1000.0, -10.0], SOLIMP_DEFAULT, m, 0.001, g);
        assert!((k - m * 1000.0 / 0.1).abs() < 1e-9 * k);
        assert!((d - 10.0 / (0.1 * g)).abs() < 1e-12);
    }
}
