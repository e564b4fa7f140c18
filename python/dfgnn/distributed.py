"""Attention over several ranks on torch.distributed (docs/distributed.md): the destination rows
of a square graph split over the ranks of a process group (gloo on CPU, NCCL on GPUs). A rank
holds its rows' inputs. The halo rows of the source-side inputs (GT k and v, AGNN x, GAT el and
v, GATv2 xl) arrive in one group of sends and receives while the rank runs the ops on its edges
from its own rows; then it runs them on its edges from the halo and merges the two softmaxes by
their logsumexps. In the backward the halo rows' gradients go back to their owners while the rank
works on its own rows' edges, and the owners add them in rank order: results equal one
process's (within float32 rounding), bitwise the same from run to run for a given partition.

    owner = dfgnn.Graph.from_edge_index(edge_index, N).partition(world_size)  # or METIS's
    mine = edge_index[:, owner[edge_index[1]] == rank]      # the in-edges of this rank's rows
    graph = dfgnn.distributed.DistributedGraph(mine, owner)
    out = dfgnn.distributed.gt_attention(graph, q[graph.rows], k[graph.rows], v[graph.rows])

The layers of dfgnn.nn take a DistributedGraph in place of edge_index, and x this rank's rows
[rows, F]: the halo rows of x arrive the same way and the layer runs as a bipartite call (x_src =
[rows | halo], x_dst = rows), self loops and edge_attr (this rank's edges) included. Replicated
parameters (GATv2's a, AGNN's beta, the layers' weights) get this rank's share of their
gradient: sum them over the ranks (DistributedDataParallel averages them, so scale the loss by
the world size there).
"""

import hashlib
import math

import torch
import torch.distributed as dist

from . import _lib, ops
from ._lib import ops as _ops
from .graph import Graph

__all__ = ["DistributedGraph", "gt_attention", "agnn_attention", "gat_attention", "gatv2_attention"]


