#!/usr/bin/env bash
# Issue 13 on the device machine, in one call: the GPU-relevant suites of a pack, then
# bench/run_robot_configs.sh (FCL against every backend, both modes) and the GPU backend with
# culling off (TDM_ENGINE_CULL=0) for the with/without comparison.
#   bench/device_issue13.sh PACK PANDA CONFIGS OUTDIR
# PACK: a bench/device_pack.sh folder (bin/ with tandem, bench_robot and the test_* suites; lib/).
# PANDA: as run_robot_configs.sh wants it. CONFIGS: a configurations file (.xz is unpacked).
# BUILD_ABS: the absolute path of the build the test executables came from (they run tandem and
# tandemd from there; linked here to the pack's copies). SUITES: which test_* to run.
set -uo pipefail
cd "$(dirname "$0")/.."
pack=$(cd "${1:?PACK}" && pwd) panda=${2:?PANDA} configs=${3:?CONFIGS} out=${4:?OUTDIR}
export LD_LIBRARY_PATH=$pack/lib
nvidia-smi -L
if [[ $configs == *.xz ]]; then xz -dc "$configs" > "$out/configs.txt"; configs=$out/configs.txt; fi
if [[ -n ${BUILD_ABS:-} ]]; then
    mkdir -p "$BUILD_ABS/daemon" "$BUILD_ABS/tools"
    ln -sf "$pack/bin/tandemd" "$BUILD_ABS/daemon/tandemd"
    ln -sf "$pack/bin/tandem" "$BUILD_ABS/tools/tandem"
fi
for t in ${SUITES:-gpu scheduler robot_scene motions}; do
    echo "## test_$t" >> "$out/tests.txt"
    timeout 300 "$pack/bin/test_$t" --verbose >> "$out/tests.txt" 2>&1
    echo "test_$t exit $?: $(grep -E 'Synthesis' "$out/tests.txt" | tail -1)"
done
bash bench/run_robot_configs.sh "$pack/bin" "$panda" "$configs" "$out/robot_configs.md"
CULL=0 BACKENDS=gpu MODES=bool bash bench/run_robot_configs.sh "$pack/bin" "$panda" "$configs" "$out/robot_configs_nocull.md"
rm -f "$out/configs.txt"
