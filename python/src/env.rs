//! `cenic._cenic.VecEnv`: cenic's vectorized gymnasium tasks
//! (`cenic::rl::VecEnv`) with NumPy in and out. The gymnasium classes in
//! `cenic/gym.py` wrap it.

use crate::batch::{Backend, ParamFields, make_gpu_batch, params_dict, positive, world_list};
use crate::render::{RenderSetup, camera_spec};
use crate::{ArrayIn, CenicError, ModelError, Np, lock, to_numpy};
use cenic::batch::{CpuBatch, WorldParams};
use cenic::integrator::Mode;
use cenic::rl::tasks::{self, Builtin, Kind};
use cenic::rl::{Autoreset, EnvConfig, Physics, RlError, Step};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub(crate) fn rl_err(e: RlError) -> PyErr {
    match e {
        RlError::Batch(b) => crate::batch_err(b),
        RlError::Model(m) => ModelError::new_err(m.to_string()),
        RlError::NotReset => CenicError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// What the Python layer needs from a `cenic::rl::VecEnv<B>` of any backend.
trait AnyEnv: Send {
    fn reset(&mut self, seed: Option<u64>) -> Result<&[f32], RlError>;
    fn reset_with_seeds(&mut self, seeds: &[u64]) -> Result<&[f32], RlError>;
    fn step(&mut self, actions: &[f32]) -> Result<Step<'_>, RlError>;
    fn obs(&self) -> &[f32];
    fn reward_terms(&self) -> &[f32];
    fn final_obs(&self) -> &[f32];
    fn has_final_obs(&self) -> &[bool];
    fn episode_returns(&self) -> &[f64];
    fn episode_lengths(&self) -> &[usize];
    fn failures(&self) -> (u64, Option<&str>);
    fn batch(&self) -> &dyn cenic::batch::Batch;
    fn reset_env_to(&mut self, env: usize, q: &[f64], v: &[f64]) -> Result<(), RlError>;
    fn set_params(&mut self, env: usize, p: WorldParams) -> Result<(), RlError>;
    /// The batch when it runs on the device.
    fn gpu_batch(&self) -> Option<&cenic::gpu::GpuBatch>;
}

impl<B: cenic::batch::Batch + Send + 'static> AnyEnv for cenic::rl::VecEnv<B> {
    fn reset(&mut self, seed: Option<u64>) -> Result<&[f32], RlError> {
        cenic::rl::VecEnv::reset(self, seed)
    }
    fn reset_with_seeds(&mut self, seeds: &[u64]) -> Result<&[f32], RlError> {
        cenic::rl::VecEnv::reset_with_seeds(self, seeds)
    }
    fn step(&mut self, actions: &[f32]) -> Result<Step<'_>, RlError> {
        cenic::rl::VecEnv::step(self, actions)
    }
    fn obs(&self) -> &[f32] {
        cenic::rl::VecEnv::obs(self)
    }
    fn reward_terms(&self) -> &[f32] {
        cenic::rl::VecEnv::reward_terms(self)
    }
    fn final_obs(&self) -> &[f32] {
        cenic::rl::VecEnv::final_obs(self)
    }
    fn has_final_obs(&self) -> &[bool] {
        cenic::rl::VecEnv::has_final_obs(self)
    }
    fn episode_returns(&self) -> &[f64] {
        cenic::rl::VecEnv::episode_returns(self)
    }
    fn episode_lengths(&self) -> &[usize] {
        cenic::rl::VecEnv::episode_lengths(self)
    }
    fn failures(&self) -> (u64, Option<&str>) {
        cenic::rl::VecEnv::failures(self)
    }
    fn batch(&self) -> &dyn cenic::batch::Batch {
        cenic::rl::VecEnv::<B>::batch(self)
    }
    fn reset_env_to(&mut self, env: usize, q: &[f64], v: &[f64]) -> Result<(), RlError> {
        cenic::rl::VecEnv::reset_env_to(self, env, q, v)
    }
    fn set_params(&mut self, env: usize, p: WorldParams) -> Result<(), RlError> {
        Ok(self.batch_mut().set_params(env, p)?)
    }
    fn gpu_batch(&self) -> Option<&cenic::gpu::GpuBatch> {
        (cenic::rl::VecEnv::<B>::batch(self) as &dyn std::any::Any).downcast_ref()
    }
}

/// The gymnasium ids of the built-in tasks.
#[pyfunction]
pub fn task_names() -> Vec<&'static str> {
    tasks::NAMES.to_vec()
}

