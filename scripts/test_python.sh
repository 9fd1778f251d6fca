#!/usr/bin/env bash
# Builds the Python package (python/, pyo3 + maturin) into a virtual
# environment and runs its pytest suite. Called by scripts/test_all.sh after
# `cargo test --release` (whose release artifacts, the `cenic` binary among
# them, the tests use).
#
#   CENIC_PY_VENV   the virtual environment (default: target/py-venv; created when missing)
#   PYTHON          the interpreter that creates it (default: python3)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
VENV="${CENIC_PY_VENV:-$ROOT/target/py-venv}"
if [ ! -x "$VENV/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$VENV" || {
        echo "error: cannot create a virtual environment with ${PYTHON:-python3} (install Python >= 3.9 with its venv module)" >&2
        exit 1
    }
fi
# maturin's build hook runs the `maturin` found on PATH.
export PATH="$VENV/bin:$PATH"
# ray: the cenic.ray tests (python/tests/test_ray.py start a two-CPU local cluster); moviepy and
# imageio-ffmpeg: the RecordVideo tests (python/tests/test_render.py write and read back videos);
# mujoco: gymnasium's own tasks, the reference of the sim-to-sim test (python/tests/test_gym.py).
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "maturin==1.16.0" "numpy>=1.21" "gymnasium>=1.0,<2" "pytest>=7" "ray>=2.10,<3" \
    "moviepy>=2,<3" "imageio-ffmpeg>=0.5" "mujoco==4.0.0"
# The extension shares the main crate's target directory (and release profile).
CARGO_TARGET_DIR="$ROOT/target" "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-build-isolation --force-reinstall --no-deps ./python
"$VENV/bin/python" -m pytest python/tests -q -p no:cacheprovider
