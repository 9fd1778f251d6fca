#!/usr/bin/env python3
"""Work-precision of cenic and MuJoCo on every gymnasium model and the shared scenes: each
simulator's error against its own converged reference, against CPU time, in one run.

    cargo build --release --example work_precision_mujoco
    /work/venv/bin/python scripts/mujoco_work_precision.py [--quick] [--out DIR] [--only a,b]
        [--repeat N] [--summary]

(MuJoCo 4.0 Python package and matplotlib; not run in CI.) Writes DIR/NAME.csv and DIR/NAME.png per
model and the tables below; the runs' trajectories go under DIR/traj (references are reused from
there when present).

Every model of $CENIC_SHARED/models/gymnasium (default ../shared) from its reference pose at rest, and
the scenes cube_toss (keyframe "toss") and clutter20 with cenic's contact attributes (stiffness,
dissipation, friction_dynamic, stiction_tolerance) removed, written to DIR/scenes and loaded by both
simulators: every model then has MuJoCo's soft-constraint semantics in both.

Controls: `cenic::zoo::smooth_control` (seed 1; twin in scripts/zoo_controls.py) at the start of
each control interval, held for the interval: 10 ms, or, where the model's timestep does not divide
10 ms, the smallest multiple of the timestep not below 10 ms (humanoid 12 ms; inverted_pendulum and
point 20 ms), so that every step of every run lies within one interval. Horizon: 2 s rounded up
to whole intervals. Body positions (every moving body, world frame) are sampled at the end of each
interval; error = the largest distance of any body from the reference over the samples up to 0.5 s
(rounded up to an interval) and up to the horizon.

MuJoCo: integrators RK4, Euler and implicitfast at the model's timestep / 2^k, k = 0..4, stepped in
C by mujoco.rollout with the controls expanded per step; reference RK4 at timestep / 256, checked
against / 512 (humanoid and clutter20: / 64 and / 128; quick: / 32 and / 64). cenic
(tools/work_precision_mujoco.rs): CENIC at accuracies 1e-1 … 1e-6, the same second order by local
extrapolation (`cenicx`, CenicParams::extrapolate) and fixed steps equal to MuJoCo's; reference
CENIC at 1e-8, checked against 2.5e-9 (a quarter of the accuracy), plain or extrapolated, whichever
agrees better with its check over the first 0.5 s; clutter20: reference 1e-7, accuracies down to
1e-5 (REFERENCE). Cost: process CPU time
(time.process_time, CLOCK_PROCESS_CPUTIME_ID; one thread in both) of the stepping only; each model's
settings run as a round of cenic, then a round of MuJoCo, REPEAT times; the median is kept.

Tables (also with --summary, from the CSVs alone): DIR/ratios.md, cenic's CPU time over MuJoCo's at
errors of 1e-2, 1e-3, 1e-4 m, each simulator's cost read off the lower envelope of its best curve in
log-log († where the level is below 3× a reference check; ‡ SIMULATOR where that simulator's cheapest
run is already below the level, so its cost is an upper bound); DIR/orders.md, the observed order of every curve
(slope of −log error against log steps) and CENIC's step counts.
"""

import argparse
import csv
import math
import os
import re
import subprocess
import sys
import time

import matplotlib
import matplotlib.ticker
import mujoco
import numpy as np
from mujoco import rollout

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_controls import smooth_control  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("CENIC_SHARED", os.path.join(ROOT, "..", "shared"))
CENIC = os.path.join(ROOT, "target", "release", "examples", "work_precision_mujoco")
EXTENSIONS = ("stiffness", "dissipation", "friction_dynamic", "stiction_tolerance")
INTEGRATORS = {"RK4": mujoco.mjtIntegrator.mjINT_RK4, "Euler": mujoco.mjtIntegrator.mjINT_EULER,
               "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST}
HORIZON, WINDOW = 2.0, 0.5
# (reference accuracy, finest accuracy timed) where the default (1e-8, 1e-6) costs too much.
REFERENCE = {"clutter20": (1e-7, 1e-5)}
# MuJoCo's reference step divides the model's timestep by this (256 where the run is cheap).
MUJOCO_DIVISOR = {"humanoid": 64, "clutter20": 64}
LEVELS = (1e-2, 1e-3, 1e-4)


def models(out):
    found = []
    gym = os.path.join(SHARED, "models", "gymnasium")
    for f in sorted(os.listdir(gym)):
        if f.endswith(".xml"):
            found.append((f[:-4], os.path.join(gym, f), None))
    os.makedirs(os.path.join(out, "scenes"), exist_ok=True)
    for name, key in (("cube_toss", "toss"), ("clutter20", None)):
        with open(os.path.join(SHARED, "scenes", name + ".xml")) as f:
            xml = f.read()
        for attr in EXTENSIONS:
            xml = re.sub(r'\s%s="[^"]*"' % attr, "", xml)
        path = os.path.join(out, "scenes", name + ".xml")
        with open(path, "w") as f:
            f.write(xml)
        found.append((name, path, key))
    return found


def schedule(dt):
    """Control interval (s) and the five steps (s) for a model timestep dt."""
    ratio = 0.01 / dt
    interval = 0.01 if abs(ratio - round(ratio)) < 1e-9 and round(ratio) >= 1 else dt * math.ceil(ratio)
    return interval, [dt / 2**k for k in range(5)]


def cenic_runs(path, key, interval, n, settings, traj):
    cmd = [CENIC, "--model", path, "--interval", repr(interval), "--intervals", str(n),
           "--settings", ",".join(settings)]
    if key:
        cmd += ["--key", key]
    if traj:
        cmd += ["--traj", traj]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.strip().splitlines():
        kind, value, cpu, steps, rejected, failure = line.split(",", 5)
        rows[f"{kind}:{value}"] = (float(cpu), int(steps), int(rejected), failure)
    return rows


def cenic_traj(traj, setting, nbody):
    kind, value = setting.split(":")
    return np.fromfile(os.path.join(traj, f"{kind}_{value}.f64"), "<f8").reshape(-1, nbody, 3)


class MuJoCo:
    def __init__(self, path, key, interval, n):
        self.m = mujoco.MjModel.from_xml_path(path)
        self.d = mujoco.MjData(self.m)
        self.key, self.interval, self.n = key, interval, n
        self.u = np.array([[smooth_control(self.m, 1, i, k * interval) for i in range(self.m.nu)]
                           for k in range(n)]).reshape(n, self.m.nu)
        self.spec = mujoco.mjtState.mjSTATE_FULLPHYSICS

    def reset(self):
        if self.key is None:
            mujoco.mj_resetData(self.m, self.d)
        else:
            mujoco.mj_resetDataKeyframe(self.m, self.d, mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_KEY, self.key))
        x0 = np.empty(mujoco.mj_stateSize(self.m, self.spec))
        mujoco.mj_getState(self.m, self.d, x0, self.spec)
        return x0

    def xpos(self, state):
        mujoco.mj_setState(self.m, self.d, state, self.spec)
        mujoco.mj_kinematics(self.m, self.d)
        return self.d.xpos[1:].copy()

    def run(self, integrator, dt, chunked=False):
        """(CPU s, steps, failure, positions (n+1, nbody-1, 3))."""
        m = self.m
        m.opt.integrator, m.opt.timestep = INTEGRATORS[integrator], dt
        spi = int(round(self.interval / dt))
        x0 = self.reset()
        samples = [self.xpos(x0)]
        failure = ""
        if chunked:  # references: one rollout per interval, so the state output stays small
            x, cpu = x0, 0.0
            for k in range(self.n):
                ctrl = np.repeat(self.u[k:k + 1], spi, axis=0)
                state = np.empty((1, spi, len(x0)))
                t0 = time.process_time()
                rollout.rollout(m, self.d, x, ctrl if m.nu else None, nstep=spi, state=state)
                cpu += time.process_time() - t0
                x = state[0, -1]
                samples.append(self.xpos(x))
        else:
            ctrl = np.repeat(self.u, spi, axis=0)
            state = np.empty((1, self.n * spi, len(x0)))
            t0 = time.process_time()
            rollout.rollout(m, self.d, x0, ctrl if m.nu else None, nstep=self.n * spi, state=state)
            cpu = time.process_time() - t0
            samples += [self.xpos(state[0, (k + 1) * spi - 1]) for k in range(self.n)]
        pos = np.array(samples)
        if not np.all(np.isfinite(pos)) or self.d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0:
            failure = "diverged (bad qacc or non-finite positions)"
        return cpu, self.n * spi, failure, pos


def error(a, b, nsamples):
    if a is None or b is None or len(a) != len(b):
        return math.inf
    return float(np.max(np.linalg.norm(a[:nsamples] - b[:nsamples], axis=2)))


