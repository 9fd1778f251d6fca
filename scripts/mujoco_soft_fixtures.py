#!/usr/bin/env python3
"""Sim-to-sim fixtures of MuJoCo's soft constraints for `tests/mujoco_semantics.rs`.

Run from the repository root (not run in CI; the JSON it writes is committed):

    /work/venv/bin/python scripts/mujoco_soft_fixtures.py

Written and run with the `mujoco` Python package 4.0.0 (and numpy). Each case is a small MJCF model
(kept in the JSON, so the Rust test loads exactly the same text) simulated by MuJoCo with its own
integrator and time step from a given state; the JSON keeps the sampled trajectory and the figures the
test compares:

- `ball_drop`: a 1 kg sphere (r = 0.1 m) dropped from 0.6 m onto a plane, default solref/solimp,
  condim 1 and 3: largest penetration, resting penetration after 1.5 s, rebound height.
- `hinge_limit`: one hinge (armature 1, damping 1, no gravity) swung at 14 rad/s towards its +0.5 rad
  limit: where it first decelerates, the overshoot past the limit and the rebound speed.
- `box_slide`: a box (mu 0.5) launched at 2 m/s along a plane: the sliding distance until it stops.
- `box_tip`: a tall box on a plane pushed over by an initial angular velocity about a bottom edge:
  its trajectory while it tips and lands on its side.

Each case is run at MuJoCo's default Euler integrator and at the time step given in the case;
`ball_drop` and `box_tip` also at 1/8 of it (MuJoCo's own time-step dependence, and a reference closer
to the continuous-time model that cenic's error control approximates). Floats are written with
`repr` precision (exact round trip).
"""

import json
import os

import mujoco
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "mujoco", "soft_constraints.json")

BALL = """<mujoco model="ball_drop">
  <option timestep="{dt}"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" condim="{condim}"/>
    <body name="ball" pos="0 0 0.6">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1" condim="{condim}"/>
    </body>
  </worldbody>
</mujoco>"""

HINGE = """<mujoco model="hinge_limit">
  <compiler angle="radian"/>
  <option timestep="{dt}" gravity="0 0 0"/>
  <worldbody>
    <body name="arm">
      <joint name="hinge" type="hinge" axis="0 0 1" range="-0.5 0.5" limited="true" armature="1" damping="1"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.5" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>"""

SLIDE = """<mujoco model="box_slide">
  <option timestep="{dt}"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="0.5"/>
    <body name="box" pos="0 0 0.05">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="1" friction="0.5"/>
    </body>
  </worldbody>
</mujoco>"""

TIP = """<mujoco model="box_tip">
  <option timestep="{dt}"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="1"/>
    <body name="box" pos="0 0 0.2">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.2" mass="2" friction="1"/>
    </body>
  </worldbody>
</mujoco>"""


def run(xml, qpos, qvel, duration, sample_dt):
    """Simulates `xml` from (qpos, qvel) for `duration` s; returns samples every `sample_dt` s."""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    d.qvel[:] = qvel
    mujoco.mj_forward(m, d)
    n = int(round(duration / m.opt.timestep))
    every = max(1, int(round(sample_dt / m.opt.timestep)))
    t, qs, vs = [0.0], [d.qpos.tolist()], [d.qvel.tolist()]
    full_q = [d.qpos.copy()]
    full_v = [d.qvel.copy()]
    for k in range(1, n + 1):
        mujoco.mj_step(m, d)
        full_q.append(d.qpos.copy())
        full_v.append(d.qvel.copy())
        if k % every == 0:
            t.append(d.time)
            qs.append(d.qpos.tolist())
            vs.append(d.qvel.tolist())
    return {"t": t, "qpos": qs, "qvel": vs}, np.array(full_q), np.array(full_v)


