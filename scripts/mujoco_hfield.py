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
  at most 8 per pair).
- `hfield_roll.json`: the ball of `hfield_slope.xml` rolling down from rest: qpos and qvel every
  0.05 s for 1 s (RK4 at 0.1 ms).
- `hfield_files.json`: the normalised elevations MuJoCo compiles from the PNG and binary files of
  `tests/models/features/hfield_files.xml` (it writes those files first, from fixed data).
"""

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
                states.append({"kind": "resting", "body": b, "qpos": lst(d.qpos), "contacts": cons})
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
                        states.append({"kind": "sliding", "body": b, "qpos": lst(d.qpos), "contacts": cons})
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
    write("hfield_files", files())
    b = bumps()
    print("hfield states:", len(b["states"]), "contacts:", sum(len(s["contacts"]) for s in b["states"]))
    write("hfield_contacts", b)
    write("hfield_roll", roll())


if __name__ in ("__main__", "hfield_fixtures"):
    main()
