//! Kernels of `kernels/cenic.wgsl`, the twin of `src/integrator/cenic.rs`
//! (error control with step doubling, the error norm, the step-size rule,
//! conservative advancement, a clock per world), and their buffers.
//!
//! The kernels are one thread per world. A trial (one fixed step, or a
//! step-doubling attempt) is a sequence of [`Part`]s (`part_*` in
//! `cenic.wgsl`: the multibody stages, the ICF build, the step-size control
//! and the position update of one world), between the collision and the
//! Newton solves ([`FIXED_ITERATION`], [`STEP_DOUBLING_ITERATION`]). Each
//! world records the [`TrialStage`] it is at, so consecutive parts can run
//! in one launch ([`step_entry_points`] generates an entry point for every
//! run of consecutive parts, [`Fusion`] chooses them) and a launch skips the
//! worlds that are elsewhere. The batch encodes whole iterations without
//! reading anything back.

use super::buffers::{BufferSource, Readback, StorageBuffer, uniform_buffer};
use super::collision::STATUS_LOOP_BUDGET;
use super::compose::KernelFile;
use super::context::GpuContext;
use super::data::DATA;
use super::error::GpuError;
use super::icf::solve_error;
use super::kernel::Kernel;
use super::model::StructLayout;
use super::names::{KernelName, TrialStage};
use super::{icf, integrate, kinematics, rnea};
use crate::collision::pair_margin;
use crate::icf::SolveError;
use crate::integrator::{Mode, StepError, WorldStats};
use crate::model::Model;
use bytemuck::{Pod, Zeroable};

/// `kernels/cenic.wgsl` after the multibody stages and the ICF builder
/// (whose functions the parts call), with the launches of parts generated
/// after it ([`step_entry_points`]).
pub static FILE: KernelFile = KernelFile::new(
    "cenic",
    include_str!("../../kernels/cenic.wgsl"),
    &[&DATA, &kinematics::FILE, &rnea::FILE, &integrate::FILE, &icf::BUILDER],
)
.with_generated(step_entry_points);

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
    /// Always 2: the bound of the loop that checks the driver's loop budget.
    pub loop_check: u32,
    /// Padding.
    pub _pad2: u32,
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
    /// The part of the trial the world is at ([`TrialStage`] code).
    pub stage: u32,
    /// 1 when the trial lands on the interval end.
    pub lands: u32,
    /// Contacts at the start of the step.
    pub ncontact0: u32,
    /// 1 when the next fixed or full step starts from v0 + h·qacc.
    pub warm_qacc: u32,
    /// Padding to WGSL's 8-byte struct alignment (the `vec2f` fields).
    pub _pad: u32,
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
    pub const LOOP_BUDGET: u32 = 4;
    /// + the collision's `STATUS_*` bits.
    pub const COLLISION: u32 = 8;
    pub const SOLVE: u32 = 16;
    /// + 2·dof + (1 when the velocity term drove the error).
    pub const ACCURACY: u32 = 4096;
}

impl GpuCenicWorld {
    /// Time as f64 (s).
    pub fn time(&self) -> f64 {
        self.time[0] as f64 + self.time[1] as f64
    }

    /// Why a failed world froze, as the CPU reports it ([`StepError::describe`]
    /// with `model`), or the GPU-only reasons (unreliable contacts, the
    /// driver's loop budget); `None` while the world has not failed.
    pub fn failure_reason(&self, model: &Model) -> Option<String> {
        if self.state != world_state::FAILED {
            return None;
        }
        let r = self.reason;
        if r == fail::LOOP_BUDGET {
            return Some("GPU: the driver's loop budget ran out (results not trustworthy)".into());
        }
        if (fail::COLLISION..fail::SOLVE).contains(&r) {
            let what = if (r - fail::COLLISION) & STATUS_LOOP_BUDGET != 0 {
                "the driver's loop budget ran out"
            } else {
                "a recomputed manifold disagreed with its count"
            };
            return Some(format!("GPU collision: contacts unreliable ({what})"));
        }
        self.failure().map(|e| e.describe(model))
    }

