//! Box (A) – box (B): separating-axis test over 15 axes, then a clipped
//! face manifold or a single edge–edge point; exact distance for separated
//! boxes.

use super::common::{
    FACE_LIKE_COS, box_code, box_code_join, box_code_of_point, box_code_states, push_contact, seg_feature, segment_box,
    segment_segment, sign_of, tie_tol,
};
use crate::collision::{MAX_MANIFOLD, Manifold, Shape};
use crate::math::{Mat3, Real, Vec3};

/// An edge axis wins over the best face axis only when its penetration is
/// smaller by more than this fraction (plus a rounding tie tolerance): the
/// bias keeps resting face contacts from flickering to single edge points.
const FACE_BIAS_REL: f64 = 1e-3;

/// Edge axes u_i × v_j with |u_i × v_j|² below this (times the scalar's
/// epsilon) come from (nearly) parallel edges and are skipped: their
/// direction is rounding noise, and the face axes bound that case.
const EDGE_PARALLEL_EPS: f64 = 1.0;

/// Box (A) – box (B).
///
/// SAT over A's 3 face normals, B's 3 and the 9 edge products (early exit
/// when some axis separates by ≥ margin). The axis of least penetration is
/// taken, with a bias to face axes (below).
/// - Face axis: the incident face of the other box (most anti-parallel) is
///   clipped (Sutherland–Hodgman) to the reference face's side planes; each
///   clipped point with φ < margin is reported, φ = its height above the
///   reference face (m), normal = the reference face normal (up to 8
///   points; a box lying on a box gives the corners of the overlap).
/// - Edge axis: one point at the closest points of the two edges,
///   φ = the axis overlap (the exact penetration depth).
/// - Face bias: an edge axis within 0.02 rad of a face normal (a box
///   resting across another's edge, tilted by a hair) or less than 0.1 %
///   better than the best face keeps the face manifold, and the exact
///   edge–edge point is added to its clipped points. Clipped points then carry
///   their local depth along the face normal, which can exceed the true
///   penetration depth by the (small) difference of the two overlaps.
/// - Separated boxes (0 ≤ φ < margin): the exact distance from the closest
///   points of A's 12 edges against box B and B's 12 edges against box A;
///   with a face axis the clipped points are still reported, each with its
///   own exact distance, and the exact closest pair is added when no clipped
///   point represents it.
///
/// Features: `[code_A, code_B]`, box feature codes Σ k_i·3^i (k_i = 0 at
/// −h_i, 1 between, 2 at +h_i). Face-clipped points: the reference box gets
/// its face code for an incident corner, or the face's edge (face axis plus
/// the side-plane axis at a bound) when the point was cut by a side plane;
/// the incident box gets the corner, edge, or face code the point lies on.
/// Edge–edge points: the two edge codes (a corner code when the closest
/// point is an edge end).
pub fn contact_box_box<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let (ha, hb) = (a.size, b.size);
    let tol = tie_tol(ha.max_elem() + hb.max_elem());
    // C[i][j] = u_i · v_j: B's axes in A's frame are the columns.
    let cm = a.rot.transpose() * b.rot;
    let d = b.pos - a.pos;
    let da = a.rot.tmul(d);
    let db = b.rot.tmul(d);

    // Face axes: A's (0..3) then B's (3..6). Ties keep the earlier axis.
    let mut best_face = -T::infinity();
    let mut face_id = 0;
    for i in 0..3 {
        let rb = hb.x * cm.m[i][0].abs() + hb.y * cm.m[i][1].abs() + hb.z * cm.m[i][2].abs();
        let sep = da[i].abs() - ha[i] - rb;
        if sep >= margin {
            return;
        }
        if sep > best_face + tol {
            best_face = sep;
            face_id = i;
        }
    }
    for j in 0..3 {
        let ra = ha.x * cm.m[0][j].abs() + ha.y * cm.m[1][j].abs() + ha.z * cm.m[2][j].abs();
        let sep = db[j].abs() - hb[j] - ra;
        if sep >= margin {
            return;
        }
        if sep > best_face + tol {
            best_face = sep;
            face_id = 3 + j;
        }
    }
    // Edge axes e_i × c_j in A's frame (c_j = column j of C).
    let mut best_edge = -T::infinity();
    let mut edge = (0usize, 0usize, Vec3::zero());
    for i in 0..3 {
        for j in 0..3 {
            let cj = cm.col(j);
            let ax = Vec3::unit(i).cross(cj);
            let l2 = ax.norm2();
            if l2 <= T::c(EDGE_PARALLEL_EPS) * T::EPS {
                continue;
            }
            let an = ax * (T::one() / l2.sqrt());
            let ra = ha.dot(an.abs());
            let rb = hb.dot(cm.tmul(an).abs());
            let proj = an.dot(da);
            let sep = proj.abs() - ra - rb;
            if sep >= margin {
                return;
            }
            if sep > best_edge {
                best_edge = sep;
                edge = (i, j, an * sign_of(proj));
            }
        }
    }
    // A face-like edge axis (within 0.02 rad of a face normal: e.g. a box
    // resting on another over its edge, tilted by a hair) keeps the face
    // manifold, with the exact edge point added.
    let face_like = best_edge > -T::infinity() && {
        let an = edge.2;
        an.abs().max_elem().max(cm.tmul(an).abs().max_elem()) > T::c(FACE_LIKE_COS)
    };
    let use_edge = !face_like && best_edge > best_face + tol + T::c(FACE_BIAS_REL) * best_face.abs();
    let max_sep = best_face.max(best_edge);

    if max_sep > tol {
        // Separated: exact distance.
        let (pa, pb, dist, feature) = box_box_closest(a, b, &cm, da, db, tol);
        if dist >= margin {
            return;
        }
        let n = (pb - pa) * (T::one() / dist);
        if use_edge {
            push_contact(out, pa, n, dist, feature);
        } else {
            let mut m = FaceManifold::new();
            m.clip(a, b, face_id, margin);
            m.emit(out, Some(Cand { pa, n, dist, feature }), tol);
        }
        return;
    }
    if use_edge {
        if let Some(e) = edge_contact(a, b, &cm, edge, best_edge, margin) {
            push_contact(out, e.pa, e.n, e.dist, e.feature);
        }
        return;
    }
    let mut m = FaceManifold::new();
    let main = m.clip(a, b, face_id, margin);
    if best_edge > best_face + tol {
        // The face was kept by the bias but the true minimum is the edge
        // axis: its clipped points plus the exact edge–edge point.
        if let Some(e) = edge_contact(a, b, &cm, edge, best_edge, margin)
            && m.len < m.pts.len()
        {
            m.pts[m.len] = e;
            m.len += 1;
        }
        m.emit(out, None, tol);
    } else {
        m.emit(out, main, tol);
    }
}

