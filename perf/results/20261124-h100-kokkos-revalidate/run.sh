#!/usr/bin/env bash
# usage (the session kept it as .carry/reval.sh, its binaries in .carry/bin): bash run.sh OUT MODE -- MODE=suites: full memcheck of the native suite + Kokkos suite on Kokkos::Cuda
#                                       MODE=race: racecheck on every shared-memory kernel family; MODE=bench: Kokkos vs native bench
set -u
out=$1; mode=$2; mkdir -p $out /tmp/b/kokkos
export LD_LIBRARY_PATH=$PWD/.carry/lib
xz -dc .carry/bin/P.xz > /tmp/b/dfgnn; xz -dc .carry/bin/dfgnn_gpu_tests.xz > /tmp/b/dfgnn_gpu_tests
xz -dc .carry/bin/kdfgnn.xz > /tmp/b/kokkos/dfgnn; xz -dc .carry/bin/kdfgnn_tests.xz > /tmp/b/kokkos/dfgnn_tests
chmod +x /tmp/b/dfgnn /tmp/b/dfgnn_gpu_tests /tmp/b/kokkos/*
mkdir -p /opt build && ln -sfn $PWD /opt/dfgnn-head && cp /tmp/b/kokkos/dfgnn build/dfgnn
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $out/gpu.txt
if [ $mode = suites ]; then
  (time compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/b/dfgnn_gpu_tests --gtest_brief=1) > $out/memcheck-full.log 2>&1
  grep -E "tests from|ERROR SUMMARY|PASSED|FAILED|^real" $out/memcheck-full.log | tail -5
  (cd /tmp/b/kokkos && time ./dfgnn_tests --gtest_brief=1) > $out/kokkos_tests.log 2>&1; tail -6 $out/kokkos_tests.log
elif [ $mode = race ]; then
  f='Batches/DenseForward.*batch64_*:All/Forward.*batch64_g*:All/Forward.*super_node_gt*:All/Forward.*power_law_agnn*:All/Backward.*batch64_gt*:All/Backward.*super_node_gat_*:Subset/Training.*super_node*:ForwardPlan.*:DensePlan.*'
  (time compute-sanitizer --tool racecheck --error-exitcode 1 /tmp/b/dfgnn_gpu_tests --gtest_filter="$f") > $out/racecheck.log 2>&1
  grep -E "tests from|RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED|^real" $out/racecheck.log | tail -6
else
  bash perf/gpu_run.sh /tmp/b .carry/sd $out kokkos > $out/kokkos-run.txt 2>&1; tail -5 $out/kokkos-run.txt
fi
