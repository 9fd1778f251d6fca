// CENIC error control with a per-world clock: WGSL twin of
// src/integrator/cenic.rs (World::advance, cenic_step, try_step,
// error_norm, impact_bound, step_factor).
//
// A trial (a step-doubling attempt, or one fixed step) is a sequence of
// parts (the part_* functions below, listed with their stages in
// src/gpu/cenic.rs Part), each run by one thread per world: the multibody
// stages (kinematics.wgsl, rnea.wgsl), the ICF build (icf_builder.wgsl),
// the step-size control here and the position update (integrate.wgsl),
// between the collision and the Newton solves, which are launches of their
// own. Each world records in cenic_world[w].stage the part it is at; a part
// runs only on the worlds at its stage and moves them to the next, so a
// launch of parts (an entry point generated from Part, src/gpu/cenic.rs
// step_entry_points) skips the worlds that are elsewhere: idle, failed,
// rejected, or waiting for a solve that a software adapter's loop budget
// paused (it resumes in the next solve launch). The host encodes whole
// iterations without reading anything back (src/gpu/batch.rs).
// A world takes part in a trial while cenic_world[w].trial = 1; otherwise
// its h[w] = 0 and icf_world[w].solving = 0 (the solver skips it).
//
// Time is a (hi, lo) pair of f32 (t = hi + lo, about 48 bits), so that a
// world's clock does not drift over many small steps; steps and the error
// control itself are f32.

const CENIC_FIXED: u32 = 0u;
const CENIC_ERROR_CONTROLLED: u32 = 1u;


/// Failure reasons (src/gpu/cenic.rs turns them into StepError messages).
const FAIL_Q: u32 = 1u;
const FAIL_V: u32 = 2u;
const FAIL_HALF_STEP: u32 = 3u;
/// FAIL_SOLVE + the SOLVE_* status of the failed solve.
const FAIL_SOLVE: u32 = 16u;
/// The driver's loop budget ran out in a launch of parts (src/gpu/cenic.rs).
const FAIL_LOOP_BUDGET: u32 = 4u;
/// FAIL_COLLISION + the collision_status bits: the contacts were unreliable.
const FAIL_COLLISION: u32 = 8u;
/// FAIL_ACCURACY + 2·dof (+ 1 when the velocity term drove the error):
/// the accuracy was missed at the minimum step (detail: the error, m or rad).
const FAIL_ACCURACY: u32 = 4096u;

/// Stands for +∞ (WGSL may assume no infinities).
const BIG: f32 = 3.0e38;

// ---------------------------------------------------------------- double-single time

/// x, through a multiplication by the opaque 1.0 of cenic_params: the
/// compiler may treat float arithmetic as associative (Mesa's NIR rewrites
/// (a + b) − a to b), which would cancel the error terms of two-sum.
fn opaque(x: f32) -> f32 {
    return x * cenic_params.one;
}

/// (hi, lo) + b, renormalised (Knuth's two-sum, then fast two-sum).
fn ds_add(a: vec2f, b: f32) -> vec2f {
    let s = opaque(a.x + b);
    let bb = opaque(s - a.x);
    let e = opaque(opaque(a.x - opaque(s - bb)) + opaque(b - bb)) + a.y;
    let hi = opaque(s + e);
    return vec2f(hi, e - opaque(hi - s));
}

/// (hi, lo) + (hi, lo).
fn ds_add2(a: vec2f, b: vec2f) -> vec2f {
    let s = opaque(a.x + b.x);
    let bb = opaque(s - a.x);
    let e = opaque(opaque(a.x - opaque(s - bb)) + opaque(b.x - bb)) + a.y + b.y;
    let hi = opaque(s + e);
    return vec2f(hi, e - opaque(hi - s));
}

/// a − b as one f32 (exact-ish when a and b are close).
fn ds_diff(a: vec2f, b: vec2f) -> f32 {
    return (a.x - b.x) + (a.y - b.y);
}

/// Time left to the end of the advance, and the tolerance for landing on
/// it (World::advance: 1e-12 relative).
fn remaining(w: u32) -> f32 {
    return ds_diff(cenic_world[w].t_end, cenic_world[w].time);
}
fn end_eps(w: u32) -> f32 {
    return 1e-12 * max(abs(cenic_world[w].t_end.x), 1.0);
}

// ---------------------------------------------------------------- per-world helpers

fn cq_at(w: u32, k: u32, i: u32) -> u32 {
    return item_at(w, k * dims.nq + i, 2u * dims.nq);
}
fn cv_at(w: u32, k: u32, i: u32) -> u32 {
    return item_at(w, k * dims.nv + i, CENIC_V_SLOTS * dims.nv);
}

/// Ends the world's current trial: nothing moves or solves until the next one.
fn end_trial(w: u32) {
    cenic_world[w].trial = 0u;
    cenic_world[w].stage = STAGE_BEGIN;
    icf_world[w].solving = 0u;
    h_set(world_at(w), 0.0);
}

/// Back to x0 = (q0, v0).
fn restore_start(w: u32) {
    for (var i = 0u; i < dims.nq; i++) {
        q_set(q_at(w, i), cenic_q[cq_at(w, 0u, i)]);
    }
    for (var i = 0u; i < dims.nv; i++) {
        v_set(dof_at(w, i), cenic_v[cv_at(w, 0u, i)]);
    }
}

