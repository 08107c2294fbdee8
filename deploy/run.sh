#!/usr/bin/env bash
# Installs missing packages, builds, and runs Tandem. Until the daemon lands this
# runs `tandem check` on a generated demo scene with the CPU engine.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/build.sh
build/tools/tandem demo --dir build/demo --n 20000
for mode in bool contacts; do
  echo "tandem check --mode $mode:"
  build/tools/tandem check --env build/demo/env.obj --robot build/demo/robot.obj \
    --poses build/demo/poses.txt --mode "$mode" --out "build/demo/$mode.txt"
done
