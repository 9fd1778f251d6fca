#!/usr/bin/env bash
# The real-GPU check of the GPU path, as one prepared run on an NVIDIA
# machine (see BENCHMARKS.md, "GPU batch", whose H200 rows name the
# commands). The machine has no Rust toolchain and no network, so the binaries
# are built here and travel in `.dev/` (ignored by git):
#
#   cargo build --release --example gpu_throughput --example rl_throughput
#   cargo test --release --no-run --test gpu_math --test gpu_batch --test gpu_parity_collision \
#       --test gpu_parity_dynamics --test gpu_parity_icf --test gpu_sensors \
#       --test gpu_structure --test rl_gpu --test gpu_active --test gpu_newton_counts
#   # strip each binary (the test ones without their -hash suffix) into a
#   # folder, tar cJf .dev/devbin.tar.xz of it (~13 MB: the tree may carry 64 MiB);
#   # copy ../shared/models and ../shared/scenes to .dev/shared/
#   # the Vulkan loader's .deb in .gl/ (the device tool's README)
#
# (BENCH=mpc also needs `cargo build --release --example mpc` and the test
# `mpc_gpu` in the archive)
# then, on the device: `bash scripts/device_gpu_check.sh` (modes: BENCH=suite (the default: the
# parity tests, then `gpu_throughput --suite`, the rows the GPU work is judged by; sized for an
# H100/H200 within DEADLINE, 540 s), BENCH=0|all|rl|ab|acc|wide|clutter|levels|tree|solver|mpc; TESTS="…"
# narrows the tests, TESTS=none skips them) with `.dev` and `.gl` carried.
#
# Dry run on this machine (lavapipe, no tar, no NVIDIA driver): LOCAL=1 BIN=target/release
# SUITE_SCALE=256 bash scripts/device_gpu_check.sh  (BIN: a folder with the test binaries without
# their hash suffix and the examples; SUITE_SCALE divides the suite's world counts). Every stage has its own time limit, so that a slow or
# broken stage costs its limit and the later ones still run; the logs go to
# $OUT. The tests' and examples' paths to fixtures and ../shared were baked
# in at build time under /work/main, so that path is made to point here.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
# At most 8 files come back from $OUT: the console, and the logs in one archive.
L=/tmp/device_logs
mkdir -p $L
exec > >(tee "$OUT/console.log") 2>&1
T0=$(date +%s)
# Everything ends by DEADLINE seconds after the start, whatever is left.
DEADLINE=${DEADLINE:-540}
stamp() { echo "=== [$(($(date +%s) - T0)) s] $*"; }
finish() { # stamp the end, pack the logs, stop
    stamp done
    tar czf "$OUT/logs.tar.gz" -C $L .
    exit 0
}
# The time limit for a stage: its own, or what is left before the deadline.
limit() {
    local left=$((DEADLINE - ($(date +%s) - T0)))
    [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}

if [ -z "${LOCAL:-}" ]; then # LOCAL=1: a dry run on this machine
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    R=$PWD
    mkdir -p /work/shared
    [ "$R" = /work/main ] || [ -e /work/main ] || ln -s "$R" /work/main
    cp -r .dev/shared/* /work/shared/
fi
if [ -n "${BIN:-}" ]; then
    B=$BIN
else
    mkdir -p /tmp/bin && tar xJf .dev/devbin.tar.xz -C /tmp/bin
    B=/tmp/bin
fi
if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
fi
nproc

# Find the NVIDIA Vulkan driver: first as the loader sees it, then through
# the driver's own ICD file.
probe() { timeout 60 $B/gpu_throughput --gpu-only --scene cube --mode fixed --sizes 1 --horizon 0.01 --budget 5 2>&1 | head -5; }
stamp probe
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if ! probe | grep -qi nvidia && [ -e $ICD ]; then
    export VK_DRIVER_FILES=$ICD
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
    echo "loader found no NVIDIA adapter; VK_DRIVER_FILES=$VK_DRIVER_FILES"
fi
probe
[ -z "${LOCAL:-}" ] && export WGPU_ADAPTER_NAME=${WGPU_ADAPTER_NAME:-nvidia}
export CENIC_REQUIRE_GPU=1

# 1. Parity on the hardware adapter (the CPU f32 reference on the host).
stamp tests
# TESTS and BENCH=0 narrow a rerun: TESTS="gpu_math gpu_parity_collision" BENCH=0.
[ "${TESTS:-}" = none ] && TESTS=" "
for t in ${TESTS:-gpu_math gpu_parity_collision gpu_parity_dynamics gpu_parity_icf gpu_sensors gpu_structure rl_gpu gpu_batch gpu_active gpu_newton_counts}; do
    # The tests together end by 150 s.
    s=$(date +%s) l=$(limit 40)
    [ $((150 - (s - T0))) -lt "$l" ] && l=$((150 - (s - T0)))
    [ "$l" -lt 10 ] && { echo "$t: skipped, deadline"; continue; }
    timeout "$l" $B/$t --nocapture --test-threads 8 >"$L/test_$t.log" 2>&1
    rc=$?
    echo "$t: rc $rc, $(($(date +%s) - s)) s: $(grep -h 'test result' "$L/test_$t.log" | tail -1)"
    [ $rc = 0 ] || grep -h -A3 "panicked" "$L/test_$t.log" | head -24
    [ $t = gpu_math ] && grep -h "ulp" "$L/test_$t.log"
done

[ "${BENCH:-suite}" = 0 ] && finish

# 2. Throughput, GPU beside CpuBatch<f64> on all host cores.
G=$B/gpu_throughput
run() { # limit name args...
    local lim name=$2
    lim=$(limit "$1")
    shift 2
    [ "$lim" -lt 10 ] && { stamp "$name: skipped, deadline"; return; }
    stamp "$name: $*"
    timeout "$lim" "$G" "$@" >"$L/tp_$name.md" 2>"$L/tp_$name.err"
    echo "rc $?"
    cat "$L/tp_$name.md"
    tail -3 "$L/tp_$name.err"
}
# BENCH=suite (the default): every row of `gpu_throughput --suite` in one
# process (the humanoid, the ant, clutter20.xml, the cube toss up to
# 1 048 576 worlds, Ant-v5 and Humanoid-v5 at 16 384 envs; world-steps/s,
# realtime factor, contacts per world, Newton iterations per solve,
# launches per advance, GPU time per stage, device memory per world, beside
# CpuBatch<f64> on the host's threads), with what is left of the deadline.
if [ "${BENCH:-suite}" = suite ]; then
    lim=$(limit 480)
    stamp "suite (limit $lim s${SUITE_SCALE:+, SUITE_SCALE=$SUITE_SCALE})"
    SUITE_SCALE=${SUITE_SCALE:-1} timeout "$lim" "$G" --suite >"$L/suite.md" 2>"$L/suite.err"
    echo "rc $?"
    cat "$L/suite.md"
    tail -5 "$L/suite.err"
    finish
fi
# BENCH=levels: clutter20.xml's structured Newton factorization per column
# against the same by elimination levels (`--levels`, one thread per block
# of a level), same binary, alternating, fixed 2 ms and accuracy 1e-3.
if [ "${BENCH}" = levels ]; then
    for mode in fixed accuracy; do
        for lv in "" --levels "" --levels; do
            run 40 "clutter20_${mode}${lv:+_levels}" --gpu-only --scene clutter20 --mode $mode --advance 0.01 --horizon 0.02 --sizes 256,1024,4096 --budget 4 $lv
        done
    done
    finish
fi
# BENCH=tree: the robots' Newton factorization over the dof tree against
# the dense one (`--no-tree`), same binary, alternating, fixed 2 ms and
# accuracy 1e-3.
if [ "${BENCH}" = tree ]; then
    for s in humanoid ant; do
        for mode in fixed accuracy; do
            for t in "" --no-tree "" --no-tree; do
                run 30 "${s}_${mode}${t:+_dense}" --gpu-only --scene $s --mode $mode --sizes 8192 --budget 3 $t
            done
        done
    done
    finish
fi
# BENCH=ab: the line search without its evaluation at α = 0 (48f6ca3)
# against the binary before it (`gpu_throughput_before`, carried when built),
# and the largest cube batches with the bulk initial states.
if [ "${BENCH}" = ab ]; then
    for s in ant humanoid; do
        for bin in gpu_throughput_before gpu_throughput gpu_throughput_before gpu_throughput; do
            [ -x $B/$bin ] || continue
            G=$B/$bin run 20 ${s}_$bin --gpu-only --scene $s --mode fixed --advance 0.01 --horizon 0.05 --sizes 16384 --budget 3
        done
    done
    run 60 cube_large --gpu-only --scene cube --mode fixed --dt 1e-3 --advance 1e-2 --horizon 0.05 --settle 0.3 --sizes 262144,1048576 --budget 4
    finish
fi
# BENCH=rl: the RL rows with the time per environment step split by phase,
# and the automatic solver stage at 8192 worlds (its threshold).
if [ "${BENCH}" = rl ]; then
    stamp rl_throughput
    timeout "$(limit 120)" $B/rl_throughput --tasks Ant-v5,Humanoid-v5,HalfCheetah-v5 --backends gpu-fixed,cpu-fixed \
        --sizes 1024,4096,16384 --budget 2 --csv "$L/rl.csv" >"$L/rl.log" 2>&1
    echo "rc $?"
    tail -40 "$L/rl.log"
    run 20 cube_8192 --gpu-only --scene cube --mode fixed --dt 1e-3 --advance 1e-3 --horizon 0.03 --settle 0.3 --sizes 8192 --budget 3
    run 20 ant_8192 --gpu-only --scene ant --mode fixed --advance 0.01 --horizon 0.05 --sizes 8192 --budget 3
    run 20 ant_8192_serial --gpu-only --scene ant --mode fixed --advance 0.01 --horizon 0.05 --sizes 8192 --budget 3 --solver serial
    finish
fi
# BENCH=acc: the robots under error control (accuracy 1e-3, each world its
# own steps) beside the CPU batch, in contact, and the clutter's profile there.
if [ "${BENCH}" = acc ]; then
    run 90 humanoid_acc --scene humanoid --mode accuracy --advance 0.01 --horizon 0.1 --sizes 1024,4096,16384 --budget 6
    run 70 ant_acc_cpu --scene ant --mode accuracy --advance 0.01 --horizon 0.1 --sizes 1024,16384 --budget 6
    run 40 clutter_acc --scene clutter --mode accuracy --advance 0.01 --horizon 0.05 --sizes 256,1024 --budget 6
    run 30 humanoid_acc_profile --gpu-only --scene humanoid --mode accuracy --advance 0.01 --horizon 0.05 --sizes 4096 --profile
    finish
fi
# BENCH=clutter: the contact-rich clutter beside the CPU batch (the
# automatic solver stage), fixed steps and error control.
if [ "${BENCH}" = clutter ]; then
    run 60 clutter_fixed --scene clutter --mode fixed --horizon 0.02 --sizes 256,1024,4096 --budget 5
    run 40 clutter_acc --scene clutter --mode accuracy --advance 0.01 --horizon 0.02 --sizes 256 --budget 6
    finish
fi
# BENCH=wide: the wide cooperative stage (64 threads per world) against the
# cooperative one (16) where the dense solve dominates.
if [ "${BENCH}" = wide ]; then
    # A build with 128 threads per world in the wide stage, when carried.
    if [ -x $B/gpu_throughput_w128 ]; then
        for bin in gpu_throughput gpu_throughput_w128 gpu_throughput gpu_throughput_w128; do
            G=$B/$bin run 40 clutter_$bin --gpu-only --scene clutter --mode fixed --horizon 0.02 --sizes 256,1024,4096 --budget 4 --solver wide
        done
        G=$B/gpu_throughput_w128 run 40 clutter_acc_w128 --gpu-only --scene clutter --mode accuracy --advance 0.01 --horizon 0.02 --sizes 256 --budget 6 --solver wide
        finish
    fi
    for v in coop wide coop wide; do
        run 40 clutter_$v --gpu-only --scene clutter --mode fixed --horizon 0.02 --sizes 256,1024,4096 --budget 4 --solver $v
    done
    for v in coop wide; do
        run 50 clutter_acc_$v --gpu-only --scene clutter --mode accuracy --advance 0.01 --horizon 0.02 --sizes 256,1024 --budget 6 --solver $v
        run 30 humanoid_$v --gpu-only --scene humanoid --mode fixed --advance 0.01 --horizon 0.05 --sizes 1024,4096 --budget 3 --solver $v
        run 30 ant_$v --gpu-only --scene ant --mode fixed --advance 0.01 --horizon 0.05 --sizes 1024,4096 --budget 3 --solver $v
    done
    run 30 clutter_wide_profile --gpu-only --scene clutter --mode fixed --horizon 0.02 --sizes 1024 --profile --solver wide
    finish
fi
# BENCH=mpc: the MPC planners with their sampling rounds on the GPU
# (`sampling-gpu`, `hybrid-gpu`) on the pusher's 20 acceptance goals, 40 ms
# of wall time per 50 ms interval, beside predictive sampling on the
# host's threads at the same sample count (needs the `mpc` example in
# the archive; the shared models in .dev/shared).
if [ "${BENCH}" = mpc ]; then
    M=$B/mpc
    # MPC="planner:samples[:plan-dt] ..."
    for cfg in ${MPC:-sampling-gpu:1024 hybrid-gpu:1024 sampling:1024}; do
        IFS=: read -r planner samples pdt <<<"$cfg"
        extra=${pdt:+--plan-dt $pdt}
        lim=$(limit 150)
        [ "$lim" -lt 30 ] && { stamp "$cfg: skipped, deadline"; continue; }
        stamp "mpc $planner $samples samples $extra"
        timeout "$lim" $M --eval --task pusher --goals ${GOALS:-20} --planners $planner --samples $samples $extra \
            --budget-ms 40 --out $L/mpc_${planner}_$samples$pdt >"$L/mpc_${planner}_$samples$pdt.log" 2>&1
        echo "rc $?"
        grep -E "^GPU|FAIL|^\|" "$L/mpc_${planner}_$samples$pdt.log" | tail -12
    done
    finish
fi
# BENCH=solver: only the solver stage matrix (serial / cooperative, dense
# state in storage or private, by model size and world count), in contact.
if [ "${BENCH}" = solver ]; then
    for v in serial coop; do
        run 30 cube_$v --gpu-only --scene cube --mode fixed --dt 1e-3 --advance 1e-3 --horizon 0.03 --settle 0.3 --sizes 1024,4096,16384,65536 --budget 3 --solver $v
        run 30 ant_$v --gpu-only --scene ant --mode fixed --advance 0.01 --horizon 0.05 --sizes 1024,4096,16384,65536 --budget 3 --solver $v
        run 30 humanoid_$v --gpu-only --scene humanoid --mode fixed --advance 0.01 --horizon 0.05 --sizes 1024,4096,16384 --budget 3 --solver $v
    done
    run 20 ant_serial_storage --gpu-only --scene ant --mode fixed --advance 0.01 --horizon 0.05 --sizes 4096,65536 --budget 3 --solver serial --solver-state storage
    run 20 humanoid_coop_storage --gpu-only --scene humanoid --mode fixed --advance 0.01 --horizon 0.05 --sizes 1024,16384 --budget 3 --solver coop --solver-state storage
    run 30 ant_acc_coop --gpu-only --scene ant --mode accuracy --advance 0.01 --horizon 0.05 --sizes 1024,16384,65536 --budget 3 --solver coop
    finish
fi
# The cube toss is in flight until 0.25 s: --settle 0.3 measures impacts
# and sliding; the robots start on the floor by default (the ant standing
# after 1 s, the humanoid fallen after 2 s), so every row is measured in
# contact.
run 60 cube_fixed --scene cube --mode fixed --dt 1e-3 --advance 1e-3 --horizon 0.05 --settle 0.3 --sizes 1024,16384,65536 --budget 8
run 40 cube_fixed_10ms --gpu-only --scene cube --mode fixed --dt 1e-3 --advance 1e-2 --horizon 0.1 --settle 0.3 --sizes 65536,262144 --budget 8
run 50 ant_fixed --scene ant --mode fixed --advance 0.01 --horizon 0.1 --sizes 1024,16384,65536 --budget 8
run 50 cube_acc --scene cube --mode accuracy --advance 0.01 --horizon 0.2 --settle 0.3 --sizes 1024,16384,65536 --budget 8
run 40 humanoid_fixed --scene humanoid --mode fixed --advance 0.01 --horizon 0.1 --sizes 1024,4096,16384 --budget 8
# Per-launch GPU time (timestamp queries; separate runs, as the queries
# themselves take time).
run 30 clutter_profile --gpu-only --scene clutter --mode fixed --horizon 0.02 --sizes 256,1024 --profile
run 20 cube_profile --gpu-only --scene cube --mode fixed --dt 1e-3 --advance 1e-3 --horizon 0.05 --settle 0.3 --sizes 65536 --profile
run 20 ant_profile --gpu-only --scene ant --mode fixed --advance 0.01 --horizon 0.1 --sizes 16384 --profile
run 20 humanoid_profile --gpu-only --scene humanoid --mode fixed --advance 0.01 --horizon 0.1 --sizes 4096 --profile
# The cooperative solver stage on the ant (nv = 14, serial by the rule), in contact.
run 30 ant_coop --gpu-only --scene ant --mode fixed --advance 0.01 --horizon 0.1 --sizes 1024,16384 --budget 6 --solver coop
run 30 ant_acc --gpu-only --scene ant --mode accuracy --advance 0.01 --horizon 0.1 --sizes 1024,16384,65536 --budget 8
# 3. RL: VecEnv on the GPU batch (task on the device) beside the CPU batch.
stamp rl_throughput
timeout "$(limit 90)" $B/rl_throughput --tasks Ant-v5,Humanoid-v5,HalfCheetah-v5 --backends gpu-fixed,cpu-fixed --sizes 1024,4096,16384 \
    --budget 2 --csv "$L/rl.csv" >"$L/rl.log" 2>&1
echo "rc $?"
tail -25 "$L/rl.log"
finish