/// The edge–edge point for edge axis `edge = (i, j, axis in A's frame
/// oriented A → B)` with overlap `sep` (m, = φ), when φ < margin.
fn edge_contact<T: Real>(
    a: &Shape<'_, T>,
    b: &Shape<'_, T>,
    cm: &Mat3<T>,
    edge: (usize, usize, Vec3<T>),
    sep: T,
    margin: T,
) -> Option<Cand<T>> {
    if sep >= margin {
        return None;
    }
    let (ha, hb) = (a.size, b.size);
    let (i, j, an) = edge;
    let n = a.rot * an;
    // A's edge along its axis i supporting +n; B's along its axis j supporting −n.
    let mut oa = Vec3::zero();
    let mut ka = [1u32; 3];
    for k in 0..3 {
        if k != i {
            let sg = sign_of(an[k]);
            oa[k] = sg * ha[k];
            ka[k] = if sg > T::zero() { 2 } else { 0 };
        }
    }
    let anb = cm.tmul(an);
    let mut ob = Vec3::zero();
    let mut kb = [1u32; 3];
    for k in 0..3 {
        if k != j {
            let sg = -sign_of(anb[k]);
            ob[k] = sg * hb[k];
            kb[k] = if sg > T::zero() { 2 } else { 0 };
        }
    }
    let (ea, ua) = (a.pos + a.rot * oa, a.rot.col(i));
    let (eb, ub) = (b.pos + b.rot * ob, b.rot.col(j));
    let (s, t) = segment_segment(ea, ua, ha[i], eb, ub, hb[j]);
    ka[i] = end_state(seg_feature(s, ha[i]));
    kb[j] = end_state(seg_feature(t, hb[j]));
    Some(Cand { pa: ea + ua * s, n, dist: sep, feature: [box_code(ka), box_code(kb)] })
}

/// Per-axis box state for a segment feature (0/1 = −/+ end, 2 = inside).
#[inline]
fn end_state(f: u32) -> u32 {
    match f {
        0 => 0,
        1 => 2,
        _ => 1,
    }
}

