#!/usr/bin/env bash
# An installed dfgnn refuses, at a downstream project's configure time, a Kokkos other than the
# one it was built with: its package config, with the recorded Kokkos version changed, must fail
# find_package(dfgnn) in examples/ with the message that names both.
# Usage: tests/package/kokkos_mismatch.sh INSTALL_PREFIX
set -euo pipefail
prefix=$(realpath "$1")
cd "$(dirname "$0")/../../examples"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/prefix/lib"
cp -r "$prefix/lib/cmake" "$work/prefix/lib/"
config=$work/prefix/lib/cmake/dfgnn/dfgnnConfig.cmake
sed -i 's/^set(dfgnn_KOKKOS_VERSION "[^"]*")/set(dfgnn_KOKKOS_VERSION "0.0.1")/' "$config"
grep -q 'dfgnn_KOKKOS_VERSION "0.0.1"' "$config" || { echo "kokkos_mismatch: no recorded Kokkos version in $config"; exit 1; }
if cmake -S . -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/log" 2>&1; then
  echo "kokkos_mismatch: examples/ configured against a dfgnn built with another Kokkos"; exit 1
fi
grep -q "dfgnn was built with Kokkos 0.0.1" "$work/log" || { cat "$work/log"; echo "kokkos_mismatch: no message"; exit 1; }
echo "kokkos_mismatch: refused as expected ($(grep -o 'dfgnn was built with Kokkos 0.0.1[^:]*' "$work/log" | head -1))"
