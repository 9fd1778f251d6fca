//! The gymnasium v5 MuJoCo tasks on the shared gymnasium models: Ant,
//! HalfCheetah, Humanoid, InvertedPendulum, InvertedDoublePendulum,
//! Reacher and Pusher, with gymnasium's observation layouts, reward terms
//! and default weights, health and termination rules, reset noise, frame
//! skip and episode lengths (gymnasium 1.x documentation, `*_v5.py`).
//!
//! | task | obs | act | frame skip × timestep | episode | terminates when |
//! |---|---|---|---|---|---|
//! | `Ant-v5` | 105 | 8 | 5 × 10 ms | 1000 | state not finite or torso z ∉ [0.2, 1.0] m |
//! | `HalfCheetah-v5` | 17 | 6 | 5 × 10 ms | 1000 | never |
//! | `Humanoid-v5` | 348 | 17 | 5 × 3 ms | 1000 | torso z ∉ (1.0, 2.0) m |
//! | `InvertedPendulum-v5` | 4 | 1 | 2 × 20 ms | 1000 | obs not finite or \|pole angle\| > 0.2 rad |
//! | `InvertedDoublePendulum-v5` | 9 | 1 | 5 × 10 ms | 1000 | pole tip z ≤ 1 m |
//! | `Reacher-v5` | 10 | 2 | 2 × 10 ms | 50 | never |
//! | `Pusher-v5` | 23 | 7 | 5 × 10 ms | 100 | never |
//!
//! Where cenic differs (see also the [module notes](super)):
//! - **Contact forces** (`cfrc_ext`, the last 78 observations of Ant and
//!   Humanoid and their contact costs): cenic returns, per body, the
//!   contact wrench of its last physics step — the impulse that cenic's
//!   convex contact solve (compliant Hunt–Crossley normal force, regularised
//!   Coulomb friction) applied over that step, divided by the step — in
//!   MuJoCo's layout ([`super::mujoco::cfrc_ext`]: torque about the tree's
//!   centre of mass, then force, world frame, force on the body). MuJoCo's
//!   are the constraint forces of its own soft contacts in its last step.
//!   Both carry the body's weight at rest (forces sum to m·g), but their
//!   distribution over the feet and their transients differ. Ant clips each
//!   entry to [−1, 1] as gymnasium does.
//! - **InvertedDoublePendulum's last observation** (`qfrc_constraint[0]`,
//!   clipped to ±10): cenic's joint-limit and contact force on the cart's
//!   slider over the last physics step; zero away from the rail's ends in both.
//! - **Pusher-v5** uses gymnasium's `pusher_v5.xml`, which is not among the
//!   shared models: [`load_model`] derives it from the shared `pusher.xml`
//!   with gymnasium's two v5 edits (the object's invisible sphere geom
//!   removed, its cylinder's density raised from 1e-5 to 0.01).
//! - Control costs use the clipped action.

use super::mujoco::{TreeComs, cfrc_ext, cinert, cvel, mass_center, qfrc_actuator};
use super::{EnvRng, EnvState, Needs, RlError, Task, TaskSpec};
use crate::math::Real;
use crate::model::{JointKind, Model};
use std::path::Path;
use std::sync::Arc;

/// The gymnasium ids of the built-in tasks.
pub const NAMES: [&str; 7] = [
    "Ant-v5",
    "HalfCheetah-v5",
    "Humanoid-v5",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
    "Reacher-v5",
    "Pusher-v5",
];

/// Which built-in task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `Ant-v5`.
    Ant,
    /// `HalfCheetah-v5`.
    HalfCheetah,
    /// `Humanoid-v5`.
    Humanoid,
    /// `InvertedPendulum-v5`.
    InvertedPendulum,
    /// `InvertedDoublePendulum-v5`.
    InvertedDoublePendulum,
    /// `Reacher-v5`.
    Reacher,
    /// `Pusher-v5`.
    Pusher,
}

