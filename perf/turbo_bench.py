#!/usr/bin/env python3
"""turbo-gnn and dfgnn in one process, on the same tensors, per element type (issue 39).

turbo-gnn 0.1.0rc4, the released code of "On Efficient Scaling of GNNs via IO-Aware Layers
Implementations", runs GT and GATv2 in float32, bf16 and f16. ../shared/anchors.md says how to
build it from its PyPI sdist on the GPU machine; nothing of it is committed: put its install
directory on PYTHONPATH. Ours: dfgnn.gt_attention and dfgnn.gatv2_attention on a dfgnn.Graph.

What is timed (CUDA events, median of --iters after --warmup; with --rounds R the libraries
alternate R times and the median of the R medians is reported, which small graphs need: their
calls are bound by the host, whose speed drifts): fwd, the forward under torch.no_grad();
fwdbwd, the forward and the backward of (out * g).sum() to every input. The
outputs of the two libraries are compared (max difference over the largest entry): a check
that both computed the same attention, not an accuracy figure (`dfgnn bench --check` measures
ours against float64).

turbo-gnn's GT score is Q[src] . K[dst] over its forward CSR, so our k goes in as its Q and our
q as its K; its GATv2 takes the destination's features as x_left and the source's as x_right
(../shared/anchors.md). Head dims 32, 64, 128 and 256 only.

The graphs are run_bench.py's, as prepare_graph makes them (real graphs symmetrised, self loops
and duplicates dropped; the synthetic ones from `dfgnn gen`), so the edges are those of every
other benchmark's table.

Usage: PYTHONPATH=python:TURBO_SITE python3 perf/turbo_bench.py --dfgnn build/dfgnn
         [--graphs cora,citeseer,...] [--data ../shared/data] [--models gt,gatv2]
         [--shapes 1x128,4x32] [--dtypes f32,bf16] [--json OUT.jsonl]
"""

import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402
from peers import alternating, emitter, median_ms  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def calls(model, ours_graph, adj, n, H, D, dtype, seed):
    """(inputs, ours(), theirs()) of one model and shape; both return [N, H, D]."""
    import dfgnn
    from turbo_gnn._functions import _FusedGraphAttention, gatv2_function

    g = torch.Generator(device="cuda").manual_seed(seed)

    def rand(*shape, scale=1.0):
        x = (torch.rand(shape, generator=g, device="cuda") * 2 - 1) * scale
        return x.to(dtype).requires_grad_()

    csr = (adj.forward_indptr, adj.forward_indices, adj.backward_indptr, adj.backward_indices)
    if model == "gt":
        q, k, v = rand(n, H, D), rand(n, H, D), rand(n, H, D)
        scale = 1.0 / math.sqrt(D)
        return ((q, k, v), lambda: dfgnn.gt_attention(ours_graph, q, k, v),
                lambda: _FusedGraphAttention.apply(*csr, k, q, v, scale))
    # GATv2's a at 1/sqrt(D), as its layer initialises it.
    xl, xr, a = rand(n, H, D), rand(n, H, D), rand(H, D, scale=1.0 / math.sqrt(D))
    return ((xl, xr, a), lambda: dfgnn.gatv2_attention(ours_graph, xl, xr, a),
            lambda: gatv2_function.apply(*csr, xr, xl, a, 0.2, 512).view(n, H, D))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    run_bench.add_graph_args(p)
    p.set_defaults(graphs="cora,citeseer,pubmed,pattern,mnist,tolokers,web-NotreDame,rmat-s17-d64")
    p.add_argument("--dfgnn", required=True, help="the dfgnn CLI (dfgnn gen makes the synthetic graphs)")
    p.add_argument("--work", default="turbo_bench_work")
    p.add_argument("--models", default="gt,gatv2")
    p.add_argument("--shapes", default="1x128,4x32")
    p.add_argument("--dtypes", default="f32,bf16")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--rounds", type=int, default=1,
                   help="alternate the libraries this many times, each a median of --iters; the median of those")
    p.add_argument("--json", help="append the JSON lines to this file too")
    args = p.parse_args(argv)

    import dfgnn
    from turbo_gnn.graph import AdjacencyForwardBackwardWithNodeBuckets

    emit = emitter(args.json)
    device = torch.cuda.get_device_name()
    for name in args.graphs.split(","):
        spec = run_bench.prepare_graph(name, args, args.work)
        n = spec["nodes"]
        edge_index = torch.stack([torch.as_tensor(spec["src"]), torch.as_tensor(spec["dst"])]).long().cuda()
        ours_graph = dfgnn.Graph.from_edge_index(edge_index, n)
        adj = AdjacencyForwardBackwardWithNodeBuckets.from_edge_list(edge_index, n, index_dtype=torch.int32)
        for model in args.models.split(","):
            for shape in args.shapes.split(","):
                H, D = (int(x) for x in shape.split("x"))
                for dtype in args.dtypes.split(","):
                    record = {"name": name, "device": device, "model": model, "H": H, "D": D, "dtype": dtype,
                              "N": n, "E": spec["edges"]}
                    diff, times = timings(model, ours_graph, adj, n, H, D, DTYPES[dtype], args)
                    for t in times:
                        emit({**record, "out_diff": diff, **t})
        del ours_graph, adj, edge_index
        torch.cuda.empty_cache()


def timings(model, ours_graph, adj, n, H, D, dtype, args):
    """(the outputs' difference, [{impl, fwd_ms, fwdbwd_ms}] of both libraries) on the same
    inputs."""
    inputs, ours, theirs = calls(model, ours_graph, adj, n, H, D, dtype, args.seed)
    grad = torch.rand(n, H, D, device="cuda").to(dtype)

    def fwdbwd(f):
        for x in inputs:
            x.grad = None
        (f() * grad).sum().backward()

    with torch.no_grad():
        a, b = ours().float(), theirs().float()
    diff = ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()

    def run(f):
        with torch.no_grad():
            fwd, _ = median_ms(f, args.warmup, args.iters)
        return {"fwd_ms": fwd, "fwdbwd_ms": median_ms(lambda: fwdbwd(f), args.warmup, args.iters)[0]}
    return diff, alternating({"dfgnn": lambda: run(ours), "turbo-gnn": lambda: run(theirs)}, args.rounds)


if __name__ == "__main__":
    main()
