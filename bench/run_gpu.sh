#!/usr/bin/env bash
# Every engine on every OMPL scene, same poses, same host: FCL on 1 and N threads
# and Tandem's CPU engine on 1 and N threads (bench_cpu), then Tandem's hybrid and
# GPU-resident engines (`tandem check --backend hybrid|gpu`). N_POSES random poses
# per scene and, where the scene has a solution path, that path sampled densely;
# bool and contacts. Prints a Markdown report (machine, commands, one row per
# scene x pose set x mode, ratios to FCL); with an argument, also writes it there.
#
#   bench/run_gpu.sh [REPORT.md]
#
# Needs $BUILD_DIR/bench/bench_cpu and $BUILD_DIR/tools/tandem built with CUDA.
# Knobs, from the environment: BUILD_DIR (build), N_POSES (100000), STEPS (100),
# THREADS ($(nproc)), ONE_THREAD_POSES (5000: the one-thread loops time this many
# poses, the first of the set; their rate is what is compared), REPEAT (1), GPU_REPEAT (3: the GPU runs
# take milliseconds, so their best of several is reported),
# SCENES (all, e.g. "cubicles alpha-1.5"), COMMIT (the commit named in the report; default: git's HEAD).
#
# Answers are compared pose for pose: the hybrid's and the GPU's --out files
# against the CPU engine's (N threads), and FCL against the CPU engine inside
# bench_cpu (its disagreements are explained there).
set -euo pipefail

cd "$(dirname "$0")/.."
out_file=${1:-}
BUILD_DIR=${BUILD_DIR:-build}
N_POSES=${N_POSES:-100000}
STEPS=${STEPS:-100}
THREADS=${THREADS:-$(nproc)}
ONE_THREAD_POSES=${ONE_THREAD_POSES:-5000}
REPEAT=${REPEAT:-1}
GPU_REPEAT=${GPU_REPEAT:-3}
ompl=../shared/scenes/ompl
canon=$ompl/canonical
tandem=$BUILD_DIR/tools/tandem
bench=$BUILD_DIR/bench/bench_cpu

if [[ ! -d $canon ]]; then
    echo "run_gpu.sh: $canon is absent; no scenes to run" >&2
    exit 0
fi
for exe in "$tandem" "$bench"; do
    if [[ ! -x $exe ]]; then
        echo "run_gpu.sh: $exe is missing; build it first (cmake --build $BUILD_DIR --target bench_cpu tandem)" >&2
        exit 1
    fi
done

