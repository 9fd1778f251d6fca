//! Kernels of `kernels/icf_builder.wgsl`, `kernels/icf_cost.wgsl` and
//! `kernels/icf_solver.wgsl`, the twins of `src/icf` ([`crate::icf::IcfBuilder`],
//! [`crate::icf::IcfProblem::set_time_step`], [`crate::icf::cost`],
//! [`crate::icf::IcfSolver`]), and their buffers.
//!
//! Each world's problem lives at a world offset: constraints in fixed
//! per-world capacities (contacts: `Dims.ncon`, each with at most
//! [`IcfLayout::ndofc`] Jacobian entries; one gain law per position servo;
//! two limits per limited hinge or slide), dense `A` and the Hessian /
//! Cholesky factor (nv × nv), and the vectors of [`IcfVec`].
//!
//! Launches: `icf_build_contacts` runs one thread per (world, contact
//! slot), the other builder kernels one thread per world; the Newton solver
//! (and the cost evaluation of the parity tests) runs either one thread per
//! world (`kernels/icf_solve_serial.wgsl`, small models) or one workgroup
//! per world (`kernels/icf_solve_coop.wgsl`), see [`SolverVariant`]; the
//! solver's dense state lives where [`SolverState`] says (a variant of the
//! stage: [`SolverStage`]).

use super::buffers::{BufferSource, Readback, StorageBuffer, uniform_buffer};
use super::compose::{KernelFile, Module};
use super::context::{GpuContext, run_pass};
use super::data::DATA;
use super::error::GpuError;
use super::fields::{Layout, element_index};
use super::kernel::{Kernel, WORKGROUP_SIZE};
use super::model::{NONE, StructLayout, dof_blocks};
use crate::icf::{
    ContactConstraint, GainConstraint, IcfProblem, LimitConstraint, SoftContact, SoftRow, SolveError, SolveStats,
    SolverParams,
};
use crate::math::Vec3;
use crate::model::{ActuatorKind, JointKind, Model, Semantics};
use bytemuck::{Pod, Zeroable};
use core::mem::offset_of;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `kernels/icf_builder.wgsl`: the problem's build and `set_time_step`.
pub static BUILDER: KernelFile =
    KernelFile::new("icf_builder", include_str!("../../kernels/icf_builder.wgsl"), &[&DATA]);
/// `kernels/icf_cost.wgsl`: the cost, gradient and Hessian terms of one
/// world (library; needs `SOLVER_THREADS` and the state accessors).
pub static COST: KernelFile = KernelFile::new("icf_cost", include_str!("../../kernels/icf_cost.wgsl"), &[&DATA]);
/// `kernels/icf_solver.wgsl`: Cholesky, line search, Newton (library).
pub static SOLVER: KernelFile = KernelFile::new("icf_solver", include_str!("../../kernels/icf_solver.wgsl"), &[&DATA]);
/// `kernels/wg_serial.wgsl`: the workgroup helpers for one thread per world
/// (`SOLVER_THREADS` = 1; library).
pub static WG_SERIAL: KernelFile = KernelFile::new("wg_serial", include_str!("../../kernels/wg_serial.wgsl"), &[&DATA]);
/// `kernels/icf_vec_storage.wgsl`: the vectors and A in storage (state library).
pub static VEC_STORAGE: KernelFile =
    KernelFile::new("icf_vec_storage", include_str!("../../kernels/icf_vec_storage.wgsl"), &[&DATA]);
/// `kernels/icf_state_storage.wgsl`: [`SolverState::Storage`]'s factor (state library).
pub static STATE_STORAGE: KernelFile =
    KernelFile::new("icf_state_storage", include_str!("../../kernels/icf_state_storage.wgsl"), &[&DATA]);
/// `kernels/icf_state_private.wgsl`: [`SolverState::Private`] (state library).
pub static STATE_PRIVATE: KernelFile =
    KernelFile::new("icf_state_private", include_str!("../../kernels/icf_state_private.wgsl"), &[&DATA]);
/// `kernels/icf_state_workgroup.wgsl`: [`SolverState::Workgroup`] (state library).
pub static STATE_WORKGROUP: KernelFile =
    KernelFile::new("icf_state_workgroup", include_str!("../../kernels/icf_state_workgroup.wgsl"), &[&DATA]);
/// `kernels/icf_solve_serial.wgsl`: the serial solver stage (composed with a [`SolverState`]).
pub static SOLVE_SERIAL: KernelFile = KernelFile::new(
    "icf_solve_serial",
    include_str!("../../kernels/icf_solve_serial.wgsl"),
    &[&DATA, &WG_SERIAL, &COST, &SOLVER],
);
/// `kernels/icf_solve_coop.wgsl`: the cooperative solver stage (composed
/// with a [`SolverState`] and its thread count).
pub static SOLVE_COOP: KernelFile =
    KernelFile::new("icf_solve_coop", include_str!("../../kernels/icf_solve_coop.wgsl"), &[&DATA, &COST, &SOLVER]);

/// Threads per world of the cooperative solver stage (`SOLVER_THREADS`,
/// generated into `kernels/icf_solve_coop.wgsl` by [`SolverVariant::stage`]'s
/// variant; one workgroup per world).
pub const SOLVER_THREADS: u32 = 16;

/// Threads per world of the wide cooperative stage ([`SolverVariant::Wide`]:
/// `icf_solve_coop.wgsl` composed with `SOLVER_THREADS` = 64, see
/// [`SolverVariant::stage`]).
pub const WIDE_SOLVER_THREADS: u32 = 64;

/// Smallest nv for which [`SolverVariant::auto`] takes the wide cooperative
/// stage on a hardware GPU: measured on an H200 against 16 threads per
/// world, it wins on the clutter (nv = 120), ties on the humanoid (27) and
/// loses on the ant (14) (BENCHMARKS.md, "H200: a wide stage for the
/// largest problems").
pub const WIDE_MIN_NV: usize = 64;

/// Largest nv solved by the serial stage ([`SolverVariant::for_nv`]).
pub const SERIAL_MAX_NV: usize = 32;

/// Most worlds for which [`SolverVariant::auto`] prefers the cooperative
/// stage on a hardware GPU, whatever nv (H200, in contact: the crossover
/// lies near 8 k worlds for the cube, nv = 6, 14 k for the humanoid, 27,
/// and 30 k for the ant, 14; BENCHMARKS.md).
pub const COOP_MAX_WORLDS: usize = 8192;

/// Which stage runs the Newton solves (the same `icf_cost.wgsl` and
/// `icf_solver.wgsl` code in both).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SolverVariant {
    /// `icf_solve_serial.wgsl`: one thread per world, 64 worlds per
    /// workgroup, no barriers. For small problems.
    Serial,
    /// `icf_solve_coop.wgsl`: a workgroup of [`SOLVER_THREADS`] threads per
    /// world sharing the dense nv × nv work. For large problems.
    Cooperative,
    /// The cooperative stage with [`WIDE_SOLVER_THREADS`] threads per
    /// world: a quarter of the rows per thread, for the
    /// largest problems, whose dense factorizations are latency-bound
    /// chains of global-memory accesses (the clutter, nv = 120).
    Wide,
}

impl SolverVariant {
    /// Serial up to [`SERIAL_MAX_NV`] dofs (dense work per world small next to
    /// the cost of a cooperative workgroup), cooperative beyond.
    pub fn for_nv(nv: usize) -> Self {
        if nv <= SERIAL_MAX_NV { SolverVariant::Serial } else { SolverVariant::Cooperative }
    }

    /// The stage for nv dofs and `nworld` worlds: [`Self::for_nv`], except
    /// that a hardware GPU solves cooperatively while the worlds are at
    /// most [`COOP_MAX_WORLDS`]: one thread per world then leaves most of
    /// the device idle, and the step's time is one thread's serial latency.
    /// Measured on an H200 (BENCHMARKS.md), cooperative against serial:
    /// 2.4–4.6× faster at 1024 worlds (cube, ant, humanoid), 1.3–1.7× at
    /// 4096, 0.8–1.2× at 16 384 and 0.57–0.75× at 65 536.
    /// There, from [`WIDE_MIN_NV`] dofs on, the wide stage.
    /// A software adapter keeps [`Self::for_nv`] (tuned on lavapipe).
    pub fn auto(nv: usize, nworld: usize, software: bool) -> Self {
        match (software, nworld <= COOP_MAX_WORLDS) {
            (false, true) if nv >= WIDE_MIN_NV => SolverVariant::Wide,
            (false, true) => SolverVariant::Cooperative,
            _ => Self::for_nv(nv),
        }
    }

