//! [`GpuBatch`]: the host side of a batch over its [`Pipeline`]: settling
//! advances with one readback, what the host knows of the worlds
//! ([`HostView`]), resets, and the [`Batch`] interface.

use super::contacts::CollisionBackend;
use super::pipeline::{GpuBatchOptions, Pipeline};
use super::profile::LaunchTime;
use super::view::{HostView, Unsettled};
use crate::batch::{Batch, BatchError, WorldParams, WorldStatus, check_len, check_rows};
use crate::dynamics;
use crate::gpu::buffers::{BufferSource, Readback};
use crate::gpu::cenic::{
    CENIC_V_SLOTS, GpuCenicStats, GpuCenicWorld, GpuStepRecord, RESET_HEADER, counter, split_time, world_state,
};
use crate::gpu::context::{GpuContext, run_pass};
use crate::gpu::error::GpuError;
use crate::gpu::fields::Field;
use crate::gpu::icf::{GpuIcfWorld, active};
use crate::integrator::{Mode, WorldStats};
use crate::model::Model;
use std::sync::{Arc, Mutex};

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
    /// The stages on the device.
    pipeline: Pipeline,
    /// The one readback of an advance (counters, summaries, q, v).
    readback: Readback,
    view: Mutex<HostView>,
    /// Host staging of masked resets (`cenic_reset`'s layout) and one
    /// world's q in f32, allocated here so that autoresets do not allocate.
    reset_stage: Vec<u32>,
    reset_q32: Vec<f32>,
}

