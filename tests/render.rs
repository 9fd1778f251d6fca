//! `cenic::render`: depth against analytic distances, frames that follow
//! the bodies (a moved body changes the frame; a `trackcom` camera keeps a
//! lone body in place), the MJCF visual attributes and cameras, and the
//! same frames from a GPU batch's device buffers as from its positions
//! uploaded by the host.

#[macro_use]
mod common;

use cenic::batch::Batch;
use cenic::gpu::GpuBatch;
use cenic::integrator::Mode;
use cenic::model::{CameraMode, Model};
use cenic::render::{Camera, Frames, FreeCamera, Outputs, Renderer};
use std::sync::Arc;

const SCENE: &str = r#"
<mujoco model="render">
  <asset>
    <texture name="grid" type="2d" builtin="checker" rgb1="0 0 0" rgb2="1 1 1" width="64" height="64"/>
    <material name="floor" texture="grid" texrepeat="4 4"/>
    <material name="red" rgba="1 0 0 1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" material="floor"/>
    <camera name="above" pos="0 0 3" fovy="60"/>
    <body name="ball" pos="0 0 1">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.25" material="red"/>
      <camera name="follow" mode="trackcom" pos="0 -3 0" xyaxes="1 0 0 0 0 1"/>
    </body>
    <body name="arm" pos="0.8 0 0.5">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" rgba="0 0 1 1"/>
      <geom type="box" pos="0.5 0 0" size="0.1 0.1 0.1" rgba="0 1 0 1" group="1"/>
      <geom type="cylinder" pos="0.3 0 0" size="0.08 0.05" group="4"/>
      <geom type="ellipsoid" pos="0.2 0 0.2" size="0.1 0.05 0.08" rgba="1 1 0 0"/>
    </body>
  </worldbody>
</mujoco>"#;

fn scene() -> Arc<Model> {
    Arc::new(Model::from_mjcf_str(SCENE).unwrap())
}