impl Kind {
    /// Every kind, in [`NAMES`] order.
    pub const ALL: [Kind; 7] = [
        Kind::Ant,
        Kind::HalfCheetah,
        Kind::Humanoid,
        Kind::InvertedPendulum,
        Kind::InvertedDoublePendulum,
        Kind::Reacher,
        Kind::Pusher,
    ];

    /// The gymnasium id.
    pub fn id(self) -> &'static str {
        NAMES[self as usize]
    }

    /// The kind of a gymnasium id (`Ant-v5`) or short name (`ant`, `half_cheetah`).
    pub fn parse(name: &str) -> Result<Kind, RlError> {
        let short = |k: Kind| k.model_file().trim_end_matches(".xml");
        Kind::ALL
            .into_iter()
            .find(|k| k.id().eq_ignore_ascii_case(name) || short(*k) == name)
            .ok_or_else(|| RlError::UnknownTask(name.into()))
    }

    /// The shared model file it runs on (`models/gymnasium/…`).
    pub fn model_file(self) -> &'static str {
        match self {
            Kind::Ant => "ant.xml",
            Kind::HalfCheetah => "half_cheetah.xml",
            Kind::Humanoid => "humanoid.xml",
            Kind::InvertedPendulum => "inverted_pendulum.xml",
            Kind::InvertedDoublePendulum => "inverted_double_pendulum.xml",
            Kind::Reacher => "reacher.xml",
            Kind::Pusher => "pusher.xml",
        }
    }
}

/// Reward weights and ranges (gymnasium's constructor arguments; defaults
/// are v5's). Fields a task does not use are ignored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Weight of the forward velocity (s/m).
    pub forward_reward_weight: f64,
    /// Weight of the squared controls.
    pub ctrl_cost_weight: f64,
    /// Weight of the squared contact forces (1/N²).
    pub contact_cost_weight: f64,
    /// Upper bound of the contact cost (Humanoid).
    pub contact_cost_max: f64,
    /// Reward per step while healthy.
    pub healthy_reward: f64,
    /// Healthy range of the torso height (m).
    pub healthy_z_range: [f64; 2],
    /// Range each contact-force entry is clipped to (Ant).
    pub contact_force_range: [f64; 2],
    /// End the episode when unhealthy.
    pub terminate_when_unhealthy: bool,
    /// Scale of the reset noise.
    pub reset_noise_scale: f64,
    /// Weight of the distance to the target or goal (Reacher, Pusher).
    pub dist_weight: f64,
    /// Weight of the fingertip-to-object distance (Pusher).
    pub near_weight: f64,
}

impl Params {
    /// Gymnasium v5's defaults for `kind`.
    pub fn v5(kind: Kind) -> Self {
        let base = Params {
            forward_reward_weight: 1.0,
            ctrl_cost_weight: 0.0,
            contact_cost_weight: 0.0,
            contact_cost_max: f64::INFINITY,
            healthy_reward: 0.0,
            healthy_z_range: [f64::NEG_INFINITY, f64::INFINITY],
            contact_force_range: [-1.0, 1.0],
            terminate_when_unhealthy: true,
            reset_noise_scale: 0.0,
            dist_weight: 1.0,
            near_weight: 0.0,
        };
        match kind {
            Kind::Ant => Params {
                ctrl_cost_weight: 0.5,
                contact_cost_weight: 5e-4,
                healthy_reward: 1.0,
                healthy_z_range: [0.2, 1.0],
                reset_noise_scale: 0.1,
                ..base
            },
            Kind::HalfCheetah => Params { ctrl_cost_weight: 0.1, reset_noise_scale: 0.1, ..base },
            Kind::Humanoid => Params {
                forward_reward_weight: 1.25,
                ctrl_cost_weight: 0.1,
                contact_cost_weight: 5e-7,
                contact_cost_max: 10.0,
                healthy_reward: 5.0,
                healthy_z_range: [1.0, 2.0],
                reset_noise_scale: 1e-2,
                ..base
            },
            Kind::InvertedPendulum => Params { reset_noise_scale: 0.01, ..base },
            Kind::InvertedDoublePendulum => Params { healthy_reward: 10.0, reset_noise_scale: 0.1, ..base },
            Kind::Reacher => Params { ctrl_cost_weight: 1.0, ..base },
            Kind::Pusher => Params { ctrl_cost_weight: 0.1, near_weight: 0.5, ..base },
        }
    }
}

