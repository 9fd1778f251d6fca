//! Shader composition and reflection (device layer: knows no stage).
//!
//! A [`KernelFile`] is a WGSL file of `kernels/` together with the files
//! composed in front of it (its `deps`, each composed once, depth first)
//! and an optional generated part composed after it. A [`Module`] is what
//! the device compiles: a kernel file, plus the files and generated
//! constants of a variant (the solver stages' dense state and thread
//! count). Each stage wrapper declares its own files; the composer only
//! walks them. The composed text is validated by naga ([`reflect_module`]),
//! which also tells which buffers each entry point uses, so that
//! [`super::kernel::Kernel`] binds exactly those, by name.

use super::error::GpuError;

/// The text of `kernels/common.wgsl`: math helpers (twin of `src/math`).
pub const COMMON_WGSL: &str = include_str!("../../kernels/common.wgsl");

/// `kernels/common.wgsl`, composed first into every module.
pub static COMMON: KernelFile = KernelFile::new("common", COMMON_WGSL, &[]);

/// A file of `kernels/`: its text, the files composed in front of it and
/// the WGSL generated after it from the Rust tables (constants, dispatch
/// tables, entry points of fused launches).
pub struct KernelFile {
    /// File stem (`kernels/<name>.wgsl`).
    pub name: &'static str,
    /// The file's text (`include_str!`).
    pub source: &'static str,
    /// Files composed in front, in order (each once per module).
    pub deps: &'static [&'static KernelFile],
    /// WGSL generated after the file's text.
    pub generated: Option<fn() -> String>,
}

impl KernelFile {
    /// A file with no generated part.
    pub const fn new(name: &'static str, source: &'static str, deps: &'static [&'static KernelFile]) -> Self {
        Self { name, source, deps, generated: None }
    }

    /// The same file with `generated` composed after its text.
    pub const fn with_generated(self, generated: fn() -> String) -> Self {
        Self { generated: Some(generated), ..self }
    }

    /// This file and every file composed in front of it, in composition order.
    pub fn closure(&'static self) -> Vec<&'static KernelFile> {
        let mut out = vec![];
        push_closure(self, &mut out);
        out
    }
}

fn push_closure(f: &'static KernelFile, out: &mut Vec<&'static KernelFile>) {
    if out.iter().any(|g| g.name == f.name) {
        return;
    }
    for d in f.deps {
        push_closure(d, out);
    }
    out.push(f);
}

impl std::fmt::Debug for KernelFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelFile({})", self.name)
    }
}

impl PartialEq for KernelFile {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for KernelFile {}

/// What the device compiles: a kernel file composed after its deps, then
/// the files of a variant and its generated constants. Its name (the file
/// stem, `stem#variant` for a variant) keys the context's cache and labels
/// errors; it is built from typed values and never parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    name: String,
    file: &'static KernelFile,
    extra: Vec<&'static KernelFile>,
    constants: String,
}

impl Module {
    /// `file` as it is.
    pub fn new(file: &'static KernelFile) -> Self {
        Self { name: file.name.into(), file, extra: vec![], constants: String::new() }
    }

    /// `file` in a variant named `variant` (the name becomes `stem#variant`;
    /// empty: the stem): `extra` files composed after it, then `constants`.
    pub fn variant(file: &'static KernelFile, variant: &str, extra: &[&'static KernelFile], constants: String) -> Self {
        let name = if variant.is_empty() { file.name.to_string() } else { format!("{}#{variant}", file.name) };
        Self { name, file, extra: extra.to_vec(), constants }
    }

    /// The cache key and label (`stem` or `stem#variant`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel file.
    pub fn file(&self) -> &'static KernelFile {
        self.file
    }

    /// Every file composed, in order (each once).
    pub fn files(&self) -> Vec<&'static KernelFile> {
        let mut out = vec![];
        push_closure(self.file, &mut out);
        for e in &self.extra {
            push_closure(e, &mut out);
        }
        out
    }

    /// The module's WGSL exactly as the device compiles it, with the origin of each line.
    pub fn compose(&self) -> Composed {
        let mut m = Composed::new();
        for f in self.files() {
            if !f.source.is_empty() {
                m.push(&format!("kernels/{}.wgsl", f.name), f.source);
            }
            if let Some(g) = f.generated {
                m.push(&format!("<generated: {}>", f.name), &g());
            }
        }
        if !self.constants.is_empty() {
            m.push(&format!("<generated: {}>", self.name), &self.constants);
        }
        m
    }
}

impl From<&'static KernelFile> for Module {
    fn from(file: &'static KernelFile) -> Self {
        Module::new(file)
    }
}

impl From<&Module> for Module {
    fn from(m: &Module) -> Self {
        m.clone()
    }
}

/// `source` (labelled `label`) composed after `deps` and what they depend on.
pub fn compose_text(deps: &[&'static KernelFile], label: &str, source: &str) -> Composed {
    let mut files = vec![];
    for d in deps {
        push_closure(d, &mut files);
    }
    let mut m = Composed::new();
    for f in files {
        if !f.source.is_empty() {
            m.push(&format!("kernels/{}.wgsl", f.name), f.source);
        }
        if let Some(g) = f.generated {
            m.push(&format!("<generated: {}>", f.name), &g());
        }
    }
    m.push(label, source);
    m
}

/// A composed module and where each of its lines came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Composed {
    /// The WGSL module as the runtime compiles it.
    pub text: String,
    /// (file, first line of the file's text in `text` (1-based), lines).
    segments: Vec<(String, usize, usize)>,
}

impl Composed {
    /// An empty module.
    pub fn new() -> Self {
        Self { text: String::new(), segments: vec![] }
    }

    /// Appends `source` under a `// ---- <file>` header.
    pub fn push(&mut self, file: &str, source: &str) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_and_line_they_are_in() {
        let mut m = Composed::new();
        m.push("kernels/common.wgsl", COMMON.source);
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
}