class DistributedGraph:
    """This rank's share of a square graph whose nodes are split by `owner` ([N], each node's
    rank, the same on every rank of `group`): `edge_index` [2, E_r] holds the in-edges of this
    rank's rows, in the order its edge values and edge features come in. The exchange plan is
    built here once, with two all-to-alls. Every rank of the group must construct it together;
    bad input (an owner vector the ranks disagree on, a rank outside the group, an edge into
    another rank's row) raises ValueError on every rank.

    rows: the global ids of this rank's rows, ascending (its output's rows, and the rows of its
    inputs); halo: the remote sources its rows read, by (owner, id); inner, outer: the ops' two
    local bipartite dfgnn.Graphs, the edges from this rank's rows (sources: rows) and those from
    the halo (sources: halo); graph: all of its edges as one, over [rows | halo] (the layers');
    send_counts, recv_counts: the rows it sends to and receives from each rank per exchange.

    edge_ids ([E_r], optional): each of these edges' index in the whole graph's edge order. With
    them attention dropout draws this rank's part of one process's mask on the whole graph, in
    the ops and in the layers (their self loops included); without them both refuse dropout.

    overlap: the ops run in two calls, the halo exchange behind the first (True, the default),
    or in one call over [rows | halo] after the exchange (False), as the layers do. The split
    hides the exchange behind the rank's own edges but adds a call and a merge: it pays where
    that work is long (GT fwd+bwd on rmat-s20-d32 over two H200s: 1.54x one GPU, against 1.35x
    in one call), not on graphs whose exchange exceeds it (web-NotreDame: 0.56x, against 0.73x;
    docs/performance.md, "Attention over two GPUs"). Every rank of the group must pass the same."""

    def __init__(self, edge_index, owner, group=None, edge_ids=None, overlap=True):
        self.group, self.overlap = group, overlap
        ranks, rank = dist.get_world_size(group), dist.get_rank(group)
        # Every check ends in the one collective of _agree: a rank that raised before it would
        # leave the others waiting there.
        device = edge_index.device if isinstance(edge_index, torch.Tensor) else torch.device("cpu")
        try:
            owner = torch.as_tensor(owner, device=device).long()
            problem = None
        except (TypeError, ValueError, RuntimeError) as e:
            owner, problem = torch.empty(0, dtype=torch.long, device=device), f"owner is not a vector of ranks: {e}"
        if problem is None and not isinstance(overlap, bool):
            problem = f"overlap must be True or False, got {overlap!r}"
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
        src, dst = local[src], local[dst]  # over [rows | halo]
        # The ops' two calls (_Split): the edges from this rank's own rows (inner), which run
        # while the halo arrives, then those from the halo (outer, its sources in halo order).
        inner = src < n
        self._parts, self._indices = (inner, ~inner), None
        self.inner = Graph.from_edge_index(torch.stack([src[inner], dst[inner]]), size=(n, n))
        self.outer = Graph.from_edge_index(torch.stack([src[~inner] - n, dst[~inner]]), size=(self.halo.numel(), n))
        self._rows_with = [torch.bincount(dst[m], minlength=n) > 0 for m in (inner, ~inner)]  # rows with such edges
        self._graph = None
        self.edge_ids = edge_ids
        if edge_ids is not None:
            ids = edge_ids.to(device).long()
            self.inner._use_dropout_ids(ids[inner])
            self.outer._use_dropout_ids(ids[~inner])
            self._everyone = everyone

    @property
    def graph(self):
        """The local bipartite dfgnn.Graph over [rows | halo], its edges in edge_index's order:
        the layers' one call (built on first use)."""
        if self._graph is None:
            n, inner = self.num_rows, self._parts[0]
            edges = torch.empty(2, inner.numel(), dtype=torch.long, device=inner.device)
            edges[:, inner] = self.inner.edge_index().to(inner.device)
            edges[:, ~inner] = self.outer.edge_index().to(inner.device)
            edges[0, ~inner] += n
            graph = Graph.from_edge_index(edges, size=(n + self.halo.numel(), n))
            if self.edge_ids is not None:
                self._use_dropout_ids(graph, self.edge_ids.to(inner.device).long(), edges[0] == edges[1])
            self._graph = graph
        return self._graph

    def _edge_indices(self):
        """The inner and the outer edges' positions in edge_index's order, for the edge tensors'
        rows (kept after the first use: index_select needs no device sync, a mask does)."""
        if self._indices is None:
            self._indices = tuple(part.nonzero().flatten() for part in self._parts)
        return self._indices

    def _use_dropout_ids(self, graph, ids, loop):
        """The dropout ids of the local graph (`ids`) and of its with_self_loops() (the layers'):
        as one process's layer orders the whole graph's edges, the edges that are not loops
        (each id less the loops before it), then a loop per node (after them, by node id)."""
        graph._use_dropout_ids(ids)
        everyone = self._everyone
        loops = torch.tensor(sorted(i for _, ids_r in everyone for i in ids_r), dtype=torch.long, device=ids.device)
        kept = sum(count for count, _ in everyone) - loops.numel()  # the whole graph's edges without loops
        kept_ids = ids[~loop] - torch.searchsorted(loops, ids[~loop])
        graph.with_self_loops()._use_dropout_ids(torch.cat([kept_ids, kept + self.rows]))

    @property
    def num_rows(self):
        return self.rows.numel()

    def sources(self, *tensors):
        """Each tensor ([rows, ...]: this rank's rows of a source-side input) extended by its
        halo rows, [rows + halo, ...], received straight into the halo part of the result (one
        group of sends and receives for all the tensors); autograd sends the halo rows'
        gradients back to their owners."""
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


def _swap(graph, sends, receives, send_counts, receive_counts):
    """Each tensor of `sends` [sum(send_counts), F] to the ranks, send_counts[r] rows to rank r
    in rank order, into the tensor of `receives` at the same place: one group of sends and
    receives for all the tensors, so NCCL runs them as one kernel (one all-to-all per tensor
    would start its second kernel only when the compute kernels beside it leave an SM free);
    each tensor's messages have its own tag, which gloo matches by. Returns the works to wait
    for."""
    ops_, group = [], graph.group
    starts = [0, 0]
    for peer, counts in enumerate(zip(send_counts, receive_counts)):
        to = peer if group is None else dist.get_global_rank(group, peer)
        for op, tensors, count, start in zip((dist.isend, dist.irecv), (sends, receives), counts, starts):
            if count:
                ops_ += [dist.P2POp(op, t[start:start + count], to, group, tag) for tag, t in enumerate(tensors)]
        starts = [start + count for start, count in zip(starts, counts)]
    return dist.batch_isend_irecv(ops_) if ops_ else []


