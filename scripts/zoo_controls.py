"""Twin of `cenic::zoo::smooth_control` for the MuJoCo scripts: the same seeded smooth controls,
drawn with the same SplitMix64 arithmetic (modulo 2^64), so MuJoCo and cenic runs see the same
inputs."""

import math

MASK = (1 << 64) - 1
CONTROL_INTERVAL = 0.01


def _splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def _uniform(state):
    state, z = _splitmix64(state)
    return state, (z >> 11) / float(1 << 53)


def smooth_control(m, seed, i, t):
    """Control of actuator i at time t (s): the middle of its ctrlrange (or [-1, 1]) plus 0.8 of the
    half range times a normalised sum of three sines of 0.3-2 Hz with random phases and amplitudes."""
    lo, hi = (m.actuator_ctrlrange[i] if m.actuator_ctrllimited[i] else (-1.0, 1.0))
    s = (seed * 1000 + i) & MASK
    total, norm = 0.0, 0.0
    for _ in range(3):
        s, u = _uniform(s)
        f = 0.3 + 1.7 * u
        s, u = _uniform(s)
        phase = 2.0 * math.pi * u
        s, u = _uniform(s)
        a = 0.2 + 0.8 * u
        total += a * math.sin(2.0 * math.pi * f * t + phase)
        norm += a
    return 0.5 * (lo + hi) + 0.8 * 0.5 * (hi - lo) * total / norm


def controls_per_step(m, seed, horizon, dt):
    """(nstep, nu) controls for steps of dt: each step gets the control of the 10 ms interval its
    start time falls in."""
    n = int(round(horizon / dt))
    out = []
    for k in range(n):
        t0 = math.floor(k * dt / CONTROL_INTERVAL + 1e-9) * CONTROL_INTERVAL
        out.append([smooth_control(m, seed, i, t0) for i in range(m.nu)])
    return out