/// Flags the world as failed (frozen at x0) with `reason` and `detail`.
fn fail(w: u32, reason: u32, detail: f32) {
    cenic_world[w].state = WORLD_FAILED;
    cenic_world[w].reason = reason;
    cenic_world[w].detail = detail;
    end_trial(w);
}

/// The first non-finite coordinate class of the current state: 0 (none), FAIL_Q or FAIL_V.
fn state_check(w: u32) -> u32 {
    for (var i = 0u; i < dims.nq; i++) {
        if (non_finite(q_get(q_at(w, i)))) {
            return FAIL_Q;
        }
    }
    for (var i = 0u; i < dims.nv; i++) {
        if (non_finite(v_get(dof_at(w, i)))) {
            return FAIL_V;
        }
    }
    return 0u;
}

/// After an ICF solve: true when it succeeded (its statistics are added);
/// otherwise the trial ends, as a rejection with a 4× smaller step in
/// error-controlled mode (above the minimum step), else as a failure.
fn solve_ok(w: u32) -> bool {
    let st = icf_world[w].status;
    if (st == SOLVE_OK) {
        cenic_stats[w].solves += 1u;
        cenic_stats[w].newton_iterations += icf_world[w].iterations;
        cenic_stats[w].line_search_iterations += icf_world[w].line_search_iterations;
        cenic_stats[w].factorizations += icf_world[w].factorizations;
        return true;
    }
    restore_start(w);
    let h_try = cenic_world[w].h_try;
    let p = cenic_params;
    if (p.mode == CENIC_ERROR_CONTROLLED && h_try > p.min_step * (1.0 + 1e-9)) {
        cenic_stats[w].rejected += 1u;
        cenic_world[w].h_next = max(h_try * 0.25, p.min_step);
        cenic_world[w].first_trial = 0u;
        end_trial(w);
    } else {
        fail(w, FAIL_SOLVE + st, icf_world[w].detail);
    }
    return false;
}

/// icf_vec row VEC_V (the solution) into v and into cenic_v slot `slot`
/// (when < 2; slot 2 holds the fixed or full step's extrapolated warm start).
fn take_solution(w: u32, slot: u32) {
    for (var i = 0u; i < dims.nv; i++) {
        let x = icf_vec[ivec_at(w, VEC_V, i)];
        v_set(dof_at(w, i), x);
        if (slot < 2u) {
            cenic_v[cv_at(w, slot, i)] = x;
        }
    }
}

/// Accepts the trial's step h_try: statistics, step record, clock.
fn accept(w: u32, err: f32) {
    let cw = cenic_world[w];
    let hs = cw.h_try;
    cenic_stats[w].accepted += 1u;
    cenic_stats[w].contacts += cw.ncontact0;
    cenic_stats[w].min_h = min(cenic_stats[w].min_h, hs);
    cenic_stats[w].max_h = max(cenic_stats[w].max_h, hs);
    let k = cenic_stats[w].recorded;
    if (k < cenic_params.record_capacity) {
        cenic_steps[w * cenic_params.record_capacity + k] = StepRecord(cw.time, hs, err, cw.ncontact0, 0u, 0u, 0u);
    }
    cenic_stats[w].recorded = k + 1u;
    // A step cut to the interval end lands on it exactly.
    var t = ds_add(cw.time, hs);
    if (cw.lands != 0u) {
        t = cw.t_end;
    }
    cenic_world[w].time = t;
    if (!(ds_diff(cw.t_end, t) > 1e-12 * max(abs(cw.t_end.x), 1.0))) {
        cenic_world[w].time = cw.t_end;
        cenic_world[w].state = WORLD_DONE;
    }
}

/// h'/h from the error ratio err/accuracy: 0.9·(1/err)^½ clamped to [0.1, 5]
/// (inverseSqrt: 2 ulp on any Vulkan adapter, where pow may be far coarser).
fn step_factor(err: f32) -> f32 {
    if (err <= 0.0) {
        return 5.0;
    }
    return clamp(0.9 * inverseSqrt(err), 0.1, 5.0);
}

/// integrator::next_step: the step after accepting h_try (error ratio err)
/// when the controller had asked for h (h_try < h: the step was cut).
fn next_step(h: f32, h_try: f32, err: f32) -> f32 {
    let factor = step_factor(err);
    if (h_try < h) {
        var predicted = BIG;
        if (err > 0.0) {
            predicted = h_try * max(0.9 * inverseSqrt(err), 0.1);
        }
        let next = min(predicted, max(h, 5.0 * h_try));
        if (next >= h && next < 1.2 * h) {
            return h;
        }
        return next;
    }
    if (factor >= 1.0 && factor < 1.2) {
        return h_try;
    }
    return h_try * factor;
}

/// Rotation angle between unit quaternions a and b, |log(a* ⊗ b)| (Quat::angle_to).
fn quat_angle(a: vec4f, b: vec4f) -> f32 {
    var d = quat_mul(quat_conj(a), b);
    if (d.x < 0.0) {
        d = -d;
    }
    let u = d.yzw;
    let s = sqrt(dot3(u, u));
    if (s < 1e-12) {
        let r = u * 2.0;
        return sqrt(dot3(r, r));
    }
    let r = u * (2.0 * atan2_accurate(s, d.x) / s);
    return sqrt(dot3(r, r));
}

