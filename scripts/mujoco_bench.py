#!/usr/bin/env python3
"""MuJoCo on the shared benchmark scenes, for the side-by-side table in BENCHMARKS.md.

Run from the repository root, right after `cargo run --release --example cpu_benchmarks`
(not run in CI):

    python3 scripts/mujoco_bench.py

or, after `cargo run --release --example robot_bench`, for the gymnasium robots:

    python3 scripts/mujoco_bench.py --zoo

or, after `cargo run --release --example rough_terrain`, for the ant on flat and rough terrain:

    python3 scripts/mujoco_bench.py --rough

Written and run with the `mujoco` Python package 4.0.0. Reads `cube_toss.xml` and
`clutter20.xml` from `$CENIC_SHARED/scenes` (default `../shared`), removes cenic's extension
attributes (`stiffness`, `dissipation`, `friction_dynamic`, `stiction_tolerance`), which MuJoCo
rejects, and keeps everything else: geometry, masses, sliding friction, keyframes. Contacts then
use MuJoCo's own soft-contact defaults (solref 0.02 1, pyramidal cones, Newton solver), so the
contact model differs from cenic's; the table compares the cost of a simulated second at a
fixed step, single thread, not accuracy.

For each scene and time step: best of 3 runs of `mj_step(m, d, nstep)` (the loop runs in C),
from keyframe `toss` (cube toss, 2 s) or the initial pose (clutter, 3 s), with wall time,
real-time factor, microseconds per step and the mean number of contacts.
"""

import os
import re
import sys
import time

import mujoco
import numpy as np
from mujoco import rollout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_controls import controls_per_step  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("CENIC_SHARED", os.path.join(ROOT, "..", "shared"))
EXTENSIONS = ("stiffness", "dissipation", "friction_dynamic", "stiction_tolerance")


def load(name):
    with open(os.path.join(SHARED, "scenes", name)) as f:
        xml = f.read()
    for attr in EXTENSIONS:
        xml = re.sub(r'\s%s="[^"]*"' % attr, "", xml)
    return mujoco.MjModel.from_xml_string(xml)


def reset(model, data, key):
    if key is None:
        mujoco.mj_resetData(model, data)
    else:
        mujoco.mj_resetDataKeyframe(model, data, key)


def run(model, key, horizon, dt, repeat=3):
    model.opt.timestep = dt
    data = mujoco.MjData(model)
    nchunk = int(round(horizon / dt)) // 10
    best = float("inf")
    for _ in range(repeat):
        reset(model, data, key)
        t0 = time.perf_counter()
        for _ in range(nchunk):
            mujoco.mj_step(model, data, nstep=10)
        best = min(best, time.perf_counter() - t0)
    # Contact count sampled every 10 steps, in one more (untimed) run.
    reset(model, data, key)
    counts = []
    for _ in range(nchunk):
        mujoco.mj_step(model, data, nstep=10)
        counts.append(data.ncon)
    return best, 10 * nchunk, sum(counts) / len(counts)


ZOO = ["humanoid", "ant", "half_cheetah", "inverted_pendulum", "inverted_double_pendulum"]


def zoo(models=None):
    """The gymnasium robots as `cargo run --release --example robot_bench` runs them: 2 s from the
    initial pose under the seeded smooth controls of cenic::zoo (seed 1, 10 ms intervals), at each
    model's own time step and integrator, stepped in C by mujoco.rollout (controls precomputed per
    step), best of 5, single thread. `models`: (name, path) pairs instead of the gymnasium set."""
    print(f"MuJoCo {mujoco.__version__}: gymnasium models under cenic::zoo's smooth controls, single thread")
    print()
    print("| model | integrator | step | wall [s] | real-time factor | µs/step | mean contacts |")
    print("|---|---|---|---|---|---|---|")
    horizon = 2.0
    if models is None:
        models = [(name, os.path.join(SHARED, "models", "gymnasium", name + ".xml")) for name in ZOO]
    for name, path in models:
        m = mujoco.MjModel.from_xml_path(path)
        d = mujoco.MjData(m)
        dt = m.opt.timestep
        ctrl = np.array(controls_per_step(m, 1, horizon, dt))
        mujoco.mj_resetData(m, d)
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        x0 = np.empty(mujoco.mj_stateSize(m, spec))
        mujoco.mj_getState(m, d, x0, spec)
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            rollout.rollout(m, d, x0, ctrl)
            best = min(best, time.perf_counter() - t0)
        # Contacts, in one untimed stepping loop.
        mujoco.mj_resetData(m, d)
        counts = []
        for u in ctrl:
            d.ctrl[:] = u
            mujoco.mj_step(m, d)
            counts.append(d.ncon)
        integrator = mujoco.mjtIntegrator(m.opt.integrator).name.replace("mjINT_", "")
        print(
            f"| {name} | {integrator} | {dt * 1e3:g} ms | {best:.4f} | {horizon / best:.1f} | "
            f"{1e6 * best / len(ctrl):.2f} | {sum(counts) / len(counts):.1f} |"
        )


def main():
    if "--zoo" in sys.argv:
        zoo()
        return
    if "--rough" in sys.argv:
        # The ant on its flat floor and on examples/scenes/ant_rough_terrain.xml (its include of the
        # ant points at ../shared; with another CENIC_SHARED, the path is rewritten).
        scene = os.path.join(ROOT, "examples", "scenes", "ant_rough_terrain.xml")
        ant = os.path.join(SHARED, "models", "gymnasium", "ant.xml")
        with open(scene) as f:
            xml = f.read().replace("../../../shared/models/gymnasium/ant.xml", os.path.abspath(ant))
        rough = os.path.join(os.path.dirname(scene), ".ant_rough_terrain_resolved.xml")
        with open(rough, "w") as f:
            f.write(xml)
        try:
            zoo([("ant", ant), ("ant_rough_terrain", rough)])
        finally:
            os.remove(rough)
        return
    print(f"MuJoCo {mujoco.__version__}, single thread, MuJoCo's default contact parameters")
    print()
    print("| scene | step | sim time [s] | wall [s] | real-time factor | µs/step | mean contacts |")
    print("|---|---|---|---|---|---|---|")
    for name, xml, key, horizon in [
        ("cube toss", "cube_toss.xml", 0, 2.0),
        ("clutter20.xml", "clutter20.xml", None, 3.0),
    ]:
        model = load(xml)
        for dt in (1e-3, 2e-3):
            wall, nstep, ncon = run(model, key, horizon, dt)
            print(
                f"| {name} | {dt * 1e3:g} ms | {horizon:g} | {wall:.4f} | {horizon / wall:.1f} | "
                f"{1e6 * wall / nstep:.2f} | {ncon:.1f} |"
            )


if __name__ == "__main__":
    main()
