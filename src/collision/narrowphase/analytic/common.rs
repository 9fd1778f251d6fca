//! Small geometric helpers shared by the analytic routines: contact
//! emission, safe normalisation, closest points on segments and boxes,
//! and the box feature codes. All fixed-size, no allocation, no recursion.

use crate::collision::{ContactPoint, Manifold};
use crate::math::{Real, Vec3};

/// Appends a contact from the witness point `pa` on A's surface (world, m),
/// the unit normal `n` (A → B) and the signed distance `dist` (m): the
/// reported point is midway between the surfaces, `pa + n·dist/2`.
#[inline]
pub(crate) fn push_contact<T: Real>(out: &mut Manifold<T>, pa: Vec3<T>, n: Vec3<T>, dist: T, feature: [u32; 2]) {
    out.push(ContactPoint { pos: pa + n * (dist * T::c(0.5)), normal: n, dist, feature });
}

/// `v / |v|`, or `fallback` when `|v|` is zero, subnormal or not finite
/// (coincident witness points): never NaN.
#[inline]
pub(crate) fn normalize_or<T: Real>(v: Vec3<T>, fallback: Vec3<T>) -> Vec3<T> {
    let n2 = v.norm2();
    if n2 > T::min_positive_value() && n2.is_finite() { v * (T::one() / n2.sqrt()) } else { fallback }
}

/// Tolerance (m) for ties and "same point" decisions at length `scale` (m):
/// 64 rounding units, so f64 ties are ~1.4e-14·scale and f32 ~7.6e-6·scale.
#[inline]
pub(crate) fn tie_tol<T: Real>(scale: T) -> T {
    T::c(64.0) * T::EPS * scale
}

/// Cosine of 0.02 rad. A contact normal (or an edge–edge axis) within this
/// angle of a box face normal is "face-like": the routines then also report
/// the face's clipped manifold, so that a resting contact keeps its support
/// points under tiny tilts instead of flickering to a single edge point.
pub(crate) const FACE_LIKE_COS: f64 = 0.999_800_006_666_578;

/// Segment feature id for parameter `s` on a segment of half-length `h`
/// (parameter measured from the centre): 0 at the −end, 1 at the +end,
/// 2 strictly inside.
#[inline]
pub(crate) fn seg_feature<T: Real>(s: T, h: T) -> u32 {
    if s <= -h {
        0
    } else if s >= h {
        1
    } else {
        2
    }
}

/// Box feature code from per-axis states `k` (0: at −h, 1: strictly
/// between, 2: at +h): `k0 + 3·k1 + 9·k2`, so 0..26. A face has one axis
/// at a bound, an edge two, a corner three (13 = interior, not used).
#[inline]
pub(crate) fn box_code(k: [u32; 3]) -> u32 {
    k[0] + 3 * k[1] + 9 * k[2]
}

/// Per-axis states of a box feature code (inverse of [`box_code`]).
#[inline]
pub(crate) fn box_code_states(c: u32) -> [u32; 3] {
    [c % 3, (c / 3) % 3, (c / 9) % 3]
}

/// Code of the feature shared by two box features lying on a common edge
/// or face: axes where they differ become "between" (1).
#[inline]
pub(crate) fn box_code_join(a: u32, b: u32) -> u32 {
    let (ka, kb) = (box_code_states(a), box_code_states(b));
    let mut k = [1u32; 3];
    for i in 0..3 {
        if ka[i] == kb[i] {
            k[i] = ka[i];
        }
    }
    box_code(k)
}

/// Box feature code of a point `q` on the surface of the box with
/// half-extents `h` (box frame), treating coordinates within `tol` (m) of
/// a bound as on it.
#[inline]
pub(crate) fn box_code_of_point<T: Real>(q: Vec3<T>, h: Vec3<T>, tol: T) -> u32 {
    let mut k = [1u32; 3];
    for i in 0..3 {
        if q[i] >= h[i] - tol {
            k[i] = 2;
        } else if q[i] <= -h[i] + tol {
            k[i] = 0;
        }
    }
    box_code(k)
}

/// +1 for x ≥ 0, −1 otherwise (so that ties pick a definite side).
#[inline]
pub(crate) fn sign_of<T: Real>(x: T) -> T {
    if x >= T::zero() { T::one() } else { -T::one() }
}

/// Clamps `x` to `[lo, hi]` (`lo ≤ hi`); plain comparisons (cheaper than
/// NaN-aware min/max; a NaN input stays NaN).
#[inline]
pub(crate) fn clamp<T: Real>(x: T, lo: T, hi: T) -> T {
    if x < lo {
        lo
    } else if x > hi {
        hi
    } else {
        x
    }
}

/// Closest points between segments `ca + s·ua`, s ∈ [−ha, ha] and
/// `cb + t·ub`, t ∈ [−hb, hb] (unit directions, half-lengths in m).
/// Returns `(s, t)`. For parallel segments one of the closest pairs is
/// returned. Exact for non-parallel segments; a final pair of alternating
/// projections (each never increases the distance) cleans up rounding when
/// the segments are nearly parallel.
#[inline]
pub(crate) fn segment_segment<T: Real>(ca: Vec3<T>, ua: Vec3<T>, ha: T, cb: Vec3<T>, ub: Vec3<T>, hb: T) -> (T, T) {
    // Minimise |r + s ua − t ub|², r = ca − cb.
    let r = ca - cb;
    let b = ua.dot(ub);
    let c = ua.dot(r);
    let f = ub.dot(r);
    let denom = T::one() - b * b;
    let mut s = if denom > T::EPS { clamp((b * f - c) / denom, -ha, ha) } else { T::zero() };
    let mut t = b * s + f;
    if t < -hb || t > hb {
        t = clamp(t, -hb, hb);
        s = clamp(b * t - c, -ha, ha);
    }
    // Refinement: t given s, then s given t.
    t = clamp((ca + ua * s - cb).dot(ub), -hb, hb);
    s = clamp((cb + ub * t - ca).dot(ua), -ha, ha);
    (s, t)
}

