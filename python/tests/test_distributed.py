"""dfgnn.distributed on P = 1..4 CPU processes (torch.distributed with gloo), and with NCCL on
two GPUs where there are two: GT, AGNN (x_dst left out and given), GAT and GATv2 forward and backward on a
destination-partitioned graph, the ops in two calls (overlap, the default) and in one, equal
one process's, with edge values and edge features, under Graph.partition's ranges and a
scattered partition that leaves a rank without rows: out and the
attention weights within 1e-6 normwise; the gradients within 1e-6 in one call and 4e-6 split
(GATv2's da and AGNN's dbeta, summed over the ranks, 1e-5): split, a rank sums a row's gradient in parts (its
inner and outer edges' calls, the returned halo rows) where one process sums it in one walk, and
GAT's del and der cancel (their softmax-Jacobian terms sum to about 0) while the parts do not, so
the parts' rounding shows: up to 2.6e-6 from one process (GAT's der; 2.2e-6 from float64, where
one process is at 1e-6).
Two runs bitwise equal; the layers (TransformerConv, GATConv, GATv2Conv with edge_attr and self
loops; AGNNConv) likewise, their parameters' gradients summed over the ranks; attention dropout (GT's and
GATv2's ops, the layers), drawn by the graph's edge_ids, the same as one process's; bad input
(to the constructor on every rank; tensors that are not the rank's rows or edges) raises
ValueError. With NCCL also GT in bf16, within the mixed-precision contract
of float64 (1e-2 forward, 2e-2 gradients)."""

import gc
import os
import socket
import weakref

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import dfgnn
import dfgnn.distributed as dd
import dfgnn.nn
import reference as ref

N, H, D = 120, 2, 5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def inputs(model, edges, gen):
    rand = lambda *shape: torch.randn(*shape, generator=gen)  # noqa: E731
    e = edges.size(1)
    if model == "gt":
        return {"q": rand(N, H, D), "k": rand(N, H, D), "v": rand(N, H, D)}, rand(e, H, D)
    if model == "gat":
        return {"el": rand(N, H), "er": rand(N, H), "v": rand(N, H, D)}, rand(e, H)
    return {"xl": rand(N, H, D), "xr": rand(N, H, D), "a": rand(H, D) / D ** 0.5}, rand(e, H, D)


def call(module, model, graph, t, **kw):
    f = getattr(module, f"{model}_attention")
    return f(graph, *t.values(), **kw)


def normwise(got, want):
    assert got.shape == want.shape
    if want.numel() == 0:  # a rank without rows
        return 0.0
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


def expect_rank_gradients(mine, ones, rows, head, bound, what):
    """This rank's gradients against one process's: the head argument's (`head`: this rank's
    share) summed over the ranks within 1e-5, the others' its rows within `bound` (see the
    module's docstring)."""
    for k, t in mine.items():
        if k == head:
            total = t.grad.clone()
            dist.all_reduce(total)
            assert normwise(total, ones[k].grad) <= 1e-5, f"{what} d{k}"
        else:
            assert normwise(t.grad, ones[k].grad[rows]) <= bound, f"{what} d{k}"


