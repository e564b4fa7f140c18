#!/usr/bin/env bash
# bench --reorder none|rcm, interleaved, 1x128 and 4x32; CUDA --reorder checks against the reference
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$OUT; mkdir -p /tmp/g
xz -dc .carry/rcm/cli.xz > /tmp/dfgnn; chmod +x /tmp/dfgnn; N=/tmp/dfgnn
$N gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster >/dev/null; $N gen sbm --kind pattern --graphs 1024 --out /tmp/g/pattern >/dev/null
$N gen knn --graphs 1024 --k 8 --out /tmp/g/mnist >/dev/null; $N gen rmat --scale 17 --edge-factor 64 --out /tmp/g/rmat >/dev/null
declare -A F=([cluster]=/tmp/g/cluster [pattern]=/tmp/g/pattern [mnist]=/tmp/g/mnist [rmat]=/tmp/g/rmat
  [pubmed]=".carry/sd/pubmed/planetoid_edges.tsv.gz --symmetrize" [tolokers]=".carry/sd/tolokers/tolokers_edges.tsv.gz --nodes 11758 --symmetrize"
  [web]=".carry/sd/web-NotreDame/web-NotreDame.txt.gz --nodes 325729 --symmetrize")
python3 -c "import numpy as n; n.save('/tmp/g/dout.npy', n.random.default_rng(3).uniform(-1,1,(11758,2,36)).astype(n.float32))"
for m in gt agnn gat gatv2; do
  $N attention --graph ${F[tolokers]} --model $m --heads 2 --dim 36 --backend cuda --reorder rcm --dropout 0.2 --reference --grad-out /tmp/g/dout.npy --grad-prefix /tmp/g/g_ 2>&1
done > $out/check.txt; echo "check exit $?" >> $out/check.txt
for round in 1 2; do for g in cluster pattern mnist pubmed tolokers rmat web; do cs="1:128"; [ $round = 1 ] && cs="1:128 4:32"; for c in $cs; do IFS=: read -r h d <<<"$c"
  for m in gt agnn gat gatv2; do for o in none rcm; do
    $N bench --graph ${F[$g]} --name $g --model $m --heads $h --dim $d --backend cuda --strategy auto --backward --iters 20 --warmup 5 --reorder $o --json $out/bench.jsonl \
      >/dev/null
done; done; done; done; done
