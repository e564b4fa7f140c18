"""Attention over several ranks on torch.distributed (docs/distributed.md): the destination rows
of a square graph split over the ranks of a process group (gloo on CPU, NCCL on GPUs). A rank
holds its rows' inputs; its call is one bipartite call of the ops over [its rows | its halo],
the halo rows of the source-side inputs (GT k and v, GAT el and v, GATv2 xl) arriving by one
all-to-all per call, and, in the backward, their gradients going back to their owners, which add
them in rank order: results equal one process's (within float32 rounding), bitwise the same
from run to run for a given partition.

    owner = dfgnn.Graph.from_edge_index(edge_index, N).partition(world_size)  # or METIS's
    mine = edge_index[:, owner[edge_index[1]] == rank]      # the in-edges of this rank's rows
    graph = dfgnn.distributed.DistributedGraph(mine, owner)
    out = dfgnn.distributed.gt_attention(graph, q[graph.rows], k[graph.rows], v[graph.rows])

The layers of dfgnn.nn take a DistributedGraph in place of edge_index, and x this rank's rows
[rows, F]: the halo rows of x arrive the same way and the layer runs as a bipartite call (x_src =
[rows | halo], x_dst = rows), self loops and edge_attr (this rank's edges) included; AGNNConv,
whose x is both sides, does not. Replicated parameters (GATv2's a, the layers' weights) get this
rank's share of their gradient: sum them over the ranks (DistributedDataParallel averages them,
so scale the loss by the world size there).
"""

import hashlib

import torch
import torch.distributed as dist

from . import ops
from .graph import Graph

__all__ = ["DistributedGraph", "gt_attention", "gat_attention", "gatv2_attention"]


