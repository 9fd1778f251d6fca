//! Frames of a `cenic._cenic.VecEnv` (`cenic::render`): gymnasium's
//! `rgb_array` and `depth_array`, one frame per environment, from the
//! task's default camera (placed at the first render, as gymnasium does),
//! a model camera, or a free camera.

use crate::{gpu_err, to_numpy};
use cenic::batch::Batch;
use cenic::gpu::{GpuBatch, GpuContext};
use cenic::render::{Camera, FreeCamera, Outputs, RenderError, Renderer};
use cenic::rl::tasks::{CameraConfig, Kind};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Arc, OnceLock};

/// The camera asked for, before it is placed.
#[derive(Clone, Debug)]
pub(crate) enum CameraSpec {
    /// The task's default camera with these settings over gymnasium's.
    Task(CameraConfig),
    /// A model camera.
    Model(usize),
}

/// A camera from Python: None (the task's default), an int or str (a
/// model camera by index or name), or a dict of free-camera settings
/// (``distance``, ``lookat``, ``azimuth``, ``elevation``) over the task's default.
pub(crate) fn camera_spec(model: &cenic::Model, kind: Kind, camera: Option<&Bound<'_, PyAny>>) -> PyResult<CameraSpec> {
    let Some(c) = camera.filter(|c| !c.is_none()) else { return Ok(CameraSpec::Task(kind.camera_config())) };
    let ncam = model.visual.cameras.len();
    if let Ok(i) = c.extract::<i64>() {
        if i == -1 {
            return Ok(CameraSpec::Task(kind.camera_config()));
        }
        return match usize::try_from(i).ok().filter(|&i| i < ncam) {
            Some(i) => Ok(CameraSpec::Model(i)),
            None => Err(PyValueError::new_err(format!("camera id {i} out of range: the model has {ncam} cameras"))),
        };
    }
    if let Ok(name) = c.extract::<String>() {
        return match model.visual.camera(&name) {
            Some(i) => Ok(CameraSpec::Model(i)),
            None => {
                let names: Vec<&str> = model.visual.cameras.iter().map(|c| c.name.as_str()).collect();
                Err(PyValueError::new_err(format!("no camera named '{name}' (the model's cameras: {names:?})")))
            }
        };
    }
    let d = c.cast::<PyDict>().map_err(|_| {
        PyValueError::new_err("camera must be None, a camera id, a camera name or a dict of free-camera settings")
    })?;
    let mut cfg = kind.camera_config();
    for (k, v) in d.iter() {
        let key: String = k.extract()?;
        match key.as_str() {
            "distance" => cfg.distance = Some(v.extract()?),
            "azimuth" => cfg.azimuth = Some(v.extract()?),
            "elevation" => cfg.elevation = Some(v.extract()?),
            "lookat" => {
                let l: Vec<f64> = v.extract()?;
                let l: [f64; 3] = l.try_into().map_err(|_| PyValueError::new_err("lookat needs 3 values (m)"))?;
                cfg.lookat = Some(l);
            }
            // gymnasium's configs name the body a tracking camera follows; its free camera ignores it.
            "trackbodyid" | "type" => {}
            k => {
                return Err(PyValueError::new_err(format!(
                    "unknown camera setting '{k}' (distance, lookat, azimuth, elevation)"
                )));
            }
        }
    }
    if let Some(dist) = cfg.distance.filter(|d| !(*d > 0.0 && d.is_finite())) {
        return Err(PyValueError::new_err(format!("camera distance must be > 0 m, got {dist}")));
    }
    Ok(CameraSpec::Task(cfg))
}

fn render_err(e: RenderError) -> PyErr {
    match e {
        RenderError::Gpu(g) => gpu_err(g),
        RenderError::Invalid(m) => PyValueError::new_err(m),
    }
}

/// The context the host-stepped environments render with (one per
/// process, on the adapter `device="gpu"` selects).
fn shared_context() -> PyResult<Arc<GpuContext>> {
    static CTX: OnceLock<Arc<GpuContext>> = OnceLock::new();
    if let Some(c) = CTX.get() {
        return Ok(c.clone());
    }
    let c = crate::batch::gpu_context("gpu")?;
    Ok(CTX.get_or_init(|| c).clone())
}

/// Rendering state of one VecEnv.
pub(crate) struct RenderSetup {
    pub width: usize,
    pub height: usize,
    spec: CameraSpec,
    camera: Option<Camera>,
    rgb: Option<Renderer>,
    depth: Option<Renderer>,
    qpos: Vec<f64>,
}

impl RenderSetup {
    pub fn new(width: usize, height: usize, spec: CameraSpec) -> PyResult<Self> {
        if width == 0 || height == 0 {
            return Err(PyValueError::new_err(format!("frame size must be ≥ 1 pixel each way, got {width}×{height}")));
        }
        Ok(Self { width, height, spec, camera: None, rgb: None, depth: None, qpos: vec![] })
    }

