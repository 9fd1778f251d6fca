#!/usr/bin/env python3
"""Cost ratios to CENIC at equal error from tools/work_precision_seeds' CSV.

For every run of another integrator with error e, the cheapest CENIC run
whose error is at most e (the lower envelope of CENIC's points, robust to
the non-monotone errors of chaotic scenes) gives the ratio
cost / CENIC's cost, in wall time and in geometry passes. A ratio above 1:
CENIC reaches that error for less; below 1: the other integrator is cheaper.
Runs more accurate than every CENIC run are listed as "beyond".

usage: work_precision_ratios.py CSV
"""
import csv
import sys


def main(path):
    rows = [r for r in csv.DictReader(open(path)) if r["status"] == "ok" and not r["method"].startswith(("reference", "check"))]
    scenes = []
    for r in rows:
        if r["scene"] not in scenes:
            scenes.append(r["scene"])
    print("| scene | integrator | setting | error | wall [s] | wall / CENIC | passes / CENIC |")
    print("|---|---|---|---|---|---|---|")
    for s in scenes:
        runs = [r for r in rows if r["scene"] == s]
        cenic = [(float(r["error"]), float(r["wall_s"]), float(r["geometry_passes"])) for r in runs if r["method"] == "cenic"]
        for r in runs:
            if r["method"] == "cenic":
                continue
            e, w, g = float(r["error"]), float(r["wall_s"]), float(r["geometry_passes"])
            ok = [c for c in cenic if c[0] <= e]
            if ok:
                cw = min(c[1] for c in ok)
                cg = min(c[2] for c in ok)
                ratio = f"{w / cw:.2f} | {g / cg:.2f}"
            else:
                ratio = "beyond | beyond"
            print(f"| {s} | {r['method']} | {float(r['parameter']):.0e} | {e:.2e} | {w:.4f} | {ratio} |")


if __name__ == "__main__":
    main(sys.argv[1])
