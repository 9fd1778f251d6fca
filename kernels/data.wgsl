// The binding table: model constants, per-world parameters and per-world
// state, composed after common.wgsl and before every stage file.
//
// WGSL twin of src/dynamics/data.rs (Data<T>) and of the packed model in
// src/gpu/model.rs. The host binds buffers to these variables by *name*
// (src/gpu/compose.rs reflects each entry point with naga and src/gpu/kernel.rs
// binds only the variables it uses), so a variable's name here must equal the
// Rust name: a model buffer in src/gpu/model.rs or a `Field` in
// src/gpu/fields.rs. Binding numbers only need to be unique.
//
// Per-world arrays are world first: (nworld, n, ...) with n the number of
// bodies, joints, dofs, ... of one world, flat and without padding, so one
// world's block has the layout of the matching CPU `Data<f32>` field.
// Later phases (collision, ICF, CENIC) add their buffers here.

/// Sizes of one world (uniform).
struct Dims {
    nworld: u32,
    nbody: u32,
    njnt: u32,
    nv: u32,
    nq: u32,
    ngeom: u32,
    nsite: u32,
    /// Contact capacity per world (entries of `contacts` per world).
    ncon: u32,
    /// Gravitational acceleration (m/s², world frame); w unused.
    gravity: vec4f,
}

/// A body (src/gpu/model.rs GpuBody). Index 0 is the world.
struct Body {
    parent: u32,
    root: u32,
    jnt_adr: u32,
    jnt_num: u32,
    dof_adr: u32,
    dof_num: u32,
    weld: u32,
    _pad: u32,
    /// Position in the parent frame (m).
    pos: vec3f,
    /// Mass (kg).
    mass: f32,
    /// Orientation in the parent frame (w, x, y, z).
    quat: vec4f,
    /// Centre of mass in the body frame (m).
    ipos: vec3f,
    _pad1: f32,
    /// Principal axes of inertia in the body frame (w, x, y, z).
    iquat: vec4f,
    /// Principal moments of inertia (kg·m²).
    inertia: vec3f,
    _pad2: f32,
}

/// A joint (src/gpu/model.rs GpuJoint).
struct Joint {
    /// JOINT_FREE, JOINT_BALL, JOINT_HINGE or JOINT_SLIDE.
    kind: u32,
    body: u32,
    qpos_adr: u32,
    dof_adr: u32,
    /// Anchor in the body frame (m).
    pos: vec3f,
    /// Joint value at the model pose (rad or m).
    reference: f32,
    /// Unit axis in the body frame.
    axis: vec3f,
    /// Spring stiffness (N·m/rad or N/m).
    stiffness: f32,
    /// Spring rest position (rad or m).
    springref: f32,
    /// Rotor inertia (kg·m² or kg).
    armature: f32,
    /// Viscous damping (N·m·s/rad or N·s/m).
    damping: f32,
    /// 1 when `range` applies.
    limited: u32,
    /// Position limits (rad or m).
    range: vec2f,
    _pad: vec2f,
}

/// A degree of freedom (src/gpu/model.rs GpuDof).
struct Dof {
    body: u32,
    joint: u32,
    /// Previous dof on the path to the world, NONE at a tree root.
    parent: u32,
    /// The dof's block (a kinematic tree, or consecutive trees merged;
    /// src/gpu/model.rs dof_blocks): the ICF Hessian never couples two
    /// blocks except through contacts.
    block: u32,
    /// Armature (kg·m² or kg).
    armature: f32,
    /// Damping (N·m·s/rad or N·s/m).
    damping: f32,
    _pad1: vec2f,
}

/// A collision geom (src/gpu/model.rs GpuGeom).
struct Geom {
    body: u32,
    /// GeomKind as u32.
    kind: u32,
    /// Index into the meshes, NONE when not a mesh.
    mesh: u32,
    contype: u32,
    conaffinity: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    /// Position in the body frame (m).
    pos: vec3f,
    /// Bounding-sphere radius (m); a large finite value for planes.
    rbound: f32,
    /// Orientation in the body frame (w, x, y, z).
    quat: vec4f,
    /// Shape parameters (m).
    size: vec3f,
    /// Contact margin (m).
    margin: f32,
    /// Stiffness (N/m; negative = rigid), dissipation (s/m), μs, μd.
    material: vec4f,
}

/// A site (src/gpu/model.rs GpuSite).
struct Site {
    body: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    /// Position in the body frame (m).
    pos: vec3f,
    _pad3: f32,
    /// Orientation in the body frame (w, x, y, z).
    quat: vec4f,
}

/// Per-world physical parameters (src/gpu/model.rs GpuWorldParams).
struct WorldParams {
    /// Multiplies every body mass and inertia.
    mass_scale: f32,
    /// Multipliers on contact stiffness, dissipation, μs, μd.
    stiffness: f32,
    dissipation: f32,
    mu_static: f32,
    mu_dynamic: f32,
    _pad0: f32,
    _pad1: f32,
    _pad2: f32,
}

