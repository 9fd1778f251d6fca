//! Typed storage buffers, the per-world state ([`Field`], [`GpuData`]) and
//! readback through a reused staging buffer.
//!
//! Per-world arrays are flat `f32`, world first: field `f` of world `w` is
//! the block `[w · n · width, (w + 1) · n · width)` with `(n, width)` =
//! [`Field::shape`], laid out like the matching `Data<f32>` field (vectors
//! xyz, quaternions wxyz, matrices row-major, spatial vectors [ang; lin],
//! spatial inertias [m, h, I row-major]); [`Field::from_data`] writes that
//! layout from a CPU `Data`. All buffers are created up front: nothing is
//! allocated while stepping.

use super::GpuError;
use super::context::GpuContext;
use crate::dynamics::Data;
use crate::math::{Mat3, Motion, Real, SpatialInertia, Vec3};
use crate::model::Model;
use bytemuck::Pod;
use std::marker::PhantomData;
use std::sync::Mutex;

/// Something that provides GPU buffers by WGSL variable name (see
/// `kernels/data.wgsl`); [`super::Kernel::new`] binds from a list of these.
pub trait BufferSource {
    /// The buffer bound to the WGSL variable `name`, if this source has it.
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer>;
}

/// A storage buffer of `len` elements of `T` (a `bytemuck::Pod` type whose
/// layout matches the WGSL element type).
pub struct StorageBuffer<T> {
    buffer: wgpu::Buffer,
    len: usize,
    _t: PhantomData<T>,
}

impl<T> std::fmt::Debug for StorageBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StorageBuffer<{}>[{}]", std::any::type_name::<T>(), self.len)
    }
}

impl<T: Pod> StorageBuffer<T> {
    /// Smallest allocation (bytes): more than any WGSL element type in `data.wgsl`.
    pub const MIN_BYTES: u64 = 256;

    /// A zeroed buffer of `len` elements. At least [`Self::MIN_BYTES`] are
    /// allocated: a binding must hold one element of the WGSL array type,
    /// which can be larger than `T` (a `PInertia` over `f32`s), even when
    /// the model has none (no sites). Errors when it exceeds the device's
    /// buffer or binding size limits.
    pub fn new(ctx: &GpuContext, label: &str, len: usize) -> Result<Self, GpuError> {
        let elem = size_of::<T>() as u64;
        let bytes = (len as u64).saturating_mul(elem).max(Self::MIN_BYTES).next_multiple_of(4);
        let lim = ctx.limits();
        for (limit, available) in [
            ("max_storage_buffer_binding_size", lim.max_storage_buffer_binding_size),
            ("max_buffer_size", lim.max_buffer_size),
        ] {
            if bytes > available {
                return Err(GpuError::Limits {
                    adapter: format!("{} (buffer '{label}')", ctx.adapter_name()),
                    limit,
                    required: bytes,
                    available,
                });
            }
        }
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Ok(Self { buffer, len, _t: PhantomData })
    }

