//! EPA (expanding polytope algorithm): penetration depth and normal of two
//! overlapping cores, from the simplex GJK ended with.
//!
//! The polytope lives in fixed-capacity arrays (vertices, triangles, a
//! horizon edge list) with an iteration cap; no recursion, no adjacency
//! bookkeeping: the faces seen from a new support point are found by a flood
//! fill over shared edges starting at the expanded face (only faces connected
//! to it are removed, which keeps the polytope a closed surface even when
//! round-off makes a far face look visible), and the horizon is the list of
//! edges of removed faces whose twin was not removed.
//!
//! On polytopes (boxes, meshes, capsule/sphere cores against them) EPA
//! terminates exactly. On curved parts of K (ellipsoids, cylinder sides) it
//! converges linearly, slowly where the depth varies little with the
//! direction; the closest face distance is a lower bound of the depth and the
//! support value along its normal an upper bound. [`refine`] (Newton on the
//! support function) finishes smooth contacts to round-off.
//!
//! Memory: with [`EPA_MAX_ITERS`] = 128 the state is about 35 KB in f64
//! (half in f32); a GPU port would use a smaller cap (f32 tolerances are
//! reached in far fewer expansions).

use super::gjk::{CsoPoint, Simplex, closest_on_triangle, cso_support};
use crate::collision::Shape;
use crate::math::{Real, Vec3};

/// Most expansions.
pub const EPA_MAX_ITERS: usize = 128;
/// Vertex capacity: initial tetrahedron plus one per expansion.
const NV: usize = EPA_MAX_ITERS + 4;
/// Face capacity: a closed triangulated surface with V vertices has 2V − 4 faces.
const NF: usize = 2 * NV;
/// Horizon edge list capacity.
const NE: usize = 3 * NV;

/// Result of [`Epa::result`].
#[derive(Clone, Copy, Debug)]
pub struct EpaResult<T> {
    /// False when EPA could not build or expand a polytope (degenerate input):
    /// the other fields are then meaningless.
    pub ok: bool,
    /// Penetration depth of the cores (m): the distance of the closest face
    /// (a lower bound of the exact depth).
    pub depth: T,
    /// Upper bound of the exact depth (m): the support value along `normal`.
    pub depth_upper: T,
    /// Unit normal from A to B (outward normal of K = A − B at the closest face).
    pub normal: Vec3<T>,
    /// Witness point on the core of A (m).
    pub pa: Vec3<T>,
    /// Witness point on the core of B (m).
    pub pb: Vec3<T>,
    /// Feature ids of the heaviest vertex of the closest face.
    pub features: [u32; 2],
    /// Expansions done.
    pub iters: usize,
}

impl<T: Real> EpaResult<T> {
    fn failed() -> Self {
        EpaResult {
            ok: false,
            depth: T::zero(),
            depth_upper: T::zero(),
            normal: Vec3::unit(2),
            pa: Vec3::zero(),
            pb: Vec3::zero(),
            features: [0, 0],
            iters: 0,
        }
    }
}

/// Relative tolerance on the depth gap (upper − lower bound) at which EPA stops.
#[inline]
pub fn epa_rel_tol<T: Real>() -> T {
    // 1e-10 in f64, 1e-5 in f32.
    (T::EPS * T::c(4.5e5)).min(T::c(1e-5))
}

/// The EPA polytope in fixed-capacity arrays.
struct Polytope<T> {
    v: [CsoPoint<T>; NV],
    nv: usize,
    idx: [[usize; 3]; NF],
    n: [Vec3<T>; NF],
    d: [T; NF],
    alive: [bool; NF],
    /// Slots in use (alive or free) are `0..nf`.
    nf: usize,
    /// Stack of dead slots.
    free: [usize; NF],
    nfree: usize,
}

