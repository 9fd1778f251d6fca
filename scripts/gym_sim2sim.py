#!/usr/bin/env python3
"""Gymnasium v5 rollouts under random actions, for cenic's sim-to-sim comparison with MuJoCo.

Run from the repository root (not run in CI; the JSON it writes is committed):

    /work/venv/bin/python scripts/gym_sim2sim.py

Written and run with gymnasium 1.x and the `mujoco` Python package 4.0.0. For each task, from
`reset(seed=s)` for a few seeds, the unwrapped environment (no time limit, so rollouts may run past
an episode's length) is stepped under seeded uniform random actions (rounded to f32, which cenic's
vector environment takes); after every step the script
records the observation recomputed from the state on a second instance
(`set_state`, which runs `mj_forward`, then `_get_obs`): after `mj_step` MuJoCo's kinematic
quantities still describe the state before the last substep, while cenic evaluates observations at
the state after the step. Observation columns that hold forces of the last physics step (`cfrc_ext`
of Ant and Humanoid, `qfrc_constraint` of the inverted double pendulum) are listed as
`dynamics_columns` and left out of the recorded observations; of the humanoid's observation only
its first 45 columns (joint positions and velocities) are kept, to keep the file small.

Writes `tests/fixtures/gym_sim2sim.json`: per task the gymnasium id, frame skip, the observation
columns recorded (`columns`, indices into the full observation), and the rollouts
(seed, qpos0, qvel0, actions, obs). States and actions are written with `repr` precision (exact
round trip), observations to 9 significant digits.
"""

import json
import os

import gymnasium as gym
import mujoco
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "gym_sim2sim.json")

# gymnasium id -> (steps per rollout, seeds)
TASKS = {
    "Reacher-v5": (300, [0, 1, 2, 3, 4]),
    "HalfCheetah-v5": (300, [0, 1, 2, 3, 4]),
    "Ant-v5": (300, [0, 1, 2]),
    "Humanoid-v5": (200, [0, 1]),
    "InvertedDoublePendulum-v5": (300, [0, 1, 2]),
    "Pusher-v5": (300, [0, 1, 2]),
}
# Columns kept of the humanoid's 348 (qpos[2:] and qvel; the rest are body inertias, velocities and
# actuator forces computed from the same state).
KEEP = {"Humanoid-v5": 45}


def dynamics_columns(tid, env):
    """Observation columns that are forces of the last physics step."""
    u = env.unwrapped
    n = u.observation_space.shape[0]
    if tid in ("Ant-v5", "Humanoid-v5"):
        k = u.data.cfrc_ext[1:].size if tid == "Ant-v5" else u.data.cfrc_ext[1:].size
        return list(range(n - k, n))
    if tid == "InvertedDoublePendulum-v5":
        return list(range(n - 1, n))
    return []


def rollout(tid, steps, seed):
    env = gym.make(tid)
    probe = gym.make(tid)
    probe.reset(seed=seed)
    env.reset(seed=seed)
    u, p = env.unwrapped, probe.unwrapped
    rng = np.random.default_rng(1000 + seed)
    low, high = env.action_space.low, env.action_space.high
    q0, v0 = u.data.qpos.copy(), u.data.qvel.copy()
    acts, obs = [], []
    for _ in range(steps):
        # Actions representable in f32: cenic's vector environment takes f32 actions.
        a = rng.uniform(low, high).astype(np.float32).astype(np.float64)
        u.step(a)
        q, v = u.data.qpos.copy(), u.data.qvel.copy()
        p.data.ctrl[:] = a
        p.set_state(q, v)
        p.data.cfrc_ext[:] = 0.0
        acts.append(a.tolist())
        obs.append(np.asarray(p._get_obs(), dtype=float).tolist())
    # Observations without the force columns (Humanoid: its first KEEP columns, the joint positions
    # and velocities), to 9 significant digits (compared at 1e-2); states and actions exact.
    cols = dynamics_columns(tid, env)
    keep = KEEP.get(tid, len(obs[0]))
    kept = [i for i in range(keep) if i not in cols]
    obs = [[float(f"{o[i]:.9g}") for i in kept] for o in obs]
    return {"seed": seed, "qpos0": q0.tolist(), "qvel0": v0.tolist(), "actions": acts, "obs": obs}, kept, u.frame_skip


def main():
    out = {"generator": f"scripts/gym_sim2sim.py with gymnasium {gym.__version__}, mujoco {mujoco.__version__}",
           "tasks": []}
    for tid, (steps, seeds) in TASKS.items():
        rolls = []
        for s in seeds:
            r, kept, skip = rollout(tid, steps, s)
            rolls.append(r)
        out["tasks"].append({"id": tid, "frame_skip": skip, "columns": kept, "rollouts": rolls})
        print(tid, "done")
    with open(OUT, "w") as f:
        json.dump(out, f)
    print("wrote", OUT, os.path.getsize(OUT) // 1024, "KiB")


if __name__ == "__main__":
    main()
