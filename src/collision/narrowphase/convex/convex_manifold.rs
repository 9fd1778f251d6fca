//! Contact manifolds for convex pairs with flat features: when the contact
//! normal found by GJK/EPA is the normal of a flat face of one shape (the
//! *reference* face: a box face, a mesh polygon, a cylinder cap), the facing
//! feature of the other shape (the *incident* feature: a box face, a mesh
//! polygon, a cylinder cap as a regular octagon, a cylinder side line, a
//! capsule segment) is clipped against the reference face's side planes
//! (Sutherland–Hodgman) and every clipped point closer than the margin
//! becomes a contact point, with φ its height over the reference plane.
//! At most [`MAX_MANIFOLD`] points are kept: the deepest, then greedily the
//! point farthest from those already kept.
//!
//! Every incident point is a point of the incident shape and the reference
//! normal is the optimal separating direction, so no point is deeper than the
//! signed distance GJK/EPA found (depths are clamped to it against round-off
//! in the face alignment); the point GJK/EPA found is added when the clipped
//! set does not reach its depth (a curved contact point between polygon
//! samples). All points carry the GJK/EPA normal.
//!
//! Two straight features lying side by side (capsule segments, cylinder side
//! lines, with no flat face involved) give the two ends of their overlap.
//!
//! Feature ids of clipped points: the reference face (box `2·axis + (side >
//! 0)`, mesh polygon index, cylinder cap 0 = −z, 1 = +z) on the reference
//! shape; on the incident shape the incident vertex (box corner bits, mesh
//! vertex index, cylinder cap sample `8·cap + k` at angle k·45° from the
//! deepest rim direction, cylinder side line end `16 + cap`, capsule end
//! 0/1), or'ed with [`FEATURE_CLIPPED`] when the point is where an incident
//! edge starting at that vertex crosses a reference side plane.

use super::epa::epa_rel_tol;
use super::support::core_radius;
use crate::collision::{ContactPoint, MAX_MANIFOLD, Manifold, Shape};
use crate::math::{Real, Vec3, v3};
use crate::model::GeomKind;

/// Flag on an incident feature id: the point lies on the incident edge that
/// starts at the flagged vertex, where it crosses a reference side plane.
pub const FEATURE_CLIPPED: u32 = 1 << 31;

/// Most vertices of a reference or incident feature (larger mesh polygons
/// fall back to the single GJK/EPA point).
pub const MAX_POLY: usize = 32;
/// Capacity of the clipping buffers: a convex n-gon clipped by an m-gon has at most n + m vertices.
const MAX_CLIP: usize = 2 * MAX_POLY;

/// Samples on a cylinder cap (a regular polygon inscribed in the rim).
pub const CAP_SAMPLES: usize = 8;

/// A reference face must have its normal within this of the contact normal,
/// as 1 − cos θ: 1e-12 in f64 (θ ≈ 1.4e-6 rad), 1.2e-5 in f32 (θ ≈ 5e-3 rad,
/// near the resolution of 1 − cos in f32). GJK/EPA return a face normal
/// exactly (to round-off) whenever the contact is against a flat face.
pub fn align_tol<T: Real>() -> T {
    (T::EPS * T::c(100.0)).max(T::c(1e-12))
}

/// A polygon (or a segment when `n == 2`) in world coordinates with vertex ids.
#[derive(Clone, Copy, Debug)]
pub struct Poly<T> {
    /// Vertices (m, world).
    pub p: [Vec3<T>; MAX_POLY],
    /// Feature ids of the vertices.
    pub id: [u32; MAX_POLY],
    /// Number of vertices.
    pub n: usize,
}

impl<T: Real> Default for Poly<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Real> Poly<T> {
    /// An empty polygon.
    pub fn new() -> Self {
        Poly { p: [Vec3::zero(); MAX_POLY], id: [0; MAX_POLY], n: 0 }
    }
    #[inline]
    fn push(&mut self, p: Vec3<T>, id: u32) {
        if self.n < MAX_POLY {
            self.p[self.n] = p;
            self.id[self.n] = id;
            self.n += 1;
        }
    }
}

