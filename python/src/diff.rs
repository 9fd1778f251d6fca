//! Gradients: `cenic.rollout_jacobians` (a recorded rollout of
//! `cenic::diff::DiffRollout`: vector–Jacobian products by the reverse
//! pass, the interval Jacobians formed on demand); with `jacobians=False`
//! the same map alone (`cenic.simulate`, for finite differences).

use crate::batch::{mode, positive};
use crate::model::Model;
use crate::{ArrayIn, Np, SimulationError, lock, to_numpy};
use cenic::diff::{
    Cfd, ControlKind, Cotangents, DiffError, DiffRollout, FrictionLoad, GradientSpread, Linearization, Param,
    Recording, VjpStats,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;
use std::sync::{Arc, Mutex};
use std::time::Instant;

fn diff_err(e: DiffError) -> PyErr {
    match e {
        DiffError::Input(m) => PyValueError::new_err(m),
        e => SimulationError::new_err(e.to_string()),
    }
}

/// A parameter from its Python name (see `rollout_jacobians`).
fn parse_param(model: &cenic::Model, name: &str) -> PyResult<Param> {
    let p = match name {
        "mass_scale" | "mass" => Param::MassScale,
        "stiffness" => Param::Stiffness,
        "dissipation" => Param::Dissipation,
        "mu_static" => Param::MuStatic,
        "mu_dynamic" => Param::MuDynamic,
        "friction" => Param::Friction,
        _ => {
            let Some(geom) = name.strip_prefix("geom_size:") else {
                return Err(PyValueError::new_err(format!(
                    "unknown parameter '{name}' (known: mass_scale, stiffness, dissipation, mu_static, mu_dynamic, friction, geom_size:<geom name or index>)"
                )));
            };
            let g =
                geom.parse::<usize>().ok().or_else(|| model.geom_id(geom)).ok_or_else(|| {
                    PyValueError::new_err(format!("parameter '{name}': the model has no geom '{geom}'"))
                })?;
            Param::GeomSize(g)
        }
    };
    p.validate(model).map_err(diff_err)?;
    Ok(p)
}

/// The forward runs behind a `Rollout`.
enum Runs {
    /// `jacobians=False`: each world's trajectory alone.
    Simulated(Vec<Vec<f64>>),
    /// Each world's forward run with its solve tape, for the reverse pass
    /// and, when asked, the interval Jacobians.
    Recorded(Vec<Recording>),
}

/// The interval Jacobians, formed on first use.
#[derive(Default)]
struct Dense {
    worlds: Option<Arc<Vec<Linearization>>>,
}

/// A differentiable rollout: the trajectory, vector–Jacobian products by
/// the reverse pass, and the interval Jacobians on demand.
///
/// Shapes (a leading ``nworld`` axis when ``x0`` was 2-D):
/// ``trajectory`` (nsteps + 1, nx) with nx = nq + nv, x_0 first;
/// ``d_x`` (nsteps, nx, nx) = ∂x_{k+1}/∂x_k; ``d_u`` (nsteps, nx, nc) =
/// ∂x_{k+1}/∂u_k; ``d_theta`` (nsteps, nx, nθ) = ∂x_{k+1}/∂θ. Each
/// attribute access returns a new float64 array (the per-world blocks are
/// gathered into it: bind it once).
///
/// Laziness: the rollout keeps each world's inputs, trajectory and solve
/// tape (per recorded ICF solve: step size, skin, q0, v0, v1 and the
/// contact keys, a few hundred bytes per accepted CENIC step, which
/// records two solves: ``tape_bytes``), not the Jacobians. ``vjp`` runs
/// the reverse pass over that tape and never forms a Jacobian block. The
/// first access to ``d_x``, ``d_u`` or ``d_theta`` forms all three from
/// the tape (no new simulation; the tape is kept too) and keeps them,
/// nsteps · nx · (nx + nc + nθ) float64 per world; ``dense_built`` says
/// whether that has happened.
#[pyclass(module = "cenic", frozen)]
pub struct Rollout {
    runs: Runs,
    dense: Mutex<Dense>,
    /// Wall time of the latest `vjp` (s).
    vjp_seconds: Mutex<f64>,
    /// Phantom pairs of contacts from distance in the latest `vjp`.
    vjp_phantom_pairs: Mutex<usize>,
    batched: bool,
    nsteps: usize,
    nx: usize,
    nc: usize,
    np: usize,
}

impl Rollout {
    /// ``g``, the loss's cotangent of the trajectory ((…, nsteps + 1, nx)),
    /// checked for shape and finiteness.
    fn trajectory_cotangent<'py>(&self, g: &Bound<'py, PyAny>) -> PyResult<ArrayIn<'py, f64>> {
        let ga = ArrayIn::<f64>::new(g, "g")?;
        ga.expect_shape(&[&self.shape(&[self.nsteps + 1, self.nx])])?;
        ga.check_finite(self.nx)?;
        Ok(ga)
    }

    fn recordings(&self) -> PyResult<&[Recording]> {
        match &self.runs {
            Runs::Recorded(r) => Ok(r),
            Runs::Simulated(_) => Err(PyValueError::new_err("this rollout was run with jacobians=False")),
        }
    }

    fn nworld(&self) -> usize {
        match &self.runs {
            Runs::Recorded(r) => r.len(),
            Runs::Simulated(t) => t.len(),
        }
    }

    /// The interval Jacobians, formed from the tapes on first use (without
    /// the GIL; the lock is taken there too, so a second thread waits
    /// without holding the GIL).
    fn dense(&self, py: Python<'_>) -> PyResult<Arc<Vec<Linearization>>> {
        let recs = self.recordings()?;
        py.detach(|| {
            let mut d = lock(&self.dense, "rollout")?;
            if let Some(w) = &d.worlds {
                return Ok(w.clone());
            }
            let w = Arc::new(DiffRollout::linearize_recordings(recs).map_err(diff_err)?);
            d.worlds = Some(w.clone());
            Ok(w)
        })
    }

    fn dense_if_built(&self) -> PyResult<Option<Arc<Vec<Linearization>>>> {
        Ok(lock(&self.dense, "rollout")?.worlds.clone())
    }

    fn shape(&self, tail: &[usize]) -> Vec<usize> {
        if self.batched { std::iter::once(self.nworld()).chain(tail.iter().copied()).collect() } else { tail.to_vec() }
    }

    fn gather<'py>(
        &self,
        py: Python<'py>,
        f: impl Fn(&Linearization) -> &[f64],
        tail: &[usize],
    ) -> PyResult<Np<'py, f64>> {
        let w = self.dense(py)?;
        let data: Vec<f64> = w.iter().flat_map(|l| f(l).iter().copied()).collect();
        Ok(to_numpy(py, data, &self.shape(tail)))
    }
}

