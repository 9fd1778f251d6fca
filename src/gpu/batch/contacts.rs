//! Where a batch's contacts come from: the GPU collision ([`GpuCollision`],
//! one thread per world or per (pair, world)) or the host
//! ([`HostCollision`]), and the contact capacity per world.

use super::host::HostCollision;
use crate::collision::{MAX_MANIFOLD, order_pair, pair_kind};
use crate::gpu::buffers::{BufferSource, Readback};
use crate::gpu::cenic::CenicBuffers;
use crate::gpu::cenic::world_state;
use crate::gpu::collision::{self, GpuCollision, uses_epa};
use crate::gpu::context::GpuContext;
use crate::gpu::dynamics::GpuDynamics;
use crate::gpu::error::GpuError;
use crate::gpu::fields::{Field, Layout};
use crate::gpu::kernel::Kernel;
use crate::gpu::names::{KernelName, TrialStage};
use crate::model::Model;
use std::sync::Mutex;

/// Contacts per world by default: the most that can occur, the sum over
/// the candidate pairs with a moving geom of their kinds' largest manifold
/// ([`crate::collision::PairKind::max_points`]: 4 for the cube toss's box on a plane), capped
/// at [`MAX_MANIFOLD`] per geom on a moving body (a geom cannot touch all
/// the others at once; the clutter's 20 objects and 5 static geoms: 160),
/// at least 1. Contacts beyond it are counted, per world, as overflow.
pub fn default_contact_capacity(model: &Model) -> usize {
    let moving = model.geoms.iter().filter(|g| model.body_is_dynamic(g.body)).count();
    let n = model.geoms.len();
    let mut by_pairs = 0;
    for a in 0..n {
        for b in a + 1..n {
            let dynamic = model.body_is_dynamic(model.geoms[a].body) || model.body_is_dynamic(model.geoms[b].body);
            if dynamic && model.geoms_can_collide(a, b) {
                let (ga, gb) = order_pair(model, a, b);
                by_pairs += pair_kind(model.geoms[ga].kind, model.geoms[gb].kind).max_points;
            }
        }
    }
    by_pairs.min(MAX_MANIFOLD * moving).max(1)
}

/// Where a [`GpuBatch`](super::GpuBatch) gets its contacts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CollisionBackend {
    /// The GPU collision kernels ([`GpuCollision`]): the whole step stays on the GPU.
    #[default]
    Gpu,
    /// The CPU collision on the GPU's geom poses, read back at every
    /// collision point ([`HostCollision`]): slower, for comparisons.
    Host,
}

/// How the GPU collision of a batch is launched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CollisionLaunch {
    /// One thread per world when the model has no GJK/EPA pair and either
    /// one candidate pair or enough worlds to fill the device
    /// ([`CollisionLaunch::per_world_min`]); per pair otherwise.
    #[default]
    Auto,
    /// `collide_worlds`: one thread per world walks every candidate pair in
    /// order and stores each manifold once (one launch; a warp runs the same
    /// pair routine on 32 worlds). Not for models with GJK/EPA pairs.
    PerWorld,
    /// The passes of [`GpuCollision::encode`]: one thread per (pair, world),
    /// every manifold computed twice (count, then write at its offset), four
    /// launches or more; more parallel when worlds are few.
    PerPair,
}

impl CollisionLaunch {
    /// Worlds from which [`CollisionLaunch::Auto`] runs the collision one
    /// thread per world: where the worlds alone keep the device busy (a
    /// software adapter's few SIMD lanes per core, a GPU's tens of thousands
    /// of threads in flight).
    pub fn per_world_min(ctx: &GpuContext) -> usize {
        if ctx.is_software() { 64 } else { 16384 }
    }
}

/// The contact producer of a batch.
pub(super) enum Collision {
    /// The GPU collision's buffers, and `collide_worlds` (one thread per
    /// world) when the model has no GJK/EPA pair, else its passes.
    Gpu(Box<GpuCollision>, Option<Kernel>),
    /// The CPU collision on the geom poses read back.
    Host(Box<Mutex<HostCollision>>),
}

