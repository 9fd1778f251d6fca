//! Contact geometry: broadphase, then a narrow-phase routine per geom pair
//! (`contact_<a>_<b>`, chosen by [`narrow_phase_fn`]), then the combined
//! contact material. CPU reference for `kernels/collision.wgsl`.
//!
//! Conventions: the signed distance φ is negative when the geoms overlap;
//! the normal points from geom A to geom B (A is the geom whose kind comes
//! first in [`GeomKind`] order); the contact point lies midway between the
//! two surfaces: `pos = p_A + (φ/2)·n` with `p_A` the witness point on A.
//! Contacts are reported while φ < margin.

mod broadphase;
mod narrowphase;

pub use broadphase::{BroadPhase, brute_force_pairs};
pub use narrowphase::*;

use crate::dynamics::Data;
use crate::math::{Mat3, Real, Vec3, v3};
use crate::model::{ConvexMesh, GeomKind, HeightField, Material, Model};

/// Most points a single narrow-phase call may produce.
pub const MAX_MANIFOLD: usize = 8;

/// A geom's shape and world pose, as the narrow phase sees it.
#[derive(Clone, Copy, Debug)]
pub struct Shape<'a, T> {
    /// Shape type.
    pub kind: GeomKind,
    /// Size parameters (m), see [`GeomKind`].
    pub size: Vec3<T>,
    /// Hull for mesh geoms.
    pub mesh: Option<&'a ConvexMesh>,
    /// The field of height-field geoms.
    pub hfield: Option<&'a HeightField>,
    /// One prism of a height field (kind [`GeomKind::Hfield`] with this set):
    /// the bottom triangle (vertices 0–2) and the top triangle (3–5) above
    /// it, in the shape's frame (m). The height-field routines collide these
    /// one by one with the other geom (see `narrowphase::hfield`).
    pub prism: Option<&'a [Vec3<T>; 6]>,
    /// Origin of the geom frame, world (m).
    pub pos: Vec3<T>,
    /// Rotation geom → world.
    pub rot: Mat3<T>,
}

impl<'a, T: Real> Shape<'a, T> {
    /// The shape of geom `g` at its pose in `data`, with its size scaled by
    /// `data.geom_size_scale[g]`.
    pub fn of_geom(model: &'a Model, data: &Data<T>, g: usize) -> Self {
        let geom = &model.geoms[g];
        Shape {
            kind: geom.kind,
            size: v3::<T>(geom.size) * data.geom_size_scale[g],
            mesh: geom.mesh.map(|m| &model.meshes[m]),
            hfield: geom.hfield.map(|h| &model.hfields[h]),
            prism: None,
            pos: data.geom_xpos[g],
            rot: data.geom_xmat[g],
        }
    }
}

/// One point of a contact manifold from a narrow-phase routine.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactPoint<T> {
    /// Contact point, world (m): midway between the two surfaces.
    pub pos: Vec3<T>,
    /// Unit normal from A to B.
    pub normal: Vec3<T>,
    /// Signed distance φ (m), negative when overlapping.
    pub dist: T,
    /// Contact feature ids on A and B (meaning per pair; e.g. the box
    /// corner index for box–plane). Used to recompute φ differentiably.
    pub feature: [u32; 2],
}

/// Fixed-capacity list of contact points (no allocation).
#[derive(Clone, Copy, Debug)]
pub struct Manifold<T> {
    /// Storage; the first `len` entries are valid.
    pub points: [ContactPoint<T>; MAX_MANIFOLD],
    /// Number of valid points.
    pub len: usize,
}

impl<T: Real> Default for Manifold<T> {
    fn default() -> Self {
        Self {
            points: [ContactPoint { pos: Vec3::zero(), normal: Vec3::zero(), dist: T::zero(), feature: [0, 0] };
                MAX_MANIFOLD],
            len: 0,
        }
    }
}

impl<T: Real> Manifold<T> {
    /// Empties the list.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }
    /// Appends a point; routines never produce more than [`MAX_MANIFOLD`].
    #[inline]
    pub fn push(&mut self, p: ContactPoint<T>) {
        debug_assert!(self.len < MAX_MANIFOLD, "narrow phase produced too many points");
        if self.len < MAX_MANIFOLD {
            self.points[self.len] = p;
            self.len += 1;
        }
    }
    /// The valid points.
    #[inline]
    pub fn as_slice(&self) -> &[ContactPoint<T>] {
        &self.points[..self.len]
    }
}

/// A contact between two geoms, ready for the contact solve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact<T> {
    /// Geom ids (A, B).
    pub geom: [usize; 2],
    /// Body ids of the geoms (A, B).
    pub body: [usize; 2],
    /// Contact point, world (m).
    pub pos: Vec3<T>,
    /// Unit normal from A to B.
    pub normal: Vec3<T>,
    /// Signed distance φ (m), negative when overlapping.
    pub dist: T,
    /// Feature ids, see [`ContactPoint::feature`].
    pub feature: [u32; 2],
    /// Combined material of the pair ([`Material::combine`]).
    pub material: Material,
}

/// Per-world contact list with an optional fixed capacity. When more
/// contacts are found than fit, the extra ones are counted in `overflow`
/// (never silently dropped: callers report it per world).
#[derive(Clone, Debug)]
pub struct Contacts<T> {
    /// Contacts found by the last [`collide`].
    pub list: Vec<Contact<T>>,
    /// Maximum number of contacts kept (`usize::MAX`: unbounded).
    pub capacity: usize,
    /// Contacts found beyond `capacity` in the last [`collide`].
    pub overflow: usize,
    /// Extra margin added to every pair's margin (m): the integrator's
    /// speculative contact skin, so pairs about to touch become constraints.
    pub skin: f64,
    /// Broadphase workspace.
    pub broadphase: BroadPhase<T>,
    manifold: Manifold<T>,
}

