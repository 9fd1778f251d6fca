//! [`GpuBatch`]: the [`Batch`] interface on the GPU. Every world runs its
//! own CENIC clock (or fixed steps) through the WGSL stages; the host
//! encodes whole iterations and reads back once per `advance`.
//!
//! An iteration is one trial per running world ([`FIXED_ITERATION`],
//! [`STEP_DOUBLING_ITERATION`] in [`super::cenic`]): launches of consecutive
//! trial parts (one thread per world: begin, geometry and dynamics, ICF
//! build, step choice, step-dependent terms, solution, position update,
//! error control; grouped per [`Fusion`]) between the collision and the
//! Newton solves. Fixed steps take 5 launches per iteration (4 on top of
//! the collision's own when it runs in passes), step doubling 11. Every
//! world records the part it is at, so a launch only works on the worlds at
//! its part: idle, failed and rejected worlds cost a check, and a solve that
//! a software adapter's loop budget paused resumes in the next solve launch
//! (the world waits at its stage meanwhile).
//!
//! Host round trips: [`Batch::advance`] encodes the iterations it expects
//! to need (fixed steps: the exact count; error control: from the previous
//! advances' rate) into one submission and returns without waiting. The
//! first call that needs results (`times`, `status`, `stats`, `qpos`,
//! `qvel`, a host write, the next advance) settles it with one readback of
//! the worlds' clocks, states and running count (plus q and v when asked
//! for, in the same copy); when worlds are still running, more iterations
//! are encoded and the readback repeats. So an `advance` followed by any
//! reads costs one host wait. [`GpuContext::counters`] counts them.
//!
//! Collision ([`CollisionBackend`]): by default on the GPU, one thread per
//! world (`collide_worlds` in `kernels/collision.wgsl`) for models without
//! GJK/EPA pairs, else the passes of [`GpuCollision`]. With
//! [`CollisionBackend::Host`] the contacts come from [`HostCollision`]
//! instead: the geom poses are read back at every collision point, each
//! world's contacts are found by the CPU collision
//! ([`crate::collision::collide`] in f32, with a persistent broadphase per
//! world, as `World<f32>` does) and uploaded (a host wait per collision
//! point: for comparisons).

use super::GpuError;
use super::buffers::{BufferSource, Field, GpuData, Layout, Readback, StorageBuffer, element_index};
use super::cenic::{
    CenicBuffers, CenicKernels, FIXED_ITERATION, Fusion, GpuCenicStats, GpuCenicWorld, GpuStepRecord, IterationOp,
    RESET_HEADER, STEP_DOUBLING_ITERATION, counter, entry_name, group_parts, part_loops, split_time, trial_stage,
    world_state,
};
use super::collision::{GpuCollision, uses_epa};
use super::contact::GpuContact;
use super::context::{GpuContext, run_pass};
use super::dynamics::GpuDynamics;
use super::icf::{GpuIcfWorld, IcfBuffers, IcfKernels, SolverState, SolverVariant, is_software};
use super::model::GpuModel;
use super::sensors::GpuSensors;
use super::shaders::Kernel;
use crate::batch::{Batch, BatchError, WorldParams, WorldStatus, check_len, check_rows};
use crate::collision::{Contact, Contacts, MAX_MANIFOLD, collide, order_pair, pair_kind};
use crate::dynamics::{self, Data};
use crate::icf::SolverParams;
use crate::integrator::{Mode, WorldStats};
use crate::model::Model;
use rayon::prelude::*;
use std::sync::{Arc, Mutex};

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

/// The shared contact buffers (`contacts`, `contact_count` in
/// `kernels/data.wgsl`), filled on the host: from given contacts
/// ([`HostCollision::upload`], for stage tests) or by running the CPU
/// collision on the GPU's geom poses ([`HostCollision::collide`]).
pub struct HostCollision {
    ncon: usize,
    layout: Layout,
    contacts: StorageBuffer<GpuContact>,
    count: StorageBuffer<u32>,
    status: StorageBuffer<u32>,
    worlds: Vec<Contacts<f32>>,
    packed: Vec<GpuContact>,
    stored: Vec<GpuContact>,
    counts: Vec<u32>,
}

impl std::fmt::Debug for HostCollision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCollision").field("nworld", &self.worlds.len()).field("ncon", &self.ncon).finish()
    }
}

