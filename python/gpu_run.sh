#!/usr/bin/env bash
# On the GPU machine, from the repository root: the Python tests, CUDA ones required, then the
# training benchmark, with the library and data packed by python/pack_gpu.sh; the PyTorch
# extension is built there first, for that machine's Python and torch.
# Usage: python/gpu_run.sh PACK.tar.xz OUT [tests|bench|all] [train_bench.py args]
set -uo pipefail
pack=$(realpath "$1") out=$2 what=${3:-all}
shift $(($# < 3 ? $# : 3))
mkdir -p "$out"
out=$(realpath "$out")
work=$(mktemp -d)
tar -xJf "$pack" -C "$work" || exit 1
export DFGNN_LIB=$work/libdfgnn_capi.so PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$work${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
status=0
# The PyTorch extension (python/ext/ops.cpp) for this machine's Python and torch: it needs only
# their headers and libraries (python/ext/CMakeLists.txt builds it the same way).
read -r torch_dir py_include suffix abi < <(python3 -c 'import os, sysconfig, torch
print(os.path.dirname(torch.__file__), sysconfig.get_paths()["include"], sysconfig.get_config_var("EXT_SUFFIX"),
      int(torch._C._GLIBCXX_USE_CXX11_ABI))')
if [[ ! -f python/dfgnn/_ops$suffix ]]; then
  g++ -O2 -shared -fPIC -std=c++17 -fvisibility=hidden python/ext/ops.cpp -Ipython/capi -isystem "$torch_dir/include" \
    -isystem "$torch_dir/include/torch/csrc/api/include" -isystem "$py_include" -DTORCH_EXTENSION_NAME=_ops \
    -DTORCH_API_INCLUDE_EXTENSION_H -D_GLIBCXX_USE_CXX11_ABI="$abi" -L"$torch_dir/lib" -ltorch -ltorch_cpu -lc10 \
    -ltorch_python -o "python/dfgnn/_ops$suffix" || exit 1
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python3 -c 'import torch, torch_geometric; print("torch", torch.__version__, "pyg", torch_geometric.__version__)'
if [[ $what == tests || $what == all ]]; then
  echo "== pytest (CUDA tests required)"
  (cd python/tests && DFGNN_REQUIRE_CUDA=1 python3 -m pytest -p no:cacheprovider -rs -v) >"$out/pytest.log" 2>&1 \
    || status=1
  grep -E "FAILED|ERROR|SKIPPED" "$out/pytest.log" | head -n 40
  tail -n 1 "$out/pytest.log"
fi
if [[ $what == bench || $what == all ]]; then
  echo "== training benchmark"
  python3 perf/train_bench.py --data "$work/data" --json "$out/train_bench.jsonl" "$@" 2>&1 \
    | tee "$out/train_bench.md" || status=1
fi
echo "gpu_run: status $status"
exit $status
