"""cenic on a Ray cluster started inside the tests (two CPUs on 127.0.0.1):
RayVecEnv against the local vector environment, a killed worker, the
RLlib env-runner contract, evaluate(), and the distributed sys-id fit
against the local one (Python and the `cenic sysid fit --ray` command)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import gymnasium
import numpy as np
import pytest

import cenic

ray = pytest.importorskip("ray", reason="cenic.ray needs Ray (scripts/test_python.sh installs it)")
import cenic.ray as cray  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOSSES = os.path.join(REPO, "tests", "fixtures", "sysid", "tosses")


@pytest.fixture(scope="module")
def cluster(gym_models):
    """A local two-CPU Ray cluster for this module, stopped at its end."""
    os.environ["CENIC_SHARED"] = str(gym_models.parents[1])
    ctx = ray.init(
        num_cpus=2,
        num_gpus=0,
        include_dashboard=False,
        object_store_memory=100 * 1024 * 1024,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
    )
    # The policies below travel to the workers by value (this module is not importable there).
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ctx
    ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    ray.shutdown()


def test_split_is_contiguous_and_balanced():
    assert cray.split(7, 3) == [(0, 3), (3, 5), (5, 7)]
    assert cray.split(4, 4) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    with pytest.raises(ValueError, match="num_workers"):
        cray.split(2, 3)


def test_first_env_shards_reproduce_the_whole(gym_models):
    # Without Ray: the shards [0, 2) and [2, 5) of a 5-environment VectorEnv
    # draw what environments 0..4 of the whole draw (the rule RayVecEnv uses).
    kw = dict(models_dir=str(gym_models), max_episode_steps=7)
    whole = cenic.make_vec("Ant-v5", 5, **kw)
    parts = [cenic.make_vec("Ant-v5", 2, first_env=0, **kw), cenic.make_vec("Ant-v5", 3, first_env=2, **kw)]
    o = whole.reset(seed=11)[0]
    np.testing.assert_array_equal(o, np.concatenate([p.reset(seed=11)[0] for p in parts]))
    # Per-environment seeds: environment i starts as cenic.make(task).reset(seed=s_i).
    seeds = [5, 9, 5, 0, 123]
    o = whole.reset(seed=seeds)[0]
    single = cenic.make("Ant-v5", models_dir=str(gym_models))
    for i, s in enumerate(seeds):
        np.testing.assert_array_equal(o[i], single.reset(seed=s)[0])


def _run(env, seed, actions):
    out = [env.reset(seed=seed)[0]]
    rows = []
    for a in actions:
        obs, rew, term, trunc, info = env.step(a)
        out.append(obs)
        rows.append((rew, term, trunc, info))
    return out, rows


def test_ray_vec_env_equals_the_local_one_over_200_steps(cluster, gym_models):
    # InvertedPendulum terminates often under random actions and episodes are
    # cut at 40 steps: both autoreset paths run many times in 200 steps.
    kw = dict(models_dir=str(gym_models), max_episode_steps=40)
    n = 5
    local = cenic.make_vec("InvertedPendulum-v5", n, **kw)
    remote = cray.RayVecEnv("InvertedPendulum-v5", n, 2, **kw)
    assert isinstance(remote, gymnasium.vector.VectorEnv)
    assert remote.single_observation_space == local.single_observation_space
    assert remote.single_action_space == local.single_action_space
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-3, 3, size=(n, 1)).astype(np.float32) for _ in range(200)]
    lo, lrows = _run(local, 42, actions)
    ro, rrows = _run(remote, 42, actions)
    for a, b in zip(lo, ro):
        np.testing.assert_array_equal(a, b)
    ends = 0
    for (lr, lt, ltr, li), (rr, rt, rtr, ri) in zip(lrows, rrows):
        np.testing.assert_array_equal(lr, rr)
        np.testing.assert_array_equal(lt, rt)
        np.testing.assert_array_equal(ltr, rtr)
        assert sorted(li) == sorted(ri)
        for k in li:
            np.testing.assert_array_equal(li[k], ri[k])
        ends += int((lt | ltr).sum())
    assert ends > 20, f"only {ends} episodes ended: the autoresets were not exercised"
    # Unseeded resets continue the streams on both sides.
    np.testing.assert_array_equal(local.reset()[0], remote.reset()[0])
    remote.close()


def test_ray_vec_env_same_step_mode_and_params(cluster, gym_models):
    kw = dict(models_dir=str(gym_models), max_episode_steps=15, autoreset_mode="same_step")
    local = cenic.make_vec("InvertedPendulum-v5", 4, **kw)
    remote = cray.RayVecEnv("InvertedPendulum-v5", 4, 2, **kw)
    local.native.set_params([1, 2], mass_scale=[1.5, 0.5])
    remote.set_params([1, 2], mass_scale=[1.5, 0.5])
    np.testing.assert_array_equal(local.native.params["mass_scale"], remote.params["mass_scale"])
    rng = np.random.default_rng(1)
    actions = [rng.uniform(-3, 3, size=(4, 1)).astype(np.float32) for _ in range(40)]
    _, lrows = _run(local, 3, actions)
    _, rrows = _run(remote, 3, actions)
    finals = 0
    for (_, _, _, li), (_, _, _, ri) in zip(lrows, rrows):
        assert ("final_obs" in li) == ("final_obs" in ri)
        if "final_obs" in li:
            np.testing.assert_array_equal(li["_final_obs"], ri["_final_obs"])
            for i in np.flatnonzero(li["_final_obs"]):
                np.testing.assert_array_equal(li["final_obs"][i], ri["final_obs"][i])
                finals += 1
    assert finals > 5
    remote.close()


def test_a_killed_worker_is_reported_and_recovered(cluster, gym_models):
    kw = dict(models_dir=str(gym_models), max_episode_steps=30)
    local = cenic.make_vec("InvertedPendulum-v5", 5, **kw)
    remote = cray.RayVecEnv("InvertedPendulum-v5", 5, 2, **kw)
    remote.set_params([3, 4], mass_scale=2.0)
    local.native.set_params([3, 4], mass_scale=2.0)
    remote.reset(seed=1)
    a = np.zeros((5, 1), np.float32)
    remote.step(a)
    ray.kill(remote.workers[1])
    # The kill lands asynchronously: a step may still reach the worker first.
    err = None
    for _ in range(100):
        try:
            remote.step(a)
        except cray.WorkerDiedError as e:
            err = e
            break
        time.sleep(0.05)
    assert err is not None, "the killed worker was never reported"
    assert err.workers == [1]
    np.testing.assert_array_equal(err.env_indices, [3, 4])
    assert "environments 3..4" in str(err) and "reset()" in str(err)
    # Still reported until reset, which re-creates the worker with its parameters.
    with pytest.raises(cray.WorkerDiedError):
        remote.step(a)
    obs, _ = remote.reset(seed=8)
    np.testing.assert_array_equal(obs, local.reset(seed=8)[0])
    np.testing.assert_array_equal(remote.params["mass_scale"], [1, 1, 1, 2, 2])
    for _ in range(40):
        lo = local.step(a)
        ro = remote.step(a)
        np.testing.assert_array_equal(lo[0], ro[0])
        np.testing.assert_array_equal(lo[1], ro[1])
    remote.close()


def test_rllib_env_runner_contract(cluster, gym_models):
    # What RLlib's SingleAgentEnvRunner does with the documented config
    # (cenic.ray.RLLIB_EXAMPLE: config.environment(ID, env_config=...) and
    # env_runners(gym_env_vectorize_mode=MODE)): in its own Ray actor,
    # gymnasium.make_vec(ID, num_envs, vectorization_mode=MODE, **env_config)
    # wrapped in DictInfoToList, reset(seed), then steps through episodes cut
    # by next-step autoreset. (RLlib itself needs torch, too heavy for CI.)
    chapter = open(os.path.join(REPO, "docs", "src", "cluster.md")).read()
    blocks = re.findall(r"```python(?:,ignore)?\n(.*?)```", chapter, re.S)
    for code in blocks:
        compile(code, "docs/src/cluster.md", "exec")
    assert blocks[2] == cray.RLLIB_EXAMPLE, "the guide's RLlib recipe (docs/src/cluster.md) is cenic.ray.RLLIB_EXAMPLE"
    env_id = re.search(r'\.environment\("([^"]+)"', cray.RLLIB_EXAMPLE).group(1)
    mode = re.search(r'gym_env_vectorize_mode="([^"]+)"', cray.RLLIB_EXAMPLE).group(1)
    assert env_id == "cenic:cenic/Ant-v5" and mode == "vector_entry_point"

    @ray.remote(num_cpus=1)
    def runner(env_id, mode, num_envs, env_config, steps):
        import gymnasium as gym
        from gymnasium.wrappers.vector import DictInfoToList

        env = DictInfoToList(
            gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=gym.VectorizeMode(mode), **env_config)
        )
        assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
        obs, infos = env.reset(seed=7)
        log = [obs]
        done = np.zeros(num_envs, bool)
        restarts = 0
        rng = np.random.default_rng(0)
        for _ in range(steps):
            obs, rew, term, trunc, infos = env.step(rng.uniform(-1, 1, size=env.action_space.shape).astype(np.float32))
            assert isinstance(infos, list) and len(infos) == num_envs
            assert all("reward_forward" in i for i, d in zip(infos, done) if not d)
            # The step after an end returns the new episode's first observation, reward 0.
            assert np.all(rew[done] == 0) and not np.any((term | trunc)[done])
            restarts += int(done.sum())
            done = term | trunc
            log.append(obs)
        return np.stack(log), restarts

    cfg = {"models_dir": str(gym_models), "max_episode_steps": 12}
    log, restarts = ray.get(runner.remote(env_id, mode, 3, cfg, 40))
    assert restarts >= 6
    # The same as the local vector environment.
    local = cenic.make_vec("Ant-v5", 3, **cfg)
    np.testing.assert_array_equal(log[0], local.reset(seed=7)[0])
    rng = np.random.default_rng(0)
    for t in range(40):
        np.testing.assert_array_equal(log[t + 1], local.step(rng.uniform(-1, 1, size=(3, 8)).astype(np.float32))[0])


class TanhPolicy:
    """A row-wise policy (no batched matrix products, so its actions do not
    depend on how many observations it sees at once)."""

    def __init__(self, gain):
        self.gain = gain

    def __call__(self, obs):
        return np.tanh(self.gain * obs[:, 1:2]).astype(np.float32) * 3.0


def test_evaluate_returns_depend_on_the_seed_only(cluster, gym_models):
    kw = dict(models_dir=str(gym_models), max_episode_steps=60)
    seeds = list(range(100, 130))
    rand = {"mass_scale": (0.5, 2.0), "mu_static": (0.5, 1.5)}
    r2, l2 = cray.evaluate(TanhPolicy(2.0), "InvertedDoublePendulum-v5", seeds, 2, randomize=rand, envs_per_worker=8,
                           return_lengths=True, **kw)
    assert r2.shape == (30,) and r2.dtype == np.float64
    # Continuous rewards (alive bonus minus distance and velocity penalties): every episode its own return.
    assert len(np.unique(r2)) == 30
    r1 = cray.evaluate(TanhPolicy(2.0), "InvertedDoublePendulum-v5", seeds, 1, randomize=rand, envs_per_worker=5, **kw)
    np.testing.assert_array_equal(r1, r2)
    # Against single environments run here: seed s, parameters drawn by default_rng(s).
    for k in [0, 7, 29]:
        s = seeds[k]
        env = cenic.make("InvertedDoublePendulum-v5", **kw)
        g = np.random.default_rng(s)
        env.native.set_params(None, mass_scale=g.uniform(0.5, 2.0), mu_static=g.uniform(0.5, 1.5))
        obs, _ = env.reset(seed=s)
        ret, steps, end = 0.0, 0, False
        while not end:
            obs, r, term, trunc, _ = env.step(TanhPolicy(2.0)(obs[None, :])[0])
            ret += r
            steps += 1
            end = term or trunc
        assert ret == r2[k] and steps == l2[k]
    # The randomization matters: the same seeds without it give other returns.
    r0 = cray.evaluate(TanhPolicy(2.0), "InvertedDoublePendulum-v5", seeds, 2, envs_per_worker=8, **kw)
    assert not np.array_equal(r0, r2)


FIT = dict(train="0-2", val="3-3", epochs=2, batch=4, init_side=0.09, horizon=[4], overlay=1, quiet=True,
           fit="side,dissipation")


def _close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _same_fit(local, dist):
    for key in local["fitted"]:
        assert _close(local["fitted"][key], dist["fitted"][key]), key
    for el, ed in zip(local["epochs"], dist["epochs"]):
        assert _close(el["train_loss"], ed["train_loss"]) and _close(el["val_loss"], ed["val_loss"])
        for key in el["params"]:
            assert _close(el["params"][key], ed["params"][key]), (el["epoch"], key)


def test_distributed_sysid_fit_equals_the_local_one(cluster, tmp_path):
    local = cenic.sysid_fit(TOSSES, tmp_path / "local", **FIT)
    dist = cray.sysid_fit(TOSSES, tmp_path / "ray", num_workers=2, **FIT)
    assert dist["settings"]["ray_workers"] == 2 and local["settings"]["ray"] is None
    _same_fit(local, dist)
    # The fit moved: the check compares trajectories, not two copies of the start.
    assert local["fitted"]["side_m"] != local["initial"]["side_m"]
    # Identical, in fact: each segment's gradient is computed alone and summed in order.
    assert local["fitted"] == dist["fitted"]


def test_cli_sysid_fit_ray_equals_the_local_fit(cluster, cenic_bin, tmp_path):
    flags = ["--train", "0-2", "--val", "3-3", "--epochs", "1", "--batch", "4", "--init-side", "0.09",
             "--horizon", "4", "--overlay", "1", "--quiet"]
    base = [str(cenic_bin), "sysid", "fit", "--data", TOSSES]
    subprocess.run([*base, "--out", str(tmp_path / "a"), *flags], check=True, capture_output=True)
    address = cluster.address_info["address"]
    env = dict(os.environ, CENIC_PYTHON=sys.executable)
    p = subprocess.run([*base, "--out", str(tmp_path / "b"), *flags, "--ray", address, "--ray-workers", "2"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "over 2 Ray workers" in p.stdout
    a = json.loads((tmp_path / "a" / "report.json").read_text())
    b = json.loads((tmp_path / "b" / "report.json").read_text())
    _same_fit(a, b)
    assert b["settings"]["ray"] == address
    # --ray-workers without --ray is an error naming the flag.
    p = subprocess.run([*base, "--out", str(tmp_path / "c"), *flags, "--ray-workers", "2"], capture_output=True,
                       text=True)
    assert p.returncode != 0 and "--ray" in p.stderr
