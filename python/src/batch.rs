//! `cenic.Batch`: many worlds of one model behind cenic's `Batch` trait
//! (CPU f64 / f32 with rayon, or the wgpu GPU path).

use crate::model::Model;
use crate::{ArrayIn, CenicError, Np, batch_err, gpu_err, lock, to_numpy};
use cenic::batch::{CpuBatch, WorldParams, WorldStatus};
use cenic::gpu::{GpuBatch, GpuBatchOptions, GpuContext};
use cenic::integrator::{CenicParams, Mode};
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Arc, Mutex};

/// Any backend, movable across threads (the GIL is released while stepping).
pub(crate) type DynBatch = Box<dyn cenic::batch::Batch + Send>;

/// Where and in which precision worlds are simulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    CpuF64,
    CpuF32,
    Gpu,
}

impl Backend {
    /// From the Python arguments `device` ("cpu" | "gpu" | "gpu:N" |
    /// "gpu:NAME") and `precision` ("f64" | "f32" | None).
    pub fn parse(device: &str, precision: Option<&str>) -> PyResult<Self> {
        let device = if device.starts_with("gpu:") {
            cenic::gpu::AdapterRequest::parse(device).map_err(|e| PyValueError::new_err(e.to_string()))?;
            "gpu"
        } else {
            device
        };
        match (device, precision) {
            ("cpu", None | Some("f64")) => Ok(Backend::CpuF64),
            ("cpu", Some("f32")) => Ok(Backend::CpuF32),
            ("gpu", None | Some("f32")) => Ok(Backend::Gpu),
            ("gpu", Some("f64")) => {
                Err(PyValueError::new_err("precision='f64' is not available on the GPU (its kernels are f32)"))
            }
            ("cpu" | "gpu", Some(p)) => {
                Err(PyValueError::new_err(format!("precision must be 'f64' or 'f32', got '{p}'")))
            }
            (d, _) => Err(PyValueError::new_err(format!(
                "device must be 'cpu', 'gpu', 'gpu:N' (an adapter index) or 'gpu:NAME' (part of an adapter's name), got '{d}'"
            ))),
        }
    }

    pub fn device(self) -> &'static str {
        if self == Backend::Gpu { "gpu" } else { "cpu" }
    }

    pub fn precision(self) -> &'static str {
        if self == Backend::CpuF64 { "f64" } else { "f32" }
    }
}

/// Checks a positive finite number.
pub(crate) fn positive(name: &str, x: f64) -> PyResult<f64> {
    if x > 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(PyValueError::new_err(format!("{name} must be a positive finite number, got {x}")))
    }
}

/// Error-control settings from the Python keywords (CENIC's defaults where None).
pub(crate) fn cenic_params(
    accuracy: f64,
    max_step: Option<f64>,
    min_step: Option<f64>,
    velocity_time_scale: Option<f64>,
    accept_accuracy_misses: bool,
) -> PyResult<CenicParams> {
    let d = CenicParams::default();
    let p = CenicParams {
        accuracy: positive("accuracy", accuracy)?,
        max_step: max_step.map_or(Ok(d.max_step), |x| positive("max_step", x))?,
        min_step: min_step.map_or(Ok(d.min_step), |x| positive("min_step", x))?,
        velocity_time_scale: match velocity_time_scale {
            Some(t) if t >= 0.0 && t.is_finite() => t,
            Some(t) => return Err(PyValueError::new_err(format!("velocity_time_scale must be >= 0 s, got {t}"))),
            None => d.velocity_time_scale,
        },
        accept_accuracy_misses,
        ..d
    };
    if p.max_step < p.min_step {
        return Err(PyValueError::new_err(format!("max_step {} s is below min_step {} s", p.max_step, p.min_step)));
    }
    Ok(p)
}

