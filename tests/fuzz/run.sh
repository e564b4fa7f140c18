#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan; DFGNN_ENABLE_FUZZ) in build/fuzz and runs
# each for SECONDS (default 60) from its seed corpus tests/fuzz/corpus/<target>, with its
# dictionary. New inputs go to build/fuzz/corpus/<target>, a crash's input to build/fuzz/crash-*
# (then exit 1). Usage: bash tests/fuzz/run.sh [SECONDS [TARGET...]]   (edge_list mtx npy graph capi)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
targets=("${@:2}")
((${#targets[@]})) || targets=(edge_list mtx npy graph capi)
CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFGNN_ENABLE_FUZZ=ON \
  -DDFGNN_ENABLE_TESTS=OFF -DDFGNN_ENABLE_KOKKOS_KERNELS=OFF >/dev/null
cmake --build build/fuzz -j "${JOBS:-2}" --target "${targets[@]/#/fuzz_}"
for t in "${targets[@]}"; do
  echo "fuzz: $t for ${seconds}s"
  mkdir -p "build/fuzz/corpus/$t"
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=("-dict=tests/fuzz/$t.dict")
  if ! "build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
      -artifact_prefix=build/fuzz/ "${dict[@]}" "build/fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"build/fuzz/$t.log" 2>&1; then
    tail -n 40 "build/fuzz/$t.log" >&2
    echo "fuzz: $t failed (log build/fuzz/$t.log, input build/fuzz/crash-*)" >&2
    exit 1
  fi
  grep -E '^#[0-9]+[[:space:]]+DONE|^stat::(number_of_executed_units|average_exec_per_sec)' "build/fuzz/$t.log"
done
