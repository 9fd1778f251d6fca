//! The errors of the GPU path (device layer: knows no stage).

/// Errors of the GPU path. None of them is a panic: a machine without a
/// usable GPU gets [`GpuError::NoAdapter`] and can keep using the CPU path.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GpuError {
    /// No adapter matched (or none exists).
    #[error(
        "no GPU adapter: {0}. On Linux without a GPU, install Mesa's software Vulkan driver \
         (Debian/Ubuntu: `apt-get install mesa-vulkan-drivers`, which provides lavapipe); \
         `cenic info --adapters` lists the adapters; device 'gpu:N' or 'gpu:NAME', CUDA_VISIBLE_DEVICES, LOCAL_RANK, \
         WGPU_BACKEND, WGPU_ADAPTER_NAME and WGPU_POWER_PREF select among them"
    )]
    NoAdapter(String),
    /// A device request or a selection variable that cannot be followed
    /// (malformed, or an index beyond the visible GPUs); see
    /// [`super::adapters`].
    #[error("GPU adapter selection: {0}")]
    Selection(String),
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
