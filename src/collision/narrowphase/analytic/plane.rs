//! Plane (A) against sphere, capsule and box (B). The plane is z = 0 of its
//! geom frame with outward normal +z (solid below), so the normal of every
//! contact is the plane normal and φ is the height of B's lowest feature.

use super::common::push_contact;
use crate::collision::{Manifold, Shape};
use crate::math::{Real, Vec3};

/// Plane (A) – sphere (B): one point below the centre.
/// φ = n·(c − p₀) − r (m). Features: `[0, 0]`.
pub fn contact_plane_sphere<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let n = a.rot.col(2);
    let height = n.dot(b.pos - a.pos);
    let dist = height - b.size.x;
    if dist < margin {
        push_contact(out, b.pos - n * height, n, dist, [0, 0]);
    }
}

/// Plane (A) – capsule (B): one point per segment end with φ < margin, each
/// with its own φ = n·(e − p₀) − r (m); a capsule lying flat gives 2 points.
/// Features: `[0, end]`, end 0 = the capsule's −z end, 1 = its +z end.
pub fn contact_plane_capsule<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let n = a.rot.col(2);
    let axis = b.rot.col(2) * b.size.y;
    let r = b.size.x;
    for (end, e) in [b.pos - axis, b.pos + axis].into_iter().enumerate() {
        let height = n.dot(e - a.pos);
        let dist = height - r;
        if dist < margin {
            push_contact(out, e - n * height, n, dist, [0, end as u32]);
        }
    }
}

/// Plane (A) – box (B): every box corner with φ = n·(corner − p₀) < margin,
/// at most the 4 deepest (a box resting on the plane gives its 4 bottom
/// corners; with a margin larger than the box, the 4 lowest corners).
/// Features: `[0, corner]`, corner index 0..7 with bit i set when the corner
/// is at +h_i along the box's local axis i (clear: at −h_i).
pub fn contact_plane_box<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let n = a.rot.col(2);
    // Height of the box centre and the corner offsets along n.
    let hc = n.dot(b.pos - a.pos);
    let nb = b.rot.tmul(n).cmul(b.size); // per-axis height change of a +h_i step
    let mut dist = [T::zero(); 8];
    let mut idx = [0u32; 8];
    let mut count = 0;
    for c in 0..8u32 {
        let mut d = hc;
        for i in 0..3 {
            d += if (c >> i) & 1 == 1 { nb[i] } else { -nb[i] };
        }
        if d < margin {
            dist[count] = d;
            idx[count] = c;
            count += 1;
        }
    }
    // Keep the 4 deepest: partial selection sort (stable on corner index).
    let keep = count.min(4);
    for k in 0..keep {
        let mut m = k;
        for j in k + 1..count {
            if dist[j] < dist[m] {
                m = j;
            }
        }
        dist.swap(k, m);
        idx.swap(k, m);
    }
    for k in 0..keep {
        let c = idx[k];
        let local = Vec3::new(
            if c & 1 == 1 { b.size.x } else { -b.size.x },
            if c & 2 == 2 { b.size.y } else { -b.size.y },
            if c & 4 == 4 { b.size.z } else { -b.size.z },
        );
        let corner = b.pos + b.rot * local;
        push_contact(out, corner - n * dist[k], n, dist[k], [0, c]);
    }
}
