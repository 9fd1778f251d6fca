"""Model-predictive control from Python: cenic.MpcTask and cenic.Planner."""

from __future__ import annotations

import os

import numpy as np
import pytest

import cenic


def test_task_names_and_sizes():
    assert {"reacher", "pusher", "billiards", "half_cheetah", "cube_turn", "pusher_plain", "push"} <= set(cenic.mpc_task_names())
    t = cenic.MpcTask("billiards", seed=3)
    assert (t.name, t.nc, t.horizon, t.steps) == ("billiards", 2, 30, 40)
    assert t.x0.shape == (t.nx,)
    lo, hi = t.control_bounds
    np.testing.assert_array_equal(lo, [-1.0, -1.0])
    np.testing.assert_array_equal(hi, [1.0, 1.0])
    assert t.budget_cpu_seconds == pytest.approx(0.8 * t.dt)
    # The goal lies 0.35–0.6 m from the puck's start (at x = 0.1 m), within ±25° of its line.
    d = t.goal[:2] - np.array([0.1, 0.0])
    assert 0.35 <= np.hypot(*d) <= 0.6 and abs(np.degrees(np.arctan2(d[1], d[0]))) <= 25
    assert "billiards" in repr(t)
    # The push: built in, its goal on a ring 0.4 m around the box's start (x = 0.2 m).
    t = cenic.MpcTask("push", seed=5)
    assert (t.name, t.nc, t.horizon, t.steps, t.tolerance) == ("push", 2, 20, 80, 0.05)
    assert np.hypot(*(t.goal[:2] - np.array([0.2, 0.0]))) == pytest.approx(0.4)


def test_plan_respects_bounds_and_lowers_the_cost():
    t = cenic.MpcTask("billiards", seed=1)
    p = t.planner("ilqr-cfd")
    assert p.name == "iLQR + CFD"
    u0 = p.controls
    assert u0.shape == (t.horizon, t.nc)
    s = p.plan(t.x0, iterations=4)
    assert 1 <= s["iterations"] <= 4 and s["linearizations"] >= 1
    assert s["cost"] <= s["initial_cost"]
    lo, hi = t.control_bounds
    u = p.controls
    assert np.all(u >= lo) and np.all(u <= hi)
    assert not np.array_equal(u, u0), "contacts from distance move the plan before the strike"
    # Without them the puck's cost has no gradient before contact: the plan stays where it started.
    q = t.planner("ilqr")
    q.plan(t.x0, iterations=4)
    np.testing.assert_array_equal(q.controls, u0)


def test_shift_moves_the_plan_one_interval():
    t = cenic.MpcTask("billiards", seed=2)
    p = t.planner("ilqr-cfd")
    p.plan(t.x0, iterations=3)
    u = p.controls
    p.shift()
    v = p.controls
    np.testing.assert_array_equal(v[:-1], u[1:])
    np.testing.assert_array_equal(v[-1], u[-1])
    p.reset()
    assert np.all(p.controls == 0.0)


def test_sampling_and_hybrid_plan_within_bounds():
    t = cenic.MpcTask("billiards", seed=4)
    lo, hi = t.control_bounds
    for kind, name in [("sampling", "sampling (8)"), ("hybrid", "hybrid (8) + CFD")]:
        p = t.planner(kind, samples=8, seed=5)
        assert p.name == name
        s = p.plan(t.x0, iterations=2)
        assert s["rollouts"] >= 8 and s["cost"] <= s["initial_cost"] + 1e-12
        assert np.all(p.controls >= lo) and np.all(p.controls <= hi)


