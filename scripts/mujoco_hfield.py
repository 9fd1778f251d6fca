#!/usr/bin/env python3
"""MuJoCo 4.0 height-field fixtures (run by scripts/mujoco_mjcf_features.py, or alone):

    /work/venv/bin/python scripts/mujoco_hfield.py

Writes to `tests/fixtures/mujoco/features_more/`:
- `hfield_contacts.json`: states of `tests/models/features/hfield_bumps.xml` (qpos) with the
  contacts MuJoCo finds at them (`mj_forward`; geom pair, dist, pos, frame normal from geom1 to
  geom2, i.e. from the field to the other geom). "resting" states: each body dropped from a few
  centimetres at several places and simulated for 1.5 s (RK4, 1 ms) until it rests; "sliding"
  states: each body started on the field with a horizontal velocity of 1 m/s, sampled every
  0.05 s while it slides. States are kept while every pair has at most 8 contacts (cenic keeps
  at most 8 per pair). Box states also carry `exact`: each overlapped prism's exact penetration
  depth and normal by the separating-axis theorem (box_prisms_exact), since MuJoCo's EPA can stop
  early on box–prism pairs and report a shallower depth.
- `hfield_roll.json`: the ball of `hfield_slope.xml` rolling down from rest: qpos and qvel every
  0.05 s for 1 s (RK4 at 0.1 ms).
- `hfield_data.json`: the normalised elevations MuJoCo compiles from the PNG and binary files of
  `tests/models/features/hfield_files.xml` (it writes those files first, from fixed data).
"""

import itertools
import json
import os
import struct
import zlib

import mujoco
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "tests", "models", "features")
OUT = os.path.join(ROOT, "tests", "fixtures", "mujoco", "features_more")


def lst(a):
    return [float(x) for x in np.asarray(a).ravel()]


def contacts(m, d):
    out = []
    for i in range(d.ncon):
        c = d.contact[i]
        out.append(
            {
                "geom": [m.geom(int(c.geom1)).name, m.geom(int(c.geom2)).name],
                "dist": float(c.dist),
                "pos": lst(c.pos),
                "normal": lst(c.frame[:3]),
            }
        )
    return out


def box_prisms_exact(m, d, box):
    """Exact penetration of box geom `box` into every prism of the field (geom 0) it overlaps, by
    the separating-axis theorem (face normals of both polytopes and cross products of their edges;
    exact for convex polytopes): [prism index 2·(r·(ncol − 1) + c − 1) + t, depth (m), unit normal
    (world) along which the box leaves the prism]. An independent reference for box contacts: on
    box–prism pairs MuJoCo's EPA can stop early (a repeated support point) and report a shallower
    depth."""
    R = d.geom_xmat[0].reshape(3, 3)
    p = d.geom_xpos[0]
    Rb = d.geom_xmat[box].reshape(3, 3)
    pb = d.geom_xpos[box]
    sz = m.geom_size[box]
    corners = np.array([[sx * sz[0], sy * sz[1], sz2 * sz[2]] for sx in (-1, 1) for sy in (-1, 1) for sz2 in (-1, 1)])
    bx = (R.T @ ((Rb @ corners.T).T + pb - p).T).T
    s0, s1, s2, s3 = m.hfield_size[0]
    nrow, ncol = int(m.hfield_nrow[0]), int(m.hfield_ncol[0])
    data = m.hfield_data.reshape(nrow, ncol)
    dx, dy = 2 * s0 / (ncol - 1), 2 * s1 / (nrow - 1)

    def vert(r, c):
        return np.array([dx * c - s0, dy * r - s1, float(data[r, c]) * s2])

    def normals(P):
        out = []
        for a, b, c in itertools.combinations(range(len(P)), 3):
            n = np.cross(P[b] - P[a], P[c] - P[a])
            if np.linalg.norm(n) < 1e-12:
                continue
            n = n / np.linalg.norm(n)
            h = P @ n - P[a] @ n
            if np.all(h <= 1e-12):
                out.append(n)
            elif np.all(h >= -1e-12):
                out.append(-n)
        return out

    def edges(P):
        return [P[b] - P[a] for a, b in itertools.combinations(range(len(P)), 2)]

    def penetration(A, B):
        axes = normals(A) + normals(B)
        for e1 in edges(A):
            for e2 in edges(B):
                n = np.cross(e1, e2)
                if np.linalg.norm(n) > 1e-9:
                    axes.append(n / np.linalg.norm(n))
        best, bn = np.inf, None
        for n in axes:
            for nn in (n, -n):
                overlap = (A @ nn).max() - (B @ nn).min()
                if overlap < best:
                    best, bn = overlap, nn
        return best, bn

    out = []
    lo, hi = bx.min(axis=0), bx.max(axis=0)
    cmin = max(int(np.floor((lo[0] + s0) / (2 * s0) * (ncol - 1))), 0)
    cmax = min(int(np.ceil((hi[0] + s0) / (2 * s0) * (ncol - 1))), ncol - 1)
    rmin = max(int(np.floor((lo[1] + s1) / (2 * s1) * (nrow - 1))), 0)
    rmax = min(int(np.ceil((hi[1] + s1) / (2 * s1) * (nrow - 1))), nrow - 1)
    for r in range(rmin, rmax):
        for c in range(cmin + 1, cmax + 1):
            corners4 = [vert(r + 1, c - 1), vert(r, c - 1), vert(r + 1, c), vert(r, c)]
            for t in range(2):
                top = np.array(corners4[t : t + 3])
                bot = top.copy()
                bot[:, 2] = -s3
                depth, n = penetration(np.vstack([bot, top]), bx)
                if depth > 0:
                    out.append([2 * (r * (ncol - 1) + c - 1) + t, float(depth), lst(R @ n)])
    return out