impl HostCollision {
    /// WGSL names of the buffers this provides (`collision_status` stays
    /// zero: the CPU collision has no loop budget).
    pub const BUFFER_NAMES: [&'static str; 3] = ["contacts", "contact_count", "collision_status"];

    /// Contact buffers for `nworld` worlds of `model`, `ncon` per world, in the default [`Layout`].
    pub fn new(ctx: &GpuContext, model: &Model, nworld: usize, ncon: usize) -> Result<Self, GpuError> {
        Self::with_layout(ctx, model, nworld, ncon, Layout::default())
    }

    /// [`Self::new`] with the contacts stored in `layout` (that of the kernels' [`super::GpuData`]).
    pub fn with_layout(
        ctx: &GpuContext,
        model: &Model,
        nworld: usize,
        ncon: usize,
        layout: Layout,
    ) -> Result<Self, GpuError> {
        let dummy = GpuContact::from_contact(&dummy_contact());
        Ok(Self {
            ncon,
            layout,
            contacts: StorageBuffer::new(ctx, "contacts", nworld * ncon)?,
            count: StorageBuffer::new(ctx, "contact_count", nworld)?,
            status: StorageBuffer::new(ctx, "collision_status", nworld)?,
            worlds: (0..nworld).map(|_| Contacts::with_capacity(model, ncon)).collect(),
            packed: vec![dummy; nworld * ncon],
            stored: vec![dummy; nworld * ncon],
            counts: vec![0; nworld],
        })
    }

    /// Contact capacity per world.
    pub fn capacity(&self) -> usize {
        self.ncon
    }

    /// Uploads world `world`'s contacts: the first `ncon` of `list`, and
    /// `found` (≥ `list.len()`; more than the capacity is an overflow) as its count.
    pub fn upload(&self, ctx: &GpuContext, world: usize, list: &[Contact<f32>], found: usize) -> Result<(), GpuError> {
        let nworld = self.counts.len();
        for (c, contact) in list.iter().take(self.ncon).enumerate() {
            let at = element_index(self.layout, nworld, self.ncon, 1, world, c, 0);
            self.contacts.write_at(ctx, at, &[GpuContact::from_contact(contact)])?;
        }
        self.count.write_at(ctx, world, &[found.max(list.len()) as u32])
    }

    /// Finds every world's contacts on the host from the geom poses
    /// `geom_xpos` (nworld × ngeom × 3) and `geom_xmat` (nworld × ngeom × 9),
    /// with the speculative `skin` (m), for the worlds flagged in `active`,
    /// and uploads them.
    pub fn collide(
        &mut self,
        ctx: &GpuContext,
        model: &Model,
        geom_xpos: &[f32],
        geom_xmat: &[f32],
        active: &[bool],
        skin: f64,
    ) -> Result<(), GpuError> {
        let ng = model.geoms.len();
        let ncon = self.ncon.max(1);
        self.worlds
            .par_iter_mut()
            .zip(self.packed.par_chunks_mut(ncon))
            .zip(self.counts.par_iter_mut())
            .enumerate()
            .for_each_init(
                || Data::<f32>::new(model),
                |data, (w, ((contacts, out), count))| {
                    if !active[w] {
                        *count = 0;
                        return;
                    }
                    for g in 0..ng {
                        let p = &geom_xpos[(w * ng + g) * 3..(w * ng + g + 1) * 3];
                        data.geom_xpos[g] = crate::math::Vec3::from_slice(p);
                        let m = &geom_xmat[(w * ng + g) * 9..(w * ng + g + 1) * 9];
                        for r in 0..3 {
                            for c in 0..3 {
                                data.geom_xmat[g].m[r][c] = m[r * 3 + c];
                            }
                        }
                    }
                    contacts.skin = skin;
                    collide(model, data, contacts);
                    for (o, c) in out.iter_mut().zip(&contacts.list) {
                        *o = GpuContact::from_contact(c);
                    }
                    *count = (contacts.list.len() + contacts.overflow) as u32;
                },
            );
        if self.ncon > 0 {
            let nworld = self.counts.len();
            for (i, c) in self.packed.iter().enumerate() {
                self.stored[element_index(self.layout, nworld, self.ncon, 1, i / self.ncon, i % self.ncon, 0)] = *c;
            }
            self.contacts.write(ctx, &self.stored)?;
        }
        self.count.write(ctx, &self.counts)
    }
}

fn dummy_contact() -> Contact<f32> {
    Contact {
        geom: [0, 0],
        body: [0, 0],
        pos: crate::math::Vec3::zero(),
        normal: crate::math::Vec3::zero(),
        dist: 0.0,
        feature: [0, 0],
        material: crate::model::Material { stiffness: 0.0, dissipation: 0.0, mu_static: 0.0, mu_dynamic: 0.0 },
    }
}

impl BufferSource for HostCollision {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        match name {
            "contacts" => Some(self.contacts.buffer()),
            "contact_count" => Some(self.count.buffer()),
            "collision_status" => Some(self.status.buffer()),
            _ => None,
        }
    }
}

/// Where a [`GpuBatch`] gets its contacts.
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
        if is_software(ctx) { 64 } else { 16384 }
    }
}

/// The contact producer of a batch.
enum Collision {
    /// The GPU collision's buffers, and `collide_worlds` (one thread per
    /// world) when the model has no GJK/EPA pair, else its passes.
    Gpu(Box<GpuCollision>, Option<Kernel>),
    Host(Mutex<HostCollision>),
}

impl Collision {
    /// Runs `f` with the buffer source of the contacts (the host
    /// collision's behind its lock).
    fn with_source<R>(&self, f: impl FnOnce(&dyn BufferSource) -> R) -> R {
        match self {
            Collision::Gpu(c, _) => f(c.as_ref()),
            Collision::Host(c) => f(&*c.lock().unwrap_or_else(|p| p.into_inner())),
        }
    }
}

/// Settings of a [`GpuBatch`] beyond the mode.
#[derive(Clone, Debug, Default)]
pub struct GpuBatchOptions {
    /// Contacts kept per world; [`default_contact_capacity`] when `None`.
    /// Contacts beyond it are counted in [`WorldStats::contact_overflow`].
    pub contact_capacity: Option<usize>,
    /// Accepted steps recorded per world ([`GpuBatch::step_records`]); 0: none.
    pub record_steps: usize,
    /// Newton settings of the fixed-step mode (error control derives its
    /// tolerance from the accuracy, as `World` does).
    pub solver: SolverParams,
    /// Where the contacts come from.
    pub collision: CollisionBackend,
    /// How the parts of a trial are grouped into launches.
    pub fusion: Fusion,
    /// Where the per-world arrays put each world's items.
    pub layout: Layout,
    /// How the GPU collision is launched.
    pub collision_launch: CollisionLaunch,
    /// Where the Newton solves keep their dense state;
    /// [`SolverState::for_model`] when `None`.
    pub solver_state: Option<SolverState>,
    /// A thread or a workgroup per world for the Newton solves;
    /// [`SolverVariant::auto`] when `None`.
    pub solver_variant: Option<SolverVariant>,
}

/// One launch of an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Launch {
    /// `steps[k]`: a run of trial parts.
    Parts(usize),
    Collide,
    Solve,
}

/// Timestamps around each launch (profiling, [`GpuBatch::enable_profiling`]).
struct Profiler {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    /// Timestamps the query set holds (two per launch).
    capacity: u32,
    /// Per timed launch (in order): its index in the schedule.
    launches: Mutex<Vec<usize>>,
    /// Launches not timed since the last [`GpuBatch::profile`] (the set was full).
    missed: Mutex<u64>,
}

/// GPU time of one launch of an iteration, summed over a run ([`GpuBatch::profile`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchTime {
    /// The launch ([`GpuBatch::launch_names`]).
    pub name: String,
    /// Launches timed.
    pub count: u64,
    /// GPU time between the timestamps before and after them, summed (s).
    pub seconds: f64,
}

/// What the host knows of the worlds, refreshed when an advance is settled.
#[derive(Debug, Default)]
struct HostView {
    /// The advance submitted and not yet known to be complete.
    unsettled: Option<Unsettled>,
    times: Vec<f64>,
    status: Vec<WorldStatus>,
    /// Statistics since each world's reset (read on demand).
    stats: Option<Vec<WorldStats>>,
    /// q and v, world first (read on demand, with the settling readback when possible).
    state: Option<(Vec<f32>, Vec<f32>)>,
    /// Iterations encoded since creation (= the device's iteration counter).
    iterations: u64,
    /// Iterations per simulated second the last settled advance needed
    /// (error control: the estimate for the next one).
    rate: Option<f64>,
    /// q and v, the statistics were read since the last settled advance
    /// (then the next settling readback brings them along).
    asked_state: bool,
    asked_stats: bool,
}

#[derive(Clone, Copy, Debug)]
struct Unsettled {
    dt: f64,
    /// Value of the iteration counter when the advance started.
    first_iteration: u64,
    /// Iterations encoded for it so far.
    iterations: u64,
}

