#!/usr/bin/env bash
# Configures and builds Tandem into build/ (Release). CUDA is used when nvcc is
# found; pass -DTANDEM_CUDA=OFF (or any other CMake flag) as arguments to change.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
