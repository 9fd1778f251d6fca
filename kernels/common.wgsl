// Shared helpers: composed in front of every stage file at load time
// (src/gpu/compose.rs: common.wgsl + data.wgsl + libraries + <stage>.wgsl).
//
// WGSL twin of src/math, with the same formulas in the same order so that
// the f32 CPU path is a close parity reference:
// - vectors are vec3f; quaternions are vec4f(w, x, y, z) (scalar first, the
//   order of the CPU arrays, so .x is w);
// - 3×3 matrices are row-major (struct M3 of rows), like Mat3;
// - spatial vectors are (ang, lin) pairs about a reference point, like
//   Motion and Force;
// - packed storage types (P3, P9, PMotion, PInertia) have no padding, so a
//   storage array of them has the layout of the CPU's Vec<Vec3<f32>> etc.

/// Threads per workgroup of every kernel (src/gpu/mod.rs WORKGROUP_SIZE).
const WORKGROUP_SIZE: u32 = 64u;
/// "No index" marker for optional indices (a tree root's parent dof, a geom without mesh).
const NONE: u32 = 0xffffffffu;

const JOINT_FREE: u32 = 0u;
const JOINT_BALL: u32 = 1u;
const JOINT_HINGE: u32 = 2u;
const JOINT_SLIDE: u32 = 3u;

/// Global thread index of a 1D launch split over x and y (src/gpu/kernel.rs
/// dispatch_size), so launches above 65535 workgroups still fit.
fn thread_index(gid: vec3u, nwg: vec3u) -> u32 {
    return gid.x + gid.y * nwg.x * WORKGROUP_SIZE;
}

/// Whether the driver's loop budget held in this invocation. Mesa's llvmpipe
/// (lavapipe) lets all loops of an invocation group run 65535 iterations in
/// total and then silently exits every loop after its first iteration; a
/// loop that must run twice detects that. `two` must be 2, read from a
/// uniform (so that the loop cannot be unrolled). Other drivers have no
/// such budget.
fn loop_budget_held_with(two: u32) -> bool {
    var k = 0u;
    loop {
        k += 1u;
        if (k >= two) {
            break;
        }
    }
    return k == two;
}

// ---------------------------------------------------------------- elementary functions

// The builtins sin, cos, atan2 and pow carry only what the Vulkan spec asks:
// sin and cos an absolute error of 2^-11 on [-π, π], atan 4096 ulp, pow
// inherited from exp2(y log2 x). NVIDIA's driver uses its special-function
// unit (about 2^-21 absolute), so the sine of a small angle has a large
// relative error, and a step's rotation increment (≈ 1e-3 rad) or the
// CENIC error estimate (a small angle between two orientations) loses
// 3–4 digits against the CPU. The functions below are accurate to a few
// ulp on any adapter (tests/gpu_math.rs measures them and the builtins on
// the adapter at hand); the CPU twins are Rust's correctly rounded libm.

/// (sin x, cos x) of x (rad), to about 1 ulp for |x| < 1e4: x reduced by
/// k·π/2 in three parts (Cody–Waite: each k·part exact), then minimax
/// polynomials on [-π/4, π/4].
fn sin_cos(x: f32) -> vec2f {
    let k = round(x * 0.636619772367581);
    let r = ((x - k * 1.5703125) - k * 4.837512969970703e-4) - k * 7.549789954891882e-8;
    let z = r * r;
    let s = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
    let c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
    switch (i32(k) & 3) {
        case 0: { return vec2f(s, c); }
        case 1: { return vec2f(c, -s); }
        case 2: { return vec2f(-s, -c); }
        default: { return vec2f(-c, s); }
    }
}
/// atan x for 0 ≤ x ≤ 1, to about 2 ulp: atan x = π/4 + atan((x − 1)/(x + 1))
/// above tan(π/8), then a minimax polynomial on [0, tan(π/8)].
fn atan_unit(x: f32) -> f32 {
    var t = x;
    var y0 = 0.0;
    if (x > 0.4142135623730950) {
        t = (x - 1.0) / (x + 1.0);
        y0 = 0.7853981633974483;
    }
    let z = t * t;
    return y0 + (t + t * z * (-3.33329491539e-1 + z * (1.99777106478e-1 + z * (-1.38776856032e-1 + z * 8.05374449538e-2))));
}
/// atan2(y, x) (rad, in [-π, π]), to a few ulp; 0 for (0, 0).
fn atan2_accurate(y: f32, x: f32) -> f32 {
    let ay = abs(y);
    let ax = abs(x);
    if (ay == 0.0 && ax == 0.0) {
        return 0.0;
    }
    var a: f32;
    if (ay <= ax) {
        a = atan_unit(ay / ax);
    } else {
        a = 1.5707963267948966 - atan_unit(ax / ay);
    }
    if (x < 0.0) {
        a = 3.141592653589793 - a;
    }
    return select(a, -a, y < 0.0);
}