def envelope_cost(points, e):
    """CPU time to reach error e on a curve of (cpu, error) points: the lower envelope (running
    minimum error over points sorted by cost), interpolated linearly in log-log, and whether that is
    only an upper bound (the cheapest point is already below e). None where the curve never reaches e."""
    pts = sorted((c, err) for c, err in points if math.isfinite(err) and err > 0 and c > 0)
    env = []
    for c, err in pts:
        if not env or err < env[-1][1]:
            env.append((c, err))
    if not env or env[-1][1] > e:
        return None
    if env[0][1] <= e:
        return env[0][0], True
    for (c0, e0), (c1, e1) in zip(env, env[1:]):
        if e1 <= e < e0:
            f = (math.log(e) - math.log(e0)) / (math.log(e1) - math.log(e0))
            return math.exp(math.log(c0) + f * (math.log(c1) - math.log(c0))), False
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="out/work_precision_mujoco")
    ap.add_argument("--quick", action="store_true", help="accuracies to 1e-4, 3 steps, looser references, 1 round")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--repeat", type=int, help="rounds per model (default 3; 1 with --quick)")
    ap.add_argument("--summary", action="store_true", help="only redo the plots and tables from DIR/*.csv")
    args = ap.parse_args()
    if args.summary:
        names = [n for n, _, _ in models(args.out) if os.path.exists(os.path.join(args.out, n + ".csv"))]
        summarize(args.out, [n for n in names if not args.only or n in args.only.split(",")])
        return
    repeat = args.repeat or (1 if args.quick else 3)
    os.makedirs(args.out, exist_ok=True)
    load = os.getloadavg()
    print(f"MuJoCo {mujoco.__version__}; load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    done = []
    for name, path, key in models(args.out):
        if args.only and name not in args.only.split(","):
            continue
        started = time.time()
        mj = MuJoCo(path, key, 0, 0)
        dt = mj.m.opt.timestep
        interval, steps = schedule(dt)
        n = math.ceil(HORIZON / interval - 1e-9)
        n_window = math.ceil(WINDOW / interval - 1e-9) + 1  # samples up to the window, t = 0 included
        mj = MuJoCo(path, key, interval, n)
        nbody = mj.m.nbody - 1
        ref_acc, finest = REFERENCE.get(name, (1e-8, 1e-6))
        divisor = MUJOCO_DIVISOR.get(name, 256)
        if args.quick:
            ref_acc, finest, divisor, steps = max(ref_acc * 100, 1e-6), max(finest, 1e-4), 32, steps[:3]
        accuracies = [a for a in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6) if a >= finest * 0.99]
        cenic_settings = ([f"cenic:{a:e}" for a in accuracies] + [f"cenicx:{a:e}" for a in accuracies]
                          + [f"fixed:{h:e}" for h in steps])
        traj = os.path.join(args.out, "traj", name)
        os.makedirs(traj, exist_ok=True)

        # References (untimed; reused when present), each checked against a run with half the steps.
        # Both kinds of reference, plain and extrapolated CENIC; the one that agrees better with its
        # check over the window is used.
        candidates = {}
        for kind in ("cenicx", "cenic"):
            refs = {}
            for label, acc in (("reference", ref_acc), ("check", ref_acc / 4)):
                s = f"{kind}:{acc:e}"
                try:
                    refs[label] = cenic_traj(traj, s, nbody)
                    assert len(refs[label]) == n + 1
                except (OSError, ValueError, AssertionError):
                    r = cenic_runs(path, key, interval, n, [s], traj)[s]
                    if r[3]:
                        print(f"{name}: cenic {label} ({kind}) failed: {r[3]}")
                        break
                    refs[label] = cenic_traj(traj, s, nbody)
            else:
                candidates[kind] = (error(refs["check"], refs["reference"], n_window), refs)
        kind = min(candidates, key=lambda k: candidates[k][0])
        refs = candidates[kind][1]
        print(f"{name}: cenic reference {kind} (checks over the window: "
              + ", ".join(f"{k} {c[0]:.1e} m" for k, c in candidates.items()) + ")")
        mrefs = {}
        for label, div in (("reference", divisor), ("check", 2 * divisor)):
            f = os.path.join(traj, f"mujoco_RK4_{dt / div:e}.npy")
            if os.path.exists(f) and len(np.load(f)) == n + 1:
                mrefs[label] = np.load(f)
            else:
                _, _, failure, pos = mj.run("RK4", dt / div, chunked=True)
                if failure:
                    print(f"{name}: MuJoCo {label} failed: {failure}")
                np.save(f, pos)
                mrefs[label] = pos
        rows = [
            ("cenic", "reference-check", ref_acc / 4, "", "", "", "", error(refs["check"], refs["reference"], n_window),
             error(refs["check"], refs["reference"], n + 1), ""),
            ("mujoco", "reference-check", dt / (2 * divisor), "", "", "", "",
             error(mrefs["check"], mrefs["reference"], n_window), error(mrefs["check"], mrefs["reference"], n + 1), ""),
        ]

        cpu = {}
        info = {}
        for r in range(repeat):
            for s, (c, st, rej, fail) in cenic_runs(path, key, interval, n, cenic_settings,
                                                   traj if r == 0 else None).items():
                cpu.setdefault(("cenic", s), []).append(c)
                if r == 0:
                    pos = None if fail else cenic_traj(traj, s, nbody)
                    info[("cenic", s)] = (st, rej, fail, error(pos, refs["reference"], n_window),
                                          error(pos, refs["reference"], n + 1))
            for integ in INTEGRATORS:
                for h in steps:
                    c, st, fail, pos = mj.run(integ, h)
                    k = ("mujoco", f"{integ}:{h:e}")
                    cpu.setdefault(k, []).append(c)
                    if r == 0:
                        info[k] = (st, "", fail, error(pos, mrefs["reference"], n_window),
                                   error(pos, mrefs["reference"], n + 1))
        for (sim, s), (st, rej, fail, e05, e2) in info.items():
            mode, value = s.split(":")
            rows.append((sim, mode, float(value), float(np.median(cpu[(sim, s)])),
                         " ".join(f"{c:.6f}" for c in cpu[(sim, s)]), st, rej, e05, e2, fail))

        with open(os.path.join(args.out, name + ".csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["model", "simulator", "mode", "parameter", "cpu_s_median", "cpu_s_rounds", "steps",
                        "rejected", "error_0.5s_m", "error_2s_m", "failure"])
            for row in rows:
                w.writerow([name, row[0], row[1], f"{row[2]:e}",
                            f"{row[3]:.6f}" if row[3] != "" else "", row[4], row[5], row[6],
                            f"{row[7]:.4e}", f"{row[8]:.4e}", row[9]])
        print(f"{name}: dt {dt:g} s, interval {interval:g} s, {time.time() - started:.0f} s wall; "
              f"reference checks: cenic {rows[0][7]:.1e}/{rows[0][8]:.1e} m, MuJoCo {rows[1][7]:.1e}/{rows[1][8]:.1e} m",
              flush=True)
        done.append(name)
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    summarize(args.out, done)


