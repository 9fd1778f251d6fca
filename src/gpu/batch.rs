//! [`GpuBatch`]: the [`Batch`] interface on the GPU. Every world runs its
//! own CENIC clock (or fixed steps) through the WGSL stages; the host only
//! encodes iterations and checks, with a 4-byte readback, whether any
//! world is still running.
//!
//! One iteration is one trial per running world (`kernels/cenic.wgsl`):
//!
//! ```text
//! cenic_begin · kinematics … passive_forces · collision · icf_build · cenic_choose_step
//!   · icf_set_time_step · icf_solve · cenic_after_full · integrate_q
//!   fixed:            · cenic_finish_fixed
//!   error-controlled: · cenic_start_half · icf_set_time_step · icf_solve · cenic_after_half
//!                     · integrate_q · kinematics … passive_forces · collision · icf_build
//!                     · cenic_start_second_half · icf_set_time_step · icf_solve
//!                     · cenic_after_second_half · integrate_q · cenic_finish
//! ```
//!
//! Collision ([`CollisionBackend`]): by default the GPU collision kernels
//! ([`GpuCollision`], `kernels/collision.wgsl`) fill the shared contact
//! buffers (`contacts`, `contact_count`) inside the same compute pass, so
//! [`GpuBatch::ITERATIONS_PER_CHECK`] iterations go into one submission
//! followed by a 4-byte readback of the number of running worlds. With
//! [`CollisionBackend::Host`] the contacts come from [`HostCollision`]
//! instead: the geom poses are read back after the multibody stages, each
//! world's contacts are found by the CPU collision
//! ([`crate::collision::collide`] in f32, with a persistent broadphase per
//! world, as `World<f32>` does) and uploaded; the ICF kernels read them the
//! same way. That splits every iteration at each geometry pass (parity
//! tests use it to check the solve stages on the CPU's own contacts).
//!
//! On software adapters (lavapipe) a large model's Newton solves may need
//! more dispatches than can be fixed in advance ([`IcfBuffers::solve_dispatches`]):
//! then each solve also ends a submission and is resumed until done.

use super::GpuError;
use super::buffers::{BufferSource, Field, Readback, StorageBuffer};
use super::cenic::{CenicBuffers, CenicKernels, GpuCenicStats, GpuCenicWorld, GpuStepRecord, split_time, world_state};
use super::collision::GpuCollision;
use super::contact::GpuContact;
use super::context::GpuContext;
use super::context::run_pass;
use super::dynamics::{GpuDynamics, Stage};
use super::icf::{GpuIcfWorld, IcfBuffers, IcfKernels};
use crate::batch::{Batch, BatchError, WorldParams, WorldStatus, check_len};
use crate::collision::{Contact, Contacts, MAX_MANIFOLD, collide};
use crate::dynamics::{self, Data};
use crate::icf::SolverParams;
use crate::integrator::{Mode, WorldStats};
use crate::model::Model;
use rayon::prelude::*;
use std::sync::Arc;

/// Contacts per world by default: [`MAX_MANIFOLD`] per geom on a moving body (at least 8).
pub fn default_contact_capacity(model: &Model) -> usize {
    let moving = model.geoms.iter().filter(|g| model.body_is_dynamic(g.body)).count();
    (MAX_MANIFOLD * moving).max(8)
}

/// The shared contact buffers (`contacts`, `contact_count` in
/// `kernels/data.wgsl`), filled on the host: from given contacts
/// ([`HostCollision::upload`], for stage tests) or by running the CPU
/// collision on the GPU's geom poses ([`HostCollision::collide`]).
pub struct HostCollision {
    ncon: usize,
    contacts: StorageBuffer<GpuContact>,
    count: StorageBuffer<u32>,
    worlds: Vec<Contacts<f32>>,
    packed: Vec<GpuContact>,
    counts: Vec<u32>,
}

impl std::fmt::Debug for HostCollision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCollision").field("nworld", &self.worlds.len()).field("ncon", &self.ncon).finish()
    }
}