// ---------------------------------------------------------------- packed storage types

/// A vec3 without padding (12 bytes).
struct P3 { x: f32, y: f32, z: f32 }
/// A row-major 3×3 matrix without padding (36 bytes), like Mat3.
struct P9 { r0: P3, r1: P3, r2: P3 }
/// A spatial motion or force vector without padding (24 bytes).
struct PMotion { ang: P3, lin: P3 }
/// A spatial inertia without padding (52 bytes): mass, first moment, rotational inertia.
struct PInertia { m: f32, h: P3, i: P9 }

fn unpack3(p: P3) -> vec3f {
    return vec3f(p.x, p.y, p.z);
}
fn pack3(v: vec3f) -> P3 {
    return P3(v.x, v.y, v.z);
}

// ---------------------------------------------------------------- 3×3 matrices (rows)

struct M3 { r0: vec3f, r1: vec3f, r2: vec3f }

fn unpack9(p: P9) -> M3 {
    return M3(unpack3(p.r0), unpack3(p.r1), unpack3(p.r2));
}
fn pack9(m: M3) -> P9 {
    return P9(pack3(m.r0), pack3(m.r1), pack3(m.r2));
}
fn m3_identity() -> M3 {
    return M3(vec3f(1.0, 0.0, 0.0), vec3f(0.0, 1.0, 0.0), vec3f(0.0, 0.0, 1.0));
}
fn m3_diag(d: vec3f) -> M3 {
    return M3(vec3f(d.x, 0.0, 0.0), vec3f(0.0, d.y, 0.0), vec3f(0.0, 0.0, d.z));
}
/// a bᵀ
fn m3_outer(a: vec3f, b: vec3f) -> M3 {
    return M3(b * a.x, b * a.y, b * a.z);
}
fn m3_col(m: M3, j: u32) -> vec3f {
    return vec3f(m.r0[j], m.r1[j], m.r2[j]);
}
fn m3_transpose(m: M3) -> M3 {
    return M3(m3_col(m, 0u), m3_col(m, 1u), m3_col(m, 2u));
}
fn dot3(a: vec3f, b: vec3f) -> f32 {
    // Written out (not dot()) to keep the CPU's summation order.
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
fn cross3(a: vec3f, b: vec3f) -> vec3f {
    return vec3f(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
fn m3_mul_v(m: M3, v: vec3f) -> vec3f {
    return vec3f(dot3(m.r0, v), dot3(m.r1, v), dot3(m.r2, v));
}
fn m3_row_mul(r: vec3f, o: M3) -> vec3f {
    // Row r times matrix o: r[0] o.r0 + r[1] o.r1 + r[2] o.r2, entry by entry as Mat3::mul.
    return vec3f(
        r.x * o.r0.x + r.y * o.r1.x + r.z * o.r2.x,
        r.x * o.r0.y + r.y * o.r1.y + r.z * o.r2.y,
        r.x * o.r0.z + r.y * o.r1.z + r.z * o.r2.z,
    );
}
fn m3_mul(a: M3, b: M3) -> M3 {
    return M3(m3_row_mul(a.r0, b), m3_row_mul(a.r1, b), m3_row_mul(a.r2, b));
}
fn m3_add(a: M3, b: M3) -> M3 {
    return M3(a.r0 + b.r0, a.r1 + b.r1, a.r2 + b.r2);
}
fn m3_sub(a: M3, b: M3) -> M3 {
    return M3(a.r0 - b.r0, a.r1 - b.r1, a.r2 - b.r2);
}
fn m3_scale(a: M3, s: f32) -> M3 {
    return M3(a.r0 * s, a.r1 * s, a.r2 * s);
}

// ---------------------------------------------------------------- quaternions (w, x, y, z)

fn quat_identity() -> vec4f {
    return vec4f(1.0, 0.0, 0.0, 0.0);
}
/// Hamilton product a ⊗ b (applies b first), as Quat::mul.
fn quat_mul(a: vec4f, b: vec4f) -> vec4f {
    return vec4f(
        a.x * b.x - a.y * b.y - a.z * b.z - a.w * b.w,
        a.x * b.y + a.y * b.x + a.z * b.w - a.w * b.z,
        a.x * b.z - a.y * b.w + a.z * b.x + a.w * b.y,
        a.x * b.w + a.y * b.z - a.z * b.y + a.w * b.x,
    );
}
fn quat_conj(q: vec4f) -> vec4f {
    return vec4f(q.x, -q.y, -q.z, -q.w);
}
/// Unit quaternion; identity for a zero quaternion. A NaN norm fails the
/// `== 0` test and propagates (as on the CPU) instead of being hidden.
fn quat_normalize(q: vec4f) -> vec4f {
    let n = sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
    if (n == 0.0) {
        return quat_identity();
    }
    let s = 1.0 / n;
    return q * s;
}
/// Rotates v: v + 2w (u × v) + 2 u × (u × v), as Quat::rotate.
fn quat_rotate(q: vec4f, v: vec3f) -> vec3f {
    let u = q.yzw;
    let t = cross3(u, v) * 2.0;
    return v + t * q.x + cross3(u, t);
}
/// Rotation matrix (row-major), as Quat::to_mat3.
fn quat_to_mat3(q: vec4f) -> M3 {
    let w = q.x;
    let x = q.y;
    let y = q.z;
    let z = q.w;
    return M3(
        vec3f(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)),
        vec3f(2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)),
        vec3f(2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)),
    );
}
/// Rotation of `angle` (rad) about the unit `axis`.
fn quat_from_axis_angle(axis: vec3f, angle: f32) -> vec4f {
    let sc = sin_cos(angle * 0.5);
    return vec4f(sc.y, axis.x * sc.x, axis.y * sc.x, axis.z * sc.x);
}
/// Exact exponential map of a rotation vector r (rad): exp(r/2), with the
/// CPU's Taylor series below 1e-4 rad.
fn quat_exp(r: vec3f) -> vec4f {
    let th2 = dot3(r, r);
    let th = sqrt(th2);
    var c: f32;
    var s: f32;
    if (th < 1e-4) {
        c = 1.0 - th2 / 8.0;
        s = 0.5 - th2 / 48.0;
    } else {
        let sc = sin_cos(th * 0.5);
        c = sc.y;
        s = sc.x / th;
    }
    return vec4f(c, r.x * s, r.y * s, r.z * s);
}