def read_csv(path):
    """Curves {(simulator, mode): [(parameter, cpu, error 0.5 s, error horizon, steps, rejected)]} of
    the runs that did not fail, and the two reference checks (cenic, MuJoCo): (error 0.5 s, horizon)."""
    curves, checks = {}, {}
    with open(path) as f:
        for r in csv.DictReader(f):
            e05, e2 = float(r["error_0.5s_m"]), float(r["error_2s_m"])
            if r["mode"] == "reference-check":
                checks[r["simulator"]] = (e05, e2)
            elif not r["failure"]:
                curves.setdefault((r["simulator"], r["mode"]), []).append(
                    (float(r["parameter"]), float(r["cpu_s_median"]), e05, e2, int(r["steps"]),
                     int(r["rejected"] or 0)))
    return curves, checks


def observed_order(pts, col, floor):
    """Slope of −log(error) against log(steps) by least squares over the points whose error is above
    3× the reference floor (None with fewer than three)."""
    xy = [(math.log(p[4]), math.log(p[col])) for p in pts if p[col] > 3 * floor and math.isfinite(p[col])]
    if len(xy) < 3:
        return None
    mx, my = sum(x for x, _ in xy) / len(xy), sum(y for _, y in xy) / len(xy)
    return -sum((x - mx) * (y - my) for x, y in xy) / sum((x - mx) ** 2 for x, _ in xy)


