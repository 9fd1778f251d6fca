//! Kernel sources, their composition, naga reflection, and [`Kernel`]: one
//! entry point with its pipeline, its bind group (created once) and its
//! launch size.
//!
//! Each stage file under `kernels/` is composed at load time as
//! `common.wgsl + data.wgsl + <stage>.wgsl` ([`compose`]). The composed
//! module is validated by naga ([`reflect`]), which also tells which
//! `data.wgsl` variables each entry point uses; [`Kernel::new`] binds
//! exactly those, by name, from the registered [`BufferSource`]s. A later
//! phase adds a kernel by adding its file to [`STAGES`], its buffers to
//! `data.wgsl` and to a `BufferSource`, and a thin wrapper that creates its
//! [`Kernel`]s and encodes them in order.

use super::buffers::BufferSource;
use super::context::{Counters, GpuContext};
use super::{GpuError, WORKGROUP_SIZE};
use std::sync::Arc;

/// Math helpers (twin of `src/math`), composed first.
pub const COMMON: &str = include_str!("../../kernels/common.wgsl");
/// The binding table (twin of `Data`), composed second.
pub const DATA: &str = include_str!("../../kernels/data.wgsl");

/// Stage files: (name, source). The name is the file stem and the Rust wrapper's module name.
pub const STAGES: &[(&str, &str)] = &[
    ("kinematics", include_str!("../../kernels/kinematics.wgsl")),
    ("rnea", include_str!("../../kernels/rnea.wgsl")),
    ("integrate", include_str!("../../kernels/integrate.wgsl")),
    ("collision", include_str!("../../kernels/collision.wgsl")),
    ("icf_builder", include_str!("../../kernels/icf_builder.wgsl")),
    ("icf_solve_coop", include_str!("../../kernels/icf_solve_coop.wgsl")),
    ("icf_solve_serial", include_str!("../../kernels/icf_solve_serial.wgsl")),
    ("cenic", include_str!("../../kernels/cenic.wgsl")),
    ("rl", include_str!("../../kernels/rl.wgsl")),
    ("sensors", include_str!("../../kernels/sensors.wgsl")),
];

/// Library files: WGSL functions shared by several stages, composed only
/// in front of the stages that list them in [`STAGE_DEPS`] (no entry points
/// of their own): (name, source), the name being the file stem.
pub const LIBRARIES: &[(&str, &str)] = &[
    ("wg_serial", include_str!("../../kernels/wg_serial.wgsl")),
    ("icf_cost", include_str!("../../kernels/icf_cost.wgsl")),
    ("icf_solver", include_str!("../../kernels/icf_solver.wgsl")),
    ("collision_shapes", include_str!("../../kernels/collision_shapes.wgsl")),
    ("collision_analytic", include_str!("../../kernels/collision_analytic.wgsl")),
    ("collision_gjk", include_str!("../../kernels/collision_gjk.wgsl")),
    ("collision_epa", include_str!("../../kernels/collision_epa.wgsl")),
    ("collision_manifold", include_str!("../../kernels/collision_manifold.wgsl")),
    ("collision_hfield", include_str!("../../kernels/collision_hfield.wgsl")),
];

/// Files composed in front of a stage, after `common.wgsl`, `data.wgsl`
/// and the generated declarations ([`generated_prelude`]): (stage,
/// [libraries or stages, in order]). A stage listed here lends its functions
/// (its entry points come along, unused).
pub const STAGE_DEPS: &[(&str, &[&str])] = &[
    ("icf_solve_coop", &["icf_cost", "icf_solver"]),
    ("icf_solve_serial", &["wg_serial", "icf_cost", "icf_solver"]),
    ("rl", &["wg_serial", "icf_cost"]),
    ("sensors", &["wg_serial", "icf_cost"]),
    ("cenic", &["kinematics", "rnea", "integrate", "icf_builder"]),
    (
        "collision",
        &[
            "collision_shapes",
            "collision_analytic",
            "collision_gjk",
            "collision_epa",
            "collision_manifold",
            "collision_hfield",
        ],
    ),
];

