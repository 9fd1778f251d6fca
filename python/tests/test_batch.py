"""cenic.Batch: shapes and dtypes, resets, state / control / parameter
setters, statistics and status, bad input, and the physics it reports."""

from __future__ import annotations

import os

import numpy as np
import pytest

import cenic


@pytest.fixture()
def cube():
    return cenic.Model.builtin("cube_toss")


def test_shapes_and_dtypes(gym_models):
    m = cenic.Model.from_mjcf(gym_models / "ant.xml")
    b = cenic.Batch(m, 3, dt=0.01)
    assert len(b) == b.num_worlds == 3 and b.device == "cpu" and b.precision == "f64"
    for arr, shape in [(b.qpos, (3, 15)), (b.qvel, (3, 14)), (b.ctrl, (3, 8)), (b.time, (3,)), (b.act, (3, 0))]:
        assert arr.shape == shape and arr.dtype == np.float64 and arr.flags.c_contiguous
    np.testing.assert_array_equal(b.qpos, np.tile(m.qpos0, (3, 1)))
    stats = b.stats()
    assert stats["accepted"].shape == (3,) and stats["accepted"].dtype == np.int64
    assert stats["min_h"].dtype == np.float64
    assert b.ok.dtype == np.bool_ and b.ok.all()
    assert b.status() == [None, None, None]
    wrench, qfrc = b.constraint_forces()
    assert wrench.shape == (3, 14, 6) and qfrc.shape == (3, 14)
    params = b.params
    assert set(params) == {"mass_scale", "stiffness", "dissipation", "mu_static", "mu_dynamic"}
    assert all(v.shape == (3,) and np.all(v == 1.0) for v in params.values())


def test_toss_comes_to_rest_and_reports_statistics(cube):
    b = cenic.Batch(cube, 2, accuracy=1e-3)
    b.reset(keyframe="toss")
    np.testing.assert_array_equal(b.qpos[:, 2], [0.3, 0.3])
    np.testing.assert_array_equal(b.qvel[0], [1, 0, 0, 0, 5, 3])
    b.advance(2.0)
    np.testing.assert_allclose(b.time, [2.0, 2.0])
    # A 0.1 m cube at rest on the ground: centre 5 cm up (compliant contact: within 1 mm).
    np.testing.assert_allclose(b.qpos[:, 2], 0.05, atol=1e-3)
    assert np.all(np.abs(b.qvel) < 1e-2)
    s = b.stats()
    assert np.all(s["accepted"] > 10) and np.all(s["newton_iterations"] >= s["accepted"])
    assert np.all(s["min_h"] <= s["max_h"])
    # Resting: the contact force carries the weight, 0.37 kg × 9.81 m/s².
    wrench, _ = b.constraint_forces()
    np.testing.assert_allclose(wrench[:, 1, 5], 0.37 * 9.81, rtol=1e-2)


def test_reset_some_worlds_and_keyframes(cube):
    b = cenic.Batch(cube, 3, dt=1e-3)
    b.reset(keyframe="toss")
    b.advance(0.05)
    b.reset(worlds=[1])
    np.testing.assert_array_equal(b.qpos[1], cube.qpos0)
    np.testing.assert_array_equal(b.time, [0.05, 0.0, 0.05])
    b.reset(worlds=2, keyframe=0)  # keyframes by index
    np.testing.assert_array_equal(b.qpos[2], [0, 0, 0.3, 1, 0, 0, 0])
    assert b.time[2] == 0.0 and b.time[0] == pytest.approx(0.05)
    with pytest.raises(ValueError, match="no keyframe 'nope'"):
        b.reset(keyframe="nope")
    with pytest.raises(IndexError, match="world index 5 out of range"):
        b.reset(worlds=[0, 5])


