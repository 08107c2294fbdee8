#!/usr/bin/env bash
# Installs missing packages, builds, and runs every test suite, then the fuzz
# harnesses for a minute. GPU tests skip, with the reason, on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/build.sh "$@"
cd build
ctest --output-on-failure -j"$(nproc)"
cd ..
# Fuzzing (fuzz/README.md): the harnesses built with clang, ASan and UBSan in
# build-fuzz/, then 10 s of each (60 s of fuzzing in all, up to nproc at once),
# starting from the committed corpus. A crash fails the run.
fuzz/run.sh "${TDM_CI_FUZZ_SECONDS:-10}"