/// The task of a gymnasium id (`Ant-v5`), a name without version (`Ant`) or a short name (`half_cheetah`).
fn parse_task(name: &str) -> PyResult<Kind> {
    Kind::parse(name)
        .or_else(|e| if name.contains('-') { Err(e) } else { Kind::parse(&format!("{name}-v5")) })
        .map_err(rl_err)
}

/// The folder of the shared gymnasium models: `models_dir`, else
/// `$CENIC_SHARED/models/gymnasium`, else `../shared` next to the cenic sources.
fn find_models_dir(given: Option<PathBuf>) -> PyResult<PathBuf> {
    if let Some(d) = given {
        return if d.is_dir() {
            Ok(d)
        } else {
            Err(ModelError::new_err(format!("models_dir {} is not a folder", d.display())))
        };
    }
    cenic::zoo::shared_dir().map(|s| s.join("models/gymnasium")).filter(|d| d.is_dir()).ok_or_else(|| {
        ModelError::new_err(
            "the gymnasium models were not found: pass models_dir= (the folder with ant.xml, …) or set CENIC_SHARED",
        )
    })
}

/// A vectorized environment of a built-in gymnasium v5 task (native part:
/// use ``cenic.make_vec`` for the gymnasium ``VectorEnv``).
#[pyclass(module = "cenic._cenic", frozen)]
pub struct VecEnv {
    inner: Mutex<Box<dyn AnyEnv>>,
    /// Each environment's parameters (set_params; resets keep them).
    params: Mutex<Vec<WorldParams>>,
    model: Arc<cenic::Model>,
    task: String,
    n: usize,
    obs_dim: usize,
    act_dim: usize,
    bounds: Vec<f64>,
    dt: f64,
    max_steps: usize,
    terms: Vec<&'static str>,
    backend: Backend,
    physics: String,
    kind: Kind,
    /// Frames (configure_render, render).
    render: Mutex<Option<RenderSetup>>,
}

impl VecEnv {
    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, Box<dyn AnyEnv>>> {
        lock(&self.inner, "environment")
    }
}

