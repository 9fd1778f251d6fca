// Sensors on the device: WGSL twin of src/dynamics/sensor.rs (sensors,
// write_sensor, actuator_force, frame, subtree_com, inside_site). Host
// side: src/gpu/sensors.rs (GpuSensors), which also generates the SENSOR_*
// and FRAME_* constants composed after this file. icf_cost.wgsl is composed
// in front for normal_potential (touch sensors).
//
// Reads a GpuBatch's buffers as they stand after an advance, through the
// generated field accessors (either Layout): q, v and the kinematics and
// body velocities, which the host re-runs at the final state before
// `sensors`; the controls and servo targets (actuator forces); and each
// world's last accepted solve (icf_world, icf_vec, icf_con, icf_jac,
// contacts), which finished worlds keep until their next advance: its
// velocity change (accelerometers) and contact impulses (touch sensors).

/// Sizes and switches (uniform; src/gpu/sensors.rs GpuSensorParams).
struct SensorParams {
    /// Entries of sensor_defs.
    nsensor: u32,
    /// Values per world in sensordata.
    nsensordata: u32,
    /// 0 when the model's `sensor` flag is off: every value is zero.
    enabled: u32,
    /// The bits of a quiet NaN (the values of SENSOR_UNSUPPORTED): a
    /// constant NaN would be folded or refused by shader compilers.
    nan_bits: u32,
}

/// A sensor (src/gpu/sensors.rs GpuSensor, from model::Sensor).
struct SensorDef {
    /// SENSOR_*.
    kind: u32,
    /// First value in the world's row of sensordata.
    adr: u32,
    /// The object read: joint, tendon, actuator, body or site index; for
    /// frame sensors a frame of kind obj_type (FRAME_*).
    obj: u32,
    obj_type: u32,
    /// Frame sensors: the reference frame (ref_type FRAME_*, NONE without one).
    ref_id: u32,
    ref_type: u32,
    /// Fixed tendons: their terms in sensor_terms[term_adr .. term_adr + term_num].
    term_adr: u32,
    term_num: u32,
    /// Values are clamped to ±cutoff when cutoff > 0 (not quaternions).
    cutoff: f32,
    /// Number of values.
    dim: u32,
    /// Touch sensors: the site's shape (GEOM_*) and size (m).
    site_kind: u32,
    _pad0: u32,
    size: vec3f,
    _pad2: f32,
}

/// One term coef·q of a fixed tendon (src/gpu/sensors.rs GpuSensorTerm).
struct SensorTerm {
    qpos_adr: u32,
    dof_adr: u32,
    coef: f32,
    _pad: u32,
}

// Bindings 10–13: Mesa 22.3's lavapipe crashes compiling this kernel
// (at its first dispatch) when sensor_params is bound after icf_dims (80).
@group(0) @binding(10) var<uniform> sensor_params: SensorParams;
/// (nsensor)
@group(0) @binding(11) var<storage, read> sensor_defs: array<SensorDef>;
/// Fixed-tendon terms of all tendon sensors.
@group(0) @binding(12) var<storage, read> sensor_terms: array<SensorTerm>;
/// Sensor values, world first (nworld, nsensordata): MuJoCo's sensordata per world.
@group(0) @binding(13) var<storage, read_write> sensordata: array<f32>;

/// A frame's origin (m) and orientation (w, x, y, z) in the world.
struct Frame {
    pos: vec3f,
    quat: vec4f,
}

/// sensor.rs frame: a body's inertial frame, a body frame, a geom's or a site's.
fn frame_of(w: u32, ty: u32, id: u32) -> Frame {
    switch ty {
        case FRAME_BODY: {
            let b = body_at(w, id);
            return Frame(unpack3(xipos_get(b)), quat_mul(xquat_get(b), bodies[id].iquat));
        }
        case FRAME_XBODY: {
            let b = body_at(w, id);
            return Frame(unpack3(xpos_get(b)), xquat_get(b));
        }
        case FRAME_GEOM: {
            let g = geoms[id];
            let q = quat_mul(xquat_get(body_at(w, g.body)), g.quat);
            return Frame(unpack3(geom_xpos_get(geom_at(w, id))), q);
        }
        default: {
            // FRAME_SITE
            let s = site_at(w, id);
            return Frame(unpack3(site_xpos_get(s)), site_xquat_get(s));
        }
    }
}

