#!/usr/bin/env bash
# A small request's cost through tandemd over the Unix socket and through shared-memory rings, side
# by side (bench/ring_cost.c): one tandemd, CLIENTS clients sending single-pose queries one after
# another, rounds alternated. Prints a Markdown report (the command, the host, the table) and writes
# it to REPORT.md.
#
#   bench/run_ring.sh [REPORT.md]        (default bench/results/ring_cost.md)
#
# Knobs: BUILD_DIR=build (bench/bench_ring_cost and daemon/tandemd; or BENCH=..., TANDEMD=...),
# CLIENTS=4, SECONDS_A_ROUND=3, ROUNDS=3, ENGINE=cpu, TANDEMD_ARGS= (more tandemd flags, e.g.
# "--loop-spin-us 200" as with a GPU engine), IDLE_RINGS=0 (more connections that open 64 KiB rings and
# stay idle beside the measured clients).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
out_file=${1:-bench/results/ring_cost.md}
BUILD_DIR=${BUILD_DIR:-build}
bench=${BENCH:-$BUILD_DIR/bench/bench_ring_cost}
tandemd=${TANDEMD:-$BUILD_DIR/daemon/tandemd}
CLIENTS=${CLIENTS:-4} SECONDS_A_ROUND=${SECONDS_A_ROUND:-3} ROUNDS=${ROUNDS:-3} ENGINE=${ENGINE:-cpu}
TANDEMD_ARGS=${TANDEMD_ARGS:-} IDLE_RINGS=${IDLE_RINGS:-0}
for f in "$bench" "$tandemd"; do [[ -x $f ]] || { echo "run_ring.sh: $f not found: build first" >&2; exit 1; }; done
work=$(mktemp -d)
pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
read -r -a more <<< "$TANDEMD_ARGS"
sock=$work/tandemd.sock
"$tandemd" --listen "unix:$sock" --data-dir "$work/data" --engine "$ENGINE" "${more[@]}" --log-level warn \
    2> "$work/tandemd.log" &
pid=$!
wait_listening run_ring.sh "$sock" "$pid" "$work/tandemd.log"
table=$("$bench" --server "unix:$sock" --tandemd-pid "$pid" --clients "$CLIENTS" --seconds "$SECONDS_A_ROUND" \
    --rounds "$ROUNDS" --idle-rings "$IDLE_RINGS")
{
    echo "# A small request through tandemd: the Unix socket against shared-memory rings"
    echo
    echo "Command: \`$(printf '%q ' env BUILD_DIR="$BUILD_DIR" CLIENTS="$CLIENTS" SECONDS_A_ROUND="$SECONDS_A_ROUND" \
        ROUNDS="$ROUNDS" ENGINE="$ENGINE" ${TANDEMD_ARGS:+TANDEMD_ARGS="$TANDEMD_ARGS"} IDLE_RINGS="$IDLE_RINGS" bench/run_ring.sh "$out_file")\`"
    echo
    echo "- Host: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo "- tandemd \`--engine $ENGINE${TANDEMD_ARGS:+ $TANDEMD_ARGS}\`; $CLIENTS clients, each a connection sending one single-pose bool query after another (two boxes, answers checked); $SECONDS_A_ROUND s a round, the transports alternated."
    echo "- CPU a request: tandemd's (all its threads, /proc) and the clients' (this process) CPU time over the round, over the requests answered."
    echo
    echo "$table"
} | tee "$out_file"