/// Box face `2·axis + (sign > 0)` corners, counter-clockwise seen from outside (geom frame).
fn box_face<T: Real>(s: &Shape<'_, T>, axis: usize, positive: bool, poly: &mut Poly<T>) {
    let (j, k) = ((axis + 1) % 3, (axis + 2) % 3);
    // (e_j, e_k, e_axis) is right-handed: (−,−), (+,−), (+,+), (−,+) is CCW about +e_axis.
    let mut corners = [(false, false), (true, false), (true, true), (false, true)];
    if !positive {
        corners.reverse();
    }
    for (sj, sk) in corners {
        let mut bits = [false; 3];
        bits[axis] = positive;
        bits[j] = sj;
        bits[k] = sk;
        let mut p = Vec3::zero();
        for (i, &b) in bits.iter().enumerate() {
            p[i] = if b { s.size[i] } else { -s.size[i] };
        }
        let id = bits[0] as u32 | (bits[1] as u32) << 1 | (bits[2] as u32) << 2;
        poly.push(s.pos + s.rot * p, id);
    }
}

/// Cylinder cap (`top`) as a regular octagon, counter-clockwise seen from
/// outside, with vertex 0 along the unit geom-frame radial direction `(ex, ey)`.
fn cylinder_cap<T: Real>(s: &Shape<'_, T>, top: bool, ex: T, ey: T, poly: &mut Poly<T>) {
    let (r, h) = (s.size.x, s.size.y);
    let z = if top { h } else { -h };
    for k in 0..CAP_SAMPLES {
        let ang = core::f64::consts::TAU * k as f64 / CAP_SAMPLES as f64;
        // Counter-clockwise about +z for the top cap, about −z for the bottom one.
        let (c, sn) = (T::c(ang.cos()), T::c(if top { ang.sin() } else { -ang.sin() }));
        let (x, y) = (c * ex - sn * ey, sn * ex + c * ey);
        poly.push(s.pos + s.rot * Vec3::new(r * x, r * y, z), (8 * top as usize + k) as u32);
    }
}

/// The flat face of `s` whose outward normal is closest to the unit world
/// direction `dir`, if the cosine of their angle is at least `cos_min`
/// (`1 − align_tol()` for a reference face): its polygon (CCW seen from
/// outside), outward unit normal, face id and the cosine.
pub fn reference_face<T: Real>(
    s: &Shape<'_, T>,
    dir: Vec3<T>,
    cos_min: T,
    poly: &mut Poly<T>,
) -> Option<(Vec3<T>, u32, T)> {
    poly.n = 0;
    let dl = s.rot.tmul(dir);
    match s.kind {
        GeomKind::Box => {
            let a = dl.abs();
            let axis = if a.x >= a.y && a.x >= a.z {
                0
            } else if a.y >= a.z {
                1
            } else {
                2
            };
            if a[axis] < cos_min {
                return None;
            }
            let positive = dl[axis] > T::zero();
            box_face(s, axis, positive, poly);
            let sign = if positive { T::one() } else { -T::one() };
            Some((s.rot.col(axis) * sign, (2 * axis + positive as usize) as u32, a[axis]))
        }
        GeomKind::Cylinder => {
            if dl.z.abs() < cos_min {
                return None;
            }
            let top = dl.z > T::zero();
            cylinder_cap(s, top, T::one(), T::zero(), poly);
            let sign = if top { T::one() } else { -T::one() };
            Some((s.rot.col(2) * sign, top as u32, dl.z.abs()))
        }
        GeomKind::Mesh => {
            let m = s.mesh?;
            let mut best = usize::MAX;
            let mut best_c = T::neg_infinity();
            for (i, f) in m.polygons.iter().enumerate() {
                let c = v3::<T>(f.normal).dot(dl);
                if c > best_c {
                    best_c = c;
                    best = i;
                }
            }
            if best == usize::MAX || best_c < cos_min || m.polygons[best].count as usize > MAX_POLY {
                return None;
            }
            let f = m.polygons[best];
            for k in 0..f.count as usize {
                let vi = m.polygon_vertices[f.start as usize + k];
                poly.push(s.pos + s.rot * v3(m.vertices[vi as usize]), vi);
            }
            Some((s.rot * v3(f.normal), best as u32, best_c))
        }
        _ => None,
    }
}

