#!/usr/bin/env bash
# usage (the session kept it as .carry/bench/large.sh, beside the CLI of 7970401): bash run.sh OUT -- rmat-s20-d32 (31M edges): every model, shape and strategy
# checked against the float64 reference (run_bench.py skips the check above 10M edges), and the
# fused backward of GT 1x128 and GAT 4x32 checked likewise.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$1; mkdir -p $out /tmp/b
xz -dc .carry/bench/dfgnn.xz > /tmp/b/dfgnn; chmod +x /tmp/b/dfgnn
/tmp/b/dfgnn gen rmat --scale 20 --edge-factor 32 --out /tmp/r20.txt
for m in gt agnn gat gatv2; do
  for hd in "1 128" "4 32"; do
    read -r h d <<<"$hd"
    /usr/bin/time -f "%e s" /tmp/b/dfgnn bench --graph /tmp/r20.txt --name rmat-s20-d32 --model $m --heads $h --dim $d \
      --backend cuda --strategy all --check --iters 3 --warmup 1 --json $out/forward.jsonl
    echo "rc $m $h x $d: $?"
  done
done 2>&1 | tee $out/forward.txt
for c in "gt 1 128" "gat 4 32"; do
  read -r m h d <<<"$c"
  /usr/bin/time -f "%e s" /tmp/b/dfgnn bench --graph /tmp/r20.txt --name rmat-s20-d32 --model $m --heads $h --dim $d \
    --backend cuda --strategy auto --backward --check --iters 3 --warmup 1 --json $out/backward.jsonl
  echo "rc backward $m $h x $d: $?"
done 2>&1 | tee $out/backward.txt