    /// The error that froze a failed world, as the CPU reports it (a
    /// GPU-only reason reads as a non-finite solve; see [`Self::failure_reason`]).
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
                solve_error(r - fail::SOLVE, self.detail)
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
    /// Contact solves that succeeded.
    pub solves: u32,
    /// Contacts at the start of each accepted step, summed.
    pub contacts: u32,
    /// Padding.
    pub _pad: [u32; 3],
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
            geometry_passes: 0, // not tracked on the GPU
            solves: g.solves as u64,
            contacts: g.contacts as u64,
            extrapolated: 0,
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
    vec![
        struct_layout!(
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
                advance_dt,
                loop_check
            ]
        ),
        struct_layout!(
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
                stage,
                lands,
                ncontact0,
                warm_qacc,
                _pad
            ]
        ),
        struct_layout!(
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
                recorded,
                solves,
                contacts
            ]
        ),
        struct_layout!("StepRecord", GpuStepRecord, [t, h, err, contacts]),
        struct_layout!("GeomPair", GpuGeomPair, [a, b, margin]),
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
///
/// # Panics
/// For a CPU baseline mode (not [`Mode::is_icf`]), which the GPU does not run.
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
        loop_check: 2,
        _pad2: 0,
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
        m => panic!("the GPU runs Lagged ICF only, not the CPU baseline '{}'", m.name()),
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
    /// Counters (`COUNTER_*` in `kernels/data.wgsl`, [`counter`]).
    pub counter: StorageBuffer<u32>,
    /// Per world: time (hi, lo) as bits, state, failure code (`cenic_summarize`).
    pub summary: StorageBuffer<[u32; 4]>,
    /// Masked resets (`cenic_reset` in `kernels/data.wgsl`): a header of 4,
    /// nworld world indices, nworld rows of (q, v) (f32 bits).
    pub reset: StorageBuffer<u32>,
}

/// u32 entries before the world indices in [`CenicBuffers::reset`].
pub const RESET_HEADER: usize = 4;

/// Velocity vectors kept per world in `cenic_v` (`CENIC_V_SLOTS` in
/// `kernels/data.wgsl`): v0, the fixed or full step's v, and its
/// extrapolated warm start v0 + h·qacc.
pub const CENIC_V_SLOTS: usize = 3;

/// Entries of `cenic_counter` (`COUNTER_*` in `kernels/data.wgsl`).
pub mod counter {
    /// Running worlds (`cenic_summarize`; cleared by the host before).
    pub const RUNNING: usize = 0;
    /// Failed worlds (`cenic_summarize`; cleared by the host before).
    pub const FAILED: usize = 1;
    /// Iterations run since creation (the last launch of each adds one).
    pub const ITERATION: usize = 2;
    /// The last iteration in which some world began a trial.
    pub const LAST_BUSY: usize = 3;
    /// Entries.
    pub const LEN: usize = 4;
}

impl std::fmt::Debug for CenicBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CenicBuffers").field("nworld", &self.nworld).field("params", &self.params).finish()
    }
}

impl CenicBuffers {
    /// WGSL names of the buffers this provides.
    pub const BUFFER_NAMES: [&'static str; 11] = [
        "cenic_params",
        "cenic_weights",
        "cenic_pairs",
        "cenic_world",
        "cenic_stats",
        "cenic_q",
        "cenic_v",
        "cenic_steps",
        "cenic_counter",
        "cenic_summary",
        "cenic_reset",
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
        if !mode.is_icf() {
            return Err(GpuError::Unsupported(format!(
                "integrator '{}' is a CPU baseline (use CpuBatch)",
                mode.name()
            )));
        }
        let pairs = geom_pairs(model);
        let params = params_for(mode, pairs.len(), record_capacity);
        let weights: Vec<f32> = (0..model.nv)
            .map(|i| match mode {
                Mode::ErrorControlled(c) => c.weights.get(i).copied().unwrap_or(1.0) as f32,
                _ => 1.0,
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
            v: StorageBuffer::new(ctx, "cenic_v", nworld * CENIC_V_SLOTS * model.nv)?,
            steps: StorageBuffer::new(ctx, "cenic_steps", nworld * record_capacity)?,
            counter: StorageBuffer::new(ctx, "cenic_counter", counter::LEN)?,
            summary: StorageBuffer::new(ctx, "cenic_summary", nworld)?,
            reset: StorageBuffer::new(ctx, "cenic_reset", RESET_HEADER + nworld * (1 + model.nq + model.nv))?,
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
            "cenic_summary" => self.summary.buffer(),
            "cenic_reset" => self.reset.buffer(),
            _ => return None,
        })
    }
}

