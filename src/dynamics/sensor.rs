//! Sensor values ([`crate::model::Sensor`]) into `Data::sensordata`, with
//! MuJoCo's definitions (MuJoCo XML reference, "sensor").

use super::{Data, point_velocity};
use crate::math::{Motion, Quat, Real, Vec3, v3};
use crate::model::{ActuatorKind, FrameObject, GeomKind, Model, SensorKind};

/// A contact's normal force for touch sensors.
#[derive(Clone, Copy, Debug)]
pub struct ContactForce<T> {
    /// The bodies in contact.
    pub body: [usize; 2],
    /// Contact point, world (m).
    pub pos: Vec3<T>,
    /// Normal force (N, ≥ 0 when pushing).
    pub normal: T,
}

/// What sensors read besides the state: the controls and servo target
/// velocities (actuator forces), the generalized acceleration of the last
/// step (accelerometers) and the contact forces of the last contact solve
/// (touch sensors).
#[derive(Clone, Copy, Debug)]
pub struct SensorInput<'a, T> {
    /// Controls (nu).
    pub ctrl: &'a [T],
    /// Servo target velocities (nu; empty: zero).
    pub target_velocity: &'a [T],
    /// Generalized acceleration (nv; m/s², rad/s²).
    pub qacc: &'a [T],
    /// Contact normal forces.
    pub contacts: &'a [ContactForce<T>],
}

/// Fills `data.sensordata` (nsensordata) at the state in `data` (after
/// [`super::kinematics`], [`super::velocities`] and
/// [`super::transmissions`]). Sensors switched off by the `sensor` flag
/// leave zeros; unsupported sensor types write NaN.
pub fn sensors<T: Real>(model: &Model, data: &mut Data<T>, input: SensorInput<'_, T>) {
    let mut out = std::mem::take(&mut data.sensordata);
    out.iter_mut().for_each(|x| *x = T::zero());
    if model.options.flags.sensor {
        let cacc = accelerations(model, data, input.qacc);
        for s in &model.sensors {
            let dst = &mut out[s.adr..s.adr + s.kind.dim()];
            write_sensor(model, data, &input, &cacc, &s.kind, dst);
            if s.cutoff > 0.0 && !matches!(s.kind, SensorKind::FrameQuat(..)) {
                let c = T::c(s.cutoff);
                dst.iter_mut().for_each(|x| *x = x.max(-c).min(c));
            }
        }
        data.cacc = cacc;
    }
    data.sensordata = out;
}

