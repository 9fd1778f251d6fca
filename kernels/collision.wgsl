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
// models with such pairs: it is the large one to compile), the height-field
// pairs likewise (`narrow_phase_hfield`, only for models with height fields).
//
// The narrow-phase routines are in the libraries composed in front of this
// file (src/gpu/collision.rs FILE): collision_shapes, collision_analytic,
// collision_gjk, collision_epa, collision_manifold, collision_hfield; the dispatch
// narrow_phase_fn is generated from src/collision/narrowphase.rs PAIR_KINDS.

// ---------------------------------------------------------------- dispatch (narrowphase.rs narrow_phase_fn)

/// The narrow-phase entry points' kinds of pairs (`mode` below).
const PAIRS_PLAIN: u32 = 0u;
const PAIRS_EPA: u32 = 1u;
const PAIRS_HFIELD: u32 = 2u;

/// collision::narrow_phase_pair: the manifold of `pair` in world w, with the
/// pair's margin plus the world's skin (m). `mode` (a constant at every call
/// site, so each entry point compiles only its part): PAIRS_EPA, one of the
/// GJK/EPA pairs, whose routine is convex_contact; PAIRS_HFIELD, a
/// height-field pair (hfield_contact); else the dispatch table.
fn narrow_phase_pair(w: u32, pair: CollisionPair, skin: f32, mode: u32) {
    manifold_len = 0u;
    let a = shape_of_geom(w, pair.geom.x);
    let b = shape_of_geom(w, pair.geom.y);
    if (mode == PAIRS_HFIELD) {
        hfield_contact(a, b, pair.margin + skin);
    } else if (mode == PAIRS_EPA) {
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
/// Reads: geom_xpos, geom_xmat, geoms, collision_geoms, collision_skin; writes: geom_aabbs.
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

/// Whether the driver's loop budget held (common.wgsl loop_budget_held_with):
/// a world it ran out in is flagged instead of getting wrong contacts.
fn loop_budget_held() -> bool {
    return loop_budget_held_with(collision_info.loop_check);
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
fn narrow_phase_item(t: u32, mode: u32) {
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
            narrow_phase_pair(item.w, pair, skin, mode);
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
    narrow_phase_pair(item.w, pair, skin, mode);
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
            item.k,
            0u,
        );
    }
    if (!loop_budget_held()) {
        atomicOr(&collision_status[item.w], STATUS_LOOP_BUDGET);
    }
}

/// A narrow-phase pass over the pairs without GJK/EPA (analytic and closed-form routines).
/// Reads: geom_xpos, geom_xmat, geom_aabbs, geoms, collision_geoms, collision_pairs, pass_pairs, collision_pass, collision_skin, pair_contacts (write mode: offsets); writes: pair_contacts (count mode), contacts (write mode), collision_status.
@compute @workgroup_size(WORKGROUP_SIZE)
fn narrow_phase(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    narrow_phase_item(thread_index(gid, nwg), PAIRS_PLAIN);
}

/// A narrow-phase pass over GJK/EPA pairs (convex_contact).
/// Reads: as narrow_phase, and the mesh hulls (mesh_vertices, mesh_polygons, mesh_polygon_vertices); writes: as narrow_phase, and collision_scratch (EPA polytopes).
@compute @workgroup_size(WORKGROUP_SIZE)
fn narrow_phase_epa(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    narrow_phase_item(thread_index(gid, nwg), PAIRS_EPA);
}

/// A narrow-phase pass over height-field pairs (hfield_contact: GJK/EPA prism by prism).
/// Reads: as narrow_phase, and the fields' elevations (mesh_vertices); writes: as narrow_phase, and collision_scratch (EPA polytopes).
@compute @workgroup_size(WORKGROUP_SIZE)
fn narrow_phase_hfield(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    narrow_phase_item(thread_index(gid, nwg), PAIRS_HFIELD);
}

/// The whole collision of the worlds at a collision point of their CENIC
/// trial (stage STAGE_BUILD0 or STAGE_BUILD1, src/gpu/batch.rs), one thread
/// per world: bounding volumes and narrow phase of every candidate pair in
/// order, each manifold stored right after the previous one while it fits,
/// and contact_count[w] = all contacts found. The same contacts in the same
/// order as broadphase, narrow_phase, collide and narrow_phase again, in one
/// launch; for models without GJK/EPA pairs (their scratch is per thread).
/// Reads: cenic_world (stage), geom_xpos, geom_xmat, geoms, collision_geoms, collision_pairs, collision_skin, the mesh hulls; writes: geom_aabbs, contacts, contact_count, collision_status.
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
                Contact(p.pos, p.dist, p.normal, m.x, m.y, m.z, m.w, 0.0, pair.geom, pair.body, p.feature, k, 0u);
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
/// Reads: pair_contacts (counts), collision_info; writes: pair_contacts (offsets), contact_count, collision_status.
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

