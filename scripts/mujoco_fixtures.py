#!/usr/bin/env python3
"""Generate MuJoCo reference fixtures for cenic's MJCF loader and dynamics tests.

Run from the repository root (not run in CI; the JSON it writes is committed):

    python3 scripts/mujoco_fixtures.py              # everything
    python3 scripts/mujoco_fixtures.py --features   # only tests/fixtures/mujoco/features/

Written and run with the `mujoco` Python package 4.0.0 (and numpy). Reads the gymnasium models
from `$CENIC_SHARED/models/gymnasium` (default `../shared`, next to the repository) and our own
`tests/fixtures/free_ball_chain.xml`; writes `tests/fixtures/mujoco/<model>.json`.

Also writes `tests/fixtures/mujoco/features/<model>.json` for our own models under
`tests/models/features/` and `tests/models/corpus/` (the MJCF features public model collections use: includes,
option flags, contact filtering, general actuators, tendons, equality constraints, sensors, fluid
forces): counts (nq, nv, nu, na, ntendon, neq, nsensordata), masses, effective inverse masses,
compiled actuator, tendon and equality data; at seeded random states the tendon lengths and
Jacobians, actuator lengths, moments and forces, equality-constraint rows (efc_pos, efc_J with a
dense Jacobian), fluid forces, contact geom pairs and sensor data; and for the models in
TRAJECTORIES a trajectory under RK4 at a small step with constant controls (samples of qpos, qvel,
act).

Each gymnasium JSON file holds the compiled model quantities the loader tests compare (counts, joint types,
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


FEATURES = os.path.join(ROOT, "tests", "models")
FEATURE_OUT = os.path.join(OUT, "features")
# Models simulated for a trajectory: (controls, RK4 step in s, duration in s, sample interval in s).
TRAJECTORIES = {
    "features/actuators": ([0.5, 0.3, 0.2, 0.7, 1.5, 0.5, -0.4, 12.0, 0.3, 0.2], 1e-4, 0.5, 0.05),
    "features/tendons": ([], 1e-4, 0.5, 0.05),
    "features/equality": ([], 1e-4, 0.5, 0.05),
    "features/fluid": ([0.4, -0.3], 1e-4, 0.5, 0.05),
    "features/frictionloss": ([0.5, 2.0], 1e-4, 0.5, 0.05),
    "features/flags": ([1.0], 1e-4, 0.5, 0.05),
    "features/tendon_limit": ([], 1e-4, 3.0, 0.5),
}
NFEATURE_STATES = 3


def sparse_rows(m, d, val, rownnz, rowadr, colind, nrow):
    dense = np.zeros((nrow, m.nv))
    if nrow and m.nv:
        mujoco.mju_sparse2dense(dense, val, rownnz, rowadr, colind)
    return dense


def feature_record(m, source):
    rec = {
        "source": source,
        "mujoco_version": mujoco.__version__,
        "nq": int(m.nq),
        "nv": int(m.nv),
        "nu": int(m.nu),
        "na": int(m.na),
        "nbody": int(m.nbody),
        "ngeom": int(m.ngeom),
        "nsite": int(m.nsite),
        "ntendon": int(m.ntendon),
        "neq": int(m.neq),
        "npair": int(m.npair),
        "nexclude": int(m.nexclude),
        "nsensordata": int(m.nsensordata),
        "total_mass": float(mujoco.mj_getTotalmass(m)),
        "body_mass": lst(m.body_mass),
        "body_invweight0": [lst(x) for x in m.body_invweight0],
        "body_iquat": [lst(x) for x in m.body_iquat],
        "dof_invweight0": lst(m.dof_invweight0),
        "tendon_invweight0": lst(m.tendon_invweight0),
        "tendon_length0": lst(m.tendon_length0),
        "actuator_dyntype": [int(x) for x in m.actuator_dyntype],
        "actuator_dynprm": [lst(x[:3]) for x in m.actuator_dynprm],
        "actuator_gainprm": [lst(x[:3]) for x in m.actuator_gainprm],
        "actuator_biasprm": [lst(x[:3]) for x in m.actuator_biasprm],
        "actuator_actadr": [int(x) for x in m.actuator_actadr],
        "eq_data": [lst(x[:11]) for x in m.eq_data],
        "disableflags": int(m.opt.disableflags),
        "sensor_adr": [int(x) for x in m.sensor_adr],
    }
    return rec


def feature_states(m, seed):
    """Random states, and MuJoCo's outputs at them (dense Jacobians)."""
    m.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    states = []
    for _ in range(NFEATURE_STATES):
        qpos, qvel = random_state(m, rng)
        # Keep free bodies near their model pose so contacts stay meaningful.
        for j in range(m.njnt):
            if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                a = m.jnt_qposadr[j]
                qpos[a : a + 3] = m.qpos0[a : a + 3] + rng.uniform(-0.05, 0.05, 3)
        d.qpos[:] = qpos
        d.qvel[:] = qvel * 0.5
        d.act[:] = rng.uniform(-0.5, 0.5, m.na)
        lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
        ctrl = rng.uniform(-1.0, 1.0, m.nu)
        limited = m.actuator_ctrllimited.astype(bool)
        ctrl[limited] = lo[limited] + (hi[limited] - lo[limited]) * rng.uniform(0.0, 1.0, limited.sum())
        d.ctrl[:] = ctrl
        mujoco.mj_forward(m, d)
        ten_j = sparse_rows(m, d, d.ten_J, m.ten_J_rownnz, m.ten_J_rowadr, m.ten_J_colind, m.ntendon)
        moment = sparse_rows(m, d, d.actuator_moment, d.moment_rownnz, d.moment_rowadr, d.moment_colind, m.nu)
        ne = int(d.ne)
        efc_j = np.array(d.efc_J).reshape(-1, m.nv)[:ne] if m.nv else np.zeros((0, 0))
        states.append(
            {
                "qpos": lst(d.qpos),
                "qvel": lst(d.qvel),
                "act": lst(d.act),
                "ctrl": lst(d.ctrl),
                "qacc": lst(d.qacc),
                "ten_length": lst(d.ten_length),
                "ten_J": [lst(r) for r in ten_j],
                "actuator_length": lst(d.actuator_length),
                "actuator_moment": [lst(r) for r in moment],
                "actuator_force": lst(d.actuator_force),
                "eq_pos": lst(d.efc_pos[:ne]),
                "eq_J": [lst(r) for r in efc_j],
                "qfrc_fluid": lst(d.qfrc_fluid),
                "contact_geoms": sorted([sorted([int(c.geom1), int(c.geom2)]) + [float(c.dist)] for c in d.contact[: d.ncon]]),
                "sensordata": lst(d.sensordata),
            }
        )
    return states


