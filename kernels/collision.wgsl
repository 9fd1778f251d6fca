// Collision: WGSL twin of src/collision/ (broadphase, narrow phase per geom
// pair, contact output), routine by routine with the CPU names, the same
// formulas in the same order, in f32 (the CPU f32 path is the parity
// reference).
//
// Launches (src/gpu/collision.rs encodes them after kinematics, in order):
// - `broadphase`: one thread per (world, geom): the inflated world AABB of
//   every non-plane geom (collision::broadphase geom_aabb).
// - `narrow_phase` / `narrow_phase_epa` in count mode, once per pass: one
//   thread per (candidate pair of the pass, world), pair-major (neighbouring
//   threads run the same routine on different worlds). The candidate pairs are the host's list, filtered once
//   by Model::geoms_can_collide, plane–plane pairs dropped, sorted ascending
//   by (min, max) geom index (the CPU broadphase's output order). Each thread
//   applies the CPU's bounding-volume predicate, runs the pair's routine and
//   records how many contacts it found.
// - `collide`: one thread per world: exclusive prefix sum of the counts in
//   pair order (each pair's first contact index) and the world's total.
// - the same entry points in write mode, once per pass: each (pair, world)
//   with contacts that fit recomputes its manifold and stores it at its
//   offset.
// Contacts are therefore in the CPU's order, the stored prefix is what the
// CPU keeps with the same capacity, and nothing depends on thread timing.
// Passes: the pairs without GJK/EPA in one (`narrow_phase`), the GJK/EPA
// pairs in chunks sized so that their EPA scratch (one block per thread)
// fits in memory (`narrow_phase_epa`, whose pipeline is only created for
// models with such pairs: it is the large one to compile).
//
// Conventions as on the CPU: φ < 0 when overlapping, normal from A (the
// geom whose kind comes first) to B, contact point midway between the
// surfaces. WGSL may assume there are no infinities, so "∞" is F32_BIG
// (f32::MAX) where the CPU uses T::infinity() as a start value.

// The geom kinds (GEOM_*), MAX_MANIFOLD and the pair-kind codes (PAIR_*)
// are generated from src/collision/narrowphase.rs PAIR_KINDS, as is the
// dispatch narrow_phase_fn (appended to this file).

/// f32::EPSILON (T::EPS on the CPU f32 path).
const F32_EPS: f32 = 1.1920929e-7;
/// f32::MIN_POSITIVE (T::min_positive_value()).
const F32_MIN_POS: f32 = 1.1754944e-38;
/// f32::MAX: stands for +∞ as a start value of minimisations.
const F32_BIG: f32 = 3.4028234e38;

/// True unless x is ±∞ or NaN (exponent bits all ones).
fn is_finite_f(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}
fn is_finite3(v: vec3f) -> bool {
    return is_finite_f(v.x) && is_finite_f(v.y) && is_finite_f(v.z);
}

// ---------------------------------------------------------------- small vector helpers (twins of Vec3/Mat3)

fn norm2(v: vec3f) -> f32 {
    return dot3(v, v);
}
fn norm(v: vec3f) -> f32 {
    return sqrt(dot3(v, v));
}
/// Vec3::normalize: zero for a zero vector.
fn normalize3(v: vec3f) -> vec3f {
    let n = norm(v);
    if (n > 0.0) {
        return v * (1.0 / n);
    }
    return vec3f(0.0);
}
fn max_elem(v: vec3f) -> f32 {
    return max(max(v.x, v.y), v.z);
}
fn unit3(i: u32) -> vec3f {
    var e = vec3f(0.0);
    e[i] = 1.0;
    return e;
}
/// Mat3::row.
fn m3_row(m: M3, i: u32) -> vec3f {
    if (i == 0u) {
        return m.r0;
    }
    if (i == 1u) {
        return m.r1;
    }
    return m.r2;
}
/// Mat3::tmul: mᵀ v.
fn m3_tmul(m: M3, v: vec3f) -> vec3f {
    return vec3f(dot3(m3_col(m, 0u), v), dot3(m3_col(m, 1u), v), dot3(m3_col(m, 2u), v));
}
/// Vec3::any_orthonormal: cross with the axis least aligned with v.
fn any_orthonormal(v: vec3f) -> vec3f {
    let a = abs(v);
    var e = vec3f(0.0, 0.0, 1.0);
    if (a.x <= a.y && a.x <= a.z) {
        e = vec3f(1.0, 0.0, 0.0);
    } else if (a.y <= a.z) {
        e = vec3f(0.0, 1.0, 0.0);
    }
    return normalize3(cross3(v, e));
}

// ---------------------------------------------------------------- shapes and the manifold

/// A geom's shape and world pose (collision::Shape).
struct Shape {
    kind: u32,
    /// Geom index (mesh data lookups).
    geom: u32,
    /// Size parameters (m).
    size: vec3f,
    /// Origin of the geom frame, world (m).
    pos: vec3f,
    /// Rotation geom → world.
    rot: M3,
}

fn shape_of_geom(w: u32, g: u32) -> Shape {
    let geom = geoms[g];
    let i = geom_at(w, g);
    return Shape(geom.kind, g, geom.size, unpack3(geom_xpos_get(i)), unpack9(geom_xmat_get(i)));
}


// The manifold of the current pair (collision::Manifold), per invocation.
var<private> manifold_points: array<ContactPoint, MAX_MANIFOLD>;
var<private> manifold_len: u32;

/// Manifold::push.
fn manifold_push(p: ContactPoint) {
    if (manifold_len < MAX_MANIFOLD) {
        manifold_points[manifold_len] = p;
        manifold_len += 1u;
    }
}

// ---------------------------------------------------------------- analytic helpers (narrowphase/analytic/common.rs)

/// Appends a contact from the witness `pa` on A, normal `n` and φ `dist`: the
/// point midway between the surfaces.
fn push_contact(pa: vec3f, n: vec3f, dist: f32, feature: vec2u) {
    manifold_push(ContactPoint(pa + n * (dist * 0.5), n, dist, feature));
}

/// v/|v|, or `fallback` when |v| is zero, subnormal or not finite.
fn normalize_or(v: vec3f, fallback: vec3f) -> vec3f {
    let n2 = norm2(v);
    if (n2 > F32_MIN_POS && is_finite_f(n2)) {
        return v * (1.0 / sqrt(n2));
    }
    return fallback;
}

/// Tie tolerance (m) at length `scale`: 64 rounding units.
fn tie_tol(scale: f32) -> f32 {
    return 64.0 * F32_EPS * scale;
}

/// cos(0.02 rad): "face-like" normals (common.rs FACE_LIKE_COS).
const FACE_LIKE_COS: f32 = 0.999800006666578;

fn seg_feature(s: f32, h: f32) -> u32 {
    if (s <= -h) {
        return 0u;
    }
    if (s >= h) {
        return 1u;
    }
    return 2u;
}

fn box_code(k: vec3u) -> u32 {
    return k.x + 3u * k.y + 9u * k.z;
}
fn box_code_states(c: u32) -> vec3u {
    return vec3u(c % 3u, (c / 3u) % 3u, (c / 9u) % 3u);
}
fn box_code_join(a: u32, b: u32) -> u32 {
    let ka = box_code_states(a);
    let kb = box_code_states(b);
    var k = vec3u(1u);
    for (var i = 0u; i < 3u; i++) {
        if (ka[i] == kb[i]) {
            k[i] = ka[i];
        }
    }
    return box_code(k);
}
fn box_code_of_point(q: vec3f, h: vec3f, tol: f32) -> u32 {
    var k = vec3u(1u);
    for (var i = 0u; i < 3u; i++) {
        if (q[i] >= h[i] - tol) {
            k[i] = 2u;
        } else if (q[i] <= -h[i] + tol) {
            k[i] = 0u;
        }
    }
    return box_code(k);
}
/// +1 for x ≥ 0, −1 otherwise.
fn sign_of(x: f32) -> f32 {
    if (x >= 0.0) {
        return 1.0;
    }
    return -1.0;
}
/// Box state of a sign: 2 (at +h) when positive, else 0.
fn side_state(x: f32) -> u32 {
    if (x > 0.0) {
        return 2u;
    }
    return 0u;
}
/// common.rs clamp: plain comparisons.
fn clamp_plain(x: f32, lo: f32, hi: f32) -> f32 {
    if (x < lo) {
        return lo;
    }
    if (x > hi) {
        return hi;
    }
    return x;
}

/// Closest points of segments ca + s·ua (|s| ≤ ha) and cb + t·ub (|t| ≤ hb): (s, t).
fn segment_segment(ca: vec3f, ua: vec3f, ha: f32, cb: vec3f, ub: vec3f, hb: f32) -> vec2f {
    let r = ca - cb;
    let b = dot3(ua, ub);
    let c = dot3(ua, r);
    let f = dot3(ub, r);
    let denom = 1.0 - b * b;
    var s = 0.0;
    if (denom > F32_EPS) {
        s = clamp_plain((b * f - c) / denom, -ha, ha);
    }
    var t = b * s + f;
    if (t < -hb || t > hb) {
        t = clamp_plain(t, -hb, hb);
        s = clamp_plain(b * t - c, -ha, ha);
    }
    t = clamp_plain(dot3(ca + ua * s - cb, ub), -hb, hb);
    s = clamp_plain(dot3(cb + ub * t - ca, ua), -ha, ha);
    return vec2f(s, t);
}

/// Result of segment_box: segment parameter, closest box point, squared distance.
struct SegBox {
    s: f32,
    q: vec3f,
    d2: f32,
}

/// Exact closest points of segment c + s·u (|s| ≤ hl) and box [−h, h], box frame.
fn segment_box(c: vec3f, u: vec3f, hl: f32, h: vec3f) -> SegBox {
    var bp: array<f32, 8>;
    bp[0] = -hl;
    var n = 1u;
    for (var i = 0u; i < 3u; i++) {
        if (u[i] != 0.0) {
            let inv = 1.0 / u[i];
            let s0 = (-h[i] - c[i]) * inv;
            let s1 = (h[i] - c[i]) * inv;
            if (s0 > -hl && s0 < hl) {
                bp[n] = s0;
                n += 1u;
            }
            if (s1 > -hl && s1 < hl) {
                bp[n] = s1;
                n += 1u;
            }
        }
    }
    bp[n] = hl;
    n += 1u;
    for (var i = 1u; i < n; i++) {
        let x = bp[i];
        var j = i;
        while (j > 0u && bp[j - 1u] > x) {
            bp[j] = bp[j - 1u];
            j -= 1u;
        }
        bp[j] = x;
    }
    var best = SegBox(-hl, vec3f(0.0), F32_BIG);
    for (var k = 0u; k + 1u < n; k++) {
        let s0 = bp[k];
        let s1 = bp[k + 1u];
        let m = (s0 + s1) * 0.5;
        var num = 0.0;
        var den = 0.0;
        for (var i = 0u; i < 3u; i++) {
            let x = c[i] + u[i] * m;
            var tgt: f32;
            if (x < -h[i]) {
                tgt = -h[i];
            } else if (x > h[i]) {
                tgt = h[i];
            } else {
                continue;
            }
            num += (c[i] - tgt) * u[i];
            den += u[i] * u[i];
        }
        var s = s0;
        if (den > 0.0) {
            s = clamp_plain(-num / den, s0, s1);
        }
        let p = c + u * s;
        let q = min(max(p, -h), h);
        let d2 = norm2(p - q);
        if (d2 < best.d2) {
            best = SegBox(s, q, d2);
        }
    }
    return best;
}

// ---------------------------------------------------------------- plane (analytic/plane.rs)

/// Plane (A) – sphere (B).
fn contact_plane_sphere(a: Shape, b: Shape, margin: f32) {
    let n = m3_col(a.rot, 2u);
    let height = dot3(n, b.pos - a.pos);
    let dist = height - b.size.x;
    if (dist < margin) {
        push_contact(b.pos - n * height, n, dist, vec2u(0u, 0u));
    }
}

/// Plane (A) – capsule (B): one point per segment end below the margin.
fn contact_plane_capsule(a: Shape, b: Shape, margin: f32) {
    let n = m3_col(a.rot, 2u);
    let axis = m3_col(b.rot, 2u) * b.size.y;
    let r = b.size.x;
    for (var end = 0u; end < 2u; end++) {
        var e = b.pos - axis;
        if (end == 1u) {
            e = b.pos + axis;
        }
        let height = dot3(n, e - a.pos);
        let dist = height - r;
        if (dist < margin) {
            push_contact(e - n * height, n, dist, vec2u(0u, end));
        }
    }
}

/// Plane (A) – box (B): the (at most 4) deepest corners below the margin.
fn contact_plane_box(a: Shape, b: Shape, margin: f32) {
    let n = m3_col(a.rot, 2u);
    let hc = dot3(n, b.pos - a.pos);
    let nb = m3_tmul(b.rot, n) * b.size;
    var dist: array<f32, 8>;
    var idx: array<u32, 8>;
    var count = 0u;
    for (var c = 0u; c < 8u; c++) {
        var d = hc;
        for (var i = 0u; i < 3u; i++) {
            if (((c >> i) & 1u) == 1u) {
                d += nb[i];
            } else {
                d += -nb[i];
            }
        }
        if (d < margin) {
            dist[count] = d;
            idx[count] = c;
            count += 1u;
        }
    }
    let keep = min(count, 4u);
    for (var k = 0u; k < keep; k++) {
        var m = k;
        for (var j = k + 1u; j < count; j++) {
            if (dist[j] < dist[m]) {
                m = j;
            }
        }
        let td = dist[k];
        dist[k] = dist[m];
        dist[m] = td;
        let ti = idx[k];
        idx[k] = idx[m];
        idx[m] = ti;
    }
    for (var k = 0u; k < keep; k++) {
        let c = idx[k];
        let local = vec3f(
            select(-b.size.x, b.size.x, (c & 1u) == 1u),
            select(-b.size.y, b.size.y, (c & 2u) == 2u),
            select(-b.size.z, b.size.z, (c & 4u) == 4u),
        );
        let corner = b.pos + m3_mul_v(b.rot, local);
        push_contact(corner - n * dist[k], n, dist[k], vec2u(0u, c));
    }
}

// ---------------------------------------------------------------- sphere (analytic/sphere.rs)

/// Sphere (A) – sphere (B).
fn contact_sphere_sphere(a: Shape, b: Shape, margin: f32) {
    let d = b.pos - a.pos;
    let len = norm(d);
    let dist = len - a.size.x - b.size.x;
    if (dist < margin) {
        let n = normalize_or(d, vec3f(0.0, 0.0, 1.0));
        push_contact(a.pos + n * a.size.x, n, dist, vec2u(0u, 0u));
    }
}

