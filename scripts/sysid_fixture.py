#!/usr/bin/env python3
"""Generate the toss fixtures of `cenic sysid` (tests/sysid.rs): short cube tosses in the format of
the ContactNets data (`t,px,py,pz,qw,qx,qy,qz,vx,vy,vz,wx,wy,wz`, SI units, 148 Hz, angular velocity
in the body frame), simulated by cenic itself from the keyframes of tests/fixtures/sysid/cube_true.xml.

Run from the repository root after `cargo build --release` (not run in CI; the CSVs are committed):

    /work/venv/bin/python scripts/sysid_fixture.py

Each keyframe `tossK` becomes `tests/fixtures/sysid/tosses/toss_00K.csv`: `cenic run` at accuracy
1e-6 for 74 samples of 1/148 s (0.5 s), world-frame angular velocity rotated into the body frame.
"""

import csv
import os
import subprocess
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "tests", "fixtures", "sysid", "cube_true.xml")
OUT = os.path.join(ROOT, "tests", "fixtures", "sysid", "tosses")
CENIC = os.path.join(ROOT, "target", "release", "cenic")
RATE = 148.0
SAMPLES = 74


def rot(q):
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def main():
    os.makedirs(OUT, exist_ok=True)
    for k in range(4):
        with tempfile.TemporaryDirectory() as tmp:
            traj = os.path.join(tmp, "traj.csv")
            subprocess.run([CENIC, "run", MODEL, "--key", f"toss{k}", "--time", repr(SAMPLES / RATE),
                            "--sample-dt", repr(1.0 / RATE), "--accuracy", "1e-6", "--out", traj], check=True)
            with open(traj) as f:
                rows = list(csv.DictReader(f))
        path = os.path.join(OUT, f"toss_{k:03d}.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["t", "px", "py", "pz", "qw", "qx", "qy", "qz", "vx", "vy", "vz", "wx", "wy", "wz"])
            for i, r in enumerate(rows):
                q = [float(r[c]) for c in ("qw", "qx", "qy", "qz")]
                w_world = np.array([float(r[c]) for c in ("wx", "wy", "wz")])
                w_body = rot(q).T @ w_world
                vals = [i / RATE] + [float(r[c]) for c in ("px", "py", "pz")] + q
                vals += [float(r[c]) for c in ("vx", "vy", "vz")] + list(w_body)
                w.writerow([repr(float(v)) for v in vals])
        print(f"wrote {path} ({len(rows)} samples)")


if __name__ == "__main__":
    main()
