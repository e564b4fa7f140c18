#!/usr/bin/env bash
# usage (kept as .carry/rc/run.sh, the binary .carry/rc/dfgnn_gpu_tests.xz): bash run.sh OUT LIST K SECONDS -- racecheck the tests named in LIST (one per line) in K parallel processes
set -u
out=$1; list=$2; k=$3; secs=$4; mkdir -p $out /tmp/rc
export LD_LIBRARY_PATH=$PWD/.carry/lib
xz -dc .carry/rc/dfgnn_gpu_tests.xz > /tmp/rc/t && chmod +x /tmp/rc/t
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $out/gpu.txt
sha256sum /tmp/rc/t > $out/binary.sha256
start=$(date +%s)
for i in $(seq 0 $((k-1))); do
  f=$(awk -v k=$k -v i=$i 'NR%k==i' $list | paste -sd:)
  ( timeout $secs compute-sanitizer --tool racecheck --error-exitcode 1 /tmp/rc/t --gtest_filter="$f" > $out/shard$i.log 2>&1; echo "rc=$?" >> $out/shard$i.log ) &
done
wait
echo "wall $(( $(date +%s) - start )) s"
for i in $(seq 0 $((k-1))); do echo "shard$i: $(grep -c '^\[       OK' $out/shard$i.log) ok, $(grep -c '^\[  FAILED' $out/shard$i.log) failed, $(grep -E 'RACECHECK SUMMARY' $out/shard$i.log) $(tail -1 $out/shard$i.log)"; done
grep -h '^\[       OK' $out/shard*.log | awk '{print $4}' | sort > $out/done.txt; wc -l < $out/done.txt
