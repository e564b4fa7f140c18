"""Per-call overhead of dfgnn's Python ops (issue 38, part 5): GT and GAT attention, 1 head x 128, on
Cora, forward (no grad and with autograd) and forward + backward (torch.autograd.grad), eager mode;
and, as the machine's floor, PyTorch's own one-kernel op of the same size (model "torch": q * k).

Per call, medians of --repeats loops of --iters back-to-back calls after warm-up:
  call_us    (a) the call as the user sees it: CUDA events around the loop (CPU: perf_counter)
  kernel_us  (b) the kernels' own time: torch.profiler's CUDA kernel time per call; on the CPU the
                 native functions called through the C ABI directly (dfgnn._lib, no Python wrapper)
  native_us  CUDA only: events around a loop of the same native calls through the C ABI directly
  host_us    (c) host time: perf_counter around the loop while a long kernel keeps the GPU busy, so
                 no call waits for the device; on the CPU (a) - (b)
Usage: python3 perf/python_overhead.py [--data DIR] [--device cuda|cpu] [--models gt,gat]
           [--iters 200] [--repeats 15] [--json OUT.json]
--data: the folder holding cora/planetoid_edges.tsv.gz (shared/data); DFGNN_LIB may name the library.
"""

import argparse
import ctypes
import gzip
import json
import os
import statistics
import time

import torch

import dfgnn
from dfgnn import _lib


class Call(ctypes.Structure):
    """dfgnn_call (python/capi/dfgnn_capi.h)."""
    _fields_ = [("param", ctypes.c_float), ("inputs", ctypes.c_void_p * 3), ("count", ctypes.c_int64),
                ("edge_values", ctypes.c_void_p), ("edge_heads", ctypes.c_int), ("dropout", ctypes.c_float),
                ("seed", ctypes.c_uint64), ("out", ctypes.c_void_p), ("logsumexp", ctypes.c_void_p),
                ("dout", ctypes.c_void_p), ("grads", ctypes.c_void_p * 3), ("attention_weights", ctypes.c_void_p),
                ("edge_features", ctypes.c_void_p), ("edge_grad", ctypes.c_void_p)]


def cora_edges(data):
    with gzip.open(os.path.join(data, "cora", "planetoid_edges.tsv.gz"), "rt") as f:
        pairs = [tuple(map(int, line.split())) for line in f if line.strip() and not line.startswith("#")]
    e = torch.tensor(pairs, dtype=torch.int64).t()
    return torch.cat([e, e.flip(0)], 1)  # both directions, as perf/train_bench.py


def loop_time(fn, iters, device, busy=False):
    """Seconds per call of `iters` back-to-back calls: CUDA events (or with busy, perf_counter while
    a sleeping kernel keeps the GPU busy), else perf_counter."""
    if device.type != "cuda":
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - start) / iters
    torch.cuda.synchronize()
    if busy:  # at most 100 calls, so their launches do not fill CUDA's queue either
        torch.cuda._sleep(50_000_000)  # tens of ms of GPU time queued ahead of the calls
        iters = min(iters, 100)
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        host = time.perf_counter() - start
        torch.cuda.synchronize()
        return host / iters
    a, b = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    a.record()
    for _ in range(iters):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / 1e3 / iters


def median_us(fn, args, busy=False):
    for _ in range(args.warmup):
        fn()
    return 1e6 * statistics.median(loop_time(fn, args.iters, args.device, busy) for _ in range(args.repeats))


def profiled_kernel_us(fn, args):
    """CUDA kernel (and memset / memcpy) time per call, from torch.profiler."""
    for _ in range(args.warmup):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(args.iters):
            fn()
        torch.cuda.synchronize()
    total = sum(getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
                for e in prof.key_averages() if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA)
    return total / args.iters


def torch_cases(n, heads, dim, device):
    """PyTorch's own one-kernel op of the same size (q * k), for the machine's floor: the same
    three cases; its "native" call is the op without autograd."""
    g = torch.Generator().manual_seed(0)
    q, k = (torch.randn(n, heads, dim, generator=g).to(device).requires_grad_() for _ in range(2))
    grad = torch.randn(n, heads, dim, generator=g).to(device)

    def no_grad():
        with torch.no_grad():
            return q * k

    return [("forward, no grad", no_grad, no_grad), ("forward", lambda: q * k, no_grad),
            ("forward+backward", lambda: torch.autograd.grad(q * k, (q, k), grad), no_grad)]