/// Sphere (A) – capsule (B).
fn contact_sphere_capsule(a: Shape, b: Shape, margin: f32) {
    let u = m3_col(b.rot, 2u);
    let hl = b.size.y;
    let s = clamp_plain(dot3(a.pos - b.pos, u), -hl, hl);
    let q = b.pos + u * s;
    let d = q - a.pos;
    let dist = norm(d) - a.size.x - b.size.x;
    if (dist < margin) {
        let n = normalize_or(d, any_orthonormal(u));
        push_contact(a.pos + n * a.size.x, n, dist, vec2u(0u, seg_feature(s, hl)));
    }
}

/// Sphere (A) – box (B).
fn contact_sphere_box(a: Shape, b: Shape, margin: f32) {
    let r = a.size.x;
    let h = b.size;
    let pl = m3_tmul(b.rot, a.pos - b.pos);
    let q = min(max(pl, -h), h);
    let diff = q - pl;
    let d2 = norm2(diff);
    if (d2 > F32_MIN_POS) {
        let d = sqrt(d2);
        if (d - r >= margin) {
            return;
        }
        let nl = diff * (1.0 / d);
        let n = m3_mul_v(b.rot, nl);
        var k = vec3u(1u);
        for (var i = 0u; i < 3u; i++) {
            if (pl[i] < -h[i]) {
                k[i] = 0u;
            } else if (pl[i] > h[i]) {
                k[i] = 2u;
            }
        }
        push_contact(a.pos + n * r, n, d - r, vec2u(0u, box_code(k)));
    } else {
        var axis = 0u;
        var depth = h.x - abs(pl.x);
        for (var i = 1u; i < 3u; i++) {
            let di = h[i] - abs(pl[i]);
            if (di < depth) {
                depth = di;
                axis = i;
            }
        }
        let dist = -depth - r;
        if (dist < margin) {
            let sg = sign_of(pl[axis]);
            let n = m3_col(b.rot, axis) * (-sg);
            var k = vec3u(1u);
            k[axis] = side_state(sg);
            push_contact(a.pos + n * r, n, dist, vec2u(0u, box_code(k)));
        }
    }
}

// ---------------------------------------------------------------- capsule (analytic/capsule.rs)

/// Segments with sin θ below this are parallel (capsule.rs PARALLEL_SIN).
const PARALLEL_SIN: f32 = 1e-2;

/// Capsule (A) – capsule (B).
fn contact_capsule_capsule(a: Shape, b: Shape, margin: f32) {
    let ua = m3_col(a.rot, 2u);
    let ha = a.size.y;
    let ra = a.size.x;
    let ub = m3_col(b.rot, 2u);
    let hb = b.size.y;
    let rb = b.size.x;
    let rsum = ra + rb;
    let st = segment_segment(a.pos, ua, ha, b.pos, ub, hb);
    let s = st.x;
    let t = st.y;
    let pa = a.pos + ua * s;
    let d = b.pos + ub * t - pa;
    let len = norm(d);
    let dist = len - rsum;
    if (dist >= margin) {
        return;
    }
    let cr = cross3(ua, ub);
    var n: vec3f;
    if (len > F32_MIN_POS) {
        n = d * (1.0 / len);
    } else {
        let f = normalize_or(cr, any_orthonormal(ua));
        n = f;
        if (dot3(f, b.pos - a.pos) < 0.0) {
            n = -f;
        }
    }
    let tol = tie_tol(ha + hb + rsum);
    let par = PARALLEL_SIN;
    if (norm2(cr) < par * par) {
        let sb0 = dot3(b.pos - ub * hb - a.pos, ua);
        let sb1 = dot3(b.pos + ub * hb - a.pos, ua);
        let lo = max(min(sb0, sb1), -ha);
        let hi = min(max(sb0, sb1), ha);
        if (hi - lo > tol) {
            var deepest = F32_BIG;
            for (var e = 0u; e < 2u; e++) {
                let se = select(hi, lo, e == 0u);
                let p = a.pos + ua * se;
                let te = clamp_plain(dot3(p - b.pos, ub), -hb, hb);
                let de = b.pos + ub * te - p;
                let dist_e = norm(de) - rsum;
                if (dist_e < margin) {
                    let ne = normalize_or(de, n);
                    push_contact(p + ne * ra, ne, dist_e, vec2u(seg_feature(se, ha), seg_feature(te, hb)));
                    deepest = min(deepest, dist_e);
                }
            }
            if (deepest > dist + tol) {
                push_contact(pa + n * ra, n, dist, vec2u(seg_feature(s, ha), seg_feature(t, hb)));
            }
            return;
        }
    }
    push_contact(pa + n * ra, n, dist, vec2u(seg_feature(s, ha), seg_feature(t, hb)));
}

/// A box face (axis, outward sign) when a box-frame normal is face-like.
struct FaceLike {
    found: bool,
    axis: u32,
    sign: f32,
}

fn face_like(nl: vec3f) -> FaceLike {
    let a = abs(nl);
    var i = 2u;
    if (a.x >= a.y && a.x >= a.z) {
        i = 0u;
    } else if (a.y >= a.z) {
        i = 1u;
    }
    return FaceLike(a[i] > FACE_LIKE_COS, i, -sign_of(nl[i]));
}

/// Capsule (A) – box (B).
fn contact_capsule_box(a: Shape, b: Shape, margin: f32) {
    let r = a.size.x;
    let hl = a.size.y;
    let h = b.size;
    let c = m3_tmul(b.rot, a.pos - b.pos);
    let u = m3_tmul(b.rot, m3_col(a.rot, 2u));
    let tol = tie_tol(hl + max_elem(h) + r);
    let sb = segment_box(c, u, hl, h);
    let d = sqrt(sb.d2);
    if (d - r >= margin) {
        return;
    }
    var s_main: f32;
    var nl = vec3f(0.0);
    var dist: f32;
    var code: u32;
    var face = FaceLike(false, 0u, 0.0);
    if (d > tol) {
        let ps = c + u * sb.s;
        var k = vec3u(1u);
        var nclamped = 0u;
        var face_axis = 0u;
        for (var i = 0u; i < 3u; i++) {
            if (ps[i] < -h[i]) {
                k[i] = 0u;
            } else if (ps[i] > h[i]) {
                k[i] = 2u;
            } else {
                continue;
            }
            nclamped += 1u;
            face_axis = i;
        }
        nl = (sb.q - ps) * (1.0 / d);
        if (nclamped == 1u) {
            face = FaceLike(true, face_axis, select(-1.0, 1.0, k[face_axis] == 2u));
        } else {
            face = face_like(nl);
        }
        s_main = sb.s;
        dist = d - r;
        code = box_code(k);
    } else {
        // Segment meets the box: SAT over face normals and u × e_i.
        var best_face = F32_BIG;
        var face_axis = 0u;
        for (var i = 0u; i < 3u; i++) {
            let depth = h[i] + hl * abs(u[i]) - abs(c[i]);
            if (depth < best_face) {
                best_face = depth;
                face_axis = i;
            }
        }
        var best_edge = F32_BIG;
        var edge_dir = vec3f(0.0);
        var edge_axis = 0u;
        for (var i = 0u; i < 3u; i++) {
            let ax = cross3(u, unit3(i));
            let l2 = norm2(ax);
            if (l2 > F32_EPS) {
                let an = ax * (1.0 / sqrt(l2));
                let depth = dot3(h, abs(an)) - abs(dot3(c, an));
                if (depth < best_edge) {
                    best_edge = depth;
                    edge_dir = an * sign_of(dot3(c, an));
                    edge_axis = i;
                }
            }
        }
        let sg_face = sign_of(c[face_axis]);
        if (best_edge < best_face - tol) {
            let i = edge_axis;
            var ec = vec3f(0.0);
            var k = vec3u(1u);
            for (var j = 0u; j < 3u; j++) {
                if (j != i) {
                    let sg = sign_of(edge_dir[j]);
                    ec[j] = sg * h[j];
                    k[j] = side_state(sg);
                }
            }
            let st = segment_segment(c, u, hl, ec, unit3(i), h[i]);
            if (face_like(-edge_dir).found) {
                face = FaceLike(true, face_axis, sg_face);
            }
            s_main = st.x;
            nl = -edge_dir;
            dist = -best_edge - r;
            code = box_code(k);
        } else {
            let i = face_axis;
            var k = vec3u(1u);
            k[i] = side_state(sg_face);
            s_main = -sg_face * sign_of(u[i]) * hl;
            nl[i] = -sg_face;
            dist = -best_face - r;
            code = box_code(k);
            face = FaceLike(true, i, sg_face);
        }
    }
    if (dist >= margin) {
        return;
    }
    let n = m3_mul_v(b.rot, nl);
    let main_pa = b.pos + m3_mul_v(b.rot, c + u * s_main + nl * r);
    let main_feature = vec2u(seg_feature(s_main, hl), code);
    if (!face.found) {
        push_contact(main_pa, n, dist, main_feature);
        return;
    }
    // Face contact: clip the segment to the face rectangle (axes j ≠ i).
    let i = face.axis;
    let sg = face.sign;
    var lo = -hl;
    var hi = hl;
    for (var j = 0u; j < 3u; j++) {
        if (j == i) {
            continue;
        }
        if (u[j] != 0.0) {
            let t0 = (-h[j] - c[j]) / u[j];
            let t1 = (h[j] - c[j]) / u[j];
            lo = max(lo, min(t0, t1));
            hi = min(hi, max(t0, t1));
        } else if (abs(c[j]) > h[j]) {
            hi = lo - 1.0;
        }
    }
    var nf = vec3f(0.0);
    nf[i] = -sg;
    let n_face = m3_mul_v(b.rot, nf);
    var deepest = F32_BIG;
    if (hi >= lo) {
        var ends = 1u;
        if (hi - lo > tol) {
            ends = 2u;
        }
        for (var e = 0u; e < ends; e++) {
            let se = select(hi, lo, e == 0u);
            let p = c + u * se;
            let dist_e = sg * p[i] - h[i] - r;
            if (dist_e < margin) {
                var foot = p;
                foot[i] = sg * h[i];
                let code_e = box_code_of_point(foot, h, tol);
                push_contact(b.pos + m3_mul_v(b.rot, p + nf * r), n_face, dist_e, vec2u(seg_feature(se, hl), code_e));
                deepest = min(deepest, dist_e);
            }
        }
    }
    if (deepest > dist + tol) {
        push_contact(main_pa, n, dist, main_feature);
    }
}

// ---------------------------------------------------------------- box–box (analytic/box_box.rs)

/// Edge axes must beat the best face by this fraction (box_box.rs FACE_BIAS_REL).
const FACE_BIAS_REL: f32 = 1e-3;
/// Skip edge axes with |u_i × v_j|² ≤ this × EPS (box_box.rs EDGE_PARALLEL_EPS).
const EDGE_PARALLEL_EPS: f32 = 1.0;

/// A candidate point of a face manifold (box_box.rs Cand).
struct Cand {
    pa: vec3f,
    n: vec3f,
    dist: f32,
    feature: vec2u,
}

/// An optional candidate.
struct OptCand {
    some: bool,
    c: Cand,
}

fn no_cand() -> OptCand {
    return OptCand(false, Cand(vec3f(0.0), vec3f(0.0), 0.0, vec2u(0u)));
}

// The clipped reference-face manifold (box_box.rs FaceManifold), per invocation.
var<private> face_pts: array<Cand, 16>;
var<private> face_len: u32;

/// box_box.rs end_state: per-axis box state of a segment feature.
fn end_state(f: u32) -> u32 {
    if (f == 0u) {
        return 0u;
    }
    if (f == 1u) {
        return 2u;
    }
    return 1u;
}

/// box_box.rs edge_contact: the edge–edge point for edge axis (i, j, an).
fn edge_contact(a: Shape, b: Shape, cm: M3, i: u32, j: u32, an: vec3f, sep: f32, margin: f32) -> OptCand {
    if (sep >= margin) {
        return no_cand();
    }
    let ha = a.size;
    let hb = b.size;
    let n = m3_mul_v(a.rot, an);
    var oa = vec3f(0.0);
    var ka = vec3u(1u);
    for (var k = 0u; k < 3u; k++) {
        if (k != i) {
            let sg = sign_of(an[k]);
            oa[k] = sg * ha[k];
            ka[k] = side_state(sg);
        }
    }
    let anb = m3_tmul(cm, an);
    var ob = vec3f(0.0);
    var kb = vec3u(1u);
    for (var k = 0u; k < 3u; k++) {
        if (k != j) {
            let sg = -sign_of(anb[k]);
            ob[k] = sg * hb[k];
            kb[k] = side_state(sg);
        }
    }
    let ea = a.pos + m3_mul_v(a.rot, oa);
    let ua = m3_col(a.rot, i);
    let eb = b.pos + m3_mul_v(b.rot, ob);
    let ub = m3_col(b.rot, j);
    let st = segment_segment(ea, ua, ha[i], eb, ub, hb[j]);
    ka[i] = end_state(seg_feature(st.x, ha[i]));
    kb[j] = end_state(seg_feature(st.y, hb[j]));
    return OptCand(true, Cand(ea + ua * st.x, n, sep, vec2u(box_code(ka), box_code(kb))));
}

/// Closest points of two disjoint boxes (box_box.rs box_box_closest).
struct BoxClosest {
    pa: vec3f,
    pb: vec3f,
    dist: f32,
    feature: vec2u,
}

fn box_box_closest(a: Shape, b: Shape, cm: M3, da: vec3f, db: vec3f, tol: f32) -> BoxClosest {
    let ha = a.size;
    let hb = b.size;
    var best_d2 = F32_BIG;
    var best = BoxClosest(vec3f(0.0), vec3f(0.0), 0.0, vec2u(0u));
    for (var side = 0u; side < 2u; side++) {
        var h_edge = hb;
        var h_box = ha;
        if (side == 0u) {
            h_edge = ha;
            h_box = hb;
        }
        for (var i = 0u; i < 3u; i++) {
            let k1 = (i + 1u) % 3u;
            let k2 = (i + 2u) % 3u;
            for (var corner = 0u; corner < 4u; corner++) {
                let s1 = select(-1.0, 1.0, (corner & 1u) == 1u);
                let s2 = select(-1.0, 1.0, (corner & 2u) == 2u);
                var o = vec3f(0.0);
                o[k1] = s1 * h_edge[k1];
                o[k2] = s2 * h_edge[k2];
                var c: vec3f;
                var u: vec3f;
                if (side == 0u) {
                    c = m3_tmul(cm, o) - db;
                    u = m3_row(cm, i);
                } else {
                    c = m3_mul_v(cm, o) + da;
                    u = m3_col(cm, i);
                }
                let sb = segment_box(c, u, h_edge[i], h_box);
                if (sb.d2 < best_d2) {
                    best_d2 = sb.d2;
                    var k = vec3u(1u);
                    k[k1] = side_state(s1);
                    k[k2] = side_state(s2);
                    k[i] = end_state(seg_feature(sb.s, h_edge[i]));
                    let code_edge = box_code(k);
                    let code_box = box_code_of_point(sb.q, h_box, tol);
                    let p = c + u * sb.s;
                    if (side == 0u) {
                        best.pa = b.pos + m3_mul_v(b.rot, p);
                        best.pb = b.pos + m3_mul_v(b.rot, sb.q);
                        best.feature = vec2u(code_edge, code_box);
                    } else {
                        best.pa = a.pos + m3_mul_v(a.rot, sb.q);
                        best.pb = a.pos + m3_mul_v(a.rot, p);
                        best.feature = vec2u(code_box, code_edge);
                    }
                }
            }
        }
    }
    best.dist = norm(best.pb - best.pa);
    return best;
}

