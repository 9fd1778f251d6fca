//! GPU path (wgpu + WGSL compute kernels, f32): many worlds of one model
//! stepped in parallel, with the same stages and names as the CPU path.
//!
//! The module is layered: a file uses only the files of the layers below
//! its own and those listed before it in its layer ([`LAYERS`]; checked by
//! `tests/gpu_layers.rs`), so the device plumbing knows no stage, a stage
//! knows no batch, and the batch sits on top.
//!
//! | layer | files | what |
//! |---|---|---|
//! | device | [`error`], [`adapters`], [`compose`], [`context`], [`buffers`], [`kernel`] | errors; the adapter list and the selection rule (`gpu:N`, `CUDA_VISIBLE_DEVICES`, `LOCAL_RANK`); [`KernelFile`] / [`Module`] composition and naga reflection; the wgpu device with its module and pipeline cache; storage and uniform buffers, readback; [`Kernel`], one entry point bound by name |
//! | data | [`names`], [`fields`], [`contact`], [`model`], [`data`] | names the kernels see ([`names::KernelName`]: trial stages, geom and pair kinds); the per-world [`Field`]s and their [`Layout`]; the packed model; `kernels/data.wgsl`, the binding table every kernel file is composed after |
//! | stages | [`kinematics`], [`rnea`], [`integrate`], [`dynamics`], [`collision`], [`icf`], [`cenic`], [`sensors`] | one wrapper per stage: its kernel files (static WGSL in `kernels/`, generated constants and dispatch tables), its buffers and its kernels |
//! | batch | [`batch`] (`contacts`, `host`, `schedule`, `profile`, `view`, `pipeline`, `gpu_batch`) | [`GpuBatch`]: the device side of a batch ([`batch::Pipeline`]: the stages' buffers and kernels, the iteration schedule), what the host knows of the worlds, and the [`crate::batch::Batch`] interface |
//! | tasks | [`rl`] | RL tasks evaluated on a batch's state |
//! | table | [`shaders`] | every stage with its modules and buffers, bottom to top (for checks and tools) |
//!
//! Above these layers and outside `src/gpu`: the renderer
//! ([`crate::render`]) uses the device layer for its render pipeline and
//! binds a batch's state ([`GpuBatch::with_state_sources`]) for its gather
//! kernel, as [`rl`] does; no file here uses it, except the table, which
//! lists its kernel files (`render_gather.wgsl` among the stages,
//! `render.wgsl` in [`shaders::RASTER`]) for the checks.
//!
//! | Rust wrapper | kernel file | CPU twin |
//! |---|---|---|
//! | [`kinematics`] | `kernels/kinematics.wgsl` | `src/dynamics/kinematics.rs` |
//! | [`rnea`] | `kernels/rnea.wgsl` | `src/dynamics/rnea.rs` |
//! | [`integrate`] | `kernels/integrate.wgsl` | `src/dynamics/integrate.rs` |
//! | [`collision`] | `kernels/collision.wgsl`, composed after the libraries `collision_shapes.wgsl`, `collision_analytic.wgsl`, `collision_gjk.wgsl`, `collision_epa.wgsl`, `collision_manifold.wgsl`, `collision_hfield.wgsl` | `src/collision/` |
//! | [`icf`] | `kernels/icf_builder.wgsl`, `icf_cost.wgsl`, `icf_solver.wgsl` (Cholesky, line search, Newton), composed into `icf_solve_serial.wgsl` (a thread per world) or `icf_solve_coop.wgsl` (a workgroup of 16 threads per world, or 64 in the wide variant for nv ≥ 64), with the dense state's accessors of `icf_state_*.wgsl` ([`icf::SolverStage`]) | `src/icf/` |
//! | [`cenic`] | `kernels/cenic.wgsl` (the parts of a trial, composed after `kinematics.wgsl`, `rnea.wgsl`, `integrate.wgsl`, `icf_builder.wgsl`, and their launches generated from [`cenic::Part`]) | `src/integrator/cenic.rs` |
//! | [`sensors`] ([`GpuSensors`]) | `kernels/sensors.wgsl` (composed after `icf_cost.wgsl`) | `src/dynamics/sensor.rs` |
//! | [`rl`] | `kernels/rl.wgsl` (composed after `icf_cost.wgsl`) | `src/rl/tasks.rs` |
//! | [`batch`] ([`GpuBatch`]) | all of the above | `src/batch/` ([`crate::batch::CpuBatch`]) |
//!
//! Every kernel file is composed at load time ([`Module::compose`]) after
//! the files it depends on: `common.wgsl` (math helpers, the twin of
//! `src/math`), `data.wgsl` (the binding table, the twin of
//! [`crate::dynamics::Data`]) with the generated declarations (the
//! per-world fields of [`Field`], the names of [`names`]), its libraries,
//! then the file and its generated part. Buffers are bound to WGSL
//! variables by name, using naga reflection of each entry point, so a
//! stage only declares what it reads and writes.
//!
//! Layout: model constants ([`model`]) are uploaded once; per-world
//! parameters and state ([`fields`]) are `f32` arrays in a [`Layout`]
//! chosen per batch: by default field-major (item first, world last, one
//! plane per component, so that the 32 worlds of a warp read 128
//! contiguous bytes), or world-major (each world's block laid out like the
//! matching `Data<f32>` field). All per-world fields but the mass matrix
//! share one buffer (`world_data`), so that a kernel running a whole trial
//! part binds few buffers. Host reads and writes are world first either
//! way. Nothing is allocated while stepping.
//!
//! Launches: the parity stages run tree recursions one thread per world and
//! stages independent per item (geom/site poses, spatial inertias,
//! `integrate_q`) one thread per (world, item). The batch
//! ([`GpuBatch`]) runs a CENIC trial as launches of its parts (one thread
//! per world, several parts per launch: [`cenic::Fusion`]), the collision
//! and the Newton solves (each launched indirectly over a list, built on
//! the device, of the worlds whose solve is unfinished), and reads back
//! once per advance.
//!
//! Nothing here runs unless asked for: creating a [`GpuContext`] is the only
//! way in, and it returns [`GpuError::NoAdapter`] (never panics) on machines
//! without a usable adapter. The CPU path does not depend on this module.
//!
//! ```no_run
//! use cenic::gpu::{Field, GpuContext, GpuDynamics, Stage};
//! use std::sync::Arc;
//! let model = Arc::new(cenic::scenes::cube_toss());
//! let ctx = Arc::new(GpuContext::new()?);
//! let gpu = GpuDynamics::new(ctx, model, 1024)?;
//! gpu.run(&Stage::FORWARD)?;
//! let mass = gpu.read(Field::Mass)?; // (nworld, nv, nv)
//! # Ok::<(), cenic::gpu::GpuError>(())
//! ```

