#!/usr/bin/env python3
"""Where a layer's training step goes: ours and PyG's TransformerConv and GATConv with edge
features (edge_bench.py's setting: 1 x 128, edge_dim 16, GATConv without self loops), one fwd+bwd
step to x, edge_attr and every parameter, timed with CUDA events (median of --iters after
--warmup) and profiled with torch.profiler over --iters more: per step, the device time of the
dense GEMMs (aten::mm, addmm, bmm: the layer's own linear maps, which both libraries run), of
dfgnn's kernels, of everything, and the host time. Prints one JSON object per line (also
appended to --json).

Usage: python3 perf/layer_profile.py --dfgnn BUILD/dfgnn [--graphs cora,web-NotreDame,...] [--json OUT]
"""

import argparse
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import edge_bench  # noqa: E402
import peers  # noqa: E402
import run_bench  # noqa: E402

GEMMS = ("aten::mm", "aten::addmm", "aten::bmm")


def breakdown(step, iters):
    """{gemm_ms, dfgnn_ms, device_ms, host_ms} per step, from torch.profiler's self times."""
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
    events = prof.key_averages()
    device = {e.key: e.self_device_time_total / 1e3 / iters for e in events}
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return {"gemm_ms": sum(device.get(k, 0.0) for k in GEMMS),
            "dfgnn_ms": sum(e.device_time_total for e in kernels if "dfgnn" in e.name) / 1e3 / iters,
            "device_ms": sum(e.device_time_total for e in kernels) / 1e3 / iters,
            "host_ms": sum(e.self_cpu_time_total for e in events if e.key != "cudaDeviceSynchronize") / 1e3 / iters}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    edge_bench.add_common_args(p)
    a = p.parse_args(argv)
    import dfgnn
    from torch_geometric import EdgeIndex
    emit = peers.emitter(a.json)
    emit({"gpu": torch.cuda.get_device_name()})
    for name in a.graphs.split(","):
        spec = run_bench.prepare_graph(name, a, a.work)
        n, e = spec["nodes"], spec["edges"]
        edge_index = torch.stack([torch.as_tensor(spec["src"]), torch.as_tensor(spec["dst"])]).long().cuda()
        graphs = {"ours": dfgnn.Graph.from_edge_index(edge_index, n),
                  "pyg": EdgeIndex(edge_index, sparse_size=(n, n), sort_order="col")}
        g = torch.Generator(device="cuda").manual_seed(a.seed)
        x = torch.randn(n, 128, device="cuda", generator=g).requires_grad_()
        edge_attr = torch.randn(e, 16, device="cuda", generator=g).requires_grad_()
        for kind in ("gt", "gat"):
            for who, layer in zip(("ours", "pyg"), edge_bench.layers(kind, 128, 1, 128, 16)):
                params = [q for q in layer.parameters() if q.requires_grad]

                def step():
                    torch.autograd.grad(layer(x, graphs[who], edge_attr).sum(), [x, edge_attr, *params])
                ms, _ = peers.median_ms(step, a.warmup, a.iters)
                emit({"graph": name, "nodes": n, "edges": e, "layer": kind, "who": who, "step_ms": ms,
                      **breakdown(step, a.iters)})
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