/// FaceManifold::cand: a candidate from a point x of the incident box (reference frame).
fn face_cand(
    rf: Shape,
    x: vec3f,
    axis: u32,
    sg: f32,
    hr: vec3f,
    n_ref: vec3f,
    ref_is_a: bool,
    dist: f32,
    ref_code: u32,
    inc_code: u32,
) -> Cand {
    var foot = x;
    foot[axis] = sg * hr[axis];
    if (ref_is_a) {
        return Cand(rf.pos + m3_mul_v(rf.rot, foot), n_ref, dist, vec2u(ref_code, inc_code));
    }
    return Cand(rf.pos + m3_mul_v(rf.rot, x), -n_ref, dist, vec2u(inc_code, ref_code));
}

/// FaceManifold::clip: the incident face clipped against reference face
/// `face_id` (0..3: A's axis, 3..6: B's), points with φ < margin appended to
/// face_pts; returns the SAT witness (incident corner deepest along −n_ref).
fn face_clip(a: Shape, b: Shape, face_id: u32, margin: f32) -> OptCand {
    let ref_is_a = face_id < 3u;
    let axis = face_id % 3u;
    var rf = b;
    var inc = a;
    if (ref_is_a) {
        rf = a;
        inc = b;
    }
    let hr = rf.size;
    let hi = inc.size;
    let sg = sign_of(m3_tmul(rf.rot, inc.pos - rf.pos)[axis]);
    let n_ref = m3_col(rf.rot, axis) * sg;
    let m = m3_tmul(inc.rot, n_ref);
    let am = abs(m);
    var j = 2u;
    if (am.x >= am.y && am.x >= am.z) {
        j = 0u;
    } else if (am.y >= am.z) {
        j = 1u;
    }
    let k = (j + 1u) % 3u;
    let l = (j + 2u) % 3u;
    let tau = -sign_of(m[j]);
    let rot = m3_mul(m3_transpose(rf.rot), inc.rot);
    let t = m3_tmul(rf.rot, inc.pos - rf.pos);
    var ref_k = vec3u(1u);
    ref_k[axis] = side_state(sg);
    let ref_face = box_code(ref_k);
    var poly: array<vec3f, 16>;
    var fin: array<u32, 16>;
    var fref: array<u32, 16>;
    var n = 0u;
    for (var c = 0u; c < 4u; c++) {
        // (sk, sl) = (1, 1), (−1, 1), (−1, −1), (1, −1): cyclic order.
        let sk = select(-1.0, 1.0, c == 0u || c == 3u);
        let sl = select(-1.0, 1.0, c < 2u);
        var v = vec3f(0.0);
        v[j] = tau * hi[j];
        v[k] = sk * hi[k];
        v[l] = sl * hi[l];
        poly[n] = m3_mul_v(rot, v) + t;
        var kk = vec3u(0u);
        kk[j] = side_state(tau);
        kk[k] = side_state(sk);
        kk[l] = side_state(sl);
        fin[n] = box_code(kk);
        fref[n] = ref_face;
        n += 1u;
    }
    var v = vec3f(0.0);
    v[j] = tau * hi[j];
    v[k] = -sign_of(m[k]) * hi[k];
    v[l] = -sign_of(m[l]) * hi[l];
    var kk = vec3u(0u);
    kk[j] = side_state(tau);
    kk[k] = side_state(-sign_of(m[k]));
    kk[l] = side_state(-sign_of(m[l]));
    let x_main = m3_mul_v(rot, v) + t;
    let d_main = sg * x_main[axis] - hr[axis];
    var main = no_cand();
    if (d_main < margin) {
        main = OptCand(true, face_cand(rf, x_main, axis, sg, hr, n_ref, ref_is_a, d_main, ref_face, box_code(kk)));
    }
    // Sutherland–Hodgman against the 4 side planes side·x_sa ≤ hr_sa.
    for (var clip_pass = 0u; clip_pass < 4u; clip_pass++) {
        let sa = (axis + 1u + clip_pass / 2u) % 3u;
        let side = select(-1.0, 1.0, clip_pass % 2u == 0u);
        var np: array<vec3f, 16>;
        var nfin: array<u32, 16>;
        var nfref: array<u32, 16>;
        var nn = 0u;
        for (var e = 0u; e < n; e++) {
            let e2 = (e + 1u) % n;
            let p1 = poly[e];
            let p2 = poly[e2];
            let d1 = side * p1[sa] - hr[sa];
            let d2 = side * p2[sa] - hr[sa];
            if (d1 <= 0.0 && nn < 16u) {
                np[nn] = p1;
                nfin[nn] = fin[e];
                nfref[nn] = fref[e];
                nn += 1u;
            }
            if (((d1 < 0.0 && d2 > 0.0) || (d1 > 0.0 && d2 < 0.0)) && nn < 16u) {
                let f = d1 / (d1 - d2);
                var x = p1 + (p2 - p1) * f;
                x[sa] = side * hr[sa];
                np[nn] = x;
                nfin[nn] = box_code_join(fin[e], fin[e2]);
                var rk = box_code_states(box_code_join(fref[e], fref[e2]));
                rk[sa] = side_state(side);
                nfref[nn] = box_code(rk);
                nn += 1u;
            }
        }
        poly = np;
        fin = nfin;
        fref = nfref;
        n = nn;
        if (n == 0u) {
            return main;
        }
    }
    for (var e = 0u; e < n; e++) {
        let x = poly[e];
        let dist = sg * x[axis] - hr[axis];
        if (dist < margin) {
            face_pts[face_len] = face_cand(rf, x, axis, sg, hr, n_ref, ref_is_a, dist, fref[e], fin[e]);
            face_len += 1u;
        }
    }
    return main;
}

/// FaceManifold::emit: adds `main` when no clipped point is as deep (within
/// tol), drops the shallowest points beyond MAX_MANIFOLD, writes the rest.
fn face_emit(main: OptCand, tol: f32) {
    if (main.some && face_len < 16u) {
        var represented = false;
        for (var e = 0u; e < face_len; e++) {
            represented = represented || face_pts[e].dist <= main.c.dist + tol;
        }
        if (!represented) {
            face_pts[face_len] = main.c;
            face_len += 1u;
        }
    }
    while (face_len > MAX_MANIFOLD) {
        var worst = 0u;
        for (var e = 1u; e < face_len; e++) {
            if (face_pts[e].dist > face_pts[worst].dist) {
                worst = e;
            }
        }
        for (var e = worst; e + 1u < face_len; e++) {
            face_pts[e] = face_pts[e + 1u];
        }
        face_len -= 1u;
    }
    for (var e = 0u; e < face_len; e++) {
        let p = face_pts[e];
        push_contact(p.pa, p.n, p.dist, p.feature);
    }
}

/// Box (A) – box (B): SAT over 15 axes, clipped face manifold or edge–edge
/// point, exact distance for separated boxes.
fn contact_box_box(a: Shape, b: Shape, margin: f32) {
    let ha = a.size;
    let hb = b.size;
    let tol = tie_tol(max_elem(ha) + max_elem(hb));
    let cm = m3_mul(m3_transpose(a.rot), b.rot);
    let d = b.pos - a.pos;
    let da = m3_tmul(a.rot, d);
    let db = m3_tmul(b.rot, d);

    var best_face = -F32_BIG;
    var face_id = 0u;
    for (var i = 0u; i < 3u; i++) {
        let row = m3_row(cm, i);
        let rb = hb.x * abs(row.x) + hb.y * abs(row.y) + hb.z * abs(row.z);
        let sep = abs(da[i]) - ha[i] - rb;
        if (sep >= margin) {
            return;
        }
        if (sep > best_face + tol) {
            best_face = sep;
            face_id = i;
        }
    }
    for (var j = 0u; j < 3u; j++) {
        let ra = ha.x * abs(cm.r0[j]) + ha.y * abs(cm.r1[j]) + ha.z * abs(cm.r2[j]);
        let sep = abs(db[j]) - hb[j] - ra;
        if (sep >= margin) {
            return;
        }
        if (sep > best_face + tol) {
            best_face = sep;
            face_id = 3u + j;
        }
    }
    var best_edge = -F32_BIG;
    var edge_i = 0u;
    var edge_j = 0u;
    var edge_an = vec3f(0.0);
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            let cj = m3_col(cm, j);
            let ax = cross3(unit3(i), cj);
            let l2 = norm2(ax);
            if (l2 <= EDGE_PARALLEL_EPS * F32_EPS) {
                continue;
            }
            let an = ax * (1.0 / sqrt(l2));
            let ra = dot3(ha, abs(an));
            let rb = dot3(hb, abs(m3_tmul(cm, an)));
            let proj = dot3(an, da);
            let sep = abs(proj) - ra - rb;
            if (sep >= margin) {
                return;
            }
            if (sep > best_edge) {
                best_edge = sep;
                edge_i = i;
                edge_j = j;
                edge_an = an * sign_of(proj);
            }
        }
    }
    var face_like_edge = false;
    if (best_edge > -F32_BIG) {
        face_like_edge = max(max_elem(abs(edge_an)), max_elem(abs(m3_tmul(cm, edge_an)))) > FACE_LIKE_COS;
    }
    let use_edge = !face_like_edge && best_edge > best_face + tol + FACE_BIAS_REL * abs(best_face);
    let max_sep = max(best_face, best_edge);

    face_len = 0u;
    if (max_sep > tol) {
        // Separated: exact distance.
        let cl = box_box_closest(a, b, cm, da, db, tol);
        if (cl.dist >= margin) {
            return;
        }
        let n = (cl.pb - cl.pa) * (1.0 / cl.dist);
        if (use_edge) {
            push_contact(cl.pa, n, cl.dist, cl.feature);
        } else {
            face_clip(a, b, face_id, margin);
            face_emit(OptCand(true, Cand(cl.pa, n, cl.dist, cl.feature)), tol);
        }
        return;
    }
    if (use_edge) {
        let e = edge_contact(a, b, cm, edge_i, edge_j, edge_an, best_edge, margin);
        if (e.some) {
            push_contact(e.c.pa, e.c.n, e.c.dist, e.c.feature);
        }
        return;
    }
    let main = face_clip(a, b, face_id, margin);
    if (best_edge > best_face + tol) {
        // The face was kept by the bias; the exact edge–edge point is added.
        let e = edge_contact(a, b, cm, edge_i, edge_j, edge_an, best_edge, margin);
        if (e.some && face_len < 16u) {
            face_pts[face_len] = e.c;
            face_len += 1u;
        }
        face_emit(no_cand(), tol);
    } else {
        face_emit(main, tol);
    }
}

// ================================================================ convex narrow phase (narrowphase/convex*.rs)
//
// Pairs with a cylinder, ellipsoid or convex mesh: GJK on the cores, EPA
// when they overlap, Newton refinement on smooth optima, a face certificate
// for separated flat contacts, and clipped manifolds for flat features; the
// plane pairs and sphere–cylinder are closed-form. Fixed-size arrays and the
// CPU's iteration caps, except EPA: the CPU allows 128 expansions, the GPU
// EPA_MAX_ITERS = 64, whose polytope and the clipping buffers (14.6 KB,
// EpaScratch in data.wgsl) live in a per-thread block of `collision_scratch`.
// f32 EPA reaches its tolerance within 64 expansions on polytopes and in all
// but a few percent of the deep overlaps of curved shapes (ellipsoids); there
// the GPU stops earlier and takes the CPU's own fallback, Newton refinement
// from the best direction so far (which converges to the same optimum to
// round-off when the contact is smooth) or else the best certified
// direction: a slightly less converged depth and a less converged normal
// (tests/gpu_parity_collision.rs counts and bounds these cases).

// ---------------------------------------------------------------- support functions (convex/support.rs)

/// A support point and its feature id.
struct SupportPoint {
    p: vec3f,
    f: u32,
}

fn mesh_vertex(s: Shape, i: u32) -> vec3f {
    return mesh_vertices[collision_geoms[s.geom].vert_adr + i].xyz;
}

/// Radius by which the core of s is inflated (spheres, capsules).
fn core_radius(s: Shape) -> f32 {
    if (s.kind == GEOM_SPHERE || s.kind == GEOM_CAPSULE) {
        return s.size.x;
    }
    return 0.0;
}

/// Support point of the core of s in the geom-frame direction d.
fn support_core_local(s: Shape, d: vec3f) -> SupportPoint {
    switch s.kind {
        case GEOM_CAPSULE: {
            let top = d.z >= 0.0;
            return SupportPoint(vec3f(0.0, 0.0, select(-s.size.y, s.size.y, top)), select(0u, 1u, top));
        }
        case GEOM_BOX: {
            let px = d.x >= 0.0;
            let py = d.y >= 0.0;
            let pz = d.z >= 0.0;
            let p = vec3f(select(-s.size.x, s.size.x, px), select(-s.size.y, s.size.y, py), select(-s.size.z, s.size.z, pz));
            return SupportPoint(p, select(0u, 1u, px) | (select(0u, 1u, py) << 1u) | (select(0u, 1u, pz) << 2u));
        }
        case GEOM_CYLINDER: {
            let rho2 = d.x * d.x + d.y * d.y;
            let z = select(-s.size.y, s.size.y, d.z >= 0.0);
            if (rho2 > F32_MIN_POS) {
                let k = s.size.x / sqrt(rho2);
                return SupportPoint(vec3f(d.x * k, d.y * k, z), 0u);
            }
            return SupportPoint(vec3f(0.0, 0.0, z), 0u);
        }
        case GEOM_ELLIPSOID: {
            let ad = s.size * d;
            let n = norm(ad);
            if (n > F32_MIN_POS) {
                return SupportPoint(s.size * ad * (1.0 / n), 0u);
            }
            return SupportPoint(vec3f(0.0), 0u);
        }
        case GEOM_MESH: {
            let cg = collision_geoms[s.geom];
            var best = -F32_BIG;
            var idx = 0u;
            for (var i = 0u; i < cg.vert_num; i++) {
                let p = mesh_vertices[cg.vert_adr + i];
                let v = d.x * p.x + d.y * p.y + d.z * p.z;
                if (v > best) {
                    best = v;
                    idx = i;
                }
            }
            if (cg.vert_num == 0u) {
                return SupportPoint(vec3f(0.0), 0u);
            }
            return SupportPoint(mesh_vertices[cg.vert_adr + idx].xyz, idx);
        }
        default: {
            // Plane, sphere: the origin.
            return SupportPoint(vec3f(0.0), 0u);
        }
    }
}

