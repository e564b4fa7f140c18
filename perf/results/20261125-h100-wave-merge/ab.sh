#!/usr/bin/env bash
# throwaway: GPU tests of build B, then old (HEAD) / a (wave-gated merge) / b (+ one-launch param sums) A/B
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$OUT; mkdir -p /tmp/db /tmp/g
for v in old a b tests; do xz -dc .carry/mg/$v.xz > /tmp/db/$v & done; wait; chmod +x /tmp/db/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $out/gpu.txt
start=$SECONDS
if [ "${TESTS:-1}" = 1 ]; then
for i in 0 1 2 3; do GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i /tmp/db/tests --gtest_brief=1 > $out/tests-$i.log 2>&1 & done; wait
grep -h -E "PASSED|FAILED|tests ran" $out/tests-*.log; grep -h -B2 -A8 "Failure" $out/tests-*.log | head -80; echo "tests $((SECONDS-start)) s"
fi
N=/tmp/db/b
$N gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster >/dev/null; $N gen rmat --scale 17 --edge-factor 64 --out /tmp/g/rmat >/dev/null
declare -A F=([cora]=".carry/sd/cora/planetoid_edges.tsv.gz --symmetrize" [citeseer]=".carry/sd/citeseer/planetoid_edges.tsv.gz --symmetrize"
  [pubmed]=".carry/sd/pubmed/planetoid_edges.tsv.gz --symmetrize" [tolokers]=".carry/sd/tolokers/tolokers_edges.tsv.gz --nodes 11758 --symmetrize --reorder rcm"
  [web]=".carry/sd/web-NotreDame/web-NotreDame.txt.gz --nodes 325729 --symmetrize" [cluster]=/tmp/g/cluster [rmat]="/tmp/g/rmat --reorder rcm")
for g in pubmed; do for m in agnn gatv2 gt; do $N bench --graph ${F[$g]} --model $m --heads 2 --dim 36 --backend cuda --strategy auto --backward --check --iters 2 --warmup 1 2>&1 | awk -v g=$g -v m=$m '/error/ {print "check", g, m, $0} $NF=="fwd"||$NF=="bwd" {print "check", g, m, $NF, $(NF-1)}'; done; done
for round in ${ROUNDS:-1 2}; do gs="pubmed cora citeseer tolokers cluster rmat"; [ $round = 2 ] && gs="pubmed cora citeseer tolokers"
for g in $gs; do for m in gt agnn gat gatv2; do [ $g = rmat ] && [ $m = gatv2 ] && continue; for v in old a b; do
  /tmp/db/$v bench --graph ${F[$g]} --name $g --model $m --heads 1 --dim 128 --backend cuda --strategy auto --backward --iters 20 --warmup 5 \
    | awk -v r=$round -v g=$g -v m=$m -v v=$v '$NF=="fwd"||$NF=="bwd"||$NF=="fwd+bwd" {print r, g, m, v, $NF, $4}'
done; done; done; echo "round $round $((SECONDS-start)) s" >&2; done | tee $out/raw.txt | awk '{k=$2" "$3" "$5" "$4; s[k]=s[k]" "$6} END {for (k in s) print k, s[k]}' | sort > $out/sum.txt
cat $out/sum.txt; echo "total $((SECONDS-start)) s"
if [ "${MEMCHECK:-1}" = 1 ]; then
left=$((570 - SECONDS)); echo "memcheck with $left s left"
for i in $(seq 0 11); do GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i timeout $left compute-sanitizer --tool memcheck --error-exitcode 1 \
  /tmp/db/tests --gtest_filter='*hubs*:*super_node*' --gtest_brief=1 > $out/memcheck-$i.log 2>&1 & done; wait
grep -h -E "ERROR SUMMARY|PASSED|FAILED" $out/memcheck-*.log | sort | uniq -c; echo "memcheck done $((SECONDS-start)) s"
fi
