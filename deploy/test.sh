#!/usr/bin/env bash
# Installs missing packages, builds, and runs every test suite. GPU tests skip,
# with the reason, on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/build.sh "$@"
cd build
ctest --output-on-failure -j"$(nproc)"