impl<T: Real> Polytope<T> {
    /// Writes face (i, j, k) into a free slot; false when out of capacity or
    /// degenerate: `tiny` (m) is the round-off of the vertices, and a face
    /// whose cross product is not well above what that round-off can produce
    /// has no meaningful normal.
    fn add_face(&mut self, i: usize, j: usize, k: usize, tiny: T) -> bool {
        let (a, b, c) = (self.v[i].w, self.v[j].w, self.v[k].w);
        let (e1, e2) = (b - a, c - a);
        let n = e1.cross(e2);
        let len = n.norm();
        if !(len > T::c(4.0) * tiny * (e1.norm() + e2.norm())) {
            return false;
        }
        let slot = if self.nfree > 0 {
            self.nfree -= 1;
            self.free[self.nfree]
        } else if self.nf < NF {
            self.nf += 1;
            self.nf - 1
        } else {
            return false;
        };
        let n = n * (T::one() / len);
        self.idx[slot] = [i, j, k];
        self.n[slot] = n;
        // Distance of the face plane from the origin: mean over the vertices
        // (less sensitive to which vertex the plane is anchored at).
        self.d[slot] = (n.dot(a) + n.dot(b) + n.dot(c)) / T::c(3.0);
        self.alive[slot] = true;
        true
    }
    /// Marks face `f` dead and its slot free.
    #[inline]
    fn kill(&mut self, f: usize) {
        self.alive[f] = false;
        self.free[self.nfree] = f;
        self.nfree += 1;
    }
}

/// Adds edge (a, b) to the horizon list, or cancels it against its twin (b, a).
#[inline]
fn toggle_edge(edges: &mut [[usize; 2]; NE], ne: &mut usize, a: usize, b: usize) -> bool {
    for e in 0..*ne {
        if edges[e][0] == b && edges[e][1] == a {
            *ne -= 1;
            edges[e] = edges[*ne];
            return true;
        }
    }
    if *ne == NE {
        return false;
    }
    edges[*ne] = [a, b];
    *ne += 1;
    true
}

/// Most Newton steps of [`refine`].
pub const REFINE_MAX_ITERS: usize = 8;

/// Result of [`refine`]: the depth upper bound `depth` along `normal`, and
/// the support points there.
#[derive(Clone, Copy, Debug)]
pub struct Refined<T> {
    /// Support value h_K(normal) (m): an upper bound of the depth, exact at the optimum.
    pub depth: T,
    /// Unit direction (A to B).
    pub normal: Vec3<T>,
    /// Tangential part of the support point (m): zero at the optimum.
    pub residual: T,
    /// Support points on the cores of A and B at `normal`.
    pub pa: Vec3<T>,
    /// See `pa`.
    pub pb: Vec3<T>,
    /// Feature ids of the support points.
    pub features: [u32; 2],
    /// Accepted Newton steps.
    pub steps: usize,
}

