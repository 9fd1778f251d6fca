//! The GPU context shared by the GPU tests of one test binary.

use cenic::gpu::{GpuContext, GpuError};
use std::sync::{Arc, OnceLock};

/// The default adapter (created once per test binary), or `None` when no
/// adapter exists and `CENIC_REQUIRE_GPU` is unset (CI sets it after
/// installing lavapipe, so that a missing driver fails instead of skipping).
pub fn context() -> Option<Arc<GpuContext>> {
    static CTX: OnceLock<Option<Arc<GpuContext>>> = OnceLock::new();
    CTX.get_or_init(|| match GpuContext::new() {
        Ok(c) => {
            eprintln!("GPU adapter: {}", c.describe());
            Some(Arc::new(c))
        }
        Err(GpuError::NoAdapter(m)) if std::env::var_os("CENIC_REQUIRE_GPU").is_none() => {
            eprintln!("SKIPPED: no GPU adapter ({m})");
            None
        }
        Err(e) => panic!("GPU context: {e}"),
    })
    .clone()
}

/// The GPU context, or returns from the test with a SKIPPED message.
#[allow(unused_macros)]
macro_rules! gpu_or_skip {
    () => {
        match crate::common::gpu::context() {
            Some(c) => c,
            None => {
                eprintln!("SKIPPED: no GPU adapter");
                return;
            }
        }
    };
}
