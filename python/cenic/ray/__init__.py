"""cenic on a Ray cluster (``pip install cenic[ray]``).

- :class:`RayVecEnv` — a gymnasium ``VectorEnv`` whose environments live in
  Ray actors, each a cenic :class:`~cenic.VectorEnv` of its share, stepped
  in parallel; the same seed gives the same observations as a local
  :func:`cenic.make_vec` of the same total size (bit for bit on the CPU).
- :func:`evaluate` — per-episode returns of a policy over many seeded,
  domain-randomized episodes, spread over Ray tasks.
- :func:`sysid_fit` — ``cenic sysid fit`` with the toss segments of every
  Adam step sharded over Ray actors (``cenic sysid fit --ray ADDRESS`` on
  the command line); the result equals the local fit.
- RLlib: the registered ``cenic/<task>`` ids are RLlib env-runner
  environments as they are (``vector_entry_point``, next-step autoreset);
  see :data:`RLLIB_EXAMPLE`.

Ray is used as it is: connect with ``ray.init(address=...)`` before
building these objects (or let Ray start a local cluster). Workers import
this package, so install it (with the same version) on every node.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from .. import CenicError, _cenic
from ..gym import VectorEnv, _autoreset_mode

try:
    import ray
    from ray.exceptions import RayActorError
except ImportError as e:  # pragma: no cover - exercised only without ray
    raise ImportError(f"cenic.ray needs Ray: pip install 'cenic[ray]' (or pip install ray) ({e})") from e

__all__ = [
    "RLLIB_EXAMPLE",
    "RayGradients",
    "RayVecEnv",
    "WorkerDiedError",
    "evaluate",
    "split",
    "sysid_fit",
]

#: An RLlib configuration that trains PPO on ``cenic/Ant-v5``: every env
#: runner builds one cenic vector environment through the id's
#: ``vector_entry_point`` (``"cenic:"`` makes the runner's process import
#: cenic, which registers the ids). Keywords of :class:`cenic.VectorEnv`
#: go in ``env_config``.
RLLIB_EXAMPLE = """\
from ray.rllib.algorithms.ppo import PPOConfig

