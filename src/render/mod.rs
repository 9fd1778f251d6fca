//! An offscreen rasterizer of a model's visual geoms: colour, depth and
//! segmentation frames of many worlds at once, on any wgpu adapter
//! (lavapipe included).
//!
//! A [`Renderer`] is made for one model, a number of worlds and a frame
//! size. Every visible geom ([`Model::geom_visible`]: groups 0–2, alpha >
//! 0, as MuJoCo's default view) is tessellated once
//! ([`geometry::model_triangles`]: planes, with MJCF checker textures;
//! spheres, capsules, cylinders and ellipsoids with MuJoCo's 28 slices;
//! boxes; convex meshes as their hulls; height fields) into one vertex
//! buffer, drawn once per world (the world as the instance index) into
//! that world's tile of an atlas texture, the viewport and scissor set to
//! the tile so the rasterizer clips each world's triangles there (a
//! fragment-stage test instead would pay for every world's ground plane
//! across the whole atlas): one render pass for up to (8192 / width) ×
//! (8192 / height) worlds, more passes in the same submission beyond.
//! Each frame holds:
//! - `rgb`: the geom colours ([`Model::geom_look`]) lit by a headlight and
//!   a light from above (no shadows, reflections or fog);
//! - `depth`: the distance along the viewing axis (m), MuJoCo's metric
//!   depth; the far clipping distance where no geom is seen;
//! - `segmentation`: the geom index seen, −1 for the background.
//!
//! Clipping distances are MuJoCo's: 0.01 and 50 model extents
//! ([`Model::statistic`]). Cameras ([`Camera`]) are MuJoCo's free camera
//! or the model's cameras (fixed, `track`, `trackcom`), the same for every
//! world and followed in each world's state.
//!
//! Where the poses come from:
//! - [`Renderer::render_qpos`]: positions of every world (a
//!   [`crate::batch::CpuBatch`]'s `qpos`, a trajectory): the host runs the
//!   kinematics and uploads the geom poses and camera frames;
//! - [`Renderer::render_gpu_batch`]: a [`GpuBatch`]'s device buffers: the
//!   batch's kinematics stage and a gather kernel
//!   (`kernels/render_gather.wgsl`) write the poses and camera frames on
//!   the device, in the same submission as the draw: nothing but the
//!   frames crosses to the host.
//!
//! The renderer is a consumer above the GPU path's layers: it uses the
//! device layer ([`GpuContext`], buffers, [`crate::gpu::Kernel`]) and, for a batch,
//! the batch's state as [`crate::gpu::rl`] does; `src/gpu` does not know
//! it, except the shader table ([`crate::gpu::shaders`]) that lists its
//! kernel files for the checks. All buffers and textures are created with
//! the renderer; rendering records commands, submits once and waits once.
//!
//! ```no_run
//! use cenic::render::{Camera, FreeCamera, Outputs, Renderer};
//! use std::sync::Arc;
//! let model = Arc::new(cenic::scenes::cube_toss());
//! let ctx = Arc::new(cenic::gpu::GpuContext::new()?);
//! let camera = Camera::Free(FreeCamera { lookat: [0.0; 3], distance: 3.0, azimuth: 90.0, elevation: -30.0 });
//! let mut r = Renderer::new(ctx, model.clone(), 16, 64, 64, Outputs::ALL, camera)?;
//! let qpos: Vec<f64> = (0..16).flat_map(|_| model.qpos0.clone()).collect();
//! let frames = r.render_qpos(&qpos)?;
//! assert_eq!(frames.rgb.len(), 16 * 64 * 64 * 3);
//! # Ok::<(), cenic::render::RenderError>(())
//! ```

pub mod camera;
mod gather;
pub mod geometry;

pub use camera::{Camera, CameraFrame, FreeCamera, GpuRig, GpuView, Rig, RigBase};

use crate::dynamics::{Data, kinematics};
use crate::gpu::buffers::StorageBuffer;
use crate::gpu::compose::KernelFile;
use crate::gpu::{GpuBatch, GpuContext, GpuError};
use crate::model::Model;
use bytemuck::{Pod, Zeroable};
use std::sync::Arc;

/// `kernels/render.wgsl`: the vertex and fragment stages (standalone).
pub static RASTER: KernelFile = KernelFile::new("render", include_str!("../../kernels/render.wgsl"), &[]);
pub use gather::FILE as GATHER;

