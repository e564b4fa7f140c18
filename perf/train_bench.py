#!/usr/bin/env python3
"""End-to-end training: dfgnn's layers against PyG's, same model, weights and data.

Five workloads (docs/python.md, "Training benchmark"):
  gt           a Graph Transformer (embedding, --layers TransformerConv layers of --heads heads
               with root weight and ReLU, classifier) on PATTERN-like batches: --batches batches
               of --batch-size stochastic-block-model graphs each (Benchmarking-GNNs' PATTERN
               recipe, generated here), node classification (in the pattern or not); the
               batches are formed once, and their graphs prepared once, before training;
  gt-shuffled  the same model and graphs, batched anew every epoch by a shuffling
               torch_geometric DataLoader (--workers processes);
  gt-shuffled-gpu  the same, the batches formed anew every epoch on the device from the graphs
               held there (DeviceBatcher below: no loader processes, no host copies);
  gat          the standard 2-layer GAT (8 heads x 8, ELU, dropout 0.6, one output head) on
               Cora and Pubmed, full graph, trained on the Planetoid split. Pubmed's features
               are not in the data folder: random ones of Pubmed's width (500) stand in;
  gat-sampled  the same GAT on --sampled-graph (web-NotreDame; `synthetic`: a small random
               graph) with random features (--features) and labels: an epoch is --sample-steps
               steps of --sample-size shuffled seed nodes, each step's subgraph drawn by
               uniform neighbour sampling (--fanouts per hop, NeighbourSampler below), the loss
               over the seeds.
The workloads of --ahead (default gat-sampled) make each step's batch or subgraph, and prepare
its graph, one step ahead by a thread on a side stream (Ahead below), as a DataLoader's workers
run ahead of training; the others make and prepare them in the training loop. Ahead pays where
the making waits on the GPU (the sampling) and costs where it is Python alone, which then
competes with the training loop for the interpreter (docs/performance.md).
Each model is built once with torch_geometric.nn layers and once with dfgnn.nn layers holding
the same weights (load_state_dict), on the same data; both train with Adam (the fused one on
the GPU), the GAT's loss over the training rows found once (indexing by the boolean mask would
synchronise host and GPU every step, in both).

Modes (--modes; gt and gat, whose steps are the same tensors every epoch; the others eager):
  eager     as written;
  compiled  the forward and loss through torch.compile (default mode), so the backward is its
            compiled graph too;
  captured  each step (forward, loss, backward, Adam with capturable=True) captured once as a
            CUDA graph after PyTorch's warm-up, then replayed: the host launches one graph a
            step (Captured below). An implementation that cannot run in a mode gets a row with
            its error.

Reported per implementation and mode (median over --epochs after --warmup epochs; with --rounds R the
implementations train in turn R times and the median of the R medians is reported):
  preprocess_ms  building the graph structures: dfgnn.Graph from the edge_index plus its plans
                 and their backward's data (and, for GAT, its self-loop graph); PyG: the
                 edge_index on the device sorted by destination, as an EdgeIndex with
                 sort_order="col" (PyG's fastest softmax path). gt and gat: once, before
                 training (gt: all batches); the workloads that prepare a graph per step: summed
                 over the epoch's steps (CUDA events, on the side stream when ahead), part of
                 epoch_ms.
  forward_ms     forward + loss, summed over the epoch's batches (CUDA events, or wall clock
                 on the CPU)
  backward_ms    backward, likewise
  epoch_ms       the whole epoch (forward, backward, optimizer step), synchronised wall clock
  kernel_ms      the GPU time of one more epoch (torch.profiler: kernels and copies), what the
                 epoch would take if the host never kept the GPU waiting
  vs PyG eager, vs PyG same mode   PyG's epoch_ms (eager, or in the row's mode) over the row's
A check first runs one eval-mode forward of both models and reports the largest difference
of their outputs relative to their magnitude (dropout differs in training: dfgnn draws its
mask from a hash, PyG from torch's generator).

Usage: python3 perf/train_bench.py [--data DIR] [--device cuda|cpu]
           [--workloads gt,gt-shuffled,gt-shuffled-gpu,gat,gat-sampled] [--datasets cora,pubmed,synthetic]
           [--epochs 10] [--warmup 2] [--ahead gat-sampled] [--modes eager,compiled,captured]
           [--json OUT.jsonl] [--tiny]
--data: the folder of shared/data (cora/, pubmed/, web-NotreDame/); `synthetic` is a small
random graph.
--tiny: two batches of four graphs, a 2-layer GT, 2 epochs, two sampled steps on a small random
graph (CPU smoke test).
"""

