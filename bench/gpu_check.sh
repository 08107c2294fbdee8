#!/usr/bin/env bash
# GPU-resident engine against the CPU engine on the OMPL scenes: same poses, both
# modes; prints each run's summary line and whether the --out files agree.
#   BUILD_DIR=build N_POSES=100000 bench/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
N_POSES=${N_POSES:-100000}
ompl=../shared/scenes/ompl
tandem=$BUILD_DIR/tools/tandem
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -d $ompl/canonical ]] || { echo "gpu_check.sh: $ompl/canonical is absent" >&2; exit 0; }
for name in $(for f in "$ompl"/canonical/*.env.obj; do basename "$f" .env.obj; done | sort); do
    "$tandem" poses random --cfg "$ompl/$name.cfg" --n "$N_POSES" --seed 1 --out "$work/p"
    for mode in bool contacts; do
        for backend in cpu gpu; do
            line=$("$tandem" check --env "$ompl/canonical/$name.env.obj" --robot "$ompl/canonical/$name.robot.obj" \
                --poses "$work/p" --mode "$mode" --backend "$backend" --out "$work/$backend" | tail -1)
            echo "$name $mode $backend $line"
        done
        if cmp -s "$work/cpu" "$work/gpu"; then
            echo "$name $mode agree"
        else
            echo "$name $mode DIFFER: $(paste "$work/cpu" "$work/gpu" | awk '$1 != $2' | wc -l) poses"
            paste "$work/cpu" "$work/gpu" | awk '$1 != $2 {print "  pose " NR-1 ": cpu " $1 " gpu " $2}' | head -5 || true
        fi
    done
done