fn write_sensor<T: Real>(
    model: &Model,
    data: &Data<T>,
    input: &SensorInput<'_, T>,
    cacc: &[Motion<T>],
    kind: &SensorKind,
    dst: &mut [T],
) {
    let nv = model.nv;
    let put3 = |dst: &mut [T], v: Vec3<T>| dst.copy_from_slice(&v.to_array());
    match *kind {
        SensorKind::JointPos(j) => dst[0] = data.q[model.joints[j].qpos_adr],
        SensorKind::JointVel(j) => dst[0] = data.v[model.joints[j].dof_adr],
        SensorKind::TendonPos(t) => dst[0] = data.ten_length[t],
        SensorKind::TendonVel(t) => dst[0] = dot(&data.ten_jac[t * nv..(t + 1) * nv], &data.v),
        SensorKind::ActuatorPos(a) => dst[0] = data.actuator_length[a],
        SensorKind::ActuatorVel(a) => dst[0] = dot(&data.actuator_moment[a * nv..(a + 1) * nv], &data.v),
        SensorKind::ActuatorFrc(a) => dst[0] = actuator_force(model, data, a, input),
        SensorKind::FramePos(o, r) => {
            let (p, _) = frame(model, data, o);
            put3(dst, relative(model, data, r, p, |q, x| q.inv_rotate(x)));
        }
        SensorKind::FrameQuat(o, r) => {
            let (_, q) = frame(model, data, o);
            let q = match r {
                Some(r) => frame(model, data, r).1.conj() * q,
                None => q,
            };
            dst.copy_from_slice(&q.normalize().to_array());
        }
        SensorKind::FrameXAxis(o, r) | SensorKind::FrameYAxis(o, r) | SensorKind::FrameZAxis(o, r) => {
            let i = match kind {
                SensorKind::FrameXAxis(..) => 0,
                SensorKind::FrameYAxis(..) => 1,
                _ => 2,
            };
            let axis = frame(model, data, o).1.rotate(Vec3::unit(i));
            let axis = match r {
                Some(r) => frame(model, data, r).1.inv_rotate(axis),
                None => axis,
            };
            put3(dst, axis);
        }
        SensorKind::FrameLinVel(o) => {
            let (p, _) = frame(model, data, o);
            put3(dst, point_velocity(data, object_body(model, o), p));
        }
        SensorKind::FrameAngVel(o) => put3(dst, data.cvel[object_body(model, o)].ang),
        SensorKind::SubtreeCom(b) => put3(dst, subtree_com(model, data, b)),
        SensorKind::Gyro(s) => put3(dst, data.site_xquat[s].inv_rotate(data.cvel[model.sites[s].body].ang)),
        SensorKind::Velocimeter(s) => {
            let v = point_velocity(data, model.sites[s].body, data.site_xpos[s]);
            put3(dst, data.site_xquat[s].inv_rotate(v));
        }
        SensorKind::Accelerometer(s) => {
            // Classical acceleration of the site point (gravity as an upward
            // acceleration of the world): a = α × r + a_ref + ω × v_p.
            let b = model.sites[s].body;
            let r = data.site_xpos[s] - data.body_ref[b];
            let vel = data.cvel[b];
            let a = cacc[b].point_velocity(r) + vel.ang.cross(vel.point_velocity(r));
            put3(dst, data.site_xquat[s].inv_rotate(a));
        }
        SensorKind::Touch(s) => {
            let site = &model.sites[s];
            let mut sum = T::zero();
            for c in input.contacts {
                if (c.body[0] == site.body || c.body[1] == site.body) && inside_site(model, data, s, c.pos) {
                    sum += c.normal.max(T::zero());
                }
            }
            dst[0] = sum;
        }
        SensorKind::Unsupported { .. } => dst.iter_mut().for_each(|x| *x = T::nan()),
    }
}

/// Spatial accelerations of the bodies about their reference points for
/// the generalized acceleration `qacc`, gravity as an upward acceleration
/// of the world (MuJoCo's `cacc`), in the storage of `data.cacc` (taken
/// out; the caller puts it back).
fn accelerations<T: Real>(model: &Model, data: &mut Data<T>, qacc: &[T]) -> Vec<Motion<T>> {
    let mut cacc = std::mem::take(&mut data.cacc);
    if model.sensors.iter().all(|s| !matches!(s.kind, SensorKind::Accelerometer(_))) {
        return cacc;
    }
    cacc[0] = Motion::new(Vec3::zero(), -v3::<T>(model.options.gravity));
    for (bi, body) in model.bodies.iter().enumerate().skip(1) {
        let mut a = cacc[body.parent];
        for k in body.dof_adr..body.dof_adr + body.dof_num {
            let acc = qacc.get(k).copied().unwrap_or(T::zero());
            a += data.cdof_dot[k].scale(data.v[k]) + data.cdof[k].scale(acc);
        }
        cacc[bi] = a;
    }
    cacc
}

/// The force of actuator `a` (before its transmission) at the current
/// state: MuJoCo's `actuator_force`.
pub fn actuator_force<T: Real>(model: &Model, data: &Data<T>, a: usize, input: &SensorInput<'_, T>) -> T {
    let flags = model.options.flags;
    if !flags.actuation {
        return T::zero();
    }
    let act = &model.actuators[a];
    let mut u = input.ctrl.get(a).copied().unwrap_or(T::zero());
    if let Some([lo, hi]) = act.ctrl_range.filter(|_| flags.clampctrl) {
        u = u.max(T::c(lo)).min(T::c(hi));
    }
    let clamp = |f: T, r: Option<[f64; 2]>| match r {
        Some([lo, hi]) => f.max(T::c(lo)).min(T::c(hi)),
        None => f,
    };
    match act.kind {
        ActuatorKind::Motor { force_range, .. } => clamp(u, force_range),
        ActuatorKind::Position { kp, kd, effort_limit } => {
            let j = &model.joints[act.joint];
            let v_ref = input.target_velocity.get(a).copied().unwrap_or(T::zero());
            let f = T::c(kp) * (u - data.q[j.qpos_adr]) + T::c(kd) * (v_ref - data.v[j.dof_adr]);
            let e = T::c(effort_limit);
            f.max(-e).min(e)
        }
        ActuatorKind::General(g) => {
            // The length and its rate include the gear.
            let input = g.act_adr.map(|k| data.act[k]).unwrap_or(u);
            let nv = model.nv;
            let len = data.actuator_length[a];
            let rate = dot(&data.actuator_moment[a * nv..(a + 1) * nv], &data.v);
            let [g0, g1, g2] = g.gain.map(T::c);
            let [b0, b1, b2] = g.bias.map(T::c);
            clamp((g0 + g1 * len + g2 * rate) * input + b0 + b1 * len + b2 * rate, g.force_range)
        }
    }
}

