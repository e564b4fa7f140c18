#!/usr/bin/env python3
"""Adds the peers' suite to a `dfgnn study` record (docs/study.md, "Peers"): PyTorch Geometric's
layers timed on the record's graphs, shapes, models and passes in float32, as perf/peers.py
measures them (GT's attention without its linear layers, the other models' whole layers), on
this machine's CPU or GPU, with their versions. The graphs are the record's own: `dfgnn gen
suite` writes each one the study ran, and their sizes are checked against the record.

Usage:
  python3 perf/study_peers.py RECORD.json --dfgnn BIN [--data DIR] [--device cpu|cuda]
      [--threads T] [-o OUT.json]      (default: RECORD.json rewritten)

Bad input (not a valid record, a CLI that fails, a graph that differs) exits 2 with one line.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import peers  # noqa: E402
import study_record as sr  # noqa: E402

PASSES = {"fwd": "fwd", "fwdbwd": "fwd+bwd"}  # peers.py's names -> the record's


class PeerError(RuntimeError):
    """One line naming what went wrong."""


def graph_file(dfgnn, name, data, workdir):
    """The record's graph `name` as an edge list, written by `dfgnn gen suite`."""
    path = os.path.join(workdir, name + ".txt")
    cmd = [dfgnn, "gen", "suite", "--name", name, "--out", path] + (["--data", data] if data else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise PeerError(f"{' '.join(cmd)}: {lines[-1] if lines else f'exit {done.returncode}'}")
    return path


def pyg_cases(record, dfgnn, data, device, workdir):
    """(versions, device name, cases) of PyG on every graph, shape, model and pass of the record."""
    suite = record["suite"]
    warmup, iters = suite["repeats"]["warmup"], suite["repeats"]["iters"]
    shapes = [tuple(int(x) for x in s.split("x")) for s in suite["shapes"]]
    cases, versions, where = [], {}, None
    for g in record["graphs"]:
        src, dst, n = peers.read_edge_list(graph_file(dfgnn, g["name"], data, workdir))
        if (n, len(src)) != (g["nodes"], g["edges"]):
            raise PeerError(f"graph {g['name']}: {n} nodes, {len(src)} edges from `dfgnn gen suite`, the record has "
                            f"{g['nodes']} and {g['edges']} (another build's generator?)")
        for heads, dim in shapes:
            for r in peers.run_peer(src, dst, n, heads, dim, suite["models"], list(PASSES), None, warmup, iters,
                                    name=g["name"], device=device):
                c = {"graph": g["name"], "model": r["model"], "heads": heads, "dim": dim, "dtype": "f32",
                     "pass": PASSES[r["pass"]]}
                if "error" in r:
                    c.update(status="failed", reason=r["error"])
                else:
                    median, least, spread = sr.summary(r["ms_all"])
                    c.update(status="ok", median_ms=median, min_ms=least, spread_ms=spread)
                    print(f"pyg {g['name']} {r['model']} {heads}x{dim} {c['pass']}: {median:.4f} ms", flush=True)
                cases.append(c)
                versions, where = {"torch": r["torch"], "torch_geometric": r["pyg"]}, r["device"]
    return versions, where, cases


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("record", metavar="RECORD.json")
    p.add_argument("--dfgnn", required=True, help="the dfgnn CLI (its `gen suite` writes the record's graphs)")
    p.add_argument("--data", help="the folder of the real graphs, for a record that ran them")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--threads", type=int, help="torch's CPU threads (--device cpu)")
    p.add_argument("-o", "--out", help="the record to write (default: RECORD.json)")
    a = p.parse_args(argv)
    try:
        record = sr.load(a.record)
        if not record["graphs"]:
            raise PeerError(f"{a.record}: the record ran no graph (--graphs none)")
        import torch

        if a.threads:
            torch.set_num_threads(a.threads)
        with tempfile.TemporaryDirectory() as workdir:
            versions, where, cases = pyg_cases(record, a.dfgnn, a.data, a.device, workdir)
    except (sr.RecordError, PeerError, OSError) as e:
        print(f"study_peers: error: {e}", file=sys.stderr)
        return 2
    record["peers"] = [q for q in record.get("peers", []) if q["name"] != "pyg"]
    record["peers"].append({"name": "pyg", "versions": versions, "device": where, "cases": cases})
    found = sr.problems(record)
    if found:  # a bug here, not bad input: the record would no longer validate
        raise AssertionError(f"the record with its peers does not validate: {found[0]}")
    out = a.out or a.record
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"{out}: {sum(c['status'] == 'ok' for c in cases)} of {len(cases)} PyG cases ran on {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
