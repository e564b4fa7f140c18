#!/usr/bin/env bash
# usage: bash .carry/ncu-bwd.sh OUT -- ncu of the training forward and backward walks (GT 1x128)
set -u
out=$1; mkdir -p $out /tmp/bin /tmp/g
export LD_LIBRARY_PATH=$PWD/.carry/lib
xz -dc .carry/bin/J.xz > /tmp/bin/dfgnn; chmod +x /tmp/bin/dfgnn; D=/tmp/bin/dfgnn
$D gen rmat --scale 17 --edge-factor 64 --out /tmp/g/rmat17.txt >/dev/null
$D gen knn --graphs 1024 --k 8 --out /tmp/g/mnist.txt >/dev/null
for c in "tolokers:.carry/data/tolokers.tsv.gz --nodes 11758 --symmetrize" "web-NotreDame:.carry/data/web-NotreDame.txt.gz --nodes 325729 --symmetrize" "rmat17:/tmp/g/rmat17.txt" "pubmed:.carry/data/pubmed.tsv.gz --symmetrize" "mnist:/tmp/g/mnist.txt"; do
  name=${c%%:*} g=${c#*:}
  ncu --kernel-name regex:'online_kernel|backward_rows|backward_cols' --launch-skip 1 --launch-count 3 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section SchedulerStats --section WarpStateStats \
    --metrics lts__t_sectors_srcunit_tex_op_read.sum,lts__t_bytes.sum.per_second,l1tex__t_bytes.sum.per_second,dram__bytes.sum.per_second \
    $D bench --graph $g --model gt --heads 1 --dim 128 --backend cuda --strategy auto --backward --iters 1 --warmup 0 > $out/ncu-$name-gt-1x128.txt 2>&1
  grep -E "^  [a-z_ ]*void|Duration|L2 Cache Throughput|DRAM Throughput" $out/ncu-$name-gt-1x128.txt | sed "s/^/$name /" | cut -c1-150
done
