//! The wgpu device: adapter selection (honouring wgpu's environment
//! variables), the limits the kernels need, error capture, and the cache of
//! compiled modules and pipelines shared by everything built on it. Device
//! layer: knows no stage (a module comes composed from its caller).

use super::adapters::{AdapterDesc, AdapterRequest, Choice, Selection, adapter_order, choose_adapter};
use super::compose::{Module, StageInfo, reflect_module};
use super::error::GpuError;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Storage buffers one kernel may bind. The fused launches of a CENIC
/// trial (`kernels/cenic.wgsl`) read the model, the per-world fields, the
/// contacts, the ICF problem and the clocks in one kernel: up to 31, what
/// Metal offers per stage; Mesa's lavapipe offers 32, NVIDIA's, AMD's and
/// Intel's desktop Vulkan drivers and D3D12 far more (wgpu's own default is 8).
pub const REQUIRED_STORAGE_BUFFERS_PER_STAGE: u32 = 31;

/// Buffers (storage and uniform) one kernel may bind: the storage ones plus
/// the uniforms of the model sizes, the field layout, the ICF and the CENIC
/// settings.
pub const REQUIRED_BUFFERS_PER_STAGE: u32 = 36;

/// A GPU device and queue with the kernels' limits, plus a cache of
/// compiled modules and pipelines (created once, reused by every kernel
/// created on this context). `Send + Sync`: share it with `Arc`.
pub struct GpuContext {
    adapter: wgpu::Adapter,
    info: wgpu::AdapterInfo,
    /// The device (public for later phases that create their own resources).
    pub device: wgpu::Device,
    /// The submission queue.
    pub queue: wgpu::Queue,
    limits: wgpu::Limits,
    /// First error wgpu reported outside an error scope (instead of panicking).
    uncaptured: Arc<Mutex<Option<String>>>,
    modules: Mutex<HashMap<String, Arc<CompiledModule>>>,
    pipelines: Mutex<HashMap<(String, String), Arc<wgpu::ComputePipeline>>>,
    counters: Arc<Counters>,
}

/// What the host asked of the device since the context was created
/// ([`GpuContext::counters`]): the instrumentation behind the wait and
/// dispatch budgets of a step (`tests/gpu_batch.rs`, `tools/gpu_throughput.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuCounters {
    /// Blocking waits for the device (each readback chunk, [`GpuContext::wait`]).
    pub waits: u64,
    /// Command buffers submitted.
    pub submissions: u64,
    /// Compute dispatches encoded (direct and indirect; launches with no
    /// workgroups are skipped and not counted).
    pub dispatches: u64,
    /// Bytes copied back to the host.
    pub bytes_read: u64,
}

impl std::ops::Sub for GpuCounters {
    type Output = GpuCounters;
    fn sub(self, o: GpuCounters) -> GpuCounters {
        GpuCounters {
            waits: self.waits - o.waits,
            submissions: self.submissions - o.submissions,
            dispatches: self.dispatches - o.dispatches,
            bytes_read: self.bytes_read - o.bytes_read,
        }
    }
}

/// The shared cells behind [`GpuCounters`] (kernels keep a handle to count their launches).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    waits: AtomicU64,
    submissions: AtomicU64,
    dispatches: AtomicU64,
    bytes_read: AtomicU64,
}

