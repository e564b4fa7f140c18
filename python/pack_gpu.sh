#!/usr/bin/env bash
# Builds the CUDA-enabled C ABI library (sm_90) from the committed tree, in a clean clone so that
# uncommitted work in this checkout stays out, and packs what the GPU machine needs besides
# the repository into one archive: libdfgnn_capi.so, the Kokkos shared library it links
# (Debian's; the GPU machine has none), and Cora and Pubmed from shared/data.
# Usage: python/pack_gpu.sh [OUT.tar.xz]    (default .carry/py/dfgnn-py.tar.xz)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-.carry/py/dfgnn-py.tar.xz}")
data=$(realpath ../shared/data)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q . "$work/src"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDFGNN_ENABLE_TESTS=OFF \
  -DDFGNN_BUILD_PYTHON=ON -DDFGNN_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_CUDA_COMPILER="${CUDACXX:-/usr/local/cuda/bin/nvcc}" >/dev/null
cmake --build "$work/build" --target dfgnn_capi -j2
mkdir -p "$work/pack/data"
lib=$work/build/python/capi/libdfgnn_capi.so
strip --strip-unneeded -o "$work/pack/libdfgnn_capi.so" "$lib"
ldd "$lib" | awk '/kokkos/ {print $3}' | xargs -r cp -t "$work/pack"
cp -r "$data/cora" "$data/pubmed" "$work/pack/data"
chmod -R u+w "$work/pack"
mkdir -p "$(dirname "$out")"
tar -cJf "$out" -C "$work/pack" .
echo "pack_gpu: $out ($(du -h "$out" | cut -f1)) from $(git -C "$work/src" log --oneline -1)"
