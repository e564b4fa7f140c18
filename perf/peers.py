#!/usr/bin/env python3
"""The PyTorch Geometric peer, measured as shared/anchors.md describes.

What is timed (CUDA events, median of --iters after --warmup runs; with --device cpu the host
clock around each run, on torch's --threads threads):
  gt     TransformerConv.propagate(edge_index, query, key, value): SDDMM dot / softmax / SpMM
         as PyG runs them, on given Q, K, V [N, H, D] (no linear layers);
  agnn   the whole AGNNConv on X [N, H*D] (PyG's AGNN is single-head: H is folded into D);
  gat    the whole GATConv(H*D -> H x D), its linear layer included;
  gatv2  the whole GATv2Conv(H*D -> H x D), its two linear layers included.
Self loops are not added (add_self_loops=False), so every peer sees the same graph. The edge
index is an EdgeIndex sorted by destination (sort_order="col"), PyG's fastest softmax path.
fwd runs under torch.no_grad(); fwdbwd is forward plus backward to every input and parameter.
peak_extra_mib is torch.cuda.max_memory_allocated() during one run minus the memory held
before it.

Graph input: a `.npz` with src, dst, num_nodes (what run_bench.py writes), or a text edge list
(`u v` per line, u -> v, optionally gzipped; `# nodes N` gives N, else --nodes, else max id+1).
Feature input: --inputs DIR with q.npy, k.npy, v.npy (float32 [N, H, D]; AGNN/GAT/GATv2 use q
as X), or random uniform [-1, 1) from --seed.

Usage: python3 perf/peers.py --graph G.npz --heads 1 --dim 128 [--models gt,agnn,gat,gatv2]
         [--passes fwd,fwdbwd] [--inputs DIR] [--json OUT.jsonl] [--save-out DIR]
         [--device cpu --threads T]
       python3 perf/peers.py --copy-bandwidth
Prints one JSON object per line (also appended to --json).
"""

import argparse
import gzip
import json
import os
import statistics
import sys
import time
import warnings

import numpy as np

MODELS = ("gt", "agnn", "gat", "gatv2")
PASSES = ("fwd", "fwdbwd")


def read_edge_list(path, nodes=None):
    """Returns (src, dst, num_nodes) as int64 arrays from a text edge list or a .npz."""
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            return z["src"].astype(np.int64), z["dst"].astype(np.int64), int(z["num_nodes"])
    opener = gzip.open if _is_gzip(path) else open
    with opener(path, "rb") as f:
        data = f.read()
    declared = None
    body_lines = []
    header_done = False
    pos = 0
    # Comments and a non-numeric header sit at the top; the body is parsed in one call.
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        line = data[pos:end].strip()
        if line.startswith(b"# nodes "):
            declared = int(line.split()[2])
        if line and not line.startswith((b"#", b"%")):
            tokens = line.replace(b",", b" ").split()
            if header_done or (len(tokens) >= 2 and tokens[0].isdigit() and tokens[1].isdigit()):
                break
            header_done = True  # a first non-numeric line is a header
        pos = end + 1
    body = data[pos:]
    if b"#" in body or b"%" in body:  # comments inside the body: drop them line by line
        body = b"\n".join(l for l in body.split(b"\n") if not l.lstrip().startswith((b"#", b"%")))
    text = body.replace(b",", b" ").decode("ascii")
    if _has_extra_columns(text):
        lines = [l.split() for l in text.split("\n") if l.strip()]
        ids = np.array([[int(t[0]), int(t[1])] for t in lines], dtype=np.int64).reshape(-1, 2)
    else:
        with warnings.catch_warnings():  # numpy warns (here: raises) on unparsable text
            warnings.simplefilter("error")
            flat = np.fromstring(text, dtype=np.int64, sep=" ")  # 10x faster than split()
        if len(flat) % 2:
            raise ValueError(f"{path}: odd number of ids")
        ids = flat.reshape(-1, 2)
    src, dst = ids[:, 0].copy(), ids[:, 1].copy()
    n = nodes if nodes is not None else declared
    if n is None:
        n = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
    if len(src) and max(src.max(), dst.max()) >= n:
        raise ValueError(f"{path}: node id >= node count {n}")
    return src, dst, n


