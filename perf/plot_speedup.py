#!/usr/bin/env python3
"""Speedup of our best forward over each peer, per graph (GT, one H x D), as an SVG bar chart.

Reads run_bench.py's raw*.jsonl files from a results folder; DF-GNN's times come from
shared/dfgnn-h100.md via run_bench.DFGNN_H100. Standard library only.
Usage: python3 perf/plot_speedup.py perf/results/20261124-h100-headline docs/speedup.svg [--shape 1x128]
"""
import argparse
import glob
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_bench import DFGNN_H100  # noqa: E402

PEERS = [("PyG", "#4c72b0"), ("cuSPARSE", "#dd8452"), ("DF-GNN", "#55a868")]


def speedups(folder, shape):
    heads, dim = (int(x) for x in shape.split("x"))
    ours, pyg, cusparse, order = {}, {}, {}, []
    for path in sorted(glob.glob(os.path.join(folder, "raw*.jsonl"))):
        for line in open(path):
            r = json.loads(line)
            if r.get("heads") != heads or r.get("dim") != dim or r.get("model") != "gt" or r.get("pass") != "fwd":
                continue
            g, ms = r["graph"], r.get("ms")
            if g not in order:
                order.append(g)
            if ms is None:
                continue
            if r.get("peer") == "ours":
                ours[g] = min(ours.get(g, math.inf), ms)
            elif r.get("peer") == "pyg":
                pyg[g] = ms
            elif r.get("peer") == "cusparse":
                cusparse[g] = ms
    rows = []
    for g in order:
        if g not in ours:
            continue
        dfgnn = DFGNN_H100.get((g, shape), {}).get("gt")
        peers = [pyg.get(g), cusparse.get(g), min(dfgnn) if dfgnn else None]
        rows.append((g, [p / ours[g] if p else None for p in peers]))
    return rows


def svg(rows, shape):
    w_group, bar, left, top, height = 90, 22, 60, 40, 300
    width = left + w_group * len(rows) + 20
    top_val = max(s for _, ss in rows for s in ss if s)
    scale = height / math.log10(max(top_val, 10) * 1.5)
    y = lambda v: top + height - scale * math.log10(max(v, 1))  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + 90}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="20" font-size="13">dfgnn GT forward {shape}, H100: speedup of our best '
           'strategy over each peer (log scale)</text>']
    for tick in (1, 2, 5, 10, 20, 50, 100):
        if tick <= top_val * 1.5:
            out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}x</text>')
    for i, (g, ss) in enumerate(rows):
        x0 = left + i * w_group + 10
        for j, ((name, colour), s) in enumerate(zip(PEERS, ss)):
            if not s:
                continue
            x = x0 + j * bar
            out.append(f'<rect x="{x}" y="{y(s):.1f}" width="{bar - 3}" height="{top + height - y(s):.1f}" '
                       f'fill="{colour}"><title>{name}: {s:.1f}x</title></rect>')
            out.append(f'<text x="{x + (bar - 3) / 2}" y="{y(s) - 3:.1f}" text-anchor="middle" '
                       f'font-size="9">{s:.0f}</text>')
        out.append(f'<text x="{x0 + 1.5 * bar}" y="{top + height + 14}" text-anchor="middle">{g}</text>')
    for j, (name, colour) in enumerate(PEERS):
        out.append(f'<rect x="{left + j * 110}" y="{top + height + 40}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{left + j * 110 + 16}" y="{top + height + 50}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results")
    p.add_argument("out")
    p.add_argument("--shape", default="1x128")
    a = p.parse_args()
    rows = speedups(a.results, a.shape)
    with open(a.out, "w") as f:
        f.write(svg(rows, a.shape) + "\n")
    for g, ss in rows:
        print(g, " ".join(f"{n} {s:.1f}x" if s else f"{n} -" for (n, _), s in zip(PEERS, ss)))


if __name__ == "__main__":
    main()
