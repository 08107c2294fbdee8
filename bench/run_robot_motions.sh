#!/usr/bin/env bash
# Issue 13, point 10 (b): motions/s of the Panda in one scene per MotionBenchMaker scenario, FCL
# (bench_robot --motions: each motion's states in order, stopping at the first colliding one; 1 thread
# and THREADS threads) against `tandem motions` on each backend, in one run on one host, with every
# answer (the first colliding state, or -1) compared to FCL's.
#
#   bench/run_robot_motions.sh BIN PANDA CONFIGS [REPORT.md]
#     BIN, PANDA, CONFIGS: as bench/run_robot_configs.sh; motion i goes from configuration 2i to 2i + 1
#   env: THREADS ($(nproc)), BACKENDS ("cpu gpu"), REPEAT (3: best of), SCENE (0001), SCENARIOS (every
#        problems/*_panda folder), MOTIONS (10000), R (0.05), FCL1_MAX (1000: FCL on one thread checks
#        the first FCL1_MAX motions); a backend written gpu:host runs with TDM_ENGINE_DEVICE_CONFIGS=0
#        (the states' poses, culling and tasks on the host, as before tdm_sched_run_configs)
# Prints a Markdown table; "differ" counts motions whose answer differs from FCL's (THREADS run).
set -euo pipefail
if [[ $# -lt 3 ]]; then
    echo "usage: bench/run_robot_motions.sh BIN PANDA CONFIGS [REPORT.md]" >&2
    exit 2
fi
BIN=$1 PANDA=$2 CONFIGS=$3 REPORT=${4:-}
THREADS=${THREADS:-$(nproc)}
BACKENDS=${BACKENDS:-cpu gpu}
REPEAT=${REPEAT:-3}
SCENE=${SCENE:-0001}
MOTIONS=${MOTIONS:-10000}
R=${R:-0.05}
FCL1_MAX=${FCL1_MAX:-1000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -n $((2 * MOTIONS)) "$CONFIGS" | paste -d' ' - - > "$work/motions.txt"
head -n "$FCL1_MAX" "$work/motions.txt" > "$work/fcl1.txt"
m=$(wc -l < "$work/motions.txt")
m1=$(wc -l < "$work/fcl1.txt")
scenarios=${SCENARIOS:-$(cd "$PANDA/problems" && ls -d *_panda)}

qps() { sed -n 's/^queries=.* qps=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
best() {
    local b=0 q
    for ((k = 0; k < REPEAT; k++)); do
        "$@" > "$work/run.log" 2> "$work/run.err" || { cat "$work/run.err" >&2; echo 0; return; }
        q=$(qps "$work/run.log")
        b=$(awk -v a="$b" -v c="$q" 'BEGIN { print (c > a ? c : a) }')
    done
    echo "$b"
}

{
echo "# Panda motions/s: FCL against Tandem, one scene per scenario"
echo
echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
command -v nvidia-smi > /dev/null && echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
echo "- Command: \`THREADS=$THREADS BACKENDS=\"$BACKENDS\" REPEAT=$REPEAT SCENE=$SCENE MOTIONS=$MOTIONS R=$R FCL1_MAX=$FCL1_MAX bench/run_robot_motions.sh BIN PANDA CONFIGS\`"
echo "- $m motions (motion i: configurations 2i and 2i+1 of CONFIGS; FCL on one thread: the first $m1) at resolution $R rad,"
echo "  scene$SCENE.yaml of each scenario; best of $REPEAT runs; motions/s from each program's last line (checking only:"
echo "  not loading; Tandem's time includes its states' forward kinematics (tdm_sched_run_configs), FCL's does not)."
echo "- differ: motions whose first colliding state (or -1) differs from FCL's."
echo
echo "| scenario | states | colliding | FCL 1 thread | FCL $THREADS threads | backend | Tandem | × FCL 1 | × FCL $THREADS | differ |"
echo "|---|--:|--:|--:|--:|---|--:|--:|--:|--:|"
} > "$work/report.md"
cat "$work/report.md"

for sc in $scenarios; do
    robot=(--urdf "$PANDA/panda.urdf" --srdf "$PANDA/panda.srdf" --world "$PANDA/problems/$sc/scene$SCENE.yaml")
    f1=$(best "$BIN/bench_robot" "${robot[@]}" --motions "$work/fcl1.txt" --resolution "$R" --threads 1)
    fn=$(best "$BIN/bench_robot" "${robot[@]}" --motions "$work/motions.txt" --resolution "$R" --threads "$THREADS" \
         --out "$work/fcl.out")
    states=$(sed -n 's/.* states=\([0-9]*\).*/\1/p' "$work/run.log")
    col=$(awk '$1 >= 0' "$work/fcl.out" | wc -l)
    for b in $BACKENDS; do
        # BACKEND:host: the states' poses made on the host (TDM_ENGINE_DEVICE_CONFIGS=0), for the A/B of the device path
        if [[ $b == *:host ]]; then export TDM_ENGINE_DEVICE_CONFIGS=0; else export TDM_ENGINE_DEVICE_CONFIGS=1; fi
        t=$(best "$BIN/tandem" motions "${robot[@]}" --motions "$work/motions.txt" --resolution "$R" --threads "$THREADS" \
            --backend "${b%:host}" --out "$work/tdm.out")
        d=$(paste "$work/fcl.out" "$work/tdm.out" | awk '$1 != $2' | wc -l)
        line=$(awk -v sc="$sc" -v st="$states" -v c="$col" -v f1="$f1" -v fn="$fn" -v b="$b" -v t="$t" -v d="$d" \
            'BEGIN { printf "| %s | %s | %s | %.0f | %.0f | %s | %.0f | %.1f | %.2f | %s |\n", sc, st, c, f1, fn, b, t, (f1 > 0 ? t / f1 : 0), (fn > 0 ? t / fn : 0), d }')
        echo "$line"
        echo "$line" >> "$work/report.md"
    done
done
[[ -n $REPORT ]] && cp "$work/report.md" "$REPORT"
exit 0