/// Exact closest points of two disjoint boxes: every edge of each box
/// against the other box ([`segment_box`]); some closest pair always has a
/// point on an edge of one of the boxes. Returns the points on A and on B
/// (world, m), the distance (m) and the feature codes `[code_A, code_B]`.
fn box_box_closest<T: Real>(
    a: &Shape<'_, T>,
    b: &Shape<'_, T>,
    cm: &Mat3<T>,
    da: Vec3<T>,
    db: Vec3<T>,
    tol: T,
) -> (Vec3<T>, Vec3<T>, T, [u32; 2]) {
    let (ha, hb) = (a.size, b.size);
    let mut best_d2 = T::infinity();
    let mut best = (Vec3::zero(), Vec3::zero(), [0u32; 2]);
    // side 0: A's edges against box B, in B's frame; side 1: B's edges against box A, in A's frame.
    for side in 0..2 {
        let (h_edge, h_box) = if side == 0 { (ha, hb) } else { (hb, ha) };
        for i in 0..3 {
            let (k1, k2) = ((i + 1) % 3, (i + 2) % 3);
            for corner in 0..4u32 {
                let s1 = if corner & 1 == 1 { T::one() } else { -T::one() };
                let s2 = if corner & 2 == 2 { T::one() } else { -T::one() };
                let mut o = Vec3::zero();
                o[k1] = s1 * h_edge[k1];
                o[k2] = s2 * h_edge[k2];
                let (c, u) = if side == 0 { (cm.tmul(o) - db, cm.row(i)) } else { (*cm * o + da, cm.col(i)) };
                let (s, q, d2) = segment_box(c, u, h_edge[i], h_box);
                if d2 < best_d2 {
                    best_d2 = d2;
                    let mut k = [1u32; 3];
                    k[k1] = if s1 > T::zero() { 2 } else { 0 };
                    k[k2] = if s2 > T::zero() { 2 } else { 0 };
                    k[i] = end_state(seg_feature(s, h_edge[i]));
                    let code_edge = box_code(k);
                    let code_box = box_code_of_point(q, h_box, tol);
                    let p = c + u * s;
                    best = if side == 0 {
                        (b.pos + b.rot * p, b.pos + b.rot * q, [code_edge, code_box])
                    } else {
                        (a.pos + a.rot * q, a.pos + a.rot * p, [code_box, code_edge])
                    };
                }
            }
        }
    }
    // Distance from the points themselves, so that n = (p_B − p_A)/dist is unit.
    let dist = (best.1 - best.0).norm();
    (best.0, best.1, dist, best.2)
}

/// One candidate point of a face manifold.
#[derive(Clone, Copy)]
struct Cand<T> {
    pa: Vec3<T>,
    n: Vec3<T>,
    dist: T,
    feature: [u32; 2],
}

/// Clipped reference-face manifold (fixed storage: a 4-gon clipped by 4
/// half-planes has at most 8 vertices; 16 slots absorb rounding).
struct FaceManifold<T> {
    pts: [Cand<T>; 16],
    len: usize,
}

impl<T: Real> FaceManifold<T> {
    fn new() -> Self {
        Self { pts: [Cand { pa: Vec3::zero(), n: Vec3::zero(), dist: T::zero(), feature: [0; 2] }; 16], len: 0 }
    }