/// Support point (world) of the core of s in the world direction d.
fn support_core(s: Shape, d: vec3f) -> SupportPoint {
    let l = support_core_local(s, m3_tmul(s.rot, d));
    return SupportPoint(s.pos + m3_mul_v(s.rot, l.p), l.f);
}

/// Support point (world) of the whole shape (core inflated by core_radius).
fn support_full(s: Shape, d: vec3f) -> SupportPoint {
    let c = support_core(s, d);
    let r = core_radius(s);
    if (r > 0.0) {
        return SupportPoint(c.p + normalize3(d) * r, c.f);
    }
    return c;
}

/// A rough size of s (m): radius of a ball about the origin containing it.
fn bounding_radius(s: Shape) -> f32 {
    let z = s.size;
    switch s.kind {
        case GEOM_SPHERE: {
            return z.x;
        }
        case GEOM_CAPSULE: {
            return z.x + z.y;
        }
        case GEOM_BOX: {
            return norm(z);
        }
        case GEOM_CYLINDER: {
            return sqrt(z.x * z.x + z.y * z.y);
        }
        case GEOM_ELLIPSOID: {
            return max_elem(z);
        }
        case GEOM_MESH: {
            return collision_geoms[s.geom].mesh_radius;
        }
        default: {
            return 0.0;
        }
    }
}

// ---------------------------------------------------------------- GJK (convex/gjk.rs)

/// Most GJK iterations (gjk.rs GJK_MAX_ITERS).
const GJK_MAX_ITERS: u32 = 64u;
/// Restarts when round-off stops progress (gjk.rs GJK_MAX_RESTARTS).
const GJK_MAX_RESTARTS: u32 = 2u;
/// gjk_rel_tol and epa_rel_tol in f32.
const GJK_REL_TOL: f32 = 1e-5;
const EPA_REL_TOL: f32 = 1e-5;

const GJK_SEPARATED: u32 = 0u;
const GJK_OVERLAPPING: u32 = 1u;
const GJK_BEYOND: u32 = 2u;

/// A point of K = A − B with its support points and feature ids.
struct CsoPoint {
    w: vec3f,
    a: vec3f,
    b: vec3f,
    fa: u32,
    fb: u32,
}

fn cso_support(a: Shape, b: Shape, d: vec3f) -> CsoPoint {
    let pa = support_core(a, d);
    let pb = support_core(b, -d);
    return CsoPoint(pa.p - pb.p, pa.p, pb.p, pa.f, pb.f);
}

/// Up to 4 points of K with the weights of the point closest to the origin.
struct Simplex {
    pts: array<CsoPoint, 4>,
    bary: vec4f,
    len: u32,
}

/// Weighted sums (w, a, b) of a simplex.
struct SimplexPoints {
    w: vec3f,
    a: vec3f,
    b: vec3f,
}

fn simplex_points(s: Simplex) -> SimplexPoints {
    var r = SimplexPoints(vec3f(0.0), vec3f(0.0), vec3f(0.0));
    var ss = s;
    for (var i = 0u; i < ss.len; i++) {
        let l = ss.bary[i];
        r.w += ss.pts[i].w * l;
        r.a += ss.pts[i].a * l;
        r.b += ss.pts[i].b * l;
    }
    return r;
}

/// Feature ids of the vertex with the largest weight.
fn simplex_features(s: Simplex) -> vec2u {
    var ss = s;
    var k = 0u;
    for (var i = 1u; i < ss.len; i++) {
        if (ss.bary[i] > ss.bary[k]) {
            k = i;
        }
    }
    return vec2u(ss.pts[k].fa, ss.pts[k].fb);
}

/// Simplex::reduce: keeps the vertices with a positive weight, in order.
fn simplex_reduce(s: ptr<function, Simplex>, bary: vec4f) {
    var n = 0u;
    for (var i = 0u; i < (*s).len; i++) {
        if (bary[i] > 0.0) {
            (*s).pts[n] = (*s).pts[i];
            (*s).bary[n] = bary[i];
            n += 1u;
        }
    }
    if (n == 0u) {
        (*s).pts[0] = (*s).pts[(*s).len - 1u];
        (*s).bary[0] = 1.0;
        n = 1u;
    }
    (*s).len = n;
}

fn closest_on_segment(a: vec3f, b: vec3f) -> vec2f {
    let ab = b - a;
    let l2 = norm2(ab);
    if (l2 <= F32_MIN_POS) {
        return vec2f(1.0, 0.0);
    }
    let t = min(max(-dot3(a, ab) / l2, 0.0), 1.0);
    return vec2f(1.0 - t, t);
}

/// Barycentric weights of the point of triangle (a, b, c) closest to the origin.
fn closest_on_triangle(a: vec3f, b: vec3f, c: vec3f) -> vec3f {
    let ab = b - a;
    let ac = c - a;
    let d1 = -dot3(ab, a);
    let d2 = -dot3(ac, a);
    if (d1 <= 0.0 && d2 <= 0.0) {
        return vec3f(1.0, 0.0, 0.0);
    }
    let d3 = -dot3(ab, b);
    let d4 = -dot3(ac, b);
    if (d3 >= 0.0 && d4 <= d3) {
        return vec3f(0.0, 1.0, 0.0);
    }
    let vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 && d1 - d3 > 0.0) {
        let v = d1 / (d1 - d3);
        return vec3f(1.0 - v, v, 0.0);
    }
    let d5 = -dot3(ab, c);
    let d6 = -dot3(ac, c);
    if (d6 >= 0.0 && d5 <= d6) {
        return vec3f(0.0, 0.0, 1.0);
    }
    let vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 && d2 - d6 > 0.0) {
        let w = d2 / (d2 - d6);
        return vec3f(1.0 - w, 0.0, w);
    }
    let va = d3 * d6 - d5 * d4;
    if (va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 && (d4 - d3) + (d5 - d6) > 0.0) {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return vec3f(0.0, 1.0 - w, w);
    }
    let sum = va + vb + vc;
    if (sum > F32_MIN_POS && va >= 0.0 && vb >= 0.0 && vc >= 0.0) {
        let v = vb / sum;
        let w = vc / sum;
        return vec3f(1.0 - v - w, v, w);
    }
    // Degenerate (collinear): best of the three edges.
    var best = vec3f(1.0, 0.0, 0.0);
    var best_d = norm2(a);
    for (var e = 0u; e < 3u; e++) {
        var p = a;
        var q = b;
        var i = 0u;
        var j = 1u;
        if (e == 1u) {
            q = c;
            j = 2u;
        } else if (e == 2u) {
            p = b;
            q = c;
            i = 1u;
            j = 2u;
        }
        let l = closest_on_segment(p, q);
        let d = norm2(p * l.x + q * l.y);
        if (d < best_d) {
            best_d = d;
            best = vec3f(0.0);
            best[i] = l.x;
            best[j] = l.y;
        }
    }
    return best;
}

fn tet_volume(a: vec3f, b: vec3f, c: vec3f, d: vec3f) -> f32 {
    return dot3(b - a, cross3(c - a, d - a));
}

/// Weights of the point of tetrahedron p closest to the origin, and whether the origin is inside.
struct TetClosest {
    bary: vec4f,
    inside: bool,
}

fn closest_on_tetrahedron(p0: vec3f, p1: vec3f, p2: vec3f, p3: vec3f) -> TetClosest {
    var p = array<vec3f, 4>(p0, p1, p2, p3);
    // Face opposite vertex j.
    var faces = array<vec3u, 4>(vec3u(1u, 3u, 2u), vec3u(0u, 2u, 3u), vec3u(0u, 3u, 1u), vec3u(0u, 1u, 2u));
    let z = vec3f(0.0);
    var c = vec4f(tet_volume(z, p1, p2, p3), tet_volume(p0, z, p2, p3), tet_volume(p0, p1, z, p3), tet_volume(p0, p1, p2, z));
    let det = c.x + c.y + c.z + c.w;
    let mag = abs(c.x) + abs(c.y) + abs(c.z) + abs(c.w);
    let flat = abs(det) <= 1e3 * F32_EPS * mag;
    if (!flat && c.x * det > 0.0 && c.y * det > 0.0 && c.z * det > 0.0 && c.w * det > 0.0) {
        return TetClosest(vec4f(c.x / det, c.y / det, c.z / det, c.w / det), true);
    }
    var best = vec4f(0.0);
    var best_d = F32_BIG;
    for (var j = 0u; j < 4u; j++) {
        if (!flat && c[j] * det > 0.0) {
            continue;
        }
        let f = faces[j];
        let l = closest_on_triangle(p[f.x], p[f.y], p[f.z]);
        let d = norm2(p[f.x] * l.x + p[f.y] * l.y + p[f.z] * l.z);
        if (d < best_d) {
            best_d = d;
            best = vec4f(0.0);
            best[f.x] = l.x;
            best[f.y] = l.y;
            best[f.z] = l.z;
        }
    }
    return TetClosest(best, false);
}

/// Result of gjk (gjk.rs GjkResult).
struct GjkResult {
    status: u32,
    simplex: Simplex,
    dist: f32,
    v: vec3f,
    normal: vec3f,
    lower: f32,
}

fn gjk(a: Shape, b: Shape, cutoff: f32, scale: f32, eps_rel: f32) -> GjkResult {
    var d = b.pos - a.pos;
    if (norm2(d) <= F32_MIN_POS) {
        d = vec3f(1.0, 0.0, 0.0);
    }
    var s: Simplex;
    s.pts[0] = cso_support(a, b, d);
    s.bary = vec4f(1.0, 0.0, 0.0, 0.0);
    s.len = 1u;
    let start = GjkResult(GJK_SEPARATED, s, norm(s.pts[0].w), s.pts[0].w, vec3f(0.0, 0.0, 1.0), -F32_BIG);
    return gjk_resume(a, b, cutoff, scale, eps_rel, start);
}

fn gjk_overlap(s: Simplex, v: vec3f) -> GjkResult {
    return GjkResult(GJK_OVERLAPPING, s, 0.0, v, vec3f(0.0, 0.0, 1.0), 0.0);
}

/// Continues GJK from a Separated result `prev` to the relative gap eps_rel.
fn gjk_resume(a: Shape, b: Shape, cutoff: f32, scale: f32, eps_rel: f32, prev: GjkResult) -> GjkResult {
    let touch = 64.0 * F32_EPS * scale;
    var s = prev.simplex;
    var v = prev.v;
    var vv = norm2(v);
    var lower = prev.lower;
    var normal = prev.normal;
    var best = s;
    var best_vv = F32_BIG;
    var restarts = 0u;
    for (var it = 0u; it < GJK_MAX_ITERS; it++) {
        if (vv <= touch * touch) {
            return gjk_overlap(s, v);
        }
        let p = cso_support(a, b, -v);
        let vw = dot3(v, p.w);
        let vn = sqrt(vv);
        if (vw / vn > lower) {
            lower = vw / vn;
            normal = -v * (1.0 / vn);
        }
        if (lower > cutoff) {
            return GjkResult(GJK_BEYOND, s, vn, v, normal, lower);
        }
        let gap = (vv - vw) / vn;
        if (gap <= max(eps_rel * vn, 16.0 * F32_EPS * scale)) {
            break;
        }
        let prev_s = s;
        s.pts[s.len] = p;
        s.len += 1u;
        var bary = vec4f(0.0);
        var inside = false;
        if (s.len == 2u) {
            let l = closest_on_segment(s.pts[0].w, s.pts[1].w);
            bary = vec4f(l.x, l.y, 0.0, 0.0);
        } else if (s.len == 3u) {
            let l = closest_on_triangle(s.pts[0].w, s.pts[1].w, s.pts[2].w);
            bary = vec4f(l, 0.0);
        } else {
            let t = closest_on_tetrahedron(s.pts[0].w, s.pts[1].w, s.pts[2].w, s.pts[3].w);
            bary = t.bary;
            inside = t.inside;
        }
        if (inside) {
            s.bary = vec4f(0.0);
            return gjk_overlap(s, vec3f(0.0));
        }
        simplex_reduce(&s, bary);
        let nv = simplex_points(s).w;
        let nvv = norm2(nv);
        if (nvv >= vv) {
            if (vv < best_vv) {
                best = prev_s;
                best_vv = vv;
            }
            if (restarts == GJK_MAX_RESTARTS) {
                break;
            }
            restarts += 1u;
            s.pts[0] = p;
            s.bary[0] = 1.0;
            s.len = 1u;
            v = p.w;
            vv = norm2(v);
            continue;
        }
        v = nv;
        vv = nvv;
    }
    if (best_vv < vv) {
        s = best;
        vv = best_vv;
        v = simplex_points(s).w;
    }
    if (vv <= touch * touch) {
        return gjk_overlap(s, v);
    }
    return GjkResult(GJK_SEPARATED, s, sqrt(vv), v, normal, lower);
}

// ---------------------------------------------------------------- Newton refinement (convex/epa.rs refine)

/// Most Newton steps (epa.rs REFINE_MAX_ITERS).
const REFINE_MAX_ITERS: u32 = 8u;
/// Finite-difference step: cbrt(f32::EPSILON), rounded as f32::cbrt rounds it.
const REFINE_EPS: f32 = 0.0049215667;

struct Refined {
    depth: f32,
    normal: vec3f,
    residual: f32,
    pa: vec3f,
    pb: vec3f,
    features: vec2u,
}