impl HostCollision {
    /// WGSL names of the buffers this provides.
    pub const BUFFER_NAMES: [&'static str; 2] = ["contacts", "contact_count"];

    /// Contact buffers for `nworld` worlds of `model`, `ncon` per world.
    pub fn new(ctx: &GpuContext, model: &Model, nworld: usize, ncon: usize) -> Result<Self, GpuError> {
        Ok(Self {
            ncon,
            contacts: StorageBuffer::new(ctx, "contacts", nworld * ncon)?,
            count: StorageBuffer::new(ctx, "contact_count", nworld)?,
            worlds: (0..nworld).map(|_| Contacts::with_capacity(model, ncon)).collect(),
            packed: vec![GpuContact::from_contact(&dummy_contact()); nworld * ncon],
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
        let packed: Vec<GpuContact> = list.iter().take(self.ncon).map(GpuContact::from_contact).collect();
        self.contacts.write_at(ctx, world * self.ncon, &packed)?;
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
            self.contacts.write(ctx, &self.packed)?;
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
    /// geometry pass ([`HostCollision`]): slower, for comparisons.
    Host,
}

/// The contact producer of a batch.
enum Collision {
    Gpu(Box<GpuCollision>),
    Host(HostCollision),
}

impl Collision {
    fn source(&self) -> &dyn BufferSource {
        match self {
            Collision::Gpu(c) => c.as_ref(),
            Collision::Host(c) => c,
        }
    }
}

/// Settings of a [`GpuBatch`] beyond the mode.
#[derive(Clone, Debug)]
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
}

impl Default for GpuBatchOptions {
    fn default() -> Self {
        Self {
            contact_capacity: None,
            record_steps: 0,
            solver: SolverParams::default(),
            collision: CollisionBackend::default(),
        }
    }
}

/// A batch of worlds of one model stepped on the GPU (f32), with the same
/// interface, per-world clocks, statistics and failure isolation as
/// [`crate::batch::CpuBatch`]. All buffers, pipelines and bind groups are
/// created here; stepping only records commands and reads a few bytes.
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
    readback: Readback,
    stats: Vec<WorldStats>,
    status: Vec<WorldStatus>,
    times: Vec<f64>,
    iterations: u64,
}

impl std::fmt::Debug for GpuBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBatch")
            .field("model", &self.model.name)
            .field("nworld", &self.nworld)
            .field("adapter", &self.ctx.adapter_name())
            .field("contact_capacity", &self.ncon)
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
        if let Mode::ErrorControlled(p) = &mode
            && p.land_contact_events
        {
            return Err(GpuError::Unsupported("CenicParams::land_contact_events (CPU only)".into()));
        }
        let ncon = options.contact_capacity.unwrap_or_else(|| default_contact_capacity(&model));
        let mut dynamics = GpuDynamics::new(ctx.clone(), model.clone(), nworld)?;
        dynamics.set_contact_capacity(ncon)?;
        let skin = mode.contact_skin();
        let collision = match options.collision {
            CollisionBackend::Gpu => {
                let sources: [&dyn BufferSource; 2] = [dynamics.gpu_model(), dynamics.gpu_data()];
                let c = GpuCollision::new(ctx.clone(), &model, nworld, ncon, &sources)?;
                c.set_skin(&vec![skin as f32; nworld])?;
                Collision::Gpu(Box::new(c))
            }
            CollisionBackend::Host => Collision::Host(HostCollision::new(&ctx, &model, nworld, ncon)?),
        };
        let mut icf_buffers = IcfBuffers::new(&ctx, &model, nworld, ncon)?;
        let cenic_buffers = CenicBuffers::new(&ctx, &model, nworld, &mode, options.record_steps)?;
        let (h_initial, solver) = match &mode {
            Mode::Fixed { dt } => (*dt, options.solver),
            Mode::ErrorControlled(p) => (p.first_step(&model), p.solver_params(&options.solver)),
        };
        icf_buffers.set_params(&ctx, &solver);
        let sources: [&dyn BufferSource; 5] =
            [dynamics.gpu_model(), dynamics.gpu_data(), collision.source(), &icf_buffers, &cenic_buffers];
        let icf = IcfKernels::new(&ctx, nworld, ncon, icf_buffers.variant(), &sources)?;
        let cenic = CenicKernels::new(&ctx, nworld, &sources)?;
        let readback = Readback::new(&ctx, Readback::DEFAULT_SIZE);
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
            readback,
            stats: vec![],
            status: vec![],
            times: vec![],
            iterations: 0,
        };
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
            Collision::Gpu(_) => CollisionBackend::Gpu,
            Collision::Host(_) => CollisionBackend::Host,
        }
    }

    /// Worlds whose contacts exceeded the capacity since their reset, with
    /// the number of contacts that did not fit.
    pub fn overflowing_worlds(&self) -> Vec<(usize, u64)> {
        self.stats
            .iter()
            .enumerate()
            .filter(|(_, s)| s.contact_overflow > 0)
            .map(|(w, s)| (w, s.contact_overflow))
            .collect()
    }

    /// Iterations (trials of every running world) encoded since creation.
    pub fn iterations(&self) -> u64 {
        self.iterations
    }

    /// World `world`'s accepted steps since its reset, up to the
    /// `record_steps` capacity, as (start time (s), step (s), error ratio, contacts).
    pub fn step_records(&self, world: usize) -> Result<Vec<(f64, f64, f64, usize)>, BatchError> {
        self.check(world)?;
        let cap = self.cenic_buffers.params.record_capacity as usize;
        if cap == 0 {
            return Ok(vec![]);
        }
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

    /// Read access for kernels outside the batch that evaluate the state
    /// after an [`advance`](Batch::advance) (`crate::gpu::rl`): the buffer
    /// sources of the model constants, the per-world data ([`Field`]s), the
    /// contacts and the ICF buffers (controls, actuators, the problem and
    /// solution of each world's last accepted solve, which finished worlds
    /// keep until the next advance), in the binding names of
    /// `kernels/data.wgsl`. Bind them read-only.
    pub fn state_sources(&self) -> [&dyn BufferSource; 4] {
        [self.dynamics.gpu_model(), self.dynamics.gpu_data(), self.collision.source(), &self.icf_buffers]
    }

    /// Encodes the kinematics and body-velocity stages at the current
    /// state into `pass` (body and site poses, `cinert`, `cvel` at the end
    /// of the last advance; the next advance recomputes them anyway).
    pub fn encode_state_kinematics(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.dynamics.encode(pass, Stage::Kinematics);
        self.dynamics.encode(pass, Stage::Velocities);
    }

    fn fresh_world(&self, time: f64) -> GpuCenicWorld {
        GpuCenicWorld { time: split_time(time), h_next: self.h_initial, state: world_state::DONE, ..Default::default() }
    }

    fn fresh_stats() -> GpuCenicStats {
        GpuCenicStats { min_h: 3.0e38, ..Default::default() }
    }

    /// World `w` back to qpos0, v = 0, zero controls, default parameters,
    /// `time`, fresh statistics.
    fn reset_world(&mut self, w: usize, q: &[f32], v: &[f32], ctrl: &[f32], time: f64) -> Result<(), GpuError> {
        let nu = self.model.nu();
        self.dynamics.set_world_field(Field::Q, w, q)?;
        self.dynamics.set_world_field(Field::V, w, v)?;
        self.icf_buffers.ctrl.write_at(&self.ctx, w * nu, ctrl)?;
        self.icf_buffers.target_velocity.write_at(&self.ctx, w * nu, &vec![0.0; nu])?;
        self.dynamics.gpu_model().set_world_params(&self.ctx, w, &WorldParams::default())?;
        self.cenic_buffers.world.write_at(&self.ctx, w, &[self.fresh_world(time)])?;
        self.cenic_buffers.stats.write_at(&self.ctx, w, &[Self::fresh_stats()])?;
        self.icf_buffers.world.write_at(&self.ctx, w, &[GpuIcfWorld::default()])?;
        self.stats[w] = WorldStats::default();
        self.status[w] = WorldStatus::Ok;
        self.times[w] = time;
        Ok(())
    }

    fn reset_all(&mut self) -> Result<(), GpuError> {
        let n = self.nworld;
        let (nq, nv, nu) = (self.model.nq, self.model.nv, self.model.nu());
        let q0: Vec<f32> = self.model.qpos0.iter().map(|&x| x as f32).collect();
        self.dynamics.set_field(Field::Q, &q0.repeat(n))?;
        self.dynamics.set_field(Field::V, &vec![0.0; n * nv])?;
        self.dynamics.set_field(Field::H, &vec![0.0; n])?;
        self.icf_buffers.ctrl.write(&self.ctx, &vec![0.0; n * nu])?;
        self.icf_buffers.target_velocity.write(&self.ctx, &vec![0.0; n * nu])?;
        self.dynamics.set_params(&vec![WorldParams::default(); n])?;
        self.cenic_buffers.world.write(&self.ctx, &vec![self.fresh_world(0.0); n])?;
        self.cenic_buffers.stats.write(&self.ctx, &vec![Self::fresh_stats(); n])?;
        self.cenic_buffers.q.write(&self.ctx, &vec![0.0; n * 2 * nq])?;
        self.cenic_buffers.v.write(&self.ctx, &vec![0.0; n * 2 * nv])?;
        self.icf_buffers.world.write(&self.ctx, &vec![GpuIcfWorld::default(); n])?;
        self.stats = vec![WorldStats::default(); n];
        self.status = vec![WorldStatus::Ok; n];
        self.times = vec![0.0; n];
        self.ctx.check_errors()
    }

    /// Host collision: the contacts of every world in a trial, at the current geometry.
    fn collide_on_host(&mut self) -> Result<(), GpuError> {
        let xpos = self.dynamics.read(Field::GeomXpos)?;
        let xmat = self.dynamics.read(Field::GeomXmat)?;
        let worlds = self.cenic_buffers.read_worlds(&self.ctx, &self.readback)?;
        let active: Vec<bool> = worlds.iter().map(|w| w.trial != 0).collect();
        let skin = self.mode.contact_skin();
        match &mut self.collision {
            Collision::Host(c) => c.collide(&self.ctx, &self.model, &xpos, &xmat, &active, skin),
            Collision::Gpu(_) => Ok(()),
        }
    }

    /// True when an iteration needs the host between its kernels (host
    /// collision, or solves resumed after a readback).
    fn needs_host(&self) -> bool {
        matches!(self.collision, Collision::Host(_)) || self.icf_buffers.solve_dispatches().is_none()
    }

    /// Runs `ops` in order: consecutive GPU stages share one compute pass;
    /// host collision, and solves on software adapters (resumed until
    /// done), end a pass.
    fn run_ops(&mut self, ops: &[Op]) -> Result<(), GpuError> {
        let mut start = 0;
        for (k, op) in ops.iter().enumerate() {
            let boundary = (matches!(op, Op::Collide) && matches!(self.collision, Collision::Host(_)))
                || (matches!(op, Op::Solve) && self.icf_buffers.solve_dispatches().is_none());
            if !boundary {
                continue;
            }
            self.encode_ops(&ops[start..k], 1)?;
            match op {
                Op::Collide => self.collide_on_host()?,
                _ => self.icf.solve(&self.ctx, &self.icf_buffers, &self.readback)?,
            }
            start = k + 1;
        }
        self.encode_ops(&ops[start..], 1)
    }

    /// Encodes `ops`, `repeat` times over, into one compute pass.
    fn encode_ops(&self, ops: &[Op], repeat: usize) -> Result<(), GpuError> {
        if ops.is_empty() {
            return Ok(());
        }
        run_pass(&self.ctx, "cenic iteration", |pass| {
            for op in (0..repeat).flat_map(|_| ops) {
                match op {
                    Op::Begin => self.cenic.begin.encode(pass),
                    Op::Geometry => {
                        for s in Stage::FORWARD {
                            self.dynamics.encode(pass, s);
                        }
                    }
                    Op::Build => self.icf.encode_build(pass),
                    Op::ChooseStep => self.cenic.choose_step.encode(pass),
                    Op::SetTimeStep => self.icf.encode_set_time_step(pass),
                    Op::Solve => {
                        self.icf.encode_solves(pass, &self.icf_buffers);
                    }
                    Op::AfterFull => self.cenic.after_full.encode(pass),
                    Op::IntegrateQ => self.dynamics.encode(pass, Stage::IntegrateQ),
                    Op::FinishFixed => self.cenic.finish_fixed.encode(pass),
                    Op::StartHalf => self.cenic.start_half.encode(pass),
                    Op::AfterHalf => self.cenic.after_half.encode(pass),
                    Op::StartSecondHalf => self.cenic.start_second_half.encode(pass),
                    Op::AfterSecondHalf => self.cenic.after_second_half.encode(pass),
                    Op::Finish => self.cenic.finish.encode(pass),
                    Op::Collide => match &self.collision {
                        Collision::Gpu(c) => c.encode(pass),
                        Collision::Host(_) => unreachable!("host collision ends the pass"),
                    },
                }
            }
        })
    }

    /// Iterations encoded per submission, between two readbacks of the
    /// number of running worlds, when no host step is needed in between.
    pub const ITERATIONS_PER_CHECK: usize = 4;

    /// `n` trials of every running world.
    fn iterate(&mut self, n: usize) -> Result<(), GpuError> {
        use Op::*;
        let ops: &[Op] = match self.mode {
            Mode::Fixed { .. } => {
                &[Begin, Geometry, Collide, Build, ChooseStep, SetTimeStep, Solve, AfterFull, IntegrateQ, FinishFixed]
            }
            Mode::ErrorControlled(_) => &[
                Begin,
                Geometry,
                Collide,
                Build,
                ChooseStep,
                SetTimeStep,
                Solve,
                AfterFull,
                IntegrateQ,
                StartHalf,
                SetTimeStep,
                Solve,
                AfterHalf,
                IntegrateQ,
                Geometry,
                Collide,
                Build,
                StartSecondHalf,
                SetTimeStep,
                Solve,
                AfterSecondHalf,
                IntegrateQ,
                Finish,
            ],
        };
        if n > 1 && !self.needs_host() {
            self.encode_ops(ops, n)?;
        } else {
            for _ in 0..n {
                self.run_ops(ops)?;
            }
        }
        self.iterations += n as u64;
        Ok(())
    }

    /// Number of running worlds (a 4-byte readback).
    fn count_running(&self) -> Result<u32, GpuError> {
        self.cenic_buffers.counter.write_at(&self.ctx, 0, &[0])?;
        run_pass(&self.ctx, "cenic: count", |pass| self.cenic.count_running.encode(pass))?;
        let mut running = [0u32];
        self.cenic_buffers.counter.read_range_into(&self.ctx, &self.readback, 0, &mut running)?;
        Ok(running[0])
    }

    /// GPU collision: freezes and flags every world whose contacts the
    /// collision stage could not compute reliably (see [`GpuCollision::check`]).
    fn check_collision(&mut self) -> Result<(), GpuError> {
        let Collision::Gpu(c) = &self.collision else { return Ok(()) };
        if c.check().is_ok() {
            return Ok(());
        }
        let status = c.read_status()?;
        c.clear_status()?;
        let mut worlds = self.cenic_buffers.read_worlds(&self.ctx, &self.readback)?;
        for (w, s) in status.iter().enumerate().filter(|(_, s)| **s != 0) {
            worlds[w].state = world_state::FAILED;
            let what = if s & super::collision::STATUS_LOOP_BUDGET != 0 {
                "the driver's loop budget ran out"
            } else {
                "a recomputed manifold disagreed with its count"
            };
            self.status[w] = WorldStatus::Failed {
                time: worlds[w].time(),
                reason: format!("GPU collision: contacts unreliable ({what})"),
            };
        }
        self.cenic_buffers.world.write(&self.ctx, &worlds)
    }

    /// Runs `advance` on the GPU and refreshes the host's times, statistics and statuses.
    fn advance_gpu(&mut self, dt: f64) -> Result<(), GpuError> {
        self.cenic_buffers.set_advance_dt(&self.ctx, dt);
        run_pass(&self.ctx, "cenic: start advance", |pass| self.cenic.start_advance.encode(pass))?;
        let per_check = if self.needs_host() { 1 } else { Self::ITERATIONS_PER_CHECK };
        while self.count_running()? > 0 {
            self.iterate(per_check)?;
        }
        self.check_collision()?;
        let worlds = self.cenic_buffers.read_worlds(&self.ctx, &self.readback)?;
        let stats = self.cenic_buffers.stats.read(&self.ctx, &self.readback)?;
        for (w, (cw, g)) in worlds.iter().zip(&stats).enumerate() {
            self.times[w] = cw.time();
            self.stats[w].merge(&WorldStats::from(g));
            if let (Some(e), WorldStatus::Ok) = (cw.failure(), &self.status[w]) {
                self.status[w] = WorldStatus::Failed { time: self.times[w], reason: e.describe(&self.model) };
            }
        }
        Ok(())
    }
}