/// WGSL names of the renderer's buffers bound by the gather kernel.
pub const BUFFER_NAMES: [&str; 3] = ["render_rig", "render_pose", "render_view"];

/// An error of the renderer: the device's, or bad input (named).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The device failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// An argument is out of range or does not match the renderer.
    #[error("render: {0}")]
    Invalid(String),
}

/// Which frames to read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outputs {
    /// Colour (RGB, 8 bits each).
    pub rgb: bool,
    /// Depth along the viewing axis (m, f32).
    pub depth: bool,
    /// Geom index seen (−1: none).
    pub segmentation: bool,
}

impl Outputs {
    /// All three.
    pub const ALL: Outputs = Outputs { rgb: true, depth: true, segmentation: true };
    /// Colour only.
    pub const RGB: Outputs = Outputs { rgb: true, depth: false, segmentation: false };
    /// Depth only.
    pub const DEPTH: Outputs = Outputs { rgb: false, depth: true, segmentation: false };
}

/// The frames of every world, rows top to bottom (each world's frame is
/// contiguous; arrays empty when not asked for).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frames {
    /// Worlds.
    pub nworld: usize,
    /// Width (pixels).
    pub width: usize,
    /// Height (pixels).
    pub height: usize,
    /// (nworld, height, width, 3) colour.
    pub rgb: Vec<u8>,
    /// (nworld, height, width) depth along the viewing axis (m).
    pub depth: Vec<f32>,
    /// (nworld, height, width) geom index, −1 for the background.
    pub segmentation: Vec<i32>,
}

impl Frames {
    /// World `w`'s colour frame ((height, width, 3); empty when colour was not read).
    pub fn rgb_of(&self, w: usize) -> &[u8] {
        let n = self.width * self.height * 3;
        self.rgb.get(w * n..(w + 1) * n).unwrap_or(&[])
    }

    /// World `w`'s depth frame ((height, width), m).
    pub fn depth_of(&self, w: usize) -> &[f32] {
        let n = self.width * self.height;
        self.depth.get(w * n..(w + 1) * n).unwrap_or(&[])
    }

    /// Writes world `w`'s colour frame as an 8-bit RGB PNG.
    pub fn write_png(&self, w: usize, path: &std::path::Path) -> std::io::Result<()> {
        write_png(path, self.width, self.height, self.rgb_of(w))
    }
}

/// Writes `rgb` ((height, width, 3)) as an 8-bit RGB PNG.
pub fn write_png(path: &std::path::Path, width: usize, height: usize, rgb: &[u8]) -> std::io::Result<()> {
    if rgb.len() != width * height * 3 {
        return Err(std::io::Error::other(format!("{} bytes is not a {width}×{height} RGB image", rgb.len())));
    }
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut enc = png::Encoder::new(file, width as u32, height as u32);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().map_err(std::io::Error::other)?;
    w.write_image_data(rgb).map_err(std::io::Error::other)?;
    Ok(())
}

/// How a geom is drawn (WGSL `Look`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
struct GpuLook {
    rgba: [f32; 4],
    rgb2: [f32; 4],
    repeat: [f32; 4],
}

/// Settings of one chunk of worlds (WGSL `RenderParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
struct RenderParams {
    ngeom: u32,
    znear: f32,
    zfar: f32,
    aspect: f32,
}

/// One render pass: worlds `first .. first + count` in the atlas.
struct Chunk {
    first: usize,
    count: usize,
    bind_group: wgpu::BindGroup,
    /// Byte offset of the chunk's rows in each staging buffer (per output bytes per pixel).
    row0: u64,
}

/// An atlas target and its staging buffer.
struct Target {
    texture: wgpu::Texture,
    view: wgpu::TextureView,
    /// Bytes per pixel.
    bpp: u32,
    staging: Option<wgpu::Buffer>,
}

/// Background colour (linear RGB).
const BACKGROUND: [f64; 3] = [0.32, 0.42, 0.52];

