// The built-in gymnasium v5 tasks on the device: WGSL twin of
// src/rl/tasks.rs (Builtin: observe, reward, carry) and of
// Simulator::constraint_forces (src/integrator/mod.rs). Host side:
// src/gpu/rl.rs (DeviceEvaluator). icf_cost.wgsl is composed in front for
// contact_terms and limit_terms.
//
// Reads the batch's buffers as they stand after an advance (through the
// generated field accessors and the *_at indices, in either Layout): the
// state q, v; the kinematics and body velocities, which
// the host re-runs at the final state before rl_observe; and, for the
// forces, the last accepted solve of each world (icf_world, icf_con,
// icf_jac, icf_limit, contacts), which idle worlds keep untouched.

/// Task settings (uniform; src/gpu/rl.rs RlParams, from rl::tasks::Builtin).
struct RlParams {
    /// rl::tasks::Kind as an index (TASK_*).
    kind: u32,
    obs_dim: u32,
    /// Floats per world in rl_out: obs_dim + 2 + number of reward terms.
    stride: u32,
    carry_dim: u32,
    /// 1: after a step (reward, terms, termination, carry); 0: after resets (obs, carry).
    step: u32,
    /// 1: the task reads the forces of rl_force.
    forces: u32,
    body_a: u32,
    body_b: u32,
    body_c: u32,
    site: u32,
    terminate_when_unhealthy: u32,
    nu: u32,
    /// Environment step (s).
    dt: f32,
    forward_reward_weight: f32,
    ctrl_cost_weight: f32,
    contact_cost_weight: f32,
    contact_cost_max: f32,
    healthy_reward: f32,
    healthy_z_lo: f32,
    healthy_z_hi: f32,
    contact_force_lo: f32,
    contact_force_hi: f32,
    dist_weight: f32,
    near_weight: f32,
}

const TASK_ANT: u32 = 0u;
const TASK_HALF_CHEETAH: u32 = 1u;
const TASK_HUMANOID: u32 = 2u;
const TASK_INVERTED_PENDULUM: u32 = 3u;
const TASK_INVERTED_DOUBLE_PENDULUM: u32 = 4u;
const TASK_REACHER: u32 = 5u;
const TASK_PUSHER: u32 = 6u;

@group(0) @binding(120) var<uniform> rl_params: RlParams;
/// Per world: [obs (obs_dim), reward, terminated (0/1), reward terms] (nworld × stride).
@group(0) @binding(121) var<storage, read_write> rl_out: array<f32>;
/// Per world: the task's carry (nworld × max(carry_dim, 1)).
@group(0) @binding(122) var<storage, read_write> rl_carry: array<f32>;
/// Per world: body wrenches [torque about the origin, force] (nbody × 6),
/// then the generalized constraint force (nv).
@group(0) @binding(123) var<storage, read_write> rl_force: array<f32>;

fn force_stride() -> u32 {
    return dims.nbody * 6u + dims.nv;
}

/// Simulator::constraint_forces of each world's last solve at its solution v.
/// Reads: v, contacts, icf_world, icf_con, icf_jac, icf_limit, icf_dims; writes: rl_force.
@compute @workgroup_size(WORKGROUP_SIZE)
fn rl_forces(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld) {
        return;
    }
    let base = w * force_stride();
    for (var i = 0u; i < force_stride(); i++) {
        rl_force[base + i] = 0.0;
    }
    let hw = icf_world[w].h;
    if (!(hw > 0.0)) {
        return;
    }
    let ncon = min(icf_world[w].ncon, dims.ncon);
    for (var c = 0u; c < ncon; c++) {
        let con = icf_con[con_at(w, c)];
        var vc = vec3f(0.0);
        for (var e = 0u; e < con.jac_len; e++) {
            let j = icf_jac[jac_at(w, c, e)];
            vc += j.col * v_get(dof_at(w, j.dof));
        }
        let impulse = contact_terms(con, hw, vc).impulse;
        for (var e = 0u; e < con.jac_len; e++) {
            let j = icf_jac[jac_at(w, c, e)];
            rl_force[base + dims.nbody * 6u + j.dof] += dot3(j.col, impulse) / hw;
        }
        let k = contacts[con_at(w, c)];
        let f = impulse / hw;
        let tau = cross3(k.pos, f);
        for (var side = 0u; side < 2u; side++) {
            let b = k.body[side];
            if (b == 0u) {
                continue;
            }
            var sgn = 1.0;
            if (side == 0u) {
                sgn = -1.0;
            }
            for (var i = 0u; i < 3u; i++) {
                rl_force[base + b * 6u + i] += sgn * tau[i];
                rl_force[base + b * 6u + 3u + i] += sgn * f[i];
            }
        }
    }
    for (var li = 0u; li < icf_dims.nlimit; li++) {
        let l = icf_limit[limit_at(w, li)];
        let t = limit_terms(l, hw, v_get(dof_at(w, l.dof)));
        rl_force[base + dims.nbody * 6u + l.dof] += l.sign * t.y / hw;
    }
}

