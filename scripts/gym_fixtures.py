#!/usr/bin/env python3
"""Gymnasium v5 parity fixtures for `cenic::rl`.

Run from the repository root (not run in CI; the JSON it writes is committed):

    /work/venv/bin/python scripts/gym_fixtures.py      # gymnasium 1.4 with mujoco 4.0

For each of the seven v5 MuJoCo tasks the script creates gymnasium's own environment
(`gymnasium.make(id)`, its bundled model files, identical to `$CENIC_SHARED/models/gymnasium`
except Pusher-v5's `pusher_v5.xml`, which cenic derives from `pusher.xml`), rolls it out from
seeded resets under seeded uniform random actions, and records transitions
(qpos/qvel before, action, qpos/qvel after). States the rollouts do not reach are added by hand
so that every termination rule fires (torso too low or too high, pole past its angle, tip below 1 m).

Then, for every transition, the terms that do not depend on the contact dynamics are recomputed
from the states alone, with gymnasium's own methods: `set_state` (which runs `mj_forward`) on the
state before, the task's "before" quantity (x position, main body xy, centre of mass), then
`data.ctrl = action` and `set_state` on the state after, the observation (`_get_obs`), the reward
and its terms (`_get_rew`) and the termination flag. Recomputing, rather than keeping what `step`
returned, matters: after `mj_step` MuJoCo's kinematic quantities (body positions, `cinert`,
`cvel`) still describe the state before the last physics substep, while cenic evaluates every
term at the state after the step. `cfrc_ext` (Ant, Humanoid) and `qfrc_constraint` (Inverted
Double Pendulum) are forces of the last physics step: the script zeroes `cfrc_ext` (`mj_forward`
leaves the previous step's values in place, `mj_rnePostConstraint` is what fills it) and keeps
states inside the slider's range, so both are zero as in cenic for a state no step led to; the
test treats those columns (and Ant's and Humanoid's contact cost) as dynamics-dependent.

Writes `tests/fixtures/gym_v5.json`: per task its id, model file, frame skip, dt, episode
length, observation size, action range, the MuJoCo body masses (cenic checks its Pusher-v5
model against them), the observation columns that depend on the dynamics, and the transitions.
Floats are written with `repr` precision (exact round trip).
"""

import json
import os
import sys

import gymnasium as gym
import gymnasium.envs.mujoco
import mujoco
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("CENIC_SHARED", os.path.join(ROOT, "..", "shared"))
OUT = os.path.join(ROOT, "tests", "fixtures", "gym_v5.json")

# gymnasium id -> (cenic task name, shared model file)
TASKS = {
    "Ant-v5": ("ant", "ant.xml"),
    "HalfCheetah-v5": ("half_cheetah", "half_cheetah.xml"),
    "Humanoid-v5": ("humanoid", "humanoid.xml"),
    "InvertedPendulum-v5": ("inverted_pendulum", "inverted_pendulum.xml"),
    "InvertedDoublePendulum-v5": ("inverted_double_pendulum", "inverted_double_pendulum.xml"),
    "Reacher-v5": ("reacher", "reacher.xml"),
    "Pusher-v5": ("pusher", "pusher.xml"),
}
ROLLOUTS = 3  # seeded resets per task
STEPS = 4  # random steps recorded per rollout


def before_quantity(tid, u):
    """What the forward reward compares across the step, read at the current state."""
    if tid == "Ant-v5":
        return u.data.body(u._main_body).xpos[:2].copy()
    if tid == "HalfCheetah-v5":
        return np.array([u.data.qpos[0]])
    if tid == "Humanoid-v5":
        from gymnasium.envs.mujoco.humanoid_v5 import mass_center

        return mass_center(u.model, u.data).copy()
    return np.zeros(0)


def evaluate(tid, u, q0, v0, action, q1, v1):
    """Observation, reward, terms and termination of the transition (q0, v0) -a-> (q1, v1)."""
    u.data.ctrl[:] = 0.0
    u.set_state(q0, v0)
    before = before_quantity(tid, u)
    u.data.ctrl[:] = action
    u.set_state(q1, v1)
    # No physics step led here: no contact forces (mj_forward leaves the last step's in place).
    u.data.cfrc_ext[:] = 0.0
    after = before_quantity(tid, u)
    obs = u._get_obs()
    if tid in ("Ant-v5", "Humanoid-v5"):
        vel = (after - before) / u.dt
        reward, terms = u._get_rew(vel[0], action)
        terminated = (not u.is_healthy) and u._terminate_when_unhealthy
    elif tid == "HalfCheetah-v5":
        reward, terms = u._get_rew(((after - before) / u.dt)[0], action)
        terminated = False
    elif tid == "InvertedPendulum-v5":
        terminated = bool(not np.isfinite(obs).all() or abs(obs[1]) > 0.2)
        reward, terms = float(not terminated), {"reward_survive": float(not terminated)}
    elif tid == "InvertedDoublePendulum-v5":
        x, _, y = u.data.site_xpos[0]
        terminated = bool(y <= 1)
        reward, terms = u._get_rew(x, y, terminated)
    else:  # Reacher, Pusher
        reward, terms = u._get_rew(action)
        terminated = False
    return {
        "qpos0": q0.tolist(),
        "qvel0": v0.tolist(),
        "action": action.tolist(),
        "qpos": q1.tolist(),
        "qvel": v1.tolist(),
        "obs": np.asarray(obs, dtype=float).tolist(),
        "reward": float(reward),
        "terms": {k: float(v) for k, v in terms.items()},
        "terminated": bool(terminated),
    }


