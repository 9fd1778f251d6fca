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
    """The vector-Jacobian product from the Jacobian arrays (reverse sweep in NumPy);
    batched rollouts world by world."""
    d_x, d_u, d_t = r.d_x, r.d_u, r.d_theta
    if g.ndim == 3:
        return tuple(np.stack(p) for p in zip(*(sweep(d_x[w], d_u[w], d_t[w], g[w]) for w in range(len(g)))))
    return sweep(d_x, d_u, d_t, g)


def sweep(d_x, d_u, d_t, g):
    lam = g[-1].copy()
    gu = np.zeros((len(d_x), d_u.shape[-1]))
    gt = np.zeros(d_t.shape[-1])
    for k in reversed(range(len(d_x))):
        gu[k] = lam @ d_u[k]
        gt += lam @ d_t[k]
        lam = lam @ d_x[k] + g[k]
    return lam, gu, gt


def rel_err(a, b):
    """‖a − b‖ / ‖b‖ per world (the last axes), the largest."""
    a, b = np.asarray(a), np.asarray(b)
    axes = tuple(range(1, b.ndim)) if b.ndim > 1 else None
    return np.max(np.sqrt(np.sum((a - b) ** 2, axis=axes)) / np.sqrt(np.sum(b**2, axis=axes)))


def check_lazy_vjp(model, x0, u, theta, what, **kw):
    """`Rollout.vjp` (the reverse pass) forms no Jacobian block and equals the
    product with the Jacobian blocks, formed afterwards, to 1e-10 relative
    for three random cotangents."""
    r = cenic.rollout_jacobians(model, x0, u, theta, **kw)
    assert not r.dense_built and r.tape_bytes > 0 and r.stats()["jacobian_seconds"] == 0.0
    rng = np.random.default_rng(7)
    gs = [rng.normal(size=r.trajectory.shape) for _ in range(3)]
    lazy = [r.vjp(g) for g in gs]
    assert not r.dense_built, f"{what}: vjp formed the Jacobian blocks"
    assert r.stats()["vjp_seconds"] > 0
    assert r.d_x.shape[-2:] == (r.trajectory.shape[-1],) * 2 and r.dense_built
    assert r.stats()["jacobian_seconds"] > 0
    for g, got in zip(gs, lazy):
        for name, a, e in zip(("x0", "controls", "params"), got, backward_by_hand(r, g)):
            assert a.shape == e.shape and a.dtype == np.float64, (what, name)
            assert np.any(e != 0), f"{what}: dense {name} gradient is zero"
            err = rel_err(a, e)
            assert err <= 1e-10, f"{what}: {name} differs by {err:.2e} relative"
    return r


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
        assert rel_err(got, want) <= 1e-10
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
    assert cfd.stats()["phantom_pairs"] == 0  # no derivative pass has run yet
    cfd.vjp(np.ones_like(cfd.trajectory))
    stats = cfd.stats()
    assert stats["phantom_pairs"] > 0 and stats["solves"] > 0 and stats["accepted"] > 0
    cfd.d_x  # the dense pass meets the same phantom pairs
    assert cfd.stats()["phantom_pairs"] == stats["phantom_pairs"]


def cube_inputs(nworld=None):
    """A raw (unnormalised) cube pose thrown at the ground with pushes; per world a different throw."""
    x0 = np.array([0, 0, 0.3, 1.3, 0.1, 0, 0, 0.5, 0, 0, 0.4, 2.0, 3.0])
    u = np.zeros((16, 6))
    u[:, 0] = np.linspace(0, 1, 16)  # a growing push along x (N)
    if nworld is None:
        return x0, u, np.array([1.0, 1.2, 0.9])
    x0s = np.stack([x0 + [0, 0, 0.05 * w, 0, 0, 0, 0, 0.2 * w, 0, 0, 0, 0, -w] for w in range(nworld)])
    thetas = np.stack([[1.0, 1.2 - 0.1 * w, 0.9 + 0.05 * w] for w in range(nworld)])
    return x0s, np.stack([u * (1 + w) for w in range(nworld)]), thetas


CUBE_KW = dict(interval=0.025, control="applied", param_names=["friction", "mass_scale", "geom_size:cube_geom"])


@pytest.mark.parametrize("integration", [dict(accuracy=1e-4), dict(dt=2e-3)], ids=["cenic", "fixed"])
def test_cube_toss_lazy_vjp_equals_dense_product(integration):
    m = cenic.Model.builtin("cube_toss")
    r = check_lazy_vjp(m, *cube_inputs(), "cube toss", **CUBE_KW, **integration)
    assert r.stats()["accepted"] > 0 and r.trajectory[-1, 2] < 0.1  # it landed