/// The rasterizer (see the module docs).
pub struct Renderer {
    ctx: Arc<GpuContext>,
    model: Arc<Model>,
    nworld: usize,
    width: u32,
    height: u32,
    outputs: Outputs,
    znear: f32,
    zfar: f32,
    rests: Vec<camera::CameraRest>,
    camera: Camera,
    rig: Rig,
    pipeline: wgpu::RenderPipeline,
    vertices: wgpu::Buffer,
    nvert: u32,
    rig_buffer: wgpu::Buffer,
    pose: StorageBuffer<f32>,
    view: StorageBuffer<GpuView>,
    chunks: Vec<Chunk>,
    cols: u32,
    /// Atlas size (pixels).
    atlas: [u32; 2],
    /// Bytes per atlas row per byte of pixel (padded to 256 bytes per row).
    row_pitch: [u64; 3],
    color: Target,
    depth: Target,
    segment: Target,
    zbuffer: wgpu::TextureView,
    frames: Frames,
    data: Data<f64>,
    host_pose: Vec<f32>,
    host_view: Vec<GpuView>,
    gather: Option<gather::Gather>,
    /// The largest atlas asked for (pixels; clamped to the device's limit).
    atlas_max: [usize; 2],
    detail: geometry::Detail,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("model", &self.model.name)
            .field("nworld", &self.nworld)
            .field("size", &(self.width, self.height))
            .field("chunks", &self.chunks.len())
            .finish_non_exhaustive()
    }
}