    /// A buffer holding `data`.
    pub fn from_slice(ctx: &GpuContext, label: &str, data: &[T]) -> Result<Self, GpuError> {
        let b = Self::new(ctx, label, data.len())?;
        b.write(ctx, data)?;
        Ok(b)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The wgpu buffer.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Uploads all elements (`data.len()` must equal [`Self::len`]).
    pub fn write(&self, ctx: &GpuContext, data: &[T]) -> Result<(), GpuError> {
        if data.len() != self.len {
            return Err(GpuError::Length { what: "buffer upload", expected: self.len, got: data.len() });
        }
        self.write_at(ctx, 0, data)
    }

    /// Uploads `data` at element offset `start` (e.g. one world's block).
    pub fn write_at(&self, ctx: &GpuContext, start: usize, data: &[T]) -> Result<(), GpuError> {
        if start + data.len() > self.len {
            return Err(GpuError::Length { what: "buffer upload (end)", expected: self.len, got: start + data.len() });
        }
        if !data.is_empty() {
            ctx.queue.write_buffer(&self.buffer, (start * size_of::<T>()) as u64, bytemuck::cast_slice(data));
        }
        Ok(())
    }

    /// Sets every element to `value` (e.g. NaN before a parity test, so
    /// that values a kernel fails to write are caught).
    pub fn fill(&self, ctx: &GpuContext, value: T) -> Result<(), GpuError> {
        self.write(ctx, &vec![value; self.len])
    }

    /// Downloads all elements (waits for submitted work).
    pub fn read(&self, ctx: &GpuContext, readback: &Readback) -> Result<Vec<T>, GpuError> {
        self.read_range(ctx, readback, 0, self.len)
    }

    /// Downloads `len` elements from element `start` (waits for submitted work).
    pub fn read_range(
        &self,
        ctx: &GpuContext,
        readback: &Readback,
        start: usize,
        len: usize,
    ) -> Result<Vec<T>, GpuError> {
        let mut out = vec![T::zeroed(); len];
        self.read_range_into(ctx, readback, start, &mut out)?;
        Ok(out)
    }

    /// Downloads `out.len()` elements from element `start` into `out`
    /// (no allocation; waits for submitted work).
    pub fn read_range_into(
        &self,
        ctx: &GpuContext,
        readback: &Readback,
        start: usize,
        out: &mut [T],
    ) -> Result<(), GpuError> {
        if start + out.len() > self.len {
            return Err(GpuError::Length { what: "buffer read (end)", expected: self.len, got: start + out.len() });
        }
        readback.read_into(ctx, &self.buffer, (start * size_of::<T>()) as u64, bytemuck::cast_slice_mut(out))
    }
}

/// Copies GPU buffers to the host through one staging buffer, reused (and
/// reads larger than it go in chunks), so reading never allocates GPU memory.
pub struct Readback {
    staging: Mutex<wgpu::Buffer>,
    size: u64,
}

impl std::fmt::Debug for Readback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Readback({} bytes)", self.size)
    }
}

impl Readback {
    /// Default staging size (bytes): large enough for most reads in one go.
    pub const DEFAULT_SIZE: u64 = 16 << 20;

    /// A staging buffer of `size` bytes (rounded up to a multiple of 4).
    pub fn new(ctx: &GpuContext, size: u64) -> Self {
        let size = size.max(4).next_multiple_of(4).min(ctx.limits().max_buffer_size);
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback staging"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Self { staging: Mutex::new(staging), size }
    }

    /// Copies `out.len()` bytes of `src` from byte `src_offset` into `out`
    /// (offset and length multiples of 4).
    pub fn read_into(
        &self,
        ctx: &GpuContext,
        src: &wgpu::Buffer,
        src_offset: u64,
        out: &mut [u8],
    ) -> Result<(), GpuError> {
        let staging = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        let total = out.len() as u64;
        let mut offset = 0u64;
        while offset < total {
            let n = (total - offset).min(self.size);
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("readback") });
            encoder.copy_buffer_to_buffer(src, src_offset + offset, &staging, 0, n);
            ctx.submit([encoder.finish()]);
            ctx.counter_cells().wait(n);
            let (tx, rx) = std::sync::mpsc::channel();
            staging.slice(..n).map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
            ctx.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| GpuError::Readback(format!("waiting for the GPU: {e}")))?;
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(GpuError::Readback(e.to_string())),
                Err(_) => return Err(GpuError::Readback("the map callback never ran".into())),
            }
            {
                let view = staging
                    .slice(..n)
                    .get_mapped_range()
                    .map_err(|e| GpuError::Readback(format!("mapping the staging buffer: {e}")))?;
                out[offset as usize..(offset + n) as usize].copy_from_slice(&view);
            }
            staging.unmap();
            offset += n;
        }
        ctx.check_errors()
    }
}

