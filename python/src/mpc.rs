//! Model-predictive control from Python: the built-in tasks of
//! `cenic::mpc::tasks` (`MpcTask`), their planners (`Planner`: iLQR with
//! and without contacts from distance, predictive sampling, the hybrid) and
//! the closed loop (`MpcTask.run`), and tasks of your own (`MpcTask.custom`
//! with an `MpcCost`).

use crate::batch::{gpu_context, positive};
use crate::model::Model;
use crate::{ArrayIn, Np, SimulationError, lock, to_numpy};
use cenic::batch::WorldParams;
use cenic::diff::Cfd;
use cenic::integrator::{CenicParams, Mode};
use cenic::mpc::tasks::{self, Measure, Task};
use cenic::mpc::{
    Budget, ControlEffort, Cost, CostSum, Hybrid, HybridOptions, Ilqr, IlqrOptions, MpcError, Penalty, PlanStats,
    PredictiveSampling, Problem, QuadraticTracking, SamplingOptions, Target, TargetDistance, Workspace,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

fn mpc_err(e: MpcError) -> PyErr {
    match e {
        MpcError::Input(m) => PyValueError::new_err(m),
        e => SimulationError::new_err(e.to_string()),
    }
}

/// The planner kinds [`MpcTask::planner`] builds.
const KINDS: [&str; 6] = ["ilqr-cfd", "ilqr", "sampling", "hybrid", "sampling-gpu", "hybrid-gpu"];

/// The names of the built-in MPC tasks.
#[pyfunction]
pub fn mpc_task_names() -> Vec<&'static str> {
    tasks::NAMES.to_vec()
}

/// A built-in control task with a seeded goal (`cenic::mpc::tasks`):
/// ``reacher`` (no contact), ``pusher`` (gymnasium's Pusher-v5 arm pushes
/// the object to a goal), ``pusher_plain`` (the same with the unshaped
/// cost: the object's distance and the effort), ``billiards`` (a striker
/// bats a puck to a target), ``cube_turn`` (two fingertips turn a cube on
/// a table to a goal yaw; error in rad) and ``half_cheetah`` (run at a
/// goal speed). Each names its planning
/// problem (control interval ``dt`` in s, ``horizon`` intervals), the
/// plant (CENIC at accuracy 1e-3), the episode length, the evaluation's
/// planning budget (80 % of ``dt`` in CPU time) and what counts as
/// success.
///
/// ``models_dir``: the folder of the gymnasium MJCF files (default:
/// ``models/gymnasium`` under the shared folder, ``CENIC_SHARED``);
/// ``billiards`` and ``cube_turn`` are built in and need none.
#[pyclass(module = "cenic", frozen)]
pub struct MpcTask {
    task: Task,
    /// Contacts from distance of the `ilqr-cfd` and `hybrid` planners (None: a custom task without them).
    cfd: Option<Cfd>,
    /// Built by `MpcTask.custom`: no goal or success measure.
    custom: bool,
}

#[pymethods]
impl MpcTask {
    #[new]
    #[pyo3(signature = (name, seed = 0, models_dir = None))]
    fn new(name: &str, seed: u64, models_dir: Option<PathBuf>) -> PyResult<Self> {
        let dir = models_dir.or_else(|| cenic::zoo::shared_dir().map(|s| s.join("models/gymnasium")));
        let dir = match dir {
            Some(d) => d,
            // The built-in models need no folder; the others name the folder they miss.
            None if tasks::BUILT_IN.contains(&name) => PathBuf::new(),
            None => {
                return Err(PyValueError::new_err(format!(
                    "task '{name}' needs the gymnasium models: give models_dir= or set CENIC_SHARED"
                )));
            }
        };
        let task = Task::new(name, &dir, seed).map_err(mpc_err)?;
        Ok(Self { cfd: Some(task.cfd), task, custom: false })
    }

