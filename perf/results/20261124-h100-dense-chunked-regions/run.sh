#!/usr/bin/env bash
# usage: bash .carry/dense-region.sh OUT -- GAT D=32 region A/B (P = HEAD, Q = change) + Dense tests
set -u
out=$1; mkdir -p $out /tmp/bin
export LD_LIBRARY_PATH=$PWD/.carry/lib
xz -dc .carry/bin/dfgnn_gpu_tests.xz > /tmp/bin/t; chmod +x /tmp/bin/t
/tmp/bin/t --gtest_brief=1 --gtest_filter='*Dense*:*DensePlan*:*AutoPicks*' > $out/dense_tests.log 2>&1; tail -3 $out/dense_tests.log
compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/bin/t --gtest_brief=1 --gtest_filter='*DenseForward*x32*' > $out/memcheck.log 2>&1; grep -E "ERROR SUMMARY|PASSED|FAILED" $out/memcheck.log | tail -3
compute-sanitizer --tool racecheck --error-exitcode 1 /tmp/bin/t --gtest_brief=1 --gtest_filter='*DenseForward.MatchesReference/*_8x32:*DenseForward.MatchesReference/pattern_4x32' > $out/racecheck.log 2>&1; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED" $out/racecheck.log | tail -3
bash .carry/ab.sh $out "P Q" "pattern:gat:4x32:dense cluster:gat:4x32:dense mnist:gat:4x32:dense pattern:gat:2x32:dense cluster:gat:2x32:dense pattern:gat:8x32:dense cluster:gat:8x32:dense pattern:gat:1x32:dense cluster:gat:4x32:auto pattern:gt:4x32:dense" 3