    /// Clips the incident face against reference face `face_id` (0..3: A's
    /// axis, 3..6: B's axis; the face looking at the other box) and keeps
    /// the points with φ < margin. Returns the incident box's deepest corner
    /// along the reference normal (the SAT witness), when φ < margin.
    fn clip(&mut self, a: &Shape<'_, T>, b: &Shape<'_, T>, face_id: usize, margin: T) -> Option<Cand<T>> {
        let ref_is_a = face_id < 3;
        let axis = face_id % 3;
        let (rf, inc) = if ref_is_a { (a, b) } else { (b, a) };
        let (hr, hi) = (rf.size, inc.size);
        let sg = sign_of(rf.rot.tmul(inc.pos - rf.pos)[axis]);
        let n_ref = rf.rot.col(axis) * sg;
        // Incident face: most anti-parallel to n_ref.
        let m = inc.rot.tmul(n_ref);
        let am = m.abs();
        let j = if am.x >= am.y && am.x >= am.z {
            0
        } else if am.y >= am.z {
            1
        } else {
            2
        };
        let (k, l) = ((j + 1) % 3, (j + 2) % 3);
        let tau = -sign_of(m[j]);
        // Incident corners in the reference frame, in cyclic order.
        let rot = rf.rot.transpose() * inc.rot;
        let t = rf.rot.tmul(inc.pos - rf.pos);
        let state = |x: T| if x > T::zero() { 2u32 } else { 0u32 };
        let mut ref_k = [1u32; 3];
        ref_k[axis] = state(sg);
        let ref_face = box_code(ref_k);
        let mut poly = [Vec3::zero(); 16];
        let mut fin = [0u32; 16];
        let mut fref = [ref_face; 16];
        let mut n = 0;
        for (sk, sl) in [(1.0, 1.0), (-1.0, 1.0), (-1.0, -1.0), (1.0, -1.0)] {
            let (sk, sl) = (T::c(sk), T::c(sl));
            let mut v = Vec3::zero();
            v[j] = tau * hi[j];
            v[k] = sk * hi[k];
            v[l] = sl * hi[l];
            poly[n] = rot * v + t;
            let mut kk = [0u32; 3];
            kk[j] = state(tau);
            kk[k] = state(sk);
            kk[l] = state(sl);
            fin[n] = box_code(kk);
            n += 1;
        }
        // The SAT witness: the incident corner deepest along −n_ref.
        let mut v = Vec3::zero();
        v[j] = tau * hi[j];
        v[k] = -sign_of(m[k]) * hi[k];
        v[l] = -sign_of(m[l]) * hi[l];
        let mut kk = [0u32; 3];
        kk[j] = state(tau);
        kk[k] = state(-sign_of(m[k]));
        kk[l] = state(-sign_of(m[l]));
        let x_main = rot * v + t;
        let d_main = sg * x_main[axis] - hr[axis];
        let main = if d_main < margin {
            Some(Self::cand(rf, x_main, axis, sg, hr, n_ref, ref_is_a, d_main, ref_face, box_code(kk)))
        } else {
            None
        };
        // Sutherland–Hodgman against the 4 side planes side·x_sa ≤ hr_sa.
        for sa in [(axis + 1) % 3, (axis + 2) % 3] {
            for side in [T::one(), -T::one()] {
                let mut np = [Vec3::zero(); 16];
                let mut nfin = [0u32; 16];
                let mut nfref = [0u32; 16];
                let mut nn = 0;
                for e in 0..n {
                    let (p1, p2) = (poly[e], poly[(e + 1) % n]);
                    let d1 = side * p1[sa] - hr[sa];
                    let d2 = side * p2[sa] - hr[sa];
                    if d1 <= T::zero() && nn < 16 {
                        np[nn] = p1;
                        nfin[nn] = fin[e];
                        nfref[nn] = fref[e];
                        nn += 1;
                    }
                    if ((d1 < T::zero() && d2 > T::zero()) || (d1 > T::zero() && d2 < T::zero())) && nn < 16 {
                        let f = d1 / (d1 - d2);
                        let mut x = p1 + (p2 - p1) * f;
                        x[sa] = side * hr[sa];
                        np[nn] = x;
                        nfin[nn] = box_code_join(fin[e], fin[(e + 1) % n]);
                        let mut rk = box_code_states(box_code_join(fref[e], fref[(e + 1) % n]));
                        rk[sa] = state(side);
                        nfref[nn] = box_code(rk);
                        nn += 1;
                    }
                }
                poly = np;
                fin = nfin;
                fref = nfref;
                n = nn;
                if n == 0 {
                    return main;
                }
            }
        }
        for e in 0..n {
            let x = poly[e];
            let dist = sg * x[axis] - hr[axis];
            if dist < margin {
                self.pts[self.len] = Self::cand(rf, x, axis, sg, hr, n_ref, ref_is_a, dist, fref[e], fin[e]);
                self.len += 1;
            }
        }
        main
    }

    /// A candidate from a point `x` on the incident box (reference frame).
    #[allow(clippy::too_many_arguments)]
    fn cand(
        rf: &Shape<'_, T>,
        x: Vec3<T>,
        axis: usize,
        sg: T,
        hr: Vec3<T>,
        n_ref: Vec3<T>,
        ref_is_a: bool,
        dist: T,
        ref_code: u32,
        inc_code: u32,
    ) -> Cand<T> {
        let mut foot = x;
        foot[axis] = sg * hr[axis];
        if ref_is_a {
            Cand { pa: rf.pos + rf.rot * foot, n: n_ref, dist, feature: [ref_code, inc_code] }
        } else {
            Cand { pa: rf.pos + rf.rot * x, n: -n_ref, dist, feature: [inc_code, ref_code] }
        }
    }

    /// Whether some clipped point is as deep as `main` within `tol` (or there is no `main`).
    fn represents(&self, main: Option<Cand<T>>, tol: T) -> bool {
        match main {
            None => true,
            Some(mc) => self.pts[..self.len].iter().any(|p| p.dist <= mc.dist + tol),
        }
    }

    /// Writes the points to `out`, adding `main` (the exact deepest pair)
    /// when no clipped point is as deep (within `tol`), and dropping the
    /// shallowest points beyond [`MAX_MANIFOLD`].
    fn emit(&mut self, out: &mut Manifold<T>, main: Option<Cand<T>>, tol: T) {
        if let Some(mc) = main
            && !self.represents(main, tol)
            && self.len < 16
        {
            self.pts[self.len] = mc;
            self.len += 1;
        }
        while self.len > MAX_MANIFOLD {
            let mut worst = 0;
            for e in 1..self.len {
                if self.pts[e].dist > self.pts[worst].dist {
                    worst = e;
                }
            }
            for e in worst..self.len - 1 {
                self.pts[e] = self.pts[e + 1];
            }
            self.len -= 1;
        }
        for p in &self.pts[..self.len] {
            push_contact(out, p.pa, p.n, p.dist, p.feature);
        }
    }
}