fn q4(w: u32, a: u32) -> vec4f {
    return vec4f(q_get(q_at(w, a)), q_get(q_at(w, a + 1u)), q_get(q_at(w, a + 2u)), q_get(q_at(w, a + 3u)));
}
fn qfull4(w: u32, i: u32) -> vec4f {
    return vec4f(cenic_q[cq_at(w, 1u, i)], cenic_q[cq_at(w, 1u, i + 1u)], cenic_q[cq_at(w, 1u, i + 2u)], cenic_q[cq_at(w, 1u, i + 3u)]);
}

/// A step-doubling error estimate (m or rad) and where it is largest:
/// 2·dof, + 1 for the velocity term (World's ErrorEstimate).
struct ErrorEstimate {
    error: f32,
    at: u32,
}

/// World::error_norm: weighted max-norm of q_prop − q_full (rotations as
/// angles) and of τ_v·(v_prop − v_full), with x_prop in (q, v).
fn error_norm(w: u32) -> ErrorEstimate {
    var e = ErrorEstimate(0.0, 0u);
    for (var ji = 0u; ji < dims.njnt; ji++) {
        let j = joints[ji];
        let ai = j.qpos_adr;
        let d = j.dof_adr;
        switch j.kind {
            case JOINT_FREE: {
                for (var k = 0u; k < 3u; k++) {
                    e = raise_at(e, cenic_weights[d + k] * abs(q_get(q_at(w, ai + k)) - cenic_q[cq_at(w, 1u, ai + k)]), 2u * (d + k));
                }
                e = raise_at(e, cenic_weights[d + 3u] * quat_angle(q4(w, ai + 3u), qfull4(w, ai + 3u)), 2u * (d + 3u));
            }
            case JOINT_BALL: {
                e = raise_at(e, cenic_weights[d] * quat_angle(q4(w, ai), qfull4(w, ai)), 2u * d);
            }
            default: {
                e = raise_at(e, cenic_weights[d] * abs(q_get(q_at(w, ai)) - cenic_q[cq_at(w, 1u, ai)]), 2u * d);
            }
        }
    }
    let tau = cenic_params.velocity_time_scale;
    if (tau > 0.0) {
        for (var i = 0u; i < dims.nv; i++) {
            e = raise_at(e, tau * cenic_weights[i] * abs(v_get(dof_at(w, i)) - cenic_v[cv_at(w, 1u, i)]), 2u * i + 1u);
        }
    }
    if (non_finite(e.error)) {
        e.error = BIG;
    }
    return e;
}

/// `e` raised to `x` at `at` when x is larger or not finite (a non-finite
/// proposal must read as the largest error, as on the CPU).
fn raise_at(e: ErrorEstimate, x: f32, at: u32) -> ErrorEstimate {
    if (x > e.error || non_finite(x)) {
        return ErrorEstimate(x, at);
    }
    return e;
}

// ---------------------------------------------------------------- conservative advancement

fn geom_axis(w: u32, g: u32, k: u32) -> vec3f {
    let m = geom_xmat_get(geom_at(w, g));
    if (k == 0u) {
        return vec3f(m.r0.x, m.r1.x, m.r2.x);
    }
    if (k == 1u) {
        return vec3f(m.r0.y, m.r1.y, m.r2.y);
    }
    return vec3f(m.r0.z, m.r1.z, m.r2.z);
}

/// Largest extent of geom g along the unit direction u from its centre (m);
/// every kind is centrally symmetric. Meshes (no vertices on the GPU): the bounding radius.
fn support(w: u32, g: u32, u: vec3f) -> f32 {
    let gm = geoms[g];
    let s = gm.size;
    switch gm.kind {
        case GEOM_SPHERE: {
            return s.x;
        }
        case GEOM_CAPSULE: {
            return s.x + s.y * abs(dot3(u, geom_axis(w, g, 2u)));
        }
        case GEOM_BOX: {
            return s.x * abs(dot3(u, geom_axis(w, g, 0u))) + s.y * abs(dot3(u, geom_axis(w, g, 1u)))
                + s.z * abs(dot3(u, geom_axis(w, g, 2u)));
        }
        case GEOM_CYLINDER: {
            let c = dot3(u, geom_axis(w, g, 2u));
            return s.x * sqrt(max(1.0 - c * c, 0.0)) + s.y * abs(c);
        }
        case GEOM_ELLIPSOID: {
            let e = vec3f(
                s.x * dot3(u, geom_axis(w, g, 0u)),
                s.y * dot3(u, geom_axis(w, g, 1u)),
                s.z * dot3(u, geom_axis(w, g, 2u)),
            );
            return sqrt(dot3(e, e));
        }
        default: {
            return gm.rbound;
        }
    }
}