/// sensor.rs object_body: the body a frame moves with.
fn frame_body(ty: u32, id: u32) -> u32 {
    switch ty {
        case FRAME_GEOM: {
            return geoms[id].body;
        }
        case FRAME_SITE: {
            return sites[id].body;
        }
        default: {
            return id;
        }
    }
}

fn inv_rotate(q: vec4f, v: vec3f) -> vec3f {
    return quat_rotate(quat_conj(q), v);
}

/// jacobian.rs point_velocity: velocity of world point p moving with body b.
fn point_velocity(w: u32, b: u32, p: vec3f) -> vec3f {
    let c = unpack_motion(cvel_get(body_at(w, b)));
    return c.lin + cross3(c.ang, p - unpack3(body_ref_get(body_at(w, b))));
}

/// sensor.rs subtree_com: centre of mass of the bodies under `root` (its
/// own centre of mass when massless). Model masses, as on the CPU.
fn subtree_com(w: u32, root: u32) -> vec3f {
    var m = 0.0;
    var c = vec3f(0.0);
    for (var b = 0u; b < dims.nbody; b++) {
        // Parents precede children: b is in the subtree when an ancestor is `root`.
        var a = b;
        while (a != root && a != 0u) {
            a = bodies[a].parent;
        }
        let mb = bodies[b].mass;
        if (a == root && mb > 0.0) {
            m += mb;
            c += unpack3(xipos_get(body_at(w, b))) * mb;
        }
    }
    if (m > 0.0) {
        return c / m;
    }
    return unpack3(xipos_get(body_at(w, root)));
}

/// sensor.rs accelerations: body b's spatial acceleration about its
/// reference point, gravity as an upward acceleration of the world. The
/// tree shares one reference point, so the terms of the dofs on the path
/// to the world add up (summed here leaf first, the CPU's recursion root
/// first: the same terms, rounded in another order).
fn body_acceleration(w: u32, b: u32) -> Motion {
    var acc = motion_zero();
    var a = b;
    while (a != 0u) {
        let body = bodies[a];
        for (var d = body.dof_adr; d < body.dof_adr + body.dof_num; d++) {
            let at = dof_at(w, d);
            acc = motion_add(acc, motion_add(motion_scale(unpack_motion(cdof_dot_get(at)), v_get(at)),
                motion_scale(unpack_motion(cdof_get(at)), qacc(w, d))));
        }
        a = body.parent;
    }
    return motion_add(acc, Motion(vec3f(0.0), -dims.gravity.xyz));
}

/// sensor.rs inside_site: whether world point p lies in the site's volume.
fn inside_site(w: u32, s: SensorDef, p: vec3f) -> bool {
    let at = site_at(w, s.obj);
    let x = inv_rotate(site_xquat_get(at), p - unpack3(site_xpos_get(at)));
    let r = s.size;
    switch s.site_kind {
        case GEOM_SPHERE: {
            return length(x) <= r.x;
        }
        case GEOM_CAPSULE: {
            let z = clamp(x.z, -r.y, r.y);
            return length(x - vec3f(0.0, 0.0, z)) <= r.x;
        }
        case GEOM_CYLINDER: {
            return abs(x.z) <= r.y && sqrt(x.x * x.x + x.y * x.y) <= r.x;
        }
        case GEOM_ELLIPSOID: {
            let e = x / r;
            return dot3(e, e) <= 1.0;
        }
        default: {
            return abs(x.x) <= r.x && abs(x.y) <= r.y && abs(x.z) <= r.z;
        }
    }
}