def max_per_pair(cons):
    count = {}
    for c in cons:
        k = tuple(c["geom"])
        count[k] = count.get(k, 0) + 1
    return max(count.values()) if count else 0


def bumps():
    m = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "hfield_bumps.xml"))
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    d = mujoco.MjData(m)
    rng = np.random.default_rng(36)
    bodies = ["ball", "pill", "brick"]
    states = []

    def park_others(qpos, keep):
        # The other bodies far above the field (no contacts).
        for k, b in enumerate(bodies):
            if b != keep:
                a = m.jnt_qposadr[m.body(b).jntadr[0]]
                qpos[a : a + 3] = [3.0 + k, 3.0, 2.0]

    def state(kind, b, cons):
        st = {"kind": kind, "body": b, "qpos": lst(d.qpos), "contacts": cons}
        if b == "brick":
            st["exact"] = box_prisms_exact(m, d, m.geom("brick").id)
        return st

    for b in bodies:
        jnt = m.body(b).jntadr[0]
        qa, va = m.jnt_qposadr[jnt], m.jnt_dofadr[jnt]
        # Resting: dropped from a few centimetres at several places.
        for trial in range(6):
            mujoco.mj_resetData(m, d)
            park_others(d.qpos, b)
            x, y = rng.uniform(-0.6, 0.6, 2)
            q = rng.normal(size=4)
            d.qpos[qa : qa + 3] = [x, y, 0.35]
            d.qpos[qa + 3 : qa + 7] = q / np.linalg.norm(q)
            while d.time < 1.5:
                mujoco.mj_step(m, d)
                park_others(d.qpos, b)
                d.qvel[:] = np.where(np.arange(m.nv) // 6 == va // 6, d.qvel, 0.0)
            mujoco.mj_forward(m, d)
            cons = contacts(m, d)
            if cons and max_per_pair(cons) <= 8:
                states.append(state("resting", b, cons))
        # Sliding: started on the field with a horizontal velocity.
        for trial in range(2):
            mujoco.mj_resetData(m, d)
            park_others(d.qpos, b)
            x, y = rng.uniform(-0.4, 0.4, 2)
            d.qpos[qa : qa + 3] = [x, y, 0.3]
            while d.time < 0.8:
                mujoco.mj_step(m, d)
                park_others(d.qpos, b)
            ang = rng.uniform(0, 2 * np.pi)
            d.qvel[va : va + 3] = [np.cos(ang), np.sin(ang), 0.0]
            t0 = d.time
            nxt = t0 + 0.05
            while d.time < t0 + 0.4:
                mujoco.mj_step(m, d)
                park_others(d.qpos, b)
                if d.time >= nxt - 1e-9:
                    nxt += 0.05
                    mujoco.mj_forward(m, d)
                    cons = contacts(m, d)
                    if cons and max_per_pair(cons) <= 8:
                        states.append(state("sliding", b, cons))
    return {"source": "tests/models/features/hfield_bumps.xml", "mujoco_version": mujoco.__version__, "states": states}


def roll():
    m = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "hfield_slope.xml"))
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.timestep = 1e-4
    d = mujoco.MjData(m)
    samples = []
    step = 0
    while True:
        if step % 500 == 0:
            samples.append({"time": float(d.time), "qpos": lst(d.qpos), "qvel": lst(d.qvel)})
        if step >= 10000:
            break
        mujoco.mj_step(m, d)
        step += 1
    return {
        "source": "tests/models/features/hfield_slope.xml",
        "mujoco_version": mujoco.__version__,
        "integrator": "RK4",
        "timestep": 1e-4,
        "samples": samples,
    }