def _is_gzip(path):
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _has_extra_columns(text):
    first = text.lstrip().split("\n", 1)[0]
    return len(first.split()) > 2


def sorted_by_destination(src, dst):
    order = np.lexsort((src, dst))
    return src[order], dst[order]


def emitter(path):
    """emit(record): prints the record as one JSON line and appends it to `path` (if given)."""
    out = open(path, "a") if path else None

    def emit(record):
        line = json.dumps(record)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
    return emit


def median_ms(fn, warmup, iters, before=None, device="cuda"):
    """Median ms of fn (CUDA events; on the CPU the host clock around it) and every time;
    `before` runs ahead of each timed call, outside its time (e.g. a barrier of the ranks)."""
    import torch

    for _ in range(warmup):
        fn()
    cuda = device != "cpu"
    if cuda:
        torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        if before:
            before()
        if not cuda:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
            continue
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times), times


def median(values):
    """The median of a record key's values, or None where the records have no such number."""
    values = list(values)
    return None if values[0] is None else statistics.median(values)


def alternating(runs, rounds, tolerate=False):
    """[{impl, **record}] of runs {impl: () -> record (a dict of numbers, or None where a run
    has no such number)}, each called `rounds` times in turn, the medians of their records: the
    implementations alternate, so a slow stretch of the host (a small graph's call is its host
    time) weighs on both. tolerate: a run that raises gives {impl, error: its message} and is
    not called again (a peer that does not support a mode)."""
    records, errors = {impl: [] for impl in runs}, {}
    for _ in range(rounds):
        for impl, run in runs.items():
            if impl in errors:
                continue
            try:
                records[impl].append(run())
            except Exception as e:
                if not tolerate:
                    raise
                errors[impl] = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"
    return [{"impl": impl, "error": errors[impl]} if impl in errors else
            {"impl": impl, **{key: median(r[key] for r in rs) for key in rs[0]}} for impl, rs in records.items()]


def peak_extra_mib(fn, device="cuda"):
    import torch

    if device == "cpu":
        return None  # no allocator statistics for host tensors
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def copy_bandwidth():
    """1 GiB device-to-device copy; bandwidth counts bytes read plus written."""
    import torch

    n = 2**30
    a = torch.empty(n, dtype=torch.uint8, device="cuda").fill_(1)
    b = torch.empty_like(a)
    ms, _ = median_ms(lambda: b.copy_(a), 3, 10)
    del a, b
    torch.cuda.empty_cache()
    return {"peer": "copy", "bytes": n, "ms": ms, "read_write_GBps": 2 * n / (ms * 1e-3) / 1e9}


def make_layer(model, heads, dim):
    from torch_geometric.nn import AGNNConv, GATConv, GATv2Conv, TransformerConv

    if model == "gt":
        return TransformerConv(heads * dim, dim, heads=heads)
    if model == "agnn":
        return AGNNConv(requires_grad=True, add_self_loops=False)
    if model == "gat":
        return GATConv(heads * dim, dim, heads=heads, add_self_loops=False)
    if model == "gatv2":
        return GATv2Conv(heads * dim, dim, heads=heads, add_self_loops=False)
    raise ValueError(f"unknown model {model}")