    /// A task of your own: ``model``, ``cost`` (an ``MpcCost``), control
    /// interval ``dt`` (s) and ``horizon`` intervals. The planner simulates
    /// fixed steps of ``plan_dt`` seconds (default ``dt``; shorter steps
    /// predict contact better) or, with ``plan_accuracy``, CENIC; the plant
    /// runs CENIC at ``plant_accuracy``. ``x0``: the initial state (default:
    /// the model's ``qpos0`` at rest); ``steps``: intervals per episode;
    /// ``cfd_width`` (m) and ``cfd_strength`` (N): contacts from distance
    /// for the ``ilqr-cfd`` and ``hybrid`` planners (default: none, and
    /// those two planners refuse the task); ``budget_cpu_seconds``: the planning budget per
    /// interval (default 80 % of ``dt``). Such a task has no goal or
    /// success measure (``goal``, ``tolerance``, ``run``'s ``error`` and
    /// ``success`` are None).
    #[staticmethod]
    #[pyo3(signature = (model, cost, *, dt, horizon, x0 = None, plan_dt = None, plan_accuracy = None, plant_accuracy = 1e-3, steps = 100, cfd_width = None, cfd_strength = 1.0, budget_cpu_seconds = None))]
    #[allow(clippy::too_many_arguments)]
    fn custom(
        model: &Model,
        cost: &MpcCost,
        dt: f64,
        horizon: usize,
        x0: Option<&Bound<'_, PyAny>>,
        plan_dt: Option<f64>,
        plan_accuracy: Option<f64>,
        plant_accuracy: f64,
        steps: usize,
        cfd_width: Option<f64>,
        cfd_strength: f64,
        budget_cpu_seconds: Option<f64>,
    ) -> PyResult<Self> {
        let m = model.inner.clone();
        cost.check_model(&m)?;
        let dt = positive("dt", dt)?;
        let mode = match (plan_dt, plan_accuracy) {
            (Some(_), Some(_)) => return Err(PyValueError::new_err("give plan_dt= or plan_accuracy=, not both")),
            (None, Some(a)) => {
                Mode::ErrorControlled(CenicParams { accuracy: positive("plan_accuracy", a)?, ..Default::default() })
            }
            (h, None) => Mode::Fixed { dt: positive("plan_dt", h.unwrap_or(dt))? },
        };
        let problem = Problem::new(m.clone(), mode, dt, horizon, cost.cost.clone()).map_err(mpc_err)?;
        let nx = problem.nx();
        let x0 = match x0 {
            Some(x) => {
                let a = ArrayIn::<f64>::new(x, "x0")?;
                a.expect_shape(&[&[nx]])?;
                a.check_finite(0)?;
                a.slice().to_vec()
            }
            None => m.qpos0.iter().copied().chain(std::iter::repeat_n(0.0, m.nv)).collect(),
        };
        if steps == 0 {
            return Err(PyValueError::new_err("steps: at least one interval"));
        }
        let cfd = match cfd_width {
            Some(w) => {
                Some(Cfd { width: positive("cfd_width", w)?, strength: positive("cfd_strength", cfd_strength)? })
            }
            None => None,
        };
        let budget = Duration::from_secs_f64(positive("budget_cpu_seconds", budget_cpu_seconds.unwrap_or(0.8 * dt))?);
        let task = Task {
            name: "custom",
            problem,
            plant_mode: Mode::ErrorControlled(CenicParams {
                accuracy: positive("plant_accuracy", plant_accuracy)?,
                ..Default::default()
            }),
            plant_params: WorldParams::default(),
            x0,
            steps,
            // Unused: the planners take `MpcTask::cfd`.
            cfd: cfd.unwrap_or(Cfd { width: 0.0, strength: 0.0 }),
            ilqr: IlqrOptions { reuse: 2, ..Default::default() },
            budget: Budget::CpuTime(budget),
            measure: Measure::MeanSpeed { dof: 0, goal: f64::NAN },
            tolerance: f64::NAN,
            draw: vec![],
            goal: [f64::NAN; 3],
        };
        Ok(Self { task, cfd, custom: true })
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
    /// the torso's position at the goal speed after 3 s; for the cube turn
    /// where the goal yaw puts the corner (+4, +4, 0) cm from the cube's
    /// centre; None for a custom task).
    #[getter]
    fn goal<'py>(&self, py: Python<'py>) -> Option<Np<'py, f64>> {
        (!self.custom).then(|| to_numpy(py, self.task.goal.to_vec(), &[3]))
    }

    /// Success when the episode's error is at most this (m; rad for the
    /// cube turn; relative for the half cheetah; None for a custom task).
    #[getter]
    fn tolerance(&self) -> Option<f64> {
        (!self.custom).then_some(self.task.tolerance)
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
        let (x, u) = (vector(x, "x", p.nx())?, vector(u, "u", p.nc())?);
        Ok(p.cost.running(&mut Workspace::new(p.model.clone()), &x, &u, None))
    }

    /// A planner for this task: ``kind`` one of ``ilqr-cfd`` (iLQR on the
    /// interval Jacobians with the task's contacts from distance),
    /// ``ilqr`` (without them), ``sampling`` (MuJoCo MPC's predictive
    /// sampling, ``samples`` rollouts per round, random ``seed``) or
    /// ``hybrid`` (sampling for ``share`` of each budget, then iLQR + CFD);
    /// ``sampling-gpu`` and ``hybrid-gpu`` roll the samples out on the GPU
    /// batch (worth it from a few hundred samples on). Its default budget
    /// per ``plan`` call is the task's.
    #[pyo3(signature = (kind = "ilqr-cfd", *, samples = 32, seed = 0, share = 0.25))]
    fn planner(&self, kind: &str, samples: usize, seed: u64, share: f64) -> PyResult<Planner> {
        let t = &self.task;
        let p = t.problem.clone();
        let sampling = SamplingOptions { samples, seed, ..Default::default() };
        let cfd = match (kind, self.cfd) {
            ("ilqr-cfd" | "hybrid" | "hybrid-gpu", None) => {
                return Err(PyValueError::new_err(format!(
                    "planner '{kind}': this task has no contacts from distance (MpcTask.custom(..., cfd_width=...))"
                )));
            }
            (_, c) => c,
        };
        let hybrid = || HybridOptions {
            sampling: sampling.clone(),
            ilqr: IlqrOptions { cfd, ..t.ilqr.clone() },
            sampling_share: share,
        };
        let inner: Box<dyn cenic::mpc::Planner + Send> = match kind {
            "ilqr-cfd" => Box::new(Ilqr::new(p, IlqrOptions { cfd, ..t.ilqr.clone() })),
            "ilqr" => Box::new(Ilqr::new(p, IlqrOptions { cfd: None, ..t.ilqr.clone() })),
            "sampling" => Box::new(PredictiveSampling::new(p, sampling).map_err(mpc_err)?),
            "sampling-gpu" => Box::new(PredictiveSampling::on_gpu(p, sampling, gpu_context("gpu")?).map_err(mpc_err)?),
            "hybrid" => Box::new(Hybrid::new(p, hybrid()).map_err(mpc_err)?),
            "hybrid-gpu" => Box::new(Hybrid::on_gpu(p, hybrid(), gpu_context("gpu")?).map_err(mpc_err)?),
            _ => return Err(PyValueError::new_err(format!("unknown planner '{kind}' (known: {})", KINDS.join(", ")))),
        };
        Ok(Planner { inner: Mutex::new(inner), budget: t.budget })
    }

    /// Runs the closed loop: from ``x0``, ``steps`` times (default: the
    /// task's episode) plan within the planner's budget (or ``iterations``,
    /// ``cpu_seconds`` or ``wall_seconds`` per interval), apply the first
    /// control to a fresh plant for one interval, shift. Returns a dict:
    /// ``states`` (n + 1, nx), ``controls`` (n, nc), ``running_cost`` (n,),
    /// ``plan_cpu_seconds`` (n,), ``iterations`` (n,), ``error`` and
    /// ``success`` (the task's measure), ``cost`` (Σ dt·l + l_T),
    /// ``failure`` (why the plant stopped, or None), ``planning_errors``
    /// (list of (interval, message)). The planner keeps its plan
    /// afterwards (``reset()`` it before another episode).
    #[pyo3(signature = (planner, steps = None, *, iterations = None, cpu_seconds = None, wall_seconds = None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        planner: &Planner,
        steps: Option<usize>,
        iterations: Option<usize>,
        cpu_seconds: Option<f64>,
        wall_seconds: Option<f64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let t = &self.task;
        let budget = budget(planner.budget, iterations, cpu_seconds, wall_seconds)?;
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
        d.set_item("error", (!self.custom).then(|| t.error(&ep)))?;
        d.set_item("success", (!self.custom).then(|| t.success(&ep)))?;
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