/// A batch of worlds of one model stepped on the GPU (f32), with the same
/// interface, per-world clocks, statistics and failure isolation as
/// [`crate::batch::CpuBatch`]. All buffers, pipelines and bind groups are
/// created here; stepping only records commands, and reading results back
/// waits once per advance (see the module docs).
pub struct GpuBatch {
    ctx: Arc<GpuContext>,
    model: Arc<Model>,
    nworld: usize,
    mode: Mode,
    h_initial: f32,
    dynamics: GpuDynamics,
    collision: Collision,
    ncon: usize,
    icf_buffers: IcfBuffers,
    icf: IcfKernels,
    cenic_buffers: CenicBuffers,
    cenic: CenicKernels,
    steps: Vec<Kernel>,
    schedule: Vec<Launch>,
    readback: Readback,
    view: Mutex<HostView>,
    profiler: Option<Profiler>,
    /// Host staging of masked resets (`cenic_reset`'s layout) and one
    /// world's q in f32, allocated here so that autoresets do not allocate.
    reset_stage: Vec<u32>,
    reset_q32: Vec<f32>,
    /// The model's sensors on the device (`None` without sensors).
    sensors: Option<GpuSensors>,
}

impl std::fmt::Debug for GpuBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBatch")
            .field("model", &self.model.name)
            .field("nworld", &self.nworld)
            .field("adapter", &self.ctx.adapter_name())
            .field("contact_capacity", &self.ncon)
            .field("launches", &self.launch_names())
            .finish_non_exhaustive()
    }
}

fn gpu_err(e: GpuError) -> BatchError {
    BatchError::Backend(e.to_string())
}

impl GpuBatch {
    /// `nworld` worlds of `model` at qpos0, all advancing in `mode`, with default options.
    pub fn new(ctx: Arc<GpuContext>, model: Arc<Model>, nworld: usize, mode: Mode) -> Result<Self, GpuError> {
        Self::with_options(ctx, model, nworld, mode, GpuBatchOptions::default())
    }

    /// [`GpuBatch::new`] with explicit options.
    pub fn with_options(
        ctx: Arc<GpuContext>,
        model: Arc<Model>,
        nworld: usize,
        mode: Mode,
        options: GpuBatchOptions,
    ) -> Result<Self, GpuError> {
        if let Some(what) = model.gpu_unsupported() {
            return Err(GpuError::Unsupported(format!("{what} is not simulated on the GPU (use CpuBatch)")));
        }
        if !mode.is_icf() {
            return Err(GpuError::Unsupported(format!(
                "integrator '{}' is a CPU baseline (use CpuBatch)",
                mode.name()
            )));
        }
        if let Mode::ErrorControlled(p) = &mode
            && p.land_contact_events
        {
            return Err(GpuError::Unsupported("CenicParams::land_contact_events (CPU only)".into()));
        }
        if let Mode::ErrorControlled(p) = &mode
            && p.land_stick_events
        {
            return Err(GpuError::Unsupported("CenicParams::land_stick_events (CPU only)".into()));
        }
        let ncon = options.contact_capacity.unwrap_or_else(|| default_contact_capacity(&model));
        let layout = options.layout;
        let mut dynamics = GpuDynamics::with_layout(ctx.clone(), model.clone(), nworld, layout)?;
        dynamics.set_contact_capacity(ncon)?;
        let skin = mode.contact_skin();
        let mut icf_buffers = IcfBuffers::with_layout(&ctx, &model, nworld, ncon, layout)?;
        let cenic_buffers = CenicBuffers::new(&ctx, &model, nworld, &mode, options.record_steps)?;
        let (h_initial, solver) = match &mode {
            Mode::Fixed { dt } => (*dt, options.solver),
            Mode::ErrorControlled(p) => (p.first_step(&model), p.solver_params(&options.solver)),
            m => unreachable!("refused above: {}", m.name()),
        };
        icf_buffers.set_params(&ctx, &solver);
        if let Some(v) = options.solver_variant {
            icf_buffers.set_variant(v);
        }
        let collision = match options.collision {
            CollisionBackend::Gpu => {
                let sources: [&dyn BufferSource; 2] = [dynamics.gpu_model(), dynamics.gpu_data()];
                let c = GpuCollision::with_layout(ctx.clone(), &model, nworld, ncon, &sources, layout)?;
                c.set_skin(&vec![skin as f32; nworld])?;
                let kind = |g: u32| model.geoms[g as usize].kind;
                let any_epa = c.pairs().iter().any(|p| uses_epa(kind(p.geom[0]), kind(p.geom[1])));
                let per_world = match options.collision_launch {
                    CollisionLaunch::PerPair => false,
                    CollisionLaunch::PerWorld if any_epa => {
                        return Err(GpuError::Unsupported(
                            "CollisionLaunch::PerWorld for a model with GJK/EPA pairs (their scratch is per pair launch)"
                                .into(),
                        ));
                    }
                    CollisionLaunch::PerWorld => true,
                    CollisionLaunch::Auto => {
                        !any_epa && (c.pairs().len() <= 1 || nworld >= CollisionLaunch::per_world_min(&ctx))
                    }
                };
                let per_world = if !per_world {
                    None
                } else {
                    let all: [&dyn BufferSource; 5] =
                        [&c, dynamics.gpu_model(), dynamics.gpu_data(), &icf_buffers, &cenic_buffers];
                    Some(Kernel::new(&ctx, GpuCollision::STAGE, "collide_worlds", nworld, &all)?)
                };
                Collision::Gpu(Box::new(c), per_world)
            }
            CollisionBackend::Host => {
                Collision::Host(Mutex::new(HostCollision::with_layout(&ctx, &model, nworld, ncon, layout)?))
            }
        };
        let (icf, cenic, steps, schedule) = collision.with_source(|contacts| {
            let sources: [&dyn BufferSource; 5] =
                [dynamics.gpu_model(), dynamics.gpu_data(), contacts, &icf_buffers, &cenic_buffers];
            let variant = icf_buffers.variant();
            let state = options.solver_state.unwrap_or_else(|| SolverState::for_model(&ctx, model.nv, variant));
            let icf = IcfKernels::with_state(&ctx, nworld, ncon, variant, state, &sources)?;
            let cenic = CenicKernels::new(&ctx, nworld, &sources)?;
            let npair = match &mode {
                Mode::ErrorControlled(p) if p.conservative_advancement => cenic_buffers.params.npair as usize,
                _ => 0,
            };
            let ndofc = icf_buffers.layout().ndofc;
            let software = is_software(&ctx);
            let loops = |p: &str| part_loops(p, &model, ncon, ndofc, npair);
            let ops: &[IterationOp] = match mode {
                Mode::Fixed { .. } => &FIXED_ITERATION,
                Mode::ErrorControlled(_) => &STEP_DOUBLING_ITERATION,
                ref m => unreachable!("refused in with_options: {}", m.name()),
            };
            let mut steps: Vec<(String, Kernel)> = vec![];
            let mut schedule = vec![];
            for op in ops {
                match op {
                    IterationOp::Collide => schedule.push(Launch::Collide),
                    IterationOp::Solve => schedule.push(Launch::Solve),
                    IterationOp::Parts(parts) => {
                        for run in group_parts(parts, options.fusion, software, loops) {
                            let name = entry_name(run);
                            let k = match steps.iter().position(|(n, _)| *n == name) {
                                Some(k) => k,
                                None => {
                                    let entry = super::cenic::entry_static(&name);
                                    steps
                                        .push((name, Kernel::new(&ctx, CenicKernels::STAGE, entry, nworld, &sources)?));
                                    steps.len() - 1
                                }
                            };
                            schedule.push(Launch::Parts(k));
                        }
                    }
                }
            }
            Ok::<_, GpuError>((icf, cenic, steps.into_iter().map(|(_, k)| k).collect::<Vec<_>>(), schedule))
        })?;
        // One readback holds the counters, the summaries, q and v.
        let (nq, nv) = (model.nq, model.nv);
        let bytes = (16 * counter::LEN + nworld * (16 + 4 * (nq + nv)) + 64) as u64;
        let readback = Readback::new(&ctx, bytes.max(Readback::DEFAULT_SIZE));
        let mut batch = Self {
            ctx,
            model,
            nworld,
            mode,
            h_initial: h_initial as f32,
            dynamics,
            collision,
            ncon,
            icf_buffers,
            icf,
            cenic_buffers,
            cenic,
            steps,
            schedule,
            readback,
            view: Mutex::new(HostView::default()),
            profiler: None,
            reset_stage: vec![0; RESET_HEADER + nworld * (1 + nq + nv)],
            reset_q32: vec![0.0; nq],
            sensors: None,
        };
        if batch.model.nsensordata > 0 {
            // Sensors the device cannot evaluate are refused when read, not here.
            let sensors = batch.with_state_sources(|s| GpuSensors::new(&batch.ctx, &batch.model, nworld, &s))?;
            batch.sensors = Some(sensors);
        }
        batch.reset_all()?;
        Ok(batch)
    }

