#!/usr/bin/env python3
"""Generate MuJoCo reference fixtures for cenic's MJCF loader and dynamics tests.

Run from the repository root (not run in CI; the JSON it writes is committed):

    python3 scripts/mujoco_fixtures.py

Written and run with the `mujoco` Python package 4.0.0 (and numpy). Reads the gymnasium models
from `$CENIC_SHARED/models/gymnasium` (default `../shared`, next to the repository) and our own
`tests/fixtures/free_ball_chain.xml`; writes `tests/fixtures/mujoco/<model>.json`.

Each JSON file holds the compiled model quantities the loader tests compare (counts, joint types,
body tree and masses, inertias, geom poses and sizes, actuator and joint parameters, qpos0) and,
for the models in DYNAMICS, MuJoCo's kinematics, full mass matrix (`mj_fullM(m, d, M)` after
`mj_forward`, armature included; MuJoCo 4 signature) and bias forces (`qfrc_bias`: Coriolis, centrifugal and gravity)
at seeded random states: uniformly random unit quaternions for free and ball joints, random
positions for free joints, hinge angles in [-pi, pi], slide positions in [-0.5, 0.5] m, and
standard-normal velocities. Floats are written with `repr` precision (exact round trip).
"""

import json
import os
import sys
import tempfile

import mujoco
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("CENIC_SHARED", os.path.join(ROOT, "..", "shared"))
OUT = os.path.join(ROOT, "tests", "fixtures", "mujoco")

GYM = [
    "ant",
    "half_cheetah",
    "humanoid",
    "inverted_double_pendulum",
    "inverted_pendulum",
    "point",
    "pusher",
    "reacher",
]
# Models with mass-matrix / bias-force fixtures, and the number of random states for each.
DYNAMICS = {"ant", "half_cheetah", "humanoid", "inverted_double_pendulum", "free_ball_chain"}
NSTATES = 6
JOINT_TYPES = {0: "free", 1: "ball", 2: "slide", 3: "hinge"}
GEOM_TYPES = {0: "plane", 1: "hfield", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}


def lst(a):
    return [float(x) for x in np.asarray(a).ravel()]


def random_state(m, rng):
    qpos = np.array(m.qpos0, dtype=float)
    for j in range(m.njnt):
        a = m.jnt_qposadr[j]
        t = m.jnt_type[j]
        if t == mujoco.mjtJoint.mjJNT_FREE:
            qpos[a : a + 3] = rng.uniform(-1.0, 1.0, 3) + np.array([0.0, 0.0, 1.0])
            q = rng.normal(size=4)
            qpos[a + 3 : a + 7] = q / np.linalg.norm(q)
        elif t == mujoco.mjtJoint.mjJNT_BALL:
            q = rng.normal(size=4)
            qpos[a : a + 4] = q / np.linalg.norm(q)
        elif t == mujoco.mjtJoint.mjJNT_HINGE:
            qpos[a] = rng.uniform(-np.pi, np.pi)
        else:
            qpos[a] = rng.uniform(-0.5, 0.5)
    qvel = rng.normal(size=m.nv)
    return qpos, qvel


