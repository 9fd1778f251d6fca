"""Cost of a gradient from Python: `Rollout.vjp` by the reverse pass against
forming the interval Jacobians and taking the product with them (what
`cenic.rollout_jacobians` did eagerly before it recorded lazily).

Per repeat, each from a fresh rollout of the same inputs:

- forward:  `cenic.simulate` (the map alone);
- reverse:  `rollout_jacobians` (the taped forward) + `vjp(g)`, the
            Jacobian blocks never formed;
- dense:    `rollout_jacobians` + `d_x`, `d_u`, `d_theta` (formed from the
            tape) + the product with them (a NumPy sweep, as
            python/tests/test_diff.py's `backward_by_hand`).

Both gradients are compared (largest relative difference printed). With
``--package DIR`` the script imports the `cenic` package found in DIR instead
(e.g. a copy of an older build, whose `vjp` multiplied eagerly formed
blocks: its `rollout_jacobians` + `vjp` is then timed as "eager").

    python scripts/py_vjp_bench.py [--model ../shared/models/gymnasium/half_cheetah.xml]
        [--intervals 50] [--interval 0.01] [--accuracy 1e-4] [--worlds 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def sweep(d_x, d_u, d_t, g):
    """(∂L/∂x0, ∂L/∂u, ∂L/∂θ) from the interval Jacobians of one world."""
    lam = g[-1].copy()
    gu = np.zeros((len(d_x), d_u.shape[-1]))
    gt = np.zeros(d_t.shape[-1])
    for k in reversed(range(len(d_x))):
        gu[k] = lam @ d_u[k]
        gt += lam @ d_t[k]
        lam = lam @ d_x[k] + g[k]
    return lam, gu, gt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="../shared/models/gymnasium/half_cheetah.xml")
    ap.add_argument("--intervals", type=int, default=50)
    ap.add_argument("--interval", type=float, default=0.01, help="control interval (s)")
    ap.add_argument("--accuracy", type=float, default=1e-4, help="CENIC accuracy")
    ap.add_argument("--worlds", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--package", help="directory holding the `cenic` package to import instead")
    a = ap.parse_args()
    if a.package:
        sys.path.insert(0, a.package)
    import cenic

    lazy = hasattr(cenic.Rollout, "dense_built")
    m = cenic.Model.from_mjcf(a.model)
    rng = np.random.default_rng(3)
    n, nw = a.intervals, a.worlds
    # The rest pose moving forward at 0.5 m/s, dropped onto the ground; smooth random motor inputs.
    x0 = np.concatenate([m.qpos0, np.zeros(m.nv)])
    x0[m.nq] = 0.5
    t = np.arange(n)[:, None] * a.interval
    u = np.stack([0.6 * np.sin(2 * np.pi * (1.5 + w) * t + rng.uniform(0, 6, m.nu)) for w in range(nw)])
    names = ["friction", "stiffness", "dissipation", "mass_scale"]
    theta = np.tile(1.0 + 0.05 * np.arange(len(names)), (nw, 1))
    x0 = np.tile(x0, (nw, 1))
    kw = dict(interval=a.interval, accuracy=a.accuracy, param_names=names)
    g = rng.normal(size=(nw, n + 1, m.nq + m.nv))

    def forward():
        cenic.simulate(m, x0, u, theta, **kw)

    def reverse():
        r = cenic.rollout_jacobians(m, x0, u, theta, **kw)
        out = r.vjp(g)
        assert not r.dense_built
        return out, r

    def dense():
        r = cenic.rollout_jacobians(m, x0, u, theta, **kw)
        d_x, d_u, d_t = r.d_x, r.d_u, r.d_theta
        parts = [sweep(d_x[w], d_u[w], d_t[w], g[w]) for w in range(nw)]
        return tuple(np.stack(p) for p in zip(*parts)), r

    def eager():
        r = cenic.rollout_jacobians(m, x0, u, theta, **kw)
        return r.vjp(g), r

    cases = {"forward": forward, **({"reverse": reverse, "dense": dense} if lazy else {"eager": eager})}
    for f in cases.values():  # warm-up
        f()
    times = {k: [] for k in cases}
    for _ in range(a.repeat):
        for k, f in cases.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    ms = {k: 1e3 * float(np.mean(v)) for k, v in times.items()}
    out = {
        "model": a.model,
        "intervals": n,
        "worlds": nw,
        "repeat": a.repeat,
        "package": cenic.__file__,
        "mean_ms": {k: round(v, 2) for k, v in ms.items()},
        "min_ms": {k: round(1e3 * min(v), 2) for k, v in times.items()},
    }
    if lazy:
        (rv, r), (dv, rd) = reverse(), dense()
        rel = max(float(np.linalg.norm(x - y) / np.linalg.norm(y)) for x, y in zip(rv, dv))
        s, sd = r.stats(), rd.stats()
        out.update(
            dense_over_reverse=round(ms["dense"] / ms["reverse"], 2),
            reverse_over_forward=round(ms["reverse"] / ms["forward"], 1),
            dense_over_forward=round(ms["dense"] / ms["forward"], 1),
            max_relative_difference=f"{rel:.1e}",
            accepted_steps=s["accepted"],
            tape_bytes=s["tape_bytes"],
            dense_bytes=int(n * (m.nq + m.nv) * (m.nq + m.nv + u.shape[-1] + len(names)) * 8 * nw),
            vjp_seconds=round(s["vjp_seconds"], 4),
            jacobian_seconds=round(sd["jacobian_seconds"], 4),
        )
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