def feature_trajectory(m, ctrl, dt, duration, every):
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.timestep = dt
    d = mujoco.MjData(m)
    if m.nkey:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    d.ctrl[:] = ctrl
    samples = []
    nsteps, stride = int(round(duration / dt)), int(round(every / dt))
    for k in range(nsteps + 1):
        if k % stride == 0:
            samples.append({"time": float(d.time), "qpos": lst(d.qpos), "qvel": lst(d.qvel), "act": lst(d.act)})
        if k < nsteps:
            mujoco.mj_step(m, d)
    return {"ctrl": lst(ctrl), "rk4_step": dt, "samples": samples}


def features():
    os.makedirs(FEATURE_OUT, exist_ok=True)
    paths = []
    for sub in ("features", "corpus"):
        folder = os.path.join(FEATURES, sub)
        for f in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if f.endswith(".xml"):
                paths.append((sub + "/" + f[:-4], os.path.join(folder, f)))
    for seed, (key, path) in enumerate(paths):
        m = mujoco.MjModel.from_xml_path(path)
        rec = feature_record(m, "tests/models/" + key + ".xml")
        rec["seed"] = 2000 + seed
        rec["states"] = feature_states(mujoco.MjModel.from_xml_path(path), 2000 + seed)
        if key in TRAJECTORIES:
            ctrl, dt, duration, every = TRAJECTORIES[key]
            rec["trajectory"] = feature_trajectory(mujoco.MjModel.from_xml_path(path), ctrl, dt, duration, every)
        name = key.replace("/", "_")
        with open(os.path.join(FEATURE_OUT, name + ".json"), "w") as f:
            f.write(dumps(rec))
        print(f"{key}: nq {m.nq} nv {m.nv} nu {m.nu} na {m.na} ntendon {m.ntendon} neq {m.neq} total mass {rec['total_mass']:.9g}")


def dumps(rec):
    """One top-level key per line (and one state per line): compact, yet diffable."""
    lines = []
    for k, v in rec.items():
        if k in ("states", "trajectory"):
            if k == "trajectory":
                head = {key: val for key, val in v.items() if key != "samples"}
                inner = ",\n  ".join(json.dumps(st) for st in v["samples"])
                lines.append(f' "trajectory": {json.dumps(head)[:-1]}, "samples": [\n  {inner}\n ]}}')
            else:
                inner = ",\n  ".join(json.dumps(st) for st in v)
                lines.append(f' "{k}": [\n  {inner}\n ]')
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
    features()
    if "--features" in sys.argv:
        return
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
