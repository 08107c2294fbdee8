#!/usr/bin/env bash
# Installs the package into a fresh venv the documented way, offline, and runs the test suites
# against the installed copy. Usage: install_check.sh PYTHON3 PACKAGE_DIR
# (TANDEMD_BIN, TANDEM_BIN and TANDEM_LIBRARY in the environment, as for the suites).
set -euo pipefail
python=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tandem-py-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# a copy, so that setuptools' build files stay out of the source tree
mkdir "$tmp/src"
cp -r "$src/pyproject.toml" "$src/README.md" "$src/tandem" "$tmp/src/"
"$python" -m venv --system-site-packages "$tmp/venv"
PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$tmp/venv/bin/python" -m pip install -q --no-build-isolation "$tmp/src"
cd "$tmp"
unset PYTHONPATH
"$tmp/venv/bin/python" - "$tmp/venv" <<'PY'
import sys, tandem
assert tandem.__file__.startswith(sys.argv[1]), f"imported {tandem.__file__}, not the venv's copy"
print("installed:", tandem.__file__, "library:", tandem.load_library().path)
PY
"$tmp/venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$src/tests"