/// Touch: the normal forces (N, ≥ 0) of the last solve's contacts on the
/// site's body inside its volume, at the solution velocity
/// (Simulator::compute_sensors: impulse · normal / h).
fn touch(w: u32, s: SensorDef) -> f32 {
    let hw = icf_world[w].h;
    if (!(hw > 0.0)) {
        return 0.0;
    }
    let body = sites[s.obj].body;
    let ncon = min(icf_world[w].ncon, dims.ncon);
    var sum = 0.0;
    for (var c = 0u; c < ncon; c++) {
        let k = contacts[con_at(w, c)];
        if ((k.body.x != body && k.body.y != body) || !inside_site(w, s, k.pos)) {
            continue;
        }
        let con = icf_con[con_at(w, c)];
        var vc = vec3f(0.0);
        for (var e = 0u; e < con.jac_len; e++) {
            let j = icf_jac[jac_at(w, c, e)];
            vc += j.col * v_get(dof_at(w, j.dof));
        }
        let impulse = contact_terms(con, hw, vc).impulse;
        sum += max(dot3(impulse, con.normal) / hw, 0.0);
    }
    return sum;
}

/// sensor.rs actuator_force for the actuators the GPU simulates (motors,
/// position servos): the force before the gear, at the current state.
fn actuator_force(w: u32, ai: u32) -> f32 {
    let a = actuators[ai];
    var u = ctrl[w * icf_dims.nu + ai];
    if (a.has_ctrl_range != 0u) {
        u = min(max(u, a.ctrl_lo), a.ctrl_hi);
    }
    if (a.kind == ACT_MOTOR) {
        if (a.has_force_range != 0u) {
            return min(max(u, a.force_lo), a.force_hi);
        }
        return u;
    }
    let v_ref = target_velocity[w * icf_dims.nu + ai];
    let f = a.kp * (u - q_get(q_at(w, a.qpos_adr))) + a.kd * (v_ref - v_get(dof_at(w, a.dof)));
    return min(max(f, -a.effort_limit), a.effort_limit);
}

/// The gear of an actuator's transmission (motor gear, 1 for a servo).
fn actuator_gear(ai: u32) -> f32 {
    let a = actuators[ai];
    if (a.kind == ACT_MOTOR) {
        return a.gear;
    }
    return 1.0;
}

/// Values of one sensor (up to 4) and how many.
struct SensorValue {
    x: vec4f,
    n: u32,
}

fn scalar(x: f32) -> SensorValue {
    return SensorValue(vec4f(x, 0.0, 0.0, 0.0), 1u);
}

fn vector(x: vec3f) -> SensorValue {
    return SensorValue(vec4f(x, 0.0), 3u);
}

