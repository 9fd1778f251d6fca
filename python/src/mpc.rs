//! Model-predictive control from Python: the built-in tasks of
//! `cenic::mpc::tasks` (`MpcTask`), their planners (`Planner`: iLQR with
//! and without contacts from distance, predictive sampling, the hybrid) and
//! the closed loop (`MpcTask.run`).

use crate::{ArrayIn, Np, SimulationError, lock, to_numpy};
use cenic::mpc::tasks::{self, Task};
use cenic::mpc::{
    Budget, Hybrid, HybridOptions, Ilqr, IlqrOptions, MpcError, PlanStats, PredictiveSampling, SamplingOptions,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

fn mpc_err(e: MpcError) -> PyErr {
    match e {
        MpcError::Input(m) => PyValueError::new_err(m),
        e => SimulationError::new_err(e.to_string()),
    }
}

/// The planner kinds [`MpcTask::planner`] builds.
const KINDS: [&str; 4] = ["ilqr-cfd", "ilqr", "sampling", "hybrid"];

/// The names of the built-in MPC tasks.
#[pyfunction]
pub fn mpc_task_names() -> Vec<&'static str> {
    tasks::NAMES.to_vec()
}

/// A built-in control task with a seeded goal (`cenic::mpc::tasks`):
/// ``reacher`` (no contact), ``pusher`` (gymnasium's Pusher-v5 arm pushes
/// the object to a goal), ``billiards`` (a striker bats a puck to a target)
/// and ``half_cheetah`` (run at a goal speed). Each names its planning
/// problem (control interval ``dt`` in s, ``horizon`` intervals), the
/// plant (CENIC at accuracy 1e-3), the episode length, the evaluation's
/// planning budget (80 % of ``dt`` in CPU time) and what counts as
/// success.
///
/// ``models_dir``: the folder of the gymnasium MJCF files (default:
/// ``models/gymnasium`` under the shared folder, ``CENIC_SHARED``);
/// ``billiards`` is built in and needs none.
#[pyclass(module = "cenic", frozen)]
pub struct MpcTask {
    task: Task,
}

#[pymethods]
impl MpcTask {
    #[new]
    #[pyo3(signature = (name, seed = 0, models_dir = None))]
    fn new(name: &str, seed: u64, models_dir: Option<PathBuf>) -> PyResult<Self> {
        let dir = models_dir
            .or_else(|| cenic::zoo::shared_dir().map(|s| s.join("models/gymnasium")))
            .unwrap_or_else(|| PathBuf::from("models/gymnasium"));
        Ok(Self { task: Task::new(name, &dir, seed).map_err(mpc_err)? })
    }

