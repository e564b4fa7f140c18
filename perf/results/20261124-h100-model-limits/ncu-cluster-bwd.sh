#!/usr/bin/env bash
# usage (kept as .carry/ncu-cluster-bwd.sh): bash ncu-cluster-bwd.sh OUT -- bench and ncu of the backward walks, CLUSTER-like GT 1x128
set -u
out=$1 bin=${2:-P}; mkdir -p $out /tmp/bin /tmp/g
export LD_LIBRARY_PATH=$PWD/.carry/lib
xz -dc .carry/bench/dfgnn.xz > /tmp/bin/dfgnn; chmod +x /tmp/bin/dfgnn; D=/tmp/bin/dfgnn
$D gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster.txt >/dev/null
$D gen sbm --kind pattern --graphs 1024 --out /tmp/g/pattern.txt >/dev/null
for c in cluster:1:128; do IFS=: read -r g h d <<<"$c"
  f=$out/ncu-$g-gt-${h}x$d.txt; $D bench --graph /tmp/g/$g.txt --model gt --heads $h --dim $d --backend cuda --strategy auto --backward --iters 20 --warmup 5 | tail -3
  ncu --kernel-name regex:'backward_rows|backward_cols' --launch-skip 0 --launch-count 2 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section SchedulerStats --section WarpStateStats --section InstructionStats --section LaunchStats --section SourceCounters \
    --metrics smsp__inst_executed.sum,lts__t_bytes.sum.per_second,dram__bytes.sum.per_second \
    $D bench --graph /tmp/g/$g.txt --model gt --heads $h --dim $d --backend cuda --strategy auto --backward --iters 1 --warmup 0 > $f 2>&1
  grep -E "Stall|Issued Warp|No Eligible|L1/TEX Hit|L1/TEX Cache Throughput|Local Memory Spilling Requests  |^  [a-z_ ]*void|Duration|L2 Cache Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|inst_executed" $f | sed "s/^/$g-${h}x$d /" | cut -c1-160
done
