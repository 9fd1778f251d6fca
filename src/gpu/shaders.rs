//! The table of the GPU path's stages, bottom to top, as MuJoCo Warp's
//! `forward.py` lists its stages: for each stage wrapper, the modules it
//! compiles (its kernel files, composed with their libraries and their
//! generated WGSL, in their default variant) and the buffers it binds by
//! name. Each wrapper declares its own [`KernelFile`]s and hands them to the
//! device layer as [`Module`]s; this table only lists them, for the checks
//! (`tests/wgsl_validate.rs`: every file of `kernels/` is listed, every
//! module validates, every binding resolves) and the tools that show a
//! composed module.

use super::batch::HostCollision;
use super::compose::{COMMON as COMMON_FILE, COMMON_WGSL, compose_text};
pub use super::compose::{Composed, KernelFile, Module, reflect, reflect_module};
use super::data::DATA;
use super::fields::GpuData;
use super::icf::{IcfBuffers, SolverState, SolverVariant};
use super::model::GpuModel;
use super::{cenic, collision, icf, integrate, kinematics, rl, rnea, sensors};

/// The text of `kernels/common.wgsl` (math helpers), for tests that
/// compose their own kernels with it.
pub const COMMON: &str = COMMON_WGSL;

/// One row of [`stages`]: a stage wrapper, its modules and its buffers.
#[derive(Clone, Debug)]
pub struct StageEntry {
    /// The wrapper (`src/gpu/<name>.rs`).
    pub wrapper: &'static str,
    /// The CPU code it mirrors.
    pub cpu_twin: &'static str,
    /// The modules it compiles, in their default variant.
    pub modules: Vec<Module>,
    /// The WGSL names of the buffers it provides.
    pub buffers: &'static [&'static str],
}

/// Every stage, bottom to top: the multibody stages, the collision, the
/// contact problem and its solve, the CENIC trial, then what reads a
/// batch's state (sensors, RL tasks, the renderer's gather kernel). The model and per-world data every
/// stage binds come first.
pub fn stages() -> Vec<StageEntry> {
    let m = Module::new;
    vec![
        StageEntry {
            wrapper: "model",
            cpu_twin: "src/model, src/dynamics/data.rs",
            modules: vec![],
            buffers: &GpuModel::BUFFER_NAMES,
        },
        StageEntry {
            wrapper: "fields",
            cpu_twin: "src/dynamics/data.rs",
            modules: vec![],
            buffers: &GpuData::BUFFER_NAMES,
        },
        StageEntry {
            wrapper: "kinematics",
            cpu_twin: "src/dynamics/kinematics.rs",
            modules: vec![m(&kinematics::FILE)],
            buffers: &[],
        },
        StageEntry { wrapper: "rnea", cpu_twin: "src/dynamics/rnea.rs", modules: vec![m(&rnea::FILE)], buffers: &[] },
        StageEntry {
            wrapper: "integrate",
            cpu_twin: "src/dynamics/integrate.rs",
            modules: vec![m(&integrate::FILE)],
            buffers: &[],
        },
        StageEntry {
            wrapper: "collision",
            cpu_twin: "src/collision",
            modules: vec![m(&collision::FILE)],
            buffers: &collision::GpuCollision::BUFFER_NAMES,
        },
        StageEntry {
            wrapper: "batch (host collision)",
            cpu_twin: "src/collision",
            modules: vec![],
            buffers: &HostCollision::BUFFER_NAMES,
        },
        StageEntry {
            wrapper: "icf",
            cpu_twin: "src/icf",
            modules: vec![
                m(&icf::BUILDER),
                SolverVariant::Serial.stage(SolverState::Storage).expect("a stage").module(),
                SolverVariant::Cooperative.stage(SolverState::Storage).expect("a stage").module(),
            ],
            buffers: &IcfBuffers::BUFFER_NAMES,
        },
        StageEntry {
            wrapper: "cenic",
            cpu_twin: "src/integrator/cenic.rs",
            modules: vec![m(&cenic::FILE)],
            buffers: &cenic::CenicBuffers::BUFFER_NAMES,
        },
        StageEntry {
            wrapper: "sensors",
            cpu_twin: "src/dynamics/sensor.rs",
            modules: vec![m(&sensors::FILE)],
            buffers: &sensors::BUFFER_NAMES,
        },
        StageEntry {
            wrapper: "rl",
            cpu_twin: "src/rl/tasks.rs",
            modules: vec![m(&rl::FILE)],
            buffers: &rl::BUFFER_NAMES,
        },
        StageEntry {
            wrapper: "render (gather)",
            cpu_twin: "src/render/mod.rs (Renderer::render_qpos)",
            modules: vec![m(&crate::render::GATHER)],
            buffers: &crate::render::BUFFER_NAMES,
        },
    ]
}