/// The generated WGSL composed after `data.wgsl` into every stage: the
/// per-world field declarations ([`super::Field::wgsl_declarations`]), the
/// trial stages ([`super::cenic::stage_constants`]) and the geom and pair
/// kinds ([`super::collision::kind_constants`]).
pub fn generated_prelude() -> String {
    format!(
        "{}\n{}\n{}",
        super::Field::wgsl_declarations(),
        super::cenic::stage_constants(),
        super::collision::kind_constants()
    )
}

/// Generated WGSL appended to stage `name` (the CENIC launches of parts,
/// the narrow-phase dispatch, the solver state's accessors).
fn generated_suffix(name: &str, variant: &str) -> Option<String> {
    match name {
        "cenic" => Some(super::cenic::step_entry_points()),
        "collision" => Some(super::collision::narrow_phase_dispatch()),
        "icf_solve_serial" => Some(super::icf::SolverState::from_key(variant)?.wgsl()),
        // `state@threads` (threads per world; the cooperative default without).
        "icf_solve_coop" => {
            let (state, threads) = match variant.split_once('@') {
                Some((state, t)) => (state, t.parse::<u32>().ok().filter(|t| t.is_power_of_two())?),
                None => (variant, super::icf::SOLVER_THREADS),
            };
            let state = super::icf::SolverState::from_key(state)?.wgsl();
            Some(format!("const SOLVER_THREADS: u32 = {threads}u;\n{state}"))
        }
        // rl.wgsl uses icf_cost.wgsl's per-row terms only; its dense helpers read storage.
        "rl" if variant.is_empty() => Some(super::icf::SolverState::Storage.wgsl()),
        // sensors.wgsl uses icf_cost.wgsl's contact_terms, and its own kind constants.
        "sensors" if variant.is_empty() => {
            Some(format!("{}\n{}", super::sensors::wgsl_constants(), super::icf::SolverState::Storage.wgsl()))
        }
        _ => None,
    }
}

/// A composed module and where each of its lines came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Composed {
    /// The WGSL module as the runtime compiles it.
    pub text: String,
    /// (file, first line of the file's text in `text` (1-based), lines).
    segments: Vec<(String, usize, usize)>,
}

impl Composed {
    fn new() -> Self {
        Self { text: String::new(), segments: vec![] }
    }

    /// Appends `source` under a `// ---- <file>` header.
    fn push(&mut self, file: &str, source: &str) {
        self.text += &format!("// ---- {file}\n");
        let first = self.text.lines().count() + 1;
        self.text += source;
        if !source.ends_with('\n') {
            self.text.push('\n');
        }
        self.segments.push((file.to_string(), first, source.lines().count()));
    }

    /// The file and line (1-based) of line `line` of [`Self::text`].
    pub fn locate(&self, line: usize) -> Option<(&str, usize)> {
        self.segments
            .iter()
            .find(|(_, first, n)| line >= *first && line < first + n)
            .map(|(file, first, _)| (file.as_str(), line - first + 1))
    }
}

/// The source of kernel file `name` (a stage or a library).
fn source_of(name: &str) -> Option<&'static str> {
    STAGES.iter().chain(LIBRARIES).find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// The full WGSL module of stage `full_name` (`stage` or `stage#variant`)
/// exactly as the runtime compiles it, with the origin of each line, or
/// `None` for an unknown stage or variant.
pub fn compose_module(full_name: &str) -> Option<Composed> {
    // `stage#variant`: a variant of the stage's generated part (a solver state).
    let (name, variant) = full_name.split_once('#').unwrap_or((full_name, ""));
    let src = STAGES.iter().find(|(n, _)| *n == name)?.1;
    let deps = STAGE_DEPS.iter().find(|(n, _)| *n == name).map_or(&[][..], |(_, d)| *d);
    let mut m = Composed::new();
    m.push("kernels/common.wgsl", COMMON);
    m.push("kernels/data.wgsl", DATA);
    m.push("<generated: fields and stages>", &generated_prelude());
    for d in deps {
        m.push(&format!("kernels/{d}.wgsl"), source_of(d)?);
    }
    m.push(&format!("kernels/{name}.wgsl"), src);
    match generated_suffix(name, variant) {
        Some(g) => m.push(&format!("<generated: {full_name}>"), &g),
        None if !variant.is_empty() => return None,
        None => {}
    }
    Some(m)
}

