//! Height-field contacts (`contact_<kind>_hfield`), as MuJoCo 4.0 finds
//! them (`mjc_ConvexHField`): the field is cut into triangular prisms, two
//! per grid cell, each reaching from a grid triangle down to the field's
//! base, and every prism under the other geom's bounding box collides with
//! the geom through the general convex routine
//! ([`convex_separation`](super::convex_separation): GJK, EPA, Newton), one
//! contact point per prism.
//!
//! Steps, in the field's frame:
//! 1. Early outs: the geom's bounding sphere against the field's box, then
//!    its bounding box (support points along ±x, ±y, ±z) against it.
//! 2. The grid cells under that box: columns
//!    ⌊(x_min + r_x)/(2 r_x)·(ncol − 1)⌋ ..= ⌈(x_max + r_x)/(2 r_x)·(ncol − 1)⌉,
//!    rows likewise, clamped to the grid.
//! 3. Per cell (row r, column c) the two triangles
//!    [(c−1, r+1), (c−1, r), (c, r+1)] and [(c−1, r), (c, r+1), (c, r)]
//!    (MuJoCo's order), skipped when all three top vertices lie below the
//!    geom's lowest point minus the margin.
//! 4. Each prism's signed distance to the geom (cut off at the margin): a
//!    contact midway between the witness points.
//!
//! Conventions as for every pair: A is the convex geom, B the field, the
//! normal points from A into the field (MuJoCo reports the opposite
//! normal, from the field to the geom), φ is the true distance (MuJoCo
//! raises the prisms' tops by the margin instead, which is the same at
//! margin 0). A pair keeps at most [`MAX_MANIFOLD`] points: beyond that, a
//! deeper point replaces the shallowest kept one (MuJoCo keeps up to 50).
//!
//! Feature ids: [support feature of A, prism index 2·(r·(ncol − 1) + c − 1) + t]
//! (t: first or second triangle of the cell).

use super::convex::convex_separation;
use crate::collision::{ContactPoint, MAX_MANIFOLD, Manifold, Shape};
use crate::math::{Real, Vec3};
use crate::model::GeomKind;

use super::convex::support::{bounding_radius, support};

/// The prisms of the cells under a geom's bounding box: the grid range and
/// the field's geometry in the field frame, without allocation.
struct Grid<T> {
    size: [T; 4],
    dx: T,
    dy: T,
    rows: (usize, usize),
    cols: (usize, usize),
}

/// Vertex (row r, column c) of the field at its height (m, field frame).
#[inline]
fn vertex<T: Real>(f: &crate::model::HeightField, g: &Grid<T>, r: usize, c: usize) -> Vec3<T> {
    Vec3::new(
        g.dx * T::c(c as f64) - g.size[0],
        g.dy * T::c(r as f64) - g.size[1],
        T::c(f.data[r * f.ncol + c] as f64) * g.size[2],
    )
}

/// Pushes `p`, or (the manifold being full) puts it in place of the
/// shallowest point when it is deeper.
#[inline]
fn keep_deepest<T: Real>(p: ContactPoint<T>, out: &mut Manifold<T>) {
    if out.len < MAX_MANIFOLD {
        out.push(p);
        return;
    }
    let mut worst = 0;
    for i in 1..MAX_MANIFOLD {
        if out.points[i].dist > out.points[worst].dist {
            worst = i;
        }
    }
    if p.dist < out.points[worst].dist {
        out.points[worst] = p;
    }
}

