//! General convex narrow phase for pairs with a cylinder, ellipsoid or
//! convex mesh, on support functions ([`support`](mod@support)).
//!
//! Pipeline of [`convex_separation`] (signed distance, normal, witnesses):
//! 1. Each shape is a *core* inflated by a radius (sphere: its centre,
//!    capsule: its segment, others: themselves with radius 0); the radii are
//!    subtracted at the end, which is exact.
//! 2. GJK ([`gjk`](mod@gjk)) on K = A − B: the distance when the cores are
//!    separated (stopping early beyond the margin), else a simplex around the
//!    origin. Where GJK stalls short of its tolerance (curved shapes, mostly
//!    in f32), Newton refinement finishes (step 4).
//! 3. EPA ([`epa`](mod@epa)) from that simplex, first to a coarse gap
//!    (1e-6 × scale) that locates the basin of the optimum.
//! 4. Newton on the sphere of directions, minimising the support function
//!    of K ([`epa::refine`]): quadratic convergence where K is smooth at the
//!    contact (ellipsoids, sphere/capsule ends against curved shapes), where
//!    EPA converges slowly. Accepted only when it reaches the optimality
//!    condition; otherwise (flat faces, edges, cylinder rims and sides) EPA
//!    goes on to its fine tolerance (1e-10 × scale in f64, 1e-5 in f32),
//!    where it is exact or fast. If EPA runs out of iterations (deep, nearly
//!    degenerate poses), the best certified direction is returned.
//! 5. A clipped manifold when a flat face of one shape is the contact face
//!    ([`convex_manifold`](mod@convex_manifold)), else the single point.
//!
//! Plane pairs are analytic (support point along −n and rim/vertex samples),
//! and so is sphere–cylinder (closed-form point–cylinder distance).
//!
//! Feature ids (`ContactPoint::feature`, [A, B]):
//! - plane–cylinder: [0, 4·cap + k], cap 0 = −z, 1 = +z; rim sample k at
//!   angle k·90° (counter-clockwise about the cylinder axis) from the deepest
//!   rim direction (the cylinder's x axis when standing upright).
//! - plane–ellipsoid, sphere–cylinder: [0, 0].
//! - plane–mesh: [0, mesh vertex index].
//! - other pairs, single point: the support-point ids of the GJK/EPA simplex
//!   vertex with the largest weight (see [`support`](mod@support)).
//! - other pairs, clipped manifold: see [`convex_manifold`](mod@convex_manifold).

// Index loops mirror the WGSL port; negated comparisons are deliberate (NaN-safe).
#![allow(clippy::needless_range_loop, clippy::neg_cmp_op_on_partial_ord)]

pub mod convex_manifold;
pub mod epa;
pub mod gjk;
pub mod support;

use crate::collision::{ContactPoint, MAX_MANIFOLD, Manifold, Shape};
use crate::math::{Real, Vec3, v3};
use convex_manifold::{Poly, manifold, projects_inside, reference_face};
use epa::{Epa, epa_rel_tol, refine};
use gjk::{GjkStatus, cso_support, gjk, gjk_rel_tol, gjk_resume};
use support::{bounding_radius, core_radius, support, support_core};

/// Signed distance of two convex shapes with its witnesses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Separation<T> {
    /// Signed distance φ (m), negative when overlapping.
    pub dist: T,
    /// Unit normal from A to B.
    pub normal: Vec3<T>,
    /// Witness point on the surface of A (m, world).
    pub pa: Vec3<T>,
    /// Witness point on the surface of B (m, world).
    pub pb: Vec3<T>,
    /// Feature ids of the witnesses (see the module docs).
    pub features: [u32; 2],
    /// Size of the problem (m): sets the tolerances.
    pub scale: T,
}

impl<T: Real> Separation<T> {
    /// The contact point midway between the surfaces: `pa + (φ/2)·n`.
    pub fn contact_point(&self) -> ContactPoint<T> {
        ContactPoint {
            pos: self.pa + self.normal * (self.dist * T::c(0.5)),
            normal: self.normal,
            dist: self.dist,
            feature: self.features,
        }
    }
}

/// Gap (relative to the scale) to which EPA runs before Newton refinement is
/// tried: it only has to find the basin of the optimum (two optima closer
/// than this in depth may be confused: the depth error is then below it).
fn coarse_tol<T: Real>() -> T {
    T::c(1e-6)
}

/// Relative gap of the distance to which GJK runs before the face
/// certificate and Newton refinement are tried (separated cores: a convex
/// problem, Newton's basin is the whole hemisphere).
fn coarse_gjk_tol<T: Real>() -> T {
    T::c(1e-3)
}

