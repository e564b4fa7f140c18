"""Drop-in layers for PyG's TransformerConv, AGNNConv, GATConv and GATv2Conv (PyG 2.8).

Same constructor arguments, parameter names, initialisation and `forward(x, edge_index)`, so a
PyG layer's state_dict loads into ours and gives the same outputs and gradients; the attention
(scores, softmax, aggregation) runs in dfgnn's fused kernels instead of PyG's message passing.
`edge_index` is a [2, E] tensor (its Graph is built on first use and cached for that tensor) or
a prebuilt dfgnn.Graph. Not supported (raise): bipartite inputs (tuple in_channels or x),
lazy in_channels (-1), edge features (edge_dim, edge_attr), return_attention_weights (the
attention matrix is never stored), SparseTensor adjacency, MessagePassing options other than
the defaults. Attention dropout has PyG's semantics (p, scaled by 1/(1-p), training only) but
draws its mask from dfgnn's hash of (seed, edge, head), so it differs from PyG's mask.
"""

import math

import torch
from torch import Tensor
from torch.nn import Linear, Parameter

from .graph import Graph
from .ops import _gat_layer, agnn_attention, gatv2_attention, gt_attention

__all__ = ["TransformerConv", "AGNNConv", "GATConv", "GATv2Conv"]

# MessagePassing options our layers accept: the defaults of the four PyG layers.
_DEFAULT_KWARGS = {"aggr": "add", "flow": "source_to_target"}


def _reject_options(layer, in_channels=None, edge_dim=None, **kwargs):
    if in_channels is not None and (not isinstance(in_channels, int) or in_channels <= 0):
        raise ValueError(f"{layer}: in_channels must be a positive int (bipartite and lazy (-1) inputs are "
                         f"not supported), got {in_channels!r}")
    if edge_dim is not None:
        raise ValueError(f"{layer}: edge features (edge_dim) are not supported")
    for key, value in kwargs.items():
        if key not in _DEFAULT_KWARGS or _DEFAULT_KWARGS[key] != value:
            raise ValueError(f"{layer}: option {key}={value!r} is not supported")


def _glorot(t):
    # PyG's inits.glorot: uniform in +-sqrt(6 / (fan_in + fan_out)) over the last two dims.
    bound = math.sqrt(6.0 / (t.size(-2) + t.size(-1)))
    with torch.no_grad():
        t.uniform_(-bound, bound)


@torch.compiler.disable
def _graph_of_tensor(edge_index, num_nodes):
    return Graph.cached(edge_index, num_nodes)


def _graph(layer, x, edge_index, self_loops, edge_attr=None, return_attention_weights=None, size=None):
    """Checks forward's arguments; the Graph to run on (with PyG's self loops when asked)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{layer}: x must be a [N, F] tensor (bipartite (x_src, x_dst) inputs are not "
                        f"supported), got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"{layer}: x must have shape [N, F], got {list(x.shape)}")
    if edge_attr is not None:
        raise ValueError(f"{layer}: edge features (edge_attr) are not supported")
    if return_attention_weights is not None:
        raise ValueError(f"{layer}: return_attention_weights is not supported (the fused kernels never "
                         f"store the attention weights)")
    if size is not None:
        raise ValueError(f"{layer}: size is not supported (the graph is square, N = x.size(0))")
    graph = edge_index if isinstance(edge_index, Graph) else _graph_of_tensor(edge_index, x.size(0))
    if graph.num_nodes != x.size(0):
        raise ValueError(f"{layer}: x has {x.size(0)} nodes but the graph has {graph.num_nodes}")
    return graph.with_self_loops() if self_loops else graph


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


class _MultiHeadConv(torch.nn.Module):
    """The multi-head layers' repr, as PyG prints it."""

    def __repr__(self):
        return f"{self.__class__.__name__}({self.in_channels}, {self.out_channels}, heads={self.heads})"


class TransformerConv(_MultiHeadConv):
    """PyG's TransformerConv: x'_i = W1 x_i + sum_j softmax_j((W3 x_i)^T (W4 x_j) / sqrt(C)) W2 x_j,
    multi-head; with beta, a learned gate between the skip term and the aggregation. No self
    loops are added (as in PyG)."""

    def __init__(self, in_channels, out_channels, heads=1, concat=True, beta=False, dropout=0.0,
                 edge_dim=None, bias=True, root_weight=True, **kwargs):
        super().__init__()
        _reject_options("TransformerConv", in_channels, edge_dim, **kwargs)
        self.in_channels, self.out_channels, self.heads = in_channels, out_channels, heads
        self.beta = beta and root_weight
        self.root_weight = root_weight
        self.concat = concat
        self.dropout = dropout
        self.edge_dim = edge_dim
        self.lin_key = Linear(in_channels, heads * out_channels, bias=bias)
        self.lin_query = Linear(in_channels, heads * out_channels, bias=bias)
        self.lin_value = Linear(in_channels, heads * out_channels, bias=bias)
        skip = heads * out_channels if concat else out_channels
        self.lin_skip = Linear(in_channels, skip, bias=bias)  # made even without root_weight, as in PyG
        self.lin_beta = Linear(3 * skip, 1, bias=False) if self.beta else None
        self.reset_parameters()

    def reset_parameters(self):
        for lin in (self.lin_key, self.lin_query, self.lin_value, self.lin_skip, self.lin_beta):
            if lin is not None:
                lin.reset_parameters()  # kaiming_uniform(a=sqrt(5)) and uniform bias, as PyG's Linear

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        graph = _graph("TransformerConv", x, edge_index, False, edge_attr, return_attention_weights)
        H, C = self.heads, self.out_channels
        q = self.lin_query(x).view(x.size(0), H, C)
        k = self.lin_key(x).view(x.size(0), H, C)
        v = self.lin_value(x).view(x.size(0), H, C)
        out = gt_attention(graph, q, k, v, scale=1.0 / math.sqrt(C),
                           dropout=self.dropout if self.training else 0.0)
        out = _heads_out(out, self.concat)
        if self.root_weight:
            x_r = self.lin_skip(x)
            if self.lin_beta is not None:
                beta = self.lin_beta(torch.cat([out, x_r, out - x_r], dim=-1)).sigmoid()
                out = beta * x_r + (1 - beta) * out
            else:
                out = out + x_r
        return out