/// The feature of `s` facing the unit world direction `dir` (deepest into
/// the reference face, whose outward normal is −dir): a polygon, a segment
/// (`n == 2`), or nothing for smooth shapes.
pub fn incident_feature<T: Real>(s: &Shape<'_, T>, dir: Vec3<T>, poly: &mut Poly<T>) -> bool {
    poly.n = 0;
    let dl = s.rot.tmul(dir);
    match s.kind {
        GeomKind::Box => {
            let a = dl.abs();
            let axis = if a.x >= a.y && a.x >= a.z {
                0
            } else if a.y >= a.z {
                1
            } else {
                2
            };
            box_face(s, axis, dl[axis] > T::zero(), poly);
            true
        }
        GeomKind::Capsule => {
            let off = dir * core_radius(s);
            let ax = s.rot.col(2) * s.size.y;
            poly.push(s.pos - ax + off, 0);
            poly.push(s.pos + ax + off, 1);
            true
        }
        GeomKind::Cylinder => {
            let rho = (dl.x * dl.x + dl.y * dl.y).sqrt();
            // Radial direction of the deepest rim points; any when facing along the axis.
            let (ex, ey) = if rho > T::c(1e-6) { (dl.x / rho, dl.y / rho) } else { (T::one(), T::zero()) };
            let top = dl.z > T::zero();
            if dl.z.abs() * T::c(core::f64::consts::SQRT_2) >= T::one() {
                cylinder_cap(s, top, ex, ey, poly);
            } else {
                let (r, h) = (s.size.x, s.size.y);
                poly.push(s.pos + s.rot * Vec3::new(r * ex, r * ey, -h), 16);
                poly.push(s.pos + s.rot * Vec3::new(r * ex, r * ey, h), 17);
            }
            true
        }
        GeomKind::Mesh => {
            let Some(m) = s.mesh else { return false };
            // Support vertex, then the polygon through it that faces `dir` best
            // (the best-facing polygon overall need not contain the deepest vertex).
            let mut sv = 0u32;
            let mut best = T::neg_infinity();
            for (i, p) in m.vertices.iter().enumerate() {
                let v = v3::<T>(*p).dot(dl);
                if v > best {
                    best = v;
                    sv = i as u32;
                }
            }
            let mut bf = usize::MAX;
            let mut best_c = T::neg_infinity();
            for (i, f) in m.polygons.iter().enumerate() {
                let c = v3::<T>(f.normal).dot(dl);
                if c > best_c && m.polygon_vertices[f.start as usize..(f.start + f.count) as usize].contains(&sv) {
                    best_c = c;
                    bf = i;
                }
            }
            if bf == usize::MAX || m.polygons[bf].count as usize > MAX_POLY {
                return false;
            }
            let f = m.polygons[bf];
            for k in 0..f.count as usize {
                let vi = m.polygon_vertices[f.start as usize + k];
                poly.push(s.pos + s.rot * v3(m.vertices[vi as usize]), vi);
            }
            true
        }
        _ => false,
    }
}

/// Clips the incident polygon/segment `inc` against the side planes of the
/// reference polygon `rf` (outward normal `f`), into `out`/`ids`; returns the count.
fn clip<T: Real>(
    inc: &Poly<T>,
    rf: &Poly<T>,
    f: Vec3<T>,
    out: &mut [Vec3<T>; MAX_CLIP],
    ids: &mut [u32; MAX_CLIP],
) -> usize {
    if inc.n == 2 {
        // Segment: clip the parameter interval.
        let (p0, p1) = (inc.p[0], inc.p[1]);
        let (mut t0, mut t1) = (T::zero(), T::one());
        let (mut c0, mut c1) = (false, false);
        for i in 0..rf.n {
            let a = rf.p[i];
            let side = f.cross(rf.p[(i + 1) % rf.n] - a);
            let (d0, d1) = (side.dot(p0 - a), side.dot(p1 - a));
            if d0 < T::zero() && d1 < T::zero() {
                return 0;
            }
            if d0 < T::zero() {
                let t = d0 / (d0 - d1);
                if t > t0 {
                    t0 = t;
                    c0 = true;
                }
            } else if d1 < T::zero() {
                let t = d0 / (d0 - d1);
                if t < t1 {
                    t1 = t;
                    c1 = true;
                }
            }
        }
        if t0 > t1 {
            return 0;
        }
        let e = p1 - p0;
        out[0] = p0 + e * t0;
        ids[0] = if c0 { inc.id[0] | FEATURE_CLIPPED } else { inc.id[0] };
        out[1] = p0 + e * t1;
        ids[1] = if c1 { inc.id[0] | FEATURE_CLIPPED } else { inc.id[1] };
        return 2;
    }
    // Sutherland–Hodgman, ping-pong between two buffers.
    let mut buf = [Vec3::zero(); MAX_CLIP];
    let mut bid = [0u32; MAX_CLIP];
    let mut n = inc.n;
    out[..n].copy_from_slice(&inc.p[..n]);
    ids[..n].copy_from_slice(&inc.id[..n]);
    for i in 0..rf.n {
        if n == 0 {
            break;
        }
        let a = rf.p[i];
        let side = f.cross(rf.p[(i + 1) % rf.n] - a);
        let mut m = 0;
        for j in 0..n {
            let (s, e) = (out[(j + n - 1) % n], out[j]);
            let (ds, de) = (side.dot(s - a), side.dot(e - a));
            if (ds >= T::zero()) != (de >= T::zero()) && m < MAX_CLIP {
                buf[m] = s + (e - s) * (ds / (ds - de));
                bid[m] = ids[(j + n - 1) % n] | FEATURE_CLIPPED;
                m += 1;
            }
            if de >= T::zero() && m < MAX_CLIP {
                buf[m] = e;
                bid[m] = ids[j];
                m += 1;
            }
        }
        out[..m].copy_from_slice(&buf[..m]);
        ids[..m].copy_from_slice(&bid[..m]);
        n = m;
    }
    n
}

