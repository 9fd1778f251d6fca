//! Kernels of `kernels/rnea.wgsl`, the twin of `src/dynamics/rnea.rs`
//! ([`crate::dynamics::mass_matrix`], [`crate::dynamics::bias_forces`],
//! [`crate::dynamics::passive_forces`]).

use super::buffers::BufferSource;
use super::compose::KernelFile;
use super::context::GpuContext;
use super::data::DATA;
use super::error::GpuError;
use super::kernel::Kernel;

/// `kernels/rnea.wgsl`.
pub static FILE: KernelFile = KernelFile::new("rnea", include_str!("../../kernels/rnea.wgsl"), &[&DATA]);

/// The dynamics stage: mass matrix, bias forces and passive forces, each
/// one thread per world.
#[derive(Debug)]
pub struct RneaKernels {
    mass_matrix: Kernel,
    bias_forces: Kernel,
    passive_forces: Kernel,
}

impl RneaKernels {
    /// Creates the kernels for `nworld` worlds over `sources`.
    pub fn new(ctx: &GpuContext, nworld: usize, sources: &[&dyn BufferSource]) -> Result<Self, GpuError> {
        let k = |entry| Kernel::new(ctx, &FILE, entry, nworld, sources);
        Ok(Self {
            mass_matrix: k("mass_matrix")?,
            bias_forces: k("bias_forces")?,
            passive_forces: k("passive_forces")?,
        })
    }

    /// Encodes [`crate::dynamics::mass_matrix`] (needs kinematics).
    pub fn encode_mass_matrix(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.mass_matrix.encode(pass);
    }

    /// Encodes [`crate::dynamics::bias_forces`] (needs kinematics and velocities).
    pub fn encode_bias_forces(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.bias_forces.encode(pass);
    }

    /// Encodes [`crate::dynamics::passive_forces`].
    pub fn encode_passive_forces(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.passive_forces.encode(pass);
    }
}
