#!/usr/bin/env python3
"""RL throughput of gymnasium + MuJoCo, side by side with cenic's.

Environment steps per second for gymnasium's v5 MuJoCo tasks against the number of
environments, in two ways:

- gymnasium: `gymnasium.make_vec(id, num_envs=n, vectorization_mode="sync")` (a `SyncVectorEnv`
  of the registered environments with their default wrappers: one process, one thread, the
  environments stepped one after the other; observations, rewards, terminations, autoresets);
- mujoco.rollout: MuJoCo's multithreaded batched rollout (`mujoco.rollout.Rollout(nthread=2)`),
  called once per environment step for `frame_skip` physics steps from the previous step's
  final states (closed loop, as an RL loop would drive it). Physics and the termination rule
  only: after each step, worlds whose torso height left the task's healthy range restart from
  their initial state (one vectorised numpy test and copy), so that fallen robots do not pile
  up in contact-heavy states that an RL loop never simulates; no observation or reward, so an
  upper bound on what an RL loop built on it can reach.

Both use gymnasium's bundled models (the shared `models/gymnasium` files), uniform random actions
within the control ranges (16 pregenerated batches, cycled), one untimed step, then timed steps
until the budget is spent (at least 3). Each measurement records the wall time and the CPU time of
the process over the timed steps (`time.process_time`, all threads): steps per CPU-second do not
depend on what else runs on the machine. Run after `tools/rl_throughput.rs` in one shell line so
that both columns come from the same machine state:

    cargo run --release --example rl_throughput -- --csv target/rl_throughput.csv && \
        /work/venv/bin/python scripts/rl_throughput.py --cenic target/rl_throughput.csv

With `--cenic CSV` the script prints one table with cenic's rows (from the example's CSV) next to
gymnasium's and mujoco.rollout's, and the ratios of cenic (CPU f64, fixed steps: the same physics
step and interval as gymnasium) to both. Options: --tasks, --sizes, --budget SECONDS (2),
--max-step SECONDS (a series stops growing once one environment step takes longer; 10),
--threads N for mujoco.rollout (2), --csv PATH (this script's measurements).
"""

import argparse
import csv
import os
import sys
import time

import gymnasium as gym
import mujoco
import numpy as np
from mujoco import rollout


def loadavg():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def random_actions(n, low, high, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, size=(n, low.size)).astype(np.float32) for _ in range(16)]


def timed(step, budget):
    """Calls step(k) once untimed, then until the budget is spent (at least 3 times):
    (calls, wall seconds, CPU seconds)."""
    step(0)
    k = 0
    cpu = time.process_time()
    start = time.perf_counter()
    while k < 3 or time.perf_counter() - start < budget:
        k += 1
        step(k)
    return k, time.perf_counter() - start, time.process_time() - cpu


def gym_sync(tid, n, budget):
    env = gym.make_vec(tid, num_envs=n, vectorization_mode="sync")
    env.reset(seed=0)
    low, high = env.single_action_space.low, env.single_action_space.high
    acts = random_actions(n, low, high, n)
    ended = [0]

    def step(k):
        _, _, term, trunc, _ = env.step(acts[k % len(acts)])
        ended[0] += int(np.count_nonzero(term | trunc))

    steps, wall, cpu = timed(step, budget)
    env.close()
    return steps, wall, cpu, ended[0]


