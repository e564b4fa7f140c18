#!/usr/bin/env python3
"""Edge features (PyG's edge_dim) on the H100: our layers against PyG's, and what the edge
features cost the fused attention against the bytes they add.

Per graph (run_bench.py's graphs: real ones symmetrised, generated ones as written):
  layers   TransformerConv(F, C, heads=H, edge_dim=ED) and GATConv(F, C, heads=H, edge_dim=ED,
           add_self_loops=False), ours and PyG's with the same weights on the same inputs: fwd
           (no_grad) and fwd+bwd (to x, edge_attr and every parameter), CUDA events, median of
           --iters after --warmup. PyG gets its edge index sorted by destination (EdgeIndex,
           sort_order="col"), ours a prebuilt dfgnn.Graph. Our TransformerConv also in both of
           its forms, whichever dfgnn.nn._by_columns picks: edge columns (ours_columns_*) and
           lin_edge's rows formed (ours_rows_*).
  bytes    gt_attention / gatv2_attention / gat_attention on [N, H, D] inputs with and without
           edge features: the extra time against the extra bytes (fwd: E*H*D*4 read, GAT's E*H*4;
           fwd+bwd: read twice and the gradient written), as a fraction of the copy bandwidth
           measured in the same run; gt_columns: GT on D + ED columns with edge columns [E, 1,
           ED] (the layer's form), against the same call without them.
Prints one JSON object per line (also appended to --json).

Usage: python3 perf/edge_bench.py --dfgnn BUILD/dfgnn [--graphs cora,tolokers,...] [--heads 1
         --dim 128 --edge-dim 16] [--work DIR] [--json OUT.jsonl]
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402
import run_bench  # noqa: E402


def layers(kind, f, heads, dim, edge_dim):
    """(ours, PyG's) of `kind` with the same weights, on the GPU."""
    import torch_geometric.nn as pyg_nn

    import dfgnn.nn
    kwargs = dict(heads=heads, edge_dim=edge_dim)
    if kind == "gat":
        kwargs["add_self_loops"] = False  # the same graph for every layer and peer
    name = "TransformerConv" if kind == "gt" else "GATConv"
    theirs = getattr(pyg_nn, name)(f, dim, **kwargs).cuda()
    ours = getattr(dfgnn.nn, name)(f, dim, **kwargs).cuda()
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


def time_layer(layer, x, graph, edge_attr, warmup, iters):
    """(fwd ms, fwd+bwd ms, peak extra MiB of one fwd+bwd)."""
    with torch.no_grad():
        fwd, _ = peers.median_ms(lambda: layer(x, graph, edge_attr), warmup, iters)
    xs, es = x.detach().requires_grad_(), edge_attr.detach().requires_grad_()
    params = [p for p in layer.parameters() if p.requires_grad]

    def step():  # fresh gradients, not accumulated into .grad (that adds a read and a write)
        torch.autograd.grad(layer(xs, graph, es).sum(), [xs, es, *params])
    both, _ = peers.median_ms(step, warmup, iters)
    return fwd, both, peers.peak_extra_mib(step)


def attention_cost(kind, graph, n, e, heads, dim, edge_dim, warmup, iters):
    """The op alone, with and without edge features: {pass: (ms without, ms with)}."""
    import dfgnn
    g = torch.Generator(device="cuda").manual_seed(3)

    def rand(*shape):
        return torch.rand(*shape, device="cuda", generator=g).sub_(0.5).requires_grad_()
    if kind == "gt_columns":
        wide = dim + edge_dim
        args, fn, edges = (rand(n, heads, wide), rand(n, heads, wide), rand(n, heads, wide)), dfgnn.gt_attention, \
            rand(e, 1, edge_dim)
        dim = wide
    elif kind == "gt":
        args, fn, edges = (rand(n, heads, dim), rand(n, heads, dim), rand(n, heads, dim)), dfgnn.gt_attention, \
            rand(e, heads, dim)
    elif kind == "gatv2":
        args, fn, edges = (rand(n, heads, dim), rand(n, heads, dim), rand(heads, dim)), dfgnn.gatv2_attention, \
            rand(e, heads, dim)
    else:
        args, fn, edges = (rand(n, heads), rand(n, heads), rand(n, heads, dim)), dfgnn.gat_attention, rand(e, heads)
    result = {}
    for name, kw in (("without", {}), ("with", {"edge_features": edges})):
        with torch.no_grad():
            fwd, _ = peers.median_ms(lambda: fn(graph, *args, **kw), warmup, iters)
        grad = torch.ones(n, heads, dim, device="cuda")
        inputs = [*args, *kw.values()]
        both, _ = peers.median_ms(lambda: torch.autograd.grad(fn(graph, *args, **kw), inputs, grad), warmup, iters)
        result[name] = (fwd, both)
    return result, edges.numel() * 4


def add_common_args(p):
    """The arguments this script and layer_profile.py share: the graphs, the CLI that generates
    the synthetic ones, a work folder, the timing and the JSON output."""
    run_bench.add_graph_args(p)
    p.set_defaults(graphs="cora,pubmed,pattern,tolokers,web-NotreDame,rmat-s17-d64")
    p.add_argument("--dfgnn", required=True, help="the dfgnn CLI (dfgnn gen makes the synthetic graphs)")
    p.add_argument("--work", default="edge_bench_work")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--json")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_args(p)
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--edge-dim", type=int, default=16)
    a = p.parse_args(argv)
    import dfgnn
    import dfgnn.nn
    from torch_geometric import EdgeIndex
    copy_gbps = peers.copy_bandwidth()["read_write_GBps"]
    emit = peers.emitter(a.json)
    emit({"copy_gbps": copy_gbps, "gpu": torch.cuda.get_device_name()})
    h, c = a.heads, a.dim
    f = h * c
    for name in a.graphs.split(","):
        spec = run_bench.prepare_graph(name, a, a.work)
        n, e = spec["nodes"], spec["edges"]
        edge_index = torch.stack([torch.as_tensor(spec["src"]), torch.as_tensor(spec["dst"])]).long().cuda()
        pyg_index = EdgeIndex(edge_index, sparse_size=(n, n), sort_order="col")  # CSR order already
        graph = dfgnn.Graph.from_edge_index(edge_index, n)
        g = torch.Generator(device="cuda").manual_seed(a.seed)
        x = torch.randn(n, f, device="cuda", generator=g)
        edge_attr = torch.randn(e, a.edge_dim, device="cuda", generator=g)
        for kind in ("gt", "gat"):
            ours, theirs = layers(kind, f, h, c, a.edge_dim)
            record = {"graph": name, "nodes": n, "edges": e, "layer": kind, "H": h, "D": c, "edge_dim": a.edge_dim}
            o = time_layer(ours, x, graph, edge_attr, a.warmup, a.iters)
            record.update(ours_fwd=o[0], ours_fwdbwd=o[1], ours_peak_mib=o[2])
            if kind == "gt":  # the layer in both forms, whichever it takes: edge columns and rows
                for form, start in (("columns", 0), ("rows", float("inf"))):
                    rule = dfgnn.nn._COLUMNS_DEGREE, dfgnn.nn._COLUMNS_HEADS
                    dfgnn.nn._COLUMNS_DEGREE, dfgnn.nn._COLUMNS_HEADS = start, float("inf")
                    try:
                        r = time_layer(ours, x, graph, edge_attr, a.warmup, a.iters)
                    finally:
                        dfgnn.nn._COLUMNS_DEGREE, dfgnn.nn._COLUMNS_HEADS = rule
                    record.update({f"ours_{form}_fwd": r[0], f"ours_{form}_fwdbwd": r[1], f"ours_{form}_peak_mib": r[2]})
            try:
                t = time_layer(theirs, x, pyg_index, edge_attr, a.warmup, a.iters)
                record.update(pyg_fwd=t[0], pyg_fwdbwd=t[1], pyg_peak_mib=t[2],
                              speedup_fwd=t[0] / o[0], speedup_fwdbwd=t[1] / o[1])
            except torch.cuda.OutOfMemoryError:
                record.update(pyg_fwd=None, pyg_fwdbwd=None)
            del ours, theirs
            torch.cuda.empty_cache()
            emit(record)
        for kind in ("gt", "gt_columns", "gat", "gatv2"):
            cost, extra = attention_cost(kind, graph, n, e, h, c, a.edge_dim, a.warmup, a.iters)
            record = {"graph": name, "op": kind, "H": h, "D": c, "edge_bytes": extra}
            for i, pas in enumerate(("fwd", "fwdbwd")):
                without, with_ = cost["without"][i], cost["with"][i]
                moved = extra * (1 if pas == "fwd" else 3)  # fwd+bwd: read in each pass, gradient written
                record.update({f"{pas}_without": without, f"{pas}_with": with_,
                               f"{pas}_extra_gbps": moved / max(with_ - without, 1e-6) / 1e6,
                               f"{pas}_extra_fraction": moved / max(with_ - without, 1e-6) / 1e6 / copy_gbps})
            torch.cuda.empty_cache()
            emit(record)


if __name__ == "__main__":
    main()