    /// Threads per world.
    pub fn threads(self) -> u32 {
        match self {
            SolverVariant::Serial => 1,
            SolverVariant::Cooperative => SOLVER_THREADS,
            SolverVariant::Wide => WIDE_SOLVER_THREADS,
        }
    }

    /// The stage that runs this variant with its dense state in `state`;
    /// an error for a state the variant cannot hold (private arrays are per
    /// thread: serial only; workgroup memory per world: cooperative only).
    pub fn stage(self, state: SolverState) -> Result<SolverStage, GpuError> {
        match (self, state) {
            (_, SolverState::Storage)
            | (SolverVariant::Serial, SolverState::Private(_))
            | (SolverVariant::Cooperative | SolverVariant::Wide, SolverState::Workgroup(_)) => {
                Ok(SolverStage { variant: self, state })
            }
            _ => Err(GpuError::Unsupported(format!(
                "solver state {state:?} in the {self:?} stage (private arrays are per thread, workgroup memory \
                 per world only in the cooperative stages)"
            ))),
        }
    }
}

/// A solver stage as compiled: a [`SolverVariant`] with its dense state in
/// a [`SolverState`] ([`SolverVariant::stage`] checks the pair).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SolverStage {
    /// Threads per world.
    pub variant: SolverVariant,
    /// Where the dense state lives.
    pub state: SolverState,
}

impl SolverStage {
    /// The module: `icf_solve_serial.wgsl` or `icf_solve_coop.wgsl`, the
    /// state's files after it, and the generated `SOLVER_THREADS`
    /// (cooperative) and `SOLVER_NV` (private and workgroup states). Named
    /// `icf_solve_serial[#privateN]` or `icf_solve_coop[#state][@threads]`
    /// (threads when not [`SOLVER_THREADS`]).
    pub fn module(self) -> Module {
        let (file, threads) = match self.variant {
            SolverVariant::Serial => (&SOLVE_SERIAL, None),
            SolverVariant::Cooperative | SolverVariant::Wide => (&SOLVE_COOP, Some(self.variant.threads())),
        };
        let mut constants = String::new();
        if let Some(t) = threads {
            constants += &format!("const SOLVER_THREADS: u32 = {t}u;\n");
        }
        let (key, n) = match self.state {
            SolverState::Storage => ("storage".to_string(), None),
            SolverState::Private(n) => (format!("private{n}"), Some(n)),
            SolverState::Workgroup(n) => (format!("workgroup{n}"), Some(n)),
        };
        if let Some(n) = n {
            constants += &format!("const SOLVER_NV: u32 = {n}u;\n");
        }
        let mut variant = if self.state == SolverState::Storage { String::new() } else { key.clone() };
        if let Some(t) = threads.filter(|&t| t != SOLVER_THREADS) {
            if variant.is_empty() {
                variant = key;
            }
            variant += &format!("@{t}");
        }
        Module::variant(file, &variant, self.state.files(), constants)
    }
}

/// Where a Newton solve keeps its dense state while it runs: the Hessian
/// and its Cholesky factor (nv × nv, rewritten O(nv³) times per solve), and
/// in the cooperative stage also A and the vectors of [`IcfVec`]. Each
/// choice is a variant of the solver stage, compiled with the size `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SolverState {
    /// In the storage buffers `icf_factor` (world first), `icf_a` and
    /// `icf_vec`: every dense operation a global-memory access.
    Storage,
    /// Serial stage: the factor in a private array of n × n floats per
    /// thread (registers and thread-local memory, which GPUs interleave
    /// across a warp, so a warp's accesses coalesce); the vectors stay in
    /// the (field-major) storage buffers. Written back only when Hessian
    /// reuse keeps it.
    Private(u32),
    /// Cooperative stage: factor, A (n × n each) and the vectors (9 × n) in
    /// workgroup memory shared by the world's threads, loaded once per solve
    /// launch and written back at its end.
    Workgroup(u32),
}

impl SolverState {
    /// Bytes of workgroup memory [`SolverState::Workgroup`] takes for `n` dofs.
    pub fn workgroup_bytes(n: usize) -> usize {
        4 * (2 * n * n + IcfVec::COUNT * n)
    }

    /// The state for a solve of `nv` dofs in `variant` on `ctx`: private
    /// for the serial stage, workgroup memory for the cooperative one when
    /// it fits the device's limit (with room for the reductions), else the
    /// storage buffers.
    pub fn for_model(ctx: &GpuContext, nv: usize, variant: SolverVariant) -> Self {
        match variant {
            SolverVariant::Serial => SolverState::Private(nv.max(1) as u32),
            SolverVariant::Cooperative | SolverVariant::Wide => {
                let limit = ctx.limits().max_compute_workgroup_storage_size as usize;
                // Room for the reductions (a vec4f per thread) and the broadcast slots.
                if Self::workgroup_bytes(nv) + 1024 + 16 * variant.threads() as usize <= limit {
                    SolverState::Workgroup(nv.max(1) as u32)
                } else {
                    SolverState::Storage
                }
            }
        }
    }

    /// The files holding the state's accessors (`fac`, `set_fac`, `ivec`,
    /// `set_ivec`, `amat`) and `solver_load` / `solver_store`, composed after
    /// the solver stage. `solver_load(w, lid, factor)` brings the state in
    /// (the factor too when `factor`), `solver_store(w, lid, factor)` writes
    /// the vectors back (and the factor when `factor`).
    pub fn files(self) -> &'static [&'static KernelFile] {
        static STORAGE: [&KernelFile; 2] = [&VEC_STORAGE, &STATE_STORAGE];
        static PRIVATE: [&KernelFile; 2] = [&VEC_STORAGE, &STATE_PRIVATE];
        static WORKGROUP: [&KernelFile; 1] = [&STATE_WORKGROUP];
        match self {
            SolverState::Storage => &STORAGE,
            SolverState::Private(_) => &PRIVATE,
            SolverState::Workgroup(_) => &WORKGROUP,
        }
    }
}

/// Scale factor of the Delassus estimate w ≈ 2.65/m (as in the CPU builder).
const DELASSUS_FACTOR: f64 = 2.65;

/// Whether the factorization over the dof tree costs fewer operations than
/// dense factors of the model's trees (the CPU solver's rule), with the
/// dofs in depth-first preorder.
fn tree_pays(model: &Model) -> bool {
    let parent: Vec<usize> = model.dofs.iter().map(|d| d.parent.unwrap_or(usize::MAX)).collect();
    let (trees, _) = crate::icf::tree_blocks(model);
    let sizes: Vec<usize> = if trees.is_empty() { vec![model.nv] } else { trees.iter().map(|&(_, m)| m).collect() };
    crate::math::TreeLdl::new(&parent).is_some_and(|t| t.beats_dense_blocks(sizes))
}

/// ICF sizes and constants (WGSL `IcfDims`, a uniform).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuIcfDims {
    /// Jacobian entries per contact.
    pub ndofc: u32,
    /// Gain laws per world.
    pub ngain: u32,
    /// Joint limits per world.
    pub nlimit: u32,
    /// Actuators.
    pub nu: u32,
    /// Stiction tolerance vs (m/s).
    pub stiction_tolerance: f32,
    /// Dof blocks ([`dof_blocks`]); 1: the Newton solve is dense.
    pub nblock: u32,
    /// 1: the structured factorization runs level by level, one thread
    /// per block ([`IcfBuffers::set_level_factorization`]).
    pub levels: u32,
    /// 1: the Newton solve may factor over the dof tree (the CPU's
    /// [`TreeLdl`](crate::math::TreeLdl), by the same rule: it costs fewer
    /// operations than dense factors of the trees), in the launches where
    /// every contact lies on one path to a root ([`IcfBuffers::set_tree_factorization`]).
    pub tree: u32,
    /// First dof of each block, then nv; entry b at `[b / 4][b % 4]`.
    pub block_start: [[u32; 4]; 9],
}

/// Newton solver settings (WGSL `IcfParams`, a uniform), from [`SolverParams`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuIcfParams {
    /// Relative tolerance ε.
    pub tolerance: f32,
    /// Newton iteration cap.
    pub max_iterations: u32,
    /// Line-search iteration cap.
    pub max_line_search_iterations: u32,
    /// 1: θ criterion on.
    pub theta_criterion: u32,
    /// 1: Hessian reuse on.
    pub hessian_reuse: u32,
    /// Iteration budget of the reuse rule.
    pub reuse_target_iterations: u32,
    /// Loop iterations one solver invocation may run (`u32::MAX`: unlimited).
    pub loop_budget: u32,
    /// Newton iterations with the secant friction curvature.
    pub secant_friction_iterations: u32,
}

