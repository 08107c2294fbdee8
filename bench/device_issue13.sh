#!/usr/bin/env bash
# Issue 13 on the device machine, in parts that each fit one device call (10 minutes):
#   PART=configs  the GPU-relevant test suites of the pack, then bench/run_robot_configs.sh (FCL 1 and
#                 N threads against tandem check --urdf on every backend, both modes)
#   PART=motions  bench/run_robot_motions.sh (FCL against tandem motions, cpu and gpu), then
#                 bench/run_robot_server.sh (tandemd --engine gpu, 64 clients: configurations and motions),
#                 then, when python3 is there, bench/run_robot_all.sh on the GPU backend (all 700 scenes)
#   PART=ompl     bench/run_ompl.sh (RRTConnect on the 700 problems, the batched roadmap)
#
#   PART=... bench/device_issue13.sh PACK PANDA CONFIGS OUTDIR
# PACK: a bench/device_pack.sh folder (bin/: tandem, tandemd, bench_robot, bench_robot_server,
# ompl_plan, test_*; lib/). PANDA: panda.urdf, panda.srdf, meshes/, problems.tar.bz2, and
# problems/<scenario>_panda/scene0001.yaml (extracted from the archive when missing). CONFIGS: a
# configurations file (bench/robot_configs.py; .xz is unpacked). BUILD_ABS: the absolute path of the
# build the test executables came from (they run tandem, tandemd and ompl_plan from there; linked here
# to the pack's copies). SUITES: which test_* to run.
set -uo pipefail
cd "$(dirname "$0")/.."
pack=$(cd "${1:?PACK}" && pwd) panda=$(cd "${2:?PANDA}" && pwd) configs=${3:?CONFIGS} out=${4:?OUTDIR}
PART=${PART:-configs}
export LD_LIBRARY_PATH=$pack/lib
nvidia-smi -L
if [[ ! -d $panda/problems/box_panda ]]; then tar xjf "$panda/problems.tar.bz2" -C "$panda"; fi
if [[ $configs == *.xz ]]; then xz -dc "$configs" > /tmp/configs.txt; configs=/tmp/configs.txt; fi
case $PART in
configs)
    if [[ -n ${BUILD_ABS:-} ]]; then
        mkdir -p "$BUILD_ABS/daemon" "$BUILD_ABS/tools" "$BUILD_ABS/examples/ompl"
        ln -sf "$pack/bin/tandemd" "$BUILD_ABS/daemon/tandemd"
        ln -sf "$pack/bin/tandem" "$BUILD_ABS/tools/tandem"
        ln -sf "$pack/bin/ompl_plan" "$BUILD_ABS/examples/ompl/ompl_plan"
    fi
    for t in ${SUITES:-gpu scheduler solid robot_scene motions robotd daemon ompl ompl_checker}; do
        echo "## test_$t" >> "$out/tests.txt"
        timeout 300 "$pack/bin/test_$t" --verbose >> "$out/tests.txt" 2>&1
        echo "test_$t exit $?: $(grep -E 'Synthesis' "$out/tests.txt" | tail -1)"
    done
    bash bench/run_robot_configs.sh "$pack/bin" "$panda" "$configs" "$out/robot_configs.md"
    ;;
motions)
    bash bench/run_robot_motions.sh "$pack/bin" "$panda" "$configs" "$out/robot_motions.md"
    ENGINE=gpu bash bench/run_robot_server.sh "$pack/bin" "$panda" "$configs" "$out/robot_server_gpu.md"
    if command -v python3 > /dev/null; then
        mkdir -p /tmp/sweep_build/tools /tmp/sweep_build/bench
        ln -sf "$pack/bin/tandem" /tmp/sweep_build/tools/tandem
        ln -sf "$pack/bin/bench_robot" /tmp/sweep_build/bench/bench_robot
        PANDA=$panda WORK=/tmp/sweep timeout 240 bash bench/run_robot_all.sh /tmp/sweep_build 1000 1 "$(nproc)" gpu \
            > "$out/robot_exactness_gpu.md" 2>&1
        tail -12 "$out/robot_exactness_gpu.md"
    else
        echo "no python3 here: the GPU exactness sweep (run_robot_all.sh) is not run"
    fi
    ;;
ompl)
    PANDA=$panda OMPL_PLAN=$pack/bin/ompl_plan TANDEMD=$pack/bin/tandemd bash bench/run_ompl.sh "$out/ompl.md"
    ;;
*)
    echo "device_issue13.sh: PART is configs, motions or ompl" >&2
    exit 2
    ;;
esac
rm -f /tmp/configs.txt