def worker(rank, ranks, port, scattered, backend="gloo"):
    """One rank's checks: gloo on the CPU, or NCCL with rank r on GPU r."""
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dev = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    dist.init_process_group(backend, rank=rank, world_size=ranks)
    try:
        edges = ref.random_graph(N, 900, 5, 300).to(dev)  # rows without in-edges, a hub row
        whole = dfgnn.Graph.from_edge_index(edges, N)
        owner = (torch.arange(N, device=dev) * 7 % ranks) if scattered else whole.partition(ranks).to(dev)
        if scattered and ranks == 4:
            owner[owner == 2] = 3  # rank 2 holds no rows
        mask = owner[edges[1]] == rank
        graph = split = dd.DistributedGraph(edges[:, mask], owner, edge_ids=mask.nonzero().flatten())
        assert torch.equal(graph.rows, (owner == rank).nonzero().flatten())
        one_call = dd.DistributedGraph(edges[:, mask], owner, edge_ids=mask.nonzero().flatten(), overlap=False)
        for model in ("gt", "gat", "gatv2"):
            gen = torch.Generator().manual_seed(7)
            full, e = inputs(model, edges, gen)
            w = torch.rand(edges.size(1), generator=gen) + 0.5
            grad = torch.randn(N, H, D, generator=gen)
            full, e, w, grad = {k: t.to(dev) for k, t in full.items()}, e.to(dev), w.to(dev), grad.to(dev)
            # One process on the whole graph; GT and GATv2 with dropout, drawn by the whole graph's edge ids.
            kw = {} if model == "gat" else {"dropout": 0.3, "seed": 11}
            ones = {k: v.clone().requires_grad_() for k, v in full.items()}
            e1 = e.clone().requires_grad_()
            out = call(dfgnn, model, whole, ones, edge_values=w, edge_features=e1, **kw)
            out.backward(grad)
            for g in (split, one_call):  # the ops in two calls, and in one
                # This rank's rows (a head vector whole) and its edges.
                results = []
                for _ in range(2):
                    mine = {k: (v if k == "a" else v[g.rows]).clone().requires_grad_() for k, v in full.items()}
                    em = e[mask].clone().requires_grad_()
                    got = call(dd, model, g, mine, edge_values=w[mask], edge_features=em, **kw)
                    got.backward(grad[g.rows])
                    results.append((got, mine, em))
                got, mine, em = results[0]
                assert normwise(got, out[g.rows]) <= 1e-6, f"{model} out"
                expect_rank_gradients(mine, ones, g.rows, "a", 4e-6 if g is split else 1e-6, model)
                assert normwise(em.grad, e1.grad[mask]) <= 1e-6, f"{model} dE"
                # The attention weights: each call's rescaled to the merged softmax, in edge_index's order.
                _, want = call(dfgnn, model, whole, full, edge_values=w, edge_features=e, return_attention_weights=True,
                               **kw)
                _, weights = call(dd, model, g, {k: t.detach() for k, t in mine.items()}, edge_values=w[mask],
                                  edge_features=em.detach(), return_attention_weights=True, **kw)
                assert normwise(weights, want[mask]) <= 1e-6, f"{model} weights"
                again = results[1]
                assert torch.equal(again[0], got) and all(torch.equal(again[1][k].grad, mine[k].grad) for k in mine)
        # AGNN: x_dst left out (x is both ends of an edge; its gradient takes both) and given, with
        # edge values and dropout; beta's gradient this rank's share.
        for own_dst in (False, True):
            gen = torch.Generator().manual_seed(13)
            full = {"x": torch.randn(N, H, D, generator=gen), "beta": torch.rand(H, generator=gen) + 0.5}
            if own_dst:
                full["x_dst"] = torch.randn(N, H, D, generator=gen)
            w, grad = torch.rand(edges.size(1), generator=gen) + 0.5, torch.randn(N, H, D, generator=gen)
            full, w, grad = {k: t.to(dev) for k, t in full.items()}, w.to(dev), grad.to(dev)
            kw = {"dropout": 0.3, "seed": 11}
            ones = {k: v.clone().requires_grad_() for k, v in full.items()}
            out = dfgnn.agnn_attention(whole, ones["x"], ones["beta"], x_dst=ones.get("x_dst"), edge_values=w, **kw)
            out.backward(grad)
            for g in (split, one_call):
                mine = {k: (v if k == "beta" else v[g.rows]).clone().requires_grad_() for k, v in full.items()}
                got = dd.agnn_attention(g, mine["x"], mine["beta"], x_dst=mine.get("x_dst"), edge_values=w[mask], **kw)
                got.backward(grad[g.rows])
                assert normwise(got, out[g.rows]) <= 1e-6, f"agnn out (x_dst {own_dst})"
                expect_rank_gradients(mine, ones, g.rows, "beta", 4e-6 if g is split else 1e-6,
                                      f"agnn (x_dst {own_dst})")
        if dev.type == "cuda":  # bf16 on the GPUs: the contract against float64 on the rounded inputs
            gen = torch.Generator().manual_seed(12)
            full = {k: torch.randn(N, H, D, generator=gen).to(dev, torch.bfloat16) for k in "qkv"}
            grad = torch.randn(N, H, D, generator=gen).to(dev, torch.bfloat16)
            d64 = {k: t.double().cpu().requires_grad_() for k, t in full.items()}
            want = ref.gt(edges.cpu(), *d64.values(), D ** -0.5)
            want.backward(grad.double().cpu())
            mine = {k: t[graph.rows].clone().requires_grad_() for k, t in full.items()}
            got = dd.gt_attention(graph, *mine.values())
            got.backward(grad[graph.rows])
            assert normwise(got.double().cpu(), want[graph.rows.cpu()].detach()) <= 1e-2, "bf16 out"
            for k, t in mine.items():
                assert normwise(t.grad.double().cpu(), d64[k].grad[graph.rows.cpu()]) <= 2e-2, f"bf16 d{k}"
        # The layers on this rank's rows of x; parameters' gradients summed over the ranks, their
        # errors over the largest of them (a key bias's gradient is 0 in exact arithmetic).
        gen = torch.Generator().manual_seed(8)
        x, attr = torch.randn(N, 6, generator=gen).to(dev), torch.randn(edges.size(1), 3, generator=gen).to(dev)
        for name in ("TransformerConv", "GATConv", "GATv2Conv"):
            layers = []
            for _ in range(2):
                torch.manual_seed(3)
                layers.append(getattr(dfgnn.nn, name)(6, 4, heads=2, edge_dim=3, dropout=0.3).to(dev))
            one, many = layers
            x1 = x.clone().requires_grad_()
            torch.manual_seed(9)  # the dropout seed each call draws: one process's mask, self loops' too
            out = one(x1, edges, attr)
            grad = torch.randn(out.shape, generator=gen).to(dev)
            out.backward(grad)
            xm = x[graph.rows].clone().requires_grad_()
            torch.manual_seed(9)
            got = many(xm, graph, attr[mask])
            got.backward(grad[graph.rows])
            assert normwise(got, out[graph.rows]) <= 1e-6, f"{name} out"
            assert normwise(xm.grad, x1.grad[graph.rows]) <= 1e-6, f"{name} dx"
            scale = max(q.grad.abs().max().item() for q in one.parameters())
            for (key, p), q in zip(many.named_parameters(), one.parameters()):
                total = p.grad.clone()
                dist.all_reduce(total)
                assert (total - q.grad).abs().max().item() <= 1e-5 * scale, f"{name} d{key}"
        # AGNNConv: x's rows [rows | halo] as the sources, the rows themselves as x_dst.
        layers = [dfgnn.nn.AGNNConv().to(dev) for _ in range(2)]
        one, many = layers
        x1, xm = x.clone().requires_grad_(), x[graph.rows].clone().requires_grad_()
        out = one(x1, edges)
        grad = torch.randn(out.shape, generator=gen).to(dev)
        out.backward(grad)
        got = many(xm, graph)
        got.backward(grad[graph.rows])
        assert normwise(got, out[graph.rows]) <= 1e-6, "AGNNConv out"
        assert normwise(xm.grad, x1.grad[graph.rows]) <= 1e-6, "AGNNConv dx"
        total = many.beta.grad.clone()
        dist.all_reduce(total)
        assert normwise(total, one.beta.grad) <= 1e-5, "AGNNConv dbeta"
        # Bad input, raised on every rank: the ranks disagree on the node count; an edge into
        # another rank's row; a rank outside the group; dropout.
        if ranks > 1:
            with pytest.raises(ValueError, match="the ranks disagree on the node count or the partition"):
                dd.DistributedGraph(edges[:, mask], owner[: N - 1] if rank == ranks - 1 else owner)
            with pytest.raises(ValueError, match=r"rank 0: edge \d+ goes into node \d+, a row of rank"):
                dd.DistributedGraph(edges if rank == 0 else edges[:, mask], owner)
        with pytest.raises(ValueError, match=f"node 3 has rank {ranks}, outside"):
            bad = owner.clone()
            bad[3] = ranks
            dd.DistributedGraph(edges[:, mask], bad)
        if ranks > 1:  # a malformed argument on one rank: the others raise too, none waits
            with pytest.raises(ValueError, match="rank 1: owner is not a vector of ranks"):
                dd.DistributedGraph(edges[:, mask], "all" if rank == 1 else owner)
            with pytest.raises(ValueError, match=r"rank 0: edge_index must be a \[2, E\] tensor"):
                dd.DistributedGraph(edges[0] if rank == 0 else edges[:, mask], owner)
            with pytest.raises(ValueError, match="rank 1: overlap must be True or False, got 'yes'"):
                dd.DistributedGraph(edges[:, mask], owner, overlap="yes" if rank == 1 else True)
        # Tensors that are not this rank's rows or edges.
        n, e_r = graph.num_rows, int(mask.sum())
        with pytest.raises(ValueError, match=f"k has {n + 1} rows, but this rank has {n} rows"):
            dd.gt_attention(graph, *(torch.zeros(n + (i > 0), H, D, device=dev) for i in range(3)))
        with pytest.raises(ValueError, match=f"edge_features has {e_r + 1} rows, but this rank has {e_r} edges"):
            dd.gat_attention(graph, torch.zeros(n, H, device=dev), torch.zeros(n, H, device=dev),
                             torch.zeros(n, H, D, device=dev), edge_features=torch.zeros(e_r + 1, H, device=dev))
        plain = dd.DistributedGraph(edges[:, mask], owner)  # no edge_ids: no dropout
        with pytest.raises(ValueError, match="dropout on a DistributedGraph needs its edge_ids"):
            dd.gt_attention(plain, *(torch.zeros(graph.num_rows, H, D, device=dev) for _ in range(3)), dropout=0.1)
        with pytest.raises(ValueError, match="GATConv: attention dropout on a DistributedGraph needs its edge_ids"):
            dfgnn.nn.GATConv(6, 4, dropout=0.5).to(dev)(torch.zeros(graph.num_rows, 6, device=dev), plain)
        with pytest.raises(ValueError, match="rank 0: edge_ids must be a vector of"):
            dd.DistributedGraph(edges[:, mask], owner, edge_ids=torch.zeros(3) if rank == 0 else None)
        if ranks > 1:
            with pytest.raises(ValueError, match="edge_ids given on ranks 0 only"):
                dd.DistributedGraph(edges[:, mask], owner, edge_ids=mask.nonzero().flatten() if rank == 0 else None)
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("scattered", [False, True], ids=["ranges", "scattered"])
@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_equals_one_process(ranks, scattered):
    mp.spawn(worker, args=(ranks, free_port(), scattered), nprocs=ranks)


