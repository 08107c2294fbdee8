#!/usr/bin/env bash
# Attached collision objects against the FCL reference on real scenes: each of the 7
# MotionBenchMaker Panda scenarios' scene0001.yaml (SCENES=all: every scene, 100 a
# scenario, each with its own N configurations) with two objects attached
# (bench/attached_scene.py: a tool of two primitives on panda_hand, the fingers its
# touch links; a mesh on panda_link5 given in the planning frame), N random
# configurations uniform in the joint limits, `tandem check --urdf` against bench_robot
# (the FCL reference: robot/'s model and pairs, FCL's geometry) in bool mode.
#
#   bench/run_attached.sh [BUILD_DIR] [N] [SEED] [BACKEND]
#     BUILD_DIR  with tools/tandem and bench/bench_robot   (default build)
#     N          configurations per scene                   (default 20000)
#     SEED       bench/robot_configs.py's seed              (default 1)
#     BACKEND    tandem check --backend: cpu | gpu | hybrid (default cpu)
#   env: PANDA (default ../shared/robots/panda beside the checkout), WORK (scratch, default mktemp -d),
#        SCENES (first: scene0001 of each scenario, the default; all: every scene),
#        PLANE=1 (bench/attached_scene.py --plane: a world plane too),
#        CONE=1 (bench/attached_scene.py --cone: a cone in the tool and one in the world)
#
# Prints a markdown table: per scenario, configurations colliding without the objects
# and with them (Tandem, FCL), and the configurations where the two differ (Tandem
# colliding and FCL free, and the other way). Curved primitives (the tool's cylinder, the cones)
# are tessellated by Tandem to contain the true shape within 0.1 mm, so "Tandem only"
# may be non-zero within that distance: each such configuration is measured with
# bench_robot --near-out (the smallest FCL distance of a checked pair with a curved
# primitive) and counted "near" within 0.11 mm (the run_robot_all.sh rule). "FCL only"
# must be 0.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
N=${2:-20000}
SEED=${3:-1}
BACKEND=${4:-cpu}
SCENES=${SCENES:-first}
[[ $SCENES == first || $SCENES == all ]] || { echo "run_attached.sh: SCENES must be first or all" >&2; exit 2; }
PANDA=${PANDA:-$ROOT/../shared/robots/panda}
WORK=${WORK:-$(mktemp -d)}
TANDEM=$BUILD/tools/tandem
FCLREF=$BUILD/bench/bench_robot
for f in "$TANDEM" "$FCLREF" "$PANDA/panda.urdf" "$PANDA/problems.tar.bz2"; do
    [[ -e $f ]] || { echo "run_attached.sh: $f not found" >&2; exit 1; }
done
robot=(--urdf "$PANDA/panda.urdf" --srdf "$PANDA/panda.srdf")
[[ -d $WORK/problems ]] || tar -xjf "$PANDA/problems.tar.bz2" -C "$WORK"
"$TANDEM" robot joints --urdf "$PANDA/panda.urdf" > "$WORK/joints.txt"
python3 "$ROOT/bench/robot_configs.py" "$WORK/joints.txt" "$N" "$SEED" > "$WORK/configs.txt"
echo "| scenario | configurations | colliding without | with: Tandem ($BACKEND) | with: FCL | Tandem only (near) | FCL only |"
echo "|---|--:|--:|--:|--:|--:|--:|"
total_t=0 total_f=0 total_near=0
for dir in "$WORK"/problems/*_panda; do
    sc=$(basename "$dir")
    : > "$WORK/$sc.plain.out"; : > "$WORK/$sc.tandem.out"; : > "$WORK/$sc.fcl.out"; : > "$WORK/$sc.cfg"
    if [[ $SCENES == all ]]; then scenes=("$dir"/scene*.yaml); else scenes=("$dir/scene0001.yaml"); fi
    for scene in "${scenes[@]}"; do # the scenario's files: each scene's answers appended, in scene order
        base=$(basename "$scene" .yaml)
        python3 "$ROOT/bench/attached_scene.py" "$scene" "$WORK/$sc.$base.yaml" ${PLANE:+--plane} ${CONE:+--cone}
        "$TANDEM" check "${robot[@]}" --world "$scene" --configs "$WORK/configs.txt" --mode bool \
            --backend "$BACKEND" --out "$WORK/part.out" > /dev/null
        cat "$WORK/part.out" >> "$WORK/$sc.plain.out"
        "$TANDEM" check "${robot[@]}" --world "$WORK/$sc.$base.yaml" --configs "$WORK/configs.txt" --mode bool \
            --backend "$BACKEND" --out "$WORK/part.out" > /dev/null
        cat "$WORK/part.out" >> "$WORK/$sc.tandem.out"
        "$FCLREF" "${robot[@]}" --world "$WORK/$sc.$base.yaml" --configs "$WORK/configs.txt" --mode bool \
            --out "$WORK/part.out" > /dev/null
        cat "$WORK/part.out" >> "$WORK/$sc.fcl.out"
        awk -v s="$base" '{print s, $0}' "$WORK/configs.txt" >> "$WORK/$sc.cfg"
    done
    [[ $SCENES == all ]] || cp "$WORK/$sc.scene0001.yaml" "$WORK/$sc.yaml" # the file bench/results/attached's steps carry
    total=$(wc -l < "$WORK/$sc.tandem.out")
    read -r plain t f t_only f_only < <(paste "$WORK/$sc.plain.out" "$WORK/$sc.tandem.out" "$WORK/$sc.fcl.out" |
        awk '{p += $1 > 0; t += $2 > 0; f += $3 > 0; to += ($2 > 0 && $3 == 0); fo += ($2 == 0 && $3 > 0)}
             END {print p, t, f, to, fo}')
    near=0
    if ((t_only > 0)); then # each such configuration's distance to a curved primitive, in its own scene
        paste "$WORK/$sc.tandem.out" "$WORK/$sc.fcl.out" | awk '$1 > 0 && $2 == 0 {print NR}' > "$WORK/$sc.tonly"
        while read -r line; do
            read -r base q < <(sed -n "${line}p" "$WORK/$sc.cfg")
            echo "$q" > "$WORK/one.cfg"
            "$FCLREF" "${robot[@]}" --world "$WORK/$sc.$base.yaml" --configs "$WORK/one.cfg" --mode bool \
                --near-out "$WORK/one.near" > /dev/null
            near=$((near + $(awk '$1 != "inf" && $1 <= 0.00011' "$WORK/one.near" | wc -l)))
        done < "$WORK/$sc.tonly"
    fi
    echo "| $sc | $total | $plain | $t | $f | $t_only ($near) | $f_only |"
    total_t=$((total_t + t_only)) total_f=$((total_f + f_only)) total_near=$((total_near + near))
done
echo
echo "Differences: Tandem only $total_t ($total_near within 0.11 mm of a curved primitive), FCL only $total_f" \
    "(SCENES=$SCENES${PLANE:+ PLANE=$PLANE}${CONE:+ CONE=$CONE} bench/run_attached.sh $BUILD $N $SEED $BACKEND)."