#[pymethods]
impl Rollout {
    /// States x_0 … x_nsteps, (…, nsteps + 1, nq + nv).
    #[getter]
    fn trajectory<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        let data: Vec<f64> = match &self.runs {
            Runs::Recorded(r) => r.iter().flat_map(|r| r.trajectory().iter().copied()).collect(),
            Runs::Simulated(t) => t.concat(),
        };
        Ok(to_numpy(py, data, &self.shape(&[self.nsteps + 1, self.nx])))
    }
    /// ∂x_{k+1}/∂x_k per interval, (…, nsteps, nx, nx); forms the
    /// Jacobians on first access (see the class docs).
    #[getter]
    fn d_x<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        self.gather(py, |l| &l.d_x, &[self.nsteps, self.nx, self.nx])
    }
    /// ∂x_{k+1}/∂u_k per interval, (…, nsteps, nx, nc); forms the
    /// Jacobians on first access.
    #[getter]
    fn d_u<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        self.gather(py, |l| &l.d_u, &[self.nsteps, self.nx, self.nc])
    }
    /// ∂x_{k+1}/∂θ per interval, (…, nsteps, nx, nθ); forms the
    /// Jacobians on first access.
    #[getter]
    fn d_theta<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        self.gather(py, |l| &l.d_theta, &[self.nsteps, self.nx, self.np])
    }
    /// Number of control intervals.
    #[getter]
    fn nsteps(&self) -> usize {
        self.nsteps
    }
    /// Whether the interval Jacobians (``d_x``, ``d_u``, ``d_theta``) have
    /// been formed; ``vjp`` never forms them.
    #[getter]
    fn dense_built(&self) -> PyResult<bool> {
        Ok(self.dense_if_built()?.is_some())
    }
    /// Bytes the solve tapes keep for the reverse pass, summed over worlds
    /// (0 with ``jacobians=False``); the trajectory, the inputs and formed
    /// Jacobians are not counted.
    #[getter]
    fn tape_bytes(&self) -> usize {
        match &self.runs {
            Runs::Recorded(r) => r.iter().map(Recording::tape_bytes).sum(),
            Runs::Simulated(_) => 0,
        }
    }

    /// Vector–Jacobian product: given ``g`` = ∂L/∂trajectory (the
    /// trajectory's shape), returns ``(∂L/∂x0, ∂L/∂controls, ∂L/∂params)``
    /// shaped like the inputs (…, nx), (…, nsteps, nc), (…, nθ), by the
    /// reverse pass over the recorded solves (worlds in parallel, without
    /// the GIL). It forms no Jacobian block (``dense_built`` stays False)
    /// and equals the product with ``d_x``, ``d_u``, ``d_theta`` up to
    /// rounding (1e-10 relative in the tests).
    fn vjp<'py>(&self, py: Python<'py>, g: &Bound<'py, PyAny>) -> PyResult<(Np<'py, f64>, Np<'py, f64>, Np<'py, f64>)> {
        let recs = self.recordings()?;
        let ga = self.trajectory_cotangent(g)?;
        let per = (self.nsteps + 1) * self.nx;
        let gs = ga.slice();
        let t0 = Instant::now();
        let parts = py
            .detach(|| {
                recs.par_iter()
                    .enumerate()
                    .map(|(w, r)| r.vjp_with_stats(&gs[w * per..(w + 1) * per]))
                    .collect::<Result<Vec<(Cotangents, VjpStats)>, DiffError>>()
            })
            .map_err(diff_err)?;
        *lock(&self.vjp_seconds, "rollout")? = t0.elapsed().as_secs_f64();
        *lock(&self.vjp_phantom_pairs, "rollout")? = parts.iter().map(|p| p.1.phantom_pairs).sum();
        let cat = |f: fn(&Cotangents) -> &Vec<f64>| -> Vec<f64> {
            parts.iter().flat_map(|p| f(&p.0).iter().copied()).collect()
        };
        Ok((
            to_numpy(py, cat(|p| &p.0), &self.shape(&[self.nx])),
            to_numpy(py, cat(|p| &p.1), &self.shape(&[self.nsteps, self.nc])),
            to_numpy(py, cat(|p| &p.2), &self.shape(&[self.np])),
        ))
    }

    /// The event diagnostic: whether the gradient of the loss with
    /// trajectory cotangent ``g`` (as for ``vjp``) sits at a contact event
    /// whose discrete timing it depends on. Runs ``vjp`` here and on a new
    /// rollout of the same inputs with the integration tightened by
    /// ``factor`` (CENIC's accuracy or the fixed step divided by it) and
    /// compares them: a dict with ``spread`` (the largest of
    /// ``controls``, ``initial_state``, ``params``, each
    /// ‖∂L/∂z − ∂L/∂z′‖/‖∂L/∂z′‖ with ′ the tightened rollout), ``flagged``
    /// (``spread > tolerance``: the gradient is not resolved, treat it as
    /// noisy) and ``tightened``, the tightened rollout's ``(∂L/∂x0,
    /// ∂L/∂controls, ∂L/∂params)`` shaped like ``vjp``'s. With a leading
    /// ``nworld`` axis the numbers are per world (lists). Costs one more
    /// recorded rollout at the tighter setting and two reverse passes.
    #[pyo3(signature = (g, factor=10.0, tolerance=0.05))]
    fn gradient_spread<'py>(
        &self,
        py: Python<'py>,
        g: &Bound<'py, PyAny>,
        factor: f64,
        tolerance: f64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let recs = self.recordings()?;
        let ga = self.trajectory_cotangent(g)?;
        let per = (self.nsteps + 1) * self.nx;
        let gs = ga.slice();
        let parts = py
            .detach(|| {
                recs.par_iter()
                    .enumerate()
                    .map(|(w, r)| r.gradient_spread(&gs[w * per..(w + 1) * per], factor, tolerance))
                    .collect::<Result<Vec<GradientSpread>, DiffError>>()
            })
            .map_err(diff_err)?;
        let d = PyDict::new(py);
        let field = |f: fn(&GradientSpread) -> f64| -> PyResult<Bound<'py, PyAny>> {
            let v: Vec<f64> = parts.iter().map(f).collect();
            Ok(if self.batched { v.into_pyobject(py)?.into_any() } else { v[0].into_pyobject(py)?.into_any() })
        };
        d.set_item("spread", field(|p| p.spread)?)?;
        d.set_item("controls", field(|p| p.controls)?)?;
        d.set_item("initial_state", field(|p| p.initial_state)?)?;
        d.set_item("params", field(|p| p.params)?)?;
        let flags: Vec<bool> = parts.iter().map(|p| p.flagged).collect();
        if self.batched {
            d.set_item("flagged", flags)?;
        } else {
            d.set_item("flagged", flags[0])?;
        }
        let cat = |f: fn(&Cotangents) -> &Vec<f64>| -> Vec<f64> {
            parts.iter().flat_map(|p| f(&p.tightened).iter().copied()).collect()
        };
        d.set_item(
            "tightened",
            (
                to_numpy(py, cat(|p| &p.0), &self.shape(&[self.nx])),
                to_numpy(py, cat(|p| &p.1), &self.shape(&[self.nsteps, self.nc])),
                to_numpy(py, cat(|p| &p.2), &self.shape(&[self.np])),
            ),
        )?;
        Ok(d)
    }

    /// Counts and timings summed over worlds: solves, accepted, rejected,
    /// forward_seconds (the forward runs with their tapes), tape_bytes;
    /// jacobian_seconds, the time of forming the interval Jacobians (0
    /// until they are); vjp_seconds, the latest ``vjp``'s wall time (0
    /// before one); phantom_pairs, the phantom pairs of contacts from
    /// distance in the Jacobians, else in the latest ``vjp`` (the same
    /// count; 0 before either).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let recs: &[Recording] = match &self.runs {
            Runs::Recorded(r) => r,
            Runs::Simulated(_) => &[],
        };
        let dense = self.dense_if_built()?;
        let sum = |f: fn(&Recording) -> f64| recs.iter().map(f).sum::<f64>();
        d.set_item("solves", recs.iter().map(Recording::solves).sum::<usize>())?;
        d.set_item("accepted", sum(|r| r.world_stats().accepted as f64) as u64)?;
        d.set_item("rejected", sum(|r| r.world_stats().rejected as f64) as u64)?;
        d.set_item("forward_seconds", sum(Recording::forward_seconds))?;
        d.set_item("tape_bytes", self.tape_bytes())?;
        let (jac_seconds, pairs) = match &dense {
            Some(w) => (
                w.iter().map(|l| l.stats.jacobian_seconds).sum::<f64>(),
                w.iter().map(|l| l.stats.phantom_pairs).sum::<usize>(),
            ),
            None => (0.0, *lock(&self.vjp_phantom_pairs, "rollout")?),
        };
        d.set_item("jacobian_seconds", jac_seconds)?;
        d.set_item("vjp_seconds", *lock(&self.vjp_seconds, "rollout")?)?;
        d.set_item("phantom_pairs", pairs)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "Rollout(nworld={}, nsteps={}, nx={}, nc={}, ntheta={})",
            self.nworld(),
            self.nsteps,
            self.nx,
            self.nc,
            self.np
        )
    }
}

