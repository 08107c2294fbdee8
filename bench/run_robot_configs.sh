#!/usr/bin/env bash
# Issue 13, point 10 (a): configurations/s of the Panda in one scene per MotionBenchMaker scenario,
# FCL (bench_robot: 1 thread and THREADS threads) against `tandem check --urdf` on each backend, in one
# run on one host, with every backend's answers compared to FCL's (colliding or not).
#
#   bench/run_robot_configs.sh BIN PANDA CONFIGS [REPORT.md]
#     BIN      folder with tandem and bench_robot (a build's tools/ and bench/ copied together, or a
#              pack's bin/ from bench/device_pack.sh with LD_LIBRARY_PATH set by the caller)
#     PANDA    folder with panda.urdf, panda.srdf, meshes/ and problems/<scenario>_panda/sceneSCENE.yaml
#              (../shared/robots/panda with problems.tar.bz2 extracted beside the URDF)
#     CONFIGS  configurations, one per line, the 7 active joints (bench/robot_configs.py writes them)
#   env: THREADS ($(nproc)), MODES ("bool contacts"), BACKENDS ("cpu hybrid gpu"), REPEAT (3: best of),
#        SCENE (0001), SCENARIOS (every problems/*_panda folder), FCL1_MAX (20000: FCL on one thread
#        checks the first FCL1_MAX configurations, enough for its rate), CULL (unset: tandem's default;
#        0 or 1 sets TDM_ENGINE_CULL); a backend written gpu:host (or cpu:host) runs with
#        TDM_ENGINE_DEVICE_CONFIGS=0: forward kinematics, culling, tasks and fold on the host, as before
#        the device path (tdm_sched_run_configs)
# Prints a Markdown table: configurations/s of each, and the ratios to FCL; "disagree" counts the
# configurations whose colliding/free answer differs from FCL's (THREADS run, all configurations):
# FCL-colliding but Tandem-free first, then the other way.
set -euo pipefail
if [[ $# -lt 3 ]]; then
    echo "usage: bench/run_robot_configs.sh BIN PANDA CONFIGS [REPORT.md]" >&2
    exit 2
fi
BIN=$1 PANDA=$2 CONFIGS=$3 REPORT=${4:-}
THREADS=${THREADS:-$(nproc)}
MODES=${MODES:-bool contacts}
BACKENDS=${BACKENDS:-cpu hybrid gpu}
REPEAT=${REPEAT:-3}
SCENE=${SCENE:-0001}
FCL1_MAX=${FCL1_MAX:-20000}
[[ -n ${CULL:-} ]] && export TDM_ENGINE_CULL=$CULL
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=$(grep -cv '^\s*\(#\|$\)' "$CONFIGS")
head -n "$FCL1_MAX" "$CONFIGS" > "$work/fcl1.cfg"
n1=$(grep -cv '^\s*\(#\|$\)' "$work/fcl1.cfg")
scenarios=${SCENARIOS:-$(cd "$PANDA/problems" && ls -d *_panda)}

qps() { sed -n 's/^queries=.* qps=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
best() { # best qps of REPEAT runs of "$@"; the last run's --out is kept by the caller's arguments
    local b=0 q
    for ((r = 0; r < REPEAT; r++)); do
        "$@" > "$work/run.log" 2> "$work/run.err" || { cat "$work/run.err" >&2; echo 0; return; }
        q=$(qps "$work/run.log")
        b=$(awk -v a="$b" -v c="$q" 'BEGIN { print (c > a ? c : a) }')
    done
    echo "$b"
}
disagree() { paste "$1" "$2" | awk '{ f = $1 > 0; t = $2 > 0; if (f && !t) a++; if (t && !f) b++ } END { printf "%d / %d", a, b }'; }

{
echo "# Panda configurations/s: FCL against Tandem, one scene per scenario"
echo
echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
command -v nvidia-smi > /dev/null && echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
echo "- Command: \`THREADS=$THREADS MODES=\"$MODES\" BACKENDS=\"$BACKENDS\" REPEAT=$REPEAT SCENE=$SCENE FCL1_MAX=$FCL1_MAX${CULL:+ CULL=$CULL} bench/run_robot_configs.sh BIN PANDA CONFIGS\`"
echo "- $n configurations (FCL on one thread: the first $n1), scene$SCENE.yaml of each scenario; best of $REPEAT runs."
echo "  configurations/s from each program's last line (\`queries=N seconds=S qps=Q\`: checking only, not loading;"
echo "  Tandem's time includes its forward kinematics, FCL's does not: bench_robot computes the poses first)."
echo "- disagree: configurations FCL calls colliding and Tandem free / Tandem colliding and FCL free."
echo
echo "| scenario | mode | FCL 1 thread | FCL $THREADS threads | backend | Tandem | × FCL 1 | × FCL $THREADS | disagree |"
echo "|---|---|--:|--:|---|--:|--:|--:|---|"
} > "$work/report.md"
cat "$work/report.md"

for sc in $scenarios; do
    world=$PANDA/problems/$sc/scene$SCENE.yaml
    for mode in $MODES; do
        common=(--urdf "$PANDA/panda.urdf" --srdf "$PANDA/panda.srdf" --world "$world" --mode "$mode")
        f1=$(best "$BIN/bench_robot" "${common[@]}" --configs "$work/fcl1.cfg" --threads 1)
        fn=$(best "$BIN/bench_robot" "${common[@]}" --configs "$CONFIGS" --threads "$THREADS" --out "$work/fcl.out")
        for b in $BACKENDS; do
            # BACKEND:host: the poses made on the host (TDM_ENGINE_DEVICE_CONFIGS=0), for the A/B of the device path
            dc=1
            [[ $b == *:host ]] && dc=0
            export TDM_ENGINE_DEVICE_CONFIGS=$dc
            t=$(best "$BIN/tandem" check "${common[@]}" --configs "$CONFIGS" \
                --threads "$THREADS" --backend "${b%:host}" --out "$work/tdm.out")
            [[ -s $work/tdm.out ]] || { echo "| $sc | $mode | $f1 | $fn | $b | failed | | | |"; continue; }
            line=$(awk -v sc="$sc" -v m="$mode" -v f1="$f1" -v fn="$fn" -v b="$b" -v t="$t" -v d="$(disagree "$work/fcl.out" "$work/tdm.out")" \
                'BEGIN { printf "| %s | %s | %.0f | %.0f | %s | %.0f | %.1f | %.2f | %s |\n", sc, m, f1, fn, b, t, (f1 > 0 ? t / f1 : 0), (fn > 0 ? t / fn : 0), d }')
            echo "$line"
            echo "$line" >> "$work/report.md"
            rm -f "$work/tdm.out"
        done
    done
done
[[ -n $REPORT ]] && cp "$work/report.md" "$REPORT"
exit 0