def _gather_halo(graph, xs, into):
    """Receives the halo rows of each x [rows, F] of `xs` from their owners into the tensor of
    `into` [halo, F] at its place (_swap). Returns the works."""
    return _swap(graph, [x[graph.send_rows] for x in xs], into, graph.send_counts, graph.recv_counts)


def _return_halo(graph, grads):
    """Sends the halo rows' gradients, each of `grads` [halo, F], back to their owners (_swap).
    Returns what this rank receives for each ([sent rows, F], its peers' parts in rank order)
    and the works."""
    backs = [g.new_empty((graph.send_rows.numel(), g.size(1))) for g in grads]
    return backs, _swap(graph, [g.contiguous() for g in grads], backs, graph.recv_counts, graph.send_counts)


def _wait(works):
    for work in works:
        work.wait()  # the current stream waits for the exchange


def _add_returned(graph, own, back):
    """Adds the returned gradients `back` to this rank's own rows' `own` [rows, F], each peer's
    part in rank order: a peer asks for a row once, so each index_add_ has distinct indices and
    runs the same on every run."""
    start = 0
    for count in graph.send_counts:
        own.index_add_(0, graph.send_rows[start:start + count], back[start:start + count])
        start += count
    return own


class _Exchange(torch.autograd.Function):
    """[own rows | halo rows] of each x [rows, F] (the layers' x); backward: the halo rows'
    gradients back to their owners, added there in rank order. The own rows are copied once and
    the halo received in place: no concatenation of the tensors or of their rows."""

    @staticmethod
    def forward(ctx, graph, *xs):
        ctx.graph = graph
        n = graph.num_rows
        outs = [x.new_empty((n + graph.halo.numel(), x.size(1))) for x in xs]
        for out, x in zip(outs, xs):
            out[:n].copy_(x)
        _wait(_gather_halo(graph, xs, [out[n:] for out in outs]))
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        g = ctx.graph
        n = g.num_rows
        backs, works = _return_halo(g, [grad[n:] for grad in grads])
        _wait(works)
        return (None, *(_add_returned(g, grad[:n].clone(), back) for grad, back in zip(grads, backs)))


def _merge(graph, inner, outer):
    """The softmax over a row's inner and outer edges from each call's (out, logsumexp): lse =
    log(e^lse_in + e^lse_out), out = f_in out_in + f_out out_out with f = e^(lse_call - lse),
    a call's terms taken only for rows where it has edges (the kernels give an empty row out 0,
    lse 0). As f_in + f_out = 1, out is one lerp from out_in to out_out by f_out (one pass: two
    broadcast products took twice as long); where one call has every edge (one rank, no halo,
    only halo) its result stands. The factors are formed in float64. Returns out, lse and the
    factors (f_in, f_out) [rows, H], float32."""
    (out_in, lse_in), (out_out, lse_out) = inner, outer
    if not (graph.inner.num_edges and graph.outer.num_edges):
        one, zero = torch.ones_like(lse_in), torch.zeros_like(lse_in)
        return (*outer, [zero, one]) if graph.outer.num_edges else (*inner, [one, zero])
    # In float64: in float32, exp and log of logsumexps near a super node's ~8 put 5e-6 into out.
    parts = [lse.double().masked_fill_(~rows[:, None], -math.inf)
             for lse, rows in zip((lse_in, lse_out), graph._rows_with)]
    lse = torch.logaddexp(*parts)
    # a row without edges: -inf - -inf
    factors = [torch.exp(part - lse).nan_to_num_(0.0).float() for part in parts]
    out = _in_float32(out_in, lambda x: x.lerp_(out_out.to(x.dtype), factors[1][..., None]))
    return out, lse.masked_fill_(lse == -math.inf, 0.0).float(), factors


def _in_float32(x, update):
    """update(x): in place for a float32 x; for a two-byte x on a float32 copy, rounded once."""
    return update(x) if x.dtype is torch.float32 else update(x.float()).to(x.dtype)