/// Local minimisation of the support function h_K(m) = max_{x∈K} x·m of
/// K = A − B over unit directions m, from `m0`. The signed distance is
/// φ = −min h_K (for overlapping cores the minimum is the penetration depth,
/// for separated ones minus the distance), attained at the contact normal.
///
/// EPA converges slowly where K is curved at the contact (ellipsoids,
/// spheres/capsule ends against curved shapes): its polytope must resolve
/// the whole neighbourhood of the optimum. There h_K is smooth and Newton's
/// method on the sphere converges quadratically: gradient = tangential part
/// of the support point p(m), Hessian = Jₜ − (p·m)·I with Jₜ the tangential
/// Jacobian of p(m) (the radii of curvature of K), estimated by finite
/// differences. Steps are accepted only when they lower h_K, so the result is
/// never worse than the start (and where h_K is not smooth, e.g. at a flat
/// face, the iteration simply stops).
pub fn refine<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, m0: Vec3<T>, scale: T) -> Refined<T> {
    let eps = T::EPS.cbrt();
    let h = |m: Vec3<T>| {
        let q = cso_support(a, b, m);
        (q, q.w.dot(m))
    };
    let mut m = m0;
    let (mut q, mut u) = h(m);
    let mut steps = 0;
    for _ in 0..REFINE_MAX_ITERS {
        let t1 = m.any_orthonormal();
        let t2 = m.cross(t1);
        let g = [q.w.dot(t1), q.w.dot(t2)];
        if (g[0] * g[0] + g[1] * g[1]).sqrt() <= T::EPS * T::c(16.0) * scale {
            break;
        }
        let (q1, _) = h((m + t1 * eps).normalize());
        let (q2, _) = h((m + t2 * eps).normalize());
        let (d1, d2) = ((q1.w - q.w) * (T::one() / eps), (q2.w - q.w) * (T::one() / eps));
        let off = T::c(0.5) * (d2.dot(t1) + d1.dot(t2));
        let h11 = d1.dot(t1) - u;
        let h22 = d2.dot(t2) - u;
        let det = h11 * h22 - off * off;

        if !(h11 > T::zero() && h22 > T::zero() && det > T::zero()) {
            break;
        }
        let x1 = -(h22 * g[0] - off * g[1]) / det;
        let x2 = -(h11 * g[1] - off * g[0]) / det;
        let mut step = T::one();
        let mut accepted = false;
        let res = (q.w - m * u).norm();
        for _ in 0..3 {
            let mn = (m + (t1 * x1 + t2 * x2) * step).normalize();
            let (qn, un) = h(mn);
            // Near the optimum the decrease of h_K drops below its round-off
            // while the gradient still improves: accept ties that reduce it.
            let tie = un <= u + T::c(4.0) * T::EPS * u.abs() && (qn.w - mn * un).norm() < res;
            if un < u || tie {
                m = mn;
                q = qn;
                u = un.min(u);
                accepted = true;
                break;
            }
            step *= T::c(0.25);
        }
        if !accepted {
            break;
        }
        steps += 1;
    }
    let res = (q.w - m * u).norm();
    Refined { depth: u, normal: m, residual: res, pa: q.a, pb: q.b, features: [q.fa, q.fb], steps }
}

/// Resumable EPA state: build with [`Epa::new`], expand with [`Epa::run`]
/// (to a coarse tolerance first, then further if needed), read [`Epa::result`].
pub struct Epa<'s, T> {
    a: Shape<'s, T>,
    b: Shape<'s, T>,
    scale: T,
    p: Polytope<T>,
    ok: bool,
    done: bool,
    iters: usize,
    best_idx: [usize; 3],
    best_n: Vec3<T>,
    best_d: T,
    best_u: T,
    min_u: T,
    min_n: Vec3<T>,
}

impl<'s, T: Real> Epa<'s, T> {
    /// Builds the initial tetrahedron from the GJK simplex `s` (whose hull
    /// contains the origin, or nearly so), growing it when GJK ended with
    /// fewer than 4 vertices. `scale` (m): size of the problem.
    pub fn new(a: &Shape<'s, T>, b: &Shape<'s, T>, s: &Simplex<T>, scale: T) -> Self {
        let mut e = Epa {
            a: *a,
            b: *b,
            scale,
            p: Polytope {
                v: [CsoPoint::default(); NV],
                nv: 0,
                idx: [[0; 3]; NF],
                n: [Vec3::zero(); NF],
                d: [T::zero(); NF],
                alive: [false; NF],
                nf: 0,
                free: [0; NF],
                nfree: 0,
            },
            ok: false,
            done: false,
            iters: 0,
            best_idx: [0, 1, 2],
            best_n: Vec3::unit(2),
            best_d: T::zero(),
            best_u: T::infinity(),
            min_u: T::infinity(),
            min_n: Vec3::unit(2),
        };
        e.ok = e.init(s);
        e
    }

