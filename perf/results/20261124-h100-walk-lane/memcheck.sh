#!/usr/bin/env bash
# usage: bash .carry/db/memcheck.sh OUT -- memcheck over the backward tests in 12 shards
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$1; mkdir -p $out /tmp/db
xz -dc .carry/db/tests.xz > /tmp/db/tests; chmod +x /tmp/db/tests
start=$SECONDS
for i in $(seq 0 11); do GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/db/tests --gtest_filter='*Backward*' --gtest_brief=1 > $out/memcheck-$i.log 2>&1 & done; wait
grep -h -E "ERROR SUMMARY|PASSED|FAILED" $out/memcheck-*.log | sort | uniq -c; echo "memcheck $((SECONDS-start)) s"
