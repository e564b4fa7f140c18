"""Drop-in layers for PyG's TransformerConv, AGNNConv, GATConv and GATv2Conv (PyG 2.8).

Same constructor arguments, parameter names, initialisation and `forward(x, edge_index)`, so a
PyG layer's state_dict loads into ours and gives the same outputs and gradients; the attention
(scores, softmax, aggregation) runs in dfgnn's fused kernels instead of PyG's message passing.
`edge_index` is a [2, E] tensor or a torch.sparse adj_t as PyG takes it (rows destinations; its
Graph is built on first use and cached for that tensor), a prebuilt dfgnn.Graph, or a
dfgnn.distributed.DistributedGraph (x: this rank's rows). Bipartite inputs work as in PyG: tuple
in_channels, x = (x_src, x_dst) (the graph's sources and destinations; `size` checks them;
GATConv also x = (x_src, None); AGNNConv, whose PyG form takes one x, as the others), and lazy
in_channels (-1), so the layers run in HeteroConv and torch_geometric.nn.to_hetero. Where PyG is installed they are its MessagePassing
modules, which to_hetero looks for, and while a message-passing hook is registered or explain
mode is on (PyG's explainers) they run PyG's forward, whose messages those observe.
return_attention_weights returns (out, (edge_index, alpha)) where PyG does (TransformerConv:
True or False; GATConv, GATv2Conv: a true value): the edges the attention ran on (self loops
included; for an adj_t, as PyG, TransformerConv's adj_t and the GAT layers' adjacency holding
alpha) and alpha [E, H], each edge's probability times its dropout factor (PyG's GATConv and
GATv2Conv return that; its TransformerConv the probability before dropout), without gradient;
under torch.compile in one graph once the Graph's edge_index() (with_self_loops().edge_index()
for the GAT layers) was built before tracing. Edge features work as in PyG: edge_dim and
forward's edge_attr [E, edge_dim] (or [E]), projected by lin_edge (GATConv: and att_edge) and
read by the fused kernels per edge; self loops get PyG's fill_value ("mean", "add" or a number);
without edge_dim TransformerConv adds edge_attr to the values, as PyG's does. Not supported
(raise): torch_sparse's SparseTensor, MessagePassing options other than the defaults. Attention
dropout has PyG's semantics (p, scaled by 1/(1-p), training only) but draws its mask from
dfgnn's hash of (seed, edge, head), so it differs from PyG's mask.
"""

import math

import torch
from torch import Tensor
from torch.nn import Linear, Parameter
from torch.nn import functional as nn_functional
from torch.nn.parameter import UninitializedParameter

from .distributed import DistributedGraph
from .graph import Graph
from .ops import _gat_layer, agnn_attention, gatv2_attention, gt_attention

try:  # PyG's base class where PyG is installed (to_hetero treats only MessagePassing modules as
    # convolutions), and its layers, whose forward runs where its message passing is observed
    import torch_geometric.nn as _pyg_nn
    from torch_geometric.inspector import Inspector as _Inspector
    from torch_geometric.nn import MessagePassing as _Base
except ImportError:
    _pyg_nn = _Inspector = _Base = None

# MessagePassing's hook registries (_propagate_forward_pre_hooks, ...), one per register_*_hook
# method it defines.
_HOOKS = () if _Base is None else tuple(f"_{name[len('register_'):]}s" for name in vars(_Base)
                                        if name.startswith("register_") and name.endswith("_hook"))

__all__ = ["TransformerConv", "AGNNConv", "GATConv", "GATv2Conv"]

# MessagePassing options our layers accept: the defaults of the four PyG layers.
_DEFAULT_KWARGS = {"aggr": "add", "flow": "source_to_target"}


def _channels(layer, in_channels):
    """in_channels as (source, destination) channels, each a positive int or -1 (lazy)."""
    pair = in_channels if isinstance(in_channels, (tuple, list)) else (in_channels, in_channels)
    if len(pair) != 2 or any(not isinstance(c, int) or isinstance(c, bool) or (c <= 0 and c != -1) for c in pair):
        raise ValueError(f"{layer}: in_channels must be a positive int, -1 (lazy) or a pair of them (bipartite), "
                         f"got {in_channels!r}")
    return tuple(pair)