/// Newton on the sphere of directions minimising the support function of K = A − B from m0.
fn refine(a: Shape, b: Shape, m0: vec3f, scale: f32) -> Refined {
    let eps = REFINE_EPS;
    var m = m0;
    var q = cso_support(a, b, m);
    var u = dot3(q.w, m);
    for (var it = 0u; it < REFINE_MAX_ITERS; it++) {
        let t1 = any_orthonormal(m);
        let t2 = cross3(m, t1);
        let g = vec2f(dot3(q.w, t1), dot3(q.w, t2));
        if (sqrt(g.x * g.x + g.y * g.y) <= F32_EPS * 16.0 * scale) {
            break;
        }
        let q1 = cso_support(a, b, normalize3(m + t1 * eps));
        let q2 = cso_support(a, b, normalize3(m + t2 * eps));
        let d1 = (q1.w - q.w) * (1.0 / eps);
        let d2 = (q2.w - q.w) * (1.0 / eps);
        let off = 0.5 * (dot3(d2, t1) + dot3(d1, t2));
        let h11 = dot3(d1, t1) - u;
        let h22 = dot3(d2, t2) - u;
        let det = h11 * h22 - off * off;
        if (!(h11 > 0.0 && h22 > 0.0 && det > 0.0)) {
            break;
        }
        let x1 = -(h22 * g.x - off * g.y) / det;
        let x2 = -(h11 * g.y - off * g.x) / det;
        var step = 1.0;
        var accepted = false;
        let res = norm(q.w - m * u);
        for (var k = 0u; k < 3u; k++) {
            let mn = normalize3(m + (t1 * x1 + t2 * x2) * step);
            let qn = cso_support(a, b, mn);
            let un = dot3(qn.w, mn);
            let tie = un <= u + 4.0 * F32_EPS * abs(u) && norm(qn.w - mn * un) < res;
            if (un < u || tie) {
                m = mn;
                q = qn;
                u = min(un, u);
                accepted = true;
                break;
            }
            step *= 0.25;
        }
        if (!accepted) {
            break;
        }
    }
    let res = norm(q.w - m * u);
    return Refined(u, m, res, q.a, q.b, vec2u(q.fa, q.fb));
}

// ---------------------------------------------------------------- EPA (convex/epa.rs)

/// Most EPA expansions on the GPU (the CPU's EPA_MAX_ITERS is 128; see the
/// top of this section). EPA_NV, EPA_NF, EPA_NE size `EpaScratch` (data.wgsl).
const EPA_MAX_ITERS: u32 = 64u;

// The resumable EPA state of this invocation; the polytope itself lives in
// its block of `collision_scratch` (large arrays indexed at run time belong
// in memory, not in private variables: llvmpipe turned ours into code that
// took minutes to compile).
/// Block of `collision_scratch` holding this invocation's polytope.
var<private> epa_block: u32;
var<private> epa_nv: u32;
var<private> epa_nf: u32;
var<private> epa_nfree: u32;
var<private> epa_ne: u32;
var<private> epa_ok: bool;
var<private> epa_done: bool;
var<private> epa_iters: u32;
var<private> epa_scale: f32;
var<private> epa_best_idx: vec3u;
var<private> epa_best_n: vec3f;
var<private> epa_best_d: f32;
var<private> epa_best_u: f32;
var<private> epa_min_u: f32;
var<private> epa_min_n: vec3f;

const EPA_ALIVE: u32 = 1u;

/// Polytope vertex i as a CSO point (w = a − b, exactly as cso_support computes it).
fn epa_vertex(i: u32) -> CsoPoint {
    let v = collision_scratch[epa_block].v[i];
    return CsoPoint(v.a - v.b, v.a, v.b, v.fa, v.fb);
}
fn epa_vertex_w(i: u32) -> vec3f {
    let v = collision_scratch[epa_block].v[i];
    return v.a - v.b;
}
fn epa_set_vertex(i: u32, p: CsoPoint) {
    collision_scratch[epa_block].v[i] = EpaVertex(p.a, p.fa, p.b, p.fb);
}
fn epa_alive(g: u32) -> bool {
    return (collision_scratch[epa_block].f[g].flags & EPA_ALIVE) != 0u;
}

/// Polytope::add_face: false when out of capacity or degenerate.
fn epa_add_face(i: u32, j: u32, k: u32, tiny: f32) -> bool {
    let a = epa_vertex_w(i);
    let b = epa_vertex_w(j);
    let c = epa_vertex_w(k);
    let e1 = b - a;
    let e2 = c - a;
    let n = cross3(e1, e2);
    let len = norm(n);
    if (!(len > 4.0 * tiny * (norm(e1) + norm(e2)))) {
        return false;
    }
    var slot: u32;
    if (epa_nfree > 0u) {
        epa_nfree -= 1u;
        slot = collision_scratch[epa_block].free[epa_nfree];
    } else if (epa_nf < EPA_NF) {
        epa_nf += 1u;
        slot = epa_nf - 1u;
    } else {
        return false;
    }
    let nn = n * (1.0 / len);
    let d = (dot3(nn, a) + dot3(nn, b) + dot3(nn, c)) / 3.0;
    collision_scratch[epa_block].f[slot] = EpaFace(nn, d, vec3u(i, j, k), EPA_ALIVE);
    return true;
}

fn epa_kill(f: u32) {
    collision_scratch[epa_block].f[f].flags &= ~EPA_ALIVE;
    collision_scratch[epa_block].free[epa_nfree] = f;
    epa_nfree += 1u;
}

/// Adds edge (a, b) to the horizon, or cancels it against its twin (b, a).
fn epa_toggle_edge(a: u32, b: u32) -> bool {
    for (var e = 0u; e < epa_ne; e++) {
        let edge = collision_scratch[epa_block].edges[e];
        if (edge.x == b && edge.y == a) {
            epa_ne -= 1u;
            collision_scratch[epa_block].edges[e] = collision_scratch[epa_block].edges[epa_ne];
            return true;
        }
    }
    if (epa_ne == EPA_NE) {
        return false;
    }
    collision_scratch[epa_block].edges[epa_ne] = vec2u(a, b);
    epa_ne += 1u;
    return true;
}

/// Epa::new: the initial tetrahedron from the GJK simplex.
fn epa_new(a: Shape, b: Shape, s: Simplex, scale: f32) {
    epa_nv = 0u;
    epa_nf = 0u;
    epa_nfree = 0u;
    epa_ok = false;
    epa_done = false;
    epa_iters = 0u;
    epa_scale = scale;
    epa_best_idx = vec3u(0u, 1u, 2u);
    epa_best_n = vec3f(0.0, 0.0, 1.0);
    epa_best_d = 0.0;
    epa_best_u = F32_BIG;
    epa_min_u = F32_BIG;
    epa_min_n = vec3f(0.0, 0.0, 1.0);
    epa_ok = epa_init(a, b, s);
}

fn epa_init(a: Shape, b: Shape, s: Simplex) -> bool {
    let tiny = 64.0 * F32_EPS * epa_scale;
    let tiny_r = 4.0 * F32_EPS * epa_scale;
    var ss = s;
    let n0 = clamp(ss.len, 1u, 4u);
    for (var i = 0u; i < n0; i++) {
        epa_set_vertex(i, ss.pts[i]);
    }
    epa_nv = n0;
    if (epa_nv == 1u) {
        for (var k = 0u; k < 6u; k++) {
            var ax = vec3f(0.0);
            ax[k / 2u] = select(1.0, -1.0, k % 2u == 1u);
            let q = cso_support(a, b, ax);
            if (norm(q.w - epa_vertex_w(0u)) > tiny) {
                epa_set_vertex(1u, q);
                epa_nv = 2u;
                break;
            }
        }
    }
    if (epa_nv == 2u) {
        let e = normalize3(epa_vertex_w(1u) - epa_vertex_w(0u));
        let t1 = any_orthonormal(e);
        let t2 = cross3(e, t1);
        let c60 = 0.5;
        let s60 = 0.8660254;
        var dirs = array<vec3f, 6>(
            t1,
            t1 * c60 + t2 * s60,
            t2 * c60 - t1 * s60,
            -t1,
            -t1 * c60 - t2 * s60,
            t1 * c60 - t2 * s60,
        );
        for (var k = 0u; k < 6u; k++) {
            let q = cso_support(a, b, dirs[k]);
            let off = q.w - epa_vertex_w(0u);
            if (norm(off - e * dot3(off, e)) > tiny) {
                epa_set_vertex(2u, q);
                epa_nv = 3u;
                break;
            }
        }
    }
    if (epa_nv == 3u) {
        let v0 = epa_vertex_w(0u);
        let n = normalize3(cross3(epa_vertex_w(1u) - v0, epa_vertex_w(2u) - v0));
        let qp = cso_support(a, b, n);
        let qm = cso_support(a, b, -n);
        let hp = abs(dot3(n, qp.w - v0));
        let hm = abs(dot3(n, qm.w - v0));
        if (max(hp, hm) > tiny) {
            if (hp >= hm) {
                epa_set_vertex(3u, qp);
            } else {
                epa_set_vertex(3u, qm);
            }
            epa_nv = 4u;
        }
    }
    if (epa_nv < 4u) {
        return false;
    }
    let v0 = epa_vertex_w(0u);
    let v1 = epa_vertex_w(1u);
    let v2 = epa_vertex_w(2u);
    let v3 = epa_vertex_w(3u);
    if (dot3(cross3(v1 - v0, v2 - v0), v3 - v0) > 0.0) {
        let t = collision_scratch[epa_block].v[1];
        collision_scratch[epa_block].v[1] = collision_scratch[epa_block].v[2];
        collision_scratch[epa_block].v[2] = t;
    }
    return epa_add_face(0u, 1u, 2u, tiny_r) && epa_add_face(0u, 3u, 1u, tiny_r) && epa_add_face(0u, 2u, 3u, tiny_r)
        && epa_add_face(1u, 3u, 2u, tiny_r);
}

/// Epa::run: expands until the depth gap is at most tol (m), the cap, or round-off stops it.
fn epa_run(a: Shape, b: Shape, tol: f32) -> bool {
    if (!epa_ok || epa_done) {
        return epa_ok && epa_best_u - epa_best_d <= tol;
    }
    let tiny = 64.0 * F32_EPS * epa_scale;
    let tiny_r = 4.0 * F32_EPS * epa_scale;
    // Same expansions as the CPU's, with fewer loop iterations (llvmpipe's
    // budget, see loop_budget_held): the closest-face scan is fused with the
    // previous expansion's final scan (the faces are the same), and the flood
    // fill walks the list of visible faces in slot order instead of every
    // slot (the others are skipped anyway).
    var f = NONE;
    var fd = F32_BIG;
    for (var g = 0u; g < epa_nf; g++) {
        let face = collision_scratch[epa_block].f[g];
        if ((face.flags & EPA_ALIVE) != 0u && face.d < fd) {
            fd = face.d;
            f = g;
        }
    }
    loop {
        if (f == NONE) {
            epa_done = true;
            break;
        }
        let ff = collision_scratch[epa_block].f[f];
        let n = ff.n;
        let q = cso_support(a, b, n);
        let u = dot3(q.w, n);
        epa_best_idx = ff.idx;
        epa_best_n = n;
        epa_best_d = fd;
        epa_best_u = u;
        if (u < epa_min_u) {
            epa_min_u = u;
            epa_min_n = n;
        }
        if (u - fd <= tol) {
            return true;
        }
        if (epa_iters == EPA_MAX_ITERS || epa_nv == EPA_NV) {
            epa_done = true;
            break;
        }
        epa_iters += 1u;
        let qi = epa_nv;
        epa_set_vertex(qi, q);
        epa_nv += 1u;
        // Faces seen from q (not f), in slot order.
        var nvis = 0u;
        for (var g = 0u; g < epa_nf; g++) {
            let face = collision_scratch[epa_block].f[g];
            if ((face.flags & EPA_ALIVE) != 0u && g != f && dot3(face.n, q.w - epa_vertex_w(face.idx.x)) > 0.0) {
                collision_scratch[epa_block].vis[nvis] = g;
                nvis += 1u;
            }
        }
        epa_ne = 0u;
        epa_kill(f);
        var fine = true;
        let idf = ff.idx;
        for (var k = 0u; k < 3u; k++) {
            let ok = epa_toggle_edge(idf[k], idf[(k + 1u) % 3u]);
            fine = fine && ok;
        }
        var changed = nvis > 0u;
        while (changed && fine) {
            changed = false;
            for (var i = 0u; i < nvis; i++) {
                let g = collision_scratch[epa_block].vis[i];
                if (!epa_alive(g)) {
                    continue;
                }
                let id = collision_scratch[epa_block].f[g].idx;
                // The first match decides (the CPU scans on; same result).
                var touches = false;
                for (var k = 0u; k < 3u && !touches; k++) {
                    let x = id[k];
                    let y = id[(k + 1u) % 3u];
                    for (var e = 0u; e < epa_ne; e++) {
                        let edge = collision_scratch[epa_block].edges[e];
                        if (edge.x == y && edge.y == x) {
                            touches = true;
                            break;
                        }
                    }
                }
                if (touches) {
                    epa_kill(g);
                    for (var k = 0u; k < 3u; k++) {
                        let ok = epa_toggle_edge(id[k], id[(k + 1u) % 3u]);
                        fine = fine && ok;
                    }
                    changed = true;
                }
            }
        }
        for (var e = 0u; e < epa_ne; e++) {
            if (!fine) {
                break;
            }
            let edge = collision_scratch[epa_block].edges[e];
            let ok = epa_add_face(edge.x, edge.y, qi, tiny_r);
            fine = fine && ok;
        }
        // No new face closer than the one expanded (else round-off has taken
        // over); the same scan finds the next closest face.
        let fd_prev = fd;
        f = NONE;
        fd = F32_BIG;
        if (fine) {
            for (var g = 0u; g < epa_nf; g++) {
                let face = collision_scratch[epa_block].f[g];
                if ((face.flags & EPA_ALIVE) != 0u) {
                    if (face.d < fd_prev - tiny) {
                        fine = false;
                    }
                    if (face.d < fd) {
                        fd = face.d;
                        f = g;
                    }
                }
            }
        }
        if (!fine || epa_ne < 3u) {
            epa_done = true;
            break;
        }
    }
    return epa_best_u - epa_best_d <= tol;
}

fn epa_converged(tol: f32) -> bool {
    return epa_ok && epa_best_u - epa_best_d <= tol;
}

/// Epa::result: the closest face and its witness points.
struct EpaResult {
    ok: bool,
    depth: f32,
    normal: vec3f,
    pa: vec3f,
    pb: vec3f,
    features: vec2u,
}

