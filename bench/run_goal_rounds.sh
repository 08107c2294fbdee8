#!/usr/bin/env bash
# Issue 13's many-planner goal measured in alternated rounds: MANY RRTConnect planners through one
# tandemd against FCL_PLANNERS planners with FCL in process, on the 700 MotionBenchMaker Panda problems,
# ROUNDS times, each round both rows back to back (the odd rounds FCL first, the even ones Tandem
# first, so that a drift of the host counts against both alike). One pair is not enough: FCL's row
# moved by 10 % between two runs on one host (bench/results/ompl_resident.md, section 23), as much as
# Tandem's ratio to it does between hosts. Prints a Markdown report (the command, each round's rows and
# ratio, the median, least and largest ratio) and writes it to REPORT.md.
#
#   bench/run_goal_rounds.sh [REPORT.md]        (default bench/results/ompl_goal_rounds.md)
#
# Knobs (environment), with their defaults:
#   BUILD_DIR=build        ompl_plan (examples/ompl) and tandemd; or OMPL_PLAN=..., TANDEMD=... (a
#                          bench/device_pack.sh pack's bin/ files, with LD_LIBRARY_PATH=PACK/lib)
#   PANDA=../shared/robots/panda   panda.urdf, panda.srdf, problems.tar.bz2
#   ROUNDS=3               rounds (each: one FCL row and one Tandem row)
#   MANY=64 FCL_PLANNERS=16        planners at once in the Tandem and FCL rows
#   PER_SCENARIO=0         problems per scenario (0: all 100; smoke tests: fewer)
#   ENGINE=gpu             tandemd --engine;  THREADS=$(nproc): tandemd --threads
#   TANDEMD_ARGS=          more tandemd flags (named in the report, as are TDM_* variables set)
#   PLAN_ARGS=             more ompl_plan flags for the Tandem row (e.g. "--ring on": shared-memory rings)
#   TIME_LIMIT=2 RESOLUTION=0.02 SEED=1   as bench/run_ompl.sh (the same for both checkers)
#   PLANNER=rrtconnect     ompl_plan --planner for both rows (rrtconnect: OMPL's, the goal's; or
#                          rrtconnect-fused, examples/ompl/rrt_fused.h)
#   ALT_ARGS=              when set, more rows in every round: the Tandem row with these ompl_plan flags
#                          added (e.g. "--local-states 1"; several rows: their flags separated by ";"),
#                          against the same FCL row; their rounds are reported apart, the first row's in
#                          ALT_OUT (default REPORT_alt.md), the k-th's in REPORT_altK.md, in the same
#                          format, so that bench/goal_stats.py reads any report. Odd rounds run FCL,
#                          Tandem, then these in order; even ones the reverse.
# Time: a round is about FCL's row (~15 s on a 16-core host) plus Tandem's (~5 s) plus set-up.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
out_file=${1:-bench/results/ompl_goal_rounds.md}
BUILD_DIR=${BUILD_DIR:-build}
PANDA=${PANDA:-../shared/robots/panda}
ROUNDS=${ROUNDS:-3}
MANY=${MANY:-64}
FCL_PLANNERS=${FCL_PLANNERS:-16}
PER_SCENARIO=${PER_SCENARIO:-0}
ENGINE=${ENGINE:-gpu}
THREADS=${THREADS:-$(nproc)}
TANDEMD_ARGS=${TANDEMD_ARGS:-}
PLAN_ARGS=${PLAN_ARGS:-}
TIME_LIMIT=${TIME_LIMIT:-2}
RESOLUTION=${RESOLUTION:-0.02}
SEED=${SEED:-1}
PLANNER=${PLANNER:-rrtconnect}
ALT_ARGS=${ALT_ARGS:-}
IFS=';' read -r -a alts <<< "$ALT_ARGS"
alt_files=()
for k in "${!alts[@]}"; do
    if (( k == 0 )); then alt_files+=("${ALT_OUT:-${out_file%.md}_alt.md}"); else alt_files+=("${out_file%.md}_alt$((k + 1)).md"); fi
done
plan=${OMPL_PLAN:-$BUILD_DIR/examples/ompl/ompl_plan}
tandemd=${TANDEMD:-$BUILD_DIR/daemon/tandemd}
for f in "$plan" "$tandemd" "$PANDA/panda.urdf" "$PANDA/problems.tar.bz2"; do
    [[ -e $f ]] || { echo "run_goal_rounds.sh: $f not found (build with libompl-dev and libfcl-dev installed)" >&2; exit 1; }
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "run_goal_rounds.sh: ROUNDS must be a positive integer, not '$ROUNDS'" >&2; exit 2; }
# tandemd's A/B switches in the environment (TDM_*) are named in the report's command too
mapfile -t tdm_env < <(env | grep -E '^TDM_[A-Z0-9_]*=' | sort || true)
command="$(printf '%q ' env "${tdm_env[@]}" ${OMPL_PLAN:+OMPL_PLAN="$OMPL_PLAN"} ${TANDEMD:+TANDEMD="$TANDEMD"} \
    ${LD_LIBRARY_PATH:+LD_LIBRARY_PATH="$LD_LIBRARY_PATH"} BUILD_DIR="$BUILD_DIR" PANDA="$PANDA" ROUNDS="$ROUNDS" \
    MANY="$MANY" FCL_PLANNERS="$FCL_PLANNERS" PER_SCENARIO="$PER_SCENARIO" ENGINE="$ENGINE" THREADS="$THREADS" \
    ${TANDEMD_ARGS:+TANDEMD_ARGS="$TANDEMD_ARGS"} ${PLAN_ARGS:+PLAN_ARGS="$PLAN_ARGS"} TIME_LIMIT="$TIME_LIMIT" RESOLUTION="$RESOLUTION" SEED="$SEED" \
    PLANNER="$PLANNER" ${ALT_ARGS:+ALT_ARGS="$ALT_ARGS"} ${ALT_OUT:+ALT_OUT="$ALT_OUT"} \
    bench/run_goal_rounds.sh "$out_file")"

work=$(mktemp -d)
pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
tar xjf "$PANDA/problems.tar.bz2" -C "$work"
base=(--urdf "$PANDA/panda.urdf" --srdf "$PANDA/panda.srdf" --resolution "$RESOLUTION" --seed "$SEED"
      --planner "$PLANNER" --time-limit "$TIME_LIMIT" --per-scenario "$PER_SCENARIO")

read -r -a more <<< "$TANDEMD_ARGS"
read -r -a plan_more <<< "$PLAN_ARGS"
sock=$work/tandemd.sock
"$tandemd" --listen "unix:$sock" --data-dir "$work/data" --threads "$THREADS" --engine "$ENGINE" "${more[@]}" \
    --log-level warn 2> "$work/tandemd.log" &
pid=$!
wait_listening run_goal_rounds.sh "$sock" "$pid" "$work/tandemd.log"

# row NAME ARGS...: one ompl_plan run; prints "problems_per_s solved problems busy_share"
row() {
    local log=$work/$1; shift
    "$plan" "${base[@]}" "$@" "$work/problems" > "$log" 2> "$log.err" ||
        { echo "run_goal_rounds.sh: ompl_plan failed:" >&2; tail -5 "$log.err" >&2; exit 1; }
    echo "run_goal_rounds.sh: $(basename "$log"): $(tail -1 "$log")" >&2 # the row's summary line (check_s, state_s...)
    echo "$(field "$log" problems_per_s) $(field "$log" solved) $(field "$log" problems) $(field "$log" busy_share)"
}
pct() { awk -v x="${1:-0}" 'BEGIN { printf "%.0f %%", 100 * x }'; }