#[test]
fn mjcf_visual_attributes_and_cameras() {
    let m = scene();
    assert_eq!(m.visual.cameras.len(), 2);
    let above = &m.visual.cameras[m.visual.camera("above").unwrap()];
    assert_eq!((above.body, above.mode, above.fovy, above.pos), (0, CameraMode::Fixed, 60.0, [0.0, 0.0, 3.0]));
    let follow = &m.visual.cameras[m.visual.camera("follow").unwrap()];
    assert_eq!((follow.mode, follow.body), (CameraMode::TrackCom, 1));
    let floor = m.geom_look(0);
    assert_eq!(floor.rgba, [0.0, 0.0, 0.0, 1.0], "checker rgb1 times the material's white");
    let (rgb2, rep) = floor.checker.expect("the floor has a checker");
    assert_eq!((rgb2, rep), ([1.0; 3], [2.0, 2.0]), "4 repeats of 2 squares over 4 m");
    assert_eq!(m.geom_look(1).rgba, [1.0, 0.0, 0.0, 1.0]);
    // Groups 0-2 are drawn, 3-5 not; alpha 0 is not drawn.
    let visible: Vec<bool> = (0..m.geoms.len()).map(|g| m.geom_visible(g)).collect();
    assert_eq!(visible, [true, true, true, true, false, false]);

    // Unknown attributes and unsupported cameras are errors naming the element.
    let bad = SCENE.replace(r#"fovy="60""#, r#"fovy="60" zoom="2""#);
    let e = Model::from_mjcf_str(&bad).unwrap_err().to_string();
    assert!(e.contains("camera name=\"above\"") && e.contains("zoom"), "{e}");
    let bad = SCENE.replace(r#"mode="trackcom""#, r#"mode="targetbody""#);
    let e = Model::from_mjcf_str(&bad).unwrap_err().to_string();
    assert!(e.contains("targetbody") && e.contains("fixed, track, trackcom"), "{e}");
    let bad = SCENE.replace(r#"material="red""#, r#"material="blue""#);
    let e = Model::from_mjcf_str(&bad).unwrap_err().to_string();
    assert!(e.contains("unknown material \"blue\""), "{e}");
    let bad = SCENE.replace(r#"rgba="0 0 1 1""#, r#"rgba="0 0 2 1""#);
    let e = Model::from_mjcf_str(&bad).unwrap_err().to_string();
    assert!(e.contains("rgba") && e.contains("[0, 1]"), "{e}");
}

/// Looking straight down from height h at the floor and the ball: the
/// centre pixel sees the ball's top (h − 1.25 m away), a corner pixel the
/// floor at the distance along the axis, h.
#[test]
fn depth_is_the_distance_along_the_view_axis() {
    let ctx = gpu_or_skip!();
    let m = scene();
    let h = 4.0;
    let cam = FreeCamera { lookat: [0.0, 0.0, 0.0], distance: h, azimuth: 90.0, elevation: -90.0 };
    let (w, hh) = (33, 33);
    let mut r = Renderer::new(ctx, m.clone(), 1, w, hh, Outputs::ALL, Camera::Free(cam)).unwrap();
    let f = r.render_qpos(&m.qpos0).unwrap();
    let c = (hh / 2) * w + w / 2;
    assert_eq!(f.segmentation[c], 1, "the centre pixel sees the ball");
    assert!((f.depth[c] as f64 - (h - 1.25)).abs() < 2e-3, "ball top at {} m", f.depth[c]);
    assert_eq!(f.segmentation[0], 0, "the corner sees the floor");
    assert!((f.depth[0] as f64 - h).abs() < 1e-4, "floor at {} m along the axis", f.depth[0]);
    // The checker: black and white floor pixels both occur.
    let floor_px: Vec<u8> = (0..w * hh).filter(|&i| f.segmentation[i] == 0).map(|i| f.rgb[3 * i]).collect();
    assert!(floor_px.iter().any(|&v| v < 30) && floor_px.iter().any(|&v| v > 150), "no checker on the floor");
}

/// A moved body changes the frame where it projects; a `trackcom` camera
/// follows the ball, so its view of the ball alone does not change.
#[test]
fn frames_follow_the_bodies() {
    let ctx = gpu_or_skip!();
    let m = scene();
    let mut moved = m.qpos0.clone();
    moved[0] += 0.5; // the ball 0.5 m along x
    let both: Vec<f64> = m.qpos0.iter().chain(&moved).copied().collect();
    let above = Camera::Model(m.visual.camera("above").unwrap());
    let mut r = Renderer::new(ctx.clone(), m.clone(), 2, 48, 48, Outputs::ALL, above).unwrap();
    let f = r.render_qpos(&both).unwrap().clone();
    let n = 48 * 48;
    let ball = |f: &Frames, w: usize| (0..n).filter(|&i| f.segmentation[w * n + i] == 1).collect::<Vec<_>>();
    let (b0, b1) = (ball(&f, 0), ball(&f, 1));
    assert!(b0.len() > 20 && b1.len() > 20);
    assert_ne!(b0, b1, "the ball's pixels moved");
    let mean_x = |v: &[usize]| v.iter().map(|i| (i % 48) as f64).sum::<f64>() / v.len() as f64;
    assert!(mean_x(&b1) > mean_x(&b0) + 3.0, "the ball moved right in the image");
    let changed = (0..n * 3).filter(|&i| f.rgb[i] != f.rgb[n * 3 + i]).count();
    assert!(changed > 60, "only {changed} colour values changed");

    // trackcom: only the ball's own pixels are compared (the floor moves behind it).
    let follow = Camera::Model(m.visual.camera("follow").unwrap());
    r.set_camera(follow).unwrap();
    let f = r.render_qpos(&both).unwrap();
    let (b0, b1) = (ball(f, 0), ball(f, 1));
    assert!(b0.len() > 20);
    assert_eq!(b0, b1, "the trackcom camera keeps the ball in place");
}

/// The frames of a GPU batch rendered from its device buffers equal those
/// rendered from its positions read back and uploaded by the host (the
/// CPU path), after the batch has moved the worlds.
#[test]
fn gpu_batch_frames_equal_host_frames() {
    let ctx = gpu_or_skip!();
    let m = scene();
    let n = 6;
    let mut batch = GpuBatch::new(ctx.clone(), m.clone(), n, Mode::Fixed { dt: 0.002 }).unwrap();
    for w in 0..n {
        let mut q = m.qpos0.clone();
        q[0] = 0.3 * w as f64 - 0.6;
        q[7] = 0.4 * w as f64;
        let mut v = vec![0.0; m.nv];
        v[1] = 0.5;
        v[6] = 1.0;
        batch.set_state(w, &q, &v).unwrap();
    }
    batch.advance(0.1).unwrap();
    let follow = Camera::Model(m.visual.camera("follow").unwrap());
    let mut r = Renderer::new(ctx.clone(), m.clone(), n, 40, 30, Outputs::ALL, follow).unwrap();
    let gpu = r.render_gpu_batch(&batch).unwrap().clone();
    let mut q = vec![0.0; n * m.nq];
    batch.qpos(&mut q);
    let host = r.render_qpos(&q).unwrap().clone();
    let px = n * 40 * 30;
    let same_seg = (0..px).filter(|&i| gpu.segmentation[i] == host.segmentation[i]).count();
    assert!(same_seg as f64 >= 0.999 * px as f64, "{} of {px} segmentation pixels differ", px - same_seg);
    let close_rgb = (0..px * 3).filter(|&i| (gpu.rgb[i] as i32 - host.rgb[i] as i32).abs() <= 1).count();
    assert!(close_rgb as f64 >= 0.999 * (3 * px) as f64, "{} of {} colour values differ", 3 * px - close_rgb, 3 * px);
    for i in (0..px).filter(|&i| gpu.segmentation[i] == host.segmentation[i]) {
        let (a, b) = (gpu.depth[i], host.depth[i]);
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "depth {a} vs {b} at pixel {i}");
    }
    // The worlds differ from each other (the batch's state, not one world's).
    let fr = 40 * 30;
    assert_ne!(gpu.segmentation[..fr], gpu.segmentation[fr..2 * fr]);
    eprintln!("GPU vs host: {same_seg}/{px} segmentation pixels equal");

    // Many worlds in several render passes (a small atlas: 4 × 3 tiles) agree too.
    let mut r =
        Renderer::new(ctx, m.clone(), n, 40, 30, Outputs::ALL, follow).unwrap().with_max_atlas(160, 90).unwrap();
    let chunked = r.render_gpu_batch(&batch).unwrap();
    assert_eq!(chunked.segmentation, gpu.segmentation);
    assert_eq!(chunked.rgb, gpu.rgb);
}

#[test]
fn bad_input_is_named() {
    let ctx = gpu_or_skip!();
    let m = scene();
    let e = Renderer::new(ctx.clone(), m.clone(), 1, 8, 8, Outputs::RGB, Camera::Model(7)).unwrap_err().to_string();
    assert!(e.contains("camera 7 out of range") && e.contains("2 cameras"), "{e}");
    let mut r = Renderer::new(ctx, m.clone(), 2, 8, 8, Outputs::RGB, Camera::Model(0)).unwrap();
    let e = r.render_qpos(&m.qpos0).unwrap_err().to_string();
    assert!(e.contains("qpos has") && e.contains("nworld × nq"), "{e}");
}

/// Coarser tessellation keeps the silhouettes (an octagon for a circle:
/// 90 % of its area) with far fewer triangles; bad settings are named.
#[test]
fn coarse_detail_keeps_the_silhouettes() {
    use cenic::render::geometry::{Detail, model_triangles_with};
    let ctx = gpu_or_skip!();
    let m = scene();
    let coarse = Detail { slices: 8, stacks: 4 };
    let (fine_n, coarse_n) = (model_triangles_with(&m, Detail::MUJOCO).len(), model_triangles_with(&m, coarse).len());
    assert!(coarse_n * 5 < fine_n, "{coarse_n} vertices at 8 × 4, {fine_n} at 28 × 16");
    let above = Camera::Model(m.visual.camera("above").unwrap());
    let mut r = Renderer::new(ctx, m.clone(), 1, 48, 48, Outputs::ALL, above).unwrap();
    let fine = r.render_qpos(&m.qpos0).unwrap().segmentation.clone();
    let mut r = r.with_detail(coarse).unwrap();
    assert_eq!(r.detail(), coarse);
    let rough = r.render_qpos(&m.qpos0).unwrap().segmentation.clone();
    let ball = |s: &[i32]| s.iter().map(|&g| g == 1).collect::<Vec<_>>();
    let (a, b) = (ball(&fine), ball(&rough));
    let inter = a.iter().zip(&b).filter(|(x, y)| **x && **y).count() as f64;
    let union = a.iter().zip(&b).filter(|(x, y)| **x || **y).count() as f64;
    assert!(union > 50.0 && inter / union > 0.85, "ball IoU {} over {union} pixels", inter / union);
    let e = r.with_detail(Detail { slices: 2, stacks: 4 }).unwrap_err().to_string();
    assert!(e.contains("≥ 3 slices") && e.contains("got 2 slices"), "{e}");
}