fn epa_result() -> EpaResult {
    if (!(epa_ok && is_finite3(epa_best_n) && is_finite_f(epa_best_d))) {
        return EpaResult(false, 0.0, vec3f(0.0, 0.0, 1.0), vec3f(0.0), vec3f(0.0), vec2u(0u));
    }
    let x = epa_vertex(epa_best_idx.x);
    let y = epa_vertex(epa_best_idx.y);
    let z = epa_vertex(epa_best_idx.z);
    let l = closest_on_triangle(x.w, y.w, z.w);
    let pa = x.a * l.x + y.a * l.y + z.a * l.z;
    let pb = x.b * l.x + y.b * l.y + z.b * l.z;
    var heavy = z;
    if (l.x >= l.y && l.x >= l.z) {
        heavy = x;
    } else if (l.y >= l.z) {
        heavy = y;
    }
    return EpaResult(true, epa_best_d, epa_best_n, pa, pb, vec2u(heavy.fa, heavy.fb));
}

// ---------------------------------------------------------------- manifolds (convex/convex_manifold.rs)

/// Flag on an incident feature id: the point is where the incident edge starting there crosses a side plane.
const FEATURE_CLIPPED: u32 = 0x80000000u;
/// Most vertices of a reference or incident feature.
const MAX_POLY: u32 = 32u;
/// 1 − cos of the largest angle between a reference face normal and the
/// contact normal in f32: max(100 EPS, 1e-12) = 1.1920929e-5.
const ALIGN_TOL: f32 = 1.1920929e-5;

// cos and sin of k·45° (k = 0..7), computed in f64 and rounded to f32 as the CPU does.
var<private> cap_cos: array<f32, 8> = array<f32, 8>(
    1.0, 0.70710677, 6.123234e-17, -0.70710677, -1.0, -0.70710677, -1.8369701e-16, 0.70710677,
);
var<private> cap_sin: array<f32, 8> = array<f32, 8>(
    0.0, 0.70710677, 1.0, 0.70710677, 1.2246469e-16, -0.70710677, -1.0, -0.70710677,
);

/// A polygon (or a segment when n == 2), world coordinates, with vertex ids.
struct Poly {
    p: array<vec3f, MAX_POLY>,
    id: array<u32, MAX_POLY>,
    n: u32,
}

fn poly_push(poly: ptr<function, Poly>, p: vec3f, id: u32) {
    if ((*poly).n < MAX_POLY) {
        (*poly).p[(*poly).n] = p;
        (*poly).id[(*poly).n] = id;
        (*poly).n += 1u;
    }
}

/// Box face 2·axis + (positive) corners, counter-clockwise seen from outside.
fn box_face(s: Shape, axis: u32, positive: bool, poly: ptr<function, Poly>) {
    let j = (axis + 1u) % 3u;
    let k = (axis + 2u) % 3u;
    for (var c = 0u; c < 4u; c++) {
        // (−,−), (+,−), (+,+), (−,+), reversed for the negative face.
        var cc = c;
        if (!positive) {
            cc = 3u - c;
        }
        let sj = cc == 1u || cc == 2u;
        let sk = cc >= 2u;
        var bits = vec3<bool>(false);
        bits[axis] = positive;
        bits[j] = sj;
        bits[k] = sk;
        var p = vec3f(0.0);
        for (var i = 0u; i < 3u; i++) {
            p[i] = select(-s.size[i], s.size[i], bits[i]);
        }
        let id = select(0u, 1u, bits.x) | (select(0u, 1u, bits.y) << 1u) | (select(0u, 1u, bits.z) << 2u);
        poly_push(poly, s.pos + m3_mul_v(s.rot, p), id);
    }
}

/// Cylinder cap as a regular octagon, vertex 0 along the geom-frame radial direction (ex, ey).
fn cylinder_cap(s: Shape, top: bool, ex: f32, ey: f32, poly: ptr<function, Poly>) {
    let r = s.size.x;
    let h = s.size.y;
    let z = select(-h, h, top);
    for (var k = 0u; k < 8u; k++) {
        let c = cap_cos[k];
        let sn = select(-cap_sin[k], cap_sin[k], top);
        let x = c * ex - sn * ey;
        let y = sn * ex + c * ey;
        poly_push(poly, s.pos + m3_mul_v(s.rot, vec3f(r * x, r * y, z)), select(0u, 8u, top) + k);
    }
}

/// A reference face: outward unit normal, face id, cosine with the direction.
struct RefFace {
    found: bool,
    f: vec3f,
    id: u32,
    cos: f32,
}

fn no_ref_face() -> RefFace {
    return RefFace(false, vec3f(0.0), 0u, 0.0);
}

/// The flat face of s whose outward normal is closest to dir, if its cosine ≥ cos_min.
fn reference_face(s: Shape, dir: vec3f, cos_min: f32, poly: ptr<function, Poly>) -> RefFace {
    (*poly).n = 0u;
    let dl = m3_tmul(s.rot, dir);
    switch s.kind {
        case GEOM_BOX: {
            let a = abs(dl);
            var axis = 2u;
            if (a.x >= a.y && a.x >= a.z) {
                axis = 0u;
            } else if (a.y >= a.z) {
                axis = 1u;
            }
            if (a[axis] < cos_min) {
                return no_ref_face();
            }
            let positive = dl[axis] > 0.0;
            box_face(s, axis, positive, poly);
            let sign = select(-1.0, 1.0, positive);
            return RefFace(true, m3_col(s.rot, axis) * sign, 2u * axis + select(0u, 1u, positive), a[axis]);
        }
        case GEOM_CYLINDER: {
            if (abs(dl.z) < cos_min) {
                return no_ref_face();
            }
            let top = dl.z > 0.0;
            cylinder_cap(s, top, 1.0, 0.0, poly);
            let sign = select(-1.0, 1.0, top);
            return RefFace(true, m3_col(s.rot, 2u) * sign, select(0u, 1u, top), abs(dl.z));
        }
        case GEOM_MESH: {
            let cg = collision_geoms[s.geom];
            var best = NONE;
            var best_c = -F32_BIG;
            for (var i = 0u; i < cg.poly_num; i++) {
                let c = dot3(mesh_polygons[cg.poly_adr + i].normal, dl);
                if (c > best_c) {
                    best_c = c;
                    best = i;
                }
            }
            if (best == NONE || best_c < cos_min) {
                return no_ref_face();
            }
            let f = mesh_polygons[cg.poly_adr + best];
            if (f.count > MAX_POLY) {
                return no_ref_face();
            }
            for (var k = 0u; k < f.count; k++) {
                let vi = mesh_polygon_vertices[f.start + k];
                poly_push(poly, s.pos + m3_mul_v(s.rot, mesh_vertex(s, vi)), vi);
            }
            return RefFace(true, m3_mul_v(s.rot, f.normal), best, best_c);
        }
        default: {
            return no_ref_face();
        }
    }
}

/// The feature of s facing dir: a polygon, a segment (n == 2), or nothing (smooth shapes).
fn incident_feature(s: Shape, dir: vec3f, poly: ptr<function, Poly>) -> bool {
    (*poly).n = 0u;
    let dl = m3_tmul(s.rot, dir);
    switch s.kind {
        case GEOM_BOX: {
            let a = abs(dl);
            var axis = 2u;
            if (a.x >= a.y && a.x >= a.z) {
                axis = 0u;
            } else if (a.y >= a.z) {
                axis = 1u;
            }
            box_face(s, axis, dl[axis] > 0.0, poly);
            return true;
        }
        case GEOM_CAPSULE: {
            let off = dir * core_radius(s);
            let ax = m3_col(s.rot, 2u) * s.size.y;
            poly_push(poly, s.pos - ax + off, 0u);
            poly_push(poly, s.pos + ax + off, 1u);
            return true;
        }
        case GEOM_CYLINDER: {
            let rho = sqrt(dl.x * dl.x + dl.y * dl.y);
            var ex = 1.0;
            var ey = 0.0;
            if (rho > 1e-6) {
                ex = dl.x / rho;
                ey = dl.y / rho;
            }
            let top = dl.z > 0.0;
            if (abs(dl.z) * 1.4142135 >= 1.0) {
                cylinder_cap(s, top, ex, ey, poly);
            } else {
                let r = s.size.x;
                let h = s.size.y;
                poly_push(poly, s.pos + m3_mul_v(s.rot, vec3f(r * ex, r * ey, -h)), 16u);
                poly_push(poly, s.pos + m3_mul_v(s.rot, vec3f(r * ex, r * ey, h)), 17u);
            }
            return true;
        }
        case GEOM_MESH: {
            let cg = collision_geoms[s.geom];
            var sv = 0u;
            var best = -F32_BIG;
            for (var i = 0u; i < cg.vert_num; i++) {
                let v = dot3(mesh_vertex(s, i), dl);
                if (v > best) {
                    best = v;
                    sv = i;
                }
            }
            var bf = NONE;
            var best_c = -F32_BIG;
            for (var i = 0u; i < cg.poly_num; i++) {
                let f = mesh_polygons[cg.poly_adr + i];
                let c = dot3(f.normal, dl);
                if (c > best_c) {
                    var contains = false;
                    for (var k = 0u; k < f.count; k++) {
                        contains = contains || mesh_polygon_vertices[f.start + k] == sv;
                    }
                    if (contains) {
                        best_c = c;
                        bf = i;
                    }
                }
            }
            if (bf == NONE) {
                return false;
            }
            let f = mesh_polygons[cg.poly_adr + bf];
            if (f.count > MAX_POLY) {
                return false;
            }
            for (var k = 0u; k < f.count; k++) {
                let vi = mesh_polygon_vertices[f.start + k];
                poly_push(poly, s.pos + m3_mul_v(s.rot, mesh_vertex(s, vi)), vi);
            }
            return true;
        }
        default: {
            return false;
        }
    }
}


/// Clips the incident polygon/segment against the side planes of the
/// reference polygon (outward normal f) into the scratch's clip_out/clip_ids
/// (large arrays indexed at run time live in memory; see the EPA state);
/// returns the count.
fn clip_poly(inc: ptr<function, Poly>, rf: ptr<function, Poly>, f: vec3f) -> u32 {
    let rn = (*rf).n;
    if ((*inc).n == 2u) {
        let p0 = (*inc).p[0];
        let p1 = (*inc).p[1];
        var t0 = 0.0;
        var t1 = 1.0;
        var c0 = false;
        var c1 = false;
        for (var i = 0u; i < rn; i++) {
            let a = (*rf).p[i];
            let side = cross3(f, (*rf).p[(i + 1u) % rn] - a);
            let d0 = dot3(side, p0 - a);
            let d1 = dot3(side, p1 - a);
            if (d0 < 0.0 && d1 < 0.0) {
                return 0u;
            }
            if (d0 < 0.0) {
                let t = d0 / (d0 - d1);
                if (t > t0) {
                    t0 = t;
                    c0 = true;
                }
            } else if (d1 < 0.0) {
                let t = d0 / (d0 - d1);
                if (t < t1) {
                    t1 = t;
                    c1 = true;
                }
            }
        }
        if (t0 > t1) {
            return 0u;
        }
        let e = p1 - p0;
        collision_scratch[epa_block].clip_out[0] = p0 + e * t0;
        collision_scratch[epa_block].clip_ids[0] = select((*inc).id[0], (*inc).id[0] | FEATURE_CLIPPED, c0);
        collision_scratch[epa_block].clip_out[1] = p0 + e * t1;
        collision_scratch[epa_block].clip_ids[1] = select((*inc).id[1], (*inc).id[0] | FEATURE_CLIPPED, c1);
        return 2u;
    }
    var n = (*inc).n;
    for (var i = 0u; i < n; i++) {
        collision_scratch[epa_block].clip_out[i] = (*inc).p[i];
        collision_scratch[epa_block].clip_ids[i] = (*inc).id[i];
    }
    for (var i = 0u; i < rn; i++) {
        if (n == 0u) {
            break;
        }
        let a = (*rf).p[i];
        let side = cross3(f, (*rf).p[(i + 1u) % rn] - a);
        var m = 0u;
        for (var j = 0u; j < n; j++) {
            let jp = (j + n - 1u) % n;
            let s = collision_scratch[epa_block].clip_out[jp];
            let e = collision_scratch[epa_block].clip_out[j];
            let ds = dot3(side, s - a);
            let de = dot3(side, e - a);
            if ((ds >= 0.0) != (de >= 0.0) && m < MAX_CLIP) {
                collision_scratch[epa_block].clip_buf[m] = s + (e - s) * (ds / (ds - de));
                collision_scratch[epa_block].clip_bid[m] = collision_scratch[epa_block].clip_ids[jp] | FEATURE_CLIPPED;
                m += 1u;
            }
            if (de >= 0.0 && m < MAX_CLIP) {
                collision_scratch[epa_block].clip_buf[m] = e;
                collision_scratch[epa_block].clip_bid[m] = collision_scratch[epa_block].clip_ids[j];
                m += 1u;
            }
        }
        for (var k = 0u; k < m; k++) {
            collision_scratch[epa_block].clip_out[k] = collision_scratch[epa_block].clip_buf[k];
            collision_scratch[epa_block].clip_ids[k] = collision_scratch[epa_block].clip_bid[k];
        }
        n = m;
    }
    return n;
}


/// convex_manifold.rs select: the deepest candidate, then repeatedly the
/// farthest from those kept; pushes the kept ones (at most MAX_MANIFOLD).
fn select_and_push(n: u32) -> u32 {
    if (n <= MAX_MANIFOLD) {
        for (var i = 0u; i < n; i++) {
            manifold_push(collision_scratch[epa_block].cand[i]);
        }
        return n;
    }
    var keep: array<u32, MAX_MANIFOLD>;
    var deepest = 0u;
    for (var i = 1u; i < n; i++) {
        if (collision_scratch[epa_block].cand[i].dist < collision_scratch[epa_block].cand[deepest].dist) {
            deepest = i;
        }
    }
    keep[0] = deepest;
    for (var i = 0u; i < n; i++) {
        collision_scratch[epa_block].mind[i] = F32_BIG;
    }
    var last = deepest;
    for (var k = 1u; k < MAX_MANIFOLD; k++) {
        var far = NONE;
        var far_d = -1.0;
        for (var i = 0u; i < n; i++) {
            let d = norm2(collision_scratch[epa_block].cand[i].pos - collision_scratch[epa_block].cand[last].pos);
            if (d < collision_scratch[epa_block].mind[i]) {
                collision_scratch[epa_block].mind[i] = d;
            }
            if (collision_scratch[epa_block].mind[i] > far_d) {
                far_d = collision_scratch[epa_block].mind[i];
                far = i;
            }
        }
        keep[k] = far;
        last = far;
    }
    for (var k = 0u; k < MAX_MANIFOLD; k++) {
        manifold_push(collision_scratch[epa_block].cand[keep[k]]);
    }
    return MAX_MANIFOLD;
}

/// True when p projects into the convex polygon (CCW about f).
fn projects_inside(poly: ptr<function, Poly>, f: vec3f, p: vec3f) -> bool {
    let n = (*poly).n;
    var inside = n >= 3u;
    for (var i = 0u; i < n; i++) {
        let a = (*poly).p[i];
        inside = inside && dot3(cross3(f, (*poly).p[(i + 1u) % n] - a), p - a) >= 0.0;
    }
    return inside;
}

