//! Kernels of `kernels/integrate.wgsl`, the twin of
//! `src/dynamics/integrate.rs` ([`crate::dynamics::integrate_q`]).

use super::GpuError;
use super::buffers::BufferSource;
use super::context::GpuContext;
use super::shaders::Kernel;
use crate::model::Model;

/// The position update q ← q ⊕ h·N(q)·v with each world's own step `h`,
/// one thread per (world, joint).
#[derive(Debug)]
pub struct IntegrateKernels {
    integrate_q: Kernel,
}

impl IntegrateKernels {
    /// Kernel file stem.
    pub const STAGE: &'static str = "integrate";

    /// Creates the kernel for `nworld` worlds of `model` over `sources`.
    pub fn new(
        ctx: &GpuContext,
        model: &Model,
        nworld: usize,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        Ok(Self { integrate_q: Kernel::new(ctx, Self::STAGE, "integrate_q", nworld * model.joints.len(), sources)? })
    }

    /// Encodes [`crate::dynamics::integrate_q`] (reads v and h, updates q in place).
    pub fn encode_integrate_q(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.integrate_q.encode(pass);
    }
}