/// The integrator mode from `accuracy=` | `dt=` (accuracy 1e-3 when neither).
pub(crate) fn mode(
    accuracy: Option<f64>,
    dt: Option<f64>,
    max_step: Option<f64>,
    min_step: Option<f64>,
    velocity_time_scale: Option<f64>,
    accept_accuracy_misses: bool,
) -> PyResult<Mode> {
    match (accuracy, dt) {
        (Some(_), Some(_)) => {
            Err(PyValueError::new_err("give accuracy= (error control) or dt= (fixed steps), not both"))
        }
        (None, Some(dt)) => Ok(Mode::Fixed { dt: positive("dt", dt)? }),
        (a, None) => Ok(Mode::ErrorControlled(cenic_params(
            a.unwrap_or(CenicParams::default().accuracy),
            max_step,
            min_step,
            velocity_time_scale,
            accept_accuracy_misses,
        )?)),
    }
}

/// The GPU context of `device` (`gpu`, `gpu:N`, `gpu:NAME`; see
/// `cenic::gpu::adapters`), or a `GpuError` saying why there is none.
pub(crate) fn gpu_context(device: &str) -> PyResult<Arc<GpuContext>> {
    GpuContext::for_device(device).map(Arc::new).map_err(gpu_err)
}

/// Per-world parameters as a dict of (n,) arrays (mass_scale, stiffness,
/// dissipation, mu_static, mu_dynamic).
pub(crate) fn params_dict<'py>(py: Python<'py>, params: &[WorldParams]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    // In the order of ParamFields::NAMES.
    let get: [fn(&WorldParams) -> f64; 5] = [
        |p| p.mass_scale,
        |p| p.materials.stiffness,
        |p| p.materials.dissipation,
        |p| p.materials.mu_static,
        |p| p.materials.mu_dynamic,
    ];
    for (name, f) in ParamFields::NAMES.into_iter().zip(get) {
        d.set_item(name, to_numpy(py, params.iter().map(f).collect(), &[params.len()]))?;
    }
    Ok(d)
}

/// Per-world parameter multipliers given to a `set_params` (mass_scale,
/// stiffness, dissipation, mu_static, mu_dynamic; None: kept), each
/// expanded to one value per listed world and checked.
pub(crate) struct ParamFields([Option<Vec<f64>>; 5]);