/// A straight line of s across dir: a capsule segment (shifted by its radius) or a cylinder side line.
struct LineFeature {
    found: bool,
    p0: vec3f,
    p1: vec3f,
    ids: vec2u,
}

fn line_feature(s: Shape, dir: vec3f) -> LineFeature {
    let u = m3_col(s.rot, 2u);
    let none = LineFeature(false, vec3f(0.0), vec3f(0.0), vec2u(0u));
    if (abs(dot3(u, dir)) > 0.1) {
        return none;
    }
    let h = s.size.y;
    if (s.kind == GEOM_CAPSULE) {
        let off = dir * s.size.x;
        return LineFeature(true, s.pos - u * h + off, s.pos + u * h + off, vec2u(0u, 1u));
    }
    if (s.kind == GEOM_CYLINDER) {
        let e = normalize3(dir - u * dot3(u, dir)) * s.size.x;
        return LineFeature(true, s.pos - u * h + e, s.pos + u * h + e, vec2u(16u, 17u));
    }
    return none;
}

/// Line contact: two straight features side by side give the ends of their overlap; else the single point.
fn line_line(a: Shape, b: Shape, single: ContactPoint, margin: f32, scale: f32) {
    let n = single.normal;
    let la = line_feature(a, n);
    let lb = line_feature(b, -n);
    if (!la.found || !lb.found) {
        manifold_push(single);
        return;
    }
    let da = la.p1 - la.p0;
    let db = lb.p1 - lb.p0;
    let la2 = norm2(da);
    let lb2 = norm2(db);
    if (la2 <= F32_MIN_POS || lb2 <= F32_MIN_POS || norm2(cross3(da, db)) > 1e-2 * la2 * lb2) {
        manifold_push(single);
        return;
    }
    let sb0 = dot3(lb.p0 - la.p0, da) / la2;
    let sb1 = dot3(lb.p1 - la.p0, da) / la2;
    let lo = max(min(sb0, sb1), 0.0);
    let hi = min(max(sb0, sb1), 1.0);
    if (!(lo < hi)) {
        manifold_push(single);
        return;
    }
    var min_d = F32_BIG;
    for (var e = 0u; e < 2u; e++) {
        let t = select(hi, lo, e == 0u);
        let pa = la.p0 + da * t;
        let tb = min(max(dot3(pa - lb.p0, db) / lb2, 0.0), 1.0);
        let pb = lb.p0 + db * tb;
        let d = max(dot3(pb - pa, n), single.dist);
        if (d < margin) {
            var ida = la.ids.x | FEATURE_CLIPPED;
            if (t == 0.0) {
                ida = la.ids.x;
            } else if (t == 1.0) {
                ida = la.ids.y;
            }
            var idb = lb.ids.x | FEATURE_CLIPPED;
            if (tb == 0.0) {
                idb = lb.ids.x;
            } else if (tb == 1.0) {
                idb = lb.ids.y;
            }
            manifold_push(ContactPoint(pa + n * (d * 0.5), n, d, vec2u(ida, idb)));
            min_d = min(min_d, d);
        }
    }
    if (manifold_len == 0u || min_d > single.dist + 2.0 * EPA_REL_TOL * scale) {
        manifold_push(single);
    }
}

/// convex_manifold.rs manifold: a clipped manifold when a flat face is
/// aligned with the contact normal, else the single GJK/EPA point.
fn convex_manifold(a: Shape, b: Shape, single: ContactPoint, margin: f32, scale: f32) {
    let n = single.normal;
    var ra: Poly;
    var rb: Poly;
    let cos_min = 1.0 - ALIGN_TOL;
    let fa = reference_face(a, n, cos_min, &ra);
    let fb = reference_face(b, -n, cos_min, &rb);
    var ref_is_a: bool;
    if (fa.found && fb.found) {
        ref_is_a = fa.cos >= fb.cos;
    } else if (fa.found) {
        ref_is_a = true;
    } else if (fb.found) {
        ref_is_a = false;
    } else {
        line_line(a, b, single, margin, scale);
        return;
    }
    var rf: Poly;
    var face = fb;
    var other = a;
    if (ref_is_a) {
        rf = ra;
        face = fa;
        other = b;
    } else {
        rf = rb;
    }
    let f = face.f;
    var inc: Poly;
    if (!incident_feature(other, -f, &inc)) {
        manifold_push(single);
        return;
    }
    let m = clip_poly(&inc, &rf, f);
    let off = dot3(f, rf.p[0]);
    let normal = single.normal;
    var nc = 0u;
    var min_d = F32_BIG;
    for (var i = 0u; i < m; i++) {
        let d = max(dot3(f, collision_scratch[epa_block].clip_out[i]) - off, single.dist);
        if (d < margin) {
            var feature = vec2u(collision_scratch[epa_block].clip_ids[i], face.id);
            if (ref_is_a) {
                feature = vec2u(face.id, collision_scratch[epa_block].clip_ids[i]);
            }
            collision_scratch[epa_block].cand[nc] = ContactPoint(collision_scratch[epa_block].clip_out[i] - f * (d * 0.5), normal, d, feature);
            nc += 1u;
            min_d = min(min_d, d);
        }
    }
    let nk = select_and_push(nc);
    let tol = 2.0 * EPA_REL_TOL * scale;
    if (nk == 0u || min_d > single.dist + tol) {
        if (manifold_len < MAX_MANIFOLD) {
            manifold_push(single);
        } else {
            var shallow = 0u;
            for (var i = 1u; i < manifold_len; i++) {
                if (manifold_points[i].dist > manifold_points[shallow].dist) {
                    shallow = i;
                }
            }
            manifold_points[shallow] = single;
        }
    }
}

// ---------------------------------------------------------------- signed distance (convex.rs)

/// Signed distance with witnesses (convex.rs Separation), optional.
struct Separation {
    some: bool,
    dist: f32,
    normal: vec3f,
    pa: vec3f,
    pb: vec3f,
    features: vec2u,
    scale: f32,
}

/// Core contact: (distance, normal, witnesses on the cores, features), optional.
struct CoreContact {
    some: bool,
    d: f32,
    n: vec3f,
    pa: vec3f,
    pb: vec3f,
    f: vec2u,
}

fn no_core_contact() -> CoreContact {
    return CoreContact(false, 0.0, vec3f(0.0), vec3f(0.0), vec3f(0.0), vec2u(0u));
}

/// Coarse EPA gap and coarse GJK gap (relative to the scale).
const COARSE_TOL: f32 = 1e-6;
const COARSE_GJK_TOL: f32 = 1e-3;

/// Exact distance of separated cores whose closest features are a flat face and a point.
fn face_separation(a: Shape, b: Shape, n: vec3f, lower: f32) -> CoreContact {
    let cos_min = 0.99;
    var poly: Poly;
    let fa = reference_face(a, n, cos_min, &poly);
    if (fa.found) {
        let f = fa.f;
        let sb = support_core(b, -f);
        let d = dot3(f, sb.p - poly.p[0]);
        if (d >= max(lower, 0.0) && projects_inside(&poly, f, sb.p)) {
            return CoreContact(true, d, f, sb.p - f * d, sb.p, vec2u(fa.id, sb.f));
        }
    }
    let fb = reference_face(b, -n, cos_min, &poly);
    if (fb.found) {
        let f = fb.f;
        let sa = support_core(a, -f);
        let d = dot3(f, sa.p - poly.p[0]);
        if (d >= max(lower, 0.0) && projects_inside(&poly, f, sa.p)) {
            return CoreContact(true, d, -f, sa.p, sa.p - f * d, vec2u(sa.f, fb.id));
        }
    }
    return no_core_contact();
}

fn refine_tol(tol: f32, scale: f32) -> f32 {
    return max(tol, 1e-2 * sqrt(tol * scale));
}

/// Signed distance of two convex shapes (GJK when separated, EPA when overlapping), or none beyond cutoff.
fn convex_separation(a: Shape, b: Shape, cutoff: f32) -> Separation {
    let origin = a.pos;
    var a0 = a;
    a0.pos = vec3f(0.0);
    var b0 = b;
    b0.pos = b.pos - origin;
    let ra = core_radius(a);
    let rb = core_radius(b);
    let scale = max(bounding_radius(a) + bounding_radius(b) + norm(b0.pos), F32_MIN_POS);
    let tol = EPA_REL_TOL * scale;
    var g = gjk(a0, b0, cutoff + ra + rb, scale, max(COARSE_GJK_TOL, GJK_REL_TOL));
    var exact = no_core_contact();
    if (g.status == GJK_SEPARATED && g.dist - g.lower > tol) {
        exact = face_separation(a0, b0, g.normal, g.lower);
        if (!exact.some) {
            let r = refine(a0, b0, g.normal, scale);
            if (r.residual <= refine_tol(tol, scale) && -r.depth >= g.lower) {
                exact = CoreContact(true, -r.depth, r.normal, r.pa, r.pb, r.features);
            } else {
                g = gjk_resume(a0, b0, cutoff + ra + rb, scale, GJK_REL_TOL, g);
            }
        }
    }
    var dist: f32;
    var normal: vec3f;
    var pa: vec3f;
    var pb: vec3f;
    var features: vec2u;
    if (g.status == GJK_BEYOND) {
        return Separation(false, 0.0, vec3f(0.0), vec3f(0.0), vec3f(0.0), vec2u(0u), scale);
    } else if (g.status == GJK_SEPARATED) {
        if (exact.some) {
            dist = exact.d - ra - rb;
            normal = exact.n;
            pa = exact.pa;
            pb = exact.pb;
            features = exact.f;
        } else {
            let sp = simplex_points(g.simplex);
            dist = g.dist - ra - rb;
            normal = g.normal;
            pa = sp.a;
            pb = sp.b;
            features = simplex_features(g.simplex);
        }
    } else {
        epa_new(a0, b0, g.simplex, scale);
        epa_run(a0, b0, max(tol, COARSE_TOL * scale));
        var converged = epa_converged(tol);
        var refined = false;
        var r: Refined;
        if (!converged) {
            r = refine(a0, b0, epa_min_n, scale);
            if (r.residual <= refine_tol(tol, scale) && r.depth <= epa_min_u) {
                refined = true;
            } else {
                converged = epa_run(a0, b0, tol);
            }
        }
        let er = epa_result();
        if (refined) {
            dist = -r.depth - ra - rb;
            normal = r.normal;
            pa = r.pa;
            pb = r.pb;
            features = r.features;
        } else if (er.ok && converged) {
            dist = -er.depth - ra - rb;
            normal = er.normal;
            pa = er.pa;
            pb = er.pb;
            features = er.features;
        } else if (er.ok) {
            // Out of iterations: the best certified direction and its support points.
            let u = epa_min_u;
            let m = epa_min_n;
            let q = cso_support(a0, b0, m);
            dist = -u - ra - rb;
            normal = m;
            pa = q.a;
            pb = q.b;
            features = vec2u(q.fa, q.fb);
        } else {
            // Degenerate input: the separating-axis value along the line of centres.
            var n = b0.pos - a0.pos;
            if (norm2(n) > F32_MIN_POS) {
                n = normalize3(n);
            } else {
                n = vec3f(0.0, 0.0, 1.0);
            }
            let sa = support_core(a0, n);
            let sb = support_core(b0, -n);
            dist = dot3(sb.p - sa.p, n) - ra - rb;
            normal = n;
            pa = sa.p;
            pb = sb.p;
            features = vec2u(sa.f, sb.f);
        }
    }
    if (!(dist < cutoff)) {
        return Separation(false, 0.0, vec3f(0.0), vec3f(0.0), vec3f(0.0), vec2u(0u), scale);
    }
    return Separation(true, dist, normal, pa + normal * ra + origin, pb - normal * rb + origin, features, scale);
}

/// The generic routine: one GJK/EPA point, or a clipped manifold when flat
/// features meet; computed relative to A's origin.
fn convex_contact(a: Shape, b: Shape, margin: f32) {
    let origin = a.pos;
    var a0 = a;
    a0.pos = vec3f(0.0);
    var b0 = b;
    b0.pos = b.pos - origin;
    let s = convex_separation(a0, b0, margin);
    if (s.some) {
        let start = manifold_len;
        let single = ContactPoint(s.pa + s.normal * (s.dist * 0.5), s.normal, s.dist, s.features);
        convex_manifold(a0, b0, single, margin, s.scale);
        for (var i = start; i < manifold_len; i++) {
            manifold_points[i].pos += origin;
        }
    }
}

/// The plane contact of point p of B when its height over the plane is below the margin.
fn plane_point(n: vec3f, p0: vec3f, p: vec3f, margin: f32, feature: vec2u) {
    let d = dot3(n, p - p0);
    if (d < margin) {
        manifold_push(ContactPoint(p - n * (d * 0.5), n, d, feature));
    }
}

/// Plane (A) – cylinder (B): up to 4 rim samples per cap below the margin.
fn contact_plane_cylinder(a: Shape, b: Shape, margin: f32) {
    let n = m3_col(a.rot, 2u);
    let u = m3_col(b.rot, 2u);
    let r = b.size.x;
    let h = b.size.y;
    let t = n - u * dot3(n, u);
    let tl = norm(t);
    var e = m3_col(b.rot, 0u);
    if (tl > 1e-6) {
        e = -t * (1.0 / tl);
    }
    let e2 = cross3(u, e);
    var dirs = array<vec3f, 4>(e, e2, -e, -e2);
    for (var cap = 0u; cap < 2u; cap++) {
        let c = b.pos + u * select(-h, h, cap == 1u);
        for (var k = 0u; k < 4u; k++) {
            plane_point(n, a.pos, c + dirs[k] * r, margin, vec2u(0u, 4u * cap + k));
        }
    }
}

/// Plane (A) – ellipsoid (B): the support point along −n.
fn contact_plane_ellipsoid(a: Shape, b: Shape, margin: f32) {
    let n = m3_col(a.rot, 2u);
    let p = support_full(b, -n);
    plane_point(n, a.pos, p.p, margin, vec2u(0u, 0u));
}

