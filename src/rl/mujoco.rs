//! MuJoCo's conventions for the quantities gymnasium's tasks observe,
//! computed from cenic's state.
//!
//! MuJoCo expresses body inertias (`cinert`), velocities (`cvel`) and
//! external forces (`cfrc_ext`) "com-based": as spatial quantities about
//! the centre of mass of the body's kinematic tree (`subtree_com` of the
//! body's root), world axes, rotational part first. cenic's own
//! [`Data::cinert`] and [`Data::cvel`] use the tree root's origin instead;
//! the functions here shift them.

use crate::dynamics::Data;
use crate::math::Vec3;
use crate::model::{ActuatorKind, Model};

/// Centre of mass (m, world) of the kinematic tree rooted at body `root`
/// (MuJoCo's `subtree_com[root]`), from the spatial inertias about the
/// root's origin; the origin itself for a massless tree.
pub fn tree_com(model: &Model, data: &Data<f64>, root: usize) -> Vec3<f64> {
    let (mut m, mut h) = (0.0, Vec3::zero());
    for (b, body) in model.bodies.iter().enumerate().skip(1) {
        if body.root == root {
            m += data.cinert[b].m;
            h += data.cinert[b].h;
        }
    }
    let origin = data.body_ref[root];
    if m > 0.0 { origin + h / m } else { origin }
}

/// The centre of mass of each body's tree, computed once per tree.
#[derive(Clone, Copy, Debug)]
pub struct TreeComs {
    root: usize,
    com: Vec3<f64>,
}

impl TreeComs {
    /// Empty cache.
    pub fn new() -> Self {
        Self { root: usize::MAX, com: Vec3::zero() }
    }

    /// The centre of mass of body `b`'s tree (cached while consecutive
    /// bodies share a tree, as they do in the gymnasium models).
    pub fn of(&mut self, model: &Model, data: &Data<f64>, b: usize) -> Vec3<f64> {
        let root = model.bodies[b].root;
        if root != self.root {
            self.root = root;
            self.com = tree_com(model, data, root);
        }
        self.com
    }
}

impl Default for TreeComs {
    fn default() -> Self {
        Self::new()
    }
}

/// MuJoCo's `cinert` row of body `b`: [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] about
/// the tree's centre of mass `p` (kg·m², world axes), m·(xipos − p) (kg·m), m (kg).
pub fn cinert(data: &Data<f64>, b: usize, p: Vec3<f64>) -> [f64; 10] {
    let ci = &data.cinert[b];
    let m = ci.m;
    // cenic's inertia is about the root origin r: shift to the centre of mass, then to p.
    let r = data.body_ref[b];
    let c = data.xipos[b];
    let (d, e) = (c - r, c - p);
    let i = |a: usize, k: usize| {
        let delta = if a == k { 1.0 } else { 0.0 };
        let (da, dk, ea, ek) = (d.to_array()[a], d.to_array()[k], e.to_array()[a], e.to_array()[k]);
        ci.i.m[a][k] - m * (d.norm2() * delta - da * dk) + m * (e.norm2() * delta - ea * ek)
    };
    [i(0, 0), i(1, 1), i(2, 2), i(0, 1), i(0, 2), i(1, 2), m * e.x, m * e.y, m * e.z, m]
}

/// MuJoCo's `cvel` row of body `b`: [angular velocity (rad/s), linear
/// velocity of the body-fixed point at `p` (m/s)], world axes.
pub fn cvel(data: &Data<f64>, b: usize, p: Vec3<f64>) -> [f64; 6] {
    let v = data.cvel[b];
    let lin = v.lin + v.ang.cross(p - data.body_ref[b]);
    [v.ang.x, v.ang.y, v.ang.z, lin.x, lin.y, lin.z]
}

/// MuJoCo's `cfrc_ext` row from a body wrench [torque about the world
/// origin, force] (see [`super::EnvState::body_wrench`]): [torque about
/// `p` (N·m), force (N)].
pub fn cfrc_ext(wrench: &[f64], p: Vec3<f64>) -> [f64; 6] {
    let f = Vec3::new(wrench[3], wrench[4], wrench[5]);
    let tau = Vec3::new(wrench[0], wrench[1], wrench[2]) - p.cross(f);
    [tau.x, tau.y, tau.z, f.x, f.y, f.z]
}

/// MuJoCo's `qfrc_actuator` for dofs `first..first + out.len()`: each
/// actuator's generalized force at the state for controls `ctrl` (already
/// within `ctrlrange`): gear × clamp(ctrl, forcerange) for motors, the
/// servo law for position actuators (explicit, at the current q and v),
/// force × moment for general actuators (moments of the last step's
/// transmission stage).
pub fn qfrc_actuator(model: &Model, data: &Data<f64>, ctrl: &[f64], first: usize, out: &mut [f64]) {
    out.fill(0.0);
    for (a, &u) in model.actuators.iter().zip(ctrl) {
        let j = &model.joints[a.joint];
        let (qa, da) = (j.qpos_adr, j.dof_adr);
        let Some(slot) = da.checked_sub(first).and_then(|k| out.get_mut(k)) else { continue };
        *slot += match a.kind {
            ActuatorKind::Motor { gear, force_range } => {
                let f = force_range.map_or(u, |[lo, hi]| u.clamp(lo, hi));
                gear * f
            }
            ActuatorKind::Position { kp, kd, effort_limit } => {
                (kp * (u - data.q[qa]) - kd * data.v[da]).clamp(-effort_limit, effort_limit)
            }
            // General actuators may span several dofs (tendon and site
            // transmissions): force × moment row, added below.
            ActuatorKind::General(_) => 0.0,
        };
    }
    let nv = model.nv;
    for (a, act) in model.actuators.iter().enumerate() {
        if !matches!(act.kind, ActuatorKind::General(_)) {
            continue;
        }
        let input = crate::dynamics::SensorInput { ctrl, target_velocity: &[], qacc: &[], contacts: &[] };
        let f = crate::dynamics::actuator_force(model, data, a, &input);
        let moment = &data.actuator_moment[a * nv..(a + 1) * nv];
        for (o, m) in out.iter_mut().zip(&moment[first.min(nv)..]) {
            *o += m * f;
        }
    }
}

/// Centre of mass of the whole model (m, world), MuJoCo's mass-weighted `xipos`.
pub fn mass_center(model: &Model, data: &Data<f64>) -> Vec3<f64> {
    let (mut m, mut h) = (0.0, Vec3::zero());
    for b in 1..model.bodies.len() {
        m += data.cinert[b].m;
        h += data.xipos[b] * data.cinert[b].m;
    }
    if m > 0.0 { h / m } else { Vec3::zero() }
}