impl ParamFields {
    /// The parameters' names, in the order of the arrays.
    pub(crate) const NAMES: [&'static str; 5] = ["mass_scale", "stiffness", "dissipation", "mu_static", "mu_dynamic"];

    /// Reads the five keyword arguments for `n` listed worlds: a scalar or
    /// one value per world, finite and ≥ 0 (mass_scale > 0).
    pub(crate) fn read(n: usize, given: [Option<&Bound<'_, PyAny>>; 5]) -> PyResult<Self> {
        let mut out: [Option<Vec<f64>>; 5] = Default::default();
        for ((slot, x), name) in out.iter_mut().zip(given).zip(Self::NAMES) {
            let Some(x) = x else { continue };
            let a = ArrayIn::<f64>::new(x, name)?;
            let which = a.expect_shape(&[&[], &[n]])?;
            if let Some(bad) = a.slice().iter().find(|v| !(**v >= 0.0 && v.is_finite())) {
                return Err(PyValueError::new_err(format!("{name}: multipliers must be finite and >= 0, got {bad}")));
            }
            *slot = Some(if which == 0 { vec![a.slice()[0]; n] } else { a.slice().to_vec() });
        }
        if let Some(m) = &out[0]
            && let Some(bad) = m.iter().find(|v| **v <= 0.0)
        {
            return Err(PyValueError::new_err(format!("mass_scale must be positive, got {bad}")));
        }
        Ok(Self(out))
    }

    /// [`Self::read`] from keyword arguments (`**multipliers`); an unknown
    /// name is an error that lists the known ones.
    pub(crate) fn from_kwargs(n: usize, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut given: [Option<Bound<'_, PyAny>>; 5] = Default::default();
        for (k, v) in kwargs.into_iter().flat_map(|d| d.iter()) {
            let name: String = k.extract()?;
            let Some(i) = Self::NAMES.iter().position(|x| *x == name) else {
                return Err(PyTypeError::new_err(format!(
                    "set_params: unknown parameter '{name}' (known: {})",
                    Self::NAMES.join(", ")
                )));
            };
            given[i] = Some(v);
        }
        Self::read(n, given.each_ref().map(|x| x.as_ref()))
    }

    /// `p` with the given values of listed world `k`.
    pub(crate) fn apply(&self, mut p: WorldParams, k: usize) -> WorldParams {
        let slots = [
            &mut p.mass_scale,
            &mut p.materials.stiffness,
            &mut p.materials.dissipation,
            &mut p.materials.mu_static,
            &mut p.materials.mu_dynamic,
        ];
        for (slot, f) in slots.into_iter().zip(&self.0) {
            if let Some(v) = f {
                *slot = v[k];
            }
        }
        p
    }
}

/// World indices from None (all), an int, or a sequence / array of ints.
pub(crate) fn world_list(worlds: Option<&Bound<'_, PyAny>>, nworld: usize) -> PyResult<Vec<usize>> {
    let Some(w) = worlds else { return Ok((0..nworld).collect()) };
    let list: Vec<i64> = if let Ok(i) = w.extract::<i64>() {
        vec![i]
    } else {
        let a = ArrayIn::<i64>::new(w, "worlds")
            .map_err(|_| PyTypeError::new_err("worlds: expected None, an int or a sequence of ints"))?;
        if a.shape().len() != 1 {
            return Err(PyValueError::new_err(format!("worlds: expected a 1-D sequence, got shape {:?}", a.shape())));
        }
        a.slice().to_vec()
    };
    list.into_iter()
        .map(|i| {
            if i >= 0 && (i as usize) < nworld {
                Ok(i as usize)
            } else {
                Err(PyIndexError::new_err(format!("world index {i} out of range (num_worlds = {nworld})")))
            }
        })
        .collect()
}

/// Per-world rows of a (n, width) or (width,) input for the worlds `worlds`:
/// returns the row of each listed world (a (width,) input applies to all).
fn rows<'a>(a: &'a ArrayIn<'_, f64>, n: usize, width: usize) -> PyResult<impl Fn(usize) -> &'a [f64]> {
    let which = a.expect_shape(&[&[n, width], &[width]])?;
    a.check_finite(width)?;
    let s = a.slice();
    Ok(move |k: usize| if which == 0 { &s[k * width..(k + 1) * width] } else { s })
}

struct Inner {
    batch: DynBatch,
    /// Controls last set (nworld × nu): the Batch trait has no getter.
    ctrl: Vec<f64>,
    /// Parameters last set per world.
    params: Vec<WorldParams>,
}

/// A batch of ``num_worlds`` worlds of one model, each with its own
/// clock, step size, state, controls and physical parameters.
///
/// ``accuracy=A`` integrates with CENIC error control (local error below A,
/// in m and rad); ``dt=H`` with fixed Lagged-ICF steps of H seconds
/// (accuracy 1e-3 when neither is given); ``extrapolate=True`` makes the
/// error-controlled steps second order (``CenicParams::extrapolate``: CPU
/// only, the GPU refuses it). ``device="gpu"`` runs every world
/// on the GPU (f32 wgpu kernels; ``GpuError`` when no adapter exists or the
/// model uses a feature the GPU path lacks): ``"gpu"`` picks the adapter by
/// the environment (``LOCAL_RANK``, ``CUDA_VISIBLE_DEVICES``; see
/// :func:`cenic.adapters`), ``"gpu:N"`` visible GPU N, ``"gpu:NAME"`` the
/// first adapter whose name contains NAME; ``precision="f32"`` runs the
/// CPU path in single precision.
///
/// Arrays are world first: ``qpos`` (num_worlds, nq), ``qvel``
/// (num_worlds, nv), ``ctrl`` (num_worlds, nu), float64. A world whose
/// state becomes non-finite or whose solve fails is frozen and reported by
/// ``status()``; the others keep running.
#[pyclass(module = "cenic", frozen)]
pub struct Batch {
    inner: Mutex<Inner>,
    model: Arc<cenic::Model>,
    nworld: usize,
    backend: Backend,
    mode_text: String,
}

impl Batch {
    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, Inner>> {
        lock(&self.inner, "batch")
    }

    /// Sets q and/or v of `worlds` from per-world rows (the missing one kept).
    fn set_qv(
        &self,
        qpos: Option<&Bound<'_, PyAny>>,
        qvel: Option<&Bound<'_, PyAny>>,
        worlds: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let list = world_list(worlds, self.nworld)?;
        let (nq, nv, n) = (self.model.nq, self.model.nv, list.len());
        let qa = qpos.map(|q| ArrayIn::<f64>::new(q, "qpos")).transpose()?;
        let va = qvel.map(|v| ArrayIn::<f64>::new(v, "qvel")).transpose()?;
        let qrow = qa.as_ref().map(|a| rows(a, n, nq)).transpose()?;
        let vrow = va.as_ref().map(|a| rows(a, n, nv)).transpose()?;
        let mut g = self.lock()?;
        let (mut q_all, mut v_all) = (vec![0.0; self.nworld * nq], vec![0.0; self.nworld * nv]);
        g.batch.qpos(&mut q_all);
        g.batch.qvel(&mut v_all);
        for (k, &w) in list.iter().enumerate() {
            let q = qrow.as_ref().map_or(&q_all[w * nq..(w + 1) * nq], |f| f(k));
            let v = vrow.as_ref().map_or(&v_all[w * nv..(w + 1) * nv], |f| f(k));
            g.batch.set_state(w, q, v).map_err(batch_err)?;
        }
        Ok(())
    }
}

#[pymethods]
impl Batch {
    #[new]
    #[pyo3(signature = (model, num_worlds, *, accuracy=None, dt=None, device="cpu", precision=None,
                        max_step=None, min_step=None, velocity_time_scale=None,
                        accept_accuracy_misses=false, extrapolate=false, contact_capacity=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        model: &Model,
        num_worlds: usize,
        accuracy: Option<f64>,
        dt: Option<f64>,
        device: &str,
        precision: Option<&str>,
        max_step: Option<f64>,
        min_step: Option<f64>,
        velocity_time_scale: Option<f64>,
        accept_accuracy_misses: bool,
        extrapolate: bool,
        contact_capacity: Option<usize>,
    ) -> PyResult<Self> {
        if num_worlds == 0 {
            return Err(PyValueError::new_err("num_worlds must be at least 1"));
        }
        let backend = Backend::parse(device, precision)?;
        let mut mode = mode(accuracy, dt, max_step, min_step, velocity_time_scale, accept_accuracy_misses)?;
        if extrapolate {
            match &mut mode {
                Mode::ErrorControlled(p) => p.extrapolate = true,
                _ => return Err(PyValueError::new_err("extrapolate=True needs error control (accuracy=), not dt=")),
            }
        }
        let m = model.inner.clone();
        let batch = make_batch(py, &m, num_worlds, &mode, (backend, device), contact_capacity)?;
        let mode_text = match &mode {
            Mode::Fixed { dt } => format!("dt={dt}"),
            Mode::ErrorControlled(p) => format!("accuracy={}", p.accuracy),
            m => format!("integrator={}", m.name()),
        };
        Ok(Self {
            inner: Mutex::new(Inner {
                batch,
                ctrl: vec![0.0; num_worlds * m.nu()],
                params: vec![WorldParams::default(); num_worlds],
            }),
            nworld: num_worlds,
            model: m,
            backend,
            mode_text,
        })
    }

    /// The model.
    #[getter]
    fn model(&self) -> Model {
        Model { inner: self.model.clone() }
    }
    /// Number of worlds.
    #[getter]
    fn num_worlds(&self) -> usize {
        self.nworld
    }
    /// "cpu" or "gpu".
    #[getter]
    fn device(&self) -> &'static str {
        self.backend.device()
    }
    /// "f64" or "f32".
    #[getter]
    fn precision(&self) -> &'static str {
        self.backend.precision()
    }