/// The full WGSL module of stage `name` exactly as the runtime compiles it,
/// or `None` for an unknown stage.
pub fn compose(name: &str) -> Option<String> {
    compose_module(name).map(|m| m.text)
}

/// `common.wgsl + data.wgsl +` the generated declarations `+ stage`.
pub fn compose_source(stage_source: &str) -> String {
    let mut m = Composed::new();
    m.push("kernels/common.wgsl", COMMON);
    m.push("kernels/data.wgsl", DATA);
    m.push("<generated: fields and stages>", &generated_prelude());
    m.push("stage", stage_source);
    m.text
}

/// How a WGSL variable is bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingKind {
    /// `var<uniform>`.
    Uniform,
    /// `var<storage, read>`.
    StorageRead,
    /// `var<storage, read_write>`.
    StorageReadWrite,
}

/// One resource variable used by an entry point.
#[derive(Clone, Debug, PartialEq)]
pub struct BindingInfo {
    /// WGSL variable name (= the buffer's registered name).
    pub name: String,
    /// `@group`.
    pub group: u32,
    /// `@binding`.
    pub binding: u32,
    /// Address space and access.
    pub kind: BindingKind,
}

/// A compute entry point and the resources it uses.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryInfo {
    /// Entry point name (= the CPU function it mirrors).
    pub name: String,
    /// `@workgroup_size`.
    pub workgroup_size: [u32; 3],
    /// Variables the entry point (or a function it calls) uses.
    pub bindings: Vec<BindingInfo>,
}

impl EntryInfo {
    /// Number of storage buffers bound (counts against `max_storage_buffers_per_shader_stage`).
    pub fn storage_buffers(&self) -> u32 {
        self.bindings.iter().filter(|b| b.kind != BindingKind::Uniform).count() as u32
    }
}

/// A validated kernel file: its compute entry points.
#[derive(Clone, Debug, PartialEq)]
pub struct StageInfo {
    /// Stage name.
    pub name: String,
    /// Compute entry points, in file order.
    pub entries: Vec<EntryInfo>,
}

/// Parses and validates the composed `source` of stage `stage` with naga
/// (all validation flags) and lists each entry point's bindings.
pub fn reflect(stage: &str, source: &str) -> Result<StageInfo, GpuError> {
    reflect_located(stage, source, None)
}

/// [`reflect`] of a composed module: errors name the file and line (of
/// the library or stage file itself) before naga's report.
pub fn reflect_module(stage: &str, module: &Composed) -> Result<StageInfo, GpuError> {
    reflect_located(stage, &module.text, Some(module))
}

