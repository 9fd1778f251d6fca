#!/usr/bin/env python3
"""How stiff MuJoCo makes gymnasium Pusher-v5's object contact, for `cenic::mpc::tasks::pusher_model`.

Run from the repository root (not run in CI; the JSON it writes is committed):

    python3 scripts/mujoco_pusher_contact.py

Written and run with the `mujoco` Python package 4.0.0. Reads `$CENIC_SHARED/models/gymnasium/pusher.xml`
(default `../shared`) with v5's edits (the object's sphere removed, its cylinder's density 0.01), and
writes `tests/fixtures/mujoco/pusher_object_contact.json`:

- `invweight0`: MuJoCo's translational inverse weights (1/kg) of the object and of the fork's body, from
  which MuJoCo's constraint regulariser R = (1 - d)/d * (sum of the pair's inverse weights) is made: the
  object's 7.9e-6 kg (its slides' armature does not enter) makes R, and the contact, very soft;
- `rig`: a 1-D rig with the object's mass, armature and damping on one slide, pushed by a 100 kg capsule at
  constant speed (MuJoCo's defaults: solref 0.02 1, solimp 0.9 0.95 0.001; timestep 0.01 as pusher.xml).
  At steady state the contact force equals the damping force 0.5 * v_object, so force / penetration is
  the contact's stiffness in the regime the task works in (penetrations of cm, far beyond solimp's
  width of 1 mm, where d = dmax = 0.95);
- `slowdown`: the same rig pushed at 3 mm/s for 160 s, the pusher's and the object's speeds every 10 s
  (the 100 kg pusher slows under the object's drag);
- `rig_xml`: the rig's MJCF, which the Rust test loads as it is.
"""

import json
import os
import re

import mujoco

SHARED = os.environ.get("CENIC_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))


def pusher_v5():
    text = open(os.path.join(SHARED, "models", "gymnasium", "pusher.xml")).read()
    text = re.sub(r'<geom rgba="1 1 1 0" type="sphere"[^>]*/>', "", text)
    cyl = '<geom rgba="1 1 1 1" type="cylinder" size="0.05 0.05 0.05" density="0.00001"'
    assert cyl in text
    return mujoco.MjModel.from_xml_string(text.replace(cyl, cyl.replace("0.00001", "0.01")))


def rig(mass, armature, damping):
    return f"""<mujoco><option timestep="0.01" gravity="0 0 0"/>
    <default><geom condim="1"/></default>
    <worldbody>
    <body name="pusher"><joint type="slide" axis="1 0 0"/>
      <geom type="capsule" fromto="0 -0.1 0 0 0.1 0" size="0.02" mass="100" contype="1" conaffinity="1"/></body>
    <body name="object" pos="0.07 0 0"><joint type="slide" axis="1 0 0" armature="{armature}" damping="{damping}"/>
      <geom type="cylinder" size="0.05 0.05" mass="{mass}" contype="1" conaffinity="0"/></body>
    </worldbody></mujoco>"""


def main():
    m = pusher_v5()
    obj = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "object")
    fork = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "r_wrist_roll_link")
    slide = m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "obj_slidex")]
    mass, armature, damping = float(m.body_mass[obj]), float(m.dof_armature[slide]), float(m.dof_damping[slide])
    rows = []
    for speed in [0.003, 0.01, 0.03]:
        r = mujoco.MjModel.from_xml_string(rig(mass, armature, damping))
        d = mujoco.MjData(r)
        d.qvel[0] = speed
        for _ in range(int(0.5 / speed / r.opt.timestep)):
            mujoco.mj_step(r, d)
        penetration = 0.07 - (0.07 + d.qpos[1] - d.qpos[0])
        force = damping * d.qvel[1]
        rows.append({"pusher_speed": speed, "object_speed": float(d.qvel[1]), "penetration": float(penetration),
                     "stiffness": float(force / penetration)})
    # The 100 kg pusher slowing under the object's drag: a long push at 3 mm/s.
    r = mujoco.MjModel.from_xml_string(rig(mass, armature, damping))
    d = mujoco.MjData(r)
    d.qvel[0] = 0.003
    slow = []
    for k in range(1, int(160 / r.opt.timestep) + 1):
        mujoco.mj_step(r, d)
        if k % int(10 / r.opt.timestep) == 0:
            slow.append({"t": float(d.time), "pusher_speed": float(d.qvel[0]), "object_speed": float(d.qvel[1])})
    out = {
        "source": "scripts/mujoco_pusher_contact.py",
        "rig_xml": rig(mass, armature, damping),
        "slowdown": slow,
        "mujoco_version": mujoco.__version__,
        "object_mass": mass,
        "object_armature": armature,
        "object_damping": damping,
        "invweight0": {"object": float(m.body_invweight0[obj][0]), "fork": float(m.body_invweight0[fork][0])},
        "rig": rows,
    }
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "mujoco", "pusher_object_contact.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
