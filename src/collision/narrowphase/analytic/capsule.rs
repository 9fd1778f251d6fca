//! Capsule (A) against capsule and box (B).

use super::common::{
    FACE_LIKE_COS, box_code, box_code_of_point, clamp, normalize_or, push_contact, seg_feature, segment_box,
    segment_segment, sign_of, tie_tol,
};
use crate::collision::{Manifold, Shape};
use crate::math::{Real, Vec3};

/// Segments whose directions make an angle with sin θ below this are
/// treated as parallel (two-point manifold).
const PARALLEL_SIN: f64 = 1e-2;

/// Capsule (A) – capsule (B): closest points of the two segments,
/// φ = |q − p| − r_A − r_B (m). When the segments are parallel (sin θ <
/// 0.01) and overlap in projection, one point at each end of the overlap,
/// each with its own φ and normal; the exact closest pair is added as a
/// third point only in the rare case it is deeper than both ends (crossed,
/// nearly parallel segments). Intersecting segments get the normal
/// ±u_A × u_B (oriented towards B's centre). Features: `[f_A, f_B]`, per
/// capsule 0 = its −z end, 1 = its +z end, 2 = the interior of its segment.
pub fn contact_capsule_capsule<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let (ua, ha, ra) = (a.rot.col(2), a.size.y, a.size.x);
    let (ub, hb, rb) = (b.rot.col(2), b.size.y, b.size.x);
    let rsum = ra + rb;
    let (s, t) = segment_segment(a.pos, ua, ha, b.pos, ub, hb);
    let pa = a.pos + ua * s;
    let d = b.pos + ub * t - pa;
    let len = d.norm();
    let dist = len - rsum;
    if dist >= margin {
        return;
    }
    let cross = ua.cross(ub);
    let n = if len > T::min_positive_value() {
        d * (T::one() / len)
    } else {
        // Intersecting segments: ±u_A × u_B towards B's centre (any
        // perpendicular for collinear segments).
        let f = normalize_or(cross, ua.any_orthonormal());
        if f.dot(b.pos - a.pos) < T::zero() { -f } else { f }
    };
    let tol = tie_tol(ha + hb + rsum);
    let par = T::c(PARALLEL_SIN);
    if cross.norm2() < par * par {
        // Overlap of B's projection onto A's axis, in A's parameter.
        let sb0 = (b.pos - ub * hb - a.pos).dot(ua);
        let sb1 = (b.pos + ub * hb - a.pos).dot(ua);
        let lo = sb0.min(sb1).max(-ha);
        let hi = sb0.max(sb1).min(ha);
        if hi - lo > tol {
            // Deepest reported end; the exact closest pair is added when no
            // end represents it.
            let mut deepest = T::infinity();
            for se in [lo, hi] {
                let p = a.pos + ua * se;
                let te = clamp((p - b.pos).dot(ub), -hb, hb);
                let de = b.pos + ub * te - p;
                let dist_e = de.norm() - rsum;
                if dist_e < margin {
                    let ne = normalize_or(de, n);
                    push_contact(out, p + ne * ra, ne, dist_e, [seg_feature(se, ha), seg_feature(te, hb)]);
                    deepest = deepest.min(dist_e);
                }
            }
            if deepest > dist + tol {
                push_contact(out, pa + n * ra, n, dist, [seg_feature(s, ha), seg_feature(t, hb)]);
            }
            return;
        }
    }
    push_contact(out, pa + n * ra, n, dist, [seg_feature(s, ha), seg_feature(t, hb)]);
}

