//! Kernels of `kernels/cenic.wgsl`, the twin of `src/integrator/cenic.rs`
//! (error control with step doubling, the error norm, the step-size rule,
//! conservative advancement, a clock per world), and their buffers.
//!
//! The kernels are one thread per world. [`super::batch::GpuBatch`]
//! encodes them around the multibody, collision and ICF stages as one
//! trial per world per iteration (see the module docs of `cenic.wgsl`).

use super::GpuError;
use super::buffers::{BufferSource, Readback, StorageBuffer};
use super::context::GpuContext;
use super::icf::uniform_buffer;
use super::model::StructLayout;
use super::shaders::Kernel;
use crate::collision::pair_margin;
use crate::icf::SolveError;
use crate::integrator::{Mode, StepError, WorldStats};
use crate::model::Model;
use bytemuck::{Pod, Zeroable};
use core::mem::offset_of;

/// Error-control settings (WGSL `CenicParams`, a uniform).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuCenicParams {
    /// 0 fixed step, 1 error-controlled.
    pub mode: u32,
    /// 1: conservative advancement on.
    pub conservative_advancement: u32,
    /// Step records kept per world.
    pub record_capacity: u32,
    /// Entries of `cenic_pairs`.
    pub npair: u32,
    /// Fixed step (s).
    pub fixed_dt: f32,
    /// Accuracy (m, rad).
    pub accuracy: f32,
    /// Largest step (s).
    pub max_step: f32,
    /// Smallest step (s).
    pub min_step: f32,
    /// τ_v (s).
    pub velocity_time_scale: f32,
    /// Speculative contact skin (m).
    pub skin: f32,
    /// 1: accept steps that miss the accuracy at the minimum step (degraded mode).
    pub accept_accuracy_misses: u32,
    /// 1.0 (an opaque multiplier that keeps two-sum exact).
    pub one: f32,
    /// Interval of the current advance as (hi, lo) (s).
    pub advance_dt: [f32; 2],
    /// Padding.
    pub _pad2: [f32; 2],
}

/// A world's clock and step-size state (WGSL `CenicWorld`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuCenicWorld {
    /// Time (hi, lo) (s).
    pub time: [f32; 2],
    /// End of the current advance (hi, lo) (s).
    pub t_end: [f32; 2],
    /// Step to try next (s).
    pub h_next: f32,
    /// Nominal step of the current trial (s).
    pub h: f32,
    /// Step of the current trial (s).
    pub h_try: f32,
    /// Last error ratio.
    pub err: f32,
    /// [`world_state`] code.
    pub state: u32,
    /// 1 during a trial.
    pub trial: u32,
    /// Failure code (`FAIL_*` in `cenic.wgsl`).
    pub reason: u32,
    /// Failure detail.
    pub detail: f32,
    /// 1 for the first trial of a step.
    pub first_trial: u32,
    /// 1 when the trial's step was cut.
    pub shortened: u32,
    /// 1 when the trial lands on the interval end.
    pub lands: u32,
    /// Contacts at the start of the step.
    pub ncontact0: u32,
}

/// [`GpuCenicWorld::state`] codes.
pub mod world_state {
    /// Reached the end of the advance (idle).
    pub const DONE: u32 = 0;
    /// Stepping.
    pub const RUNNING: u32 = 1;
    /// Failed and frozen.
    pub const FAILED: u32 = 2;
}

/// Failure codes of `cenic.wgsl`.
mod fail {
    pub const Q: u32 = 1;
    pub const V: u32 = 2;
    pub const HALF_STEP: u32 = 3;
    pub const SOLVE: u32 = 16;
    /// + 2·dof + (1 when the velocity term drove the error).
    pub const ACCURACY: u32 = 4096;
}

impl GpuCenicWorld {
    /// Time as f64 (s).
    pub fn time(&self) -> f64 {
        self.time[0] as f64 + self.time[1] as f64
    }

