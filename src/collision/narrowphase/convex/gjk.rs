//! GJK on the configuration-space obstacle K = A − B of two shape cores:
//! the distance between separated shapes (exactly: the closest point of K to
//! the origin), or the simplex that proves they overlap (the seed of EPA).
//!
//! Plain loops over fixed-size arrays with an iteration cap, so that the
//! routine translates line by line to WGSL. The closest point on a simplex
//! uses Ericson's Voronoi-region tests (Real-Time Collision Detection, 5.1),
//! with guards for degenerate (flat) triangles and tetrahedra.

use super::support::support_core;
use crate::collision::Shape;
use crate::math::{Real, Vec3};

/// Most GJK iterations. Polytopes converge in a handful; smooth shapes
/// converge linearly and reach the tolerance well within this cap.
pub const GJK_MAX_ITERS: usize = 64;

/// Restarts from a single vertex when round-off stops progress.
const GJK_MAX_RESTARTS: usize = 2;

/// A point of K = A − B: `w = a − b` with `a`, `b` the support points
/// (m, same frame as the shapes) and their feature ids.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CsoPoint<T> {
    /// The point of K (m).
    pub w: Vec3<T>,
    /// Support point on the core of A (m).
    pub a: Vec3<T>,
    /// Support point on the core of B (m).
    pub b: Vec3<T>,
    /// Feature id of `a` (see [`super::support`](mod@super::support)).
    pub fa: u32,
    /// Feature id of `b`.
    pub fb: u32,
}

/// Support point of K = A − B (cores) in direction `d`: `s_A(d) − s_B(−d)`.
#[inline]
pub fn cso_support<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, d: Vec3<T>) -> CsoPoint<T> {
    let (pa, fa) = support_core(a, d);
    let (pb, fb) = support_core(b, -d);
    CsoPoint { w: pa - pb, a: pa, b: pb, fa, fb }
}

/// A simplex of up to 4 points of K with the barycentric weights of the
/// point closest to the origin.
#[derive(Clone, Copy, Debug, Default)]
pub struct Simplex<T> {
    /// Vertices; the first `len` are valid.
    pub pts: [CsoPoint<T>; 4],
    /// Barycentric weights of the closest point (sum 1).
    pub bary: [T; 4],
    /// Number of vertices (1 to 4).
    pub len: usize,
}

impl<T: Real> Simplex<T> {
    /// Weighted sums of (w, a, b).
    pub fn points(&self) -> (Vec3<T>, Vec3<T>, Vec3<T>) {
        let (mut w, mut a, mut b) = (Vec3::zero(), Vec3::zero(), Vec3::zero());
        for i in 0..self.len {
            let l = self.bary[i];
            w += self.pts[i].w * l;
            a += self.pts[i].a * l;
            b += self.pts[i].b * l;
        }
        (w, a, b)
    }
    /// Feature ids of the vertex with the largest weight.
    pub fn features(&self) -> [u32; 2] {
        let mut k = 0;
        for i in 1..self.len {
            if self.bary[i] > self.bary[k] {
                k = i;
            }
        }
        [self.pts[k].fa, self.pts[k].fb]
    }
    /// Keeps the vertices with a positive weight (in order).
    fn reduce(&mut self, bary: [T; 4]) {
        let mut n = 0;
        for i in 0..self.len {
            if bary[i] > T::zero() {
                self.pts[n] = self.pts[i];
                self.bary[n] = bary[i];
                n += 1;
            }
        }
        if n == 0 {
            // Cannot happen with valid weights; keep the newest vertex.
            self.pts[0] = self.pts[self.len - 1];
            self.bary[0] = T::one();
            n = 1;
        }
        self.len = n;
    }
}

/// Barycentric weights of the point of segment (a, b) closest to the origin.
#[inline]
pub fn closest_on_segment<T: Real>(a: Vec3<T>, b: Vec3<T>) -> [T; 2] {
    let ab = b - a;
    let l2 = ab.norm2();
    if l2 <= T::min_positive_value() {
        return [T::one(), T::zero()];
    }
    let t = (-a.dot(ab) / l2).max(T::zero()).min(T::one());
    [T::one() - t, t]
}

