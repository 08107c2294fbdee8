#!/usr/bin/env bash
# Compares `tandem check --urdf` (CPU engine) with the FCL reference bench_robot on the
# MotionBenchMaker Panda problems (issue 13: "Must hold: Exactness").
#
#   bench/run_robot.sh [BUILD_DIR] [N] [SEED] [THREADS] [MODE]
#     BUILD_DIR  with tools/tandem and bench/bench_robot   (default build-f)
#     N          random configurations per scenario         (default 2000)
#     SEED       generator seed                             (default 1)
#     THREADS    --threads for both engines                 (default 2)
#     MODE       bool | contacts                            (default bool)
#   env: PANDA (default ../shared/robots/panda beside the checkout), SCENE (default 0001),
#        REQUESTS=1 also checks every request's start and goal state on its own scene.
#
# Per scenario: N configurations uniform within the joint limits (`tandem robot joints`;
# python3 random.Random(SEED), one stream per scenario) on sceneSCENE.yaml, both engines,
# then the comparison of their --out files as booleans (count > 0). Prints a markdown
# table; the disagreeing configurations are kept in $WORK/<scenario>.disagree.
# Contacts mode: a configuration colliding only by containment in a primitive
# (workpile/solid.h) has count 0 in Tandem's --out, so compare bool mode for
# exactness. All 700 scenes: bench/run_robot_all.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-f}
N=${2:-2000}
SEED=${3:-1}
THREADS=${4:-2}
MODE=${5:-bool}
PANDA=${PANDA:-$ROOT/../shared/robots/panda}
SCENE=${SCENE:-0001}
REQUESTS=${REQUESTS:-0}
TANDEM=$BUILD/tools/tandem
FCLREF=$BUILD/bench/bench_robot
URDF=$PANDA/panda.urdf
SRDF=$PANDA/panda.srdf
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
[ -d "$WORK/problems" ] || tar xjf "$PANDA/problems.tar.bz2" -C "$WORK"
"$TANDEM" robot joints --urdf "$URDF" --srdf "$SRDF" > "$WORK/joints.txt"

qps() { tail -1 "$1" | sed -n 's/.*qps=\([0-9.]*\).*/\1/p'; }

# compare FCL TANDEM: prints "fcl_col tdm_col fcl_only tdm_only"
compare() {
    paste "$1" "$2" | awk '{f = $1 > 0; t = $2 > 0; fc += f; tc += t; if (f && !t) fo++; if (t && !f) to++}
                            END {printf "%d %d %d %d\n", fc, tc, fo, to}'
}

echo "| scenario | configurations | FCL colliding | Tandem colliding | FCL-colliding, Tandem-free | Tandem-colliding, FCL-free | FCL configs/s | Tandem configs/s |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for dir in "$WORK"/problems/*_panda; do
    sc=$(basename "$dir")
    scene=$dir/scene$SCENE.yaml
    python3 - "$WORK/joints.txt" "$N" "$SEED" "$sc" > "$WORK/$sc.cfg" <<'EOF'
import random, sys, zlib
lim = [tuple(map(float, l.split()[1:3])) for l in open(sys.argv[1]) if l.strip()]
rng = random.Random(int(sys.argv[3]) * 1000003 + zlib.crc32(sys.argv[4].encode()))
for _ in range(int(sys.argv[2])):
    print(" ".join("%.17g" % rng.uniform(a, b) for a, b in lim))
EOF
    "$FCLREF" --urdf "$URDF" --srdf "$SRDF" --world "$scene" --configs "$WORK/$sc.cfg" --mode "$MODE" \
        --threads "$THREADS" --out "$WORK/$sc.fcl" > "$WORK/$sc.fcl.log"
    "$TANDEM" check --urdf "$URDF" --srdf "$SRDF" --world "$scene" --configs "$WORK/$sc.cfg" --mode "$MODE" \
        --threads "$THREADS" --backend cpu --out "$WORK/$sc.tdm" > "$WORK/$sc.tdm.log"
    read -r fc tc fo to < <(compare "$WORK/$sc.fcl" "$WORK/$sc.tdm")
    paste "$WORK/$sc.fcl" "$WORK/$sc.tdm" "$WORK/$sc.cfg" | awk '($1 > 0) != ($2 > 0) {print NR": "$0}' \
        > "$WORK/$sc.disagree"
    echo "| $sc (scene$SCENE, random) | $N | $fc | $tc | $fo | $to | $(qps "$WORK/$sc.fcl.log") | $(qps "$WORK/$sc.tdm.log") |"

    if [ "$REQUESTS" = 1 ]; then
        # Every request's start and goal on its own scene (2 configurations a scene).
        : > "$WORK/$sc.req.fcl"; : > "$WORK/$sc.req.tdm"; : > "$WORK/$sc.req.cfg"
        for req in "$dir"/request*.yaml; do
            k=${req##*/request}; k=${k%.yaml}
            python3 - "$WORK/joints.txt" "$req" > "$WORK/req.cfg" <<'EOF'
import sys, yaml
names = [l.split()[0] for l in open(sys.argv[1]) if l.strip()]
r = yaml.safe_load(open(sys.argv[2]))
js = r["start_state"]["joint_state"]
start = dict(zip(js["name"], js["position"]))
goal = {c["joint_name"]: c["position"] for c in r["goal_constraints"][0]["joint_constraints"]}
for st in (start, goal):
    print(" ".join("%.17g" % float(st[n]) for n in names))
EOF
            "$FCLREF" --urdf "$URDF" --srdf "$SRDF" --world "$dir/scene$k.yaml" --configs "$WORK/req.cfg" \
                --mode "$MODE" --threads 1 --out "$WORK/req.fcl" > /dev/null
            "$TANDEM" check --urdf "$URDF" --srdf "$SRDF" --world "$dir/scene$k.yaml" --configs "$WORK/req.cfg" \
                --mode "$MODE" --threads 1 --backend cpu --out "$WORK/req.tdm" > /dev/null
            cat "$WORK/req.fcl" >> "$WORK/$sc.req.fcl"; cat "$WORK/req.tdm" >> "$WORK/$sc.req.tdm"
            sed "s/^/$k /" "$WORK/req.cfg" >> "$WORK/$sc.req.cfg"
        done
        nr=$(wc -l < "$WORK/$sc.req.fcl")
        read -r fc tc fo to < <(compare "$WORK/$sc.req.fcl" "$WORK/$sc.req.tdm")
        paste "$WORK/$sc.req.fcl" "$WORK/$sc.req.tdm" "$WORK/$sc.req.cfg" | awk '($1 > 0) != ($2 > 0)' \
            > "$WORK/$sc.req.disagree"
        echo "| $sc (start+goal, own scenes) | $nr | $fc | $tc | $fo | $to | – | – |"
    fi
done
echo
echo "work dir: $WORK"