/// Centre of mass of the tree rooted at `root` (rl::mujoco::tree_com).
fn tree_com(w: u32, root: u32) -> vec3f {
    var m = 0.0;
    var hsum = vec3f(0.0);
    for (var b = 1u; b < dims.nbody; b++) {
        if (bodies[b].root == root) {
            let ci = cinert_get(body_at(w, b));
            m += ci.m;
            hsum += unpack3(ci.h);
        }
    }
    let origin = unpack3(body_ref_get(body_at(w, root)));
    if (m > 0.0) {
        return origin + hsum / m;
    }
    return origin;
}

/// Centre of mass of the whole model (rl::mujoco::mass_center).
fn mass_center(w: u32) -> vec3f {
    var m = 0.0;
    var hsum = vec3f(0.0);
    for (var b = 1u; b < dims.nbody; b++) {
        let mb = cinert_get(body_at(w, b)).m;
        m += mb;
        hsum += unpack3(xipos_get(body_at(w, b))) * mb;
    }
    if (m > 0.0) {
        return hsum / m;
    }
    return vec3f(0.0);
}

/// The observation being written: world w's row of rl_out and the next column.
struct ObsCursor {
    base: u32,
    k: u32,
}

fn put(o: ptr<function, ObsCursor>, x: f32) {
    rl_out[(*o).base + (*o).k] = x;
    (*o).k += 1u;
}

/// Appends sin and cos of two angles (rad): sin a, sin b, cos a, cos b,
/// or with `cos_first` cos a, cos b, sin a, sin b (the gymnasium layouts).
fn put_trig2(o: ptr<function, ObsCursor>, a: f32, b: f32, cos_first: bool) {
    let sa = sin_cos(a);
    let sb = sin_cos(b);
    let first = select(vec2f(sa.x, sb.x), vec2f(sa.y, sb.y), cos_first);
    let second = select(vec2f(sa.y, sb.y), vec2f(sa.x, sb.x), cos_first);
    put(o, first.x);
    put(o, first.y);
    put(o, second.x);
    put(o, second.y);
}

/// MuJoCo's cfrc_ext row of body b about p (rl::mujoco::cfrc_ext).
fn cfrc_ext_row(w: u32, b: u32, p: vec3f) -> array<f32, 6> {
    let base = w * force_stride() + b * 6u;
    let f = vec3f(rl_force[base + 3u], rl_force[base + 4u], rl_force[base + 5u]);
    let tau = vec3f(rl_force[base], rl_force[base + 1u], rl_force[base + 2u]) - cross3(p, f);
    return array<f32, 6>(tau.x, tau.y, tau.z, f.x, f.y, f.z);
}

/// Writes the contact rows of bodies 1.. (clipped when `clip`) when `write`; returns Σ entry².
fn contact_rows(w: u32, o: ptr<function, ObsCursor>, clip: bool, write: bool) -> f32 {
    var sq = 0.0;
    var root = 0xffffffffu;
    var com = vec3f(0.0);
    for (var b = 1u; b < dims.nbody; b++) {
        if (bodies[b].root != root) {
            root = bodies[b].root;
            com = tree_com(w, root);
        }
        let row = cfrc_ext_row(w, b, com);
        for (var i = 0u; i < 6u; i++) {
            var x = row[i];
            if (clip) {
                x = clamp(x, rl_params.contact_force_lo, rl_params.contact_force_hi);
            }
            sq += x * x;
            if (write) {
                put(o, x);
            }
        }
    }
    return sq;
}