def run_peer(src, dst, num_nodes, heads, dim, models=MODELS, passes=PASSES, inputs=None,
             warmup=3, iters=10, seed=1, name="", save_out=None, device="cuda"):
    """Measures every (model, pass) on `device` (cuda, or cpu on torch's threads); returns one
    record per pair. OOM is recorded, not raised."""
    import torch
    import torch_geometric
    from torch_geometric import EdgeIndex

    dev = torch.device(device)
    cpu = dev.type == "cpu"
    src, dst = sorted_by_destination(np.asarray(src, np.int64), np.asarray(dst, np.int64))
    ei = EdgeIndex(torch.from_numpy(np.stack([src, dst])).to(dev),
                   sparse_size=(num_nodes, num_nodes), sort_order="col")
    ei.fill_cache_()  # the CSC pointer is graph preprocessing, not part of the timed step
    shape = (num_nodes, heads, dim)
    if inputs:
        feats = [torch.from_numpy(np.load(os.path.join(inputs, f + ".npy"))).to(dev)
                 for f in ("q", "k", "v")]
        for t in feats:
            if tuple(t.shape) != shape or t.dtype != torch.float32:
                raise ValueError(f"{inputs}: inputs must be float32 {shape}, got {tuple(t.shape)}")
    else:
        g = torch.Generator(device=dev).manual_seed(seed)
        feats = [torch.rand(shape, device=dev, generator=g) * 2 - 1 for _ in range(3)]
    q, k, v = feats
    common = {"peer": "pyg", "graph": name, "nodes": num_nodes, "edges": int(len(src)),
              "heads": heads, "dim": dim, "warmup": warmup, "iters": iters,
              "torch": torch.__version__, "pyg": torch_geometric.__version__,
              "device": f"cpu, {torch.get_num_threads()} threads" if cpu else torch.cuda.get_device_name()}
    records = []
    for model in models:
        torch.manual_seed(seed)
        layer = make_layer(model, heads, dim).to(dev).eval()
        if model == "gt":
            args = [q.detach().clone(), k.detach().clone(), v.detach().clone()]

            def forward(a=args, layer=layer):
                return layer.propagate(ei, query=a[0], key=a[1], value=a[2], edge_attr=None)
        else:
            args = [q.detach().reshape(num_nodes, heads * dim).clone()]

            def forward(a=args, layer=layer):
                return layer(a[0], ei)

        for pas in passes:
            rec = dict(common, model=model, **{"pass": pas})
            try:
                if pas == "fwd":
                    def step(forward=forward):
                        with torch.no_grad():
                            return forward()
                else:
                    for t in args:
                        t.requires_grad_(True)
                    grad = None

                    def step(forward=forward, layer=layer, a=args):
                        nonlocal grad
                        for t in list(a) + list(layer.parameters()):
                            t.grad = None
                        out = forward()
                        if grad is None:
                            grad = torch.rand_like(out) * 2 - 1
                        out.backward(grad)
                rec["ms"], rec["ms_all"] = median_ms(step, warmup, iters, device=dev.type)
                rec["peak_extra_mib"] = peak_extra_mib(step, dev.type)
                if save_out and pas == "fwd":
                    out = step()
                    np.save(os.path.join(save_out, f"pyg_{model}_out.npy"),
                            out.reshape(num_nodes, heads, dim).float().cpu().numpy())
            except torch.cuda.OutOfMemoryError:
                rec["error"] = "OOM"
            finally:
                for t in args:
                    t.grad = None
                    t.requires_grad_(False)
                if not cpu:
                    torch.cuda.empty_cache()
            records.append(rec)
        del layer
    del ei, q, k, v, feats
    if not cpu:
        torch.cuda.empty_cache()
    return records


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", help=".npz (src, dst, num_nodes) or text edge list (.gz ok)")
    p.add_argument("--nodes", type=int, help="node count when the file does not say")
    p.add_argument("--name", default="")
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--passes", default=",".join(PASSES))
    p.add_argument("--inputs", help="directory with q.npy, k.npy, v.npy [N, H, D] float32")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", help="append the JSON lines to this file too")
    p.add_argument("--save-out", help="directory for the fwd outputs (pyg_<model>_out.npy)")
    p.add_argument("--copy-bandwidth", action="store_true", help="measure a 1 GiB D2D copy")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--threads", type=int, help="torch's CPU threads (--device cpu)")
    a = p.parse_args(argv)
    if not a.graph and not a.copy_bandwidth:
        p.error("--graph or --copy-bandwidth is required")
    models = [m for m in a.models.split(",") if m]
    passes = [s for s in a.passes.split(",") if s]
    for m in models:
        if m not in MODELS:
            p.error(f"unknown model {m}; choose from {','.join(MODELS)}")
    for s in passes:
        if s not in PASSES:
            p.error(f"unknown pass {s}; choose from {','.join(PASSES)}")
    if a.threads:
        import torch

        torch.set_num_threads(a.threads)
    records = []
    if a.copy_bandwidth:
        records.append(copy_bandwidth())
    if a.graph:
        src, dst, n = read_edge_list(a.graph, a.nodes)
        records += run_peer(src, dst, n, a.heads, a.dim, models, passes, a.inputs, a.warmup,
                            a.iters, a.seed, a.name or os.path.basename(a.graph), a.save_out, a.device)
    out = open(a.json, "a") if a.json else None
    for r in records:
        line = json.dumps(r)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