/// A per-world `f32` array: state, kinematics and dynamics outputs, scratch.
/// The WGSL variable of the same [`Field::name`] is declared in `kernels/data.wgsl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// Positions (nq).
    Q,
    /// Velocities (nv).
    V,
    /// Step size of each world (1; s).
    H,
    /// Body frame origins (nbody × 3; m).
    Xpos,
    /// Body orientations (nbody × 4; w, x, y, z).
    Xquat,
    /// Body rotation matrices (nbody × 9, row-major).
    Xmat,
    /// Body centres of mass (nbody × 3; m).
    Xipos,
    /// Joint anchors (njnt × 3; m).
    Xanchor,
    /// Joint axes (njnt × 3).
    Xaxis,
    /// Geom positions (ngeom × 3; m).
    GeomXpos,
    /// Geom rotation matrices (ngeom × 9, row-major).
    GeomXmat,
    /// Site positions (nsite × 3; m).
    SiteXpos,
    /// Site orientations (nsite × 4; w, x, y, z).
    SiteXquat,
    /// Reference point of each body's spatial quantities (nbody × 3; m).
    BodyRef,
    /// Spatial inertias about `body_ref` (nbody × 13: kg, kg·m, kg·m² row-major).
    Cinert,
    /// Motion subspaces (nv × 6: ang, lin).
    Cdof,
    /// Body spatial velocities (nbody × 6: rad/s, m/s).
    Cvel,
    /// Time derivatives of `cdof` (nv × 6).
    CdofDot,
    /// Mass matrix with armature (nv × nv, row-major; kg·m² / kg).
    Mass,
    /// Bias forces (nv; N·m or N).
    Bias,
    /// Passive spring forces (nv; N·m or N).
    Passive,
    /// Scratch: composite inertias (nbody × 13).
    Crb,
    /// Scratch: bias-recursion accelerations (nbody × 6).
    Cacc,
    /// Scratch: bias-recursion forces (nbody × 6).
    Cfrc,
}

impl Field {
    /// Every field, in `data.wgsl` order.
    pub const ALL: [Field; 24] = [
        Field::Q,
        Field::V,
        Field::H,
        Field::Xpos,
        Field::Xquat,
        Field::Xmat,
        Field::Xipos,
        Field::Xanchor,
        Field::Xaxis,
        Field::GeomXpos,
        Field::GeomXmat,
        Field::SiteXpos,
        Field::SiteXquat,
        Field::BodyRef,
        Field::Cinert,
        Field::Cdof,
        Field::Cvel,
        Field::CdofDot,
        Field::Mass,
        Field::Bias,
        Field::Passive,
        Field::Crb,
        Field::Cacc,
        Field::Cfrc,
    ];

    /// Inputs the host sets (everything else is computed by kernels).
    pub fn is_input(self) -> bool {
        matches!(self, Field::Q | Field::V | Field::H)
    }