/// Rolls ``model`` out from ``x0`` under ``controls`` with parameter
/// multipliers ``params`` in f64 and returns a ``Rollout``: the trajectory,
/// recorded for derivatives of the discrete map by the implicit function
/// theorem at every contact solve. ``Rollout.vjp`` runs the reverse pass
/// over the recording; the interval Jacobians (``d_x``, ``d_u``,
/// ``d_theta``) are formed from it on first access only.
///
/// - ``x0``: (nq + nv,) or (nworld, nq + nv): positions then velocities.
/// - ``controls``: (nsteps, nc) or (nworld, nsteps, nc), held over each
///   interval of ``interval`` seconds; nc = nu for ``control="actuators"``
///   (motor inputs or servo targets), nv for ``control="applied"``
///   (generalized forces, N or N·m). None: zeros for ``nsteps`` intervals.
/// - ``params``: (nθ,) or (nworld, nθ) multipliers (1 = as modelled) on
///   ``param_names``: ``mass_scale``, ``stiffness``, ``dissipation``,
///   ``mu_static``, ``mu_dynamic``, ``friction`` (both μ), and
///   ``geom_size:<geom name or index>``. None: all 1.
/// - ``accuracy=`` CENIC error control, or ``dt=`` fixed steps (s); with
///   CENIC ``velocity_time_scale`` (s) weighs velocity errors and
///   ``land_contact_events`` lands steps on touch-downs and lift-offs.
/// - ``cfd_width`` (m) and ``cfd_strength`` (N): contacts from distance
///   in the Jacobians only (the trajectory is unchanged).
/// - ``jacobians=False``: the forward simulation only (no tape, so no
///   ``vjp`` and no Jacobians; ``cenic.simulate`` returns its trajectory).
/// - ``friction_load``: ``"implicit"`` (default) differentiates the
///   friction load through the step's implicit normal impulse, the
///   derivative that converges on robots with sliding feet; ``"lagged"``
///   gives the exact derivative of the simulated map (what finite
///   differences of ``cenic.simulate`` measure).
///
/// Raises ValueError for bad shapes, names or values, and
/// ``SimulationError`` when the forward simulation fails, or later
/// ``vjp`` or the first Jacobian access when a derivative pass fails (the
/// message names world, interval and time).
#[pyfunction]
#[pyo3(signature = (model, x0, controls=None, params=None, *, interval, param_names=vec![], nsteps=None,
                    accuracy=None, dt=None, control="actuators", velocity_time_scale=None,
                    land_contact_events=false, cfd_width=None, cfd_strength=None, jacobians=true,
                    friction_load="implicit"))]