    /// Task name.
    #[getter]
    fn name(&self) -> &'static str {
        self.task.name
    }

    /// Initial state x0 = [q, v] (nx,).
    #[getter]
    fn x0<'py>(&self, py: Python<'py>) -> Np<'py, f64> {
        to_numpy(py, self.task.x0.clone(), &[self.task.x0.len()])
    }

    /// Control intervals in an episode.
    #[getter]
    fn steps(&self) -> usize {
        self.task.steps
    }

    /// Control interval (s).
    #[getter]
    fn dt(&self) -> f64 {
        self.task.problem.dt
    }

    /// Intervals in the planning horizon.
    #[getter]
    fn horizon(&self) -> usize {
        self.task.problem.horizon
    }

    /// State size nq + nv.
    #[getter]
    fn nx(&self) -> usize {
        self.task.problem.nx()
    }

    /// Control size.
    #[getter]
    fn nc(&self) -> usize {
        self.task.problem.nc()
    }

    /// Lower and upper control bounds, each (nc,).
    #[getter]
    fn control_bounds<'py>(&self, py: Python<'py>) -> (Np<'py, f64>, Np<'py, f64>) {
        let p = &self.task.problem;
        (to_numpy(py, p.lower.clone(), &[p.nc()]), to_numpy(py, p.upper.clone(), &[p.nc()]))
    }

    /// The goal of the tracked point (m, world frame; for the half cheetah
    /// the torso's position at the goal speed after 3 s).
    #[getter]
    fn goal<'py>(&self, py: Python<'py>) -> Np<'py, f64> {
        to_numpy(py, self.task.goal.to_vec(), &[3])
    }

    /// Success when the episode's error is at most this (m; relative for the half cheetah).
    #[getter]
    fn tolerance(&self) -> f64 {
        self.task.tolerance
    }

    /// The evaluation's planning budget per interval: CPU time (s).
    #[getter]
    fn budget_cpu_seconds(&self) -> f64 {
        match self.task.budget {
            Budget::CpuTime(t) | Budget::WallTime(t) => t.as_secs_f64(),
            Budget::Iterations(_) => f64::NAN,
        }
    }

    /// The task's running cost rate l(x, u) (per s) at state ``x`` (nx,) and controls ``u`` (nc,).
    fn running_cost(&self, x: &Bound<'_, PyAny>, u: &Bound<'_, PyAny>) -> PyResult<f64> {
        let p = &self.task.problem;
        let x = ArrayIn::<f64>::new(x, "x")?;
        x.expect_shape(&[&[p.nx()]])?;
        let u = ArrayIn::<f64>::new(u, "u")?;
        u.expect_shape(&[&[p.nc()]])?;
        let mut ws = cenic::mpc::Workspace::new(p.model.clone());
        Ok(p.cost.running(&mut ws, x.slice(), u.slice(), None))
    }

    /// A planner for this task: ``kind`` one of ``ilqr-cfd`` (iLQR on the
    /// interval Jacobians with the task's contacts from distance),
    /// ``ilqr`` (without them), ``sampling`` (MuJoCo MPC's predictive
    /// sampling, ``samples`` rollouts per round, random ``seed``) or
    /// ``hybrid`` (sampling for ``share`` of each budget, then iLQR + CFD).
    /// Its default budget per ``plan`` call is the task's.
    #[pyo3(signature = (kind = "ilqr-cfd", *, samples = 32, seed = 0, share = 0.25))]
    fn planner(&self, kind: &str, samples: usize, seed: u64, share: f64) -> PyResult<Planner> {
        let t = &self.task;
        let p = t.problem.clone();
        let sampling = SamplingOptions { samples, seed, ..Default::default() };
        let inner: Box<dyn cenic::mpc::Planner + Send> = match kind {
            "ilqr-cfd" => Box::new(Ilqr::new(p, IlqrOptions { cfd: Some(t.cfd), ..t.ilqr.clone() })),
            "ilqr" => Box::new(Ilqr::new(p, IlqrOptions { cfd: None, ..t.ilqr.clone() })),
            "sampling" => Box::new(PredictiveSampling::new(p, sampling).map_err(mpc_err)?),
            "hybrid" => Box::new(
                Hybrid::new(
                    p,
                    HybridOptions {
                        sampling,
                        ilqr: IlqrOptions { cfd: Some(t.cfd), ..t.ilqr.clone() },
                        sampling_share: share,
                    },
                )
                .map_err(mpc_err)?,
            ),
            _ => return Err(PyValueError::new_err(format!("unknown planner '{kind}' (known: {})", KINDS.join(", ")))),
        };
        Ok(Planner { inner: Mutex::new(inner), budget: t.budget })
    }

    /// Runs the closed loop: from ``x0``, ``steps`` times (default: the
    /// task's episode) plan within the planner's budget, apply the first
    /// control to a fresh plant for one interval, shift. Returns a dict:
    /// ``states`` (n + 1, nx), ``controls`` (n, nc), ``running_cost`` (n,),
    /// ``plan_cpu_seconds`` (n,), ``iterations`` (n,), ``error`` and
    /// ``success`` (the task's measure), ``cost`` (Σ dt·l + l_T),
    /// ``failure`` (why the plant stopped, or None), ``planning_errors``
    /// (list of (interval, message)). The planner keeps its plan
    /// afterwards (``reset()`` it before another episode).
    #[pyo3(signature = (planner, steps = None))]
    fn run<'py>(&self, py: Python<'py>, planner: &Planner, steps: Option<usize>) -> PyResult<Bound<'py, PyDict>> {
        let t = &self.task;
        let budget = planner.budget;
        let ep = py.detach(|| -> PyResult<_> {
            let mut inner = lock(&planner.inner, "planner")?;
            if inner.problem().nx() != t.problem.nx() || inner.problem().nc() != t.problem.nc() {
                return Err(PyValueError::new_err("the planner belongs to a task of other sizes"));
            }
            let mut plant = t.plant();
            cenic::mpc::closed_loop(&mut **inner, &mut plant, &t.x0, steps.unwrap_or(t.steps), budget).map_err(mpc_err)
        })?;
        let (nx, nc) = (t.problem.nx(), t.problem.nc());
        let n = ep.controls.len() / nc;
        let d = PyDict::new(py);
        d.set_item("states", to_numpy(py, ep.states.clone(), &[ep.states.len() / nx, nx]))?;
        d.set_item("controls", to_numpy(py, ep.controls.clone(), &[n, nc]))?;
        d.set_item("running_cost", to_numpy(py, ep.running_cost.clone(), &[ep.running_cost.len()]))?;
        let cpu: Vec<f64> = ep.plans.iter().map(|s| s.cpu_seconds).collect();
        d.set_item("plan_cpu_seconds", to_numpy(py, cpu, &[ep.plans.len()]))?;
        let its: Vec<usize> = ep.plans.iter().map(|s| s.iterations).collect();
        d.set_item("iterations", to_numpy(py, its, &[ep.plans.len()]))?;
        d.set_item("error", t.error(&ep))?;
        d.set_item("success", t.success(&ep))?;
        d.set_item("cost", ep.total_cost())?;
        d.set_item("failure", ep.failure.clone())?;
        d.set_item("planning_errors", ep.planning_errors.clone())?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let p = &self.task.problem;
        format!(
            "MpcTask({}, dt={} s, horizon={}, steps={}, nx={}, nc={})",
            self.task.name,
            p.dt,
            p.horizon,
            self.task.steps,
            p.nx(),
            p.nc()
        )
    }
}