/// A part of a trial: the WGSL function `part_<name>` of `kernels/cenic.wgsl`,
/// which runs on the worlds at its [`TrialStage`] ([`Part::stage`]) and
/// moves them on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// Starts a trial.
    Begin,
    /// The geometry at x0.
    Forward0,
    /// The problem at x0.
    Build0,
    /// The trial's step.
    Choose,
    /// The full (or fixed) step's terms.
    Step0,
    /// Fixed steps: accepts the solution.
    FinishFixed,
    /// Step doubling: keeps the full step's solution, back to x0.
    Half,
    /// The first half step's terms.
    Step1,
    /// The midpoint.
    Mid,
    /// The geometry at the midpoint.
    Forward1,
    /// The problem at the midpoint.
    Build1,
    /// Starts the second half step.
    Start2,
    /// The second half step's terms.
    Step2,
    /// The error control: accepts or rejects the trial.
    Finish,
}

impl KernelName for Part {
    const ALL: &'static [Self] = &[
        Part::Begin,
        Part::Forward0,
        Part::Build0,
        Part::Choose,
        Part::Step0,
        Part::FinishFixed,
        Part::Half,
        Part::Step1,
        Part::Mid,
        Part::Forward1,
        Part::Build1,
        Part::Start2,
        Part::Step2,
        Part::Finish,
    ];

    fn name(self) -> &'static str {
        match self {
            Part::Begin => "begin",
            Part::Forward0 => "forward0",
            Part::Build0 => "build0",
            Part::Choose => "choose",
            Part::Step0 => "step0",
            Part::FinishFixed => "finish_fixed",
            Part::Half => "half",
            Part::Step1 => "step1",
            Part::Mid => "mid",
            Part::Forward1 => "forward1",
            Part::Build1 => "build1",
            Part::Start2 => "start2",
            Part::Step2 => "step2",
            Part::Finish => "finish",
        }
    }
}

impl Part {
    /// The stage the part runs at.
    pub fn stage(self) -> TrialStage {
        match self {
            Part::Begin => TrialStage::Begin,
            Part::Forward0 => TrialStage::Forward0,
            Part::Build0 => TrialStage::Build0,
            Part::Choose => TrialStage::Choose0,
            Part::Step0 => TrialStage::Step0,
            Part::FinishFixed | Part::Half => TrialStage::Solve0,
            Part::Step1 => TrialStage::Step1,
            Part::Mid => TrialStage::Solve1,
            Part::Forward1 => TrialStage::Forward1,
            Part::Build1 => TrialStage::Build1,
            Part::Start2 => TrialStage::Start2,
            Part::Step2 => TrialStage::Step2,
            Part::Finish => TrialStage::Solve2,
        }
    }

    /// The parts that end an iteration (and count it).
    pub fn ends_iteration(self) -> bool {
        matches!(self, Part::FinishFixed | Part::Finish)
    }
}

/// One step of an iteration: a run of consecutive [`Part`]s, the
/// collision, or the Newton solve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterationOp {
    /// Parts, one thread per world, in as many launches as [`Fusion`] says.
    Parts(&'static [Part]),
    /// The contacts of the worlds at [`TrialStage::Build0`] or [`TrialStage::Build1`].
    Collide,
    /// One Newton solve launch (a paused solve resumes in the next one).
    Solve,
}