def png_grey16(path, rows):
    """Writes a 16-bit greyscale PNG (rows top to bottom)."""
    h, w = len(rows), len(rows[0])
    raw = b"".join(b"\x00" + b"".join(struct.pack(">H", v) for v in r) for r in rows)

    def chunk(t, data):
        c = struct.pack(">I", len(data)) + t + data
        return c + struct.pack(">I", zlib.crc32(t + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 0, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw)))
        f.write(chunk(b"IEND", b""))


def png_rgb8(path, rows):
    """Writes an 8-bit RGB PNG (rows of (r, g, b), top to bottom)."""
    h, w = len(rows), len(rows[0])
    raw = b"".join(b"\x00" + b"".join(bytes(p) for p in r) for r in rows)

    def chunk(t, data):
        c = struct.pack(">I", len(data)) + t + data
        return c + struct.pack(">I", zlib.crc32(t + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw)))
        f.write(chunk(b"IEND", b""))


def files():
    folder = os.path.join(MODELS, "hfield")
    os.makedirs(folder, exist_ok=True)
    # 16-bit grey PNG, 5 × 7, with a gradient and a bump.
    grey = [[(r * 7 + c) * 900 + (20000 if (r, c) == (1, 4) else 0) for c in range(7)] for r in range(5)]
    png_grey16(os.path.join(folder, "grey16.png"), grey)
    # 8-bit RGB PNG, 4 × 3 (MuJoCo reads the red channel).
    rgb = [[(10 * r + 40 * c, 255 - 10 * c, 7) for c in range(3)] for r in range(4)]
    png_rgb8(os.path.join(folder, "rgb8.png"), rgb)
    # MuJoCo's binary format, 3 rows × 4 columns, row 0 first.
    data = np.array([[0.0, 0.5, 1.5, 2.0], [1.0, -1.0, 0.25, 3.0], [2.5, 0.0, 0.75, 1.25]], dtype=np.float32)
    with open(os.path.join(folder, "field.bin"), "wb") as f:
        f.write(struct.pack("<ii", 3, 4))
        f.write(data.tobytes())
    m = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "hfield_files.xml"))
    fields = []
    for h in range(m.nhfield):
        n = m.hfield_nrow[h] * m.hfield_ncol[h]
        a = m.hfield_adr[h]
        fields.append(
            {
                "name": m.hfield(h).name,
                "nrow": int(m.hfield_nrow[h]),
                "ncol": int(m.hfield_ncol[h]),
                "size": lst(m.hfield_size[h]),
                "data": lst(m.hfield_data[a : a + n]),
            }
        )
    return {"source": "tests/models/features/hfield_files.xml", "mujoco_version": mujoco.__version__, "fields": fields}


def write(name, rec):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")


def main():
    write("hfield_data", files())
    b = bumps()
    print("hfield states:", len(b["states"]), "contacts:", sum(len(s["contacts"]) for s in b["states"]))
    write("hfield_contacts", b)
    write("hfield_roll", roll())


if __name__ in ("__main__", "hfield_fixtures"):
    main()
