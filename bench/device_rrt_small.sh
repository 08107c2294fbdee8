#!/usr/bin/env bash
# Issue 13's 64-planner row after pooling planners' requests as device configurations (the steps of
# bench/results/ompl_rrt_small.md, one device call): the GPU test suites of the new build, the
# device-run latency of small batches of configurations (block runs against the levels), the
# 64-planner RRTConnect run beside the previous build (bench/run_rrt_variants.sh), the whole OMPL
# benchmark (bench/run_ompl.sh, ENGINES=gpu) and, with PARTS naming verify, every MBM world's pooled device
# answers against the CPU engine (bench_config_latency --verify).
#
#   bench/device_rrt_small.sh BASE_PACK NEW_PACK PANDA OUTDIR
#
# BASE_PACK, NEW_PACK: bench/device_pack.sh folders (bin/, lib/; the base's bin/ may use the new
# one's lib/ when the libraries are the same). PANDA: panda.urdf, panda.srdf, problems.tar.bz2.
# BUILD_ABS: the absolute build path the tests were built in (they run tandem and tandemd from
# there; linked here to the new pack's). PARTS="tests latency rrt ompl" by default.
set -uo pipefail
cd "$(dirname "$0")/.."
base=$(cd "${1:?BASE_PACK}" && pwd) new=$(cd "${2:?NEW_PACK}" && pwd) panda=$(cd "${3:?PANDA}" && pwd) out=${4:?OUTDIR}
mkdir -p "$out"
export LD_LIBRARY_PATH=$new/lib
nvidia-smi -L
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xjf "$panda/problems.tar.bz2" -C "$work"
worlds=$(for s in "$work"/problems/*; do echo "$s/scene0001.yaml" "$s/scene0002.yaml"; done)
for part in ${PARTS:-tests latency rrt ompl}; do
    case $part in
    tests)
        if [[ -n ${BUILD_ABS:-} ]]; then
            mkdir -p "$BUILD_ABS/daemon" "$BUILD_ABS/tools"
            ln -sf "$new/bin/tandem" "$BUILD_ABS/tools/tandem"
            ln -sf "$new/bin/tandemd" "$BUILD_ABS/daemon/tandemd"
        fi
        for t in ${SUITES:-robot_scene robotd gpu scheduler}; do
            echo "## test_$t (exit code after)" >> "$out/tests.txt"
            timeout 250 "$new/bin/test_$t" --verbose >> "$out/tests.txt" 2>&1
            echo "## test_$t exit $?" >> "$out/tests.txt"
        done
        grep -E "Synthesis|^## test" "$out/tests.txt"
        ;;
    latency)
        L=("$new/bin/bench_config_latency" --urdf "$panda/panda.urdf" --srdf "$panda/panda.srdf" --threads 1 --repeat 1000)
        { echo "## 1 thread, block runs"; "${L[@]}" $worlds
          echo "## 1 thread, levels"; TDM_GPU_BLOCK_CONFIG_ENTRIES=0 "${L[@]}" $worlds; } 2>&1 | tee "$out/latency.md"
        ;;
    rrt)
        PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh "$base/bin" "$panda" gpu gpu:lanes5 2>&1 | tee "$out/rrt_base.txt"
        PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh "$new/bin" "$panda" gpu gpu:lanes5 2>&1 | tee "$out/rrt_new.txt"
        ;;
    ompl)
        PANDA=$panda OMPL_PLAN=$new/bin/ompl_plan TANDEMD=$new/bin/tandemd ENGINES=gpu SINGLE_PER_SCENARIO=3 \
            bash bench/run_ompl.sh "$out/ompl.md" > "$out/ompl.log" 2>&1
        echo "run_ompl exit $?"
        grep "^|" "$out/ompl.md"
        ;;
    verify)
        V=("$new/bin/bench_config_latency" --urdf "$panda/panda.urdf" --srdf "$panda/panda.srdf" --verify --repeat 300
           --shapes 1:1,4:2,8:8,8:32,16:64)
        { echo "## 1 thread"; "${V[@]}" --threads 1 "$work"/problems/*/scene*.yaml
          echo "## 4 threads, 4 lanes"; "${V[@]}" --threads 4 --lanes 4 "$work"/problems/*/scene*.yaml; } 2>&1 |
            tee "$out/verify.md"
        ;;
    *) echo "device_rrt_small.sh: PARTS are tests, latency, rrt, ompl, verify" >&2; exit 2 ;;
    esac
done
