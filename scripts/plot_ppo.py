#!/usr/bin/env python3
"""Learning curves of several `examples/ppo.rs` runs (e.g. seeds) in one PNG.

    /work/venv/bin/python scripts/plot_ppo.py --title "PPO on cenic HalfCheetah-v5" \
        --out docs/figures/ppo_HalfCheetah-v5.png \
        "seed 1=target/ppo/seed1/HalfCheetah-v5_curve.csv" "seed 2=target/ppo/seed2/HalfCheetah-v5_curve.csv"

Each argument is LABEL=CSV (the CSV `examples/ppo.rs` writes); the curve is the mean return of
the last 10 finished episodes against environment steps.
"""

import argparse
import csv
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker


def main():
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs="+", help="LABEL=CSV")
    p.add_argument("--title", default="PPO on cenic")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=100)
    for run in a.runs:
        label, _, path = run.partition("=")
        if not path:
            raise SystemExit(f"expected LABEL=CSV, got {run!r}")
        steps, ret = [], []
        with open(path) as f:
            for r in csv.DictReader(f):
                x = float(r["mean_return_last10"])
                if math.isfinite(x):
                    steps.append(int(r["env_steps"]))
                    ret.append(x)
        if not steps:
            raise SystemExit(f"{path}: no finished episodes")
        ax.step(steps, ret, where="post", label=f"{label} (final {ret[-1]:.0f})")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x / 1e6:.2g}M" if x else "0"))
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean return of the last 10 episodes")
    ax.set_title(a.title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