    /// Renders every world of `batch` (`gpu`: the same batch when it runs
    /// on the device) as (n, H, W, 3) uint8 (`rgb_array`) or (n, H, W)
    /// float32 metres (`depth_array`).
    pub fn render(
        &mut self,
        py: Python<'_>,
        kind: Kind,
        batch: &dyn Batch,
        gpu: Option<&GpuBatch>,
        mode: &str,
    ) -> PyResult<Py<PyAny>> {
        let model = batch.model().clone();
        let n = batch.nworld();
        let (nq, w, h) = (model.nq, self.width, self.height);
        let depth = match mode {
            "rgb_array" => false,
            "depth_array" => true,
            m => {
                return Err(PyValueError::new_err(format!(
                    "render mode '{m}' is not one of 'rgb_array', 'depth_array'"
                )));
            }
        };
        self.qpos.resize(n * nq, 0.0);
        batch.qpos(&mut self.qpos);
        if self.camera.is_none() {
            self.camera = Some(match &self.spec {
                CameraSpec::Model(i) => Camera::Model(*i),
                CameraSpec::Task(cfg) => {
                    // gymnasium places its camera at the first render, from the first environment's state.
                    let mut data = cenic::dynamics::Data::<f64>::new(&model);
                    data.q.copy_from_slice(&self.qpos[..nq]);
                    cenic::dynamics::kinematics(&model, &mut data);
                    let base = kind.default_camera(&model, &data);
                    Camera::Free(FreeCamera {
                        lookat: cfg.lookat.unwrap_or(base.lookat),
                        distance: cfg.distance.unwrap_or(base.distance),
                        azimuth: cfg.azimuth.unwrap_or(base.azimuth),
                        elevation: cfg.elevation.unwrap_or(base.elevation),
                    })
                }
            });
        }
        let camera = self.camera.expect("placed above");
        let slot = if depth { &mut self.depth } else { &mut self.rgb };
        if slot.is_none() {
            let ctx = match gpu {
                Some(g) => g.context().clone(),
                None => shared_context()?,
            };
            let outputs = if depth { Outputs::DEPTH } else { Outputs::RGB };
            let r = py.detach(|| Renderer::new(ctx, model.clone(), n, w, h, outputs, camera)).map_err(render_err)?;
            *slot = Some(r);
        }
        let r = slot.as_mut().expect("created above");
        let qpos = &self.qpos;
        let frames = py
            .detach(|| match gpu {
                Some(g) => r.render_gpu_batch(g).cloned(),
                None => r.render_qpos(qpos).cloned(),
            })
            .map_err(render_err)?;
        Ok(if depth {
            to_numpy(py, frames.depth, &[n, h, w]).into_any().unbind()
        } else {
            to_numpy(py, frames.rgb, &[n, h, w, 3]).into_any().unbind()
        })
    }
}

/// Writes the replay page of ``cenic view`` (one self-contained HTML file,
/// three.js inside, no network needed) of positions ``qpos``: (samples, nq)
/// for one world or (worlds, samples, nq) for several, at ``times``
/// (samples,) in seconds (increasing). Each world is one track, labelled
/// from ``labels`` (default ``"world w"``), side by side or, with
/// ``overlay=True``, in one scene (the worlds after the first translucent
/// and tinted). The page has play/pause, a time slider, speed and an orbit
/// camera; ``path#t=1.5`` opens it paused at 1.5 s.
#[pyfunction]
#[pyo3(signature = (model, times, qpos, path, labels=None, overlay=false, title=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_replay(
    model: &crate::model::Model,
    times: &Bound<'_, PyAny>,
    qpos: &Bound<'_, PyAny>,
    path: std::path::PathBuf,
    labels: Option<Vec<String>>,
    overlay: bool,
    title: Option<String>,
) -> PyResult<()> {
    use crate::ArrayIn;
    use cenic::view::{Layout, Track, replay_html};
    let m = &model.inner;
    let ta = ArrayIn::<f64>::new(times, "times")?;
    if ta.shape().len() != 1 {
        return Err(PyValueError::new_err(format!("times: expected shape (samples,), got {:?}", ta.shape())));
    }
    ta.check_finite(0)?;
    let ns = ta.shape()[0];
    let qa = ArrayIn::<f64>::new(qpos, "qpos")?;
    let nworld = match qa.expect_shape(&[&[ns, m.nq], &[qa.shape().first().copied().unwrap_or(0), ns, m.nq]])? {
        0 => 1,
        _ => qa.shape()[0],
    };
    qa.check_finite(m.nq)?;
    if let Some(l) = &labels
        && l.len() != nworld
    {
        return Err(PyValueError::new_err(format!("labels: {} names for {nworld} worlds", l.len())));
    }
    let mut tracks = Vec::with_capacity(nworld);
    for w in 0..nworld {
        let label = labels.as_ref().map_or_else(|| format!("world {w}"), |l| l[w].clone());
        let q = &qa.slice()[w * ns * m.nq..(w + 1) * ns * m.nq];
        tracks.push(Track::from_qpos(m, &label, ta.slice(), q).map_err(PyValueError::new_err)?);
    }
    let layout = if overlay { Layout::Overlay } else { Layout::SideBySide };
    let html = replay_html(m, &tracks, layout, title.as_deref().unwrap_or(&m.name)).map_err(PyValueError::new_err)?;
    std::fs::write(&path, html).map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("{}: {e}", path.display())))
}