// ---------------------------------------------------------------- spatial algebra

/// Spatial motion [ω; v] or force [τ; f] about a reference point, world axes.
struct Motion { ang: vec3f, lin: vec3f }

fn motion_zero() -> Motion {
    return Motion(vec3f(0.0), vec3f(0.0));
}
fn unpack_motion(p: PMotion) -> Motion {
    return Motion(unpack3(p.ang), unpack3(p.lin));
}
fn pack_motion(m: Motion) -> PMotion {
    return PMotion(pack3(m.ang), pack3(m.lin));
}
fn motion_add(a: Motion, b: Motion) -> Motion {
    return Motion(a.ang + b.ang, a.lin + b.lin);
}
fn motion_scale(a: Motion, s: f32) -> Motion {
    return Motion(a.ang * s, a.lin * s);
}
/// a ×ₘ m
fn cross_motion(a: Motion, m: Motion) -> Motion {
    return Motion(cross3(a.ang, m.ang), cross3(a.ang, m.lin) + cross3(a.lin, m.ang));
}
/// a ×_f f
fn cross_force(a: Motion, f: Motion) -> Motion {
    return Motion(cross3(a.ang, f.ang) + cross3(a.lin, f.lin), cross3(a.ang, f.lin));
}
/// Power pairing m · f.
fn motion_dot(m: Motion, f: Motion) -> f32 {
    return dot3(m.ang, f.ang) + dot3(m.lin, f.lin);
}

/// Spatial inertia about the reference point: mass (kg), first moment (kg·m),
/// rotational inertia (kg·m², world axes).
struct Inertia { m: f32, h: vec3f, i: M3 }

fn unpack_inertia(p: PInertia) -> Inertia {
    return Inertia(p.m, unpack3(p.h), unpack9(p.i));
}
fn pack_inertia(a: Inertia) -> PInertia {
    return PInertia(a.m, pack3(a.h), pack9(a.i));
}
fn inertia_add(a: Inertia, b: Inertia) -> Inertia {
    return Inertia(a.m + b.m, a.h + b.h, m3_add(a.i, b.i));
}
/// From mass, centre of mass relative to the reference point and the
/// rotational inertia about the centre of mass (parallel axis theorem).
fn inertia_from_com(m: f32, com: vec3f, ic: M3) -> Inertia {
    let shift = m3_scale(m3_sub(m3_scale(m3_identity(), dot3(com, com)), m3_outer(com, com)), m);
    return Inertia(m, com * m, m3_add(ic, shift));
}
/// Momentum of a body moving with v: [I ω + h × v; m v − h × ω].
fn inertia_mul(a: Inertia, v: Motion) -> Motion {
    return Motion(m3_mul_v(a.i, v.ang) + cross3(a.h, v.lin), v.lin * a.m - cross3(a.h, v.ang));
}