    /// The GPU context (adapter name, device).
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// Contacts kept per world.
    pub fn contact_capacity(&self) -> usize {
        self.ncon
    }

    /// Where the contacts come from.
    pub fn collision_backend(&self) -> CollisionBackend {
        match self.collision {
            Collision::Gpu(..) => CollisionBackend::Gpu,
            Collision::Host(_) => CollisionBackend::Host,
        }
    }

    /// Bytes of device memory the batch's buffers take (model constants,
    /// per-world state, contacts, ICF problems, clocks, sensors; not the
    /// staging buffers for readbacks).
    pub fn device_bytes(&self) -> u64 {
        let names = GpuModel::BUFFER_NAMES
            .iter()
            .chain(&GpuData::BUFFER_NAMES)
            .chain(&GpuCollision::BUFFER_NAMES)
            .chain(&IcfBuffers::BUFFER_NAMES)
            .chain(&CenicBuffers::BUFFER_NAMES);
        self.collision.with_source(|contacts| {
            let sources: [&dyn BufferSource; 5] =
                [self.dynamics.gpu_model(), self.dynamics.gpu_data(), contacts, &self.icf_buffers, &self.cenic_buffers];
            let mut seen = std::collections::HashSet::new();
            names
                .filter(|n| seen.insert(**n))
                .filter_map(|n| sources.iter().find_map(|s| s.buffer(n)))
                .map(|b| b.size())
                .sum::<u64>()
        }) + self.sensors.as_ref().map_or(0, GpuSensors::device_bytes)
    }

    /// The launches of one iteration, in order: WGSL entry points of trial
    /// parts, `collide` and `solve`.
    pub fn launch_names(&self) -> Vec<String> {
        self.schedule
            .iter()
            .map(|l| match l {
                Launch::Parts(k) => self.steps[*k].name(),
                Launch::Collide => "collide".into(),
                Launch::Solve => "solve".into(),
            })
            .collect()
    }

    /// Worlds whose contacts exceeded the capacity since their reset, with
    /// the number of contacts that did not fit.
    pub fn overflowing_worlds(&self) -> Vec<(usize, u64)> {
        self.with_stats(|stats| {
            stats
                .iter()
                .enumerate()
                .filter(|(_, s)| s.contact_overflow > 0)
                .map(|(w, s)| (w, s.contact_overflow))
                .collect()
        })
        .unwrap_or_default()
    }

    /// Iterations (trials of every running world) encoded since creation.
    pub fn iterations(&self) -> u64 {
        self.view().iterations
    }

    /// World `world`'s accepted steps since its reset, up to the
    /// `record_steps` capacity, as (start time (s), step (s), error ratio, contacts).
    pub fn step_records(&self, world: usize) -> Result<Vec<(f64, f64, f64, usize)>, BatchError> {
        self.check(world)?;
        let cap = self.cenic_buffers.params.record_capacity as usize;
        if cap == 0 {
            return Ok(vec![]);
        }
        self.settle(false, false).map_err(gpu_err)?;
        let stats: Vec<GpuCenicStats> =
            self.cenic_buffers.stats.read_range(&self.ctx, &self.readback, world, 1).map_err(gpu_err)?;
        let n = (stats[0].recorded as usize).min(cap);
        let recs: Vec<GpuStepRecord> =
            self.cenic_buffers.steps.read_range(&self.ctx, &self.readback, world * cap, n).map_err(gpu_err)?;
        Ok(recs
            .iter()
            .map(|r| (r.t[0] as f64 + r.t[1] as f64, r.h as f64, r.err as f64, r.contacts as usize))
            .collect())
    }

    fn check(&self, world: usize) -> Result<(), BatchError> {
        if world < self.nworld { Ok(()) } else { Err(BatchError::World { world, nworld: self.nworld }) }
    }

    fn view(&self) -> std::sync::MutexGuard<'_, HostView> {
        self.view.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Read access for kernels outside the batch that evaluate the state
    /// after an [`advance`](Batch::advance) (`crate::gpu::rl`): the buffer
    /// sources of the model constants, the per-world data ([`Field`]s), the
    /// contacts and the ICF buffers (controls, actuators, the problem and
    /// solution of each world's last accepted solve, which finished worlds
    /// keep until the next advance), in the binding names of
    /// `kernels/data.wgsl`, given to `f`. Bind them read-only; the per-world
    /// fields through the generated accessors (`q_get(q_at(w, i))`...), which
    /// follow the batch's [`Layout`].
    pub fn with_state_sources<R>(&self, f: impl FnOnce([&dyn BufferSource; 4]) -> R) -> R {
        self.collision.with_source(|contacts| {
            f([self.dynamics.gpu_model(), self.dynamics.gpu_data(), contacts, &self.icf_buffers])
        })
    }

