#!/usr/bin/env bash
# throwaway: GPU tests of build c (merge_sums by 4 columns), memcheck on the backward's split tests, old/c A/B
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$OUT; mkdir -p /tmp/db /tmp/g
for v in old c tests; do xz -dc .carry/mg/$v.xz > /tmp/db/$v & done; wait; chmod +x /tmp/db/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $out/gpu.txt
start=$SECONDS
for i in 0 1 2 3; do GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i /tmp/db/tests --gtest_brief=1 > /tmp/g/tests-$i.log 2>&1 & done; wait
cat /tmp/g/tests-*.log | grep -E "PASSED|FAILED|tests ran" > $out/tests.txt; grep -h -B2 -A8 "Failure" /tmp/g/tests-*.log | head -60 >> $out/tests.txt; echo "tests $((SECONDS-start)) s" >> $out/tests.txt; cat $out/tests.txt
for i in $(seq 0 11); do GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 \
  /tmp/db/tests --gtest_filter='*Backward*hubs*:*Backward*super_node*:*Backward*power_law*' --gtest_brief=1 > /tmp/g/memcheck-$i.log 2>&1 & done; wait
grep -h -E "ERROR SUMMARY|PASSED|FAILED" /tmp/g/memcheck-*.log | sort | uniq -c | tee $out/memcheck.txt; echo "memcheck $((SECONDS-start)) s" | tee -a $out/memcheck.txt
N=/tmp/db/c
$N gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster >/dev/null; $N gen rmat --scale 17 --edge-factor 64 --out /tmp/g/rmat >/dev/null
declare -A F=([cora]=".carry/sd/cora/planetoid_edges.tsv.gz --symmetrize" [citeseer]=".carry/sd/citeseer/planetoid_edges.tsv.gz --symmetrize"
  [pubmed]=".carry/sd/pubmed/planetoid_edges.tsv.gz --symmetrize" [tolokers]=".carry/sd/tolokers/tolokers_edges.tsv.gz --nodes 11758 --symmetrize --reorder rcm"
  [web]=".carry/sd/web-NotreDame/web-NotreDame.txt.gz --nodes 325729 --symmetrize" [cluster]=/tmp/g/cluster [rmat]="/tmp/g/rmat --reorder rcm")
for g in pubmed tolokers; do for m in gt agnn gat gatv2; do $N bench --graph ${F[$g]} --model $m --heads 2 --dim 36 --backend cuda --strategy auto --backward --check --iters 2 --warmup 1 2>&1 | awk -v g=$g -v m=$m '/error/ {print "check", g, m, $0} $NF=="bwd" {print "check", g, m, $NF, $(NF-1)}'; done; done | tee $out/check.txt
for round in 1 2; do gs="pubmed tolokers cora citeseer web rmat cluster"; [ $round = 2 ] && gs="pubmed tolokers cora citeseer"
for g in $gs; do for m in gt agnn gat gatv2; do [ $g = rmat ] && [ $m = gatv2 ] && continue; for v in old c; do
  /tmp/db/$v bench --graph ${F[$g]} --name $g --model $m --heads 1 --dim 128 --backend cuda --strategy auto --backward --iters 20 --warmup 5 \
    | awk -v r=$round -v g=$g -v m=$m -v v=$v '$NF=="fwd"||$NF=="bwd"||$NF=="fwd+bwd" {print r, g, m, v, $NF, $4}'
done; done; done; echo "round $round $((SECONDS-start)) s" >&2; done > $out/raw.txt
awk '{k=$2" "$3" "$5" "$4; s[k]=s[k]" "$6} END {for (k in s) print k, s[k]}' $out/raw.txt | sort > $out/sum.txt
grep " bwd \| fwd+bwd " $out/sum.txt; echo "total $((SECONDS-start)) s"
