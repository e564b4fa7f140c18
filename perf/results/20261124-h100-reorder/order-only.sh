#!/usr/bin/env bash
# throwaway: file order vs the plan's RCM processing order (DFGNN_ORDER=rcm) vs an RCM-renumbered file
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$OUT; mkdir -p /tmp/g
xz -dc .carry/rcm/exp.xz > /tmp/dfgnn; chmod +x /tmp/dfgnn; N=/tmp/dfgnn; R=.carry/rcm/rcm
$N gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster.txt >/dev/null
$N gen knn --graphs 1024 --k 8 --out /tmp/g/mnist.txt >/dev/null
$N gen rmat --scale 17 --edge-factor 64 --out /tmp/g/rmat.txt >/dev/null
for o in none rcm; do
  $R /tmp/g/mnist.txt -1 0 $o /tmp/g/mnist-$o.txt & $R /tmp/g/rmat.txt -1 0 $o /tmp/g/rmat-$o.txt &
  $R /tmp/g/cluster.txt -1 0 $o /tmp/g/cluster-$o.txt &
  $R .carry/sd/tolokers/tolokers_edges.tsv.gz 11758 1 $o /tmp/g/tolokers-$o.txt &
  $R .carry/sd/web-NotreDame/web-NotreDame.txt.gz 325729 1 $o /tmp/g/web-$o.txt &
done; wait
( time $R /tmp/g/rmat.txt -1 0 rcm /tmp/g/x.txt ) 2>&1 | grep real
for round in 1 2; do for g in tolokers rmat mnist cluster web; do for m in gt agnn gat gatv2; do for v in none order file; do
  f=/tmp/g/$g-none.txt; env=""; [ $v = order ] && env="DFGNN_ORDER=rcm"; [ $v = file ] && f=/tmp/g/$g-rcm.txt
  env $env $N bench --graph $f --name $g --model $m --heads 1 --dim 128 --backend cuda --strategy auto --backward --iters 20 --warmup 5 \
    | awk -v r=$round -v g=$g -v m=$m -v o=$v '$NF=="fwd"||$NF=="bwd"||$NF=="fwd+bwd" {print r, g, m, o, $NF, $4}'
done; done; done; done | tee $out/order.txt | awk '{k=$2" "$3" "$5" "$4; s[k]=s[k]" "$6} END {for (k in s) print k, s[k]}' | sort > $out/order-sum.txt
for m in gt agnn gat gatv2; do DFGNN_ORDER=rcm $N bench --graph /tmp/g/mnist-none.txt --model $m --heads 2 --dim 36 --backend cuda --strategy auto --backward --iters 2 --warmup 1 --check 2>&1 | tail -4; done > $out/check.txt
