#!/usr/bin/env python3
"""Contact-free trajectory fixtures from MuJoCo for cenic's multibody dynamics.

Run from the repository root (not run in CI; the JSON it writes is committed):

    /work/venv/bin/python scripts/mujoco_zoo_fixtures.py      # any Python with mujoco and numpy

Written and run with the `mujoco` Python package 4.0.0. For each case below it loads the
gymnasium model from `$CENIC_SHARED/models/gymnasium` (default `../shared`), disables contacts
and joint limits (`opt.disableflags`: mjDSBL_CONTACT | mjDSBL_LIMIT), so that only the
multibody dynamics, passive forces (damping, stiffness, armature) and actuators act, and
integrates with MuJoCo's RK4 at a 0.1 ms step for 1 s under the seeded smooth controls of
`cenic::zoo::smooth_control` (its twin in scripts/zoo_controls.py), held
constant over 10 ms intervals. It writes qpos and qvel every 10 ms to
`tests/fixtures/mujoco_zoo/<case>.json`. The cenic side (tests/zoo.rs) removes contacts and
limits from its model the same way and integrates with CENIC at accuracy 1e-7.

A step of 0.1 ms with RK4 is converged: halving it changes no qpos entry by more than the
`rk4_step_change` recorded in each file.
"""

import json
import os
import sys

import mujoco
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_controls import CONTROL_INTERVAL, smooth_control  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("CENIC_SHARED", os.path.join(ROOT, "..", "shared"))
OUT = os.path.join(ROOT, "tests", "fixtures", "mujoco_zoo")

HORIZON = 1.0
STEP = 1e-4
SEED = 1
# case name -> (model file stem, gravity on)
CASES = {
    "inverted_pendulum": ("inverted_pendulum", True),
    "inverted_double_pendulum": ("inverted_double_pendulum", True),
    "reacher": ("reacher", True),
    "pusher": ("pusher", True),
    "half_cheetah_air": ("half_cheetah", True),
    "ant_air": ("ant", True),
    "humanoid_air": ("humanoid", False),
}


def simulate(m, step):
    m.opt.timestep = step
    d = mujoco.MjData(m)
    per = int(round(CONTROL_INTERVAL / step))
    qpos, qvel = [d.qpos.tolist()], [d.qvel.tolist()]
    for k in range(int(round(HORIZON / CONTROL_INTERVAL))):
        t = k * CONTROL_INTERVAL
        for i in range(m.nu):
            d.ctrl[i] = smooth_control(m, SEED, i, t)
        mujoco.mj_step(m, d, nstep=per)
        qpos.append(d.qpos.tolist())
        qvel.append(d.qvel.tolist())
    return np.array(qpos), np.array(qvel)


def main():
    os.makedirs(OUT, exist_ok=True)
    for case, (stem, gravity) in CASES.items():
        m = mujoco.MjModel.from_xml_path(os.path.join(SHARED, "models", "gymnasium", stem + ".xml"))
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
        if not gravity:
            m.opt.gravity[:] = 0.0
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
        qpos, qvel = simulate(m, STEP)
        qpos_half, _ = simulate(m, STEP / 2)
        record = {
            "mujoco_version": mujoco.__version__,
            "model": stem,
            "gravity": gravity,
            "integrator": "RK4",
            "step": STEP,
            "control_interval": CONTROL_INTERVAL,
            "horizon": HORIZON,
            "seed": SEED,
            "rk4_step_change": float(np.abs(qpos - qpos_half).max()),
            "nq": int(m.nq),
            "nv": int(m.nv),
            "qpos": [[float(x) for x in row] for row in qpos],
            "qvel": [[float(x) for x in row] for row in qvel],
        }
        with open(os.path.join(OUT, case + ".json"), "w") as f:
            json.dump(record, f)
        print(f"{case}: nq {m.nq} nv {m.nv}, RK4 step change {record['rk4_step_change']:.2e}")


if __name__ == "__main__":
    main()