def test_batched_cube_toss_lazy_vjp_equals_dense_product():
    m = cenic.Model.builtin("cube_toss")
    r = check_lazy_vjp(m, *cube_inputs(3), "cube toss, 3 worlds", accuracy=1e-4, **CUBE_KW)
    assert r.d_x.shape == (3, 16, 13, 13)
    assert not np.array_equal(r.d_x[0], r.d_x[1])  # the worlds differ


def half_cheetah_inputs(model, nworld, n, interval):
    """The model's rest pose with a small forward speed and smooth random motor inputs per world."""
    rng = np.random.default_rng(3)
    x0 = np.concatenate([model.qpos0, np.zeros(model.nv)])
    x0[model.nq] = 0.5
    t = np.arange(n)[:, None] * interval
    u = np.stack([0.6 * np.sin(2 * np.pi * (1.5 + w) * t + rng.uniform(0, 6, model.nu)) for w in range(nworld)])
    return np.tile(x0, (nworld, 1)), u, np.tile([1.0, 1.05], (nworld, 1))


def test_half_cheetah_lazy_vjp_equals_dense_product(gym_models):
    """The gymnasium half_cheetah (MuJoCo's soft contacts, the feet hitting the ground): 2 worlds of 25
    intervals, with motor inputs and parameters."""
    m = cenic.Model.from_mjcf(gym_models / "half_cheetah.xml")
    x0, u, theta = half_cheetah_inputs(m, 2, 25, 0.01)
    kw = dict(interval=0.01, accuracy=1e-4, param_names=["friction", "mass_scale"])
    r = check_lazy_vjp(m, x0, u, theta, "half_cheetah, 2 worlds", **kw)
    assert r.stats()["solves"] > 50
    # one world alone: the same product as its row of the batch
    g = np.random.default_rng(5).normal(size=r.trajectory.shape)
    one = cenic.rollout_jacobians(m, x0[1], u[1], theta[1], **kw)
    for a, b in zip(one.vjp(g[1]), r.vjp(g)):
        np.testing.assert_array_equal(a, b[1])
    assert not one.dense_built


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
    assert not r.dense_built
    plain = cenic.rollout_jacobians(m, x0, **kw, jacobians=False)
    assert plain.tape_bytes == 0 and plain.trajectory.shape == (3, 13)
    with pytest.raises(ValueError, match="jacobians=False"):
        plain.vjp(np.zeros((3, 13)))
    with pytest.raises(ValueError, match="jacobians=False"):
        plain.d_x


def test_gradient_spread_flags_a_toss_through_fixed_steps_not_free_flight():
    """`Rollout.gradient_spread`: the cube toss through its landing at fixed 1 ms steps moves by O(1)
    when the step is divided by 10 (where in a step each impact falls decides the derivative) and is
    flagged; the same cube in free flight is not. `tightened` is the vjp of an independent rollout at
    the tightened step, and a batch reports per world."""
    m = cenic.Model.builtin("cube_toss")
    x0 = np.array([0, 0, 0.3, 1, 0, 0, 0, 1.0, 0, 0, 0, 5, 3.0])
    kw = dict(interval=0.05, control="applied")

    def final_x(r):
        g = np.zeros_like(r.trajectory)
        g[..., -1, 0] = 1.0
        return g

    toss = cenic.rollout_jacobians(m, x0, nsteps=12, dt=1e-3, **kw)  # 0.6 s: lands and tumbles
    assert toss.trajectory[-1, 2] < 0.1
    s = toss.gradient_spread(final_x(toss))
    assert s["flagged"] and s["spread"] > 0.05, s["spread"]
    tight = cenic.rollout_jacobians(m, x0, nsteps=12, dt=1e-4, **kw)
    for a, b in zip(s["tightened"], tight.vjp(final_x(tight))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert s["spread"] == max(s["controls"], s["initial_state"], s["params"])

    flight = cenic.rollout_jacobians(m, x0, nsteps=2, dt=1e-3, **kw)  # 0.1 s in the air, spinning
    s = flight.gradient_spread(final_x(flight))
    assert not s["flagged"] and s["spread"] < 0.02, s["spread"]  # the rotation's first-order error

    both = cenic.rollout_jacobians(m, np.stack([x0, x0]), nsteps=2, dt=1e-3, **kw)
    s = both.gradient_spread(final_x(both), factor=4.0)
    assert s["flagged"] == [False, False] and len(s["spread"]) == 2
    assert s["tightened"][1].shape == (2, 2, 6)
    with pytest.raises(ValueError, match="factor must be finite and > 1"):
        flight.gradient_spread(final_x(flight), factor=0.5)
