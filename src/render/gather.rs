//! The gather kernel (`kernels/render_gather.wgsl`): a [`GpuBatch`]'s geom
//! poses and camera frames, written on the device where the rasterizer
//! reads them.

use crate::gpu::buffers::{BufferSource, StorageBuffer};
use crate::gpu::compose::KernelFile;
use crate::gpu::data::DATA;
use crate::gpu::{GpuBatch, GpuContext, GpuError, Kernel};
use crate::render::GpuView;

/// `kernels/render_gather.wgsl`, after the binding table.
pub static FILE: KernelFile =
    KernelFile::new("render_gather", include_str!("../../kernels/render_gather.wgsl"), &[&DATA]);

/// The renderer's buffers, by their WGSL names.
struct Buffers<'a> {
    rig: &'a wgpu::Buffer,
    pose: &'a StorageBuffer<f32>,
    view: &'a StorageBuffer<GpuView>,
}

impl BufferSource for Buffers<'_> {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        match name {
            "render_rig" => Some(self.rig),
            "render_pose" => Some(self.pose.buffer()),
            "render_view" => Some(self.view.buffer()),
            _ => None,
        }
    }
}

/// The gather kernel bound to one batch's buffers.
pub(super) struct Gather {
    pub kernel: Kernel,
    /// The batch's `world_data`, to tell whether a batch is the one bound.
    world_data: wgpu::Buffer,
}

fn world_data(batch: &GpuBatch) -> Option<wgpu::Buffer> {
    batch.with_state_sources(|s| s.iter().find_map(|b| b.buffer("world_data")).cloned())
}

impl Gather {
    /// The kernel reading `batch` and writing the renderer's buffers.
    pub fn new(
        ctx: &GpuContext,
        batch: &GpuBatch,
        rig: &wgpu::Buffer,
        pose: &StorageBuffer<f32>,
        view: &StorageBuffer<GpuView>,
    ) -> Result<Self, GpuError> {
        use crate::batch::Batch;
        let own = Buffers { rig, pose, view };
        let kernel = batch.with_state_sources(|[a, b, c, d]| {
            let sources: [&dyn BufferSource; 5] = [&own, a, b, c, d];
            Kernel::new(ctx, &FILE, "render_gather", batch.nworld(), &sources)
        })?;
        let world_data = world_data(batch).ok_or_else(|| GpuError::Binding {
            stage: "render_gather".into(),
            entry: "render_gather".into(),
            name: "world_data".into(),
        })?;
        Ok(Self { kernel, world_data })
    }

    /// Whether this kernel reads `batch`.
    pub fn is_for(&self, batch: &GpuBatch) -> bool {
        world_data(batch).is_some_and(|b| b == self.world_data)
    }
}