/// Capsule (A) – box (B). When the capsule's segment misses the box: exact
/// segment–box closest points (convex piecewise-quadratic minimisation),
/// φ = d − r (m). When it meets the box: separating-axis test over the 3
/// box face normals and the 3 products u × e_i (exact penetration depth δ of
/// a segment in a box), φ = −δ − r, ties going to the face axis. This exact
/// point is always reported. When the contact is against a box face, or
/// face-like (its normal within 0.02 rad of a face normal, e.g. a capsule
/// lying across a face's edge, tilted by a hair), the segment is also
/// clipped to the face's rectangle and both clipped ends with φ < margin are
/// reported with the face normal (a capsule lying on a face gives 2 points);
/// the exact point is then only added when no clipped end is as deep
/// (≤ 3 points). Features: `[f_A, code]`: f_A = 0/1 at the capsule's −z/+z
/// end, 2 inside its segment; code = box feature code of the box witness
/// (Σ k_i·3^i, k_i = 0 at −h_i, 1 between, 2 at +h_i).
pub fn contact_capsule_box<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let (r, hl, h) = (a.size.x, a.size.y, b.size);
    // The capsule's segment in the box frame.
    let c = b.rot.tmul(a.pos - b.pos);
    let u = b.rot.tmul(a.rot.col(2));
    let tol = tie_tol(hl + h.max_elem() + r);
    let (s, q, d2) = segment_box(c, u, hl, h);
    let d = d2.sqrt();
    if d - r >= margin {
        return;
    }
    // Main contact in the box frame (the exact answer): segment point,
    // normal A → B, φ, box feature code; plus the box face (axis, outward
    // sign) whose clipped segment is reported too, when the contact is
    // against a face or face-like (normal within 0.02 rad of a face normal).
    let face_like = |nl: Vec3<T>| {
        let a = nl.abs();
        let i = if a.x >= a.y && a.x >= a.z {
            0
        } else if a.y >= a.z {
            1
        } else {
            2
        };
        if a[i] > T::c(FACE_LIKE_COS) { Some((i, -sign_of(nl[i]))) } else { None }
    };
    let (s_main, nl, dist, code, face) = if d > tol {
        let ps = c + u * s;
        let mut k = [1u32; 3];
        let mut nclamped = 0;
        let mut face_axis = 0;
        for i in 0..3 {
            if ps[i] < -h[i] {
                k[i] = 0;
            } else if ps[i] > h[i] {
                k[i] = 2;
            } else {
                continue;
            }
            nclamped += 1;
            face_axis = i;
        }
        let nl = (q - ps) * (T::one() / d);
        let face = if nclamped == 1 {
            Some((face_axis, if k[face_axis] == 2 { T::one() } else { -T::one() }))
        } else {
            face_like(nl)
        };
        (s, nl, d - r, box_code(k), face)
    } else {
        // Segment meets the box: SAT over face normals and u × e_i.
        let mut best_face = T::infinity();
        let mut face_axis = 0;
        for i in 0..3 {
            let depth = h[i] + hl * u[i].abs() - c[i].abs();
            if depth < best_face {
                best_face = depth;
                face_axis = i;
            }
        }
        let mut best_edge = T::infinity();
        let mut edge_dir = Vec3::zero();
        let mut edge_axis = 0;
        for i in 0..3 {
            let ax = u.cross(Vec3::unit(i));
            let l2 = ax.norm2();
            if l2 > T::EPS {
                let an = ax * (T::one() / l2.sqrt());
                let depth = h.dot(an.abs()) - c.dot(an).abs();
                if depth < best_edge {
                    best_edge = depth;
                    edge_dir = an * sign_of(c.dot(an));
                    edge_axis = i;
                }
            }
        }
        let sg_face = sign_of(c[face_axis]);
        if best_edge < best_face - tol {
            // Edge axis: the box edge along e_i supporting the outward direction.
            let i = edge_axis;
            let mut ec = Vec3::zero();
            let mut k = [1u32; 3];
            for j in 0..3 {
                if j != i {
                    let sg = sign_of(edge_dir[j]);
                    ec[j] = sg * h[j];
                    k[j] = if sg > T::zero() { 2 } else { 0 };
                }
            }
            let (se, _) = segment_segment(c, u, hl, ec, Vec3::unit(i), h[i]);
            // A face-like edge axis: also clip against the best face.
            let face = face_like(-edge_dir).map(|_| (face_axis, sg_face));
            (se, -edge_dir, -best_edge - r, box_code(k), face)
        } else {
            let i = face_axis;
            let mut k = [1u32; 3];
            k[i] = if sg_face > T::zero() { 2 } else { 0 };
            // Deepest end along −sg·e_i.
            let se = -sg_face * sign_of(u[i]) * hl;
            let mut nl = Vec3::zero();
            nl[i] = -sg_face;
            (se, nl, -best_face - r, box_code(k), Some((i, sg_face)))
        }
    };
    if dist >= margin {
        return;
    }
    let n = b.rot * nl;
    let world = |p: Vec3<T>| b.pos + b.rot * p;
    let main_pa = world(c + u * s_main + nl * r);
    let main_feature = [seg_feature(s_main, hl), code];
    let Some((i, sg)) = face else {
        push_contact(out, main_pa, n, dist, main_feature);
        return;
    };
    // Face contact: clip the segment to the face rectangle (axes j ≠ i).
    let mut lo = -hl;
    let mut hi = hl;
    for j in 0..3 {
        if j == i {
            continue;
        }
        if u[j] != T::zero() {
            let t0 = (-h[j] - c[j]) / u[j];
            let t1 = (h[j] - c[j]) / u[j];
            lo = lo.max(t0.min(t1));
            hi = hi.min(t0.max(t1));
        } else if c[j].abs() > h[j] {
            hi = lo - T::one();
        }
    }
    // The face's outward normal sg·e_i points at the capsule: A → B is −sg·e_i.
    let mut nf = Vec3::zero();
    nf[i] = -sg;
    let n_face = b.rot * nf;
    let mut deepest = T::infinity();
    if hi >= lo {
        let ends = if hi - lo > tol { 2 } else { 1 };
        for se in [lo, hi].into_iter().take(ends) {
            let p = c + u * se;
            let dist_e = sg * p[i] - h[i] - r;
            if dist_e < margin {
                let mut foot = p;
                foot[i] = sg * h[i];
                let code_e = box_code_of_point(foot, h, tol);
                push_contact(out, world(p + nf * r), n_face, dist_e, [seg_feature(se, hl), code_e]);
                deepest = deepest.min(dist_e);
            }
        }
    }
    if deepest > dist + tol {
        push_contact(out, main_pa, n, dist, main_feature);
    }
}