    fn __len__(&self) -> usize {
        self.nworld
    }

    fn __repr__(&self) -> String {
        format!(
            "Batch(model='{}', num_worlds={}, {}, device='{}', precision='{}')",
            self.model.name,
            self.nworld,
            self.mode_text,
            self.device(),
            self.precision()
        )
    }

    /// Resets worlds: every world (``worlds=None``) or the listed ones, to
    /// the reference configuration ``qpos0`` at rest, or to ``keyframe``
    /// (name or index; its qpos, qvel, ctrl, act and time). Reset worlds
    /// get time 0 (or the keyframe's), zero controls, fresh statistics and
    /// status Ok (a failed world runs again); their parameters
    /// (``set_params``) stay.
    #[pyo3(signature = (worlds=None, keyframe=None))]
    fn reset(&self, worlds: Option<&Bound<'_, PyAny>>, keyframe: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let list = world_list(worlds, self.nworld)?;
        let key = match keyframe {
            None => None,
            Some(k) => Some(if let Ok(i) = k.extract::<usize>() {
                i.to_string()
            } else {
                k.extract::<String>().map_err(|_| PyTypeError::new_err("keyframe: expected a name or an index"))?
            }),
        };
        let kf = match &key {
            None => None,
            Some(k) => Some(self.model.keyframe(k).ok_or_else(|| {
                let names: Vec<&str> = self.model.keyframes.iter().map(|k| k.name.as_str()).collect();
                PyValueError::new_err(format!("no keyframe '{k}' (the model has {}: {:?})", names.len(), names))
            })?),
        };
        let nu = self.model.nu();
        let mut g = self.lock()?;
        let zeros = vec![0.0; self.model.nv];
        if worlds.is_none() && key.is_none() {
            g.batch.reset();
        }
        for &w in &list {
            match &key {
                Some(k) => g.batch.reset_to_keyframe(w, k).map_err(batch_err)?,
                None if worlds.is_some() => g.batch.reset_world(w, &self.model.qpos0, &zeros).map_err(batch_err)?,
                None => {}
            }
            let ctrl = &mut g.ctrl[w * nu..(w + 1) * nu];
            ctrl.fill(0.0);
            if let Some(k) = kf {
                for (c, x) in ctrl.iter_mut().zip(&k.ctrl) {
                    *c = *x;
                }
            }
        }
        Ok(())
    }