/// (WGSL struct name, size, [(field, offset)]) of a `#[repr(C)]` Rust twin
/// ([`model::StructLayout`]), for comparing with naga's layout.
macro_rules! struct_layout {
    ($wgsl:literal, $t:ty, [$($f:ident),* $(,)?]) => {
        ($wgsl, size_of::<$t>(), vec![$((stringify!($f), core::mem::offset_of!($t, $f))),*])
    };
}

// Device layer.
pub mod adapters;
pub mod buffers;
pub mod compose;
pub mod context;
pub mod error;
pub mod kernel;
// Data layer.
pub mod contact;
pub mod data;
pub mod fields;
pub mod model;
pub mod names;
// Stages.
pub mod cenic;
pub mod collision;
pub mod dynamics;
pub mod icf;
pub mod integrate;
pub mod kinematics;
pub mod rnea;
pub mod sensors;
// The batch, what builds on it, and the table.
pub mod batch;
pub mod rl;
pub mod shaders;

pub use adapters::{AdapterDesc, AdapterRequest, Choice, Selection};
pub use batch::{CollisionBackend, CollisionLaunch, GpuBatch, GpuBatchOptions, LaunchTime};
pub use buffers::{BufferSource, Readback, StorageBuffer};
pub use cenic::Fusion;
pub use collision::GpuCollision;
pub use compose::{KernelFile, Module};
pub use context::{GpuContext, GpuCounters, GpuOptions, list_adapters};
pub use dynamics::{GpuDynamics, Stage};
pub use error::GpuError;
pub use fields::{Field, GpuData, Items, Layout};
pub use kernel::{Kernel, WORKGROUP_SIZE};
pub use model::GpuModel;
pub use sensors::GpuSensors;
/// The wgpu version the GPU path is built on (for `GpuOptions`, encoders and passes).
pub use wgpu;

/// The layers of this module, bottom to top, each with its files in order
/// (`batch/x` is `src/gpu/batch/x.rs`; `batch` its `mod.rs`, which only
/// declares and re-exports). A file may use a file listed before it, never
/// one after: `tests/gpu_layers.rs` parses every `use super::…` /
/// `crate::gpu::…` path of `src/gpu` against this list.
pub const LAYERS: &[(&str, &[&str])] = &[
    ("device", &["error", "adapters", "compose", "context", "buffers", "kernel"]),
    ("data", &["names", "fields", "contact", "model", "data"]),
    ("stages", &["kinematics", "rnea", "integrate", "dynamics", "collision", "icf", "cenic", "sensors"]),
    (
        "batch",
        &[
            "batch/host",
            "batch/contacts",
            "batch/schedule",
            "batch/profile",
            "batch/view",
            "batch/pipeline",
            "batch/gpu_batch",
            "batch",
        ],
    ),
    ("tasks", &["rl"]),
    ("table", &["shaders"]),
];
