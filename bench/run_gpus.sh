#!/usr/bin/env bash
# tandemd's throughput on one GPU engine against several (issue 14, point 9): bench/run_server.sh once
# per device list (tandemd --gpu-devices LIST), same scene, poses and clients, and a Markdown table of
# queries/s with the ratio to the first list. With an argument, also writes the table to that file.
#
#   bench/run_gpus.sh [REPORT.md]
#
# Knobs from the environment:
#   DEVICE_LISTS  "0 0,0 all": one engine on GPU 0; two engines on GPU 0 (the multi-device path on one
#                 GPU: its cost, not a speed-up, since both share the GPU); every GPU of the host (on a
#                 two-GPU machine, the figure issue 14 asks for: >= 1.8x the first row). "0 0,1" on a
#                 two-GPU machine compares the same two explicitly.
#   SCENES        "demo" (a generated scene), or OMPL scene names read from $OMPL/canonical (OMPL:
#                 ../shared/scenes/ompl), e.g. "alpha-1.5 Apartment"
#   MODE (bool), N_POSES (100000), CLIENTS (64), BATCH (1024), INFLIGHT (4), DURATION (5 seconds per
#   row), THREADS ($(nproc)), ENGINE (auto), TANDEMD_ARGS (more tandemd flags, e.g. "--engine-lanes 2":
#   lanes are per GPU engine), BUILD_DIR (build), PACK (a folder made by bench/device_pack.sh: its
#   executables are run instead of BUILD_DIR's, on a machine without our libraries; the report then names
#   its PACK_INFO's commit), REPORTS (a folder: each row's bench/run_server.sh report is kept there as
#   SCENE_LIST.md, tandemd's stderr beside it as SCENE_LIST.err; with PROFILE_THREADS=1 in the environment, they hold tandemd's and the clients' CPU
#   by thread).
# Many clients with large batches in flight is the load where more GPUs can help: the pooler's threads
# (engine-lanes x GPU engines of them) each take a run and each run goes to the least busy engine.
set -euo pipefail
cd "$(dirname "$0")/.."
out_file=${1:-}
DEVICE_LISTS=${DEVICE_LISTS:-0 0,0 all}
SCENES=${SCENES:-demo}
MODE=${MODE:-bool}
N_POSES=${N_POSES:-100000}
CLIENTS=${CLIENTS:-64}
BATCH=${BATCH:-1024}
INFLIGHT=${INFLIGHT:-4}
DURATION=${DURATION:-5}
THREADS=${THREADS:-$(nproc)}
ENGINE=${ENGINE:-auto}
TANDEMD_ARGS=${TANDEMD_ARGS:-}
BUILD_DIR=${BUILD_DIR:-build}
PACK=${PACK:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

build=$BUILD_DIR
if [[ -n $PACK ]]; then
    [[ -z ${COMMIT:-} && -f $PACK/PACK_INFO ]] && COMMIT=$(sed -n 's/^commit=\([^ ]*\).*/\1/p' "$PACK/PACK_INFO")
    [[ -n ${COMMIT:-} ]] && export COMMIT
    # run_server.sh wants a build tree: wrappers that give each packed executable its libraries
    pack=$(cd "$PACK" && pwd)
    build=$work/tree
    for rel in tools/tandem daemon/tandemd bench/bench_server; do
        [[ -x $pack/bin/$(basename "$rel") ]] || { echo "run_gpus.sh: $PACK has no bin/$(basename "$rel")" >&2; exit 1; }
        mkdir -p "$build/$(dirname "$rel")"
        printf '#!/bin/sh\nLD_LIBRARY_PATH=%q${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\nexport LD_LIBRARY_PATH\nexec %q "$@"\n' \
            "$pack/lib" "$pack/bin/$(basename "$rel")" > "$build/$rel"
        chmod +x "$build/$rel"
    done
fi

rows=()
for scene in $SCENES; do
    base_qps=""
    for list in $DEVICE_LISTS; do
        echo "run_gpus.sh: $scene, --gpu-devices $list" >&2
        if ! BUILD_DIR=$build SCENE=$scene MODE=$MODE N_POSES=$N_POSES CLIENTS=$CLIENTS BATCHES=$BATCH \
            INFLIGHT=$INFLIGHT DURATION=$DURATION THREADS=$THREADS ENGINE=$ENGINE \
            TANDEMD_ARGS="--gpu-devices $list $TANDEMD_ARGS" bench/run_server.sh > "$work/report" 2> "$work/err"; then
            cat "$work/err" >&2
            rows+=("| $scene | $list | (failed) | | | | |")
            continue
        fi
        [[ -n ${REPORTS:-} ]] && mkdir -p "$REPORTS" && cp "$work/report" "$REPORTS/${scene}_${list//,/-}.md" &&
            cp "$work/err" "$REPORTS/${scene}_${list//,/-}.err"
        line=$(grep '^RESULT' "$work/err" | tail -1)
        f() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$line"; }
        qps=$(f qps)
        [[ -z $base_qps ]] && base_qps=$qps
        ratio=$(awk -v a="$qps" -v b="$base_qps" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
        engines=$(sed -n 's/^engine_detail=.*on CUDA devices\{0,1\} \([0-9, ]*[0-9]\).*/\1/p' "$work/report" | head -1)
        rows+=("| $scene | $list | ${engines:-none (CPU engine)} | $qps | $ratio | $(f p50_us) | $(f p99_us) |")
        echo "${rows[-1]}" >&2
    done
done

gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | paste -sd, - || true)
report() {
    echo "# tandemd on one GPU engine and on several (--gpu-devices)"
    echo
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), nproc $(nproc); GPUs: ${gpus:-none}"
    echo "- Code: commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    echo "- Command: \`DEVICE_LISTS=\"$DEVICE_LISTS\" SCENES=\"$SCENES\" MODE=$MODE N_POSES=$N_POSES CLIENTS=$CLIENTS BATCH=$BATCH INFLIGHT=$INFLIGHT DURATION=$DURATION THREADS=$THREADS ENGINE=$ENGINE${TANDEMD_ARGS:+ TANDEMD_ARGS=\"$TANDEMD_ARGS\"} bench/run_gpus.sh${out_file:+ $out_file}\`"
    echo "- Each row: bench/run_server.sh with tandemd --gpu-devices LIST, $CLIENTS clients each keeping $INFLIGHT"
    echo "  requests of $BATCH poses in flight for $DURATION s; ratio: to the scene's first row."
    echo
    echo "| scene | --gpu-devices | engines on CUDA devices | queries/s | ratio | p50 latency (µs) | p99 latency (µs) |"
    echo "|:--|:--|:--|--:|--:|--:|--:|"
    printf '%s\n' "${rows[@]}"
}
if [[ -n $out_file ]]; then report | tee "$out_file"; else report; fi