impl Counters {
    pub(crate) fn dispatch(&self) {
        self.dispatches.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn submit(&self) {
        self.submissions.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn wait(&self, bytes: u64) {
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// A composed, validated and compiled module.
pub(crate) struct CompiledModule {
    pub(crate) module: wgpu::ShaderModule,
    pub(crate) info: StageInfo,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext").field("adapter", &self.describe()).finish_non_exhaustive()
    }
}

impl GpuContext {
    /// Opens the GPU chosen by the environment ([`GpuOptions::from_env`],
    /// the rule of [`super::adapters`]): `WGPU_BACKEND` (e.g. `vulkan`,
    /// `metal`, `dx12`) restricts the backends, `WGPU_ADAPTER_NAME` picks
    /// the first adapter whose name contains it (case-insensitive),
    /// `LOCAL_RANK` (torchrun) and `CUDA_VISIBLE_DEVICES` pick this
    /// process's GPU, otherwise `WGPU_POWER_PREF` (`high`, `low`, `none`;
    /// default high) guides wgpu's choice. Returns [`GpuError::NoAdapter`]
    /// when nothing matches, [`GpuError::Selection`] for a malformed
    /// setting and [`GpuError::Limits`] when the adapter is too small.
    pub fn new() -> Result<Self, GpuError> {
        Self::with_options(GpuOptions::from_env())
    }

    /// Opens the adapter `device` names: `gpu` (as [`Self::new`]), `gpu:N`
    /// (visible GPU N) or `gpu:NAME` (the first adapter whose name contains
    /// NAME); see [`super::adapters`].
    pub fn for_device(device: &str) -> Result<Self, GpuError> {
        Self::with_options(GpuOptions::for_device(device)?)
    }

    /// Opens the GPU chosen by `options`.
    pub fn with_options(options: GpuOptions) -> Result<Self, GpuError> {
        pollster::block_on(Self::new_async(options))
    }

    async fn new_async(options: GpuOptions) -> Result<Self, GpuError> {
        let (instance, backends) = make_instance(&options)?;
        let adapter = select_adapter(&instance, &options, backends).await?;
        let info = adapter.get_info();
        let available = adapter.limits();
        for (limit, have, need) in [
            (
                "max_storage_buffers_per_shader_stage",
                available.max_storage_buffers_per_shader_stage,
                REQUIRED_STORAGE_BUFFERS_PER_STAGE,
            ),
            (
                "max_buffers_and_acceleration_structures_per_shader_stage",
                available.max_buffers_and_acceleration_structures_per_shader_stage,
                REQUIRED_BUFFERS_PER_STAGE,
            ),
        ] {
            if have < need {
                return Err(GpuError::Limits {
                    adapter: info.name.clone(),
                    limit,
                    required: need as u64,
                    available: have as u64,
                });
            }
        }
        // wgpu's most portable limits, raised where batched worlds need more:
        // storage bindings per kernel and buffer sizes (all the adapter
        // offers, as per-world arrays grow with the number of worlds).
        let required = wgpu::Limits {
            max_storage_buffers_per_shader_stage: available.max_storage_buffers_per_shader_stage,
            max_uniform_buffers_per_shader_stage: available.max_uniform_buffers_per_shader_stage,
            max_buffers_and_acceleration_structures_per_shader_stage: available
                .max_buffers_and_acceleration_structures_per_shader_stage,
            max_storage_buffer_binding_size: available.max_storage_buffer_binding_size,
            max_buffer_size: available.max_buffer_size,
            max_compute_workgroups_per_dimension: available.max_compute_workgroups_per_dimension,
            ..wgpu::Limits::downlevel_defaults()
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("cenic"),
                // Timestamps between dispatches, for profiling, where the adapter has them.
                required_features: adapter.features() & Self::PROFILING_FEATURES,
                required_limits: required,
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::Device(format!("adapter '{}' refused the device request: {e}", info.name)))?;
        let limits = device.limits();
        let uncaptured = Arc::new(Mutex::new(None::<String>));
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let mut slot = sink.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some(e.to_string());
            }
        }));
        Ok(Self {
            adapter,
            info,
            device,
            queue,
            limits,
            uncaptured,
            modules: Mutex::new(HashMap::new()),
            pipelines: Mutex::new(HashMap::new()),
            counters: Arc::default(),
        })
    }

    /// Waits, submissions, dispatches and bytes read back since creation
    /// (subtract two snapshots to count what one call did).
    pub fn counters(&self) -> GpuCounters {
        let c = &self.counters;
        GpuCounters {
            waits: c.waits.load(Ordering::Relaxed),
            submissions: c.submissions.load(Ordering::Relaxed),
            dispatches: c.dispatches.load(Ordering::Relaxed),
            bytes_read: c.bytes_read.load(Ordering::Relaxed),
        }
    }

    /// The cells behind [`Self::counters`].
    pub(crate) fn counter_cells(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// Submits `buffers`, counting the submission.
    pub fn submit(&self, buffers: impl IntoIterator<Item = wgpu::CommandBuffer>) {
        self.counters.submit();
        self.queue.submit(buffers);
    }

    /// Features for timestamps between the dispatches of a compute pass.
    pub const PROFILING_FEATURES: wgpu::Features =
        wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);

    /// Whether timestamps can be written between dispatches (GPU time per launch).
    pub fn supports_timestamps(&self) -> bool {
        self.device.features().contains(Self::PROFILING_FEATURES)
    }

    /// Adapter name as the driver reports it (e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"), for benchmark reports.
    pub fn adapter_name(&self) -> &str {
        &self.info.name
    }

    /// Full adapter information (backend, device type, driver).
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// One line: name, backend, device type and driver.
    pub fn describe(&self) -> String {
        let i = &self.info;
        format!("{} ({:?}, {:?}, driver {} {})", i.name, i.backend, i.device_type, i.driver, i.driver_info)
    }

    /// The device's limits (what was granted).
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// The adapter.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// Blocks until all submitted work has finished.
    pub fn wait(&self) -> Result<(), GpuError> {
        self.counters.wait(0);
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Device(format!("waiting for the GPU: {e}")))?;
        self.check_errors()
    }

    /// Returns the first error wgpu reported outside an error scope (a
    /// lost device, an invalid command), if any.
    pub fn check_errors(&self) -> Result<(), GpuError> {
        match self.uncaptured.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            Some(e) => Err(GpuError::Device(e.clone())),
            None => Ok(()),
        }
    }

    /// True for adapters that run shaders on the CPU (lavapipe): their
    /// invocations have a loop budget, so long loops are resumed across
    /// dispatches, and launch sizes are tuned for a few SIMD lanes.
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// The compiled `module` (composed, validated by naga, compiled by the
    /// driver once per name and cached).
    pub(crate) fn module(&self, module: &Module) -> Result<Arc<CompiledModule>, GpuError> {
        let name = module.name();
        let mut cache = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = cache.get(name) {
            return Ok(s.clone());
        }
        let composed = module.compose();
        let info = reflect_module(name, &composed)?;
        let source = composed.text;
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let shader = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(name),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Shader { stage: name.into(), message: e.to_string() });
        }
        let compiled = Arc::new(CompiledModule { module: shader, info });
        cache.insert(name.to_string(), compiled.clone());
        Ok(compiled)
    }

    /// The compute pipeline of `module::entry` (its bind group layout derived
    /// from the variables the entry point uses), created once and cached.
    pub(crate) fn pipeline(&self, module: &Module, entry: &str) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
        let stage = module.name();
        let key = (stage.to_string(), entry.to_string());
        if let Some(p) = self.pipelines.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(p.clone());
        }
        let compiled = self.module(module)?;
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&format!("{stage}::{entry}")),
            layout: None,
            module: &compiled.module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Shader { stage: stage.into(), message: format!("entry '{entry}': {e}") });
        }
        let pipeline = Arc::new(pipeline);
        self.pipelines.lock().unwrap_or_else(|p| p.into_inner()).insert(key, pipeline.clone());
        Ok(pipeline)
    }
}