/// A contact (src/gpu/contact.rs GpuContact), twin of collision::Contact:
/// geom A's kind comes first; normal from A to B; contact point midway
/// between the surfaces; the pair's combined material (before the world's
/// multipliers, which the ICF builder applies, as on the CPU).
struct Contact {
    /// Contact point, world (m).
    pos: vec3f,
    /// Signed distance φ (m), negative when overlapping.
    dist: f32,
    /// Unit normal from A to B.
    normal: vec3f,
    /// Combined stiffness (N/m).
    stiffness: f32,
    /// Combined Hunt–Crossley dissipation (s/m).
    dissipation: f32,
    /// Combined static friction coefficient.
    mu_static: f32,
    /// Combined dynamic friction coefficient.
    mu_dynamic: f32,
    _pad0: f32,
    /// Geom ids (A, B).
    geom: vec2u,
    /// Body ids (A, B).
    body: vec2u,
    /// Feature ids (A, B), see collision::ContactPoint::feature.
    feature: vec2u,
    /// Index of the pair in collision_pairs.
    pair: u32,
    _pad1: u32,
}

// ---------------------------------------------------------------- model (read only)

@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> bodies: array<Body>;
@group(0) @binding(2) var<storage, read> joints: array<Joint>;
@group(0) @binding(3) var<storage, read> dofs: array<Dof>;
@group(0) @binding(4) var<storage, read> geoms: array<Geom>;
@group(0) @binding(5) var<storage, read> sites: array<Site>;
/// (nworld)
@group(0) @binding(6) var<storage, read> world_params: array<WorldParams>;

// ---------------------------------------------------------------- per-world fields
//
// The state (q, v, h), kinematics and dynamics outputs and scratch of every
// world (src/gpu/fields.rs Field, twin of Data<f32>) live in one buffer,
// world_data, except the dense mass matrix. The accessors of each field
// (F_<NAME>, <name>_get, <name>_set, <name>_ix) and FIELD_OFFSET_VEC4S are
// generated from the Field list and composed right after this file.

/// Where per-world arrays put world w's element k (src/gpu/fields.rs Layout).
struct FieldLayout {
    /// 1: Layout::FieldMajor (element (w, k) at k·nworld + w, one plane per
    /// component); 0: Layout::WorldMajor (at w·n + k, components interleaved).
    field_major: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    /// Offset (floats) in world_data of each field, by its F_* index.
    offsets: array<vec4u, FIELD_OFFSET_VEC4S>,
}

@group(0) @binding(15) var<uniform> field_layout: FieldLayout;
/// Every per-world field but mass, each a region of nworld·n·width floats.
@group(0) @binding(16) var<storage, read_write> world_data: array<f32>;
/// Joint-space mass matrix with armature (nworld, nv, nv; mass_at).
@group(0) @binding(40) var<storage, read_write> mass: array<f32>;

/// Index of element k of the n elements of world w of a per-world array.
fn item_at(w: u32, k: u32, n: u32) -> u32 {
    if (field_layout.field_major != 0u) {
        return k * dims.nworld + w;
    }
    return w * n + k;
}

/// Index in world_data of component c of element i of field f (`width`
/// floats per element, n elements per world).
fn field_ix(f: u32, n: u32, width: u32, i: u32, c: u32) -> u32 {
    let off = field_layout.offsets[f / 4u][f % 4u];
    if (field_layout.field_major != 0u) {
        return off + c * n * dims.nworld + i;
    }
    return off + i * width + c;
}

fn q_at(w: u32, i: u32) -> u32 {
    return item_at(w, i, dims.nq);
}
fn dof_at(w: u32, d: u32) -> u32 {
    return item_at(w, d, dims.nv);
}
fn world_at(w: u32) -> u32 {
    return item_at(w, 0u, 1u);
}
fn body_at(w: u32, b: u32) -> u32 {
    return item_at(w, b, dims.nbody);
}
fn jnt_at(w: u32, j: u32) -> u32 {
    return item_at(w, j, dims.njnt);
}
fn geom_at(w: u32, g: u32) -> u32 {
    return item_at(w, g, dims.ngeom);
}
fn site_at(w: u32, s: u32) -> u32 {
    return item_at(w, s, dims.nsite);
}
fn mass_at(w: u32, i: u32, j: u32) -> u32 {
    return item_at(w, i * dims.nv + j, dims.nv * dims.nv);
}

// ---------------------------------------------------------------- collision (bindings 60–79)

/// Contacts (nworld, ncon): the first min(contact_count[w], ncon) entries of
/// world w are valid.
@group(0) @binding(60) var<storage, read_write> contacts: array<Contact>;
/// Contacts found per world (nworld), possibly more than ncon: the excess
/// is the world's overflow, reported to the host, never dropped silently.
@group(0) @binding(61) var<storage, read_write> contact_count: array<atomic<u32>>;

/// Sizes of the collision stage (src/gpu/collision.rs GpuCollisionInfo).
struct CollisionInfo {
    /// Entries of `collision_pairs`.
    npair: u32,
    /// Always 2: the bound of the loop that checks the driver's loop budget.
    loop_check: u32,
    _pad0: u32,
    _pad1: u32,
}