@pytest.mark.skipif(not (torch.cuda.is_available() and torch.cuda.device_count() >= 2 and dist.is_nccl_available()),
                    reason="NCCL on two GPUs")
def test_nccl_on_two_gpus():
    """The same checks with NCCL, rank r on GPU r (the CUDA-native kernels, the exchanges on the
    device)."""
    mp.spawn(worker, args=(2, free_port(), False, "nccl"), nprocs=2)


def test_dropout_ids_outlive_the_graph():
    """The one-call ops' backward reads the dropout ids (the graph's edge_ids) through the local
    graph's plan: its autograd node holds them, so a DistributedGraph collected before the
    backward leaves nothing dangling, and the gradient is the one of a graph kept alive."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        edges = ref.random_graph(N, 900, 5, 300)
        gen = torch.Generator().manual_seed(3)
        q, k, v = (torch.randn(N, H, D, generator=gen) for _ in range(3))
        grads = []
        for collect in (False, True):
            graph = dd.DistributedGraph(edges, torch.zeros(N, dtype=torch.long), edge_ids=torch.arange(edges.size(1)),
                                        overlap=False)
            x = q.clone().requires_grad_()  # k and v need no gradient: no exchange node holds the graph
            out = dd.gt_attention(graph, x, k, v, dropout=0.5, seed=11)
            ids = weakref.ref(graph.graph._dropout_ids[torch.device("cpu")])
            if collect:
                del graph
                gc.collect()
                assert ids() is not None, "the backward's dropout ids went with the graph"
                # Whatever memory the graph gave back, filled with other ids.
                garbage = [torch.full((edges.size(1),), 7 << 40) for _ in range(16)]
            out.backward(torch.ones_like(out))
            grads.append(x.grad)
        assert torch.equal(grads[0], grads[1])
        del garbage
    finally:
        dist.destroy_process_group()


def test_partition():
    """Graph.partition: contiguous ranges of about (E + N) / P in-edges plus nodes (the C++
    partition_by_edges); bad input raises ValueError naming it."""
    edges = ref.random_graph(N, 900, 5, 300)
    graph = dfgnn.Graph.from_edge_index(edges, N)
    degree = torch.bincount(edges[1], minlength=N)
    for ranks in (1, 2, 3, 4):
        owner = graph.partition(ranks)
        assert owner.dtype == torch.int64 and owner.shape == (N,)
        assert bool((owner[1:] >= owner[:-1]).all()) and owner[0] == 0 and int(owner.max()) < ranks
        weight = torch.zeros(ranks, dtype=torch.int64).index_add_(0, owner, degree + 1)
        assert bool(((weight - (edges.size(1) + N) / ranks).abs() <= degree.max() + 1).all())
    with pytest.raises(ValueError, match="ranks must be at least 1, got 0"):
        graph.partition(0)
    with pytest.raises(ValueError, match="the graph is bipartite"):
        dfgnn.Graph.from_edge_index(edges, size=(N + 1, N)).partition(2)
