#!/usr/bin/env python3
"""Message-passing benchmark (run on the GPU machine): `dfgnn spmm` on the CUDA-native kernels
against cuSPARSE SpMM and PyG's scatter-based aggregations on the graphs of shared/anchors.md.

Per graph (prepared as perf/run_bench.py does: canonical directed edge list, real graphs
symmetrised) and feature width D (H = 1):
  - ours:     `dfgnn spmm --backend cuda` for copy_u with sum, mean, max, min, and u_mul_e sum with
              [E] weights (cuSPARSE's weighted SpMM), each in the file's order and, for sum and
              max, after --reorder rcm and --reorder degree (preprocessing time recorded apart);
  - cuSPARSE: build-perf/cusparse_spmm (CSR_ALG2, descriptors and buffer made once), 1 and weights;
  - PyG:      perf/pyg_scatter.py in this process, scatter and segment variants.
A 1 GiB device copy gives the bandwidth the byte fractions divide by. Raw records go to
RESULTS/raw.jsonl, the table to RESULTS/table.md and stdout.

Usage (repo root, GPU machine):
  python3 perf/message_bench.py --data ../shared/data --dfgnn build/cuda/dfgnn
      --cusparse build-perf/cusparse_spmm [--graphs cora,pattern] [--dims 32,128,256]
      [--no-pyg] [--no-cusparse] [--results perf/results/NAME] [--work /tmp/dfgnn-mp-bench]
"""

import argparse
import datetime
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402
import pyg_scatter  # noqa: E402
import run_bench  # noqa: E402

REDUCES = ("sum", "mean", "max", "min")


def run_ours(dfgnn, g, dim, message, reduce, reorder, extra, json_out, warmup, iters):
    """One `dfgnn spmm` timing: the CLI call, in one place."""
    r = run_bench.sh([dfgnn, "spmm", "--graph", g["txt"], "--nodes", g["nodes"], "--message", message,
                      "--reduce", reduce, "--dim", dim, "--backend", "cuda", "--reorder", reorder,
                      "--warmup", warmup, "--iters", iters, "--name", g["name"], "--json", json_out, *extra])
    if r.returncode != 0:
        return {"peer": "ours", "name": g["name"], "D": dim, "op": f"{message} {reduce}", "reorder": reorder,
                "error": (r.stderr or r.stdout).strip()[-500:]}
    with open(json_out) as f:
        rec = json.loads(f.read().strip().splitlines()[-1])
    rec["peer"] = "ours"
    return rec


def run_cusparse(exe, g, dim, weighted, warmup, iters):
    r = run_bench.sh([exe, "--graph", g["txt"], "--nodes", g["nodes"], "--name", g["name"], "--dim", dim,
                      "--warmup", warmup, "--iters", iters, *(["--weighted"] if weighted else [])])
    recs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 or not recs:
        return {"peer": "cusparse", "name": g["name"], "D": dim, "error": r.stderr.strip()[-500:]}
    return recs[0]


def fmt(x, digits=3):
    return "—" if x is None else f"{x:.{digits}g}"


