//! Differentiable inputs besides the state: controls and model parameters,
//! and how their values are written into a simulator of any scalar type.

use super::DiffError;
use crate::integrator::Simulator;
use crate::math::Real;
use crate::model::{GeomKind, Model};

/// A differentiable model parameter. Every entry is a dimensionless
/// multiplier on a modelled value (1 reproduces the model), so that one
/// parameter vector suits optimizers without rescaling; the physical value
/// is multiplier × modelled value. Material multipliers apply to every
/// contact pair of the world (on the combined material of the pair).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// Multiplies every body mass and inertia ([`crate::dynamics::Data::mass_scale`]).
    MassScale,
    /// Multiplies every contact stiffness k (N/m).
    Stiffness,
    /// Multiplies every Hunt–Crossley dissipation d (s/m).
    Dissipation,
    /// Multiplies every static friction coefficient μs.
    MuStatic,
    /// Multiplies every dynamic friction coefficient μd.
    MuDynamic,
    /// Multiplies both μs and μd (one parameter for a single friction coefficient).
    Friction,
    /// Multiplies the size of geom `g` (a sphere's radius, a box's
    /// half-extents, …) as the collision stages see it
    /// ([`crate::dynamics::Data::geom_size_scale`]); mass properties stay as
    /// modelled. Not available for planes and meshes.
    GeomSize(usize),
    /// Multiplies the size of every geom of body `b` (as [`Param::GeomSize`]
    /// on each): one parameter for a shape built from several geoms.
    BodyGeomSize(usize),
    /// Multiplies the position of every geom of body `b` in the body frame
    /// ([`crate::dynamics::Data::geom_offset_scale`]): spreads or gathers the
    /// geoms about the body origin, e.g. the corner spheres of a box with
    /// rounded corners. Mass properties stay as modelled.
    BodyGeomOffset(usize),
}

impl Param {
    /// A contact-material multiplier: it enters only the ICF build, not
    /// the kinematics, mass matrix or collision geometry.
    pub(crate) fn is_material(&self) -> bool {
        matches!(self, Param::Stiffness | Param::Dissipation | Param::MuStatic | Param::MuDynamic | Param::Friction)
    }

    /// Checks that the parameter exists in `model`.
    pub fn validate(&self, model: &Model) -> Result<(), DiffError> {
        if let Param::GeomSize(g) = *self {
            let Some(geom) = model.geoms.get(g) else {
                return Err(DiffError::Input(format!(
                    "Param::GeomSize({g}): the model has {} geoms",
                    model.geoms.len()
                )));
            };
            if matches!(geom.kind, GeomKind::Plane | GeomKind::Mesh | GeomKind::Hfield) {
                return Err(DiffError::Input(format!(
                    "Param::GeomSize({g}): geom '{}' is a {}; only primitive shapes can be scaled",
                    geom.name,
                    geom.kind.name()
                )));
            }
        }
        if let Param::BodyGeomSize(b) | Param::BodyGeomOffset(b) = *self {
            if b == 0 || b >= model.bodies.len() {
                return Err(DiffError::Input(format!(
                    "{self:?}: no moving body {b} (the model has bodies 1..{})",
                    model.bodies.len()
                )));
            }
            let geoms: Vec<_> = model.geoms.iter().filter(|g| g.body == b).collect();
            if geoms.is_empty() {
                return Err(DiffError::Input(format!("{self:?}: body '{}' has no geoms", model.bodies[b].name)));
            }
            if let Some(g) =
                geoms.iter().find(|g| matches!(g.kind, GeomKind::Plane | GeomKind::Mesh | GeomKind::Hfield))
            {
                return Err(DiffError::Input(format!(
                    "{self:?}: geom '{}' of body '{}' is a {}; only primitive shapes can be scaled",
                    g.name,
                    model.bodies[b].name,
                    g.kind.name()
                )));
            }
        }
        Ok(())
    }
}

/// What the per-interval controls of a differentiable rollout drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlKind {
    /// The actuator controls ([`Simulator::ctrl`], nu values): motor inputs
    /// (before the gear) or servo target positions (rad or m).
    Actuators,
    /// Applied generalized forces ([`Simulator::applied`], nv values; N or
    /// N·m): for a free joint a world-frame force at the body origin, then a
    /// body-frame torque. For free bodies without actuators.
    Applied,
}

impl ControlKind {
    /// Number of control values per interval for `model`.
    pub fn len(self, model: &Model) -> usize {
        match self {
            ControlKind::Actuators => model.nu(),
            ControlKind::Applied => model.nv,
        }
    }
}

/// Writes control values (`u.len()` = [`ControlKind::len`]) into `sim`.
pub(crate) fn set_controls<T: Real>(sim: &mut Simulator<T>, kind: ControlKind, u: impl Iterator<Item = T>) {
    let dst = match kind {
        ControlKind::Actuators => &mut sim.ctrl,
        ControlKind::Applied => &mut sim.applied,
    };
    for (d, s) in dst.iter_mut().zip(u) {
        *d = s;
    }
}

/// Resets every parameter of `sim` to the model (multipliers 1), then writes `values` for `params`.
pub(crate) fn set_params<T: Real>(sim: &mut Simulator<T>, params: &[Param], values: impl Iterator<Item = T>) {
    sim.data.mass_scale = T::one();
    sim.materials = Default::default();
    sim.data.geom_size_scale.iter_mut().for_each(|s| *s = T::one());
    sim.data.geom_offset_scale.iter_mut().for_each(|s| *s = T::one());
    for (p, x) in params.iter().zip(values) {
        match *p {
            Param::MassScale => sim.data.mass_scale = x,
            Param::Stiffness => sim.materials.stiffness = x,
            Param::Dissipation => sim.materials.dissipation = x,
            Param::MuStatic => sim.materials.mu_static = x,
            Param::MuDynamic => sim.materials.mu_dynamic = x,
            Param::Friction => {
                sim.materials.mu_static = x;
                sim.materials.mu_dynamic = x;
            }
            Param::GeomSize(g) => sim.data.geom_size_scale[g] = x,
            Param::BodyGeomSize(b) | Param::BodyGeomOffset(b) => {
                let scales = match *p {
                    Param::BodyGeomSize(_) => &mut sim.data.geom_size_scale,
                    _ => &mut sim.data.geom_offset_scale,
                };
                for (s, g) in scales.iter_mut().zip(&sim.model.geoms) {
                    if g.body == b {
                        *s = x;
                    }
                }
            }
        }
    }
}
