//! [`Pipeline`]: the device side of a batch. Every stage's buffers and
//! kernels, built in stage order (the multibody state, the contacts, the
//! contact problem and its solve, the CENIC clocks and trial parts, the
//! sensors), and the encoding of iterations. It knows nothing of what the
//! host has read ([`super::GpuBatch`] does).

use super::contacts::{Collision, CollisionBackend, CollisionLaunch, default_contact_capacity};
use super::profile::{LaunchTime, Profiler, Timestamps};
use super::schedule::{Launch, Schedule};
use crate::gpu::buffers::{BufferSource, Readback};
use crate::gpu::cenic::{CenicBuffers, CenicKernels, Fusion, part_loops};
use crate::gpu::collision::GpuCollision;
use crate::gpu::context::{GpuContext, run_pass};
use crate::gpu::dynamics::{GpuDynamics, Stage};
use crate::gpu::error::GpuError;
use crate::gpu::fields::{GpuData, Layout};
use crate::gpu::icf::{IcfBuffers, ListedSolves, SolverState, SolverVariant};
use crate::gpu::model::GpuModel;
use crate::gpu::sensors::GpuSensors;
use crate::icf::SolverParams;
use crate::integrator::Mode;
#[cfg(doc)]
use crate::integrator::WorldStats;
use crate::model::Model;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Settings of a [`GpuBatch`](super::GpuBatch) beyond the mode.
#[derive(Clone, Debug, Default)]
pub struct GpuBatchOptions {
    /// Contacts kept per world; [`default_contact_capacity`] when `None`.
    /// Contacts beyond it are counted in [`WorldStats::contact_overflow`].
    pub contact_capacity: Option<usize>,
    /// Accepted steps recorded per world ([`GpuBatch::step_records`](super::GpuBatch::step_records)); 0: none.
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

/// The stages of a batch on its device (see the module docs). All
/// buffers, pipelines and bind groups are created in [`Pipeline::new`];
/// encoding allocates nothing.
pub struct Pipeline {
    ctx: Arc<GpuContext>,
    /// Contacts per world.
    pub(super) ncon: usize,
    /// The speculative contact skin of the mode (m).
    skin: f64,
    /// The model and per-world state, and the multibody kernels.
    pub(super) dynamics: GpuDynamics,
    /// Where the contacts come from.
    pub(super) collision: Collision,
    /// The contact problems, their settings and solver state.
    pub(super) icf_buffers: IcfBuffers,
    /// The Newton solves over the worlds whose solve is unfinished.
    pub(super) icf: ListedSolves,
    /// Clocks, statistics, counters.
    pub(super) cenic_buffers: CenicBuffers,
    /// Starting advances, summaries, masked resets.
    pub(super) cenic: CenicKernels,
    /// One iteration's launches.
    pub(super) schedule: Schedule,
    /// The model's sensors (`None` without sensors).
    pub(super) sensors: Option<GpuSensors>,
    /// Timestamps around each launch, when enabled.
    profiler: Option<Profiler>,
    /// Listings and launches of the unfinished solves per solve of an
    /// iteration ([`Self::set_solve_repeats`]).
    solve_repeats: AtomicUsize,
    /// Listed solve launches encoded since creation.
    solve_launches: AtomicU64,
}

/// Most listed solve launches per solve of an iteration
/// ([`Pipeline::set_solve_repeats`]).
pub(super) const MAX_SOLVE_REPEATS: usize = 64;

impl Pipeline {
    /// The stages for `nworld` worlds of `model` advancing in `mode`
    /// (an ICF mode: checked by the caller) with `options`; returns it
    /// and the first step of a fresh world (s).
    pub fn new(
        ctx: Arc<GpuContext>,
        model: Arc<Model>,
        nworld: usize,
        mode: &Mode,
        options: &GpuBatchOptions,
    ) -> Result<(Self, f64), GpuError> {
        let ncon = options.contact_capacity.unwrap_or_else(|| default_contact_capacity(&model));
        let layout = options.layout;
        let skin = mode.contact_skin();
        // The model and per-world state, with the multibody kernels.
        let mut dynamics = GpuDynamics::with_layout(ctx.clone(), model.clone(), nworld, layout)?;
        dynamics.set_contact_capacity(ncon)?;
        // The contact problems and the clocks.
        let mut icf_buffers = IcfBuffers::with_layout(&ctx, &model, nworld, ncon, layout)?;
        let cenic_buffers = CenicBuffers::new(&ctx, &model, nworld, mode, options.record_steps)?;
        let (h_initial, solver) = match mode {
            Mode::Fixed { dt } => (*dt, options.solver.for_fixed_step(*dt)),
            Mode::ErrorControlled(p) => (p.first_step(&model), p.solver_params(&options.solver)),
            m => unreachable!("refused by the caller: {}", m.name()),
        };
        icf_buffers.set_params(&ctx, &solver);
        if let Some(v) = options.solver_variant {
            icf_buffers.set_variant(v);
        }
        // The contacts.
        let collision = Collision::new(
            &ctx,
            &dynamics,
            ncon,
            layout,
            skin,
            options.collision,
            options.collision_launch,
            &[&icf_buffers, &cenic_buffers],
        )?;
        // The kernels that read the contacts: the ICF build and solve, the
        // CENIC kernels and the trial parts.
        let (icf, cenic, schedule) = collision.with_source(|contacts| {
            let sources: [&dyn BufferSource; 5] =
                [dynamics.gpu_model(), dynamics.gpu_data(), contacts, &icf_buffers, &cenic_buffers];
            let variant = icf_buffers.variant();
            let state = options.solver_state.unwrap_or_else(|| SolverState::for_model(&ctx, model.nv, variant));
            let icf = ListedSolves::new(&ctx, nworld, variant, state, &sources)?;
            let cenic = CenicKernels::new(&ctx, nworld, &sources)?;
            let npair = match mode {
                Mode::ErrorControlled(p) if p.conservative_advancement => cenic_buffers.params.npair as usize,
                _ => 0,
            };
            let ndofc = icf_buffers.layout().ndofc;
            let loops = |p| part_loops(p, &model, ncon, ndofc, npair);
            let schedule = Schedule::new(&ctx, mode, nworld, options.fusion, loops, &sources)?;
            Ok::<_, GpuError>((icf, cenic, schedule))
        })?;
        let mut pipeline = Self {
            ctx,
            ncon,
            skin,
            dynamics,
            collision,
            icf_buffers,
            icf,
            cenic_buffers,
            cenic,
            schedule,
            sensors: None,
            profiler: None,
            solve_repeats: AtomicUsize::new(1),
            solve_launches: AtomicU64::new(0),
        };
        // The sensors, reading the state buffers (those the device cannot
        // evaluate are refused when read, not here).
        if model.nsensordata > 0 {
            let sensors = pipeline.with_state_sources(|s| GpuSensors::new(&pipeline.ctx, &model, nworld, &s))?;
            pipeline.sensors = Some(sensors);
        }
        Ok((pipeline, h_initial))
    }