/// Loop iterations a solver invocation may run on a software adapter:
/// Mesa's llvmpipe (lavapipe) stops any shader invocation after 65535 loop
/// iterations in total, silently; the solver pauses below that, with margin.
pub const SOFTWARE_LOOP_BUDGET: u32 = 60_000;

impl GpuIcfParams {
    /// `p` for an adapter that does (`software`) or does not cap loop iterations.
    pub fn new(p: &SolverParams, software: bool) -> Self {
        Self {
            tolerance: p.tolerance as f32,
            max_iterations: p.max_iterations as u32,
            max_line_search_iterations: p.max_line_search_iterations as u32,
            theta_criterion: p.theta_criterion as u32,
            hessian_reuse: p.hessian_reuse as u32,
            reuse_target_iterations: p.reuse_target_iterations as u32,
            loop_budget: if software { SOFTWARE_LOOP_BUDGET } else { u32::MAX },
            secant_friction_iterations: p.secant_friction_iterations as u32,
        }
    }
}

/// Dispatches of `icf_solve` that surely finish every solve of a model
/// with `nv` dofs and `ncon` contacts per world within `max_iterations`
/// Newton iterations on a software adapter, from an upper bound on one
/// iteration's loop count (the kernel's `solver_costs` with the worst-case
/// row lengths); `None` when more than `max_dispatches` would be needed
/// (then the host checks after each dispatch instead).
pub fn software_solve_dispatches(
    nv: usize,
    ncon: usize,
    layout: IcfLayout,
    params: &SolverParams,
    threads: u32,
    max_dispatches: usize,
) -> Option<usize> {
    let t = threads as f64;
    let nvf = nv as f64;
    let r = (nvf / t).ceil();
    let c = (ncon as f64 / t).ceil();
    let nd = layout.ndofc as f64;
    let gl = (layout.ngain + layout.nlimit) as f64;
    let lmax = r * ncon as f64;
    let red = 8.0;
    let eval = c * (1.0 + nd) + r * (3.0 + 2.0 * nvf + gl) + lmax * (1.0 + nd) + red;
    let chol = nvf * (4.0 + 2.0 * r) + r * (nvf * nvf / 8.0 + 4.0 * nvf) + r;
    let solve = 2.0 * nvf * (2.0 + r);
    let ls = r * (1.0 + nvf)
        + c * (1.0 + nd)
        + red
        + (params.max_line_search_iterations as f64 + 3.0) * (c + gl + red + 2.0);
    let iteration = ((eval + chol + solve + ls + r * (1.0 + nvf) + 6.0 * (r + red)) * 1.25 + 64.0) * 1.01 + 1.0;
    // The block analysis of the structured solve (plan_blocks: a bound over
    // at most MAX_DOF_BLOCKS blocks; the structured variants run only when
    // their loop count is below the dense one's).
    let nb = nv.min(super::model::MAX_DOF_BLOCKS) as f64;
    let analysis = ncon as f64 + 64.0 + 4.0 * nb + 3.5 * nb * nb;
    let spent0 = 64.0 + 4.0 * r + 32.0 + analysis + 2.0 * r * (2.0 * nvf + IcfVec::COUNT as f64);
    let per_dispatch = (((SOFTWARE_LOOP_BUDGET as f64 - spent0) / iteration).floor() as usize).max(1);
    let n = params.max_iterations.div_ceil(per_dispatch).max(1);
    (n <= max_dispatches).then_some(n)
}

/// Per-body builder constants (WGSL `IcfBody`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuIcfBody {
    /// Last dof on the body's path to the world ([`NONE`] when welded to the world).
    pub last_dof: u32,
    /// 2.65 / weld-group mass (1/kg), 0 for static or massless groups.
    pub delassus: f32,
}

/// An actuator (WGSL `Actuator`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuActuator {
    /// 0 motor, 1 position servo.
    pub kind: u32,
    /// Actuated dof.
    pub dof: u32,
    /// Its position coordinate.
    pub qpos_adr: u32,
    /// Index of the servo's gain law.
    pub gain_slot: u32,
    /// Motor gear.
    pub gear: f32,
    /// Servo position gain.
    pub kp: f32,
    /// Servo velocity gain.
    pub kd: f32,
    /// Servo effort limit (`f32::MAX` when unlimited).
    pub effort_limit: f32,
    /// Control range.
    pub ctrl_lo: f32,
    /// Control range.
    pub ctrl_hi: f32,
    /// Motor force range.
    pub force_lo: f32,
    /// Motor force range.
    pub force_hi: f32,
    /// 1 when the control range applies.
    pub has_ctrl_range: u32,
    /// 1 when the force range applies.
    pub has_force_range: u32,
    /// Padding.
    pub _pad: [u32; 2],
}

/// A joint-limit definition (WGSL `IcfLimitDef`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuIcfLimitDef {
    /// Dof.
    pub dof: u32,
    /// Position coordinate.
    pub qpos_adr: u32,
    /// +1 lower, −1 upper.
    pub sign: f32,
    /// Limit with the margin folded in (rad or m).
    pub q_limit: f32,
    /// m·K of the force law at mass scale 1 ([`SpringLaw::mk`](crate::model::soft::SpringLaw::mk), N·m/rad or N/m).
    pub mk: f32,
    /// Damping factor of the force law.
    pub damp: f32,
    /// solimp's d0, clamped.
    pub imp_d0: f32,
    /// solimp's d_width, clamped.
    pub imp_dmax: f32,
    /// solimp's width (rad or m).
    pub imp_width: f32,
    /// solimp's midpoint.
    pub imp_mid: f32,
    /// solimp's power.
    pub imp_power: f32,
    /// 1: MuJoCo's soft limit (the model's semantics), with the fields below.
    pub soft: u32,
    /// K of MuJoCo's reference ([`SoftLaw::k`](crate::model::soft::SoftLaw::k), 1/s²).
    pub soft_k: f32,
    /// B of MuJoCo's reference (1/s).
    pub soft_b: f32,
    /// The dof's inverse weight, MuJoCo's Â (1/(kg·m²) or 1/kg).
    pub invweight: f32,
}

/// A contact constraint (WGSL `IcfContact`), twin of [`ContactConstraint`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuIcfContact {
    /// Unit normal from A to B.
    pub normal: [f32; 3],
    /// φ0 (m).
    pub phi0: f32,
    /// J v0 (m/s).
    pub vc0: [f32; 3],
    /// k (N/m).
    pub stiffness: f32,
    /// Scratch: J v.
    pub vc: [f32; 3],
    /// d (s/m).
    pub dissipation: f32,
    /// Scratch: J w.
    pub uc: [f32; 3],
    /// μs.
    pub mu_static: f32,
    /// μd.
    pub mu_dynamic: f32,
    /// Delassus estimate (1/kg).
    pub delassus: f32,
    /// Valid Jacobian entries.
    pub jac_len: u32,
    /// −kφ0 (N).
    pub fe0: f32,
    /// Lagged normal impulse (N·s).
    pub n0: f32,
    /// Lagged friction coefficient.
    pub mu: f32,
    /// Friction regularisation (m/s).
    pub eps: f32,
    /// The contact law: 0 Hunt–Crossley, 1 MuJoCo's soft contact (the
    /// `soft_*` fields and `t1`, [`crate::icf::SoftContact`]).
    pub law: u32,
    /// Scratch: impulse on B at the iterate (N·s).
    pub impulse: [f32; 3],
    /// Padding.
    pub _pad1: f32,
    /// Scratch: G = −dγ/dvc, rows.
    pub g: [[f32; 4]; 3],
    /// Soft contact: the first tangent of MuJoCo's contact frame.
    pub t1: [f32; 3],
    /// Soft contact: D = 1/R of each row (kg; 0 while beyond the margin).
    pub soft_d: f32,
    /// Soft contact: friction slopes of the edges along t1 and t2.
    pub soft_mu: [f32; 2],
    /// Soft contact: B (1/s).
    pub soft_b: f32,
    /// Soft contact: K·d·(φ0 − margin) (m/s²).
    pub soft_kpos: f32,
}