/// One narrow-phase pass (src/gpu/collision.rs GpuCollisionPass): the
/// candidate pairs `pass_pairs[start .. start + count]`, one thread per
/// (pair, world).
struct CollisionPass {
    start: u32,
    count: u32,
    /// 0: count contacts; 1: write them (after `collide`).
    write: u32,
    _pad0: u32,
}

/// collision_status bits: the driver's loop budget ran out (Mesa llvmpipe),
/// a recomputed manifold disagreed with its count.
const STATUS_LOOP_BUDGET: u32 = 1u;
const STATUS_RECOMPUTE: u32 = 2u;

/// A candidate geom pair (src/gpu/collision.rs GpuCollisionPair), from the
/// host's filtered list (Model::geoms_can_collide, no plane–plane pairs),
/// sorted ascending by (min, max) geom index like the CPU broadphase output.
struct CollisionPair {
    /// Geom ids (A, B) in narrow-phase order (collision::order_pair: A's kind ≤ B's kind).
    geom: vec2u,
    /// Body ids (A, B).
    body: vec2u,
    /// Narrow-phase routine: kind(A) · 7 + kind(B).
    kinds: u32,
    /// Pair margin (m), collision::pair_margin rounded to f32; the world's skin is added.
    margin: f32,
    /// 1: MuJoCo's soft contact (soft_*, icf::soft::soft_pair_constants); 0: Hunt–Crossley.
    soft: u32,
    _pad1: u32,
    /// Combined material (Material::combine, f32): stiffness (N/m; +∞ when
    /// both geoms are rigid), dissipation (s/m), μs, μd.
    material: vec4f,
    /// Soft contact: K (1/s²), B (1/s), Â (1/kg), the scale of R.
    soft_law: vec4f,
    /// Soft contact: solimp's d0, d_max, width (m), midpoint.
    soft_imp: vec4f,
    /// Soft contact: friction slopes along t1, t2; solimp's power; the pair's margin (m).
    soft_more: vec4f,
}

/// Per-geom collision constants (src/gpu/collision.rs GpuCollisionGeom).
struct CollisionGeom {
    /// Bounding-volume margin (collision::geom_bound_margin, m).
    margin: f32,
    /// Mesh geoms: bounding radius of the hull about the geom origin (m);
    /// height fields: theirs.
    mesh_radius: f32,
    /// Mesh geoms: first vertex in `mesh_vertices`, vertex count; height
    /// fields: their entry there (size, then elevations four per entry),
    /// sample count.
    vert_adr: u32,
    vert_num: u32,
    /// Mesh geoms: centre of the local vertex box (m); height fields: of the field's box.
    local_centre: vec3f,
    /// Mesh geoms: first polygon in `mesh_polygons`; height fields: ncol.
    poly_adr: u32,
    /// Mesh geoms: half-extents of the local vertex box (m); height fields: of the field's box.
    local_half: vec3f,
    /// Mesh geoms: polygon count; height fields: nrow.
    poly_num: u32,
}

