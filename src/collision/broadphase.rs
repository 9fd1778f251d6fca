//! Broadphase: candidate geom pairs whose bounding volumes overlap, after
//! contype/conaffinity and parent–child filtering.

use crate::dynamics::Data;
use crate::math::Real;
use crate::model::Model;

/// Broadphase workspace (allocated once per world).
#[derive(Clone, Debug)]
pub struct BroadPhase<T> {
    pairs: Vec<(u32, u32)>,
    _t: core::marker::PhantomData<T>,
}

impl<T: Real> BroadPhase<T> {
    /// Workspace for `model`.
    pub fn new(model: &Model) -> Self {
        let n = model.geoms.len();
        Self { pairs: Vec::with_capacity(n * n.saturating_sub(1) / 2), _t: core::marker::PhantomData }
    }
    /// Recomputes the candidate pairs at the geom poses in `data`.
    /// TODO(session): brute force for now; sweep-and-prune in progress.
    /// `extra_margin` (m) inflates every bounding volume like the pair margin.
    pub fn update(&mut self, model: &Model, data: &Data<T>, extra_margin: f64) {
        self.pairs.clear();
        for (a, b) in brute_force_pairs(model, data, extra_margin) {
            self.pairs.push((a as u32, b as u32));
        }
    }
    /// Candidate pairs (geom a < geom b) from the last update.
    pub fn pairs(&self) -> &[(u32, u32)] {
        &self.pairs
    }
}

/// Reference answer: every filtered pair whose bounding spheres (inflated
/// by the pair margin) overlap; planes pair with everything they may collide with.
pub fn brute_force_pairs<T: Real>(model: &Model, data: &Data<T>, extra_margin: f64) -> Vec<(usize, usize)> {
    let n = model.geoms.len();
    let mut out = vec![];
    for a in 0..n {
        for b in a + 1..n {
            if !model.geoms_can_collide(a, b) {
                continue;
            }
            let ra = model.geoms[a].rbound;
            let rb = model.geoms[b].rbound;
            if ra.is_finite() && rb.is_finite() {
                let d = (data.geom_xpos[a] - data.geom_xpos[b]).norm().f64();
                if d > ra + rb + super::pair_margin(model, a, b) + extra_margin {
                    continue;
                }
            }
            out.push((a, b));
        }
    }
    out
}