/// A receding-horizon planner (see ``MpcTask.planner``): ``plan`` improves
/// the plan from a state within a budget, ``controls`` is the plan (its
/// first row is what to apply now), ``shift`` moves it one interval ahead
/// (the warm start for the next state).
#[pyclass(module = "cenic", frozen)]
pub struct Planner {
    inner: Mutex<Box<dyn cenic::mpc::Planner + Send>>,
    /// Budget of a `plan` call without one.
    budget: Budget,
}

fn stats_dict<'py>(py: Python<'py>, s: &PlanStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("iterations", s.iterations)?;
    d.set_item("accepted", s.accepted)?;
    d.set_item("rollouts", s.rollouts)?;
    d.set_item("linearizations", s.linearizations)?;
    d.set_item("initial_cost", s.initial_cost)?;
    d.set_item("cost", s.cost)?;
    d.set_item("seconds", s.seconds)?;
    d.set_item("cpu_seconds", s.cpu_seconds)?;
    Ok(d)
}

#[pymethods]
impl Planner {
    /// Planner name (as in the evaluation tables).
    #[getter]
    fn name(&self) -> PyResult<String> {
        Ok(lock(&self.inner, "planner")?.name())
    }

    /// Improves the plan from state ``x`` (nx,) within a budget: at most
    /// ``iterations`` planner iterations, or ``cpu_seconds`` of process CPU
    /// time, or ``wall_seconds`` (at most one of them; default: the task's
    /// budget). Returns the statistics: iterations, accepted, rollouts,
    /// linearizations, initial_cost, cost, seconds, cpu_seconds.
    #[pyo3(signature = (x, *, iterations = None, cpu_seconds = None, wall_seconds = None))]
    fn plan<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        iterations: Option<usize>,
        cpu_seconds: Option<f64>,
        wall_seconds: Option<f64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let seconds = |s: f64, what: &str| {
            if s > 0.0 && s.is_finite() {
                Ok(Duration::from_secs_f64(s))
            } else {
                Err(PyValueError::new_err(format!("{what} = {s}: must be positive and finite")))
            }
        };
        let budget = match (iterations, cpu_seconds, wall_seconds) {
            (None, None, None) => self.budget,
            (Some(0), None, None) => return Err(PyValueError::new_err("iterations: at least 1")),
            (Some(n), None, None) => Budget::Iterations(n),
            (None, Some(s), None) => Budget::CpuTime(seconds(s, "cpu_seconds")?),
            (None, None, Some(s)) => Budget::WallTime(seconds(s, "wall_seconds")?),
            _ => return Err(PyValueError::new_err("give at most one of iterations, cpu_seconds, wall_seconds")),
        };
        let x = ArrayIn::<f64>::new(x, "x")?;
        x.expect_shape(&[&[lock(&self.inner, "planner")?.problem().nx()]])?;
        x.check_finite(0)?;
        let xs = x.slice().to_vec();
        let stats = py.detach(|| lock(&self.inner, "planner")?.plan(&xs, budget).map_err(mpc_err))?;
        stats_dict(py, &stats)
    }

    /// The plan's controls (horizon, nc), within the bounds; row 0 applies now.
    #[getter]
    fn controls<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f64>> {
        let inner = lock(&self.inner, "planner")?;
        let nc = inner.problem().nc();
        let u = inner.controls().to_vec();
        Ok(to_numpy(py, u.clone(), &[u.len() / nc, nc]))
    }

    /// Moves the plan one interval ahead (the warm start of the next ``plan``).
    fn shift(&self) -> PyResult<()> {
        lock(&self.inner, "planner")?.shift();
        Ok(())
    }

    /// Back to the initial guess.
    fn reset(&self) -> PyResult<()> {
        lock(&self.inner, "planner")?.reset();
        Ok(())
    }

    fn __repr__(&self) -> PyResult<String> {
        Ok(format!("Planner({})", lock(&self.inner, "planner")?.name()))
    }
}