    /// Where the contacts come from.
    pub fn collision_backend(&self) -> CollisionBackend {
        self.collision.backend()
    }

    /// The buffer sources of the model constants, the per-world data, the
    /// contacts and the ICF buffers, given to `f` (see
    /// [`GpuBatch::with_state_sources`](super::GpuBatch::with_state_sources)).
    pub fn with_state_sources<R>(&self, f: impl FnOnce([&dyn BufferSource; 4]) -> R) -> R {
        self.collision.with_source(|contacts| {
            f([self.dynamics.gpu_model(), self.dynamics.gpu_data(), contacts, &self.icf_buffers])
        })
    }

    /// Bytes of device memory the stages' buffers take (model constants,
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
    /// parts, `collide`, `list unfinished solves` and `solve` (a listing
    /// and its solve may repeat within an iteration in fixed steps).
    pub fn launch_names(&self) -> Vec<String> {
        self.schedule.names()
    }

    /// Encodes the kinematics and body-velocity stages at the current state.
    pub fn encode_state_kinematics(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.dynamics.encode(pass, Stage::Kinematics);
        self.dynamics.encode(pass, Stage::Velocities);
    }

    /// Sets how often each solve of an iteration lists the unfinished
    /// solves and launches them (1 to [`MAX_SOLVE_REPEATS`]): the solves a
    /// software adapter's loop budget paused resume within the iteration
    /// instead of in the next ones (which would run every part and the
    /// collision again for the worlds still running); once every solve
    /// has finished, a repeat costs a listing and an empty launch.
    pub(super) fn set_solve_repeats(&self, n: usize) {
        self.solve_repeats.store(n.clamp(1, MAX_SOLVE_REPEATS), Ordering::Relaxed);
    }

    /// Listed solve launches encoded since creation.
    pub(super) fn solve_launches(&self) -> u64 {
        self.solve_launches.load(Ordering::Relaxed)
    }

