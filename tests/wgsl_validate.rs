//! Every kernel file, composed exactly as the runtime composes it, parses
//! and validates with naga; its entry points use the common workgroup size;
//! every variable they bind is provided by a host buffer; and the host's
//! packed structs and per-world arrays have the WGSL layouts. No GPU needed.

use cenic::gpu::context::REQUIRED_STORAGE_BUFFERS_PER_STAGE;
use cenic::gpu::model::struct_layouts;
use cenic::gpu::shaders::{self, STAGES};
use cenic::gpu::{Field, GpuCollision, GpuData, GpuModel, WORKGROUP_SIZE};
use naga::{Module, TypeInner};
use std::collections::HashMap;

/// Entry points launched with one workgroup per world (`SOLVER_THREADS`, generated into `icf_solve_coop`).
const COOPERATIVE: [&str; 3] = ["icf_evaluate", "icf_solve", "icf_solve_listed"];
const SOLVER_THREADS: u32 = cenic::gpu::icf::SOLVER_THREADS;

fn validate(label: &str, source: &str) -> Module {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{label} does not parse:\n{}", e.emit_to_string_with_path(source, label)));
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{label} does not validate:\n{}", e.emit_to_string_with_path(source, label)));
    module
}

#[test]
fn every_kernel_file_is_a_stage() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let modules = shaders::modules();
    let mut on_disk = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "wgsl") {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            if let Some(raster) = shaders::RASTER.iter().find(|f| f.name == stem) {
                assert_eq!(text, raster.source, "kernels/{stem}.wgsl");
            } else if let Some(lib) = shaders::LIBRARIES.iter().find(|f| f.name == stem) {
                assert_eq!(text, lib.source, "kernels/{stem}.wgsl");
                assert!(
                    modules.iter().any(|m| m.files().iter().any(|f| f.name == stem)),
                    "library kernels/{stem}.wgsl is composed into no module"
                );
            } else {
                let file = STAGES.iter().find(|f| f.name == stem).unwrap_or_else(|| {
                    panic!("kernels/{stem}.wgsl is listed in neither shaders::STAGES nor LIBRARIES")
                });
                assert_eq!(text, file.source);
                on_disk.push(stem);
            }
        }
    }
    assert_eq!(on_disk.len(), STAGES.len(), "a listed stage has no file");
}

#[test]
fn composed_stages_validate_and_bind_known_buffers() {
    let stages = shaders::stages();
    let known: Vec<&str> = stages.iter().flat_map(|s| s.buffers.iter().copied()).collect();
    let modules: Vec<_> = stages.iter().flat_map(|s| s.modules.iter().cloned()).collect();
    for file in STAGES {
        assert!(modules.iter().any(|m| m.file() == *file), "stage {} has no module in shaders::stages()", file.name);
    }
    for m in modules {
        let name = m.name().to_string();
        let source = shaders::compose(&m);
        let module = validate(&format!("{name}.wgsl (composed)"), &source);
        let computes: Vec<_> = module.entry_points.iter().filter(|e| e.stage == naga::ShaderStage::Compute).collect();
        assert!(!computes.is_empty(), "{name} has no compute entry point");
        for ep in computes {
            // Cooperative kernels run one world per workgroup of their own size.
            let size = if COOPERATIVE.contains(&ep.name.as_str()) { SOLVER_THREADS } else { WORKGROUP_SIZE };
            assert_eq!(ep.workgroup_size, [size, 1, 1], "{name}::{}", ep.name);
        }
        // The runtime's own reflection agrees and every binding resolves.
        let info = shaders::reflect(&name, &source).unwrap();
        for e in &info.entries {
            assert!(!e.bindings.is_empty(), "{name}::{} binds nothing", e.name);
            eprintln!("{name}::{}: {} storage buffers", e.name, e.storage_buffers());
            assert!(
                e.storage_buffers() <= REQUIRED_STORAGE_BUFFERS_PER_STAGE,
                "{name}::{} binds {} storage buffers",
                e.name,
                e.storage_buffers()
            );
            for b in &e.bindings {
                assert!(known.contains(&b.name.as_str()), "{name}::{} binds unknown '{}'", e.name, b.name);
            }
        }
    }
}

/// The wide cooperative stage is the cooperative source with more threads
/// per world: it validates, and its cooperative kernels have that size.
#[test]
fn wide_solver_stage_validates_with_its_thread_count() {
    use cenic::gpu::icf::{SolverState, SolverVariant, WIDE_SOLVER_THREADS};
    let module = SolverVariant::Wide.stage(SolverState::Storage).unwrap().module();
    let name = module.name();
    let source = shaders::compose(&module);
    assert!(source.contains(&format!("const SOLVER_THREADS: u32 = {WIDE_SOLVER_THREADS}u;")));
    let module = validate(&format!("{name} (composed)"), &source);
    for ep in module.entry_points.iter().filter(|e| COOPERATIVE.contains(&e.name.as_str())) {
        assert_eq!(ep.workgroup_size, [WIDE_SOLVER_THREADS, 1, 1], "{name}::{}", ep.name);
    }
    assert!(module.entry_points.iter().any(|e| e.name == "icf_solve"), "{name} has no icf_solve");
}

