"""The Python batch and the `cenic run` command line produce the same trajectory."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import cenic


def quat_rotate(q, v):
    """Rotates v by the unit quaternion q = (w, x, y, z) (rows)."""
    w, u = q[:, :1], q[:, 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def run_cli(cenic_bin, tmp_path, args):
    out = tmp_path / "traj.csv"
    subprocess.run([str(cenic_bin), "run", *args, "--out", str(out)], check=True, capture_output=True, text=True)
    data = np.genfromtxt(out, delimiter=",", names=True, dtype=None, encoding="utf-8")
    return data


@pytest.mark.parametrize(
    "mode,cli_args",
    [({"accuracy": 1e-3}, ["--accuracy", "1e-3"]), ({"dt": 2e-3}, ["--dt", "2e-3"])],
)
def test_cube_toss_matches_cli(cenic_bin, tmp_path, mode, cli_args):
    # `cenic run` with no model: the built-in cube toss from keyframe "toss", 2 worlds.
    rows = run_cli(cenic_bin, tmp_path, ["--time", "0.6", "--sample-dt", "0.02", "--worlds", "2", *cli_args])
    b = cenic.Batch(cenic.Model.builtin("cube_toss"), 2, **mode)
    b.reset(keyframe="toss")
    samples = [(b.time, b.qpos, b.qvel)]
    for _ in range(30):
        b.advance(0.6 / 30)  # the CLI's sample interval: time / samples
        samples.append((b.time, b.qpos, b.qvel))
    assert len(rows) == 31 * 2
    t = np.array([s[0] for s in samples]).reshape(-1)
    q = np.array([s[1] for s in samples]).reshape(-1, 7)
    v = np.array([s[2] for s in samples]).reshape(-1, 6)
    # Same simulator, same steps: equal to the printed precision (shortest round-trip decimals).
    np.testing.assert_array_equal(rows["t"], t)
    np.testing.assert_array_equal(rows["world"], np.tile([0, 1], 31))
    pos = np.stack([rows["px"], rows["py"], rows["pz"]], 1)
    quat = np.stack([rows["qw"], rows["qx"], rows["qy"], rows["qz"]], 1)
    np.testing.assert_array_equal(pos, q[:, :3])
    # Orientation: the body's, from forward kinematics of the joint's quaternion (equal up to 1 ulp).
    np.testing.assert_allclose(quat, q[:, 3:], rtol=0, atol=4e-16)
    np.testing.assert_array_equal(np.stack([rows["vx"], rows["vy"], rows["vz"]], 1), v[:, :3])
    # The CSV's angular velocity is in the world frame; qvel's in the body frame.
    omega = np.stack([rows["wx"], rows["wy"], rows["wz"]], 1)
    np.testing.assert_allclose(omega, quat_rotate(q[:, 3:], v[:, 3:]), atol=1e-12)
    assert q[-1, 2] < 0.1  # it landed


def test_mjcf_model_matches_cli(cenic_bin, tmp_path, shared):
    path = shared / "scenes" / "cube_toss.xml"
    rows = run_cli(cenic_bin, tmp_path, [str(path), "--key", "toss", "--time", "0.3", "--sample-dt", "0.05", "--f32"])
    b = cenic.Batch(cenic.Model.from_mjcf(path), 1, accuracy=1e-3, precision="f32")
    b.reset(keyframe="toss")
    for _ in range(6):
        b.advance(0.05)
    last = rows[-1]
    np.testing.assert_array_equal([last["px"], last["py"], last["pz"]], b.qpos[0, :3])
    assert last["t"] == b.time[0]