/// Signed distance of the cores (m), unit normal A→B, witness points on the
/// cores (m) and their feature ids.
type CoreContact<T> = (T, Vec3<T>, Vec3<T>, Vec3<T>, [u32; 2]);

/// Exact distance of separated cores whose closest features are a flat face
/// of one (box face, mesh polygon, cylinder cap within ~8° of the direction
/// `n` found by a coarse GJK) and any point of the other: if the point of B
/// deepest along the face normal projects into A's face (or vice versa), the
/// face plane separates and that point and its projection are the closest
/// pair, so the distance is the separation along the face normal. Returns
/// (distance, normal A→B, witnesses on the cores, features) when certified and
/// at least `lower` (the certified GJK lower bound).
fn face_separation<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, n: Vec3<T>, lower: T) -> Option<CoreContact<T>> {
    let cos_min = T::c(0.99);
    let mut poly = Poly::new();
    // Face of A facing B.
    if let Some((f, id, _)) = reference_face(a, n, cos_min, &mut poly) {
        let (pb, fb) = support_core(b, -f);
        let d = f.dot(pb - poly.p[0]);
        if d >= lower.max(T::zero()) && projects_inside(&poly, f, pb) {
            return Some((d, f, pb - f * d, pb, [id, fb]));
        }
    }
    // Face of B facing A.
    if let Some((f, id, _)) = reference_face(b, -n, cos_min, &mut poly) {
        let (pa, fa) = support_core(a, -f);
        let d = f.dot(pa - poly.p[0]);
        if d >= lower.max(T::zero()) && projects_inside(&poly, f, pa) {
            return Some((d, -f, pa, pa - f * d, [fa, id]));
        }
    }
    None
}

/// Largest tangential residual |p(m) − (p(m)·m) m| (m) at which a Newton
/// refinement counts as converged: the depth error is then about residual² /
/// (2 × curvature of h_K), far below `tol`; at a kink or flat face of K the
/// residual stays of the order of the feature size and the result is rejected.
fn refine_tol<T: Real>(tol: T, scale: T) -> T {
    tol.max(T::c(1e-2) * (tol * scale).sqrt())
}

/// Signed distance between two convex shapes of any kind but plane (GJK when
/// separated, EPA when overlapping, on the cores), or `None` when it is at
/// least `cutoff` (m). Never returns non-finite values for finite input.
pub fn convex_separation<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, cutoff: T) -> Option<Separation<T>> {
    // Work relative to A's origin: round-off then scales with the shapes, not
    // with the world coordinates (matters in f32).
    let origin = a.pos;
    let a0 = Shape { pos: Vec3::zero(), ..*a };
    let b0 = Shape { pos: b.pos - origin, ..*b };
    let (ra, rb) = (core_radius(a), core_radius(b));
    let scale = (bounding_radius(a) + bounding_radius(b) + b0.pos.norm()).max(T::min_positive_value());
    let tol = epa_rel_tol::<T>() * scale;
    // Coarse GJK first: on smooth shapes it converges only linearly, and
    // Newton finishes faster; where Newton cannot (edges, faces), a full GJK.
    let mut g = gjk(&a0, &b0, cutoff + ra + rb, scale, coarse_gjk_tol::<T>().max(gjk_rel_tol::<T>()));
    let mut exact_sep = None;
    if g.status == GjkStatus::Separated && g.dist - g.lower > tol {
        // A face contact (flat optimum) is certified exactly; a smooth one is
        // finished by Newton; else (edges, rims) GJK goes on.
        exact_sep = face_separation(&a0, &b0, g.normal, g.lower);
        if exact_sep.is_none() {
            let r = refine(&a0, &b0, g.normal, scale);
            if r.residual <= refine_tol(tol, scale) && -r.depth >= g.lower {
                exact_sep = Some((-r.depth, r.normal, r.pa, r.pb, r.features));
            } else {
                g = gjk_resume(&a0, &b0, cutoff + ra + rb, scale, gjk_rel_tol::<T>(), &g);
            }
        }
    }
    let (dist, normal, pa, pb, features) = match g.status {
        GjkStatus::Beyond => return None,
        GjkStatus::Separated => match exact_sep {
            Some((d, n, pa, pb, f)) => (d - ra - rb, n, pa, pb, f),
            None => {
                let (_, pa, pb) = g.simplex.points();
                (g.dist - ra - rb, g.normal, pa, pb, g.simplex.features())
            }
        },
        GjkStatus::Overlapping => {
            let mut e = Epa::new(&a0, &b0, &g.simplex, scale);
            // Coarse EPA finds the basin of the optimum; where K is smooth there,
            // Newton on the support function finishes quadratically (accepted
            // only when it reaches the optimality condition to `tol`); else EPA goes on.
            e.run(tol.max(coarse_tol::<T>() * scale));
            let mut converged = e.converged(tol);
            let mut refined = None;
            if !converged {
                let (u0, m0) = e.min_upper();
                let r = refine(&a0, &b0, m0, scale);
                if r.residual <= refine_tol(tol, scale) && r.depth <= u0 {
                    refined = Some(r);
                } else {
                    converged = e.run(tol);
                }
            }
            let er = e.result();
            if let Some(r) = refined {
                (-r.depth - ra - rb, r.normal, r.pa, r.pb, r.features)
            } else if er.ok && converged {
                (-er.depth - ra - rb, er.normal, er.pa, er.pb, er.features)
            } else if er.ok {
                // Out of iterations: the best certified direction (its support
                // value bounds the depth from above) and its support points.
                let (u, m) = e.min_upper();
                let q = cso_support(&a0, &b0, m);
                (-u - ra - rb, m, q.a, q.b, [q.fa, q.fb])
            } else {
                // Degenerate input: the separating-axis value along the line of centres
                // (a lower bound of φ), never NaN.
                let mut n = b0.pos - a0.pos;
                n = if n.norm2() > T::min_positive_value() { n.normalize() } else { Vec3::unit(2) };
                let (pa, fa) = support_core(&a0, n);
                let (pb, fb) = support_core(&b0, -n);
                ((pb - pa).dot(n) - ra - rb, n, pa, pb, [fa, fb])
            }
        }
    };
    if !(dist < cutoff) {
        return None;
    }
    Some(Separation { dist, normal, pa: pa + normal * ra + origin, pb: pb - normal * rb + origin, features, scale })
}

