#!/usr/bin/env python3
"""Markdown table of docs/performance.md, "Forward + backward, CUDA-native", from raw records.

Ours: the JSONL of `dfgnn bench ... --backward --json FILE` (perf/gpu_run.sh, step backward),
one record per graph, model, H x D and pass (fwd, bwd, fwd+bwd). PyG fwd+bwd: run_bench.py's
raw*.jsonl (peer pyg, pass fwdbwd); "–" where it has none (OOM or not run). DF-GNN's GT
hyper fwd+bwd: the same files' records of perf/dfgnn_peer.py (peer dfgnn) where they have them,
else run_bench.DFGNN_H100 (shared/dfgnn-h100.md, marked cited). Importing run_bench needs numpy,
not torch (peers.py imports torch only inside its functions). Below the table: per input
file, the commit(s), device and copy bandwidth (ours) or torch/PyG versions (PyG).

Usage (repo root):
  R=perf/results/20261124-h100-backward-3
  python3 perf/backward_table.py --ours $R/backward-native.jsonl
      --pyg perf/results/20261123-h100-dfgnn-peer/raw-*.jsonl $R/pyg-small-and-batched.jsonl
      $R/pyg-super-nodes.jsonl [--shape 1x128] [--summary]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_bench import dfgnn_best, dfgnn_cell, fmt  # noqa: E402

# Graphs in the docs' order, with their display names; others follow in the order read.
GRAPHS = {"cora": "cora", "citeseer": "citeseer", "pubmed": "pubmed", "pattern": "PATTERN-like",
          "cluster": "CLUSTER-like", "mnist": "MNIST-like", "tolokers": "tolokers",
          "web-NotreDame": "web-NotreDame", "rmat-s17-d64": "rmat-s17-d64"}
MODELS = {"gt": "GT", "agnn": "AGNN", "gat": "GAT", "gatv2": "GATv2"}
HEADER = ("| graph | model | fwd (strategy) | bwd | fwd+bwd | PyG fwd+bwd | ×PyG "
          "| ×DF-GNN (GT hyper fwd+bwd) | bwd compulsory / gather | copy bandwidth 30x PyG needs |\n"
          + "|---" * 10 + "|")


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def load_ours(paths, shape):
    """{(graph, model): {pass: record}} for one H x D, and one provenance line per file."""
    ours, notes = {}, []
    for path in paths:
        rs = records(path)
        for r in rs:
            if f'{r["H"]}x{r["D"]}' == shape and r.get("ms") is not None:
                ours.setdefault((r["name"], r["model"]), {})[r["pass"]] = r
        gbs = [r["copy_gbs"] for r in rs if r.get("copy_gbs")]
        worst = max(rs, key=lambda r: r.get("max_rel_err", -1))
        notes.append(f'{path}: commit {", ".join(sorted({r["commit"] for r in rs}))}, '
                     f'{", ".join(sorted({r["device"] for r in rs}))}, '
                     f'copy {min(gbs):.0f}-{max(gbs):.0f} GB/s, max rel err '
                     f'{worst.get("max_rel_err", -1):.2g} ({worst["name"]} {worst["model"]} '
                     f'{worst["H"]}x{worst["D"]} {worst["pass"]})')
    return ours, notes


def load_peers(paths, shape):
    """{(graph, model): PyG fwd+bwd ms} and {(graph, model): DF-GNN fwd+bwd records} for one
    H x D, and one provenance line per file."""
    pyg, dfgnn, notes = {}, {}, []
    for path in paths:
        rs = records(path)
        for r in rs:
            if r.get("pass") == "fwdbwd" and f'{r.get("heads")}x{r.get("dim")}' == shape:
                if r.get("peer") == "dfgnn":
                    dfgnn.setdefault((r["graph"], r["model"]), []).append(r)
                elif r.get("peer") == "pyg" and "ms" in r:
                    pyg[(r["graph"], r["model"])] = r["ms"]
        rs = [r for r in rs if r.get("peer") == "pyg"]
        versions = sorted({f'{r["device"]}, torch {r["torch"]}, PyG {r["pyg"]}' for r in rs})
        notes.append(f'{path}: {"; ".join(versions) or "no PyG records"}')
    return pyg, dfgnn, notes


def times_faster(ms, note, total):
    """The ×DF-GNN cell: ratio and time (cited ones marked), or why DF-GNN has no time."""
    return f"{ms / total:.1f} ({dfgnn_cell(ms, note)})" if ms else dfgnn_cell(ms, note)


def need_for(times, both, peer):
    """The share of the copy bandwidth at which fwd+bwd would move its compulsory bytes in
    1/times of PyG's time: above 100%, no kernel reaches `times` x PyG."""
    if not peer or not both.get("compulsory_bytes") or not both.get("copy_gbs"):
        return "–"
    roofline_ms = both["compulsory_bytes"] / (both["copy_gbs"] * 1e6)
    return f"{roofline_ms / (peer / times):.0%}"


