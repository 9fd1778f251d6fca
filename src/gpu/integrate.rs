//! Kernels of `kernels/integrate.wgsl`, the twin of
//! `src/dynamics/integrate.rs` ([`crate::dynamics::integrate_q`]).

use super::buffers::BufferSource;
use super::compose::KernelFile;
use super::context::GpuContext;
use super::data::DATA;
use super::error::GpuError;
use super::kernel::Kernel;
use crate::model::Model;

/// `kernels/integrate.wgsl`.
pub static FILE: KernelFile = KernelFile::new("integrate", include_str!("../../kernels/integrate.wgsl"), &[&DATA]);

/// The position update q ← q ⊕ h·N(q)·v with each world's own step `h`,
/// one thread per (world, joint).
#[derive(Debug)]
pub struct IntegrateKernels {
    integrate_q: Kernel,
}

impl IntegrateKernels {
    /// Creates the kernel for `nworld` worlds of `model` over `sources`.
    pub fn new(
        ctx: &GpuContext,
        model: &Model,
        nworld: usize,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        Ok(Self { integrate_q: Kernel::new(ctx, &FILE, "integrate_q", nworld * model.joints.len(), sources)? })
    }

    /// Encodes [`crate::dynamics::integrate_q`] (reads v and h, updates q in place).
    pub fn encode_integrate_q(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.integrate_q.encode(pass);
    }
}