fn reflect_located(stage: &str, source: &str, origin: Option<&Composed>) -> Result<StageInfo, GpuError> {
    let label = format!("{stage}.wgsl (composed)");
    let err = |loc: Option<naga::SourceLocation>, report: String| {
        let at = loc.and_then(|l| {
            origin?.locate(l.line_number as usize).map(|(f, line)| (f.to_string(), line, l.line_position))
        });
        let message = match at {
            Some((file, line, col)) => format!("at {file}:{line}:{col}:\n{report}"),
            None => report,
        };
        GpuError::Shader { stage: stage.into(), message }
    };
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|e| err(e.location(source), e.emit_to_string_with_path(source, &label)))?;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default())
        .validate(&module)
        .map_err(|e| err(e.location(source), e.emit_to_string_with_path(source, &label)))?;
    let mut entries = Vec::new();
    for (i, ep) in module.entry_points.iter().enumerate() {
        if ep.stage != naga::ShaderStage::Compute {
            continue;
        }
        let uses = info.get_entry_point(i);
        let mut bindings = Vec::new();
        for (handle, var) in module.global_variables.iter() {
            let Some(rb) = &var.binding else { continue };
            if uses[handle].is_empty() {
                continue;
            }
            let kind = match var.space {
                naga::AddressSpace::Uniform => BindingKind::Uniform,
                naga::AddressSpace::Storage { access } if access.contains(naga::StorageAccess::STORE) => {
                    BindingKind::StorageReadWrite
                }
                naga::AddressSpace::Storage { .. } => BindingKind::StorageRead,
                other => {
                    return Err(GpuError::Shader {
                        stage: stage.into(),
                        message: format!("entry '{}': unsupported resource space {other:?}", ep.name),
                    });
                }
            };
            let name = var.name.clone().unwrap_or_default();
            bindings.push(BindingInfo { name, group: rb.group, binding: rb.binding, kind });
        }
        bindings.sort_by_key(|b| (b.group, b.binding));
        entries.push(EntryInfo { name: ep.name.clone(), workgroup_size: ep.workgroup_size, bindings });
    }
    Ok(StageInfo { name: stage.into(), entries })
}

/// Workgroups (x, y) for a 1D launch of `threads` threads, split over y when
/// x would exceed `max_per_dim` (the kernels' `thread_index` undoes this).
pub fn dispatch_size(threads: u32, max_per_dim: u32) -> (u32, u32) {
    let groups = threads.div_ceil(WORKGROUP_SIZE);
    if groups <= max_per_dim { (groups, 1) } else { (max_per_dim, groups.div_ceil(max_per_dim)) }
}

/// One compute entry point ready to encode: pipeline (cached on the
/// context), bind group (created once, over this instance's buffers) and
/// the number of threads of one launch.
pub struct Kernel {
    stage: &'static str,
    entry: &'static str,
    pipeline: Arc<wgpu::ComputePipeline>,
    bind_group: wgpu::BindGroup,
    workgroups: (u32, u32),
    counters: Arc<Counters>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({}::{}, workgroups {:?})", self.stage, self.entry, self.workgroups)
    }
}

