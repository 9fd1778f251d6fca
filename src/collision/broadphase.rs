//! Broadphase: candidate geom pairs whose bounding volumes overlap, after
//! contype/conaffinity and parent–child filtering
//! ([`Model::geoms_can_collide`]).
//!
//! Bounding volumes: every non-plane geom gets a world axis-aligned box
//! (exact for spheres, capsules, boxes, cylinders and ellipsoids; the
//! rotated local vertex box for meshes, the rotated field box for height
//! fields), inflated on every side by the
//! geom's own margin ([`super::geom_bound_margin`]) and a few rounding
//! units. Since the pair margin ([`super::pair_margin`]) is at most the sum
//! of the two geoms' margins, two geoms closer than their pair margin always have
//! overlapping inflated boxes. Planes are infinite: a plane pairs with a
//! geom when the geom's inflated box reaches below the plane's surface plus
//! the plane's own margin. Plane–plane pairs are never reported (the narrow
//! phase has nothing to do for them). An extra margin (the integrator's
//! speculative contact skin) inflates every volume further. [`BroadPhase`]
//! (sweep and prune) and [`brute_force_pairs`] (all pairs) use exactly this
//! predicate.

use crate::dynamics::Data;
use crate::math::{Real, Vec3, v3};
use crate::model::{GeomKind, Model};

/// Broadphase workspace (allocated once per world): sweep and prune on one
/// world axis, with the sort order kept between updates so that the
/// insertion sort of a nearly sorted list costs O(n) per frame.
#[derive(Clone, Debug)]
pub struct BroadPhase<T> {
    /// Plane geoms (paired by the half-space test), each with the
    /// non-plane geoms the model lets it collide with.
    planes: Vec<(u32, Vec<u32>)>,
    /// Non-plane geoms that may collide with another non-plane geom, in
    /// sweep order (sorted by AABB minimum on `axis`). Geoms that collide
    /// with planes only (an ant's legs: contype 1, conaffinity 0) stay out
    /// of the sweep.
    order: Vec<u32>,
    /// Non-plane geoms that may collide with anything: the boxes computed
    /// per update.
    boxed: Vec<u32>,
    /// Per geom: inflated world AABB (m); empty (lo = +∞, hi = −∞) for planes
    /// and for geoms with non-finite poses.
    lo: Vec<Vec3<T>>,
    hi: Vec<Vec3<T>>,
    /// Per geom: the mesh's local bounding box (centre, half-extents; m).
    local: Vec<(Vec3<T>, Vec3<T>)>,
    /// Sweep axis (0, 1, 2); `None` before the first update.
    axis: Option<usize>,
    pairs: Vec<(u32, u32)>,
}

impl<T: Real> BroadPhase<T> {
    /// Workspace for `model`.
    pub fn new(model: &Model) -> Self {
        let n = model.geoms.len();
        let is_plane = |g: usize| model.geoms[g].kind == GeomKind::Plane;
        let solids: Vec<usize> = (0..n).filter(|&g| !is_plane(g)).collect();
        // The filter (contype/conaffinity, welds, parents, excludes) is a
        // property of the model: which geoms can ever pair is known here.
        let planes: Vec<(u32, Vec<u32>)> = (0..n)
            .filter(|&p| is_plane(p))
            .map(|p| (p as u32, solids.iter().filter(|&&g| model.geoms_can_collide(p, g)).map(|&g| g as u32).collect()))
            .collect();
        let order: Vec<u32> = solids
            .iter()
            .filter(|&&g| solids.iter().any(|&h| h != g && model.geoms_can_collide(g, h)))
            .map(|&g| g as u32)
            .collect();
        let boxed: Vec<u32> = solids
            .iter()
            .map(|&g| g as u32)
            .filter(|g| order.contains(g) || planes.iter().any(|(_, with)| with.contains(g)))
            .collect();
        let local = (0..n).map(|g| mesh_local_box(model, g)).collect();
        Self {
            pairs: Vec::with_capacity(4 * n + planes.iter().map(|(_, with)| with.len()).sum::<usize>()),
            planes,
            order,
            boxed,
            lo: vec![Vec3::splat(T::infinity()); n],
            hi: vec![Vec3::splat(-T::infinity()); n],
            local,
            axis: None,
        }
    }