/// A built-in task bound to its model: the [`Kind`], its [`Params`] and
/// the model indices it reads.
#[derive(Clone, Debug)]
pub struct Builtin {
    /// Which task.
    pub kind: Kind,
    /// Weights and ranges.
    pub params: Params,
    /// Body whose origin the forward reward follows (Ant: the torso),
    /// or whose position is observed (Reacher: fingertip; Pusher: tips_arm).
    pub body_a: usize,
    /// Reacher: target; Pusher: object.
    pub body_b: usize,
    /// Pusher: goal.
    pub body_c: usize,
    /// InvertedDoublePendulum: the pole tip's site.
    pub site: usize,
    spec: TaskSpec,
}

fn task_err(kind: Kind, message: impl Into<String>) -> RlError {
    RlError::Task { task: kind.id().into(), message: message.into() }
}

impl Builtin {
    /// `kind` with gymnasium's v5 defaults on `model` (the shared model of
    /// [`Kind::model_file`]; see [`load_model`]). Errors name what does not
    /// fit: sizes, a missing free joint, body or site.
    pub fn new(kind: Kind, model: &Model) -> Result<Self, RlError> {
        let (nq, nv, nu, nb) = (model.nq, model.nv, model.nu(), model.bodies.len());
        let body = |name: &str| model.body_id(name).ok_or_else(|| task_err(kind, format!("no body '{name}'")));
        let need = |ok: bool, what: &str| if ok { Ok(()) } else { Err(task_err(kind, what.to_string())) };
        let free_root = model.joints.first().is_some_and(|j| j.kind == JointKind::Free && j.qpos_adr == 0);
        let (mut body_a, mut body_b, mut body_c, mut site) = (0, 0, 0, 0);
        let c = nb.saturating_sub(1);
        let (obs_dim, frame_skip, max_episode_steps, carry_dim, terms, needs): (_, _, _, _, &[&str], _) = match kind {
            Kind::Ant => {
                need(free_root && nb >= 2, "needs a free joint at qpos[0..7] on body 1")?;
                body_a = 1;
                let t: &[&str] = &["reward_forward", "reward_ctrl", "reward_contact", "reward_survive"];
                (nq - 2 + nv + 6 * c, 5, 1000, 2, t, Needs { contact_forces: true, ..Needs::default() })
            }
            Kind::HalfCheetah => {
                need(nq >= 1, "needs a root x coordinate")?;
                (nq - 1 + nv, 5, 1000, 1, &["reward_forward", "reward_ctrl"][..], Needs::default())
            }
            Kind::Humanoid => {
                need(free_root && nv >= 6, "needs a free joint at qpos[0..7]")?;
                let t: &[&str] = &["reward_survive", "reward_forward", "reward_ctrl", "reward_contact"];
                let n = nq - 2 + nv + 10 * c + 6 * c + (nv - 6) + 6 * c;
                (n, 5, 1000, 2, t, Needs { contact_forces: true, ..Needs::default() })
            }
            Kind::InvertedPendulum => {
                need(nq == 2 && nv == 2, "needs a cart slide and a pole hinge (nq = nv = 2)")?;
                (4, 2, 1000, 0, &["reward_survive"][..], Needs::default())
            }
            Kind::InvertedDoublePendulum => {
                need(nq == 3 && nv == 3, "needs a cart slide and two hinges (nq = nv = 3)")?;
                site = model.site_id("tip").ok_or_else(|| task_err(kind, "no site 'tip'"))?;
                let t: &[&str] = &["reward_survive", "distance_penalty", "velocity_penalty"];
                (9, 5, 1000, 0, t, Needs { constraint_forces: true, ..Needs::default() })
            }
            Kind::Reacher => {
                need(nq == 4 && nv == 4 && nu == 2, "needs two arm joints and two target slides")?;
                body_a = body("fingertip")?;
                body_b = body("target")?;
                (10, 2, 50, 0, &["reward_dist", "reward_ctrl"][..], Needs::default())
            }
            Kind::Pusher => {
                need(nq == 11 && nv == 11 && nu == 7, "needs 7 arm joints and object and goal slides")?;
                body_a = body("tips_arm")?;
                body_b = body("object")?;
                body_c = body("goal")?;
                (23, 5, 100, 0, &["reward_dist", "reward_ctrl", "reward_near"][..], Needs::default())
            }
        };
        let spec = TaskSpec {
            name: kind.id().into(),
            obs_dim,
            frame_skip,
            max_episode_steps,
            carry_dim,
            reward_terms: terms.to_vec(),
            needs,
        };
        Ok(Self { kind, params: Params::v5(kind), body_a, body_b, body_c, site, spec })
    }
}

