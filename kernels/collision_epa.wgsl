// Collision library: EPA, the penetration depth of overlapping convex
// shapes, on a polytope in the thread's collision_scratch block (twin of
// src/collision/narrowphase/convex/epa.rs). Needs collision_gjk.wgsl.

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

