"""cenic: error-controlled convex contact simulation for robots, from Python.

- :class:`Model` — MJCF models (``Model.from_mjcf(path)``, ``summary()``, sizes).
- :class:`Batch` — many worlds stepped in parallel on the CPU (f64/f32) or
  the GPU, NumPy state in and out, per-world parameters, statistics and status.
- :func:`make_vec` / :func:`make` — gymnasium ``VectorEnv`` / ``Env`` of the
  gymnasium v5 MuJoCo tasks simulated by cenic.
- :func:`rollout_jacobians` — a recorded trajectory: vector–Jacobian
  products by the reverse pass, the interval Jacobians (D_x, D_u, D_θ)
  formed on first access; :func:`simulate` — the same forward map alone.
- :class:`MpcTask` / :class:`Planner` — model-predictive control of the
  built-in tasks (reacher, pusher, pusher_plain, billiards, cube_turn, half
  cheetah): iLQR on the
  interval Jacobians with and without contacts from distance, predictive
  sampling, their hybrid, and the closed loop (``MpcTask.run``);
  ``MpcTask.custom(model, cost, ...)`` with an :class:`MpcCost` for your own.
- :func:`sysid_fit` — ``cenic sysid fit`` (system identification of a
  tossed box) as a function returning its report.
- :func:`write_replay` — the replay page of ``cenic view`` (HTML, three.js
  inside) of positions over time, one track per world.

GPU selection: ``device="gpu"`` (the adapter this process picks: under
torchrun its ``LOCAL_RANK``, under ``CUDA_VISIBLE_DEVICES`` the first
visible GPU), ``"gpu:N"`` or ``"gpu:NAME"``; :func:`adapters` lists them.
:mod:`cenic.ray` (``pip install cenic[ray]``) runs environments,
evaluations and system identification on a Ray cluster.

Errors are raised as :class:`CenicError` subclasses (:class:`ModelError`,
:class:`SimulationError`, :class:`GpuError`) or ``ValueError`` /
``TypeError`` / ``IndexError`` for bad arguments, with the Rust message.
"""

from ._cenic import (
    Batch,
    CenicError,
    GpuError,
    Model,
    ModelError,
    MpcCost,
    MpcTask,
    Planner,
    Rollout,
    SimulationError,
    __version__,
    adapters,
    gpu_available,
    mpc_task_names,
    rollout_jacobians,
    task_names,
    write_replay,
)
from .gym import Env, VectorEnv, make, make_vec, register_tasks
from .sysid import sysid_fit

register_tasks()


def simulate(model: Model, x0, controls=None, params=None, **kwargs):
    """The forward map of :func:`rollout_jacobians` alone: same arguments
    (the ``cfd_*`` settings have no effect), no Jacobians; returns the
    trajectory (…, nsteps + 1, nq + nv). Use it for finite differences of
    the gradients."""
    return rollout_jacobians(model, x0, controls, params, jacobians=False, **kwargs).trajectory

__all__ = [
    "Batch",
    "CenicError",
    "Env",
    "GpuError",
    "Model",
    "ModelError",
    "MpcCost",
    "MpcTask",
    "Planner",
    "Rollout",
    "SimulationError",
    "VectorEnv",
    "__version__",
    "adapters",
    "gpu_available",
    "make",
    "make_vec",
    "mpc_task_names",
    "register_tasks",
    "rollout_jacobians",
    "simulate",
    "sysid_fit",
    "task_names",
    "write_replay",
]
