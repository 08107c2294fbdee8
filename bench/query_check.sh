#!/usr/bin/env bash
# `tandem query` against `tandem check` on every OMPL scene: N_POSES random poses (seed 1) and the
# dense path, both modes, over TCP and a Unix socket to one tandemd; prints whether every --out file
# equals check's, pose for pose.
#   BUILD_DIR=build N_POSES=20000 bench/query_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
N_POSES=${N_POSES:-20000}
ompl=../shared/scenes/ompl
tandem=$BUILD_DIR/tools/tandem
work=$(mktemp -d)
pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
[[ -d $ompl/canonical ]] || { echo "query_check.sh: $ompl/canonical is absent" >&2; exit 0; }
port=$((7600 + RANDOM % 1000))
"$BUILD_DIR/daemon/tandemd" --listen "127.0.0.1:$port" --listen "unix:$work/tandemd.sock" --data-dir "$work/data" \
    --log-level warn &
pid=$!
for _ in $(seq 100); do "$tandem" stats --server "127.0.0.1:$port" > /dev/null 2>&1 && break; sleep 0.1; done
bad=0
for name in $(for f in "$ompl"/canonical/*.env.obj; do basename "$f" .env.obj; done | sort); do
    "$tandem" poses random --cfg "$ompl/$name.cfg" --n "$N_POSES" --seed 1 --out "$work/random"
    sets=(random)
    if [[ -f $ompl/$name.path ]]; then
        "$tandem" poses path --path "$ompl/$name.path" --steps 100 --out "$work/path"
        sets+=(path)
    fi
    for set in "${sets[@]}"; do
        for mode in bool contacts; do
            args=(--env "$ompl/canonical/$name.env.obj" --robot "$ompl/canonical/$name.robot.obj" --poses "$work/$set" --mode "$mode")
            "$tandem" check "${args[@]}" --out "$work/check" > /dev/null
            for server in "127.0.0.1:$port" "unix:$work/tandemd.sock"; do
                summary=$("$tandem" query --server "$server" "${args[@]}" --connections 4 --out "$work/query" | tail -1)
                if cmp -s "$work/check" "$work/query"; then verdict=agree; else verdict=DIFFER; bad=1; fi
                echo "$name $set $mode ${server%%:*}: $verdict ($summary)"
            done
        done
    done
done
exit $bad
