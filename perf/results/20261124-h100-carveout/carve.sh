#!/usr/bin/env bash
# throwaway: the walks' and Online's carveout: driver default (cd) vs largest L1 (c0), RCM numbering
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$OUT; mkdir -p /tmp/db /tmp/g
xz -dc .carry/sm/old.xz > /tmp/db/old & xz -dc .carry/sm/cli.xz > /tmp/db/new & wait; chmod +x /tmp/db/*
N=/tmp/db/new; start=$SECONDS
$N gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster >/dev/null; $N gen sbm --kind pattern --graphs 1024 --out /tmp/g/pattern >/dev/null
$N gen knn --graphs 1024 --k 8 --out /tmp/g/mnist >/dev/null; $N gen rmat --scale 17 --edge-factor 64 --out /tmp/g/rmat >/dev/null
declare -A F=([cluster]=/tmp/g/cluster [pattern]=/tmp/g/pattern [mnist]=/tmp/g/mnist [rmat]=/tmp/g/rmat
  [pubmed]=".carry/sd/pubmed/planetoid_edges.tsv.gz --symmetrize" [tolokers]=".carry/sd/tolokers/tolokers_edges.tsv.gz --nodes 11758 --symmetrize"
  [web]=".carry/sd/web-NotreDame/web-NotreDame.txt.gz --nodes 325729 --symmetrize")
DFGNN_CARVEOUT=0 $N bench --graph ${F[tolokers]} --model gt --heads 2 --dim 36 --backend cuda --strategy auto --backward --check --iters 2 --warmup 1 2>&1 | grep -E "fwd|bwd|rror" > $out/check.txt
for round in 1 2; do gs="tolokers rmat cluster pattern mnist web pubmed"; [ $round = 2 ] && gs="tolokers rmat cluster pattern"
for g in $gs; do for m in gt agnn gat gatv2; do for v in old cd c0; do
  b=/tmp/db/new; [ $v = old ] && b=/tmp/db/old; e=""; [ $v = c0 ] && e="DFGNN_CARVEOUT=0"
  env $e $b bench --graph ${F[$g]} --name $g --model $m --heads 1 --dim 128 --backend cuda --strategy auto --backward --iters 20 --warmup 5 --reorder rcm \
    | awk -v r=$round -v g=$g -v m=$m -v v=$v '$NF=="fwd"||$NF=="bwd"||$NF=="fwd+bwd" {print r, g, m, v, $NF, $4}'
done; done; done; echo "round $round $((SECONDS-start)) s" >&2; done | tee $out/raw.txt | awk '{k=$2" "$3" "$5" "$4; s[k]=s[k]" "$6} END {for (k in s) print k, s[k]}' | sort > $out/sum.txt
grep "fwd+bwd" $out/sum.txt; cat $out/check.txt; echo "total $((SECONDS-start)) s"
