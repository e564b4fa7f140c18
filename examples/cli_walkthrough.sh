#!/usr/bin/env bash
# A walk through the dfgnn CLI (docs/guide/cli.md), each step printed before it runs. Every
# attention, spmm and sddmm run here checks itself against the float64 reference (exit 1 on a
# mismatch), so the script fails if any step computes a wrong answer.
#   examples/cli_walkthrough.sh [DFGNN]   DFGNN: the CLI (default build/cli/dfgnn, else
#                                         build/serial/dfgnn; `bash tools/setup.sh --cli` builds it)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${1:-}
if [ -z "$cli" ]; then
  for c in build/cli/dfgnn build/serial/dfgnn; do [ -x "$c" ] && { cli=$c; break; }; done
fi
[ -n "$cli" ] && [ -x "$cli" ] || { echo "cli_walkthrough: no dfgnn CLI (bash tools/setup.sh --cli builds one)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
step() { printf '\n$ %s\n' "$*"; "$@"; }

step "$cli" --version
# The bundled Cora (2,708 nodes), made undirected; what the portable kernels' Auto would run.
step "$cli" info --graph data/cora.tsv.gz --symmetrize --model gat --heads 4 --dim 32
# GAT on Cora with random inputs, checked against the float64 reference; the output to a file.
step "$cli" attention --graph data/cora.tsv.gz --symmetrize --model gat --heads 4 --dim 32 --reference \
  --out "$work/out.npy"
# The training pass: forward, then the fused backward for a given dLoss/dOut (here the output
# itself, as a stand-in), every gradient checked, in bf16.
step "$cli" attention --graph data/cora.tsv.gz --symmetrize --model gt --heads 4 --dim 32 --dtype bf16 \
  --grad-out "$work/out.npy" --grad-prefix "$work/grad_" --reference
ls "$work"
# A generated benchmark graph: a batch of 20 PATTERN-like SBM graphs, then GATv2 on it, timed.
step "$cli" gen sbm --kind pattern --graphs 20 --out "$work/pattern.txt"
step "$cli" bench --graph "$work/pattern.txt" --model gatv2 --heads 4 --dim 32 --iters 5 --warmup 1
# Message passing: a mean of u * e messages (g-SpMM), and a per-edge dot product (g-SDDMM).
step "$cli" spmm --graph data/cora.tsv.gz --symmetrize --message u_mul_e --reduce mean --heads 2 --dim 16 --reference
step "$cli" sddmm --graph data/cora.tsv.gz --symmetrize --op dot --heads 2 --dim 16 --reference
printf '\ncli_walkthrough: every step ran and every check passed\n'
