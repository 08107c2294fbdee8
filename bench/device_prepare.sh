#!/usr/bin/env bash
# Prepares the working tree for a device call (the device machine gets a copy of the tree, sees no
# ../shared and has none of our libraries):
#   - .panda: a copy of ../shared/robots/panda (panda.urdf, panda.srdf, meshes, problems.tar.bz2);
#   - build/: a Release build with CUDA (sm_90 and PTX, CMakeLists.txt's default), built;
#   - .packs/new.tar.gz: that build packed (bench/device_pack.sh, ARCHIVE=1) with the test suites
#     named in TESTS (default: every suite that has GPU tests);
#   - both kept out of git (.git/info/exclude), so that they travel only when a call carries them.
#
#   bench/device_prepare.sh
#
# Then a device call with carry [".packs", ".panda"] runs a script such as
# bench/results/ompl_resident/device_steps_N.sh (which unpacks .packs/new.tar.gz: bench/device_unpack.sh).
# Knobs: TESTS="gpu robot_scene ..." (test_* suites to pack; "" none), PANDA (default
# ../shared/robots/panda), JOBS (build jobs, default 2), LINEINFO=1 (device code with source lines,
# TANDEM_CUDA_LINEINFO: compute-sanitizer names lines; the same code otherwise), OMPL=1 (only tandem,
# tandemd, ompl_plan and the TESTS suites: a LINEINFO=1 pack of everything is past the 64 MiB a call carries).
set -euo pipefail
cd "$(dirname "$0")/.."
PANDA=${PANDA:-../shared/robots/panda}
TESTS=${TESTS-gpu robot_scene scheduler pooler robotd daemon}
JOBS=${JOBS:-2}
LINEINFO=${LINEINFO:-0}
[[ -f $PANDA/panda.urdf && -f $PANDA/problems.tar.bz2 ]] || { echo "device_prepare.sh: no Panda in $PANDA" >&2; exit 1; }
command -v nvcc > /dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] || { echo "device_prepare.sh: no nvcc: the pack needs a CUDA build" >&2; exit 1; }

exclude=.git/info/exclude
if [[ -d .git ]]; then
    mkdir -p .git/info
    for p in /.panda/ /.packs/; do grep -qxF "$p" "$exclude" 2>/dev/null || echo "$p" >> "$exclude"; done
fi
rm -rf .panda
mkdir -p .panda
cp -r "$PANDA"/. .panda/

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTANDEM_CUDA_LINEINFO=$([[ $LINEINFO == 1 ]] && echo ON || echo OFF) > /dev/null
cmake --build build -j "$JOBS"
mkdir -p .packs
rm -rf .packs/new .packs/new.tar.gz
ARCHIVE=1 TESTS="$TESTS" OMPL=${OMPL:-0} bench/device_pack.sh build .packs/new
rm -rf .packs/new
ls -l .packs/new.tar.gz
du -sh .panda .packs
