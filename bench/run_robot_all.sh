#!/usr/bin/env bash
# The exactness sweep of issue 13 ("Must hold: Exactness"): `tandem check --urdf`
# against the FCL reference bench_robot on ALL 700 MotionBenchMaker Panda scenes.
#
#   bench/run_robot_all.sh [BUILD_DIR] [N] [SEED] [THREADS] [BACKEND]
#     BUILD_DIR  with tools/tandem and bench/bench_robot      (default build)
#     N          random configurations per scene               (default 1000)
#     SEED       generator seed                                (default 1)
#     THREADS    --threads for both                            (default 2)
#     BACKEND    tandem check --backend: cpu | gpu | hybrid    (default cpu)
#   env: PANDA (default ../shared/robots/panda beside the checkout), WORK (scratch
#        folder, default a new mktemp -d; problems.tar.bz2 is extracted there).
#
# Per scene (sceneNNNN.yaml of each of the 7 scenarios): its request's start state
# and goal joint state, then N configurations uniform within the joint limits of
# `tandem robot joints` (python3 random.Random seeded from SEED, the scenario and
# the scene), checked by both in bool mode and compared as booleans. Prints a
# markdown table per scenario (start/goal and random apart) and the totals.
# Every configuration Tandem calls colliding and FCL free is then measured with
# bench_robot --near-out (the smallest FCL distance from a checked pair with a
# curved primitive): "near" when within 0.11 mm (the 0.1 mm tessellation plus
# solid.h's rounding slack). The disagreements are kept in $WORK/disagree.txt
# (scenario scene line fcl tandem distance configuration).
#
# Then the made-up scenes of bench/scenes/ (a link wholly inside a primitive, no
# surfaces touching): N random configurations each, both engines, compared alike.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
N=${2:-1000}
SEED=${3:-1}
THREADS=${4:-2}
BACKEND=${5:-cpu}
PANDA=${PANDA:-$ROOT/../shared/robots/panda}
TANDEM=$BUILD/tools/tandem
FCLREF=$BUILD/bench/bench_robot
URDF=$PANDA/panda.urdf
SRDF=$PANDA/panda.srdf
WORK=${WORK:-$(mktemp -d)}
NEAR=0.00011
mkdir -p "$WORK"
[ -d "$WORK/problems" ] || tar xjf "$PANDA/problems.tar.bz2" -C "$WORK"
"$TANDEM" robot joints --urdf "$URDF" --srdf "$SRDF" > "$WORK/joints.txt"

# Every scene's configuration file, in one python run: $WORK/cfg/<scenario>/NNNN.cfg
python3 - "$WORK" "$N" "$SEED" <<'EOF'
import os, random, sys, zlib, yaml
work, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
joints = [l.split() for l in open(os.path.join(work, "joints.txt")) if l.strip()]
names = [j[0] for j in joints]
lim = [(float(j[1]), float(j[2])) for j in joints]
probs = os.path.join(work, "problems")
for sc in sorted(os.listdir(probs)):
    d = os.path.join(probs, sc)
    if not os.path.isdir(d):
        continue
    os.makedirs(os.path.join(work, "cfg", sc), exist_ok=True)
    for f in sorted(os.listdir(d)):
        if not (f.startswith("request") and f.endswith(".yaml")):
            continue
        k = f[len("request"):-len(".yaml")]
        r = yaml.safe_load(open(os.path.join(d, f)))
        js = r["start_state"]["joint_state"]
        start = dict(zip(js["name"], js["position"]))
        goal = {c["joint_name"]: c["position"] for c in r["goal_constraints"][0]["joint_constraints"]}
        rng = random.Random(seed * 1000003 + zlib.crc32(("%s/%s" % (sc, k)).encode()))
        with open(os.path.join(work, "cfg", sc, k + ".cfg"), "w") as out:
            for st in (start, goal):
                out.write(" ".join("%.17g" % float(st[m]) for m in names) + "\n")
            for _ in range(n):
                out.write(" ".join("%.17g" % rng.uniform(a, b) for a, b in lim) + "\n")
EOF