/// Plane (A) – mesh (B): every hull vertex below the margin; beyond
/// MAX_MANIFOLD, the deepest and then greedily the farthest from those kept.
fn contact_plane_mesh(a: Shape, b: Shape, margin: f32) {
    let nvert = collision_geoms[b.geom].vert_num;
    let n = m3_col(a.rot, 2u);
    var count = 0u;
    var deepest = 0u;
    var deepest_d = F32_BIG;
    for (var i = 0u; i < nvert; i++) {
        let p = b.pos + m3_mul_v(b.rot, mesh_vertex(b, i));
        let d = dot3(n, p - a.pos);
        if (d < margin) {
            count += 1u;
            if (d < deepest_d) {
                deepest_d = d;
                deepest = i;
            }
        }
    }
    if (count <= MAX_MANIFOLD) {
        for (var i = 0u; i < nvert; i++) {
            plane_point(n, a.pos, b.pos + m3_mul_v(b.rot, mesh_vertex(b, i)), margin, vec2u(0u, i));
        }
        return;
    }
    var chosen: array<u32, MAX_MANIFOLD>;
    chosen[0] = deepest;
    for (var k = 1u; k < MAX_MANIFOLD; k++) {
        var far = deepest;
        var far_d = -1.0;
        for (var i = 0u; i < nvert; i++) {
            let p = b.pos + m3_mul_v(b.rot, mesh_vertex(b, i));
            let d = dot3(n, p - a.pos);
            if (d >= margin) {
                continue;
            }
            var md = F32_BIG;
            for (var c = 0u; c < k; c++) {
                let q = b.pos + m3_mul_v(b.rot, mesh_vertex(b, chosen[c])) - p;
                md = min(md, norm2(q - n * dot3(q, n)));
            }
            if (md > far_d) {
                far_d = md;
                far = i;
            }
        }
        chosen[k] = far;
    }
    for (var k = 0u; k < MAX_MANIFOLD; k++) {
        plane_point(n, a.pos, b.pos + m3_mul_v(b.rot, mesh_vertex(b, chosen[k])), margin, vec2u(0u, chosen[k]));
    }
}

/// Sphere (A) – cylinder (B): closed-form distance of the centre to the solid cylinder.
fn contact_sphere_cylinder(a: Shape, b: Shape, margin: f32) {
    let rs = a.size.x;
    let r = b.size.x;
    let h = b.size.y;
    let p = m3_tmul(b.rot, a.pos - b.pos);
    let rho = sqrt(p.x * p.x + p.y * p.y);
    var ex = 1.0;
    var ey = 0.0;
    if (rho > F32_MIN_POS) {
        ex = p.x / rho;
        ey = p.y / rho;
    }
    let sz = select(-1.0, 1.0, p.z >= 0.0);
    let dr = rho - r;
    let dz = abs(p.z) - h;
    var d: f32;
    var m: vec3f;
    if (dr > 0.0 && dz > 0.0) {
        d = sqrt(dr * dr + dz * dz);
        m = vec3f(dr * ex / d, dr * ey / d, dz * sz / d);
    } else if (dr > dz) {
        d = dr;
        m = vec3f(ex, ey, 0.0);
    } else {
        d = dz;
        m = vec3f(0.0, 0.0, sz);
    }
    let phi = d - rs;
    if (phi < margin) {
        let n = -m3_mul_v(b.rot, m);
        let pa = a.pos + n * rs;
        manifold_push(ContactPoint(pa + n * (phi * 0.5), n, phi, vec2u(0u, 0u)));
    }
}

// ---------------------------------------------------------------- dispatch (narrowphase.rs narrow_phase_fn)

/// collision::narrow_phase_pair: the manifold of `pair` in world w, with the
/// pair's margin plus the world's skin (m). `epa` (a constant at every call
/// site, so each entry point compiles only its half): the pair is one of the
/// GJK/EPA pairs, whose routine is convex_contact.
fn narrow_phase_pair(w: u32, pair: CollisionPair, skin: f32, epa: bool) {
    manifold_len = 0u;
    let a = shape_of_geom(w, pair.geom.x);
    let b = shape_of_geom(w, pair.geom.y);
    if (epa) {
        convex_contact(a, b, pair.margin + skin);
    } else {
        narrow_phase_fn(pair.kinds, a, b, pair.margin + skin);
    }
}

// ---------------------------------------------------------------- broadphase (broadphase.rs)

/// Inflated world AABB of non-plane geom g in world w (broadphase.rs
/// geom_aabb); empty (lo = +BIG, hi = −BIG) for planes and non-finite poses.
fn geom_aabb(w: u32, g: u32, skin: f32) -> Aabb {
    let empty = Aabb(vec3f(F32_BIG), 0.0, vec3f(-F32_BIG), 0.0);
    let geom = geoms[g];
    if (geom.kind == GEOM_PLANE) {
        return empty;
    }
    let cg = collision_geoms[g];
    let s = geom.size;
    let r = unpack9(geom_xmat_get(geom_at(w, g)));
    var c = unpack3(geom_xpos_get(geom_at(w, g)));
    var e = vec3f(0.0);
    switch geom.kind {
        case GEOM_SPHERE: {
            e = vec3f(s.x);
        }
        case GEOM_CAPSULE: {
            e = abs(m3_col(r, 2u)) * s.y + vec3f(s.x);
        }
        case GEOM_BOX: {
            for (var i = 0u; i < 3u; i++) {
                e[i] = dot3(abs(m3_row(r, i)), s);
            }
        }
        case GEOM_CYLINDER: {
            let ax = m3_col(r, 2u);
            for (var i = 0u; i < 3u; i++) {
                e[i] = abs(ax[i]) * s.y + s.x * sqrt(max(1.0 - ax[i] * ax[i], 0.0));
            }
        }
        case GEOM_ELLIPSOID: {
            for (var i = 0u; i < 3u; i++) {
                e[i] = norm(m3_row(r, i) * s);
            }
        }
        default: {
            // GEOM_MESH: the rotated local vertex box.
            c += m3_mul_v(r, cg.local_centre);
            for (var i = 0u; i < 3u; i++) {
                e[i] = dot3(abs(m3_row(r, i)), cg.local_half);
            }
        }
    }
    let pad = (cg.margin + skin) + 8.0 * F32_EPS * (max_elem(abs(c)) + max_elem(e));
    let ep = e + vec3f(pad);
    let lo = c - ep;
    let hi = c + ep;
    if (is_finite3(lo) && is_finite3(hi)) {
        return Aabb(lo, 0.0, hi, 0.0);
    }
    return empty;
}

fn aabb_empty(b: Aabb) -> bool {
    return !(b.lo.x <= b.hi.x);
}

/// Closed-interval overlap on all three axes (broadphase.rs aabb_overlap).
fn aabb_overlap(a: Aabb, b: Aabb) -> bool {
    return a.lo.x <= b.hi.x && b.lo.x <= a.hi.x && a.lo.y <= b.hi.y && b.lo.y <= a.hi.y && a.lo.z <= b.hi.z
        && b.lo.z <= a.hi.z;
}

/// Whether box `bx` reaches below plane geom p plus its margin (broadphase.rs plane_reaches).
fn plane_reaches(w: u32, p: u32, bx: Aabb, skin: f32) -> bool {
    if (aabb_empty(bx)) {
        // The CPU's empty box has NaN centre: never reaches.
        return false;
    }
    let i = geom_at(w, p);
    let n = m3_col(unpack9(geom_xmat_get(i)), 2u);
    let c = (bx.lo + bx.hi) * 0.5;
    let e = (bx.hi - bx.lo) * 0.5;
    let lowest = dot3(n, c - unpack3(geom_xpos_get(i))) - dot3(abs(n), e);
    return lowest <= collision_geoms[p].margin + skin;
}

/// Bounding volumes of every (world, geom): one thread each.
@compute @workgroup_size(WORKGROUP_SIZE)
fn broadphase(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let t = thread_index(gid, nwg);
    if (t >= dims.nworld * dims.ngeom) {
        return;
    }
    let w = t / dims.ngeom;
    let g = t % dims.ngeom;
    geom_aabbs[geom_at(w, g)] = geom_aabb(w, g, collision_skin[w]);
}

// ---------------------------------------------------------------- contacts (collision/mod.rs collide)

/// Whether the driver's loop budget held. Mesa's llvmpipe (lavapipe) lets
/// all loops of one invocation group run 65535 iterations in total and then
/// silently exits every loop after its first iteration; a loop that must run
/// twice (its bound comes from a uniform, so it cannot be unrolled) detects
/// that, and the world is flagged instead of getting wrong contacts. Other
/// drivers have no such budget.
fn loop_budget_held() -> bool {
    var k = 0u;
    loop {
        k += 1u;
        if (k >= collision_info.loop_check) {
            break;
        }
    }
    return k == collision_info.loop_check;
}

/// Pair of this narrow-phase invocation: (candidate pair index, world, EPA
/// scratch block); threads are pair-major so that neighbours run the same
/// routine on different worlds.
struct PassItem {
    k: u32,
    w: u32,
    block: u32,
}

fn pass_item(t: u32) -> PassItem {
    let local = t / dims.nworld;
    let w = t % dims.nworld;
    let k = pass_pairs[collision_pass.start + local];
    let block = min(local * dims.nworld + w, arrayLength(&collision_scratch) - 1u);
    return PassItem(k, w, block);
}

/// The CPU broadphase's predicate for pair k in world w (broadphase.rs):
/// plane against the other geom's box, or box against box.
fn bounding_volumes_meet(w: u32, pair: CollisionPair, skin: f32) -> bool {
    let box_b = geom_aabbs[geom_at(w, pair.geom.y)];
    if (pair.kinds < GEOM_KINDS) {
        // A is a plane.
        return plane_reaches(w, pair.geom.x, box_b, skin);
    }
    return aabb_overlap(geom_aabbs[geom_at(w, pair.geom.x)], box_b);
}

/// One (pair, world) of a narrow-phase pass. Count mode
/// (collision_pass.write == 0): the number of contacts, 0 when the bounding
/// volumes do not meet, into pair_contacts. Write mode (after `collide` made
/// the counts offsets): a pair with contacts that fit recomputes its manifold
/// and stores it at its offset.
fn narrow_phase_item(t: u32, epa: bool) {
    if (t >= collision_pass.count * dims.nworld) {
        return;
    }
    let item = pass_item(t);
    let pair = collision_pairs[item.k];
    let skin = collision_skin[item.w];
    let slot = item.w * collision_info.npair + item.k;
    epa_block = item.block;
    if (collision_pass.write == 0u) {
        var n = 0u;
        if (bounding_volumes_meet(item.w, pair, skin)) {
            narrow_phase_pair(item.w, pair, skin, epa);
            n = manifold_len;
            if (!loop_budget_held()) {
                atomicOr(&collision_status[item.w], STATUS_LOOP_BUDGET);
            }
        }
        pair_contacts[slot] = n;
        return;
    }
    let first = pair_contacts[slot];
    var end = atomicLoad(&contact_count[item.w]);
    if (item.k + 1u < collision_info.npair) {
        end = pair_contacts[slot + 1u];
    }
    if (end == first || first >= dims.ncon) {
        return;
    }
    narrow_phase_pair(item.w, pair, skin, epa);
    if (manifold_len != end - first) {
        // The recomputation disagrees with the count pass (a compiler that
        // contracts the two passes differently): never silently.
        atomicOr(&collision_status[item.w], STATUS_RECOMPUTE);
    }
    let n = min(manifold_len, end - first);
    let m = pair.material;
    for (var i = 0u; i < n && first + i < dims.ncon; i++) {
        let p = manifold_points[i];
        contacts[con_at(item.w, first + i)] = Contact(
            p.pos,
            p.dist,
            p.normal,
            m.x,
            m.y,
            m.z,
            m.w,
            0.0,
            pair.geom,
            pair.body,
            p.feature,
            vec2u(0u),
        );
    }
    if (!loop_budget_held()) {
        atomicOr(&collision_status[item.w], STATUS_LOOP_BUDGET);
    }
}

/// A narrow-phase pass over the pairs without GJK/EPA (analytic and closed-form routines).
@compute @workgroup_size(WORKGROUP_SIZE)
fn narrow_phase(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    narrow_phase_item(thread_index(gid, nwg), false);
}

/// A narrow-phase pass over GJK/EPA pairs (convex_contact).
@compute @workgroup_size(WORKGROUP_SIZE)
fn narrow_phase_epa(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    narrow_phase_item(thread_index(gid, nwg), true);
}

/// The whole collision of the worlds at a collision point of their CENIC
/// trial (stage STAGE_BUILD0 or STAGE_BUILD1, src/gpu/batch.rs), one thread
/// per world: bounding volumes and narrow phase of every candidate pair in
/// order, each manifold stored right after the previous one while it fits,
/// and contact_count[w] = all contacts found. The same contacts in the same
/// order as broadphase, narrow_phase, collide and narrow_phase again, in one
/// launch; for models without GJK/EPA pairs (their scratch is per thread).
@compute @workgroup_size(WORKGROUP_SIZE)
fn collide_worlds(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld) {
        return;
    }
    let stage = cenic_world[w].stage;
    if (cenic_world[w].state != WORLD_RUNNING || (stage != STAGE_BUILD0 && stage != STAGE_BUILD1)) {
        return;
    }
    let skin = collision_skin[w];
    for (var g = 0u; g < dims.ngeom; g++) {
        geom_aabbs[geom_at(w, g)] = geom_aabb(w, g, skin);
    }
    var total = 0u;
    for (var k = 0u; k < collision_info.npair; k++) {
        let pair = collision_pairs[k];
        if (!bounding_volumes_meet(w, pair, skin)) {
            continue;
        }
        manifold_len = 0u;
        narrow_phase_fn(pair.kinds, shape_of_geom(w, pair.geom.x), shape_of_geom(w, pair.geom.y), pair.margin + skin);
        let m = pair.material;
        for (var i = 0u; i < manifold_len && total + i < dims.ncon; i++) {
            let p = manifold_points[i];
            contacts[con_at(w, total + i)] =
                Contact(p.pos, p.dist, p.normal, m.x, m.y, m.z, m.w, 0.0, pair.geom, pair.body, p.feature, vec2u(0u));
        }
        total += manifold_len;
    }
    atomicStore(&contact_count[w], total);
    if (!loop_budget_held()) {
        atomicOr(&collision_status[w], STATUS_LOOP_BUDGET);
    }
}

/// Per world: every pair's first contact index (exclusive prefix sum of the
/// counts, in pair order: the CPU's order) and contact_count[w] = all
/// contacts found, possibly more than ncon (the excess is the overflow).
@compute @workgroup_size(WORKGROUP_SIZE)
fn collide(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld) {
        return;
    }
    let base = w * collision_info.npair;
    var total = 0u;
    for (var k = 0u; k < collision_info.npair; k++) {
        let n = pair_contacts[base + k];
        pair_contacts[base + k] = total;
        total += n;
    }
    atomicStore(&contact_count[w], total);
    if (!loop_budget_held()) {
        atomicOr(&collision_status[w], STATUS_LOOP_BUDGET);
    }
}
