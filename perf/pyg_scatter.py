#!/usr/bin/env python3
"""PyG's scatter-based aggregations, the peer of `dfgnn spmm` (run on the GPU machine).

out[v] = reduce over u -> v of x[u] (copy_u) or x[u] * w[e] (u_mul_e, --weighted), reduce in
sum, mean, max, min, the way PyG's MessagePassing computes it: the messages x[src] are
materialised ([E, D]) and aggregated at dst, either by scatter over the edge index
(torch_geometric.utils.scatter) or, the index being sorted by destination, by segments over the
CSR offsets (torch_geometric.utils.segment, pyg-lib / torch-scatter when installed). Median of
CUDA-event times after warm-ups; peak device memory beyond the inputs. One JSON line per
(variant, reduce).

Usage: python3 perf/pyg_scatter.py --graph G.npz|edges.txt[.gz] [--nodes N] --dim 128
          [--reduces sum,mean,max,min] [--weighted] [--warmup 3] [--iters 10] [--json F]
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

REDUCES = ("sum", "mean", "max", "min")


def run(src, dst, num_nodes, dim, reduces=REDUCES, weighted=False, warmup=3, iters=10, seed=1, name=""):
    """Yields one record per (variant, reduce); src/dst sorted by destination."""
    import torch
    from torch_geometric.utils import scatter, segment

    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(seed)
    s = torch.as_tensor(src, dtype=torch.long, device=dev)
    d = torch.as_tensor(dst, dtype=torch.long, device=dev)
    ptr = torch.zeros(num_nodes + 1, dtype=torch.long, device=dev)
    ptr[1:] = torch.cumsum(torch.bincount(d, minlength=num_nodes), 0)
    x = torch.rand(num_nodes, dim, device=dev, generator=gen) * 2 - 1
    w = torch.rand(len(src), device=dev, generator=gen) + 0.5

    def messages():
        return x[s] * w[:, None] if weighted else x[s]

    variants = {
        "scatter": lambda r: scatter(messages(), d, dim=0, dim_size=num_nodes, reduce=r),
        "segment": lambda r: segment(messages(), ptr, reduce=r),
    }
    for variant, agg in variants.items():
        for r in reduces:
            def forward(r=r, agg=agg):
                return agg(r)

            try:
                ms, _ = peers.median_ms(forward, warmup, iters)
                peak = peers.peak_extra_mib(forward)
            except (RuntimeError, ImportError) as e:  # OOM, or no segment backend installed
                yield {"peer": "pyg", "variant": variant, "reduce": r, "name": name, "error": str(e).split("\n")[0]}
                continue
            yield {"peer": "pyg", "variant": variant, "kernel": "spmm",
                   "op": ("u_mul_e " if weighted else "copy_u ") + r, "reduce": r, "name": name,
                   "N": num_nodes, "E": len(src), "H": 1, "D": dim, "ms": ms, "extra_mib": peak}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", required=True, help=".npz (src, dst, num_nodes) or text edge list (.gz ok)")
    p.add_argument("--nodes", type=int)
    p.add_argument("--name", default="")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--reduces", default=",".join(REDUCES))
    p.add_argument("--weighted", action="store_true")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--json", help="append the JSON lines to this file too")
    a = p.parse_args(argv)
    if a.graph.endswith(".npz"):
        z = np.load(a.graph)
        src, dst, n = z["src"], z["dst"], int(z["num_nodes"])
    else:
        src, dst, n = peers.read_edge_list(a.graph, a.nodes)
    src, dst = peers.sorted_by_destination(src, dst)
    for rec in run(src, dst, n, a.dim, a.reduces.split(","), a.weighted, a.warmup, a.iters, name=a.name or a.graph):
        line = json.dumps(rec)
        print(line, flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main()