/// The binding table alone (with the helpers and the generated field
/// declarations) validates, declares every host buffer, and every per-world
/// field has accessors whose element is `width` floats (`mass`: a
/// read-write array of f32).
#[test]
fn binding_table_matches_host_layout() {
    let module = validate("data.wgsl (composed)", &shaders::compose_source(""));
    let vars: HashMap<String, &naga::GlobalVariable> =
        module.global_variables.iter().filter_map(|(_, v)| Some((v.name.clone()?, v))).collect();
    for name in GpuModel::BUFFER_NAMES.iter().chain(&GpuCollision::BUFFER_NAMES).chain(&GpuData::BUFFER_NAMES) {
        assert!(vars.contains_key(*name), "data.wgsl lacks buffer '{name}'");
    }
    for name in ["world_data", "mass"] {
        let var = vars[name];
        let TypeInner::Array { stride, .. } = module.types[var.ty].inner else { panic!("'{name}' is not an array") };
        assert_eq!(stride, 4, "element size of '{name}'");
        assert!(
            matches!(var.space, naga::AddressSpace::Storage { access } if access.contains(naga::StorageAccess::STORE)),
            "'{name}' must be read_write"
        );
    }
    // Any model with nv ≠ 1 tells matrix rows from scalars.
    let model = cenic::scenes::cube_toss();
    let functions: HashMap<String, &naga::Function> =
        module.functions.iter().filter_map(|(_, f)| Some((f.name.clone()?, f))).collect();
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    for f in Field::ALL.into_iter().filter(|f| f.in_world_data()) {
        let get = functions.get(&format!("{}_get", f.name())).unwrap_or_else(|| panic!("no {}_get", f.name()));
        let ty = get.result.as_ref().unwrap_or_else(|| panic!("{}_get returns nothing", f.name())).ty;
        let (_, width) = f.shape(&model);
        assert_eq!(layouter[ty].size as usize, 4 * width, "element size of '{}'", f.name());
        let set = functions.get(&format!("{}_set", f.name())).unwrap_or_else(|| panic!("no {}_set", f.name()));
        assert_eq!(set.arguments.len(), 2, "{}_set", f.name());
        assert_eq!(set.arguments[1].ty, ty, "{}_set takes what {}_get returns", f.name(), f.name());
    }
    // Packed model structs: same size and field offsets as the Rust side.
    let structs: HashMap<String, &TypeInner> =
        module.types.iter().filter_map(|(_, t)| Some((t.name.clone()?, &t.inner))).collect();
    let Some(TypeInner::Struct { span, .. }) = structs.get("EpaScratch") else { panic!("no WGSL struct EpaScratch") };
    assert_eq!(*span as usize, cenic::gpu::collision::EPA_SCRATCH_BYTES, "size of EpaScratch");
    let layouts = struct_layouts()
        .into_iter()
        .chain(cenic::gpu::collision::struct_layouts())
        .chain(cenic::gpu::icf::struct_layouts())
        .chain(cenic::gpu::cenic::struct_layouts());
    for (name, size, fields) in layouts {
        let Some(TypeInner::Struct { members, span }) = structs.get(name) else { panic!("no WGSL struct {name}") };
        assert_eq!(*span as usize, size, "size of {name}");
        for (field, offset) in fields {
            let m = members
                .iter()
                .find(|m| m.name.as_deref() == Some(field))
                .unwrap_or_else(|| panic!("WGSL {name} lacks '{field}'"));
            assert_eq!(m.offset as usize, offset, "offset of {name}.{field}");
        }
    }
}

/// The structs a stage declares itself (the sensors' table) have the
/// layouts of their Rust twins in the stage as composed.
#[test]
fn stage_structs_match_host_layout() {
    let module = validate("sensors.wgsl (composed)", &shaders::compose(&cenic::gpu::sensors::FILE));
    let structs: HashMap<String, &TypeInner> =
        module.types.iter().filter_map(|(_, t)| Some((t.name.clone()?, &t.inner))).collect();
    for (name, size, fields) in cenic::gpu::sensors::struct_layouts() {
        let Some(TypeInner::Struct { members, span }) = structs.get(name) else { panic!("no WGSL struct {name}") };
        assert_eq!(*span as usize, size, "size of {name}");
        for (field, offset) in fields {
            let m = members
                .iter()
                .find(|m| m.name.as_deref() == Some(field))
                .unwrap_or_else(|| panic!("WGSL {name} lacks '{field}'"));
            assert_eq!(m.offset as usize, offset, "offset of {name}.{field}");
        }
    }
}

/// The rasterizer's vertex and fragment stages validate on their own, and
/// the host's structs have their WGSL layouts.
#[test]
fn raster_files_validate() {
    for file in shaders::RASTER {
        let module = validate(&format!("{}.wgsl", file.name), file.source);
        let stages: Vec<_> = module.entry_points.iter().map(|e| e.stage).collect();
        assert!(stages.contains(&naga::ShaderStage::Vertex), "{} has no vertex stage", file.name);
        assert!(stages.contains(&naga::ShaderStage::Fragment), "{} has no fragment stage", file.name);
        let structs: HashMap<String, &TypeInner> =
            module.types.iter().filter_map(|(_, t)| Some((t.name.clone()?, &t.inner))).collect();
        let Some(TypeInner::Struct { span, .. }) = structs.get("View") else { panic!("no WGSL struct View") };
        assert_eq!(*span as usize, size_of::<cenic::render::GpuView>(), "size of View");
    }
    let module = validate("render_gather.wgsl (composed)", &shaders::compose(&cenic::render::GATHER));
    let structs: HashMap<String, &TypeInner> =
        module.types.iter().filter_map(|(_, t)| Some((t.name.clone()?, &t.inner))).collect();
    let Some(TypeInner::Struct { span, .. }) = structs.get("RenderRig") else { panic!("no WGSL struct RenderRig") };
    assert_eq!(*span as usize, size_of::<cenic::render::GpuRig>(), "size of RenderRig");
}