def _reject_options(layer, **kwargs):
    for key, value in kwargs.items():
        if key not in _DEFAULT_KWARGS or _DEFAULT_KWARGS[key] != value:
            raise ValueError(f"{layer}: option {key}={value!r} is not supported")


def _glorot(t):
    # PyG's inits.glorot: uniform in +-sqrt(6 / (fan_in + fan_out)) over the last two dims.
    bound = math.sqrt(6.0 / (t.size(-2) + t.size(-1)))
    with torch.no_grad():
        t.uniform_(-bound, bound)


def _initialise(lin, glorot):
    """PyG's Linear initialisation: torch's (kaiming_uniform(a=sqrt(5)), bias uniform in
    +-1/sqrt(in)), or with weight_initializer='glorot' a glorot weight and that bias. A lazy
    layer not yet called has nothing to initialise: it does so on its first call."""
    if lin is None or isinstance(lin.weight, UninitializedParameter):
        return
    if not glorot:
        Linear.reset_parameters(lin)
        return
    _glorot(lin.weight)
    if lin.bias is not None:
        bound = 1.0 / math.sqrt(lin.in_features)
        torch.nn.init.uniform_(lin.bias, -bound, bound)


class _LazyLinear(torch.nn.LazyLinear):
    """PyG's Linear(-1, ...): in_features from the first input, then initialised as _initialise
    says (it becomes a torch Linear, as LazyLinear does)."""

    def __init__(self, out_features, bias, glorot):
        super().__init__(out_features, bias=bias)
        self.glorot = glorot

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            _initialise(self, self.glorot)


def _linear(in_channels, out_channels, bias=True, glorot=False):
    """A projection as PyG's layer makes it: lazy for in_channels -1. A torch Linear draws its
    initial weights as PyG's does (as many random numbers), and the layer's reset_parameters
    then initialises it as PyG's does."""
    return _LazyLinear(out_channels, bias, glorot) if in_channels == -1 else Linear(in_channels, out_channels, bias=bias)


@torch.compiler.disable
def _graph_of_tensor(edge_index, size):
    return Graph.cached(edge_index, size)


def _inputs(layer, x, edge_index, self_loops, edge_attr=None, size=None, fill_value="mean", dropout=0.0,
            projected=True, no_dst=False):
    """Checks forward's arguments. Returns (graph, x_src, x_dst, edge_attr): the Graph to run on
    (with PyG's self loops when asked), the source and destination features (both x for a
    tensor x; with `no_dst`, x = (x_src, None) gives x_dst None and, as PyG's GATConv takes
    it, the graph's destinations (a Graph's, a torch.sparse adj_t's rows), else as many as
    `size` says, else as sources) and the edge attributes in that graph's edge order (None:
    none): with `projected` (lin_edge's input) [E, F], the loops' rows filled with fill_value
    as PyG's add_self_loops does; else as given, for the caller to check. On a
    DistributedGraph, x is this rank's rows and the call a bipartite one over [rows | halo]
    (docs/distributed.md); attention dropout (the rate in training) there needs the graph's
    edge_ids, which give its edges and self loops their ids in one process's mask."""
    if isinstance(edge_index, DistributedGraph):
        if dropout and edge_index.edge_ids is None:
            raise ValueError(f"{layer}: attention dropout on a DistributedGraph needs its edge_ids (each edge's "
                             "index in the whole graph), so that the ranks draw one process's mask")
        if not isinstance(x, Tensor):
            raise TypeError(f"{layer}: on a DistributedGraph x must be this rank's rows [rows, F], "
                            f"got {type(x).__name__}")
        (x_src,), edge_index = edge_index.sources(x), edge_index.graph
        x = (x_src, x)
    if isinstance(x, (tuple, list)):
        if len(x) != 2 or not isinstance(x[0], Tensor) or not (isinstance(x[1], Tensor) or no_dst and x[1] is None):
            raise TypeError(f"{layer}: bipartite x must be a pair of tensors (x_src, x_dst)"
                            + (" (x_dst = None: GATConv's only, as in PyG)" if len(x) == 2 and x[1] is None else ""))
        x_src, x_dst = x
    elif isinstance(x, Tensor):
        x_src = x_dst = x
    else:
        raise TypeError(f"{layer}: x must be a [N, F] tensor or a pair (x_src, x_dst), got {type(x).__name__}")
    for name, t in (("x_src", x_src), ("x_dst", x_dst)) if x_src is not x_dst else (("x", x_src),):
        if t is not None and t.dim() != 2:
            raise ValueError(f"{layer}: {name} must have shape [N, F], got {list(t.shape)}")
    if x_dst is not None:
        num_dst = x_dst.size(0)
    elif isinstance(edge_index, Graph):
        num_dst = edge_index.num_nodes
    elif _is_adj_t(edge_index):  # its rows
        num_dst = edge_index.size(0)
    else:
        num_dst = size[1] if size is not None else x_src.size(0)
    shape = (x_src.size(0), num_dst)
    if size is not None and tuple(size) != shape:
        raise ValueError(f"{layer}: size = {tuple(size)} but the inputs have {shape[0]} sources and "
                         f"{shape[1]} destinations")
    graph = edge_index if isinstance(edge_index, Graph) else _graph_of_tensor(edge_index, shape)
    if (graph.num_src_nodes, graph.num_nodes) != shape:
        raise ValueError(f"{layer}: the inputs have {shape[0]} sources and {shape[1]} destinations but the graph "
                         f"has {graph.num_src_nodes} and {graph.num_nodes}")
    if edge_attr is not None and not isinstance(edge_attr, Tensor):
        raise TypeError(f"{layer}: edge_attr must be a tensor, got {type(edge_attr).__name__}")
    if edge_attr is not None and projected:
        if edge_attr.dim() == 1:
            edge_attr = edge_attr.view(-1, 1)
        if edge_attr.dim() != 2 or edge_attr.size(0) != graph.num_edges:
            raise ValueError(f"{layer}: edge_attr must have shape [E, edge_dim] with E = {graph.num_edges} "
                             f"(the graph's edges), got {list(edge_attr.shape)}")
        if self_loops:
            edge_attr = graph.loop_attributes(edge_attr, fill_value)
    return (graph.with_self_loops() if self_loops else graph), x_src, x_dst, edge_attr