class _Split(torch.autograd.Function):
    """One model's attention on a DistributedGraph in two calls. Forward: the source-side
    inputs' halo rows start arriving (_swap, on NCCL's stream); meanwhile the
    inner edges' call runs; then the outer edges' call on the halo, and _merge. Backward, with
    the merged out and lse (each edge's probability is exp(s - lse), whichever call it is in):
    the outer call first, so that its source gradients travel back to their owners while the
    inner call runs; then each rank adds what it received to its own rows in rank order. The
    destination-side gradients (and GATv2's da) are the two calls' sum."""

    @staticmethod
    def forward(ctx, graph, spec, sources, scalar, dropout, seed, weights, edge_values, a, b, c, e):
        own = (a, b, c)
        halo = [own[i].new_empty((graph.halo.numel(), *own[i].shape[1:])) for i in sources]
        works = _gather_halo(graph, [own[i].flatten(1) for i in sources], [t.flatten(1) for t in halo])
        dims, dtype = spec.dims(graph.inner, *own), _lib.DTYPES[a.dtype]
        indices = graph._edge_indices() if edge_values is not None or e is not None or weights else (None, None)
        calls = _calls(graph, own, sources, halo, indices)
        results, probabilities = [], []
        for g, tensors, index in calls:
            if g is graph.outer:
                _wait(works)
            w = a.new_empty((g.num_edges, dims[0])) if weights else None
            plan = ops._native(g, a, spec.kind, dims, dtype)
            results.append(_ops.forward(plan, tensors, scalar, spec.count(own), _rows(edge_values, index), dropout,
                                        seed, True, _rows(e, index), w))
            probabilities.append(w)
        out, lse, factors = _merge(graph, *results)
        ctx.graph, ctx.spec, ctx.sources, ctx.args = graph, spec, sources, (scalar, dropout, seed, dims, dtype)
        ctx.halo, ctx.edge_values = halo, edge_values
        ctx.save_for_backward(a, b, c, e, out, lse)
        w = a.new_empty((graph._parts[0].numel(), dims[0]) if weights else 0)
        if weights:  # each call's weights came from its own lse: rescaled by its factor at their row
            for (g, _, index), p, f in zip(calls, probabilities, factors):
                w.index_copy_(0, index, (p.float() * f[g.edge_index()[1].to(f.device)]).to(w.dtype))
        ctx.mark_non_differentiable(w)
        return out, w

    @staticmethod
    def backward(ctx, grad, _grad_weights):
        graph, spec, sources = ctx.graph, ctx.spec, ctx.sources
        scalar, dropout, seed, dims, dtype = ctx.args
        a, b, c, e, out, lse = ctx.saved_tensors
        edge_values, grad = ctx.edge_values, grad.contiguous()
        indices = graph._edge_indices() if edge_values is not None or e is not None else (None, None)
        grads = []
        for g, tensors, index in reversed(_calls(graph, (a, b, c), sources, ctx.halo, indices)):
            plan = ops._native(g, a, spec.kind, dims, dtype)
            grads.append(list(_ops.backward(plan, tensors, scalar, spec.count(tensors), _rows(edge_values, index),
                                            dropout, seed, out, lse, grad, _rows(e, index))))
            if g is graph.outer:
                backs, works = _return_halo(graph, [grads[0][i].flatten(1) for i in sources])
        from_outer, mine = grads
        _wait(works)
        for i, back in zip(sources, backs):
            _add_returned(graph, mine[i].flatten(1), back)
        for i in range(3):
            if i not in sources:
                mine[i] = _in_float32(mine[i], lambda x: x.add_(from_outer[i]))
        de = None
        if e is not None:
            de = torch.empty_like(e).index_copy_(0, indices[0], mine[3]).index_copy_(0, indices[1], from_outer[3])
        return (None,) * 8 + (*mine[:3], de)


def _calls(graph, own, sources, halo, indices):
    """The two calls of _Split: (graph, the three tensors, the positions of its edges in
    edge_index's order), the inner call's on this rank's rows, the outer's with the source-side
    tensors' halo rows."""
    outer = list(own)
    for i, t in zip(sources, halo):
        outer[i] = t
    return [(graph.inner, own, indices[0]), (graph.outer, tuple(outer), indices[1])]


def _rows(t, index):
    """An edge tensor's (edge values', edge features') rows of one call's edges, or None."""
    return None if t is None else t.index_select(0, index)


# The ops' models on a DistributedGraph: each one's spec and its source-side tensors.
_MODELS = {"gt_attention": (ops._GT, (1, 2)), "agnn_attention": (ops._AGNN, (0,)), "gat_attention": (ops._GAT, (0, 2)),
           "gatv2_attention": (ops._GATV2, (0,))}


