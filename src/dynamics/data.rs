use crate::math::{Mat3, Motion, Quat, Real, SpatialInertia, Vec3};
use crate::model::Model;

/// Per-world state and derived quantities of the multibody stages. All
/// arrays are allocated once in [`Data::new`]; the stages never allocate.
#[derive(Clone, Debug)]
pub struct Data<T> {
    /// Positions (nq).
    pub q: Vec<T>,
    /// Velocities (nv).
    pub v: Vec<T>,
    /// Multiplies every body mass and inertia (per-world randomisation; 1 by default).
    pub mass_scale: T,
    /// Per geom (ngeom): multiplies the size parameters of the shape the
    /// collision stages see (broadphase, narrow phase, impact bounds), for
    /// randomisation and identification of geometry; 1 by default. Mass
    /// properties stay as modelled. Mesh geoms ignore it (their vertices are
    /// used as stored).
    pub geom_size_scale: Vec<T>,

    /// Body frame origins, world (nbody, m).
    pub xpos: Vec<Vec3<T>>,
    /// Body orientations, body to world (nbody).
    pub xquat: Vec<Quat<T>>,
    /// Body rotation matrices (nbody).
    pub xmat: Vec<Mat3<T>>,
    /// Body centres of mass, world (nbody, m).
    pub xipos: Vec<Vec3<T>>,
    /// Joint anchors, world (njnt, m).
    pub xanchor: Vec<Vec3<T>>,
    /// Joint axes, world (njnt).
    pub xaxis: Vec<Vec3<T>>,
    /// Geom positions, world (ngeom, m).
    pub geom_xpos: Vec<Vec3<T>>,
    /// Geom rotation matrices, geom to world (ngeom).
    pub geom_xmat: Vec<Mat3<T>>,
    /// Site positions, world (nsite, m).
    pub site_xpos: Vec<Vec3<T>>,
    /// Site orientations, site to world (nsite).
    pub site_xquat: Vec<Quat<T>>,

    /// Reference point of each body's spatial quantities: its tree root's origin (nbody, m).
    pub body_ref: Vec<Vec3<T>>,
    /// Spatial inertia of each body about `body_ref` (nbody).
    pub cinert: Vec<SpatialInertia<T>>,
    /// Motion subspace of each dof about its body's reference point (nv).
    pub cdof: Vec<Motion<T>>,
    /// Spatial velocity of each body about its reference point (nbody).
    pub cvel: Vec<Motion<T>>,
    /// Time derivative of `cdof` (nv).
    pub cdof_dot: Vec<Motion<T>>,

    /// Joint-space mass matrix including armature, row-major (nv × nv, kg·m² / kg).
    pub mass: Vec<T>,
    /// Bias forces: Coriolis, centrifugal and gravity, `M v̇ + bias = τ` (nv).
    pub bias: Vec<T>,
    /// Passive joint spring forces (nv), not including damping.
    pub passive: Vec<T>,

    // Workspaces.
    pub(crate) crb: Vec<SpatialInertia<T>>,
    pub(crate) cacc: Vec<Motion<T>>,
    pub(crate) cfrc: Vec<crate::math::Force<T>>,
}

impl<T: Real> Data<T> {
    /// Allocates data for `model`, with q = qpos0 and v = 0.
    pub fn new(model: &Model) -> Self {
        let nb = model.bodies.len();
        let nv = model.nv;
        let nj = model.joints.len();
        Self {
            q: model.qpos0.iter().map(|&x| T::c(x)).collect(),
            v: vec![T::zero(); nv],
            mass_scale: T::one(),
            geom_size_scale: vec![T::one(); model.geoms.len()],
            xpos: vec![Vec3::zero(); nb],
            xquat: vec![Quat::identity(); nb],
            xmat: vec![Mat3::identity(); nb],
            xipos: vec![Vec3::zero(); nb],
            xanchor: vec![Vec3::zero(); nj],
            xaxis: vec![Vec3::zero(); nj],
            geom_xpos: vec![Vec3::zero(); model.geoms.len()],
            geom_xmat: vec![Mat3::identity(); model.geoms.len()],
            site_xpos: vec![Vec3::zero(); model.sites.len()],
            site_xquat: vec![Quat::identity(); model.sites.len()],
            body_ref: vec![Vec3::zero(); nb],
            cinert: vec![SpatialInertia::zero(); nb],
            cdof: vec![Motion::zero(); nv],
            cvel: vec![Motion::zero(); nb],
            cdof_dot: vec![Motion::zero(); nv],
            mass: vec![T::zero(); nv * nv],
            bias: vec![T::zero(); nv],
            passive: vec![T::zero(); nv],
            crb: vec![SpatialInertia::zero(); nb],
            cacc: vec![Motion::zero(); nb],
            cfrc: vec![crate::math::Force::zero(); nb],
        }
    }

    /// Sets q and v from `f64` slices (lengths nq and nv).
    pub fn set_state(&mut self, q: &[f64], v: &[f64]) {
        for (d, s) in self.q.iter_mut().zip(q) {
            *d = T::c(*s);
        }
        for (d, s) in self.v.iter_mut().zip(v) {
            *d = T::c(*s);
        }
    }

    /// Mass matrix entry (i, j).
    #[inline]
    pub fn m(&self, i: usize, j: usize) -> T {
        self.mass[i * self.v.len() + j]
    }
}