def ball_drop(dt, condim):
    xml = BALL.format(dt=dt, condim=condim)
    traj, q, v = run(xml, [0, 0, 0.6, 1, 0, 0, 0], [0] * 6, 1.5, 0.01)
    z = q[:, 2]
    pen = 0.1 - z
    first = int(np.argmax(pen > 0))
    # Rebound: highest point after the first contact ends (if the ball leaves the floor).
    after = z[first:]
    leave = np.nonzero(pen[first:] < 0)[0]
    rebound = float(after[leave[0]:].max() - 0.1) if len(leave) else 0.0
    return {
        "xml": xml,
        "timestep": dt,
        "condim": condim,
        "qpos0": [0, 0, 0.6, 1, 0, 0, 0],
        "qvel0": [0] * 6,
        "largest_penetration": float(pen.max()),
        "time_of_largest_penetration": float(np.argmax(pen) * dt),
        "resting_penetration": float(pen[-1]),
        "rebound_height": rebound,
        "trajectory": traj,
    }


def hinge_limit(dt):
    xml = HINGE.format(dt=dt)
    traj, q, v = run(xml, [0.0], [14.0], 0.4, dt)
    q, v = q[:, 0], v[:, 0]
    # First step whose speed drops by more than the damping alone explains (1/s * v * dt / armature-ish).
    accel = np.diff(v) / dt
    free = -1.0 * v[:-1] / (1.0 + 0.0)  # damping force / inertia (upper bound; the true inertia is larger)
    brake = int(np.argmax(accel < 3.0 * free - 1.0))
    return {
        "xml": xml,
        "timestep": dt,
        "qpos0": [0.0],
        "qvel0": [14.0],
        "limit": 0.5,
        "braking_starts_at": float(q[brake]),
        "overshoot": float(q.max() - 0.5),
        "rebound_speed": float(v[np.argmax(q):].min()),
        "trajectory": traj,
    }


def box_slide(dt):
    xml = SLIDE.format(dt=dt)
    # Start resting in contact (MuJoCo's resting penetration) to skip the settling transient.
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    for _ in range(int(0.5 / dt)):
        mujoco.mj_step(m, d)
    q0 = d.qpos.tolist()
    v0 = [2.0, 0, 0, 0, 0, 0]
    traj, q, v = run(xml, q0, v0, 1.0, 0.01)
    stop = int(np.argmax(np.abs(v[:, 0]) < 1e-3))
    return {
        "xml": xml,
        "timestep": dt,
        "qpos0": q0,
        "qvel0": v0,
        "slide_distance": float(q[stop, 0] - q0[0]),
        "stop_time": float(stop * dt),
        "trajectory": traj,
    }


def box_tip(dt):
    xml = TIP.format(dt=dt)
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    for _ in range(int(0.5 / dt)):
        mujoco.mj_step(m, d)
    q0 = d.qpos.tolist()
    v0 = [0, 0, 0, 0, 4.0, 0]
    traj, q, v = run(xml, q0, v0, 1.5, 0.01)
    return {"xml": xml, "timestep": dt, "qpos0": q0, "qvel0": v0, "trajectory": traj}


def main():
    out = {
        "generator": f"scripts/mujoco_soft_fixtures.py with mujoco {mujoco.__version__}",
        "ball_drop": [ball_drop(0.002, 1), ball_drop(0.002, 3), ball_drop(0.00025, 3)],
        "hinge_limit": [hinge_limit(0.002)],
        "box_slide": [box_slide(0.002)],
        "box_tip": [box_tip(0.002), box_tip(0.00025)],
    }
    for b in out["ball_drop"]:
        print(f"ball drop dt {b['timestep']} condim {b['condim']}: largest {b['largest_penetration']*1e3:.2f} mm, "
              f"resting {b['resting_penetration']*1e3:.3f} mm, rebound {b['rebound_height']*1e3:.2f} mm")
    h = out["hinge_limit"][0]
    print(f"hinge: braking at {h['braking_starts_at']:.3f} rad, overshoot {h['overshoot']*1e3:.1f} mrad, "
          f"rebound {h['rebound_speed']:.2f} rad/s")
    s = out["box_slide"][0]
    print(f"slide: {s['slide_distance']:.4f} m in {s['stop_time']:.3f} s")
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
