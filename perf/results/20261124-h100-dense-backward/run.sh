#!/usr/bin/env bash
# usage: bash .carry/db/run.sh OUT ROUNDS FILTER -- Dense-backward tests, a check, then old/new A/B on the batches
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$1; rounds=${2:-1}; filter=${3:-*Dense*:*BackwardArgs*}; mkdir -p $out /tmp/db /tmp/g
for v in old cli tests; do xz -dc .carry/db/$v.xz > /tmp/db/$v & done; wait; chmod +x /tmp/db/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $out/gpu.txt
start=$SECONDS
/tmp/db/tests --gtest_filter="$filter" --gtest_brief=1 > $out/tests.log 2>&1
tail -n 3 $out/tests.log; grep -h -A6 "Failure" $out/tests.log | head -60; echo "tests $((SECONDS-start)) s"
N=/tmp/db/cli
$N gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster >/dev/null; $N gen sbm --kind pattern --graphs 1024 --out /tmp/g/pattern >/dev/null
for c in cluster:1:128 pattern:4:32; do IFS=: read -r g h d <<<"$c"
  $N bench --graph /tmp/g/$g --model gt --heads $h --dim $d --backend cuda --strategy auto --backward --check --iters 2 --warmup 1 2>&1 | tail -4 | sed "s/^/check $c: /"
done > $out/checks.txt; cat $out/checks.txt
for round in $(seq 1 $rounds); do
  for g in cluster pattern; do
    for c in gt:1:128 gt:4:32 gt:2:64; do IFS=: read -r m h d <<<"$c"
      for v in old cli; do
        /tmp/db/$v bench --graph /tmp/g/$g --name $g --model $m --heads $h --dim $d --backend cuda --strategy auto --backward --iters 20 --warmup 5 \
          | awk -v r=$round -v g=$g -v c=$c -v v=$v '$NF=="fwd"||$NF=="bwd"||$NF=="fwd+bwd" {print r, g, c, v, $NF, $4}'
      done
    done
  done
done | tee $out/ab-raw.txt | awk '{k=$2" "$3" "$5" "$4; s[k]=s[k]" "$6} END {for (k in s) print k, s[k]}' | sort > $out/ab.txt
cat $out/ab.txt
echo "total $((SECONDS-start)) s"
