// Collision library: support functions, GJK and the Newton refinement of
// a closest-point pair (twins of src/collision/narrowphase/convex/support.rs,
// gjk.rs and epa.rs refine). Needs collision_shapes.wgsl.

// ---------------------------------------------------------------- support functions (convex/support.rs)

/// A support point and its feature id.
struct SupportPoint {
    p: vec3f,
    f: u32,
}

/// The height-field prism being collided (hfield.rs Shape::prism; kind
/// GEOM_HFIELD): bottom triangle 0–2, top triangle 3–5, shape frame (m).
var<private> prism: array<vec3f, 6>;

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
        case GEOM_HFIELD: {
            // The prism: the best of the bottom triangle when d points down, else of the top one.
            var start = 3u;
            if (d.z < 0.0) {
                start = 0u;
            }
            var best = start;
            var best_v = dot3(prism[start], d);
            for (var i = start + 1u; i < start + 3u; i++) {
                let v = dot3(prism[i], d);
                if (v > best_v) {
                    best_v = v;
                    best = i;
                }
            }
            return SupportPoint(prism[best], best);
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
        case GEOM_HFIELD: {
            // The prism (hfield.rs): its farthest vertex.
            var r = 0.0;
            for (var i = 0u; i < 6u; i++) {
                r = max(r, norm(prism[i]));
            }
            return r;
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

