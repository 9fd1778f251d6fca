#!/usr/bin/env bash
# README's test command: the Rust test suite, then the Python package's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release
scripts/test_python.sh