impl<T: Real> Contacts<T> {
    /// An unbounded contact list for `model` (storage reserved up front).
    pub fn new(model: &Model) -> Self {
        Self::with_capacity(model, usize::MAX)
    }
    /// A contact list that keeps at most `capacity` contacts.
    pub fn with_capacity(model: &Model, capacity: usize) -> Self {
        let reserve = capacity.min(16 * model.geoms.len().max(1));
        Self {
            list: Vec::with_capacity(reserve),
            capacity,
            overflow: 0,
            skin: 0.0,
            broadphase: BroadPhase::new(model),
            manifold: Manifold::default(),
        }
    }
    /// Number of contacts.
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// True when there are no contacts.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Contact margin of a geom pair (m), the distance below which its
/// contacts are reported: an explicit pair's own margin (plus its gap under
/// MuJoCo's semantics), else the larger of the model margin and the two
/// geoms' margins (physical semantics), or the sum of the two geoms'
/// margins and gaps (MuJoCo's semantics, where a contact acts below the
/// summed margins and the gaps widen only its detection).
#[inline]
pub fn pair_margin(model: &Model, a: usize, b: usize) -> f64 {
    let mujoco = model.options.semantics == crate::model::Semantics::MuJoCo;
    match model.contact_pair(a, b) {
        Some(p) if mujoco => p.margin + p.material.soft.map_or(0.0, |s| s.gap),
        Some(p) => p.margin,
        None if mujoco => model.options.margin.max(geom_bound_margin(model, a) + geom_bound_margin(model, b)),
        None => model.options.margin.max(model.geoms[a].margin).max(model.geoms[b].margin),
    }
}

/// Margin (m) by which geom `g`'s bounding volume is inflated, so that two
/// geoms closer than their [`pair_margin`] always have overlapping volumes:
/// the larger of the model margin and the geom's margin (plus its gap under
/// MuJoCo's semantics).
#[inline]
pub fn geom_bound_margin(model: &Model, g: usize) -> f64 {
    let geom = &model.geoms[g];
    let own = match (&geom.material.soft, model.options.semantics) {
        (Some(s), crate::model::Semantics::MuJoCo) => geom.margin + s.gap,
        _ => geom.margin,
    };
    model.options.margin.max(own)
}

/// Contact material of a geom pair: an explicit pair's own, else the
/// combination of the two geoms' materials ([`Material::combine`]).
#[inline]
pub fn pair_material(model: &Model, a: usize, b: usize) -> Material {
    match model.contact_pair(a, b) {
        Some(p) => p.material,
        None => Material::combine(&model.geoms[a].material, &model.geoms[b].material),
    }
}

/// Finds all contacts at the poses in `data` (after
/// [`crate::dynamics::kinematics`]) into `contacts`: broadphase with
/// filtering, narrow phase per candidate pair, combined materials; then
/// the model's explicit contact pairs.
pub fn collide<T: Real>(model: &Model, data: &Data<T>, contacts: &mut Contacts<T>) {
    contacts.list.clear();
    contacts.overflow = 0;
    let Contacts { list, capacity, overflow, skin, broadphase, manifold } = contacts;
    broadphase.update(model, data, *skin);
    let explicit =
        model.pairs.iter().filter(|_| model.options.flags.contact).map(|p| (p.geom[0] as u32, p.geom[1] as u32));
    for (a, b) in broadphase.pairs().iter().copied().chain(explicit) {
        narrow_phase_pair(model, data, a as usize, b as usize, *skin, manifold);
        for p in manifold.as_slice() {
            if list.len() < *capacity {
                let (ga, gb) = order_pair(model, a as usize, b as usize);
                list.push(Contact {
                    geom: [ga, gb],
                    body: [model.geoms[ga].body, model.geoms[gb].body],
                    pos: p.pos,
                    normal: p.normal,
                    dist: p.dist,
                    feature: p.feature,
                    material: pair_material(model, ga, gb),
                });
            } else {
                *overflow += 1;
            }
        }
    }
}

/// Orders a geom pair as the narrow phase sees it: A has the smaller kind
/// (ties: smaller index).
#[inline]
pub fn order_pair(model: &Model, a: usize, b: usize) -> (usize, usize) {
    let (ka, kb) = (model.geoms[a].kind, model.geoms[b].kind);
    if (ka, a) <= (kb, b) { (a, b) } else { (b, a) }
}

/// Runs the narrow phase for geoms `a` and `b` (any order) into `out`,
/// with the pair's margin plus `extra_margin` (m). Normals point from the
/// first geom of [`order_pair`] to the second.
pub fn narrow_phase_pair<T: Real>(
    model: &Model,
    data: &Data<T>,
    a: usize,
    b: usize,
    extra_margin: f64,
    out: &mut Manifold<T>,
) {
    out.clear();
    let (ga, gb) = order_pair(model, a, b);
    let sa = Shape::of_geom(model, data, ga);
    let sb = Shape::of_geom(model, data, gb);
    let margin = T::c(pair_margin(model, ga, gb) + extra_margin);
    let f = narrow_phase_fn::<T>(sa.kind, sb.kind);
    f(&sa, &sb, margin, out);
}