#[pymethods]
impl VecEnv {
    #[new]
    #[pyo3(signature = (task, num_envs, *, accuracy=None, dt=None, device="cpu", precision=None,
                        frame_skip=None, max_episode_steps=None, autoreset="next_step", models_dir=None,
                        first_env=0, integrator="cenic"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        task: &str,
        num_envs: usize,
        accuracy: Option<f64>,
        dt: Option<f64>,
        device: &str,
        precision: Option<&str>,
        frame_skip: Option<usize>,
        max_episode_steps: Option<usize>,
        autoreset: &str,
        models_dir: Option<PathBuf>,
        first_env: usize,
        integrator: &str,
    ) -> PyResult<Self> {
        if num_envs == 0 {
            return Err(PyValueError::new_err("num_envs must be at least 1"));
        }
        let backend = Backend::parse(device, precision)?;
        let kind = parse_task(task)?;
        let autoreset = match autoreset {
            "next_step" => Autoreset::NextStep,
            "same_step" => Autoreset::SameStep,
            a => return Err(PyValueError::new_err(format!("autoreset must be 'next_step' or 'same_step', got '{a}'"))),
        };
        let physics = match (integrator, accuracy, dt) {
            ("cenic", ..) => None,
            ("mujoco", None, None) if backend == Backend::Gpu => {
                return Err(PyValueError::new_err("integrator='mujoco' runs on the CPU only (device='cpu')"));
            }
            // MuJoCo's own integrator (the model's <option integrator>) at its timestep.
            ("mujoco", None, None) => Some(Physics::MuJoCo),
            ("mujoco", ..) => {
                return Err(PyValueError::new_err(
                    "integrator='mujoco' steps at the model's timestep: give neither accuracy= nor dt=",
                ));
            }
            (i, ..) => {
                return Err(PyValueError::new_err(format!("integrator must be 'cenic' or 'mujoco', got '{i}'")));
            }
        };
        let physics = match (physics, accuracy, dt) {
            (Some(p), ..) => p,
            (None, Some(_), Some(_)) => return Err(PyValueError::new_err("give accuracy= or dt=, not both")),
            (None, Some(a), None) => Physics::cenic(positive("accuracy", a)?),
            (None, None, Some(h)) => Physics::FixedStep(positive("dt", h)?),
            (None, None, None) => Physics::Fixed,
        };
        let dir = find_models_dir(models_dir)?;
        let model = Arc::new(tasks::load_model(kind, &dir).map_err(rl_err)?);
        let builtin = Arc::new(Builtin::new(kind, &model).map_err(rl_err)?);
        let config = EnvConfig { frame_skip, max_episode_steps, autoreset, first_env };
        let mode = physics.mode(&model);
        let env: Box<dyn AnyEnv> = match backend {
            Backend::CpuF64 => {
                let b = CpuBatch::<f64>::new(model.clone(), num_envs, mode.clone());
                Box::new(cenic::rl::VecEnv::new(b, builtin.clone(), config).map_err(rl_err)?)
            }
            Backend::CpuF32 => {
                let b = CpuBatch::<f32>::new(model.clone(), num_envs, mode.clone());
                Box::new(cenic::rl::VecEnv::new(b, builtin.clone(), config).map_err(rl_err)?)
            }
            Backend::Gpu => {
                let b = make_gpu_batch(py, device, &model, num_envs, &mode, None)?;
                Box::new(cenic::gpu::rl::device_env(b, builtin.clone(), config.clone()).map_err(rl_err)?)
            }
        };
        let spec = cenic::rl::Task::spec(builtin.as_ref());
        let fs = frame_skip.unwrap_or(spec.frame_skip);
        let bounds =
            model.actuators.iter().flat_map(|a| a.ctrl_range.unwrap_or([f64::NEG_INFINITY, f64::INFINITY])).collect();
        let physics = match &mode {
            Mode::Fixed { dt } => format!("fixed steps of {dt} s"),
            Mode::ErrorControlled(p) => format!("CENIC, accuracy {}", p.accuracy),
            Mode::MuJoCo(s) => format!("MuJoCo's {} steps of {} s", s.integrator.name(), s.dt),
            m => format!("baseline integrator {}", m.name()),
        };
        Ok(Self {
            inner: Mutex::new(env),
            params: Mutex::new(vec![WorldParams::default(); num_envs]),
            task: kind.id().to_string(),
            n: num_envs,
            obs_dim: spec.obs_dim,
            act_dim: model.nu(),
            bounds,
            dt: fs as f64 * model.options.timestep,
            max_steps: max_episode_steps.unwrap_or(spec.max_episode_steps),
            terms: spec.reward_terms.clone(),
            backend,
            physics,
            kind,
            render: Mutex::new(None),
            model,
        })
    }

    /// The gymnasium id of the task (e.g. ``Ant-v5``).
    #[getter]
    fn task(&self) -> &str {
        &self.task
    }
    /// Number of environments.
    #[getter]
    fn num_envs(&self) -> usize {
        self.n
    }
    /// Observation size.
    #[getter]
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }
    /// Action size.
    #[getter]
    fn act_dim(&self) -> usize {
        self.act_dim
    }
    /// Action bounds (act_dim, 2): each actuator's ctrlrange.
    #[getter]
    fn action_bounds<'py>(&self, py: Python<'py>) -> Np<'py, f64> {
        to_numpy(py, self.bounds.clone(), &[self.act_dim, 2])
    }
    /// Duration of one environment step (s).
    #[getter]
    fn dt(&self) -> f64 {
        self.dt
    }
    /// Episode length limit (steps).
    #[getter]
    fn max_episode_steps(&self) -> usize {
        self.max_steps
    }
    /// Names of the reward terms (gymnasium's info keys).
    #[getter]
    fn reward_term_names(&self) -> Vec<&'static str> {
        self.terms.clone()
    }
    /// The task's model.
    #[getter]
    fn model(&self) -> crate::model::Model {
        crate::model::Model { inner: self.model.clone() }
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
    /// How the physics advances ("fixed steps of … s" or "CENIC, accuracy …").
    #[getter]
    fn physics(&self) -> &str {
        &self.physics
    }

    /// Resets every environment; with a seed (an int), environment i
    /// draws from its own stream of ``seed`` and its index ``first_env + i``;
    /// with one seed per environment (a sequence of ints), environment i
    /// draws what a one-environment VecEnv reset with ``seed[i]`` draws.
    /// Later resets continue the streams. Returns the observations
    /// (num_envs, obs_dim) float32 (a new array).
    #[pyo3(signature = (seed=None))]
    fn reset<'py>(&self, py: Python<'py>, seed: Option<&Bound<'py, PyAny>>) -> PyResult<Np<'py, f32>> {
        let seeds: Option<Result<u64, Vec<u64>>> = match seed {
            None => None,
            Some(s) if s.is_none() => None,
            Some(s) => match s.extract::<u64>() {
                Ok(one) => Some(Ok(one)),
                Err(_) => {
                    let list: Vec<u64> = s.extract().map_err(|_| {
                        PyValueError::new_err(format!(
                            "seed must be a non-negative int, a sequence of {} of them, or None",
                            self.n
                        ))
                    })?;
                    if list.len() != self.n {
                        return Err(PyValueError::new_err(format!(
                            "seed: {} seeds for {} environments",
                            list.len(),
                            self.n
                        )));
                    }
                    Some(Err(list))
                }
            },
        };
        let obs = py.detach(|| -> PyResult<Vec<f32>> {
            let mut g = self.lock()?;
            let obs = match &seeds {
                None => g.reset(None),
                Some(Ok(one)) => g.reset(Some(*one)),
                Some(Err(list)) => g.reset_with_seeds(list),
            };
            Ok(obs.map_err(rl_err)?.to_vec())
        })?;
        Ok(to_numpy(py, obs, &[self.n, self.obs_dim]))
    }

    /// Steps every environment with ``actions`` (num_envs, act_dim),
    /// clipped to the action bounds (NaN or inf raise ValueError). Returns
    /// new arrays ``(obs float32 (num_envs, obs_dim), reward float64,
    /// terminated bool, truncated bool)``. Releases the GIL.
    #[allow(clippy::type_complexity)]
    fn step<'py>(
        &self,
        py: Python<'py>,
        actions: &Bound<'py, PyAny>,
    ) -> PyResult<(Np<'py, f32>, Np<'py, f64>, Np<'py, bool>, Np<'py, bool>)> {
        let a = ArrayIn::<f32>::new(actions, "actions")?;
        a.expect_shape(&[&[self.n, self.act_dim]])?;
        let actions = a.slice();
        let (obs, rew, term, trunc) = py.detach(|| -> PyResult<_> {
            let mut g = self.lock()?;
            let s = g.step(actions).map_err(rl_err)?;
            Ok((
                s.obs.to_vec(),
                s.reward.iter().map(|&r| r as f64).collect::<Vec<f64>>(),
                s.terminated.to_vec(),
                s.truncated.to_vec(),
            ))
        })?;
        let n = [self.n];
        Ok((
            to_numpy(py, obs, &[self.n, self.obs_dim]),
            to_numpy(py, rew, &n),
            to_numpy(py, term, &n),
            to_numpy(py, trunc, &n),
        ))
    }

    /// Reward terms of the last step (num_envs, n_terms) float32, named by ``reward_term_names``.
    fn reward_terms<'py>(&self, py: Python<'py>) -> PyResult<Np<'py, f32>> {
        let t = self.lock()?.reward_terms().to_vec();
        Ok(to_numpy(py, t, &[self.n, self.terms.len()]))
    }

    /// Same-step autoreset: ``(final_obs (num_envs, obs_dim), valid (num_envs,))``
    /// for the episodes that ended in the last step.
    fn final_obs<'py>(&self, py: Python<'py>) -> PyResult<(Np<'py, f32>, Np<'py, bool>)> {
        let g = self.lock()?;
        Ok((
            to_numpy(py, g.final_obs().to_vec(), &[self.n, self.obs_dim]),
            to_numpy(py, g.has_final_obs().to_vec(), &[self.n]),
        ))
    }

    /// ``(returns float64, lengths int64)`` of each environment's current
    /// episode (after the step that ended an episode: that episode's).
    fn episode_stats<'py>(&self, py: Python<'py>) -> PyResult<(Np<'py, f64>, Np<'py, i64>)> {
        let g = self.lock()?;
        let lengths = g.episode_lengths().iter().map(|&l| l as i64).collect();
        Ok((to_numpy(py, g.episode_returns().to_vec(), &[self.n]), to_numpy(py, lengths, &[self.n])))
    }

    /// Sets per-environment physical parameters of ``envs`` (all when
    /// None) for domain randomization; resets and autoresets keep them.
    /// The keywords are those of ``Batch.set_params``: dimensionless
    /// multipliers ``mass_scale``, ``stiffness``, ``dissipation``,
    /// ``mu_static``, ``mu_dynamic``, each a scalar or one value per listed
    /// environment; parameters not given are kept.
    #[pyo3(signature = (envs=None, **multipliers))]
    fn set_params(&self, envs: Option<&Bound<'_, PyAny>>, multipliers: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        let list = world_list(envs, self.n)?;
        let fields = ParamFields::from_kwargs(list.len(), multipliers)?;
        let mut g = self.lock()?;
        let mut params = lock(&self.params, "parameters")?;
        for (k, &w) in list.iter().enumerate() {
            let p = fields.apply(params[w], k);
            g.set_params(w, p).map_err(rl_err)?;
            params[w] = p;
        }
        Ok(())
    }

    /// Each environment's parameters as a dict of (num_envs,) arrays
    /// (mass_scale, stiffness, dissipation, mu_static, mu_dynamic).
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        params_dict(py, &lock(&self.params, "parameters")?)
    }

    /// ``(count, last_reason)``: episodes cut because the simulator failed their world.
    fn failures(&self) -> PyResult<(u64, Option<String>)> {
        let g = self.lock()?;
        let (n, r) = g.failures();
        Ok((n, r.map(str::to_string)))
    }

    /// Positions (num_envs, nq) and velocities (num_envs, nv) of the worlds.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<(Np<'py, f64>, Np<'py, f64>)> {
        let (nq, nv) = (self.model.nq, self.model.nv);
        let (mut q, mut v) = (vec![0.0; self.n * nq], vec![0.0; self.n * nv]);
        let g = self.lock()?;
        g.batch().qpos(&mut q);
        g.batch().qvel(&mut v);
        Ok((to_numpy(py, q, &[self.n, nq]), to_numpy(py, v, &[self.n, nv])))
    }

    /// Starts a new episode of environment ``env`` at state (qpos (nq,),
    /// qvel (nv,)) instead of a sampled one; returns all observations.
    fn reset_env_to<'py>(
        &self,
        py: Python<'py>,
        env: usize,
        qpos: &Bound<'py, PyAny>,
        qvel: &Bound<'py, PyAny>,
    ) -> PyResult<Np<'py, f32>> {
        let q = ArrayIn::<f64>::new(qpos, "qpos")?;
        q.expect_shape(&[&[self.model.nq]])?;
        q.check_finite(0)?;
        let v = ArrayIn::<f64>::new(qvel, "qvel")?;
        v.expect_shape(&[&[self.model.nv]])?;
        v.check_finite(0)?;
        let mut g = self.lock()?;
        g.reset_env_to(env, q.slice(), v.slice()).map_err(rl_err)?;
        Ok(to_numpy(py, g.obs().to_vec(), &[self.n, self.obs_dim]))
    }

    /// Step statistics summed over the worlds: dict of accepted, rejected,
    /// newton_iterations, contact_overflow and failed worlds now.
    fn physics_stats(&self) -> PyResult<std::collections::HashMap<&'static str, u64>> {
        let g = self.lock()?;
        let b = g.batch();
        let mut total = cenic::integrator::WorldStats::default();
        let mut failed = 0;
        for w in 0..self.n {
            total.merge(&b.stats(w));
            failed += u64::from(b.status(w) != cenic::batch::WorldStatus::Ok);
        }
        Ok([
            ("accepted", total.accepted),
            ("rejected", total.rejected),
            ("newton_iterations", total.newton_iterations),
            ("contact_overflow", total.contact_overflow),
            ("failed_worlds", failed),
        ]
        .into_iter()
        .collect())
    }

    /// Sets the frames ``render`` returns: ``width`` × ``height`` pixels,
    /// seen from ``camera``: None (the task's default camera, as gymnasium's
    /// v5 task places it at the first render, from the first environment's
    /// state), a model camera's id or name, or a dict of free-camera
    /// settings (``distance`` (m), ``lookat`` (m), ``azimuth``,
    /// ``elevation`` (degrees)) over the task's default.
    #[pyo3(signature = (width=480, height=480, camera=None))]
    fn configure_render(&self, width: usize, height: usize, camera: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let spec = camera_spec(&self.model, self.kind, camera)?;
        *lock(&self.render, "renderer")? = Some(RenderSetup::new(width, height, spec)?);
        Ok(())
    }

    /// One frame per environment at the current state: ``"rgb_array"``
    /// (num_envs, height, width, 3) uint8, or ``"depth_array"`` (num_envs,
    /// height, width) float32, the distance along the viewing axis in
    /// metres (MuJoCo's metric depth; gymnasium's ``depth_array`` returns
    /// the raw depth buffer instead). Rendered by ``cenic::render`` (wgpu;
    /// lavapipe on machines without a GPU); a GPU environment renders from
    /// its device buffers.
    #[pyo3(signature = (mode="rgb_array"))]
    fn render(&self, py: Python<'_>, mode: &str) -> PyResult<Py<PyAny>> {
        let mut setup = lock(&self.render, "renderer")?;
        if setup.is_none() {
            *setup = Some(RenderSetup::new(480, 480, camera_spec(&self.model, self.kind, None)?)?);
        }
        let g = self.lock()?;
        let env: &dyn AnyEnv = g.as_ref();
        setup.as_mut().expect("set above").render(py, self.kind, env.batch(), env.gpu_batch(), mode)
    }

    fn __repr__(&self) -> String {
        format!("VecEnv('{}', num_envs={}, {}, device='{}')", self.task, self.n, self.physics, self.device())
    }
}
