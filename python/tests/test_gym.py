"""Gymnasium interfaces: the env checker, spaces, seeding, autoreset
semantics of gymnasium 1.x, wrappers, and bad actions."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import cenic


@pytest.fixture(autouse=True)
def _models(gym_models, monkeypatch):
    monkeypatch.setenv("CENIC_SHARED", str(gym_models.parents[1]))


@pytest.mark.parametrize("task", ["InvertedPendulum", "Ant-v5", "reacher"])
def test_single_env_passes_check_env(task, recwarn):
    env = cenic.make(task)
    check_env(env, skip_render_check=True)
    assert isinstance(env, gymnasium.Env)


def test_registered_ids_work_with_gymnasium_make():
    env = gymnasium.make("cenic/HalfCheetah-v5")
    obs, _ = env.reset(seed=3)
    assert obs.shape == (17,)
    envs = gymnasium.make_vec("cenic/HalfCheetah-v5", num_envs=2, vectorization_mode="vector_entry_point")
    obs, _ = envs.reset(seed=3)
    assert obs.shape == (2, 17)


def test_vector_env_spaces_shapes_dtypes():
    envs = cenic.make_vec("Ant", 4)
    assert isinstance(envs, gymnasium.vector.VectorEnv)
    assert envs.num_envs == 4 and envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert envs.single_observation_space.shape == (105,)
    assert envs.observation_space.shape == (4, 105) and envs.action_space.shape == (4, 8)
    assert envs.single_action_space.dtype == np.float32
    np.testing.assert_array_equal(envs.single_action_space.low, -1.0)
    assert envs.dt == pytest.approx(0.05)
    obs, info = envs.reset(seed=0)
    assert obs.dtype == np.float32 and obs.shape == (4, 105) and info == {}
    assert obs in envs.observation_space
    obs, rew, term, trunc, info = envs.step(envs.action_space.sample())
    assert obs.dtype == np.float32 and obs.shape == (4, 105)
    assert rew.dtype == np.float64 and rew.shape == (4,)
    assert term.dtype == np.bool_ and trunc.dtype == np.bool_ and term.shape == trunc.shape == (4,)
    for key in ["reward_forward", "reward_ctrl", "reward_contact", "reward_survive"]:
        assert info[key].shape == (4,) and info["_" + key].all()
    # Ant's reward: survive + forward − ctrl − contact (gymnasium's v5 definition).
    total = info["reward_survive"] + info["reward_forward"] + info["reward_ctrl"] + info["reward_contact"]
    np.testing.assert_allclose(rew, total, rtol=1e-5, atol=1e-5)
    envs.close()
    assert envs.closed


def test_seeded_resets_are_reproducible_and_differ_between_envs():
    a = cenic.make_vec("HalfCheetah", 3)
    b = cenic.make_vec("HalfCheetah", 3)
    oa, _ = a.reset(seed=42)
    ob, _ = b.reset(seed=42)
    np.testing.assert_array_equal(oa, ob)
    assert not np.array_equal(oa[0], oa[1])  # each environment has its own stream
    oc, _ = b.reset(seed=43)
    assert not np.array_equal(oa, oc)
    actions = np.random.default_rng(0).uniform(-1, 1, (5, 3, 6)).astype(np.float32)
    for act in actions:
        ra, rb = a.step(act), b.step(act)
    b.reset(seed=42)
    for act in actions:
        rb = b.step(act)
    np.testing.assert_array_equal(ra[0], rb[0])
    np.testing.assert_array_equal(ra[1], rb[1])


def _terminate_pendulum(envs, push):
    """Pushes the cart until some pendulum falls (|angle| > 0.2 rad ends the episode)."""
    for k in range(200):
        obs, rew, term, trunc, info = envs.step(push)
        if term.any():
            return k, obs, rew, term, trunc, info
    raise AssertionError("no pendulum fell")


def test_next_step_autoreset():
    envs = cenic.make_vec("InvertedPendulum", 2)
    envs.reset(seed=1)
    push = np.array([[3.0], [-3.0]], dtype=np.float32)
    _, obs, rew, term, trunc, _ = _terminate_pendulum(envs, push)
    ended = term | trunc
    assert np.all(rew[ended] == 0.0)  # v5: reward = int(not terminated)
    assert np.all(np.abs(obs[ended, 1]) > 0.2)  # the ending step returns the final observation: the fallen pole
    obs2, rew2, term2, trunc2, info2 = envs.step(push)
    # The next step resets those environments: first observation, reward 0, flags false.
    assert np.all(rew2[ended] == 0.0) and not term2[ended].any() and not trunc2[ended].any()
    assert np.all(np.abs(obs2[ended]) < 0.02)  # reset noise 0.01
    assert not info2["_reward_survive"][ended].any() and info2["_reward_survive"][~ended].all()


def test_same_step_autoreset():
    envs = cenic.make_vec("InvertedPendulum", 2, autoreset_mode="same_step")
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    envs.reset(seed=1)
    push = np.array([[3.0], [-3.0]], dtype=np.float32)
    _, obs, rew, term, trunc, info = _terminate_pendulum(envs, push)
    ended = term | trunc
    assert np.all(np.abs(obs[ended]) < 0.02)  # already the next episode's first observation
    np.testing.assert_array_equal(info["_final_obs"], ended)
    for i in np.flatnonzero(ended):
        assert np.abs(info["final_obs"][i][1]) > 0.2
    assert info["final_info"]["reward_survive"][ended].tolist() == [0.0] * ended.sum()
    assert info["final_info"]["_reward_survive"].tolist() == ended.tolist()


def test_truncation_at_max_episode_steps_and_episode_statistics_wrapper():
    envs = cenic.make_vec("Reacher", 2, max_episode_steps=5)
    envs = gymnasium.wrappers.vector.RecordEpisodeStatistics(envs)
    envs.reset(seed=0)
    for k in range(5):
        obs, rew, term, trunc, info = envs.step(np.zeros((2, 2), np.float32))
    assert trunc.all() and not term.any()
    assert info["episode"]["l"].tolist() == [5, 5]
    assert info["_episode"].all()


def test_cenic_physics_and_f32():
    envs = cenic.make_vec("HalfCheetah", 2, accuracy=1e-2, precision="f32")
    assert "CENIC" in envs.native.physics and envs.native.precision == "f32"
    envs.reset(seed=0)
    for _ in range(3):
        obs, *_ = envs.step(np.full((2, 6), 0.5, np.float32))
    assert np.isfinite(obs).all()
    stats = envs.native.physics_stats()
    assert stats["accepted"] > 0 and stats["failed_worlds"] == 0


def test_bad_actions_raise_and_leave_the_env_usable():
    envs = cenic.make_vec("Ant", 2)
    with pytest.raises(cenic.CenicError, match="step before reset"):
        envs.step(np.zeros((2, 8), np.float32))
    envs.reset(seed=0)
    bad = np.zeros((2, 8), np.float32)
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match="action of environment 1, actuator 3 is NaN"):
        envs.step(bad)
    with pytest.raises(ValueError, match=r"actions: expected shape \[2, 8\], got \[2, 7\]"):
        envs.step(np.zeros((2, 7), np.float32))
    with pytest.raises(TypeError):
        envs.step("left")
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        envs.reset(seed=-1)
    obs, *_ = envs.step(np.zeros((2, 8), np.float32))
    assert np.isfinite(obs).all()
    single = cenic.make("Ant")
    single.reset(seed=0)
    with pytest.raises(ValueError, match=r"action: expected shape \(8,\)"):
        single.step(np.zeros(3))


def test_bad_task_and_settings():
    with pytest.raises(ValueError, match="unknown task 'Walker-v5' \\(known: Ant-v5, HalfCheetah-v5"):
        cenic.make_vec("Walker", 2)
    with pytest.raises(ValueError, match="num_envs must be at least 1"):
        cenic.make_vec("Ant", 0)
    with pytest.raises(cenic.ModelError, match="models_dir /nonexistent is not a folder"):
        cenic.make_vec("Ant", 1, models_dir="/nonexistent")
    with pytest.raises(ValueError, match="autoreset_mode"):
        cenic.make_vec("Ant", 1, autoreset_mode=AutoresetMode.DISABLED)
    with pytest.raises(ValueError, match="frame_skip must be at least 1"):
        cenic.make_vec("Ant", 1, frame_skip=0)
    assert cenic.task_names()[0] == "Ant-v5" and len(cenic.task_names()) == 7


def test_domain_randomization_survives_resets():
    """Per-environment parameters set through ``native.set_params`` act
    from the next step on and survive resets and autoresets."""

    def run(mass_scale):
        envs = cenic.make_vec("HalfCheetah", 2)
        if mass_scale is not None:
            envs.native.set_params(envs=[1], mass_scale=mass_scale)
        envs.reset(seed=3)
        a = np.full((2, 6), 0.7, dtype=np.float32)
        for _ in range(20):
            obs, *_ = envs.step(a)
        return envs, obs

    envs, obs = run(2.0)
    assert envs.native.params["mass_scale"].tolist() == [1.0, 2.0]
    _, plain = run(None)
    np.testing.assert_array_equal(obs[0], plain[0])
    assert not np.array_equal(obs[1], plain[1])
    with pytest.raises(ValueError, match="mass_scale must be positive"):
        envs.native.set_params(mass_scale=0.0)
    with pytest.raises(TypeError, match="unknown parameter 'friction'"):
        envs.native.set_params(friction=0.5)


def test_mujoco_integrator_follows_gymnasium_and_mujoco():
    """``integrator="mujoco"``: Reacher-v5 from gymnasium's own reset state,
    under the same random actions, keeps its observations within 1e-3 of
    gymnasium + MuJoCo 4.0 for the whole 50-step episode (measured 4e-6;
    cenic's default fixed steps part by 1e-2 at the first step)."""
    mujoco = pytest.importorskip("mujoco", reason="gymnasium's MuJoCo tasks need the mujoco package")
    assert mujoco.__version__.startswith("4."), mujoco.__version__
    ref = gymnasium.make("Reacher-v5")
    obs_ref, _ = ref.reset(seed=7)
    data = ref.unwrapped.data
    envs = cenic.make_vec("Reacher", 1, integrator="mujoco")
    assert "MuJoCo's RK4 steps of 0.01 s" in envs.native.physics
    envs.reset(seed=0)
    envs.native.reset_env_to(0, data.qpos.copy(), data.qvel.copy())
    rng = np.random.default_rng(3)
    for step in range(50):
        u = rng.uniform(-1, 1, size=2).astype(np.float32)
        obs_ref, *_ = ref.step(u)
        obs, *_ = envs.step(u[None, :])
        gap = np.abs(obs[0] - obs_ref).max()
        assert gap < 1e-3, f"step {step}: observations part by {gap:.3e}"
    with pytest.raises(ValueError, match="accuracy"):
        cenic.make_vec("Reacher", 1, integrator="mujoco", accuracy=1e-3)
    with pytest.raises(ValueError, match="'cenic' or 'mujoco'"):
        cenic.make_vec("Reacher", 1, integrator="rk4")
