#!/usr/bin/env bash
# The main job: fused attention on the bundled Cora graph for all four models, each checked
# against the float64 reference (the CLI exits non-zero on a mismatch).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh >/dev/null
for model in gt agnn gat gatv2; do
  ./build/serial/dfgnn attention --graph data/cora.tsv.gz --symmetrize --model "$model" \
    --heads 4 --dim 32 --reference "$@"
done