impl std::fmt::Debug for GpuBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBatch")
            .field("model", &self.model.name)
            .field("nworld", &self.nworld)
            .field("adapter", &self.ctx.adapter_name())
            .field("contact_capacity", &self.pipeline.ncon)
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
        if let Mode::ErrorControlled(p) = &mode
            && p.extrapolate
        {
            return Err(GpuError::Unsupported("CenicParams::extrapolate (CPU only)".into()));
        }
        let (pipeline, h_initial) = Pipeline::new(ctx.clone(), model.clone(), nworld, &mode, &options)?;
        // One readback holds the counters, the summaries, q, v and the statistics.
        let (nq, nv) = (model.nq, model.nv);
        let per_world = 16 + 4 * (nq + nv) + size_of::<GpuCenicStats>();
        let bytes = (16 * counter::LEN + nworld * per_world + 64) as u64;
        let readback = Readback::new(&ctx, bytes.max(Readback::DEFAULT_SIZE));
        let batch = Self {
            ctx,
            model,
            nworld,
            mode,
            h_initial: h_initial as f32,
            pipeline,
            readback,
            view: Mutex::new(HostView::default()),
            reset_stage: vec![0; RESET_HEADER + nworld * (1 + nq + nv)],
            reset_q32: vec![0.0; nq],
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
        self.pipeline.ncon
    }

    /// Where the contacts come from.
    pub fn collision_backend(&self) -> CollisionBackend {
        self.pipeline.collision_backend()
    }

    /// Bytes of device memory the batch's buffers take (model constants,
    /// per-world state, contacts, ICF problems, clocks, sensors; not the
    /// staging buffers for readbacks).
    pub fn device_bytes(&self) -> u64 {
        self.pipeline.device_bytes()
    }

    /// The launches of one iteration, in order: WGSL entry points of trial
    /// parts, `collide`, `list unfinished solves` and `solve` (in fixed
    /// steps a listing and its solve repeat within an iteration as often as
    /// the longest solve of the last advance took launches: on a software
    /// adapter, whose loop budget pauses long solves).
    pub fn launch_names(&self) -> Vec<String> {
        self.pipeline.launch_names()
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

    /// Worlds the Newton solve launches ran since creation, as of the
    /// last settled advance: each solve launch runs only the worlds whose
    /// solve is unfinished (listed on the device), so this counts a world
    /// once per launch it was solving in, and idle, finished and waiting
    /// worlds not at all (a 32-bit device count, wrapping).
    pub fn solve_world_launches(&self) -> u32 {
        let _ = self.settle(false, false);
        self.view().listed
    }

    /// Newton solve launches encoded since creation (each over the worlds
    /// whose solve was unfinished, possibly none).
    pub fn solve_launches(&self) -> u64 {
        self.pipeline.solve_launches()
    }

    /// World `world`'s accepted steps since its reset, up to the
    /// `record_steps` capacity, as (start time (s), step (s), error ratio, contacts).
    pub fn step_records(&self, world: usize) -> Result<Vec<(f64, f64, f64, usize)>, BatchError> {
        self.check(world)?;
        let cap = self.pipeline.cenic_buffers.params.record_capacity as usize;
        if cap == 0 {
            return Ok(vec![]);
        }
        self.settle(false, false).map_err(gpu_err)?;
        let stats: Vec<GpuCenicStats> =
            self.pipeline.cenic_buffers.stats.read_range(&self.ctx, &self.readback, world, 1).map_err(gpu_err)?;
        let n = (stats[0].recorded as usize).min(cap);
        let recs: Vec<GpuStepRecord> =
            self.pipeline.cenic_buffers.steps.read_range(&self.ctx, &self.readback, world * cap, n).map_err(gpu_err)?;
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
    /// follow the batch's [`Layout`](crate::gpu::Layout).
    pub fn with_state_sources<R>(&self, f: impl FnOnce([&dyn BufferSource; 4]) -> R) -> R {
        self.pipeline.with_state_sources(f)
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
        self.pipeline.encode_state_kinematics(pass);
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
        self.pipeline.dynamics.set_world_field(Field::Q, w, q)?;
        self.pipeline.dynamics.set_world_field(Field::V, w, v)?;
        self.pipeline.icf_buffers.ctrl.write_at(&self.ctx, w * nu, ctrl)?;
        self.pipeline.icf_buffers.target_velocity.write_at(&self.ctx, w * nu, &vec![0.0; nu])?;
        self.pipeline.cenic_buffers.world.write_at(&self.ctx, w, &[self.fresh_world(time)])?;
        self.pipeline.cenic_buffers.stats.write_at(&self.ctx, w, &[Self::fresh_stats()])?;
        self.pipeline.icf_buffers.world.write_at(&self.ctx, w, &[GpuIcfWorld::default()])?;
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
        let buf = &self.pipeline.cenic_buffers.reset;
        buf.write_at(&self.ctx, 0, &self.reset_stage[..RESET_HEADER + k])?;
        buf.write_at(&self.ctx, rows, &self.reset_stage[rows..rows + k * (nq + nv)])?;
        run_pass(&self.ctx, "cenic: reset worlds", |pass| self.pipeline.cenic.reset_worlds.encode(pass))?;
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
        self.pipeline.dynamics.set_field(Field::Q, q)?;
        self.pipeline.dynamics.set_field(Field::V, v)?;
        self.pipeline.dynamics.set_field(Field::H, &vec![0.0; n])?;
        self.pipeline.icf_buffers.ctrl.write(&self.ctx, &vec![0.0; n * nu])?;
        self.pipeline.icf_buffers.target_velocity.write(&self.ctx, &vec![0.0; n * nu])?;
        self.pipeline.cenic_buffers.world.write(&self.ctx, &vec![self.fresh_world(0.0); n])?;
        self.pipeline.cenic_buffers.stats.write(&self.ctx, &vec![Self::fresh_stats(); n])?;
        self.pipeline.cenic_buffers.q.write(&self.ctx, &vec![0.0; n * 2 * nq])?;
        self.pipeline.cenic_buffers.v.write(&self.ctx, &vec![0.0; n * CENIC_V_SLOTS * nv])?;
        self.pipeline.icf_buffers.world.write(&self.ctx, &vec![GpuIcfWorld::default(); n])?;
        let mut view = self.view();
        view.stats = Some(vec![WorldStats::default(); n]);
        view.status = vec![WorldStatus::Ok; n];
        view.times = vec![0.0; n];
        view.state = None;
        drop(view);
        self.ctx.check_errors()
    }

    /// Runs the Newton solves' structured factorization by elimination
    /// levels, one thread per dof block of a level, where it fits the loop
    /// budget ([`crate::gpu::icf::IcfBuffers::set_level_factorization`]; off
    /// by default). The results are the same bit for bit.
    pub fn set_level_factorization(&self, on: bool) {
        self.pipeline.icf_buffers.set_level_factorization(&self.ctx, on);
    }

    /// Lets the Newton solves factor over the dof tree where it pays (the
    /// default) or not ([`crate::gpu::icf::IcfBuffers::set_tree_factorization`]);
    /// for comparisons.
    pub fn set_tree_factorization(&self, on: bool) {
        self.pipeline.icf_buffers.set_tree_factorization(&self.ctx, on);
    }

    /// Times every launch from now on with GPU timestamps (up to
    /// `capacity` launches between two [`Self::profile`] calls); false when
    /// the adapter has no timestamps between dispatches.
    pub fn enable_profiling(&mut self, capacity: u32) -> Result<bool, GpuError> {
        self.pipeline.enable_profiling(capacity)
    }

    /// Times every launch from now on on the host instead (for adapters
    /// without timestamps between dispatches): each launch of an iteration
    /// is submitted alone and waited for, so [`Self::profile`] gives each
    /// launch's share; its totals include a host round trip per launch.
    pub fn enable_host_timing(&mut self) {
        self.pipeline.enable_host_timing();
    }

    /// GPU time per launch of the iteration since profiling was enabled or
    /// the last call (then reset), and the launches that were not timed
    /// because the query set was full. Empty without profiling.
    pub fn profile(&self) -> Result<(Vec<LaunchTime>, u64), GpuError> {
        self.settle(false, false)?;
        self.pipeline.profile(&self.readback)
    }

    /// Encodes `n` iterations (after the start of an advance when `start`)
    /// and counts them.
    fn iterate(&self, n: u64, start: bool) -> Result<(), GpuError> {
        self.pipeline.iterate(n, start, &self.readback)?;
        self.view().iterations += n;
        Ok(())
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
        self.pipeline.cenic_buffers.set_advance_dt(&self.ctx, dt);
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
            let data = self.pipeline.dynamics.gpu_data();
            let (qbuf, qoff, qlen) = data.field_source(Field::Q);
            let (vbuf, voff, vlen) = data.field_source(Field::V);
            let mut q = vec![0f32; if need_state { (qlen / 4) as usize } else { 0 }];
            let mut v = vec![0f32; if need_state { (vlen / 4) as usize } else { 0 }];
            let mut raw_stats = vec![GpuCenicStats::default(); if need_stats { n } else { 0 }];
            // The solve lists' counters (icf_active up to the list).
            let mut active = [0u32; active::LIST];
            self.pipeline.cenic_buffers.counter.write_at(&self.ctx, 0, &[0, 0])?;
            {
                let mut parts: Vec<(&wgpu::Buffer, u64, &mut [u8])> = vec![
                    (self.pipeline.cenic_buffers.counter.buffer(), 0, bytemuck::cast_slice_mut(&mut counters)),
                    (self.pipeline.cenic_buffers.summary.buffer(), 0, bytemuck::cast_slice_mut(&mut summary)),
                    (qbuf, qoff, bytemuck::cast_slice_mut(&mut q)),
                    (vbuf, voff, bytemuck::cast_slice_mut(&mut v)),
                    (self.pipeline.cenic_buffers.stats.buffer(), 0, bytemuck::cast_slice_mut(&mut raw_stats)),
                    (self.pipeline.icf_buffers.active.buffer(), 0, bytemuck::cast_slice_mut(&mut active)),
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
                            self.pipeline.cenic.summarize.encode(&mut pass);
                        }
                    },
                    &mut parts,
                )?;
            }
            let state_read = need_state.then(|| (data.unpack(Field::Q, &q), data.unpack(Field::V, &v)));
            let stats_read = need_stats.then(|| raw_stats.iter().map(WorldStats::from).collect::<Vec<_>>());
            self.view().listed = active[active::LISTED];
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
            // Fixed steps: the next advances repeat each solve as often as
            // the longest solve of this one needed (kept when none
            // finished). Every world steps in every iteration, so a paused
            // solve would hold all worlds for whole iterations. Under error
            // control the trials are not aligned and a repeat launches few
            // worlds: there the repeats cost more launches than the
            // iterations they save (BENCHMARKS.md, lavapipe), so once.
            let most = active[active::MOST_DISPATCHES] as usize;
            if most > 0 {
                if matches!(self.mode, Mode::Fixed { .. }) {
                    self.pipeline.set_solve_repeats(most);
                }
                self.pipeline.icf_buffers.active.write_at(&self.ctx, active::MOST_DISPATCHES, &[0])?;
            }
            let newly_failed: Vec<usize> = {
                let view = self.view();
                (0..n).filter(|&w| summary[w][2] == world_state::FAILED && view.status[w] == WorldStatus::Ok).collect()
            };
            let worlds = if newly_failed.is_empty() {
                vec![]
            } else {
                self.pipeline.cenic_buffers.read_worlds(&self.ctx, &self.readback)?
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
        self.pipeline.dynamics.set_world_field(Field::Q, world, &q32).map_err(gpu_err)?;
        self.pipeline.dynamics.set_world_field(Field::V, world, &v32).map_err(gpu_err)?;
        // No last step (Simulator::set_state): with the solve's step h = 0
        // the acceleration `qacc` that warm-starts the next step, the touch
        // sensors and the constraint forces read zero, and no factor is kept.
        self.pipeline.icf_buffers.world.write_at(&self.ctx, world, &[GpuIcfWorld::default()]).map_err(gpu_err)
    }
    fn set_ctrl(&mut self, world: usize, ctrl: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        let nu = self.model.nu();
        check_len("ctrl", nu, ctrl.len())?;
        self.settle(false, false).map_err(gpu_err)?;
        let c: Vec<f32> = ctrl.iter().map(|&x| x as f32).collect();
        self.pipeline.icf_buffers.ctrl.write_at(&self.ctx, world * nu, &c).map_err(gpu_err)
    }
    fn set_target_velocity(&mut self, world: usize, vref: &[f64]) -> Result<(), BatchError> {
        self.check(world)?;
        let nu = self.model.nu();
        check_len("target velocity", nu, vref.len())?;
        self.settle(false, false).map_err(gpu_err)?;
        let c: Vec<f32> = vref.iter().map(|&x| x as f32).collect();
        self.pipeline.icf_buffers.target_velocity.write_at(&self.ctx, world * nu, &c).map_err(gpu_err)
    }
    fn set_params(&mut self, world: usize, params: WorldParams) -> Result<(), BatchError> {
        self.check(world)?;
        self.settle(false, false).map_err(gpu_err)?;
        self.pipeline.dynamics.gpu_model().set_world_params(&self.ctx, world, &params).map_err(gpu_err)
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
        let Some(sensors) = &self.pipeline.sensors else { return Ok(()) };
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
        let buffer = self.pipeline.icf_buffers.ctrl.buffer();
        let mut view = self
            .ctx
            .queue
            .write_buffer_with(buffer, 0, size)
            .ok_or_else(|| BatchError::Backend("controls: staging write refused".into()))?;
        view.slice(..).write_iter(ctrl.iter().flat_map(|x| (*x as f32).to_ne_bytes()));
        Ok(())
    }
}
