"""Model-predictive control from Python: cenic.MpcTask and cenic.Planner."""

from __future__ import annotations

import numpy as np
import pytest

import cenic


def test_task_names_and_sizes():
    assert cenic.mpc_task_names() == ["reacher", "pusher", "billiards", "half_cheetah"]
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