scenes=${SCENES:-$(for f in "$canon"/*.env.obj; do basename "$f" .env.obj; done | sort)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
commands=()
rows=()
raw=""

run() {
    commands+=("$*")
    "$@"
}

# qps from a `tandem check` summary line
qps_of() { sed -n 's/.*qps=\([0-9.]*\).*/\1/p' <<<"$1"; }

for name in $scenes; do
    env_mesh=$canon/$name.env.obj
    robot_mesh=$canon/$name.robot.obj
    if [[ ! -f $env_mesh || ! -f $robot_mesh || ! -f $ompl/$name.cfg ]]; then
        echo "run_gpu.sh: skipping $name: needs $env_mesh, $robot_mesh and $ompl/$name.cfg" >&2
        continue
    fi
    sets=(random)
    run "$tandem" poses random --cfg "$ompl/$name.cfg" --n "$N_POSES" --seed 1 --out "$work/$name.random" >/dev/null
    if [[ -f $ompl/$name.path ]]; then
        run "$tandem" poses path --path "$ompl/$name.path" --steps "$STEPS" --out "$work/$name.path" >/dev/null
        sets+=(path)
    fi
    for set in "${sets[@]}"; do
        poses=$work/$name.$set
        for mode in bool contacts; do
            echo "run_gpu.sh: $name, $set poses, $mode" >&2
            log=$work/log
            if ! run "$bench" --env "$env_mesh" --robot "$robot_mesh" --poses "$poses" --threads "$THREADS" \
                --mode "$mode" --name "$name" --repeat "$REPEAT" --one-thread-poses "$ONE_THREAD_POSES" >"$log"; then
                raw+="bench_cpu FAILED on $name ($set, $mode)"$'\n'
                continue
            fi
            result=$(grep -m1 '^RESULT ' "$log" || true)
            raw+="$(grep -v '^RESULT \|^bool \|^contacts \|^           ' "$log" || true)"
            declare -A q=()
            for backend in cpu hybrid gpu; do
                best=0
                reps=$REPEAT
                [[ $backend == gpu ]] && reps=$GPU_REPEAT
                for ((r = 0; r < reps; r++)); do
                    cmd=("$tandem" check --env "$env_mesh" --robot "$robot_mesh" --poses "$poses" --mode "$mode"
                         --backend "$backend" --threads "$THREADS" --out "$work/$backend.out")
                    commands+=("${cmd[*]}")
                    line=$("${cmd[@]}" 2>&1 | tail -1) || line="FAILED"
                    raw+="$name $set $mode $backend: $line"$'\n'
                    v=$(qps_of "$line")
                    [[ -n $v ]] && best=$(awk -v a="$best" -v b="$v" 'BEGIN { print (b > a ? b : a) }')
                done
                q[$backend]=$best
            done
            diffs=""
            for backend in hybrid gpu; do
                d=$(paste "$work/cpu.out" "$work/$backend.out" | awk '$1 != $2' | wc -l)
                diffs+="$backend:$d,"
                if ((d > 0)); then
                    raw+="## $name $set $mode: $backend differs from the CPU engine on $d poses"$'\n'
                    raw+="$(paste "$work/cpu.out" "$work/$backend.out" | awk '$1 != $2 { print "  pose " NR-1 ": cpu " $1 " '"$backend"' " $2 }' | head -10)"$'\n'
                fi
            done
            rows+=("$set ${result#RESULT } hyb=${q[hybrid]} gpu=${q[gpu]} cpucheck=${q[cpu]} diffs=${diffs%,}")
            unset q
        done
    done
done

report() {
    local cpu gpu
    cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || echo unknown)
    gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
    echo "# Every engine on the OMPL scenes: FCL $("$bench" --fcl-version), Tandem CPU, hybrid, GPU-resident"
    echo
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Machine: $cpu, nproc $(nproc); GPU: ${gpu:-none found}; commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    echo "- Command: \`BUILD_DIR=$BUILD_DIR N_POSES=$N_POSES STEPS=$STEPS THREADS=$THREADS ONE_THREAD_POSES=$ONE_THREAD_POSES REPEAT=$REPEAT GPU_REPEAT=$GPU_REPEAT bench/run_gpu.sh${out_file:+ $out_file}\`"
    echo "- Queries per second (best of $REPEAT; GPU-resident: best of $GPU_REPEAT). FCL (BVHModel<OBBRSS>) and Tandem's CPU engine from bench_cpu: the"
    echo "  one-thread figures time the first $ONE_THREAD_POSES poses of the set (a rate: FCL contacts on the heavy"
    echo "  scenes would take minutes per set otherwise), the $THREADS-thread figures every pose. Hybrid and GPU:"
    echo "  \`tandem check --backend hybrid|gpu\` on every pose, its timed loop (meshes loaded, trees built and"
    echo "  uploaded, kernels loaded before it). Ratios are to FCL on 1 and $THREADS threads."
    echo "- Differences: poses where the hybrid's or GPU's answer (bool, or pair count) differs from the CPU"
    echo "  engine's; FCL vs CPU engine disagreements are bench_cpu's, each explained in the raw output."
    echo
    echo "<details><summary>Commands run</summary>"
    echo
    echo '```'
    printf '%s\n' "${commands[@]}"
    echo '```'
    echo "</details>"
    echo
    echo "| scene | poses | mode | FCL 1t | FCL ${THREADS}t | CPU 1t | CPU ${THREADS}t | hybrid | GPU | GPU / FCL 1t | GPU / FCL ${THREADS}t | hybrid / FCL ${THREADS}t | differences (vs CPU engine) | FCL disagreements |"
    echo "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|"
    local entry
    for entry in "${rows[@]}"; do
        awk '{
            set = $1
            for (i = 2; i <= NF; i++) { k = $i; sub(/=.*/, "", k); val = $i; sub(/^[^=]*=/, "", val); v[k] = val }
            d = v["diffs"]; gsub(/:/, " ", d); gsub(/,/, ", ", d)
            f = v["disagree"] " (" v["explained"] " explained)"
            printf "| %s | %s %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %.1f | %s | %s |\n",
                v["scene"], v["poses"], set, v["mode"], v["fcl1"], v["fclN"], v["tdm1"], v["tdmN"], v["hyb"], v["gpu"],
                v["gpu"] / v["fcl1"], v["gpu"] / v["fclN"], v["hyb"] / v["fclN"], d, f
        }' <<<"$entry"
    done
    echo
    echo "<details><summary>Raw output (tree builds, disagreements)</summary>"
    echo
    echo '```'
    printf '%s\n' "$raw"
    echo '```'
    echo "</details>"
}

if [[ -n $out_file ]]; then
    report | tee "$out_file"
else
    report
fi
