//! `cenic._cenic`: the native half of the `cenic` Python package (pyo3 +
//! numpy). The pure-Python half (`python/cenic/`) adds the gymnasium
//! classes on top of [`env::VecEnv`].
//!
//! Conventions: every array crosses as a NumPy array, world first, C order.
//! Outputs are Rust vectors handed to NumPy without a copy; inputs are read
//! in place when they are C-contiguous `float64` (`float32` for actions)
//! and converted once otherwise. Long calls (advance, step, rollouts)
//! release the GIL. Rust errors become Python exceptions carrying the Rust
//! message; nothing panics across the boundary (pyo3 turns a panic into
//! `PanicException` should one happen).

use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{AllowTypeChange, IntoPyArray, PyArrayDyn, PyArrayLikeDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::sync::{Mutex, MutexGuard};

mod batch;
mod diff;
mod env;
mod model;
mod mpc;
mod render;
mod sysid;

pyo3::create_exception!(cenic, CenicError, pyo3::exceptions::PyException, "Base class of cenic's errors.");
pyo3::create_exception!(
    cenic,
    ModelError,
    CenicError,
    "A model that cannot be loaded: missing file, malformed or unsupported MJCF (the message names the file, line and element)."
);
pyo3::create_exception!(
    cenic,
    SimulationError,
    CenicError,
    "A simulation that could not be carried out (a failed forward rollout, a backend failure)."
);
pyo3::create_exception!(
    cenic,
    GpuError,
    CenicError,
    "No usable GPU adapter, or a model feature the GPU path does not simulate."
);

/// Converts a Rust error into the matching Python exception.
pub(crate) fn model_err(e: cenic::ModelError) -> PyErr {
    ModelError::new_err(e.to_string())
}

pub(crate) fn batch_err(e: cenic::batch::BatchError) -> PyErr {
    use cenic::batch::BatchError as E;
    match e {
        E::World { .. } => PyIndexError::new_err(e.to_string()),
        E::Length { .. } | E::Keyframe(_) => PyValueError::new_err(e.to_string()),
        E::Backend(_) => SimulationError::new_err(e.to_string()),
    }
}

pub(crate) fn gpu_err(e: cenic::gpu::GpuError) -> PyErr {
    GpuError::new_err(e.to_string())
}

/// Locks a wrapped Rust object; a lock poisoned by a panic makes the object unusable.
pub(crate) fn lock<'a, T>(m: &'a Mutex<T>, what: &str) -> PyResult<MutexGuard<'a, T>> {
    m.lock().map_err(|_| CenicError::new_err(format!("this {what} is unusable after an internal error")))
}

/// A numeric input array, read in place when possible.
pub(crate) struct ArrayIn<'py, T: numpy::Element> {
    array: PyArrayLikeDyn<'py, T, AllowTypeChange>,
    owned: Option<Vec<T>>,
    what: String,
}

impl<'py, T> ArrayIn<'py, T>
where
    T: numpy::Element + Copy + for<'a> FromPyObject<'a, 'py> + 'py,
{
    /// Reads `obj` (anything `numpy.asarray` accepts) as an array of `T`; `what` names it in errors.
    pub fn new(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Self> {
        let array: PyArrayLikeDyn<'py, T, AllowTypeChange> =
            obj.extract().map_err(|e| PyTypeError::new_err(format!("{what}: expected an array of numbers ({e})")))?;
        // In place only when C-contiguous (`as_slice` also accepts Fortran order).
        let owned = if array.is_c_contiguous() { None } else { Some(array.as_array().iter().copied().collect()) };
        Ok(Self { array, owned, what: what.to_string() })
    }

    pub fn shape(&self) -> Vec<usize> {
        self.array.shape().to_vec()
    }

    pub fn slice(&self) -> &[T] {
        match &self.owned {
            Some(v) => v,
            None => self.array.as_slice().expect("checked contiguous"),
        }
    }

    /// Errors unless the shape is one of `allowed` (lists of dimensions);
    /// returns the index of the matching one.
    pub fn expect_shape(&self, allowed: &[&[usize]]) -> PyResult<usize> {
        let shape = self.shape();
        if let Some(i) = allowed.iter().position(|s| *s == shape.as_slice()) {
            return Ok(i);
        }
        let list: Vec<String> = allowed.iter().map(|s| format!("{s:?}")).collect();
        Err(PyValueError::new_err(format!("{}: expected shape {}, got {:?}", self.what, list.join(" or "), shape)))
    }
}

impl<'py> ArrayIn<'py, f64> {
    /// Errors naming the first non-finite entry (row-major index, and row when `row` > 0 values per row).
    pub fn check_finite(&self, row: usize) -> PyResult<()> {
        if let Some(i) = self.slice().iter().position(|x| !x.is_finite()) {
            let at = match i.checked_div(row) {
                Some(r) => format!("row {r}, column {}", i % row),
                None => format!("entry {i}"),
            };
            return Err(PyValueError::new_err(format!("{}: {at} is {} (must be finite)", self.what, self.slice()[i])));
        }
        Ok(())
    }
}

/// A NumPy array of element type `T` bound to the GIL lifetime.
pub(crate) type Np<'py, T> = Bound<'py, PyArrayDyn<T>>;

/// A NumPy array of `shape` that takes ownership of `data` (no copy).
pub(crate) fn to_numpy<'py, T: numpy::Element>(py: Python<'py>, data: Vec<T>, shape: &[usize]) -> Np<'py, T> {
    ArrayD::from_shape_vec(IxDyn(shape), data).expect("shape matches the data").into_pyarray(py)
}

