#!/usr/bin/env bash
# Issue 13, point 5: BVTT fronts (workpile/bvtt_front.h) against descents from the roots
# (tdm_collide) on the Panda's motions in every MotionBenchMaker scenario, single thread, with
# bench_fronts (its header says what is timed and what each column means).
#
#   bench/run_fronts.sh BIN PANDA MOTIONS [REPORT]
#     BIN      folder with bench_fronts (a build's bench/ folder)
#     PANDA    the Panda folder: panda.urdf, panda.srdf, meshes/, problems.tar.bz2
#     MOTIONS  one motion a line, 2 x 7 numbers (start, end), e.g. consecutive pairs of
#              `bench/robot_configs.py joints.txt 2000 1` joined with `paste -d' ' - -`
#     REPORT   also write the table there
#   env: SCENE (0001: the scene of each scenario), R (0.05 rad), REPEAT (5: timed passes, the
#        best kept per block), PRUNE (4: --prune-every of the main rows), SWEEP (box_panda
#        bookshelf_thin_panda: scenarios also run with --prune-every 0, 1, 2), FINE (box_panda: also run on the first FINE_N (100) motions at
#        the finer resolutions FINE_R (0.02 0.01 0.002), --prune-every 1 and 4), PIN (a CPU to run
#        on with taskset, if taskset exists; the last one), MOTIONS_NOTE (how MOTIONS was made,
#        printed in the report), SCENARIOS (the scenarios of the main rows; all by default)
set -euo pipefail
BIN=${1:?BIN} PANDA=${2:?PANDA} MOTIONS=${3:?MOTIONS} REPORT=${4:-}
SCENE=${SCENE:-0001} R=${R:-0.05} REPEAT=${REPEAT:-5} PRUNE=${PRUNE:-4} PIN=${PIN:-$(($(nproc) - 1))}
SWEEP=${SWEEP:-box_panda bookshelf_thin_panda}
FINE=${FINE:-box_panda} FINE_N=${FINE_N:-100} FINE_R=${FINE_R:-0.02 0.01 0.002}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xjf "$PANDA/problems.tar.bz2" -C "$work"
pin=()
command -v taskset > /dev/null && pin=(taskset -c "$PIN")
robot=(--urdf "$PANDA/panda.urdf" --srdf "$PANDA/panda.srdf")
n=$(grep -cv '^\s*\(#\|$\)' "$MOTIONS")

{
echo "# BVTT fronts against descents from the roots: the Panda's motions, single thread"
echo
echo "- Command: \`SCENE=$SCENE R=$R REPEAT=$REPEAT PRUNE=$PRUNE SWEEP=\"$SWEEP\" FINE=\"$FINE\" FINE_N=$FINE_N FINE_R=\"$FINE_R\" bench/run_fronts.sh BIN PANDA MOTIONS\`"
echo "- MOTIONS: $n motions${MOTIONS_NOTE:+: $MOTIONS_NOTE}"
echo "- Machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; pinned: ${pin[*]:-no}"
echo "- Each scenario: scene$SCENE.yaml; each motion cut into states at R rad; a task is a checked"
echo "  (link, object) pair at a state where the pair's bounding spheres are not apart (the scheduler's"
echo "  culling). (a) tdm_collide per task, from the roots; (b) one front per (motion, pair), carried"
echo "  along its states. Same tasks, same answers (asserted: colliding and first pair), warm caches,"
echo "  blocks of whole sequences timed back to back, best of $REPEAT passes per block, summed. 'early exit':"
echo "  each motion up to its first colliding state, as"
echo "  a motion check runs; 'all states': every state of every motion."
echo "- Columns: states = motion states checked; at root = tasks whose descent from the roots stops at the"
echo "  root pair; box, tri = box pairs and triangle pairs tested per task (a, b); front = mean front size;"
echo "  ns per task and per state (a, b); b/a = time of (b) over time of (a) (< 1: fronts faster)."
echo
echo "| scenario | states run | R | prune every | motions | states | tasks | at root | box a | box b | tri a | tri b | front | ns/task a | ns/task b | ns/state a | ns/state b | b/a |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} | tee ${REPORT:+"$REPORT"}

row() { # scenario label motions resolution prune extra-args...
    local sc=$1 label=$2 m=$3 r=$4 pe=$5
    shift 5
    local line
    line=$("${pin[@]}" "$BIN/bench_fronts" "${robot[@]}" --world "$work/problems/$sc/scene$SCENE.yaml" \
        --motions "$m" --resolution "$r" --repeat "$REPEAT" --prune-every "$pe" "$@")
    echo "| $sc | $label | $r | $pe $line" | tee ${REPORT:+-a "$REPORT"}
}

for sc in ${SCENARIOS:-$(cd "$work/problems" && ls -d *_panda)}; do
    row "$sc" "early exit" "$MOTIONS" "$R" "$PRUNE"
    row "$sc" "all states" "$MOTIONS" "$R" "$PRUNE" --all-states
done
for sc in $SWEEP; do
    for pe in 0 1 2; do row "$sc" "all states" "$MOTIONS" "$R" "$pe" --all-states; done
done
awk -v n="$FINE_N" '!/^[[:space:]]*(#|$)/ && c++ < n' "$MOTIONS" > "$work/fine.txt"
for sc in $FINE; do
    for r in $FINE_R; do
        for pe in 1 4; do row "$sc" "all states, first $FINE_N motions" "$work/fine.txt" "$r" "$pe" --all-states; done
    done
done