def cases(model, graph, n, heads, dim, device):
    """(case name, Python call, native call through the C ABI) for `model`."""
    if model == "torch":
        return torch_cases(n, heads, dim, device)
    g = torch.Generator().manual_seed(0)
    rand = lambda *shape: torch.randn(*shape, generator=g).to(device).requires_grad_()
    if model == "gt":
        inputs = [rand(n, heads, dim) for _ in range(3)]
        op = lambda: dfgnn.gt_attention(graph, *inputs)
        kind, scalar = _lib.MODELS["gt"], 0.0
    else:
        inputs = [rand(n, heads), rand(n, heads), rand(n, heads, dim)]
        op = lambda: dfgnn.gat_attention(graph, *inputs)
        kind, scalar = _lib.MODELS["gat"], 0.2
    plan = graph.plan(device, kind, heads, dim).handle
    grad = torch.randn(n, heads, dim, generator=g).to(device)
    out, lse = torch.empty(n, heads, dim, device=device), torch.empty(n, heads, device=device)
    grads = [torch.empty_like(t) for t in inputs]
    s = torch.cuda.current_stream().cuda_stream if device.type == "cuda" else 0  # found once
    call = Call(param=scalar, inputs=(ctypes.c_void_p * 3)(*(t.data_ptr() for t in inputs)), out=out.data_ptr(),
                logsumexp=lse.data_ptr(), dout=grad.data_ptr(),
                grads=(ctypes.c_void_p * 3)(*(t.data_ptr() for t in grads)))
    native, native_backward = _lib.lib.dfgnn_forward, _lib.lib.dfgnn_backward
    args = (plan, s, ctypes.byref(call))
    _lib.call(native, *args)  # the loops below skip the status check
    _lib.call(native_backward, *args)
    buffers = (out, lse, grads)  # alive while the native calls, holding only their addresses, run

    def fwd_native(keep=buffers):
        native(*args)

    def fwd_bwd_native(keep=buffers):
        native(*args)
        native_backward(*args)

    def no_grad():
        with torch.no_grad():
            return op()

    return [("forward, no grad", no_grad, fwd_native), ("forward", op, fwd_native),
            ("forward+backward", lambda: torch.autograd.grad(op(), inputs, grad), fwd_bwd_native)]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--models", default="gt,gat,torch")
    for name, default in (("heads", 1), ("dim", 128), ("iters", 200), ("repeats", 15), ("warmup", 50)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--json")
    args = p.parse_args()
    args.device = torch.device(args.device)
    cuda = args.device.type == "cuda"
    if not cuda:
        torch.set_num_threads(1)  # tiny kernels: no thread-pool wake-ups in the kernel time
    graph = dfgnn.Graph.from_edge_index(cora_edges(args.data), 2708)
    rows = []
    for model in args.models.split(","):
        for case, call, native in cases(model, graph, graph.num_nodes, args.heads, args.dim, args.device):
            row = {"model": model, "case": case, "call_us": median_us(call, args)}
            if cuda:
                row["kernel_us"] = profiled_kernel_us(call, args)
                row["native_us"] = median_us(native, args)
                row["host_us"] = median_us(call, args, busy=True)
            else:
                row["kernel_us"] = median_us(native, args)
                row["host_us"] = row["call_us"] - row["kernel_us"]
            rows.append(row)
    name = torch.cuda.get_device_name(args.device) if cuda else "CPU (1 thread)"
    print(f"dfgnn per-call overhead, Cora ({graph.num_nodes} nodes, {graph.num_edges} edges), "
          f"{args.heads}x{args.dim}, {name}, torch {torch.__version__}\n")
    cols = ["call_us", "kernel_us"] + (["native_us"] if cuda else []) + ["host_us"]
    print("| model | case | " + " | ".join(cols) + " |\n|---|---|" + "---:|" * len(cols))
    for r in rows:
        print(f"| {r['model']} | {r['case']} | " + " | ".join(f"{r[c]:.1f}" for c in cols) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "heads": args.heads, "dim": args.dim,
                       "nodes": graph.num_nodes, "edges": graph.num_edges, "iters": args.iters,
                       "repeats": args.repeats, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
