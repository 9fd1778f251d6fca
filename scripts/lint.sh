#!/usr/bin/env bash
# The code gates README's test command runs first: formatting, clippy on every target with warnings as
# errors, and API docs without warnings (broken intra-doc links included).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --check
cargo clippy --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps
