#!/usr/bin/env python3
"""Strong scaling of dfgnn.distributed over NCCL on one host's GPUs: GT and GAT forward and
forward+backward on run_bench.py's graphs, P ranks against the plain op on one GPU.

Per graph and model, rank 0 first times the plain op on the whole graph (`one`). Then every rank
takes Graph.partition(P)'s rows, builds its DistributedGraph and times its call (`P ranks`: the
slowest rank's median, each iteration started after a barrier), the same in one call after the
exchange (`one_call_ms`: DistributedGraph(overlap=False)) and the halo exchange alone (the
source-side inputs' exchange, DistributedGraph.sources, and with --backward also the
gradients' return). Records: the halo rows and bytes each rank receives per exchange, the
exchange's ms and GB/s (bytes received per ms, the slowest rank), each rank's peak memory (the larger
of the two forms': the split's, which holds two calls' outputs), and the speedup one / P ranks.
CUDA events, median of --iters after --warmup. Prints one JSON object per line (also appended to --json).

Graphs: run_bench.py's, and gpu-rmat-sS-dD, an R-MAT graph generated on the GPU (gpu_rmat).
Every rank builds the whole graph to partition it; rank 0 times the plain op on it, then every
rank drops it and keeps its share alone, so the ranks' peak memory is what an application's
rank needs. --no-one skips the one-GPU run, for a graph one GPU cannot hold.

Usage: python3 perf/distributed_bench.py --dfgnn BUILD/dfgnn [--ranks 2] [--graphs rmat-s20-d32,web-NotreDame]
         [--models gt,gat] [--shapes 1x128] [--backward] [--no-one] [--json OUT.jsonl]
"""

import argparse
import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402
import run_bench  # noqa: E402


def inputs(model, rows, heads, dim, dev, gen):
    """The model's inputs for `rows` nodes, split into source-side and the rest (ops order)."""
    def rand(*shape):
        return torch.randn(*shape, generator=gen, device=dev).requires_grad_()
    if model == "gt":
        return [rand(rows, heads, dim) for _ in range(3)]
    return [rand(rows, heads), rand(rows, heads), rand(rows, heads, dim)]