def model_record(m, source):
    name = lambda obj, i: m.__getattribute__(obj)(i).name  # noqa: E731
    return {
        "source": source,
        "mujoco_version": mujoco.__version__,
        "model_name": m.names[: m.names.index(b"\0")].decode() if m.names else "",
        "nbody": int(m.nbody),
        "njnt": int(m.njnt),
        "nq": int(m.nq),
        "nv": int(m.nv),
        "nu": int(m.nu),
        "ngeom": int(m.ngeom),
        "timestep": float(m.opt.timestep),
        "gravity": lst(m.opt.gravity),
        "total_mass": float(mujoco.mj_getTotalmass(m)),
        "body_names": [name("body", i) for i in range(m.nbody)],
        "body_parent": [int(x) for x in m.body_parentid],
        "body_mass": lst(m.body_mass),
        "body_pos": [lst(x) for x in m.body_pos],
        "body_quat": [lst(x) for x in m.body_quat],
        "body_ipos": [lst(x) for x in m.body_ipos],
        "body_inertia": [lst(x) for x in m.body_inertia],
        "jnt_names": [name("joint", i) for i in range(m.njnt)],
        "jnt_type": [JOINT_TYPES[int(t)] for t in m.jnt_type],
        "jnt_body": [int(x) for x in m.jnt_bodyid],
        "jnt_pos": [lst(x) for x in m.jnt_pos],
        "jnt_axis": [lst(x) for x in m.jnt_axis],
        "jnt_limited": [bool(x) for x in m.jnt_limited],
        "jnt_range": [lst(x) for x in m.jnt_range],
        "jnt_stiffness": lst(m.jnt_stiffness),
        "dof_armature": lst(m.dof_armature),
        "dof_damping": lst(m.dof_damping),
        "qpos0": lst(m.qpos0),
        "qpos_spring": lst(m.qpos_spring),
        "geom_names": [name("geom", i) for i in range(m.ngeom)],
        "geom_type": [GEOM_TYPES[int(t)] for t in m.geom_type],
        "geom_body": [int(x) for x in m.geom_bodyid],
        "geom_size": [lst(x) for x in m.geom_size],
        "geom_pos": [lst(x) for x in m.geom_pos],
        "geom_quat": [lst(x) for x in m.geom_quat],
        "geom_friction": [lst(x) for x in m.geom_friction],
        "geom_condim": [int(x) for x in m.geom_condim],
        "geom_contype": [int(x) for x in m.geom_contype],
        "geom_conaffinity": [int(x) for x in m.geom_conaffinity],
        "geom_margin": lst(m.geom_margin),
        "actuator_joint": [int(x) for x in m.actuator_trnid[:, 0]],
        "actuator_gear": [float(x) for x in m.actuator_gear[:, 0]],
        "actuator_ctrllimited": [bool(x) for x in m.actuator_ctrllimited],
        "actuator_ctrlrange": [lst(x) for x in m.actuator_ctrlrange],
    }


def dynamics_states(m, seed):
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    states = []
    for _ in range(NSTATES):
        qpos, qvel = random_state(m, rng)
        d.qpos[:] = qpos
        d.qvel[:] = qvel
        d.ctrl[:] = 0.0
        mujoco.mj_forward(m, d)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        states.append(
            {
                "qpos": lst(qpos),
                "qvel": lst(qvel),
                "xpos": [lst(x) for x in d.xpos],
                "xquat": [lst(x) for x in d.xquat],
                "mass_matrix": [lst(r) for r in full],
                "qfrc_bias": lst(d.qfrc_bias),
            }
        )
    return states


def dumps(rec):
    """One top-level key per line (and one state per line): compact, yet diffable."""
    lines = []
    for k, v in rec.items():
        if k == "states":
            inner = ",\n  ".join(json.dumps(st) for st in v)
            lines.append(f' "states": [\n  {inner}\n ]')
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main():
    os.makedirs(OUT, exist_ok=True)
    # MuJoCo writes deprecation warnings (half_cheetah's settotalmass) to MUJOCO_LOG.TXT in the
    # working directory: keep it out of the repository.
    os.chdir(tempfile.gettempdir())
    models = [(g, os.path.join(SHARED, "models", "gymnasium", g + ".xml"), "models/gymnasium/" + g + ".xml") for g in GYM]
    models.append(
        ("free_ball_chain", os.path.join(ROOT, "tests", "fixtures", "free_ball_chain.xml"), "tests/fixtures/free_ball_chain.xml")
    )
    for seed, (key, path, source) in enumerate(models):
        if not os.path.exists(path):
            sys.exit(f"missing {path} (set CENIC_SHARED to the shared data folder)")
        m = mujoco.MjModel.from_xml_path(path)
        rec = model_record(m, source)
        if key in DYNAMICS:
            rec["seed"] = 1000 + seed
            rec["states"] = dynamics_states(m, 1000 + seed)
        with open(os.path.join(OUT, key + ".json"), "w") as f:
            f.write(dumps(rec))
        print(f"{key}: nq {m.nq} nv {m.nv} nbody {m.nbody} total mass {rec['total_mass']:.9g}")


if __name__ == "__main__":
    main()