/// Closest points of segments p1 + s d1 and p2 + t d2 (s, t ∈ [0, 1]).
fn segment_closest(p1: vec3f, d1: vec3f, p2: vec3f, d2: vec3f) -> array<vec3f, 2> {
    let r = p1 - p2;
    let a = dot3(d1, d1);
    let e = dot3(d2, d2);
    let f = dot3(d2, r);
    var s = 0.0;
    var t = 0.0;
    if (a <= 1e-12 && e <= 1e-12) {
        return array<vec3f, 2>(p1, p2);
    }
    if (a <= 1e-12) {
        t = clamp(f / e, 0.0, 1.0);
    } else {
        let c = dot3(d1, r);
        if (e <= 1e-12) {
            s = clamp(-c / a, 0.0, 1.0);
        } else {
            let b = dot3(d1, d2);
            let den = a * e - b * b;
            if (den > 0.0) {
                s = clamp((b * f - c * e) / den, 0.0, 1.0);
            }
            t = (b * s + f) / e;
            if (t < 0.0) {
                t = 0.0;
                s = clamp(-c / a, 0.0, 1.0);
            } else if (t > 1.0) {
                t = 1.0;
                s = clamp((b - c) / a, 0.0, 1.0);
            }
        }
    }
    return array<vec3f, 2>(p1 + d1 * s, p2 + d2 * t);
}

/// The segment of a sphere (a point) or capsule: start and direction.
fn core_segment(w: u32, g: u32) -> array<vec3f, 2> {
    let c = unpack3(geom_xpos_get(geom_at(w, g)));
    if (geoms[g].kind == GEOM_CAPSULE) {
        let ax = geom_axis(w, g, 2u) * geoms[g].size.y;
        return array<vec3f, 2>(c - ax, ax * 2.0);
    }
    return array<vec3f, 2>(c, vec3f(0.0));
}

/// A unit vector along d, or +z when d is zero.
fn unit_or_z(d: vec3f) -> vec3f {
    let n = sqrt(dot3(d, d));
    if (n > 0.0) {
        return d / n;
    }
    return vec3f(0.0, 0.0, 1.0);
}

/// A separation estimate between geoms a < b: (distance lower bound (m),
/// unit normal from a to b). Exact for a plane against any primitive, and
/// between spheres and capsules (and a sphere and a box); otherwise the
/// largest gap between the shapes' projections on the centre line and the
/// geoms' axes (exact for face-separated boxes), along that axis.
struct Separation {
    dist: f32,
    normal: vec3f,
}

fn separation(w: u32, a: u32, b: u32) -> Separation {
    let ka = geoms[a].kind;
    let kb = geoms[b].kind;
    let xa = unpack3(geom_xpos_get(geom_at(w, a)));
    let xb = unpack3(geom_xpos_get(geom_at(w, b)));
    if (ka == GEOM_PLANE && kb == GEOM_PLANE) {
        return Separation(BIG, vec3f(0.0, 0.0, 1.0));
    }
    if (ka == GEOM_PLANE) {
        let n = geom_axis(w, a, 2u);
        return Separation(dot3(n, xb - xa) - support(w, b, n), n);
    }
    if (kb == GEOM_PLANE) {
        let n = geom_axis(w, b, 2u);
        return Separation(dot3(n, xa - xb) - support(w, a, n), -n);
    }
    let round_a = ka == GEOM_SPHERE || ka == GEOM_CAPSULE;
    let round_b = kb == GEOM_SPHERE || kb == GEOM_CAPSULE;
    if (round_a && round_b) {
        let sa = core_segment(w, a);
        let sb = core_segment(w, b);
        let p = segment_closest(sa[0], sa[1], sb[0], sb[1]);
        let d = p[1] - p[0];
        return Separation(sqrt(dot3(d, d)) - geoms[a].size.x - geoms[b].size.x, unit_or_z(d));
    }
    if ((ka == GEOM_SPHERE && kb == GEOM_BOX) || (ka == GEOM_BOX && kb == GEOM_SPHERE)) {
        var sp = a;
        var bx = b;
        if (ka == GEOM_BOX) {
            sp = b;
            bx = a;
        }
        // Sphere centre against the box: clamp in the box frame.
        let cs = unpack3(geom_xpos_get(geom_at(w, sp)));
        let cb = unpack3(geom_xpos_get(geom_at(w, bx)));
        let hs = geoms[bx].size;
        var q = cb;
        for (var k = 0u; k < 3u; k++) {
            let ax = geom_axis(w, bx, k);
            q += ax * clamp(dot3(cs - cb, ax), -hs[k], hs[k]);
        }
        let d = cs - q;
        var n = unit_or_z(d);
        if (sp == a) {
            n = -n;
        }
        return Separation(sqrt(dot3(d, d)) - geoms[sp].size.x, n);
    }
    let d = xb - xa;
    let dn = sqrt(dot3(d, d));
    var best = Separation(-BIG, vec3f(0.0, 0.0, 1.0));
    if (dn > 0.0) {
        let u = d / dn;
        best = Separation(dn - support(w, a, u) - support(w, b, u), u);
    }
    for (var k = 0u; k < 6u; k++) {
        var g = a;
        if (k >= 3u) {
            g = b;
        }
        var u = geom_axis(w, g, k % 3u);
        if (dot3(u, d) < 0.0) {
            u = -u;
        }
        let gap = dot3(u, d) - support(w, a, u) - support(w, b, u);
        if (gap > best.dist) {
            best = Separation(gap, u);
        }
    }
    return best;
}

