//! `cenic.Model`: an immutable model (MJCF or built-in scene).

use crate::{Np, model_err, to_numpy};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::Arc;

/// A simulation model: bodies, joints, geoms, actuators, sensors and
/// options, loaded from MJCF. Immutable; share one between batches.
///
/// Sizes: ``nq`` positions, ``nv`` velocities (free joints: nq = 7,
/// nv = 6; quaternions w, x, y, z), ``nu`` actuators, ``na``
/// activation states, ``nsensordata`` sensor values.
#[pyclass(module = "cenic", frozen)]
pub struct Model {
    pub inner: Arc<cenic::Model>,
}

#[pymethods]
impl Model {
    /// Loads an MJCF file (``<include>`` resolved relative to it).
    ///
    /// Raises ``ModelError`` naming the file, line and element for a
    /// missing file or malformed / unsupported MJCF.
    #[staticmethod]
    fn from_mjcf(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let m = py.detach(|| cenic::Model::from_mjcf_file(&path)).map_err(model_err)?;
        Ok(Self { inner: Arc::new(m) })
    }

    /// Loads MJCF from a string (no ``<include>`` of relative files).
    #[staticmethod]
    fn from_xml(xml: &str) -> PyResult<Self> {
        Ok(Self { inner: Arc::new(cenic::Model::from_mjcf_str(xml).map_err(model_err)?) })
    }

    /// A built-in scene: ``"cube_toss"`` (a 0.1 m, 0.37 kg cube tossed
    /// onto a table, keyframe ``"toss"``; the model ``cenic run`` uses
    /// when given no file).
    #[staticmethod]
    fn builtin(name: &str) -> PyResult<Self> {
        let m = match name {
            "cube_toss" => cenic::scenes::cube_toss(),
            _ => return Err(PyValueError::new_err(format!("unknown scene '{name}' (known: cube_toss)"))),
        };
        Ok(Self { inner: Arc::new(m) })
    }

    /// The text ``cenic info`` prints: sizes, options, bodies, geoms,
    /// actuators, tendons, equality constraints, contact pairs, sensors,
    /// keyframes and warnings.
    fn summary(&self) -> String {
        self.inner.summary()
    }

    /// The sizes as a dict: nq, nv, nu, na, nbody, njnt, ngeom, nsite,
    /// nsensordata, nkey (body counts include the world body 0).
    fn sizes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = &self.inner;
        let d = PyDict::new(py);
        for (k, v) in [
            ("nq", m.nq),
            ("nv", m.nv),
            ("nu", m.nu()),
            ("na", m.na),
            ("nbody", m.bodies.len()),
            ("njnt", m.joints.len()),
            ("ngeom", m.geoms.len()),
            ("nsite", m.sites.len()),
            ("nsensordata", m.nsensordata),
            ("nkey", m.keyframes.len()),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Model name.
    #[getter]
    fn name(&self) -> String {
        self.inner.name.clone()
    }
    /// Number of position coordinates.
    #[getter]
    fn nq(&self) -> usize {
        self.inner.nq
    }
    /// Number of velocity coordinates (degrees of freedom).
    #[getter]
    fn nv(&self) -> usize {
        self.inner.nv
    }
    /// Number of actuators (controls).
    #[getter]
    fn nu(&self) -> usize {
        self.inner.nu()
    }
    /// Number of actuator activation states.
    #[getter]
    fn na(&self) -> usize {
        self.inner.na
    }
    /// Number of bodies, the world body 0 included.
    #[getter]
    fn nbody(&self) -> usize {
        self.inner.bodies.len()
    }
    /// Number of sensor values.
    #[getter]
    fn nsensordata(&self) -> usize {
        self.inner.nsensordata
    }
    /// The model's time step (s): MJCF ``option timestep``.
    #[getter]
    fn timestep(&self) -> f64 {
        self.inner.options.timestep
    }
    /// Total mass (kg).
    #[getter]
    fn total_mass(&self) -> f64 {
        self.inner.total_mass()
    }
    /// Reference configuration (nq,): the state ``Batch.reset`` starts from.
    #[getter]
    fn qpos0<'py>(&self, py: Python<'py>) -> Np<'py, f64> {
        to_numpy(py, self.inner.qpos0.clone(), &[self.inner.nq])
    }
    /// Control range per actuator (nu, 2); ±inf where unlimited.
    #[getter]
    fn ctrl_range<'py>(&self, py: Python<'py>) -> Np<'py, f64> {
        let r: Vec<f64> = self
            .inner
            .actuators
            .iter()
            .flat_map(|a| a.ctrl_range.unwrap_or([f64::NEG_INFINITY, f64::INFINITY]))
            .collect();
        to_numpy(py, r, &[self.inner.nu(), 2])
    }
    /// Body names (index 0 is the world body).
    #[getter]
    fn body_names(&self) -> Vec<String> {
        self.inner.bodies.iter().map(|b| b.name.clone()).collect()
    }
    /// Joint names.
    #[getter]
    fn joint_names(&self) -> Vec<String> {
        self.inner.joints.iter().map(|j| j.name.clone()).collect()
    }
    /// Geom names.
    #[getter]
    fn geom_names(&self) -> Vec<String> {
        self.inner.geoms.iter().map(|g| g.name.clone()).collect()
    }
    /// Actuator names.
    #[getter]
    fn actuator_names(&self) -> Vec<String> {
        self.inner.actuators.iter().map(|a| a.name.clone()).collect()
    }
    /// Keyframe names.
    #[getter]
    fn keyframe_names(&self) -> Vec<String> {
        self.inner.keyframes.iter().map(|k| k.name.clone()).collect()
    }
    /// Loader warnings (accepted MJCF settings cenic does not use, …).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }

    fn __repr__(&self) -> String {
        let m = &self.inner;
        format!("Model('{}', nq={}, nv={}, nu={}, nbody={})", m.name, m.nq, m.nv, m.nu(), m.bodies.len())
    }
}