    /// The error that froze a failed world, as the CPU reports it.
    pub fn failure(&self) -> Option<StepError> {
        if self.state != world_state::FAILED {
            return None;
        }
        Some(match self.reason {
            fail::Q => StepError::NonFinite("q"),
            fail::V => StepError::NonFinite("v"),
            fail::HALF_STEP => StepError::NonFinite("half step"),
            r if r >= fail::ACCURACY => StepError::AccuracyNotMet {
                error: self.detail as f64,
                // err holds the error over the accuracy.
                accuracy: (self.detail / self.err) as f64,
                h: self.h_try as f64,
                dof: ((r - fail::ACCURACY) / 2) as usize,
                velocity: (r - fail::ACCURACY) % 2 == 1,
            },
            r => StepError::Solve(if r >= fail::SOLVE {
                super::icf::solve_error(r - fail::SOLVE, self.detail)
            } else {
                SolveError::NonFinite
            }),
        })
    }
}

/// A (hi, lo) pair of f32 with hi + lo ≈ `t` to about 48 bits.
pub fn split_time(t: f64) -> [f32; 2] {
    let hi = t as f32;
    [hi, (t - hi as f64) as f32]
}

/// Per-world statistics of the current advance (WGSL `CenicStats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuCenicStats {
    /// Accepted steps.
    pub accepted: u32,
    /// Rejected steps.
    pub rejected: u32,
    /// Newton iterations.
    pub newton_iterations: u32,
    /// Line-search iterations.
    pub line_search_iterations: u32,
    /// Factorizations.
    pub factorizations: u32,
    /// Steps accepted at h_min above the accuracy.
    pub accuracy_misses: u32,
    /// Steps cut by conservative advancement.
    pub impact_limited: u32,
    /// Contacts beyond the capacity.
    pub contact_overflow: u32,
    /// Smallest accepted step (s; 3e38 when none).
    pub min_h: f32,
    /// Largest accepted step (s).
    pub max_h: f32,
    /// Steps recorded since the reset (may exceed the capacity).
    pub recorded: u32,
    /// Padding.
    pub _pad: u32,
}

impl From<&GpuCenicStats> for WorldStats {
    fn from(g: &GpuCenicStats) -> Self {
        let stepped = g.accepted > 0;
        WorldStats {
            accepted: g.accepted as u64,
            rejected: g.rejected as u64,
            newton_iterations: g.newton_iterations as u64,
            line_search_iterations: g.line_search_iterations as u64,
            factorizations: g.factorizations as u64,
            min_h: if stepped { g.min_h as f64 } else { f64::INFINITY },
            max_h: if stepped { g.max_h as f64 } else { 0.0 },
            accuracy_misses: g.accuracy_misses as u64,
            last_miss: None, // not tracked on the GPU
            impact_limited: g.impact_limited as u64,
            event_limited: 0,
            contact_overflow: g.contact_overflow as u64,
        }
    }
}

/// An accepted step (WGSL `StepRecord`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuStepRecord {
    /// Start time (hi, lo) (s).
    pub t: [f32; 2],
    /// Step (s).
    pub h: f32,
    /// Error ratio (0 in fixed-step mode).
    pub err: f32,
    /// Contacts at the start of the step.
    pub contacts: u32,
    /// Padding.
    pub _pad: [u32; 3],
}

/// A collidable geom pair (WGSL `GeomPair`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuGeomPair {
    /// Geoms, a < b.
    pub a: u32,
    /// Geoms, a < b.
    pub b: u32,
    /// The pair's contact margin (m).
    pub margin: f32,
    /// Padding.
    pub _pad: u32,
}

/// Sizes and field offsets of the CENIC structs, keyed by WGSL struct name.
pub fn struct_layouts() -> Vec<StructLayout> {
    macro_rules! layout {
        ($wgsl:literal, $t:ty, [$($f:ident),* $(,)?]) => {
            ($wgsl, size_of::<$t>(), vec![$((stringify!($f), offset_of!($t, $f))),*])
        };
    }
    vec![
        layout!(
            "CenicParams",
            GpuCenicParams,
            [
                mode,
                conservative_advancement,
                record_capacity,
                npair,
                fixed_dt,
                accuracy,
                max_step,
                min_step,
                velocity_time_scale,
                skin,
                accept_accuracy_misses,
                one,
                advance_dt
            ]
        ),
        layout!(
            "CenicWorld",
            GpuCenicWorld,
            [
                time,
                t_end,
                h_next,
                h,
                h_try,
                err,
                state,
                trial,
                reason,
                detail,
                first_trial,
                shortened,
                lands,
                ncontact0
            ]
        ),
        layout!(
            "CenicStats",
            GpuCenicStats,
            [
                accepted,
                rejected,
                newton_iterations,
                line_search_iterations,
                factorizations,
                accuracy_misses,
                impact_limited,
                contact_overflow,
                min_h,
                max_h,
                recorded
            ]
        ),
        layout!("StepRecord", GpuStepRecord, [t, h, err, contacts]),
        layout!("GeomPair", GpuGeomPair, [a, b, margin]),
    ]
}