/// A planar face of a convex mesh (src/gpu/collision.rs GpuMeshPolygon).
struct MeshPolygon {
    /// Outward unit normal, geom frame.
    normal: vec3f,
    /// First entry of its vertex loop in `mesh_polygon_vertices`.
    start: u32,
    /// Number of vertices of the loop.
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

/// An inflated world AABB (m); empty (lo > hi) for planes and non-finite poses.
struct Aabb {
    lo: vec3f,
    _pad0: f32,
    hi: vec3f,
    _pad1: f32,
}

/// EPA capacity on the GPU (kernels/collision.wgsl EPA_MAX_ITERS = 64): polytope
/// vertices (the initial tetrahedron plus one per expansion), faces (2 per vertex)
/// and horizon edges (3 per vertex).
const EPA_NV: u32 = 68u;
const EPA_NF: u32 = 136u;
const EPA_NE: u32 = 204u;

/// A vertex of the EPA polytope: support points on A and B (m; w = a − b) and their feature ids.
struct EpaVertex {
    a: vec3f,
    fa: u32,
    b: vec3f,
    fb: u32,
}

/// A face of the EPA polytope: outward unit normal, plane distance (m),
/// vertex indices, flags (1: alive).
struct EpaFace {
    n: vec3f,
    d: f32,
    idx: vec3u,
    flags: u32,
}

/// One point of a contact manifold (collision::ContactPoint): point
/// midway between the surfaces (m), unit normal A → B, φ (m), feature ids.
struct ContactPoint {
    pos: vec3f,
    normal: vec3f,
    dist: f32,
    feature: vec2u,
}

/// Capacity of the manifold clipping buffers (convex_manifold.rs MAX_CLIP).
const MAX_CLIP: u32 = 64u;

/// Scratch of one GJK/EPA narrow-phase thread (src/gpu/collision.rs
/// EPA_SCRATCH_BYTES): the EPA polytope and the manifold clipping buffers.
struct EpaScratch {
    v: array<EpaVertex, EPA_NV>,
    f: array<EpaFace, EPA_NF>,
    /// Stack of dead face slots.
    free: array<u32, EPA_NF>,
    /// Horizon edges.
    edges: array<vec2u, EPA_NE>,
    /// Slots of the faces seen from the new support point, ascending.
    vis: array<u32, EPA_NF>,
    /// Clipped polygon and its vertex ids; ping-pong buffer.
    clip_out: array<vec3f, MAX_CLIP>,
    clip_ids: array<u32, MAX_CLIP>,
    clip_buf: array<vec3f, MAX_CLIP>,
    clip_bid: array<u32, MAX_CLIP>,
    /// Candidate manifold points and their distances to the kept ones.
    cand: array<ContactPoint, MAX_CLIP>,
    mind: array<f32, MAX_CLIP>,
}

@group(0) @binding(62) var<uniform> collision_info: CollisionInfo;
/// Candidate pairs (npair).
@group(0) @binding(63) var<storage, read> collision_pairs: array<CollisionPair>;
/// Per geom (ngeom).
@group(0) @binding(64) var<storage, read> collision_geoms: array<CollisionGeom>;
/// Hull vertices of every mesh geom, geom frame (m; w unused).
@group(0) @binding(65) var<storage, read> mesh_vertices: array<vec4f>;
/// Planar faces of every mesh geom.
@group(0) @binding(66) var<storage, read> mesh_polygons: array<MeshPolygon>;
/// Vertex loops of the polygons (mesh-local vertex indices).
@group(0) @binding(67) var<storage, read> mesh_polygon_vertices: array<u32>;
/// Extra margin of each world (nworld; m): the speculative contact skin,
/// added to every pair's margin and bounding volume (Contacts::skin).
@group(0) @binding(68) var<storage, read> collision_skin: array<f32>;
/// Bounding volumes (nworld, ngeom), written by `broadphase`.
@group(0) @binding(69) var<storage, read_write> geom_aabbs: array<Aabb>;
/// EPA scratch: one block per thread of the largest GJK/EPA pass (1 without such pairs).
@group(0) @binding(70) var<storage, read_write> collision_scratch: array<EpaScratch>;
/// This launch's pass (a uniform per pass).
@group(0) @binding(71) var<uniform> collision_pass: CollisionPass;
/// Candidate pair indices of all passes, concatenated.
@group(0) @binding(72) var<storage, read> pass_pairs: array<u32>;
/// Per (world, candidate pair): the contact count, then the first contact index (nworld, npair).
@group(0) @binding(73) var<storage, read_write> pair_contacts: array<u32>;
/// Per world: STATUS_* bits of the last run (0 when all is well).
@group(0) @binding(74) var<storage, read_write> collision_status: array<atomic<u32>>;

// ---------------------------------------------------------------- ICF and CENIC (bindings 80–119)
//
// Twins of src/icf (IcfProblem, IcfSolver) and src/integrator/cenic.rs
// (World), one world's block at a world offset. Host side: src/gpu/icf.rs
// and src/gpu/cenic.rs (structs of the same name with a Gpu prefix).

/// ICF sizes and model constants (uniform).
struct IcfDims {
    /// Jacobian entries per contact: the most dofs the chains of two bodies span.
    ndofc: u32,
    /// Implicit gain laws (position servos) per world.
    ngain: u32,
    /// One-sided joint limits per world (two per limited hinge or slide).
    nlimit: u32,
    /// Actuators.
    nu: u32,
    /// Stiction tolerance vs (m/s).
    stiction_tolerance: f32,
    /// Dof blocks (Dof.block; ≤ MAX_BLOCKS); 0 or 1: the Newton solve is dense.
    nblock: u32,
    /// 1: the structured factorization by elimination levels (icf_solver.wgsl).
    levels: u32,
    /// 1: the factorization over the dof tree pays for this model
    /// (icf_solver.wgsl, tree_factor).
    tree: u32,
    /// First dof of each block, then nv (entry b at [b / 4][b % 4]).
    block_start: array<vec4u, 9>,
}

/// Newton solver settings (uniform), twin of icf::SolverParams.
struct IcfParams {
    /// Relative tolerance ε (floored at 1e-6 in f32, as on the CPU).
    tolerance: f32,
    max_iterations: u32,
    max_line_search_iterations: u32,
    /// 1: also accept on the θ criterion.
    theta_criterion: u32,
    /// 1: reuse factorizations while convergence is predicted within the budget.
    hessian_reuse: u32,
    reuse_target_iterations: u32,
    /// Loop iterations one icf_solve invocation may run (0xffffffff: no
    /// limit). Mesa's llvmpipe stops an invocation after 65535 loop
    /// iterations in total; there the solver pauses before exceeding the
    /// budget and the host dispatches it again until every solve is done.
    loop_budget: u32,
    /// Newton iterations with the secant friction curvature.
    secant_friction_iterations: u32,
}

/// Per-body constants of the builder.
struct IcfBody {
    /// Last dof on the path from the world to the body (NONE: welded to the world).
    last_dof: u32,
    /// This body's share of the Delassus estimate, 2.65 / (weld-group mass) (1/kg); 0 when static.
    delassus: f32,
}

/// An actuator (model::Actuator).
struct Actuator {
    /// ACT_MOTOR or ACT_POSITION.
    kind: u32,
    /// Actuated dof and its position coordinate.
    dof: u32,
    qpos_adr: u32,
    /// Index of its gain law among the world's IcfGain entries (position servos).
    gain_slot: u32,
    /// Motor transmission ratio.
    gear: f32,
    /// Servo gains (N·m/rad, N·m·s/rad or N/m, N·s/m) and effort limit (N·m or N; f32::MAX when unlimited).
    kp: f32,
    kd: f32,
    effort_limit: f32,
    /// Control range (used when has_ctrl_range = 1).
    ctrl_lo: f32,
    ctrl_hi: f32,
    /// Motor force range before the gear (used when has_force_range = 1).
    force_lo: f32,
    force_hi: f32,
    has_ctrl_range: u32,
    has_force_range: u32,
    _pad0: u32,
    _pad1: u32,
}

/// A one-sided joint limit definition: g = sign·(q − q_limit) ≥ 0.
struct IcfLimitDef {
    dof: u32,
    qpos_adr: u32,
    /// +1 lower limit, −1 upper limit.
    sign: f32,
    /// Limit position with the margin folded in (rad or m).
    q_limit: f32,
    /// The force law at mass scale 1 (model::soft::SpringLaw): m·K
    /// (N·m/rad or N/m), the damping factor, and solimp (d0, d_max, width,
    /// midpoint, power) clamped.
    mk: f32,
    damp: f32,
    imp_d0: f32,
    imp_dmax: f32,
    imp_width: f32,
    imp_mid: f32,
    imp_power: f32,
    /// 1: MuJoCo's soft limit (the model's semantics): K and B of the
    /// reference (model::soft::SoftLaw) and the dof's inverse weight Â.
    soft: u32,
    soft_k: f32,
    soft_b: f32,
    invweight: f32,
}

/// A contact constraint (icf::ContactConstraint) plus the solver's scratch
/// (vc = J v at the iterate, uc = J w along the search direction).
struct IcfContact {
    normal: vec3f,
    /// Signed distance at q0 (m).
    phi0: f32,
    /// J v0 (m/s).
    vc0: vec3f,
    /// Combined stiffness k (N/m), times the world's multiplier.
    stiffness: f32,
    vc: vec3f,
    /// Hunt–Crossley dissipation d (s/m).
    dissipation: f32,
    uc: vec3f,
    mu_static: f32,
    mu_dynamic: f32,
    /// Delassus estimate w (1/kg).
    delassus: f32,
    /// Number of valid Jacobian entries.
    jac_len: u32,
    /// Signed elastic force −kφ0 (N).
    fe0: f32,
    /// Lagged normal impulse (N·s).
    n0: f32,
    /// Lagged friction coefficient.
    mu: f32,
    /// Friction regularisation ε (m/s).
    eps: f32,
    /// 0: Hunt–Crossley; 1: MuJoCo's soft contact (icf::SoftContact: t1 and soft_*).
    law: u32,
    /// Solver scratch at the iterate: the impulse γ on B and G = −dγ/dvc (rows).
    impulse: vec3f,
    _pad1: f32,
    g0: vec3f,
    _pad2: f32,
    g1: vec3f,
    _pad3: f32,
    g2: vec3f,
    _pad4: f32,
    /// Soft contact: first tangent of MuJoCo's contact frame.
    t1: vec3f,
    /// Soft contact: D = 1/R of each row (kg; 0 beyond the margin).
    soft_d: f32,
    /// Soft contact: friction slopes of the pyramid's edges along t1, t2.
    soft_mu: vec2f,
    /// Soft contact: B (1/s) and K·d·(φ0 − margin) (m/s²).
    soft_b: f32,
    soft_kpos: f32,
}

/// One non-zero Jacobian column of a contact: J[:, dof].
struct JacEntry {
    col: vec3f,
    dof: u32,
}

/// An implicit gain law (icf::GainConstraint).
struct IcfGain {
    dof: u32,
    kp: f32,
    kd: f32,
    /// q_ref − q0 (rad or m).
    q_err: f32,
    v_ref: f32,
    /// Effort limit (f32::MAX when unlimited).
    effort: f32,
    /// K = h kp + kd.
    gain: f32,
    /// b = kp q_err + kd v_ref.
    bias: f32,
}

/// A one-sided joint limit (icf::LimitConstraint).
struct IcfLimit {
    dof: u32,
    sign: f32,
    g0: f32,
    fe0: f32,
    stiffness: f32,
    damping: f32,
    /// 1: MuJoCo's soft limit (icf::SoftRow): D (0 while not reached), B,
    /// K·d·g0 and sign·v0.
    soft: u32,
    soft_d: f32,
    soft_b: f32,
    soft_kpos: f32,
    soft_vel0: f32,
    _pad0: f32,
}

/// Per-world problem sizes, solver results and flags.
struct IcfWorld {
    /// 1: build and solve this world (set by the CENIC kernels or the host).
    solving: u32,
    /// Contacts in the problem (≤ dims.ncon).
    ncon: u32,
    /// Contacts found beyond the capacity at the last build.
    overflow: u32,
    /// SOLVE_* code of the last solve.
    status: u32,
    /// Failing pivot (SOLVE_NOT_PD) or stalled residual (SOLVE_STALLED).
    detail: f32,
    /// Step h of the last set_time_step (s).
    h: f32,
    iterations: u32,
    line_search_iterations: u32,
    factorizations: u32,
    /// Final ‖D∇ℓ‖ and the tolerance it was compared with.
    residual: f32,
    tolerance: f32,
    /// ℓ at the iterate (icf_evaluate).
    cost: f32,
    /// 1 while icf_factor holds a usable factorization (Hessian reuse).
    factor_valid: u32,
    converged: u32,
    /// NEWTON_START (set by icf_set_time_step), NEWTON_RUNNING or NEWTON_DONE:
    /// a solve may span several icf_solve dispatches.
    phase: u32,
    /// icf_solve dispatches the current solve has run in (a paused solve
    /// resumes in the next).
    dispatches: u32,
    /// Newton state carried between dispatches: last step norm ‖D⁻¹Δv‖,
    /// last residual, and ε·‖D r‖.
    prev_step: f32,
    prev_residual: f32,
    tol0: f32,
    /// 1: the last solve launch ran the structured factorization (plan_blocks);
    /// 2: by elimination levels.
    structured: u32,
}

/// Error-control settings (uniform), twin of integrator::CenicParams / Mode.
struct CenicParams {
    /// CENIC_FIXED or CENIC_ERROR_CONTROLLED.
    mode: u32,
    /// 1: bound steps by conservative advancement.
    conservative_advancement: u32,
    /// Steps recorded per world (capacity of cenic_steps).
    record_capacity: u32,
    /// Entries of cenic_pairs.
    npair: u32,
    /// Fixed step (s).
    fixed_dt: f32,
    /// Requested accuracy (m, rad).
    accuracy: f32,
    max_step: f32,
    min_step: f32,
    /// τ_v (s).
    velocity_time_scale: f32,
    /// Speculative contact skin (m).
    skin: f32,
    /// 1: accept steps that miss the accuracy at the minimum step (degraded mode).
    accept_accuracy_misses: u32,
    /// 1.0, opaque to the shader compiler: multiplying by it keeps the
    /// compensated (two-sum) time arithmetic from being simplified away.
    one: f32,
    /// Interval of the current advance, as a (hi, lo) pair of f32 (s).
    advance_dt: vec2f,
    /// Always 2: the bound of the loop that checks the driver's loop budget.
    loop_check: u32,
    _pad2: u32,
}

/// A geom pair that may collide (a < b) and its contact margin (m).
struct GeomPair {
    a: u32,
    b: u32,
    margin: f32,
    _pad: u32,
}

/// Per-world clock and step-size state.
struct CenicWorld {
    /// Time and end of the current advance, (hi, lo) pairs: t = hi + lo (s).
    time: vec2f,
    t_end: vec2f,
    /// Step to try next (s).
    h_next: f32,
    /// Nominal step of the current trial, before truncation (s).
    h: f32,
    /// Step of the current trial (s).
    h_try: f32,
    /// Error of the last trial over the accuracy.
    err: f32,
    /// WORLD_DONE, WORLD_RUNNING or WORLD_FAILED.
    state: u32,
    /// 1 while the current trial goes on (0 after a rejection or failure in it).
    trial: u32,
    /// FAIL_* code and detail of a failure.
    reason: u32,
    detail: f32,
    /// 1 for the first trial of a step (overflow at x0 is counted once per step).
    first_trial: u32,
    /// The part of the trial the world is at (STAGE_*).
    stage: u32,
    /// 1 when h_try lands exactly on t_end.
    lands: u32,
    /// Contacts at the start of the step (step records).
    ncontact0: u32,
    /// 1 when the next fixed or full step starts from v0 + h·qacc, not v0
    /// (set by each fixed step and each trial's full step: Simulator's
    /// warm_qacc).
    warm_qacc: u32,
    _pad: u32,
}

/// Per-world statistics of the current advance (the host accumulates them).
struct CenicStats {
    accepted: u32,
    rejected: u32,
    newton_iterations: u32,
    line_search_iterations: u32,
    factorizations: u32,
    accuracy_misses: u32,
    impact_limited: u32,
    contact_overflow: u32,
    /// Smallest and largest accepted step (s).
    min_h: f32,
    max_h: f32,
    /// Steps written to cenic_steps (may exceed its capacity; extras are not kept).
    recorded: u32,
    /// Contact solves that succeeded (WorldStats::solves).
    solves: u32,
    /// Contacts at the start of each accepted step, summed (WorldStats::contacts).
    contacts: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

/// An accepted step (integrator::StepRecord).
struct StepRecord {
    /// Start time (hi, lo) (s).
    t: vec2f,
    h: f32,
    err: f32,
    contacts: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// ICF model constants
@group(0) @binding(80) var<uniform> icf_dims: IcfDims;
@group(0) @binding(81) var<uniform> icf_params: IcfParams;
/// (nbody)
@group(0) @binding(82) var<storage, read> icf_bodies: array<IcfBody>;
/// (nu)
@group(0) @binding(83) var<storage, read> actuators: array<Actuator>;
/// (nlimit)
@group(0) @binding(84) var<storage, read> icf_limit_defs: array<IcfLimitDef>;

// ICF per-world inputs
/// Controls (nworld, nu): motor inputs or servo target positions.
@group(0) @binding(86) var<storage, read_write> ctrl: array<f32>;
/// Servo target velocities (nworld, nu).
@group(0) @binding(87) var<storage, read_write> target_velocity: array<f32>;

// ICF problem and solver state
/// (nworld)
@group(0) @binding(88) var<storage, read_write> icf_world: array<IcfWorld>;
/// Contact constraints (nworld, ncon; con_at).
@group(0) @binding(89) var<storage, read_write> icf_con: array<IcfContact>;
/// Contact Jacobian entries (nworld, ncon, ndofc).
@group(0) @binding(90) var<storage, read_write> icf_jac: array<JacEntry>;
/// Gain laws (nworld, ngain).
@group(0) @binding(91) var<storage, read_write> icf_gain: array<IcfGain>;
/// Joint limits (nworld, nlimit).
@group(0) @binding(92) var<storage, read_write> icf_limit: array<IcfLimit>;
/// A = M + hD (nworld, nv, nv).
@group(0) @binding(93) var<storage, read_write> icf_a: array<f32>;
/// Hessian, then its Cholesky factor L in the lower triangle (nworld, nv, nv).
@group(0) @binding(94) var<storage, read_write> icf_factor: array<f32>;
/// Per-world vectors (nworld, ICF_NVEC, nv), see the VEC_* constants.
@group(0) @binding(95) var<storage, read_write> icf_vec: array<f32>;
/// For each dof, the Jacobian entries (c·ndofc + e) acting on it, in contact
/// order: (nworld, nv, 1 + ncon), entry 0 is the count.
@group(0) @binding(96) var<storage, read_write> icf_rows: array<u32>;
/// [0]: unfinished solves (counted by icf_count_unfinished).
@group(0) @binding(97) var<storage, read_write> icf_counter: array<atomic<u32>>;
/// The unfinished solves listed for a launch (icf_list_unfinished*): the
/// lengths of the two lists ([ACTIVE_COUNT + slot]), the slot of the last
/// listing ([ACTIVE_SLOT]), the worlds listed since creation
/// ([ACTIVE_LISTED]), the most dispatches a finished solve took since the
/// host last cleared it ([ACTIVE_MOST_DISPATCHES]), then the world indices
/// of the current list (ACTIVE_LIST + i, nworld entries).
@group(0) @binding(98) var<storage, read_write> icf_active: array<atomic<u32>>;
/// The indirect launch of each list's solve (x, y, z, unused) × 2 slots,
/// sized from its length by icf_list_unfinished*.
@group(0) @binding(99) var<storage, read_write> icf_dispatch: array<atomic<u32>>;

// CENIC
@group(0) @binding(100) var<uniform> cenic_params: CenicParams;
/// Error weights (nv).
@group(0) @binding(101) var<storage, read> cenic_weights: array<f32>;
/// Geom pairs that may collide with at least one moving geom (npair), for conservative advancement.
@group(0) @binding(102) var<storage, read> cenic_pairs: array<GeomPair>;
/// (nworld)
@group(0) @binding(103) var<storage, read_write> cenic_world: array<CenicWorld>;
/// (nworld)
@group(0) @binding(104) var<storage, read_write> cenic_stats: array<CenicStats>;
/// q0 and q_full (nworld, 2, nq).
@group(0) @binding(105) var<storage, read_write> cenic_q: array<f32>;
/// v0 and v_full (nworld, 2, nv).
@group(0) @binding(106) var<storage, read_write> cenic_v: array<f32>;
/// Accepted steps (nworld, record_capacity).
@group(0) @binding(107) var<storage, read_write> cenic_steps: array<StepRecord>;
/// Counters, indexed by COUNTER_*.
@group(0) @binding(108) var<storage, read_write> cenic_counter: array<atomic<u32>>;
/// Per world: time (hi, lo) as bits, state, failure reason (cenic_summarize).
@group(0) @binding(109) var<storage, read_write> cenic_summary: array<vec4u>;
/// Masked resets (GpuBatch::reset_worlds): [0] the count k, [1] the fresh
/// worlds' first step (f32 bits), [2..4] unused, then nworld world indices
/// (the first k used), then nworld rows of (q: nq, v: nv) as f32 bits.
@group(0) @binding(110) var<storage, read> cenic_reset: array<u32>;
/// u32 entries before the world indices in cenic_reset (src/gpu/cenic.rs RESET_HEADER).
const RESET_HEADER: u32 = 4u;
/// Velocity vectors per world in cenic_v (src/gpu/cenic.rs CENIC_V_SLOTS):
/// 0 v0, 1 the fixed or full step's v, 2 its extrapolated warm start v0 + h·qacc.
const CENIC_V_SLOTS: u32 = 3u;

/// CenicWorld.state: reached the end of the advance (idle), stepping, failed and frozen.
const WORLD_DONE: u32 = 0u;
const WORLD_RUNNING: u32 = 1u;
const WORLD_FAILED: u32 = 2u;

/// cenic_counter entries: running and failed worlds (cenic_summarize), the
/// iterations run (one added by the last launch of each), and the last
/// iteration in which some world began a trial.
const COUNTER_RUNNING: u32 = 0u;
const COUNTER_FAILED: u32 = 1u;
const COUNTER_ITERATION: u32 = 2u;
const COUNTER_LAST_BUSY: u32 = 3u;

// CenicWorld.stage: the part of a trial a world is at, STAGE_* (generated
// from src/gpu/names.rs TrialStage and composed after this file). Fixed
// steps: BEGIN → FORWARD0 → (collision) → BUILD0 → CHOOSE0 → STEP0 →
// (solve) → SOLVE0 → BEGIN. Step doubling goes on from SOLVE0: STEP1 →
// (solve) → SOLVE1 → FORWARD1 → (collision) → BUILD1 → START2 → STEP2 →
// (solve) → SOLVE2 → BEGIN.

const ACT_MOTOR: u32 = 0u;
const ACT_POSITION: u32 = 1u;

/// IcfWorld.status of a solve (icf::SolveError).
const SOLVE_OK: u32 = 0u;
const SOLVE_MAX_ITERATIONS: u32 = 1u;
const SOLVE_NOT_PD: u32 = 2u;
const SOLVE_STALLED: u32 = 3u;
const SOLVE_NON_FINITE: u32 = 4u;

const NEWTON_START: u32 = 0u;
const NEWTON_RUNNING: u32 = 1u;
const NEWTON_DONE: u32 = 2u;

/// icf_active entries (src/gpu/icf.rs active).
const ACTIVE_COUNT: u32 = 0u;
const ACTIVE_SLOT: u32 = 2u;
const ACTIVE_LISTED: u32 = 3u;
const ACTIVE_MOST_DISPATCHES: u32 = 4u;
const ACTIVE_LIST: u32 = 5u;

/// Rows of icf_vec per world.
const ICF_NVEC: u32 = 9u;
/// k(q0, v0) = bias − passive + D v0 − motor forces (N, N·m).
const VEC_FORCE: u32 = 0u;
/// v0 of the problem (m/s, rad/s).
const VEC_V0: u32 = 1u;
/// r = A v0 − h k (N·s, N·m·s).
const VEC_R: u32 = 2u;
/// Convergence scaling diag(M)^(−½).
const VEC_SCALE: u32 = 3u;
/// ∇ℓ at the iterate.
const VEC_GRAD: u32 = 4u;
/// Newton direction.
const VEC_W: u32 = 5u;
/// The iterate: warm start in, solution v1 out.
const VEC_V: u32 = 6u;
/// A v and A w along the search line.
const VEC_AV: u32 = 7u;
const VEC_AW: u32 = 8u;

// Indices of the per-world ICF arrays (layout as the fields', item_at).
fn ivec_at(w: u32, row: u32, i: u32) -> u32 {
    return item_at(w, row * dims.nv + i, ICF_NVEC * dims.nv);
}

/// Generalized acceleration of dof d in the last solve: its velocity change
/// over its step (Simulator::qacc, set by Simulator::set_qacc); zero before
/// any step and after a reset (h = 0). Read by the sensors after an advance
/// and by the next trial's warm start (cenic.wgsl part_begin).
fn qacc(w: u32, d: u32) -> f32 {
    let h = icf_world[w].h;
    if (!(h > 0.0)) {
        return 0.0;
    }
    return (icf_vec[ivec_at(w, VEC_V, d)] - icf_vec[ivec_at(w, VEC_V0, d)]) / h;
}
fn con_at(w: u32, c: u32) -> u32 {
    return item_at(w, c, dims.ncon);
}
fn jac_at(w: u32, c: u32, e: u32) -> u32 {
    return item_at(w, c * icf_dims.ndofc + e, dims.ncon * icf_dims.ndofc);
}
fn rows_at(w: u32, i: u32, k: u32) -> u32 {
    return item_at(w, i * (dims.ncon + 1u) + k, dims.nv * (dims.ncon + 1u));
}
fn gain_at(w: u32, g: u32) -> u32 {
    return item_at(w, g, icf_dims.ngain);
}
fn limit_at(w: u32, l: u32) -> u32 {
    return item_at(w, l, icf_dims.nlimit);
}
/// icf_factor is world first whatever the layout (each world's Hessian a
/// row-major nv × nv block, as the CPU's).
fn fac_at(w: u32, i: u32, j: u32) -> u32 {
    return (w * dims.nv + i) * dims.nv + j;
}
/// True for NaN and ±infinity, from the bits (immune to fast-math assumptions).
fn non_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) == 0x7f800000u;
}

