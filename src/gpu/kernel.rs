//! [`Kernel`]: one compute entry point of a composed [`Module`], with its
//! pipeline (cached on the context), its bind group (created once, over
//! the buffers found by name in the given [`BufferSource`]s) and its launch
//! size. Device layer: knows no stage.

use super::buffers::BufferSource;
use super::compose::Module;
use super::context::{Counters, GpuContext};
use super::error::GpuError;
use std::sync::Arc;

/// Threads per workgroup of every kernel (`WORKGROUP_SIZE` in `kernels/common.wgsl`).
pub const WORKGROUP_SIZE: u32 = 64;

/// Workgroups (x, y) for a 1D launch of `threads` threads, split over y when
/// x would exceed `max_per_dim` (the kernels' `thread_index` undoes this).
pub fn dispatch_size(threads: u32, max_per_dim: u32) -> (u32, u32) {
    let groups = threads.div_ceil(WORKGROUP_SIZE);
    if groups <= max_per_dim { (groups, 1) } else { (max_per_dim, groups.div_ceil(max_per_dim)) }
}

/// One compute entry point ready to encode: pipeline (cached on the
/// context), bind group (created once, over this instance's buffers) and
/// the number of threads of one launch.
pub struct Kernel {
    module: String,
    entry: String,
    pipeline: Arc<wgpu::ComputePipeline>,
    bind_group: wgpu::BindGroup,
    workgroups: (u32, u32),
    counters: Arc<Counters>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({}::{}, workgroups {:?})", self.module, self.entry, self.workgroups)
    }
}

impl Kernel {
    /// Creates the kernel `module::entry` (a [`Module`], or a
    /// [`super::compose::KernelFile`] as it is) launched over `threads`
    /// threads (e.g. nworld, or nworld × nbody), binding each variable it
    /// uses to the buffer of the same name found first in `sources`.
    pub fn new(
        ctx: &GpuContext,
        module: impl Into<Module>,
        entry: &str,
        threads: usize,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        let module = module.into();
        let stage = module.name();
        let compiled = ctx.module(&module)?;
        let info = compiled.info.entries.iter().find(|e| e.name == entry).ok_or_else(|| GpuError::Shader {
            stage: stage.into(),
            message: format!("no compute entry point '{entry}'"),
        })?;
        let limits = ctx.limits();
        if info.storage_buffers() > limits.max_storage_buffers_per_shader_stage {
            return Err(GpuError::Limits {
                adapter: ctx.adapter_name().into(),
                limit: "max_storage_buffers_per_shader_stage",
                required: info.storage_buffers() as u64,
                available: limits.max_storage_buffers_per_shader_stage as u64,
            });
        }
        let threads = u32::try_from(threads).map_err(|_| GpuError::Limits {
            adapter: ctx.adapter_name().into(),
            limit: "threads per launch (u32)",
            required: threads as u64,
            available: u32::MAX as u64,
        })?;
        let workgroups = dispatch_size(threads, limits.max_compute_workgroups_per_dimension);
        if workgroups.1 > limits.max_compute_workgroups_per_dimension {
            return Err(GpuError::Limits {
                adapter: ctx.adapter_name().into(),
                limit: "max_compute_workgroups_per_dimension",
                required: workgroups.1 as u64,
                available: limits.max_compute_workgroups_per_dimension as u64,
            });
        }
        let pipeline = ctx.pipeline(&module, entry)?;
        let mut entries = Vec::with_capacity(info.bindings.len());
        for b in &info.bindings {
            let buffer = sources.iter().find_map(|s| s.buffer(&b.name)).ok_or_else(|| GpuError::Binding {
                stage: stage.into(),
                entry: entry.into(),
                name: b.name.clone(),
            })?;
            entries.push(wgpu::BindGroupEntry { binding: b.binding, resource: buffer.as_entire_binding() });
        }
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(entry),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Shader { stage: stage.into(), message: format!("binding '{entry}': {e}") });
        }
        Ok(Self {
            module: stage.to_string(),
            entry: entry.to_string(),
            pipeline,
            bind_group,
            workgroups,
            counters: ctx.counter_cells().clone(),
        })
    }

    /// Records one launch into `pass` (nothing when there are no threads).
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>) {
        if self.workgroups.0 == 0 {
            return;
        }
        self.counters.dispatch();
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(self.workgroups.0, self.workgroups.1, 1);
    }

    /// Records one launch into `pass` whose workgroups (x, y, z) the device
    /// reads from `args` at byte `offset` when it runs (sized by an earlier
    /// launch; zero workgroups run nothing). `args` must have
    /// [`wgpu::BufferUsages::INDIRECT`].
    pub fn encode_indirect(&self, pass: &mut wgpu::ComputePass<'_>, args: &wgpu::Buffer, offset: u64) {
        self.counters.dispatch();
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups_indirect(args, offset);
    }

    /// `module::entry`.
    pub fn name(&self) -> String {
        format!("{}::{}", self.module, self.entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_size_splits_large_launches() {
        assert_eq!(dispatch_size(0, 65535), (0, 1));
        assert_eq!(dispatch_size(1, 65535), (1, 1));
        assert_eq!(dispatch_size(64, 65535), (1, 1));
        assert_eq!(dispatch_size(65, 65535), (2, 1));
        let (x, y) = dispatch_size(10_000_000, 65535);
        assert!(x <= 65535 && (x as u64) * (y as u64) * 64 >= 10_000_000);
    }
}
