#!/usr/bin/env bash
# OMPL planners over Tandem on the 700 MotionBenchMaker Panda problems (issue 13, point 10 (c) and
# (d)), with examples/ompl's ompl_plan:
#   (c) RRTConnect: solve rate, median and 95th-percentile solve time, problems/s, with the FCL
#       checker in process (1 planner; FCL_PLANNERS planners at once) and with the Tandem checker
#       through a tandemd this script starts, per engine in ENGINES (1 planner; MANY planners at once);
#   (d) the batched roadmap (PRM) build time: PRM_SAMPLES configurations and their k = PRM_K nearest
#       neighbour edges, one round, on PRM_PER_SCENARIO problems of each scenario: FCL on FCL_THREADS
#       threads vs Tandem per engine.
# Every path is re-checked by FCL at 0.005 rad; a path that fails counts as unsolved.
# Prints a Markdown report (with the exact command) and writes it to REPORT.md.
#
#   bench/run_ompl.sh [REPORT.md]          (default bench/results/ompl.md)
#
# Knobs (environment), with their defaults:
#   BUILD_DIR=build                 ompl_plan (examples/ompl) and tandemd; or name them:
#   OMPL_PLAN=$BUILD_DIR/examples/ompl/ompl_plan  TANDEMD=$BUILD_DIR/daemon/tandemd
#                                   (a bench/device_pack.sh pack: its bin/ files, LD_LIBRARY_PATH=PACK/lib)
#   PANDA=../shared/robots/panda    panda.urdf, panda.srdf, problems.tar.bz2
#   ENGINES="cpu gpu"               tandemd --engine for the Tandem rows (one tandemd per engine);
#                                   ENGINE:poses runs tandemd --device-configs-min 0 (no request as configurations)
#   THREADS=$(nproc)                tandemd --threads
#   TANDEMD_ARGS=                   more tandemd flags for every Tandem row (e.g. "--engine-lanes 5"), named in the rows
#   PLAN_ARGS=                      more ompl_plan flags for every Tandem row (e.g. "--local-states 0": every state
#                                   through tandemd, ompl_plan's default before the fortieth session), named in the rows
#   TIME_LIMIT=2                    seconds per RRTConnect problem (an unsolved problem costs it)
#   SINGLE_PER_SCENARIO=10          problems per scenario for the 1-planner rows (0: all 100)
#   MANY=64  FCL_PLANNERS=16        planners at once: Tandem rows, FCL row
#   MANY_PER_SCENARIO=0             problems per scenario for those rows (0: all 100; smoke tests: fewer)
#   RESOLUTION=0.02                 motion check resolution (radians), both checkers (locally, on 35 MBM
#                                   problems, 4 paths failed the 0.005 rad re-check at 0.05, 2 at 0.02)
#   PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16
#   NN_THREADS=                     ompl_plan --nn-threads for the roadmap rows (empty: its default, the
#                                   host's hardware threads)
#   SEED=1
#   LOG_DIR=                        keep every ompl_plan run's output (its per-problem lines, for
#                                   bench/ompl_batch_model.py) in this folder, as c_LABEL_P.txt and d_LABEL.txt
#   CPU_LATENCY_US=                 hold the host's CPU wake-up latency limit (Linux PM QoS,
#                                   /dev/cpu_dma_latency) at this many us for the whole run, FCL's rows and
#                                   Tandem's alike (tandemd's --cpu-latency-us does it for tandemd's life);
#                                   needs write access to the file; empty: the host's setting
# Time: on a 16-core host with a GPU, estimated at 4 to 8 minutes with the defaults from 2-core smoke
# runs (not yet measured there): the 1-planner rows run 70 problems, the others all 700; an unsolved
# problem costs TIME_LIMIT, which bounds the tail. The report gives the total.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
out_file=${1:-bench/results/ompl.md}
BUILD_DIR=${BUILD_DIR:-build}
PANDA=${PANDA:-../shared/robots/panda}
ENGINES=${ENGINES:-cpu gpu}
THREADS=${THREADS:-$(nproc)}
TANDEMD_ARGS=${TANDEMD_ARGS:-}
PLAN_ARGS=${PLAN_ARGS:-}
TIME_LIMIT=${TIME_LIMIT:-2}
SINGLE_PER_SCENARIO=${SINGLE_PER_SCENARIO:-10}
MANY=${MANY:-64}
FCL_PLANNERS=${FCL_PLANNERS:-16}
MANY_PER_SCENARIO=${MANY_PER_SCENARIO:-0}
RESOLUTION=${RESOLUTION:-0.02}
PRM_SAMPLES=${PRM_SAMPLES:-10000}
PRM_K=${PRM_K:-10}
PRM_PER_SCENARIO=${PRM_PER_SCENARIO:-1}
FCL_THREADS=${FCL_THREADS:-16}
NN_THREADS=${NN_THREADS:-}
nn_desc=${NN_THREADS:-all $(nproc)}
SEED=${SEED:-1}
CPU_LATENCY_US=${CPU_LATENCY_US:-}
LOG_DIR=${LOG_DIR:-}
plan=${OMPL_PLAN:-$BUILD_DIR/examples/ompl/ompl_plan}
tandemd=${TANDEMD:-$BUILD_DIR/daemon/tandemd}
for f in "$plan" "$tandemd" "$PANDA/panda.urdf" "$PANDA/problems.tar.bz2"; do
    [[ -e $f ]] || { echo "run_ompl.sh: $f not found (build with libompl-dev and libfcl-dev installed)" >&2; exit 1; }
