#!/usr/bin/env bash
# usage: bash .carry/db/walk.sh OUT -- GPU suite (4 shards), then old/new backward A/B, two rounds
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$1; mkdir -p $out /tmp/db /tmp/g
for v in old cli tests; do xz -dc .carry/db/$v.xz > /tmp/db/$v & done; wait; chmod +x /tmp/db/*
start=$SECONDS
for i in 0 1 2 3; do GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i /tmp/db/tests --gtest_brief=1 > $out/tests-$i.log 2>&1 & done; wait
for i in 0 1 2 3; do tail -n 2 $out/tests-$i.log; done; grep -h "FAILED" $out/tests-*.log | head; echo "tests $((SECONDS-start)) s"
N=/tmp/db/cli
$N gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster >/dev/null; $N gen rmat --scale 17 --edge-factor 64 --out /tmp/g/rmat >/dev/null
declare -A F=([cluster]=/tmp/g/cluster [rmat]=/tmp/g/rmat [tolokers]=".carry/sd/tolokers/tolokers_edges.tsv.gz --nodes 11758 --symmetrize" [pubmed]=".carry/sd/pubmed/planetoid_edges.tsv.gz --symmetrize")
for round in 1 2; do for g in cluster tolokers rmat pubmed; do for c in gt:1:128 gt:4:32 gat:1:128 agnn:1:128 gatv2:4:32; do IFS=: read -r m h d <<<"$c"
  for v in old cli; do /tmp/db/$v bench --graph ${F[$g]} --model $m --heads $h --dim $d --backend cuda --strategy auto --backward --iters 20 --warmup 5 \
    | awk -v g=$g -v c=$c -v v=$v '$NF=="bwd" {print g, c, v, $4}'; done
done; done; done 2>/dev/null | awk '{k=$1" "$2" "$3; s[k]=s[k]" "$4} END {for (k in s) print k, s[k]}' | sort | tee $out/ab.txt
echo "total $((SECONDS-start)) s"
