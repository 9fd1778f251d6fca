"""Gymnasium interfaces to cenic's built-in tasks.

:class:`VectorEnv` is a :class:`gymnasium.vector.VectorEnv` over ``num_envs``
worlds stepped together in Rust (one call per step, no per-environment
Python); :class:`Env` is a single :class:`gymnasium.Env`. The tasks are
gymnasium's v5 MuJoCo tasks (``Ant``, ``HalfCheetah``, ``Humanoid``,
``InvertedPendulum``, ``InvertedDoublePendulum``, ``Reacher``, ``Pusher``)
with gymnasium's observations, rewards, terminations, reset noise, frame
skip and episode lengths, simulated by cenic (see ``cenic::rl`` in the
Rust docs for where the numbers differ from MuJoCo's, e.g. contact forces).

Physics: by default fixed steps of the model's ``timestep``, ``frame_skip``
per environment step, as gymnasium does; ``accuracy=`` uses CENIC error
control over each environment step, ``dt=`` another fixed step (s).
``integrator="mujoco"`` steps with MuJoCo's own integrator instead (the
model's ``<option integrator>``, Euler or RK4, at its ``timestep``, on
MuJoCo's soft constraints; CPU only): the physics gymnasium + MuJoCo
steps, for policies meant to run there (cenic's default integrators are
implicit or error controlled and part from MuJoCo's explicit steps on
chaotic tasks).
``device="gpu"`` runs every world and the task on the GPU.

Rendering (``render_mode``): ``"rgb_array"`` (height, width, 3) uint8 and
``"depth_array"`` (height, width) float32 metres along the viewing axis
(MuJoCo's metric depth; gymnasium's MuJoCo tasks return the raw depth
buffer instead), one frame per environment from a vector environment, drawn
by ``cenic::render`` (wgpu; Mesa's lavapipe where there is no GPU). The
camera is gymnasium's v5 default for the task (placed at the first render
from the first environment's state), a model camera (``camera_id`` /
``camera_name``) or the task's free camera with ``default_camera_config``
(``distance``, ``lookat``, ``azimuth``, ``elevation``); ``width`` and
``height`` default to 480 as in gymnasium; ``render_fps`` is 1 / dt.
``"human"`` shows the frames in a Tk window and needs a display (it is
listed in ``metadata["render_modes"]`` only where ``DISPLAY`` or
``WAYLAND_DISPLAY`` is set).
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from . import _cenic

__all__ = ["RENDER_MODES", "Env", "VectorEnv", "make", "make_vec"]


def _spaces(native: _cenic.VecEnv) -> tuple[spaces.Box, spaces.Box]:
    obs = spaces.Box(-np.inf, np.inf, shape=(native.obs_dim,), dtype=np.float32)
    bounds = native.action_bounds.astype(np.float32)
    act = spaces.Box(low=bounds[:, 0], high=bounds[:, 1], dtype=np.float32)
    return obs, act


def _seeded_reset(env: Any, base: type, seed: Any, options: dict[str, Any] | None) -> np.ndarray:
    """Resets the native environment of ``env`` (an Env or VectorEnv, whose
    gymnasium class ``base`` keeps ``np_random``) and returns the
    observations. The Rust streams get ``seed`` (an int, or for a
    VectorEnv one int per environment); on the first unseeded reset a draw
    from ``np_random`` (gymnasium: unseeded means random); afterwards they
    continue."""
    if options:
        raise ValueError(f"cenic environments take no reset options, got {sorted(options)}")

    def bad(x: Any) -> bool:
        return isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < 0

    if base is gymnasium.vector.VectorEnv and isinstance(seed, (list, tuple, np.ndarray)):
        seeds = list(seed)
        if len(seeds) != env.num_envs or any(bad(x) for x in seeds):
            raise ValueError(f"seed: expected {env.num_envs} non-negative ints, got {seed!r}")
        base.reset(env, seed=int(seeds[0]))
        obs = env.native.reset([int(x) for x in seeds])
        env._seeded = True
        return obs
    if seed is not None and bad(seed):
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    base.reset(env, seed=seed)
    if seed is not None:
        rust_seed = int(seed)
    elif not env._seeded:
        rust_seed = int(env.np_random.integers(0, 2**63 - 1))
    else:
        rust_seed = None
    obs = env.native.reset(rust_seed)
    env._seeded = True
    return obs


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


#: The render modes of cenic's environments on this machine.
RENDER_MODES = ["rgb_array", "depth_array"] + (["human"] if _has_display() else [])


def _render_setup(
    native: _cenic.VecEnv,
    render_mode: str | None,
    width: int,
    height: int,
    camera_id: int | None,
    camera_name: str | None,
    default_camera_config: dict[str, Any] | None,
) -> None:
    """Checks ``render_mode`` and configures the native renderer."""
    if render_mode is not None and render_mode not in ("rgb_array", "depth_array", "human"):
        raise ValueError(f"render_mode must be None, 'rgb_array', 'depth_array' or 'human', got {render_mode!r}")
    if render_mode == "human" and not _has_display():
        raise RuntimeError(
            "render_mode='human' needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set: "
            "use render_mode='rgb_array' (e.g. with gymnasium.wrappers.RecordVideo) instead"
        )
    if camera_id is not None and camera_name is not None:
        raise ValueError("give camera_id or camera_name, not both")
    camera: Any = camera_id if camera_id is not None else camera_name
    if camera is None and default_camera_config:
        camera = dict(default_camera_config)
    native.configure_render(width, height, camera)


def _metadata(native: _cenic.VecEnv, **extra: Any) -> dict[str, Any]:
    return {"render_modes": list(RENDER_MODES), "render_fps": int(np.round(1.0 / native.dt)), **extra}


class _Window:
    """A Tk window showing frames (render_mode="human")."""

    def __init__(self, title: str) -> None:
        try:
            import tkinter
        except ImportError as e:  # pragma: no cover - depends on the Python build
            raise RuntimeError("render_mode='human' needs tkinter (Python's Tk bindings)") from e
        self._tk = tkinter
        self.root = tkinter.Tk()
        self.root.title(title)
        self.label = tkinter.Label(self.root)
        self.label.pack()
        self.image = None

    def show(self, frame: np.ndarray) -> None:
        h, w, _ = frame.shape
        ppm = f"P6 {w} {h} 255\n".encode() + np.ascontiguousarray(frame, dtype=np.uint8).tobytes()
        self.image = self._tk.PhotoImage(width=w, height=h, data=ppm, format="PPM")
        self.label.configure(image=self.image)
        self.root.update()

    def close(self) -> None:
        self.root.destroy()


def _autoreset_mode(mode: AutoresetMode | str) -> AutoresetMode:
    """An AutoresetMode from the enum or a name: "NextStep", "next_step", "SAME_STEP", …"""
    if isinstance(mode, AutoresetMode):
        return mode
    key = str(mode).replace("_", "").lower()
    for m in AutoresetMode:
        if m.value.lower() == key:
            return m
    raise ValueError(f"unknown autoreset_mode {mode!r} (NEXT_STEP or SAME_STEP)")


class VectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` copies of a built-in task as a gymnasium vector environment.

    Arguments: ``task`` (``"Ant"``, ``"Ant-v5"`` or ``"ant"``; see
    :func:`cenic.task_names`), ``num_envs``, and keywords ``accuracy`` |
    ``dt`` (physics, see the module docs), ``device`` (``"cpu"`` |
    ``"gpu"``), ``precision`` (``"f64"`` | ``"f32"``, CPU), ``frame_skip``,
    ``max_episode_steps``, ``autoreset_mode`` (``AutoresetMode.NEXT_STEP``,
    gymnasium's default, or ``SAME_STEP``; also as strings),
    ``models_dir`` (the folder of the gymnasium MJCF models; default
    ``$CENIC_SHARED/models/gymnasium``) and ``first_env`` (this
    environment's index offset in a larger vector environment split over
    processes, e.g. by :class:`cenic.ray.RayVecEnv`: environment i draws
    the random stream of environment ``first_env + i`` of the whole).
    ``device`` is ``"cpu"``, ``"gpu"`` (the adapter the environment picks:
    ``LOCAL_RANK``, ``CUDA_VISIBLE_DEVICES``, see :func:`cenic.adapters`),
    ``"gpu:N"`` or ``"gpu:NAME"``. ``integrator``: ``"cenic"`` (default)
    or ``"mujoco"`` (see the module docs).

    ``step`` returns observations (num_envs, obs_dim) float32, rewards
    float64, terminations and truncations bool, and infos holding each
    reward term (e.g. ``reward_forward``) with its ``_name`` mask, as
    gymnasium's vector environments do. Truncation also marks an episode
    whose world the simulator failed: a step in which that happens carries
    ``infos["simulator_failures"]``, the count so far in every entry (the
    last reason is in ``native.failures()``). With ``SAME_STEP`` the final observations of ended
    episodes are in ``infos["final_obs"]`` (object array) with
    ``infos["_final_obs"]``, and their terms in ``infos["final_info"]``.
    Every returned array is new (one copy out of Rust per step).
    """

    def __init__(
        self,
        task: str,
        num_envs: int,
        *,
        accuracy: float | None = None,
        dt: float | None = None,
        device: str = "cpu",
        precision: str | None = None,
        frame_skip: int | None = None,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        models_dir: str | None = None,
        first_env: int = 0,
        integrator: str = "cenic",
        render_mode: str | None = None,
        width: int = 480,
        height: int = 480,
        camera_id: int | None = None,
        camera_name: str | None = None,
        default_camera_config: dict[str, Any] | None = None,
    ) -> None:
        mode = _autoreset_mode(autoreset_mode)
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode must be NEXT_STEP or SAME_STEP, got {mode}")
        self._native = _cenic.VecEnv(
            task,
            num_envs,
            accuracy=accuracy,
            dt=dt,
            device=device,
            precision=precision,
            frame_skip=frame_skip,
            max_episode_steps=max_episode_steps,
            autoreset="next_step" if mode == AutoresetMode.NEXT_STEP else "same_step",
            models_dir=models_dir,
            first_env=first_env,
            integrator=integrator,
        )
        self.num_envs = num_envs
        self.autoreset_mode = mode
        _render_setup(self._native, render_mode, width, height, camera_id, camera_name, default_camera_config)
        self.metadata = _metadata(self._native, autoreset_mode=mode)
        self.render_mode = render_mode
        self._window: _Window | None = None
        self.single_observation_space, self.single_action_space = _spaces(self._native)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._terms = list(self._native.reward_term_names)
        self._ended = np.zeros(num_envs, dtype=bool)
        self._failures = 0
        self._seeded = False

    @property
    def native(self) -> _cenic.VecEnv:
        """The Rust environment (state, statistics, ``reset_env_to``)."""
        if self._native is None:
            raise gymnasium.error.ClosedEnvironmentError("the environment is closed")
        return self._native

    @property
    def dt(self) -> float:
        """Duration of one environment step (s)."""
        return self.native.dt

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every environment; environment i draws its initial state
        from its own stream of ``seed`` (an int; later resets continue the
        streams), or with one seed per environment (a list), what
        ``cenic.make(task).reset(seed=seed[i])`` draws. ``options`` is not
        supported beyond an empty dict."""
        obs = _seeded_reset(self, gymnasium.vector.VectorEnv, seed, options)
        self._ended[:] = False
        return obs, {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every environment with ``actions`` (num_envs, act_dim),
        clipped to the action space (NaN or inf raise ValueError)."""
        native = self.native
        obs, rewards, terminated, truncated = native.step(actions)
        infos: dict[str, Any] = {}
        terms = native.reward_terms()
        # Environments reset by this step (next-step autoreset) report no terms.
        valid = ~self._ended if self.autoreset_mode == AutoresetMode.NEXT_STEP else np.ones(self.num_envs, bool)
        for k, name in enumerate(self._terms):
            infos[name] = terms[:, k].astype(np.float64)
            infos["_" + name] = valid.copy()
        failures, _ = native.failures()
        if failures != self._failures:
            # Vector-info form (one entry per environment, with its mask), as
            # gymnasium's DictInfoToList and RLlib's env runners expect.
            infos["simulator_failures"] = np.full(self.num_envs, failures, dtype=np.int64)
            infos["_simulator_failures"] = np.ones(self.num_envs, dtype=bool)
            self._failures = failures
        ended = terminated | truncated
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            final, has = native.final_obs()
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(has):
                final_obs[i] = final[i]
            infos["final_obs"] = final_obs
            infos["_final_obs"] = has
            final_info: dict[str, Any] = {}
            for k, name in enumerate(self._terms):
                final_info[name] = terms[:, k].astype(np.float64)
                final_info["_" + name] = has.copy()
            infos["final_info"] = final_info
            infos["_final_info"] = has.copy()
        self._ended = ended
        return obs, rewards, terminated, truncated, infos

    def render(self) -> tuple[np.ndarray, ...] | None:
        """One frame per environment, as gymnasium's vector environments
        return them (a tuple, e.g. for ``gymnasium.wrappers.vector.RecordVideo``):
        (height, width, 3) uint8 for ``rgb_array``, (height, width) float32
        metres for ``depth_array``, views of one (num_envs, …) array (so
        ``np.stack`` is cheap); ``human`` shows the environments side by side."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode (make the environment with render_mode=...)")
            return None
        if self.render_mode == "human":
            frames = self.native.render("rgb_array")
            if self._window is None:
                self._window = _Window(f"cenic {self.native.task}")
            self._window.show(np.concatenate(list(frames), axis=1))
            return None
        return tuple(self.native.render(self.render_mode))

    def close_extras(self, **kwargs: Any) -> None:
        if self._window is not None:
            self._window.close()
            self._window = None
        self._native = None

    def __repr__(self) -> str:
        return f"cenic.VectorEnv({self._native!r})" if self._native is not None else "cenic.VectorEnv(closed)"


class Env(gymnasium.Env):
    """One built-in task as a :class:`gymnasium.Env` (same keywords as
    :class:`VectorEnv`, without ``num_envs`` and ``autoreset_mode``;
    ``render_mode`` and the camera keywords as in the module docs).
    Episodes end with ``terminated`` (the task's rule) or ``truncated``
    (``max_episode_steps``, or the simulator failed the world); call
    ``reset`` then. ``info`` holds the reward terms as floats."""

    metadata = {"render_modes": list(RENDER_MODES)}

    def __init__(
        self,
        task: str,
        *,
        render_mode: str | None = None,
        width: int = 480,
        height: int = 480,
        camera_id: int | None = None,
        camera_name: str | None = None,
        default_camera_config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._native = _cenic.VecEnv(task, 1, autoreset="next_step", **kwargs)
        _render_setup(self._native, render_mode, width, height, camera_id, camera_name, default_camera_config)
        self.metadata = _metadata(self._native)
        self.render_mode = render_mode
        self._window: _Window | None = None
        self.observation_space, self.action_space = _spaces(self._native)
        self._terms = list(self._native.reward_term_names)
        self._seeded = False

    @property
    def native(self) -> _cenic.VecEnv:
        """The Rust environment (one world)."""
        return self._native

    @property
    def dt(self) -> float:
        """Duration of one environment step (s)."""
        return self._native.dt

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        return _seeded_reset(self, gymnasium.Env, seed, options)[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = np.asarray(action, dtype=np.float32)
        if a.shape != self.action_space.shape:
            raise ValueError(f"action: expected shape {self.action_space.shape}, got {a.shape}")
        obs, reward, terminated, truncated = self._native.step(a[None, :])
        terms = self._native.reward_terms()[0]
        info = {name: float(terms[k]) for k, name in enumerate(self._terms)}
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), info

    def render(self) -> np.ndarray | None:
        """The frame of the current state: (height, width, 3) uint8 for
        ``rgb_array``, (height, width) float32 metres for ``depth_array``;
        ``human`` shows it in a window."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode (make the environment with render_mode=...)")
            return None
        if self.render_mode == "human":
            if self._window is None:
                self._window = _Window(f"cenic {self._native.task}")
            self._window.show(self._native.render("rgb_array")[0])
            return None
        return self._native.render(self.render_mode)[0]

    def close(self) -> None:
        if self._window is not None:
            self._window.close()
            self._window = None


def make_vec(task: str, num_envs: int, **kwargs: Any) -> VectorEnv:
    """A :class:`VectorEnv` of ``num_envs`` copies of ``task`` (keywords as there)."""
    return VectorEnv(task, num_envs, **kwargs)


def make(task: str, **kwargs: Any) -> Env:
    """A single :class:`Env` of ``task`` (keywords as :class:`VectorEnv`'s)."""
    return Env(task, **kwargs)


def register_tasks() -> None:
    """Registers ``cenic/<task>`` ids (e.g. ``cenic/Ant-v5``) with
    gymnasium, so ``gymnasium.make("cenic/Ant-v5")`` and
    ``gymnasium.make_vec("cenic/Ant-v5", n, vectorization_mode="vector_entry_point")`` work."""
    for name in _cenic.task_names():
        env_id = f"cenic/{name}"
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point="cenic.gym:Env",
                vector_entry_point="cenic.gym:VectorEnv",
                kwargs={"task": name},
            )
