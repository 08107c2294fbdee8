#!/usr/bin/env bash
# The GPU engine's runs in flight (tandem check --urdf / tandem motions --gpu-streams) against
# configurations/s and motions/s on the device path, with FCL on THREADS threads in the same run
# for the ratio.
#
#   bench/run_gpu_streams.sh BIN PANDA CONFIGS
#     BIN: tandem and bench_robot; PANDA, CONFIGS: as bench/run_robot_configs.sh
#   env: SCENARIOS (bookshelf_small_panda cage_panda), STREAMS (2 4 8), REPEAT (3: best of), THREADS
#        ($(nproc)), MOTIONS (10000), R (0.05)
set -euo pipefail
BIN=$1 PANDA=$2 CONFIGS=$3
SCENARIOS=${SCENARIOS:-bookshelf_small_panda cage_panda}
STREAMS=${STREAMS:-2 4 8}
REPEAT=${REPEAT:-3}
THREADS=${THREADS:-$(nproc)}
MOTIONS=${MOTIONS:-10000}
R=${R:-0.05}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -n $((2 * MOTIONS)) "$CONFIGS" | paste -d' ' - - > "$work/motions.txt"
qps() { sed -n 's/^queries=.* qps=\([0-9.]*\).*/\1/p' "$work/run.log" | tail -1; }
best() {
    local b=0 q
    for ((r = 0; r < REPEAT; r++)); do
        "$@" > "$work/run.log" 2> "$work/run.err" || { cat "$work/run.err" >&2; echo 0; return; }
        q=$(qps)
        b=$(awk -v a="$b" -v c="$q" 'BEGIN { print (c > a ? c : a) }')
    done
    echo "$b"
}
echo "| scenario | what | FCL $THREADS threads | streams | Tandem GPU | × FCL $THREADS |"
echo "|---|---|--:|--:|--:|--:|"
for sc in $SCENARIOS; do
    robot=(--urdf "$PANDA/panda.urdf" --srdf "$PANDA/panda.srdf" --world "$PANDA/problems/$sc/scene0001.yaml")
    f=$(best "$BIN/bench_robot" "${robot[@]}" --mode bool --configs "$CONFIGS" --threads "$THREADS")
    fm=$(best "$BIN/bench_robot" "${robot[@]}" --motions "$work/motions.txt" --resolution "$R" --threads "$THREADS")
    for s in $STREAMS; do
        t=$(best "$BIN/tandem" check "${robot[@]}" --mode bool --configs "$CONFIGS" --backend gpu --gpu-streams "$s")
        awk -v sc="$sc" -v f="$f" -v s="$s" -v t="$t" 'BEGIN { printf "| %s | bool configurations | %.0f | %s | %.0f | %.2f |\n", sc, f, s, t, t / f }'
        t=$(best "$BIN/tandem" motions "${robot[@]}" --motions "$work/motions.txt" --resolution "$R" --backend gpu --gpu-streams "$s")
        awk -v sc="$sc" -v f="$fm" -v s="$s" -v t="$t" 'BEGIN { printf "| %s | motions, R = %s | %.0f | %s | %.0f | %.2f |\n", sc, "'"$R"'", f, s, t, t / f }'
    done
done