def gpu_rmat(name, dev, seed):
    """`gpu-rmat-sS-dD`: an R-MAT graph ((a, b, c, d) = (0.57, 0.19, 0.19, 0.05), 2^S nodes,
    D 2^S edges, node ids scrambled by a random permutation as Graph500 does, duplicates
    dropped) generated on rank 0's GPU and broadcast: a graph too large for the CLI's text
    files. Returns edge_index [2, E] by destination, and N."""
    scale, degree = (int(x[1:]) for x in name.split("-")[2:4])
    n, m = 1 << scale, degree << scale
    count = torch.zeros(1, dtype=torch.int64, device=dev)
    if dist.get_rank() == 0:
        gen = torch.Generator(device=dev).manual_seed(seed)
        src = torch.zeros(m, dtype=torch.int64, device=dev)
        dst = torch.zeros_like(src)
        for bit in range(scale):
            r = torch.rand(m, generator=gen, device=dev)
            dst |= (r >= 0.76).long() << bit  # quadrants c, d: the lower half
            src |= (((r >= 0.57) & (r < 0.76)) | (r >= 0.95)).long() << bit  # b, d: the right half
            del r
        perm = torch.randperm(n, generator=gen, device=dev)  # else the hubs sit in rank 0's range
        code = torch.unique(perm[dst] * n + perm[src])
        del src, dst
        count[0] = code.numel()
    dist.broadcast(count, 0)
    if dist.get_rank() != 0:
        code = torch.empty(int(count), dtype=torch.int64, device=dev)
    dist.broadcast(code, 0)
    return torch.stack([code % n, code // n]), n


def step(fn, args, grad, backward):
    """One forward, and backward when asked (gradients cleared: a step of training)."""
    out = fn(*args)
    if backward:
        for t in args:
            t.grad = None
        out.backward(grad)


def worker(rank, ranks, port, a, jobs):
    import dfgnn
    import dfgnn.distributed as dd

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=ranks)
    emit = peers.emitter(a.json if rank == 0 else None)
    for name, npz in jobs:
        if npz is None:
            edges, n = gpu_rmat(name, dev, a.seed)
        else:
            g = np.load(npz)
            n = int(g["num_nodes"])
            edges = torch.stack([torch.from_numpy(g["src"]), torch.from_numpy(g["dst"])]).long().to(dev)
        whole = dfgnn.Graph.from_edge_index(edges, n)
        owner = whole.partition(ranks).to(dev)
        mask = owner[edges[1]] == rank
        graph = dd.DistributedGraph(edges[:, mask], owner)
        one_call = dd.DistributedGraph(edges[:, mask], owner, overlap=False)
        jobs_here = [(model, *map(int, shape.split("x"))) for model in a.models.split(",")
                     for shape in a.shapes.split(",")]
        one = {}  # (model, heads, dim) -> (ms, peak MiB): the plain op on the whole graph, one GPU
        for model, heads, dim in jobs_here if rank == 0 and not a.no_one else []:
            gen = torch.Generator(device=dev).manual_seed(a.seed)
            torch.cuda.reset_peak_memory_stats()
            full = inputs(model, n, heads, dim, dev, gen)
            grad = torch.randn(n, heads, dim, generator=gen, device=dev)
            op = getattr(dfgnn, f"{model}_attention")
            ms, _ = peers.median_ms(lambda: step(lambda *x: op(whole, *x), full, grad, a.backward), a.warmup, a.iters)
            one[model, heads, dim] = ms, round(torch.cuda.max_memory_allocated(dev) / 2**20)
            del full, grad
        # A rank holds its share alone from here on, as an application would.
        num_edges = edges.size(1)
        del edges, whole, owner, mask
        for model, heads, dim in jobs_here:
            gen = torch.Generator(device=dev).manual_seed(a.seed + 1)
            record = {"graph": name, "model": model, "heads": heads, "dim": dim, "ranks": ranks,
                      "backward": a.backward, "nodes": n, "edges": num_edges,
                      "device": torch.cuda.get_device_name(dev)}
            if (model, heads, dim) in one:
                record["one_ms"], record["one_peak_mib"] = one[model, heads, dim]
            dist.barrier()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            mine = inputs(model, graph.num_rows, heads, dim, dev, gen)
            grad = torch.randn(graph.num_rows, heads, dim, generator=gen, device=dev)
            fn = getattr(dd, f"{model}_attention")

            def call(g=graph):
                step(lambda *x: fn(g, *x), mine, grad, a.backward)
            source = [mine[1], mine[2]] if model == "gt" else [mine[0], mine[2]]

            def exchange():
                parts = graph.sources(*source)
                if a.backward:
                    torch.autograd.backward(parts, [torch.ones_like(p) for p in parts])
            # This rank's (call ms, one call's ms, exchange ms, peak MiB, halo rows); each timed call
            # after a barrier.
            stats = [peers.median_ms(f, a.warmup, a.iters, before=synced)[0]
                     for f in (call, lambda: call(one_call), exchange)]
            stats += [torch.cuda.max_memory_allocated(dev) / 2**20, graph.halo.numel()]
            row_bytes = sum(t[0].numel() * t.element_size() for t in source)
            every = [None] * ranks
            dist.all_gather_object(every, stats)
            if rank == 0:
                record["ranks_ms"] = max(e[0] for e in every)
                record["one_call_ms"] = max(e[1] for e in every)
                record["exchange_ms"] = max(e[2] for e in every)
                record["peak_mib"] = [round(e[3]) for e in every]
                record["halo_rows"] = [e[4] for e in every]
                record["halo_bytes"] = [e[4] * row_bytes for e in every]
                moved = max(e[4] for e in every) * row_bytes * (2 if a.backward else 1)
                record["exchange_GBps"] = moved / (record["exchange_ms"] * 1e-3) / 1e9
                if "one_ms" in record:
                    record["speedup"] = record["one_ms"] / record["ranks_ms"]
                    record["one_call_speedup"] = record["one_ms"] / record["one_call_ms"]
                emit(record)
            del mine, grad
    dist.destroy_process_group()


def synced():
    """Every rank here, its GPU idle: the start of a timed call."""
    dist.barrier()
    torch.cuda.synchronize()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    run_bench.add_graph_args(p)
    p.set_defaults(graphs="rmat-s20-d32,web-NotreDame")
    p.add_argument("--dfgnn", default="build/cuda/dfgnn", help="the CLI, which generates R-MAT graphs")
    p.add_argument("--work", default="/tmp/dfgnn_distributed_bench")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--models", default="gt,gat")
    p.add_argument("--shapes", default="1x128")
    p.add_argument("--backward", action="store_true")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--no-one", action="store_true", help="skip the one-GPU run (a graph one GPU cannot hold)")
    p.add_argument("--json")
    a = p.parse_args(argv)
    if torch.cuda.device_count() < a.ranks:
        raise SystemExit(f"--ranks {a.ranks} needs as many GPUs, found {torch.cuda.device_count()}")
    jobs = [(name, None if name.startswith("gpu-rmat-") else run_bench.prepare_graph(name, a, a.work)["npz"])
            for name in a.graphs.split(",")]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(a.ranks, port, a, jobs), nprocs=a.ranks)


if __name__ == "__main__":
    main()