/// Every stage file (a file with entry points), bottom to top.
pub const STAGES: &[&KernelFile] = &[
    &kinematics::FILE,
    &rnea::FILE,
    &integrate::FILE,
    &collision::FILE,
    &icf::BUILDER,
    &icf::SOLVE_SERIAL,
    &icf::SOLVE_COOP,
    &cenic::FILE,
    &sensors::FILE,
    &rl::FILE,
    &crate::render::GATHER,
];

/// Render-pipeline files (vertex and fragment stages, standalone, not
/// composed with the binding table): the rasterizer of [`crate::render`].
pub const RASTER: &[&KernelFile] = &[&crate::render::RASTER];

/// Every library file (WGSL functions composed in front of, or after, the
/// stage files that need them; no entry points of their own). `common`
/// and `data` are composed into every module.
pub const LIBRARIES: &[&KernelFile] = &[
    &COMMON_FILE,
    &DATA,
    &collision::SHAPES,
    &collision::ANALYTIC,
    &collision::GJK,
    &collision::EPA,
    &collision::MANIFOLD,
    &collision::HFIELD,
    &icf::WG_SERIAL,
    &icf::COST,
    &icf::SOLVER,
    &icf::VEC_STORAGE,
    &icf::STATE_STORAGE,
    &icf::STATE_PRIVATE,
    &icf::STATE_WORKGROUP,
];

/// The solver stage in every (variant, state) pair the runtime compiles
/// (with small representative sizes), for validation.
pub fn solver_variants() -> Vec<Module> {
    let mut out = vec![];
    for variant in [SolverVariant::Serial, SolverVariant::Cooperative, SolverVariant::Wide] {
        for state in [SolverState::Storage, SolverState::Private(6), SolverState::Workgroup(14)] {
            if let Ok(stage) = variant.stage(state) {
                out.push(stage.module());
            }
        }
    }
    out
}

/// Every module of [`stages`] and [`solver_variants`].
pub fn modules() -> Vec<Module> {
    stages().into_iter().flat_map(|s| s.modules).chain(solver_variants()).collect()
}

/// The full WGSL of `module` exactly as the runtime compiles it.
pub fn compose(module: impl Into<Module>) -> String {
    module.into().compose().text
}

/// `common.wgsl + data.wgsl +` the generated declarations `+ stage_source`.
pub fn compose_source(stage_source: &str) -> String {
    compose_text(&[&DATA], "stage", stage_source).text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solver_state_variants_validate() {
        for m in solver_variants() {
            reflect_module(m.name(), &m.compose()).unwrap_or_else(|e| panic!("{}: {e}", m.name()));
        }
        assert_eq!(solver_variants().len(), 6);
        assert!(SolverVariant::Serial.stage(SolverState::Workgroup(4)).is_err());
        assert!(SolverVariant::Cooperative.stage(SolverState::Private(4)).is_err());
        let names: Vec<String> = solver_variants().iter().map(|m| m.name().to_string()).collect();
        for n in [
            "icf_solve_serial",
            "icf_solve_serial#private6",
            "icf_solve_coop",
            "icf_solve_coop#workgroup14",
            "icf_solve_coop#storage@64",
            "icf_solve_coop#workgroup14@64",
        ] {
            assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
        }
    }

    #[test]
    fn every_module_composes_and_locates_its_lines() {
        for m in modules() {
            let c = m.compose();
            let last = c.text.lines().count();
            let (file, line) = c.locate(last).unwrap();
            assert!(line > 0, "{}: {file}", m.name());
            // The stage file itself is composed once, after its libraries.
            let header = format!("// ---- kernels/{}.wgsl\n", m.file().name);
            assert_eq!(c.text.matches(&header).count(), 1, "{}", m.name());
        }
    }
}
