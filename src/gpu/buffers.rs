//! Typed storage buffers, uniforms, the [`BufferSource`] trait by which
//! kernels find their buffers by name, and readback through a reused
//! staging buffer. Device layer: knows no stage. All buffers are created up
//! front: nothing is allocated while stepping.

use super::context::GpuContext;
use super::error::GpuError;
use bytemuck::Pod;
use std::marker::PhantomData;
use std::sync::Mutex;

/// Something that provides GPU buffers by WGSL variable name (see
/// `kernels/data.wgsl`); [`super::kernel::Kernel::new`] binds from a list of these.
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

    /// Staging size (bytes).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Records `before` (e.g. a compute pass that gathers what is read),
    /// copies every part's byte range into the staging buffer, submits once
    /// and waits once: several buffers read back in one round trip. Each
    /// part is (source, byte offset, destination), offsets and lengths
    /// multiples of 4, together at most [`Self::size`] bytes.
    pub fn read_parts(
        &self,
        ctx: &GpuContext,
        label: &str,
        before: impl FnOnce(&mut wgpu::CommandEncoder),
        parts: &mut [(&wgpu::Buffer, u64, &mut [u8])],
    ) -> Result<(), GpuError> {
        let total: u64 = parts.iter().map(|p| p.2.len() as u64).sum();
        if total > self.size {
            return Err(GpuError::Readback(format!(
                "{label}: {total} bytes exceed the {} byte staging buffer",
                self.size
            )));
        }
        let staging = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        before(&mut encoder);
        let mut at = 0u64;
        for (src, offset, out) in parts.iter() {
            let n = out.len() as u64;
            if n > 0 {
                encoder.copy_buffer_to_buffer(src, *offset, &staging, at, n);
            }
            at += n;
        }
        ctx.submit([encoder.finish()]);
        if total == 0 {
            return ctx.check_errors();
        }
        ctx.counter_cells().wait(total);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.slice(..total).map_async(wgpu::MapMode::Read, move |r| {
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
                .slice(..total)
                .get_mapped_range()
                .map_err(|e| GpuError::Readback(format!("mapping the staging buffer: {e}")))?;
            let mut at = 0usize;
            for (_, _, out) in parts.iter_mut() {
                out.copy_from_slice(&view[at..at + out.len()]);
                at += out.len();
            }
        }
        staging.unmap();
        ctx.check_errors()
    }

    /// Copies `out.len()` bytes of `src` from byte `src_offset` into `out`
    /// (offset and length multiples of 4), in chunks of at most [`Self::size`]
    /// bytes (one wait each).
    pub fn read_into(
        &self,
        ctx: &GpuContext,
        src: &wgpu::Buffer,
        src_offset: u64,
        out: &mut [u8],
    ) -> Result<(), GpuError> {
        for (k, chunk) in out.chunks_mut(self.size as usize).enumerate() {
            let at = src_offset + k as u64 * self.size;
            self.read_parts(ctx, "readback", |_| {}, &mut [(src, at, chunk)])?;
        }
        ctx.check_errors()
    }
}

/// A uniform buffer holding one `T` (its size rounded up to 16 bytes).
pub fn uniform_buffer<T: Pod>(ctx: &GpuContext, label: &str, value: &T) -> wgpu::Buffer {
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (size_of::<T>() as u64).next_multiple_of(16),
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    ctx.queue.write_buffer(&buffer, 0, bytemuck::bytes_of(value));
    buffer
}
