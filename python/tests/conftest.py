"""Shared fixtures: the shared data folder and the `cenic` command-line binary."""

from __future__ import annotations

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def shared_dir() -> pathlib.Path | None:
    """`$CENIC_SHARED`, else `../shared` next to the repository (as the Rust tests)."""
    d = pathlib.Path(os.environ.get("CENIC_SHARED", REPO.parent / "shared"))
    return d if d.is_dir() else None


@pytest.fixture(scope="session")
def shared() -> pathlib.Path:
    d = shared_dir()
    if d is None:
        why = "shared data folder not found (set CENIC_SHARED to its path)"
        # `.ci/run` sets CENIC_REQUIRE_SHARED=1: there the models people use must be tested, not skipped.
        if os.environ.get("CENIC_REQUIRE_SHARED") == "1":
            pytest.fail(f"CENIC_REQUIRE_SHARED=1 but the {why}")
        pytest.skip(why)
    return d


@pytest.fixture(scope="session")
def gym_models(shared) -> pathlib.Path:
    return shared / "models" / "gymnasium"


@pytest.fixture(scope="session")
def cenic_bin() -> pathlib.Path:
    """The `cenic` binary: `$CENIC_BIN`, else target/release/cenic (built by `cargo test --release`)."""
    exe = pathlib.Path(os.environ.get("CENIC_BIN", REPO / "target" / "release" / "cenic"))
    if not exe.is_file():
        pytest.skip(f"{exe} not found: run `cargo build --release` first or set CENIC_BIN")
    return exe