    /// Completes the submitted [`advance`](Batch::advance): runs the
    /// iterations it still needs and reads the worlds' times and statuses
    /// (the advance's one host wait; none when nothing is pending). Kernels
    /// outside the batch that read its state call this first.
    pub fn finish(&self) -> Result<(), GpuError> {
        self.settle(false, false)
    }

    /// Encodes the kinematics and body-velocity stages at the current
    /// state into `pass` (body and site poses, `cinert`, `cvel` at the end
    /// of the last advance, after [`Self::finish`]; the next advance
    /// recomputes them anyway).
    pub fn encode_state_kinematics(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.dynamics.encode(pass, super::Stage::Kinematics);
        self.dynamics.encode(pass, super::Stage::Velocities);
    }

    fn fresh_world(&self, time: f64) -> GpuCenicWorld {
        GpuCenicWorld { time: split_time(time), h_next: self.h_initial, state: world_state::DONE, ..Default::default() }
    }

    fn fresh_stats() -> GpuCenicStats {
        GpuCenicStats { min_h: 3.0e38, ..Default::default() }
    }

    /// World `w` at (q, v) with controls `ctrl`, zero target velocities,
    /// `time`, fresh statistics; its parameters stay.
    fn reset_world(&mut self, w: usize, q: &[f32], v: &[f32], ctrl: &[f32], time: f64) -> Result<(), GpuError> {
        self.settle(false, false)?;
        let nu = self.model.nu();
        self.dynamics.set_world_field(Field::Q, w, q)?;
        self.dynamics.set_world_field(Field::V, w, v)?;
        self.icf_buffers.ctrl.write_at(&self.ctx, w * nu, ctrl)?;
        self.icf_buffers.target_velocity.write_at(&self.ctx, w * nu, &vec![0.0; nu])?;
        self.cenic_buffers.world.write_at(&self.ctx, w, &[self.fresh_world(time)])?;
        self.cenic_buffers.stats.write_at(&self.ctx, w, &[Self::fresh_stats()])?;
        self.icf_buffers.world.write_at(&self.ctx, w, &[GpuIcfWorld::default()])?;
        let mut view = self.view();
        if let Some(stats) = &mut view.stats {
            stats[w] = WorldStats::default();
        }
        view.status[w] = WorldStatus::Ok;
        view.times[w] = time;
        view.state = None;
        Ok(())
    }

    /// [`Self::reset_world`] at time 0 for the worlds in `mask`, in one
    /// upload and one launch (`cenic_reset_worlds`) instead of ~35 writes
    /// per world.
    fn reset_masked(&mut self, mask: &[bool], q: &[f64], v: &[f64]) -> Result<(), GpuError> {
        self.settle(false, false)?;
        let (nq, nv, n) = (self.model.nq, self.model.nv, self.nworld);
        let rows = RESET_HEADER + n;
        let mut k = 0;
        for w in (0..n).filter(|&w| mask[w]) {
            self.reset_stage[RESET_HEADER + k] = w as u32;
            for (x, y) in self.reset_q32.iter_mut().zip(&q[w * nq..(w + 1) * nq]) {
                *x = *y as f32;
            }
            if nq > 0 {
                dynamics::normalize_quaternions(&self.model, &mut self.reset_q32);
            }
            let row = rows + k * (nq + nv);
            for (x, y) in self.reset_stage[row..row + nq].iter_mut().zip(&self.reset_q32) {
                *x = y.to_bits();
            }
            for (x, y) in self.reset_stage[row + nq..row + nq + nv].iter_mut().zip(&v[w * nv..(w + 1) * nv]) {
                *x = (*y as f32).to_bits();
            }
            k += 1;
        }
        if k == 0 {
            return Ok(());
        }
        self.reset_stage[0] = k as u32;
        self.reset_stage[1] = self.h_initial.to_bits();
        let buf = &self.cenic_buffers.reset;
        buf.write_at(&self.ctx, 0, &self.reset_stage[..RESET_HEADER + k])?;
        buf.write_at(&self.ctx, rows, &self.reset_stage[rows..rows + k * (nq + nv)])?;
        run_pass(&self.ctx, "cenic: reset worlds", |pass| self.cenic.reset_worlds.encode(pass))?;
        let mut view = self.view();
        for w in (0..n).filter(|&w| mask[w]) {
            if let Some(stats) = &mut view.stats {
                stats[w] = WorldStats::default();
            }
            view.status[w] = WorldStatus::Ok;
            view.times[w] = 0.0;
        }
        view.state = None;
        Ok(())
    }

    /// (q, v) of one world or of every world (nq and nv per world) in f32,
    /// each world's quaternions normalised.
    fn state_f32(&self, q: &[f64], v: &[f64]) -> (Vec<f32>, Vec<f32>) {
        let mut q32: Vec<f32> = q.iter().map(|&x| x as f32).collect();
        if self.model.nq > 0 {
            for qw in q32.chunks_mut(self.model.nq) {
                dynamics::normalize_quaternions(&self.model, qw);
            }
        }
        (q32, v.iter().map(|&x| x as f32).collect())
    }

    fn reset_all(&self) -> Result<(), GpuError> {
        let q0: Vec<f32> = self.model.qpos0.iter().map(|&x| x as f32).collect();
        self.reset_all_to(&q0.repeat(self.nworld), &vec![0.0; self.nworld * self.model.nv])
    }

    /// Every world afresh (as `reset_world` at time 0) at its (q, v)
    /// (nworld × nq, nworld × nv, quaternions normalised), whole fields at once.
    fn reset_all_to(&self, q: &[f32], v: &[f32]) -> Result<(), GpuError> {
        self.settle(false, false)?;
        let n = self.nworld;
        let (nq, nv, nu) = (self.model.nq, self.model.nv, self.model.nu());
        self.dynamics.set_field(Field::Q, q)?;
        self.dynamics.set_field(Field::V, v)?;
        self.dynamics.set_field(Field::H, &vec![0.0; n])?;
        self.icf_buffers.ctrl.write(&self.ctx, &vec![0.0; n * nu])?;
        self.icf_buffers.target_velocity.write(&self.ctx, &vec![0.0; n * nu])?;
        self.cenic_buffers.world.write(&self.ctx, &vec![self.fresh_world(0.0); n])?;
        self.cenic_buffers.stats.write(&self.ctx, &vec![Self::fresh_stats(); n])?;
        self.cenic_buffers.q.write(&self.ctx, &vec![0.0; n * 2 * nq])?;
        self.cenic_buffers.v.write(&self.ctx, &vec![0.0; n * 2 * nv])?;
        self.icf_buffers.world.write(&self.ctx, &vec![GpuIcfWorld::default(); n])?;
        let mut view = self.view();
        view.stats = Some(vec![WorldStats::default(); n]);
        view.status = vec![WorldStatus::Ok; n];
        view.times = vec![0.0; n];
        view.state = None;
        drop(view);
        self.ctx.check_errors()
    }

