#!/usr/bin/env bash
# Installs the Debian packages Tandem builds against, skipping those already
# present. Used by run.sh, test.sh and CI; safe to run repeatedly.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  clang libclang-rt-dev
  libuv1-dev libprotobuf-c-dev protobuf-c-compiler nanopb libnanopb-dev python3-protobuf protobuf-compiler
  libssl-dev openssl libjansson-dev libassimp-dev libxml2-dev libyaml-dev
  libmicrohttpd-dev libsystemd-dev
  libcriterion-dev libfcl-dev libompl-dev
  python3-numpy python3-pytest python3-setuptools python3-wheel python3-venv python3-pip
  python3-yaml
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "installing: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
