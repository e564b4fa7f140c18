#!/usr/bin/env python3
"""The original DF-GNN kernels (public repository paoxiaode/DF-GNN) as a peer, timed in the same
run, on the same graph and inputs as ours and PyG (perf/run_bench.py --dfgnn-ext DIR).

DF-GNN is never part of this repository: build its two torch extensions (fused_gtconv,
fused_gatconv) from its own setup.py, for the GPU's architecture, outside it, and pass the
directory that holds the built modules. What is timed (CUDA events, median of --iters after
--warmup, peers.median_ms):
  gt  fwd     gt_hyper_inference (SMMF), gt_softmax_inference (PMF), gt_tiling_inference,
              gt_csr_inference;
  gt  fwdbwd  gt_hyper_forward + gt_backward (its training pair; no autograd around it);
  gat fwd     gat_inference_hyper, gat_inference_tiling (el, er given, as our GAT kernel).
Inputs as DF-GNN's layers hand them over: the CSR by destination (its `row_ptr`, `col_ind` =
sources, `rows` = each edge's destination), edge values 1, the CSC of the same matrix for the
backward, Q pre-scaled by 1/sqrt(D); GAT's attn_row is our er (destination term), attn_col el.
Shared memory: DF-GNN's scripts hard-code 1024 (hyper) / 128 (csr, softmax) floats without a
check. Here each kernel gets what this graph needs (hyper and the backward hold the scores of 8
consecutive rows, softmax and csr those of one row, tiling a fixed 32/128-float tile); a kernel
that would need more than the 48 KB a launch gets without opting in is reported `smem` and not
run. Every output (and, for fwdbwd, dQ, dK, dV) is compared with a float64 reference computed
here with torch; above 1e-4 relative to the reference's largest magnitude it is reported
`wrong` and kept out of the best time (run_bench.py's table). The kernels run in a child process
(this file's command line); one that fails (DF-GNN checks no bounds, and a CUDA error leaves the
process's context unusable) is recorded with its error and a new child goes on past it.

Usage: python3 perf/dfgnn_peer.py --ext DIR --graph G.npz --inputs DIR --heads H --dim D
         [--models gt,gat] [--warmup 3] [--iters 10] [--name NAME] [--skip gt/fwdbwd/hyper,..]
Prints one JSON object per kernel.
"""

import argparse
import importlib
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

SMEM_FLOATS = 48 * 1024 // 4  # dynamic shared memory a launch gets without cudaFuncSetAttribute
ROWS_PER_BLOCK = 8            # rows of one hyper / backward block (its blockDim.y)
TOLERANCE = 1e-4


def load(ext_dir):
    """Imports fused_gtconv and fused_gatconv from ext_dir (or its package/ folder, where DF-GNN's
    setup.py puts them). Torch is imported first: the modules link against it."""
    import torch  # noqa: F401

    for d in (os.path.join(ext_dir, "package"), ext_dir):
        if os.path.isdir(d) and d not in sys.path:
            sys.path.insert(0, d)
    return importlib.import_module("fused_gtconv"), importlib.import_module("fused_gatconv")


def round32(x):
    return (x + 31) // 32 * 32


def shared_needs(row_ptr):
    """Floats of dynamic shared memory each kernel family needs on this graph."""
    deg = np.diff(row_ptr)
    ends = row_ptr[np.minimum(np.arange(0, len(deg) + ROWS_PER_BLOCK, ROWS_PER_BLOCK), len(deg))]
    block = int(np.diff(ends).max(initial=0))
    return {"hyper": max(32, round32(block)), "row": max(32, round32(int(deg.max(initial=0))))}


def relative_error(got, ref):
    scale = float(ref.abs().max()) if ref.numel() else 0.0
    return float((got.double() - ref).abs().max()) / scale if ref.numel() and scale > 0 else 0.0


def chunks(E, size=1 << 20):
    """Edge ranges small enough that [size, H, D] float64 temporaries stay under 1 GiB."""
    return [slice(c, min(c + size, E)) for c in range(0, E, size)]


def probabilities(model, src, dst, n, a, b, slope=0.2):
    """float64 softmax over each row's in-edges [E,H]: gt a = Q (pre-scaled), b = K; gat a = el,
    b = er [N,H]."""
    import torch

    if model == "gt":
        s = torch.cat([(a[dst[c]] * b[src[c]]).sum(-1) for c in chunks(len(src))] or [a.new_zeros(0, a.shape[1])])
    else:
        s = torch.nn.functional.leaky_relu(a[src] + b[dst], slope)
    E, H = s.shape
    m = s.new_full((n, H), -float("inf")).scatter_reduce(0, dst[:, None].expand(E, H), s, "amax")
    p = torch.exp(s - m[dst])
    return p / s.new_zeros(n, H).index_add(0, dst, p)[dst]