def test_sampling_on_the_gpu_plans_what_the_cpu_plans():
    adapter = cenic.gpu_available()
    if adapter is None:
        if os.environ.get("CENIC_REQUIRE_GPU") == "1":
            pytest.fail("CENIC_REQUIRE_GPU=1 but no GPU adapter")
        pytest.skip("no GPU adapter")
    t = cenic.MpcTask("billiards", seed=4)
    lo, hi = t.control_bounds
    plans = {}
    for kind, name in [
        ("sampling", "sampling (16)"),
        ("sampling-gpu", "sampling (16, GPU)"),
        ("hybrid-gpu", "hybrid (16, GPU) + CFD"),
    ]:
        p = t.planner(kind, samples=16, seed=5)
        assert p.name == name
        s = p.plan(t.x0, iterations=2)
        assert s["rollouts"] >= 16 and s["cost"] <= s["initial_cost"] + 1e-12
        assert np.all(p.controls >= lo) and np.all(p.controls <= hi)
        plans[kind] = s
    # The same seeded candidates; the GPU rolls them out in f32.
    a, b = plans["sampling"], plans["sampling-gpu"]
    assert b["initial_cost"] == pytest.approx(a["initial_cost"], rel=2e-3)
    assert b["cost"] == pytest.approx(a["cost"], rel=2e-3)


def test_reacher_closed_loop_reaches_the_target(gym_models):
    t = cenic.MpcTask("reacher", seed=0, models_dir=gym_models)
    p = t.planner("ilqr")
    ep = t.run(p)
    n = t.steps
    assert ep["states"].shape == (n + 1, t.nx) and ep["controls"].shape == (n, t.nc)
    np.testing.assert_array_equal(ep["states"][0], t.x0)
    assert ep["failure"] is None and ep["planning_errors"] == []
    # The fingertip ends within the task's 2 cm of the target (the Rust evaluation: 20/20 goals).
    assert ep["success"] and ep["error"] <= t.tolerance
    # The recorded running cost is the task's cost of the applied control at each state.
    assert ep["running_cost"][0] == pytest.approx(t.running_cost(ep["states"][0], ep["controls"][0]))
    # Faster than real time on average at the task's CPU budget (80 % of the interval plus one iteration's overrun).
    assert ep["plan_cpu_seconds"].mean() < t.dt
    assert ep["iterations"].min() >= 1


def test_bad_input_names_what_is_wrong():
    with pytest.raises(ValueError, match="unknown task 'pushr'.*reacher"):
        cenic.MpcTask("pushr")
    t = cenic.MpcTask("billiards")
    with pytest.raises(ValueError, match="unknown planner 'lqr'.*ilqr-cfd"):
        t.planner("lqr")
    p = t.planner("ilqr")
    with pytest.raises(ValueError, match=r"x: expected shape \[%d\]" % t.nx):
        p.plan(np.zeros(3))
    x = t.x0.copy()
    x[1] = np.nan
    with pytest.raises(ValueError, match="x: entry 1 is NaN"):
        p.plan(x)
    with pytest.raises(ValueError, match="at most one of"):
        p.plan(t.x0, iterations=2, cpu_seconds=0.01)
    with pytest.raises(ValueError, match="cpu_seconds = -1"):
        p.plan(t.x0, cpu_seconds=-1.0)
    with pytest.raises(ValueError, match="sampling share"):
        t.planner("hybrid", share=1.5)


def test_a_planner_runs_only_on_a_task_of_its_sizes(gym_models):
    billiards = cenic.MpcTask("billiards").planner("ilqr")
    with pytest.raises(ValueError, match="the planner belongs to a task of other sizes"):
        cenic.MpcTask("reacher", models_dir=gym_models).run(billiards)


SLIDER = """<mujoco model="slider">
  <option timestep="0.01"/>
  <worldbody>
    <body name="cart">
      <joint name="x" type="slide" axis="1 0 0" damping="0.5"/>
      <geom type="box" size="0.05 0.05 0.05" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator><motor joint="x" gear="1" ctrlrange="-2 2"/></actuator>
</mujoco>"""


