"""GPU adapter selection from Python: `device="gpu:N"` / `"gpu:NAME"`,
`cenic.adapters()`, and the environment variables of torchrun and Ray
(`LOCAL_RANK`, `CUDA_VISIBLE_DEVICES`). The rule itself is unit-tested in
Rust over made-up adapter lists (src/gpu/adapters.rs); here it meets the
adapters of this machine."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import cenic


@pytest.fixture(scope="module")
def adapters():
    if cenic.gpu_available() is None:
        if os.environ.get("CENIC_REQUIRE_GPU") == "1":
            pytest.fail("CENIC_REQUIRE_GPU=1 but no GPU adapter")
        pytest.skip("no GPU adapter")
    return cenic.adapters()


def test_device_strings_are_checked_before_any_gpu_work():
    cube = cenic.Model.builtin("cube_toss")
    for bad in ["cuda:0", "gpu:", "gpu:-1", "GPU"]:
        with pytest.raises(ValueError, match="gpu:N"):
            cenic.Batch(cube, 1, device=bad)


def test_adapters_list_and_index_and_name(adapters):
    assert adapters and sum(a["selected"] for a in adapters) == 1
    first = adapters[0]
    assert first["device"] == "gpu:0" and first["name"]
    cube = cenic.Model.builtin("cube_toss")
    b = cenic.Batch(cube, 1, dt=1e-3, device="gpu:0")
    assert b.device == "gpu"
    # Part of the name, any case.
    word = first["name"].split()[0].upper()
    assert cenic.gpu_available(f"gpu:{word}").startswith(first["name"])
    n = sum(a["device"] is not None for a in adapters)
    with pytest.raises(cenic.GpuError, match=f"sees {n} GPUs"):
        cenic.Batch(cube, 1, device=f"gpu:{n}")
    with pytest.raises(cenic.GpuError, match="matches none of the adapters"):
        cenic.Batch(cube, 1, device="gpu:no-such-adapter-3f9a")


def test_rank_and_visible_devices_in_a_child_process(adapters):
    # A torchrun-style child: LOCAL_RANK picks visible GPU LOCAL_RANK mod count.
    hardware = [a for a in adapters if a["device_type"] != "Cpu"]
    code = "import cenic; print([a['name'] for a in cenic.adapters() if a['selected']][0])"
    for rank in range(2):
        env = dict(os.environ, LOCAL_RANK=str(rank))
        env.pop("CUDA_VISIBLE_DEVICES", None)
        env.pop("WGPU_ADAPTER_NAME", None)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        visible = [a for a in adapters if a["device"] is not None] if hardware else adapters
        assert out.stdout.strip() == visible[rank % len(visible)]["name"]
    # On a machine without hardware GPUs (lavapipe), CUDA_VISIBLE_DEVICES hides nothing.
    if not hardware:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", LOCAL_RANK="0")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == adapters[0]["name"]
    else:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
        out = subprocess.run([sys.executable, "-c", "import cenic; cenic.adapters()"], env=env, capture_output=True,
                             text=True)
        assert "empty" in out.stderr or out.returncode == 0