/// The geom pairs conservative advancement checks: those that may collide
/// with at least one geom on a moving body, a < b, with their margins.
pub fn geom_pairs(model: &Model) -> Vec<GpuGeomPair> {
    let n = model.geoms.len();
    let mut out = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            let dynamic = model.body_is_dynamic(model.geoms[a].body) || model.body_is_dynamic(model.geoms[b].body);
            if dynamic && model.geoms_can_collide(a, b) {
                out.push(GpuGeomPair { a: a as u32, b: b as u32, margin: pair_margin(model, a, b) as f32, _pad: 0 });
            }
        }
    }
    out
}

/// Settings for `mode` (with `record_capacity` step records per world).
pub fn params_for(mode: &Mode, npair: usize, record_capacity: usize) -> GpuCenicParams {
    let mut p = GpuCenicParams {
        mode: 0,
        conservative_advancement: 0,
        record_capacity: record_capacity as u32,
        npair: npair as u32,
        fixed_dt: 0.0,
        accuracy: 1.0,
        max_step: 0.0,
        min_step: 0.0,
        velocity_time_scale: 0.0,
        skin: 0.0,
        accept_accuracy_misses: 0,
        one: 1.0,
        advance_dt: [0.0; 2],
        _pad2: [0.0; 2],
    };
    match mode {
        Mode::Fixed { dt } => p.fixed_dt = *dt as f32,
        Mode::ErrorControlled(c) => {
            p.mode = 1;
            p.conservative_advancement = c.conservative_advancement as u32;
            p.accuracy = c.accuracy as f32;
            p.max_step = c.max_step as f32;
            p.min_step = c.min_step as f32;
            p.velocity_time_scale = c.velocity_time_scale as f32;
            p.skin = c.skin as f32;
            p.accept_accuracy_misses = c.accept_accuracy_misses as u32;
        }
    }
    p
}

/// The CENIC buffers of `nworld` worlds.
pub struct CenicBuffers {
    nworld: usize,
    /// Host copy of the settings.
    pub params: GpuCenicParams,
    params_buffer: wgpu::Buffer,
    weights: StorageBuffer<f32>,
    pairs: StorageBuffer<GpuGeomPair>,
    /// Clocks (nworld).
    pub world: StorageBuffer<GpuCenicWorld>,
    /// Statistics of the current advance (nworld).
    pub stats: StorageBuffer<GpuCenicStats>,
    /// q0 and q_full (nworld, 2, nq).
    pub q: StorageBuffer<f32>,
    /// v0 and v_full (nworld, 2, nv).
    pub v: StorageBuffer<f32>,
    /// Step records (nworld, record capacity).
    pub steps: StorageBuffer<GpuStepRecord>,
    /// Running-world counter.
    pub counter: StorageBuffer<u32>,
}

impl std::fmt::Debug for CenicBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CenicBuffers").field("nworld", &self.nworld).field("params", &self.params).finish()
    }
}

impl CenicBuffers {
    /// WGSL names of the buffers this provides.
    pub const BUFFER_NAMES: [&'static str; 9] = [
        "cenic_params",
        "cenic_weights",
        "cenic_pairs",
        "cenic_world",
        "cenic_stats",
        "cenic_q",
        "cenic_v",
        "cenic_steps",
        "cenic_counter",
    ];

