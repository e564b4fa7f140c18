#!/usr/bin/env bash
# Installs the Debian packages dfgnn builds with (when missing; nlohmann-json for the CLI's
# records, python3-venv for python/ci.sh's venv and python3-dev for its PyTorch extension, clang
# and its libFuzzer runtime for tests/fuzz/run.sh, OpenMPI for the mpi preset, Debian's
# python3-jsonschema and python3-matplotlib for the study's schema check and report
# (perf/report.py, its tests in tests/perf)) and builds the serial preset.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(cmake g++ make libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev libgtest-dev zlib1g-dev nlohmann-json3-dev
          python3-venv python3-dev clang libclang-rt-dev libopenmpi-dev openmpi-bin python3-jsonschema python3-matplotlib)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cmake --preset serial >/dev/null
cmake --build --preset serial