    /// Positions (num_worlds, nq): m for translations, rad for hinges,
    /// unit quaternions (w, x, y, z) for free and ball joints.
    #[getter]
    fn qpos<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        let mut out = vec![0.0; self.nworld * self.model.nq];
        self.lock()?.batch.qpos(&mut out);
        Ok(to_numpy(py, out, &[self.nworld, self.model.nq]))
    }

    /// Velocities (num_worlds, nv): m/s and rad/s (free joints: linear
    /// velocity of the body origin in the world frame, angular velocity in
    /// the body frame).
    #[getter]
    fn qvel<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        let mut out = vec![0.0; self.nworld * self.model.nv];
        self.lock()?.batch.qvel(&mut out);
        Ok(to_numpy(py, out, &[self.nworld, self.model.nv]))
    }

    /// The controls last set (num_worlds, nu): motor inputs or servo targets.
    #[getter]
    fn ctrl<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        let c = self.lock()?.ctrl.clone();
        Ok(to_numpy(py, c, &[self.nworld, self.model.nu()]))
    }

    /// Each world's simulation time (num_worlds,), s.
    #[getter]
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        let t = self.lock()?.batch.times();
        Ok(to_numpy(py, t, &[self.nworld]))
    }

    /// Sets positions and velocities of ``worlds`` (all when None):
    /// ``qpos`` (n, nq) and ``qvel`` (n, nv) for n listed worlds, or one
    /// row (nq,) / (nv,) for all of them. Quaternions are normalised. A set
    /// world has no last step (so do ``set_qpos`` and ``set_qvel``): its
    /// next step does not depend on what it did before, and until then the
    /// accelerometers, touch sensors and contact forces read zero.
    #[pyo3(signature = (qpos, qvel, worlds=None))]
    fn set_state(
        &self,
        qpos: &Bound<'_, PyAny>,
        qvel: &Bound<'_, PyAny>,
        worlds: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.set_qv(Some(qpos), Some(qvel), worlds)
    }

    /// Sets positions (n, nq) or (nq,) of ``worlds``; velocities are kept.
    #[pyo3(signature = (qpos, worlds=None))]
    fn set_qpos(&self, qpos: &Bound<'_, PyAny>, worlds: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_qv(Some(qpos), None, worlds)
    }

    /// Sets velocities (n, nv) or (nv,) of ``worlds``; positions are kept.
    #[pyo3(signature = (qvel, worlds=None))]
    fn set_qvel(&self, qvel: &Bound<'_, PyAny>, worlds: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_qv(None, Some(qvel), worlds)
    }

    /// Sets controls (n, nu) or (nu,) of ``worlds``, held constant over
    /// each ``advance``: motor inputs (before the gear) or servo target
    /// positions (rad or m). Non-finite values are refused.
    #[pyo3(signature = (ctrl, worlds=None))]
    fn set_ctrl(&self, ctrl: &Bound<'_, PyAny>, worlds: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let list = world_list(worlds, self.nworld)?;
        let nu = self.model.nu();
        let a = ArrayIn::<f64>::new(ctrl, "ctrl")?;
        let row = rows(&a, list.len(), nu)?;
        let mut g = self.lock()?;
        for (k, &w) in list.iter().enumerate() {
            g.ctrl[w * nu..(w + 1) * nu].copy_from_slice(row(k));
        }
        let Inner { batch, ctrl, .. } = &mut *g;
        if worlds.is_none() {
            batch.set_ctrl_all(ctrl).map_err(batch_err)
        } else {
            list.iter().try_for_each(|&w| batch.set_ctrl(w, &ctrl[w * nu..(w + 1) * nu]).map_err(batch_err))
        }
    }

    /// Sets servo target velocities (n, nu) or (nu,) of ``worlds`` (m/s or rad/s).
    #[pyo3(signature = (vref, worlds=None))]
    fn set_target_velocity(&self, vref: &Bound<'_, PyAny>, worlds: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let list = world_list(worlds, self.nworld)?;
        let a = ArrayIn::<f64>::new(vref, "vref")?;
        let row = rows(&a, list.len(), self.model.nu())?;
        let mut g = self.lock()?;
        list.iter().enumerate().try_for_each(|(k, &w)| g.batch.set_target_velocity(w, row(k)).map_err(batch_err))
    }

    /// Sets per-world physical parameters of ``worlds`` (all when None).
    /// Each is a dimensionless multiplier on the modelled value, a scalar
    /// or one value per listed world; parameters not given are kept:
    /// ``mass_scale`` (every body mass and inertia), ``stiffness``,
    /// ``dissipation``, ``mu_static``, ``mu_dynamic`` (every contact pair).
    #[pyo3(signature = (worlds=None, *, mass_scale=None, stiffness=None, dissipation=None, mu_static=None, mu_dynamic=None))]
    fn set_params(
        &self,
        worlds: Option<&Bound<'_, PyAny>>,
        mass_scale: Option<&Bound<'_, PyAny>>,
        stiffness: Option<&Bound<'_, PyAny>>,
        dissipation: Option<&Bound<'_, PyAny>>,
        mu_static: Option<&Bound<'_, PyAny>>,
        mu_dynamic: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let list = world_list(worlds, self.nworld)?;
        let fields = ParamFields::read(list.len(), [mass_scale, stiffness, dissipation, mu_static, mu_dynamic])?;
        let mut g = self.lock()?;
        for (k, &w) in list.iter().enumerate() {
            let p = fields.apply(g.params[w], k);
            g.batch.set_params(w, p).map_err(batch_err)?;
            g.params[w] = p;
        }
        Ok(())
    }

    /// The parameters of every world as a dict of (num_worlds,) arrays
    /// (mass_scale, stiffness, dissipation, mu_static, mu_dynamic).
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        params_dict(py, &self.lock()?.params)
    }

    /// Actuator activations (num_worlds, na).
    #[getter]
    fn act<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        let mut out = vec![0.0; self.nworld * self.model.na];
        self.lock()?.batch.act(&mut out).map_err(batch_err)?;
        Ok(to_numpy(py, out, &[self.nworld, self.model.na]))
    }

    /// Sets actuator activations (n, na) or (na,) of ``worlds``.
    #[pyo3(signature = (act, worlds=None))]
    fn set_act(&self, act: &Bound<'_, PyAny>, worlds: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let list = world_list(worlds, self.nworld)?;
        let a = ArrayIn::<f64>::new(act, "act")?;
        let row = rows(&a, list.len(), self.model.na)?;
        let mut g = self.lock()?;
        list.iter().enumerate().try_for_each(|(k, &w)| g.batch.set_act(w, row(k)).map_err(batch_err))
    }

    /// Sensor values (num_worlds, nsensordata) as of each world's last advance.
    #[getter]
    fn sensordata<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        let n = self.model.nsensordata;
        let mut out = vec![0.0; self.nworld * n];
        self.lock()?.batch.sensordata(&mut out).map_err(batch_err)?;
        Ok(to_numpy(py, out, &[self.nworld, n]))
    }

    /// Contact and joint-limit forces of each world's last step:
    /// ``(body_wrench, qfrc)`` with body_wrench (num_worlds, nbody, 6) the
    /// contact wrench on each body, [torque about the world origin (N·m),
    /// force (N)] in the world frame, and qfrc (num_worlds, nv) the
    /// generalized constraint force (N or N·m).
    fn constraint_forces<'py>(&self, py: Python<'py>) -> PyResult<(Np<'py, f64>, Np<'py, f64>)> {
        let (nb, nv) = (self.model.bodies.len(), self.model.nv);
        let (mut w, mut q) = (vec![0.0; self.nworld * nb * 6], vec![0.0; self.nworld * nv]);
        if !self.lock()?.batch.constraint_forces(&mut w, &mut q) {
            return Err(CenicError::new_err("constraint forces are not available from this backend"));
        }
        Ok((to_numpy(py, w, &[self.nworld, nb, 6]), to_numpy(py, q, &[self.nworld, nv])))
    }

    /// Advances every running world by ``dt`` seconds from its own time,
    /// controls held constant (releases the GIL). Worlds that fail are
    /// frozen and reported by ``status()``; this call raises only for a
    /// bad ``dt`` or a backend failure.
    fn advance(&self, py: Python<'_>, dt: f64) -> PyResult<()> {
        positive("dt", dt)?;
        py.detach(|| -> PyResult<()> { self.lock()?.batch.advance(dt).map_err(batch_err) })
    }

    /// Step statistics per world as a dict of (num_worlds,) arrays:
    /// accepted, rejected, newton_iterations, line_search_iterations,
    /// factorizations, accuracy_misses, impact_limited, event_limited,
    /// contact_overflow, extrapolated (int64) and min_h, max_h (s; inf / 0
    /// before the first step).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s: Vec<_> = {
            let g = self.lock()?;
            (0..self.nworld).map(|w| g.batch.stats(w)).collect()
        };
        type Count = fn(&cenic::integrator::WorldStats) -> u64;
        let counts: [(&str, Count); 10] = [
            ("accepted", |s| s.accepted),
            ("rejected", |s| s.rejected),
            ("newton_iterations", |s| s.newton_iterations),
            ("line_search_iterations", |s| s.line_search_iterations),
            ("factorizations", |s| s.factorizations),
            ("accuracy_misses", |s| s.accuracy_misses),
            ("impact_limited", |s| s.impact_limited),
            ("event_limited", |s| s.event_limited),
            ("contact_overflow", |s| s.contact_overflow),
            ("extrapolated", |s| s.extrapolated),
        ];
        let d = PyDict::new(py);
        for (name, f) in counts {
            d.set_item(name, to_numpy(py, s.iter().map(|x| f(x) as i64).collect(), &[self.nworld]))?;
        }
        d.set_item("min_h", to_numpy(py, s.iter().map(|x| x.min_h).collect(), &[self.nworld]))?;
        d.set_item("max_h", to_numpy(py, s.iter().map(|x| x.max_h).collect(), &[self.nworld]))?;
        Ok(d)
    }

    /// Status per world: a list with None for a running world and
    /// ``(time, reason)`` for a failed (frozen) one.
    fn status(&self) -> PyResult<Vec<Option<(f64, String)>>> {
        let g = self.lock()?;
        Ok((0..self.nworld)
            .map(|w| match g.batch.status(w) {
                WorldStatus::Ok => None,
                WorldStatus::Failed { time, reason } => Some((time, reason)),
            })
            .collect())
    }

    /// True for each running world, False for failed ones (num_worlds,).
    #[getter]
    fn ok<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, bool>> {
        let g = self.lock()?;
        let ok = (0..self.nworld).map(|w| g.batch.status(w) == WorldStatus::Ok).collect();
        Ok(to_numpy(py, ok, &[self.nworld]))
    }
}