/// Closest points between the segment `c + s·u`, s ∈ [−hl, hl] (`u` unit)
/// and the solid box `[−h, h]`, all in the box frame (m). Returns
/// `(s, q, d2)`: the segment parameter, the box point closest to `c + s·u`,
/// and the squared distance (m²; 0 when the segment meets the box).
///
/// Exact: the squared distance is a convex, piecewise quadratic function of
/// s whose pieces change where the segment crosses a slab plane |x_i| = h_i;
/// each piece is minimised in closed form (at most 7 pieces). Ties (a
/// segment parallel to a face) return the smallest minimising s.
pub(crate) fn segment_box<T: Real>(c: Vec3<T>, u: Vec3<T>, hl: T, h: Vec3<T>) -> (T, Vec3<T>, T) {
    let mut bp = [T::zero(); 8];
    bp[0] = -hl;
    let mut n = 1;
    for i in 0..3 {
        if u[i] != T::zero() {
            let inv = T::one() / u[i];
            let s0 = (-h[i] - c[i]) * inv;
            let s1 = (h[i] - c[i]) * inv;
            if s0 > -hl && s0 < hl {
                bp[n] = s0;
                n += 1;
            }
            if s1 > -hl && s1 < hl {
                bp[n] = s1;
                n += 1;
            }
        }
    }
    bp[n] = hl;
    n += 1;
    // Insertion sort of at most 8 values.
    for i in 1..n {
        let x = bp[i];
        let mut j = i;
        while j > 0 && bp[j - 1] > x {
            bp[j] = bp[j - 1];
            j -= 1;
        }
        bp[j] = x;
    }
    let mut best_s = -hl;
    let mut best_q = Vec3::zero();
    let mut best_d2 = T::infinity();
    for k in 0..n - 1 {
        let (s0, s1) = (bp[k], bp[k + 1]);
        let m = (s0 + s1) * T::c(0.5);
        // Active slabs on this piece and the minimiser of Σ (c_i + s u_i − t_i)².
        let mut num = T::zero();
        let mut den = T::zero();
        for i in 0..3 {
            let x = c[i] + u[i] * m;
            let target = if x < -h[i] {
                -h[i]
            } else if x > h[i] {
                h[i]
            } else {
                continue;
            };
            num += (c[i] - target) * u[i];
            den += u[i] * u[i];
        }
        let s = if den > T::zero() { clamp(-num / den, s0, s1) } else { s0 };
        let p = c + u * s;
        let q = p.max(-h).min(h);
        let d2 = (p - q).norm2();
        if d2 < best_d2 {
            best_d2 = d2;
            best_s = s;
            best_q = q;
        }
    }
    (best_s, best_q, best_d2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_segment_box(c: Vec3<f64>, u: Vec3<f64>, hl: f64, h: Vec3<f64>) -> f64 {
        let mut best = f64::INFINITY;
        let n = 20000;
        for i in 0..=n {
            let s = -hl + 2.0 * hl * i as f64 / n as f64;
            let p = c + u * s;
            let q = p.max(-h).min(h);
            best = best.min((p - q).norm());
        }
        best
    }

    #[test]
    fn segment_box_matches_sampling() {
        let mut seed = 12345u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        for _ in 0..300 {
            let h = Vec3::new(0.2 + rnd().abs(), 0.2 + rnd().abs(), 0.2 + rnd().abs());
            let c = Vec3::new(2.0 * rnd(), 2.0 * rnd(), 2.0 * rnd());
            let u = Vec3::new(rnd(), rnd(), rnd()).normalize();
            let hl = rnd().abs() * 1.5;
            let (s, q, d2) = segment_box(c, u, hl, h);
            let d = d2.sqrt();
            let brute = brute_segment_box(c, u, hl, h);
            assert!(d <= brute + 1e-12, "d {d} brute {brute}");
            assert!(brute - d < 1e-3, "d {d} brute {brute}");
            assert!(((c + u * s) - q).norm() - d < 1e-12);
            assert!(s.abs() <= hl);
        }
    }

    #[test]
    fn segment_segment_basic() {
        // Crossing segments 1 m apart.
        let (s, t) = segment_segment(
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            1.0,
            Vec3::new(0.3, 0.2, 1.0),
            Vec3::new(0.0, 1.0, 0.0),
            1.0,
        );
        assert!((s - 0.3f64).abs() < 1e-15 && (t + 0.2f64).abs() < 1e-15);
        // Parallel: any closest pair, at distance 1.
        let (s, t) = segment_segment(
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            1.0,
            Vec3::new(1.5, 0.0, 1.0),
            Vec3::new(1.0, 0.0, 0.0),
            1.0,
        );
        let d = (Vec3::new(1.5 + t, 0.0, 1.0) - Vec3::new(s, 0.0, 0.0)).norm();
        assert!((d - 1.0f64).abs() < 1e-15);
    }

    #[test]
    fn box_codes_round_trip() {
        for c in 0..27 {
            assert_eq!(box_code(box_code_states(c)), c);
        }
        assert_eq!(box_code_join(box_code([0, 0, 2]), box_code([2, 0, 2])), box_code([1, 0, 2]));
    }
}