import argparse
import gzip
import json
import os
import queue
import sys
import threading
import time
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F
import torch_geometric.nn as pyg_nn
from torch_geometric import EdgeIndex
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

import dfgnn
import dfgnn.nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402


# --- data ---------------------------------------------------------------------------------

def pattern_graph(rng, pattern, pattern_features):
    """One PATTERN-like graph (shared/data/README.md): 5 SBM communities of 5..34 nodes
    (p = 0.5 inside, q = 0.35 across), features uniform in {0, 1, 2}; the planted pattern
    (its own edges and features) linked to every SBM node with probability 0.5; nodes
    shuffled. Returns (edge_index [2, E] both directions, features [N], labels [N])."""
    sizes = rng.integers(5, 35, size=5)
    community = np.repeat(np.arange(5), sizes)
    n_sbm, n_pat = len(community), len(pattern)
    n = n_sbm + n_pat
    prob = np.where(community[:, None] == community[None, :], 0.5, 0.35)
    adj = np.zeros((n, n), dtype=bool)
    adj[:n_sbm, :n_sbm] = rng.random((n_sbm, n_sbm)) < prob
    adj[n_sbm:, n_sbm:] = pattern
    adj[n_sbm:, :n_sbm] = rng.random((n_pat, n_sbm)) < 0.5
    adj = np.triu(adj, 1)
    adj = adj | adj.T
    features = np.concatenate([rng.integers(0, 3, size=n_sbm), pattern_features])
    labels = np.concatenate([np.zeros(n_sbm, dtype=np.int64), np.ones(n_pat, dtype=np.int64)])
    perm = rng.permutation(n)
    adj, features, labels = adj[np.ix_(perm, perm)], features[perm], labels[perm]
    src, dst = np.nonzero(adj)
    return np.stack([src, dst]), features, labels


def pattern_dataset(num_graphs, seed):
    """PATTERN-like graphs as Data (edge_index, one-hot features x [n, 3], labels y); the
    pattern is redrawn every 100 graphs, as in the recipe."""
    rng = np.random.default_rng(seed)
    graphs = []
    for g in range(num_graphs):
        if g % 100 == 0:
            size = rng.integers(5, 35)
            pattern = np.triu(rng.random((size, size)) < 0.5, 1)
            pattern = pattern | pattern.T
            pattern_features = rng.integers(0, 3, size=size)
        e, f, y = pattern_graph(rng, pattern, pattern_features)
        graphs.append(Data(edge_index=torch.from_numpy(e), x=F.one_hot(torch.from_numpy(f), 3).float(),
                           y=torch.from_numpy(y)))
    return graphs


def pattern_batches(graphs, batch_size):
    """Batches of consecutive graphs (torch_geometric Batch: edge_index, x, y, ptr)."""
    return [Batch.from_data_list(graphs[b:b + batch_size]) for b in range(0, len(graphs), batch_size)]


class DeviceBatcher:
    """Batches of a fixed set of graphs, formed anew every epoch on the device as a shuffling
    DataLoader forms them (same contents, same order of nodes and edges), from the graphs held
    there once: the epoch's shuffled order is drawn on the host and copied once, then each
    batch is a few gathers with sizes known on the host: no loader processes, no host round
    trip. Yields objects with a Batch's x, y, edge_index, ptr and num_nodes."""

    def __init__(self, graphs, batch_size, device, seed):
        self.nodes = torch.tensor([g.num_nodes for g in graphs])
        self.edges = torch.tensor([g.num_edges for g in graphs])
        starts = [F.pad(c.cumsum(0)[:-1], (1, 0)).to(device) for c in (self.nodes, self.edges)]
        self.node_start, self.edge_start = starts
        self.device_nodes, self.device_edges = self.nodes.to(device), self.edges.to(device)
        self.x = torch.cat([g.x for g in graphs]).to(device)
        self.y = torch.cat([g.y for g in graphs]).to(device)
        self.edge_index = torch.cat([g.edge_index for g in graphs], 1).to(device)  # each graph's own ids
        self.batch_size, self.device = batch_size, device
        self.generator = torch.Generator().manual_seed(seed)

    def __iter__(self):
        order = torch.randperm(len(self.nodes), generator=self.generator)
        device_order = order.to(self.device)
        arange = lambda n: torch.arange(n, device=self.device)  # noqa: E731
        for b in range(0, len(order), self.batch_size):
            ids, device_ids = order[b:b + self.batch_size], device_order[b:b + self.batch_size]
            n, e = int(self.nodes[ids].sum()), int(self.edges[ids].sum())
            nodes, edges = self.device_nodes[device_ids], self.device_edges[device_ids]
            ptr = F.pad(nodes.cumsum(0), (1, 0))
            edge_ptr = F.pad(edges.cumsum(0), (1, 0))
            node_graph = arange(ids.numel()).repeat_interleave(nodes, output_size=n)
            edge_graph = arange(ids.numel()).repeat_interleave(edges, output_size=e)
            node = self.node_start[device_ids][node_graph] + arange(n) - ptr[node_graph]
            edge = self.edge_start[device_ids][edge_graph] + arange(e) - edge_ptr[edge_graph]
            yield SimpleNamespace(x=self.x[node], y=self.y[node], edge_index=self.edge_index[:, edge] + ptr[edge_graph],
                                  ptr=ptr, num_nodes=n)