/// World's lower_distance (bounding spheres; planes: the other's centre height).
fn lower_distance(w: u32, a: u32, b: u32) -> f32 {
    let ga = geoms[a];
    let gb = geoms[b];
    let xa = unpack3(geom_xpos_get(geom_at(w, a)));
    let xb = unpack3(geom_xpos_get(geom_at(w, b)));
    if (ga.kind == GEOM_PLANE && gb.kind == GEOM_PLANE) {
        return BIG;
    }
    if (ga.kind == GEOM_PLANE) {
        return dot3(geom_axis(w, a, 2u), xb - xa) - gb.rbound;
    }
    if (gb.kind == GEOM_PLANE) {
        return dot3(geom_axis(w, b, 2u), xa - xb) - ga.rbound;
    }
    let d = xa - xb;
    return sqrt(dot3(d, d)) - ga.rbound - gb.rbound;
}

/// A geom's centre velocity (m/s), its body's angular velocity (rad/s) and
/// bounding radius (m; 0 for planes); all zero for a static geom.
struct GeomMotion {
    c: vec3f,
    w: vec3f,
    r: f32,
}

fn geom_motion(w: u32, g: u32) -> GeomMotion {
    let gm = geoms[g];
    if (bodies[gm.body].weld == 0u) {
        return GeomMotion(vec3f(0.0), vec3f(0.0), 0.0);
    }
    let cv = unpack_motion(cvel_get(body_at(w, gm.body)));
    let r = unpack3(geom_xpos_get(geom_at(w, g))) - unpack3(body_ref_get(body_at(w, gm.body)));
    // Planes carry f32::MAX as their (infinite) bounding radius; a sphere's
    // gaps do not change as it spins (World::impact_bound).
    let spin_r = select(gm.rbound, 0.0, gm.rbound > 1e37 || gm.kind == GEOM_SPHERE);
    return GeomMotion(cv.lin + cross3(cv.ang, r), cv.ang, spin_r);
}

/// Upper bound on the speed of any point of a geom (m/s).
fn motion_speed(m: GeomMotion) -> f32 {
    return sqrt(dot3(m.c, m.c)) + sqrt(dot3(m.w, m.w)) * m.r;
}

/// World::impact_bound (seed eq. 3): the largest step (≤ hs) during which
/// no two geoms farther apart than the skin can touch, each gap shrinking
/// at most at the approach speed along its normal, n·(v_A − v_B) +
/// |n × ω_A| r_A + |n × ω_B| r_B (r = 0 for spheres), plus |n·g|·t from gravity. Pairs with
/// contacts at x0 use the closest contact (as the CPU's narrow phase); the
/// others are at least the contact margin plus the skin apart (the
/// collision found nothing closer) and at least their separation().
fn impact_bound(w: u32, hs: f32) -> f32 {
    let skin = cenic_params.skin;
    let grav = dims.gravity.xyz;
    let gnorm = sqrt(dot3(grav, grav));
    var bound = hs;
    let ncon = icf_world[w].ncon;
    let complete = icf_world[w].overflow == 0u;
    for (var pi = 0u; pi < cenic_params.npair; pi++) {
        let pr = cenic_pairs[pi];
        let ma = geom_motion(w, pr.a);
        let mb = geom_motion(w, pr.b);
        let travel = (motion_speed(ma) + motion_speed(mb)) * bound + 0.5 * gnorm * bound * bound;
        if (lower_distance(w, pr.a, pr.b) > travel + skin) {
            continue;
        }
        var phi = BIG;
        var n = vec3f(0.0, 0.0, 1.0);
        var found = false;
        for (var ci = 0u; ci < ncon; ci++) {
            let c = contacts[con_at(w, ci)];
            let same = c.geom.x == pr.a && c.geom.y == pr.b;
            if ((same || (c.geom.x == pr.b && c.geom.y == pr.a)) && c.dist < phi) {
                phi = c.dist;
                n = select(-c.normal, c.normal, same);
                found = true;
            }
        }
        if (!found) {
            let sep = separation(w, pr.a, pr.b);
            phi = sep.dist;
            n = sep.normal;
            if (complete) {
                phi = max(phi, pr.margin + skin);
            }
            if (phi > travel + skin) {
                continue;
            }
        }
        if (!(phi >= skin)) {
            continue;
        }
        let v_app = dot3(n, ma.c - mb.c) + sqrt(dot3(cross3(n, ma.w), cross3(n, ma.w))) * ma.r
            + sqrt(dot3(cross3(n, mb.w), cross3(n, mb.w))) * mb.r;
        let acc = abs(dot3(n, grav));
        let allowed = phi - 0.5 * skin;
        // Largest t with v_app·t + ½·acc·t² ≤ allowed, without cancellation.
        let root = sqrt(v_app * v_app + 2.0 * acc * allowed);
        var t = BIG;
        if (v_app > 0.0) {
            t = 2.0 * allowed / (v_app + root);
        } else if (acc > 0.0) {
            t = (root - v_app) / acc;
        }
        bound = min(bound, t);
    }
    return bound;
}

// ---------------------------------------------------------------- the parts of a trial
//
// Each part_* runs at one stage (the launch checks it for the first part of
// a launch; a part sets the stage of the next) and returns whether the world
// goes on to the next part in the same launch. Parts right after a solve
// wait for it (a world whose solve is not done stays at its stage).

/// True when world w runs and is at `stage`.
fn at_stage(w: u32, stage: u32) -> bool {
    return cenic_world[w].state == WORLD_RUNNING && cenic_world[w].stage == stage;
}

/// True once the world's solve has finished.
fn solved(w: u32) -> bool {
    return icf_world[w].phase == NEWTON_DONE;
}