def test_set_state_broadcast_and_per_world(cube):
    b = cenic.Batch(cube, 4, dt=1e-3)
    q = np.array([0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0])  # quaternion normalised on set
    b.set_state(q, np.zeros(6))
    np.testing.assert_allclose(b.qpos, np.tile([0, 0, 1, 1, 0, 0, 0], (4, 1)))
    v = np.arange(12, dtype=np.float32).reshape(2, 6)  # other dtypes are converted
    b.set_qvel(v, worlds=[3, 1])
    np.testing.assert_array_equal(b.qvel[3], v[0])
    np.testing.assert_array_equal(b.qvel[1], v[1])
    np.testing.assert_array_equal(b.qvel[0], 0)
    b.set_qpos(np.asfortranarray(np.tile([1.0, 2.0, 3.0, 1, 0, 0, 0], (4, 1))))  # non-contiguous input
    np.testing.assert_array_equal(b.qpos[:, :3], np.tile([1.0, 2.0, 3.0], (4, 1)))
    np.testing.assert_array_equal(b.qvel[3], v[0])  # velocities kept


def test_bad_input_raises_clear_errors(cube, gym_models):
    b = cenic.Batch(cube, 2, dt=1e-3)
    with pytest.raises(ValueError, match=r"qpos: expected shape \[2, 7\] or \[7\], got \[2, 6\]"):
        b.set_qpos(np.zeros((2, 6)))
    with pytest.raises(ValueError, match="qvel: row 1, column 2 is NaN"):
        b.set_qvel(np.array([[0.0] * 6, [0, 0, np.nan, 0, 0, 0]]))
    with pytest.raises(TypeError, match="qpos: expected an array of numbers"):
        b.set_qpos("abc")
    with pytest.raises(ValueError, match="dt must be a positive finite number"):
        b.advance(-1.0)
    with pytest.raises(ValueError, match="dt must be a positive finite number"):
        b.advance(float("nan"))
    with pytest.raises(ValueError, match="mass_scale must be positive"):
        b.set_params(mass_scale=0.0)
    with pytest.raises(ValueError, match="give accuracy= .* or dt="):
        cenic.Batch(cube, 1, accuracy=1e-3, dt=1e-3)
    with pytest.raises(ValueError, match="device must be 'cpu', 'gpu', 'gpu:N'"):
        cenic.Batch(cube, 1, device="tpu")
    with pytest.raises(ValueError, match="not available on the GPU"):
        cenic.Batch(cube, 1, device="gpu", precision="f64")
    with pytest.raises(ValueError, match="num_worlds must be at least 1"):
        cenic.Batch(cube, 0)
    with pytest.raises(OverflowError):
        cenic.Batch(cube, -1)
    ant = cenic.Batch(cenic.Model.from_mjcf(gym_models / "ant.xml"), 2, dt=0.01)
    with pytest.raises(ValueError, match="ctrl: row 0, column 3 is inf"):
        ant.set_ctrl([[0, 0, 0, np.inf, 0, 0, 0, 0]] * 2)
    with pytest.raises(ValueError, match=r"ctrl: expected shape \[1, 8\] or \[8\]"):
        ant.set_ctrl(np.zeros(7), worlds=[0])


def test_controls_and_parameters_act_per_world(gym_models):
    m = cenic.Model.from_mjcf(gym_models / "inverted_pendulum.xml")
    b = cenic.Batch(m, 3, dt=0.02)
    b.set_ctrl([[0.0], [1.0], [-1.0]])
    np.testing.assert_array_equal(b.ctrl[:, 0], [0, 1, -1])
    b.set_params(worlds=[2], mass_scale=2.0)
    assert b.params["mass_scale"].tolist() == [1.0, 1.0, 2.0]
    b.advance(0.2)
    x = b.qpos[:, 0] - b.qpos[0, 0]  # cart positions relative to the unforced world
    assert x[1] > 1e-2 and x[2] < -1e-2
    # Twice the mass under the same force moves the cart less far.
    assert abs(x[2]) < abs(x[1])
    b.set_ctrl([0.5], worlds=0)
    np.testing.assert_array_equal(b.ctrl[:, 0], [0.5, 1, -1])
    # Parameters are the worlds' physics, not their state: resets keep them.
    b.reset()
    b.reset(worlds=[2])
    assert b.params["mass_scale"].tolist() == [1.0, 1.0, 2.0]


