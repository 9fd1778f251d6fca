"""Replays a cenic MPC episode of the pusher in MuJoCo, open loop.

Reads the episode CSV that `cargo run --release --example mpc -- --task
pusher --seed N` writes (`target/mpc/mpc_pusher_<planner>_<N>.csv`: time,
the plant's qpos and qvel, the control of each 50 ms interval), builds the
same model in MuJoCo (gymnasium's pusher.xml as Pusher-v5: the object's
sphere removed and its cylinder 1000x denser; the goal's slides removed; the
object-table contact dropped, as `cenic::mpc::tasks::pusher_model` does),
starts from the episode's first state and applies its controls for five
MuJoCo steps of 10 ms per interval. Prints, per interval, the largest
difference of the arm's joint angles and of the object's position between
the two simulators, and the object's path in both.

    /work/venv/bin/python scripts/mujoco_pusher_replay.py EPISODE.csv [--models DIR] [--step S]

An open-loop replay of a closed-loop episode parts once contact makes the
motion sensitive, so the figures that compare physics are those before and
shortly after the first contact.
"""

import argparse
import csv
import pathlib

import mujoco
import numpy as np

SPHERE = '<geom rgba="1 1 1 0" type="sphere" size="0.05 0.05 0.05" density="0.00001" conaffinity="0"/>'
CYLINDER = '<geom rgba="1 1 1 1" type="cylinder" size="0.05 0.05 0.05" density="0.00001" contype="1" conaffinity="0"/>'
GOAL_JOINTS = [
    '<joint name="goal_slidey" type="slide" pos="0 0 0" axis="0 1 0" range="-10.3213 10.3" damping="0.5"/>',
    '<joint name="goal_slidex" type="slide" pos="0 0 0" axis="1 0 0" range="-10.3213 10.3" damping="0.5"/>',
]


def task_model(models: pathlib.Path, step: float | None) -> mujoco.MjModel:
    text = (models / "pusher.xml").read_text()
    for piece in [SPHERE, CYLINDER, *GOAL_JOINTS]:
        assert piece in text, f"not gymnasium's pusher.xml: {piece} missing"
    text = text.replace(SPHERE, "").replace(CYLINDER, CYLINDER.replace('density="0.00001"', 'density="0.01"'))
    for j in GOAL_JOINTS:
        text = text.replace(j, "")
    m = mujoco.MjModel.from_xml_string(text)
    if step is not None:
        m.opt.timestep = step
    obj = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "object")
    on_object = [g for g in range(m.ngeom) if m.geom_bodyid[g] == obj and m.geom_contype[g] != 0]

    def collide(a: int, b: int) -> bool:
        return bool((m.geom_contype[a] & m.geom_conaffinity[b]) or (m.geom_contype[b] & m.geom_conaffinity[a]))

    partners = [
        g
        for g in range(m.ngeom)
        if m.body_dofnum[m.geom_bodyid[g]] + sum(m.body_dofnum[p] for p in ancestors(m, m.geom_bodyid[g])) > 0
        and any(collide(g, o) for o in on_object)
    ]
    for g in on_object:
        m.geom_contype[g] = 2
        m.geom_conaffinity[g] = 0
    for g in partners:
        m.geom_conaffinity[g] |= 2
    return m


def ancestors(m: mujoco.MjModel, b: int) -> list[int]:
    out = []
    while b != 0:
        b = m.body_parentid[b]
        out.append(b)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("episode")
    ap.add_argument("--models", default=str(pathlib.Path(__file__).resolve().parents[1] / "../shared/models/gymnasium"))
    ap.add_argument("--step", type=float, default=None, help="MuJoCo's step (s); default the model's 10 ms")
    a = ap.parse_args()
    m = task_model(pathlib.Path(a.models), a.step)
    d = mujoco.MjData(m)
    rows = list(csv.DictReader(open(a.episode)))
    nq, nv, nu = m.nq, m.nv, m.nu
    t = np.array([float(r["t"]) for r in rows])
    x = np.array([[float(r[f"x{i}"]) for i in range(nq + nv)] for r in rows])
    u = [[float(r[f"u{i}"]) for i in range(nu)] if r["u0"] != "" else None for r in rows]
    interval = t[1] - t[0]
    steps = int(round(interval / m.opt.timestep))
    d.qpos[:] = x[0, :nq]
    d.qvel[:] = x[0, nq:]
    mujoco.mj_forward(m, d)
    obj = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in ("obj_slidex", "obj_slidey")]
    oq = [m.jnt_qposadr[j] for j in obj]
    arm = [i for i in range(nq) if i not in oq]
    print(f"{len(rows) - 1} intervals of {interval * 1e3:.0f} ms, MuJoCo {mujoco.__version__} at {m.opt.timestep * 1e3:g} ms steps")
    print("   t [s]  |Δ arm| [rad]  |Δ object| [mm]  contacts (MuJoCo)  object cenic (x, y) [m]  object MuJoCo (x, y) [m]")
    first = None
    for k in range(len(rows) - 1):
        d.ctrl[:] = u[k]
        for _ in range(steps):
            mujoco.mj_step(m, d)
        if first is None and d.ncon > 0:
            first = t[k + 1]
        ref = x[k + 1]
        arm_err = np.max(np.abs(d.qpos[arm] - ref[arm]))
        obj_err = 1e3 * np.hypot(*(d.qpos[oq] - ref[oq]))
        if k % 5 == 4 or k == len(rows) - 2:
            print(
                f"  {t[k + 1]:6.2f}  {arm_err:13.4f}  {obj_err:15.2f}  {d.ncon:17d}  "
                f"({ref[oq[0]]:+.4f}, {ref[oq[1]]:+.4f})        ({d.qpos[oq[0]]:+.4f}, {d.qpos[oq[1]]:+.4f})"
            )
    print(f"first contact in MuJoCo at {first} s" if first is not None else "no contact in MuJoCo")


if __name__ == "__main__":
    main()