def _is_adj_t(edge_index):
    """Whether edge_index is a torch.sparse adjacency (PyG's adj_t; Graph.from_adj_t)."""
    return isinstance(edge_index, Tensor) and edge_index.layout != torch.strided


def _edge_attr(edge_index, edge_attr):
    """forward's edge_attr, or where none is given and edge_index is a torch.sparse adj_t with
    rows of values [E, F], those rows: PyG's message passing reads them as edge_attr."""
    if edge_attr is None and _is_adj_t(edge_index) and edge_index.dense_dim() > 0:
        return edge_index.values()
    return edge_attr


def _edge_rows(layer, lin_edge, edge_attr, heads, channels):
    """lin_edge(edge_attr) as [E, H, C], or None without edge_attr (PyG then adds no edge
    term); edge_attr without edge_dim raises."""
    if edge_attr is None:
        return None
    if lin_edge is None:
        raise ValueError(f"{layer}: edge_attr was passed but the layer has no edge_dim")
    return lin_edge(edge_attr).view(-1, heads, channels)


# Where TransformerConv takes its edge term as edge columns: from this mean in-degree (edges per
# destination), up to this many heads. They trade node-side work (rows C + edge_dim wide, three
# concatenations) for the edge-side [E, H, C] rows; on the H100 (docs/performance.md, "Edge
# features") they made the one-head layer's fwd+bwd 1.4-1.7x as fast at mean in-degree 49-88
# (PATTERN-like, tolokers, R-MAT) and 3-60% slower at 4-7 (web-NotreDame, Cora, Pubmed), and at
# 4 heads x 32 they lost in fwd+bwd on every graph measured, as one row for all heads and as
# per-head copies.
_COLUMNS_DEGREE = 16
_COLUMNS_HEADS = 1


def _by_columns(graph, edge_dim, heads, channels):
    """Whether TransformerConv runs its edge term as edge columns (_edge_columns): where the
    graph's mean in-degree reaches _COLUMNS_DEGREE, the heads are at most _COLUMNS_HEADS, an
    edge's edge_dim attributes are fewer than its H x C projection, and the widened rows (C +
    edge_dim) stay within the CUDA plans' dims (up to 256, or 512 in whole 16-byte chunks)."""
    width = channels + edge_dim
    return (graph.num_edges >= _COLUMNS_DEGREE * max(graph.num_nodes, 1) and heads <= _COLUMNS_HEADS
            and edge_dim < heads * channels
            and (width <= 256 or width <= 512 and width % 8 == 0 and edge_dim % 8 == 0))