impl Kernel {
    /// Creates the kernel `stage::entry` launched over `threads` threads
    /// (e.g. nworld, or nworld × nbody), binding each variable it uses to
    /// the buffer of the same name found first in `sources`.
    pub fn new(
        ctx: &GpuContext,
        stage: &'static str,
        entry: &'static str,
        threads: usize,
        sources: &[&dyn BufferSource],
    ) -> Result<Self, GpuError> {
        let compiled = ctx.stage(stage)?;
        let info = compiled.info.entries.iter().find(|e| e.name == entry).ok_or_else(|| GpuError::Shader {
            stage: stage.into(),
            message: format!("no compute entry point '{entry}'"),
        })?;
        let limits = ctx.limits();
        if info.storage_buffers() > limits.max_storage_buffers_per_shader_stage {
            return Err(GpuError::Limits {
                adapter: ctx.adapter_name().into(),
                limit: "max_storage_buffers_per_shader_stage",
                required: info.storage_buffers() as u64,
                available: limits.max_storage_buffers_per_shader_stage as u64,
            });
        }
        let threads = u32::try_from(threads).map_err(|_| GpuError::Limits {
            adapter: ctx.adapter_name().into(),
            limit: "threads per launch (u32)",
            required: threads as u64,
            available: u32::MAX as u64,
        })?;
        let workgroups = dispatch_size(threads, limits.max_compute_workgroups_per_dimension);
        if workgroups.1 > limits.max_compute_workgroups_per_dimension {
            return Err(GpuError::Limits {
                adapter: ctx.adapter_name().into(),
                limit: "max_compute_workgroups_per_dimension",
                required: workgroups.1 as u64,
                available: limits.max_compute_workgroups_per_dimension as u64,
            });
        }
        let pipeline = ctx.pipeline(stage, entry)?;
        let mut entries = Vec::with_capacity(info.bindings.len());
        for b in &info.bindings {
            let buffer = sources.iter().find_map(|s| s.buffer(&b.name)).ok_or_else(|| GpuError::Binding {
                stage: stage.into(),
                entry: entry.into(),
                name: b.name.clone(),
            })?;
            entries.push(wgpu::BindGroupEntry { binding: b.binding, resource: buffer.as_entire_binding() });
        }
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(entry),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Shader { stage: stage.into(), message: format!("binding '{entry}': {e}") });
        }
        Ok(Self { stage, entry, pipeline, bind_group, workgroups, counters: ctx.counter_cells().clone() })
    }

    /// Records one launch into `pass` (nothing when there are no threads).
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>) {
        if self.workgroups.0 == 0 {
            return;
        }
        self.counters.dispatch();
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(self.workgroups.0, self.workgroups.1, 1);
    }

    /// `stage::entry`.
    pub fn name(&self) -> String {
        format!("{}::{}", self.stage, self.entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_and_line_they_are_in() {
        let mut m = Composed::new();
        m.push("kernels/common.wgsl", COMMON);
        m.push("kernels/lib_a.wgsl", "fn a() -> u32 {\n    return 1u;\n}\n");
        m.push("kernels/lib_b.wgsl", "fn b() -> u32 {\n    return 2u;\n}\n\nfn c() -> u32 {\n    return missing;\n}\n");
        let Err(GpuError::Shader { message, .. }) = reflect_module("test", &m) else { panic!("no error") };
        assert!(message.starts_with("at kernels/lib_b.wgsl:6:"), "{message}");
        // A validation (not parse) error too.
        let mut m = Composed::new();
        m.push("kernels/lib_a.wgsl", "fn a() -> u32 {\n    return 1u;\n}\n");
        m.push("kernels/lib_b.wgsl", "fn b() -> f32 {\n    let x: u32 = 1u;\n    return x;\n}\n");
        let Err(GpuError::Shader { message, .. }) = reflect_module("test", &m) else { panic!("no error") };
        assert!(message.contains("kernels/lib_b.wgsl:"), "{message}");
    }

    #[test]
    fn solver_state_variants_validate() {
        use crate::gpu::icf::{SolverState, SolverVariant};
        for (variant, state) in [
            (SolverVariant::Serial, SolverState::Storage),
            (SolverVariant::Serial, SolverState::Private(6)),
            (SolverVariant::Cooperative, SolverState::Storage),
            (SolverVariant::Cooperative, SolverState::Workgroup(14)),
            (SolverVariant::Wide, SolverState::Storage),
            (SolverVariant::Wide, SolverState::Workgroup(14)),
        ] {
            let name = variant.stage(state).unwrap();
            let m = compose_module(name).unwrap();
            reflect_module(name, &m).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert!(compose_module("icf_solve_serial#nonsense").is_none());
        assert!(compose_module("icf_solve_coop#storage@48").is_none(), "threads per world: a power of two");
    }

    #[test]
    fn every_stage_composes_and_locates_its_lines() {
        for (name, src) in STAGES {
            let m = compose_module(name).unwrap();
            let last = m.text.lines().count();
            let (file, line) = m.locate(last).unwrap();
            let (file, line) = if file.starts_with("<generated") {
                (file.to_string(), line)
            } else {
                assert_eq!(file, format!("kernels/{name}.wgsl"));
                assert_eq!(line, src.lines().count());
                (file.to_string(), line)
            };
            assert!(line > 0, "{name}: {file}");
        }
    }

    #[test]
    fn dispatch_size_splits_large_launches() {
        assert_eq!(dispatch_size(0, 65535), (0, 1));
        assert_eq!(dispatch_size(1, 65535), (1, 1));
        assert_eq!(dispatch_size(64, 65535), (1, 1));
        assert_eq!(dispatch_size(65, 65535), (2, 1));
        let (x, y) = dispatch_size(10_000_000, 65535);
        assert!(x <= 65535 && (x as u64) * (y as u64) * 64 >= 10_000_000);
    }
}
