//! Sphere (A) against sphere, capsule and box (B): one contact point each.

use super::common::{box_code, clamp, normalize_or, push_contact, seg_feature, sign_of};
use crate::collision::{Manifold, Shape};
use crate::math::{Real, Vec3};

/// Sphere (A) – sphere (B): φ = |c_B − c_A| − r_A − r_B (m), normal along the
/// centre line. Concentric spheres get the normal +z (world), any direction
/// being equally valid. Features: `[0, 0]`.
pub fn contact_sphere_sphere<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let d = b.pos - a.pos;
    let len = d.norm();
    let dist = len - a.size.x - b.size.x;
    if dist < margin {
        let n = normalize_or(d, Vec3::unit(2));
        push_contact(out, a.pos + n * a.size.x, n, dist, [0, 0]);
    }
}

/// Sphere (A) – capsule (B): the sphere centre against the capsule's
/// segment; φ = |q − c_A| − r_A − r_B (m) with q the closest segment point.
/// A centre on the segment gets a normal perpendicular to the capsule axis.
/// Features: `[0, f]`, f = 0 (q at the capsule's −z end), 1 (+z end),
/// 2 (q on the cylindrical side).
pub fn contact_sphere_capsule<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let u = b.rot.col(2);
    let hl = b.size.y;
    let s = clamp((a.pos - b.pos).dot(u), -hl, hl);
    let q = b.pos + u * s;
    let d = q - a.pos;
    let dist = d.norm() - a.size.x - b.size.x;
    if dist < margin {
        let n = normalize_or(d, u.any_orthonormal());
        push_contact(out, a.pos + n * a.size.x, n, dist, [0, seg_feature(s, hl)]);
    }
}

/// Sphere (A) – box (B). With the centre outside the box: φ = |c − q| − r
/// (m), q the closest box point, normal from c to q. With the centre inside:
/// the face of least penetration δ, φ = −δ − r, normal the inward face
/// normal (a centre exactly at the box centre picks the smallest half-extent,
/// then the +axis face). Features: `[0, code]`, code = box feature code of
/// the box witness (Σ k_i·3^i, k_i = 0 at −h_i, 1 between, 2 at +h_i;
/// face/edge/corner by how many axes are at a bound).
pub fn contact_sphere_box<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let r = a.size.x;
    let h = b.size;
    let pl = b.rot.tmul(a.pos - b.pos);
    let q = pl.max(-h).min(h);
    let diff = q - pl;
    let d2 = diff.norm2();
    if d2 > T::min_positive_value() {
        // Outside.
        let d = d2.sqrt();
        if d - r >= margin {
            return;
        }
        let nl = diff * (T::one() / d);
        let n = b.rot * nl;
        let mut k = [1u32; 3];
        for i in 0..3 {
            if pl[i] < -h[i] {
                k[i] = 0;
            } else if pl[i] > h[i] {
                k[i] = 2;
            }
        }
        push_contact(out, a.pos + n * r, n, d - r, [0, box_code(k)]);
    } else {
        // Inside (or on the surface): least-penetration face.
        let mut axis = 0;
        let mut depth = h.x - pl.x.abs();
        for i in 1..3 {
            let di = h[i] - pl[i].abs();
            if di < depth {
                depth = di;
                axis = i;
            }
        }
        let dist = -depth - r;
        if dist < margin {
            let sg = sign_of(pl[axis]);
            // Box's outward face normal is sg·e_axis; A → B points the other way.
            let n = b.rot.col(axis) * (-sg);
            let mut k = [1u32; 3];
            k[axis] = if sg > T::zero() { 2 } else { 0 };
            push_contact(out, a.pos + n * r, n, dist, [0, box_code(k)]);
        }
    }
}