def summarize(out, names):
    """From DIR/NAME.csv: the plots, DIR/ratios.md (cenic's CPU time over MuJoCo's at equal error) and
    DIR/orders.md (observed orders and CENIC's step counts)."""
    ratios = ["| model | window | reference checks, cenic · MuJoCo (m) | "
              + " | ".join(f"{e:.0e} m" for e in LEVELS) + " |", "|---|---|---|" + "---|" * len(LEVELS)]
    orders = ["| model | CENIC | CENIC extrapolated | cenic fixed | MuJoCo RK4 | MuJoCo Euler | MuJoCo implicitfast "
              "| CENIC at 1e-4: accepted (rejected) steps, error 0.5 s (m) "
              "| extrapolated at 1e-4 |", "|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        curves, checks = read_csv(os.path.join(out, name + ".csv"))
        dt = max(p[0] for p in curves.get(("mujoco", "RK4"), [(0.01,)]))
        interval, _ = schedule(dt)
        horizon = math.ceil(HORIZON / interval - 1e-9) * interval
        plot(os.path.join(out, name + ".png"), name, curves, checks, interval, horizon)
        for col, label in ((2, "0.5 s"), (3, f"{horizon:g} s")):
            floor = max(checks["cenic"][col - 2], checks["mujoco"][col - 2])
            cells = []
            for e in LEVELS:
                best = {}
                for sim in ("cenic", "mujoco"):
                    costs = [(envelope_cost([(p[1], p[col]) for p in pts], e), mode)
                             for (s2, mode), pts in curves.items() if s2 == sim]
                    costs = [(x[0][0], x[1], x[0][1]) for x in costs if x[0] is not None]
                    best[sim] = min(costs) if costs else None
                c, m = best["cenic"], best["mujoco"]
                if c and m:
                    cell = f"**{c[0] / m[0]:.2f}** ({c[1]} {1e3 * c[0]:.3g} ms / {m[1]} {1e3 * m[0]:.3g} ms)"
                    bounds = [sim for sim, b in (("cenic", c), ("MuJoCo", m)) if b[2]]
                    if bounds:
                        cell += " ‡ " + ", ".join(bounds)
                else:
                    cell = "– (" + " and ".join(s for s, b in (("cenic", c), ("MuJoCo", m)) if not b) + " not reached)"
                if e < 3 * floor:
                    cell += " †"
                cells.append(cell)
            ratios.append(f"| {name} | {label} | {checks['cenic'][col - 2]:.1e} · {checks['mujoco'][col - 2]:.1e} | "
                          + " | ".join(cells) + " |")
        floor = max(checks["cenic"][0], checks["mujoco"][0])
        cols = []
        for key in (("cenic", "cenic"), ("cenic", "cenicx"), ("cenic", "fixed"), ("mujoco", "RK4"),
                    ("mujoco", "Euler"), ("mujoco", "implicitfast")):
            o = observed_order(curves.get(key, []), 2, floor)
            cols.append("–" if o is None else f"{o:.2f}")
        for mode in ("cenic", "cenicx"):
            at = [p for p in curves.get(("cenic", mode), []) if abs(p[0] - 1e-4) < 1e-12]
            cols.append(f"{at[0][4]} ({at[0][5]}), {at[0][2]:.1e}" if at else "–")
        orders.append(f"| {name} | " + " | ".join(cols) + " |")
    with open(os.path.join(out, "ratios.md"), "w") as f:
        f.write("\n".join(ratios) + "\n")
    with open(os.path.join(out, "orders.md"), "w") as f:
        f.write("\n".join(orders) + "\n")
    print("\n".join(ratios) + "\n\n" + "\n".join(orders))


def plot(path, name, curves, checks, interval, horizon):
    styles = {("cenic", "cenic"): ("tab:red", "-", "cenic CENIC (accuracy)"),
              ("cenic", "cenicx"): ("tab:brown", "-.", "cenic CENIC extrapolated (accuracy)"),
              ("cenic", "fixed"): ("tab:orange", "--", "cenic fixed step"),
              ("mujoco", "RK4"): ("tab:blue", "-", "MuJoCo RK4"),
              ("mujoco", "Euler"): ("tab:green", "--", "MuJoCo Euler"),
              ("mujoco", "implicitfast"): ("tab:purple", ":", "MuJoCo implicitfast")}
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    for ax, col, window in zip(axes, (2, 3), ("first 0.5 s", f"{horizon:g} s")):
        for key, pts in sorted(curves.items()):
            color, style, label = styles[key]
            pts = sorted(pts)
            xs = [p[1] for p in pts]
            ys = [max(p[col], 1e-12) for p in pts]
            ax.loglog(xs, ys, style, marker="o", color=color, label=label)
            for p, x, y in zip(pts, xs, ys):
                ax.annotate(f"{p[0]:.0e}", (x, y), textcoords="offset points", xytext=(3, 3), fontsize=6,
                            color=color)
        for sim, color in (("cenic", "tab:red"), ("mujoco", "tab:blue")):
            ax.axhline(max(checks[sim][col - 2], 1e-12), color=color, lw=0.8, alpha=0.5)
        ax.set_title(f"{name}: error over the {window}")
        ax.set_xlabel("CPU time for the horizon, one core [s] (median of rounds)")
        ax.set_ylabel("largest body-position deviation from own reference [m]")
        ax.grid(True, which="both", alpha=0.3)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.legend(fontsize=8)
    fig.suptitle(f"work-precision, {name} (controls held {1e3 * interval:g} ms; thin lines: each reference "
                 f"against its check)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