def rows(ours, pyg, dfgnn, shape):
    """(graph, model, cells, ×PyG or None) in the docs' order."""
    graphs = list(GRAPHS) + [g for g, _ in ours if g not in GRAPHS]
    out = []
    for g in dict.fromkeys(graphs):
        for m in MODELS:
            rec = ours.get((g, m))
            if not rec:
                continue
            fwd, bwd, both = (rec.get(p, {}) for p in ("fwd", "bwd", "fwd+bwd"))
            total, peer = both.get("ms"), pyg.get((g, m))
            df_ms, df_note = dfgnn_best(g, shape, m, "fwdbwd", dfgnn.get((g, m)))
            x_pyg = peer / total if peer and total else None
            cells = [
                f'{fmt(fwd.get("ms"))} ({fwd.get("resolved", "?")})' if fwd else "–",
                fmt(bwd.get("ms")), f"**{fmt(total)}**" if total else "–", fmt(peer),
                f"{x_pyg:.0f}" if x_pyg else "–",
                times_faster(df_ms, df_note, total) if total else "–",
                f'{bwd["compulsory_frac"]:.0%} / {bwd["gather_frac"]:.0%}'
                if bwd.get("compulsory_frac") is not None else "–",
                need_for(30, both, peer),
            ]
            out.append((g, m, cells, x_pyg))
    return out


def table(rs):
    lines, last = [HEADER], None
    for g, m, cells, _ in rs:
        name = GRAPHS.get(g, g) if g != last else ""
        lines.append("| " + " | ".join([name, MODELS[m], *cells]) + " |")
        last = g
    return "\n".join(lines)


def summary(rs):
    """Per graph, the lowest and highest ×PyG over the models (and which models)."""
    lines = []
    for g in dict.fromkeys(g for g, *_ in rs):
        xs = sorted((x, MODELS[m]) for gg, m, _, x in rs if gg == g and x)
        if xs:
            lines.append(f"{GRAPHS.get(g, g)}: {xs[0][0]:.0f}-{xs[-1][0]:.0f}x PyG "
                         f"(min {xs[0][1]}, max {xs[-1][1]})")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ours", nargs="+", required=True, help="dfgnn bench --backward --json files")
    p.add_argument("--pyg", nargs="+", default=[], help="run_bench.py raw*.jsonl files")
    p.add_argument("--shape", default="1x128", choices=["1x128", "4x32"])
    p.add_argument("--summary", action="store_true", help="also min-max ×PyG per graph")
    a = p.parse_args()
    ours, ours_notes = load_ours(a.ours, a.shape)
    pyg, dfgnn, pyg_notes = load_peers(a.pyg, a.shape)
    rs = rows(ours, pyg, dfgnn, a.shape)
    print(table(rs))
    print()
    print("\n".join(ours_notes + pyg_notes))
    if a.summary:
        print()
        print(summary(rs))


if __name__ == "__main__":
    main()
