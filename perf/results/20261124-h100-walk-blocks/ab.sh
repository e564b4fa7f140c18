#!/usr/bin/env bash
# usage (kept as .carry/walk/ab.sh; w256/w512/w1024.xz: the CLI built with walk-threads.patch at DFGNN_WALK_THREADS 256, 512, 1024): bash ab.sh OUT
set -u
out=$1; mkdir -p $out /tmp/w /tmp/g
export LD_LIBRARY_PATH=$PWD/.carry/lib
for v in 256 512 1024; do xz -dc .carry/walk/w$v.xz > /tmp/w/$v; chmod +x /tmp/w/$v; done
D=/tmp/w/256
$D gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster.txt >/dev/null
$D gen sbm --kind pattern --graphs 1024 --out /tmp/g/pattern.txt >/dev/null
$D gen knn --graphs 1024 --out /tmp/g/mnist.txt >/dev/null
for v in 512 1024; do /tmp/w/$v bench --graph /tmp/g/cluster.txt --model gt --heads 1 --dim 128 --backend cuda --strategy auto --backward --check --iters 3 --warmup 1 | tail -2 | sed "s/^/check $v /"; done
for round in 1 2; do
  for g in cluster pattern mnist; do
    for c in gt:1:128 gt:4:32 gat:1:128 agnn:1:128 gatv2:1:128; do IFS=: read -r m h d <<<"$c"
      for v in 256 512 1024; do
        /tmp/w/$v bench --graph /tmp/g/$g.txt --model $m --heads $h --dim $d --backend cuda --strategy auto --backward --iters 20 --warmup 5 \
          | awk -v r=$round -v g=$g -v c=$c -v v=$v '$NF=="bwd"||$NF=="fwd+bwd" {print r, g, c, v, $NF, $4}'
      done
    done
  done
done | tee $out/ab-raw.txt | awk '{k=$2" "$3" "$5" "$4; s[k]=s[k]" "$6} END {for (k in s) print k, s[k]}' | sort