    fn init(&mut self, s: &Simplex<T>) -> bool {
        let (a, b) = (&self.a, &self.b);
        let p = &mut self.p;
        let tiny = T::c(64.0) * T::EPS * self.scale;
        let tiny_r = T::c(4.0) * T::EPS * self.scale;
        for i in 0..s.len.clamp(1, 4) {
            p.v[i] = s.pts[i];
        }
        p.nv = s.len.clamp(1, 4);
        // Grow the simplex to a tetrahedron of positive volume.
        const AXES: [[f64; 3]; 6] =
            [[1., 0., 0.], [-1., 0., 0.], [0., 1., 0.], [0., -1., 0.], [0., 0., 1.], [0., 0., -1.]];
        if p.nv == 1 {
            for ax in &AXES {
                let q = cso_support(a, b, Vec3::new(T::c(ax[0]), T::c(ax[1]), T::c(ax[2])));
                if (q.w - p.v[0].w).norm() > tiny {
                    p.v[1] = q;
                    p.nv = 2;
                    break;
                }
            }
        }
        if p.nv == 2 {
            let e = (p.v[1].w - p.v[0].w).normalize();
            let t1 = e.any_orthonormal();
            let t2 = e.cross(t1);
            // Six directions around the segment, 60° apart.
            let (c60, s60) = (T::c(0.5), T::c(0.75f64.sqrt()));
            let dirs = [t1, t1 * c60 + t2 * s60, t2 * c60 - t1 * s60, -t1, -t1 * c60 - t2 * s60, t1 * c60 - t2 * s60];
            for dir in dirs {
                let q = cso_support(a, b, dir);
                let off = q.w - p.v[0].w;
                if (off - e * off.dot(e)).norm() > tiny {
                    p.v[2] = q;
                    p.nv = 3;
                    break;
                }
            }
        }
        if p.nv == 3 {
            let n = (p.v[1].w - p.v[0].w).cross(p.v[2].w - p.v[0].w).normalize();
            let qp = cso_support(a, b, n);
            let qm = cso_support(a, b, -n);
            let (hp, hm) = (n.dot(qp.w - p.v[0].w).abs(), n.dot(qm.w - p.v[0].w).abs());
            if hp.max(hm) > tiny {
                p.v[3] = if hp >= hm { qp } else { qm };
                p.nv = 4;
            }
        }
        if p.nv < 4 {
            return false;
        }
        // Outward orientation: the opposite vertex must lie behind each face.
        let (v0, v1, v2, v3) = (p.v[0].w, p.v[1].w, p.v[2].w, p.v[3].w);
        if (v1 - v0).cross(v2 - v0).dot(v3 - v0) > T::zero() {
            p.v.swap(1, 2);
        }
        p.add_face(0, 1, 2, tiny_r)
            && p.add_face(0, 3, 1, tiny_r)
            && p.add_face(0, 2, 3, tiny_r)
            && p.add_face(1, 3, 2, tiny_r)
    }

