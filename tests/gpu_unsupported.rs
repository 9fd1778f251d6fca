//! The GPU batch refuses models using features its kernels do not simulate,
//! naming the feature and the element, instead of silently simulating a
//! different model; models whose MJCF features act through the model
//! itself (contact exclusions, switched-off contacts) run on the GPU.

#[macro_use]
mod common;

use cenic::gpu::{GpuBatch, GpuError};
use cenic::integrator::Mode;
use cenic::model::Model;
use std::path::PathBuf;
use std::sync::Arc;

fn model(rel: &str) -> Arc<Model> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/models").join(rel);
    Arc::new(Model::from_mjcf_file(&p).unwrap_or_else(|e| panic!("{rel}: {e}")))
}

#[test]
fn unsupported_features_are_refused_by_name() {
    for (file, words) in [
        ("features/actuators.xml", ["general actuator", "'v2'"]),
        ("features/tendons.xml", ["tendon", "'coupling'"]),
        ("features/equality.xml", ["equality constraint", "'loop' (connect)"]),
        ("features/fluid.xml", ["fluid forces", "density"]),
        ("features/frictionloss.xml", ["friction loss", "'brake'"]),
        ("features/contact_filter.xml", ["explicit contact pair", "'p'"]),
        ("corpus/lander.xml", ["activation state", "'left'"]),
    ] {
        let m = model(file);
        let what = m.gpu_unsupported().unwrap_or_else(|| panic!("{file}: should be refused"));
        for w in words {
            assert!(what.contains(w), "{file}: {what}");
        }
        let ctx = gpu_or_skip!();
        match GpuBatch::new(ctx, m, 2, Mode::Fixed { dt: 1e-3 }) {
            Err(GpuError::Unsupported(msg)) => {
                assert!(msg.contains(&what) && msg.contains("CpuBatch"), "{file}: {msg}");
            }
            Err(e) => panic!("{file}: expected Unsupported, got {e}"),
            Ok(_) => panic!("{file}: the GPU batch accepted a model it does not simulate"),
        }
    }
}

#[test]
fn models_within_the_gpu_feature_set_are_accepted() {
    // cartpole: a contact exclusion and a joint motor; pendulum: contacts
    // switched off by a flag.
    for file in ["corpus/cartpole.xml", "corpus/pendulum.xml", "features/includes.xml"] {
        let m = model(file);
        assert_eq!(m.gpu_unsupported(), None, "{file}");
        let ctx = gpu_or_skip!();
        if let Err(e) = GpuBatch::new(ctx, m, 2, Mode::Fixed { dt: 1e-3 }) {
            panic!("{file}: {e}");
        }
    }
}

#[test]
fn cpu_only_cenic_options_are_refused_by_name() {
    use cenic::integrator::CenicParams;
    let landing = [
        ("land_contact_events", CenicParams { land_contact_events: true, ..Default::default() }),
        ("land_stick_events", CenicParams { land_stick_events: true, ..Default::default() }),
        ("extrapolate", CenicParams { extrapolate: true, ..Default::default() }),
    ];
    for (name, params) in landing {
        let ctx = gpu_or_skip!();
        match GpuBatch::new(ctx, Arc::new(cenic::scenes::cube_toss()), 2, Mode::ErrorControlled(params)) {
            Err(GpuError::Unsupported(msg)) => assert!(msg.contains(name) && msg.contains("CPU only"), "{msg}"),
            Err(e) => panic!("{name}: expected Unsupported, got {e}"),
            Ok(_) => panic!("{name}: the GPU batch accepted an option its kernels do not implement"),
        }
    }
}