def _edge_columns(columns, q, k, v, W=None):
    """TransformerConv's edge term as edge columns (docs/design.md, "Edge columns"): the
    attention runs on q' = [q | t], k' = [k | 0], v' = [v | 0] with `columns` [E, 1 or H, F]
    added to the heads' last F columns of keys and values, and out = out'[:C] + W out'[C:]
    (_columns_out). With lin_edge's weight W [H, C, F] (W_h head h's block, a_e an edge's
    attributes) <q_v, W_h a_e> = <W_h^T q_v, a_e> and sum_e p_e W_h a_e = W_h sum_e p_e a_e, so
    t = W^T q and no [E, H, C] projection is formed. Without W (edge_attr without edge_dim,
    which PyG adds to the values alone) t = 0, so the scores do not see the columns. Returns
    (q', k', v')."""
    pad = (0, columns.size(2))
    q = nn_functional.pad(q, pad) if W is None else torch.cat([q, torch.einsum("nhc,hcf->nhf", q, W)], dim=-1)
    return q, nn_functional.pad(k, pad), nn_functional.pad(v, pad)


def _columns_out(out, C, W=None):
    """The attention's output on _edge_columns' inputs: out'[:C] + W out'[C:], or without W
    out'[:C] + out'[C:] (at F = 1 broadcast over the C columns), [N, H, C]."""
    rest = out[..., C:]
    return out[..., :C] + (rest if W is None else torch.einsum("nhf,hcf->nhc", rest, W))


def _value_columns(edge_attr, num_edges, heads, channels):
    """TransformerConv's edge_attr without edge_dim as edge columns: PyG adds it to each edge's
    values [E, H, C] by broadcasting, so any shape that broadcasts to [E, H, C] works, as
    columns [E, 1 or H, 1 or C]."""
    shape = (num_edges, heads, channels)
    try:
        fits = torch.broadcast_shapes(edge_attr.shape, shape) == shape
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"TransformerConv: without edge_dim, edge_attr is added to the values [E, H, C] = "
                         f"{list(shape)}, as PyG adds it, so it must broadcast to that shape; got "
                         f"{list(edge_attr.shape)} (for edge features projected by lin_edge, give edge_dim)")
    columns = edge_attr.reshape((1,) * (3 - edge_attr.dim()) + tuple(edge_attr.shape))
    return columns.expand(num_edges, -1, -1).contiguous()


def _with_weights(out, result, graph, edge_index, self_loops, sparse_values=True):
    """PyG's return form with attention weights: (out, (edge_index, alpha)), the edges those of
    the graph the attention ran on: a tensor edge_index itself unless self loops were added (then,
    as PyG's, its edges without loops followed by the loops). For a torch.sparse adj_t with
    `sparse_values` (GATConv and GATv2Conv; PyG's TransformerConv returns adj_t itself) the
    edges are that adjacency holding alpha as its values, as PyG returns it (_sparse_weights)."""
    alpha = result[1]
    if sparse_values and _is_adj_t(edge_index):
        return out, _sparse_weights(edge_index, graph, alpha, self_loops)
    edges = edge_index if isinstance(edge_index, Tensor) and not self_loops else graph.edge_index().to(alpha.device)
    return out, (edges, alpha)


def _sparse_weights(adj_t, graph, alpha, self_loops):
    """(adjacency, alpha) as PyG's GAT layers return them for a torch.sparse adj_t: adj_t with
    alpha [E, H] as its values (a [N, NS, H] sparse tensor of adj_t's layout), alpha in its
    entries' order. With self loops PyG's adjacency is the looped one, coalesced (sorted by
    destination, then source), so graph's edges (its loops last) and alpha are sorted into it."""
    size = (*adj_t.shape[:2], alpha.size(1))
    if adj_t.layout == torch.sparse_csr and not self_loops:  # its entries as they are
        return torch.sparse_csr_tensor(adj_t.crow_indices(), adj_t.col_indices(), alpha, size), alpha
    coo = torch.sparse_coo_tensor(graph.edge_index().to(alpha.device).flip(0), alpha, size).coalesce()
    return (coo if adj_t.layout == torch.sparse_coo else coo.to_sparse_csr()), coo.values()