    /// Records launch `l` of an iteration (the host collision is not a launch).
    fn encode_launch(&self, pass: &mut wgpu::ComputePass<'_>, l: Launch) {
        match l {
            Launch::Parts(k) => self.schedule.step(k).encode(pass),
            Launch::List => self.icf.encode_list(pass),
            Launch::Solve => {
                self.solve_launches.fetch_add(1, Ordering::Relaxed);
                self.icf.encode_solve(pass, &self.icf_buffers)
            }
            Launch::Collide => self.collision.encode(pass),
        }
    }

    /// The launches `range` of an iteration as encoded, with their index:
    /// each listing and solve pair repeated [`Self::set_solve_repeats`] times.
    fn expanded(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = (usize, Launch)> + '_ {
        let launches = &self.schedule.launches;
        let repeats = self.solve_repeats.load(Ordering::Relaxed);
        launches[range.clone()].iter().zip(range).flat_map(move |(l, k)| {
            // A solve is encoded with the listing before it.
            let (count, period) = match l {
                Launch::List => (2 * repeats, 2),
                Launch::Solve => (0, 1),
                _ => (1, 1),
            };
            (0..count).map(move |j| (k + j % period, launches[k + j % period]))
        })
    }

    /// Encodes `n` iterations into one submission (GPU collision), after
    /// the start of an advance when `start`, or runs them with the host
    /// collision in between (one wait per collision point, reading the
    /// clocks through `readback`).
    pub(super) fn iterate(&self, n: u64, start: bool, readback: &Readback) -> Result<(), GpuError> {
        let launches = &self.schedule.launches;
        if self.collision.backend() == CollisionBackend::Host {
            if start {
                run_pass(&self.ctx, "cenic: start advance", |pass| self.cenic.start_advance.encode(pass))?;
            }
            for _ in 0..n {
                let mut from = 0;
                for (k, l) in launches.iter().enumerate() {
                    if *l == Launch::Collide {
                        run_pass(&self.ctx, "cenic iteration", |pass| {
                            self.expanded(from..k).for_each(|(_, l)| self.encode_launch(pass, l))
                        })?;
                        self.collision.collide_on_host(
                            &self.ctx,
                            &self.dynamics,
                            &self.cenic_buffers,
                            readback,
                            self.skin,
                        )?;
                        from = k + 1;
                    }
                }
                run_pass(&self.ctx, "cenic iteration", |pass| {
                    self.expanded(from..launches.len()).for_each(|(_, l)| self.encode_launch(pass, l))
                })?;
            }
        } else if let Some(p @ Profiler::Host(_)) = &self.profiler {
            // Each launch alone, waited for.
            if start {
                run_pass(&self.ctx, "cenic: start advance", |pass| self.cenic.start_advance.encode(pass))?;
            }
            for _ in 0..n {
                for (k, l) in self.expanded(0..launches.len()) {
                    self.ctx.wait()?;
                    let t = std::time::Instant::now();
                    run_pass(&self.ctx, "cenic launch (host timed)", |pass| self.encode_launch(pass, l))?;
                    self.ctx.wait()?;
                    p.add_host_time(k, t.elapsed().as_secs_f64());
                }
            }
        } else if n > 0 || start {
            run_pass(&self.ctx, "cenic iterations", |pass| {
                if start {
                    self.cenic.start_advance.encode(pass);
                }
                for _ in 0..n {
                    for (k, l) in self.expanded(0..launches.len()) {
                        match &self.profiler {
                            Some(Profiler::Timestamps(p)) => p.timed(pass, k, |pass| self.encode_launch(pass, l)),
                            _ => self.encode_launch(pass, l),
                        }
                    }
                }
            })?;
        }
        Ok(())
    }

    /// Times every launch from now on (up to `capacity` launches between
    /// two [`Self::profile`] calls); false when the adapter has no
    /// timestamps between dispatches.
    pub(super) fn enable_profiling(&mut self, capacity: u32) -> Result<bool, GpuError> {
        let Some(t) = Timestamps::new(&self.ctx, capacity)? else { return Ok(false) };
        self.profiler = Some(Profiler::Timestamps(t));
        Ok(true)
    }

    /// Times every launch from now on on the host: each launch submitted
    /// alone and waited for (the shares of the launches, not the pipelined
    /// total).
    pub(super) fn enable_host_timing(&mut self) {
        self.profiler = Some(Profiler::host(self.schedule.launches.len()));
    }

    /// GPU time per launch since profiling was enabled or the last call
    /// (then reset), and the launches not timed; empty without profiling.
    pub(super) fn profile(&self, readback: &Readback) -> Result<(Vec<LaunchTime>, u64), GpuError> {
        match &self.profiler {
            Some(p) => p.read(&self.ctx, readback, &self.launch_names()),
            None => Ok((vec![], 0)),
        }
    }
}