def test_a_custom_task_drives_a_cart_to_its_target():
    model = cenic.Model.from_xml(SLIDER)
    cost = (
        cenic.MpcCost.target_distance(model, "cart", [0.3, 0.0, 0.0], axes="x", weight=1.0, terminal_weight=1.0)
        + cenic.MpcCost.quadratic(model, np.zeros(2), [0.0, 0.1], [0.0, 1.0])
        + cenic.MpcCost.control_effort(model, 1e-3)
    )
    assert len(cost) == 3 and "slider" in repr(cost)
    # ρ = smooth abs: √(0.3² + 0.01²) − 0.01 at rest at the origin, plus ½·1e-3·1² of effort.
    assert cost.running([0.0, 0.0], [1.0]) == pytest.approx(np.hypot(0.3, 0.01) - 0.01 + 0.5e-3)
    assert cost.terminal([0.3, 0.5]) == pytest.approx(0.5 * 0.25)
    task = cenic.MpcTask.custom(model, cost, dt=0.05, horizon=20, plan_dt=0.01, steps=60)
    assert task.goal is None and task.tolerance is None and task.nx == 2
    with pytest.raises(ValueError, match="no contacts from distance"):
        task.planner("ilqr-cfd")
    ep = task.run(task.planner("ilqr"), iterations=3)
    assert ep["success"] is None and ep["error"] is None and ep["failure"] is None
    x, v = ep["states"][-1]
    assert abs(x - 0.3) < 0.01 and abs(v) < 0.05, (x, v)
    assert np.all(np.abs(ep["controls"]) <= 2.0)


def test_a_custom_task_with_the_reachers_cost_is_the_builtin_reacher(gym_models):
    builtin = cenic.MpcTask("reacher", seed=3, models_dir=gym_models)
    model = cenic.Model.from_mjcf(gym_models / "reacher.xml")
    nq = model.nq
    w = np.zeros(builtin.nx)
    w[nq : nq + 2] = 1e-3
    cost = (
        cenic.MpcCost.target_distance(model, "fingertip", builtin.goal, axes="xy", weight=1.0, terminal_weight=2.0)
        + cenic.MpcCost.quadratic(model, np.zeros(builtin.nx), w, w)
        + cenic.MpcCost.control_effort(model, 1e-3)
    )
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, u = rng.normal(size=builtin.nx), rng.normal(size=builtin.nc)
        assert cost.running(x, u) == pytest.approx(builtin.running_cost(x, u), rel=1e-14)
    custom = cenic.MpcTask.custom(model, cost, dt=builtin.dt, horizon=builtin.horizon, x0=builtin.x0, steps=builtin.steps)
    a = builtin.run(builtin.planner("ilqr"), iterations=2)
    b = custom.run(custom.planner("ilqr"), iterations=2)
    np.testing.assert_array_equal(a["states"], b["states"])
    np.testing.assert_array_equal(a["controls"], b["controls"])


def test_custom_costs_name_what_is_wrong():
    model = cenic.Model.from_xml(SLIDER)
    with pytest.raises(ValueError, match="model 'slider' has no body 'pole'"):
        cenic.MpcCost.target_distance(model, "pole", [0, 0, 0])
    with pytest.raises(ValueError, match="axes 'xw'"):
        cenic.MpcCost.target_distance(model, "cart", [0, 0, 0], axes="xw")
    with pytest.raises(ValueError, match="penalty 'huber'"):
        cenic.MpcCost.target_distance(model, "cart", [0, 0, 0], penalty="huber")
    with pytest.raises(ValueError, match="weights: entry 1 is negative"):
        cenic.MpcCost.quadratic(model, [0, 0], [1, -1])
    with pytest.raises(ValueError, match=r"reference: expected shape \[2\]"):
        cenic.MpcCost.quadratic(model, [0, 0, 0], [1, 1])
    other = cenic.Model.builtin("cube_toss")
    cost = cenic.MpcCost.control_effort(model, 1.0)
    with pytest.raises(ValueError, match="the cost was built for model 'slider'"):
        cost + cenic.MpcCost.quadratic(other, np.zeros(other.nq + other.nv), np.ones(other.nq + other.nv))
    with pytest.raises(ValueError, match="plan_dt= or plan_accuracy="):
        cenic.MpcTask.custom(model, cost, dt=0.05, horizon=5, plan_dt=0.01, plan_accuracy=1e-3)
    with pytest.raises(ValueError, match=r"x0: expected shape \[2\]"):
        cenic.MpcTask.custom(model, cost, dt=0.05, horizon=5, x0=[0.0])