def _lines(path):
    with gzip.open(path, "rt") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def citation_graph(data, name, seed):
    """(edge_index both directions, features, labels, train mask) of a Planetoid graph."""
    folder = os.path.join(data, name)
    pairs = np.array([line.split() for line in _lines(os.path.join(folder, "planetoid_edges.tsv.gz"))], dtype=np.int64)
    labels = np.array([int(v) for v in _lines(os.path.join(folder, "planetoid_labels.txt.gz"))])
    split = _lines(os.path.join(folder, "planetoid_split.txt.gz"))
    n = len(labels)
    features_path = os.path.join(folder, "planetoid_features_csr.npz")
    if os.path.exists(features_path):
        with np.load(features_path, allow_pickle=False) as z:
            rows = np.repeat(np.arange(n), np.diff(z["indptr"]))
            x = np.zeros(tuple(z["shape"]), dtype=np.float32)
            x[rows, z["indices"]] = z["data"]
    else:  # Pubmed's 500 TF-IDF features are not in the data folder
        x = np.random.default_rng(seed).random((n, 500), dtype=np.float32)
    edge_index = np.concatenate([pairs.T, pairs.T[::-1]], axis=1)
    train = np.array([s == "train" for s in split]) & (labels >= 0)
    return (torch.from_numpy(np.ascontiguousarray(edge_index)), torch.from_numpy(x),
            torch.from_numpy(np.maximum(labels, 0)), torch.from_numpy(train))


def sampled_graph(data, name, seed):
    """(edge_index, num_nodes) of the graph gat-sampled trains on: a SNAP edge list of the data
    folder (run_bench.py's file for it), or `synthetic`."""
    if name == "synthetic":
        g = torch.Generator().manual_seed(seed)
        return torch.randint(0, 2000, (2, 20000), generator=g), 2000
    import run_bench
    spec = run_bench.GRAPHS[name]
    src, dst, n = peers.read_edge_list(os.path.join(data, spec["file"]), spec.get("nodes"))
    return torch.stack([torch.from_numpy(src), torch.from_numpy(dst)]), n


class NeighbourSampler:
    """Uniform neighbour sampling without replacement, hop by hop, on the edges' device, as
    torch_geometric's NeighborLoader samples (which needs pyg-lib or torch-sparse, neither on
    PyPI for this torch): each hop draws up to its fanout of the in-neighbours of each node the
    previous hop added. The subgraph's nodes are the seeds, then each hop's new nodes; its edges
    are the sampled ones, in local ids."""

    def __init__(self, edge_index, num_nodes, fanouts, seed):
        self.device = edge_index.device
        self.col = edge_index[0, torch.argsort(edge_index[1], stable=True)]
        self.rowptr = torch.cat([edge_index.new_zeros(1), torch.bincount(edge_index[1], minlength=num_nodes).cumsum(0)])
        self.fanouts = fanouts
        self.local = torch.full((num_nodes,), -1, dtype=torch.int64, device=self.device)  # -1: not in the subgraph
        self.generator = torch.Generator(self.device).manual_seed(seed)

    def sample(self, seeds):
        """(the subgraph's nodes [n] as global ids, its edge_index [2, e] in local ids)."""
        local, arange = self.local, lambda *a: torch.arange(*a, device=self.device)
        local[seeds] = arange(seeds.numel())
        nodes, frontier, src, dst, count = [seeds], seeds, [], [], seeds.numel()
        for fanout in self.fanouts:
            start = self.rowptr[frontier]
            degree = self.rowptr[frontier + 1] - start
            row = torch.repeat_interleave(arange(frontier.numel()), degree)
            rank = arange(row.numel()) - (degree.cumsum(0) - degree)[row]  # each candidate's place in its row
            # Rows stay in order and each is shuffled: sort by row + a uniform draw in [0, 1).
            shuffled = torch.argsort(row.double() + torch.rand(row.numel(), dtype=torch.float64, device=self.device,
                                                               generator=self.generator))
            kept = shuffled[rank < fanout]
            u = self.col[start[row[kept]] + rank[kept]]
            new = torch.unique(u[local[u] < 0])
            local[new] = arange(count, count + new.numel())
            count += new.numel()
            src.append(local[u])
            dst.append(local[frontier[row[kept]]])
            nodes.append(new)
            frontier = new
        nodes = torch.cat(nodes)
        local[nodes] = -1
        return nodes, torch.stack([torch.cat(src), torch.cat(dst)])


