// The rasterizer of src/render: every world's geoms into its tile of one
// atlas, in one render pass per chunk of worlds.
//
// One draw per world, the model's triangle list (vertices in their geom
// frames, src/render/geometry.rs) with the world as its instance index,
// the viewport and scissor set to the world's tile (so the rasterizer clips
// each world's triangles to its tile: a plane that reaches past the tile
// costs no fragments elsewhere). The vertex stage places a vertex with its
// world's geom pose (`render_pose`) and views it with its world's camera
// (`render_view`); the fragment stage writes the colour, the depth along
// the viewing axis (m) and the geom index + 1 (0: background).

/// Settings of one chunk of worlds (src/render/mod.rs RenderParams).
struct RenderParams {
    /// Geoms per world (stride of render_pose).
    ngeom: u32,
    /// Near and far clipping distances (m).
    znear: f32,
    zfar: f32,
    /// Tile width / height.
    aspect: f32,
}

/// A camera frame (src/render/camera.rs GpuView).
struct View {
    /// Eye (m); w: 1 / tan(fovy / 2).
    eye: vec4f,
    right: vec4f,
    up: vec4f,
    /// −viewing direction.
    back: vec4f,
}

/// How a geom is drawn (src/render/mod.rs GpuLook).
struct Look {
    rgba: vec4f,
    /// Checker's second colour; w: 1 when the geom has a checker.
    rgb2: vec4f,
    /// Checker squares per metre along the geom's x and y.
    repeat: vec4f,
}

@group(0) @binding(0) var<uniform> render_params: RenderParams;
/// (world, geom) → position (3, m) and rotation matrix rows (9).
@group(0) @binding(1) var<storage, read> render_pose: array<f32>;
@group(0) @binding(2) var<storage, read> render_view: array<View>;
@group(0) @binding(3) var<storage, read> render_look: array<Look>;

struct VertexIn {
    @location(0) pos: vec3f,
    @location(1) normal: vec3f,
    @location(2) geom: u32,
}

struct VertexOut {
    @builtin(position) clip: vec4f,
    @location(0) normal: vec3f,
    @location(1) local: vec2f,
    /// Distance along the viewing axis (m).
    @location(2) depth: f32,
    @location(3) @interpolate(flat) geom: u32,
    /// Viewing direction (world).
    @location(4) @interpolate(flat) view_dir: vec3f,
}

@vertex
fn render_vertex(v: VertexIn, @builtin(instance_index) world: u32) -> VertexOut {
    let p = render_params;
    let base = (world * p.ngeom + v.geom) * 12u;
    let t = vec3f(render_pose[base], render_pose[base + 1u], render_pose[base + 2u]);
    let r0 = vec3f(render_pose[base + 3u], render_pose[base + 4u], render_pose[base + 5u]);
    let r1 = vec3f(render_pose[base + 6u], render_pose[base + 7u], render_pose[base + 8u]);
    let r2 = vec3f(render_pose[base + 9u], render_pose[base + 10u], render_pose[base + 11u]);
    let xw = t + vec3f(dot(r0, v.pos), dot(r1, v.pos), dot(r2, v.pos));
    let nw = vec3f(dot(r0, v.normal), dot(r1, v.normal), dot(r2, v.normal));
    let cam = render_view[world];
    let d = xw - cam.eye.xyz;
    let xc = dot(d, cam.right.xyz);
    let yc = dot(d, cam.up.xyz);
    let zc = -dot(d, cam.back.xyz);
    let f = cam.eye.w;
    var out: VertexOut;
    // The viewport is the world's tile.
    out.clip = vec4f(xc * f / p.aspect, yc * f, p.zfar * (zc - p.znear) / (p.zfar - p.znear), zc);
    out.normal = nw;
    out.local = v.pos.xy;
    out.depth = zc;
    out.geom = v.geom;
    out.view_dir = -cam.back.xyz;
    return out;
}

struct FragmentOut {
    @location(0) color: vec4f,
    @location(1) depth: f32,
    @location(2) segment: u32,
}

@fragment
fn render_fragment(in: VertexOut) -> FragmentOut {
    let look = render_look[in.geom];
    var base = look.rgba.rgb;
    if (look.rgb2.w > 0.0) {
        let c = floor(in.local * look.repeat.xy);
        if ((i32(c.x) + i32(c.y)) % 2 != 0) {
            base = look.rgb2.rgb;
        }
    }
    // A headlight along the view and a light from above, both two-sided.
    let n = normalize(in.normal);
    let head = abs(dot(n, in.view_dir));
    let top = abs(n.z);
    let shade = 0.25 + 0.45 * head + 0.35 * top;
    var out: FragmentOut;
    out.color = vec4f(clamp(base * shade, vec3f(0.0), vec3f(1.0)), 1.0);
    out.depth = in.depth;
    out.segment = in.geom + 1u;
    return out;
}