/// Keeps at most [`MAX_MANIFOLD`] of the `n` candidate points: the deepest,
/// then repeatedly the one farthest from those kept. Returns the kept indices.
fn select<T: Real>(pts: &[ContactPoint<T>], n: usize) -> ([usize; MAX_MANIFOLD], usize) {
    let mut keep = [0usize; MAX_MANIFOLD];
    if n <= MAX_MANIFOLD {
        for (i, k) in keep.iter_mut().enumerate().take(n) {
            *k = i;
        }
        return (keep, n);
    }
    let mut deepest = 0;
    for i in 1..n {
        if pts[i].dist < pts[deepest].dist {
            deepest = i;
        }
    }
    keep[0] = deepest;
    let mut mind = [T::infinity(); MAX_CLIP];
    let mut last = deepest;
    for k in 1..MAX_MANIFOLD {
        let mut far = usize::MAX;
        let mut far_d = -T::one();
        for i in 0..n {
            let d = (pts[i].pos - pts[last].pos).norm2();
            if d < mind[i] {
                mind[i] = d;
            }
            if mind[i] > far_d {
                far_d = mind[i];
                far = i;
            }
        }
        keep[k] = far;
        last = far;
    }
    (keep, MAX_MANIFOLD)
}

/// True when `p` (m, world) projects into the convex polygon `poly` (CCW about `f`).
pub fn projects_inside<T: Real>(poly: &Poly<T>, f: Vec3<T>, p: Vec3<T>) -> bool {
    let mut inside = poly.n >= 3;
    for i in 0..poly.n {
        let a = poly.p[i];
        inside &= f.cross(poly.p[(i + 1) % poly.n] - a).dot(p - a) >= T::zero();
    }
    inside
}

/// Straight line of `s` lying across the unit world direction `dir` (its
/// surface facing `dir`): a capsule's segment shifted by its radius, or a
/// cylinder's side line; ends and their ids (capsule 0/1, cylinder side
/// 16/17). None for other shapes or when the axis is not within ~6° of
/// perpendicular to `dir`.
fn line_feature<T: Real>(s: &Shape<'_, T>, dir: Vec3<T>) -> Option<(Vec3<T>, Vec3<T>, [u32; 2])> {
    let u = s.rot.col(2);
    if u.dot(dir).abs() > T::c(0.1) {
        return None;
    }
    let h = s.size.y;
    match s.kind {
        GeomKind::Capsule => {
            let off = dir * s.size.x;
            Some((s.pos - u * h + off, s.pos + u * h + off, [0, 1]))
        }
        GeomKind::Cylinder => {
            let e = (dir - u * u.dot(dir)).normalize() * s.size.x;
            Some((s.pos - u * h + e, s.pos + u * h + e, [16, 17]))
        }
        _ => None,
    }
}