/// One step of an iteration (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Begin,
    Geometry,
    Collide,
    Build,
    ChooseStep,
    SetTimeStep,
    Solve,
    AfterFull,
    IntegrateQ,
    FinishFixed,
    StartHalf,
    AfterHalf,
    StartSecondHalf,
    AfterSecondHalf,
    Finish,
}

fn read_into(values: Result<Vec<f32>, GpuError>, out: &mut [f64]) {
    match values {
        Ok(x) => out.iter_mut().zip(x).for_each(|(d, s)| *d = s as f64),
        Err(_) => out.fill(f64::NAN),
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
        let mut q: Vec<f32> = k.qpos.iter().map(|&x| x as f32).collect();
        dynamics::normalize_quaternions(&self.model, &mut q);
        let v: Vec<f32> = k.qvel.iter().map(|&x| x as f32).collect();
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
        let mut q32: Vec<f32> = q.iter().map(|&x| x as f32).collect();
        dynamics::normalize_quaternions(&self.model, &mut q32);
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        self.dynamics.set_world_field(Field::Q, world, &q32).map_err(gpu_err)?;
        self.dynamics.set_world_field(Field::V, world, &v32).map_err(gpu_err)
    }
    fn set_ctrl(&mut self, world: usize, ctrl: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        let nu = self.model.nu();
        check_len("ctrl", nu, ctrl.len())?;
        let c: Vec<f32> = ctrl.iter().map(|&x| x as f32).collect();
        self.icf_buffers.ctrl.write_at(&self.ctx, world * nu, &c).map_err(gpu_err)
    }
    fn set_target_velocity(&mut self, world: usize, vref: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        let nu = self.model.nu();
        check_len("target velocity", nu, vref.len())?;
        let c: Vec<f32> = vref.iter().map(|&x| x as f32).collect();
        self.icf_buffers.target_velocity.write_at(&self.ctx, world * nu, &c).map_err(gpu_err)
    }
    fn set_params(&mut self, world: usize, params: WorldParams) -> Result<(), BatchError> {
        self.check(world)?;
        self.dynamics.gpu_model().set_world_params(&self.ctx, world, &params).map_err(gpu_err)
    }
    fn advance(&mut self, dt: f64) -> Result<(), BatchError> {
        self.advance_gpu(dt).map_err(gpu_err)
    }
    /// On a failed readback (lost device) `out` is filled with NaN.
    fn qpos(&self, out: &mut [f64]) {
        read_into(self.dynamics.read(Field::Q), out);
    }
    /// On a failed readback (lost device) `out` is filled with NaN.
    fn qvel(&self, out: &mut [f64]) {
        read_into(self.dynamics.read(Field::V), out);
    }
    fn times(&self) -> Vec<f64> {
        self.times.clone()
    }
    fn stats(&self, world: usize) -> WorldStats {
        self.stats[world]
    }
    fn status(&self, world: usize) -> WorldStatus {
        self.status[world].clone()
    }
    fn reset_world(&mut self, world: usize, q: &[f64], v: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        check_len("q", self.model.nq, q.len())?;
        check_len("v", self.model.nv, v.len())?;
        let mut q32: Vec<f32> = q.iter().map(|&x| x as f32).collect();
        dynamics::normalize_quaternions(&self.model, &mut q32);
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        let ctrl = vec![0.0f32; self.model.nu()];
        self.reset_world(world, &q32, &v32, &ctrl, 0.0).map_err(gpu_err)
    }
    /// One upload for all worlds, converted straight into wgpu's staging
    /// memory (no host copy).
    fn set_ctrl_all(&mut self, ctrl: &[f64]) -> Result<(), BatchError> {
        check_len("ctrl", self.nworld * self.model.nu(), ctrl.len())?;
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