def test_failed_world_is_frozen_and_reported(cube):
    # Accuracy that a fast world cannot meet at the smallest allowed step fails it; the resting world runs on.
    b = cenic.Batch(cube, 2, accuracy=1e-6, min_step=1e-3, max_step=1e-2)
    b.set_state([0, 0, 0.05 - 0.37 * 9.81 / 4e5, 1, 0, 0, 0], np.zeros(6), worlds=[0])  # at rest on 4 corners
    b.set_state([0, 0, 0.3, 1, 0, 0, 0], [3.0, 0, -2.0, 0, 20, 5], worlds=[1])
    b.advance(0.5)
    st = b.status()
    assert st[0] is None
    assert st[1] is not None and st[1][1].startswith("accuracy 1e-6 not met at the minimum step 1e-3 s")
    np.testing.assert_allclose(b.time, [0.5, 0.0])
    assert b.ok.tolist() == [True, False]
    frozen = b.qpos[1].copy()
    b.advance(0.1)
    np.testing.assert_array_equal(b.qpos[1], frozen)
    b.reset(worlds=[1])
    assert b.ok.all()


def test_f32_matches_f64(cube):
    runs = {}
    for p in ["f64", "f32"]:
        b = cenic.Batch(cube, 1, dt=1e-3, precision=p)
        assert b.precision == p
        b.reset(keyframe="toss")
        b.advance(0.3)
        runs[p] = b.qpos[0]
    np.testing.assert_allclose(runs["f32"], runs["f64"], atol=2e-3)


def test_gpu_batch_matches_cpu_f32(cube):
    adapter = cenic.gpu_available()
    if adapter is None:
        if os.environ.get("CENIC_REQUIRE_GPU") == "1":
            pytest.fail("CENIC_REQUIRE_GPU=1 but no GPU adapter")
        pytest.skip("no GPU adapter")
    out = {}
    for dev in ["cpu", "gpu"]:
        b = cenic.Batch(cube, 2, dt=1e-3, device=dev, precision="f32")
        assert b.device == dev
        b.reset(keyframe="toss")
        b.set_qvel([0.5, 0, 0, 0, 2, 1], worlds=[1])
        b.advance(0.2)
        out[dev] = (b.qpos, b.stats()["accepted"])
    np.testing.assert_allclose(out["gpu"][0], out["cpu"][0], atol=1e-3)
    np.testing.assert_array_equal(out["gpu"][1], [200, 200])


def test_extrapolate_makes_steps_second_order(gym_models):
    """``extrapolate=True`` (second-order CENIC) tracks a tight plain run far
    closer than plain CENIC at the same accuracy, with about the same steps;
    with fixed steps it is refused."""
    m = cenic.Model.from_mjcf(gym_models / "reacher.xml")
    qvel = np.zeros(m.nv)
    qvel[:2] = [2.0, -3.0]  # the arm swings freely, no controls

    def run(accuracy, extrapolate):
        b = cenic.Batch(m, 1, accuracy=accuracy, extrapolate=extrapolate)
        b.set_state(m.qpos0, qvel)
        b.advance(0.5)
        return b.qpos[0, :2], b.stats()

    reference, _ = run(1e-9, False)
    plain, sp = run(1e-4, False)
    second, sx = run(1e-4, True)
    e_plain, e_second = np.abs(plain - reference).max(), np.abs(second - reference).max()
    assert e_second * 5 < e_plain, (e_plain, e_second)
    assert sx["extrapolated"][0] > 0 and sp["extrapolated"][0] == 0
    assert sx["accepted"][0] < 1.5 * sp["accepted"][0]
    with pytest.raises(ValueError, match="extrapolate"):
        cenic.Batch(m, 1, dt=0.01, extrapolate=True)
