//! Gradients: `cenic.rollout_jacobians` (trajectory and interval Jacobians
//! of `cenic::diff::DiffRollout`) and their vector–Jacobian product; with
//! `jacobians=False` the same map alone (`cenic.simulate`, for finite
//! differences).

use crate::batch::{mode, positive};
use crate::model::Model;
use crate::{ArrayIn, Np, SimulationError, lock, to_numpy};
use cenic::diff::{Cfd, ControlKind, DiffError, DiffRollout, FrictionLoad, Linearization, Param};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;
use std::sync::Mutex;

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

/// A differentiable rollout: the trajectory and the interval Jacobians.
///
/// Shapes (a leading ``nworld`` axis when ``x0`` was 2-D):
/// ``trajectory`` (nsteps + 1, nx) with nx = nq + nv, x_0 first;
/// ``d_x`` (nsteps, nx, nx) = ∂x_{k+1}/∂x_k; ``d_u`` (nsteps, nx, nc) =
/// ∂x_{k+1}/∂u_k; ``d_theta`` (nsteps, nx, nθ) = ∂x_{k+1}/∂θ. Each
/// attribute access returns a new float64 array (the per-world blocks are
/// gathered into it: bind it once).
#[pyclass(module = "cenic", frozen)]
pub struct Rollout {
    worlds: Mutex<Vec<Linearization>>,
    /// False for a forward simulation only (`jacobians=False`).
    jacobians: bool,
    batched: bool,
    nsteps: usize,
    nx: usize,
    nc: usize,
    np: usize,
}

impl Rollout {
    fn need_jacobians(&self) -> PyResult<()> {
        if self.jacobians { Ok(()) } else { Err(PyValueError::new_err("this rollout was run with jacobians=False")) }
    }

    fn gather<'py>(
        &self,
        py: Python<'py>,
        f: impl Fn(&Linearization) -> &[f64],
        tail: &[usize],
    ) -> PyResult<Np<'py, f64>> {
        let w = lock(&self.worlds, "rollout")?;
        let data: Vec<f64> = w.iter().flat_map(|l| f(l).iter().copied()).collect();
        let shape: Vec<usize> =
            if self.batched { std::iter::once(w.len()).chain(tail.iter().copied()).collect() } else { tail.to_vec() };
        Ok(to_numpy(py, data, &shape))
    }
}

