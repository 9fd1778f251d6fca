#!/usr/bin/env python3
"""MuJoCo 4.0 reference fixtures for the MJCF features of tests/mjcf_features_more.rs.

Run from the repository root with the `mujoco` 4.0.0 Python package (not run in CI; the JSON it
writes is committed):

    /work/venv/bin/python scripts/mujoco_mjcf_features.py

Writes `tests/fixtures/mujoco/features_more/<name>.json`:

- For each model under `tests/models/features/` in STRUCTURE (`<mujocoinclude>` roots, massless
  bodies, `springdamper`, `<frame>`, `<replicate>`, height fields): the compiled sizes, names in
  MuJoCo's order (bodies, joints, geoms, sites, tendons, actuators, sensors), the body tree with
  poses, masses and inertias, joint poses, stiffness and damping, dof damping and effective
  inverse masses, geom and site poses, actuator and sensor targets, contact pairs and excludes.
- For each model under `tests/models/features/refused/`: whether MuJoCo refuses it and its
  message (cenic refuses the same models).
- With `CENIC_DM_CONTROL` set to dm_control's `dm_control/suite` folder: the same structure
  record for its quadruped (height-field floor) and dog (springdamper), `dm_control_<name>.json`
  (the models themselves are not copied).
- `hfield_contacts.json`: contacts (geom ids, φ, normal, point) of spheres, capsules and boxes on
  the bumpy height field of `tests/models/features/hfield_bumps.xml`, at rest and sliding (poses
  sampled from a short sliding motion), from `mj_forward` with the model's margin 0.
- `hfield_roll.json`: a ball rolling down the sloped field of `hfield_slope.xml` (qpos, qvel
  sampled every 0.05 s for 1 s, RK4 at 0.1 ms).
- `hfield_data.json`: the normalised elevation data MuJoCo reads from the PNG and binary height
  fields of `hfield_files.xml`.

Floats are written with `repr` precision (exact round trip).
"""

import json
import os

import mujoco
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "tests", "models", "features")
OUT = os.path.join(ROOT, "tests", "fixtures", "mujoco", "features_more")

STRUCTURE = ["mujocoinclude", "massless", "springdamper", "frame", "replicate", "hfield_bumps", "hfield_files"]


def lst(a):
    return [float(x) for x in np.asarray(a).ravel()]


def names(m, obj, n):
    return [getattr(m, obj)(i).name for i in range(n)]