/// Builds a batch on `backend` (the GPU context of `device` is created here).
pub(crate) fn make_batch(
    py: Python<'_>,
    model: &Arc<cenic::Model>,
    n: usize,
    mode: &Mode,
    (backend, device): (Backend, &str),
    contact_capacity: Option<usize>,
) -> PyResult<DynBatch> {
    if backend != Backend::Gpu {
        let need = if backend == Backend::CpuF64 {
            CpuBatch::<f64>::memory_per_world(model)
        } else {
            CpuBatch::<f32>::memory_per_world(model)
        } as f64
            * n as f64;
        if need > 64e9 {
            return Err(PyValueError::new_err(format!(
                "num_worlds = {n} would need about {:.0} GB of memory",
                need / 1e9
            )));
        }
    }
    let mut b: DynBatch = match backend {
        Backend::CpuF64 => {
            let mut b = CpuBatch::<f64>::new(model.clone(), n, mode.clone());
            if let Some(c) = contact_capacity {
                b.set_contact_capacity(c);
            }
            Box::new(b)
        }
        Backend::CpuF32 => {
            let mut b = CpuBatch::<f32>::new(model.clone(), n, mode.clone());
            if let Some(c) = contact_capacity {
                b.set_contact_capacity(c);
            }
            Box::new(b)
        }
        Backend::Gpu => Box::new(make_gpu_batch(py, device, model, n, mode, contact_capacity)?),
    };
    b.reset();
    Ok(b)
}

/// A GPU batch on the adapter of `device` (GIL released while the kernels compile).
pub(crate) fn make_gpu_batch(
    py: Python<'_>,
    device: &str,
    model: &Arc<cenic::Model>,
    n: usize,
    mode: &Mode,
    contact_capacity: Option<usize>,
) -> PyResult<GpuBatch> {
    py.detach(|| {
        let ctx = gpu_context(device)?;
        let options = GpuBatchOptions { contact_capacity, ..Default::default() };
        GpuBatch::with_options(ctx, model.clone(), n, mode.clone(), options).map_err(gpu_err)
    })
}