fn dot<T: Real>(a: &[T], b: &[T]) -> T {
    let mut s = T::zero();
    for (x, y) in a.iter().zip(b) {
        s += *x * *y;
    }
    s
}

/// Position and orientation of a frame in the world.
fn frame<T: Real>(model: &Model, data: &Data<T>, o: FrameObject) -> (Vec3<T>, Quat<T>) {
    match o {
        FrameObject::Body(b) => (data.xipos[b], data.xquat[b] * Quat::from_array(model.bodies[b].iquat.map(T::c))),
        FrameObject::XBody(b) => (data.xpos[b], data.xquat[b]),
        FrameObject::Geom(g) => {
            let geom = &model.geoms[g];
            (data.geom_xpos[g], data.xquat[geom.body] * Quat::from_array(geom.quat.map(T::c)))
        }
        FrameObject::Site(s) => (data.site_xpos[s], data.site_xquat[s]),
    }
}

/// A world point seen from the reference frame `r` (unchanged without one).
fn relative<T: Real>(
    model: &Model,
    data: &Data<T>,
    r: Option<FrameObject>,
    p: Vec3<T>,
    inv: impl Fn(Quat<T>, Vec3<T>) -> Vec3<T>,
) -> Vec3<T> {
    match r {
        Some(r) => {
            let (rp, rq) = frame(model, data, r);
            inv(rq, p - rp)
        }
        None => p,
    }
}

fn object_body(model: &Model, o: FrameObject) -> usize {
    match o {
        FrameObject::Body(b) | FrameObject::XBody(b) => b,
        FrameObject::Geom(g) => model.geoms[g].body,
        FrameObject::Site(s) => model.sites[s].body,
    }
}

/// Centre of mass of the subtree rooted at `root` (m; its own centre of mass when massless).
pub fn subtree_com<T: Real>(model: &Model, data: &Data<T>, root: usize) -> Vec3<T> {
    let (mut m, mut c) = (T::zero(), Vec3::zero());
    for (b, body) in model.bodies.iter().enumerate() {
        // Parents precede children: b is in the subtree when an ancestor is `root`.
        let mut a = b;
        while a != root && a != 0 {
            a = model.bodies[a].parent;
        }
        if a == root && body.mass > 0.0 {
            let mb = T::c(body.mass);
            m += mb;
            c += data.xipos[b] * mb;
        }
    }
    if m > T::zero() { c / m } else { data.xipos[root] }
}

/// Whether world point `p` lies inside site `s`'s volume (its type and size).
fn inside_site<T: Real>(model: &Model, data: &Data<T>, s: usize, p: Vec3<T>) -> bool {
    let site = &model.sites[s];
    let x = data.site_xquat[s].inv_rotate(p - data.site_xpos[s]);
    let [a, b, c] = site.size.map(T::c);
    let one = T::one();
    match site.kind {
        GeomKind::Sphere => x.norm() <= a,
        GeomKind::Capsule => {
            let z = x.z.max(-b).min(b);
            (x - Vec3::new(T::zero(), T::zero(), z)).norm() <= a
        }
        GeomKind::Cylinder => x.z.abs() <= b && (x.x * x.x + x.y * x.y).sqrt() <= a,
        GeomKind::Ellipsoid => (x.x / a) * (x.x / a) + (x.y / b) * (x.y / b) + (x.z / c) * (x.z / c) <= one,
        _ => x.x.abs() <= a && x.y.abs() <= b && x.z.abs() <= c,
    }
}
