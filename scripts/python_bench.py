"""Environment steps per second of cenic.make_vec("Ant", N) from Python
against gymnasium's MuJoCo Ant-v5 in SyncVectorEnv and AsyncVectorEnv,
measured in one run on the same machine (BENCHMARKS.md, "Python").

Run from a virtual environment with the cenic package, mujoco and
gymnasium installed (see BENCHMARKS.md for the exact commands):

    python scripts/python_bench.py --envs 1 4 16 64 --steps 200

Each cell: reset(seed=0), one warm-up step, then `steps` steps with uniform
random actions in [-1, 1] (the same actions for every simulator); env-steps/s
= N × steps / wall time of the stepping loop, autoresets included; the
median of `--repeat` runs (each on a new environment). One
environment step is 5 physics steps of 10 ms (gymnasium's Ant-v5) for the
fixed-step rows; the CENIC row integrates each 50 ms step under error control.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import gymnasium as gym
import numpy as np

import cenic


def bench(envs, steps: int) -> float:
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    acts = rng.uniform(-1, 1, (steps + 1,) + envs.action_space.shape).astype(np.float32)
    envs.step(acts[0])
    t0 = time.perf_counter()
    for a in acts[1:]:
        envs.step(a)
    return envs.num_envs * steps / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", type=int, nargs="+", default=[1, 4, 16, 64])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3, help="runs per cell (the median is printed)")
    p.add_argument("--async-max", type=int, default=16, help="largest N run in AsyncVectorEnv (one process per env)")
    p.add_argument("--gpu", action="store_true", help="also run cenic on the GPU")
    args = p.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"cenic {cenic.__version__}, gymnasium {gym.__version__}, numpy {np.__version__}")
    configs = {
        "cenic f64, fixed 5 × 10 ms": lambda n: cenic.make_vec("Ant", n),
        "cenic f32, fixed 5 × 10 ms": lambda n: cenic.make_vec("Ant", n, precision="f32"),
        "cenic f64, CENIC accuracy 1e-2": lambda n: cenic.make_vec("Ant", n, accuracy=1e-2),
        "MuJoCo Ant-v5, SyncVectorEnv": lambda n: gym.make_vec("Ant-v5", n, vectorization_mode="sync"),
        "MuJoCo Ant-v5, AsyncVectorEnv": lambda n: gym.make_vec("Ant-v5", n, vectorization_mode="async"),
    }
    if args.gpu:
        configs["cenic GPU f32, fixed 5 × 10 ms"] = lambda n: cenic.make_vec("Ant", n, device="gpu")
    header = "| simulator | " + " | ".join(f"N = {n}" for n in args.envs) + " |"
    print(header)
    print("|---|" + "---:|" * len(args.envs))
    for name, make in configs.items():
        cells = []
        for n in args.envs:
            if "Async" in name and n > args.async_max:
                cells.append("—")
                continue
            rates = []
            for _ in range(args.repeat):
                envs = make(n)
                try:
                    rates.append(bench(envs, args.steps))
                finally:
                    envs.close()
            cells.append(f"{np.median(rates):,.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