    /// Buffers for `nworld` worlds of `model` advancing in `mode`, keeping
    /// `record_capacity` step records per world.
    pub fn new(
        ctx: &GpuContext,
        model: &Model,
        nworld: usize,
        mode: &Mode,
        record_capacity: usize,
    ) -> Result<Self, GpuError> {
        let pairs = geom_pairs(model);
        let params = params_for(mode, pairs.len(), record_capacity);
        let weights: Vec<f32> = (0..model.nv)
            .map(|i| match mode {
                Mode::ErrorControlled(c) => c.weights.get(i).copied().unwrap_or(1.0) as f32,
                Mode::Fixed { .. } => 1.0,
            })
            .collect();
        Ok(Self {
            nworld,
            params,
            params_buffer: uniform_buffer(ctx, "cenic_params", &params),
            weights: StorageBuffer::from_slice(ctx, "cenic_weights", &weights)?,
            pairs: StorageBuffer::from_slice(ctx, "cenic_pairs", &pairs)?,
            world: StorageBuffer::new(ctx, "cenic_world", nworld)?,
            stats: StorageBuffer::new(ctx, "cenic_stats", nworld)?,
            q: StorageBuffer::new(ctx, "cenic_q", nworld * 2 * model.nq)?,
            v: StorageBuffer::new(ctx, "cenic_v", nworld * 2 * model.nv)?,
            steps: StorageBuffer::new(ctx, "cenic_steps", nworld * record_capacity)?,
            counter: StorageBuffer::new(ctx, "cenic_counter", 4)?,
        })
    }

    /// Sets the interval of the next advance (s).
    pub fn set_advance_dt(&mut self, ctx: &GpuContext, dt: f64) {
        self.params.advance_dt = split_time(dt);
        ctx.queue.write_buffer(&self.params_buffer, 0, bytemuck::bytes_of(&self.params));
    }

    /// Reads every world's clock.
    pub fn read_worlds(&self, ctx: &GpuContext, readback: &Readback) -> Result<Vec<GpuCenicWorld>, GpuError> {
        self.world.read(ctx, readback)
    }
}

impl BufferSource for CenicBuffers {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        Some(match name {
            "cenic_params" => &self.params_buffer,
            "cenic_weights" => self.weights.buffer(),
            "cenic_pairs" => self.pairs.buffer(),
            "cenic_world" => self.world.buffer(),
            "cenic_stats" => self.stats.buffer(),
            "cenic_q" => self.q.buffer(),
            "cenic_v" => self.v.buffer(),
            "cenic_steps" => self.steps.buffer(),
            "cenic_counter" => self.counter.buffer(),
            _ => return None,
        })
    }
}

/// The CENIC kernels (one thread per world each).
#[derive(Debug)]
pub struct CenicKernels {
    /// Starts an advance: t_end = t + dt, per-advance statistics reset.
    pub start_advance: Kernel,
    /// Starts a trial: finite-state check, saves x0.
    pub begin: Kernel,
    /// Chooses the trial's step after the geometry at x0.
    pub choose_step: Kernel,
    /// After the full (or fixed) step's solve.
    pub after_full: Kernel,
    /// Accepts a fixed step.
    pub finish_fixed: Kernel,
    /// Starts the first half step.
    pub start_half: Kernel,
    /// After the first half step's solve.
    pub after_half: Kernel,
    /// Starts the second half step (after the geometry at x_half).
    pub start_second_half: Kernel,
    /// After the second half step's solve.
    pub after_second_half: Kernel,
    /// Error estimate, accept or reject.
    pub finish: Kernel,
    /// Counts running worlds.
    pub count_running: Kernel,
}

impl CenicKernels {
    /// Kernel file stem.
    pub const STAGE: &'static str = "cenic";

    /// Creates the kernels for `nworld` worlds over `sources`.
    pub fn new(ctx: &GpuContext, nworld: usize, sources: &[&dyn BufferSource]) -> Result<Self, GpuError> {
        let k = |entry| Kernel::new(ctx, Self::STAGE, entry, nworld, sources);
        Ok(Self {
            start_advance: k("cenic_start_advance")?,
            begin: k("cenic_begin")?,
            choose_step: k("cenic_choose_step")?,
            after_full: k("cenic_after_full")?,
            finish_fixed: k("cenic_finish_fixed")?,
            start_half: k("cenic_start_half")?,
            after_half: k("cenic_after_half")?,
            start_second_half: k("cenic_start_second_half")?,
            after_second_half: k("cenic_after_second_half")?,
            finish: k("cenic_finish")?,
            count_running: k("cenic_count_running")?,
        })
    }
}
