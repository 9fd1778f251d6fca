#!/usr/bin/env bash
# README's test command: the code gates (fmt, clippy, docs), the Rust test suite, then the Python
# package's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/lint.sh
cargo test --release
scripts/test_python.sh
