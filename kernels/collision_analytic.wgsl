// Collision library: the analytic narrow-phase routines (plane, sphere,
// capsule and box pairs; twins of src/collision/narrowphase/analytic/).
// Needs collision_shapes.wgsl.

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