config = (
    PPOConfig()
    .environment("cenic:cenic/Ant-v5", env_config={"max_episode_steps": 1000})
    .env_runners(
        num_env_runners=8,                            # processes (Ray actors)
        num_envs_per_env_runner=256,                  # worlds per cenic VectorEnv
        gym_env_vectorize_mode="vector_entry_point",  # cenic steps them together
        num_cpus_per_env_runner=2,
    )
)
algo = config.build_algo()
"""


class WorkerDiedError(CenicError):
    """A Ray worker of a :class:`RayVecEnv` died (killed, out of memory, its
    node lost). ``workers``: their indices; ``env_indices``: the
    environments they held (int64 array). ``reset()`` re-creates them."""

    def __init__(self, message: str, workers: list[int], env_indices: np.ndarray) -> None:
        super().__init__(message)
        self.workers = workers
        self.env_indices = env_indices


def split(num_envs: int, num_workers: int) -> list[tuple[int, int]]:
    """The environments [a, b) of each of ``num_workers`` workers: contiguous
    shares whose sizes differ by at most one, the larger ones first."""
    if num_workers < 1 or num_envs < num_workers:
        raise ValueError(f"need 1 <= num_workers <= num_envs, got {num_workers} workers for {num_envs} environments")
    q, r = divmod(num_envs, num_workers)
    bounds, a = [], 0
    for k in range(num_workers):
        b = a + q + (1 if k < r else 0)
        bounds.append((a, b))
        a = b
    return bounds


def _threads_from_resources(resources: dict[str, Any]) -> int:
    return max(1, int(resources.get("num_cpus", 1)))


class _EnvWorker:
    """A Ray actor holding one cenic VectorEnv: environments [a, b) of a
    :class:`RayVecEnv`."""

    def __init__(self, task: str, num_envs: int, first_env: int, threads: int, kwargs: dict[str, Any]) -> None:
        # Before the first parallel loop builds rayon's pool: one thread per CPU Ray gave this actor.
        os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
        self.env = VectorEnv(task, num_envs, first_env=first_env, **kwargs)

    def describe(self) -> dict[str, Any]:
        e = self.env
        return {
            "obs_dim": e.native.obs_dim,
            "action_low": e.single_action_space.low,
            "action_high": e.single_action_space.high,
            "dt": e.dt,
            "max_episode_steps": e.native.max_episode_steps,
            "pid": os.getpid(),
            "node": ray.util.get_node_ip_address(),
        }

    def reset(self, seed: Any) -> np.ndarray:
        return self.env.reset(seed=seed)[0]

    def step(self, actions: np.ndarray) -> tuple[Any, ...]:
        return self.env.step(actions)

    def set_params(self, envs: np.ndarray, multipliers: dict[str, Any]) -> dict[str, np.ndarray]:
        self.env.native.set_params(envs, **multipliers)
        return self.env.native.params

    def restore_params(self, params: dict[str, np.ndarray]) -> None:
        self.env.native.set_params(None, **params)

    def params(self) -> dict[str, np.ndarray]:
        return self.env.native.params


_EnvActor = ray.remote(_EnvWorker)


def _join(parts: list[dict[str, Any]], sizes: list[int]) -> dict[str, Any]:
    """Joins the vector infos of consecutive shards: each key's arrays
    concatenated in shard order (per key and shard, never per
    environment); a shard without the key contributes None (object
    arrays), False (masks, booleans) or zeros, entries its mask marks
    absent."""
    keys: list[str] = []
    for p in parts:
        keys.extend(k for k in p if k not in keys)
    out: dict[str, Any] = {}
    for k in keys:
        present = [p.get(k) for p in parts]
        sample = next(v for v in present if v is not None)
        if isinstance(sample, dict):
            out[k] = _join([v if v is not None else {} for v in present], sizes)
            continue
        chunks = []
        for v, n in zip(present, sizes):
            if v is None:
                v = np.full(n, None, dtype=object) if sample.dtype == object else np.zeros(n, dtype=sample.dtype)
            chunks.append(v)
        out[k] = np.concatenate(chunks)
    return out


class RayVecEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` copies of a built-in task spread over ``num_workers`` Ray
    actors, as one gymnasium vector environment.

    Worker k holds environments [a_k, b_k) of :func:`split` as a cenic
    :class:`~cenic.VectorEnv` built with ``first_env=a_k`` and the keywords
    ``make_vec_kwargs`` (``accuracy``, ``dt``, ``device``, ``precision``,
    ``frame_skip``, ``max_episode_steps``, ``models_dir``); so the same
    seed and actions give the same observations, rewards, flags and infos
    as ``cenic.make_vec(task, num_envs, **make_vec_kwargs)`` (bit for bit
    on the CPU). ``resources_per_worker`` are Ray actor options (default
    ``{"num_cpus": 1}``; each worker steps its worlds on that many threads;
    ``{"num_gpus": 1}`` with ``device="gpu"`` gives each worker the GPU Ray
    assigns it, which cenic picks through ``CUDA_VISIBLE_DEVICES``).

    ``step`` sends each worker its rows of the actions and joins the
    results by shard (one ``np.concatenate`` per array). When a worker has
    died, ``step`` raises :class:`WorkerDiedError` naming its environments;
    ``reset`` re-creates it (with its environments' parameters) and resets
    every environment. Parameters for domain randomization:
    :meth:`set_params` (the keywords of ``VecEnv.set_params``).
    """

    def __init__(
        self,
        task: str,
        num_envs: int,
        num_workers: int,
        *,
        resources_per_worker: dict[str, Any] | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        **make_vec_kwargs: Any,
    ) -> None:
        if "first_env" in make_vec_kwargs:
            raise ValueError("RayVecEnv sets each worker's first_env itself")
        self.num_envs = num_envs
        self.bounds = split(num_envs, num_workers)
        self._sizes = [b - a for a, b in self.bounds]
        mode = _autoreset_mode(autoreset_mode)
        self.autoreset_mode = mode
        self._task = task
        self._kwargs = dict(make_vec_kwargs, autoreset_mode=mode.value)
        self._resources = dict(resources_per_worker or {"num_cpus": 1})
        self._workers: list[Any] = [self._start(k) for k in range(num_workers)]
        self._dead: dict[int, str] = {}
        self._params: list[dict[str, np.ndarray] | None] = [None] * num_workers
        self._failures = [0] * num_workers
        self._seeded = False
        try:
            d = ray.get(self._workers[0].describe.remote())
        except RayActorError as e:
            raise CenicError(f"RayVecEnv: worker 0 failed to start: {e}") from e
        self.worker_info = d
        self.metadata = {"autoreset_mode": mode, "render_modes": []}
        self.render_mode = None
        self.single_observation_space = gymnasium.spaces.Box(-np.inf, np.inf, shape=(d["obs_dim"],), dtype=np.float32)
        self.single_action_space = gymnasium.spaces.Box(d["action_low"], d["action_high"], dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.dt = d["dt"]
        # Surface a construction error of any worker now, not at the first step.
        self._gather([w.describe.remote() for w in self._workers])

    def _start(self, k: int) -> Any:
        a, b = self.bounds[k]
        threads = _threads_from_resources(self._resources)
        return _EnvActor.options(**self._resources).remote(self._task, b - a, a, threads, self._kwargs)

    @property
    def workers(self) -> list[Any]:
        """The Ray actor handles, worker k holding environments ``bounds[k]``."""
        return list(self._workers)

    def _gather(self, refs: list[Any]) -> list[Any]:
        """ray.get of one reference per worker; dead workers are recorded
        and reported together (other errors propagate)."""
        try:
            return ray.get(refs)
        except RayActorError:
            pass
        results: list[Any] = []
        for k, ref in enumerate(refs):
            try:
                results.append(ray.get(ref))
            except RayActorError as e:
                self._dead[k] = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                results.append(None)
        self._raise_dead()
        return results

    def _raise_dead(self) -> None:
        if not self._dead:
            return
        ks = sorted(self._dead)
        envs = np.concatenate([np.arange(*self.bounds[k], dtype=np.int64) for k in ks])
        what = "; ".join(
            f"worker {k} (environments {self.bounds[k][0]}..{self.bounds[k][1] - 1}): {self._dead[k]}" for k in ks
        )
        raise WorkerDiedError(f"RayVecEnv: {what}. reset() re-creates the dead workers.", ks, envs)

    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every environment (as :meth:`cenic.VectorEnv.reset`: an
        int seed, one seed per environment, or None to continue the
        streams), first re-creating dead workers. A re-created worker's
        environments continue from a seed drawn from ``np_random`` when
        ``seed`` is None, so pass a seed to reproduce a run across a
        failure."""
        if options:
            raise ValueError(f"cenic environments take no reset options, got {sorted(options)}")
        per_env = isinstance(seed, (list, tuple, np.ndarray))
        if per_env:
            if len(seed) != self.num_envs:  # type: ignore[arg-type]
                raise ValueError(f"seed: expected {self.num_envs} seeds, got {len(seed)}")  # type: ignore[arg-type]
            gymnasium.vector.VectorEnv.reset(self, seed=int(seed[0]))  # type: ignore[index]
        else:
            gymnasium.vector.VectorEnv.reset(self, seed=seed)
        revived = sorted(self._dead)
        for k in revived:
            try:
                ray.kill(self._workers[k])
            except Exception:
                pass
            self._workers[k] = self._start(k)
            self._failures[k] = 0
        self._dead.clear()
        if any(self._params[k] is not None for k in revived):
            self._gather(
                [self._workers[k].restore_params.remote(self._params[k]) for k in revived if self._params[k] is not None]
            )
        if per_env:
            seeds = [list(map(int, seed[a:b])) for a, b in self.bounds]  # type: ignore[index]
        elif seed is not None:
            seeds = [int(seed)] * len(self._workers)
        elif not self._seeded:
            s = int(self.np_random.integers(0, 2**63 - 1))
            seeds = [s] * len(self._workers)
        else:
            fresh = int(self.np_random.integers(0, 2**63 - 1)) if revived else None
            seeds = [fresh if k in revived else None for k in range(len(self._workers))]
        obs = self._gather([w.reset.remote(s) for w, s in zip(self._workers, seeds)])
        self._seeded = True
        return np.concatenate(obs), {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every environment: worker k gets rows ``bounds[k]`` of
        ``actions`` (num_envs, act_dim); the results are joined in order."""
        self._raise_dead()
        a = np.asarray(actions, dtype=np.float32)
        if a.shape != self.action_space.shape:
            raise ValueError(f"actions: expected shape {self.action_space.shape}, got {a.shape}")
        refs = [w.step.remote(a[lo:hi]) for w, (lo, hi) in zip(self._workers, self.bounds)]
        parts = self._gather(refs)
        obs = np.concatenate([p[0] for p in parts])
        rew = np.concatenate([p[1] for p in parts])
        term = np.concatenate([p[2] for p in parts])
        trunc = np.concatenate([p[3] for p in parts])
        infos_parts = [p[4] for p in parts]
        reported = False
        for k, inf in enumerate(infos_parts):
            f = inf.pop("simulator_failures", None)
            inf.pop("_simulator_failures", None)
            if f is not None:
                self._failures[k] = int(f[0])
                reported = True
        infos = _join(infos_parts, self._sizes)
        if reported:
            infos["simulator_failures"] = np.full(self.num_envs, sum(self._failures), dtype=np.int64)
            infos["_simulator_failures"] = np.ones(self.num_envs, dtype=bool)
        return obs, rew, term, trunc, infos

    def set_params(self, envs: Sequence[int] | None = None, **multipliers: Any) -> None:
        """Per-environment physical parameters (``VecEnv.set_params``'s
        keywords, each a scalar or one value per listed environment) of
        ``envs`` (global indices; all when None); kept across resets and
        restored on re-created workers."""
        self._raise_dead()
        idx = np.arange(self.num_envs) if envs is None else np.asarray(envs, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_envs):
            raise IndexError(f"envs: indices must be in 0..{self.num_envs - 1}")
        values = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), idx.shape) for k, v in multipliers.items()}
        refs, ks = [], []
        for k, (lo, hi) in enumerate(self.bounds):
            sel = (idx >= lo) & (idx < hi)
            if sel.any():
                mine = {name: v[sel] for name, v in values.items()}
                refs.append(self._workers[k].set_params.remote(idx[sel] - lo, mine))
                ks.append(k)
        for k, params in zip(ks, self._gather(refs)):
            self._params[k] = params

    @property
    def params(self) -> dict[str, np.ndarray]:
        """Each environment's parameters, as ``VecEnv.params``."""
        self._raise_dead()
        parts = self._gather([w.params.remote() for w in self._workers])
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def close_extras(self, **kwargs: Any) -> None:
        for w in self._workers:
            try:
                ray.kill(w)
            except Exception:
                pass
        self._workers = []

    def __repr__(self) -> str:
        return f"cenic.ray.RayVecEnv({self._task!r}, num_envs={self.num_envs}, workers={len(self.bounds)})"