/// The generic routine: one GJK/EPA point, or a clipped manifold when flat
/// features meet. Computed relative to A's origin (round-off scales with the
/// shapes, not with the world coordinates: matters in f32).
fn convex_contact<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let origin = a.pos;
    let a0 = Shape { pos: Vec3::zero(), ..*a };
    let b0 = Shape { pos: b.pos - origin, ..*b };
    if let Some(s) = convex_separation(&a0, &b0, margin) {
        let start = out.len;
        manifold(&a0, &b0, s.contact_point(), margin, s.scale, out);
        for p in &mut out.points[start..out.len] {
            p.pos += origin;
        }
    }
}

/// Pushes the plane contact of point `p` of B (m, world) when its height φ over
/// the plane (point `p0`, unit normal `n`) is below the margin.
#[inline]
fn plane_point<T: Real>(n: Vec3<T>, p0: Vec3<T>, p: Vec3<T>, margin: T, feature: [u32; 2], out: &mut Manifold<T>) {
    let d = n.dot(p - p0);
    if d < margin {
        out.push(ContactPoint { pos: p - n * (d * T::c(0.5)), normal: n, dist: d, feature });
    }
}

/// Contact between plane (A) and cylinder (B): up to 4 rim samples per cap
/// (the deepest rim point and the points at 90°, 180°, 270° from it), those
/// below the margin: a standing cylinder gives 4, a lying one 2.
pub fn contact_plane_cylinder<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let n = a.rot.col(2);
    let u = b.rot.col(2);
    let (r, h) = (b.size.x, b.size.y);
    // Deepest radial direction: −n projected on the cap plane.
    let t = n - u * n.dot(u);
    let tl = t.norm();
    let e = if tl > T::c(1e-6) { -t * (T::one() / tl) } else { b.rot.col(0) };
    let e2 = u.cross(e);
    let dirs = [e, e2, -e, -e2];
    for cap in 0..2u32 {
        let c = b.pos + u * if cap == 1 { h } else { -h };
        for (k, d) in dirs.iter().enumerate() {
            plane_point(n, a.pos, c + *d * r, margin, [0, 4 * cap + k as u32], out);
        }
    }
}

/// Contact between plane (A) and ellipsoid (B): the support point along −n.
pub fn contact_plane_ellipsoid<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let n = a.rot.col(2);
    let (p, _) = support(b, -n);
    plane_point(n, a.pos, p, margin, [0, 0], out);
}

