//! `cenic::render` against MuJoCo's own renderer
//! (`tests/fixtures/render_mujoco.json`, written by
//! `scripts/render_fixtures.py` with MuJoCo 4.0 under osmesa): for each
//! gymnasium v5 task, the state after 20 random steps seen from gymnasium's
//! default camera. The body masks agree (IoU ≥ 0.95 for every body seen by
//! more than a few pixels and for all moving bodies together), the depth
//! agrees within 1 % wherever both renderers see the same body away from
//! its silhouette, and the camera placement (extent, clipping distances,
//! the look-at rule, each task's camera settings) is gymnasium's.

#[macro_use]
mod common;

use cenic::dynamics::{Data, kinematics};
use cenic::render::{Camera, FreeCamera, Outputs, Renderer};
use cenic::rl::tasks::{self, Kind};
use serde_json::Value;
use std::sync::Arc;

/// The committed fixtures, or those in `$CENIC_RENDER_FIXTURE` (MuJoCo's
/// frames rendered in the test run by `scripts/render_fixtures.py --out`).
fn fixtures() -> Value {
    let path = std::env::var("CENIC_RENDER_FIXTURE")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/render_mujoco.json").to_string());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn arr3(v: &Value) -> [f64; 3] {
    let a = f64s(v);
    [a[0], a[1], a[2]]
}

fn unrle(v: &Value, n: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(n);
    for run in v.as_array().unwrap() {
        let (x, k) = (run[0].as_i64().unwrap(), run[1].as_u64().unwrap() as usize);
        out.extend(std::iter::repeat_n(x, k));
    }
    assert_eq!(out.len(), n);
    out
}

/// Pixels whose 3×3 neighbourhood (inside the frame) is all one value.
fn interior(mask: &[i64], w: usize, h: usize, x: usize, y: usize) -> bool {
    let v = mask[y * w + x];
    (y.saturating_sub(1)..(y + 2).min(h))
        .all(|yy| (x.saturating_sub(1)..(x + 2).min(w)).all(|xx| mask[yy * w + xx] == v))
}

