//! The binding table every kernel file is composed after:
//! `kernels/data.wgsl` (the model, the per-world fields, the contacts and
//! the stages' buffers, bound by name) and the WGSL generated from the Rust
//! tables that every module may use: the per-world field accessors
//! ([`Field::wgsl_declarations`]), the trial stages ([`TrialStage`]) and
//! the geom and pair kinds ([`kind_constants`]). Data layer: knows no stage.

use super::compose::{COMMON, KernelFile};
use super::fields::Field;
use super::names::{TrialStage, kind_constants, wgsl_constants};

/// `kernels/data.wgsl` with the generated declarations after it (and
/// `common.wgsl` in front): the first dependency of every kernel file.
pub static DATA: KernelFile =
    KernelFile::new("data", include_str!("../../kernels/data.wgsl"), &[&COMMON]).with_generated(prelude);

/// The WGSL generated after `kernels/data.wgsl`: field accessors, trial
/// stages, geom and pair kinds.
pub fn prelude() -> String {
    format!(
        "{}\n{}\n{}",
        Field::wgsl_declarations(),
        wgsl_constants::<TrialStage>("STAGE", "src/gpu/names.rs TrialStage"),
        kind_constants()
    )
}