/// An iteration in fixed-step mode: one fixed step per running world.
pub const FIXED_ITERATION: [IterationOp; 5] = [
    IterationOp::Parts(&[Part::Begin, Part::Forward0]),
    IterationOp::Collide,
    IterationOp::Parts(&[Part::Build0, Part::Choose, Part::Step0]),
    IterationOp::Solve,
    IterationOp::Parts(&[Part::FinishFixed]),
];

/// An iteration in error-controlled mode: one step-doubling trial per running world.
pub const STEP_DOUBLING_ITERATION: [IterationOp; 11] = [
    IterationOp::Parts(&[Part::Begin, Part::Forward0]),
    IterationOp::Collide,
    IterationOp::Parts(&[Part::Build0, Part::Choose, Part::Step0]),
    IterationOp::Solve,
    IterationOp::Parts(&[Part::Half, Part::Step1]),
    IterationOp::Solve,
    IterationOp::Parts(&[Part::Mid, Part::Forward1]),
    IterationOp::Collide,
    IterationOp::Parts(&[Part::Build1, Part::Start2, Part::Step2]),
    IterationOp::Solve,
    IterationOp::Parts(&[Part::Finish]),
];

/// The WGSL entry point running `parts` (consecutive [`Part`]s) in one launch.
pub fn entry_name(parts: &[Part]) -> String {
    match parts {
        [one] => format!("cenic_{}", one.name()),
        [first, .., last] => format!("cenic_{}_to_{}", first.name(), last.name()),
        [] => String::new(),
    }
}

/// The generated WGSL of one entry point per run of consecutive parts
/// within an [`IterationOp::Parts`] of either iteration (composed after
/// `kernels/cenic.wgsl`). A launch checks the stage of its first part; the
/// part that ends an iteration also counts it.
pub fn step_entry_points() -> String {
    let mut out = String::from(
        "// Launches of consecutive parts of a trial (src/gpu/cenic.rs Part, FIXED_ITERATION,\n// STEP_DOUBLING_ITERATION).\n",
    );
    let mut done = std::collections::BTreeSet::new();
    for op in FIXED_ITERATION.iter().chain(&STEP_DOUBLING_ITERATION) {
        let IterationOp::Parts(seg) = op else { continue };
        for a in 0..seg.len() {
            for b in a + 1..=seg.len() {
                let run = &seg[a..b];
                let name = entry_name(run);
                if !done.insert(name.clone()) {
                    continue;
                }
                let stage = run[0].stage().name().to_uppercase();
                let calls: Vec<String> = run.iter().map(|p| format!("part_{}(w)", p.name())).collect();
                let body = match calls.split_last() {
                    Some((tail, [])) => format!("        _ = {tail};\n"),
                    Some((tail, head)) => {
                        format!("        if ({}) {{\n            _ = {tail};\n        }}\n", head.join(" && "))
                    }
                    None => String::new(),
                };
                let ends = run.last().is_some_and(|p| p.ends_iteration());
                let count = if ends { "    end_iteration(w);\n" } else { "" };
                let names: Vec<&str> = run.iter().map(|p| p.name()).collect();
                out += &format!(
                    "\n/// Parts {} of the worlds at their stage.\n/// Reads: cenic_world, cenic_params and what the parts read (q, v, h, the fields, contacts, icf_*); writes: cenic_world, cenic_stats, cenic_q, cenic_v, cenic_steps and what the parts write (q, v, h, the fields, icf_*){}.\n@compute @workgroup_size(WORKGROUP_SIZE)\nfn {name}(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {{\n    let w = thread_index(gid, nwg);\n    if (w >= dims.nworld) {{\n        return;\n    }}\n{count}    if (at_stage(w, STAGE_{stage})) {{\n{body}        check_loop_budget(w);\n    }}\n}}\n",
                    names.join(", "),
                    if ends { ", cenic_counter (the iteration)" } else { "" }
                );
            }
        }
    }
    out
}