/// sensor.rs write_sensor.
fn evaluate(w: u32, s: SensorDef) -> SensorValue {
    switch s.kind {
        case SENSOR_JOINTPOS: {
            return scalar(q_get(q_at(w, joints[s.obj].qpos_adr)));
        }
        case SENSOR_JOINTVEL: {
            return scalar(v_get(dof_at(w, joints[s.obj].dof_adr)));
        }
        case SENSOR_TENDONPOS, SENSOR_TENDONVEL: {
            // Fixed tendons: Σ coef·q and its rate Σ coef·v.
            var x = 0.0;
            for (var t = s.term_adr; t < s.term_adr + s.term_num; t++) {
                let term = sensor_terms[t];
                if (s.kind == SENSOR_TENDONPOS) {
                    x += term.coef * q_get(q_at(w, term.qpos_adr));
                } else {
                    x += term.coef * v_get(dof_at(w, term.dof_adr));
                }
            }
            return scalar(x);
        }
        case SENSOR_ACTUATORPOS: {
            return scalar(actuator_gear(s.obj) * q_get(q_at(w, actuators[s.obj].qpos_adr)));
        }
        case SENSOR_ACTUATORVEL: {
            return scalar(actuator_gear(s.obj) * v_get(dof_at(w, actuators[s.obj].dof)));
        }
        case SENSOR_ACTUATORFRC: {
            return scalar(actuator_force(w, s.obj));
        }
        case SENSOR_FRAMEPOS: {
            let p = frame_of(w, s.obj_type, s.obj).pos;
            if (s.ref_id == NONE) {
                return vector(p);
            }
            let r = frame_of(w, s.ref_type, s.ref_id);
            return vector(inv_rotate(r.quat, p - r.pos));
        }
        case SENSOR_FRAMEQUAT: {
            var q = frame_of(w, s.obj_type, s.obj).quat;
            if (s.ref_id != NONE) {
                q = quat_mul(quat_conj(frame_of(w, s.ref_type, s.ref_id).quat), q);
            }
            return SensorValue(quat_normalize(q), 4u);
        }
        case SENSOR_FRAMEXAXIS, SENSOR_FRAMEYAXIS, SENSOR_FRAMEZAXIS: {
            var e = vec3f(0.0);
            e[s.kind - SENSOR_FRAMEXAXIS] = 1.0;
            var axis = quat_rotate(frame_of(w, s.obj_type, s.obj).quat, e);
            if (s.ref_id != NONE) {
                axis = inv_rotate(frame_of(w, s.ref_type, s.ref_id).quat, axis);
            }
            return vector(axis);
        }
        case SENSOR_FRAMELINVEL: {
            let p = frame_of(w, s.obj_type, s.obj).pos;
            return vector(point_velocity(w, frame_body(s.obj_type, s.obj), p));
        }
        case SENSOR_FRAMEANGVEL: {
            return vector(unpack_motion(cvel_get(body_at(w, frame_body(s.obj_type, s.obj)))).ang);
        }
        case SENSOR_SUBTREECOM: {
            return vector(subtree_com(w, s.obj));
        }
        case SENSOR_GYRO: {
            let at = site_at(w, s.obj);
            let ang = unpack_motion(cvel_get(body_at(w, sites[s.obj].body))).ang;
            return vector(inv_rotate(site_xquat_get(at), ang));
        }
        case SENSOR_VELOCIMETER: {
            let at = site_at(w, s.obj);
            let v = point_velocity(w, sites[s.obj].body, unpack3(site_xpos_get(at)));
            return vector(inv_rotate(site_xquat_get(at), v));
        }
        case SENSOR_ACCELEROMETER: {
            // Classical acceleration of the site point (gravity as an upward
            // acceleration of the world): a = α × r + a_ref + ω × v_p.
            let b = sites[s.obj].body;
            let at = site_at(w, s.obj);
            let r = unpack3(site_xpos_get(at)) - unpack3(body_ref_get(body_at(w, b)));
            let vel = unpack_motion(cvel_get(body_at(w, b)));
            let acc = body_acceleration(w, b);
            let a = acc.lin + cross3(acc.ang, r) + cross3(vel.ang, vel.lin + cross3(vel.ang, r));
            return vector(inv_rotate(site_xquat_get(at), a));
        }
        case SENSOR_TOUCH: {
            return scalar(touch(w, s));
        }
        default: {
            // Not reached: SENSOR_UNSUPPORTED is written by `sensors`.
            return SensorValue(vec4f(0.0), 0u);
        }
    }
}

/// Every sensor of every world at its current state (kinematics and
/// velocities evaluated): one thread per (sensor, world), consecutive
/// threads on consecutive worlds of one sensor (same branch, and the
/// field-major layout's coalesced reads).
/// Reads: sensor_params, sensor_defs, sensor_terms, q, v, the kinematics (xpos, xquat, xipos, site_xpos, site_xquat, geom_xpos, body_ref, cvel, cdof, cdof_dot), ctrl, target_velocity, actuators, contacts, icf_world, icf_con, icf_jac, icf_vec; writes: sensordata.
@compute @workgroup_size(WORKGROUP_SIZE)
fn sensors(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let t = thread_index(gid, nwg);
    if (t >= dims.nworld * sensor_params.nsensor) {
        return;
    }
    let w = t % dims.nworld;
    let s = sensor_defs[t / dims.nworld];
    let base = w * sensor_params.nsensordata + s.adr;
    if (sensor_params.enabled == 0u || s.kind == SENSOR_UNSUPPORTED) {
        // The `sensor` flag off: zeros; a sensor type cenic does not
        // compute: NaN (both as the CPU's dynamics::sensors).
        var x = 0.0;
        if (sensor_params.enabled != 0u) {
            x = bitcast<f32>(sensor_params.nan_bits);
        }
        for (var k = 0u; k < s.dim; k++) {
            sensordata[base + k] = x;
        }
        return;
    }
    let value = evaluate(w, s);
    for (var k = 0u; k < min(value.n, s.dim); k++) {
        var x = value.x[k];
        if (s.cutoff > 0.0 && s.kind != SENSOR_FRAMEQUAT) {
            x = min(max(x, -s.cutoff), s.cutoff);
        }
        sensordata[base + k] = x;
    }
}