fn ctrl_cost(w: u32) -> f32 {
    var s = 0.0;
    for (var k = 0u; k < rl_params.nu; k++) {
        let u = ctrl[w * rl_params.nu + k];
        s += u * u;
    }
    return rl_params.ctrl_cost_weight * s;
}

fn state_finite(w: u32) -> bool {
    for (var i = 0u; i < dims.nq; i++) {
        if (non_finite(q_get(q_at(w, i)))) {
            return false;
        }
    }
    for (var i = 0u; i < dims.nv; i++) {
        if (non_finite(v_get(dof_at(w, i)))) {
            return false;
        }
    }
    return true;
}

/// MuJoCo's qfrc_actuator of dof d (rl::mujoco::qfrc_actuator).
fn qfrc_actuator(w: u32, d: u32) -> f32 {
    var f = 0.0;
    for (var k = 0u; k < rl_params.nu; k++) {
        let a = actuators[k];
        if (a.dof != d) {
            continue;
        }
        let u = ctrl[w * rl_params.nu + k];
        if (a.kind == ACT_MOTOR) {
            var x = u;
            if (a.has_force_range == 1u) {
                x = clamp(u, a.force_lo, a.force_hi);
            }
            f += a.gear * x;
        } else {
            let tau = a.kp * (u - q_get(q_at(w, a.qpos_adr))) - a.kd * v_get(dof_at(w, d));
            f += clamp(tau, -a.effort_limit, a.effort_limit);
        }
    }
    return f;
}

fn xpos_of(w: u32, b: u32) -> vec3f {
    return unpack3(xpos_get(body_at(w, b)));
}