# --------------------------------------------------------------------------
# Evaluation


def _evaluate_chunk(
    policy: Callable[[np.ndarray], Any],
    task: str,
    seeds: list[int],
    envs: int,
    randomize: dict[str, tuple[float, float]] | None,
    threads: int,
    kwargs: dict[str, Any],
) -> tuple[np.ndarray, np.ndarray]:
    """Episodes of ``seeds`` in waves of ``envs`` environments; returns
    their returns and lengths in seed order."""
    os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
    n = min(envs, len(seeds))
    env = VectorEnv(task, n, **kwargs)
    returns = np.zeros(len(seeds))
    lengths = np.zeros(len(seeds), dtype=np.int64)
    for w0 in range(0, len(seeds), n):
        wave = seeds[w0 : w0 + n]
        k = len(wave)
        # A short last wave repeats its first seed in the spare environments (their episodes are discarded).
        padded = wave + [wave[0]] * (n - k)
        if randomize:
            draws = {name: np.empty(n) for name in randomize}
            for i, s in enumerate(padded):
                rng = np.random.default_rng(s)
                for name, (lo, hi) in randomize.items():
                    draws[name][i] = rng.uniform(lo, hi)
            env.native.set_params(None, **draws)
        obs, _ = env.reset(seed=padded)
        active = np.ones(n, dtype=bool)
        ret = np.zeros(n)
        length = np.zeros(n, dtype=np.int64)
        while active.any():
            obs, rew, term, trunc, _ = env.step(np.asarray(policy(obs), dtype=np.float32))
            ret += np.where(active, rew, 0.0)
            length += active
            active &= ~(term | trunc)
        returns[w0 : w0 + k] = ret[:k]
        lengths[w0 : w0 + k] = length[:k]
    return returns, lengths


