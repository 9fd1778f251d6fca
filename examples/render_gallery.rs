//! One frame of each built-in gymnasium task from gymnasium's default
//! camera, after a second of random actions simulated by cenic, as PNGs
//! (the README's pictures):
//!
//!     cargo run --release --example render_gallery -- [OUT_DIR] [WIDTH] [HEIGHT]
//!
//! Defaults: docs/figures, 240 × 180. Needs the shared gymnasium models
//! (`../shared/models/gymnasium` or `$CENIC_SHARED`) and a wgpu adapter.

use cenic::batch::Batch;
use cenic::gpu::GpuContext;
use cenic::render::{Camera, Outputs, Renderer};
use cenic::rl::tasks::{self, Kind};
use cenic::rl::{EnvConfig, VecEnv};
use std::path::PathBuf;
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = PathBuf::from(args.first().map(String::as_str).unwrap_or("docs/figures"));
    let width: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(240);
    let height: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(180);
    let shared = std::env::var_os("CENIC_SHARED").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("../shared"));
    let models = shared.join("models/gymnasium");
    std::fs::create_dir_all(&out)?;
    let ctx = Arc::new(GpuContext::new()?);
    for kind in Kind::ALL {
        let (model, task) = tasks::make(kind.id(), &models)?;
        let mode = cenic::integrator::Mode::Fixed { dt: model.options.timestep };
        let batch = cenic::batch::CpuBatch::<f64>::new(model.clone(), 1, mode);
        let mut env = VecEnv::new(batch, task, EnvConfig::default())?;
        env.reset(Some(1))?;
        // gymnasium places its camera at the first render, after the reset.
        let mut q = vec![0.0; model.nq];
        env.batch().qpos(&mut q);
        let mut data = cenic::dynamics::Data::<f64>::new(&model);
        data.q.copy_from_slice(&q);
        cenic::dynamics::kinematics(&model, &mut data);
        let camera = Camera::Free(kind.default_camera(&model, &data));
        let nu = model.nu();
        let steps = (1.0 / env.dt()).round() as usize;
        let bounds = env.action_bounds().to_vec();
        let mut rng = 7u64;
        for _ in 0..steps {
            let a: Vec<f32> = (0..nu)
                .map(|i| {
                    rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let u = (rng >> 11) as f64 / (1u64 << 53) as f64;
                    (bounds[i][0] + u * (bounds[i][1] - bounds[i][0])) as f32
                })
                .collect();
            env.step(&a)?;
        }
        env.batch().qpos(&mut q);
        let mut r = Renderer::new(ctx.clone(), model.clone(), 1, width, height, Outputs::RGB, camera)?;
        let frames = r.render_qpos(&q)?;
        let path = out.join(format!("task_{}.png", kind.id().trim_end_matches("-v5").to_lowercase()));
        frames.write_png(0, &path)?;
        println!("{}", path.display());
    }
    Ok(())
}