class DistributedGraph:
    """This rank's share of a square graph whose nodes are split by `owner` ([N], each node's
    rank, the same on every rank of `group`): `edge_index` [2, E_r] holds the in-edges of this
    rank's rows, in the order its edge values and edge features come in. The exchange plan is
    built here once, with two all-to-alls. Every rank of the group must construct it together;
    bad input (an owner vector the ranks disagree on, a rank outside the group, an edge into
    another rank's row) raises ValueError on every rank.

    rows: the global ids of this rank's rows, ascending (its output's rows, and the rows of its
    inputs); halo: the remote sources its rows read, by (owner, id); graph: the local bipartite
    dfgnn.Graph, its rows over [rows | halo]; send_counts, recv_counts: the rows it sends to and
    receives from each rank per exchange.

    edge_ids ([E_r], optional): each of these edges' index in the whole graph's edge order. With
    them attention dropout draws this rank's part of one process's mask on the whole graph, in
    the ops and in the layers (their self loops included); without them both refuse dropout."""

    def __init__(self, edge_index, owner, group=None, edge_ids=None):
        self.group = group
        ranks, rank = dist.get_world_size(group), dist.get_rank(group)
        # Every check ends in the one collective of _agree: a rank that raised before it would
        # leave the others waiting there.
        device = edge_index.device if isinstance(edge_index, torch.Tensor) else torch.device("cpu")
        try:
            owner = torch.as_tensor(owner, device=device).long()
            problem = None
        except (TypeError, ValueError, RuntimeError) as e:
            owner, problem = torch.empty(0, dtype=torch.long, device=device), f"owner is not a vector of ranks: {e}"
        if problem is None:
            try:
                problem = _problem(edge_index, owner, ranks, rank) or _edge_ids_problem(edge_ids, edge_index)
            except (TypeError, ValueError, RuntimeError, IndexError) as e:  # e.g. float ids
                problem = f"edge_index is not a [2, E] tensor of node ids: {e}"
        n_all = owner.numel()
        # With edge_ids: this rank's edge count and its self loops' ids, which the layers' mask needs.
        mine = None
        if problem is None and edge_ids is not None:
            mine = edge_index.size(1), edge_ids[(edge_index[0] == edge_index[1]).to(edge_ids.device)].tolist()
        everyone = _agree(problem, n_all, owner, group, mine)
        src, dst = edge_index.long()
        self.rows = (owner == rank).nonzero().flatten()
        n = self.rows.numel()
        local = torch.full((n_all,), -1, dtype=torch.long, device=device)
        local[self.rows] = torch.arange(n, device=device)
        # The halo by (owner, id), so that each peer's part is contiguous.
        remote = src[owner[src] != rank]
        key = torch.unique(owner[remote] * n_all + remote)
        self.halo = key % max(n_all, 1)
        recv = torch.bincount(key // max(n_all, 1), minlength=ranks)
        # Each owner learns which of its rows this rank reads: the counts, then the ids.
        send = torch.empty_like(recv)
        dist.all_to_all_single(send, recv, group=group)
        self.send_counts, self.recv_counts = send.tolist(), recv.tolist()  # rows to / from each rank
        requested = self.halo.new_empty(sum(self.send_counts))
        dist.all_to_all_single(requested, self.halo, self.send_counts, self.recv_counts, group=group)
        self.send_rows = local[requested]  # by destination rank, each one's in its halo's order
        local[self.halo] = n + torch.arange(self.halo.numel(), device=device)
        self.graph = Graph.from_edge_index(torch.stack([local[src], local[dst]]),
                                           size=(n + self.halo.numel(), n))
        self.edge_ids = edge_ids
        if edge_ids is not None:
            self._use_dropout_ids(edge_ids.to(device).long(), everyone, src == dst)

    def _use_dropout_ids(self, ids, everyone, loop):
        """The dropout ids of the local graph (`ids`) and of its with_self_loops() (the layers'):
        as one process's layer orders the whole graph's edges, the edges that are not loops
        (each id less the loops before it), then a loop per node (after them, by node id)."""
        self.graph._use_dropout_ids(ids)
        loops = torch.tensor(sorted(i for _, ids_r in everyone for i in ids_r), dtype=torch.long, device=ids.device)
        kept = sum(count for count, _ in everyone) - loops.numel()  # the whole graph's edges without loops
        kept_ids = ids[~loop] - torch.searchsorted(loops, ids[~loop])
        self.graph.with_self_loops()._use_dropout_ids(torch.cat([kept_ids, kept + self.rows]))

    @property
    def num_rows(self):
        return self.rows.numel()

    def sources(self, *tensors):
        """Each tensor ([rows, ...]: this rank's rows of a source-side input) extended by its
        halo rows, [rows + halo, ...]: one all-to-all per tensor, received straight into the
        halo part of the result; autograd sends the halo rows' gradients back to their owners."""
        parts = _Exchange.apply(self, *(t.flatten(1) for t in tensors))
        return [p.reshape(p.size(0), *t.shape[1:]) for p, t in zip(parts, tensors)]


def _problem(edge_index, owner, ranks, rank):
    """What is wrong with this rank's input, or None."""
    if not (isinstance(edge_index, torch.Tensor) and edge_index.dim() == 2 and edge_index.size(0) == 2):
        return f"edge_index must be a [2, E] tensor, got {getattr(edge_index, 'shape', type(edge_index))}"
    if owner.dim() != 1:
        return f"owner must be a vector [N], got shape {list(owner.shape)}"
    if owner.numel() and (int(owner.min()) < 0 or int(owner.max()) >= ranks):
        bad = int(((owner < 0) | (owner >= ranks)).nonzero()[0])
        return f"node {bad} has rank {int(owner[bad])}, outside [0, {ranks})"
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= owner.numel()):
        return f"edge_index has node ids outside [0, {owner.numel()})"
    if edge_index.numel() and bool((owner[edge_index[1]] != rank).any()):
        e = int((owner[edge_index[1]] != rank).nonzero()[0])
        return f"edge {e} goes into node {int(edge_index[1, e])}, a row of rank {int(owner[edge_index[1, e]])}"
    return None


def _edge_ids_problem(edge_ids, edge_index):
    """What is wrong with the edge_ids argument, or None."""
    if edge_ids is None:
        return None
    if not (isinstance(edge_ids, torch.Tensor) and edge_ids.dim() == 1 and edge_ids.numel() == edge_index.size(1)
            and not edge_ids.is_floating_point() and not edge_ids.is_complex() and edge_ids.dtype != torch.bool):
        return (f"edge_ids must be a vector of {edge_index.size(1)} integer edge indices, one per edge, got "
                f"{getattr(edge_ids, 'shape', type(edge_ids))}")
    if edge_ids.numel() and int(edge_ids.min()) < 0:
        return "edge_ids holds a negative edge index"
    return None


