// The renderer's input from a GPU batch (src/render/gather.rs), composed
// after data.wgsl: each world's geom poses and camera frame, read from the
// batch's per-world fields after its kinematics stage, written where the
// rasterizer (render.wgsl) reads them. Nothing goes through the host.

/// A camera as a rig (src/render/camera.rs GpuRig): the eye is
/// base + B·pos and the axes are the columns of B·L, where the base and B
/// are the origin and identity (free camera), the body's origin and
/// rotation (fixed), the body's origin (track) or its subtree's centre of
/// mass (trackcom), with identity B.
struct RenderRig {
    /// RIG_ORIGIN, RIG_BODY, RIG_BODY_TRANSLATION or RIG_SUBTREE_COM.
    base: u32,
    body: u32,
    _pad: vec2u,
    /// Eye offset (m); w: 1 / tan(fovy / 2).
    pos: vec4f,
    /// Rows of L.
    l0: vec4f,
    l1: vec4f,
    l2: vec4f,
}

const RIG_ORIGIN: u32 = 0u;
const RIG_BODY: u32 = 1u;
const RIG_BODY_TRANSLATION: u32 = 2u;
const RIG_SUBTREE_COM: u32 = 3u;

/// A camera frame (render.wgsl View).
struct View {
    eye: vec4f,
    right: vec4f,
    up: vec4f,
    back: vec4f,
}

@group(0) @binding(130) var<uniform> render_rig: RenderRig;
/// (world, geom) → position (3, m) and rotation matrix rows (9).
@group(0) @binding(131) var<storage, read_write> render_pose: array<f32>;
@group(0) @binding(132) var<storage, read_write> render_view: array<View>;

/// Whether body `b` is in the subtree of `root`.
fn in_subtree(b: u32, root: u32) -> bool {
    var a = b;
    while (a != root && a != 0u) {
        a = bodies[a].parent;
    }
    return a == root;
}

/// Centre of mass of the subtree of `root` in world w (its centre of mass when massless).
fn subtree_com(w: u32, root: u32) -> vec3f {
    var m = 0.0;
    var c = vec3f(0.0);
    for (var b = 1u; b < dims.nbody; b++) {
        if (bodies[b].mass > 0.0 && in_subtree(b, root)) {
            m += bodies[b].mass;
            c += unpack3(xipos_get(body_at(w, b))) * bodies[b].mass;
        }
    }
    if (m > 0.0) {
        return c / m;
    }
    return unpack3(xipos_get(body_at(w, root)));
}

fn mul_mv(m: M3, v: vec3f) -> vec3f {
    return vec3f(dot(m.r0, v), dot(m.r1, v), dot(m.r2, v));
}

/// Reads: xpos, xmat, xipos, geom_xpos, geom_xmat, render_rig; writes: render_pose, render_view.
@compute @workgroup_size(WORKGROUP_SIZE)
fn render_gather(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    let w = thread_index(gid, nwg);
    if (w >= dims.nworld) {
        return;
    }
    for (var g = 0u; g < dims.ngeom; g++) {
        let p = geom_xpos_get(geom_at(w, g));
        let r = geom_xmat_get(geom_at(w, g));
        let o = (w * dims.ngeom + g) * 12u;
        render_pose[o] = p.x;
        render_pose[o + 1u] = p.y;
        render_pose[o + 2u] = p.z;
        render_pose[o + 3u] = r.r0.x;
        render_pose[o + 4u] = r.r0.y;
        render_pose[o + 5u] = r.r0.z;
        render_pose[o + 6u] = r.r1.x;
        render_pose[o + 7u] = r.r1.y;
        render_pose[o + 8u] = r.r1.z;
        render_pose[o + 9u] = r.r2.x;
        render_pose[o + 10u] = r.r2.y;
        render_pose[o + 11u] = r.r2.z;
    }
    let rig = render_rig;
    var base = vec3f(0.0);
    var b = M3(vec3f(1.0, 0.0, 0.0), vec3f(0.0, 1.0, 0.0), vec3f(0.0, 0.0, 1.0));
    if (rig.base == RIG_BODY || rig.base == RIG_BODY_TRANSLATION) {
        base = unpack3(xpos_get(body_at(w, rig.body)));
    }
    if (rig.base == RIG_BODY) {
        b = unpack9(xmat_get(body_at(w, rig.body)));
    }
    if (rig.base == RIG_SUBTREE_COM) {
        base = subtree_com(w, rig.body);
    }
    let eye = base + mul_mv(b, rig.pos.xyz);
    // Columns of B·L: B times the columns of L.
    let lc0 = vec3f(rig.l0.x, rig.l1.x, rig.l2.x);
    let lc1 = vec3f(rig.l0.y, rig.l1.y, rig.l2.y);
    let lc2 = vec3f(rig.l0.z, rig.l1.z, rig.l2.z);
    render_view[w] = View(
        vec4f(eye, rig.pos.w),
        vec4f(mul_mv(b, lc0), 0.0),
        vec4f(mul_mv(b, lc1), 0.0),
        vec4f(mul_mv(b, lc2), 0.0),
    );
}