/// Barycentric weights of the point of triangle (a, b, c) closest to the
/// origin (Ericson 5.1.5). Zero weights mark vertices not needed.
pub fn closest_on_triangle<T: Real>(a: Vec3<T>, b: Vec3<T>, c: Vec3<T>) -> [T; 3] {
    let (zero, one) = (T::zero(), T::one());
    let ab = b - a;
    let ac = c - a;
    let d1 = -ab.dot(a);
    let d2 = -ac.dot(a);
    if d1 <= zero && d2 <= zero {
        return [one, zero, zero];
    }
    let d3 = -ab.dot(b);
    let d4 = -ac.dot(b);
    if d3 >= zero && d4 <= d3 {
        return [zero, one, zero];
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= zero && d1 >= zero && d3 <= zero && d1 - d3 > zero {
        let v = d1 / (d1 - d3);
        return [one - v, v, zero];
    }
    let d5 = -ab.dot(c);
    let d6 = -ac.dot(c);
    if d6 >= zero && d5 <= d6 {
        return [zero, zero, one];
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= zero && d2 >= zero && d6 <= zero && d2 - d6 > zero {
        let w = d2 / (d2 - d6);
        return [one - w, zero, w];
    }
    let va = d3 * d6 - d5 * d4;
    if va <= zero && d4 - d3 >= zero && d5 - d6 >= zero && (d4 - d3) + (d5 - d6) > zero {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return [zero, one - w, w];
    }
    let sum = va + vb + vc;
    if sum > T::min_positive_value() && va >= zero && vb >= zero && vc >= zero {
        let v = vb / sum;
        let w = vc / sum;
        return [one - v - w, v, w];
    }
    // Degenerate (collinear) triangle: best of the three edges.
    let e = [(a, b, 0usize, 1usize), (a, c, 0, 2), (b, c, 1, 2)];
    let mut best = [one, zero, zero];
    let mut best_d = a.norm2();
    for &(p, q, i, j) in &e {
        let l = closest_on_segment(p, q);
        let d = (p * l[0] + q * l[1]).norm2();
        if d < best_d {
            best_d = d;
            best = [zero; 3];
            best[i] = l[0];
            best[j] = l[1];
        }
    }
    best
}

/// Barycentric weights of the point of tetrahedron (p0..p3) closest to the
/// origin, and whether the origin lies inside it.
///
/// Signed volumes (as in Montanari et al., "Improving the GJK algorithm",
/// 2017): `c[j]` is the volume of the tetrahedron with vertex j replaced by
/// the origin, and the determinant is their sum, so the origin is inside
/// exactly when every `c[j]` has the sign of the sum. Since then each
/// `|c[j]| ≤ |sum|`, round-off on a sliver tetrahedron far from the origin
/// cannot fake an inside verdict (testing each face against its own
/// recomputed orientation can). Faces with `c[j]` of the other sign see the
/// origin and are searched for the closest point (all faces when the
/// tetrahedron is flat).
pub fn closest_on_tetrahedron<T: Real>(p: [Vec3<T>; 4]) -> ([T; 4], bool) {
    // Face opposite vertex j, counter-clockwise seen from outside when vol(p) > 0.
    const F: [[usize; 3]; 4] = [[1, 3, 2], [0, 2, 3], [0, 3, 1], [0, 1, 2]];
    let vol = |a: Vec3<T>, b: Vec3<T>, c: Vec3<T>, d: Vec3<T>| (b - a).dot((c - a).cross(d - a));
    let z = Vec3::zero();
    let c = [vol(z, p[1], p[2], p[3]), vol(p[0], z, p[2], p[3]), vol(p[0], p[1], z, p[3]), vol(p[0], p[1], p[2], z)];
    let det = c[0] + c[1] + c[2] + c[3];
    let mag = c[0].abs() + c[1].abs() + c[2].abs() + c[3].abs();
    let flat = det.abs() <= T::c(1e3) * T::EPS * mag;
    if !flat && c.iter().all(|&cj| cj * det > T::zero()) {
        return ([c[0] / det, c[1] / det, c[2] / det, c[3] / det], true);
    }
    let mut best = [T::zero(); 4];
    let mut best_d = T::infinity();
    for (j, f) in F.iter().enumerate() {
        if !flat && c[j] * det > T::zero() {
            continue;
        }
        let l = closest_on_triangle(p[f[0]], p[f[1]], p[f[2]]);
        let d = (p[f[0]] * l[0] + p[f[1]] * l[1] + p[f[2]] * l[2]).norm2();
        if d < best_d {
            best_d = d;
            best = [T::zero(); 4];
            best[f[0]] = l[0];
            best[f[1]] = l[1];
            best[f[2]] = l[2];
        }
    }
    (best, false)
}

/// Outcome of [`gjk`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GjkStatus {
    /// The cores are separated; the result holds their distance.
    Separated,
    /// The cores overlap (or touch within the tolerance); the simplex seeds EPA.
    Overlapping,
    /// The cores are farther apart than the cutoff (distance not computed).
    Beyond,
}

/// Result of [`gjk`].
#[derive(Clone, Copy, Debug)]
pub struct GjkResult<T> {
    /// What GJK found.
    pub status: GjkStatus,
    /// Final simplex with the weights of the closest point.
    pub simplex: Simplex<T>,
    /// Distance between the cores (m); valid when `Separated`.
    pub dist: T,
    /// Closest point of K to the origin, `pa − pb` (m); valid when `Separated`.
    pub v: Vec3<T>,
    /// Unit direction (A to B) with the largest certified separation:
    /// `−v/|v|` at the iteration whose support point gave the best lower
    /// bound of the distance. The normal to report: where GJK stops short of
    /// its tolerance (round-off on curved shapes), |v| is still accurate to
    /// second order but the direction of v only to first order.
    pub normal: Vec3<T>,
    /// The lower bound of the distance along `normal` (m).
    pub lower: T,
}

/// Relative tolerance on the distance gap (upper − lower bound) at which GJK stops.
#[inline]
pub fn gjk_rel_tol<T: Real>() -> T {
    // 1e-8 in f64 (the distance, the upper bound, is then exact to far fewer
    // digits than that: its error is second order; σ along the normal is
    // within 1e-8 × distance), 1e-5 in f32.
    (T::EPS * T::c(4.5e7)).min(T::c(1e-5))
}

/// GJK distance between the cores of `a` and `b`. `cutoff` (m): stop with
/// `Beyond` once the distance is proven larger. `scale` (m): size of the
/// problem (coordinates relative to A), which sets the absolute tolerances.
/// `eps_rel`: relative gap between the upper and lower bound of the distance
/// at which to stop ([`gjk_rel_tol`] for full accuracy).
pub fn gjk<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, cutoff: T, scale: T, eps_rel: T) -> GjkResult<T> {
    let mut d = b.pos - a.pos;
    if d.norm2() <= T::min_positive_value() {
        d = Vec3::unit(0);
    }
    let mut s = Simplex::<T>::default();
    s.pts[0] = cso_support(a, b, d);
    s.bary[0] = T::one();
    s.len = 1;
    let start = GjkResult {
        status: GjkStatus::Separated,
        simplex: s,
        dist: s.pts[0].w.norm(),
        v: s.pts[0].w,
        normal: Vec3::unit(2),
        lower: T::neg_infinity(),
    };
    gjk_resume(a, b, cutoff, scale, eps_rel, &start)
}

