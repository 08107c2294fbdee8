#!/usr/bin/env bash
# Issue 13, point 10 (a) and (b) through tandemd: the Panda in one scene per MotionBenchMaker scenario,
# CLIENTS clients over loopback TCP, each keeping INFLIGHT requests of BATCH configurations in flight
# (bench_robot_server), every answer compared with `tandem check --urdf`'s; then motions: CLIENTS
# clients each sending requests of MBATCH motions at resolution R (answers compared with `tandem
# motions`). Prints a Markdown table; with REPORT, also writes it there.
#
#   bench/run_robot_server.sh BIN PANDA CONFIGS [REPORT.md]
#     BIN: tandem, tandemd and bench_robot_server (a build's executables copied together or a pack's bin/)
#     PANDA, CONFIGS: as bench/run_robot_configs.sh
#   env: ENGINE (auto: tandemd --engine), THREADS ($(nproc)), CLIENTS (64), BATCH (1024), INFLIGHT (2),
#        DURATION (3 s a row), MODES ("bool contacts"), SCENE (0001), SCENARIOS (every problems/*_panda),
#        MOTIONS (2000: motions, consecutive pairs of configurations), R (0.05), MBATCH (64),
#        TANDEMD_ARGS (more tandemd flags, e.g. "--max-batch-tasks 1048576")
set -euo pipefail
if [[ $# -lt 3 ]]; then
    echo "usage: bench/run_robot_server.sh BIN PANDA CONFIGS [REPORT.md]" >&2
    exit 2
fi
BIN=$1 PANDA=$2 CONFIGS=$3 REPORT=${4:-}
ENGINE=${ENGINE:-auto}
THREADS=${THREADS:-$(nproc)}
CLIENTS=${CLIENTS:-64}
BATCH=${BATCH:-1024}
INFLIGHT=${INFLIGHT:-2}
DURATION=${DURATION:-3}
MODES=${MODES:-bool contacts}
SCENE=${SCENE:-0001}
MOTIONS=${MOTIONS:-2000}
R=${R:-0.05}
MBATCH=${MBATCH:-64}
TANDEMD_ARGS=${TANDEMD_ARGS:-}
scenarios=${SCENARIOS:-$(cd "$PANDA/problems" && ls -d *_panda)}
work=$(mktemp -d)
pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

port=$((7600 + RANDOM % 1000))
addr=127.0.0.1:$port
"$BIN/tandemd" --listen "$addr" --data-dir "$work/data" --threads "$THREADS" --engine "$ENGINE" --log-level warn $TANDEMD_ARGS &
pid=$!
for _ in $(seq 200); do
    "$BIN/tandem" stats --server "$addr" > /dev/null 2>&1 && break
    sleep 0.1
done
head -n $((2 * MOTIONS)) "$CONFIGS" | paste -d' ' - - > "$work/motions.txt"

{
echo "# The Panda through tandemd: configurations and motions per second"
echo
echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
command -v nvidia-smi > /dev/null && echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
echo "- Command: \`${TANDEMD_ARGS:+TANDEMD_ARGS=\"$TANDEMD_ARGS\" }ENGINE=$ENGINE THREADS=$THREADS CLIENTS=$CLIENTS BATCH=$BATCH INFLIGHT=$INFLIGHT DURATION=$DURATION MODES=\"$MODES\" SCENE=$SCENE MOTIONS=$MOTIONS R=$R MBATCH=$MBATCH bench/run_robot_server.sh BIN PANDA CONFIGS\`"
echo "- tandemd --engine $ENGINE --threads $THREADS $TANDEMD_ARGS over loopback TCP; configurations: $CLIENTS clients x $INFLIGHT requests of $BATCH in flight for $DURATION s;"
echo "  motions: $CLIENTS clients, one request of $MBATCH motions at a time (motion i: configurations 2i and 2i+1 of CONFIGS, resolution $R rad)."
echo "- mismatches: answers that differ from \`tandem check --urdf\` (colliding or not) or \`tandem motions\` (first colliding state) on the same input."
echo
echo "| scenario | what | per second | p50 ms | p99 ms | mismatches |"
echo "|---|---|--:|--:|--:|--:|"
} > "$work/report.md"
cat "$work/report.md"

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$2"; }
row() { # scenario what RESULT-line
    local line
    line=$(awk -v sc="$1" -v w="$2" -v ps="$(field per_s "$3")" -v p50="$(field p50_us "$3")" -v p99="$(field p99_us "$3")" \
        -v mm="$(field mismatches "$3")" 'BEGIN { printf "| %s | %s | %.0f | %.1f | %.1f | %s |\n", sc, w, ps, p50 / 1e3, p99 / 1e3, mm }')
    echo "$line"
    echo "$line" >> "$work/report.md"
}
for sc in $scenarios; do
    world=$PANDA/problems/$sc/scene$SCENE.yaml
    robot=(--urdf "$PANDA/panda.urdf" --srdf "$PANDA/panda.srdf" --world "$world")
    for mode in $MODES; do
        "$BIN/tandem" check "${robot[@]}" --configs "$CONFIGS" --mode "$mode" --out "$work/ref.txt" > /dev/null
        res=$("$BIN/bench_robot_server" --server "$addr" "${robot[@]}" --configs "$CONFIGS" --mode "$mode" \
              --reference "$work/ref.txt" --clients "$CLIENTS" --batch "$BATCH" --inflight "$INFLIGHT" \
              --seconds "$DURATION" | grep '^RESULT' || true)
        row "$sc" "configurations, $mode" "$res"
    done
    "$BIN/tandem" motions "${robot[@]}" --motions "$work/motions.txt" --resolution "$R" --out "$work/mref.txt" > /dev/null
    res=$("$BIN/bench_robot_server" --server "$addr" "${robot[@]}" --motions "$work/motions.txt" --resolution "$R" \
          --reference "$work/mref.txt" --clients "$CLIENTS" --batch "$MBATCH" --seconds "$DURATION" | grep '^RESULT' || true)
    row "$sc" "motions (R = $R)" "$res"
done
[[ -n $REPORT ]] && cp "$work/report.md" "$REPORT"
exit 0