    /// Records launch `l` (the `k`-th of an iteration) between two
    /// timestamps when profiling and the query set has room.
    fn encode_timed(&self, pass: &mut wgpu::ComputePass<'_>, k: usize, l: Launch) {
        let Some(p) = &self.profiler else { return self.encode_launch(pass, l) };
        let mut launches = p.launches.lock().unwrap_or_else(|e| e.into_inner());
        let at = 2 * launches.len() as u32;
        if at + 2 > p.capacity {
            *p.missed.lock().unwrap_or_else(|e| e.into_inner()) += 1;
            return self.encode_launch(pass, l);
        }
        pass.write_timestamp(&p.set, at);
        self.encode_launch(pass, l);
        pass.write_timestamp(&p.set, at + 1);
        launches.push(k);
    }

    /// Times every launch from now on with GPU timestamps (up to
    /// `capacity` launches between two [`Self::profile`] calls); false when
    /// the adapter has no timestamps between dispatches.
    pub fn enable_profiling(&mut self, capacity: u32) -> Result<bool, GpuError> {
        if !self.ctx.supports_timestamps() {
            return Ok(false);
        }
        let capacity = (2 * capacity).clamp(2, wgpu::QUERY_SET_MAX_QUERIES);
        let set = self.ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("cenic launches"),
            ty: wgpu::QueryType::Timestamp,
            count: capacity,
        });
        let resolve = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("cenic launch timestamps"),
            size: 8 * capacity as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        self.profiler = Some(Profiler { set, resolve, capacity, launches: Mutex::default(), missed: Mutex::default() });
        self.ctx.check_errors()?;
        Ok(true)
    }

    /// GPU time per launch of the iteration since profiling was enabled or
    /// the last call (then reset), and the launches that were not timed
    /// because the query set was full. Empty without profiling.
    pub fn profile(&self) -> Result<(Vec<LaunchTime>, u64), GpuError> {
        let Some(p) = &self.profiler else { return Ok((vec![], 0)) };
        self.settle(false, false)?;
        let launches = std::mem::take(&mut *p.launches.lock().unwrap_or_else(|e| e.into_inner()));
        let missed = std::mem::take(&mut *p.missed.lock().unwrap_or_else(|e| e.into_inner()));
        let mut ticks = vec![0u64; 2 * launches.len()];
        if !launches.is_empty() {
            let n = ticks.len() as u32;
            self.readback.read_parts(
                &self.ctx,
                "launch timestamps",
                |enc| enc.resolve_query_set(&p.set, 0..n, &p.resolve, 0),
                &mut [(&p.resolve, 0, bytemuck::cast_slice_mut(&mut ticks))],
            )?;
        }
        let period = self.ctx.queue.get_timestamp_period() as f64 * 1e-9;
        let names = self.launch_names();
        let mut out: Vec<LaunchTime> =
            names.iter().map(|n| LaunchTime { name: n.clone(), count: 0, seconds: 0.0 }).collect();
        for (i, &k) in launches.iter().enumerate() {
            out[k].count += 1;
            out[k].seconds += ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period;
        }
        Ok((out, missed))
    }

    /// Records launch `l` of an iteration (the host collision is not a launch).
    fn encode_launch(&self, pass: &mut wgpu::ComputePass<'_>, l: Launch) {
        match l {
            Launch::Parts(k) => self.steps[k].encode(pass),
            Launch::Solve => self.icf.encode_solve(pass),
            Launch::Collide => match &self.collision {
                Collision::Gpu(_, Some(per_world)) => per_world.encode(pass),
                Collision::Gpu(c, None) => c.encode(pass),
                Collision::Host(_) => unreachable!("host collision ends the pass"),
            },
        }
    }

    /// Encodes `n` iterations into one submission (GPU collision), after
    /// the start of an advance when `start`, or runs them with the host
    /// collision in between (one wait per collision point).
    fn iterate(&self, n: u64, start: bool) -> Result<(), GpuError> {
        if start && matches!(self.collision, Collision::Host(_)) {
            run_pass(&self.ctx, "cenic: start advance", |pass| self.cenic.start_advance.encode(pass))?;
        }
        if let Collision::Host(host) = &self.collision {
            for _ in 0..n {
                let mut from = 0;
                for (k, l) in self.schedule.iter().enumerate() {
                    if *l == Launch::Collide {
                        run_pass(&self.ctx, "cenic iteration", |pass| {
                            self.schedule[from..k].iter().for_each(|l| self.encode_launch(pass, *l))
                        })?;
                        self.collide_on_host(&mut host.lock().unwrap_or_else(|p| p.into_inner()))?;
                        from = k + 1;
                    }
                }
                run_pass(&self.ctx, "cenic iteration", |pass| {
                    self.schedule[from..].iter().for_each(|l| self.encode_launch(pass, *l))
                })?;
            }
        } else if n > 0 || start {
            run_pass(&self.ctx, "cenic iterations", |pass| {
                if start {
                    self.cenic.start_advance.encode(pass);
                }
                for _ in 0..n {
                    for (k, l) in self.schedule.iter().enumerate() {
                        self.encode_timed(pass, k, *l);
                    }
                }
            })?;
        }
        self.view().iterations += n;
        Ok(())
    }

    /// Host collision: the contacts of the worlds at a collision point.
    fn collide_on_host(&self, host: &mut HostCollision) -> Result<(), GpuError> {
        let xpos = self.dynamics.read(Field::GeomXpos)?;
        let xmat = self.dynamics.read(Field::GeomXmat)?;
        let worlds = self.cenic_buffers.read_worlds(&self.ctx, &self.readback)?;
        let at = [trial_stage("BUILD0"), trial_stage("BUILD1")];
        let active: Vec<bool> =
            worlds.iter().map(|w| w.state == world_state::RUNNING && at.contains(&w.stage)).collect();
        host.collide(&self.ctx, &self.model, &xpos, &xmat, &active, self.mode.contact_skin())
    }

    /// Iterations to encode for an advance of `dt` (s): fixed steps the
    /// exact count (a step that lands within rounding of the end may need
    /// one more: then settling adds it); error control the rate of the last
    /// settled advance with a quarter more, at first 2·dt/h₀.
    fn iterations_for(&self, dt: f64, rate: Option<f64>) -> u64 {
        match self.mode {
            Mode::Fixed { dt: h } => (dt / h * (1.0 - 1e-9)).ceil().max(1.0) as u64,
            Mode::ErrorControlled(_) => {
                let r = rate.unwrap_or(2.0 / self.h_initial as f64);
                (dt * r * 1.25).ceil().max(1.0) as u64 + 1
            }
            ref m => unreachable!("refused in with_options: {}", m.name()),
        }
    }

    /// Submits an advance of `dt` (s) without waiting (see the module docs).
    fn advance_gpu(&mut self, dt: f64) -> Result<(), GpuError> {
        self.settle(false, false)?;
        self.cenic_buffers.set_advance_dt(&self.ctx, dt);
        let (first, rate) = {
            let v = self.view();
            (v.iterations, v.rate)
        };
        let n = self.iterations_for(dt, rate);
        {
            let mut view = self.view();
            view.unsettled = Some(Unsettled { dt, first_iteration: first, iterations: 0 });
            view.stats = None;
            view.state = None;
        }
        self.iterate(n, true)?;
        if let Some(u) = &mut self.view().unsettled {
            u.iterations = n;
        }
        Ok(())
    }

    /// Completes the submitted advance, if any, with one readback of the
    /// counters and the worlds' summaries, plus q and v (`state`) and the
    /// statistics (`stats`) when asked for or when they were read after the
    /// previous advance (then they most likely will be again: read together,
    /// one wait). While worlds still run, encodes more iterations and reads
    /// again. Then refreshes the host's times and statuses (reading the
    /// failure reasons of newly failed worlds).
    fn settle(&self, state: bool, stats: bool) -> Result<(), GpuError> {
        loop {
            let (unsettled, need_state, need_stats) = {
                let mut v = self.view();
                if state {
                    v.asked_state = true;
                }
                if stats {
                    v.asked_stats = true;
                }
                let pending = v.unsettled.is_some();
                (
                    v.unsettled,
                    v.state.is_none() && (state || (pending && v.asked_state)),
                    v.stats.is_none() && (stats || (pending && v.asked_stats)),
                )
            };
            if unsettled.is_none() && !need_state && !need_stats {
                return Ok(());
            }
            let n = self.nworld;
            let mut counters = [0u32; counter::LEN];
            let mut summary = vec![[0u32; 4]; if unsettled.is_some() { n } else { 0 }];
            let data = self.dynamics.gpu_data();
            let (qbuf, qoff, qlen) = data.field_source(Field::Q);
            let (vbuf, voff, vlen) = data.field_source(Field::V);
            let mut q = vec![0f32; if need_state { (qlen / 4) as usize } else { 0 }];
            let mut v = vec![0f32; if need_state { (vlen / 4) as usize } else { 0 }];
            let mut raw_stats = vec![GpuCenicStats::default(); if need_stats { n } else { 0 }];
            self.cenic_buffers.counter.write_at(&self.ctx, 0, &[0, 0])?;
            {
                let mut parts: Vec<(&wgpu::Buffer, u64, &mut [u8])> = vec![
                    (self.cenic_buffers.counter.buffer(), 0, bytemuck::cast_slice_mut(&mut counters)),
                    (self.cenic_buffers.summary.buffer(), 0, bytemuck::cast_slice_mut(&mut summary)),
                    (qbuf, qoff, bytemuck::cast_slice_mut(&mut q)),
                    (vbuf, voff, bytemuck::cast_slice_mut(&mut v)),
                    (self.cenic_buffers.stats.buffer(), 0, bytemuck::cast_slice_mut(&mut raw_stats)),
                ];
                let summarize = unsettled.is_some();
                self.readback.read_parts(
                    &self.ctx,
                    "settle",
                    |enc| {
                        if summarize {
                            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                                label: Some("cenic: summarize"),
                                timestamp_writes: None,
                            });
                            self.cenic.summarize.encode(&mut pass);
                        }
                    },
                    &mut parts,
                )?;
            }
            let state_read = need_state.then(|| (data.unpack(Field::Q, &q), data.unpack(Field::V, &v)));
            let stats_read = need_stats.then(|| raw_stats.iter().map(WorldStats::from).collect::<Vec<_>>());
            let Some(u) = unsettled else {
                let mut view = self.view();
                view.state = state_read.or(view.state.take());
                view.stats = stats_read.or(view.stats.take());
                return Ok(());
            };
            if counters[counter::RUNNING] > 0 {
                // The estimate fell short: as many iterations again (a few
                // rounds even when it was far off), then read again.
                let more = u.iterations.max(4);
                self.iterate(more, false)?;
                if let Some(u) = &mut self.view().unsettled {
                    u.iterations += more;
                }
                continue;
            }
            let newly_failed: Vec<usize> = {
                let view = self.view();
                (0..n).filter(|&w| summary[w][2] == world_state::FAILED && view.status[w] == WorldStatus::Ok).collect()
            };
            let worlds = if newly_failed.is_empty() {
                vec![]
            } else {
                self.cenic_buffers.read_worlds(&self.ctx, &self.readback)?
            };
            let mut view = self.view();
            for (w, s) in summary.iter().enumerate() {
                view.times[w] = f32::from_bits(s[0]) as f64 + f32::from_bits(s[1]) as f64;
            }
            for &w in &newly_failed {
                let reason = worlds[w].failure_reason(&self.model).unwrap_or_default();
                view.status[w] = WorldStatus::Failed { time: view.times[w], reason };
            }
            // Iterations this advance needed: up to the last one in which a world began a trial.
            let needed = (counters[counter::LAST_BUSY] as u64 + 1).saturating_sub(u.first_iteration).max(1);
            if u.dt > 0.0 {
                // Follow a rising rate at once, a falling one slowly (contact
                // phases come back).
                let r = needed as f64 / u.dt;
                view.rate = Some(view.rate.map_or(r, |old| r.max(0.5 * old)));
            }
            view.unsettled = None;
            // What is read after this advance is fetched with the next one.
            (view.asked_state, view.asked_stats) = (state, stats);
            view.state = state_read;
            view.stats = stats_read;
            return Ok(());
        }
    }

    /// Runs `f` on every world's statistics (read once per advance).
    fn with_stats<R>(&self, f: impl FnOnce(&[WorldStats]) -> R) -> Result<R, GpuError> {
        self.settle(false, true)?;
        let view = self.view();
        let stats = view.stats.as_deref().ok_or_else(|| GpuError::Readback("statistics not read".into()))?;
        Ok(f(stats))
    }

    /// q or v of every world (world first), read together with the other.
    fn read_state(&self, velocities: bool, out: &mut [f64]) -> Result<(), GpuError> {
        self.settle(true, false)?;
        let view = self.view();
        let (q, v) = view.state.as_ref().ok_or_else(|| GpuError::Readback("state not read".into()))?;
        let src = if velocities { v } else { q };
        if src.len() != out.len() {
            return Err(GpuError::Length { what: "state readback", expected: out.len(), got: src.len() });
        }
        out.iter_mut().zip(src).for_each(|(d, s)| *d = *s as f64);
        Ok(())
    }

    /// Invalidates the host's copy of q and v (after a host write).
    fn state_changed(&self) {
        self.view().state = None;
    }
}

