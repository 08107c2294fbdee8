#!/usr/bin/env bash
# Issue 12 on the device machine, in one call: the GPU-relevant test suites of the new build, then
# bench/compare_builds.sh (the previous commit against the new one on the same poses).
#   PART=tests|check|server bench/device_issue12.sh OUTDIR
# Expects .packs/before.tar.gz and .packs/after.tar.gz (bench/device_pack.sh, ARCHIVE=1; the after
# pack with its test executables), or the packs' folders named by BEFORE and AFTER (e.g. two packs
# sharing one lib/ folder, unpacked from one archive), and the OMPL scenes in .ompl (cfg + canonical objs). The test
# executables name tandemd and tandem by the absolute paths of the build they came from: give that
# build's absolute path as BUILD_ABS for PART=tests; they are linked there to the pack's copies.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: PART=... bench/device_issue12.sh OUTDIR}
PART=${PART:-tests}
BUILD_ABS=${BUILD_ABS:-}
BEFORE=${BEFORE:-.packs/before.tar.gz}
AFTER=${AFTER:-.packs/after.tar.gz}
if [[ -d $AFTER ]]; then
    a=$(cd "$AFTER" && pwd)
else
    a=$(mktemp -d)
    tar xzf "$AFTER" -C "$a"
fi
export LD_LIBRARY_PATH=$a/lib
nvidia-smi -L
case $PART in
tests)
    [[ -n $BUILD_ABS ]] || { echo "device_issue12.sh: PART=tests needs BUILD_ABS" >&2; exit 2; }
    mkdir -p "$BUILD_ABS/daemon" "$BUILD_ABS/tools"
    ln -sf "$a/bin/tandemd" "$BUILD_ABS/daemon/tandemd"
    ln -sf "$a/bin/tandem" "$BUILD_ABS/tools/tandem"
    for t in ${SUITES:-gpu scheduler engine pool pooler daemon cli}; do
        echo "## test_$t" >> "$out/tests.txt"
        t_out=$(mktemp)
        timeout 240 "$a/bin/test_$t" --verbose > "$t_out" 2>&1
        rc=$?
        cat "$t_out" >> "$out/tests.txt"
        echo "test_$t exit $rc: $(grep -E 'Synthesis' "$t_out")"
    done
    ;;
check|server)
    BEFORE=$BEFORE AFTER=$AFTER OMPL=.ompl PART=$PART \
        bash bench/compare_builds.sh "$out/compare_$PART.md" > "$out/compare_$PART.log" 2>&1
    echo "compare $PART exit $?"
    grep -E '^\| ' "$out/compare_$PART.md"
    ;;
esac