def normalized(q, model):
    """qpos with every free/ball quaternion normalised (cenic normalises states it is given)."""
    q = q.copy()
    for j in range(model.njnt):
        a = model.jnt_qposadr[j]
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            q[a + 3 : a + 7] /= np.linalg.norm(q[a + 3 : a + 7])
        elif model.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            q[a : a + 4] /= np.linalg.norm(q[a : a + 4])
    return q


def extra_states(tid, q, v):
    """Hand-made post-step states that make the termination rules fire (and ones just inside)."""
    out = []

    def with_(idx, val):
        s = q.copy()
        s[idx] = val
        out.append((s, v.copy()))

    if tid == "Ant-v5":
        for z in (0.15, 0.2, 0.5, 1.0, 1.05):
            with_(2, z)
    elif tid == "Humanoid-v5":
        for z in (0.9, 1.0, 1.3, 2.0, 2.1):
            with_(2, z)
    elif tid == "InvertedPendulum-v5":
        for a in (-0.25, 0.19, 0.21):
            with_(1, a)
    elif tid == "InvertedDoublePendulum-v5":
        for a in (0.3, 1.2, -1.4):
            s = q.copy()
            s[1], s[2] = a, a
            out.append((s, v.copy()))
    return out


def main():
    # The bundled models must be the shared ones (Pusher-v5's file is derived in cenic).
    asset_dir = os.path.join(os.path.dirname(gym.envs.mujoco.__file__), "assets")
    for _, (_, f) in TASKS.items():
        with open(os.path.join(asset_dir, f)) as a, open(os.path.join(SHARED, "models", "gymnasium", f)) as b:
            assert a.read() == b.read(), f"{f}: gymnasium's bundled model differs from the shared one"
    out = {
        "gymnasium_version": gym.__version__,
        "mujoco_version": mujoco.__version__,
        "tasks": [],
    }
    for tid, (name, model_file) in TASKS.items():
        env = gym.make(tid)
        u = env.unwrapped
        rng = np.random.default_rng(14)
        low, high = env.action_space.low.astype(float), env.action_space.high.astype(float)
        transitions = []
        for k in range(ROLLOUTS):
            env.reset(seed=100 + k)
            q = normalized(u.data.qpos.copy(), u.model)
            v = u.data.qvel.copy()
            u.set_state(q, v)
            for _ in range(STEPS):
                a = rng.uniform(low, high)
                q0, v0 = u.data.qpos.copy(), u.data.qvel.copy()
                _, _, term, _, _ = env.step(a)
                q1, v1 = u.data.qpos.copy(), u.data.qvel.copy()
                transitions.append((q0, v0, a, q1, v1))
                if term:
                    break
        q0, v0, a, q1, v1 = transitions[-1]
        for s, sv in extra_states(tid, q1, v1):
            transitions.append((q0, v0, a, s, sv))
        records = [evaluate(tid, u, *t) for t in transitions]
        dyn_cols = []
        if tid in ("Ant-v5", "Humanoid-v5"):
            n = u.data.cfrc_ext[1:].size
            dyn_cols = list(range(u.observation_space.shape[0] - n, u.observation_space.shape[0]))
        elif tid == "InvertedDoublePendulum-v5":
            dyn_cols = [8]
        out["tasks"].append(
            {
                "id": tid,
                "task": name,
                "model": model_file,
                "frame_skip": u.frame_skip,
                "dt": u.dt,
                "max_episode_steps": env.spec.max_episode_steps,
                "obs_dim": int(u.observation_space.shape[0]),
                "action_low": low.tolist(),
                "action_high": high.tolist(),
                "body_mass": u.model.body_mass.tolist(),
                "dynamics_columns": dyn_cols,
                "transitions": records,
            }
        )
        env.close()
    with open(OUT, "w") as f:
        json.dump(out, f)
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