def mujoco_rollout(tid, n, budget, threads):
    # The environment's own model and reset distribution (qpos0 plus its reset noise).
    envs = gym.make_vec(tid, num_envs=min(n, 16), vectorization_mode="sync")
    envs.reset(seed=0)
    u = envs.envs[0].unwrapped
    model, frame_skip = u.model, u.frame_skip
    zlo, zhi = u._healthy_z_range
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    nstate = mujoco.mj_stateSize(model, spec)
    state0 = np.empty((n, nstate))
    for i in range(n):
        e = envs.envs[i % len(envs.envs)].unwrapped
        if i >= len(envs.envs):
            e.reset(seed=i)
        mujoco.mj_getState(e.model, e.data, state0[i], spec)
    envs.close()
    low, high = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    acts = [a.astype(np.float64)[:, None, :] for a in random_actions(n, low, high, n)]
    datas = [mujoco.MjData(model) for _ in range(threads)]
    out = np.empty((n, frame_skip, nstate))
    cur = state0.copy()
    z = 1 + 2  # the state starts with time, then qpos: the free joint's height
    assert mujoco.mjtState.mjSTATE_TIME & spec and model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    ended = [0]
    with rollout.Rollout(nthread=threads) as r:

        def step(k):
            r.rollout(model, datas, cur, acts[k % len(acts)], nstep=frame_skip, state=out)
            cur[:] = out[:, -1, :]
            fallen = (cur[:, z] < zlo) | (cur[:, z] > zhi)
            cur[fallen] = state0[fallen]
            ended[0] += int(np.count_nonzero(fallen))

        steps, wall, cpu = timed(step, budget)
    return steps, wall, cpu, ended[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", default="Ant-v5,Humanoid-v5")
    p.add_argument("--sizes", default="1,4,16,64,256,1024,4096")
    p.add_argument("--budget", type=float, default=2.0)
    p.add_argument("--max-step", type=float, default=10.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--csv", default="target/rl_throughput_gym.csv")
    p.add_argument("--cenic", help="CSV written by tools/rl_throughput.rs")
    a = p.parse_args()
    tasks = a.tasks.split(",")
    sizes = [int(s) for s in a.sizes.split(",")]
    print(f"gymnasium {gym.__version__}, mujoco {mujoco.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}")
    print(f"load average at start: {loadavg()}; budget {a.budget} s per measurement", flush=True)
    rows = []
    for tid in tasks:
        for kind in ("gymnasium SyncVectorEnv", f"mujoco.rollout ({a.threads} threads)"):
            for n in sizes:
                if kind.startswith("gymnasium"):
                    steps, wall, cpu, ended = gym_sync(tid, n, a.budget)
                else:
                    steps, wall, cpu, ended = mujoco_rollout(tid, n, a.budget, a.threads)
                rate, cpu_rate = steps * n / wall, steps * n / cpu
                rows.append((tid, kind, n, steps * n, wall, rate, cpu, cpu_rate, ended))
                print(
                    f"{tid:12s} {kind:26s} {n:5d} envs: {steps:6d} steps in {wall:6.2f} s = {rate:9.0f} env steps/s"
                    f" ({cpu:6.2f} CPU-s, {cpu_rate:9.0f} per CPU-s, {ended} episodes ended)",
                    flush=True,
                )
                if wall / steps > a.max_step:
                    print(f"{tid} {kind}: series stops after {n} envs")
                    break
    os.makedirs(os.path.dirname(a.csv) or ".", exist_ok=True)
    with open(a.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["task", "backend", "num_envs", "env_steps", "wall_s", "env_steps_per_s", "cpu_s", "env_steps_per_cpu_s", "episodes_ended"])
        for r in rows:
            w.writerow([r[0], r[1], r[2], r[3], f"{r[4]:.4f}", f"{r[5]:.1f}", f"{r[6]:.2f}", f"{r[7]:.1f}", r[8]])
    print(f"wrote {a.csv}; load average at end: {loadavg()}")
    if not a.cenic:
        return
    # Two tables (wall-clock env steps/s; env steps per CPU-second), cenic's columns from its CSV.
    gym_col, ro_col = "gymnasium SyncVectorEnv", f"mujoco.rollout ({a.threads} threads)"
    fixed, cenic_col = "cenic CPU f64 fixed", "cenic CPU f64 cenic 1e-2"
    for title, ours_key, theirs_idx in (
        ("env steps/s (wall clock)", "env_steps_per_s", 5),
        ("env steps per CPU-second (user + system, all threads of the process)", "env_steps_per_cpu_s", 7),
    ):
        ours = {}
        with open(a.cenic) as f:
            for r in csv.DictReader(f):
                col = f"cenic {r['backend']} {r['physics']}"
                if r["backend"] == "GPU" and "llvmpipe" in r.get("adapter", ""):
                    col += " (lavapipe)"
                ours[(r["task"], col, int(r["num_envs"]))] = float(r[ours_key]) if ours_key in r else None
        theirs = {(r[0], r[1], r[2]): r[theirs_idx] for r in rows}
        cols = sorted({k[1] for k in ours}, key=lambda c: ("GPU" in c, "cenic 1e" in c, c))
        head = ["task", "envs", *cols, gym_col, ro_col, f"{fixed} / gymnasium", f"{fixed} / rollout", f"{cenic_col} / gymnasium"]
        print(f"\n{title}\n\n| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        fmt = lambda x: "–" if x is None else f"{x:.0f}"
        ratio = lambda x, y: "–" if x is None or y is None else f"{x / y:.2f}"
        for tid in tasks:
            for n in sizes:
                vals = [ours.get((tid, c, n)) for c in cols]
                g, ro = theirs.get((tid, gym_col, n)), theirs.get((tid, ro_col, n))
                c, ce = ours.get((tid, fixed, n)), ours.get((tid, cenic_col, n))
                print("| " + " | ".join([tid, str(n), *map(fmt, vals), fmt(g), fmt(ro), ratio(c, g), ratio(c, ro), ratio(ce, g)]) + " |")

if __name__ == "__main__":
    main()
