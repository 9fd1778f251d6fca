// Collision library: shapes, the manifold under construction and small
// vector helpers, shared by the narrow-phase libraries (collision_analytic,
// collision_gjk, collision_epa, collision_manifold) and the collision stage
// (collision.wgsl; composed in this order, src/gpu/collision.rs FILE).
//
// Conventions as on the CPU: φ < 0 when overlapping, normal from A (the
// geom whose kind comes first) to B, contact point midway between the
// surfaces. WGSL may assume there are no infinities, so "∞" is F32_BIG
// (f32::MAX) where the CPU uses T::infinity() as a start value.

// The geom kinds (GEOM_*), MAX_MANIFOLD and the pair-kind codes (PAIR_*)
// are generated from src/collision/narrowphase.rs PAIR_KINDS (composed
// after data.wgsl).

/// f32::EPSILON (T::EPS on the CPU f32 path).
const F32_EPS: f32 = 1.1920929e-7;
/// f32::MIN_POSITIVE (T::min_positive_value()).
const F32_MIN_POS: f32 = 1.1754944e-38;
/// f32::MAX: stands for +∞ as a start value of minimisations.
const F32_BIG: f32 = 3.4028234e38;

/// True unless x is ±∞ or NaN (exponent bits all ones).
fn is_finite_f(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}
fn is_finite3(v: vec3f) -> bool {
    return is_finite_f(v.x) && is_finite_f(v.y) && is_finite_f(v.z);
}

// ---------------------------------------------------------------- small vector helpers (twins of Vec3/Mat3)

fn norm2(v: vec3f) -> f32 {
    return dot3(v, v);
}
fn norm(v: vec3f) -> f32 {
    return sqrt(dot3(v, v));
}
/// Vec3::normalize: zero for a zero vector.
fn normalize3(v: vec3f) -> vec3f {
    let n = norm(v);
    if (n > 0.0) {
        return v * (1.0 / n);
    }
    return vec3f(0.0);
}
fn max_elem(v: vec3f) -> f32 {
    return max(max(v.x, v.y), v.z);
}
fn unit3(i: u32) -> vec3f {
    var e = vec3f(0.0);
    e[i] = 1.0;
    return e;
}
/// Mat3::row.
fn m3_row(m: M3, i: u32) -> vec3f {
    if (i == 0u) {
        return m.r0;
    }
    if (i == 1u) {
        return m.r1;
    }
    return m.r2;
}
/// Mat3::tmul: mᵀ v.
fn m3_tmul(m: M3, v: vec3f) -> vec3f {
    return vec3f(dot3(m3_col(m, 0u), v), dot3(m3_col(m, 1u), v), dot3(m3_col(m, 2u), v));
}
/// Vec3::any_orthonormal: cross with the axis least aligned with v.
fn any_orthonormal(v: vec3f) -> vec3f {
    let a = abs(v);
    var e = vec3f(0.0, 0.0, 1.0);
    if (a.x <= a.y && a.x <= a.z) {
        e = vec3f(1.0, 0.0, 0.0);
    } else if (a.y <= a.z) {
        e = vec3f(0.0, 1.0, 0.0);
    }
    return normalize3(cross3(v, e));
}

// ---------------------------------------------------------------- shapes and the manifold

/// A geom's shape and world pose (collision::Shape).
struct Shape {
    kind: u32,
    /// Geom index (mesh data lookups).
    geom: u32,
    /// Size parameters (m).
    size: vec3f,
    /// Origin of the geom frame, world (m).
    pos: vec3f,
    /// Rotation geom → world.
    rot: M3,
}

fn shape_of_geom(w: u32, g: u32) -> Shape {
    let geom = geoms[g];
    let i = geom_at(w, g);
    return Shape(geom.kind, g, geom.size, unpack3(geom_xpos_get(i)), unpack9(geom_xmat_get(i)));
}


// The manifold of the current pair (collision::Manifold), per invocation.
var<private> manifold_points: array<ContactPoint, MAX_MANIFOLD>;
var<private> manifold_len: u32;

/// Manifold::push.
fn manifold_push(p: ContactPoint) {
    if (manifold_len < MAX_MANIFOLD) {
        manifold_points[manifold_len] = p;
        manifold_len += 1u;
    }
}