done
command="$(printf '%q ' env ${OMPL_PLAN:+OMPL_PLAN="$OMPL_PLAN"} ${TANDEMD:+TANDEMD="$TANDEMD"} \
    ${LD_LIBRARY_PATH:+LD_LIBRARY_PATH="$LD_LIBRARY_PATH"} BUILD_DIR="$BUILD_DIR" PANDA="$PANDA" ENGINES="$ENGINES" THREADS="$THREADS" \
    ${TANDEMD_ARGS:+TANDEMD_ARGS="$TANDEMD_ARGS"} ${PLAN_ARGS:+PLAN_ARGS="$PLAN_ARGS"} \
    TIME_LIMIT="$TIME_LIMIT" SINGLE_PER_SCENARIO="$SINGLE_PER_SCENARIO" MANY="$MANY" FCL_PLANNERS="$FCL_PLANNERS" \
    MANY_PER_SCENARIO="$MANY_PER_SCENARIO" \
    RESOLUTION="$RESOLUTION" PRM_SAMPLES="$PRM_SAMPLES" PRM_K="$PRM_K" PRM_PER_SCENARIO="$PRM_PER_SCENARIO" \
    FCL_THREADS="$FCL_THREADS" ${NN_THREADS:+NN_THREADS="$NN_THREADS"} SEED="$SEED" \
    ${CPU_LATENCY_US:+CPU_LATENCY_US="$CPU_LATENCY_US"} ${LOG_DIR:+LOG_DIR="$LOG_DIR"} bench/run_ompl.sh "$out_file")"
if [[ -n $CPU_LATENCY_US ]]; then
    # held while descriptor 9 stays open: the kernel drops the request when the script ends
    exec 9> /dev/cpu_dma_latency || { echo "run_ompl.sh: CPU_LATENCY_US needs write access to /dev/cpu_dma_latency" >&2; exit 1; }
    v=$CPU_LATENCY_US
    printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $((v & 255)) $((v >> 8 & 255)) $((v >> 16 & 255)) $((v >> 24 & 255)))" >&9
fi

work=$(mktemp -d)
pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
tar xjf "$PANDA/problems.tar.bz2" -C "$work"
problems=$work/problems
base=(--urdf "$PANDA/panda.urdf" --srdf "$PANDA/panda.srdf" --resolution "$RESOLUTION" --seed "$SEED")
t_start=$(date +%s)

[[ -n $LOG_DIR ]] && mkdir -p "$LOG_DIR"
# keep KIND LABEL LOG: a run's output into LOG_DIR, named by its kind and label
keep() { [[ -z $LOG_DIR ]] || cp "$3" "$LOG_DIR/$1_$(printf '%s' "$2" | tr -c 'A-Za-z0-9' '_').txt"; }

