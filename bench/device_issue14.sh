#!/usr/bin/env bash
# Issue 14 on the device machine, in parts that each fit one device call (10 minutes):
#   STEP=tests    the suites that touch the GPU or the daemon (SUITES), from the pack, then
#                 BEFORE=OLD AFTER=PACK bench/compare_builds.sh when OLD is given (speed and answers
#                 against an older build: the exact box stage, the work accounts and the pooler's
#                 fairness must cost nothing measurable)
#   STEP=soak     bench/run_load.sh on the pack (capacity, ACTIVE + IDLE connections, a soak of SOAK_S
#                 seconds with tandemd's RSS and GPU memory sampled)
#
#   STEP=... bench/device_issue14.sh PACK OUTDIR [OLD]
# PACK, OLD: bench/device_pack.sh folders. BUILD_ABS: the absolute path of the build the test
# executables came from (they run tandem and tandemd from there; linked here to the pack's copies).
set -uo pipefail
cd "$(dirname "$0")/.."
pack=$(cd "${1:?PACK}" && pwd) out=${2:?OUTDIR} old=${3:-}
STEP=${STEP:-tests}
export LD_LIBRARY_PATH=$pack/lib
mkdir -p "$out"
nvidia-smi -L
case $STEP in
tests)
    if [[ -n ${BUILD_ABS:-} ]]; then
        mkdir -p "$BUILD_ABS/daemon" "$BUILD_ABS/tools"
        ln -sf "$pack/bin/tandemd" "$BUILD_ABS/daemon/tandemd"
        ln -sf "$pack/bin/tandem" "$BUILD_ABS/tools/tandem"
    fi
    for t in ${SUITES:-gpu engine scheduler pooler daemon limits tenants tls ops robotd client}; do
        [[ -x $pack/bin/test_$t ]] || { echo "test_$t: not in the pack"; continue; }
        echo "## test_$t" >> "$out/tests.txt"
        timeout 240 "$pack/bin/test_$t" --verbose >> "$out/tests.txt" 2>&1
        echo "test_$t exit $?: $(grep -E 'Synthesis' "$out/tests.txt" | tail -1)"
    done
    if [[ -n $old ]]; then
        # compare_builds.sh's own knobs (PART, SCENES, BACKENDS, REPEAT, ...) come from the environment
        BEFORE=$old AFTER=$pack THREADS=$(nproc) bash bench/compare_builds.sh "$out/compare.md" > "$out/compare.log" 2>&1
        echo "compare_builds exit $?"
        tail -30 "$out/compare.md"
    fi
    ;;
soak)
    bash bench/run_load.sh "$pack" "$out/load"
    echo "run_load exit $?"
    ;;
*)
    echo "device_issue14.sh: STEP is tests or soak" >&2
    exit 2
    ;;
esac