def table(records, copy_gbps):
    """One row per (graph, D, op): ours (file order, rcm, degree), cuSPARSE, PyG's best, ratios,
    bandwidth fractions of our file-order run and peak extra memory."""
    def find(peer, name, dim, op, **kw):
        for r in records:
            if (r.get("peer") == peer and r.get("name") == name and r.get("D") == dim and r.get("op") == op
                    and "error" not in r and all(r.get(k) == v for k, v in kw.items())):
                return r
        return None

    lines = ["| graph | D | op | ours ms | rcm ms | degree ms | cuSPARSE ms | PyG ms | vs cuSPARSE | vs PyG "
             "| compulsory | gather | extra MiB ours / cuSPARSE / PyG |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["name"], r["D"], r["op"]) for r in records if r.get("peer") == "ours" and "error" not in r},
                  key=lambda k: (k[0], k[1], k[2]))
    for name, dim, op in keys:
        ours = find("ours", name, dim, op, reorder="none")
        rcm = find("ours", name, dim, op, reorder="rcm")
        deg = find("ours", name, dim, op, reorder="degree")
        cus = find("cusparse", name, dim, op) if op.endswith("sum") else None
        pyg = [r for r in (find("pyg", name, dim, op, variant=v) for v in ("scatter", "segment")) if r]
        best = min(pyg, key=lambda r: r["ms"]) if pyg else None
        ms = ours["ms"] if ours else None
        comp = ours["compulsory_bytes"] / (ms * 1e6) / copy_gbps if ours and copy_gbps else None
        gath = ours["gather_bytes"] / (ms * 1e6) / copy_gbps if ours and copy_gbps else None
        lines.append(
            f"| {name} | {dim} | {op} | {fmt(ms)} | {fmt(rcm and rcm['ms'])} | {fmt(deg and deg['ms'])} "
            f"| {fmt(cus and cus['ms'])} | {fmt(best and best['ms'])} "
            f"| {fmt(cus and ms and cus['ms'] / ms, 2)}x | {fmt(best and ms and best['ms'] / ms, 2)}x "
            f"| {fmt(comp, 2)} | {fmt(gath, 2)} "
            f"| {fmt(ours and ours['extra_mib'])} / {fmt(cus and cus['extra_mib'])} / {fmt(best and best['extra_mib'])} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    run_bench.add_graph_args(p)
    p.add_argument("--dims", default="32,128,256")
    p.add_argument("--dfgnn", default="build/cuda/dfgnn")
    p.add_argument("--cusparse", default="build-perf/cusparse_spmm")
    p.add_argument("--no-pyg", action="store_true")
    p.add_argument("--no-cusparse", action="store_true")
    p.add_argument("--no-reorder", action="store_true")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--work", default="/tmp/dfgnn-mp-bench")
    p.add_argument("--results", default=None, help="default perf/results/<UTC timestamp>-message")
    a = p.parse_args(argv)
    a.dfgnn = os.path.abspath(a.dfgnn)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    results = a.results or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", stamp + "-message")
    os.makedirs(results, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    raw_path = os.path.join(results, "raw.jsonl")
    records = []

    def keep(rec):
        with open(raw_path, "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), flush=True)
        records.append(rec)

    copy = peers.copy_bandwidth()
    keep(copy)
    copy_gbps = copy.get("read_write_GBps")
    for name in [x for x in a.graphs.split(",") if x]:
        try:
            g = run_bench.prepare_graph(name, a, a.work)
        except Exception as e:  # noqa: BLE001 - one bad graph must not stop the run
            keep({"peer": "setup", "name": name, "error": str(e)})
            continue
        weights = os.path.join(a.work, name, "w.npy")
        np.save(weights, (np.random.default_rng(a.seed).random(g["edges"]) + 0.5).astype(np.float32))
        json_out = os.path.join(a.work, name, "ours.jsonl")
        src, dst = peers.sorted_by_destination(g["src"], g["dst"])
        for dim in [int(d) for d in a.dims.split(",") if d]:
            runs = [("copy_u", r, []) for r in REDUCES] + [("u_mul_e", "sum", ["--rhs", weights])]
            for message, reduce, extra in runs:
                orders = ["none"] if a.no_reorder or reduce not in ("sum", "max") else ["none", "rcm", "degree"]
                for reorder in orders:
                    keep(run_ours(a.dfgnn, g, dim, message, reduce, reorder, extra, json_out, a.warmup, a.iters))
            if not a.no_cusparse:
                for weighted in (False, True):
                    keep(run_cusparse(a.cusparse, g, dim, weighted, a.warmup, a.iters))
            if not a.no_pyg:
                for weighted in (False, True):
                    for rec in pyg_scatter.run(src, dst, g["nodes"], dim, ["sum"] if weighted else REDUCES, weighted,
                                               a.warmup, a.iters, a.seed, name):
                        keep(rec)
    text = table(records, copy_gbps)
    with open(os.path.join(results, "table.md"), "w") as f:
        f.write(f"copy bandwidth {fmt(copy_gbps, 4)} GB/s (read + write)\n\n{text}\n")
    print(text)


if __name__ == "__main__":
    main()
