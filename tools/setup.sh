#!/usr/bin/env bash
# Installs the Debian packages dfgnn builds with (those missing) and builds a preset:
#   bash tools/setup.sh         what CI needs (python3-venv and python3-dev for python/ci.sh's venv
#                               and PyTorch extension, clang and its libFuzzer runtime for
#                               tests/fuzz/run.sh, OpenMPI for the mpi preset, doxygen for the API
#                               reference, python3-jsonschema and python3-matplotlib for the
#                               study's schema check and report, ccache for .ci/run's builds), then
#                               the serial preset: library, CLI and tests
#   bash tools/setup.sh --cli   what the CLI needs (nlohmann-json for its records), then the cli
#                               preset: the CLI alone
set -euo pipefail
cd "$(dirname "$0")/.."
preset=serial
packages=(cmake g++ make libtrilinos-kokkos-dev zlib1g-dev nlohmann-json3-dev)
if [ "${1:-}" = --cli ]; then
  preset=cli
else
  packages+=(libtrilinos-kokkos-kernels-dev libgtest-dev python3-venv python3-dev clang libclang-rt-dev
             libopenmpi-dev openmpi-bin doxygen python3-jsonschema python3-matplotlib ccache)
fi
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "setup: configuring build/$preset"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
