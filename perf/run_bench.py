#!/usr/bin/env python3
"""Benchmark orchestrator (run on the GPU machine): dfgnn against its peers on the graphs of
shared/anchors.md, reported as anchors.md asks.

For each graph (generated with `dfgnn gen ...`, read from the data directory, or given with
--graph-file NAME=PATH) it writes one canonical directed edge list (real graphs symmetrised,
self loops and duplicates removed; edges sorted by destination, i.e. in CSR order, as the
cuSPARSE peers hold their values; `# nodes N` header) and a .npz of it, then for each H x D
writes random float32 inputs once (q, k, v [N,H,D]; el, er [N,H]; a [H,D]) and runs on the
same graph and inputs:
  - ours:     `dfgnn bench ...` (see run_ours, the one place that knows the CLI);
  - cuSPARSE: build-perf/cusparse_pipeline (GT forward);
  - PyG:      perf/peers.py, in this process;
  - DF-GNN:   perf/dfgnn_peer.py, in child processes, when --dfgnn-ext names its built extensions
              (else its numbers are cited from shared/dfgnn-h100.md, marked "cited").
The platform is a `dfgnn study` record (docs/study.md): --study names one, else the run makes
one (`dfgnn study --graphs none --backends native`, seconds) in RESULTS/platform.json. Its device
names the GPU in every raw record and the table, and its 1 GiB device copy is the bandwidth that
the two roofline fractions of anchors.md divide by. The cited PyG and DF-GNN numbers were
measured on an H100: the table shows them only for an H100. Raw records go to
RESULTS/raw.jsonl, the table to RESULTS/table.md and stdout.

Usage (repo root, GPU machine):
  python3 perf/run_bench.py --data ../shared/data --graphs cora,pattern --shapes 1x128,4x32
      [--dfgnn build/dfgnn] [--cusparse build-perf/cusparse_pipeline] [--models gt,agnn,gat,gatv2]
      [--graph-file pattern=/path/pattern.txt.gz] [--no-ours] [--no-pyg] [--no-cusparse]
      [--dfgnn-ext DIR] [--study PLATFORM.json]
      [--results perf/results/NAME] [--work /tmp/dfgnn-bench]
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dfgnn_peer  # noqa: E402
import peers  # noqa: E402
import study_record  # noqa: E402

# Real graphs: file under --data and node count (isolated nodes count). Generated graphs:
# arguments of `dfgnn gen` (seed appended). Real graphs are symmetrised; generated ones are
# used as written (the k-NN graphs are directed on purpose).
GRAPHS = {
    "cora": {"file": "cora/planetoid_edges.tsv.gz", "nodes": 2708},
    "citeseer": {"file": "citeseer/planetoid_edges.tsv.gz", "nodes": 3327},
    "pubmed": {"file": "pubmed/planetoid_edges.tsv.gz", "nodes": 19717},
    "pattern": {"gen": ["sbm", "--kind", "pattern", "--graphs", "1024"]},
    "cluster": {"gen": ["sbm", "--kind", "cluster", "--graphs", "1024"]},
    "mnist": {"gen": ["knn", "--graphs", "1024", "--k", "8"]},
    "tolokers": {"file": "tolokers/tolokers_edges.tsv.gz", "nodes": 11758},
    "web-NotreDame": {"file": "web-NotreDame/web-NotreDame.txt.gz", "nodes": 325729},
    "rmat-s17-d64": {"gen": ["rmat", "--scale", "17", "--edge-factor", "64"]},
    "rmat-s20-d32": {"gen": ["rmat", "--scale", "20", "--edge-factor", "32"]},
}

# The GPU that the cited numbers below were measured on: the table shows them on it alone.
CITED_DEVICE = "H100"

# shared/anchors.md, PyG on the H100 (ms): (graph, HxD) -> {model_pass: ms}; None = OOM.
PYG_ANCHORS = {
    ("cora", "1x128"): {"gt_fwd": 1.04, "gt_fwdbwd": 2.08, "agnn_fwd": 1.07, "gat_fwd": 1.35},
    ("citeseer", "1x128"): {"gt_fwd": 1.02, "gt_fwdbwd": 2.04, "agnn_fwd": 1.08, "gat_fwd": 1.47},
    ("pubmed", "1x128"): {"gt_fwd": 1.02, "gt_fwdbwd": 2.33, "agnn_fwd": 1.23, "gat_fwd": 1.33},
    ("pattern", "1x128"): {"gt_fwd": 20.5, "gt_fwdbwd": 53.5, "agnn_fwd": 21.0, "gat_fwd": 9.6},
    ("pattern", "4x32"): {"gt_fwd": 31.6, "gt_fwdbwd": 68.8, "agnn_fwd": 21.0, "gat_fwd": 24.1},
    ("cluster", "1x128"): {"gt_fwd": 15.1, "gt_fwdbwd": 39.4, "agnn_fwd": 15.5, "gat_fwd": 7.0},
    ("mnist", "1x128"): {"gt_fwd": 1.84, "gt_fwdbwd": 4.70, "agnn_fwd": 2.14, "gat_fwd": 1.45},
    ("tolokers", "1x128"): {"gt_fwd": 4.06, "gt_fwdbwd": 9.89, "agnn_fwd": 4.12, "gat_fwd": 2.89},
    ("web-NotreDame", "1x128"): {"gt_fwd": 8.63, "gt_fwdbwd": 22.0, "agnn_fwd": 8.99, "gat_fwd": 5.14},
    ("rmat-s17-d64", "1x128"): {"gt_fwd": 28.9, "gt_fwdbwd": 68.6, "agnn_fwd": 28.0, "gat_fwd": 15.8},
    ("rmat-s17-d64", "4x32"): {"gt_fwd": 43.8, "gt_fwdbwd": 88.4, "agnn_fwd": 28.0, "gat_fwd": 35.1},
    ("rmat-s20-d32", "1x128"): {"gt_fwd": None, "gt_fwdbwd": None, "agnn_fwd": None, "gat_fwd": 72.4},
}

# shared/dfgnn-h100.md: the original DF-GNN kernels (paoxiaode/DF-GNN, sm_90) on the H100,
# median ms; kernels that could not run ("smem") or were wrong are left out. GT fwd: hyper
# (SMMF), softmax (PMF), tiling, csr; gt_fwdbwd: hyper; GAT: kernel alone (el/er given).
DFGNN_H100 = {
    ("cora", "1x128"): {"gt": [0.052, 0.068, 0.055, 0.109], "gt_fwdbwd": 0.145, "gat": [0.045, 0.064]},
    ("citeseer", "1x128"): {"gt": [0.034, 0.045, 0.045, 0.073], "gt_fwdbwd": 0.103, "gat": [0.028, 0.057]},
    ("pubmed", "1x128"): {"gt": [0.078, 0.096, 0.119, 0.139], "gt_fwdbwd": 0.253, "gat": [0.043, 0.254]},
    ("pattern", "1x128"): {"gt": [1.25, 2.48, 1.65, 2.36], "gt_fwdbwd": 3.25, "gat": [0.46, 1.53]},
    ("pattern", "4x32"): {"gt": [2.02, 3.60, 3.47], "gat": [0.54, 1.84]},
    ("cluster", "1x128"): {"gt": [0.93, 1.86, 1.33, 1.78], "gt_fwdbwd": 2.46, "gat": [0.36, 1.77]},
    ("cluster", "4x32"): {"gt": [1.56, 2.83, 2.75], "gat": [0.44, 1.75]},
    ("mnist", "1x128"): {"gt": [0.156, 0.283, 0.303, 0.251], "gt_fwdbwd": 0.442, "gat": [0.057, 0.836]},
    ("mnist", "4x32"): {"gt": [0.279, 0.524, 0.565], "gat": [0.130, 0.773]},
    ("tolokers", "1x128"): {"gt": [0.544, 0.733, 0.664, 1.41], "gt_fwdbwd": 1.95, "gat": [0.441, 0.493]},
    ("tolokers", "4x32"): {"gt": [0.825, 1.49, 1.72], "gat": [0.286, 0.558]},
    ("web-NotreDame", "1x128"): {"gt": [2.86, 3.71, 3.59, 8.27], "gt_fwdbwd": 12.8, "gat": [3.40, 4.44]},
    ("web-NotreDame", "4x32"): {"gt": [5.05, 8.12, 15.5], "gat": [1.92, 5.40]},
    ("rmat-s17-d64", "1x128"): {"gt": [7.44], "gat": [4.97]},
    ("rmat-s17-d64", "4x32"): {"gt": [17.1], "gat": [6.27]},
    ("rmat-s20-d32", "1x128"): {"gt": [26.2], "gat": [21.5]},
    ("rmat-s20-d32", "4x32"): {"gt": [65.4], "gat": [28.1]},
}


def dfgnn_best(graph, shape, model, pas, measured, cited_here=True):
    """(ms, note): DF-GNN's best correct time measured in this run (note ""); where none ran,
    (None, why: "smem", "wrong", "error"); without measurements, the cited time and "cited"
    (or (None, "") where nothing is cited, or the run's GPU is not CITED_DEVICE)."""
    if measured:
        ok = [r["ms"] for r in measured if "ms" in r and not r.get("wrong")]
        if ok:
            return min(ok), ""
        return None, "/".join(sorted({"wrong" if r.get("wrong") else r.get("skipped", "error").split(":")[0]
                                      for r in measured}))
    cited = dfgnn_cited(graph, shape, model, pas) if cited_here else None
    return cited, "cited" if cited else ""


def dfgnn_cell(ms, note):
    """A DF-GNN time for a table: the time, marked "(cited)" when cited, or why there is none."""
    if ms is None:
        return note or "–"
    return f"{fmt(ms)} (cited)" if note == "cited" else fmt(ms)


def dfgnn_cited(graph, shape, model, pas):
    row = DFGNN_H100.get((graph, shape), {})
    if pas == "fwdbwd":
        return row.get(f"{model}_fwdbwd")
    times = row.get(model)
    return min(times) if times else None


def traffic_bytes(model, pas, n, e, h, d, b=4):
    """(compulsory, gather-model) bytes as anchors.md counts them, or (None, None) when no model
    is defined. Graph: int64 row offsets + int32 source ids. Forward: every dense input read and
    the output written once; the gather model adds E*H*D*b for each tensor gathered per edge
    (GT: K and V; AGNN: X; GAT: V, plus el (E*H*b); GATv2: XL). GT fwd+bwd: the training forward
    also writes one statistic per row (N*H*4); the backward reads Q, K, V, out, dOut and the
    statistic, writes dQ, dK, dV, reads the graph again by source (CSC), and gathers K, V (for
    dQ) and Q, dOut (for dK, dV) per edge."""
    graph = (n + 1) * 8 + e * 4
    nhd = n * h * d * b
    ehd = e * h * d * b
    if pas == "fwd":
        dense, gathered = {
            "gt": (4 * nhd, 2 * ehd),
            "agnn": (2 * nhd, ehd),
            "gat": (2 * nhd + 2 * n * h * b, ehd + e * h * b),
            "gatv2": (3 * nhd + h * d * b, ehd),
        }[model]
        return graph + dense, graph + dense + gathered
    if model == "gt":
        stat = n * h * 4
        fwd = graph + 4 * nhd + stat
        bwd = 2 * graph + 5 * nhd + stat + 3 * nhd
        return fwd + bwd, fwd + bwd + 2 * ehd + 4 * ehd
    return None, None


def sh(cmd, **kw):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def gen_graph(dfgnn, args, seed, path):
    """`dfgnn gen KIND ... --seed S --out PATH` (the lead's CLI) writes an edge list."""
    r = sh([dfgnn, "gen", *args, "--seed", seed, "--out", path])
    if r.returncode != 0:
        raise RuntimeError(f"dfgnn gen failed: {r.stderr.strip()}")


def run_ours(dfgnn, graph_txt, nodes, model, heads, dim, inputs, json_out, warmup, iters, check):
    """Our forward timings, one record per (backend, strategy). The CLI call, in one place:
      dfgnn bench --graph F --nodes N --model M --heads H --dim D --inputs DIR --backend cuda
                  --strategy all --warmup W --iters I --check --json OUT
    where DIR holds q, k, v [N,H,D], el, er [N,H] and a [H,D] (.npy float32; each model takes
    what it needs: GT q,k,v; AGNN q as X; GAT el,er,v; GATv2 q as XL, k as XR, a) and OUT gets
    JSON lines with "backend", "strategy", "resolved", "pass", "ms" and the byte counts."""
    if os.path.exists(json_out):
        os.remove(json_out)
    r = sh([dfgnn, "bench", "--graph", graph_txt, "--nodes", nodes, "--model", model,
            "--heads", heads, "--dim", dim, "--inputs", inputs, "--backend", "cuda", "--strategy", "all",
            "--warmup", warmup, "--iters", iters, *(["--check"] if check else []), "--json", json_out])
    if r.returncode != 0:
        return [{"peer": "ours", "model": model, "error": (r.stderr or r.stdout).strip()[-500:]}]
    with open(json_out) as f:
        text = f.read().strip()
    recs = json.loads(text) if text.startswith("[") else [json.loads(l) for l in text.splitlines() if l.strip()]
    for rec in recs:
        rec.setdefault("pass", rec.pop("mode", "fwd"))
        rec.update(peer="ours", model=model)
    return recs


def run_cusparse(exe, graph_txt, name, nodes, heads, dim, inputs, warmup, iters):
    r = sh([exe, "--graph", graph_txt, "--name", name, "--nodes", nodes, "--heads", heads,
            "--dim", dim, "--q", f"{inputs}/q.npy", "--k", f"{inputs}/k.npy", "--v", f"{inputs}/v.npy",
            "--warmup", warmup, "--iters", iters])
    recs = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0:
        recs.append({"peer": "cusparse", "model": "gt", "pass": "fwd", "error": r.stderr.strip()[-500:]})
    return recs


def platform(dfgnn, study, results):
    """The copy record of the run's GPU: its device and 1 GiB copy bandwidth, from the study
    record `study`, or from one made now by `dfgnn study --graphs none` in RESULTS."""
    if not study:
        study = os.path.join(results, "platform.json")
        r = sh([dfgnn, "study", "--graphs", "none", "--backends", "native", "--out", study])
        if r.returncode != 0:
            raise RuntimeError(f"dfgnn study failed: {r.stderr.strip()}")
    rec = study_record.load(study)
    return {"peer": "copy", "device": study_record.device_name(rec), "study": os.path.abspath(study),
            "read_write_GBps": study_record.copy_gbs(rec, "native")}


def add_graph_args(p):
    """The arguments prepare_graph reads (besides --dfgnn): which graphs, where the real ones
    are, and the seed of the generated ones (and of the inputs)."""
    p.add_argument("--graphs", default=",".join(GRAPHS), help="comma-separated names")
    p.add_argument("--graph-file", action="append", default=[], metavar="NAME=PATH",
                   help="use this edge list for NAME instead of generating or reading it")
    p.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    p.add_argument("--seed", type=int, default=1)


def prepare_graph(name, a, work):
    """Returns {name, txt, npz, nodes, edges, max_deg} for the canonical directed graph."""
    spec = GRAPHS.get(name, {})
    given = dict(kv.split("=", 1) for kv in a.graph_file).get(name)
    if not spec and not given:
        raise ValueError(f"unknown graph {name}: give --graph-file {name}=PATH")
    gdir = os.path.join(work, name)
    os.makedirs(gdir, exist_ok=True)
    symmetrise = "file" in spec and not given
    if given:
        path = given
    elif "gen" in spec:
        path = os.path.join(gdir, "generated.txt")
        if not os.path.exists(path):
            gen_graph(a.dfgnn, spec["gen"], a.seed, path)
    else:
        path = os.path.join(a.data, spec["file"])
    src, dst, n = peers.read_edge_list(path, spec.get("nodes"))
    as_read = np.asarray(dst, np.int64) * n + src
    if symmetrise:
        keep = src != dst
        src, dst = np.concatenate([src[keep], dst[keep]]), np.concatenate([dst[keep], src[keep]])
    code = np.unique(dst * n + src)  # sorted by destination (CSR order), then source; duplicates dropped
    src, dst = code % n, code // n
    npz = os.path.join(gdir, "graph.npz")
    np.savez(npz, src=src.astype(np.int32), dst=dst.astype(np.int32), num_nodes=np.int64(n))
    txt = path
    if symmetrise or not np.array_equal(code, as_read):  # else the file already is this graph, in this order
        txt = os.path.join(gdir, "graph.txt")
        with open(txt, "w") as f:
            f.write(f"# {name}: directed edge list u v (u -> v)\n# nodes {n}\n# edges {len(src)}\n")
            np.savetxt(f, np.stack([src, dst], 1), fmt="%d")
    deg = np.bincount(dst, minlength=n)
    return {"name": name, "txt": txt, "npz": npz, "nodes": int(n), "edges": int(len(src)),
            "max_deg": int(deg.max(initial=0)), "src": src, "dst": dst}


def write_inputs(g, heads, dim, work, seed):
    d = os.path.join(work, g["name"], f"{heads}x{dim}")
    if os.path.exists(os.path.join(d, "a.npy")):
        return d
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(seed)
    n = g["nodes"]
    for f, shape in (("q", (n, heads, dim)), ("k", (n, heads, dim)), ("v", (n, heads, dim)),
                     ("el", (n, heads)), ("er", (n, heads)), ("a", (heads, dim))):
        np.save(os.path.join(d, f + ".npy"), rng.uniform(-1, 1, shape).astype(np.float32))
    return d


def fmt(x, digits=3):
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    return f"{x:.{digits}g}" if x < 100 else f"{x:.0f}"


def table(records, copy_gbps, device):
    """One row per (graph, shape, model, pass) where anything ran, on one GPU: `device`."""
    cited_here = CITED_DEVICE in device
    rows = {}
    for r in records:
        if r.get("peer") not in ("ours", "pyg", "cusparse", "dfgnn") or not {"graph", "model", "pass"} <= r.keys():
            continue
        key = (r["graph"], f'{r["heads"]}x{r["dim"]}', r["model"], r["pass"])
        rows.setdefault(key, []).append(r)
    cited_note = ("" if cited_here else f" The cited numbers were measured on an {CITED_DEVICE}, so none are shown "
                  f"for this GPU.")
    lines = [
        f"{device}. Copy bandwidth (1 GiB D2D, read+write, measured on this GPU): {copy_gbps:.0f} GB/s. DF-GNN: its "
        "best correct kernel in this run (perf/dfgnn_peer.py), or shared/dfgnn-h100.md where "
        "marked cited; PyG anchors: "
        "shared/anchors.md. Fractions: our best time against the copy bandwidth, for the "
        "compulsory bytes and the gather model of anchors.md. ms are medians." + cited_note,
        "",
        "| graph | N | E | H×D | model | pass | ours best | ours per strategy | PyG | PyG anchors "
        "| cuSPARSE | DF-GNN | ×PyG | ×cuSPARSE | ×DF-GNN | compulsory | gather |",
        "|" + "---|" * 17,
    ]
    for (graph, shape, model, pas), rs in rows.items():
        ours = {r.get("strategy", "?"): r["ms"] for r in rs if r["peer"] == "ours" and "ms" in r}
        pyg = next((r for r in rs if r["peer"] == "pyg"), None)
        pyg_ms = pyg.get("ms", pyg.get("error")) if pyg else None
        cus = next((r for r in rs if r["peer"] == "cusparse"), None)
        cus_ms = cus.get("ms", "error") if cus else None
        anchors = PYG_ANCHORS if cited_here else {}
        anchor = anchors.get((graph, shape), {}).get(f"{model}_{pas}", "–")
        anchor = "OOM" if (graph, shape) in anchors and anchor is None else anchor
        df_ms, df_note = dfgnn_best(graph, shape, model, pas, [r for r in rs if r["peer"] == "dfgnn"], cited_here)
        best = min(ours.items(), key=lambda kv: kv[1]) if ours else None
        n, e, h, d = rs[0]["nodes"], rs[0]["edges"], rs[0]["heads"], rs[0]["dim"]
        comp, gath = traffic_bytes(model, pas, n, e, h, d)

        def ratio(peer_ms):
            ok = best and isinstance(peer_ms, (int, float)) and best[1] > 0
            return f"{peer_ms / best[1]:.2f}" if ok else "–"

        def frac(nbytes):
            ok = best and nbytes and copy_gbps
            return f"{nbytes / (best[1] * 1e-3) / (copy_gbps * 1e9):.2g}" if ok else "–"

        lines.append("| " + " | ".join([
            graph, str(n), str(e), shape, model, pas,
            f"{fmt(best[1])} ({best[0]})" if best else "–",
            ", ".join(f"{s} {fmt(t)}" for s, t in ours.items()) or "–",
            fmt(pyg_ms), fmt(anchor), fmt(cus_ms), dfgnn_cell(df_ms, df_note),
            ratio(pyg_ms), ratio(cus_ms), ratio(df_ms), frac(comp), frac(gath),
        ]) + " |")
    return "\n".join(lines + auto_summary(rows))


def auto_summary(rows, margin=1.05):
    """Lines saying in how many (graph, shape, model, pass) cases Auto was within `margin` of the
    fastest other strategy, and each miss with the kernels Auto and the fastest ran (the same
    kernel timed twice differs by run-to-run noise only)."""
    cases, misses = 0, []
    for (graph, shape, model, pas), rs in rows.items():
        ours = [r for r in rs if r["peer"] == "ours" and "ms" in r]
        auto = next((r for r in ours if r.get("strategy") == "auto"), None)
        others = [r for r in ours if r.get("strategy") != "auto"]
        if not auto or not others:
            continue
        cases += 1
        best = min(others, key=lambda r: r["ms"])
        if auto["ms"] > margin * best["ms"]:
            same = " (the same kernel)" if auto.get("resolved") == best.get("strategy") else ""
            misses.append(f"- {graph} {shape} {model} {pas}: Auto ({auto.get('resolved')}) {fmt(auto['ms'])} ms, "
                          f"{best['strategy']} {fmt(best['ms'])} ms{same}")
    if not cases:
        return []
    return ["", f"Auto within {round((margin - 1) * 100)}% of the fastest other strategy in "
                f"{cases - len(misses)} of {cases} cases."] + misses


def render(paths, results):
    """The tables of raw records, one per GPU (the records' device; records made before they
    named one are "unknown GPU"), each with the median copy bandwidth of its own runs."""
    records = [json.loads(line) for path in paths for line in open(path) if line.strip()]
    tables = []
    for device in dict.fromkeys(r.get("device", "unknown GPU") for r in records):
        mine = [r for r in records if r.get("device", "unknown GPU") == device]
        copies = sorted(r["read_write_GBps"] for r in mine if r.get("peer") == "copy" and "read_write_GBps" in r)
        tables.append(table(mine, copies[len(copies) // 2] if copies else None, device))
    text = "\n\n".join(tables)
    if results:
        os.makedirs(results, exist_ok=True)
        with open(os.path.join(results, "table.md"), "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_graph_args(p)
    p.add_argument("--shapes", default="1x128,4x32")
    p.add_argument("--models", default="gt,agnn,gat,gatv2")
    p.add_argument("--dfgnn", default="build/dfgnn")
    p.add_argument("--cusparse", default="build-perf/cusparse_pipeline")
    p.add_argument("--no-ours", action="store_true")
    p.add_argument("--no-pyg", action="store_true")
    p.add_argument("--no-cusparse", action="store_true")
    p.add_argument("--dfgnn-ext", default=None,
                   help="directory of DF-GNN's built fused_gtconv / fused_gatconv modules (perf/dfgnn_peer.py)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10, help="PyG and ours (anchors.md: 10)")
    p.add_argument("--cusparse-iters", type=int, default=20)
    p.add_argument("--check-max-edges", type=int, default=10_000_000,
                   help="check our outputs against the float64 reference (on the CPU) up to this size")
    p.add_argument("--work", default="/tmp/dfgnn-bench")
    p.add_argument("--results", default=None, help="default perf/results/<UTC timestamp>")
    p.add_argument("--study", default=None, metavar="PLATFORM.json",
                   help="this GPU's dfgnn study record (default: made by the run, RESULTS/platform.json)")
    p.add_argument("--from-raw", nargs="+", metavar="RAW", help="only render the table of these raw.jsonl files "
                   "(one table per GPU; its copy bandwidth: the median of its runs') to stdout and "
                   "--results/table.md when given")
    a = p.parse_args(argv)
    if a.from_raw:
        return render(a.from_raw, a.results)
    a.dfgnn = shutil.which(a.dfgnn) or os.path.abspath(a.dfgnn)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    results = a.results or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", stamp)
    os.makedirs(results, exist_ok=True)
    raw_path = os.path.join(results, "raw.jsonl")
    models = [m for m in a.models.split(",") if m]
    shapes = [tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",") if s]
    records = []

    copy = platform(a.dfgnn, a.study, results)

    def keep(recs):
        with open(raw_path, "a") as f:
            for r in recs:
                r.setdefault("device", copy["device"])
                f.write(json.dumps(r) + "\n")
                print(json.dumps({k: v for k, v in r.items() if k != "ms_all"}), flush=True)
        records.extend(recs)

    keep([copy])
    for name in [x for x in a.graphs.split(",") if x]:
        try:
            g = prepare_graph(name, a, a.work)
        except Exception as ex:  # one missing graph must not stop the others
            keep([{"graph": name, "error": f"prepare: {ex}"}])
            continue
        keep([{"peer": "graph", **{k: v for k, v in g.items() if k not in ("src", "dst")}}])
        for heads, dim in shapes:
            inputs = write_inputs(g, heads, dim, a.work, a.seed)
            base = {"graph": name, "nodes": g["nodes"], "edges": g["edges"], "heads": heads, "dim": dim}
            if not a.no_ours:
                for model in models:
                    out = os.path.join(inputs, f"ours_{model}.jsonl")
                    check = g["edges"] <= a.check_max_edges
                    keep([dict(base, **r) for r in run_ours(a.dfgnn, g["txt"], g["nodes"], model, heads,
                                                            dim, inputs, out, a.warmup, a.iters, check)])
            if not a.no_cusparse and "gt" in models:
                keep([dict(base, **r) for r in run_cusparse(a.cusparse, g["txt"], name, g["nodes"], heads,
                                                            dim, inputs, a.warmup, a.cusparse_iters)])
            if not a.no_pyg:
                try:
                    recs = peers.run_peer(g["src"], g["dst"], g["nodes"], heads, dim, models,
                                          peers.PASSES, inputs, a.warmup, a.iters, a.seed, name)
                except Exception as ex:
                    recs = [{"peer": "pyg", "error": repr(ex)[-500:]}]
                keep([dict(base, **r) for r in recs])
            if a.dfgnn_ext and {"gt", "gat"} & set(models):
                try:
                    recs = dfgnn_peer.run_isolated(a.dfgnn_ext, g["npz"], heads, dim, models, inputs,
                                                   a.warmup, a.iters, name)
                except Exception as ex:
                    recs = [{"peer": "dfgnn", "error": repr(ex)[-500:]}]
                keep([dict(base, **r) for r in recs])
    text = table(records, copy["read_write_GBps"], copy["device"])
    with open(os.path.join(results, "table.md"), "w") as f:
        f.write(text + "\n")
    print("\n" + text)
    print(f"\nraw records: {raw_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