/// One Jacobian column of a contact (WGSL `JacEntry`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuJacEntry {
    /// J[:, dof] (m/s per unit dof velocity).
    pub col: [f32; 3],
    /// Dof.
    pub dof: u32,
}

/// A gain law (WGSL `IcfGain`), twin of [`GainConstraint`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuIcfGain {
    /// Dof.
    pub dof: u32,
    /// kp.
    pub kp: f32,
    /// kd.
    pub kd: f32,
    /// q_ref − q0.
    pub q_err: f32,
    /// v_ref.
    pub v_ref: f32,
    /// Effort limit.
    pub effort: f32,
    /// K.
    pub gain: f32,
    /// b.
    pub bias: f32,
}

/// A joint limit (WGSL `IcfLimit`), twin of [`LimitConstraint`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuIcfLimit {
    /// Dof.
    pub dof: u32,
    /// ±1.
    pub sign: f32,
    /// g0.
    pub g0: f32,
    /// Spring force at q0.
    pub fe0: f32,
    /// Tangent stiffness.
    pub stiffness: f32,
    /// Damping.
    pub damping: f32,
    /// 1: MuJoCo's soft limit ([`crate::icf::SoftRow`]: the `soft_*` fields).
    pub soft: u32,
    /// Soft limit: D = 1/R (0 while not reached).
    pub soft_d: f32,
    /// Soft limit: B (1/s).
    pub soft_b: f32,
    /// Soft limit: K·d·g0 (rad/s² or m/s²).
    pub soft_kpos: f32,
    /// Soft limit: sign·v0 (rad/s or m/s).
    pub soft_vel0: f32,
    /// Padding.
    pub _pad: f32,
}

/// Per-world sizes, results and flags (WGSL `IcfWorld`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuIcfWorld {
    /// 1: build and solve this world.
    pub solving: u32,
    /// Contacts in the problem.
    pub ncon: u32,
    /// Contacts beyond the capacity.
    pub overflow: u32,
    /// Solve status code.
    pub status: u32,
    /// Pivot or residual of a failure.
    pub detail: f32,
    /// Step of the last set_time_step (s).
    pub h: f32,
    /// Newton iterations.
    pub iterations: u32,
    /// Line-search iterations.
    pub line_search_iterations: u32,
    /// Factorizations.
    pub factorizations: u32,
    /// ‖D∇ℓ‖.
    pub residual: f32,
    /// Tolerance.
    pub tolerance: f32,
    /// ℓ (icf_evaluate).
    pub cost: f32,
    /// 1 while the factor is usable.
    pub factor_valid: u32,
    /// 1 when converged.
    pub converged: u32,
    /// Newton phase: 0 start, 1 running (resumed by the next dispatch), 2 done.
    pub phase: u32,
    /// `icf_solve` dispatches the current solve has run in.
    pub dispatches: u32,
    /// Last step norm ‖D⁻¹Δv‖.
    pub prev_step: f32,
    /// Last residual.
    pub prev_residual: f32,
    /// ε·‖D r‖.
    pub tol0: f32,
    /// 1: the last solve launch of this world ran the structured (block)
    /// factorization and solves, 2: the structured factorization by
    /// elimination levels, 0: the dense ones (the results are the same bit
    /// for bit; `kernels/icf_solver.wgsl` plan_blocks); 3: the
    /// factorization over the dof tree (LᵀDL, the CPU's `TreeLdl`).
    pub structured: u32,
}

/// Entries of `icf_active` (`ACTIVE_*` in `kernels/data.wgsl`): the lists
/// of unfinished solves a batch launches its solves over.
pub mod active {
    /// Length of list slot s at `COUNT + s` (two slots).
    pub const COUNT: usize = 0;
    /// The slot of the last listing.
    pub const SLOT: usize = 2;
    /// Worlds listed since the buffer was created (one per world and listed launch).
    pub const LISTED: usize = 3;
    /// Most `icf_solve` dispatches a solve finished in since the host cleared it.
    pub const MOST_DISPATCHES: usize = 4;
    /// First world index of the current list (nworld entries).
    pub const LIST: usize = 5;
    /// Bytes of one slot's indirect launch in `icf_dispatch` (x, y, z, unused).
    pub const DISPATCH_BYTES: u64 = 16;
}

/// Solve status codes (`SOLVE_*` in `kernels/data.wgsl`).
pub mod solve_status {
    /// Converged.
    pub const OK: u32 = 0;
    /// Iteration cap reached.
    pub const MAX_ITERATIONS: u32 = 1;
    /// Hessian not positive definite.
    pub const NOT_PD: u32 = 2;
    /// Line search stalled.
    pub const STALLED: u32 = 3;
    /// Non-finite iterate.
    pub const NON_FINITE: u32 = 4;
}

impl GpuIcfWorld {
    /// The solve result as the CPU solver reports it.
    pub fn solve_result(&self) -> Result<SolveStats, SolveError> {
        match self.status {
            solve_status::OK => Ok(SolveStats {
                iterations: self.iterations as usize,
                line_search_iterations: self.line_search_iterations as usize,
                factorizations: self.factorizations as usize,
                residual: self.residual as f64,
                tolerance: self.tolerance as f64,
                converged: true,
            }),
            other => Err(solve_error(other, self.detail)),
        }
    }
}

/// The [`SolveError`] of a failed solve's status code and detail.
pub fn solve_error(status: u32, detail: f32) -> SolveError {
    match status {
        solve_status::MAX_ITERATIONS => SolveError::MaxIterations(detail as usize),
        solve_status::NOT_PD => SolveError::NotPositiveDefinite(detail as usize),
        solve_status::STALLED => SolveError::Stalled(detail as f64),
        _ => SolveError::NonFinite,
    }
}

/// Rows of the per-world vector block `icf_vec` (nworld, [`IcfVec::COUNT`], nv).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum IcfVec {
    /// k(q0, v0) (N, N·m).
    Force = 0,
    /// v0 (m/s, rad/s).
    V0 = 1,
    /// r = A v0 − h k.
    R = 2,
    /// diag(M)^(−½).
    Scale = 3,
    /// ∇ℓ at the iterate.
    Grad = 4,
    /// Newton direction.
    W = 5,
    /// The iterate: warm start in, v1 out.
    V = 6,
    /// A v.
    Av = 7,
    /// A w.
    Aw = 8,
}

impl IcfVec {
    /// Rows per world (`ICF_NVEC`).
    pub const COUNT: usize = 9;
}

/// Sizes of the per-world ICF blocks of a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcfLayout {
    /// Jacobian entries per contact: the most dofs the chains of two bodies
    /// span (twice the deepest chain, at most nv, at least 1).
    pub ndofc: usize,
    /// Gain laws (position servos).
    pub ngain: usize,
    /// One-sided joint limits.
    pub nlimit: usize,
}

impl IcfLayout {
    /// The layout of `model`.
    pub fn new(model: &Model) -> Self {
        let depth = |b: usize| {
            let mut n = 0;
            let mut d = model.bodies[b].last_dof;
            while let Some(k) = d {
                n += 1;
                d = model.dofs[k].parent;
            }
            n
        };
        let deepest = (0..model.bodies.len()).map(depth).max().unwrap_or(0);
        let ngain = model.actuators.iter().filter(|a| matches!(a.kind, ActuatorKind::Position { .. })).count();
        let nlimit = 2 * model
            .joints
            .iter()
            .filter(|j| j.range.is_some() && matches!(j.kind, JointKind::Hinge | JointKind::Slide))
            .count();
        Self { ndofc: (2 * deepest).min(model.nv).max(1), ngain, nlimit }
    }
}

/// Model constants of the builder, packed (host side, no device needed).
#[derive(Clone, Debug, PartialEq)]
pub struct PackedIcf {
    /// Sizes.
    pub dims: GpuIcfDims,
    /// One per body.
    pub bodies: Vec<GpuIcfBody>,
    /// One per actuator.
    pub actuators: Vec<GpuActuator>,
    /// One per one-sided limit, in the CPU builder's order.
    pub limit_defs: Vec<GpuIcfLimitDef>,
}

