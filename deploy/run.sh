#!/usr/bin/env bash
# Installs missing packages, builds, and runs tandemd in the foreground with its
# defaults: 127.0.0.1:7450 and unix:./tandem-data/tandemd.sock, data in
# ./tandem-data, the GPU engine when the build and machine have one, else the
# CPU engine. Extra arguments go to tandemd (see build/daemon/tandemd --help).
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/build.sh
exec build/daemon/tandemd "$@"
