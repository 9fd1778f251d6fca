//! Kernels of `kernels/kinematics.wgsl`, the twin of
//! `src/dynamics/kinematics.rs` ([`crate::dynamics::kinematics`] and
//! [`crate::dynamics::velocities`]).

use super::buffers::BufferSource;
use super::compose::KernelFile;
use super::context::GpuContext;
use super::data::DATA;
use super::error::GpuError;
use super::kernel::Kernel;
use crate::model::Model;

/// `kernels/kinematics.wgsl`.
pub static FILE: KernelFile = KernelFile::new("kinematics", include_str!("../../kernels/kinematics.wgsl"), &[&DATA]);

/// The kinematics stage: body frames (one thread per world), then geom and
/// site poses and spatial inertias / motion subspaces (one thread per item),
/// and body velocities (one thread per world).
#[derive(Debug)]
pub struct KinematicsKernels {
    kinematics: Kernel,
    geom_poses: Kernel,
    site_poses: Kernel,
    com_quantities: Kernel,
    velocities: Kernel,
}

impl KinematicsKernels {
    /// Creates the kernels for `nworld` worlds of `model` over `sources`.
    pub fn new(
        ctx: &GpuContext,
        model: &Model,
        nworld: usize,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        let k = |entry, items: usize| Kernel::new(ctx, &FILE, entry, nworld * items, sources);
        Ok(Self {
            kinematics: k("kinematics", 1)?,
            geom_poses: k("geom_poses", model.geoms.len())?,
            site_poses: k("site_poses", model.sites.len())?,
            com_quantities: k("com_quantities", model.bodies.len())?,
            velocities: k("velocities", 1)?,
        })
    }

    /// Encodes [`crate::dynamics::kinematics`]: body, joint, geom and site
    /// poses, `body_ref`, `cinert`, `cdof` at q.
    pub fn encode_kinematics(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.kinematics.encode(pass);
        self.geom_poses.encode(pass);
        self.site_poses.encode(pass);
        self.com_quantities.encode(pass);
    }

    /// Encodes [`crate::dynamics::velocities`]: `cvel` and `cdof_dot` at v.
    pub fn encode_velocities(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.velocities.encode(pass);
    }
}