/// Geometry and dynamics of world w at its (q, v): World::compute_geometry
/// without the collision (kinematics.wgsl, rnea.wgsl).
fn forward_world(w: u32) {
    kinematics_world(w);
    for (var g = 0u; g < dims.ngeom; g++) {
        geom_pose(w, g);
    }
    for (var s = 0u; s < dims.nsite; s++) {
        site_pose(w, s);
    }
    com_quantities_world(w);
    velocities_world(w);
    mass_matrix_world(w);
    bias_forces_world(w);
    passive_forces_world(w);
}

/// The ICF problem of world w from its geometry and contacts, unless the
/// collision flagged its contacts as unreliable (then the world fails).
fn build_problem(w: u32) -> bool {
    let bad = atomicLoad(&collision_status[w]);
    if (bad != 0u) {
        restore_start(w);
        fail(w, FAIL_COLLISION + bad, 0.0);
        return false;
    }
    icf_build_all(w);
    return true;
}

/// STAGE_BEGIN: starts a trial: checks that the state is finite
/// (World::check_finite) and saves x0.
fn part_begin(w: u32) -> bool {
    end_trial(w);
    let bad = state_check(w);
    if (bad != 0u) {
        fail(w, bad, 0.0);
        return false;
    }
    for (var i = 0u; i < dims.nq; i++) {
        cenic_q[cq_at(w, 0u, i)] = q_get(q_at(w, i));
    }
    for (var i = 0u; i < dims.nv; i++) {
        cenic_v[cv_at(w, 0u, i)] = v_get(dof_at(w, i));
    }
    // The fixed step and error control's full step may start at v0 + h·qacc
    // (integrator::warm_start): qacc is kept in row VEC_V, which the geometry
    // and the build at x0 leave alone, before the build overwrites VEC_V0
    // that qacc reads.
    for (var i = 0u; i < dims.nv; i++) {
        icf_vec[ivec_at(w, VEC_V, i)] = qacc(w, i);
    }
    cenic_world[w].trial = 1u;
    icf_world[w].solving = 1u;
    // The iteration this world was last busy in (the host's estimate of the iterations an advance needs).
    atomicMax(&cenic_counter[COUNTER_LAST_BUSY], atomicLoad(&cenic_counter[COUNTER_ITERATION]));
    cenic_world[w].stage = STAGE_FORWARD0;
    return true;
}

/// STAGE_FORWARD0: the geometry at x0 (the collision runs next).
fn part_forward0(w: u32) -> bool {
    forward_world(w);
    cenic_world[w].stage = STAGE_BUILD0;
    return true;
}

/// STAGE_BUILD0: the ICF problem at x0.
fn part_build0(w: u32) -> bool {
    if (!build_problem(w)) {
        return false;
    }
    cenic_world[w].stage = STAGE_CHOOSE0;
    return true;
}

/// STAGE_CHOOSE0: the trial's step: fixed mode min(dt, remaining);
/// error-controlled mode the step-size rule's h, cut at the interval end and
/// by conservative advancement. Sets h[w] and the warm start v0.
fn part_choose(w: u32) -> bool {
    let p = cenic_params;
    let rem = remaining(w);
    var hn: f32;
    if (p.mode == CENIC_FIXED) {
        hn = p.fixed_dt;
    } else {
        hn = max(min(cenic_world[w].h_next, p.max_step), p.min_step);
        if (cenic_world[w].first_trial != 0u) {
            cenic_stats[w].contact_overflow += icf_world[w].overflow;
        }
    }
    var h_try = min(hn, rem);
    if (p.mode == CENIC_FIXED && rem < hn * (1.0 + 1e-4)) {
        // The step in f32 falls short of the f64 dt by up to 6e-8 relative
        // (f32(0.01) < 0.01), so fixed steps sum to a little less than the
        // advance; the last one takes the remainder instead of leaving a
        // sliver step of ~1e-9 s and a second round of iterations (the
        // CPU's steps and clock are f64 and land exactly).
        h_try = rem;
    }
    if (p.mode == CENIC_ERROR_CONTROLLED && hn < rem && 2.0 * hn > rem) {
        // integrator::balanced_step: half the remainder, not a step and a sliver.
        h_try = max(0.5 * rem, p.min_step);
    }
    let lands = h_try == rem;
    var cut = false;
    if (p.mode == CENIC_ERROR_CONTROLLED && p.conservative_advancement != 0u) {
        let h_ca = max(impact_bound(w, h_try), p.min_step);
        if (h_ca < h_try) {
            h_try = h_ca;
            cut = true;
            cenic_stats[w].impact_limited += 1u;
        }
    }
    cenic_world[w].h = hn;
    cenic_world[w].h_try = h_try;
    cenic_world[w].lands = u32(lands && !cut);
    cenic_world[w].ncontact0 = icf_world[w].ncon;
    // The warm start (integrator::warm_start): v0, or v0 + h·qacc (qacc from
    // part_begin) while warm_qacc says so; the extrapolation is kept in
    // cenic_v slot 2 for extrapolation_wins's choice of the next warm start.
    for (var i = 0u; i < dims.nv; i++) {
        var v = cenic_v[cv_at(w, 0u, i)];
        let extrapolated = v + h_try * icf_vec[ivec_at(w, VEC_V, i)];
        cenic_v[cv_at(w, 2u, i)] = extrapolated;
        if (cenic_world[w].warm_qacc != 0u) {
            v = extrapolated;
        }
        icf_vec[ivec_at(w, VEC_V, i)] = v;
    }
    h_set(world_at(w), h_try);
    cenic_world[w].stage = STAGE_STEP0;
    return true;
}