impl PackedIcf {
    /// Packs `model`'s builder constants.
    pub fn new(model: &Model) -> Self {
        let layout = IcfLayout::new(model);
        let mut weld_mass = vec![0.0; model.bodies.len()];
        for b in &model.bodies {
            weld_mass[b.weld] += b.mass;
        }
        let bodies = model
            .bodies
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let m = weld_mass[b.weld];
                GpuIcfBody {
                    last_dof: b.last_dof.map_or(NONE, |d| d as u32),
                    delassus: if model.body_is_dynamic(i) && m > 0.0 { (DELASSUS_FACTOR / m) as f32 } else { 0.0 },
                }
            })
            .collect();
        let mut gain_slot = 0;
        let actuators = model
            .actuators
            .iter()
            .map(|a| {
                let j = &model.joints[a.joint];
                let (ctrl_lo, ctrl_hi) = a.ctrl_range.map_or((0.0, 0.0), |[l, h]| (l as f32, h as f32));
                let mut g = GpuActuator {
                    kind: 0,
                    dof: j.dof_adr as u32,
                    qpos_adr: j.qpos_adr as u32,
                    gain_slot: 0,
                    gear: 0.0,
                    kp: 0.0,
                    kd: 0.0,
                    effort_limit: 0.0,
                    ctrl_lo,
                    ctrl_hi,
                    force_lo: 0.0,
                    force_hi: 0.0,
                    has_ctrl_range: a.ctrl_range.is_some() as u32,
                    has_force_range: 0,
                    _pad: [0; 2],
                };
                match a.kind {
                    ActuatorKind::Motor { gear, force_range } => {
                        g.gear = gear as f32;
                        if let Some([l, h]) = force_range {
                            (g.force_lo, g.force_hi, g.has_force_range) = (l as f32, h as f32, 1);
                        }
                    }
                    ActuatorKind::Position { kp, kd, effort_limit } => {
                        g.kind = 1;
                        g.gain_slot = gain_slot;
                        gain_slot += 1;
                        (g.kp, g.kd) = (kp as f32, kd as f32);
                        // WGSL may assume no infinities: the largest f32 acts as "unlimited".
                        g.effort_limit = if effort_limit.is_finite() { effort_limit as f32 } else { f32::MAX };
                    }
                    // Refused by `Model::gpu_unsupported` before any buffer is made.
                    ActuatorKind::General(_) => {}
                }
                g
            })
            .collect();
        let mut limit_defs = Vec::new();
        for j in &model.joints {
            let (Some([lo, hi]), Some(law), JointKind::Hinge | JointKind::Slide) = (j.range, j.limit_law, j.kind)
            else {
                continue;
            };
            let m = j.limit_margin;
            let soft = j
                .limit_softness
                .soft_law(if model.options.flags.refsafe { model.options.timestep } else { 0.0 }, false);
            for (sign, q_limit) in [(1.0, lo + m), (-1.0, hi - m)] {
                limit_defs.push(GpuIcfLimitDef {
                    dof: j.dof_adr as u32,
                    qpos_adr: j.qpos_adr as u32,
                    sign,
                    q_limit: q_limit as f32,
                    mk: law.mk as f32,
                    damp: law.damp as f32,
                    imp_d0: law.imp[0] as f32,
                    imp_dmax: law.imp[1] as f32,
                    imp_width: law.imp[2] as f32,
                    imp_mid: law.imp[3] as f32,
                    imp_power: law.imp[4] as f32,
                    soft: (model.options.semantics == Semantics::MuJoCo) as u32,
                    soft_k: soft.k as f32,
                    soft_b: soft.b as f32,
                    invweight: model.dofs[j.dof_adr].invweight0 as f32,
                });
            }
        }
        let (_, starts) = dof_blocks(model);
        let mut block_start = [[0; 4]; 9];
        for (b, &s) in starts.iter().enumerate() {
            block_start[b / 4][b % 4] = s;
        }
        let dims = GpuIcfDims {
            ndofc: layout.ndofc as u32,
            ngain: layout.ngain as u32,
            nlimit: layout.nlimit as u32,
            nu: model.nu() as u32,
            stiction_tolerance: model.options.stiction_tolerance as f32,
            nblock: starts.len() as u32 - 1,
            levels: 0,
            tree: tree_pays(model) as u32,
            block_start,
        };
        Self { dims, bodies, actuators, limit_defs }
    }
}

/// Sizes and field offsets of the ICF structs, keyed by WGSL struct name.
pub fn struct_layouts() -> Vec<StructLayout> {
    // WGSL spells the rows of `g` as g0, g1, g2 (vec3f + pad each).
    let mut contact = struct_layout!(
        "IcfContact",
        GpuIcfContact,
        [
            normal,
            phi0,
            vc0,
            stiffness,
            vc,
            dissipation,
            uc,
            mu_static,
            mu_dynamic,
            delassus,
            jac_len,
            fe0,
            n0,
            mu,
            eps,
            law,
            impulse,
            t1,
            soft_d,
            soft_mu,
            soft_b,
            soft_kpos
        ]
    );
    let g = offset_of!(GpuIcfContact, g);
    contact.2.extend([("g0", g), ("g1", g + 16), ("g2", g + 32)]);
    vec![
        contact,
        struct_layout!("IcfDims", GpuIcfDims, [ndofc, ngain, nlimit, nu, stiction_tolerance, nblock, block_start]),
        struct_layout!(
            "IcfParams",
            GpuIcfParams,
            [
                tolerance,
                max_iterations,
                max_line_search_iterations,
                theta_criterion,
                hessian_reuse,
                reuse_target_iterations,
                loop_budget
            ]
        ),
        struct_layout!("IcfBody", GpuIcfBody, [last_dof, delassus]),
        struct_layout!(
            "Actuator",
            GpuActuator,
            [
                kind,
                dof,
                qpos_adr,
                gain_slot,
                gear,
                kp,
                kd,
                effort_limit,
                ctrl_lo,
                ctrl_hi,
                force_lo,
                force_hi,
                has_ctrl_range,
                has_force_range
            ]
        ),
        struct_layout!(
            "IcfLimitDef",
            GpuIcfLimitDef,
            [
                dof, qpos_adr, sign, q_limit, mk, damp, imp_d0, imp_dmax, imp_width, imp_mid, imp_power, soft, soft_k,
                soft_b, invweight
            ]
        ),
        struct_layout!("JacEntry", GpuJacEntry, [col, dof]),
        struct_layout!("IcfGain", GpuIcfGain, [dof, kp, kd, q_err, v_ref, effort, gain, bias]),
        struct_layout!(
            "IcfLimit",
            GpuIcfLimit,
            [dof, sign, g0, fe0, stiffness, damping, soft, soft_d, soft_b, soft_kpos, soft_vel0]
        ),
        struct_layout!(
            "IcfWorld",
            GpuIcfWorld,
            [
                solving,
                ncon,
                overflow,
                status,
                detail,
                h,
                iterations,
                line_search_iterations,
                factorizations,
                residual,
                tolerance,
                cost,
                factor_valid,
                converged,
                phase,
                prev_step,
                prev_residual,
                tol0,
                structured
            ]
        ),
    ]
}

/// The ICF buffers of `nworld` worlds (model constants, inputs, problems,
/// solver state). All allocated up front.
pub struct IcfBuffers {
    nworld: usize,
    ncon: usize,
    nv: usize,
    layout: IcfLayout,
    /// Where the per-world arrays put each world's items.
    storage: Layout,
    dims: wgpu::Buffer,
    /// What `dims` holds.
    dims_value: GpuIcfDims,
    params: wgpu::Buffer,
    bodies: StorageBuffer<GpuIcfBody>,
    actuators: StorageBuffer<GpuActuator>,
    limit_defs: StorageBuffer<GpuIcfLimitDef>,
    /// Controls (nworld, nu).
    pub ctrl: StorageBuffer<f32>,
    /// Servo target velocities (nworld, nu).
    pub target_velocity: StorageBuffer<f32>,
    /// Per-world flags and results (nworld).
    pub world: StorageBuffer<GpuIcfWorld>,
    /// Contact constraints (nworld, ncon).
    pub con: StorageBuffer<GpuIcfContact>,
    /// Jacobian entries (nworld, ncon, ndofc).
    pub jac: StorageBuffer<GpuJacEntry>,
    /// Gain laws (nworld, ngain).
    pub gain: StorageBuffer<GpuIcfGain>,
    /// Joint limits (nworld, nlimit).
    pub limit: StorageBuffer<GpuIcfLimit>,
    /// A (nworld, nv, nv).
    pub a: StorageBuffer<f32>,
    /// Hessian / Cholesky factor (nworld, nv, nv).
    pub factor: StorageBuffer<f32>,
    /// Vectors (nworld, [`IcfVec::COUNT`], nv).
    pub vec: StorageBuffer<f32>,
    /// Jacobian entries per dof (nworld, nv, 1 + ncon).
    pub rows: StorageBuffer<u32>,
    /// Unfinished-solve counter.
    pub counter: StorageBuffer<u32>,
    /// The lists of unfinished solves and their counters ([`active`]).
    pub active: StorageBuffer<u32>,
    /// The indirect launches of the listed solves: (x, y, z, unused) per
    /// list slot, written by `icf_list_unfinished*`.
    dispatch: wgpu::Buffer,
    /// `icf_solve` dispatches that finish every solve without checking
    /// (`None`: dispatch and check until none is unfinished).
    solve_dispatches: Option<usize>,
    software: bool,
    variant: SolverVariant,
    solver_params: SolverParams,
}