#[test]
fn gymnasium_tasks_match_mujoco_renderer() {
    let Some(shared) = common::shared_dir() else { return };
    let ctx = gpu_or_skip!();
    let fx = fixtures();
    let (w, h) = (fx["width"].as_u64().unwrap() as usize, fx["height"].as_u64().unwrap() as usize);
    let step = fx["depth_step"].as_u64().unwrap() as usize;
    let models = shared.join("models/gymnasium");
    let mut worst_iou = 1.0f64;
    for t in fx["tasks"].as_array().unwrap() {
        let name = t["task"].as_str().unwrap();
        let (model, _) = tasks::make(name, &models).unwrap();
        let kind = Kind::parse(name).unwrap();

        // Camera placement: gymnasium's settings, MuJoCo's extent and clipping distances, the look-at rule.
        let cfg = &t["default_camera_config"];
        let c = kind.camera_config();
        assert_eq!(c.distance, cfg.get("distance").map(|v| v.as_f64().unwrap()), "{name} distance");
        assert_eq!(c.lookat, cfg.get("lookat").map(arr3), "{name} lookat");
        assert_eq!(c.elevation, cfg.get("elevation").map(|v| v.as_f64().unwrap()), "{name} elevation");
        assert_eq!(c.azimuth, cfg.get("azimuth").map(|v| v.as_f64().unwrap()), "{name} azimuth");
        let mut d0 = Data::<f64>::new(&model);
        d0.q.copy_from_slice(&model.qpos0);
        kinematics(&model, &mut d0);
        let (center, extent) = model.statistic(&d0);
        let want = t["stat_extent"].as_f64().unwrap();
        assert!((extent - want).abs() <= 1e-6 * want, "{name}: extent {extent} vs MuJoCo {want}");
        let want_c = arr3(&t["stat_center"]);
        assert!((0..3).all(|i| (center[i] - want_c[i]).abs() < 1e-6), "{name}: centre {center:?} vs {want_c:?}");
        let qpos = f64s(&t["qpos"]);
        let mut data = Data::<f64>::new(&model);
        data.q.copy_from_slice(&qpos);
        kinematics(&model, &mut data);
        let med = arr3(&t["geom_xpos_median"]);
        let cam = kind.default_camera(&model, &data);
        let fixture_cam = &t["camera"];
        let lookat = c.lookat.unwrap_or(med);
        assert!(
            (0..3).all(|i| (cam.lookat[i] - lookat[i]).abs() < 1e-6),
            "{name}: look-at {:?} vs {lookat:?}",
            cam.lookat
        );
        assert!((cam.distance - fixture_cam["distance"].as_f64().unwrap()).abs() < 1e-9, "{name}: distance");
        assert_eq!(cam.azimuth, fixture_cam["azimuth"].as_f64().unwrap(), "{name}: azimuth");
        assert_eq!(cam.elevation, fixture_cam["elevation"].as_f64().unwrap(), "{name}: elevation");

        // Render the fixture's state from the fixture's camera.
        let camera = FreeCamera {
            lookat: arr3(&fixture_cam["lookat"]),
            distance: fixture_cam["distance"].as_f64().unwrap(),
            azimuth: fixture_cam["azimuth"].as_f64().unwrap(),
            elevation: fixture_cam["elevation"].as_f64().unwrap(),
        };
        assert_eq!(model.visual.fovy, t["fovy"].as_f64().unwrap());
        let mut r =
            Renderer::new(ctx.clone(), Arc::clone(&model), 1, w, h, Outputs::ALL, Camera::Free(camera)).unwrap();
        let (zn, zf) = r.clip_range();
        assert!((zn as f64 - t["znear"].as_f64().unwrap()).abs() < 1e-5 * zf as f64, "{name}: znear");
        assert!((zf as f64 - t["zfar"].as_f64().unwrap()).abs() < 1e-5 * zf as f64, "{name}: zfar");
        let frames = r.render_qpos(&qpos).unwrap();
        let ours: Vec<i64> =
            frames.segmentation.iter().map(|&g| if g < 0 { -1 } else { model.geoms[g as usize].body as i64 }).collect();
        let theirs = unrle(&t["body_mask_rle"], w * h);

        // Body masks.
        let nb = model.bodies.len() as i64;
        let mut report = vec![];
        for b in -1..nb {
            let (a, m) = (ours.iter().filter(|&&x| x == b).count(), theirs.iter().filter(|&&x| x == b).count());
            if a.max(m) < 40 {
                continue;
            }
            let inter = ours.iter().zip(&theirs).filter(|(x, y)| **x == b && **y == b).count();
            let iou = inter as f64 / (a + m - inter) as f64;
            worst_iou = worst_iou.min(iou);
            report.push(format!("{b}:{iou:.3}({m}px)"));
            assert!(iou >= 0.95, "{name}: body {b} IoU {iou:.4} ({a} px here, {m} in MuJoCo); {}", report.join(" "));
        }
        let moving = |x: i64| x > 0;
        let (a, m) = (ours.iter().filter(|x| moving(**x)).count(), theirs.iter().filter(|x| moving(**x)).count());
        let inter = ours.iter().zip(&theirs).filter(|(x, y)| moving(**x) && moving(**y)).count();
        let iou = inter as f64 / (a + m - inter) as f64;
        assert!(iou >= 0.95, "{name}: moving bodies IoU {iou:.4}");

        // Depth where both see the same body, away from silhouettes.
        let want_depth = f64s(&t["depth"]);
        let (mut compared, mut worst) = (0, 0.0f64);
        for (k, y) in (0..h).step_by(step).enumerate() {
            for (j, x) in (0..w).step_by(step).enumerate() {
                let i = y * w + x;
                if theirs[i] < 0
                    || ours[i] != theirs[i]
                    || !interior(&theirs, w, h, x, y)
                    || !interior(&ours, w, h, x, y)
                {
                    continue;
                }
                let dm = want_depth[k * w.div_ceil(step) + j];
                let dc = frames.depth[i] as f64;
                let rel = (dc - dm).abs() / dm;
                worst = worst.max(rel);
                assert!(rel <= 0.01, "{name}: depth at ({x}, {y}) {dc:.5} m vs MuJoCo {dm:.5} m (body {})", ours[i]);
                compared += 1;
            }
        }
        assert!(compared >= 20, "{name}: only {compared} depth samples compared");
        eprintln!(
            "{name}: IoU moving {iou:.4}, per body {}; depth: {compared} samples, worst {:.2e}",
            report.join(" "),
            worst
        );
    }
    eprintln!("worst body IoU {worst_iou:.4}");
}