/// STAGE_STEP0: the step-dependent terms of the full (or fixed) step's problem.
fn part_step0(w: u32) -> bool {
    icf_set_time_step_world(w);
    cenic_world[w].stage = STAGE_SOLVE0;
    return true;
}

/// After the fixed or full step's solve (its v1 in cenic_v slot 1): whether
/// v0 + h·qacc (slot 2) lies nearer to it than v0 (slot 0), i.e. whether the
/// next such step extrapolates (integrator::extrapolation_wins).
fn extrapolation_wins(w: u32) -> bool {
    var miss_extrapolated = 0.0;
    var miss_v0 = 0.0;
    for (var i = 0u; i < dims.nv; i++) {
        let v1 = cenic_v[cv_at(w, 1u, i)];
        let e = v1 - cenic_v[cv_at(w, 2u, i)];
        let d = v1 - cenic_v[cv_at(w, 0u, i)];
        miss_extrapolated += e * e;
        miss_v0 += d * d;
    }
    return miss_extrapolated < miss_v0;
}

/// STAGE_SOLVE0, fixed mode: v ← v1, q advanced, the step accepted.
fn part_finish_fixed(w: u32) -> bool {
    if (!solved(w) || !solve_ok(w)) {
        return false;
    }
    take_solution(w, 1u);
    cenic_world[w].warm_qacc = u32(extrapolation_wins(w));
    integrate_world(w);
    cenic_stats[w].contact_overflow += icf_world[w].overflow;
    accept(w, 0.0);
    end_trial(w);
    return false;
}

/// STAGE_SOLVE0, error-controlled mode: v_full and q_full kept, back to q0,
/// the first half step warm-started at ½(v0 + v_full).
fn part_half(w: u32) -> bool {
    if (!solved(w) || !solve_ok(w)) {
        return false;
    }
    take_solution(w, 1u);
    integrate_world(w);
    cenic_world[w].warm_qacc = u32(extrapolation_wins(w));
    for (var i = 0u; i < dims.nq; i++) {
        cenic_q[cq_at(w, 1u, i)] = q_get(q_at(w, i));
        q_set(q_at(w, i), cenic_q[cq_at(w, 0u, i)]);
    }
    for (var i = 0u; i < dims.nv; i++) {
        icf_vec[ivec_at(w, VEC_V, i)] = 0.5 * (cenic_v[cv_at(w, 0u, i)] + cenic_v[cv_at(w, 1u, i)]);
    }
    h_set(world_at(w), 0.5 * cenic_world[w].h_try);
    cenic_world[w].stage = STAGE_STEP1;
    return true;
}

/// STAGE_STEP1: the first half step's terms (same problem, half the step).
fn part_step1(w: u32) -> bool {
    icf_set_time_step_world(w);
    cenic_world[w].stage = STAGE_SOLVE1;
    return true;
}

/// STAGE_SOLVE1: v ← v_half, q advanced to x_half.
fn part_mid(w: u32) -> bool {
    if (!solved(w) || !solve_ok(w)) {
        return false;
    }
    take_solution(w, 2u);
    integrate_world(w);
    cenic_world[w].stage = STAGE_FORWARD1;
    return true;
}

/// STAGE_FORWARD1: the geometry at x_half (the collision runs next).
fn part_forward1(w: u32) -> bool {
    forward_world(w);
    cenic_world[w].stage = STAGE_BUILD1;
    return true;
}

/// STAGE_BUILD1: the ICF problem at x_half.
fn part_build1(w: u32) -> bool {
    if (!build_problem(w)) {
        return false;
    }
    cenic_world[w].stage = STAGE_START2;
    return true;
}

/// STAGE_START2: x_half must be finite; its contact overflow is counted and
/// the second half step warm-started at v_full.
fn part_start2(w: u32) -> bool {
    if (state_check(w) != 0u) {
        restore_start(w);
        fail(w, FAIL_HALF_STEP, 0.0);
        return false;
    }
    cenic_stats[w].contact_overflow += icf_world[w].overflow;
    for (var i = 0u; i < dims.nv; i++) {
        icf_vec[ivec_at(w, VEC_V, i)] = cenic_v[cv_at(w, 1u, i)];
    }
    cenic_world[w].stage = STAGE_STEP2;
    return true;
}

/// STAGE_STEP2: the second half step's terms.
fn part_step2(w: u32) -> bool {
    icf_set_time_step_world(w);
    cenic_world[w].stage = STAGE_SOLVE2;
    return true;
}