/// Continues GJK from a `Separated` result `prev` (e.g. a coarse run) to the
/// relative gap `eps_rel`; arguments as for [`gjk`].
pub fn gjk_resume<T: Real>(
    a: &Shape<'_, T>,
    b: &Shape<'_, T>,
    cutoff: T,
    scale: T,
    eps_rel: T,
    prev: &GjkResult<T>,
) -> GjkResult<T> {
    // Below this distance the cores are treated as touching and EPA decides.
    let touch = T::c(64.0) * T::EPS * scale;
    let mut s = prev.simplex;
    let mut v = prev.v;
    let mut vv = v.norm2();
    let mut lower = prev.lower;
    let mut normal = prev.normal;
    let mut best = s;
    let mut best_vv = T::infinity();
    let mut restarts = 0;
    let overlap = |s: Simplex<T>, v: Vec3<T>| GjkResult {
        status: GjkStatus::Overlapping,
        simplex: s,
        dist: T::zero(),
        v,
        normal: Vec3::unit(2),
        lower: T::zero(),
    };
    for _ in 0..GJK_MAX_ITERS {
        if vv <= touch * touch {
            return overlap(s, v);
        }
        let p = cso_support(a, b, -v);
        let vw = v.dot(p.w);
        let vn = vv.sqrt();
        // vw/|v| is a lower bound on the distance, certified by the direction −v/|v|.
        if vw / vn > lower {
            lower = vw / vn;
            normal = -v * (T::one() / vn);
        }
        if lower > cutoff {
            return GjkResult { status: GjkStatus::Beyond, simplex: s, dist: vn, v, normal, lower };
        }
        // Gap between the upper (|v|) and lower bound on the distance.
        let gap = (vv - vw) / vn;
        if gap <= (eps_rel * vn).max(T::c(16.0) * T::EPS * scale) {
            break;
        }
        // New vertex first, so that the subsimplex keeps it when it matters.
        let prev = s;
        s.pts[s.len] = p;
        s.len += 1;
        let mut bary = [T::zero(); 4];
        let mut inside = false;
        match s.len {
            2 => {
                let l = closest_on_segment(s.pts[0].w, s.pts[1].w);
                bary[0] = l[0];
                bary[1] = l[1];
            }
            3 => {
                let l = closest_on_triangle(s.pts[0].w, s.pts[1].w, s.pts[2].w);
                bary[..3].copy_from_slice(&l);
            }
            _ => {
                let (l, ins) = closest_on_tetrahedron([s.pts[0].w, s.pts[1].w, s.pts[2].w, s.pts[3].w]);
                bary = l;
                inside = ins;
            }
        }
        if inside {
            s.bary = [T::zero(); 4];
            return overlap(s, Vec3::zero());
        }
        s.reduce(bary);
        let (nv, _, _) = s.points();
        let nvv = nv.norm2();
        if nvv >= vv {
            // No progress: round-off in a badly shaped simplex (thin triangles on
            // curved shapes, mostly in f32). Keep the better simplex, and restart
            // from the new support point alone a few times before giving up.
            if vv < best_vv {
                best = prev;
                best_vv = vv;
            }
            if restarts == GJK_MAX_RESTARTS {
                break;
            }
            restarts += 1;
            s.pts[0] = p;
            s.bary[0] = T::one();
            s.len = 1;
            v = p.w;
            vv = v.norm2();
            continue;
        }
        v = nv;
        vv = nvv;
    }
    if best_vv < vv {
        s = best;
        vv = best_vv;
        v = s.points().0;
    }
    if vv <= touch * touch {
        return overlap(s, v);
    }
    GjkResult { status: GjkStatus::Separated, simplex: s, dist: vv.sqrt(), v, normal, lower }
}
