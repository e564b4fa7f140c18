#!/usr/bin/env bash
# The main job: builds the CLI alone (tools/setup.sh --cli: the cli preset, no tests) and runs
# fused attention on the bundled Cora graph for every model (dfgnn info --models), each checked
# against the float64 reference (the CLI exits non-zero on a mismatch). Arguments go to every
# run (e.g. --heads 8 --dim 64, --dtype bf16).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --cli
models=$(./build/cli/dfgnn info --models)  # apart, so that set -e sees it fail
for model in $models; do
  ./build/cli/dfgnn attention --graph data/cora.tsv.gz --symmetrize --model "$model" \
    --heads 4 --dim 32 --reference "$@"
done
