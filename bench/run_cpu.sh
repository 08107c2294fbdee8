#!/usr/bin/env bash
# Tandem's CPU engine against FCL on every OMPL scene: 20000 random poses per scene
# and, where the scene has a solution path, that path sampled densely. Prints a
# Markdown report (machine, commands, one table row per scene x pose set x mode,
# then the raw explanations of any disagreement); with an argument, also writes it
# to that file.
#
#   bench/run_cpu.sh [REPORT.md]
#
# Needs build/bench/bench_cpu and build/tools/tandem (cmake -S . -B build
# -DTANDEM_CUDA=OFF && cmake --build build --target bench_cpu tandem). Knobs, from
# the environment: BUILD_DIR (build), N_POSES (20000), STEPS (100), THREADS
# ($(nproc)), MODE (both), REPEAT (1), SCENES (all, e.g. "cubicles alpha-1.5").
set -euo pipefail

cd "$(dirname "$0")/.."
out_file=${1:-}
BUILD_DIR=${BUILD_DIR:-build}
N_POSES=${N_POSES:-20000}
STEPS=${STEPS:-100}
THREADS=${THREADS:-$(nproc)}
MODE=${MODE:-both}
REPEAT=${REPEAT:-1}
ompl=../shared/scenes/ompl
canon=$ompl/canonical
tandem=$BUILD_DIR/tools/tandem
bench=$BUILD_DIR/bench/bench_cpu

if [[ ! -d $canon ]]; then
    echo "run_cpu.sh: $canon is absent; no scenes to run" >&2
    exit 0
fi
for exe in "$tandem" "$bench"; do
    if [[ ! -x $exe ]]; then
        echo "run_cpu.sh: $exe is missing; build it first (cmake --build $BUILD_DIR --target bench_cpu tandem)" >&2
        exit 1
    fi
done

scenes=${SCENES:-}
if [[ -z $scenes ]]; then
    scenes=$(for f in "$canon"/*.env.obj; do basename "$f" .env.obj; done | sort)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
commands=()  # every command run, for the report
results=()   # "set<TAB>RESULT line"
raw=""       # BUILD, WARNING and DISAGREE output

run() {
    commands+=("$*")
    "$@"
}

for name in $scenes; do
    env_mesh=$canon/$name.env.obj
    robot_mesh=$canon/$name.robot.obj
    if [[ ! -f $env_mesh || ! -f $robot_mesh || ! -f $ompl/$name.cfg ]]; then
        echo "run_cpu.sh: skipping $name: needs $env_mesh, $robot_mesh and $ompl/$name.cfg" >&2
        continue
    fi
    sets=(random)
    run "$tandem" poses random --cfg "$ompl/$name.cfg" --n "$N_POSES" --seed 1 --out "$work/$name.random"
    if [[ -f $ompl/$name.path ]]; then
        run "$tandem" poses path --path "$ompl/$name.path" --steps "$STEPS" --out "$work/$name.path"
        sets+=(path)
    fi
    for set in "${sets[@]}"; do
        echo "run_cpu.sh: $name, $set poses" >&2
        log=$work/$name.$set.log
        if ! run "$bench" --env "$env_mesh" --robot "$robot_mesh" --poses "$work/$name.$set" \
            --threads "$THREADS" --mode "$MODE" --name "$name" --repeat "$REPEAT" >"$log"; then
            echo "run_cpu.sh: bench_cpu failed on $name ($set poses)" >&2
            raw+="bench_cpu FAILED on $name ($set poses)"$'\n'
        fi
        while IFS= read -r line; do
            results+=("$set"$'\t'"$line")
        done < <(grep '^RESULT ' "$log" || true)
        raw+="## $name, $set poses"$'\n'"$(grep -v '^RESULT \|^bool \|^contacts \|^           ' "$log" || true)"$'\n'
    done
done

report() {
    local cpu
    cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || echo unknown)
    echo "# Tandem CPU engine vs FCL $("$bench" --fcl-version)"
    echo
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Machine: $cpu, nproc $(nproc)$(git rev-parse --short HEAD >/dev/null 2>&1 && echo ", commit $(git rev-parse --short HEAD)")"
    echo "- Command: \`BUILD_DIR=$BUILD_DIR N_POSES=$N_POSES STEPS=$STEPS THREADS=$THREADS MODE=$MODE REPEAT=$REPEAT bench/run_cpu.sh${out_file:+ $out_file}\`"
    echo "- Queries per second, best of $REPEAT; only the query loops are timed (tree builds excluded; see the BUILD"
    echo "  lines below). FCL: BVHModel<OBBRSS>, one CollisionObject pair per thread; Tandem: tdm_collide on one"
    echo "  thread, tdm_cpu_engine_run on N. Bool mode stops at the first intersecting triangle pair; contacts"
    echo "  mode counts every pair. Disagreements: poses whose answers (bool) or pair counts (contacts) differ;"
    echo "  explained = the exhaustive exact search sides with Tandem and every pair FCL got wrong touches, or"
    echo "  lies within 1e-6 of the scene's diagonal, or is a zero-area triangle FCL reports."
    echo
    echo "<details><summary>Commands run</summary>"
    echo
    echo '```'
    printf '%s\n' "${commands[@]}"
    echo '```'
    echo "</details>"
    echo
    echo "| scene | poses | mode | FCL 1t qps | Tandem 1t qps | Tandem/FCL | FCL ${THREADS}t qps | Tandem ${THREADS}t qps | Tandem/FCL | disagreements |"
    echo "|---|---|---|--:|--:|--:|--:|--:|--:|---|"
    local entry
    for entry in "${results[@]}"; do
        awk -F'\t' '{
            set = $1; n = split($2, kv, " ")
            for (i = 2; i <= n; i++) { split(kv[i], p, "="); v[p[1]] = p[2] }
            d = v["disagree"] " (" v["explained"] " explained)"
            if (v["tdm_wrong"] + 0 > 0) d = d ", **" v["tdm_wrong"] " Tandem wrong**"
            printf "| %s | %s %s | %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %s |\n",
                v["scene"], v["poses"], set, v["mode"], v["fcl1"], v["tdm1"], v["tdm1"] / v["fcl1"],
                v["fclN"], v["tdmN"], v["tdmN"] / v["fclN"], d
        }' <<<"$entry"
    done
    echo
    echo "<details><summary>Raw output (builds, disagreements)</summary>"
    echo
    echo '```'
    printf '%s' "$raw"
    echo '```'
    echo "</details>"
}

if [[ -n $out_file ]]; then
    report | tee "$out_file"
else
    report
fi