impl Collision {
    /// The contacts of `nworld` worlds of `dynamics`' model, `ncon` per
    /// world in `layout`, with the speculative `skin` (m), from `backend`
    /// launched as `launch`; `collide_worlds` also binds the ICF and CENIC
    /// buffers (it runs on the worlds at a collision point).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        ctx: &std::sync::Arc<GpuContext>,
        dynamics: &GpuDynamics,
        ncon: usize,
        layout: Layout,
        skin: f64,
        backend: CollisionBackend,
        launch: CollisionLaunch,
        stage_buffers: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        let (model, nworld) = (dynamics.model(), dynamics.nworld());
        Ok(match backend {
            CollisionBackend::Gpu => {
                let sources: [&dyn BufferSource; 2] = [dynamics.gpu_model(), dynamics.gpu_data()];
                let c = GpuCollision::with_layout(ctx.clone(), model, nworld, ncon, &sources, layout)?;
                c.set_skin(&vec![skin as f32; nworld])?;
                let kind = |g: u32| model.geoms[g as usize].kind;
                let any_epa = c.pairs().iter().any(|p| uses_epa(kind(p.geom[0]), kind(p.geom[1])));
                let per_world = match launch {
                    CollisionLaunch::PerPair => false,
                    CollisionLaunch::PerWorld if any_epa => {
                        return Err(GpuError::Unsupported(
                            "CollisionLaunch::PerWorld for a model with GJK/EPA pairs (their scratch is per pair launch)"
                                .into(),
                        ));
                    }
                    CollisionLaunch::PerWorld => true,
                    CollisionLaunch::Auto => {
                        !any_epa && (c.pairs().len() <= 1 || nworld >= CollisionLaunch::per_world_min(ctx))
                    }
                };
                let per_world = if !per_world {
                    None
                } else {
                    let mut all: Vec<&dyn BufferSource> = vec![&c, dynamics.gpu_model(), dynamics.gpu_data()];
                    all.extend_from_slice(stage_buffers);
                    Some(Kernel::new(ctx, &collision::FILE, "collide_worlds", nworld, &all)?)
                };
                Collision::Gpu(Box::new(c), per_world)
            }
            CollisionBackend::Host => {
                Collision::Host(Box::new(Mutex::new(HostCollision::with_layout(ctx, model, nworld, ncon, layout)?)))
            }
        })
    }

    /// Where the contacts come from.
    pub(super) fn backend(&self) -> CollisionBackend {
        match self {
            Collision::Gpu(..) => CollisionBackend::Gpu,
            Collision::Host(_) => CollisionBackend::Host,
        }
    }

    /// Runs `f` with the buffer source of the contacts (the host
    /// collision's behind its lock).
    pub(super) fn with_source<R>(&self, f: impl FnOnce(&dyn BufferSource) -> R) -> R {
        match self {
            Collision::Gpu(c, _) => f(c.as_ref()),
            Collision::Host(c) => f(&*c.lock().unwrap_or_else(|p| p.into_inner())),
        }
    }

    /// Records the GPU collision's launches (the host collision is no launch).
    pub(super) fn encode(&self, pass: &mut wgpu::ComputePass<'_>) {
        match self {
            Collision::Gpu(_, Some(per_world)) => per_world.encode(pass),
            Collision::Gpu(c, None) => c.encode(pass),
            Collision::Host(_) => unreachable!("host collision ends the pass"),
        }
    }

    /// Host collision: the contacts of the worlds at a collision point
    /// ([`TrialStage::Build0`], [`TrialStage::Build1`]) from the geom poses
    /// read back, with the speculative `skin` (m). Nothing for the GPU collision.
    pub(super) fn collide_on_host(
        &self,
        ctx: &GpuContext,
        dynamics: &GpuDynamics,
        cenic: &CenicBuffers,
        readback: &Readback,
        skin: f64,
    ) -> Result<(), GpuError> {
        let Collision::Host(host) = self else { return Ok(()) };
        let xpos = dynamics.read(Field::GeomXpos)?;
        let xmat = dynamics.read(Field::GeomXmat)?;
        let worlds = cenic.read_worlds(ctx, readback)?;
        let at = [TrialStage::Build0.code(), TrialStage::Build1.code()];
        let active: Vec<bool> =
            worlds.iter().map(|w| w.state == world_state::RUNNING && at.contains(&w.stage)).collect();
        let mut host = host.lock().unwrap_or_else(|p| p.into_inner());
        host.collide(ctx, dynamics.model(), &xpos, &xmat, &active, skin)
    }
}
