#!/usr/bin/env bash
# usage (kept as .carry/ncu-models.sh; .carry/bench/dfgnn.xz the CLI of 7970401): bash ncu-models.sh OUT -- ncu of the forward of AGNN, GAT, GATv2 (and GT beside them) on the SBM batches
set -u
out=$1; mkdir -p $out /tmp/bin /tmp/g
export LD_LIBRARY_PATH=$PWD/.carry/lib
xz -dc .carry/bench/dfgnn.xz > /tmp/bin/dfgnn; chmod +x /tmp/bin/dfgnn; D=/tmp/bin/dfgnn
$D gen sbm --kind pattern --graphs 1024 --out /tmp/g/pattern.txt >/dev/null
$D gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster.txt >/dev/null
for c in pattern:gt:1:128 pattern:agnn:1:128 pattern:gat:1:128 pattern:gat:4:32 pattern:gatv2:1:128 pattern:gatv2:4:32 cluster:agnn:4:32 cluster:gat:4:32; do
  IFS=: read -r g m h d <<<"$c"; f=$out/ncu-$g-$m-${h}x$d.txt
  $D bench --graph /tmp/g/$g.txt --model $m --heads $h --dim $d --backend cuda --strategy auto --iters 20 --warmup 5 --json $out/time-$g-$m-${h}x$d.json > $out/time-$g-$m-${h}x$d.txt 2>&1
  ncu --kernel-name regex:'dense_kernel|online_kernel|merge' --launch-skip 0 --launch-count 4 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section SchedulerStats --section WarpStateStats --section LaunchStats --section InstructionStats \
    --metrics smsp__inst_executed.sum,lts__t_bytes.sum,dram__bytes.sum,l1tex__t_bytes.sum \
    $D bench --graph /tmp/g/$g.txt --model $m --heads $h --dim $d --backend cuda --strategy auto --iters 1 --warmup 0 > $f 2>&1
  echo "== $g $m ${h}x$d"; grep -v "^#" $out/time-$g-$m-${h}x$d.txt | tail -2 | cut -c1-200
  grep -E "^  [a-z_ ]*void|Duration|Memory Throughput  *%|L1/TEX Hit|L2 Hit|L2 Cache Throughput|DRAM Throughput|L1/TEX Cache Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Eligible Warps|Warp Cycles Per Issued|inst_executed|lts__t_bytes|dram__bytes|l1tex__t_bytes" $f | cut -c1-150
done