def aggregate(p, src, dst, n, x):
    """out[v] = sum over edges e = u -> v of p[e] x[u], in float64 [N,H,D]."""
    out = x.new_zeros(n, *x.shape[1:])
    for c in chunks(len(src)):
        out.index_add_(0, dst[c], p[c, :, None] * x[src[c]])
    return out


def gt_gradients(src, dst, n, q, k, v, grad):
    """float64 (out, dQ, dK, dV) of GT with Q pre-scaled: dV = P^T G, ds = p (G_v.V_u - G_v.out_v),
    dQ = sum ds K_u over in-edges, dK = sum ds Q_v over out-edges."""
    p = probabilities("gt", src, dst, n, q, k)
    out = aggregate(p, src, dst, n, v)
    dq, dk, dv = (t.new_zeros(t.shape) for t in (q, k, v))
    row_term = (grad * out).sum(-1)
    for c in chunks(len(src)):
        u, w = src[c], dst[c]
        dv.index_add_(0, u, p[c, :, None] * grad[w])
        ds = p[c] * ((grad[w] * v[u]).sum(-1) - row_term[w])
        dq.index_add_(0, w, ds[:, :, None] * k[u])
        dk.index_add_(0, u, ds[:, :, None] * q[w])
    return out, dq, dk, dv


class Inputs:
    """The graph in DF-GNN's formats and the inputs, on the GPU, and the float64 checks."""

    def __init__(self, npz, inputs, heads, dim):
        import torch

        dev = torch.device("cuda")
        src, dst, n = peers.read_edge_list(npz)
        src, dst = peers.sorted_by_destination(src, dst)
        row_ptr = np.searchsorted(dst, np.arange(n + 1)).astype(np.int64)
        if row_ptr[-1] >= 2**31:
            raise ValueError("DF-GNN indexes edges with int32")
        self.n, self.need = n, shared_needs(row_ptr)
        i32 = lambda x: torch.from_numpy(np.ascontiguousarray(x, np.int32)).to(dev)  # noqa: E731
        by_src = np.argsort(src, kind="stable")  # the CSC: edges grouped by source, their CSR slots
        # (row_ptr, col_ind, rows, val): the CSR by destination; + (col_ptr, row_ind, val_idx): the CSC
        self.csr = (i32(row_ptr), i32(src), i32(dst), torch.ones(len(src), device=dev))
        self.csc = (i32(np.searchsorted(src[by_src], np.arange(n + 1))), i32(dst[by_src]), i32(by_src))
        load = lambda f: torch.from_numpy(np.load(os.path.join(inputs, f + ".npy"))).to(dev).contiguous()  # noqa: E731
        q, self.k, self.v, self.el, self.er = (load(f) for f in ("q", "k", "v", "el", "er"))
        if tuple(q.shape) != (n, heads, dim):
            raise ValueError(f"{inputs}: q has shape {tuple(q.shape)}, expected {(n, heads, dim)}")
        self.q = (q / dim ** 0.5).contiguous()
        self.grad = (torch.rand_like(self.v) * 2 - 1).contiguous()
        self.src, self.dst = torch.from_numpy(src).to(dev), torch.from_numpy(dst).to(dev)

    def forward_error(self, model, got):
        a, b = (self.q, self.k) if model == "gt" else (self.el, self.er)
        p = probabilities(model, self.src, self.dst, self.n, a.double(), b.double())
        return relative_error(got, aggregate(p, self.src, self.dst, self.n, self.v.double()))

    def gradient_error(self, got):
        ref = gt_gradients(self.src, self.dst, self.n, *(t.double() for t in (self.q, self.k, self.v, self.grad)))
        return max(relative_error(g, r) for g, r in zip(got, ref))