impl Batch for GpuBatch {
    fn model(&self) -> &Arc<Model> {
        &self.model
    }
    fn nworld(&self) -> usize {
        self.nworld
    }
    fn reset(&mut self) {
        // Errors here mean a lost device; they surface at the next advance.
        let _ = self.reset_all();
    }
    fn reset_to_keyframe(&mut self, world: usize, key: &str) -> Result<(), BatchError> {
        self.check(world)?;
        let k = self.model.keyframe(key).ok_or_else(|| BatchError::Keyframe(key.to_string()))?.clone();
        let (q, v) = self.state_f32(&k.qpos, &k.qvel);
        let mut ctrl = vec![0.0f32; self.model.nu()];
        for (c, x) in ctrl.iter_mut().zip(&k.ctrl) {
            *c = *x as f32;
        }
        self.reset_world(world, &q, &v, &ctrl, k.time).map_err(gpu_err)
    }
    fn set_state(&mut self, world: usize, q: &[f64], v: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        check_len("q", self.model.nq, q.len())?;
        check_len("v", self.model.nv, v.len())?;
        self.settle(false, false).map_err(gpu_err)?;
        let (q32, v32) = self.state_f32(q, v);
        self.state_changed();
        self.dynamics.set_world_field(Field::Q, world, &q32).map_err(gpu_err)?;
        self.dynamics.set_world_field(Field::V, world, &v32).map_err(gpu_err)
    }
    fn set_ctrl(&mut self, world: usize, ctrl: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        let nu = self.model.nu();
        check_len("ctrl", nu, ctrl.len())?;
        self.settle(false, false).map_err(gpu_err)?;
        let c: Vec<f32> = ctrl.iter().map(|&x| x as f32).collect();
        self.icf_buffers.ctrl.write_at(&self.ctx, world * nu, &c).map_err(gpu_err)
    }
    fn set_target_velocity(&mut self, world: usize, vref: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        let nu = self.model.nu();
        check_len("target velocity", nu, vref.len())?;
        self.settle(false, false).map_err(gpu_err)?;
        let c: Vec<f32> = vref.iter().map(|&x| x as f32).collect();
        self.icf_buffers.target_velocity.write_at(&self.ctx, world * nu, &c).map_err(gpu_err)
    }
    fn set_params(&mut self, world: usize, params: WorldParams) -> Result<(), BatchError> {
        self.check(world)?;
        self.settle(false, false).map_err(gpu_err)?;
        self.dynamics.gpu_model().set_world_params(&self.ctx, world, &params).map_err(gpu_err)
    }
    fn advance(&mut self, dt: f64) -> Result<(), BatchError> {
        self.advance_gpu(dt).map_err(gpu_err)
    }
    /// On a failed readback (lost device) `out` is filled with NaN.
    fn qpos(&self, out: &mut [f64]) {
        if self.read_state(false, out).is_err() {
            out.fill(f64::NAN);
        }
    }
    /// On a failed readback (lost device) `out` is filled with NaN.
    fn qvel(&self, out: &mut [f64]) {
        if self.read_state(true, out).is_err() {
            out.fill(f64::NAN);
        }
    }
    /// On a failed readback (lost device) the last known times.
    fn times(&self) -> Vec<f64> {
        let _ = self.settle(false, false);
        self.view().times.clone()
    }
    /// On a failed readback (lost device) default statistics.
    fn stats(&self, world: usize) -> WorldStats {
        self.with_stats(|s| s[world]).unwrap_or_default()
    }
    /// On a failed readback (lost device) the last known status.
    fn status(&self, world: usize) -> WorldStatus {
        let _ = self.settle(false, false);
        self.view().status[world].clone()
    }
    fn reset_worlds_all(&mut self, q: &[f64], v: &[f64]) -> Result<(), BatchError> {
        check_rows(&self.model, self.nworld, None, q, v)?;
        let (q32, v32) = self.state_f32(q, v);
        self.reset_all_to(&q32, &v32).map_err(gpu_err)
    }
    /// One upload and one launch for all the masked worlds (`cenic_reset_worlds`).
    fn reset_worlds(&mut self, mask: &[bool], q: &[f64], v: &[f64]) -> Result<(), BatchError> {
        check_rows(&self.model, self.nworld, Some(mask), q, v)?;
        self.reset_masked(mask, q, v).map_err(gpu_err)
    }
    fn reset_world(&mut self, world: usize, q: &[f64], v: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        check_len("q", self.model.nq, q.len())?;
        check_len("v", self.model.nv, v.len())?;
        let (q32, v32) = self.state_f32(q, v);
        let ctrl = vec![0.0f32; self.model.nu()];
        self.reset_world(world, &q32, &v32, &ctrl, 0.0).map_err(gpu_err)
    }
    /// Evaluated on the device at each world's current state (after
    /// settling the pending advance), one submission and one host wait
    /// ([`crate::gpu::sensors`]): accelerometers and touch sensors from the
    /// world's last accepted step. A model with sensors the GPU does not
    /// evaluate (spatial tendons) gets an error naming them.
    fn sensordata(&self, out: &mut [f64]) -> Result<(), BatchError> {
        check_len("sensordata", self.nworld * self.model.nsensordata, out.len())?;
        let Some(sensors) = &self.sensors else { return Ok(()) };
        if let Some(what) = sensors.unsupported() {
            return Err(gpu_err(GpuError::Unsupported(format!("{what} (use CpuBatch)"))));
        }
        self.settle(false, false).map_err(gpu_err)?;
        sensors.read(|pass| self.encode_state_kinematics(pass), out).map_err(gpu_err)
    }
    /// One upload for all worlds, converted straight into wgpu's staging
    /// memory (no host copy).
    fn set_ctrl_all(&mut self, ctrl: &[f64]) -> Result<(), BatchError> {
        check_len("ctrl", self.nworld * self.model.nu(), ctrl.len())?;
        // Iterations the pending advance still needs run with the old controls.
        self.settle(false, false).map_err(gpu_err)?;
        let Some(size) = std::num::NonZeroU64::new((ctrl.len() * 4) as u64) else { return Ok(()) };
        let buffer = self.icf_buffers.ctrl.buffer();
        let mut view = self
            .ctx
            .queue
            .write_buffer_with(buffer, 0, size)
            .ok_or_else(|| BatchError::Backend("controls: staging write refused".into()))?;
        view.slice(..).write_iter(ctrl.iter().flat_map(|x| (*x as f32).to_ne_bytes()));
        Ok(())
    }
}
