// Collision library: contact manifolds of convex shapes by clipping,
// signed distance (GJK/EPA) and the convex routines with a closed form
// (twins of src/collision/narrowphase/convex/convex_manifold.rs and
// convex.rs). Needs collision_epa.wgsl.

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