def test_a_task_without_its_models_says_where_to_find_them(monkeypatch, tmp_path):
    monkeypatch.setenv("CENIC_SHARED", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="task 'pusher' needs the gymnasium models: give models_dir= or set CENIC_SHARED"):
        cenic.MpcTask("pusher")
    with pytest.raises(ValueError, match="reacher.xml"):
        cenic.MpcTask("reacher", models_dir=tmp_path)
    assert cenic.MpcTask("billiards").nc == 2  # built in


def _yaw(x):
    """The cube turn's cube yaw (rad) at state x (free joint first: position, quaternion w, x, y, z)."""
    return 2.0 * np.arctan2(x[6], x[3])


def test_cube_turn_is_built_in_with_a_seeded_goal_and_runs_closed_loop():
    t = cenic.MpcTask("cube_turn", seed=2)
    assert (t.name, t.nc, t.nx, t.steps) == ("cube_turn", 4, 21, 60)
    lo, hi = t.control_bounds
    np.testing.assert_array_equal(lo, [-0.1] * 4)
    np.testing.assert_array_equal(hi, [0.1] * 4)
    assert t.tolerance == pytest.approx(np.radians(10.0))
    # The goal point is the cube's corner (4, 4) cm turned by the goal yaw: ±30–90°.
    yaw = np.arctan2(t.goal[1], t.goal[0]) - np.pi / 4
    assert 30.0 <= abs(np.degrees(yaw)) <= 90.0
    assert cenic.MpcTask("cube_turn", seed=2).goal.tolist() == t.goal.tolist()
    # At the start the cost is the goal's angle (smooth-abs, ε = 0.05 rad) plus the effort of u.
    u = np.array([0.01, -0.02, 0.0, 0.03])
    angle = abs(yaw)
    expected = np.sqrt(angle**2 + 0.05**2) - 0.05 + 0.5e-3 * u @ u
    assert t.running_cost(t.x0, u) == pytest.approx(expected, rel=1e-9)
    # At the goal yaw only the effort remains.
    x = t.x0.copy()
    x[3], x[6] = np.cos(0.5 * yaw), np.sin(0.5 * yaw)
    assert t.running_cost(x, u) == pytest.approx(0.5e-3 * u @ u, rel=1e-9)
    ep = t.run(t.planner("sampling", samples=8), steps=5, iterations=1)
    assert ep["failure"] is None and ep["planning_errors"] == []
    assert ep["states"].shape == (6, t.nx) and ep["controls"].shape == (5, t.nc)
    assert np.all(ep["controls"] >= lo) and np.all(ep["controls"] <= hi)
    # The error is the final yaw's distance to the goal (the cube stays flat on the table).
    assert ep["error"] == pytest.approx(abs(np.angle(np.exp(1j * (_yaw(ep["states"][-1]) - yaw)))), abs=1e-3)


def test_the_plain_pusher_is_the_pusher_without_shaping(gym_models):
    plain = cenic.MpcTask("pusher_plain", seed=1, models_dir=gym_models)
    shaped = cenic.MpcTask("pusher", seed=1, models_dir=gym_models)
    np.testing.assert_array_equal(plain.x0, shaped.x0)
    np.testing.assert_array_equal(plain.goal, shaped.goal)
    assert (plain.name, plain.nc, plain.tolerance) == ("pusher_plain", 7, 0.05)
    # Moving the arm alone leaves the plain cost unchanged (object distance and effort only); the shaped one changes.
    u = np.zeros(plain.nc)
    x = plain.x0.copy()
    x[:7] += [0.4, -0.3, 0.5, -0.6, 0.2, -0.4, 0.3]
    assert plain.running_cost(x, u) == pytest.approx(plain.running_cost(plain.x0, u), rel=1e-12)
    assert abs(shaped.running_cost(x, u) - shaped.running_cost(plain.x0, u)) > 1e-3