    /// The WGSL variable name (= the `Data` field name).
    pub fn name(self) -> &'static str {
        match self {
            Field::Q => "q",
            Field::V => "v",
            Field::H => "h",
            Field::Xpos => "xpos",
            Field::Xquat => "xquat",
            Field::Xmat => "xmat",
            Field::Xipos => "xipos",
            Field::Xanchor => "xanchor",
            Field::Xaxis => "xaxis",
            Field::GeomXpos => "geom_xpos",
            Field::GeomXmat => "geom_xmat",
            Field::SiteXpos => "site_xpos",
            Field::SiteXquat => "site_xquat",
            Field::BodyRef => "body_ref",
            Field::Cinert => "cinert",
            Field::Cdof => "cdof",
            Field::Cvel => "cvel",
            Field::CdofDot => "cdof_dot",
            Field::Mass => "mass",
            Field::Bias => "bias",
            Field::Passive => "passive",
            Field::Crb => "crb",
            Field::Cacc => "cacc",
            Field::Cfrc => "cfrc",
        }
    }

    /// (items, floats per item) of one world.
    pub fn shape(self, model: &Model) -> (usize, usize) {
        let (nb, nj, nv) = (model.bodies.len(), model.joints.len(), model.nv);
        match self {
            Field::Q => (model.nq, 1),
            Field::V | Field::Bias | Field::Passive => (nv, 1),
            Field::H => (1, 1),
            Field::Xpos | Field::Xipos | Field::BodyRef => (nb, 3),
            Field::Xquat => (nb, 4),
            Field::Xmat => (nb, 9),
            Field::Xanchor | Field::Xaxis => (nj, 3),
            Field::GeomXpos => (model.geoms.len(), 3),
            Field::GeomXmat => (model.geoms.len(), 9),
            Field::SiteXpos => (model.sites.len(), 3),
            Field::SiteXquat => (model.sites.len(), 4),
            Field::Cinert | Field::Crb => (nb, 13),
            Field::Cdof | Field::CdofDot => (nv, 6),
            Field::Cvel | Field::Cacc | Field::Cfrc => (nb, 6),
            Field::Mass => (nv, nv),
        }
    }

    /// Floats per world.
    pub fn per_world(self, model: &Model) -> usize {
        let (n, w) = self.shape(model);
        n * w
    }

    /// This field of a CPU `Data` in the GPU layout of one world (`None` for
    /// [`Field::H`], which `Data` does not hold).
    pub fn from_data<T: Real>(self, data: &Data<T>) -> Option<Vec<T>> {
        fn v3s<T: Real>(a: &[Vec3<T>]) -> Vec<T> {
            a.iter().flat_map(|v| v.to_array()).collect()
        }
        fn m3s<T: Real>(a: &[Mat3<T>]) -> Vec<T> {
            a.iter().flat_map(|m| m.m.into_iter().flatten()).collect()
        }
        fn motions<T: Real>(a: &[Motion<T>]) -> Vec<T> {
            a.iter().flat_map(|m| m.ang.to_array().into_iter().chain(m.lin.to_array())).collect()
        }
        fn forces<T: Real>(a: &[crate::math::Force<T>]) -> Vec<T> {
            a.iter().flat_map(|m| m.ang.to_array().into_iter().chain(m.lin.to_array())).collect()
        }
        fn inertias<T: Real>(a: &[SpatialInertia<T>]) -> Vec<T> {
            a.iter()
                .flat_map(|s| std::iter::once(s.m).chain(s.h.to_array()).chain(s.i.m.into_iter().flatten()))
                .collect()
        }
        Some(match self {
            Field::Q => data.q.clone(),
            Field::V => data.v.clone(),
            Field::H => return None,
            Field::Xpos => v3s(&data.xpos),
            Field::Xquat => data.xquat.iter().flat_map(|q| q.to_array()).collect(),
            Field::Xmat => m3s(&data.xmat),
            Field::Xipos => v3s(&data.xipos),
            Field::Xanchor => v3s(&data.xanchor),
            Field::Xaxis => v3s(&data.xaxis),
            Field::GeomXpos => v3s(&data.geom_xpos),
            Field::GeomXmat => m3s(&data.geom_xmat),
            Field::SiteXpos => v3s(&data.site_xpos),
            Field::SiteXquat => data.site_xquat.iter().flat_map(|q| q.to_array()).collect(),
            Field::BodyRef => v3s(&data.body_ref),
            Field::Cinert => inertias(&data.cinert),
            Field::Cdof => motions(&data.cdof),
            Field::Cvel => motions(&data.cvel),
            Field::CdofDot => motions(&data.cdof_dot),
            Field::Mass => data.mass.clone(),
            Field::Bias => data.bias.clone(),
            Field::Passive => data.passive.clone(),
            Field::Crb => inertias(&data.crb),
            Field::Cacc => motions(&data.cacc),
            Field::Cfrc => forces(&data.cfrc),
        })
    }
}

/// Every [`Field`] of `nworld` worlds, one storage buffer each.
pub struct GpuData {
    buffers: Vec<StorageBuffer<f32>>,
    nworld: usize,
}

impl std::fmt::Debug for GpuData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuData(nworld = {})", self.nworld)
    }
}

impl GpuData {
    /// Zeroed buffers for `nworld` worlds of `model`.
    pub fn new(ctx: &GpuContext, model: &Model, nworld: usize) -> Result<Self, GpuError> {
        let buffers = Field::ALL
            .iter()
            .map(|f| StorageBuffer::new(ctx, f.name(), nworld * f.per_world(model)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { buffers, nworld })
    }

    /// The buffer of `field` (nworld × per-world floats).
    pub fn get(&self, field: Field) -> &StorageBuffer<f32> {
        &self.buffers[Field::ALL.iter().position(|f| *f == field).expect("Field::ALL lists every field")]
    }

    /// Number of worlds.
    pub fn nworld(&self) -> usize {
        self.nworld
    }
}

impl BufferSource for GpuData {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        Field::ALL.iter().position(|f| f.name() == name).map(|i| self.buffers[i].buffer())
    }
}