impl Renderer {
    /// A renderer of `nworld` worlds of `model` into frames of `width` ×
    /// `height` pixels, reading back `outputs`, seen from `camera`.
    pub fn new(
        ctx: Arc<GpuContext>,
        model: Arc<Model>,
        nworld: usize,
        width: usize,
        height: usize,
        outputs: Outputs,
        camera: Camera,
    ) -> Result<Self, RenderError> {
        let max = ctx.limits().max_texture_dimension_2d as usize;
        Self::build(ctx, model, nworld, width, height, outputs, camera, [max, max], geometry::Detail::MUJOCO)
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        ctx: Arc<GpuContext>,
        model: Arc<Model>,
        nworld: usize,
        width: usize,
        height: usize,
        outputs: Outputs,
        camera: Camera,
        atlas_max: [usize; 2],
        detail: geometry::Detail,
    ) -> Result<Self, RenderError> {
        let detail = detail.check().map_err(RenderError::Invalid)?;
        let max = ctx.limits().max_texture_dimension_2d as usize;
        let (max_w, max_h) = (atlas_max[0].min(max), atlas_max[1].min(max));
        if width == 0 || height == 0 || width > max_w || height > max_h {
            return Err(RenderError::Invalid(format!(
                "frame size {width}×{height} must be 1..={max_w} × 1..={max_h} pixels (the atlas limit on {})",
                ctx.adapter_name()
            )));
        }
        if nworld == 0 {
            return Err(RenderError::Invalid("nworld must be ≥ 1".into()));
        }
        let mut data = Data::<f64>::new(&model);
        data.q.copy_from_slice(&model.qpos0);
        kinematics(&model, &mut data);
        let rests = camera::camera_rests(&model, &data);
        check_camera(&model, &camera)?;
        let rig = Rig::new(&model, &rests, &camera);
        let (_, extent) = model.statistic(&data);
        let (znear, zfar) = (0.01 * extent as f32, 50.0 * extent as f32);
        let ngeom = model.geoms.len();
        let device = &ctx.device;

        // Geometry, looks, per-world poses and views.
        let tris = geometry::model_triangles_with(&model, detail);
        let vertices = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("render vertices"),
            size: (std::mem::size_of_val(tris.as_slice()) as u64).max(64),
            usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        ctx.queue.write_buffer(&vertices, 0, bytemuck::cast_slice(&tris));
        let looks: Vec<GpuLook> = (0..ngeom.max(1))
            .map(|g| {
                if g >= ngeom {
                    return GpuLook::default();
                }
                let l = model.geom_look(g);
                let (rgb2, repeat) = match l.checker {
                    Some((c, r)) => ([c[0], c[1], c[2], 1.0], [r[0], r[1], 0.0, 0.0]),
                    None => ([0.0; 4], [0.0; 4]),
                };
                GpuLook { rgba: l.rgba, rgb2, repeat }
            })
            .collect();
        let look = StorageBuffer::from_slice(&ctx, "render_look", &looks)?;
        let pose = StorageBuffer::<f32>::new(&ctx, "render_pose", nworld * ngeom.max(1) * 12)?;
        let view = StorageBuffer::<GpuView>::new(&ctx, "render_view", nworld)?;
        let rig_buffer = crate::gpu::buffers::uniform_buffer(&ctx, "render_rig", &rig.to_gpu());

        // The atlas: as many tiles per row as fit, as many rows as fit.
        let cols = (max_w / width).min(nworld).max(1) as u32;
        let rows_max = (max_h / height).max(1);
        let per_chunk = cols as usize * rows_max;
        let rows = nworld.div_ceil(cols as usize).min(rows_max) as u32;
        let atlas = [cols * width as u32, rows * height as u32];
        let pitch = |bpp: u64| (atlas[0] as u64 * bpp).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT as u64);
        let row_pitch = [pitch(4), pitch(4), pitch(4)];
        let total_rows: u64 = (0..nworld.div_ceil(per_chunk))
            .map(|c| {
                let count = (nworld - c * per_chunk).min(per_chunk);
                count.div_ceil(cols as usize) as u64 * height as u64
            })
            .sum();
        let target = |label: &str, format: wgpu::TextureFormat, read: bool, k: usize| -> Target {
            let texture = device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size: wgpu::Extent3d { width: atlas[0], height: atlas[1], depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
                view_formats: &[],
            });
            let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
            let staging = read.then(|| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: (total_rows * row_pitch[k]).max(4),
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            });
            Target { texture, view, bpp: 4, staging }
        };
        let color = target("render color", wgpu::TextureFormat::Rgba8Unorm, outputs.rgb, 0);
        let depth = target("render depth", wgpu::TextureFormat::R32Float, outputs.depth, 1);
        let segment = target("render segment", wgpu::TextureFormat::R32Uint, outputs.segmentation, 2);
        let zbuffer = device
            .create_texture(&wgpu::TextureDescriptor {
                label: Some("render z-buffer"),
                size: wgpu::Extent3d { width: atlas[0], height: atlas[1], depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::Depth32Float,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
                view_formats: &[],
            })
            .create_view(&wgpu::TextureViewDescriptor::default());

        // The pipeline.
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("render"),
            source: wgpu::ShaderSource::Wgsl(RASTER.source.into()),
        });
        let attributes = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Uint32];
        let targets = [
            Some(wgpu::ColorTargetState::from(wgpu::TextureFormat::Rgba8Unorm)),
            Some(wgpu::ColorTargetState::from(wgpu::TextureFormat::R32Float)),
            Some(wgpu::ColorTargetState::from(wgpu::TextureFormat::R32Uint)),
        ];
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("render"),
            layout: None,
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("render_vertex"),
                compilation_options: Default::default(),
                buffers: &[Some(wgpu::VertexBufferLayout {
                    array_stride: size_of::<geometry::Vertex>() as u64,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &attributes,
                })],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: Some(wgpu::DepthStencilState {
                format: wgpu::TextureFormat::Depth32Float,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Less),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("render_fragment"),
                compilation_options: Default::default(),
                targets: &targets,
            }),
            multiview_mask: None,
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Shader { stage: "render".into(), message: e.to_string() }.into());
        }

        // One uniform and bind group per chunk.
        let layout = pipeline.get_bind_group_layout(0);
        let mut chunks = vec![];
        let mut row0 = 0u64;
        for first in (0..nworld).step_by(per_chunk) {
            let count = (nworld - first).min(per_chunk);
            let params = RenderParams { ngeom: ngeom as u32, znear, zfar, aspect: width as f32 / height as f32 };
            let params = crate::gpu::buffers::uniform_buffer(&ctx, "render_params", &params);
            let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("render"),
                layout: &layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: pose.buffer().as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: view.buffer().as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 3, resource: look.buffer().as_entire_binding() },
                ],
            });
            chunks.push(Chunk { first, count, bind_group, row0 });
            row0 += count.div_ceil(cols as usize) as u64 * height as u64;
        }
        ctx.check_errors()?;
        let (w, h) = (width, height);
        let frames = Frames {
            nworld,
            width: w,
            height: h,
            rgb: if outputs.rgb { vec![0; nworld * w * h * 3] } else { vec![] },
            depth: if outputs.depth { vec![0.0; nworld * w * h] } else { vec![] },
            segmentation: if outputs.segmentation { vec![-1; nworld * w * h] } else { vec![] },
        };
        Ok(Self {
            host_pose: vec![0.0; nworld * ngeom * 12],
            host_view: vec![GpuView::default(); nworld],
            ctx,
            model,
            nworld,
            width: width as u32,
            height: height as u32,
            outputs,
            znear,
            zfar,
            rests,
            camera,
            rig,
            pipeline,
            vertices,
            nvert: tris.len() as u32,
            rig_buffer,
            pose,
            view,
            chunks,
            cols,
            atlas,
            row_pitch,
            color,
            depth,
            segment,
            zbuffer,
            frames,
            data,
            gather: None,
            atlas_max,
            detail,
        })
    }

    /// The model.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// Worlds per render.
    pub fn nworld(&self) -> usize {
        self.nworld
    }

    /// The same renderer with an atlas of at most `max_width` ×
    /// `max_height` pixels (at least one frame; the default is the
    /// device's texture limit each way): fewer worlds per render pass,
    /// more passes per render, less device memory.
    pub fn with_max_atlas(self, max_width: usize, max_height: usize) -> Result<Self, RenderError> {
        let detail = self.detail;
        self.rebuild([max_width, max_height], detail)
    }

    /// The same renderer with round shapes tessellated at `detail`
    /// (default [`geometry::Detail::MUJOCO`], 28 slices and 16 stacks as
    /// MuJoCo's renderer): coarser detail draws small frames of many
    /// worlds faster where the vertex work dominates (a software adapter
    /// such as lavapipe), at the cost of polygonal outlines.
    pub fn with_detail(self, detail: geometry::Detail) -> Result<Self, RenderError> {
        let atlas_max = self.atlas_max;
        self.rebuild(atlas_max, detail)
    }

    /// This renderer built again with another atlas limit or tessellation.
    fn rebuild(self, atlas_max: [usize; 2], detail: geometry::Detail) -> Result<Self, RenderError> {
        let camera = self.camera;
        Self::build(
            self.ctx,
            self.model,
            self.nworld,
            self.width as usize,
            self.height as usize,
            self.outputs,
            camera,
            atlas_max,
            detail,
        )
    }

    /// How round shapes are tessellated.
    pub fn detail(&self) -> geometry::Detail {
        self.detail
    }

    /// What is read back.
    pub fn outputs(&self) -> Outputs {
        self.outputs
    }

    /// Frame width and height (pixels).
    pub fn size(&self) -> (usize, usize) {
        (self.width as usize, self.height as usize)
    }

    /// Near and far clipping distances (m).
    pub fn clip_range(&self) -> (f32, f32) {
        (self.znear, self.zfar)
    }

    /// Sees every world from `camera` from the next render on.
    pub fn set_camera(&mut self, camera: Camera) -> Result<(), RenderError> {
        check_camera(&self.model, &camera)?;
        self.camera = camera;
        self.rig = Rig::new(&self.model, &self.rests, &camera);
        self.ctx.queue.write_buffer(&self.rig_buffer, 0, bytemuck::bytes_of(&self.rig.to_gpu()));
        Ok(())
    }

    /// The camera's frame in the state whose kinematics `data` holds.
    pub fn camera_frame<T: crate::math::Real>(&self, data: &Data<T>) -> CameraFrame {
        self.rig.frame(&self.model, data)
    }

    /// Renders the worlds at positions `qpos` ((nworld, nq), world after
    /// world): the host computes each world's kinematics, uploads the geom
    /// poses and camera frames, and draws.
    pub fn render_qpos(&mut self, qpos: &[f64]) -> Result<&Frames, RenderError> {
        let (nq, ng) = (self.model.nq, self.model.geoms.len());
        if qpos.len() != self.nworld * nq {
            return Err(RenderError::Invalid(format!(
                "qpos has {} values, expected nworld × nq = {} × {nq}",
                qpos.len(),
                self.nworld
            )));
        }
        for w in 0..self.nworld {
            let q = &qpos[w * nq..(w + 1) * nq];
            if let Some(i) = q.iter().position(|x| !x.is_finite()) {
                return Err(RenderError::Invalid(format!("qpos of world {w} is not finite at coordinate {i}")));
            }
            self.data.q.copy_from_slice(q);
            kinematics(&self.model, &mut self.data);
            for g in 0..ng {
                let (p, m) = (self.data.geom_xpos[g], self.data.geom_xmat[g].m);
                let o = &mut self.host_pose[(w * ng + g) * 12..(w * ng + g + 1) * 12];
                o[..3].copy_from_slice(&[p.x as f32, p.y as f32, p.z as f32]);
                for (r, row) in m.iter().enumerate() {
                    for (c, x) in row.iter().enumerate() {
                        o[3 + 3 * r + c] = *x as f32;
                    }
                }
            }
            self.host_view[w] = self.rig.frame(&self.model, &self.data).to_gpu();
        }
        if ng > 0 {
            self.pose.write(&self.ctx, &self.host_pose)?;
        }
        self.view.write(&self.ctx, &self.host_view)?;
        let mut encoder =
            self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("render") });
        self.encode_draw(&mut encoder);
        self.finish(encoder)
    }

    /// Renders the worlds of `batch` (which must share this renderer's
    /// context and model and have its number of worlds) from its device
    /// buffers: after its advance completes, one submission runs its
    /// kinematics at the final state, gathers the geom poses and camera
    /// frames and draws; only the frames are read back.
    pub fn render_gpu_batch(&mut self, batch: &GpuBatch) -> Result<&Frames, RenderError> {
        use crate::batch::Batch;
        if !Arc::ptr_eq(batch.context(), &self.ctx) {
            return Err(RenderError::Invalid("the batch runs on another GpuContext than the renderer".into()));
        }
        if batch.nworld() != self.nworld {
            return Err(RenderError::Invalid(format!(
                "the batch has {} worlds, the renderer {}",
                batch.nworld(),
                self.nworld
            )));
        }
        if batch.model().geoms.len() != self.model.geoms.len() || batch.model().bodies.len() != self.model.bodies.len()
        {
            return Err(RenderError::Invalid(format!(
                "the batch's model '{}' is not the renderer's '{}'",
                batch.model().name,
                self.model.name
            )));
        }
        let stale = match &self.gather {
            Some(g) => !g.is_for(batch),
            None => true,
        };
        if stale {
            self.gather = Some(gather::Gather::new(&self.ctx, batch, &self.rig_buffer, &self.pose, &self.view)?);
        }
        batch.finish()?;
        let mut encoder =
            self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("render") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("render: gather"),
                timestamp_writes: None,
            });
            batch.encode_state_kinematics(&mut pass);
            if let Some(g) = &self.gather {
                g.kernel.encode(&mut pass);
            }
        }
        self.encode_draw(&mut encoder);
        self.finish(encoder)
    }

    /// Records the render passes and the copies of the requested targets.
    fn encode_draw(&self, encoder: &mut wgpu::CommandEncoder) {
        let bg = wgpu::Color { r: BACKGROUND[0], g: BACKGROUND[1], b: BACKGROUND[2], a: 1.0 };
        for chunk in &self.chunks {
            {
                let attach = |view, clear| {
                    Some(wgpu::RenderPassColorAttachment {
                        view,
                        depth_slice: None,
                        resolve_target: None,
                        ops: wgpu::Operations { load: wgpu::LoadOp::Clear(clear), store: wgpu::StoreOp::Store },
                    })
                };
                let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("render"),
                    color_attachments: &[
                        attach(&self.color.view, bg),
                        attach(&self.depth.view, wgpu::Color { r: self.zfar as f64, g: 0.0, b: 0.0, a: 0.0 }),
                        attach(&self.segment.view, wgpu::Color::TRANSPARENT),
                    ],
                    depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                        view: &self.zbuffer,
                        depth_ops: Some(wgpu::Operations {
                            load: wgpu::LoadOp::Clear(1.0),
                            store: wgpu::StoreOp::Discard,
                        }),
                        stencil_ops: None,
                    }),
                    timestamp_writes: None,
                    occlusion_query_set: None,
                    multiview_mask: None,
                });
                if self.nvert > 0 {
                    pass.set_pipeline(&self.pipeline);
                    pass.set_bind_group(0, &chunk.bind_group, &[]);
                    pass.set_vertex_buffer(0, self.vertices.slice(..));
                    // One draw per world into its tile: the viewport and scissor clip its triangles.
                    let (w, h) = (self.width, self.height);
                    for k in 0..chunk.count as u32 {
                        let (x, y) = (k % self.cols * w, k / self.cols * h);
                        pass.set_viewport(x as f32, y as f32, w as f32, h as f32, 0.0, 1.0);
                        pass.set_scissor_rect(x, y, w, h);
                        let world = chunk.first as u32 + k;
                        pass.draw(0..self.nvert, world..world + 1);
                    }
                }
            }
            let rows = chunk.count.div_ceil(self.cols as usize) as u32 * self.height;
            for (k, t) in [&self.color, &self.depth, &self.segment].into_iter().enumerate() {
                if let Some(staging) = &t.staging {
                    encoder.copy_texture_to_buffer(
                        wgpu::TexelCopyTextureInfo {
                            texture: &t.texture,
                            mip_level: 0,
                            origin: wgpu::Origin3d::ZERO,
                            aspect: wgpu::TextureAspect::All,
                        },
                        wgpu::TexelCopyBufferInfo {
                            buffer: staging,
                            layout: wgpu::TexelCopyBufferLayout {
                                offset: chunk.row0 * self.row_pitch[k],
                                bytes_per_row: Some(self.row_pitch[k] as u32),
                                rows_per_image: Some(rows),
                            },
                        },
                        wgpu::Extent3d { width: self.atlas[0], height: rows, depth_or_array_layers: 1 },
                    );
                }
            }
        }
    }

    /// Submits, waits, and unpacks the tiles into [`Frames`].
    fn finish(&mut self, encoder: wgpu::CommandEncoder) -> Result<&Frames, RenderError> {
        self.ctx.submit([encoder.finish()]);
        let targets = [&self.color, &self.depth, &self.segment];
        let mut receivers = vec![];
        for t in targets.iter() {
            if let Some(s) = &t.staging {
                let (tx, rx) = std::sync::mpsc::channel();
                s.slice(..).map_async(wgpu::MapMode::Read, move |r| {
                    let _ = tx.send(r);
                });
                receivers.push(rx);
            }
        }
        self.ctx
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Readback(format!("waiting for the GPU: {e}")))?;
        for rx in receivers {
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(GpuError::Readback(e.to_string()).into()),
                Err(_) => return Err(GpuError::Readback("the map callback never ran".into()).into()),
            }
        }
        let (w, h, cols) = (self.width as usize, self.height as usize, self.cols as usize);
        for (k, t) in targets.iter().enumerate() {
            let Some(s) = &t.staging else { continue };
            {
                let bytes =
                    s.slice(..).get_mapped_range().map_err(|e| GpuError::Readback(format!("mapping frames: {e}")))?;
                let pitch = self.row_pitch[k] as usize;
                let bpp = t.bpp as usize;
                for chunk in &self.chunks {
                    for i in 0..chunk.count {
                        let world = chunk.first + i;
                        let (cx, cy) = (i % cols, i / cols);
                        for y in 0..h {
                            let row = (chunk.row0 as usize + cy * h + y) * pitch + cx * w * bpp;
                            let src = &bytes[row..row + w * bpp];
                            let dst = (world * h + y) * w;
                            match k {
                                0 => {
                                    let out = &mut self.frames.rgb[dst * 3..(dst + w) * 3];
                                    for x in 0..w {
                                        out[3 * x..3 * x + 3].copy_from_slice(&src[4 * x..4 * x + 3]);
                                    }
                                }
                                1 => self.frames.depth[dst..dst + w].copy_from_slice(bytemuck::cast_slice(src)),
                                _ => {
                                    let ids: &[u32] = bytemuck::cast_slice(src);
                                    for (o, id) in self.frames.segmentation[dst..dst + w].iter_mut().zip(ids) {
                                        *o = *id as i32 - 1;
                                    }
                                }
                            }
                        }
                    }
                }
            }
            s.unmap();
        }
        self.ctx.check_errors()?;
        Ok(&self.frames)
    }
}

/// A model camera index in range.
fn check_camera(model: &Model, camera: &Camera) -> Result<(), RenderError> {
    match camera {
        Camera::Model(c) if *c >= model.visual.cameras.len() => Err(RenderError::Invalid(format!(
            "camera {c} out of range: model '{}' has {} cameras",
            model.name,
            model.visual.cameras.len()
        ))),
        Camera::Free(f) if !(f.distance > 0.0 && f.distance.is_finite()) => {
            Err(RenderError::Invalid(format!("free camera distance must be > 0 m, got {}", f.distance)))
        }
        _ => Ok(()),
    }
}