impl std::fmt::Debug for IcfBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IcfBuffers")
            .field("nworld", &self.nworld)
            .field("ncon", &self.ncon)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl IcfBuffers {
    /// WGSL names of the buffers this provides.
    pub const BUFFER_NAMES: [&'static str; 19] = [
        "icf_dims",
        "icf_params",
        "icf_bodies",
        "actuators",
        "icf_limit_defs",
        "ctrl",
        "target_velocity",
        "icf_world",
        "icf_con",
        "icf_jac",
        "icf_gain",
        "icf_limit",
        "icf_a",
        "icf_factor",
        "icf_vec",
        "icf_rows",
        "icf_counter",
        "icf_active",
        "icf_dispatch",
    ];

    /// Buffers for `nworld` worlds of `model` with `ncon` contacts per world,
    /// in the default [`Layout`].
    pub fn new(ctx: &GpuContext, model: &Model, nworld: usize, ncon: usize) -> Result<Self, GpuError> {
        Self::with_layout(ctx, model, nworld, ncon, Layout::default())
    }

    /// [`Self::new`] with the per-world arrays in `layout` (that of the
    /// kernels' [`super::GpuData`]; the host reads and writes through it).
    pub fn with_layout(
        ctx: &GpuContext,
        model: &Model,
        nworld: usize,
        ncon: usize,
        layout_kind: Layout,
    ) -> Result<Self, GpuError> {
        let packed = PackedIcf::new(model);
        let layout = IcfLayout::new(model);
        let nv = model.nv;
        let nu = model.nu();
        let params = GpuIcfParams::new(&SolverParams::default(), ctx.is_software());
        Ok(Self {
            nworld,
            ncon,
            nv,
            layout,
            storage: layout_kind,
            dims: uniform_buffer(ctx, "icf_dims", &packed.dims),
            dims_value: packed.dims,
            params: uniform_buffer(ctx, "icf_params", &params),
            bodies: StorageBuffer::from_slice(ctx, "icf_bodies", &packed.bodies)?,
            actuators: StorageBuffer::from_slice(ctx, "actuators", &packed.actuators)?,
            limit_defs: StorageBuffer::from_slice(ctx, "icf_limit_defs", &packed.limit_defs)?,
            ctrl: StorageBuffer::new(ctx, "ctrl", nworld * nu)?,
            target_velocity: StorageBuffer::new(ctx, "target_velocity", nworld * nu)?,
            world: StorageBuffer::new(ctx, "icf_world", nworld)?,
            con: StorageBuffer::new(ctx, "icf_con", nworld * ncon)?,
            jac: StorageBuffer::new(ctx, "icf_jac", nworld * ncon * layout.ndofc)?,
            gain: StorageBuffer::new(ctx, "icf_gain", nworld * layout.ngain)?,
            limit: StorageBuffer::new(ctx, "icf_limit", nworld * layout.nlimit)?,
            a: StorageBuffer::new(ctx, "icf_a", nworld * nv * nv)?,
            factor: StorageBuffer::new(ctx, "icf_factor", nworld * nv * nv)?,
            vec: StorageBuffer::new(ctx, "icf_vec", nworld * IcfVec::COUNT * nv)?,
            rows: StorageBuffer::new(ctx, "icf_rows", nworld * nv * (ncon + 1))?,
            counter: StorageBuffer::new(ctx, "icf_counter", 4)?,
            active: StorageBuffer::new(ctx, "icf_active", active::LIST + nworld)?,
            dispatch: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("icf_dispatch"),
                size: 2 * active::DISPATCH_BYTES,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            solve_dispatches: None,
            software: ctx.is_software(),
            variant: SolverVariant::auto(nv, nworld, ctx.is_software()),
            solver_params: SolverParams::default(),
        }
        .with_dispatches())
    }

    /// The per-world block sizes.
    pub fn layout(&self) -> IcfLayout {
        self.layout
    }

    /// Sets the Newton solver settings of every world.
    pub fn set_params(&mut self, ctx: &GpuContext, params: &SolverParams) {
        let p = GpuIcfParams::new(params, self.software);
        ctx.queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&p));
        self.solver_params = *params;
        self.solve_dispatches = self.dispatches();
    }

    /// Lets the Newton solves factorize over the model's dof blocks
    /// (kinematic trees, [`dof_blocks`]; the default, taken per solve
    /// launch where it loops less than the dense factorization) or not
    /// (`false`: dense throughout). Both give the same results bit for
    /// bit; for comparisons and measurements.
    pub fn set_structured(&self, ctx: &GpuContext, structured: bool) {
        let mut dims = self.dims_value;
        if !structured {
            dims.nblock = 1;
        }
        ctx.queue.write_buffer(&self.dims, 0, bytemuck::bytes_of(&dims));
    }

    /// Runs the structured factorization by elimination levels (each
    /// block of a level factored by its own thread, left-looking; two
    /// barriers per level instead of two per column) where its busiest
    /// thread's loop count fits half the loop budget; off by default. The
    /// factor equals the per-column one bit for bit
    /// (`kernels/icf_solver.wgsl`, `cholesky_factor_levels`).
    pub fn set_level_factorization(&self, ctx: &GpuContext, on: bool) {
        let mut dims = self.dims_value;
        dims.levels = on as u32;
        ctx.queue.write_buffer(&self.dims, 0, bytemuck::bytes_of(&dims));
    }

    /// Lets the Newton solves factor over the dof tree where it pays and
    /// every contact lies on one path to a root ([`GpuIcfDims::tree`]; the
    /// default) or not (`false`: the dense or block factorizations
    /// throughout); for comparisons and measurements. Like the other
    /// factorization settings it starts from the defaults.
    pub fn set_tree_factorization(&self, ctx: &GpuContext, on: bool) {
        let mut dims = self.dims_value;
        if !on {
            dims.tree = 0;
        }
        ctx.queue.write_buffer(&self.dims, 0, bytemuck::bytes_of(&dims));
    }

    /// The solver stage ([`SolverVariant::auto`] unless set).
    pub fn variant(&self) -> SolverVariant {
        self.variant
    }

    /// Chooses the solver stage (create the [`IcfKernels`] with the same).
    pub fn set_variant(&mut self, variant: SolverVariant) {
        self.variant = variant;
        self.solve_dispatches = self.dispatches();
    }

    fn with_dispatches(mut self) -> Self {
        self.solve_dispatches = self.dispatches();
        self
    }

    /// One dispatch per solve on hardware adapters. On software adapters:
    /// serial solves get a fixed number of dispatches when a few surely
    /// suffice ([`software_solve_dispatches`]; idle ones cost little);
    /// cooperative ones are checked after each dispatch (an idle cooperative
    /// dispatch costs llvmpipe ~15 µs per world).
    fn dispatches(&self) -> Option<usize> {
        match (self.software, self.variant) {
            (false, _) => Some(1),
            (true, SolverVariant::Cooperative | SolverVariant::Wide) => None,
            (true, SolverVariant::Serial) => {
                software_solve_dispatches(self.nv, self.ncon, self.layout, &self.solver_params, 1, 16)
            }
        }
    }

    /// `icf_solve` dispatches that surely finish every solve, or `None` when
    /// the host must check between dispatches ([`IcfKernels::solve`]).
    pub fn solve_dispatches(&self) -> Option<usize> {
        self.solve_dispatches
    }

    /// Index of item `k` of the `n` per world of world `w` in a per-world array
    /// (`item_at` in the kernels).
    fn at(&self, n: usize, w: usize, k: usize) -> usize {
        element_index(self.storage, self.nworld, n, 1, w, k, 0)
    }

    /// Writes row `row` of world `world`'s vector block (nv values).
    pub fn write_vec(&self, ctx: &GpuContext, world: usize, row: IcfVec, values: &[f32]) -> Result<(), GpuError> {
        if values.len() != self.nv {
            return Err(GpuError::Length { what: "ICF vector", expected: self.nv, got: values.len() });
        }
        let n = IcfVec::COUNT * self.nv;
        match self.storage {
            Layout::WorldMajor => self.vec.write_at(ctx, self.at(n, world, row as usize * self.nv), values),
            Layout::FieldMajor => values
                .iter()
                .enumerate()
                .try_for_each(|(i, x)| self.vec.write_at(ctx, self.at(n, world, row as usize * self.nv + i), &[*x])),
        }
    }

    /// Fills every problem and solver output with `value` (NaN in parity
    /// tests); `icf_world` and the inputs (controls) are kept.
    pub fn fill_outputs(&self, ctx: &GpuContext, value: f32) -> Result<(), GpuError> {
        let c = value;
        let v3 = [c; 3];
        self.con.fill(
            ctx,
            GpuIcfContact {
                normal: v3,
                phi0: c,
                vc0: v3,
                stiffness: c,
                vc: v3,
                dissipation: c,
                uc: v3,
                mu_static: c,
                mu_dynamic: c,
                delassus: c,
                jac_len: u32::MAX,
                fe0: c,
                n0: c,
                mu: c,
                eps: c,
                law: u32::MAX,
                impulse: v3,
                _pad1: c,
                g: [[c; 4]; 3],
                t1: v3,
                soft_d: c,
                soft_mu: [c; 2],
                soft_b: c,
                soft_kpos: c,
            },
        )?;
        self.jac.fill(ctx, GpuJacEntry { col: v3, dof: u32::MAX })?;
        let g = GpuIcfGain { dof: u32::MAX, kp: c, kd: c, q_err: c, v_ref: c, effort: c, gain: c, bias: c };
        self.gain.fill(ctx, g)?;
        let l = GpuIcfLimit {
            dof: u32::MAX,
            sign: c,
            g0: c,
            fe0: c,
            stiffness: c,
            damping: c,
            soft: u32::MAX,
            soft_d: c,
            soft_b: c,
            soft_kpos: c,
            soft_vel0: c,
            _pad: c,
        };
        self.limit.fill(ctx, l)?;
        self.a.fill(ctx, c)?;
        self.factor.fill(ctx, c)?;
        self.vec.fill(ctx, c)
    }

    /// Reads every world's problem back as [`IcfProblem<f32>`] (without
    /// `mass` and `damping`, which the GPU does not copy: see `Field::Mass`),
    /// with the solver's per-world record.
    pub fn read_problems(
        &self,
        ctx: &GpuContext,
        readback: &Readback,
    ) -> Result<Vec<(IcfProblem<f32>, GpuIcfWorld)>, GpuError> {
        let (nv, ncon, l) = (self.nv, self.ncon, self.layout);
        let worlds = self.world.read(ctx, readback)?;
        let con = self.con.read(ctx, readback)?;
        let jac = self.jac.read(ctx, readback)?;
        let gain = self.gain.read(ctx, readback)?;
        let limit = self.limit.read(ctx, readback)?;
        let a = self.a.read(ctx, readback)?;
        let vec = self.vec.read(ctx, readback)?;
        let row = |w: usize, r: IcfVec| -> Vec<f32> {
            (0..nv).map(|i| vec[self.at(IcfVec::COUNT * nv, w, r as usize * nv + i)]).collect()
        };
        let mut out = Vec::with_capacity(self.nworld);
        for (w, iw) in worlds.iter().enumerate() {
            let mut p = IcfProblem::<f32>::new(nv);
            p.h = iw.h;
            for (k, x) in p.a.iter_mut().enumerate() {
                *x = a[self.at(nv * nv, w, k)];
            }
            p.r = row(w, IcfVec::R);
            p.scale = row(w, IcfVec::Scale);
            p.force = row(w, IcfVec::Force);
            p.v0 = row(w, IcfVec::V0);
            for ci in 0..(iw.ncon as usize).min(ncon) {
                let c = &con[self.at(ncon, w, ci)];
                let len = (c.jac_len as usize).min(l.ndofc);
                let start = p.jac_dof.len();
                for e in 0..len {
                    let j = &jac[self.at(ncon * l.ndofc, w, ci * l.ndofc + e)];
                    p.jac_dof.push(j.dof as usize);
                    p.jac_col.push(Vec3::from_array(j.col));
                }
                p.contacts.push(ContactConstraint {
                    phi0: c.phi0,
                    normal: Vec3::from_array(c.normal),
                    stiffness: c.stiffness,
                    dissipation: c.dissipation,
                    mu_static: c.mu_static,
                    mu_dynamic: c.mu_dynamic,
                    delassus: c.delassus,
                    jac_start: start,
                    jac_len: len,
                    vc0: Vec3::from_array(c.vc0),
                    fe0: c.fe0,
                    n0: c.n0,
                    mu: c.mu,
                    eps: c.eps,
                    soft: (c.law == 1).then(|| {
                        let hk = p.h * c.soft_kpos;
                        SoftContact {
                            d: c.soft_d,
                            mu: c.soft_mu,
                            b: c.soft_b,
                            kpos: c.soft_kpos,
                            // The margin is not kept on the device (it lands no events there).
                            reach: 0.0,
                            t1: Vec3::from_array(c.t1),
                            w0: Vec3::from_array(c.vc0) * (1.0 - p.h * c.soft_b),
                            hk,
                        }
                    }),
                });
            }
            for g in (0..l.ngain).map(|k| &gain[self.at(l.ngain, w, k)]) {
                p.gains.push(GainConstraint {
                    dof: g.dof as usize,
                    kp: g.kp,
                    kd: g.kd,
                    q_err: g.q_err,
                    v_ref: g.v_ref,
                    effort: if g.effort == f32::MAX { f32::INFINITY } else { g.effort },
                    gain: g.gain,
                    bias: g.bias,
                });
            }
            for x in (0..l.nlimit).map(|k| &limit[self.at(l.nlimit, w, k)]) {
                p.limits.push(LimitConstraint {
                    dof: x.dof as usize,
                    sign: x.sign,
                    g0: x.g0,
                    fe0: x.fe0,
                    stiffness: x.stiffness,
                    damping: x.damping,
                    soft: (x.soft == 1).then(|| {
                        let mut s =
                            SoftRow { d: x.soft_d, b: x.soft_b, kpos: x.soft_kpos, vel0: x.soft_vel0, vref: 0.0 };
                        s.set_time_step(p.h);
                        s
                    }),
                });
            }
            out.push((p, *iw));
        }
        Ok(out)
    }

    /// Reads row `row` of every world (nworld × nv, world first).
    pub fn read_vec(&self, ctx: &GpuContext, readback: &Readback, row: IcfVec) -> Result<Vec<f32>, GpuError> {
        let all = self.vec.read(ctx, readback)?;
        let nv = self.nv;
        Ok((0..self.nworld)
            .flat_map(|w| (0..nv).map(move |i| (w, i)))
            .map(|(w, i)| all[self.at(IcfVec::COUNT * nv, w, row as usize * nv + i)])
            .collect())
    }
}