/// Contact between plane (A) and mesh (B): every hull vertex below the
/// margin; beyond [`MAX_MANIFOLD`], the deepest and then greedily the vertex
/// farthest from those kept (distances within the plane).
pub fn contact_plane_mesh<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let Some(m) = b.mesh else { return };
    let n = a.rot.col(2);
    let height = |i: usize| -> (Vec3<T>, T) {
        let p = b.pos + b.rot * v3(m.vertices[i]);
        (p, n.dot(p - a.pos))
    };
    let mut count = 0usize;
    let mut deepest = 0usize;
    let mut deepest_d = T::infinity();
    for i in 0..m.vertices.len() {
        let (_, d) = height(i);
        if d < margin {
            count += 1;
            if d < deepest_d {
                deepest_d = d;
                deepest = i;
            }
        }
    }
    if count <= MAX_MANIFOLD {
        for i in 0..m.vertices.len() {
            let (p, _) = height(i);
            plane_point(n, a.pos, p, margin, [0, i as u32], out);
        }
        return;
    }
    // Farthest-point selection in passes over the hull (no candidate buffer).
    let mut chosen = [0usize; MAX_MANIFOLD];
    chosen[0] = deepest;
    for k in 1..MAX_MANIFOLD {
        let mut far = deepest;
        let mut far_d = -T::one();
        for i in 0..m.vertices.len() {
            let (p, d) = height(i);
            if d >= margin {
                continue;
            }
            let mut md = T::infinity();
            for &c in chosen.iter().take(k) {
                let q = height(c).0 - p;
                md = md.min((q - n * q.dot(n)).norm2());
            }
            if md > far_d {
                far_d = md;
                far = i;
            }
        }
        chosen[k] = far;
    }
    for &i in &chosen {
        let (p, _) = height(i);
        plane_point(n, a.pos, p, margin, [0, i as u32], out);
    }
}

/// Contact between sphere (A) and cylinder (B): one point, from the exact
/// signed distance of the sphere centre to the solid cylinder (closed form)
/// minus the radius. EPA would do, but is ill-conditioned when the centre is
/// deep inside near the axis (every radial direction almost equally shallow).
/// Features: [0, 0].
pub fn contact_sphere_cylinder<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let zero = T::zero();
    let (rs, r, h) = (a.size.x, b.size.x, b.size.y);
    let p = b.rot.tmul(a.pos - b.pos);
    let rho = (p.x * p.x + p.y * p.y).sqrt();
    // Radial direction (any on the axis).
    let (ex, ey) = if rho > T::min_positive_value() { (p.x / rho, p.y / rho) } else { (T::one(), zero) };
    let sz = if p.z >= zero { T::one() } else { -T::one() };
    let (dr, dz) = (rho - r, p.z.abs() - h);
    // Signed distance d and outward normal m (cylinder frame) at the closest surface point.
    let (d, m) = if dr > zero && dz > zero {
        let d = (dr * dr + dz * dz).sqrt();
        (d, Vec3::new(dr * ex / d, dr * ey / d, dz * sz / d))
    } else if dr > dz {
        (dr, Vec3::new(ex, ey, zero))
    } else {
        (dz, Vec3::new(zero, zero, sz))
    };
    let phi = d - rs;
    if phi < margin {
        let n = -(b.rot * m);
        let pa = a.pos + n * rs;
        out.push(ContactPoint { pos: pa + n * (phi * T::c(0.5)), normal: n, dist: phi, feature: [0, 0] });
    }
}

/// Contact between sphere (A) and ellipsoid (B): one point.
pub fn contact_sphere_ellipsoid<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between sphere (A) and mesh (B): one point.
pub fn contact_sphere_mesh<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between capsule (A) and cylinder (B): the capsule segment clipped
/// on a cylinder cap (up to 2 points) when it lies on it, else one point.
pub fn contact_capsule_cylinder<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between capsule (A) and ellipsoid (B): one point.
pub fn contact_capsule_ellipsoid<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between capsule (A) and mesh (B): the capsule segment clipped on
/// a mesh face (up to 2 points) when it lies on it, else one point.
pub fn contact_capsule_mesh<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between box (A) and cylinder (B): clipped manifold for a cap or
/// the side line on a box face, or a box face on a cap; else one point.
pub fn contact_box_cylinder<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between box (A) and ellipsoid (B): one point.
pub fn contact_box_ellipsoid<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between box (A) and mesh (B): clipped manifold for face contacts, else one point.
pub fn contact_box_mesh<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between cylinder (A) and cylinder (B): clipped manifold for a cap
/// on a cap, or a side line on a cap; else one point.
pub fn contact_cylinder_cylinder<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between cylinder (A) and ellipsoid (B): one point.
pub fn contact_cylinder_ellipsoid<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between cylinder (A) and mesh (B): clipped manifold for a cap or
/// side line on a mesh face, or a mesh face on a cap; else one point.
pub fn contact_cylinder_mesh<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between ellipsoid (A) and ellipsoid (B): one point.
pub fn contact_ellipsoid_ellipsoid<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between ellipsoid (A) and mesh (B): one point.
pub fn contact_ellipsoid_mesh<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}

/// Contact between mesh (A) and mesh (B): clipped manifold for face contacts, else one point.
pub fn contact_mesh_mesh<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    convex_contact(a, b, margin, out);
}
