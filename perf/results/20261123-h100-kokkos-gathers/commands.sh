#!/usr/bin/env bash
# How ab.jsonl and lanes.jsonl were made on the H100 (one device call each; lanes.jsonl, the
# patches and the logs are in commit cb64ce4; rule.jsonl: docs/performance.md, "Forward + backward
# (portable Kokkos)"). OLD, A, B: dfgnn CLIs
# built against Kokkos 4.6.01 with CUDA (sm_90) and DFGNN_ENABLE_CUDA: OLD of 4d76ce9, B of
# fb5c76a, A of fb5c76a without the gathers' LaunchBounds<256, 4> (experiment build).
# X (lanes.jsonl): fb5c76a with the walks' lanes capped by DFGNN_DST_LANES / DFGNN_SRC_LANES
# (experiment build, not committed).
set -u
W=$(mktemp -d)
$OLD gen sbm --kind pattern --graphs 1024 --out $W/pattern.txt
$OLD gen rmat --scale 17 --edge-factor 64 --out $W/rmat17.txt
$OLD gen sbm --kind cluster --graphs 1024 --out $W/cluster.txt
$OLD gen knn --graphs 1024 --k 8 --out $W/mnist.txt
for g in pattern rmat17; do
  for mhd in "gt 1 128" "agnn 1 128" "gat 1 128" "gatv2 1 128" "gt 4 32" "gat 4 32"; do
    read -r model heads dim <<<"$mhd"
    $OLD bench --graph $W/$g.txt --model $model --heads $heads --dim $dim --backend kokkos --strategy auto \
      --backward --iters 7 --warmup 2 --name $g-old --json ab.jsonl
    $A bench --graph $W/$g.txt --model $model --heads $heads --dim $dim --backend all --strategy auto \
      --backward --iters 7 --warmup 2 --name $g-a --json ab.jsonl
    $B bench --graph $W/$g.txt --model $model --heads $heads --dim $dim --backend kokkos --strategy auto \
      --backward --iters 7 --warmup 2 --name $g-b --json ab.jsonl
  done
done
for g in pattern rmat17; do
  for mhd in "gt 1 128" "agnn 1 128" "gat 1 128" "gatv2 1 128" "gt 4 32"; do
    read -r model heads dim <<<"$mhd"
    for caps in "32 32" "16 32" "8 32" "32 8" "8 8"; do
      read -r d s <<<"$caps"
      DFGNN_DST_LANES=$d DFGNN_SRC_LANES=$s $X bench --graph $W/$g.txt --model $model --heads $heads --dim $dim \
        --backend kokkos --strategy auto --backward --iters 7 --warmup 2 --name $g-d$d-s$s --json lanes.jsonl
    done
  done
done
# rule.jsonl (a later run, OLD now the build of fb5c76a): OLD of fb5c76a, RULE of the tree with Plan::row_walk_lanes, FOLD of RULE plus
# fold.patch (experiment build, not committed), interleaved per case:
for g in pattern cluster mnist rmat17; do
  for mhd in "gt 1 128" "agnn 1 128" "gat 1 128" "gatv2 1 128" "gt 2 64"; do
    read -r model heads dim <<<"$mhd"
    for v in OLD RULE FOLD; do
      ${!v} bench --graph $W/$g.txt --model $model --heads $heads --dim $dim --backend kokkos --strategy auto \
        --backward --iters 7 --warmup 2 --name $g-${v,,} --json rule.jsonl
    done
  done
done
# der-in-prepare.jsonl: OLD the row_walk_lanes build, NEW it plus der-in-prepare.patch (not
# committed); gat 1x128, gat 4x32, gt 1x128 (control) on the four graphs, --name $g-old / $g-new.