/// STAGE_SOLVE2: v ← v_prop, q_prop; error estimate, then accept (clock,
/// statistics, next step with hysteresis) or reject (back to x0 with a
/// smaller step).
fn part_finish(w: u32) -> bool {
    if (!solved(w) || !solve_ok(w)) {
        return false;
    }
    take_solution(w, 2u);
    integrate_world(w);
    let p = cenic_params;
    let cw = cenic_world[w];
    let e = error_norm(w);
    let err = e.error / p.accuracy;
    cenic_world[w].err = err;
    let at_min = cw.h_try <= p.min_step * (1.0 + 1e-9);
    if (err > 1.0 && at_min && p.accept_accuracy_misses == 0u) {
        restore_start(w);
        fail(w, FAIL_ACCURACY + e.at, e.error);
        return false;
    }
    if (err <= 1.0 || at_min) {
        if (err > 1.0) {
            cenic_stats[w].accuracy_misses += 1u;
        }
        accept(w, err);
        cenic_world[w].h_next = clamp(next_step(cw.h, cw.h_try, err), p.min_step, p.max_step);
        cenic_world[w].first_trial = 1u;
    } else {
        cenic_stats[w].rejected += 1u;
        cenic_world[w].h_next = max(cw.h_try * step_factor(err), p.min_step);
        cenic_world[w].first_trial = 0u;
        restore_start(w);
    }
    end_trial(w);
    return false;
}

/// Fails world w when this invocation ran out of the driver's loop budget
/// (its results are not trustworthy; never silently).
fn check_loop_budget(w: u32) {
    if (!loop_budget_held_with(cenic_params.loop_check)) {
        fail(w, FAIL_LOOP_BUDGET, 0.0);
    }
}

/// The host counts iterations through the last launch of each: one thread adds one.
fn end_iteration(w: u32) {
    if (w == 0u) {
        atomicAdd(&cenic_counter[COUNTER_ITERATION], 1u);
    }
}

// ---------------------------------------------------------------- kernels
//
// The launches of parts (cenic_<first part>[_to_<last part>]) are generated
// from src/gpu/cenic.rs Part and FIXED_ITERATION / STEP_DOUBLING_ITERATION
// and composed after this file.

/// Offset in cenic_reset of the (q, v) rows (after the header and the indices).
fn reset_rows() -> u32 {
    return RESET_HEADER + dims.nworld;
}

/// GpuBatch::fresh_world at time 0: idle, first step h_next (s).
fn fresh_world(h_next: f32) -> CenicWorld {
    var c = CenicWorld();
    c.h_next = h_next;
    c.state = WORLD_DONE;
    return c;
}

/// GpuBatch::fresh_stats: nothing counted, no step taken yet.
fn fresh_stats() -> CenicStats {
    var s = CenicStats();
    s.min_h = 3.0e38;
    return s;
}

/// GpuBatch::reset_world for the k worlds listed in cenic_reset, one thread
/// per listed world: (q, v) from its row, zero controls and target
/// velocities, a fresh clock at time 0 (first step from the header), fresh
/// statistics and ICF state. The world's parameters stay.
/// Reads: cenic_reset, icf_dims; writes: q, v, ctrl, target_velocity, cenic_world, cenic_stats, icf_world.
@compute @workgroup_size(WORKGROUP_SIZE)
fn cenic_reset_worlds(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let k = thread_index(gid, nwg);
    if (k >= cenic_reset[0]) {
        return;
    }
    let w = cenic_reset[RESET_HEADER + k];
    let row = reset_rows() + k * (dims.nq + dims.nv);
    for (var i = 0u; i < dims.nq; i++) {
        q_set(q_at(w, i), bitcast<f32>(cenic_reset[row + i]));
    }
    for (var i = 0u; i < dims.nv; i++) {
        v_set(dof_at(w, i), bitcast<f32>(cenic_reset[row + dims.nq + i]));
    }
    for (var a = 0u; a < icf_dims.nu; a++) {
        ctrl[w * icf_dims.nu + a] = 0.0;
        target_velocity[w * icf_dims.nu + a] = 0.0;
    }
    cenic_world[w] = fresh_world(bitcast<f32>(cenic_reset[1]));
    cenic_stats[w] = fresh_stats();
    icf_world[w] = IcfWorld();
}

/// Starts World::advance(dt) in every world that has not failed: t_end =
/// t + dt. Statistics accumulate since the world's reset. One thread per world.
/// Reads: cenic_params (advance_dt), cenic_world; writes: cenic_world (t_end, state), h, icf_world.
@compute @workgroup_size(WORKGROUP_SIZE)
fn cenic_start_advance(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld) {
        return;
    }
    end_trial(w);
    if (cenic_world[w].state == WORLD_FAILED) {
        return;
    }
    let t_end = ds_add2(cenic_world[w].time, cenic_params.advance_dt);
    cenic_world[w].t_end = t_end;
    cenic_world[w].first_trial = 1u;
    if (remaining(w) > end_eps(w)) {
        cenic_world[w].state = WORLD_RUNNING;
    } else {
        cenic_world[w].state = WORLD_DONE;
    }
}

/// What the host reads after an advance: each world's clock, state and
/// failure code into cenic_summary, and the running and failed worlds
/// counted into cenic_counter (cleared by the host). One thread per world.
/// Reads: cenic_world; writes: cenic_summary, cenic_counter (running, failed).
@compute @workgroup_size(WORKGROUP_SIZE)
fn cenic_summarize(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld) {
        return;
    }
    let cw = cenic_world[w];
    cenic_summary[w] = vec4u(bitcast<u32>(cw.time.x), bitcast<u32>(cw.time.y), cw.state, cw.reason);
    if (cw.state == WORLD_RUNNING) {
        atomicAdd(&cenic_counter[COUNTER_RUNNING], 1u);
    } else if (cw.state == WORLD_FAILED) {
        atomicAdd(&cenic_counter[COUNTER_FAILED], 1u);
    }
}
