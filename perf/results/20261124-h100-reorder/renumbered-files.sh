#!/usr/bin/env bash
# throwaway: attention fwd+bwd (ours and PyG) on graphs in file order and RCM order
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$OUT; mkdir -p /tmp/g
xz -dc .carry/rcm/cur.xz > /tmp/dfgnn; chmod +x /tmp/dfgnn; N=/tmp/dfgnn; R=.carry/rcm/rcm
$N gen sbm --kind pattern --graphs 1024 --out /tmp/g/pattern.txt >/dev/null
$N gen knn --graphs 1024 --k 8 --out /tmp/g/mnist.txt >/dev/null
$N gen rmat --scale 17 --edge-factor 64 --out /tmp/g/rmat.txt >/dev/null
for o in none rcm; do
  $R /tmp/g/mnist.txt -1 0 $o /tmp/g/mnist-$o.txt & $R /tmp/g/rmat.txt -1 0 $o /tmp/g/rmat-$o.txt &
  $R /tmp/g/pattern.txt -1 0 $o /tmp/g/pattern-$o.txt &
  $R .carry/sd/pubmed/planetoid_edges.tsv.gz -1 1 $o /tmp/g/pubmed-$o.txt &
  $R .carry/sd/tolokers/tolokers_edges.tsv.gz 11758 1 $o /tmp/g/tolokers-$o.txt &
  $R .carry/sd/web-NotreDame/web-NotreDame.txt.gz 325729 1 $o /tmp/g/web-$o.txt &
done; wait; ls -la /tmp/g
for round in 1 2; do for g in tolokers rmat web mnist pubmed pattern; do for m in gt agnn gat gatv2; do for o in none rcm; do
  $N bench --graph /tmp/g/$g-$o.txt --name $g-$o --model $m --heads 1 --dim 128 --backend cuda --strategy auto --backward --iters 20 --warmup 5 \
    | awk -v r=$round -v g=$g -v m=$m -v o=$o '$NF=="fwd"||$NF=="bwd"||$NF=="fwd+bwd" {print r, g, m, o, $NF, $4}'
done; done; done; done | tee $out/ours.txt
for g in tolokers rmat web mnist pubmed; do for o in none rcm; do
  python3 perf/peers.py --graph /tmp/g/$g-$o.txt --name $g-$o --heads 1 --dim 128 --passes fwdbwd --json $out/pyg.jsonl > /dev/null 2>>$out/pyg.err
done; done
python3 - <<'P' $out/pyg.jsonl
import json,sys
for l in open(sys.argv[1]):
    j=json.loads(l); print(j.get("graph"), j.get("model"), j.get("pass"), j.get("ms"))
P
