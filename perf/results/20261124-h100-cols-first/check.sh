#!/usr/bin/env bash
# usage: bash .carry/ab/check.sh OUT -- GPU suite in 4 shards, then memcheck over the backward tests in 8 shards
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$1; mkdir -p $out /tmp/ab
xz -dc .carry/ab/tests.xz > /tmp/ab/tests; chmod +x /tmp/ab/tests
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $out/gpu.txt
sha256sum /tmp/ab/tests > $out/binary.sha256
start=$SECONDS
for i in 0 1 2 3; do GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i /tmp/ab/tests --gtest_brief=1 > $out/tests-$i.log 2>&1 & done; wait
for i in 0 1 2 3; do tail -n 2 $out/tests-$i.log; done; grep -h "FAILED\|Failure" $out/tests-*.log | head -20; echo "tests $((SECONDS-start)) s"
start=$SECONDS
for i in $(seq 0 11); do GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/ab/tests --gtest_filter='*Backward*' --gtest_brief=1 > $out/memcheck-$i.log 2>&1 & done; wait
grep -h -E "ERROR SUMMARY|PASSED|FAILED" $out/memcheck-*.log | sort | uniq -c; echo "memcheck $((SECONDS-start)) s"
