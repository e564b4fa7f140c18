#!/usr/bin/env bash
# CI for the Python package: a venv with PyTorch and PyG from PyPI, `pip install
# --no-build-isolation .` (builds the C ABI library and the PyTorch extension against that
# torch through scikit-build-core and CMake), the pytest suite on the CPU (the CUDA tests
# skip), examples/train_transformer.py and a CPU smoke run of the training benchmark. The venv
# lives outside the clone ($DFGNN_VENV, default ~/.cache/dfgnn/venv): PyTorch's wheels are 5 GB,
# and later runs on the same machine reuse them (a first install took 1.5 minutes here).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${DFGNN_VENV:-$HOME/.cache/dfgnn/venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py=$venv/bin/python
pip=("$py" -m pip install -q --disable-pip-version-check)
"${pip[@]}" -r python/requirements-test.txt
CMAKE_BUILD_PARALLEL_LEVEL=2 "${pip[@]}" --no-build-isolation --force-reinstall --no-deps .
# From python/tests, so `import dfgnn` finds the installed package, not the source tree.
(cd python/tests && "$py" -m pytest -p no:cacheprovider -rs)
(cd python/tests && "$py" ../../examples/train_transformer.py --epochs 40)  # exit 1 unless the loss halves
datasets=synthetic
[ -d ../shared/data/cora ] && datasets=cora,synthetic
"$py" perf/train_bench.py --tiny --device cpu --data ../shared/data --datasets "$datasets"