def _heads_out(out, concat):
    if concat or out.size(1) == 1:  # the mean of one head is that head (exactly): a view, no kernel
        return out.reshape(out.size(0), out.size(1) * out.size(2))
    return out.mean(dim=1)


def _gat_output(out, concat, res, bias):
    """GATConv's and GATv2Conv's output: heads concatenated or averaged, plus the residual
    and the bias."""
    out = _heads_out(out, concat)
    if res is not None:
        out = out + res
    return out + bias if bias is not None else out


class _Conv(_Base or torch.nn.Module):
    """The layers' base: PyG's MessagePassing (aggr "add", node_dim 0, as its attention layers)
    where PyG is installed, else torch's Module; and the multi-head layers' repr, as PyG prints it.
    Where PyG is installed a layer also takes from PyG's layer of its name what MessagePassing
    builds its propagate and edge_updater from when a layer is made (the message functions
    message and edge_update, and the arguments PyG's forward passes to propagate and
    edge_updater, as their class-attribute declarations propagate_type and edge_updater_type),
    so that PyG's forward runs on it (_pyg_forward). A user's subclass of a layer inherits them."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if _Base is not None and cls.__module__ == __name__:
            pyg = cls._pyg_layer = getattr(_pyg_nn, cls.__name__)
            for name in ("message", "edge_update"):
                if name in vars(pyg):
                    setattr(cls, name, vars(pyg)[name])
            inspector = _Inspector(pyg)  # reads the calls in PyG's source, as MessagePassing reads a layer's
            for call in ("propagate", "edge_updater"):
                params = inspector.get_params_from_method_call(call, exclude=[0, "edge_index", "size"])
                if params:
                    setattr(cls, f"{call}_type", {name: param.type for name, param in params.items()})

    def __init__(self):
        if _Base is None:
            super().__init__()
        else:
            super().__init__(aggr="add", node_dim=0)

    def _message_passing(self):
        """Whether PyG's message passing is observed on this layer: explain mode (PyG's
        explainers' edge masks) or a hook on propagate, message, aggregate or edge_update. The
        fused kernels form no messages to observe, so the layer then runs PyG's forward
        (_pyg_forward) rather than bypass them. (decomposed_layers, PyG's propagate in feature
        chunks to save memory, has no messages to split here: the kernels ignore it.)"""
        return _Base is not None and (bool(self._explain) or any(getattr(self, hooks) for hooks in _HOOKS))

    def _pyg_forward(self, x, edge_index, **kwargs):
        """PyG's forward of this layer on its parameters, with forward's keyword arguments (PyG's
        names and meaning): its message passing, hooks and explain mode included, so PyG's
        outputs, gradients and attention weights (its dropout mask too). A Graph runs as its
        edge_index(), and where the layer takes a size (GATConv) and none is given, as its
        (sources, destinations): PyG's GATConv on x = (x_src, None) has no other way to know
        the destinations."""
        if isinstance(edge_index, DistributedGraph):
            raise ValueError(f"{type(self).__name__}: explain mode and message-passing hooks run PyG's message "
                             "passing, which needs the whole graph's edge_index, not a DistributedGraph")
        if isinstance(edge_index, Graph):
            if kwargs.get("size", 0) is None:
                kwargs["size"] = (edge_index.num_src_nodes, edge_index.num_nodes)
            edge_index = edge_index.edge_index().to((x[0] if isinstance(x, (tuple, list)) else x).device)
        return self._pyg_layer.forward(self, x, edge_index, **kwargs)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.in_channels}, {self.out_channels}, heads={self.heads})"


class TransformerConv(_Conv):
    """PyG's TransformerConv: x'_i = W1 x_i + sum_j softmax_j((W3 x_i)^T (W4 x_j) / sqrt(C)) W2 x_j,
    multi-head; with beta, a learned gate between the skip term and the aggregation. No self
    loops are added (as in PyG)."""

    def __init__(self, in_channels, out_channels, heads=1, concat=True, beta=False, dropout=0.0,
                 edge_dim=None, bias=True, root_weight=True, **kwargs):
        super().__init__()
        _reject_options("TransformerConv", **kwargs)
        src, dst = _channels("TransformerConv", in_channels)
        self.in_channels, self.out_channels, self.heads = in_channels, out_channels, heads
        self.beta = beta and root_weight
        self.root_weight = root_weight
        self.concat = concat
        self.dropout = dropout
        self.edge_dim = edge_dim
        self.lin_key = _linear(src, heads * out_channels, bias)
        self.lin_query = _linear(dst, heads * out_channels, bias)
        self.lin_value = _linear(src, heads * out_channels, bias)
        self.lin_edge = Linear(edge_dim, heads * out_channels, bias=False) if edge_dim is not None else None
        skip = heads * out_channels if concat else out_channels
        self.lin_skip = _linear(dst, skip, bias)  # made even without root_weight, as in PyG
        self.lin_beta = Linear(3 * skip, 1, bias=False) if self.beta else None
        self.reset_parameters()

    def reset_parameters(self):
        for lin in (self.lin_key, self.lin_query, self.lin_value, self.lin_edge, self.lin_skip, self.lin_beta):
            _initialise(lin, glorot=False)

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        if self._message_passing():
            return self._pyg_forward(x, edge_index, edge_attr=edge_attr,
                                     return_attention_weights=return_attention_weights)
        dropout = self.dropout if self.training else 0.0
        graph, x_src, x_dst, edge_attr = _inputs("TransformerConv", x, edge_index, False,
                                                 _edge_attr(edge_index, edge_attr), dropout=dropout,
                                                 projected=self.lin_edge is not None)
        H, C = self.heads, self.out_channels
        q = self.lin_query(x_dst).view(x_dst.size(0), H, C)
        k = self.lin_key(x_src).view(x_src.size(0), H, C)
        v = self.lin_value(x_src).view(x_src.size(0), H, C)
        if self.lin_edge is not None and edge_attr is None:
            raise ValueError("TransformerConv: the layer has edge_dim: pass edge_attr")
        weights = isinstance(return_attention_weights, bool)  # PyG's test: False returns them too
        # Without edge_dim PyG adds edge_attr to the values alone: always edge columns, no W.
        columns = edge_attr is not None and (self.lin_edge is None or _by_columns(graph, edge_attr.size(1), H, C))
        W = None
        if not columns:
            e = _edge_rows("TransformerConv", self.lin_edge, edge_attr, H, C)
        elif self.lin_edge is None:
            e = _value_columns(edge_attr, graph.num_edges, H, C)
        else:  # one row of edge_dim columns for all heads
            W, e = self.lin_edge.weight.view(H, C, -1), edge_attr.reshape(edge_attr.size(0), 1, -1)
        if columns:
            q, k, v = _edge_columns(e, q, k, v, W)
        result = gt_attention(graph, q, k, v, scale=1.0 / math.sqrt(C), edge_features=e, dropout=dropout,
                              return_attention_weights=weights)
        out = result[0] if weights else result
        out = _heads_out(_columns_out(out, C, W) if columns else out, self.concat)
        if self.root_weight:
            x_r = self.lin_skip(x_dst)
            if self.lin_beta is not None:
                beta = self.lin_beta(torch.cat([out, x_r, out - x_r], dim=-1)).sigmoid()
                out = beta * x_r + (1 - beta) * out
            else:
                out = out + x_r
        return _with_weights(out, result, graph, edge_index, False, sparse_values=False) if weights else out


class AGNNConv(_Conv):
    """PyG's AGNNConv: x'_i = sum_j softmax_j(beta cos(x_i, x_j)) x_j, over the in-neighbours j
    and (add_self_loops) i itself; beta is learned when requires_grad, else fixed at 1. Bipartite
    as the other layers: x = (x_src, x_dst) scores cos(x_dst_i, x_src_j) and aggregates x_src_j
    (PyG's AGNNConv takes one x, the square form)."""

    def __init__(self, requires_grad=True, add_self_loops=True, **kwargs):
        super().__init__()
        _reject_options("AGNNConv", **kwargs)
        self.requires_grad = requires_grad
        self.add_self_loops = add_self_loops
        if requires_grad:
            self.beta = Parameter(torch.empty(1))
        else:
            self.register_buffer("beta", torch.ones(1))
        self.reset_parameters()

    def reset_parameters(self):
        if self.requires_grad:
            with torch.no_grad():
                self.beta.fill_(1)

    def forward(self, x, edge_index):
        if self._message_passing():
            if isinstance(x, (tuple, list)):
                raise TypeError("AGNNConv: explain mode and message-passing hooks run PyG's AGNNConv, which takes "
                                "one x, not a pair (x_src, x_dst)")
            return self._pyg_forward(x, edge_index)
        graph, x_src, x_dst, _ = _inputs("AGNNConv", x, edge_index, self.add_self_loops)
        if x_src.size(1) != x_dst.size(1):
            raise ValueError(f"AGNNConv: x_src and x_dst must have the same features, got {x_src.size(1)} and "
                             f"{x_dst.size(1)}")
        return agnn_attention(graph, x_src.unsqueeze(1), self.beta,
                              x_dst=None if x_dst is x_src else x_dst.unsqueeze(1)).squeeze(1)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class GATConv(_Conv):
    """PyG's GATConv: x'_i = sum_j softmax_j(LeakyReLU(a_s^T W x_j + a_d^T W x_i)) W x_j per head,
    over the in-neighbours j and (add_self_loops) i itself; heads concatenated or averaged, then
    the optional residual W_r x_i and bias."""

    def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2, dropout=0.0,
                 add_self_loops=True, edge_dim=None, fill_value="mean", bias=True, residual=False, **kwargs):
        super().__init__()
        _reject_options("GATConv", **kwargs)
        src, dst = _channels("GATConv", in_channels)
        self.in_channels, self.out_channels, self.heads = in_channels, out_channels, heads
        self.concat = concat
        self.negative_slope = negative_slope
        self.dropout = dropout
        self.add_self_loops = add_self_loops
        self.edge_dim = edge_dim
        self.fill_value = fill_value  # the self loops' edge features, as in PyG
        self.residual = residual
        # One projection for both sides (PyG's `lin`), or with tuple in_channels one per side.
        self.lin = self.lin_src = self.lin_dst = None
        if isinstance(in_channels, int):
            self.lin = _linear(src, heads * out_channels, False, glorot=True)
        else:
            self.lin_src = _linear(src, heads * out_channels, False, glorot=True)
            self.lin_dst = _linear(dst, heads * out_channels, False, glorot=True)
        self.att_src = Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = Parameter(torch.empty(1, heads, out_channels))
        self.lin_edge = self.att_edge = None
        if edge_dim is not None:
            self.lin_edge = Linear(edge_dim, heads * out_channels, bias=False)
            self.att_edge = Parameter(torch.empty(1, heads, out_channels))
        total = out_channels * (heads if concat else 1)
        self.res = _linear(dst, total, False, glorot=True) if residual else None
        self.bias = Parameter(torch.empty(total)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        for lin in (self.lin, self.lin_src, self.lin_dst, self.lin_edge, self.res):
            _initialise(lin, glorot=True)
        _glorot(self.att_src)
        _glorot(self.att_dst)
        if self.att_edge is not None:
            _glorot(self.att_edge)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def forward(self, x, edge_index, edge_attr=None, size=None, return_attention_weights=None):
        if self._message_passing():
            return self._pyg_forward(x, edge_index, edge_attr=edge_attr, size=size,
                                     return_attention_weights=return_attention_weights)
        # PyG adds an edge term only with both edge_dim and edge_attr.
        edge_attr = _edge_attr(edge_index, edge_attr) if self.lin_edge is not None else None
        dropout = self.dropout if self.training else 0.0
        graph, x_src, x_dst, edge_attr = _inputs("GATConv", x, edge_index, self.add_self_loops, edge_attr, size,
                                                 self.fill_value, dropout, no_dst=True)
        H, C = self.heads, self.out_channels
        res = self.res(x_dst) if self.res is not None and x_dst is not None else None  # PyG: no x_dst, no residual
        weights = bool(return_attention_weights)  # PyG's test: False returns out alone
        ee = None  # the per-edge score term [E, H]: PyG's (lin_edge(edge_attr) * att_edge).sum(-1)
        if edge_attr is not None:
            # folded into one [edge_dim, H] matrix first, so no [E, H, C] tensor is formed: on the
            # H100 that projection's write and read took most of a layer's time (docs/performance.md)
            weight = self.lin_edge.weight.view(H, C, -1)
            ee = edge_attr @ (weight * self.att_edge.view(H, C, 1)).sum(dim=1).t()
        if self.lin is not None and x_src is x_dst:
            # The score terms el = <h, att_src>, er = <h, att_dst> and the attention, one autograd node.
            h = self.lin(x_src).view(x_src.size(0), H, C)
            result = _gat_layer(graph, h, None, self.att_src, self.att_dst, self.negative_slope, dropout, weights, ee)
        else:
            lin_src, lin_dst = (self.lin, self.lin) if self.lin is not None else (self.lin_src, self.lin_dst)
            h = lin_src(x_src).view(x_src.size(0), H, C)
            h_dst = lin_dst(x_dst).view(x_dst.size(0), H, C) if x_dst is not None else None
            att_dst = self.att_dst if x_dst is not None else None  # PyG's scores then have no destination term
            result = _gat_layer(graph, h, h_dst, self.att_src, att_dst, self.negative_slope, dropout, weights, ee)
        out = _gat_output(result[0] if weights else result, self.concat, res, self.bias)
        return _with_weights(out, result, graph, edge_index, self.add_self_loops) if weights else out


class GATv2Conv(_Conv):
    """PyG's GATv2Conv: x'_i = sum_j softmax_j(a^T LeakyReLU(W_s x_j + W_t x_i)) W_s x_j per head,
    over the in-neighbours j and (add_self_loops) i itself; share_weights makes W_t = W_s."""

    def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2, dropout=0.0,
                 add_self_loops=True, edge_dim=None, fill_value="mean", bias=True, share_weights=False,
                 residual=False, **kwargs):
        super().__init__()
        _reject_options("GATv2Conv", **kwargs)
        src, dst = _channels("GATv2Conv", in_channels)
        self.in_channels, self.out_channels, self.heads = in_channels, out_channels, heads
        self.concat = concat
        self.negative_slope = negative_slope
        self.dropout = dropout
        self.add_self_loops = add_self_loops
        self.edge_dim = edge_dim
        self.fill_value = fill_value
        self.residual = residual
        self.share_weights = share_weights
        self.lin_l = _linear(src, heads * out_channels, bias, glorot=True)
        self.lin_r = self.lin_l if share_weights else _linear(dst, heads * out_channels, bias, glorot=True)
        self.att = Parameter(torch.empty(1, heads, out_channels))
        self.lin_edge = Linear(edge_dim, heads * out_channels, bias=False) if edge_dim is not None else None
        total = out_channels * (heads if concat else 1)
        self.res = _linear(dst, total, False, glorot=True) if residual else None
        self.bias = Parameter(torch.empty(total)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        for lin in (self.lin_l, self.lin_r, self.lin_edge, self.res):  # lin_l twice with share_weights, as PyG
            _initialise(lin, glorot=True)
        _glorot(self.att)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        if self._message_passing():
            return self._pyg_forward(x, edge_index, edge_attr=edge_attr,
                                     return_attention_weights=return_attention_weights)
        dropout = self.dropout if self.training else 0.0
        graph, x_src, x_dst, edge_attr = _inputs("GATv2Conv", x, edge_index, self.add_self_loops,
                                                 _edge_attr(edge_index, edge_attr),
                                                 fill_value=self.fill_value, dropout=dropout)
        H, C = self.heads, self.out_channels
        res = self.res(x_dst) if self.res is not None else None
        x_l = self.lin_l(x_src).view(x_src.size(0), H, C)
        x_r = x_l if self.share_weights and x_src is x_dst else self.lin_r(x_dst).view(x_dst.size(0), H, C)
        weights = bool(return_attention_weights)  # PyG's test: False returns out alone
        result = gatv2_attention(graph, x_l, x_r, self.att.view(H, C), negative_slope=self.negative_slope,
                                 edge_features=_edge_rows("GATv2Conv", self.lin_edge, edge_attr, H, C),
                                 dropout=dropout, return_attention_weights=weights)
        out = _gat_output(result[0] if weights else result, self.concat, res, self.bias)
        return _with_weights(out, result, graph, edge_index, self.add_self_loops) if weights else out
