#!/usr/bin/env bash
# Instruction count (valgrind callgrind, millions) of one contact_profile run:
#   scripts/callgrind_count.sh --mode 1e-2 --horizon 1 [--scene cube_toss]
# Prints the run's own summary line and the total instructions. Robust to the
# load of a shared machine, unlike wall time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp)
line=$(valgrind --tool=callgrind --callgrind-out-file="$out" "$root/target/release/examples/contact_profile" "$@" 2>"$out.err")
ir=$(grep -o "refs: *[0-9,]*" "$out.err" | tr -d ', ' | cut -d: -f2)
rm -f "$out" "$out.err"
echo "$line"
echo "instructions: $((ir / 1000000)) M"