/// gymnasium's `default_camera_config` of a v5 task, the settings it
/// applies to its free camera (`trackbodyid`, which a free camera
/// ignores, left out): distance (m), look-at point (m), azimuth and
/// elevation (degrees), each when the task sets it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CameraConfig {
    /// Distance from the eye to the look-at point (m).
    pub distance: Option<f64>,
    /// Look-at point (m).
    pub lookat: Option<[f64; 3]>,
    /// Azimuth (degrees).
    pub azimuth: Option<f64>,
    /// Elevation (degrees).
    pub elevation: Option<f64>,
}

impl Kind {
    /// The task's `default_camera_config` as gymnasium's `*_v5.py` passes
    /// it (Inverted Double Pendulum and Reacher set none that a free camera uses).
    pub fn camera_config(self) -> CameraConfig {
        let d = |x: f64| CameraConfig { distance: Some(x), ..Default::default() };
        match self {
            Kind::Ant | Kind::HalfCheetah | Kind::Pusher => d(4.0),
            Kind::Humanoid => CameraConfig { lookat: Some([0.0, 0.0, 2.0]), elevation: Some(-20.0), ..d(4.0) },
            Kind::InvertedPendulum => d(2.04),
            Kind::InvertedDoublePendulum | Kind::Reacher => CameraConfig::default(),
        }
    }

    /// The camera gymnasium renders the task with, placed at the state
    /// whose kinematics `data` holds (gymnasium places it at the first
    /// render): a free camera looking at the median of the geom positions
    /// (per axis), the model's extent away ([`Model::statistic`] at qpos0),
    /// azimuth 90 and elevation −45 degrees, each overridden by
    /// [`Self::camera_config`].
    pub fn default_camera<T: Real>(self, model: &Model, data: &crate::dynamics::Data<T>) -> crate::render::FreeCamera {
        let mut lookat = [0.0; 3];
        for (i, l) in lookat.iter_mut().enumerate() {
            let mut v: Vec<f64> = data.geom_xpos.iter().map(|p| p.to_array()[i].f64()).collect();
            v.sort_by(f64::total_cmp);
            let n = v.len();
            *l = match n {
                0 => 0.0,
                _ if n % 2 == 1 => v[n / 2],
                _ => 0.5 * (v[n / 2 - 1] + v[n / 2]),
            };
        }
        let mut d0 = crate::dynamics::Data::<f64>::new(model);
        d0.q.copy_from_slice(&model.qpos0);
        crate::dynamics::kinematics(model, &mut d0);
        let (_, extent) = model.statistic(&d0);
        let c = self.camera_config();
        crate::render::FreeCamera {
            lookat: c.lookat.unwrap_or(lookat),
            distance: c.distance.unwrap_or(extent),
            azimuth: c.azimuth.unwrap_or(90.0),
            elevation: c.elevation.unwrap_or(-45.0),
        }
    }
}

/// The model of `kind` from the folder of the shared gymnasium models
/// (`…/models/gymnasium`); for Pusher-v5, `pusher.xml` with gymnasium's v5
/// edits (see the [module notes](self)).
pub fn load_model(kind: Kind, models_dir: &Path) -> Result<Model, RlError> {
    let path = models_dir.join(kind.model_file());
    if kind != Kind::Pusher {
        return Ok(Model::from_mjcf_file(&path)?);
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| crate::model::ModelError::Io { path: path.display().to_string(), message: e.to_string() })?;
    let v5 = pusher_v5_mjcf(&text).map_err(|m| task_err(kind, format!("{}: {m}", path.display())))?;
    Ok(Model::from_mjcf_str(&v5)?)
}

/// gymnasium's pusher_v5.xml from the text of pusher.xml: the object's
/// sphere commented out, its cylinder 1000× denser. Errs when the
/// object's geoms are not gymnasium's.
pub(crate) fn pusher_v5_mjcf(text: &str) -> Result<String, String> {
    let sphere = r#"<geom rgba="1 1 1 0" type="sphere" size="0.05 0.05 0.05" density="0.00001" conaffinity="0"/>"#;
    let cylinder =
        r#"<geom rgba="1 1 1 1" type="cylinder" size="0.05 0.05 0.05" density="0.00001" contype="1" conaffinity="0"/>"#;
    if !text.contains(sphere) || !text.contains(cylinder) {
        return Err("the object's geoms are not gymnasium's (cannot derive Pusher-v5)".into());
    }
    Ok(text.replace(sphere, "").replace(cylinder, &cylinder.replace(r#"density="0.00001""#, r#"density="0.01""#)))
}

/// The task named `name` (gymnasium id or short name) and its model, from
/// the folder of the shared gymnasium models.
pub fn make(name: &str, models_dir: &Path) -> Result<(Arc<Model>, Arc<Builtin>), RlError> {
    let kind = Kind::parse(name)?;
    let model = Arc::new(load_model(kind, models_dir)?);
    let task = Arc::new(Builtin::new(kind, &model)?);
    Ok((model, task))
}

fn sum_sq(x: &[f64]) -> f64 {
    x.iter().map(|a| a * a).sum()
}

fn all_finite(x: &[f64]) -> bool {
    x.iter().all(|v| v.is_finite())
}

impl Builtin {
    /// Appends the contact-force rows of bodies 1.. (clipped to `range` when
    /// given) to `out` from index `k`; returns the next index and Σ entry².
    fn contact_rows(&self, s: &EnvState, out: &mut [f64], mut k: usize, range: Option<[f64; 2]>) -> (usize, f64) {
        let mut coms = TreeComs::new();
        let mut sq = 0.0;
        for b in 1..s.model.bodies.len() {
            let row = cfrc_ext(&s.body_wrench[b * 6..b * 6 + 6], coms.of(s.model, s.data, b));
            for x in row {
                let x = range.map_or(x, |[lo, hi]| x.clamp(lo, hi));
                sq += x * x;
                if k < out.len() {
                    out[k] = x;
                }
                k += 1;
            }
        }
        (k, sq)
    }

    fn contact_cost(&self, s: &EnvState) -> f64 {
        let range = (self.kind == Kind::Ant).then_some(self.params.contact_force_range);
        let (_, sq) = self.contact_rows(s, &mut [], 0, range);
        (self.params.contact_cost_weight * sq).min(self.params.contact_cost_max)
    }

    fn healthy_z(&self, z: f64) -> bool {
        let [lo, hi] = self.params.healthy_z_range;
        match self.kind {
            // Humanoid's range is open, Ant's closed (as in gymnasium).
            Kind::Humanoid => lo < z && z < hi,
            _ => lo <= z && z <= hi,
        }
    }
}

impl Task for Builtin {
    fn spec(&self) -> &TaskSpec {
        &self.spec
    }

    fn builtin(&self) -> Option<&Builtin> {
        Some(self)
    }

    fn reset(&self, rng: &mut EnvRng, qpos: &mut [f64], qvel: &mut [f64]) {
        let scale = self.params.reset_noise_scale;
        let (nq, nv) = (qpos.len(), qvel.len());
        match self.kind {
            Kind::Ant | Kind::HalfCheetah | Kind::InvertedDoublePendulum => {
                rng.add_uniform(qpos, scale);
                rng.add_normal(qvel, scale);
            }
            Kind::Humanoid | Kind::InvertedPendulum => {
                rng.add_uniform(qpos, scale);
                rng.add_uniform(qvel, scale);
            }
            Kind::Reacher => {
                rng.add_uniform(qpos, 0.1);
                let goal = loop {
                    let g = [rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2)];
                    if (g[0] * g[0] + g[1] * g[1]).sqrt() < 0.2 {
                        break g;
                    }
                };
                qpos[nq - 2..].copy_from_slice(&goal);
                rng.add_uniform(qvel, 0.005);
                qvel[nv - 2..].fill(0.0);
            }
            Kind::Pusher => {
                // The goal stays at the origin; the cylinder starts at least 0.17 m from it.
                let cylinder = loop {
                    let c = [rng.uniform(-0.3, 0.0), rng.uniform(-0.2, 0.2)];
                    if (c[0] * c[0] + c[1] * c[1]).sqrt() > 0.17 {
                        break c;
                    }
                };
                qpos[nq - 4..nq - 2].copy_from_slice(&cylinder);
                qpos[nq - 2..].fill(0.0);
                rng.add_uniform(qvel, 0.005);
                qvel[nv - 4..].fill(0.0);
            }
        }
    }

    fn observe(&self, s: &EnvState, obs: &mut [f64]) {
        let (q, v) = (&s.data.q[..], &s.data.v[..]);
        let mut k = 0;
        let mut put = |x: f64| {
            obs[k] = x;
            k += 1;
        };
        match self.kind {
            Kind::Ant => {
                q[2..].iter().chain(v).for_each(|&x| put(x));
                let n = q.len() - 2 + v.len();
                self.contact_rows(s, obs, n, Some(self.params.contact_force_range));
            }
            Kind::HalfCheetah => q[1..].iter().chain(v).for_each(|&x| put(x)),
            Kind::Humanoid => {
                q[2..].iter().chain(v).for_each(|&x| put(x));
                let mut coms = TreeComs::new();
                let nb = s.model.bodies.len();
                for b in 1..nb {
                    cinert(s.data, b, coms.of(s.model, s.data, b)).into_iter().for_each(&mut put);
                }
                for b in 1..nb {
                    cvel(s.data, b, coms.of(s.model, s.data, b)).into_iter().for_each(&mut put);
                }
                let n = v.len() - 6;
                qfrc_actuator(s.model, s.data, s.ctrl, 6, &mut obs[k..k + n]);
                self.contact_rows(s, obs, k + n, None);
            }
            Kind::InvertedPendulum => q.iter().chain(v).for_each(|&x| put(x)),
            Kind::InvertedDoublePendulum => {
                put(q[0]);
                q[1..].iter().for_each(|x| put(x.sin()));
                q[1..].iter().for_each(|x| put(x.cos()));
                v.iter().for_each(|x| put(x.clamp(-10.0, 10.0)));
                put(s.qfrc_constraint[0].clamp(-10.0, 10.0));
            }
            Kind::Reacher => {
                put(q[0].cos());
                put(q[1].cos());
                put(q[0].sin());
                put(q[1].sin());
                q[2..].iter().chain(&v[..2]).for_each(|&x| put(x));
                let d = s.data.xpos[self.body_a] - s.data.xpos[self.body_b];
                put(d.x);
                put(d.y);
            }
            Kind::Pusher => {
                q[..7].iter().chain(&v[..7]).for_each(|&x| put(x));
                for b in [self.body_a, self.body_b, self.body_c] {
                    s.data.xpos[b].to_array().into_iter().for_each(&mut put);
                }
            }
        }
    }

    fn carry(&self, s: &EnvState, carry: &mut [f64]) {
        match self.kind {
            Kind::Ant => {
                let p = s.data.xpos[self.body_a];
                carry.copy_from_slice(&[p.x, p.y]);
            }
            Kind::HalfCheetah => carry[0] = s.data.q[0],
            Kind::Humanoid => {
                let c = mass_center(s.model, s.data);
                carry.copy_from_slice(&[c.x, c.y]);
            }
            _ => {}
        }
    }

    fn reward(&self, s: &EnvState, carry: &[f64], terms: &mut [f64]) -> (f64, bool) {
        let p = &self.params;
        let (q, v) = (&s.data.q[..], &s.data.v[..]);
        let ctrl_cost = p.ctrl_cost_weight * sum_sq(s.ctrl);
        match self.kind {
            Kind::Ant => {
                let forward = p.forward_reward_weight * (s.data.xpos[self.body_a].x - carry[0]) / s.dt;
                let healthy = all_finite(q) && all_finite(v) && self.healthy_z(q[2]);
                let survive = if healthy { p.healthy_reward } else { 0.0 };
                let contact = self.contact_cost(s);
                terms.copy_from_slice(&[forward, -ctrl_cost, -contact, survive]);
                (forward + survive - ctrl_cost - contact, !healthy && p.terminate_when_unhealthy)
            }
            Kind::HalfCheetah => {
                let forward = p.forward_reward_weight * (q[0] - carry[0]) / s.dt;
                terms.copy_from_slice(&[forward, -ctrl_cost]);
                (forward - ctrl_cost, false)
            }
            Kind::Humanoid => {
                let forward = p.forward_reward_weight * (mass_center(s.model, s.data).x - carry[0]) / s.dt;
                let healthy = self.healthy_z(q[2]);
                let survive = if healthy { p.healthy_reward } else { 0.0 };
                let contact = self.contact_cost(s);
                terms.copy_from_slice(&[survive, forward, -ctrl_cost, -contact]);
                (forward + survive - ctrl_cost - contact, !healthy && p.terminate_when_unhealthy)
            }
            Kind::InvertedPendulum => {
                let terminated = !(all_finite(q) && all_finite(v)) || q[1].abs() > 0.2;
                let r = if terminated { 0.0 } else { 1.0 };
                terms[0] = r;
                (r, terminated)
            }
            Kind::InvertedDoublePendulum => {
                let tip = s.data.site_xpos[self.site];
                let (x, y) = (tip.x, tip.z);
                let terminated = y <= 1.0;
                let dist = 0.01 * x * x + (y - 2.0) * (y - 2.0);
                let vel = 1e-3 * v[1] * v[1] + 5e-3 * v[2] * v[2];
                let alive = if terminated { 0.0 } else { p.healthy_reward };
                terms.copy_from_slice(&[alive, -dist, -vel]);
                (alive - dist - vel, terminated)
            }
            Kind::Reacher => {
                let dist = -p.dist_weight * (s.data.xpos[self.body_a] - s.data.xpos[self.body_b]).norm();
                terms.copy_from_slice(&[dist, -ctrl_cost]);
                (dist - ctrl_cost, false)
            }
            Kind::Pusher => {
                let x = |b: usize| s.data.xpos[b];
                let near = -p.near_weight * (x(self.body_b) - x(self.body_a)).norm();
                let dist = -p.dist_weight * (x(self.body_b) - x(self.body_c)).norm();
                terms.copy_from_slice(&[dist, -ctrl_cost, near]);
                (dist - ctrl_cost + near, false)
            }
        }
    }
}