/// The contacts of convex geom `a` with height field `h` (see the module docs).
pub fn hfield_contact<T: Real>(a: &Shape<'_, T>, h: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    let Some(field) = h.hfield else { return };
    let size = field.size.map(T::c);
    let [s0, s1, s2, s3] = size;
    // The geom in the field's frame.
    let rt = h.rot.transpose();
    let local = Shape { pos: rt * (a.pos - h.pos), rot: rt * a.rot, prism: None, ..*a };
    let p = local.pos;
    if !p.is_finite() {
        return;
    }
    // Bounding sphere against the field's box.
    let radius = bounding_radius(a) + margin;
    if s0 < p.x - radius || -s0 > p.x + radius || s1 < p.y - radius || -s1 > p.y + radius || s2 < p.z - radius {
        return;
    }
    if -s3 > p.z + radius {
        return;
    }
    // Bounding box from support points.
    let e = |i: usize| Vec3::unit(i);
    let hi = Vec3::new(support(&local, e(0)).0.x, support(&local, e(1)).0.y, support(&local, e(2)).0.z);
    let lo = Vec3::new(support(&local, -e(0)).0.x, support(&local, -e(1)).0.y, support(&local, -e(2)).0.z);
    if lo.x - margin > s0 || hi.x + margin < -s0 || lo.y - margin > s1 || hi.y + margin < -s1 {
        return;
    }
    if lo.z - margin > s2 || hi.z + margin < -s3 {
        return;
    }
    let (nrow, ncol) = (field.nrow, field.ncol);
    let cell = |v: T, s: T, n: usize| (v + s) / (s + s) * T::c((n - 1) as f64);
    let clamp = |v: T, n: usize| -> usize {
        // NaN and out-of-range values land on the grid's edges.
        let x = v.f64();
        if !(x > 0.0) {
            0
        } else if x >= (n - 1) as f64 {
            n - 1
        } else {
            x as usize
        }
    };
    let grid = Grid {
        size,
        dx: (s0 + s0) / T::c((ncol - 1) as f64),
        dy: (s1 + s1) / T::c((nrow - 1) as f64),
        cols: (clamp(cell(lo.x, s0, ncol).floor(), ncol), clamp(cell(hi.x, s0, ncol).ceil(), ncol)),
        rows: (clamp(cell(lo.y, s1, nrow).floor(), nrow), clamp(cell(hi.y, s1, nrow).ceil(), nrow)),
    };
    let base = -s3;
    for r in grid.rows.0..grid.rows.1 {
        for c in grid.cols.0 + 1..=grid.cols.1 {
            let corners = [
                vertex(field, &grid, r + 1, c - 1),
                vertex(field, &grid, r, c - 1),
                vertex(field, &grid, r + 1, c),
                vertex(field, &grid, r, c),
            ];
            for t in 0..2 {
                let top = [corners[t], corners[t + 1], corners[t + 2]];
                // Prism height test: the geom is above all three top vertices.
                if top.iter().all(|v| v.z + margin < lo.z) {
                    continue;
                }
                // The prism about its centroid (round-off scales with the prism).
                let mut centre = Vec3::zero();
                for v in &top {
                    centre += Vec3::new(v.x, v.y, (v.z + base) * T::c(0.5));
                }
                centre = centre * T::c(1.0 / 3.0);
                let mut prism = [Vec3::zero(); 6];
                for k in 0..3 {
                    prism[k] = Vec3::new(top[k].x, top[k].y, base) - centre;
                    prism[k + 3] = top[k] - centre;
                }
                let ps = Shape {
                    kind: GeomKind::Hfield,
                    size: Vec3::zero(),
                    mesh: None,
                    hfield: None,
                    prism: Some(&prism),
                    pos: centre,
                    rot: crate::math::Mat3::identity(),
                };
                if let Some(s) = convex_separation(&local, &ps, margin) {
                    let mut cp = s.contact_point();
                    cp.pos = h.pos + h.rot * cp.pos;
                    cp.normal = h.rot * cp.normal;
                    cp.feature = [s.features[0], (2 * (r * (ncol - 1) + c - 1) + t) as u32];
                    keep_deepest(cp, out);
                }
            }
        }
    }
}

/// No contact: planes and height fields are both static.
pub fn contact_plane_hfield<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {}

/// Contact between sphere (A) and height field (B).
pub fn contact_sphere_hfield<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    hfield_contact(a, b, margin, out);
}

/// Contact between capsule (A) and height field (B).
pub fn contact_capsule_hfield<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    hfield_contact(a, b, margin, out);
}

/// Contact between box (A) and height field (B).
pub fn contact_box_hfield<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    hfield_contact(a, b, margin, out);
}

/// Contact between cylinder (A) and height field (B).
pub fn contact_cylinder_hfield<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    hfield_contact(a, b, margin, out);
}

/// Contact between ellipsoid (A) and height field (B).
pub fn contact_ellipsoid_hfield<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    hfield_contact(a, b, margin, out);
}

/// Contact between convex mesh (A) and height field (B).
pub fn contact_mesh_hfield<T: Real>(a: &Shape<'_, T>, b: &Shape<'_, T>, margin: T, out: &mut Manifold<T>) {
    hfield_contact(a, b, margin, out);
}

/// No contact: height fields are static.
pub fn contact_hfield_hfield<T: Real>(_a: &Shape<'_, T>, _b: &Shape<'_, T>, _margin: T, _out: &mut Manifold<T>) {}
