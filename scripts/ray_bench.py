"""The overhead of cenic.ray.RayVecEnv against a local cenic.make_vec of
the same size, on a local Ray cluster started here (BENCHMARKS.md, "More
than one machine").

    CENIC_SHARED=../shared target/py-venv/bin/python scripts/ray_bench.py --task Ant-v5 --envs 16 64 256

Per N and layout: reset(seed=0), 5 warm-up steps, then `--steps` steps with
uniform random actions in the action box; env-steps/s = N x steps / wall
time, autoresets included; the median of `--repeat` runs, the layouts taking
turns within each repeat (so a change in the machine's load reaches all of
them alike). Layouts: the local vector environment (rayon over all cores of
this process), RayVecEnv with one worker holding every CPU, and with one
worker per CPU.

What crosses process boundaries per vector step is measured two ways: the
pickled size (protocol 5, what Ray serializes) of each worker's action rows
and step results, and the wall time of an echo round trip: an actor that
returns a precomputed result of the same size for the same action rows,
with no simulation (the per-step cost of the boundary alone, for 1 and 2
workers). Last, the scaling model's inputs from the same run: a least-squares
line through the round trips, time = fixed + bytes / bandwidth, per worker
count, and the bytes per environment.
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import statistics
import time

import numpy as np
import ray

import cenic
import cenic.ray as cray


def rate(env, steps: int, seed: int = 0) -> float:
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    low, high = env.single_action_space.low, env.single_action_space.high
    acts = rng.uniform(low, high, size=(steps + 5, env.num_envs, low.size)).astype(np.float32)
    for a in acts[:5]:
        env.step(a)
    t0 = time.perf_counter()
    for a in acts[5:]:
        env.step(a)
    return env.num_envs * steps / (time.perf_counter() - t0)


@ray.remote(num_cpus=0)
class Echo:
    """Returns a fixed step result for action rows: the boundary without the simulation."""

    def __init__(self, result):
        self.result = result

    def step(self, actions):
        return self.result


def echo_time(results: list, actions: list, calls: int) -> float:
    """Seconds per vector step of sending each worker its action rows and getting its result back."""
    actors = [Echo.remote(r) for r in results]
    ray.get([a.step.remote(x) for a, x in zip(actors, actions)])
    t0 = time.perf_counter()
    for _ in range(calls):
        ray.get([a.step.remote(x) for a, x in zip(actors, actions)])
    dt = (time.perf_counter() - t0) / calls
    for a in actors:
        ray.kill(a)
    return dt


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="Ant-v5")
    p.add_argument("--envs", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cpus", type=int, default=os.cpu_count())
    p.add_argument("--evaluate", type=int, default=0, metavar="EPISODES",
                   help="also time cenic.ray.evaluate over this many seeded, randomized episodes")
    args = p.parse_args()
    ray.init(num_cpus=args.cpus, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    print(f"{platform.machine()}, {os.cpu_count()} cores; cenic {cenic.__version__}, ray {ray.__version__}, "
          f"numpy {np.__version__}; task {args.task}, {args.steps} steps, median of {args.repeat}")
    print("| N | local make_vec | RayVecEnv, 1 worker (/ local) | RayVecEnv, 2 workers (/ local) | bytes/step (actions + results) "
          "| boundary round trip, 1 / 2 workers | step time local / 1 / 2 workers |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    line = {1: [], 2: []}
    per_env = []
    for n in args.envs:
        layouts = {
            "local": lambda: cenic.make_vec(args.task, n),
            "ray1": lambda: cray.RayVecEnv(args.task, n, 1, resources_per_worker={"num_cpus": args.cpus}),
            "ray2": lambda: cray.RayVecEnv(args.task, n, 2, resources_per_worker={"num_cpus": max(1, args.cpus // 2)}),
        }
        runs = {name: [] for name in layouts}
        for _ in range(args.repeat):
            for name, make in layouts.items():
                env = make()
                runs[name].append(rate(env, args.steps))
                env.close()
        rates = {name: statistics.median(r) for name, r in runs.items()}
        # What one step sends and receives, per layout (pickled as Ray does).
        probe = cenic.make_vec(args.task, n)
        probe.reset(seed=0)
        a = probe.action_space.sample().astype(np.float32)
        size, rt = {}, {}
        for w in (1, 2):
            bounds = cray.split(n, w)
            results, acts = [], []
            for lo, hi in bounds:
                part = cenic.make_vec(args.task, hi - lo, first_env=lo)
                part.reset(seed=0)
                results.append(part.step(a[lo:hi]))
                acts.append(a[lo:hi])
            size[w] = sum(len(pickle.dumps(x, protocol=5)) + len(pickle.dumps(r, protocol=5)) for x, r in zip(acts, results))
            rt[w] = statistics.median(echo_time(results, acts, 100) for _ in range(args.repeat))
            line[w].append((size[w], rt[w]))
        per_env.append(size[1] / n)
        steps_time = {k: n / v for k, v in rates.items()}
        print(f"| {n} | {rates['local']:,.0f} | {rates['ray1']:,.0f} ({rates['ray1'] / rates['local']:.2f}) | "
              f"{rates['ray2']:,.0f} ({rates['ray2'] / rates['local']:.2f}) | "
              f"{size[1]:,} / {size[2]:,} | {rt[1] * 1e3:.2f} / {rt[2] * 1e3:.2f} ms | "
              f"{steps_time['local'] * 1e3:.2f} / {steps_time['ray1'] * 1e3:.2f} / {steps_time['ray2'] * 1e3:.2f} ms |",
              flush=True)
    print(f"bytes per environment and step (1 worker): {', '.join(f'{b:.1f}' for b in per_env)}")
    for w in (1, 2):
        b, t = np.array(line[w], dtype=float).T
        if len(b) > 1:
            slope, fixed = np.polyfit(b, t, 1)
            print(f"round trip, {w} worker(s): fixed {fixed * 1e3:.2f} ms + bytes / {1e-6 / slope:,.0f} MB/s")
    if args.evaluate:
        seeds = range(args.evaluate)
        rand = {"mass_scale": (0.8, 1.2), "mu_static": (0.5, 1.5)}
        for workers in (1, 2):
            t0 = time.perf_counter()
            act_dim = cenic.make(args.task).action_space.shape[0]
            returns, lengths = cray.evaluate(ZeroPolicy(act_dim), args.task, seeds, workers, randomize=rand,
                                             envs_per_worker=64, return_lengths=True,
                                             resources_per_worker={"num_cpus": max(1, args.cpus // workers)})
            dt = time.perf_counter() - t0
            print(f"evaluate: {args.evaluate} episodes, {workers} worker(s): {dt:.1f} s, "
                  f"{lengths.sum() / dt:,.0f} env-steps/s, mean return {returns.mean():.2f} "
                  f"(min {returns.min():.2f}, max {returns.max():.2f}), mean length {lengths.mean():.1f}")
    ray.shutdown()


class ZeroPolicy:
    """Zero actions (the benchmark times the machinery, not a policy)."""

    def __init__(self, act_dim: int):
        self.act_dim = act_dim

    def __call__(self, obs):
        return np.zeros((obs.shape[0], self.act_dim), np.float32)


if __name__ == "__main__":
    main()