#[allow(clippy::too_many_arguments)]
pub fn rollout_jacobians(
    py: Python<'_>,
    model: &Model,
    x0: &Bound<'_, PyAny>,
    controls: Option<&Bound<'_, PyAny>>,
    params: Option<&Bound<'_, PyAny>>,
    interval: f64,
    param_names: Vec<String>,
    nsteps: Option<usize>,
    accuracy: Option<f64>,
    dt: Option<f64>,
    control: &str,
    velocity_time_scale: Option<f64>,
    land_contact_events: bool,
    cfd_width: Option<f64>,
    cfd_strength: Option<f64>,
    jacobians: bool,
    friction_load: &str,
) -> PyResult<Rollout> {
    let m = model.inner.clone();
    let control = match control {
        "actuators" => ControlKind::Actuators,
        "applied" => ControlKind::Applied,
        c => return Err(PyValueError::new_err(format!("control must be 'actuators' or 'applied', got '{c}'"))),
    };
    let friction_load = match friction_load {
        "implicit" => FrictionLoad::Implicit,
        "lagged" => FrictionLoad::Lagged,
        f => {
            return Err(PyValueError::new_err(format!("friction_load must be 'implicit' or 'lagged', got '{f}'")));
        }
    };
    let mut mode = mode(accuracy, dt, None, None, velocity_time_scale, false)?;
    if let cenic::integrator::Mode::ErrorControlled(p) = &mut mode {
        p.land_contact_events = land_contact_events;
    }
    let cfd = match (cfd_width, cfd_strength) {
        (None, None) => None,
        (Some(w), Some(s)) => Some(Cfd { width: positive("cfd_width", w)?, strength: positive("cfd_strength", s)? }),
        _ => return Err(PyValueError::new_err("contacts from distance need both cfd_width (m) and cfd_strength (N)")),
    };
    let ps = param_names.iter().map(|n| parse_param(&m, n)).collect::<PyResult<Vec<_>>>()?;
    let rollout = DiffRollout::new(m.clone(), mode, positive("interval", interval)?)
        .with_control(control)
        .with_params(ps)
        .with_cfd(cfd)
        .with_friction_load(friction_load);
    let (nx, nc, np) = (rollout.nx(), rollout.nc(), rollout.np());
    let xa = ArrayIn::<f64>::new(x0, "x0")?;
    let batched = match xa.shape().len() {
        1 => false,
        2 => true,
        _ => {
            return Err(PyValueError::new_err(format!(
                "x0: expected shape [{nx}] (nq + nv) or [nworld, {nx}], got {:?}",
                xa.shape()
            )));
        }
    };
    let nworld = if batched { xa.shape()[0] } else { 1 };
    if nworld == 0 {
        return Err(PyValueError::new_err("x0: no worlds"));
    }
    let lead: &[usize] = if batched { &[nworld] } else { &[] };
    let with = |tail: &[usize]| -> Vec<usize> { lead.iter().chain(tail).copied().collect() };
    xa.expect_shape(&[&with(&[nx])])?;
    xa.check_finite(if batched { nx } else { 0 })?;
    let (u, nsteps) = match controls {
        Some(c) => {
            let ua = ArrayIn::<f64>::new(c, "controls")?;
            let shape = ua.shape();
            let k = if shape.len() == lead.len() + 2 { shape[lead.len()] } else { 0 };
            if let Some(n) = nsteps
                && n != k
            {
                return Err(PyValueError::new_err(format!("nsteps = {n} but controls hold {k} intervals")));
            }
            ua.expect_shape(&[&with(&[k, nc])])?;
            ua.check_finite(nc)?;
            (ua.slice().to_vec(), k)
        }
        None => {
            let n = nsteps.ok_or_else(|| PyValueError::new_err("give controls or nsteps"))?;
            (vec![0.0; nworld * n * nc], n)
        }
    };
    if nsteps == 0 {
        return Err(PyValueError::new_err("a rollout needs at least one control interval"));
    }
    let theta = match params {
        Some(p) => {
            let pa = ArrayIn::<f64>::new(p, "params")?;
            pa.expect_shape(&[&with(&[np])])?;
            pa.check_finite(np)?;
            pa.slice().to_vec()
        }
        None => vec![1.0; nworld * np],
    };
    let x0 = xa.slice().to_vec();
    let n = nsteps;
    let runs = py
        .detach(|| {
            if jacobians {
                return rollout.record_batch(&x0, &u, &theta, nworld, n).map(Runs::Recorded);
            }
            (0..nworld)
                .into_par_iter()
                .map(|w| {
                    let x = &x0[w * nx..(w + 1) * nx];
                    let uw = &u[w * n * nc..(w + 1) * n * nc];
                    let th = &theta[w * np..(w + 1) * np];
                    rollout.simulate(x, uw, th, n).map_err(|e| match e {
                        DiffError::Step { interval, time, source, .. } => {
                            DiffError::Step { world: w, interval, time, source }
                        }
                        e => e,
                    })
                })
                .collect::<Result<_, _>>()
                .map(Runs::Simulated)
        })
        .map_err(diff_err)?;
    Ok(Rollout {
        runs,
        dense: Mutex::default(),
        vjp_seconds: Mutex::new(0.0),
        vjp_phantom_pairs: Mutex::new(0),
        batched,
        nsteps: n,
        nx,
        nc,
        np,
    })
}