def _agree(problem, n_all, owner, group, extra):
    """Raises ValueError on every rank if any rank's input is wrong, the ranks' owner vectors
    differ or some ranks give edge_ids and others not: one collective, so no rank waits for
    another that raised. Returns every rank's `extra`."""
    digest = hashlib.sha1(owner.cpu().numpy().tobytes()).hexdigest()
    everyone = [None] * dist.get_world_size(group)
    dist.all_gather_object(everyone, (problem, n_all, digest, extra), group=group)
    errors = [f"rank {r}: {p}" for r, (p, _, _, _) in enumerate(everyone) if p is not None]
    if len({(n, d) for _, n, d, _ in everyone}) > 1:
        errors.append("the ranks disagree on the node count or the partition: "
                      + ", ".join(f"rank {r} has {n} nodes" for r, (_, n, _, _) in enumerate(everyone)))
    if not errors and len({e is None for *_, e in everyone}) > 1:
        errors.append("edge_ids given on ranks " + ", ".join(str(r) for r, (*_, e) in enumerate(everyone)
                                                             if e is not None) + " only")
    if errors:
        raise ValueError("dfgnn.distributed.DistributedGraph: " + "; ".join(errors))
    return [e for *_, e in everyone]


class _Exchange(torch.autograd.Function):
    """[own rows | halo rows] of each x [rows, F]; backward: the halo rows' gradients back to
    their owners, each peer's part added in rank order (a peer asks for a row once, so each
    index_add_ has distinct indices and runs the same on every run). The own rows are copied
    once and the halo received in place: no concatenation of the tensors or of their rows."""

    @staticmethod
    def forward(ctx, graph, *xs):
        ctx.graph = graph
        n, outs = graph.num_rows, []
        for x in xs:
            out = x.new_empty((n + graph.halo.numel(), x.size(1)))
            out[:n].copy_(x)
            dist.all_to_all_single(out[n:], x[graph.send_rows], graph.recv_counts, graph.send_counts,
                                   group=graph.group)
            outs.append(out)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        g = ctx.graph
        n, owns = g.num_rows, []
        for grad in grads:
            back = grad.new_empty((g.send_rows.numel(), grad.size(1)))
            dist.all_to_all_single(back, grad[n:].contiguous(), g.send_counts, g.recv_counts, group=g.group)
            own = grad[:n].clone()
            start = 0
            for count in g.send_counts:
                own.index_add_(0, g.send_rows[start:start + count], back[start:start + count])
                start += count
            owns.append(own)
        return (None, *owns)


def _local(op, graph, kwargs):
    if not isinstance(graph, DistributedGraph):
        raise TypeError(f"dfgnn.distributed.{op}: graph must be a DistributedGraph, got {type(graph).__name__}")
    if kwargs.get("dropout", 0.0) and graph.edge_ids is None:
        raise ValueError(f"dfgnn.distributed.{op}: dropout on a DistributedGraph needs its edge_ids (each edge's "
                         f"index in the whole graph), so that the ranks draw one process's mask")
    return graph.graph


def gt_attention(graph, q, k, v, **kwargs):
    """dfgnn.gt_attention on this rank's rows: q, k, v [rows, H, D] (edge features, edge values:
    this rank's edges, in its edge_index's order). Returns its rows' out [rows, H, D]."""
    local = _local("gt_attention", graph, kwargs)
    k, v = graph.sources(k, v)
    return ops.gt_attention(local, q, k, v, **kwargs)


def gat_attention(graph, el, er, v, **kwargs):
    """dfgnn.gat_attention on this rank's rows: el, er [rows, H], v [rows, H, D]."""
    local = _local("gat_attention", graph, kwargs)
    el, v = graph.sources(el, v)
    return ops.gat_attention(local, el, er, v, **kwargs)


def gatv2_attention(graph, xl, xr, a, **kwargs):
    """dfgnn.gatv2_attention on this rank's rows: xl, xr [rows, H, D], a [H, D] (its gradient:
    this rank's share)."""
    local = _local("gatv2_attention", graph, kwargs)
    (xl,) = graph.sources(xl)
    return ops.gatv2_attention(local, xl, xr, a, **kwargs)