_evaluate_remote = ray.remote(_evaluate_chunk)


def evaluate(
    policy: Callable[[np.ndarray], Any],
    task: str,
    seeds: Sequence[int],
    num_workers: int = 2,
    *,
    randomize: dict[str, tuple[float, float]] | None = None,
    envs_per_worker: int = 64,
    resources_per_worker: dict[str, Any] | None = None,
    return_lengths: bool = False,
    **make_vec_kwargs: Any,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Undiscounted returns of one episode per seed (float64, in the order
    of ``seeds``), run by ``num_workers`` Ray tasks, each stepping its share
    of the seeds in waves of ``envs_per_worker`` environments of one cenic
    vector environment.

    Episode s starts from the initial state ``cenic.make(task).reset(seed=s)``
    draws; with ``randomize`` (parameter name → (low, high), the
    multipliers of ``VecEnv.set_params``: ``mass_scale``, ``stiffness``,
    ``dissipation``, ``mu_static``, ``mu_dynamic``) its parameters are
    drawn uniformly by ``numpy.random.default_rng(s)`` in that order. So an
    episode's return depends on its seed only, not on the workers or how
    episodes are packed. ``policy`` maps observations (n, obs_dim) float32
    to actions (n, act_dim); it is pickled to the workers (a function or an
    object with ``__call__``, e.g. holding weights). Episodes end at
    termination or ``max_episode_steps``. With ``return_lengths`` also the
    episode lengths (int64)."""
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds is empty")
    if any(s < 0 for s in seeds):
        raise ValueError("seeds must be non-negative")
    if envs_per_worker < 1:
        raise ValueError(f"envs_per_worker must be at least 1, got {envs_per_worker}")
    for k in ("autoreset_mode", "first_env"):
        if k in make_vec_kwargs:
            raise ValueError(f"evaluate sets {k} itself")
    resources = dict(resources_per_worker or {"num_cpus": 1})
    threads = _threads_from_resources(resources)
    policy_ref = ray.put(policy)
    refs = [
        _evaluate_remote.options(**resources).remote(
            policy_ref, task, seeds[a:b], envs_per_worker, randomize, threads, make_vec_kwargs
        )
        for a, b in split(len(seeds), min(num_workers, len(seeds)))
    ]
    parts = ray.get(refs)
    returns = np.concatenate([p[0] for p in parts])
    if return_lengths:
        return returns, np.concatenate([p[1] for p in parts])
    return returns


# --------------------------------------------------------------------------
# System identification


class _SysidWorker:
    """A Ray actor holding one shard evaluator of a distributed sys-id fit."""

    def __init__(self, spec: str, threads: int) -> None:
        os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
        self.shard = _cenic.SysidShard(spec)

    def gradients(self, phi: np.ndarray, segments: np.ndarray) -> tuple[Any, ...]:
        return self.shard.gradients(phi, segments)


_SysidActor = ray.remote(_SysidWorker)


class RayGradients:
    """The gradient source of a distributed fit: ``num_workers`` Ray actors,
    each holding the training tosses and the differentiable rollout
    (``setup``); a call splits the Adam step's segments into contiguous
    shares, one per worker, and joins the per-segment losses and gradients
    in order (the fit sums them in Rust exactly as the local fit does). A
    worker that dies is re-created and its share recomputed once."""

    def __init__(
        self, address: str | None = None, num_workers: int = 2, resources_per_worker: dict[str, Any] | None = None
    ) -> None:
        if num_workers < 1:
            raise ValueError(f"num_workers must be at least 1, got {num_workers}")
        self.address = address
        self.num_workers = num_workers
        self.resources = dict(resources_per_worker or {"num_cpus": 1})
        self.workers: list[Any] = []
        self._spec_ref: Any = None
        # Bytes of phi and segments sent, and of results received, over the fit.
        self.bytes_sent = 0
        self.bytes_received = 0

    def _start(self) -> Any:
        return _SysidActor.options(**self.resources).remote(self._spec_ref, _threads_from_resources(self.resources))

    def setup(self, spec: str) -> None:
        """Connects to Ray (``ray.init(address)`` unless initialized; the
        address ``"default"`` is Ray's default) and starts the workers with
        the shard description (JSON written by the Rust fit)."""
        if not ray.is_initialized():
            ray.init(address=None if self.address in (None, "default") else self.address)
        self._spec_ref = ray.put(spec)
        self.workers = [self._start() for _ in range(self.num_workers)]

    def __call__(self, phi: np.ndarray, segments: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
        shares = [s for s in np.array_split(segments, min(self.num_workers, len(segments))) if len(s)]
        refs = [self.workers[k].gradients.remote(phi, s) for k, s in enumerate(shares)]
        parts = []
        for k, ref in enumerate(refs):
            try:
                parts.append(ray.get(ref))
            except RayActorError:
                self.workers[k] = self._start()
                parts.append(ray.get(self.workers[k].gradients.remote(phi, shares[k])))
        self.bytes_sent += sum(phi.nbytes + s.nbytes for s in shares)
        self.bytes_received += sum(p[0].nbytes + p[1].nbytes + p[2].nbytes for p in parts)
        offsets = np.cumsum([0] + [len(s) for s in shares])
        failures = [(int(offsets[k] + i), msg) for k, p in enumerate(parts) for i, msg in p[3]]
        return (
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
            failures,
        )

    def close(self) -> None:
        for w in self.workers:
            try:
                ray.kill(w)
            except Exception:
                pass
        self.workers = []


class _Sources:
    """Builds the :class:`RayGradients` of a fit (the ``ray`` callable of
    ``_cenic.sysid_cli``) and closes them afterwards."""

    def __init__(self, resources_per_worker: dict[str, Any] | None) -> None:
        self.resources = resources_per_worker
        self.made: list[RayGradients] = []

    def __call__(self, address: str, workers: int, spec: str) -> RayGradients:
        g = RayGradients(address, workers, self.resources)
        self.made.append(g)
        g.setup(spec)
        return g

    def close(self) -> None:
        for g in self.made:
            g.close()


def sysid_fit(
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    address: str | None = None,
    num_workers: int = 2,
    resources_per_worker: dict[str, Any] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """``cenic sysid fit --data DATA --out OUT --ray ADDRESS`` from Python:
    :func:`cenic.sysid_fit` with each Adam step's segments computed by
    ``num_workers`` Ray actors (:class:`RayGradients`); returns the report.
    ``address`` goes to ``ray.init`` when Ray is not initialized in this
    process yet (None: Ray's default, a running cluster or a new local
    one). The fitted values equal the local fit's."""
    from ..sysid import sysid_fit as fit

    sources = _Sources(resources_per_worker)
    try:
        return fit(data, out, _ray=sources, ray=address or "default", ray_workers=num_workers, **options)
    finally:
        sources.close()


def _cli(argv: list[str]) -> int:
    """``python -m cenic.ray sysid fit ...``, what ``cenic sysid fit --ray`` runs."""
    if argv[:1] != ["sysid"]:
        print("usage: python -m cenic.ray sysid fit --ray ADDRESS [cenic sysid fit flags]")
        return 2
    sources = _Sources(None)
    try:
        _cenic.sysid_cli(argv[1:], sources)
    except CenicError as e:
        print(f"error: {e}", flush=True)
        return 1
    finally:
        sources.close()
    return 0