rows=()
ratios=()
busy_f="" busy_t="" # each row's busy shares, rounds in order ("96 %, 95 %")
declare -a alt_rows=() alt_ratios=() busy_a=() alt_got=() # by extra row
alt_row() { # round, alternative
    local more
    read -r -a more <<< "${alts[$2]}"
    row "alt$2.$1" --checker tandem --server "unix:$sock" --planners "$MANY" "${plan_more[@]}" "${more[@]}"
}
alts_run() { # round, then the alternatives' indices in the order to run them
    local r=$1 k; shift
    for k in "$@"; do alt_got[$k]=$(alt_row "$r" "$k"); done
}
n_alts=${#alts[@]}
fwd=() rev=()
for (( k = 0; k < n_alts; k++ )); do fwd+=("$k"); rev=("$k" "${rev[@]}"); done
t_start=$(date +%s)
for r in $(seq "$ROUNDS"); do
    if (( r % 2 )); then
        read -r f fs fn fb < <(row "fcl.$r" --checker fcl --planners "$FCL_PLANNERS")
        read -r t ts tn tb < <(row "tdm.$r" --checker tandem --server "unix:$sock" --planners "$MANY" "${plan_more[@]}")
        alts_run "$r" "${fwd[@]}"
        order="FCL, then Tandem"
    else
        alts_run "$r" "${rev[@]}"
        read -r t ts tn tb < <(row "tdm.$r" --checker tandem --server "unix:$sock" --planners "$MANY" "${plan_more[@]}")
        read -r f fs fn fb < <(row "fcl.$r" --checker fcl --planners "$FCL_PLANNERS")
        order="Tandem, then FCL"
    fi
    for (( k = 0; k < n_alts; k++ )); do
        read -r a as an ab <<< "${alt_got[$k]}"
        qa=$(awk -v a="$a" -v b="$f" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
        alt_ratios[$k]+="${alt_ratios[$k]:+ }$qa"
        busy_a[$k]+="${busy_a[$k]:+, }$(pct "$ab")"
        (( r % 2 )) && alt_order="FCL, Tandem, then the extra rows" || alt_order="the extra rows, Tandem, then FCL"
        alt_rows[$k]+="| $r | $alt_order | $f ($fs of $fn solved) | $a ($as of $an solved) | $qa× |"$'\n'
        echo "run_goal_rounds.sh: (${alts[$k]}) | $r | $alt_order | $f | $a | $qa× |" >&2
    done
    q=$(awk -v a="$t" -v b="$f" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    ratios+=("$q")
    busy_f+="${busy_f:+, }$(pct "$fb")"
    busy_t+="${busy_t:+, }$(pct "$tb")"
    rows+=("| $r | $order | $f ($fs of $fn solved) | $t ($ts of $tn solved) | $q× |")
    echo "run_goal_rounds.sh: ${rows[-1]}" >&2
done
t_total=$(( $(date +%s) - t_start ))
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

spread() { printf '%s\n' "$@" | sort -g |
    awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f %.2f %.2f\n", m, v[1], v[NR] }'; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
pack_info=$(dirname "$tandemd")/../PACK_INFO
built=$( [[ -f $pack_info ]] && sed -n 's/^commit=\([^ ]*\).*/\1 (the pack'"'"'s PACK_INFO)/p' "$pack_info" || true)
if [[ $PLANNER == rrtconnect ]]; then planner_said="RRTConnect (OMPL's)"
else planner_said="$PLANNER (ompl_plan --planner; not the goal's planner, which is OMPL's RRTConnect)"; fi
report() { # $1: the Tandem row's flags beyond PLAN_ARGS ("" for the goal's row); rows in trows, ratios in tratios
    local extra=$1 m lo hi
    read -r m lo hi < <(spread "${tratios[@]}")
    echo "# Issue 13's many-planner goal in alternated rounds: $MANY planners through tandemd against $FCL_PLANNERS FCL planners${extra:+ (the Tandem row with \`$extra\`)}"
    echo
    echo "Command: \`$command\`"
    echo
    echo "- Host: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'))${gpu:+, GPU: $gpu}; commit ${COMMIT:-${built:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}}; $ROUNDS rounds in ${t_total} s."
    echo "- $planner_said, time limit $TIME_LIMIT s a problem, motion resolution $RESOLUTION rad, seed $SEED; problems per scenario: $PER_SCENARIO (0: all 100)."
    echo "- One tandemd for every round: \`--engine $ENGINE --threads $THREADS${TANDEMD_ARGS:+ $TANDEMD_ARGS}\`${PLAN_ARGS:+; ompl_plan of the Tandem row with \`$PLAN_ARGS\`}${extra:+, and \`$extra\`}; the planners' paths re-checked by FCL at 0.005 rad (a failing one unsolved)."
    if [[ -z $extra ]]; then
        for (( k = 0; k < n_alts; k++ )); do
            echo "- Each round also ran the Tandem row with \`${alts[$k]}\` (reported in \`$(basename "${alt_files[$k]}")\`)."
        done
    else
        echo "- The same rounds as \`$(basename "$out_file")\`'s, whose FCL rows these are (each round ran $((n_alts + 2)) rows)."
    fi
    echo "- problems/s: problems over the run's wall time, as \`bench/run_ompl.sh\`'s (c) rows."
    echo
    echo "| round | order | FCL, $FCL_PLANNERS planners: problems/s | Tandem, $MANY planners: problems/s | ratio |"
    echo "|---:|---|---:|---:|---:|"
    printf '%s\n' "${trows[@]}"
    echo
    echo "Ratio over the rounds: median **$m×**, least $lo×, largest $hi× (goal: ≥ 4×)."
    echo
    echo "Planners busy (each row's problems' whole times over its planners × its wall time; the rest is the"
    echo "batch's end, when the last problems run alone, some to the time limit): FCL $busy_f; Tandem $tbusy (rounds in order)."
}
trows=("${rows[@]}") tratios=("${ratios[@]}") tbusy=$busy_t
report "" | tee "$out_file"
for (( k = 0; k < n_alts; k++ )); do
    mapfile -t trows < <(printf '%s' "${alt_rows[$k]}")
    read -r -a tratios <<< "${alt_ratios[$k]}"
    tbusy=${busy_a[$k]}
    report "${alts[$k]}" | tee "${alt_files[$k]}"
done