/// Observation (rl::tasks::Builtin::observe).
fn observe(w: u32) {
    var o = ObsCursor(w * rl_params.stride, 0u);
    let nq = dims.nq;
    let nv = dims.nv;
    switch rl_params.kind {
        case TASK_ANT, TASK_HUMANOID: {
            for (var i = 2u; i < nq; i++) {
                put(&o, q_get(q_at(w, i)));
            }
            for (var i = 0u; i < nv; i++) {
                put(&o, v_get(dof_at(w, i)));
            }
            if (rl_params.kind == TASK_HUMANOID) {
                var root = 0xffffffffu;
                var com = vec3f(0.0);
                for (var b = 1u; b < dims.nbody; b++) {
                    if (bodies[b].root != root) {
                        root = bodies[b].root;
                        com = tree_com(w, root);
                    }
                    // cinert about com (rl::mujoco::cinert).
                    let ci = unpack_inertia(cinert_get(body_at(w, b)));
                    let c = unpack3(xipos_get(body_at(w, b)));
                    let dr = c - unpack3(body_ref_get(body_at(w, b)));
                    let e = c - com;
                    let shift = m3_add(m3_scale(m3_sub(m3_scale(m3_identity(), dot3(e, e)), m3_outer(e, e)), ci.m),
                        m3_scale(m3_sub(m3_outer(dr, dr), m3_scale(m3_identity(), dot3(dr, dr))), ci.m));
                    let ic = m3_add(ci.i, shift);
                    put(&o, ic.r0.x);
                    put(&o, ic.r1.y);
                    put(&o, ic.r2.z);
                    put(&o, ic.r0.y);
                    put(&o, ic.r0.z);
                    put(&o, ic.r1.z);
                    put(&o, ci.m * e.x);
                    put(&o, ci.m * e.y);
                    put(&o, ci.m * e.z);
                    put(&o, ci.m);
                }
                root = 0xffffffffu;
                for (var b = 1u; b < dims.nbody; b++) {
                    if (bodies[b].root != root) {
                        root = bodies[b].root;
                        com = tree_com(w, root);
                    }
                    let cv = unpack_motion(cvel_get(body_at(w, b)));
                    let lin = cv.lin + cross3(cv.ang, com - unpack3(body_ref_get(body_at(w, b))));
                    put(&o, cv.ang.x);
                    put(&o, cv.ang.y);
                    put(&o, cv.ang.z);
                    put(&o, lin.x);
                    put(&o, lin.y);
                    put(&o, lin.z);
                }
                for (var d = 6u; d < nv; d++) {
                    put(&o, qfrc_actuator(w, d));
                }
            }
            contact_rows(w, &o, rl_params.kind == TASK_ANT, true);
        }
        case TASK_HALF_CHEETAH: {
            for (var i = 1u; i < nq; i++) {
                put(&o, q_get(q_at(w, i)));
            }
            for (var i = 0u; i < nv; i++) {
                put(&o, v_get(dof_at(w, i)));
            }
        }
        case TASK_INVERTED_PENDULUM: {
            for (var i = 0u; i < nq; i++) {
                put(&o, q_get(q_at(w, i)));
            }
            for (var i = 0u; i < nv; i++) {
                put(&o, v_get(dof_at(w, i)));
            }
        }
        case TASK_INVERTED_DOUBLE_PENDULUM: {
            put(&o, q_get(q_at(w, 0u)));
            put_trig2(&o, q_get(q_at(w, 1u)), q_get(q_at(w, 2u)), false);
            for (var i = 0u; i < 3u; i++) {
                put(&o, clamp(v_get(dof_at(w, i)), -10.0, 10.0));
            }
            put(&o, clamp(rl_force[w * force_stride() + dims.nbody * 6u], -10.0, 10.0));
        }
        case TASK_REACHER: {
            put_trig2(&o, q_get(q_at(w, 0u)), q_get(q_at(w, 1u)), true);
            put(&o, q_get(q_at(w, 2u)));
            put(&o, q_get(q_at(w, 3u)));
            put(&o, v_get(dof_at(w, 0u)));
            put(&o, v_get(dof_at(w, 1u)));
            let d = xpos_of(w, rl_params.body_a) - xpos_of(w, rl_params.body_b);
            put(&o, d.x);
            put(&o, d.y);
        }
        default: {
            // TASK_PUSHER
            for (var i = 0u; i < 7u; i++) {
                put(&o, q_get(q_at(w, i)));
            }
            for (var i = 0u; i < 7u; i++) {
                put(&o, v_get(dof_at(w, i)));
            }
            for (var j = 0u; j < 3u; j++) {
                var b = rl_params.body_a;
                if (j == 1u) {
                    b = rl_params.body_b;
                } else if (j == 2u) {
                    b = rl_params.body_c;
                }
                let p = xpos_of(w, b);
                put(&o, p.x);
                put(&o, p.y);
                put(&o, p.z);
            }
        }
    }
}

/// The carry at the current state (rl::tasks::Builtin::carry).
fn carry_now(w: u32) -> vec2f {
    switch rl_params.kind {
        case TASK_ANT: {
            return xpos_of(w, rl_params.body_a).xy;
        }
        case TASK_HALF_CHEETAH: {
            return vec2f(q_get(q_at(w, 0u)), 0.0);
        }
        case TASK_HUMANOID: {
            return mass_center(w).xy;
        }
        default: {
            return vec2f(0.0);
        }
    }
}

