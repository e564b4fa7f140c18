#!/usr/bin/env bash
# usage: bash .carry/ab/run.sh OUT ROUNDS -- GPU suite (4 shards) of the columns-first backward, checks, then old/new/mb2 A/B
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$1; rounds=${2:-2}; mkdir -p $out /tmp/ab /tmp/g
for v in old new mb2 tests; do xz -dc .carry/ab/$v.xz > /tmp/ab/$v & done; wait; chmod +x /tmp/ab/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $out/gpu.txt
start=$SECONDS
[[ ${SKIP_TESTS:-0} == 1 ]] || for i in 0 1 2 3; do GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i /tmp/ab/tests --gtest_brief=1 > $out/tests-$i.log 2>&1 & done; wait
for i in 0 1 2 3; do tail -n 2 $out/tests-$i.log; done; grep -h "FAILED" $out/tests-*.log | head -20; echo "tests $((SECONDS-start)) s"
N=/tmp/ab/new
$N gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster >/dev/null; $N gen sbm --kind pattern --graphs 1024 --out /tmp/g/pattern >/dev/null
$N gen knn --graphs 1024 --k 8 --out /tmp/g/mnist >/dev/null; $N gen rmat --scale 17 --edge-factor 64 --out /tmp/g/rmat >/dev/null
declare -A F=([cluster]=/tmp/g/cluster [pattern]=/tmp/g/pattern [mnist]=/tmp/g/mnist [rmat]=/tmp/g/rmat
  [pubmed]=".carry/sd/pubmed/planetoid_edges.tsv.gz --symmetrize" [tolokers]=".carry/sd/tolokers/tolokers_edges.tsv.gz --nodes 11758 --symmetrize"
  [web]=".carry/sd/web-NotreDame/web-NotreDame.txt.gz --nodes 325729 --symmetrize")
for c in cluster:gt:1:128 pubmed:gat:4:32 cluster:gat:1:128 pubmed:gt:4:32; do IFS=: read -r g m h d <<<"$c"
  for drop in 0 0.2; do $N bench --graph ${F[$g]} --model $m --heads $h --dim $d --backend cuda --strategy auto --backward --check --dropout $drop --iters 2 --warmup 1 2>&1 | tail -4 | sed "s/^/check $c drop $drop: /"; done
done > $out/checks.txt; cat $out/checks.txt
for round in $(seq 1 $rounds); do
  for g in cluster pattern mnist pubmed tolokers rmat web; do
    for c in gt:1:128 gt:4:32 gat:1:128 gat:4:32 agnn:1:128; do IFS=: read -r m h d <<<"$c"
      vs="old new"; [[ $m == gt ]] && vs="old new mb2"
      for v in $vs; do
        /tmp/ab/$v bench --graph ${F[$g]} --name $g --model $m --heads $h --dim $d --backend cuda --strategy auto --backward --iters 20 --warmup 5 \
          | awk -v r=$round -v g=$g -v c=$c -v v=$v '$NF=="fwd"||$NF=="bwd"||$NF=="fwd+bwd" {print r, g, c, v, $NF, $4}'
      done
    done
  done
done | tee $out/ab-raw.txt | awk '{k=$2" "$3" "$5" "$4; s[k]=s[k]" "$6} END {for (k in s) print k, s[k]}' | sort > $out/ab.txt
cat $out/ab.txt
echo "total $((SECONDS-start)) s"
