"""Rollout Jacobians: shapes, consistency of the vector-Jacobian product
with the Jacobians, and gradients against central finite differences of
`cenic.simulate` (the same discrete map)."""

from __future__ import annotations

import numpy as np
import pytest

import cenic


def fd_gradient(loss, x, delta):
    """Central differences of the scalar `loss` at `x` (flattened)."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros(x.size)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = delta
        g[i] = (loss((x.ravel() + e).reshape(x.shape)) - loss((x.ravel() - e).reshape(x.shape))) / (2 * delta)
    return g.reshape(x.shape)


def backward_by_hand(r, g):
    """The vector-Jacobian product from the Jacobian arrays (reverse sweep in NumPy)."""
    d_x, d_u, d_t = r.d_x, r.d_u, r.d_theta
    lam = g[-1].copy()
    gu = np.zeros((r.nsteps, d_u.shape[-1]))
    gt = np.zeros(d_t.shape[-1])
    for k in reversed(range(r.nsteps)):
        gu[k] = lam @ d_u[k]
        gt += lam @ d_t[k]
        lam = lam @ d_x[k] + g[k]
    return lam, gu, gt


@pytest.fixture(scope="module")
def pendulum(gym_models):
    return cenic.Model.from_mjcf(gym_models / "inverted_pendulum.xml")


def test_pendulum_gradients_match_finite_differences(pendulum):
    m = pendulum
    x0 = np.array([0.05, 0.1, -0.2, 0.3])  # cart x, pole angle, their velocities
    u = np.linspace(-0.5, 0.5, 12).reshape(12, 1)
    theta = np.array([1.1])
    kw = dict(interval=0.04, dt=0.01, param_names=["mass_scale"])
    r = cenic.rollout_jacobians(m, x0, u, theta, **kw)
    traj = r.trajectory
    assert traj.shape == (13, 4) and traj.dtype == np.float64
    assert r.d_x.shape == (12, 4, 4) and r.d_u.shape == (12, 4, 1) and r.d_theta.shape == (12, 4, 1)
    np.testing.assert_array_equal(traj, cenic.simulate(m, x0, u, theta, **kw))
    w = np.random.default_rng(1).normal(size=traj.shape)

    def loss(x=x0, uu=u, th=theta):
        return float(np.sum(w * cenic.simulate(m, x, uu, th, **kw)))

    gx, gu, gt = r.vjp(w)
    assert gx.shape == (4,) and gu.shape == (12, 1) and gt.shape == (1,)
    for got, want in zip((gx, gu, gt), backward_by_hand(r, w)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx, fd_gradient(lambda x: loss(x=x), x0, 1e-6), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gu, fd_gradient(lambda v: loss(uu=v), u, 1e-6), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gt, fd_gradient(lambda t: loss(th=t), theta, 1e-6), rtol=1e-5, atol=1e-7)


def test_sliding_cube_gradients_through_contact():
    """A cube sliding on the ground at 1 m/s: gradients of its final state
    with respect to friction, mass and the cube's size through 4 persistent
    frictional contacts."""
    m = cenic.Model.builtin("cube_toss")
    z = 0.05 - 0.37 * 9.81 / 4e5  # resting on 4 corner contacts of 1e5 N/m each
    x0 = np.array([0, 0, z, 1, 0, 0, 0, 1.0, 0, 0, 0, 0, 0])
    names = ["friction", "mass_scale", "geom_size:cube_geom"]
    # finite differences measure the exact derivative of the map: the lagged friction load
    kw = dict(interval=0.01, dt=1e-3, nsteps=10, control="applied", param_names=names, friction_load="lagged")
    theta = np.ones(3)
    u = np.zeros((10, 6))
    u[:, 0] = 0.2  # a small push along x (N)
    r = cenic.rollout_jacobians(m, x0, u, theta, **kw)
    x_end = r.trajectory[-1]
    # Coulomb friction decelerates by μ g (μ = 0.18) minus the push: Δv ≈ −(0.18·9.81 − 0.2/0.37)·0.1 s.
    assert x_end[7] == pytest.approx(1.0 - (0.18 * 9.81 - 0.2 / 0.37) * 0.1, abs=1e-3)
    g = np.zeros_like(r.trajectory)
    g[-1, 0] = 1.0  # final x position
    g[-1, 7] = 0.5  # and x velocity
    gx, gu, gt = r.vjp(g)

    def loss(th=theta, uu=u):
        t = cenic.simulate(m, x0, uu, th, **kw)
        return t[-1, 0] + 0.5 * t[-1, 7]

    fd = fd_gradient(lambda t: loss(th=t), theta, 1e-6)
    np.testing.assert_allclose(gt, fd, rtol=1e-4, atol=1e-8)
    # d(v_end)/dμ ≈ −μ g t per unit multiplier: the dominant term.
    assert gt[0] == pytest.approx(0.5 * -0.18 * 9.81 * 0.1 + -0.5 * 0.18 * 9.81 * 0.01, rel=0.05)
    np.testing.assert_allclose(gu[:, 0], fd_gradient(lambda v: loss(uu=v), u, 1e-6)[:, 0], rtol=1e-4, atol=1e-8)


def test_implicit_friction_load_gives_the_converged_size_gradient_of_a_sliding_cube():
    """The cube of the test above, gradient of the same loss with respect to
    its size. A bigger cube at the same height is pressed 0.5 mm deeper per
    % into the ground. The exact derivative of the map (lagged friction
    load) then holds that extra normal force as friction for the whole
    step, an error of O(h): -5.8, -0.59, -0.065 at 1 ms, 100 µs, 10 µs.
    Extrapolated to h -> 0 from the last two, the flow's gradient is about
    -0.007; the default implicit load already gives it at 1 ms."""
    m = cenic.Model.builtin("cube_toss")
    z = 0.05 - 0.37 * 9.81 / 4e5
    x0 = np.array([0, 0, z, 1, 0, 0, 0, 1.0, 0, 0, 0, 0, 0])
    u = np.zeros((10, 6))
    u[:, 0] = 0.2
    kw = dict(interval=0.01, nsteps=10, control="applied", param_names=["geom_size:cube_geom"])
    g = np.zeros((11, 13))
    g[-1, 0], g[-1, 7] = 1.0, 0.5

    def fd(dt):
        def loss(s):
            t = cenic.simulate(m, x0, u, [s], dt=dt, **kw)
            return t[-1, 0] + 0.5 * t[-1, 7]

        return (loss(1 + 1e-6) - loss(1 - 1e-6)) / 2e-6

    f4, f5 = fd(1e-4), fd(1e-5)
    limit = f5 - (f4 - f5) / 9  # first order in h (Richardson)
    assert -0.02 < limit < -0.002 and abs(f4 - f5) > 10 * abs(limit)

    def grad(dt, load):
        r = cenic.rollout_jacobians(m, x0, u, [1.0], dt=dt, friction_load=load, **kw)
        return r.vjp(g)[2][0]

    assert grad(1e-5, "implicit") == pytest.approx(limit, rel=0.1)
    assert grad(1e-3, "implicit") == pytest.approx(limit, rel=0.5)
    assert abs(grad(1e-3, "lagged") - limit) > 100 * abs(limit)


def test_batched_rollout_equals_single_and_cfd_keeps_the_trajectory():
    m = cenic.Model.builtin("cube_toss")
    x0 = np.array([[0, 0, 0.3, 1, 0, 0, 0, 1, 0, 0, 0, 5, 3], [0, 0, 0.2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0.0]])
    kw = dict(interval=0.05, nsteps=6, accuracy=1e-5, param_names=["friction"])
    rb = cenic.rollout_jacobians(m, x0, None, None, **kw)
    assert rb.trajectory.shape == (2, 7, 13) and rb.d_theta.shape == (2, 6, 13, 1) and rb.d_u.shape == (2, 6, 13, 0)
    for w in range(2):
        r1 = cenic.rollout_jacobians(m, x0[w], None, np.ones(1), **kw)
        np.testing.assert_array_equal(rb.trajectory[w], r1.trajectory)
        np.testing.assert_array_equal(rb.d_x[w], r1.d_x)
    gx, gu, gt = rb.vjp(np.ones_like(rb.trajectory))
    assert gx.shape == (2, 13) and gu.shape == (2, 6, 0) and gt.shape == (2, 1)
    cfd = cenic.rollout_jacobians(m, x0, **kw, cfd_width=0.05, cfd_strength=3.6)
    np.testing.assert_array_equal(cfd.trajectory, rb.trajectory)
    stats = cfd.stats()
    assert stats["phantom_pairs"] > 0 and stats["solves"] > 0 and stats["accepted"] > 0


def test_bad_rollout_input():
    m = cenic.Model.builtin("cube_toss")
    x0 = np.array([0, 0, 0.3, 1, 0, 0, 0, 1, 0, 0, 0, 5, 3.0])
    kw = dict(interval=0.05, nsteps=2, dt=1e-3)
    with pytest.raises(ValueError, match=r"x0: expected shape \[13\]"):
        cenic.rollout_jacobians(m, x0[:12], **kw)
    with pytest.raises(ValueError, match="x0: entry 2 is NaN"):
        cenic.rollout_jacobians(m, np.where(np.arange(13) == 2, np.nan, x0), **kw)
    with pytest.raises(ValueError, match="unknown parameter 'gravity'"):
        cenic.rollout_jacobians(m, x0, **kw, param_names=["gravity"])
    with pytest.raises(ValueError, match="geom 'ground' is a plane"):
        cenic.rollout_jacobians(m, x0, **kw, param_names=["geom_size:ground"])
    with pytest.raises(ValueError, match=r"params: expected shape \[1\]"):
        cenic.rollout_jacobians(m, x0, None, [1.0, 2.0], **kw, param_names=["friction"])
    with pytest.raises(ValueError, match=r"controls: expected shape \[3, 6\]"):
        cenic.rollout_jacobians(m, x0, np.zeros((3, 5)), interval=0.05, dt=1e-3, control="applied")
    with pytest.raises(ValueError, match="give controls or nsteps"):
        cenic.rollout_jacobians(m, x0, interval=0.05)
    with pytest.raises(ValueError, match="interval must be a positive"):
        cenic.rollout_jacobians(m, x0, interval=0.0, nsteps=2)
    with pytest.raises(ValueError, match="cfd_width .* and cfd_strength"):
        cenic.rollout_jacobians(m, x0, **kw, cfd_width=0.01)
    with pytest.raises(ValueError, match="friction_load must be 'implicit' or 'lagged', got 'exact'"):
        cenic.rollout_jacobians(m, x0, **kw, friction_load="exact")
    r = cenic.rollout_jacobians(m, x0, **kw)
    with pytest.raises(ValueError, match=r"g: expected shape \[3, 13\]"):
        r.vjp(np.zeros((2, 13)))
