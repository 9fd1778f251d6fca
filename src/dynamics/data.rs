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
    /// Per geom (ngeom): multiplies the geom's position in its body frame
    /// (kinematics, hence every collision stage), for identification of
    /// geometry built from several geoms (e.g. spheres at the corners of a
    /// box); 1 by default.
    pub geom_offset_scale: Vec<T>,

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
    /// Entries of dofs on different ancestor chains are zero and never
    /// written (the mass-matrix pass writes only the others).
    pub mass: Vec<T>,
    /// Bias forces: Coriolis, centrifugal and gravity, `M v̇ + bias = τ` (nv).
    pub bias: Vec<T>,
    /// Passive forces (nv): joint springs and fluid forces, not including
    /// damping (N or N·m).
    pub passive: Vec<T>,
    /// Actuator activations (na), part of the state.
    pub act: Vec<T>,
    /// Tendon lengths (ntendon, m).
    pub ten_length: Vec<T>,
    /// Tendon Jacobians, row-major (ntendon × nv): L̇ = J v.
    pub ten_jac: Vec<T>,
    /// Actuator lengths L (nu; see [`crate::model::GeneralActuator`]).
    pub actuator_length: Vec<T>,
    /// Actuator moments, row-major (nu × nv): L̇ = m v, generalized force mᵀ f.
    pub actuator_moment: Vec<T>,
    /// Sensor values (nsensordata), written by [`super::sensors`].
    pub sensordata: Vec<T>,

    // Workspaces.
    pub(crate) crb: Vec<SpatialInertia<T>>,
    pub(crate) cacc: Vec<Motion<T>>,
    pub(crate) cfrc: Vec<crate::math::Force<T>>,
    /// Point Jacobian scratch (3 × nv each).
    pub(crate) jac_a: Vec<T>,
    pub(crate) jac_b: Vec<T>,
    pub(crate) jac_r: Vec<T>,
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
            geom_offset_scale: vec![T::one(); model.geoms.len()],
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
            act: vec![T::zero(); model.na],
            ten_length: vec![T::zero(); model.tendons.len()],
            ten_jac: vec![T::zero(); model.tendons.len() * nv],
            actuator_length: vec![T::zero(); model.nu()],
            actuator_moment: vec![T::zero(); model.nu() * nv],
            sensordata: vec![T::zero(); model.nsensordata],
            jac_a: vec![T::zero(); 3 * nv],
            jac_b: vec![T::zero(); 3 * nv],
            jac_r: vec![T::zero(); 3 * nv],
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