#[pymethods]
impl Rollout {
    /// States x_0 … x_nsteps, (…, nsteps + 1, nq + nv).
    #[getter]
    fn trajectory<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        self.gather(py, |l| &l.trajectory, &[self.nsteps + 1, self.nx])
    }
    /// ∂x_{k+1}/∂x_k per interval, (…, nsteps, nx, nx).
    #[getter]
    fn d_x<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        self.need_jacobians()?;
        self.gather(py, |l| &l.d_x, &[self.nsteps, self.nx, self.nx])
    }
    /// ∂x_{k+1}/∂u_k per interval, (…, nsteps, nx, nc).
    #[getter]
    fn d_u<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        self.need_jacobians()?;
        self.gather(py, |l| &l.d_u, &[self.nsteps, self.nx, self.nc])
    }
    /// ∂x_{k+1}/∂θ per interval, (…, nsteps, nx, nθ).
    #[getter]
    fn d_theta<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        self.need_jacobians()?;
        self.gather(py, |l| &l.d_theta, &[self.nsteps, self.nx, self.np])
    }
    /// Number of control intervals.
    #[getter]
    fn nsteps(&self) -> usize {
        self.nsteps
    }

    /// Vector–Jacobian product: given ``g`` = ∂L/∂trajectory (the
    /// trajectory's shape), returns ``(∂L/∂x0, ∂L/∂controls, ∂L/∂params)``
    /// shaped like the inputs (…, nx), (…, nsteps, nc), (…, nθ) by a
    /// backward sweep through the interval Jacobians (releases the GIL).
    fn vjp<'py>(&self, py: Python<'py>, g: &Bound<'py, PyAny>) -> PyResult<(Np<'py, f64>, Np<'py, f64>, Np<'py, f64>)> {
        self.need_jacobians()?;
        let worlds = lock(&self.worlds, "rollout")?;
        let nw = worlds.len();
        let ga = ArrayIn::<f64>::new(g, "g")?;
        let tail = [self.nsteps + 1, self.nx];
        let full: Vec<usize> = if self.batched { vec![nw, tail[0], tail[1]] } else { tail.to_vec() };
        ga.expect_shape(&[&full])?;
        ga.check_finite(self.nx)?;
        let per = tail[0] * tail[1];
        let gs = ga.slice();
        let lins: &[Linearization] = &worlds;
        let parts: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)> =
            py.detach(|| lins.par_iter().enumerate().map(|(w, l)| l.vjp(&gs[w * per..(w + 1) * per])).collect());
        let lead: &[usize] = if self.batched { &[nw] } else { &[] };
        let shape = |tail: &[usize]| -> Vec<usize> { lead.iter().chain(tail).copied().collect() };
        type Grads = (Vec<f64>, Vec<f64>, Vec<f64>);
        let cat =
            |f: fn(&Grads) -> &Vec<f64>| -> Vec<f64> { parts.iter().flat_map(|p| f(p).iter().copied()).collect() };
        Ok((
            to_numpy(py, cat(|p| &p.0), &shape(&[self.nx])),
            to_numpy(py, cat(|p| &p.1), &shape(&[self.nsteps, self.nc])),
            to_numpy(py, cat(|p| &p.2), &shape(&[self.np])),
        ))
    }

    /// Counts and timings summed over worlds: solves, accepted, rejected,
    /// phantom_pairs, forward_seconds, jacobian_seconds.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let worlds = lock(&self.worlds, "rollout")?;
        let d = PyDict::new(py);
        let sum = |f: fn(&Linearization) -> f64| worlds.iter().map(f).sum::<f64>();
        d.set_item("solves", sum(|l| l.stats.solves as f64) as u64)?;
        d.set_item("accepted", sum(|l| l.stats.world.accepted as f64) as u64)?;
        d.set_item("rejected", sum(|l| l.stats.world.rejected as f64) as u64)?;
        d.set_item("phantom_pairs", sum(|l| l.stats.phantom_pairs as f64) as u64)?;
        d.set_item("forward_seconds", sum(|l| l.stats.forward_seconds))?;
        d.set_item("jacobian_seconds", sum(|l| l.stats.jacobian_seconds))?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let w = self.worlds.lock().map(|w| w.len()).unwrap_or(0);
        format!("Rollout(nworld={w}, nsteps={}, nx={}, nc={}, ntheta={})", self.nsteps, self.nx, self.nc, self.np)
    }
}

/// Rolls ``model`` out from ``x0`` under ``controls`` with parameter
/// multipliers ``params`` in f64 and returns the trajectory with its
/// interval Jacobians (a ``Rollout``), derivatives of the discrete map by
/// the implicit function theorem at every contact solve.
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
/// - ``jacobians=False``: the forward simulation only (no tape, no
///   Jacobians; ``cenic.simulate`` returns its trajectory).
/// - ``friction_load``: ``"implicit"`` (default) differentiates the
///   friction load through the step's implicit normal impulse, the
///   derivative that converges on robots with sliding feet; ``"lagged"``
///   gives the exact derivative of the simulated map (what finite
///   differences of ``cenic.simulate`` measure).
///
/// Raises ValueError for bad shapes, names or values, and
/// ``SimulationError`` when the forward simulation or the Jacobian pass
/// fails (the message names world, interval and time).
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
    let lins = py
        .detach(|| {
            if jacobians {
                return rollout.linearize_batch(&x0, &u, &theta, nworld, n);
            }
            (0..nworld)
                .into_par_iter()
                .map(|w| {
                    let x = &x0[w * nx..(w + 1) * nx];
                    let uw = &u[w * n * nc..(w + 1) * n * nc];
                    let th = &theta[w * np..(w + 1) * np];
                    let trajectory = rollout.simulate(x, uw, th, n).map_err(|e| match e {
                        DiffError::Step { interval, time, source, .. } => {
                            DiffError::Step { world: w, interval, time, source }
                        }
                        e => e,
                    })?;
                    let none = vec![];
                    Ok(Linearization {
                        nsteps: n,
                        nx,
                        nc,
                        np,
                        trajectory,
                        d_x: none.clone(),
                        d_u: none.clone(),
                        d_theta: none,
                        stats: Default::default(),
                    })
                })
                .collect()
        })
        .map_err(diff_err)?;
    Ok(Rollout { worlds: Mutex::new(lins), batched, nsteps: n, nx, nc, np, jacobians })
}