/// How the parts of an [`IterationOp::Parts`] are grouped into launches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fusion {
    /// All parts of a run in one launch, except where a software adapter's
    /// loop budget calls for more launches ([`part_loops`]).
    #[default]
    Auto,
    /// All parts of a run in one launch.
    Full,
    /// One launch per part.
    None,
}

/// Loop budget a launch of parts may plan with on a software adapter
/// (llvmpipe stops loops after 65535 iterations per invocation; the rest is
/// margin for the estimate).
pub const SOFTWARE_LAUNCH_LOOPS: f64 = 40_000.0;

/// An upper estimate of the loop iterations (what llvmpipe counts) one
/// world's thread runs in `part`, for a model with these sizes and
/// `ncon` contact slots, `ndofc` Jacobian entries per contact, `npair`
/// conservative-advancement pairs (0 when off).
pub fn part_loops(part: Part, model: &Model, ncon: usize, ndofc: usize, npair: usize) -> f64 {
    let (nq, nv, nb, nj) = (model.nq as f64, model.nv as f64, model.bodies.len() as f64, model.joints.len() as f64);
    let (ng, ns, nu) = (model.geoms.len() as f64, model.sites.len() as f64, model.nu() as f64);
    let (nc, nd) = (ncon as f64, ndofc as f64);
    let depth = nd; // dofs on a body's chain (at most ndofc)
    let forward = nv * nv + nv * (depth + 1.0) + 10.0 * (nb + nj + nv + ng + ns);
    let build = 3.0 * nv + nu + 2.0 * nj + nc * (nd * (nd + 2.0) + 2.0 * nd) + 8.0;
    let time_step = 2.0 * nv * nv + 2.0 * nv + nc + 2.0 * nu;
    let small = 4.0 * (nq + nv + nj) + 8.0;
    match part {
        Part::Forward0 | Part::Forward1 => forward,
        Part::Build0 | Part::Build1 => build,
        Part::Choose => nv + npair as f64 * (nc + 12.0) + 8.0,
        Part::Step0 | Part::Step1 | Part::Step2 => time_step,
        Part::Begin | Part::FinishFixed | Part::Half | Part::Mid | Part::Start2 | Part::Finish => small,
    }
}

/// The launches (runs of consecutive parts) that `fusion` makes of `parts`
/// on an adapter that does (`software`) or does not cap loop iterations.
pub fn group_parts(
    parts: &'static [Part],
    fusion: Fusion,
    software: bool,
    loops: impl Fn(Part) -> f64,
) -> Vec<&'static [Part]> {
    match fusion {
        Fusion::Full => vec![parts],
        Fusion::None => (0..parts.len()).map(|i| &parts[i..i + 1]).collect(),
        Fusion::Auto if !software => vec![parts],
        Fusion::Auto => {
            let mut out = vec![];
            let (mut start, mut sum) = (0, 0.0);
            for (i, p) in parts.iter().enumerate() {
                let l = loops(*p);
                if i > start && sum + l > SOFTWARE_LAUNCH_LOOPS {
                    out.push(&parts[start..i]);
                    (start, sum) = (i, 0.0);
                }
                sum += l;
            }
            out.push(&parts[start..]);
            out
        }
    }
}

/// The CENIC kernels outside the launches of parts (one thread per world each).
#[derive(Debug)]
pub struct CenicKernels {
    /// Starts an advance: t_end = t + dt.
    pub start_advance: Kernel,
    /// Each world's clock and state into `cenic_summary`, running and failed worlds counted.
    pub summarize: Kernel,
    /// The worlds listed in `cenic_reset` afresh (the batch's masked resets).
    pub reset_worlds: Kernel,
}

impl CenicKernels {
    /// Creates the kernels for `nworld` worlds over `sources`.
    pub fn new(ctx: &GpuContext, nworld: usize, sources: &[&dyn BufferSource]) -> Result<Self, GpuError> {
        let k = |entry| Kernel::new(ctx, &FILE, entry, nworld, sources);
        Ok(Self {
            start_advance: k("cenic_start_advance")?,
            summarize: k("cenic_summarize")?,
            reset_worlds: k("cenic_reset_worlds")?,
        })
    }
}