rows_c=()
rows_d=()
# the goals' inputs: problems/s and median s by "label|planners", total build s by label
declare -A pps med build
labels_d=()
# run NAME ARGS...: one ompl_plan run, its row for table (c) or (d)
run_c() {
    local label=$1 planners=$2; shift 2
    local log=$work/run.$(( ${#rows_c[@]} + ${#rows_d[@]} ))
    echo "run_ompl.sh: (c) $label, $planners planner(s)" >&2
    "$plan" "${base[@]}" --planner rrtconnect --time-limit "$TIME_LIMIT" --planners "$planners" "$@" > "$log" 2> "$log.err" ||
        { echo "run_ompl.sh: ompl_plan failed:" >&2; tail -5 "$log.err" >&2; exit 1; }
    keep c "${label}_$planners" "$log"
    local n s
    n=$(field "$log" problems) s=$(field "$log" solved)
    rows_c+=("| $label | $planners | $n | $s ($(awk -v s="$s" -v n="$n" 'BEGIN { printf "%.1f%%", 100 * s / n }')) | $(field "$log" recheck_failed) | $(awk -v x="$(field "$log" median_s)" 'BEGIN { printf "%.1f", 1000 * x }') | $(awk -v x="$(field "$log" p95_s)" 'BEGIN { printf "%.1f", 1000 * x }') | $(field "$log" wall_s) | $(field "$log" problems_per_s) | $(field "$log" checks) | $(field "$log" requests) | $(s=$(field "$log" setup_s); echo "${s:--}") |")
    echo "${rows_c[-1]}" >&2
    pps["$label|$planners"]=$(field "$log" problems_per_s) med["$label|$planners"]=$(field "$log" median_s)
}
run_d() {
    local label=$1; shift
    local log=$work/run.$(( ${#rows_c[@]} + ${#rows_d[@]} ))
    echo "run_ompl.sh: (d) $label" >&2
    # --time-limit below one round: exactly one round, the roadmap build
    "$plan" "${base[@]}" --planner prm --prm-samples "$PRM_SAMPLES" --prm-k "$PRM_K" --time-limit 0.001 \
        --per-scenario "$PRM_PER_SCENARIO" ${NN_THREADS:+--nn-threads "$NN_THREADS"} "$@" > "$log" 2> "$log.err" ||
        { echo "run_ompl.sh: ompl_plan failed:" >&2; tail -5 "$log.err" >&2; exit 1; }
    keep d "$label" "$log"
    local n=$(field "$log" problems) checks=$(field "$log" checks)
    local total=$(awk 'NF == 6 { s += $4 } END { printf "%.3f", s }' "$log")
    rows_d+=("| $label | $n | $(field "$log" roadmap_median_s) | $(field "$log" roadmap_states_s) | $(field "$log" roadmap_neighbours_s) | $(field "$log" roadmap_motions_s) | $total | $checks | $(awk -v c="$checks" -v t="$total" 'BEGIN { printf "%.0f", (t > 0 ? c / t : 0) }') | $(field "$log" solved) |")
    echo "${rows_d[-1]}" >&2
    build["$label"]=$total
    labels_d+=("$label")
}

# ---- FCL in process ----
run_c "FCL in process" 1 --checker fcl --per-scenario "$SINGLE_PER_SCENARIO" "$problems"
run_c "FCL in process" "$FCL_PLANNERS" --checker fcl --per-scenario "$MANY_PER_SCENARIO" "$problems"
run_d "FCL in process, $FCL_THREADS threads" --checker fcl --fcl-threads "$FCL_THREADS" "$problems"

# ---- Tandem through tandemd, per engine ----
engine_notes=()
for variant in $ENGINES; do
    # ENGINE:poses: tandemd --device-configs-min 0 (every request's poses made by tandemd, as before
    # batches of configurations ran on the device)
    engine=${variant%:poses}
    extra=()
    [[ $variant == *:poses ]] && extra=(--device-configs-min 0)
    read -r -a more <<< "$TANDEMD_ARGS"
    extra+=("${more[@]}")
    sock=$work/tandemd-$variant.sock
    "$tandemd" --listen "unix:$sock" --data-dir "$work/data-$variant" --threads "$THREADS" --engine "$engine" \
        "${extra[@]}" --log-level warn 2> "$work/tandemd-$variant.log" &
    pid=$!
    wait_listening "run_ompl.sh (--engine $engine)" "$sock" "$pid" "$work/tandemd-$variant.log"
    label="Tandem, tandemd --engine $engine${extra[*]:+ ${extra[*]}}${PLAN_ARGS:+, ompl_plan $PLAN_ARGS}"
    read -r -a plan_args <<< "$PLAN_ARGS"
    run_c "$label" 1 --checker tandem --server "unix:$sock" "${plan_args[@]}" --per-scenario "$SINGLE_PER_SCENARIO" "$problems"
    run_c "$label" "$MANY" --checker tandem --server "unix:$sock" "${plan_args[@]}" --per-scenario "$MANY_PER_SCENARIO" "$problems"
    run_d "$label" --checker tandem --server "unix:$sock" "${plan_args[@]}" "$problems"
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
done
t_total=$(( $(date +%s) - t_start ))

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
report() {
    echo "# OMPL planners over Tandem: MotionBenchMaker Panda (issue 13, 10 (c) and (d))"
    echo
    echo "Command: \`$command\`"
    echo
    # the build that ran: a pack's PACK_INFO beside tandemd (bench/device_pack.sh), else this checkout
    pack_info=$(dirname "$tandemd")/../PACK_INFO
    built=$( [[ -f $pack_info ]] && sed -n 's/^commit=\([^ ]*\).*/\1 (the pack'"'"'s PACK_INFO)/p' "$pack_info" || true)
    echo "- Host: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'))${gpu:+, GPU: $gpu}; commit ${COMMIT:-${built:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}}; total run ${t_total} s."
    echo "- Robot: Franka Panda (collision meshes), 7 joints; problems: MBM's 7 scenarios x 100 (box and cylinder"
    echo "  worlds); motion check resolution $RESOLUTION rad (the largest joint step between checked states, both checkers"
    echo "  the same states); every path re-checked by FCL at 0.005 rad, a failing path counted unsolved."
    [[ -n $CPU_LATENCY_US ]] && echo "- The host's CPU wake-up latency limit (/dev/cpu_dma_latency) was held at $CPU_LATENCY_US us for the whole run, every row alike."
    echo "- The Tandem checker (ompl_plan --checker tandem${PLAN_ARGS:+ $PLAN_ARGS}) sends one MotionCheck per MotionValidator"
    echo "  call to tandemd, each planner on its own Unix-socket connection; tandemd --threads $THREADS. A planner's lone"
    echo "  states (StateValidityChecker calls) are answered in its own process by libtandem's local engine over its"
    echo "  copy of the stored robot scene (ompl_plan's --local-states, default 1; 0 sends them to tandemd too)."
    echo
    echo "## (c) RRTConnect, time limit $TIME_LIMIT s per problem"
    echo
    echo "1-planner rows: the first $SINGLE_PER_SCENARIO problems of each scenario, the others the first $MANY_PER_SCENARIO (0: all 100). Times"
    echo "are per problem, the planner's solve only (median and 95th percentile over every problem run, an unsolved one"
    echo "counted at its time); problems/s is problems over the wall time of the run, set-up (scene upload or FCL"
    echo "model) included. checks: configurations the planners asked about (a motion counts its states);"
    echo "requests: batches sent (round trips for Tandem); set-up s: the planners' time in the scene's put and"
    echo "delete, summed over problems (only planners whose scene files are identical wait for each other)."
    echo
    echo "| checker | planners | problems | solved | re-check failed | median ms | p95 ms | wall s | problems/s | checks | requests | set-up s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows_c[@]}"
    echo
    echo "Anchor: VAMP's published Panda figure on MBM is a median of about 99 µs per problem (sphere approximations"
    echo "of the robot, SIMD, one core); the rows above check exact meshes."
    echo
    echo "## (d) Batched roadmap build (PRM): $PRM_SAMPLES samples, k = $PRM_K, one round"
    echo
    echo "One round per problem: $PRM_SAMPLES configurations sampled and checked in one batch, then each free one's"
    echo "$PRM_K nearest neighbours as motions checked in one batch; $PRM_PER_SCENARIO problem(s) per scenario. Build s: per"
    echo "roadmap (median) and summed, and the medians of its parts (the state batch's check, the neighbour search, the"
    echo "motion batch's check); the neighbour search is an exact kd-tree kNN on $nn_desc threads,"
    echo "the same for both checkers; checks/s: configurations (states and motion states) over the summed build time;"
    echo "solved: start and goal connected by that one round."
    echo
    echo "| checker | roadmaps | median build s | states s | neighbours s | motions s | total build s | checks | checks/s | solved |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows_d[@]}"
    echo
    echo "## The goals (issue 13), as ratios of the rows above"
    echo
    echo "| Tandem row | $MANY planners against $FCL_PLANNERS FCL planners, problems/s (goal ≥ 4×) | 1 planner's median against FCL's (goal ≤ 1×) | roadmap build, FCL's total over Tandem's (goal ≥ 10×) |"
    echo "|---|---:|---:|---:|"
    local fcl="FCL in process" l
    ratio() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { if (a > 0 && b > 0) printf f "×", a / b; else printf "-" }'; }
    for l in "${labels_d[@]}"; do
        [[ $l == Tandem* ]] || continue
        echo "| $l | $(ratio "${pps[$l|$MANY]:-0}" "${pps[$fcl|$FCL_PLANNERS]:-0}" %.2f) | $(ratio "${med[$l|1]:-0}" "${med[$fcl|1]:-0}" %.2f) | $(ratio "${build[$fcl, $FCL_THREADS threads]:-0}" "${build[$l]:-0}" %.1f) |"
    done
}
report | tee "$out_file"
