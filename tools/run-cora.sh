#!/usr/bin/env bash
# The main job: fused attention on the bundled Cora graph for every model (dfgnn info --models),
# each checked against the float64 reference (the CLI exits non-zero on a mismatch).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh >/dev/null
models=$(./build/serial/dfgnn info --models)  # apart, so that set -e sees it fail
for model in $models; do
  ./build/serial/dfgnn attention --graph data/cora.tsv.gz --symmetrize --model "$model" \
    --heads 4 --dim 32 --reference "$@"
done