/// The budget of a `plan` or `run` call: at most one of the keywords, else `default`.
fn budget(
    default: Budget,
    iterations: Option<usize>,
    cpu_seconds: Option<f64>,
    wall_seconds: Option<f64>,
) -> PyResult<Budget> {
    let seconds = |s: f64, what: &str| {
        if s > 0.0 && s.is_finite() {
            Ok(Duration::from_secs_f64(s))
        } else {
            Err(PyValueError::new_err(format!("{what} = {s}: must be positive and finite")))
        }
    };
    Ok(match (iterations, cpu_seconds, wall_seconds) {
        (None, None, None) => default,
        (Some(0), None, None) => return Err(PyValueError::new_err("iterations: at least 1")),
        (Some(n), None, None) => Budget::Iterations(n),
        (None, Some(s), None) => Budget::CpuTime(seconds(s, "cpu_seconds")?),
        (None, None, Some(s)) => Budget::WallTime(seconds(s, "wall_seconds")?),
        _ => return Err(PyValueError::new_err("give at most one of iterations, cpu_seconds, wall_seconds")),
    })
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
        let budget = budget(self.budget, iterations, cpu_seconds, wall_seconds)?;
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

/// A cost for `MpcTask.custom`: running terms l(x, u) (a rate, per s) and
/// terminal terms l_T(x), with the gradients and Gauss–Newton Hessians the
/// planners use (`cenic::mpc::cost`). Build terms with the static methods
/// and add them with ``+``.
#[pyclass(module = "cenic", frozen)]
pub struct MpcCost {
    cost: Arc<dyn Cost>,
    /// The terms of the sum (for `+`, which flattens).
    terms: Vec<Arc<dyn Cost>>,
    model: Arc<cenic::Model>,
}

impl MpcCost {
    fn term(model: &Arc<cenic::Model>, cost: Arc<dyn Cost>) -> Self {
        Self { terms: vec![cost.clone()], cost, model: model.clone() }
    }

    /// Errors unless `model` is (a model of the sizes of) the one the cost was built for.
    fn check_model(&self, model: &cenic::Model) -> PyResult<()> {
        let (a, b) = (&self.model, model);
        if (a.nq, a.nv, a.nu()) != (b.nq, b.nv, b.nu()) || a.bodies.len() != b.bodies.len() {
            return Err(PyValueError::new_err(format!(
                "the cost was built for model '{}' (nq {}, nv {}, nu {}), not '{}' (nq {}, nv {}, nu {})",
                a.name,
                a.nq,
                a.nv,
                a.nu(),
                b.name,
                b.nq,
                b.nv,
                b.nu()
            )));
        }
        Ok(())
    }
}

fn body_of(model: &cenic::Model, name: &str) -> PyResult<usize> {
    model.body_id(name).ok_or_else(|| PyValueError::new_err(format!("model '{}' has no body '{name}'", model.name)))
}

fn vector(obj: &Bound<'_, PyAny>, what: &str, n: usize) -> PyResult<Vec<f64>> {
    let a = ArrayIn::<f64>::new(obj, what)?;
    a.expect_shape(&[&[n]])?;
    a.check_finite(0)?;
    Ok(a.slice().to_vec())
}

fn point(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<[f64; 3]> {
    let v = vector(obj, what, 3)?;
    Ok([v[0], v[1], v[2]])
}

fn weight(name: &str, w: f64) -> PyResult<f64> {
    if w >= 0.0 && w.is_finite() {
        Ok(w)
    } else {
        Err(PyValueError::new_err(format!("{name} must be a finite number >= 0, got {w}")))
    }
}

#[pymethods]
impl MpcCost {
    /// Distance of a body point to a target: ``weight``·ρ(r) per s while
    /// running and ``terminal_weight``·ρ(r) at the end, r = the ``axes``
    /// (a subset of "xyz", world frame) of p − t. p: the point ``offset``
    /// (m, body frame) on ``body``; t: a fixed point (three numbers, m,
    /// world) or, when ``target`` is a body name, the point
    /// ``target_offset`` on that body. ρ: ``"smooth_abs"`` √(|r|² + ε²) − ε
    /// (a distance whose gradient does not fade, ε = ``epsilon`` m) or
    /// ``"quadratic"`` ½|r|².
    #[staticmethod]
    #[pyo3(signature = (model, body, target, *, offset = None, target_offset = None, axes = "xyz", weight = 1.0, terminal_weight = 0.0, penalty = "smooth_abs", epsilon = 0.01))]
    #[allow(clippy::too_many_arguments)]
    fn target_distance(
        model: &Model,
        body: &str,
        target: &Bound<'_, PyAny>,
        offset: Option<&Bound<'_, PyAny>>,
        target_offset: Option<&Bound<'_, PyAny>>,
        axes: &str,
        weight: f64,
        terminal_weight: f64,
        penalty: &str,
        epsilon: f64,
    ) -> PyResult<Self> {
        let m = &model.inner;
        let target = match target.extract::<String>() {
            Ok(name) => Target::Body {
                body: body_of(m, &name)?,
                offset: target_offset.map_or(Ok([0.0; 3]), |o| point(o, "target_offset"))?,
            },
            Err(_) => {
                if target_offset.is_some() {
                    return Err(PyValueError::new_err("target_offset: only with a target body"));
                }
                Target::Point(point(target, "target")?)
            }
        };
        if axes.is_empty() || axes.chars().any(|c| !"xyz".contains(c)) {
            return Err(PyValueError::new_err(format!("axes '{axes}': a subset of \"xyz\"")));
        }
        let penalty = match penalty {
            "smooth_abs" => Penalty::SmoothAbs { epsilon: positive("epsilon", epsilon)? },
            "quadratic" => Penalty::Quadratic,
            _ => return Err(PyValueError::new_err(format!("penalty '{penalty}' (known: smooth_abs, quadratic)"))),
        };
        let term = TargetDistance {
            body: body_of(m, body)?,
            offset: offset.map_or(Ok([0.0; 3]), |o| point(o, "offset"))?,
            target,
            axes: ['x', 'y', 'z'].map(|c| axes.contains(c)),
            running_weight: self::weight("weight", weight)?,
            terminal_weight: self::weight("terminal_weight", terminal_weight)?,
            penalty,
        };
        Ok(Self::term(m, Arc::new(term)))
    }

    /// Quadratic tracking of a reference state: ½ Σ_i w_i (x_i − r_i)² per
    /// s while running (w = ``running``) and ½ Σ_i w_T,i (x_i − r_i)² at the
    /// end (w_T = ``terminal``, default 0); ``reference``, ``running``,
    /// ``terminal``: (nq + nv,) each, weights ≥ 0.
    #[staticmethod]
    #[pyo3(signature = (model, reference, running, terminal = None))]
    fn quadratic(
        model: &Model,
        reference: &Bound<'_, PyAny>,
        running: &Bound<'_, PyAny>,
        terminal: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let m = &model.inner;
        let nx = m.nq + m.nv;
        let reference = vector(reference, "reference", nx)?;
        let w = vector(running, "running", nx)?;
        let wt = terminal.map_or(Ok(vec![0.0; nx]), |t| vector(t, "terminal", nx))?;
        if let Some(i) = w.iter().chain(&wt).position(|x| *x < 0.0) {
            return Err(PyValueError::new_err(format!("weights: entry {} is negative", i % nx)));
        }
        Ok(Self::term(m, Arc::new(QuadraticTracking::diagonal(reference, &w, &wt))))
    }

    /// Control effort ½ ``weight`` Σ_i (u_i − r_i)² per s, r = ``reference`` (nu,; default 0).
    #[staticmethod]
    #[pyo3(signature = (model, weight, reference = None))]
    fn control_effort(model: &Model, weight: f64, reference: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let m = &model.inner;
        let mut e = ControlEffort::uniform(m.nu(), self::weight("weight", weight)?);
        if let Some(r) = reference {
            e.reference = vector(r, "reference", m.nu())?;
        }
        Ok(Self::term(m, Arc::new(e)))
    }

    /// The sum of two costs (of the same model).
    fn __add__(&self, other: &MpcCost) -> PyResult<Self> {
        self.check_model(&other.model)?;
        let terms: Vec<Arc<dyn Cost>> = self.terms.iter().chain(&other.terms).cloned().collect();
        let sum = CostSum { terms: terms.clone() };
        Ok(Self { cost: Arc::new(sum), terms, model: self.model.clone() })
    }

    /// Number of terms in the sum.
    fn __len__(&self) -> usize {
        self.terms.len()
    }

    /// The running cost rate l(x, u) (per s) at state ``x`` (nq + nv,) and controls ``u`` (nu,).
    fn running(&self, x: &Bound<'_, PyAny>, u: &Bound<'_, PyAny>) -> PyResult<f64> {
        let m = &self.model;
        let x = vector(x, "x", m.nq + m.nv)?;
        let u = vector(u, "u", m.nu())?;
        Ok(self.cost.running(&mut Workspace::new(m.clone()), &x, &u, None))
    }

    /// The terminal cost l_T(x) at state ``x`` (nq + nv,).
    fn terminal(&self, x: &Bound<'_, PyAny>) -> PyResult<f64> {
        let m = &self.model;
        let x = vector(x, "x", m.nq + m.nv)?;
        Ok(self.cost.terminal(&mut Workspace::new(m.clone()), &x, None))
    }

    fn __repr__(&self) -> String {
        format!("MpcCost({} term(s), model '{}')", self.terms.len(), self.model.name)
    }
}