impl BufferSource for IcfBuffers {
    fn buffer(&self, name: &str) -> Option<&wgpu::Buffer> {
        Some(match name {
            "icf_dims" => &self.dims,
            "icf_params" => &self.params,
            "icf_bodies" => self.bodies.buffer(),
            "actuators" => self.actuators.buffer(),
            "icf_limit_defs" => self.limit_defs.buffer(),
            "ctrl" => self.ctrl.buffer(),
            "target_velocity" => self.target_velocity.buffer(),
            "icf_world" => self.world.buffer(),
            "icf_con" => self.con.buffer(),
            "icf_jac" => self.jac.buffer(),
            "icf_gain" => self.gain.buffer(),
            "icf_limit" => self.limit.buffer(),
            "icf_a" => self.a.buffer(),
            "icf_factor" => self.factor.buffer(),
            "icf_vec" => self.vec.buffer(),
            "icf_rows" => self.rows.buffer(),
            "icf_counter" => self.counter.buffer(),
            "icf_active" => self.active.buffer(),
            "icf_dispatch" => &self.dispatch,
            _ => return None,
        })
    }
}

/// The ICF kernels, bound once over the given buffers.
#[derive(Debug)]
pub struct IcfKernels {
    build: Kernel,
    build_contacts: Kernel,
    build_rows: Kernel,
    set_time_step: Kernel,
    evaluate: Kernel,
    solve: Kernel,
    count_unfinished: Kernel,
}

