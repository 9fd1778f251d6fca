//! System identification from Python: `cenic sysid` itself
//! ([`sysid_cli`]), and the per-segment gradients of a fit's shard
//! ([`SysidShard`]) that `cenic.ray.RayGradients` runs in Ray actors.

use crate::{ArrayIn, CenicError, Np, lock, to_numpy};
use cenic::sysid::{GradientSource, Segment, SegmentGradients, Shard, ShardSpec, SysidError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Mutex;

fn sysid_err(e: SysidError) -> PyErr {
    match e {
        SysidError::Input(_) => PyValueError::new_err(e.to_string()),
        _ => CenicError::new_err(e.to_string()),
    }
}

/// Segments from an (m, 3) integer array of (toss, start, samples).
fn segments_in(segments: &Bound<'_, PyAny>) -> PyResult<Vec<Segment>> {
    let a = ArrayIn::<i64>::new(segments, "segments")?;
    let shape = a.shape();
    if shape.len() != 2 || shape[1] != 3 {
        return Err(PyValueError::new_err(format!("segments: expected shape (m, 3), got {shape:?}")));
    }
    a.slice()
        .chunks(3)
        .enumerate()
        .map(|(i, r)| {
            if r.iter().any(|&x| x < 0) {
                return Err(PyValueError::new_err(format!("segments: row {i} has a negative entry {r:?}")));
            }
            Ok(Segment { toss: r[0] as usize, start: r[1] as usize, samples: r[2] as usize })
        })
        .collect()
}

/// One shard of a distributed system-identification fit: built from the
/// JSON description the fit writes (``ShardSpec``), it returns the
/// per-segment losses and gradients of any of the training segments.
#[pyclass(module = "cenic._cenic", frozen)]
pub struct SysidShard {
    inner: Mutex<Shard>,
    coordinates: usize,
}

#[pymethods]
impl SysidShard {
    #[new]
    fn new(py: Python<'_>, spec: &str) -> PyResult<Self> {
        let shard = py.detach(|| ShardSpec::from_json(spec).and_then(|s| Shard::new(&s))).map_err(sysid_err)?;
        Ok(Self { coordinates: shard.coordinates(), inner: Mutex::new(shard) })
    }

    /// Number of fit coordinates.
    #[getter]
    fn coordinates(&self) -> usize {
        self.coordinates
    }

    /// ``(loss (m,), gradient (m, coordinates), solves (m,) int64,
    /// failures [(row, message)])`` of the segments (m, 3) (toss, start,
    /// samples) at fit coordinates ``phi``. Releases the GIL.
    #[allow(clippy::type_complexity)]
    fn gradients<'py>(
        &self,
        py: Python<'py>,
        phi: &Bound<'py, PyAny>,
        segments: &Bound<'py, PyAny>,
    ) -> PyResult<(Np<'py, f64>, Np<'py, f64>, Np<'py, i64>, Vec<(usize, String)>)> {
        let phi = ArrayIn::<f64>::new(phi, "phi")?;
        phi.expect_shape(&[&[self.coordinates]])?;
        let phi = phi.slice().to_vec();
        let segs = segments_in(segments)?;
        let g = py.detach(|| -> PyResult<SegmentGradients> {
            lock(&self.inner, "shard")?.gradients(&phi, &segs).map_err(sysid_err)
        })?;
        let m = segs.len();
        Ok((
            to_numpy(py, g.loss, &[m]),
            to_numpy(py, g.gradient, &[m, self.coordinates]),
            to_numpy(py, g.solves.into_iter().map(|s| s as i64).collect(), &[m]),
            g.failures,
        ))
    }
}

/// What a Python gradient source returns: per-segment losses, gradients
/// and solve counts (arrays), and the failed segments (index, message).
type SourceOutput<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>, Vec<(usize, String)>);

/// A gradient source in Python: a callable ``(phi, segments) -> (loss,
/// gradient, solves, failures)`` with :meth:`SysidShard.gradients`'
/// signature (e.g. ``cenic.ray.RayGradients``).
struct PyGradients {
    source: Py<PyAny>,
    coordinates: usize,
}

impl GradientSource for PyGradients {
    fn gradients(&mut self, phi: &[f64], segments: &[Segment]) -> Result<SegmentGradients, SysidError> {
        Python::attach(|py| -> PyResult<SegmentGradients> {
            let phi = to_numpy(py, phi.to_vec(), &[phi.len()]);
            let rows: Vec<i64> =
                segments.iter().flat_map(|s| [s.toss as i64, s.start as i64, s.samples as i64]).collect();
            let segs = to_numpy(py, rows, &[segments.len(), 3]);
            let out = self.source.bind(py).call1((phi, segs))?;
            let (loss, grad, solves, failures): SourceOutput = out.extract()?;
            let m = segments.len();
            let loss = ArrayIn::<f64>::new(&loss, "loss")?;
            loss.expect_shape(&[&[m]])?;
            let grad = ArrayIn::<f64>::new(&grad, "gradient")?;
            grad.expect_shape(&[&[m, self.coordinates]])?;
            let solves = ArrayIn::<i64>::new(&solves, "solves")?;
            solves.expect_shape(&[&[m]])?;
            Ok(SegmentGradients {
                loss: loss.slice().to_vec(),
                gradient: grad.slice().to_vec(),
                solves: solves.slice().iter().map(|&s| s.max(0) as usize).collect(),
                failures,
            })
        })
        .map_err(|e| SysidError::Input(format!("gradient source: {e}")))
    }
}

/// Runs ``cenic sysid ARGV`` (e.g. ``["fit", "--data", d, "--out", o]``)
/// in this process, printing what the command prints. ``ray``: for
/// ``fit --ray ADDRESS``, a callable ``(address, workers, spec_json) ->
/// source`` building the gradient source (see ``cenic.ray``). Errors
/// (bad flags included) raise ``CenicError`` with the command's message.
#[pyfunction]
#[pyo3(signature = (argv, ray=None))]
pub fn sysid_cli(py: Python<'_>, argv: Vec<String>, ray: Option<Py<PyAny>>) -> PyResult<()> {
    let mut failure: Option<PyErr> = None;
    let result = py.detach(|| {
        let mut make = |address: &str, workers: usize, spec: &str| -> Result<Box<dyn GradientSource + Send>, String> {
            let Some(factory) = &ray else { return Err("no Ray gradient source was given".into()) };
            let coordinates = ShardSpec::from_json(spec).map_err(|e| e.to_string())?.fit.len();
            Python::attach(|py| match factory.bind(py).call1((address, workers, spec)) {
                Ok(source) => Ok(Box::new(PyGradients { source: source.unbind(), coordinates }) as _),
                Err(e) => {
                    let text = e.to_string();
                    failure = Some(e);
                    Err(text)
                }
            })
        };
        match &ray {
            Some(_) => cenic::sysid::cli::run_args(&argv, Some(&mut make)),
            None => cenic::sysid::cli::run_args(&argv, None),
        }
    });
    match (result, failure) {
        (Ok(()), _) => Ok(()),
        // A Python exception from the source's construction keeps its type.
        (Err(_), Some(e)) => Err(e),
        (Err(e), None) => Err(CenicError::new_err(e)),
    }
}
