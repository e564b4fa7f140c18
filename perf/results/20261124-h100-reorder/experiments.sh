#!/usr/bin/env bash
# The two first looks, before --reorder existed (run from the repository root on the GPU machine):
#   files: our CLI of 9b6782f (cli.xz) and PyG on each graph in file order and RCM-renumbered
#          (rcm.cpp writes both) -> renumbered-files.txt, pyg.jsonl
#   order: a build patched with the plan-side RCM row order (exp.xz, DFGNN_ORDER=rcm; README)
#          against file order and the renumbered file -> order-only.txt
set -u
what=$1; export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$OUT; mkdir -p /tmp/g
xz -dc .carry/rcm/$([ $what = files ] && echo cli || echo exp).xz > /tmp/dfgnn; chmod +x /tmp/dfgnn; N=/tmp/dfgnn; R=.carry/rcm/rcm
for g in pattern cluster; do $N gen sbm --kind $g --graphs 1024 --out /tmp/g/$g.txt >/dev/null; done
$N gen knn --graphs 1024 --k 8 --out /tmp/g/mnist.txt >/dev/null
$N gen rmat --scale 17 --edge-factor 64 --out /tmp/g/rmat.txt >/dev/null
for o in none rcm; do
  for g in mnist rmat pattern cluster; do $R /tmp/g/$g.txt -1 0 $o /tmp/g/$g-$o.txt & done
  $R .carry/sd/pubmed/planetoid_edges.tsv.gz -1 1 $o /tmp/g/pubmed-$o.txt &
  $R .carry/sd/tolokers/tolokers_edges.tsv.gz 11758 1 $o /tmp/g/tolokers-$o.txt &
  $R .carry/sd/web-NotreDame/web-NotreDame.txt.gz 325729 1 $o /tmp/g/web-$o.txt &
done; wait
bench() {  # graph-file name model [env]
  env ${4:-} $N bench --graph $1 --name $2 --model $3 --heads 1 --dim 128 --backend cuda --strategy auto --backward --iters 20 --warmup 5
}
if [ $what = files ]; then
  for round in 1 2; do for g in tolokers rmat web mnist pubmed pattern; do for m in gt agnn gat gatv2; do for o in none rcm; do
    bench /tmp/g/$g-$o.txt $g-$o $m | awk -v r=$round -v g=$g -v m=$m -v o=$o '$NF=="fwd"||$NF=="bwd"||$NF=="fwd+bwd" {print r, g, m, o, $NF, $4}'
  done; done; done; done > $out/renumbered-files.txt
  for g in tolokers rmat web mnist pubmed; do for o in none rcm; do
    python3 perf/peers.py --graph /tmp/g/$g-$o.txt --name $g-$o --heads 1 --dim 128 --passes fwdbwd --json $out/pyg.jsonl >/dev/null
  done; done
else
  for round in 1 2; do for g in tolokers rmat mnist cluster web; do for m in gt agnn gat gatv2; do for v in none order file; do
    f=/tmp/g/$g-none.txt env=""; [ $v = order ] && env="DFGNN_ORDER=rcm"; [ $v = file ] && f=/tmp/g/$g-rcm.txt
    bench $f $g $m $env | awk -v r=$round -v g=$g -v m=$m -v o=$v '$NF=="fwd"||$NF=="bwd"||$NF=="fwd+bwd" {print r, g, m, o, $NF, $4}'
  done; done; done; done | awk '{k=$2" "$3" "$5" "$4; s[k]=s[k]" "$6} END {for (k in s) print k, s[k]}' | sort > $out/order-only.txt
fi