class AGNNConv(torch.nn.Module):
    """PyG's AGNNConv: x'_i = sum_j softmax_j(beta cos(x_i, x_j)) x_j, over the in-neighbours j
    and (add_self_loops) i itself; beta is learned when requires_grad, else fixed at 1."""

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
        graph = _graph("AGNNConv", x, edge_index, self.add_self_loops)
        return agnn_attention(graph, x.unsqueeze(1), self.beta).squeeze(1)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class GATConv(_MultiHeadConv):
    """PyG's GATConv: x'_i = sum_j softmax_j(LeakyReLU(a_s^T W x_j + a_d^T W x_i)) W x_j per head,
    over the in-neighbours j and (add_self_loops) i itself; heads concatenated or averaged, then
    the optional residual W_r x_i and bias."""

    def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2, dropout=0.0,
                 add_self_loops=True, edge_dim=None, fill_value="mean", bias=True, residual=False, **kwargs):
        super().__init__()
        _reject_options("GATConv", in_channels, edge_dim, **kwargs)
        self.in_channels, self.out_channels, self.heads = in_channels, out_channels, heads
        self.concat = concat
        self.negative_slope = negative_slope
        self.dropout = dropout
        self.add_self_loops = add_self_loops
        self.edge_dim = edge_dim
        self.fill_value = fill_value  # only used with edge features, as in PyG
        self.residual = residual
        self.lin = Linear(in_channels, heads * out_channels, bias=False)
        self.att_src = Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = Parameter(torch.empty(1, heads, out_channels))
        total = out_channels * (heads if concat else 1)
        self.res = Linear(in_channels, total, bias=False) if residual else None
        self.bias = Parameter(torch.empty(total)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        for t in (self.lin.weight, self.res.weight if self.res is not None else None, self.att_src, self.att_dst):
            if t is not None:
                _glorot(t)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def forward(self, x, edge_index, edge_attr=None, size=None, return_attention_weights=None):
        graph = _graph("GATConv", x, edge_index, self.add_self_loops, edge_attr, return_attention_weights, size)
        H, C = self.heads, self.out_channels
        res = self.res(x) if self.res is not None else None
        h = self.lin(x).view(x.size(0), H, C)
        # The score terms el = <h, att_src>, er = <h, att_dst> and the attention, one autograd node.
        out = _gat_layer(graph, h, self.att_src, self.att_dst, self.negative_slope,
                         self.dropout if self.training else 0.0)
        return _gat_output(out, self.concat, res, self.bias)


class GATv2Conv(_MultiHeadConv):
    """PyG's GATv2Conv: x'_i = sum_j softmax_j(a^T LeakyReLU(W_s x_j + W_t x_i)) W_s x_j per head,
    over the in-neighbours j and (add_self_loops) i itself; share_weights makes W_t = W_s."""

    def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2, dropout=0.0,
                 add_self_loops=True, edge_dim=None, fill_value="mean", bias=True, share_weights=False,
                 residual=False, **kwargs):
        super().__init__()
        _reject_options("GATv2Conv", in_channels, edge_dim, **kwargs)
        self.in_channels, self.out_channels, self.heads = in_channels, out_channels, heads
        self.concat = concat
        self.negative_slope = negative_slope
        self.dropout = dropout
        self.add_self_loops = add_self_loops
        self.edge_dim = edge_dim
        self.fill_value = fill_value
        self.residual = residual
        self.share_weights = share_weights
        self.lin_l = Linear(in_channels, heads * out_channels, bias=bias)
        self.lin_r = self.lin_l if share_weights else Linear(in_channels, heads * out_channels, bias=bias)
        self.att = Parameter(torch.empty(1, heads, out_channels))
        total = out_channels * (heads if concat else 1)
        self.res = Linear(in_channels, total, bias=False) if residual else None
        self.bias = Parameter(torch.empty(total)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        for lin in (self.lin_l, self.lin_r):  # twice the same one with share_weights, as PyG
            _glorot(lin.weight)
            if lin.bias is not None:  # PyG's Linear: uniform in +-1/sqrt(in_channels)
                bound = 1.0 / math.sqrt(lin.in_features)
                torch.nn.init.uniform_(lin.bias, -bound, bound)
        if self.res is not None:
            _glorot(self.res.weight)
        _glorot(self.att)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        graph = _graph("GATv2Conv", x, edge_index, self.add_self_loops, edge_attr, return_attention_weights)
        H, C = self.heads, self.out_channels
        res = self.res(x) if self.res is not None else None
        x_l = self.lin_l(x).view(x.size(0), H, C)
        x_r = x_l if self.share_weights else self.lin_r(x).view(x.size(0), H, C)
        out = gatv2_attention(graph, x_l, x_r, self.att.view(H, C), negative_slope=self.negative_slope,
                              dropout=self.dropout if self.training else 0.0)
        return _gat_output(out, self.concat, res, self.bias)
