#!/usr/bin/env python3
"""MuJoCo render fixtures for `cenic::render` (tests/render_mujoco.rs).

Run from the repository root (the JSON it writes is committed; CI also runs it, see `--out`):

    MUJOCO_GL=osmesa /work/venv/bin/python scripts/render_fixtures.py   # mujoco 4.0, gymnasium 1.x

(`MUJOCO_GL=egl` works too; osmesa needs Debian's libosmesa6.)

For each of the seven gymnasium v5 MuJoCo tasks the script makes gymnasium's own environment with
`render_mode="rgb_array"`, resets it (seed 0) and renders once, which places gymnasium's default
camera (a free camera: look-at point the median of the geom positions at that state, distance,
azimuth and elevation from the task's `default_camera_config`, else the model's extent and MuJoCo's
90 / -45 degrees); the camera is read back from gymnasium's viewer. Then it takes 20 seeded random
actions and renders that state with MuJoCo's own renderer (`mujoco.Renderer`, same camera, sites
hidden, reflections off) twice: a segmentation pass (which geom each pixel sees, mapped to its body)
and a depth pass (metric depth along the viewing axis). It records the state, the camera, the
model's extent and centre (`stat`), the clipping distances, the body mask run-length encoded, and
the depth on every DEPTH_STEP-th pixel of every DEPTH_STEP-th row.

Writes `tests/fixtures/render_mujoco.json`, or the file given by `--out PATH` (python/tests/test_render.py
renders fresh fixtures that way in the test run and checks cenic's frames against them).
"""

import json
import os
import sys

import gymnasium
import mujoco
import numpy as np

W, H = 160, 120
DEPTH_STEP = 4
STEPS = 20
TASKS = [
    "Ant-v5",
    "HalfCheetah-v5",
    "Humanoid-v5",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
    "Reacher-v5",
    "Pusher-v5",
]


def rle(values):
    """[[value, count], ...] of a flat int sequence."""
    out = []
    for v in values:
        v = int(v)
        if out and out[-1][0] == v:
            out[-1][1] += 1
        else:
            out.append([v, 1])
    return out


def main():
    os.environ.setdefault("MUJOCO_GL", "osmesa")
    fixtures = {"width": W, "height": H, "depth_step": DEPTH_STEP, "mujoco": mujoco.__version__, "tasks": []}
    for task in TASKS:
        env = gymnasium.make(task, render_mode="rgb_array", width=W, height=H)
        env.reset(seed=0)
        env.render()
        u = env.unwrapped
        cam = u.mujoco_renderer.viewer.cam
        camera = {
            "lookat": [float(x) for x in cam.lookat],
            "distance": float(cam.distance),
            "azimuth": float(cam.azimuth),
            "elevation": float(cam.elevation),
        }
        config = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in (u.mujoco_renderer.default_cam_config or {}).items()}
        env.action_space.seed(0)
        for _ in range(STEPS):
            env.step(env.action_space.sample())
        m, d = u.model, u.data
        mujoco.mj_forward(m, d)
        free = mujoco.MjvCamera()
        free.type = mujoco.mjtCamera.mjCAMERA_FREE
        free.lookat[:] = camera["lookat"]
        free.distance = camera["distance"]
        free.azimuth = camera["azimuth"]
        free.elevation = camera["elevation"]
        opt = mujoco.MjvOption()
        opt.sitegroup[:] = 0
        r = mujoco.Renderer(m, H, W)
        r.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        r.enable_segmentation_rendering()
        r.update_scene(d, camera=free, scene_option=opt)
        seg = r.render()
        r.disable_segmentation_rendering()
        r.enable_depth_rendering()
        r.update_scene(d, camera=free, scene_option=opt)
        depth = r.render()
        r.close()
        geom = seg[..., 0]
        is_geom = seg[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM)
        body = np.where(is_geom & (geom >= 0), m.geom_bodyid[np.clip(geom, 0, None)], -1)
        sub = depth[::DEPTH_STEP, ::DEPTH_STEP]
        extent = float(m.stat.extent)
        fixtures["tasks"].append(
            {
                "task": task,
                "default_camera_config": config,
                "camera": camera,
                "stat_extent": extent,
                "stat_center": [float(x) for x in m.stat.center],
                "znear": float(m.vis.map.znear) * extent,
                "zfar": float(m.vis.map.zfar) * extent,
                "fovy": float(m.vis.global_.fovy),
                "qpos": [float(x) for x in d.qpos],
                "geom_xpos_median": [float(np.median(d.geom_xpos[:, i])) for i in range(3)],
                "body_mask_rle": rle(body.reshape(-1)),
                "depth": [round(float(x), 6) for x in sub.reshape(-1)],
            }
        )
        env.close()
        print(task, "bodies seen:", sorted(set(body.reshape(-1).tolist())), "camera", camera, file=sys.stderr)
    path = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else os.path.join("tests", "fixtures", "render_mujoco.json")
    with open(path, "w") as f:
        json.dump(fixtures, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