/// Writes reward, termination and terms (rl::tasks::Builtin::reward).
fn reward(w: u32, carry: vec2f) {
    let base = w * rl_params.stride + rl_params.obs_dim;
    let cost = ctrl_cost(w);
    var r = 0.0;
    var terminated = false;
    var t = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    var nt = 0u;
    var o = ObsCursor(0u, 0u);
    switch rl_params.kind {
        case TASK_ANT, TASK_HUMANOID: {
            let z = q_get(q_at(w, 2u));
            var healthy: bool;
            var forward: f32;
            if (rl_params.kind == TASK_ANT) {
                healthy = state_finite(w) && rl_params.healthy_z_lo <= z && z <= rl_params.healthy_z_hi;
                forward = rl_params.forward_reward_weight * (xpos_of(w, rl_params.body_a).x - carry.x) / rl_params.dt;
            } else {
                healthy = rl_params.healthy_z_lo < z && z < rl_params.healthy_z_hi;
                forward = rl_params.forward_reward_weight * (mass_center(w).x - carry.x) / rl_params.dt;
            }
            var survive = 0.0;
            if (healthy) {
                survive = rl_params.healthy_reward;
            }
            let sq = contact_rows(w, &o, rl_params.kind == TASK_ANT, false);
            let contact = min(rl_params.contact_cost_weight * sq, rl_params.contact_cost_max);
            r = forward + survive - cost - contact;
            terminated = !healthy && rl_params.terminate_when_unhealthy == 1u;
            if (rl_params.kind == TASK_ANT) {
                t = array<f32, 4>(forward, -cost, -contact, survive);
            } else {
                t = array<f32, 4>(survive, forward, -cost, -contact);
            }
            nt = 4u;
        }
        case TASK_HALF_CHEETAH: {
            let forward = rl_params.forward_reward_weight * (q_get(q_at(w, 0u)) - carry.x) / rl_params.dt;
            r = forward - cost;
            t = array<f32, 4>(forward, -cost, 0.0, 0.0);
            nt = 2u;
        }
        case TASK_INVERTED_PENDULUM: {
            terminated = !state_finite(w) || abs(q_get(q_at(w, 1u))) > 0.2;
            if (!terminated) {
                r = 1.0;
            }
            t[0] = r;
            nt = 1u;
        }
        case TASK_INVERTED_DOUBLE_PENDULUM: {
            let tip = unpack3(site_xpos_get(site_at(w, rl_params.site)));
            terminated = tip.z <= 1.0;
            let dist = 0.01 * tip.x * tip.x + (tip.z - 2.0) * (tip.z - 2.0);
            let v1 = v_get(dof_at(w, 1u));
            let v2 = v_get(dof_at(w, 2u));
            let vel = 1e-3 * v1 * v1 + 5e-3 * v2 * v2;
            var alive = 0.0;
            if (!terminated) {
                alive = rl_params.healthy_reward;
            }
            r = alive - dist - vel;
            t = array<f32, 4>(alive, -dist, -vel, 0.0);
            nt = 3u;
        }
        case TASK_REACHER: {
            let dist = -rl_params.dist_weight * length(xpos_of(w, rl_params.body_a) - xpos_of(w, rl_params.body_b));
            r = dist - cost;
            t = array<f32, 4>(dist, -cost, 0.0, 0.0);
            nt = 2u;
        }
        default: {
            // TASK_PUSHER
            let obj = xpos_of(w, rl_params.body_b);
            let near = -rl_params.near_weight * length(obj - xpos_of(w, rl_params.body_a));
            let dist = -rl_params.dist_weight * length(obj - xpos_of(w, rl_params.body_c));
            r = dist - cost + near;
            t = array<f32, 4>(dist, -cost, near, 0.0);
            nt = 3u;
        }
    }
    rl_out[base] = r;
    rl_out[base + 1u] = select(0.0, 1.0, terminated);
    for (var i = 0u; i < nt; i++) {
        rl_out[base + 2u + i] = t[i];
    }
}

/// Observation, and after a step the reward, termination and terms, of
/// every world at its current state (kinematics and velocities evaluated);
/// then the carry. One thread per world.
/// Reads: rl_params, q, v, xpos, xipos, body_ref, cinert, cvel, site_xpos, ctrl, actuators, rl_force, rl_carry; writes: rl_out, rl_carry.
@compute @workgroup_size(WORKGROUP_SIZE)
fn rl_observe(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld) {
        return;
    }
    observe(w);
    let cb = w * max(rl_params.carry_dim, 1u);
    if (rl_params.step == 1u) {
        var carry = vec2f(0.0);
        if (rl_params.carry_dim > 0u) {
            carry.x = rl_carry[cb];
        }
        if (rl_params.carry_dim > 1u) {
            carry.y = rl_carry[cb + 1u];
        }
        reward(w, carry);
    }
    let c = carry_now(w);
    for (var i = 0u; i < rl_params.carry_dim; i++) {
        rl_carry[cb + i] = c[i];
    }
}
