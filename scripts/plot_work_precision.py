#!/usr/bin/env python3
"""Work-precision before/after: plots the CSVs of `tools/work_precision`
from two builds on the same axes, one PNG per scene.

    python scripts/plot_work_precision.py OUT_PREFIX BEFORE_LABEL BEFORE.csv[,BEFORE2.csv...] \
        AFTER_LABEL AFTER.csv[,AFTER2.csv...]

Several CSVs of one build (repeated runs of the example) are merged by taking each point's
smallest wall time (the example already keeps the best of 3); errors and
step counts are deterministic and must agree between the runs. Writes
OUT_PREFIX_<scene>.png with two panels: error against wall time (single
thread) and error against accepted steps (independent of machine load).
"""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(paths):
    points = {}
    for path in paths.split(","):
        with open(path) as f:
            for row in csv.DictReader(f):
                key = (row["scene"], row["method"], float(row["parameter"]))
                wall, err, steps = float(row["wall_s"]), float(row["error"]), int(row["steps"])
                if key in points:
                    w0, e0, s0 = points[key]
                    if s0 != steps or abs(e0 - err) > 1e-9 * max(abs(e0), 1e-300):
                        sys.exit(f"{path}: {key} differs between runs ({e0}, {s0} vs {err}, {steps})")
                    wall = min(wall, w0)
                points[key] = (wall, err, steps)
    return points


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    prefix, label_a, paths_a, label_b, paths_b = sys.argv[1:]
    builds = [(label_a, load(paths_a), "--", 0.55), (label_b, load(paths_b), "-", 1.0)]
    scenes = sorted({k[0] for _, pts, _, _ in builds for k in pts})
    colors = {"cenic": "tab:red", "fixed": "tab:blue"}
    names = {"cenic": "CENIC accuracy", "fixed": "fixed step"}
    for scene in scenes:
        fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
        for label, pts, style, alpha in builds:
            for method in ("cenic", "fixed"):
                rows = sorted((k[2], v) for k, v in pts.items() if k[0] == scene and k[1] == method)
                if not rows:
                    continue
                for ax, col in zip(axes, (0, 2)):
                    xs = [v[col] for _, v in rows]
                    ys = [v[1] for _, v in rows]
                    ax.loglog(xs, ys, style, marker="o", color=colors[method], alpha=alpha,
                              label=f"{names[method]} ({label})")
                    if style == "-":
                        for (p, v), x, y in zip(rows, xs, ys):
                            ax.annotate(f"{p:.0e}", (x, y), textcoords="offset points", xytext=(4, 4),
                                        fontsize=7, color=colors[method])
        axes[0].set_xlabel("wall time, single thread [s] (best of 3; builds run back to back, load 6-7)")
        axes[1].set_xlabel("accepted steps")
        for ax in axes:
            ax.set_ylabel("mean error vs own reference (accuracy 1e-7) [m, rad]")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(f"work-precision, {scene}: {label_a} vs {label_b}")
        fig.tight_layout()
        out = f"{prefix}_{scene}.png"
        fig.savefig(out, dpi=100)
        print("wrote", out)


if __name__ == "__main__":
    main()
