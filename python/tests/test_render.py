"""Render modes of the gymnasium environments (`cenic::render` through the
native `VecEnv.render`): frame shapes and dtypes, frames that follow the
state, one frame per environment of a vector environment, gymnasium's env
checker with its render check, `RecordVideo` (single and vector) writing
videos that read back with the right frame count, size and picture, frames
of a GPU environment (from its device buffers) equal to a CPU one's, and
clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import cenic
import cenic.gym


@pytest.fixture(autouse=True)
def _models(gym_models, monkeypatch):
    monkeypatch.setenv("CENIC_SHARED", str(gym_models.parents[1]))


def test_rgb_and_depth_frames_follow_the_state():
    env = cenic.make("Ant", render_mode="rgb_array", width=64, height=48)
    assert env.metadata["render_fps"] == round(1 / env.dt) == 20
    env.reset(seed=0)
    first = env.render()
    assert first.shape == (48, 64, 3) and first.dtype == np.uint8
    assert first.std() > 10, "a flat frame"
    for _ in range(10):
        env.step(env.action_space.sample())
    assert (env.render() != first).any(), "the frame did not change as the ant moved"

    depth = cenic.make("Ant", render_mode="depth_array", width=64, height=48)
    depth.reset(seed=0)
    d = depth.render()
    assert d.shape == (48, 64) and d.dtype == np.float32
    assert np.isfinite(d).all() and (d > 0).all()
    # gymnasium's Ant camera is 4 m from the torso: the nearest surface is closer than that.
    assert 1.0 < d.min() < 4.0


def test_vector_env_renders_one_frame_per_env():
    envs = cenic.make_vec("InvertedPendulum", 3, render_mode="rgb_array", width=32, height=24)
    envs.reset(seed=1)
    frames = envs.render()
    # A tuple of frames, as gymnasium's vector environments return them.
    assert isinstance(frames, tuple) and len(frames) == 3
    assert all(f.shape == (24, 32, 3) and f.dtype == np.uint8 for f in frames)
    # Each frame shows its own environment: tilting the pole of env 1 changes its frame only.
    qpos, qvel = envs.native.state()
    envs.native.reset_env_to(1, [qpos[1, 0], 0.6], qvel[1])
    after = envs.render()
    assert (after[0] == frames[0]).all() and (after[2] == frames[2]).all()
    assert (after[1] != frames[1]).sum() > 20, "env 1's frame did not show its tilted pole"
    envs = cenic.make_vec("InvertedPendulum", 2, render_mode="depth_array", width=32, height=24)
    envs.reset(seed=1)
    depth = envs.render()
    assert len(depth) == 2 and all(d.shape == (24, 32) and d.dtype == np.float32 for d in depth)


def test_gpu_env_frames_equal_cpu_env_frames():
    if cenic.gpu_available() is None:
        if os.environ.get("CENIC_REQUIRE_GPU") == "1":
            pytest.fail("CENIC_REQUIRE_GPU=1 but no GPU adapter")
        pytest.skip("no GPU adapter")
    out = {}
    for dev in ["cpu", "gpu"]:
        envs = cenic.make_vec("Ant", 2, device=dev, render_mode="rgb_array", width=64, height=64)
        envs.reset(seed=0)
        # The GPU environment renders from its device buffers (no pose read back).
        out[dev] = (np.stack(envs.render()), envs.native.state()[0])
    np.testing.assert_allclose(out["gpu"][1], out["cpu"][1], atol=1e-6)
    assert (out["gpu"][0] == out["cpu"][0]).all()


def test_cameras_by_id_name_and_config():
    env = cenic.make("HalfCheetah", render_mode="rgb_array", width=40, height=30, camera_name="track")
    env.reset(seed=0)
    assert env.render().shape == (30, 40, 3)
    near = cenic.make("HalfCheetah", render_mode="depth_array", width=40, height=30, default_camera_config={"distance": 2.0})
    far = cenic.make("HalfCheetah", render_mode="depth_array", width=40, height=30, default_camera_config={"distance": 6.0})
    near.reset(seed=0)
    far.reset(seed=0)
    assert near.render().min() < far.render().min()
    with pytest.raises(ValueError, match="no camera named 'nope'"):
        cenic.make("HalfCheetah", render_mode="rgb_array", camera_name="nope")
    with pytest.raises(ValueError, match="camera id 9 out of range"):
        cenic.make("HalfCheetah", render_mode="rgb_array", camera_id=9)
    with pytest.raises(ValueError, match="unknown camera setting 'zoom'"):
        cenic.make("HalfCheetah", render_mode="rgb_array", default_camera_config={"zoom": 2})
    with pytest.raises(ValueError, match="render_mode must be"):
        cenic.make("HalfCheetah", render_mode="rgb")


def test_human_needs_a_display(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(RuntimeError, match="needs a display"):
        cenic.make("Ant", render_mode="human")


@pytest.mark.parametrize("mode", ["rgb_array", "depth_array"])
def test_check_env_with_its_render_check(mode):
    cenic.gym.register_tasks()
    env = gymnasium.make("cenic/InvertedPendulum-v5", render_mode=mode, width=32, height=32)
    # Not skipped: renders this mode, then every declared mode through the spec.
    check_env(env.unwrapped, skip_render_check=False)


def _read_video(path):
    """(frames, height, width, 3) of a video, decoded by ffmpeg (imageio-ffmpeg)."""
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    w, h = meta["size"]
    frames = [np.frombuffer(f, dtype=np.uint8).reshape(h, w, 3) for f in reader]
    return np.stack(frames)


def test_record_video_writes_a_playable_video(tmp_path):
    cenic.gym.register_tasks()
    env = gymnasium.make("cenic/InvertedPendulum-v5", render_mode="rgb_array", width=64, height=48, max_episode_steps=15)
    env = gymnasium.wrappers.RecordVideo(env, str(tmp_path), episode_trigger=lambda e: e == 0, disable_logger=True)
    env.reset(seed=0)
    steps = 0
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(np.zeros(1, dtype=np.float32))
        steps += 1
        done = term or trunc
    env.close()
    videos = sorted(tmp_path.glob("*.mp4"))
    assert len(videos) == 1, list(tmp_path.iterdir())
    frames = _read_video(videos[0])
    # The reset frame and one per step, at the frame size.
    assert frames.shape[0] == steps + 1 and frames.shape[1:] == (48, 64, 3), frames.shape
    # The first decoded frame is the reset state's picture (up to the codec's loss).
    same = cenic.make("InvertedPendulum", render_mode="rgb_array", width=64, height=48)
    same.reset(seed=0)
    err = np.abs(frames[0].astype(float) - same.render().astype(float)).mean()
    assert err < 8, f"mean error {err} per channel between the video's first frame and the render"


def test_vector_record_video(tmp_path):
    envs = cenic.make_vec("InvertedPendulum", 2, render_mode="rgb_array", width=32, height=32)
    envs = gymnasium.wrappers.vector.RecordVideo(
        envs, str(tmp_path), step_trigger=lambda s: s == 0, video_length=8, disable_logger=True
    )
    envs.reset(seed=0)
    for _ in range(10):
        envs.step(np.zeros((2, 1), dtype=np.float32))
    envs.close()
    videos = sorted(tmp_path.glob("*.mp4"))
    assert len(videos) == 1, list(tmp_path.iterdir())
    frames = _read_video(videos[0])
    # The two environments side by side; gymnasium stops once it holds more than video_length frames.
    assert frames.shape == (9, 32, 64, 3), frames.shape


def _page_data(path):
    """The data a replay page carries (the JSON in <script id="cenic-data">)."""
    import json

    html = path.read_text()
    start = html.index('<script id="cenic-data" type="application/json">')
    start = html.index(">", start) + 1
    return json.loads(html[start : html.index("</script>", start)].replace("<\\/", "</"))


def test_write_replay_from_positions(tmp_path):
    model = cenic.Model.builtin("cube_toss")
    times = np.linspace(0.0, 1.0, 11)
    qpos = np.tile(model.qpos0, (2, 11, 1))
    qpos[1, :, 0] = np.linspace(0.0, 0.5, 11)  # world 1 slides 0.5 m along x
    page = tmp_path / "replay.html"
    cenic.write_replay(model, times, qpos, page, labels=["still", "sliding"], overlay=True, title="two cubes")
    data = _page_data(page)
    assert data["title"] == "two cubes" and data["layout"] == "overlay"
    assert [t["label"] for t in data["tracks"]] == ["still", "sliding"]
    nb = data["nbody"]
    # The cube's pose is its free joint's position (body 1 after the world body).
    poses = np.asarray(data["tracks"][1]["poses"]).reshape(11, nb, 7)
    np.testing.assert_allclose(poses[:, 1, 0], qpos[1, :, 0], atol=1e-6)
    np.testing.assert_allclose(data["tracks"][0]["times"], times)
    # One world: (samples, nq).
    cenic.write_replay(model, times, qpos[0], page)
    assert len(_page_data(page)["tracks"]) == 1
    with pytest.raises(ValueError, match="qpos: expected shape"):
        cenic.write_replay(model, times, qpos[:, :5], page)
    with pytest.raises(ValueError, match="labels: 1 names for 2 worlds"):
        cenic.write_replay(model, times, qpos, page, labels=["one"])
    with pytest.raises(ValueError, match="sample times decrease"):
        cenic.write_replay(model, times[::-1], qpos, page)


def test_frames_match_mujocos_renderer_rendered_now(tmp_path):
    """MuJoCo 4.0 renders the seven gymnasium tasks now (under osmesa, as
    ``scripts/render_fixtures.py --out`` does) and tests/render_mujoco.rs
    checks cenic's frames against those fresh frames (body masks IoU >= 0.95,
    depth within 1 %), not only against the committed fixtures. Needs
    Debian's libosmesa6 (.ci/run installs it) and the release test binaries
    that ``cargo test --release`` built; under CI=true a missing piece fails."""
    import shutil
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    ci = os.environ.get("CI", "").lower() in ("1", "true")
    out = tmp_path / "render_mujoco.json"
    env = dict(os.environ, MUJOCO_GL="osmesa", PYOPENGL_PLATFORM="osmesa")
    r = subprocess.run([sys.executable, "scripts/render_fixtures.py", "--out", str(out)], cwd=root, env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        if ci:
            pytest.fail(f"MuJoCo could not render under osmesa:\n{r.stderr[-2000:]}")
        pytest.skip(f"MuJoCo cannot render under osmesa here (install libosmesa6): {r.stderr[-300:]}")
    cargo = shutil.which("cargo")
    if cargo is None:
        if ci:
            pytest.fail("cargo not found")
        pytest.skip("cargo not found")
    t = subprocess.run([cargo, "test", "--release", "--test", "render_mujoco"], cwd=root,
                       env=dict(os.environ, CENIC_RENDER_FIXTURE=str(out)), capture_output=True, text=True,
                       timeout=1200)
    assert t.returncode == 0, t.stdout[-3000:] + t.stderr[-3000:]
    assert "test result: ok" in t.stdout and " 0 passed" not in t.stdout, t.stdout[-2000:]