def kernels(gt_ext, gat_ext, x):
    """(model, pass, kernel) -> (call, shared-memory floats, error of its result)."""
    hyper, row = x.need["hyper"], x.need["row"]
    rp, ci, rows, val = x.csr
    q, k, v = x.q, x.k, x.v

    def gt_train():
        out, attn = gt_ext.gt_hyper_forward(*x.csr, *x.csc, hyper, q, k, v)
        return (out, *gt_ext.gt_backward(*x.csr, *x.csc, hyper, q, k, v, attn, x.grad))

    gt_error, gat_error = (lambda out: x.forward_error("gt", out)), (lambda out: x.forward_error("gat", out))
    return {
        ("gt", "fwd", "hyper"): (lambda: gt_ext.gt_hyper_inference(rp, ci, rows, val, hyper, q, k, v)[0], hyper, gt_error),
        ("gt", "fwd", "softmax"): (lambda: gt_ext.gt_softmax_inference(rp, ci, rows, val, row, q, k, v)[0], row, gt_error),
        ("gt", "fwd", "tiling"): (lambda: gt_ext.gt_tiling_inference(rp, ci, val, 32, q, k, v)[0], 32, gt_error),
        ("gt", "fwd", "csr"): (lambda: gt_ext.gt_csr_inference(rp, ci, val, row, q, k, v)[0], row, gt_error),
        ("gt", "fwdbwd", "hyper"): (gt_train, hyper, x.gradient_error),
        ("gat", "fwd", "hyper"): (lambda: gat_ext.gat_inference_hyper(hyper, x.er, x.el, rp, ci, rows, 0.2, v), hyper,
                                  gat_error),
        ("gat", "fwd", "tiling"): (lambda: gat_ext.gat_inference_tiling(x.er, x.el, rp, ci, 0.2, v), 128, gat_error),
    }


def measure(call, smem_floats, error, warmup, iters):
    """The record fields of one kernel: ms (and whether its result is wrong) or why it did not run."""
    import torch

    if smem_floats > SMEM_FLOATS:
        return {"skipped": f"smem: needs {smem_floats * 4 // 1024} KB > 48 KB"}
    rec = {"max_rel_err": error(call())}
    rec["wrong"] = rec["max_rel_err"] > TOLERANCE
    rec["ms"], rec["ms_all"] = peers.median_ms(call, warmup, iters)
    rec["peak_extra_mib"] = peers.peak_extra_mib(call)
    torch.cuda.empty_cache()
    return rec


def run_kernels(a):
    """In this process: one JSON line per kernel not in --skip. A kernel that raises (a CUDA error
    leaves the context unusable) ends the process with status 3 after its record."""
    import torch

    x = Inputs(a.graph, a.inputs, a.heads, a.dim)
    common = {"peer": "dfgnn", "graph": a.name, "nodes": x.n, "edges": len(x.src), "heads": a.heads, "dim": a.dim,
              "warmup": a.warmup, "iters": a.iters, "device": torch.cuda.get_device_name()}
    skip = set(filter(None, a.skip.split(",")))
    for (model, pas, kernel), (call, smem, error) in kernels(*load(a.ext), x).items():
        key = f"{model}/{pas}/{kernel}"
        if model not in a.models.split(",") or key in skip:
            continue
        rec = dict(common, model=model, kernel=kernel, key=key, **{"pass": pas})
        try:
            rec.update(measure(call, smem, error, a.warmup, a.iters))
        except Exception as ex:  # noqa: BLE001 - reported, then the process ends
            rec["error"] = (str(ex).strip().splitlines() or [repr(ex)])[0][:300]
        print(json.dumps(rec), flush=True)
        if "error" in rec:
            sys.exit(3)


def run_isolated(ext_dir, npz, heads, dim, models, inputs, warmup=3, iters=10, name=""):
    """Runs the kernels in child processes, so that one that crashes (DF-GNN has no bounds
    checks) costs only its own record: after a crash a new child goes on past it."""
    args = [sys.executable, os.path.abspath(__file__), "--ext", ext_dir, "--graph", npz, "--heads", heads,
            "--dim", dim, "--models", ",".join(models), "--inputs", inputs, "--warmup", warmup, "--iters", iters,
            "--name", name]
    records, done = [], []
    while True:
        r = subprocess.run([str(c) for c in args + ["--skip", ",".join(done)]], capture_output=True, text=True)
        new = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        records += new
        done += [rec["key"] for rec in new]
        if r.returncode != 3 or not new:
            break
    if r.returncode not in (0, 3):
        records.append({"peer": "dfgnn", "error": f"exit {r.returncode}: {r.stderr.strip()[-300:]}"})
    return records


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ext", required=True, help="directory of the built fused_gtconv / fused_gatconv")
    p.add_argument("--graph", required=True, help=".npz (src, dst, num_nodes) or edge list")
    p.add_argument("--inputs", required=True, help="directory of q, k, v [N,H,D] and el, er [N,H] (.npy)")
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--models", default="gt,gat")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--name", default="")
    p.add_argument("--skip", default="", help="model/pass/kernel keys not to run")
    run_kernels(p.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
