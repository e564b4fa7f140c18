#!/usr/bin/env bash
# usage: bash .carry/ncu-dense.sh OUT -- ncu of Dense's 8-warp kernel, GT 4x32 CLUSTER-like, per binary
set -u
out=$1; mkdir -p $out /tmp/bin /tmp/g
export LD_LIBRARY_PATH=$PWD/.carry/lib
for v in P M N; do xz -dc .carry/bin/$v.xz > /tmp/bin/$v; chmod +x /tmp/bin/$v; done
/tmp/bin/P gen sbm --kind cluster --graphs 1024 --out /tmp/g/cluster.txt >/dev/null
for v in P M N; do
  ncu --kernel-name regex:'dense' --launch-skip 3 --launch-count 3 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis \
    /tmp/bin/$v bench --graph /tmp/g/cluster.txt --model gt --heads 4 --dim 32 --backend cuda --strategy dense --iters 2 --warmup 1 > $out/ncu-$v.txt 2>&1
  grep -E "^  [a-z_ ]*void|Duration|Executed Instructions  |Registers Per|Achieved Occ|Theoretical Occ|Warp Cycles Per Issued|Eligible Warps|Local Memory Spilling Requests  |Issued Warp" $out/ncu-$v.txt | sed "s/^/$v /" | cut -c1-120
done