def _attention(name, graph, tensors, scalar, edge_features=None, edge_values=None, dropout=0.0, seed=None,
               return_attention_weights=False):
    """The checks of model `name`'s call on this rank's rows, then _Split."""
    op = f"dfgnn.distributed.{name}"
    spec, sources = _MODELS[name]
    if not isinstance(graph, DistributedGraph):
        raise TypeError(f"{op}: graph must be a DistributedGraph, got {type(graph).__name__}")
    dropout = ops._dropout(op, dropout)
    if dropout and graph.edge_ids is None:
        raise ValueError(f"{op}: dropout on a DistributedGraph needs its edge_ids (each edge's index in the whole "
                         f"graph), so that the ranks draw one process's mask")
    tensors = tuple(ops._input(op, key, t) for key, t in tensors.items())
    edge_values, edges = ops._edge_values(op, edge_values), ops._edges(op, edge_features)
    if ops._autocast_on(tensors[0]):
        *tensors, edge_values, edges = ops._autocast((*tensors, edge_values, edges))
    named = spec.named(tensors) + ([("edge_features", edges, spec.edge_dims)] if edges is not None else [])
    ops._check(op, None, named, edge_values, 0.0, None)  # against each other; then against this rank's share
    for key, t, dims in named + ([("edge_values", edge_values, ())] if edge_values is not None else []):
        want, what = (graph.num_rows, "rows") if dims[:1] in (("N",), ("NS",)) else (graph._parts[0].numel(), "edges")
        if dims[:1] not in (("H",), ("B",)) and t.size(0) != want:  # a head argument (GATv2's a, AGNN's beta): all of it
            raise ValueError(f"{op}: {key} has {t.size(0)} rows, but this rank has {want} {what}")
    seed = ops._checked_seed(op, seed)
    seed = 0 if not dropout else ops._draw_seed() if seed is None else seed
    if not graph.overlap:  # the exchange, then one call over [rows | halo], as the layers
        tensors = list(tensors)
        for i, t in zip(sources, graph.sources(*(tensors[i] for i in sources))):
            tensors[i] = t
        return ops._run(spec, op, graph.graph, tuple(tensors), scalar, edge_values, dropout, seed,
                        return_attention_weights, edges)
    out, w = _Split.apply(graph, spec, sources, scalar, dropout, seed, return_attention_weights, edge_values,
                          *tensors, edges)
    return (out, w) if return_attention_weights else out


def gt_attention(graph, q, k, v, *, scale=None, **kwargs):
    """dfgnn.gt_attention on this rank's rows: q, k, v [rows, H, D] (edge features, edge values:
    this rank's edges, in its edge_index's order). Returns its rows' out [rows, H, D]."""
    return _attention("gt_attention", graph, {"q": q, "k": k, "v": v},
                      ops._scale("dfgnn.distributed.gt_attention", scale), **kwargs)


def agnn_attention(graph, x, beta, *, x_dst=None, **kwargs):
    """dfgnn.agnn_attention on this rank's rows: x [rows, H, D] (the sources'; the rows' own
    x_dst too unless given, and then its gradient takes both ends' terms), beta [1] or [H] or a
    number (its gradient: this rank's share)."""
    op = "dfgnn.distributed.agnn_attention"
    beta = ops._beta(op, ops._input(op, "x", x), beta)
    # x standing in for x_dst: the outer call over the halo is bipartite, where no stand-in serves.
    return _attention("agnn_attention", graph, {"x": x, "beta": beta, "x_dst": x if x_dst is None else x_dst}, 0.0,
                      **kwargs)


def gat_attention(graph, el, er, v, *, negative_slope=0.2, **kwargs):
    """dfgnn.gat_attention on this rank's rows: el, er [rows, H], v [rows, H, D]."""
    return _attention("gat_attention", graph, {"el": el, "er": er, "v": v}, float(negative_slope), **kwargs)


def gatv2_attention(graph, xl, xr, a, *, negative_slope=0.2, **kwargs):
    """dfgnn.gatv2_attention on this rank's rows: xl, xr [rows, H, D], a [H, D] (its gradient:
    this rank's share)."""
    return _attention("gatv2_attention", graph, {"xl": xl, "xr": xr, "a": a}, float(negative_slope), **kwargs)