impl IcfKernels {
    /// Creates the kernels for `nworld` worlds with `ncon` contact slots,
    /// solving with `variant` (as set in the [`IcfBuffers`]), binding from
    /// `sources` (model, per-world data, contacts, [`IcfBuffers`]).
    pub fn new(
        ctx: &GpuContext,
        nworld: usize,
        ncon: usize,
        variant: SolverVariant,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        Self::with_state(ctx, nworld, ncon, variant, SolverState::Storage, sources)
    }

    /// [`Self::new`] with the solver's dense state in `state` (a variant of
    /// the solver stage; the same arithmetic in the same order).
    pub fn with_state(
        ctx: &GpuContext,
        nworld: usize,
        ncon: usize,
        variant: SolverVariant,
        state: SolverState,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        let (evaluate, solve, threads) = match variant {
            SolverVariant::Serial => ("icf_evaluate_serial", "icf_solve_serial", nworld),
            // One workgroup per world.
            SolverVariant::Cooperative | SolverVariant::Wide => {
                ("icf_evaluate", "icf_solve", nworld * WORKGROUP_SIZE as usize)
            }
        };
        let stage = variant.stage(state)?.module();
        Ok(Self {
            build: Kernel::new(ctx, &BUILDER, "icf_build", nworld, sources)?,
            build_contacts: Kernel::new(ctx, &BUILDER, "icf_build_contacts", nworld * ncon, sources)?,
            build_rows: Kernel::new(ctx, &BUILDER, "icf_build_rows", nworld, sources)?,
            set_time_step: Kernel::new(ctx, &BUILDER, "icf_set_time_step", nworld, sources)?,
            evaluate: Kernel::new(ctx, &stage, evaluate, threads, sources)?,
            solve: Kernel::new(ctx, &stage, solve, threads, sources)?,
            count_unfinished: Kernel::new(ctx, &stage, "icf_count_unfinished", nworld, sources)?,
        })
    }

    /// Encodes [`crate::icf::IcfBuilder::build`] for the solving worlds (needs
    /// the multibody stages and the contacts at (q0, v0)).
    pub fn encode_build(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.build.encode(pass);
        self.build_contacts.encode(pass);
        self.build_rows.encode(pass);
    }

    /// Encodes [`crate::icf::IcfProblem::set_time_step`] with each world's `h`
    /// (and marks the next solve as a fresh one).
    pub fn encode_set_time_step(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.set_time_step.encode(pass);
    }

    /// Encodes [`crate::icf::cost::evaluate`] with the Hessian at row [`IcfVec::V`].
    pub fn encode_evaluate(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.evaluate.encode(pass);
    }

    /// Encodes one dispatch of [`crate::icf::IcfSolver::solve`] from the warm
    /// start in row [`IcfVec::V`] (see [`IcfKernels::encode_solves`]).
    pub fn encode_solve(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.solve.encode(pass);
    }

    /// Encodes the dispatches that finish every solve, when their number
    /// is known in advance ([`IcfBuffers::solve_dispatches`]); returns false
    /// (encoding nothing) otherwise.
    pub fn encode_solves(&self, pass: &mut wgpu::ComputePass<'_>, buffers: &IcfBuffers) -> bool {
        let Some(n) = buffers.solve_dispatches() else { return false };
        for _ in 0..n {
            self.encode_solve(pass);
        }
        true
    }

    /// Solves every solving world's problem to the end: the known number of
    /// dispatches, or (software adapters, large problems) dispatches while a
    /// 4-byte readback of the number of unfinished solves is non-zero.
    pub fn solve(&self, ctx: &GpuContext, buffers: &IcfBuffers, readback: &Readback) -> Result<(), GpuError> {
        let mut known = false;
        run_pass(ctx, "icf_solve", |pass| {
            known = self.encode_solves(pass, buffers);
            if !known {
                self.encode_solve(pass);
            }
        })?;
        if known {
            return Ok(());
        }
        loop {
            buffers.counter.write_at(ctx, 0, &[0])?;
            run_pass(ctx, "icf_count_unfinished", |pass| self.count_unfinished.encode(pass))?;
            let mut unfinished = [0u32];
            buffers.counter.read_range_into(ctx, readback, 0, &mut unfinished)?;
            if unfinished[0] == 0 {
                return Ok(());
            }
            run_pass(ctx, "icf_solve (resumed)", |pass| self.encode_solve(pass))?;
        }
    }
}

/// The Newton solves of a batch over the worlds whose solve is unfinished:
/// a listing (`icf_list_unfinished*`, one thread per world) builds the list
/// in [`IcfBuffers::active`] and sizes the indirect launch of the solve
/// (`icf_solve_listed` or `icf_solve_serial_listed`: a workgroup or a
/// thread per listed world), so that idle, finished and waiting worlds
/// cost nothing in it. Encode [`Self::encode_list`] and
/// [`Self::encode_solve`] in pairs.
#[derive(Debug)]
pub struct ListedSolves {
    /// `icf_list_unfinished<slot>` per list slot.
    list: [Kernel; 2],
    /// The solve over the last listing, launched indirectly.
    solve: Kernel,
    /// The slot of the next listing (the two alternate: a listing clears
    /// the other slot for the one after it).
    slot: AtomicUsize,
}

impl ListedSolves {
    /// The listing and the solve for `nworld` worlds on `variant`'s stage
    /// with its dense state in `state`, binding from `sources` (model,
    /// per-world data, contacts, [`IcfBuffers`]).
    pub fn new(
        ctx: &GpuContext,
        nworld: usize,
        variant: SolverVariant,
        state: SolverState,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        let (solve, threads) = match variant {
            SolverVariant::Serial => ("icf_solve_serial_listed", nworld),
            // Up to one workgroup per world.
            SolverVariant::Cooperative | SolverVariant::Wide => ("icf_solve_listed", nworld * WORKGROUP_SIZE as usize),
        };
        let stage = variant.stage(state)?.module();
        Ok(Self {
            list: [
                Kernel::new(ctx, &stage, "icf_list_unfinished0", nworld, sources)?,
                Kernel::new(ctx, &stage, "icf_list_unfinished1", nworld, sources)?,
            ],
            solve: Kernel::new(ctx, &stage, solve, threads, sources)?,
            slot: AtomicUsize::new(0),
        })
    }

    /// Encodes a listing of the unfinished solves (the solving worlds whose
    /// Newton solve has not finished), which sizes the next [`Self::encode_solve`].
    pub fn encode_list(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.list[self.slot.load(Ordering::Relaxed)].encode(pass);
    }

    /// Encodes one dispatch of [`crate::icf::IcfSolver::solve`] (resuming
    /// paused solves) over the worlds of the last listing, launched
    /// indirectly (nothing runs when none is listed), and switches to the
    /// other list slot.
    pub fn encode_solve(&self, pass: &mut wgpu::ComputePass<'_>, buffers: &IcfBuffers) {
        let slot = self.slot.load(Ordering::Relaxed);
        self.solve.encode_indirect(pass, &buffers.dispatch, slot as u64 * active::DISPATCH_BYTES);
        self.slot.store(1 - slot, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_worlds_go_cooperative_on_hardware_only() {
        // The H200 measurements: cube (nv = 6), ant (14), humanoid (27).
        for nv in [6, 14, 27] {
            assert_eq!(SolverVariant::auto(nv, 1024, false), SolverVariant::Cooperative);
            assert_eq!(SolverVariant::auto(nv, 8192, false), SolverVariant::Cooperative);
            assert_eq!(SolverVariant::auto(nv, 16384, false), SolverVariant::Serial);
            // Lavapipe keeps the nv rule.
            assert_eq!(SolverVariant::auto(nv, 1024, true), SolverVariant::Serial);
        }
        assert_eq!(SolverVariant::auto(120, 65536, false), SolverVariant::Cooperative);
        // The clutter (nv = 120) solves on the wide stage up to the same world count.
        assert_eq!(SolverVariant::auto(120, 1024, false), SolverVariant::Wide);
        assert_eq!(SolverVariant::auto(120, 8192, false), SolverVariant::Wide);
        assert_eq!(SolverVariant::auto(120, 1024, true), SolverVariant::Cooperative);
        assert_eq!(SolverVariant::Wide.threads(), 64);
    }
}
