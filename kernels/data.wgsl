// The binding table: model constants, per-world parameters and per-world
// state, composed after common.wgsl and before every stage file.
//
// WGSL twin of src/dynamics/data.rs (Data<T>) and of the packed model in
// src/gpu/model.rs. The host binds buffers to these variables by *name*
// (src/gpu/shaders.rs reflects each entry point with naga and binds only
// the variables it uses), so a variable's name here must equal the Rust
// name: a model buffer in src/gpu/model.rs or a `Field` in
// src/gpu/buffers.rs. Binding numbers only need to be unique.
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
    _pad: u32,
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
    _pad1: vec2u,
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

// ---------------------------------------------------------------- state

/// Positions (nworld, nq).
@group(0) @binding(16) var<storage, read_write> q: array<f32>;
/// Velocities (nworld, nv).
@group(0) @binding(17) var<storage, read_write> v: array<f32>;
/// Step size of each world (nworld; s).
@group(0) @binding(18) var<storage, read_write> h: array<f32>;

// ---------------------------------------------------------------- kinematics

/// Body frame origins (nworld, nbody; m).
@group(0) @binding(20) var<storage, read_write> xpos: array<P3>;
/// Body orientations (nworld, nbody).
@group(0) @binding(21) var<storage, read_write> xquat: array<vec4f>;
/// Body rotation matrices (nworld, nbody).
@group(0) @binding(22) var<storage, read_write> xmat: array<P9>;
/// Body centres of mass (nworld, nbody; m).
@group(0) @binding(23) var<storage, read_write> xipos: array<P3>;
/// Joint anchors (nworld, njnt; m).
@group(0) @binding(24) var<storage, read_write> xanchor: array<P3>;
/// Joint axes (nworld, njnt).
@group(0) @binding(25) var<storage, read_write> xaxis: array<P3>;
/// Geom positions (nworld, ngeom; m).
@group(0) @binding(26) var<storage, read_write> geom_xpos: array<P3>;
/// Geom rotation matrices (nworld, ngeom).
@group(0) @binding(27) var<storage, read_write> geom_xmat: array<P9>;
/// Site positions (nworld, nsite; m).
@group(0) @binding(28) var<storage, read_write> site_xpos: array<P3>;
/// Site orientations (nworld, nsite).
@group(0) @binding(29) var<storage, read_write> site_xquat: array<vec4f>;
/// Reference point of each body's spatial quantities: its tree root's origin (nworld, nbody; m).
@group(0) @binding(30) var<storage, read_write> body_ref: array<P3>;
/// Spatial inertia of each body about body_ref (nworld, nbody).
@group(0) @binding(31) var<storage, read_write> cinert: array<PInertia>;
/// Motion subspace of each dof (nworld, nv).
@group(0) @binding(32) var<storage, read_write> cdof: array<PMotion>;
/// Body spatial velocities (nworld, nbody).
@group(0) @binding(33) var<storage, read_write> cvel: array<PMotion>;
/// Time derivative of cdof (nworld, nv).
@group(0) @binding(34) var<storage, read_write> cdof_dot: array<PMotion>;

// ---------------------------------------------------------------- dynamics

/// Joint-space mass matrix with armature, row-major (nworld, nv, nv).
@group(0) @binding(40) var<storage, read_write> mass: array<f32>;
/// Bias forces (nworld, nv).
@group(0) @binding(41) var<storage, read_write> bias: array<f32>;
/// Passive spring forces (nworld, nv).
@group(0) @binding(42) var<storage, read_write> passive: array<f32>;

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
    _pad0: u32,
    _pad1: u32,
    /// Combined material (Material::combine, f32): stiffness (N/m; +∞ when
    /// both geoms are rigid), dissipation (s/m), μs, μd.
    material: vec4f,
}

/// Per-geom collision constants (src/gpu/collision.rs GpuCollisionGeom).
struct CollisionGeom {
    /// Bounding-volume margin max(Options::margin, Geom::margin) (m).
    margin: f32,
    /// Mesh geoms: bounding radius of the hull about the geom origin (m).
    mesh_radius: f32,
    /// Mesh geoms: first vertex in `mesh_vertices`, vertex count.
    vert_adr: u32,
    vert_num: u32,
    /// Mesh geoms: centre of the local vertex box (m).
    local_centre: vec3f,
    /// Mesh geoms: first polygon in `mesh_polygons`.
    poly_adr: u32,
    /// Mesh geoms: half-extents of the local vertex box (m).
    local_half: vec3f,
    /// Mesh geoms: polygon count.
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

// ---------------------------------------------------------------- per-world scratch

/// Composite inertias (nworld, nbody).
@group(0) @binding(48) var<storage, read_write> crb: array<PInertia>;
/// Body accelerations of the bias recursion (nworld, nbody).
@group(0) @binding(49) var<storage, read_write> cacc: array<PMotion>;
/// Body forces of the bias recursion (nworld, nbody).
@group(0) @binding(50) var<storage, read_write> cfrc: array<PMotion>;

// ---------------------------------------------------------------- indexing (world first)

fn body_at(w: u32, b: u32) -> u32 {
    return w * dims.nbody + b;
}
fn jnt_at(w: u32, j: u32) -> u32 {
    return w * dims.njnt + j;
}
fn dof_at(w: u32, d: u32) -> u32 {
    return w * dims.nv + d;
}
fn geom_at(w: u32, g: u32) -> u32 {
    return w * dims.ngeom + g;
}
fn site_at(w: u32, s: u32) -> u32 {
    return w * dims.nsite + s;
}
fn q_at(w: u32, i: u32) -> u32 {
    return w * dims.nq + i;
}
fn mass_at(w: u32, i: u32, j: u32) -> u32 {
    return (w * dims.nv + i) * dims.nv + j;
}
