// Collision library: height-field contacts, the twin of
// src/collision/narrowphase/hfield.rs (MuJoCo's mjc_ConvexHField): the field
// is cut into triangular prisms (two per grid cell, from the grid triangle
// down to the base) and each prism under the geom's bounding box collides
// with the geom through convex_separation, one contact per prism; beyond
// MAX_MANIFOLD points a deeper point replaces the shallowest kept one.
// Needs collision_shapes, collision_gjk (the prism support, `prism`),
// collision_epa and collision_manifold (convex_separation).
//
// The field's data (src/gpu/collision.rs pack_geoms): collision_geoms[g]
// has vert_adr = its first entry in mesh_vertices, holding the size
// (radius_x, radius_y, elevation_z, base_z), then the normalised elevations
// packed four per entry (row-major, row 0 at −y); poly_adr = ncol,
// poly_num = nrow.

/// Normalised elevation of sample i of the field of geom entry cg.
fn hfield_sample(cg: CollisionGeom, i: u32) -> f32 {
    let v = mesh_vertices[cg.vert_adr + 1u + i / 4u];
    return v[i % 4u];
}

/// Vertex (row r, column c) of the field (m, field frame): hfield.rs vertex.
fn hfield_vertex(cg: CollisionGeom, size: vec4f, dx: f32, dy: f32, r: u32, c: u32) -> vec3f {
    return vec3f(dx * f32(c) - size.x, dy * f32(r) - size.y, hfield_sample(cg, r * cg.poly_adr + c) * size.z);
}

/// Grid index of coordinate v on an axis of n samples and radius s, rounded
/// by `up` (ceil) or down (floor), clamped to [0, n − 1] (hfield.rs clamp).
fn hfield_cell(v: f32, s: f32, n: u32, up: bool) -> u32 {
    var x = (v + s) / (s + s) * f32(n - 1u);
    if (up) {
        x = ceil(x);
    } else {
        x = floor(x);
    }
    if (!(x > 0.0)) {
        return 0u;
    }
    if (x >= f32(n - 1u)) {
        return n - 1u;
    }
    return u32(x);
}

/// Manifold push that keeps the deepest points (hfield.rs keep_deepest).
fn hfield_keep_deepest(p: ContactPoint) {
    if (manifold_len < MAX_MANIFOLD) {
        manifold_push(p);
        return;
    }
    var worst = 0u;
    for (var i = 1u; i < MAX_MANIFOLD; i++) {
        if (manifold_points[i].dist > manifold_points[worst].dist) {
            worst = i;
        }
    }
    if (p.dist < manifold_points[worst].dist) {
        manifold_points[worst] = p;
    }
}

/// The contacts of convex geom a with height field h (hfield.rs hfield_contact).
fn hfield_contact(a: Shape, h: Shape, margin: f32) {
    let cg = collision_geoms[h.geom];
    let size = mesh_vertices[cg.vert_adr];
    let s0 = size.x;
    let s1 = size.y;
    let s2 = size.z;
    let s3 = size.w;
    // The geom in the field's frame.
    let rt = m3_transpose(h.rot);
    var local = a;
    local.pos = m3_mul_v(rt, a.pos - h.pos);
    local.rot = m3_mul(rt, a.rot);
    let p = local.pos;
    if (!is_finite3(p)) {
        return;
    }
    let radius = bounding_radius(a) + margin;
    if (s0 < p.x - radius || -s0 > p.x + radius || s1 < p.y - radius || -s1 > p.y + radius || s2 < p.z - radius) {
        return;
    }
    if (-s3 > p.z + radius) {
        return;
    }
    let hi = vec3f(
        support_full(local, vec3f(1.0, 0.0, 0.0)).p.x,
        support_full(local, vec3f(0.0, 1.0, 0.0)).p.y,
        support_full(local, vec3f(0.0, 0.0, 1.0)).p.z,
    );
    let lo = vec3f(
        support_full(local, vec3f(-1.0, 0.0, 0.0)).p.x,
        support_full(local, vec3f(0.0, -1.0, 0.0)).p.y,
        support_full(local, vec3f(0.0, 0.0, -1.0)).p.z,
    );
    if (lo.x - margin > s0 || hi.x + margin < -s0 || lo.y - margin > s1 || hi.y + margin < -s1) {
        return;
    }
    if (lo.z - margin > s2 || hi.z + margin < -s3) {
        return;
    }
    let ncol = cg.poly_adr;
    let nrow = cg.poly_num;
    let dx = (s0 + s0) / f32(ncol - 1u);
    let dy = (s1 + s1) / f32(nrow - 1u);
    let c0 = hfield_cell(lo.x, s0, ncol, false);
    let c1 = hfield_cell(hi.x, s0, ncol, true);
    let r0 = hfield_cell(lo.y, s1, nrow, false);
    let r1 = hfield_cell(hi.y, s1, nrow, true);
    let base = -s3;
    for (var r = r0; r < r1; r++) {
        for (var c = c0 + 1u; c <= c1; c++) {
            var corners: array<vec3f, 4>;
            corners[0] = hfield_vertex(cg, size, dx, dy, r + 1u, c - 1u);
            corners[1] = hfield_vertex(cg, size, dx, dy, r, c - 1u);
            corners[2] = hfield_vertex(cg, size, dx, dy, r + 1u, c);
            corners[3] = hfield_vertex(cg, size, dx, dy, r, c);
            for (var t = 0u; t < 2u; t++) {
                let t0 = corners[t];
                let t1 = corners[t + 1u];
                let t2 = corners[t + 2u];
                if (t0.z + margin < lo.z && t1.z + margin < lo.z && t2.z + margin < lo.z) {
                    continue;
                }
                // The prism about its centroid (hfield.rs).
                var centre = vec3f(t0.x, t0.y, (t0.z + base) * 0.5);
                centre += vec3f(t1.x, t1.y, (t1.z + base) * 0.5);
                centre += vec3f(t2.x, t2.y, (t2.z + base) * 0.5);
                centre = centre * (1.0 / 3.0);
                prism[0] = vec3f(t0.x, t0.y, base) - centre;
                prism[1] = vec3f(t1.x, t1.y, base) - centre;
                prism[2] = vec3f(t2.x, t2.y, base) - centre;
                prism[3] = t0 - centre;
                prism[4] = t1 - centre;
                prism[5] = t2 - centre;
                let ps = Shape(GEOM_HFIELD, h.geom, vec3f(0.0), centre, m3_identity());
                let s = convex_separation(local, ps, margin);
                if (s.some) {
                    let pos = s.pa + s.normal * (s.dist * 0.5);
                    let feature = vec2u(s.features.x, 2u * (r * (ncol - 1u) + c - 1u) + t);
                    hfield_keep_deepest(ContactPoint(h.pos + m3_mul_v(h.rot, pos), m3_mul_v(h.rot, s.normal), s.dist, feature));
                }
            }
        }
    }
}