: > "$WORK/disagree.txt"
T0=$(date +%s)
echo "| scenario | configurations | FCL colliding | Tandem colliding | FCL-colliding, Tandem-free | Tandem-colliding, FCL-free | of which near a curved primitive |"
echo "|---|---:|---:|---:|---:|---:|---:|"
declare -A TOT
for dir in "$WORK"/problems/*_panda; do
    sc=$(basename "$dir")
    # per line: kind (sg or rnd), fcl, tandem
    : > "$WORK/$sc.res"
    for cfg in "$WORK/cfg/$sc"/*.cfg; do
        k=$(basename "$cfg" .cfg)
        scene=$dir/scene$k.yaml
        "$FCLREF" --urdf "$URDF" --srdf "$SRDF" --world "$scene" --configs "$cfg" --mode bool \
            --threads "$THREADS" --out "$WORK/f.out" > /dev/null
        "$TANDEM" check --urdf "$URDF" --srdf "$SRDF" --world "$scene" --configs "$cfg" --mode bool \
            --threads "$THREADS" --backend "$BACKEND" --out "$WORK/t.out" > /dev/null
        paste "$WORK/f.out" "$WORK/t.out" | awk -v k="$k" '{print (NR <= 2 ? "sg" : "rnd"), k, NR, $1, $2}' \
            >> "$WORK/$sc.res"
        # Tandem-only colliding lines: how far from a curved primitive (FCL's distance)
        paste "$WORK/f.out" "$WORK/t.out" | awk '($1 > 0) != ($2 > 0) {print NR}' > "$WORK/d.lines"
        if [ -s "$WORK/d.lines" ]; then
            awk 'NR == FNR {want[$1] = 1; next} FNR in want' "$WORK/d.lines" "$cfg" > "$WORK/d.cfg"
            "$FCLREF" --urdf "$URDF" --srdf "$SRDF" --world "$scene" --configs "$WORK/d.cfg" --mode bool \
                --threads 1 --near-out "$WORK/d.near" > /dev/null
            paste -d' ' "$WORK/d.lines" "$WORK/d.near" "$WORK/d.cfg" | while read -r line dist rest; do
                f=$(sed -n "${line}p" "$WORK/f.out"); t=$(sed -n "${line}p" "$WORK/t.out")
                echo "$sc $k $line $f $t $dist $rest" >> "$WORK/disagree.txt"
            done
        fi
    done
    for kind in sg rnd; do
        read -r nc fc tc fo to < <(awk -v kind="$kind" '$1 == kind {n++; f = $4 > 0; t = $5 > 0; fc += f; tc += t;
            if (f && !t) fo++; if (t && !f) to++} END {printf "%d %d %d %d %d\n", n, fc, tc, fo, to}' "$WORK/$sc.res")
        near=$(awk -v sc="$sc" -v kind="$kind" -v lim="$NEAR" '$1 == sc && $4 == 0 && $5 > 0 &&
            ((kind == "sg") == ($3 <= 2)) && $6 <= lim {c++} END {print c + 0}' "$WORK/disagree.txt")
        label=$([ "$kind" = sg ] && echo "start+goal, 100 scenes" || echo "random, $N per scene")
        echo "| $sc ($label) | $nc | $fc | $tc | $fo | $to | $near |"
        for v in nc fc tc fo to near; do TOT[$kind.$v]=$(( ${TOT[$kind.$v]:-0} + ${!v} )); done
    done
done
for kind in sg rnd; do
    label=$([ "$kind" = sg ] && echo "all start+goal states" || echo "all random")
    echo "| **$label** | ${TOT[$kind.nc]} | ${TOT[$kind.fc]} | ${TOT[$kind.tc]} | ${TOT[$kind.fo]} | ${TOT[$kind.to]} | ${TOT[$kind.near]} |"
done

echo
echo "| made-up scene | configurations | FCL colliding | Tandem colliding | FCL-colliding, Tandem-free | Tandem-colliding, FCL-free |"
echo "|---|---:|---:|---:|---:|---:|"
python3 - "$WORK/joints.txt" "$N" "$SEED" > "$WORK/made.cfg" <<'EOF'
import random, sys
lim = [tuple(map(float, l.split()[1:3])) for l in open(sys.argv[1]) if l.strip()]
rng = random.Random(int(sys.argv[3]) * 1000003 + 17)
for _ in range(int(sys.argv[2])):
    print(" ".join("%.17g" % rng.uniform(a, b) for a, b in lim))
EOF
for scene in "$ROOT"/bench/scenes/*.yaml; do
    "$FCLREF" --urdf "$URDF" --srdf "$SRDF" --world "$scene" --configs "$WORK/made.cfg" --mode bool \
        --threads "$THREADS" --out "$WORK/f.out" > /dev/null
    "$TANDEM" check --urdf "$URDF" --srdf "$SRDF" --world "$scene" --configs "$WORK/made.cfg" --mode bool \
        --threads "$THREADS" --backend "$BACKEND" --out "$WORK/t.out" > /dev/null
    read -r nc fc tc fo to < <(paste "$WORK/f.out" "$WORK/t.out" | awk '{n++; f = $1 > 0; t = $2 > 0; fc += f;
        tc += t; if (f && !t) fo++; if (t && !f) to++} END {printf "%d %d %d %d %d\n", n, fc, tc, fo, to}')
    echo "| bench/scenes/$(basename "$scene") | $nc | $fc | $tc | $fo | $to |"
done
echo
echo "seconds: $(( $(date +%s) - T0 )); disagreements: $WORK/disagree.txt"