    /// Recomputes the candidate pairs at the geom poses in `data` (after
    /// [`crate::dynamics::kinematics`]), every volume inflated by a further
    /// `extra_margin` (m). Allocation-free once the pair list has grown to
    /// its working size.
    pub fn update(&mut self, model: &Model, data: &Data<T>, extra_margin: f64) {
        for &g in &self.boxed {
            let g = g as usize;
            let (lo, hi) = geom_aabb(model, data, g, self.local[g], extra_margin);
            self.lo[g] = lo;
            self.hi[g] = hi;
        }
        // Sweep along the axis with the largest spread of box centres;
        // switch only when another axis spreads twice as much (a switch
        // costs one full sort).
        let var = centre_spread(&self.order, &self.lo, &self.hi);
        let axis = match self.axis {
            None => argmax3(var),
            Some(a) => {
                let b = argmax3(var);
                if var[b] > var[a] * T::c(2.0) { b } else { a }
            }
        };
        let key = |lo: &[Vec3<T>], g: u32| lo[g as usize][axis];
        if self.axis != Some(axis) {
            let lo = &self.lo;
            self.order.sort_unstable_by(|&x, &y| key(lo, x).f64().total_cmp(&key(lo, y).f64()));
            self.axis = Some(axis);
        } else {
            // Insertion sort from the previous order (nearly sorted between frames).
            for i in 1..self.order.len() {
                let g = self.order[i];
                let k = key(&self.lo, g).f64();
                let mut j = i;
                while j > 0 && key(&self.lo, self.order[j - 1]).f64().total_cmp(&k) == core::cmp::Ordering::Greater {
                    self.order[j] = self.order[j - 1];
                    j -= 1;
                }
                self.order[j] = g;
            }
        }
        self.pairs.clear();
        let n = self.order.len();
        for i in 0..n {
            let a = self.order[i];
            let (loa, hia) = (self.lo[a as usize], self.hi[a as usize]);
            for j in i + 1..n {
                let b = self.order[j];
                let (lob, hib) = (self.lo[b as usize], self.hi[b as usize]);
                // Sorted by lo on the sweep axis: nothing further can overlap
                // (boxes are finite or empty, never NaN).
                if lob[axis] > hia[axis] {
                    break;
                }
                if aabb_overlap(loa, hia, lob, hib) && model.geoms_can_collide(a as usize, b as usize) {
                    self.pairs.push((a.min(b), a.max(b)));
                }
            }
        }
        for (p, with) in &self.planes {
            let p = *p;
            for &g in with {
                let (lo, hi) = (self.lo[g as usize], self.hi[g as usize]);
                if plane_reaches(model, data, p as usize, lo, hi, extra_margin)
                    && model.geoms_can_collide(p as usize, g as usize)
                {
                    self.pairs.push((p.min(g), p.max(g)));
                }
            }
        }
        // Canonical order: the result does not depend on the update history.
        self.pairs.sort_unstable();
    }

    /// Candidate pairs (geom a < geom b, ascending) from the last update.
    pub fn pairs(&self) -> &[(u32, u32)] {
        &self.pairs
    }
}

/// Reference answer with the same bounding-volume predicate as
/// [`BroadPhase`], checking all O(n²) pairs: every filtered pair of
/// non-plane geoms whose inflated AABBs overlap, and every filtered
/// plane–geom pair where the geom's inflated AABB reaches below the plane
/// plus the plane's margin; all volumes inflated by `extra_margin` (m).
/// Sorted ascending, a < b.
pub fn brute_force_pairs<T: Real>(model: &Model, data: &Data<T>, extra_margin: f64) -> Vec<(usize, usize)> {
    let n = model.geoms.len();
    let boxes: Vec<(Vec3<T>, Vec3<T>)> = (0..n)
        .map(|g| {
            if model.geoms[g].kind == GeomKind::Plane {
                (Vec3::splat(T::infinity()), Vec3::splat(-T::infinity()))
            } else {
                geom_aabb(model, data, g, mesh_local_box(model, g), extra_margin)
            }
        })
        .collect();
    let mut out = vec![];
    for a in 0..n {
        for b in a + 1..n {
            let pa = model.geoms[a].kind == GeomKind::Plane;
            let pb = model.geoms[b].kind == GeomKind::Plane;
            let hit = match (pa, pb) {
                (true, true) => false,
                (true, false) => plane_reaches(model, data, a, boxes[b].0, boxes[b].1, extra_margin),
                (false, true) => plane_reaches(model, data, b, boxes[a].0, boxes[a].1, extra_margin),
                (false, false) => aabb_overlap(boxes[a].0, boxes[a].1, boxes[b].0, boxes[b].1),
            };
            if hit && model.geoms_can_collide(a, b) {
                out.push((a, b));
            }
        }
    }
    out
}

/// Local bounding box (centre, half-extents; m) of a mesh geom's vertices,
/// or of a height field ([−r_x, r_x] × [−r_y, r_y] × [−base, elevation]);
/// zero for other kinds (unused).
fn mesh_local_box<T: Real>(model: &Model, g: usize) -> (Vec3<T>, Vec3<T>) {
    let geom = &model.geoms[g];
    if let (GeomKind::Hfield, Some(h)) = (geom.kind, geom.hfield) {
        let [a, b, c, d] = model.hfields[h].size;
        return (v3([0.0, 0.0, 0.5 * (c - d)]), v3([a, b, 0.5 * (c + d)]));
    }
    match (geom.kind, geom.mesh) {
        (GeomKind::Mesh, Some(m)) if !model.meshes[m].vertices.is_empty() => {
            let mut lo = [f64::INFINITY; 3];
            let mut hi = [f64::NEG_INFINITY; 3];
            for v in &model.meshes[m].vertices {
                for i in 0..3 {
                    lo[i] = lo[i].min(v[i]);
                    hi[i] = hi[i].max(v[i]);
                }
            }
            let c = [0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2])];
            let h = [0.5 * (hi[0] - lo[0]), 0.5 * (hi[1] - lo[1]), 0.5 * (hi[2] - lo[2])];
            (v3(c), v3(h))
        }
        _ => (Vec3::zero(), Vec3::zero()),
    }
}

