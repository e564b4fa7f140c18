#!/usr/bin/env bash
# usage (the session kept it as .carry/bench/run.sh, with the CLI of 7970401, cusparse_pipeline and libtrilinos_kokkoscore beside it): bash run.sh OUT GRAPHS -- the headline benchmark (ours, cuSPARSE, PyG) on GRAPHS
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib
out=$1; graphs=$2; mkdir -p $out /tmp/b
xz -dc .carry/bench/dfgnn.xz > /tmp/b/dfgnn; cp .carry/bench/cusparse_pipeline /tmp/b/; chmod +x /tmp/b/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $out/gpu.txt
time bash perf/gpu_run.sh /tmp/b .carry/sd $out bench --graphs $graphs --iters 10 --warmup 3