/// How to choose the adapter (the rule: [`super::adapters`]).
#[derive(Clone, Debug, PartialEq)]
pub struct GpuOptions {
    /// Backends to consider (wgpu's `WGPU_BACKEND`; default: all built in).
    pub backends: wgpu::Backends,
    /// The request (`gpu`, `gpu:N`, `gpu:NAME`) and the variables the rule
    /// reads (`WGPU_ADAPTER_NAME`, `CUDA_VISIBLE_DEVICES`, `LOCAL_RANK`).
    pub selection: Selection,
    /// When nothing else chooses, prefer by power (`WGPU_POWER_PREF`; default high performance).
    pub power_preference: wgpu::PowerPreference,
}

impl GpuOptions {
    /// Options from the environment: wgpu's `WGPU_BACKEND`,
    /// `WGPU_ADAPTER_NAME` and `WGPU_POWER_PREF`, and `CUDA_VISIBLE_DEVICES`
    /// and `LOCAL_RANK` (request `gpu`).
    pub fn from_env() -> Self {
        Self {
            backends: wgpu::Backends::from_env().unwrap_or(wgpu::Backends::all()),
            selection: Selection::from_env(AdapterRequest::Auto),
            power_preference: wgpu::PowerPreference::from_env().unwrap_or(wgpu::PowerPreference::HighPerformance),
        }
    }