/// Inflated world AABB (lo, hi; m) of non-plane geom `g`; empty
/// (lo = +∞, hi = −∞) when the pose is not finite.
fn geom_aabb<T: Real>(
    model: &Model,
    data: &Data<T>,
    g: usize,
    local: (Vec3<T>, Vec3<T>),
    extra_margin: f64,
) -> (Vec3<T>, Vec3<T>) {
    let geom = &model.geoms[g];
    let s: Vec3<T> = v3::<T>(geom.size) * data.geom_size_scale[g];
    let r = &data.geom_xmat[g];
    let mut c = data.geom_xpos[g];
    let mut e = Vec3::zero();
    match geom.kind {
        GeomKind::Sphere => e = Vec3::splat(s.x),
        GeomKind::Capsule => e = r.col(2).abs() * s.y + Vec3::splat(s.x),
        GeomKind::Box => {
            for i in 0..3 {
                e[i] = Vec3::from_array(r.m[i]).abs().dot(s);
            }
        }
        GeomKind::Cylinder => {
            let a = r.col(2);
            for i in 0..3 {
                e[i] = a[i].abs() * s.y + s.x * (T::one() - a[i] * a[i]).max(T::zero()).sqrt();
            }
        }
        GeomKind::Ellipsoid => {
            for i in 0..3 {
                e[i] = Vec3::from_array(r.m[i]).cmul(s).norm();
            }
        }
        GeomKind::Mesh | GeomKind::Hfield => {
            c += *r * local.0;
            for i in 0..3 {
                e[i] = Vec3::from_array(r.m[i]).abs().dot(local.1);
            }
        }
        GeomKind::Plane => {}
    }
    // Own margin plus a few rounding units of the coordinates.
    let pad = T::c(super::geom_bound_margin(model, g) + extra_margin)
        + T::c(8.0) * T::EPS * (c.abs().max_elem() + e.max_elem());
    let e = e + Vec3::splat(pad);
    let (lo, hi) = (c - e, c + e);
    if lo.is_finite() && hi.is_finite() { (lo, hi) } else { (Vec3::splat(T::infinity()), Vec3::splat(-T::infinity())) }
}

/// Closed-interval overlap of two AABBs on all three axes.
#[inline]
fn aabb_overlap<T: Real>(lo_a: Vec3<T>, hi_a: Vec3<T>, lo_b: Vec3<T>, hi_b: Vec3<T>) -> bool {
    lo_a.x <= hi_b.x && lo_b.x <= hi_a.x && lo_a.y <= hi_b.y && lo_b.y <= hi_a.y && lo_a.z <= hi_b.z && lo_b.z <= hi_a.z
}

/// Whether the AABB (lo, hi) reaches below plane geom `p` plus the plane's
/// margin: its lowest point along the plane normal is at height ≤ margin.
#[inline]
fn plane_reaches<T: Real>(model: &Model, data: &Data<T>, p: usize, lo: Vec3<T>, hi: Vec3<T>, extra: f64) -> bool {
    let n = data.geom_xmat[p].col(2);
    let c = (lo + hi) * T::c(0.5);
    let e = (hi - lo) * T::c(0.5);
    let lowest = n.dot(c - data.geom_xpos[p]) - n.abs().dot(e);
    lowest <= T::c(super::geom_bound_margin(model, p) + extra)
}

/// Spread (variance) of the AABB centres per axis.
fn centre_spread<T: Real>(order: &[u32], lo: &[Vec3<T>], hi: &[Vec3<T>]) -> [T; 3] {
    let mut sum = Vec3::zero();
    let mut sum2 = Vec3::zero();
    let mut count = T::zero();
    for &g in order {
        let c = (lo[g as usize] + hi[g as usize]) * T::c(0.5);
        if c.is_finite() {
            sum += c;
            sum2 += c.cmul(c);
            count += T::one();
        }
    }
    if count == T::zero() {
        return [T::zero(); 3];
    }
    let mean = sum / count;
    let v = sum2 / count - mean.cmul(mean);
    [v.x, v.y, v.z]
}

#[inline]
fn argmax3<T: Real>(v: [T; 3]) -> usize {
    if v[0] >= v[1] && v[0] >= v[2] {
        0
    } else if v[1] >= v[2] {
        1
    } else {
        2
    }
}