    /// Expands until the depth gap (support value − face distance of the
    /// closest face) is at most `tol` (m), the iteration cap or capacity is
    /// reached, or round-off stops progress. Returns true when the gap is
    /// within `tol`.
    pub fn run(&mut self, tol: T) -> bool {
        if !self.ok || self.done {
            return self.ok && self.best_u - self.best_d <= tol;
        }
        let (a, b) = (self.a, self.b);
        let tiny = T::c(64.0) * T::EPS * self.scale;
        let tiny_r = T::c(4.0) * T::EPS * self.scale;
        let p = &mut self.p;
        let mut edges = [[0usize; 2]; NE];
        loop {
            // Closest face.
            let mut f = usize::MAX;
            let mut fd = T::infinity();
            for g in 0..p.nf {
                if p.alive[g] && p.d[g] < fd {
                    fd = p.d[g];
                    f = g;
                }
            }
            if f == usize::MAX {
                self.done = true;
                break;
            }
            let n = p.n[f];
            let q = cso_support(&a, &b, n);
            let u = q.w.dot(n);
            self.best_idx = p.idx[f];
            self.best_n = n;
            self.best_d = fd;
            self.best_u = u;
            if u < self.min_u {
                self.min_u = u;
                self.min_n = n;
            }
            if u - fd <= tol {
                return true;
            }
            if self.iters == EPA_MAX_ITERS || p.nv == NV {
                self.done = true;
                break;
            }
            self.iters += 1;
            // Expand: remove the faces seen from q that are connected to f.
            let qi = p.nv;
            p.v[qi] = q;
            p.nv += 1;
            // Faces seen from q, tested once; then the removed region grows from
            // f over shared edges.
            let mut vis = [false; NF];
            let mut nvis = 0;
            for g in 0..p.nf {
                vis[g] = p.alive[g] && g != f && p.n[g].dot(q.w - p.v[p.idx[g][0]].w) > T::zero();
                nvis += vis[g] as usize;
            }
            let mut ne = 0usize;
            p.kill(f);
            let mut fine = true;
            for k in 0..3 {
                fine &= toggle_edge(&mut edges, &mut ne, p.idx[f][k], p.idx[f][(k + 1) % 3]);
            }
            let mut changed = nvis > 0;
            while changed && fine {
                changed = false;
                for g in 0..p.nf {
                    if !vis[g] || !p.alive[g] {
                        continue;
                    }
                    let id = p.idx[g];
                    // Connected to the removed region: one of its edges is on the horizon (reversed).
                    let mut touches = false;
                    for k in 0..3 {
                        let (x, y) = (id[k], id[(k + 1) % 3]);
                        for e in edges.iter().take(ne) {
                            touches |= e[0] == y && e[1] == x;
                        }
                    }
                    if touches {
                        p.kill(g);
                        for k in 0..3 {
                            fine &= toggle_edge(&mut edges, &mut ne, id[k], id[(k + 1) % 3]);
                        }
                        changed = true;
                    }
                }
            }
            // New faces from the horizon to q; any failure (capacity, a flat
            // face, a face closer than the one expanded) means round-off has
            // taken over: stop with the best face so far.
            for e in 0..ne {
                if !fine {
                    break;
                }
                fine &= p.add_face(edges[e][0], edges[e][1], qi, tiny_r);
            }
            if fine {
                // The new faces went into the slots just taken from the free stack or appended.
                for g in 0..p.nf {
                    if p.alive[g] && p.d[g] < fd - tiny {
                        fine = false;
                    }
                }
            }
            if !fine || ne < 3 {
                self.done = true;
                break;
            }
        }
        self.best_u - self.best_d <= tol
    }

    /// True when the depth gap of the closest face is within `tol` (m).
    pub fn converged(&self, tol: T) -> bool {
        self.ok && self.best_u - self.best_d <= tol
    }

    /// Smallest support value seen (m), an upper bound of the depth, and its direction.
    pub fn min_upper(&self) -> (T, Vec3<T>) {
        (self.min_u, self.min_n)
    }

    /// Current estimate: the closest face and its witness points.
    pub fn result(&self) -> EpaResult<T> {
        if !(self.ok && self.best_n.is_finite() && self.best_d.is_finite()) {
            return EpaResult::failed();
        }
        let p = &self.p;
        let (x, y, z) = (p.v[self.best_idx[0]], p.v[self.best_idx[1]], p.v[self.best_idx[2]]);
        let l = closest_on_triangle(x.w, y.w, z.w);
        let pa = x.a * l[0] + y.a * l[1] + z.a * l[2];
        let pb = x.b * l[0] + y.b * l[1] + z.b * l[2];
        let k = if l[0] >= l[1] && l[0] >= l[2] {
            0
        } else if l[1] >= l[2] {
            1
        } else {
            2
        };
        let heavy = [x, y, z][k];
        EpaResult {
            ok: true,
            depth: self.best_d,
            depth_upper: self.best_u.max(self.best_d),
            normal: self.best_n,
            pa,
            pb,
            features: [heavy.fa, heavy.fb],
            iters: self.iters,
        }
    }
}