    /// [`Self::from_env`] with the request `device` (`gpu`, `gpu:N`, `gpu:NAME`).
    pub fn for_device(device: &str) -> Result<Self, GpuError> {
        let mut o = Self::from_env();
        o.selection.request = AdapterRequest::parse(device)?;
        Ok(o)
    }
}

/// Enumerates the adapters of `backends` and puts them in list order
/// ([`adapter_order`]).
async fn enumerate(instance: &wgpu::Instance, backends: wgpu::Backends) -> Vec<(AdapterDesc, wgpu::Adapter)> {
    let adapters = instance.enumerate_adapters(backends).await;
    let descs: Vec<AdapterDesc> = adapters.iter().map(|a| AdapterDesc::from_info(&a.get_info())).collect();
    let order = adapter_order(&descs);
    let mut slots: Vec<Option<(AdapterDesc, wgpu::Adapter)>> = descs.into_iter().zip(adapters).map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// An instance over the requested backends that this build has.
fn make_instance(options: &GpuOptions) -> Result<(wgpu::Instance, wgpu::Backends), GpuError> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    let backends = options.backends & wgpu::Instance::enabled_backend_features();
    if backends.is_empty() {
        return Err(GpuError::NoAdapter(format!(
            "none of the requested backends {:?} is built into cenic for this platform (built: {:?})",
            options.backends,
            wgpu::Instance::enabled_backend_features()
        )));
    }
    desc.backends = backends;
    Ok((wgpu::Instance::new(desc), backends))
}

/// Picks the adapter by [`choose_adapter`]; when nothing chooses, the one
/// wgpu prefers under the power preference. Unlike
/// `wgpu::util::initialize_adapter_from_env`, a name that matches nothing
/// is an error listing the adapters, not a panic.
async fn select_adapter(
    instance: &wgpu::Instance,
    options: &GpuOptions,
    backends: wgpu::Backends,
) -> Result<wgpu::Adapter, GpuError> {
    let mut listed = enumerate(instance, backends).await;
    let descs: Vec<AdapterDesc> = listed.iter().map(|(d, _)| d.clone()).collect();
    match choose_adapter(&descs, &options.selection)? {
        Choice::Listed(i) => Ok(listed.swap_remove(i).1),
        Choice::Preferred => instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: options.power_preference,
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::NoAdapter(format!("wgpu found no adapter for backends {backends:?} ({e})"))),
    }
}

/// This machine's adapter list ([`super::adapters`]) under `options`'
/// backends, and the position in it that `options` selects (or why none).
pub fn list_adapters(options: &GpuOptions) -> Result<(Vec<AdapterDesc>, Result<usize, GpuError>), GpuError> {
    pollster::block_on(async {
        let (instance, backends) = make_instance(options)?;
        let listed = enumerate(&instance, backends).await;
        let descs: Vec<AdapterDesc> = listed.iter().map(|(d, _)| d.clone()).collect();
        let chosen = match choose_adapter(&descs, &options.selection) {
            Ok(Choice::Listed(i)) => Ok(i),
            Ok(Choice::Preferred) => select_adapter(&instance, options, backends).await.and_then(|a| {
                let d = AdapterDesc::from_info(&a.get_info());
                descs.iter().position(|x| *x == d).ok_or_else(|| {
                    GpuError::NoAdapter(format!("wgpu preferred '{}', which its own list does not hold", d.name))
                })
            }),
            Err(e) => Err(e),
        };
        Ok((descs, chosen))
    })
}

/// Records one compute pass with `f` and submits it (without waiting).
pub fn run_pass(ctx: &GpuContext, label: &str, f: impl FnOnce(&mut wgpu::ComputePass<'_>)) -> Result<(), GpuError> {
    let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    {
        let mut pass =
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None });
        f(&mut pass);
    }
    ctx.submit([encoder.finish()]);
    ctx.check_errors()
}