class Ahead:
    """The steps of steps() made one ahead of their use, by a thread on a side stream, as a
    DataLoader's workers run ahead of training: a step's sampling or batching and its graph's
    preparation, which wait on the GPU, then overlap the previous step's training instead of
    draining it. The training stream waits for each step's event; the steps stay referenced
    until it has finished them all (their memory belongs to the side stream). On the CPU the
    steps come as made."""

    def __init__(self, steps, device):
        self.steps, self.device = steps, device

    def __call__(self):
        if self.device.type != "cuda":
            yield from self.steps()
            return
        made = queue.Queue(maxsize=1)
        main, side = torch.cuda.current_stream(self.device), torch.cuda.Stream(self.device)
        side.wait_stream(main)  # the inputs the steps read were made on the training stream

        def work():
            try:
                with torch.cuda.stream(side):
                    for step in self.steps():
                        ready = torch.cuda.Event()
                        ready.record(side)
                        made.put((step, ready))
                made.put(None)
            except BaseException as e:  # raised again in the training thread
                made.put(e)
        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        kept = []
        while (item := made.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            step, ready = item
            main.wait_event(ready)
            kept.append(step)
            yield step
        worker.join()
        main.synchronize()


def synthetic_citation_graph(seed):
    g = torch.Generator().manual_seed(seed)
    n, e = 200, 800
    pairs = torch.randint(0, n, (2, e), generator=g)
    return (torch.cat([pairs, pairs.flip(0)], 1), torch.rand(n, 32, generator=g), torch.randint(0, 4, (n,), generator=g),
            torch.rand(n, generator=g) < 0.3)


# --- models -------------------------------------------------------------------------------

class GraphTransformer(torch.nn.Module):
    def __init__(self, nn, in_dim, hidden, heads, layers, classes):
        super().__init__()
        self.embed = torch.nn.Linear(in_dim, hidden)
        self.convs = torch.nn.ModuleList(nn.TransformerConv(hidden, hidden // heads, heads=heads) for _ in range(layers))
        self.out = torch.nn.Linear(hidden, classes)

    def forward(self, x, graph):
        x = self.embed(x)
        for conv in self.convs:
            x = conv(x, graph).relu()
        return self.out(x)


class GAT(torch.nn.Module):
    def __init__(self, nn, in_dim, classes):
        super().__init__()
        self.conv1 = nn.GATConv(in_dim, 8, heads=8, dropout=0.6)
        self.conv2 = nn.GATConv(64, classes, heads=1, concat=False, dropout=0.6)

    def forward(self, x, graph):
        x = F.dropout(x, 0.6, self.training)
        x = F.elu(self.conv1(x, graph))
        x = F.dropout(x, 0.6, self.training)
        return self.conv2(x, graph)


def pyg_graph(edge_index, num_nodes, device):
    edge_index = edge_index.to(device)
    edge_index = edge_index[:, torch.sort(edge_index[1], stable=True).indices]
    return EdgeIndex(edge_index, sparse_size=(num_nodes, num_nodes), sort_order="col")


def pyg_edges_in(mode, edges):
    """PyG's graph in `mode`: its EdgeIndex eagerly; the plain sorted edge_index tensor under
    torch.compile and capture, where PyG 2.8's EdgeIndex fails with torch 2.11 (dynamo:
    "'Index' object has no attribute '_data'")."""
    return edges if mode == "eager" or not isinstance(edges, EdgeIndex) else edges.as_tensor()


def twin_models(make):
    """(PyG model, dfgnn model) with the same weights."""
    theirs = make(pyg_nn)
    ours = make(dfgnn.nn)
    ours.load_state_dict(theirs.state_dict())
    return theirs, ours


# --- timing -------------------------------------------------------------------------------

class Clock:
    """Intervals on the device: CUDA events (read once the epoch is done), or wall clock."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def mark(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def ms(self, start, stop):
        return start.elapsed_time(stop) if self.cuda else 1e3 * (stop - start)

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()


class Captured:
    """Training steps as CUDA graphs: each step (its index in the epoch) captured once, after
    PyTorch's warm-up on a side stream, as forward, loss, backward and the optimizer's step
    (Adam with capturable=True), and replayed after; the graphs share one memory pool (they
    replay in the order they were captured). The gradients are zeroed inside each graph, so a
    replay accumulates nothing from the last."""

    def __init__(self, loss_of, opt):
        self.loss_of, self.opt, self.graphs, self.pool = loss_of, opt, {}, None

    def __call__(self, i, x, graph, y, rows):
        if i not in self.graphs:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    self.opt.zero_grad(set_to_none=False)
                    self.loss_of(x, graph, y, rows).backward()
                    self.opt.step()
            torch.cuda.current_stream().wait_stream(side)
            cuda_graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(cuda_graph, pool=self.pool):
                self.opt.zero_grad(set_to_none=False)
                self.loss_of(x, graph, y, rows).backward()
                self.opt.step()
            self.graphs[i], self.pool = cuda_graph, cuda_graph.pool()
        self.graphs[i].replay()


def kernel_ms(run_epoch):
    """The GPU time of one run_epoch(), kernels and copies (torch.profiler; inside CUDA graphs
    too): what the epoch would take if the host never kept the GPU waiting."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run_epoch()
        torch.cuda.synchronize()
    return sum(e.self_device_time_total for e in prof.key_averages()) / 1e3


def train(model, epoch_steps, prepare, device, epochs, warmup, ahead=False, autocast=None, mode="eager"):
    """Runs warmup + epochs epochs; each iterates epoch_steps() over (x, edges, y, rows): the
    step's graph is prepare(edges), the loss is taken over the output rows `rows` (an index
    tensor, or None for all) against labels y. Per-epoch medians, prepare's time as
    preprocess_ms. ahead: each step made and prepared one step ahead (Ahead), on the GPU on a
    side stream, where prepare's time is then measured. On the GPU, Adam is the fused one (one
    kernel for all parameters). autocast: the forward and loss under torch.autocast in that
    dtype (None: float32 throughout). mode: "eager"; "compiled", the forward and loss through
    torch.compile (default mode; the backward is its compiled graph too); "captured", each step
    a CUDA graph (Captured; the steps must be the same tensors every epoch; no forward and
    backward split). On the GPU, kernel_ms: one more epoch's GPU time (kernel_ms)."""
    clock = Clock(device)
    captured = mode == "captured"
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=device.type == "cuda", capturable=captured)
    model.train()

    def loss_of(x, graph, y, rows):
        with torch.autocast(device.type, dtype=autocast, enabled=autocast is not None):
            out = model(x, graph)
            return F.cross_entropy(out if rows is None else out.index_select(0, rows), y)
    if mode == "compiled":
        torch._dynamo.reset()
        loss_of = torch.compile(loss_of)
    replay = Captured(loss_of, opt) if captured else None

    def prepared():
        for x, edges, y, rows in epoch_steps():
            p = clock.mark()
            graph = prepare(edges)
            yield x, graph, y, rows, p, clock.mark()
    steps = Ahead(prepared, device) if ahead else prepared

    def epoch():
        marks = []
        for i, (x, graph, y, rows, p, q) in enumerate(steps()):
            t0 = clock.mark()
            if captured:
                replay(i, x, graph, y, rows)
                marks.append((p, q, t0, None, None))
                continue
            loss = loss_of(x, graph, y, rows)
            t1 = clock.mark()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            t2 = clock.mark()
            opt.step()
            marks.append((p, q, t0, t1, t2))
        return marks

    records = []
    for e in range(warmup + epochs):
        clock.sync()
        start = time.perf_counter()
        marks = epoch()
        clock.sync()
        epoch_ms = 1e3 * (time.perf_counter() - start)
        if e >= warmup:
            records.append({"preprocess_ms": sum(clock.ms(p, q) for p, q, _, _, _ in marks),
                            "forward_ms": None if captured else sum(clock.ms(a, b) for _, _, a, b, _ in marks),
                            "backward_ms": None if captured else sum(clock.ms(b, c) for _, _, _, b, c in marks),
                            "epoch_ms": epoch_ms})
    result = {key: peers.median(r[key] for r in records) for key in records[0]}
    result["kernel_ms"] = kernel_ms(epoch) if device.type == "cuda" else None
    return result


def as_given(graph):
    return graph


def timed(device, fn):
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    result = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return result, 1e3 * (time.perf_counter() - start)


def compare(theirs, ours, x, edge_index, graph):
    """Largest |difference| of the eval-mode outputs relative to their magnitude."""
    theirs.eval()
    ours.eval()
    with torch.no_grad():
        a, b = theirs(x, edge_index), ours(x, graph)
    return ((a - b).abs().max() / a.abs().max().clamp_min(1e-30)).item()


def bench_gt(args, device, workload):
    dataset = pattern_dataset(args.batches * args.batch_size, args.seed)
    batches = pattern_batches(dataset, args.batch_size)  # on the host: only gt trains on them as formed here
    torch.manual_seed(args.seed)
    theirs, ours = twin_models(lambda nn: GraphTransformer(nn, 3, args.hidden, args.heads, args.layers, 2))
    theirs.to(device)
    ours.to(device)

    def pyg_prep(batch):
        return pyg_graph(batch.edge_index, batch.num_nodes, device)

    def ours_prep(batch):
        graph = dfgnn.Graph.from_batch(batch)
        graph.prepare("gt", args.heads, args.hidden // args.heads, device, backward=True)
        return graph

    if workload == "gt":  # fixed batches: on the device once, for both implementations
        batches = [b.to(device) for b in batches]
    first = batches[0].to(device)
    meta = {"workload": workload, "graph": f"PATTERN-like {args.batches}x{args.batch_size}",
            "nodes": sum(b.num_nodes for b in batches), "edges": sum(b.num_edges for b in batches),
            "model": f"{args.layers} x TransformerConv({args.hidden}, {args.hidden // args.heads}, heads={args.heads})",
            "check_rel_diff": compare(theirs, ours, first.x, pyg_prep(first), ours_prep(first))}

    def run(model, prep, mode):
        if workload == "gt-shuffled":
            loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                pin_memory=device.type == "cuda", persistent_workers=args.workers > 0)

            def epoch(loader=loader):
                for batch in loader:
                    batch = batch.to(device, non_blocking=True)
                    yield batch.x, batch, batch.y, None
            return train(model, epoch, prep, device, args.epochs, args.warmup, workload in args.ahead, args.autocast)
        if workload == "gt-shuffled-gpu":
            batcher = DeviceBatcher(dataset, args.batch_size, device, args.seed)
            return train(model, lambda: ((b.x, b, b.y, None) for b in batcher), prep, device, args.epochs,
                         args.warmup, workload in args.ahead, args.autocast)
        graphs, preprocess_ms = timed(device, lambda: [prep(b) for b in batches])
        steps = [(b.x, pyg_edges_in(mode, g), b.y, None) for b, g in zip(batches, graphs)]
        return {**train(model, lambda: steps, as_given, device, args.epochs, args.warmup, autocast=args.autocast,
                        mode=mode), "preprocess_ms": preprocess_ms}
    return in_modes(meta, args.modes if workload == "gt" else ["eager"], args.rounds,
                    lambda mode: {"pyg": lambda: run(theirs, pyg_prep, mode), "dfgnn": lambda: run(ours, ours_prep, mode)})


def in_modes(meta, modes, rounds, runs):
    """The rows of each mode: runs(mode) ({impl: () -> record}) alternating; a mode an
    implementation cannot run in gives a row with its error."""
    return [{**meta, "mode": mode, **r} for mode in modes for r in peers.alternating(runs(mode), rounds, tolerate=True)]


def bench_gat(args, device, name):
    edge_index, x, y, train_mask = (synthetic_citation_graph(args.seed) if name == "synthetic"
                                    else citation_graph(args.data, name, args.seed))
    torch.manual_seed(args.seed)
    classes = int(y.max()) + 1
    theirs, ours = twin_models(lambda nn: GAT(nn, x.size(1), classes))
    theirs.to(device)
    ours.to(device)
    x, y = x.to(device), y.to(device)
    train_rows = train_mask.nonzero().view(-1).to(device)  # the loss's rows, found once: out[mask] would sync every step

    def ours_prep():
        graph = dfgnn.Graph.from_edge_index(edge_index.to(device), x.size(0))
        looped = graph.with_self_loops()  # the GAT layers' graph (add_self_loops)
        looped.prepare("gat", 8, 8, device, backward=True)
        looped.prepare("gat", 1, classes, device, backward=True)
        return graph

    pyg_edges, pyg_prep_ms = timed(device, lambda: pyg_graph(edge_index, x.size(0), device))
    graph, our_prep_ms = timed(device, ours_prep)
    meta = {"workload": "gat", "graph": name, "nodes": x.size(0),
            "edges": edge_index.size(1), "model": "GATConv(F, 8, heads=8) + GATConv(64, C)",
            "check_rel_diff": compare(theirs, ours, x, pyg_edges, graph)}

    labels = y[train_rows]

    def run(model, g, prep_ms, mode):
        steps = [(x, pyg_edges_in(mode, g), labels, train_rows)] * args.steps_per_epoch
        return {**train(model, lambda: steps, as_given, device, args.epochs, args.warmup, autocast=args.autocast,
                        mode=mode), "preprocess_ms": prep_ms}
    return in_modes(meta, args.modes, args.rounds,
                    lambda mode: {"pyg": lambda: run(theirs, pyg_edges, pyg_prep_ms, mode),
                                  "dfgnn": lambda: run(ours, graph, our_prep_ms, mode)})


def bench_gat_sampled(args, device):
    edge_index, n = sampled_graph(args.data, args.sampled_graph, args.seed)
    g = torch.Generator().manual_seed(args.seed)
    x = torch.rand(n, args.features, generator=g).to(device)
    classes = 8
    y = torch.randint(0, classes, (n,), generator=g).to(device)
    sampler = NeighbourSampler(edge_index.to(device), n, [int(f) for f in args.fanouts.split(",")], args.seed)
    torch.manual_seed(args.seed)
    theirs, ours = twin_models(lambda nn: GAT(nn, args.features, classes))
    theirs.to(device)
    ours.to(device)
    size = min(args.sample_size, n)
    seed_rows = torch.arange(size, device=device)  # the seeds lead the subgraph's nodes

    def pyg_prep(edges):
        return pyg_graph(edges[0], edges[1], device)

    def ours_prep(edges):
        graph = dfgnn.Graph.from_edge_index(edges[0], edges[1])
        looped = graph.with_self_loops()  # the GAT layers' graph (add_self_loops)
        looped.prepare("gat", 8, 8, device, backward=True)
        looped.prepare("gat", 1, classes, device, backward=True)
        return graph

    def epoch():
        order = torch.randperm(n, device=device)
        for step in range(args.sample_steps):
            seeds = order[step * size:(step + 1) * size]
            nodes, sub = sampler.sample(seeds)
            yield x[nodes], (sub, nodes.numel()), y[seeds], seed_rows[:seeds.numel()]

    check_x, check_edges, _, _ = next(epoch())
    meta = {"workload": "gat-sampled", "graph": f"{args.sampled_graph} ({args.sample_steps} x {size} seeds, "
                                                f"fanouts {args.fanouts})", "nodes": n, "edges": edge_index.size(1),
            "model": f"GATConv({args.features}, 8, heads=8) + GATConv(64, {classes})",
            "check_rel_diff": compare(theirs, ours, check_x, pyg_prep(check_edges), ours_prep(check_edges))}
    ahead = "gat-sampled" in args.ahead

    def run(model, prep):
        return train(model, epoch, prep, device, args.epochs, args.warmup, ahead, args.autocast)
    return in_modes(meta, ["eager"], args.rounds,
                    lambda mode: {"pyg": lambda: run(theirs, pyg_prep), "dfgnn": lambda: run(ours, ours_prep)})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--workloads", default="gt,gt-shuffled,gt-shuffled-gpu,gat,gat-sampled")
    p.add_argument("--datasets", default="cora,pubmed")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1,
                   help="train each implementation this many times in turn, the medians of the rounds' medians")
    p.add_argument("--batches", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--steps-per-epoch", type=int, default=1, help="gat: optimizer steps per epoch")
    p.add_argument("--workers", type=int, help="gt-shuffled: DataLoader processes (default: 4 on the GPU, else 0)")
    p.add_argument("--sampled-graph", default="web-NotreDame")
    p.add_argument("--features", type=int, default=64, help="gat-sampled: random features per node")
    p.add_argument("--sample-size", type=int, default=1024, help="gat-sampled: seed nodes per step")
    p.add_argument("--sample-steps", type=int, default=32, help="gat-sampled: steps per epoch")
    p.add_argument("--fanouts", default="10,10", help="gat-sampled: neighbours drawn per node, per hop")
    p.add_argument("--ahead", default="gat-sampled",
                   help="workloads (of gt-shuffled, gt-shuffled-gpu, gat-sampled) whose steps are made and prepared "
                        "one step ahead on a side stream")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--autocast", choices=["bf16", "f16"], help="train under torch.autocast in this type (both "
                   "implementations; default: float32)")
    p.add_argument("--modes", default="eager",
                   help="gt and gat: train in each of eager, compiled (torch.compile's default mode) and captured "
                        "(each step a CUDA graph; GPU only); the other workloads run eagerly")
    p.add_argument("--json")
    p.add_argument("--tiny", action="store_true")
    args = p.parse_args()
    if args.tiny:
        args.batches, args.batch_size, args.layers, args.hidden = 2, 4, 2, 32
        args.epochs, args.warmup = min(args.epochs, 2), min(args.warmup, 1)
        args.sampled_graph, args.sample_size, args.sample_steps = "synthetic", 64, 2
    device = torch.device(args.device)
    args.autocast = {"bf16": torch.bfloat16, "f16": torch.float16, None: None}[args.autocast]
    if args.workers is None:
        args.workers = 4 if device.type == "cuda" else 0
    workloads = args.workloads.split(",")
    gt_workloads = ("gt", "gt-shuffled", "gt-shuffled-gpu")
    unknown = set(workloads) - {*gt_workloads, "gat", "gat-sampled"}
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}")
    args.modes = args.modes.split(",")
    if set(args.modes) - {"eager", "compiled", "captured"} or "captured" in args.modes and device.type != "cuda":
        p.error(f"--modes takes eager, compiled and (on the GPU) captured, not {args.modes}")
    args.ahead = set(filter(None, args.ahead.split(",")))
    if args.ahead - {"gt-shuffled", "gt-shuffled-gpu", "gat-sampled"}:
        p.error(f"--ahead takes workloads that prepare a graph per step, not {sorted(args.ahead)}")
    rows = []
    for workload in gt_workloads:
        if workload in workloads:
            rows += bench_gt(args, device, workload)
    if "gat" in workloads:
        for name in args.datasets.split(","):
            rows += bench_gat(args, device, name)
    if "gat-sampled" in workloads:
        rows += bench_gat_sampled(args, device)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"# {gpu}, torch {torch.__version__}, median of {args.epochs} epochs after {args.warmup} warm-up"
          + (f", median of {args.rounds} alternating rounds" if args.rounds > 1 else ""))
    print("| workload | graph | mode | impl | preprocess ms | forward ms | backward ms | epoch ms | kernel ms "
          "| vs PyG eager | vs PyG same mode | check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    pyg = {(r["workload"], r["graph"], r["mode"]): r.get("epoch_ms") for r in rows if r["impl"] == "pyg"}

    def cell(x, form="{:.2f}"):
        return "-" if x is None else form.format(x)
    for r in rows:
        r["gpu"], r["autocast"] = gpu, str(args.autocast or "off").replace("torch.", "")
        if "error" in r:
            print(f"| {r['workload']} | {r['graph']} | {r['mode']} | {r['impl']} | {r['error']} |")
            continue
        key = (r["workload"], r["graph"])
        eager, same = pyg.get((*key, "eager")), pyg.get((*key, r["mode"]))
        r["speedup_epoch"] = eager / r["epoch_ms"] if eager else None
        r["speedup_same_mode"] = same / r["epoch_ms"] if same else None
        print(f"| {r['workload']} | {r['graph']} | {r['mode']} | {r['impl']} | {cell(r['preprocess_ms'])} | "
              f"{cell(r['forward_ms'])} | {cell(r['backward_ms'])} | {cell(r['epoch_ms'])} | {cell(r['kernel_ms'])} | "
              f"{cell(r['speedup_epoch'], '{:.2f}x')} | {cell(r['speedup_same_mode'], '{:.2f}x')} | "
              f"{r['check_rel_diff']:.1e} |")
    if args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    worst = max(r["check_rel_diff"] for r in rows)
    if worst > 1e-3:
        print(f"train_bench: the two implementations differ by {worst:.2e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
