//! GPU path (wgpu + WGSL compute kernels, f32): many worlds of one model
//! stepped in parallel, with the same stages and names as the CPU path.
//!
//! | Rust wrapper | kernel file | CPU twin |
//! |---|---|---|
//! | [`kinematics`] | `kernels/kinematics.wgsl` | `src/dynamics/kinematics.rs` |
//! | [`rnea`] | `kernels/rnea.wgsl` | `src/dynamics/rnea.rs` |
//! | [`integrate`] | `kernels/integrate.wgsl` | `src/dynamics/integrate.rs` |
//! | [`collision`] | `kernels/collision.wgsl`, composed after the libraries `collision_shapes.wgsl`, `collision_analytic.wgsl`, `collision_gjk.wgsl`, `collision_epa.wgsl`, `collision_manifold.wgsl`, `collision_hfield.wgsl` | `src/collision/` |
//! | [`icf`] | `kernels/icf_builder.wgsl`, `icf_cost.wgsl`, `icf_solver.wgsl` (Cholesky, line search, Newton), composed into `icf_solve_serial.wgsl` (a thread per world) or `icf_solve_coop.wgsl` (a workgroup of 16 threads per world, or 64 in the wide stage `icf_solve_coop#…@64` for nv ≥ 64; the count is generated with the variant) | `src/icf/` |
//! | [`cenic`] | `kernels/cenic.wgsl` (the parts of a trial, composed after `kinematics.wgsl`, `rnea.wgsl`, `integrate.wgsl`, `icf_builder.wgsl`, and their launches generated from [`cenic::PARTS`]) | `src/integrator/cenic.rs` |
//! | [`rl`] | `kernels/rl.wgsl` (composed after `icf_cost.wgsl`) | `src/rl/tasks.rs` |
//! | [`sensors`] ([`GpuSensors`]) | `kernels/sensors.wgsl` (composed after `icf_cost.wgsl`) | `src/dynamics/sensor.rs` |
//! | [`batch`] ([`GpuBatch`]) | all of the above | `src/batch/` ([`crate::batch::CpuBatch`]) |
//!
//! Every kernel file is composed at load time ([`shaders::compose_module`])
//! as `common.wgsl` (math helpers, the twin of `src/math`) + `data.wgsl`
//! (the binding table, the twin of [`crate::dynamics::Data`]) + generated
//! declarations (the per-world fields of [`Field`], the trial stages of
//! [`cenic::TRIAL_STAGES`]) + the files it depends on
//! ([`shaders::STAGE_DEPS`]) + the stage file (+ generated entry points).
//! Buffers are bound to WGSL variables by name, using naga reflection of
//! each entry point, so a stage only declares what it reads and writes.
//!
//! Layout: model constants ([`model`]) are uploaded once; per-world
//! parameters and state ([`buffers`]) are `f32` arrays in a [`Layout`]
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
//! and the Newton solves, and reads back once per advance.

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

pub mod batch;
pub mod buffers;
pub mod cenic;
pub mod collision;
pub mod contact;
pub mod context;
pub mod dynamics;
pub mod icf;
pub mod integrate;
pub mod kinematics;
pub mod model;
pub mod rl;
pub mod rnea;
pub mod sensors;
pub mod shaders;

pub use batch::{CollisionBackend, CollisionLaunch, GpuBatch, GpuBatchOptions, LaunchTime};
pub use buffers::{BufferSource, Field, GpuData, Items, Layout, Readback, StorageBuffer};
pub use cenic::Fusion;
pub use collision::GpuCollision;
pub use context::{GpuContext, GpuCounters, GpuOptions};
pub use dynamics::{GpuDynamics, Stage};
pub use model::GpuModel;
pub use sensors::GpuSensors;
pub use shaders::Kernel;
/// The wgpu version the GPU path is built on (for `GpuOptions`, encoders and passes).
pub use wgpu;

/// Threads per workgroup of every kernel (`WORKGROUP_SIZE` in `kernels/common.wgsl`).
pub const WORKGROUP_SIZE: u32 = 64;

/// Errors of the GPU path. None of them is a panic: a machine without a
/// usable GPU gets [`GpuError::NoAdapter`] and can keep using the CPU path.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GpuError {
    /// No adapter matched (or none exists).
    #[error(
        "no GPU adapter: {0}. On Linux without a GPU, install Mesa's software Vulkan driver \
         (Debian/Ubuntu: `apt-get install mesa-vulkan-drivers`, which provides lavapipe); \
         WGPU_BACKEND, WGPU_ADAPTER_NAME and WGPU_POWER_PREF select among several adapters"
    )]
    NoAdapter(String),
    /// The adapter cannot provide a limit the kernels need.
    #[error("GPU adapter '{adapter}' too limited: {limit} is {available}, need {required}")]
    Limits {
        /// Adapter name.
        adapter: String,
        /// Name of the wgpu limit.
        limit: &'static str,
        /// What the kernels need.
        required: u64,
        /// What the adapter offers.
        available: u64,
    },
    /// Device creation failed, the device was lost, or wgpu reported an error.
    #[error("GPU device error: {0}")]
    Device(String),
    /// A kernel failed to parse, validate or compile.
    #[error("kernel '{stage}': {message}")]
    Shader {
        /// Stage (kernel file) name.
        stage: String,
        /// The compiler's message.
        message: String,
    },
    /// A kernel uses a WGSL variable no buffer is registered for.
    #[error("kernel '{stage}::{entry}' binds '{name}', which no GPU buffer provides")]
    Binding {
        /// Stage (kernel file) name.
        stage: String,
        /// Entry point.
        entry: String,
        /// WGSL variable name.
        name: String,
    },
    /// A slice of the wrong length was passed in.
    #[error("{what}: expected {expected} values, got {got}")]
    Length {
        /// Which argument.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// Reading a buffer back failed.
    #[error("GPU readback failed: {0}")]
    Readback(String),
    /// An option the GPU path does not implement (never ignored silently).
    #[error("not supported on the GPU path: {0}")]
    Unsupported(String),
}