def structure(m, source):
    trn = {0: "joint", 1: "jointinparent", 2: "slidercrank", 3: "tendon", 4: "site", 5: "body"}
    obj_names = {
        int(mujoco.mjtObj.mjOBJ_BODY): ("body", m.nbody),
        int(mujoco.mjtObj.mjOBJ_XBODY): ("body", m.nbody),
        int(mujoco.mjtObj.mjOBJ_JOINT): ("joint", m.njnt),
        int(mujoco.mjtObj.mjOBJ_GEOM): ("geom", m.ngeom),
        int(mujoco.mjtObj.mjOBJ_SITE): ("site", m.nsite),
        int(mujoco.mjtObj.mjOBJ_TENDON): ("tendon", m.ntendon),
        int(mujoco.mjtObj.mjOBJ_ACTUATOR): ("actuator", m.nu),
    }

    def obj_name(t, i):
        t = int(t)
        if t not in obj_names or i < 0:
            return ""
        return getattr(m, obj_names[t][0])(int(i)).name

    def trn_target(a):
        t = int(m.actuator_trntype[a])
        i = int(m.actuator_trnid[a, 0])
        kind = trn[t]
        obj = {"joint": "joint", "jointinparent": "joint", "tendon": "tendon", "site": "site", "body": "body"}.get(kind)
        return [kind, getattr(m, obj)(i).name if obj else ""]

    excludes = []
    for s in m.exclude_signature:
        b1, b2 = int(s) >> 16, int(s) & 0xFFFF
        excludes.append(sorted([m.body(b1).name, m.body(b2).name]))
    tendon_paths = []
    for t in range(m.ntendon):
        path = []
        for w in range(m.tendon_adr[t], m.tendon_adr[t] + m.tendon_num[t]):
            wt = int(m.wrap_type[w])
            wid = int(m.wrap_objid[w])
            if wt == mujoco.mjtWrap.mjWRAP_JOINT:
                path.append(["joint", m.joint(wid).name])
            elif wt == mujoco.mjtWrap.mjWRAP_SITE:
                path.append(["site", m.site(wid).name])
            elif wt == mujoco.mjtWrap.mjWRAP_PULLEY:
                path.append(["pulley", ""])
            else:
                path.append(["geom", m.geom(wid).name])
        tendon_paths.append(path)
    return {
        "source": source,
        "mujoco_version": mujoco.__version__,
        "nq": int(m.nq),
        "nv": int(m.nv),
        "nu": int(m.nu),
        "nbody": int(m.nbody),
        "njnt": int(m.njnt),
        "ngeom": int(m.ngeom),
        "nsite": int(m.nsite),
        "ntendon": int(m.ntendon),
        "neq": int(m.neq),
        "npair": int(m.npair),
        "nexclude": int(m.nexclude),
        "nsensor": int(m.nsensor),
        "nsensordata": int(m.nsensordata),
        "nhfield": int(m.nhfield),
        "total_mass": float(mujoco.mj_getTotalmass(m)),
        "body_names": names(m, "body", m.nbody),
        "body_parent": [int(x) for x in m.body_parentid],
        "body_mass": lst(m.body_mass),
        "body_inertia": [lst(x) for x in m.body_inertia],
        "body_ipos": [lst(x) for x in m.body_ipos],
        "body_pos": [lst(x) for x in m.body_pos],
        "body_quat": [lst(x) for x in m.body_quat],
        "jnt_names": names(m, "joint", m.njnt),
        "jnt_body": [int(x) for x in m.jnt_bodyid],
        "jnt_pos": [lst(x) for x in m.jnt_pos],
        "jnt_axis": [lst(x) for x in m.jnt_axis],
        "jnt_stiffness": lst(m.jnt_stiffness),
        "dof_damping": lst(m.dof_damping),
        "dof_invweight0": lst(m.dof_invweight0),
        "qpos0": lst(m.qpos0),
        "geom_names": names(m, "geom", m.ngeom),
        "geom_body": [int(x) for x in m.geom_bodyid],
        "geom_pos": [lst(x) for x in m.geom_pos],
        "geom_quat": [lst(x) for x in m.geom_quat],
        "site_names": names(m, "site", m.nsite),
        "site_body": [int(x) for x in m.site_bodyid],
        "site_pos": [lst(x) for x in m.site_pos],
        "site_quat": [lst(x) for x in m.site_quat],
        "tendon_names": names(m, "tendon", m.ntendon),
        "tendon_paths": tendon_paths,
        "actuator_names": names(m, "actuator", m.nu),
        "actuator_targets": [trn_target(a) for a in range(m.nu)],
        "actuator_gear": [float(m.actuator_gear[a, 0]) for a in range(m.nu)],
        "sensor_names": names(m, "sensor", m.nsensor),
        "sensor_objects": [obj_name(m.sensor_objtype[s], m.sensor_objid[s]) for s in range(m.nsensor)],
        "sensor_refs": [obj_name(m.sensor_reftype[s], m.sensor_refid[s]) for s in range(m.nsensor)],
        "pair_geoms": [sorted([m.geom(int(m.pair_geom1[p])).name, m.geom(int(m.pair_geom2[p])).name]) for p in range(m.npair)],
        "excludes": excludes,
    }


def write(name, rec):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")


def refused():
    out = {}
    folder = os.path.join(MODELS, "refused")
    for fn in sorted(os.listdir(folder)):
        if not fn.endswith(".xml"):
            continue
        try:
            mujoco.MjModel.from_xml_path(os.path.join(folder, fn))
            out[fn] = {"refused": False, "message": ""}
        except Exception as e:  # noqa: BLE001 - MuJoCo raises ValueError
            out[fn] = {"refused": True, "message": str(e)}
    return out


def main():
    for name in STRUCTURE:
        path = os.path.join(MODELS, name + ".xml")
        if not os.path.exists(path):
            continue
        m = mujoco.MjModel.from_xml_path(path)
        write(name, structure(m, f"tests/models/features/{name}.xml"))
    write("refused", {"mujoco_version": mujoco.__version__, "models": refused()})
    # dm_control's quadruped (height-field floor) and dog (springdamper), when its suite folder is
    # given (CENIC_DM_CONTROL=.../dm_control/suite): their compiled structure.
    suite = os.environ.get("CENIC_DM_CONTROL")
    if suite:
        for name in ["quadruped", "dog"]:
            m = mujoco.MjModel.from_xml_path(os.path.join(suite, name + ".xml"))
            write("dm_control_" + name, structure(m, f"dm_control/suite/{name}.xml"))
    hfield = os.path.join(ROOT, "scripts", "mujoco_hfield.py")
    if os.path.exists(hfield):
        import runpy

        runpy.run_path(hfield, run_name="hfield_fixtures")


if __name__ == "__main__":
    main()