/// Native part of the cenic package.
#[pymodule]
fn _cenic(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CenicError", py.get_type::<CenicError>())?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    m.add("GpuError", py.get_type::<GpuError>())?;
    m.add_class::<model::Model>()?;
    m.add_class::<batch::Batch>()?;
    m.add_class::<env::VecEnv>()?;
    m.add_class::<diff::Rollout>()?;
    m.add_class::<mpc::MpcTask>()?;
    m.add_class::<mpc::Planner>()?;
    m.add_class::<mpc::MpcCost>()?;
    m.add_class::<sysid::SysidShard>()?;
    m.add_function(wrap_pyfunction!(sysid::sysid_cli, m)?)?;
    m.add_function(wrap_pyfunction!(mpc::mpc_task_names, m)?)?;
    m.add_function(wrap_pyfunction!(diff::rollout_jacobians, m)?)?;
    m.add_function(wrap_pyfunction!(env::task_names, m)?)?;
    m.add_function(wrap_pyfunction!(render::write_replay, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_available, m)?)?;
    m.add_function(wrap_pyfunction!(adapters, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// The GPU adapter ``device`` (``"gpu"``, ``"gpu:N"``, ``"gpu:NAME"``)
/// selects in this process, described in one line, or None when there is none.
#[pyfunction]
#[pyo3(signature = (device="gpu"))]
fn gpu_available(py: Python<'_>, device: &str) -> Option<String> {
    py.detach(|| cenic::gpu::GpuContext::for_device(device).ok().map(|c| c.describe()))
}

/// This machine's GPU adapters in cenic's order, as a list of dicts:
/// ``name``, ``device_type``, ``backend``, ``pci_bus_id``, ``driver``,
/// ``device`` (the ``"gpu:N"`` that names it in this process, after
/// ``CUDA_VISIBLE_DEVICES``; None when only its name reaches it) and
/// ``selected`` (whether ``device`` selects it here, under ``LOCAL_RANK``,
/// ``CUDA_VISIBLE_DEVICES`` and ``WGPU_ADAPTER_NAME``). The rule is that of
/// ``cenic info --adapters`` (Rust docs: ``cenic::gpu::adapters``).
#[pyfunction]
#[pyo3(signature = (device="gpu"))]
fn adapters<'py>(py: Python<'py>, device: &str) -> PyResult<Vec<Bound<'py, pyo3::types::PyDict>>> {
    let options = cenic::gpu::GpuOptions::for_device(device).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let (list, chosen, visible) = py
        .detach(|| -> Result<_, cenic::gpu::GpuError> {
            let (list, chosen) = cenic::gpu::list_adapters(&options)?;
            let visible = options.selection.visible(&list)?;
            Ok((list, chosen.ok(), visible))
        })
        .map_err(gpu_err)?;
    list.iter()
        .enumerate()
        .map(|(i, a)| {
            let d = pyo3::types::PyDict::new(py);
            d.set_item("name", &a.name)?;
            d.set_item("device_type", format!("{:?}", a.device_type))?;
            d.set_item("backend", format!("{:?}", a.backend))?;
            d.set_item("pci_bus_id", &a.pci_bus_id)?;
            d.set_item("driver", &a.driver)?;
            d.set_item("device", visible.iter().position(|&v| v == i).map(|k| format!("gpu:{k}")))?;
            d.set_item("selected", chosen == Some(i))?;
            Ok(d)
        })
        .collect()
}
