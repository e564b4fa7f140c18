#!/usr/bin/env python3
"""Graph preparation on the GPU: dfgnn.Graph and its plan from an edge_index, against PyG's own
preparation of the same edges, per graph.

Graphs: a batch of 128 PATTERN-like graphs as train_bench.py forms them (`batch128`, with its
ptr), and run_bench.py's graphs (--graphs). Edges come in PyG's coalesced order (by source, then
destination), as datasets store them, so every preparation sorts; each starts from the
edge_index on the GPU (the copy there, which both pay, is `h2d`).
  pyg        stably sorted by destination, EdgeIndex(sort_order="col"): what PyG's layers are
             given in train_bench.py (`pyg_graph`)
  gpu        dfgnn.Graph.from_edge_index on the GPU (ptr given for batch128), then the plan of
             --model H x D (Graph.prepare)
  gpu_graph  the graph alone
  host       the same from the CPU edge_index, built on the host and uploaded (the path before)
Wall time of each (perf_counter around the call and a torch.cuda.synchronize), median of --iters
after --warmup, and ns per edge. Prints one JSON object per line (also appended to --json).

Usage: python3 perf/graph_bench.py [--dfgnn BUILD/dfgnn] [--graphs pattern,tolokers,...]
         [--model gt --heads 4 --dim 32] [--json OUT.jsonl]
"""

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402
import run_bench  # noqa: E402
import train_bench  # noqa: E402


def wall_ms(fn, warmup, iters):
    """Median wall time of fn() until the GPU is done, in ms."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


def coalesced(src, dst):
    """[2, E] int64 CPU edge_index sorted by source, then destination (PyG's coalesce)."""
    edge_index = torch.stack([torch.as_tensor(src), torch.as_tensor(dst)]).long()
    n = int(edge_index.max()) + 1 if edge_index.numel() else 1
    return edge_index[:, torch.argsort(edge_index[0] * n + edge_index[1])]


def graphs(a):
    """(name, edge_index on the CPU, nodes, ptr or None) of each graph asked for."""
    for name in a.graphs.split(","):
        if name == "batch128":
            batch = train_bench.pattern_batches(train_bench.pattern_dataset(128, a.seed), 128)[0]
            yield name, coalesced(*batch.edge_index), batch.num_nodes, batch.ptr
        else:
            spec = run_bench.prepare_graph(name, a, a.work)
            yield name, coalesced(spec["src"], spec["dst"]), spec["nodes"], None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    run_bench.add_graph_args(p)
    p.set_defaults(graphs="batch128,pattern,tolokers,web-NotreDame,rmat-s17-d64,rmat-s20-d32")
    p.add_argument("--dfgnn", help="the dfgnn CLI (dfgnn gen makes the generated graphs)")
    p.add_argument("--work", default="graph_bench_work")
    p.add_argument("--model", default="gt")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=15)
    p.add_argument("--json")
    a = p.parse_args(argv)
    import dfgnn
    from torch_geometric import EdgeIndex
    emit = peers.emitter(a.json)
    emit({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__})
    for name, edge_index, n, ptr in graphs(a):
        e = edge_index.size(1)
        ptr_cuda = None if ptr is None else ptr.cuda()

        on_gpu = edge_index.cuda()

        def h2d():
            return edge_index.to("cuda")

        def pyg():
            ei = on_gpu[:, torch.sort(on_gpu[1], stable=True).indices]
            return EdgeIndex(ei, sparse_size=(n, n), sort_order="col")

        def gpu_graph():
            return dfgnn.Graph.from_edge_index(on_gpu, n, ptr=ptr_cuda)

        def gpu():
            g = gpu_graph()
            return g, g.prepare(a.model, a.heads, a.dim, "cuda")

        def host():
            g = dfgnn.Graph.from_edge_index(edge_index, n, ptr=ptr)
            return g, g.prepare(a.model, a.heads, a.dim, "cuda")
        record = {"graph": name, "nodes": n, "edges": e, "model": a.model, "H": a.heads, "D": a.dim}
        for key, fn in (("h2d", h2d), ("pyg", pyg), ("gpu_graph", gpu_graph), ("gpu", gpu), ("host", host)):
            slow = key == "host" and e > 5e6  # seconds a call: a few suffice
            ms = wall_ms(fn, 1 if slow else a.warmup, 3 if slow else a.iters)
            record[f"{key}_ms"] = ms
            record[f"{key}_ns_per_edge"] = 1e6 * ms / max(e, 1)
        record["strategy"] = gpu()[1]
        assert record["strategy"] == host()[1], "the plans over the GPU and host graphs differ"
        record["gpu_vs_pyg"] = record["pyg_ms"] / record["gpu_ms"]
        emit(record)


if __name__ == "__main__":
    main()