/// Line contact: two straight features (capsule segment, cylinder side)
/// lying side by side give the two ends of their overlap; else the single
/// point. Depths are measured along the GJK/EPA normal and clamped to its φ.
fn line_line<T: Real>(
    a: &Shape<'_, T>,
    b: &Shape<'_, T>,
    single: ContactPoint<T>,
    margin: T,
    scale: T,
    out: &mut Manifold<T>,
) {
    let n = single.normal;
    let (Some((a0, a1, ia)), Some((b0, b1, ib))) = (line_feature(a, n), line_feature(b, -n)) else {
        out.push(single);
        return;
    };
    let (da, db) = (a1 - a0, b1 - b0);
    let (la, lb) = (da.norm2(), db.norm2());
    // Crossed lines touch at one point; only nearly parallel ones make a line contact.
    if la <= T::min_positive_value() || lb <= T::min_positive_value() || da.cross(db).norm2() > T::c(1e-2) * la * lb {
        out.push(single);
        return;
    }
    // Overlap of B's segment projected on A's, in A's parameter.
    let (sb0, sb1) = ((b0 - a0).dot(da) / la, (b1 - a0).dot(da) / la);
    let lo = sb0.min(sb1).max(T::zero());
    let hi = sb0.max(sb1).min(T::one());
    if !(lo < hi) {
        out.push(single);
        return;
    }
    let mut min_d = T::infinity();
    for t in [lo, hi] {
        let pa = a0 + da * t;
        let tb = ((pa - b0).dot(db) / lb).max(T::zero()).min(T::one());
        let pb = b0 + db * tb;
        let d = (pb - pa).dot(n).max(single.dist);
        if d < margin {
            let ida = if t == T::zero() {
                ia[0]
            } else if t == T::one() {
                ia[1]
            } else {
                ia[0] | FEATURE_CLIPPED
            };
            let idb = if tb == T::zero() {
                ib[0]
            } else if tb == T::one() {
                ib[1]
            } else {
                ib[0] | FEATURE_CLIPPED
            };
            out.push(ContactPoint { pos: pa + n * (d * T::c(0.5)), normal: n, dist: d, feature: [ida, idb] });
            min_d = min_d.min(d);
        }
    }
    if out.len == 0 || min_d > single.dist + T::c(2.0) * epa_rel_tol::<T>() * scale {
        out.push(single);
    }
}

/// Writes the contact manifold of `a` and `b` (A < B in kind order) into
/// `out`, given their signed distance `dist` (m), unit normal `n` (A → B),
/// the single GJK/EPA contact `single`, and the margin (m). Falls back to
/// `single` when no flat reference face is aligned with `n`.
pub fn manifold<T: Real>(
    a: &Shape<'_, T>,
    b: &Shape<'_, T>,
    single: ContactPoint<T>,
    margin: T,
    scale: T,
    out: &mut Manifold<T>,
) {
    let n = single.normal;
    let mut ra = Poly::new();
    let mut rb = Poly::new();
    let cos_min = T::one() - align_tol::<T>();
    let fa = reference_face(a, n, cos_min, &mut ra);
    let fb = reference_face(b, -n, cos_min, &mut rb);
    // Reference: the better aligned face, A on ties.
    let (ref_is_a, rf, (f, face_id, _)) = match (fa, fb) {
        (Some(x), Some(y)) => {
            if x.2 >= y.2 {
                (true, &ra, x)
            } else {
                (false, &rb, y)
            }
        }
        (Some(x), None) => (true, &ra, x),
        (None, Some(y)) => (false, &rb, y),
        (None, None) => {
            line_line(a, b, single, margin, scale, out);
            return;
        }
    };
    let mut inc = Poly::new();
    let other = if ref_is_a { b } else { a };
    if !incident_feature(other, -f, &mut inc) {
        out.push(single);
        return;
    }
    let mut pts = [Vec3::zero(); MAX_CLIP];
    let mut ids = [0u32; MAX_CLIP];
    let m = clip(&inc, rf, f, &mut pts, &mut ids);
    let off = f.dot(rf.p[0]);
    // All points share the GJK/EPA normal; their depths are measured along the
    // face normal (equal to round-off) and never deeper than the signed distance.
    let normal = single.normal;
    let mut cand = [ContactPoint::default(); MAX_CLIP];
    let mut nc = 0;
    let mut min_d = T::infinity();
    for i in 0..m {
        let d = (f.dot(pts[i]) - off).max(single.dist);
        if d < margin {
            let feature = if ref_is_a { [face_id, ids[i]] } else { [ids[i], face_id] };
            cand[nc] = ContactPoint { pos: pts[i] - f * (d * T::c(0.5)), normal, dist: d, feature };
            nc += 1;
            min_d = min_d.min(d);
        }
    }
    let (keep, nk) = select(&cand, nc);
    for &k in keep.iter().take(nk) {
        out.push(cand[k]);
    }
    // The clipped samples miss the deepest point (a curved contact between
    // samples, or a deepest point beside the reference face): add it.
    let tol = T::c(2.0) * epa_rel_tol::<T>() * scale;
    if nk == 0 || min_d > single.dist + tol {
        if out.len < MAX_MANIFOLD {
            out.push(single);
        } else {
            let mut shallow = 0;
            for i in 1..out.len {
                if out.points[i].dist > out.points[shallow].dist {
                    shallow = i;
                }
            }
            out.points[shallow] = single;
        }
    }
}
