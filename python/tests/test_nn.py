"""The layers against PyG's: same initialisation from the same seed, then, with the same
weights, outputs and gradients (input and every parameter) within fp32 of PyG run in float64."""

import copy

import pytest
import torch
import torch_geometric.nn as pyg_nn
from torch_geometric.typing import SparseTensor  # torch_sparse's, or PyG's stand-in without it

import dfgnn
import dfgnn.nn
import reference as ref
from conftest import DEVICES, assert_close

N, F = 20, 12
CASES = [
    ("TransformerConv", (F, 8), {}),
    ("TransformerConv", (F, 6), {"heads": 3, "beta": True}),
    ("TransformerConv", (F, 6), {"heads": 2, "concat": False, "bias": False}),
    ("TransformerConv", (F, 5), {"heads": 2, "root_weight": False, "beta": True}),
    ("AGNNConv", (), {}),
    ("AGNNConv", (), {"requires_grad": False, "add_self_loops": False}),
    ("GATConv", (F, 8), {}),
    ("GATConv", (F, 6), {"heads": 3, "concat": False, "negative_slope": 0.1}),
    ("GATConv", (F, 6), {"heads": 2, "add_self_loops": False, "residual": True, "bias": False}),
    ("GATConv", (F, 6), {"heads": 2, "dropout": 0.5}),  # dropout: eval mode only here
    ("GATConv", (F, 5), {"heads": 1, "concat": False}),  # one head averaged: the head itself
    ("GATv2Conv", (F, 8), {}),
    ("GATv2Conv", (F, 6), {"heads": 3, "share_weights": True, "residual": True}),
    ("GATv2Conv", (F, 6), {"heads": 2, "concat": False, "add_self_loops": False, "bias": False}),
]


def make(name, args, kwargs):
    torch.manual_seed(42)
    theirs = getattr(pyg_nn, name)(*args, **kwargs)
    torch.manual_seed(42)
    ours = getattr(dfgnn.nn, name)(*args, **kwargs)
    return theirs, ours


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_same_initialisation(name, args, kwargs):
    theirs, ours = make(name, args, kwargs)
    theirs_state, ours_state = theirs.state_dict(), ours.state_dict()
    assert list(ours_state) == list(theirs_state)
    for key in theirs_state:
        assert torch.equal(ours_state[key], theirs_state[key]), key


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("graph_arg", ["edge_index", "graph"])
@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_pyg(name, args, kwargs, graph_arg, device):
    theirs, ours = make(name, args, kwargs)
    theirs = copy.deepcopy(theirs).double().eval()
    ours.load_state_dict(theirs.state_dict())  # float64 weights rounded into our float32 ones
    theirs.load_state_dict(ours.state_dict())  # so both hold the same (float32) values
    ours = ours.to(device).eval()
    edge_index = ref.random_graph(N, 70, 3)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(N, F, generator=gen)
    x_theirs = x.double().requires_grad_()
    x_ours = x.to(device).requires_grad_()
    arg = edge_index.to(device) if graph_arg == "edge_index" else dfgnn.Graph.from_edge_index(edge_index, N)
    out = ours(x_ours, arg)
    expected = theirs(x_theirs, edge_index)
    assert_close(out, expected, 1e-5, f"{name} out")
    grad = torch.randn(expected.shape, generator=gen, dtype=torch.float64)
    out.backward(grad.float().to(device))
    expected.backward(grad)
    assert_close(x_ours.grad, x_theirs.grad, 2e-5, f"{name} dx")
    theirs_params = dict(theirs.named_parameters())
    # dlin_key.bias is 0 in exact arithmetic (a shift of all keys cancels in the softmax)
    scale = max((p.grad.abs().max().item() for p in theirs_params.values() if p.grad is not None), default=0.0)
    for key, p in ours.named_parameters():
        if theirs_params[key].grad is None:  # unused, as lin_skip without root_weight
            assert p.grad is None, key
            continue
        assert_close(p.grad, theirs_params[key].grad, 1e-4, f"{name} d{key}", scale)


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_empty_graph(name, args, kwargs):
    """No nodes: an empty output of the layer's width, and gradients (PyG's view(-1, H, C)
    cannot infer -1 from zero elements)."""
    _, ours = make(name, args, kwargs)
    x = torch.randn(0, F, requires_grad=True)
    out = ours(x, torch.zeros(2, 0, dtype=torch.int64))
    assert out.shape == (0, ours(torch.randn(1, F), torch.zeros(2, 0, dtype=torch.int64)).size(1))
    out.sum().backward()
    assert x.grad.shape == x.shape


@pytest.mark.parametrize("device", DEVICES)
def test_training_dropout(device):
    """Attention dropout in training mode: a new mask per step (repeatable under
    torch.manual_seed), none in eval mode."""
    conv = dfgnn.nn.GATConv(F, 4, heads=2, dropout=0.5).to(device)
    edge_index = ref.random_graph(N, 70, 3).to(device)
    x = torch.randn(N, F, device=device)
    torch.manual_seed(0)
    a, b = conv(x, edge_index), conv(x, edge_index)
    torch.manual_seed(0)
    assert torch.equal(conv(x, edge_index), a) and not torch.equal(a, b)
    conv.eval()
    assert torch.equal(conv(x, edge_index), conv(x, edge_index))


@pytest.mark.parametrize("make_layer,match", [
    (lambda: dfgnn.nn.GATConv((F, F, F), 4), "a pair of them"),
    (lambda: dfgnn.nn.TransformerConv(0, 4), "positive int, -1"),
    (lambda: dfgnn.nn.TransformerConv(F, 4, aggr="mean"), "option aggr='mean' is not supported"),
    (lambda: dfgnn.nn.AGNNConv(flow="target_to_source"), "option flow='target_to_source'"),
])
def test_unsupported_options(make_layer, match):
    with pytest.raises(ValueError, match=match):
        make_layer()


@pytest.mark.parametrize("call,error,match", [
    (lambda c, x, e: c((x, x[:3]), e, size=(N, 4)), ValueError, "size = \\(20, 4\\) but the inputs have 20 sources and 3"),
    (lambda c, x, e: c(x, e, edge_attr=torch.ones(e.size(1) - 1, 3)), ValueError,
     "edge_attr must have shape \\[E, edge_dim\\] with E = 72"),
    (lambda c, x, e: c(x[:5], e), ValueError, "is outside \\[0, 5\\)"),
    (lambda c, x, e: c(x[:5], dfgnn.Graph.from_edge_index(e, N)), ValueError,
     "the inputs have 5 sources and 5 destinations but the graph has 20 and 20"),
    (lambda c, x, e: c(x, e.float()), TypeError, "edge_index must be int64 or int32"),
    (lambda c, x, e: c(x.double(), e), RuntimeError, "dtype"),  # the linear layer's own error
])
def test_bad_forward_arguments(call, error, match):
    conv = dfgnn.nn.GATConv(F, 4, heads=2, edge_dim=3)
    edge_index = ref.random_graph(N, 70, 3)
    edge_index[0, 1] = N - 1
    with pytest.raises(error, match=match):
        call(conv, torch.randn(N, F), edge_index)


# ---- bipartite, lazy and heterogeneous ----------------------------------------------------------

NS, ND, FS, FD = 26, 11, 9, 7  # sources, destinations and their feature widths
BIPARTITE_CASES = [
    ("TransformerConv", ((FS, FD), 6), {"heads": 2, "beta": True}),
    ("TransformerConv", ((FS, FD), 5), {"heads": 3, "concat": False}),
    ("GATConv", ((FS, FD), 6), {"heads": 2}),  # self loops on the first min(NS, ND) ids, as PyG
    ("GATConv", ((FS, FD), 4), {"heads": 3, "add_self_loops": False, "residual": True}),
    ("GATConv", (FS, 5), {"heads": 2, "add_self_loops": False}),  # one lin for both sides
    ("GATv2Conv", ((FS, FD), 6), {"heads": 2, "residual": True}),
    ("GATv2Conv", (FS, 5), {"heads": 2, "share_weights": True, "add_self_loops": False}),
]


def _compare(theirs, ours, x, edge_index, device, what, edge_attr=None):
    """ours (float32) against theirs (float64, same weights) on x (a tensor or a pair) and the
    edge features edge_attr (None: none): outputs, every input's and every parameter's gradient."""
    theirs = theirs.double().eval()
    ours.load_state_dict(theirs.state_dict())
    theirs.load_state_dict(ours.state_dict())
    ours = ours.to(device).eval()
    pair = isinstance(x, tuple)
    xs = (x if pair else (x,)) + ((edge_attr,) if edge_attr is not None else ())
    x_theirs = [t.double().requires_grad_() for t in xs]
    x_ours = [t.to(device).requires_grad_() for t in xs]
    n = 2 if pair else 1
    kwargs_ours = {"edge_attr": x_ours[n]} if edge_attr is not None else {}
    kwargs_theirs = {"edge_attr": x_theirs[n]} if edge_attr is not None else {}
    out = ours(tuple(x_ours[:2]) if pair else x_ours[0], edge_index.to(device), **kwargs_ours)
    expected = theirs(tuple(x_theirs[:2]) if pair else x_theirs[0], edge_index, **kwargs_theirs)
    assert_close(out, expected, 1e-5, f"{what} out")
    grad = torch.randn(expected.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    out.backward(grad.float().to(device))
    expected.backward(grad)
    for i, (a, b) in enumerate(zip(x_ours, x_theirs)):
        assert_close(a.grad, b.grad, 2e-5, f"{what} dx{i}")
    theirs_params = dict(theirs.named_parameters())
    scale = max((p.grad.abs().max().item() for p in theirs_params.values() if p.grad is not None), default=0.0)
    for key, p in ours.named_parameters():
        if theirs_params[key].grad is None:
            assert p.grad is None, key
            continue
        assert_close(p.grad, theirs_params[key].grad, 1e-4, f"{what} d{key}", scale)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,args,kwargs", BIPARTITE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(BIPARTITE_CASES)])
def test_bipartite_matches_pyg(name, args, kwargs, device):
    """x = (x_src, x_dst) over a bipartite edge_index (a hub row, an empty row, a source without
    edges): the same outputs and gradients as PyG's layer with the same weights."""
    theirs, ours = make(name, args, kwargs)
    gen = torch.Generator().manual_seed(2)
    shared = isinstance(args[0], int)
    x = (torch.randn(NS, FS, generator=gen), torch.randn(ND, FS if shared else FD, generator=gen))
    _compare(theirs, ours, x, ref.random_bipartite(NS, ND, 60, 4, hub_edges=40), device, name)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("args,kwargs,size", [
    ((FS, 6), {"heads": 2}, None),  # as many destinations as sources, self loops on all
    ((FS, 6), {"heads": 2}, (NS, ND)),  # size names the destinations; loops on min(NS, ND)
    (((FS, FD), 5), {"heads": 3, "residual": True, "concat": False}, (NS, ND)),  # no x_dst: no residual
    ((FS, 6), {"heads": 2, "add_self_loops": False, "edge_dim": 3}, (NS, ND)),
])
def test_gat_without_x_dst(args, kwargs, size, device):
    """GATConv with x = (x_src, None), as PyG takes it: scores without a destination term over
    size[1] destinations (default: as many as sources); the same outputs and gradients (att_dst
    and the residual get none), with the attention weights."""
    theirs, ours = make("GATConv", args, kwargs)
    theirs = theirs.double().eval()
    ours.load_state_dict(theirs.state_dict())
    theirs.load_state_dict(ours.state_dict())
    ours = ours.to(device).eval()
    gen = torch.Generator().manual_seed(8)
    nd = size[1] if size else NS
    edge_index = ref.random_bipartite(NS, nd, 60, 4, hub_edges=30)
    x = torch.randn(NS, FS, generator=gen)
    edge_attr = torch.randn(edge_index.size(1), 3, generator=gen) if "edge_dim" in kwargs else None
    x_theirs, x_ours = x.double().requires_grad_(), x.to(device).requires_grad_()
    out, (edges, alpha) = ours((x_ours, None), edge_index.to(device), edge_attr=None if edge_attr is None else
                               edge_attr.to(device), size=size, return_attention_weights=True)
    expected, (expected_edges, expected_alpha) = theirs((x_theirs, None), edge_index, size=size, edge_attr=None
                                                        if edge_attr is None else edge_attr.double(),
                                                        return_attention_weights=True)
    assert_close(out, expected, 1e-5, "out")
    assert torch.equal(edges.cpu(), expected_edges)
    assert_close(alpha, expected_alpha, 1e-5, "alpha")
    grad = torch.randn(expected.shape, generator=gen, dtype=torch.float64)
    out.backward(grad.float().to(device))
    expected.backward(grad)
    assert_close(x_ours.grad, x_theirs.grad, 2e-5, "dx")
    theirs_params = dict(theirs.named_parameters())
    for key, p in ours.named_parameters():
        if theirs_params[key].grad is None:
            assert p.grad is None, key
        else:
            assert_close(p.grad, theirs_params[key].grad, 1e-4, f"d{key}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("add_self_loops", [True, False])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_agnn_pair_against_reference(requires_grad, add_self_loops, device):
    """AGNNConv on x = (x_src, x_dst), as the other layers take pairs (PyG's AGNNConv takes one
    x): score beta cos(x_dst_i, x_src_j), values x_src_j, over a bipartite graph with PyG's self
    loops (the first min(NS, ND) ids), against the float64 reference: out, dx_src, dx_dst, dbeta.
    On a square graph a pair of one tensor is that tensor."""
    conv = dfgnn.nn.AGNNConv(requires_grad=requires_grad, add_self_loops=add_self_loops).to(device)
    with torch.no_grad():
        conv.beta.fill_(1.7)
    edge_index = ref.random_bipartite(NS, ND, 60, 4, hub_edges=40)
    if add_self_loops:
        kept = edge_index[:, edge_index[0] != edge_index[1]]
        edge_index_loops = torch.cat([kept, torch.arange(min(NS, ND)).expand(2, -1)], dim=1)
    else:
        edge_index_loops = edge_index
    gen = torch.Generator().manual_seed(5)
    x = (torch.randn(NS, FS, generator=gen), torch.randn(ND, FS, generator=gen))
    x_theirs = [t.double().requires_grad_() for t in x]
    x_ours = [t.to(device).requires_grad_() for t in x]
    beta = torch.tensor([1.7], dtype=torch.float64, requires_grad=True)
    out = conv(tuple(x_ours), edge_index.to(device))
    expected = ref.agnn(edge_index_loops, x_theirs[0].unsqueeze(1), beta, x_dst=x_theirs[1].unsqueeze(1)).squeeze(1)
    assert_close(out, expected, 1e-5, "out")
    grad = torch.randn(expected.shape, generator=gen, dtype=torch.float64)
    out.backward(grad.float().to(device))
    expected.backward(grad)
    for name, a, b in zip(("dx_src", "dx_dst"), x_ours, x_theirs):
        assert_close(a.grad, b.grad, 2e-5, name)
    if requires_grad:
        assert_close(conv.beta.grad, beta.grad, 1e-4, "dbeta")
    square = torch.randn(N, FS, device=device)
    graph = ref.random_graph(N, 70, 3).to(device)
    assert torch.equal(conv((square, square), graph), conv(square, graph))
    with pytest.raises(ValueError, match="AGNNConv: x_src and x_dst must have the same features, got 9 and 7"):
        conv((x_ours[0], torch.randn(ND, FD, device=device)), edge_index.to(device))
    handle = conv.register_message_forward_hook(lambda m, inputs, out: out)  # PyG's forward, one x
    with pytest.raises(TypeError, match="AGNNConv: explain mode and message-passing hooks run PyG's AGNNConv, "
                                        "which takes one x, not a pair"):
        conv(tuple(x_ours), edge_index.to(device))
    handle.remove()


@pytest.mark.parametrize("name", ["TransformerConv", "GATConv", "GATv2Conv"])
def test_lazy_in_channels(name):
    """in_channels = -1: shaped and initialised on the first call as PyG's lazy Linear is (same
    seed, same weights), then the same outputs and gradients."""
    theirs, ours = make(name, ((-1, -1), 4), {"heads": 2})
    gen = torch.Generator().manual_seed(5)
    x = (torch.randn(NS, FS, generator=gen), torch.randn(ND, FD, generator=gen))
    edge_index = ref.random_bipartite(NS, ND, 60, 6)
    torch.manual_seed(9)
    theirs(x, edge_index)
    torch.manual_seed(9)
    ours(x, edge_index)
    theirs_state, ours_state = theirs.state_dict(), ours.state_dict()
    assert list(ours_state) == list(theirs_state)
    for key in theirs_state:
        assert torch.equal(ours_state[key], theirs_state[key]), key
    _compare(theirs, ours, x, edge_index, "cpu", name)


EDGE_CASES = [  # (layer, args, kwargs, bipartite); edge_dim 3 unless the kwargs say
    ("TransformerConv", (F, 6), {"heads": 2, "edge_dim": 3}, False),
    ("TransformerConv", (F, 5), {"heads": 3, "concat": False, "beta": True, "edge_dim": 3}, False),
    ("TransformerConv", ((FS, FD), 6), {"heads": 2, "edge_dim": 3}, True),
    # edge columns (dfgnn.nn._by_columns, where the test lets them run) one row for all heads
    # above, here in whole 16-byte chunks at one head; then edge_dim >= H x C, always rows
    ("TransformerConv", (F, 16), {"heads": 1, "edge_dim": 8}, False),
    ("TransformerConv", (F, 2), {"heads": 1, "edge_dim": 3}, False),
    ("GATConv", (F, 6), {"heads": 2, "edge_dim": 3}, False),  # loops filled with the mean
    ("GATConv", (F, 6), {"heads": 2, "edge_dim": 3, "fill_value": "add", "residual": True}, False),
    ("GATConv", (F, 5), {"heads": 3, "edge_dim": 3, "fill_value": 0.5, "concat": False}, False),
    ("GATConv", (F, 6), {"heads": 2, "edge_dim": 3, "add_self_loops": False}, False),
    ("GATConv", ((FS, FD), 6), {"heads": 2, "edge_dim": 3}, True),
    ("GATv2Conv", (F, 6), {"heads": 2, "edge_dim": 3}, False),
    ("GATv2Conv", (F, 6), {"heads": 2, "edge_dim": 1, "share_weights": True}, False),  # edge_attr [E]
    ("GATv2Conv", ((FS, FD), 6), {"heads": 2, "edge_dim": 3, "add_self_loops": False}, True),
]


def _hub_graph(bipartite, gen):
    """(edge_index, x) with a hub row: a bipartite graph and x = (x_src, x_dst), or a graph on N
    nodes and x [N, F]; the features drawn from gen."""
    if bipartite:
        edge_index = ref.random_bipartite(NS, ND, 60, 4, hub_edges=40)
        return edge_index, (torch.randn(NS, FS, generator=gen), torch.randn(ND, FD, generator=gen))
    return ref.random_graph(N, 70, 3, hub_edges=30), torch.randn(N, F, generator=gen)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,args,kwargs,bipartite", EDGE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(EDGE_CASES)])
@pytest.mark.parametrize("columns", [False, True])
def test_edge_features_match_pyg(name, args, kwargs, bipartite, device, columns, monkeypatch):
    """edge_dim and edge_attr (a self loop, a duplicate edge, a hub row; self loops filled as
    PyG fills them): the same outputs and gradients, edge_attr's included, as PyG's layer;
    TransformerConv with its edge term as edge columns wherever they fit, and as rows."""
    if columns and name != "TransformerConv":
        pytest.skip("edge columns are TransformerConv's")
    monkeypatch.setattr(dfgnn.nn, "_COLUMNS_DEGREE", 0 if columns else float("inf"))
    monkeypatch.setattr(dfgnn.nn, "_COLUMNS_HEADS", float("inf"))
    theirs, ours = make(name, args, kwargs)
    gen = torch.Generator().manual_seed(6)
    edge_index, x = _hub_graph(bipartite, gen)
    dim = kwargs["edge_dim"]
    edge_attr = torch.randn(edge_index.size(1), *((dim,) if dim > 1 else ()), generator=gen)
    _compare(theirs, ours, x, edge_index, device, name, edge_attr)


def test_edge_columns_rule():
    """TransformerConv's default form: edge columns at one head from mean in-degree 16 where they
    fit, rows otherwise (docs/performance.md, "Edge features")."""
    dense = dfgnn.Graph.from_edge_index(ref.random_graph(8, 8 * 16, 3), 8)
    sparse = dfgnn.Graph.from_edge_index(ref.random_graph(8, 8 * 15, 3), 8)
    assert dfgnn.nn._by_columns(dense, 16, 1, 128)
    assert not dfgnn.nn._by_columns(sparse, 16, 1, 128)  # too few edges per node
    assert not dfgnn.nn._by_columns(dense, 16, 4, 32)  # several heads
    assert not dfgnn.nn._by_columns(dense, 128, 1, 128)  # no fewer attributes than projected
    assert not dfgnn.nn._by_columns(dense, 12, 1, 250)  # 262 wide, not whole 16-byte chunks


@pytest.mark.parametrize("name,args,kwargs,bipartite", EDGE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(EDGE_CASES)])
def test_edge_dim_same_initialisation(name, args, kwargs, bipartite):
    test_same_initialisation(name, args, kwargs)


@pytest.mark.parametrize("name", ["TransformerConv", "GATv2Conv"])
def test_no_x_dst_is_gat_only(name):
    """x = (x_src, None): PyG's GATConv takes it, its TransformerConv and GATv2Conv fail."""
    with pytest.raises(TypeError, match="x_dst = None: GATConv's only, as in PyG"):
        getattr(dfgnn.nn, name)(F, 4)((torch.randn(N, F), None), ref.random_graph(N, 70, 3))


def test_edge_attr_needs_edge_dim():
    edge_index = ref.random_graph(N, 70, 3)
    x, edge_attr = torch.randn(N, F), torch.randn(edge_index.size(1), 3)
    with pytest.raises(ValueError, match="GATv2Conv: edge_attr was passed but the layer has no edge_dim"):
        dfgnn.nn.GATv2Conv(F, 4)(x, edge_index, edge_attr=edge_attr)
    with pytest.raises(ValueError, match="TransformerConv: the layer has edge_dim: pass edge_attr"):
        dfgnn.nn.TransformerConv(F, 4, edge_dim=3)(x, edge_index)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", ["EHC", "E1C", "EH1", "E11", "HC", "C"])
@pytest.mark.parametrize("args,kwargs,bipartite", [
    ((F, 6), {"heads": 2}, False),
    ((F, 5), {"heads": 3, "concat": False, "beta": True}, False),
    (((FS, FD), 6), {"heads": 2}, True),
])
def test_transformer_edge_attr_without_edge_dim(args, kwargs, bipartite, shape, device):
    """TransformerConv without edge_dim adds edge_attr to the values, broadcast to [E, H, C], as
    PyG's does: the same outputs and gradients, edge_attr's included."""
    theirs, ours = make("TransformerConv", args, kwargs)
    gen = torch.Generator().manual_seed(7)
    edge_index, x = _hub_graph(bipartite, gen)
    sizes = {"E": edge_index.size(1), "H": kwargs["heads"], "C": args[1], "1": 1}
    edge_attr = torch.randn(*(sizes[c] for c in shape), generator=gen)
    _compare(theirs, ours, x, edge_index, device, f"TransformerConv {shape}", edge_attr)


def test_transformer_edge_attr_must_broadcast():
    edge_index = ref.random_graph(N, 70, 3)
    conv = dfgnn.nn.TransformerConv(F, 4, heads=2)
    with pytest.raises(ValueError, match="without edge_dim, edge_attr is added to the values \\[E, H, C\\] = "
                                         "\\[72, 2, 4\\].*got \\[72, 3\\]"):
        conv(torch.randn(N, F), edge_index, edge_attr=torch.randn(edge_index.size(1), 3))


SPARSE_CASES = [  # (layer, args, kwargs, x): edge_dim 3 from the adjacency's values [E, 3]
    ("TransformerConv", (F, 6), {"heads": 2}, "square"),
    ("TransformerConv", ((FS, FD), 6), {"heads": 2, "edge_dim": 3}, "bipartite"),
    ("AGNNConv", (), {}, "square"),
    ("GATConv", (F, 6), {"heads": 2}, "square"),  # self loops: PyG's coalesced looped adjacency back
    ("GATConv", (F, 6), {"heads": 2, "add_self_loops": False, "edge_dim": 3}, "square"),
    ("GATConv", ((FS, FD), 6), {"heads": 2, "edge_dim": 3, "fill_value": "add"}, "bipartite"),
    ("GATConv", (FS, 6), {"heads": 2}, "no_dst"),  # x = (x_src, None): the adjacency's rows
    ("GATv2Conv", (F, 6), {"heads": 2, "edge_dim": 3}, "square"),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("name,args,kwargs,form", SPARSE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(SPARSE_CASES)])
def test_sparse_adjacency(name, args, kwargs, form, layout, device):
    """A torch.sparse adj_t in place of edge_index, as PyG's layers take it (rows destinations,
    columns sources, edges in its entries' order; values [E, F] read as edge_attr): the same
    outputs and input gradients, and the attention weights as PyG returns them (TransformerConv
    adj_t itself, the GAT layers the adjacency they ran on, self loops included, holding alpha)."""
    theirs, ours = make(name, args, kwargs)
    theirs = theirs.double().eval()
    ours.load_state_dict(theirs.state_dict())
    theirs.load_state_dict(ours.state_dict())
    ours = ours.to(device).eval()
    gen = torch.Generator().manual_seed(9)
    if form == "square":
        edge_index, ns, nd = ref.random_graph(N, 70, 3, hub_edges=30), N, N
        x = torch.randn(N, F, generator=gen)
    else:
        edge_index, ns, nd = ref.random_bipartite(NS, ND, 60, 4, hub_edges=40), NS, ND
        x = (torch.randn(NS, FS, generator=gen), torch.randn(ND, FD, generator=gen) if form == "bipartite" else None)
    values = torch.randn(edge_index.size(1), *((3,) if "edge_dim" in kwargs else ()), generator=gen)
    adj = torch.sparse_coo_tensor(edge_index.flip(0), values, (nd, ns, *values.shape[1:])).coalesce()
    adj = adj if layout == "coo" else adj.to_sparse_csr()
    xs = x if isinstance(x, tuple) else (x,)
    x_theirs = [t.double().requires_grad_() if t is not None else None for t in xs]
    x_ours = [t.to(device).requires_grad_() if t is not None else None for t in xs]
    args_theirs = (tuple(x_theirs) if isinstance(x, tuple) else x_theirs[0]), adj.double()
    args_ours = (tuple(x_ours) if isinstance(x, tuple) else x_ours[0]), adj.to(device)
    expected, out = theirs(*args_theirs), ours(*args_ours)
    assert_close(out, expected, 1e-5, f"{name} out")
    grad = torch.randn(expected.shape, generator=gen, dtype=torch.float64)
    out.backward(grad.float().to(device))
    expected.backward(grad)
    for i, (a, b) in enumerate(zip(x_ours, x_theirs)):
        if b is not None:
            assert_close(a.grad, b.grad, 2e-5, f"{name} dx{i}")
    if name == "AGNNConv":
        return
    _, (edges, alpha) = ours(*args_ours, return_attention_weights=True)
    if "edge_dim" in kwargs and name != "TransformerConv":
        # PyG's GAT layers fail here (set_sparse_value sizes the result [N, NS, F, H]); ours is
        # the adjacency [N, NS, H] holding alpha
        assert edges.shape == (nd, ns, kwargs["heads"]) and torch.equal(edges.values(), alpha)
        return
    _, (expected_edges, expected_alpha) = theirs(*args_theirs, return_attention_weights=True)
    assert_close(alpha, expected_alpha, 1e-5, f"{name} alpha")
    assert edges.layout == expected_edges.layout and edges.shape == expected_edges.shape
    for part in ("indices", "crow_indices", "col_indices", "values"):
        if hasattr(expected_edges, part) and (part == "values" or (part == "indices") == (layout == "coo")):
            assert_close(getattr(edges, part)(), getattr(expected_edges, part)(), 1e-5, f"{name} edges {part}")


@pytest.mark.parametrize("adj,error,match", [
    (lambda a: torch.sparse_coo_tensor(a.indices(), a.values(), a.shape), ValueError, "pass adj_t.coalesce\\(\\)"),
    (lambda a: a.to_sparse_csc(), ValueError, "got torch.sparse_csc: pass adj_t.to_sparse_csr\\(\\)"),
    (lambda a: SparseTensor.__new__(SparseTensor), TypeError,
     "torch_sparse's SparseTensor adj_t: pass adj_t.to_torch_sparse_csr_tensor\\(\\)"),
])
def test_sparse_adjacency_refused(adj, error, match):
    """What PyG's layers read inconsistently or refuse raises, naming what to pass."""
    edge_index = ref.random_graph(N, 70, 3)
    coo = torch.sparse_coo_tensor(edge_index.flip(0), torch.ones(edge_index.size(1)), (N, N)).coalesce()
    with pytest.raises(error, match=match):
        dfgnn.nn.GATConv(F, 4)(torch.randn(N, F), adj(coo))


MESSAGE_PASSING_CASES = [
    ("TransformerConv", (F, 6), {"heads": 2, "edge_dim": 3}),
    ("AGNNConv", (), {}),
    ("GATConv", (F, 6), {"heads": 2, "edge_dim": 3}),
    ("GATv2Conv", (F, 6), {"heads": 2}),
]


@pytest.mark.parametrize("name,args,kwargs", MESSAGE_PASSING_CASES,
                         ids=[c[0] for c in MESSAGE_PASSING_CASES])
def test_message_passing_hooks(name, args, kwargs):
    """MessagePassing's hooks (propagate, message, edge_update) see and change what they do on
    PyG's layer: the layer runs PyG's forward while one is registered, and the fused kernels
    again once they are removed."""
    theirs, ours = make(name, args, kwargs)
    theirs, ours = theirs.eval(), ours.eval()
    assert len(dfgnn.nn._HOOKS) == 10 and all(isinstance(getattr(ours, h), dict) for h in dfgnn.nn._HOOKS)
    edge_index = ref.random_graph(N, 70, 3)
    gen = torch.Generator().manual_seed(10)
    x = torch.randn(N, F, generator=gen)
    extra = {"edge_attr": torch.randn(edge_index.size(1), 3, generator=gen)} if "edge_dim" in kwargs else {}
    fused = ours(x, edge_index, **extra)
    seen = {}
    for layer in (theirs, ours):
        record = seen.setdefault(layer.__module__.split(".")[0], [])  # what the hooks see
        handles = [
            layer.register_propagate_forward_pre_hook(lambda m, inputs, r=record: r.append(sorted(inputs[2]))),
            layer.register_message_forward_hook(lambda m, inputs, out, r=record: r.append(out.shape) or 2 * out),
            layer.register_propagate_forward_hook(lambda m, inputs, out: out + 1),
        ]
        if name.startswith("GAT"):
            handles.append(layer.register_edge_update_forward_hook(lambda m, inputs, out, r=record:
                                                                    r.append(out.shape)))
    expected, out = theirs(x, edge_index, **extra), ours(x, edge_index, **extra)
    assert seen["dfgnn"] == seen["torch_geometric"] and len(seen["dfgnn"]) == 2 + name.startswith("GAT")
    assert_close(out, expected, 1e-6, f"{name} with hooks")
    if name != "AGNNConv":  # PyG's attention weights, from the messages the hooks changed
        expected, (expected_edges, expected_alpha) = theirs(x, edge_index, **extra, return_attention_weights=True)
        out, (edges, alpha) = ours(x, edge_index, **extra, return_attention_weights=True)
        assert_close(out, expected, 1e-6, f"{name} with hooks and weights")
        assert torch.equal(edges, expected_edges)
        assert_close(alpha, expected_alpha, 1e-6, f"{name} alpha with hooks")
    for handle in handles:  # ours
        handle.remove()
    assert not ours._message_passing() and torch.equal(ours(x, edge_index, **extra), fused)


@pytest.mark.parametrize("name,args,kwargs", MESSAGE_PASSING_CASES,
                         ids=[c[0] for c in MESSAGE_PASSING_CASES])
def test_explain_edge_mask(name, args, kwargs):
    """Explain mode, as PyG's explainers set it (set_masks: an edge mask on every
    MessagePassing layer): the same output and mask gradient as PyG's layer, also for a Graph in
    place of edge_index."""
    from torch_geometric.explain.algorithm.utils import clear_masks, set_masks
    theirs, ours = make(name, args, kwargs)
    theirs, ours = theirs.eval(), ours.eval()
    edge_index = ref.random_graph(N, 70, 3)  # with a self loop, which the GAT layers' mask skips
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(N, F, generator=gen)
    extra = {"edge_attr": torch.randn(edge_index.size(1), 3, generator=gen)} if "edge_dim" in kwargs else {}
    start = torch.randn(edge_index.size(1), generator=gen)
    results = []
    for layer, edges in ((theirs, edge_index), (ours, edge_index), (ours, dfgnn.Graph.from_edge_index(edge_index, N))):
        mask = torch.nn.Parameter(start.clone())
        set_masks(layer, mask, edge_index)
        out = layer(x, edges, **extra)
        out.square().sum().backward()
        clear_masks(layer)
        assert not layer._explain
        results.append((out, mask.grad))
    for out, grad in results[1:]:
        assert_close(out, results[0][0], 1e-6, f"{name} out")
        assert_close(grad, results[0][1], 1e-5, f"{name} mask grad")


def test_message_passing_bipartite_graph():
    """Under a hook a bipartite Graph runs as PyG's edge_index of the Graph's size, which PyG's
    GATConv on x = (x_src, None) needs for its destinations; a user's subclass of a layer runs
    PyG's forward too."""
    class Sub(dfgnn.nn.GATConv):
        pass

    kwargs = {"heads": 2, "add_self_loops": False, "edge_dim": 3}
    theirs = pyg_nn.GATConv(F, 4, **kwargs).eval()
    ours = Sub(F, 4, **kwargs).eval()
    ours.load_state_dict(theirs.state_dict())
    edge_index = ref.random_bipartite(N, 7, 40, 5)
    gen = torch.Generator().manual_seed(15)
    x, edge_attr = torch.randn(N, F, generator=gen), torch.randn(edge_index.size(1), 3, generator=gen)
    graph = dfgnn.Graph.from_edge_index(edge_index, size=(N, 7))
    for layer in (theirs, ours):
        layer.register_message_forward_hook(lambda m, inputs, out: 3 * out)
    expected = theirs((x, None), edge_index, edge_attr, size=(N, 7))
    assert_close(ours((x, None), graph, edge_attr), expected, 1e-6, "GATConv subclass, Graph, hook")


def test_explainer_end_to_end():
    """torch_geometric.explain's GNNExplainer on a model of our layers gives the edge mask it
    gives on the same model of PyG's."""
    from torch_geometric.explain import Explainer, GNNExplainer

    def model(nn):
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.GATConv(F, 4, heads=2)
                self.conv2 = nn.TransformerConv(8, 3)

            def forward(self, x, edge_index):
                return self.conv2(self.conv1(x, edge_index).relu(), edge_index)

        torch.manual_seed(12)
        return Net()

    theirs, ours = model(pyg_nn), model(dfgnn.nn)
    ours.load_state_dict(theirs.state_dict())
    edge_index = ref.random_graph(N, 70, 3)
    x = torch.randn(N, F, generator=torch.Generator().manual_seed(13))
    masks = []
    for net in (theirs, ours):
        torch.manual_seed(14)
        explainer = Explainer(net, GNNExplainer(epochs=10), explanation_type="model", edge_mask_type="object",
                              model_config={"mode": "multiclass_classification", "task_level": "node",
                                            "return_type": "raw"})
        masks.append(explainer(x, edge_index, index=3).edge_mask)
    assert_close(masks[1], masks[0], 1e-5, "edge mask")


def test_message_passing_needs_edge_index():
    conv = dfgnn.nn.GATConv(F, 4)
    conv.register_message_forward_hook(lambda m, inputs, out: None)
    with pytest.raises(ValueError, match="message-passing hooks run PyG's message passing.*not a DistributedGraph"):
        conv(torch.randn(N, F), dfgnn.distributed.DistributedGraph.__new__(dfgnn.distributed.DistributedGraph))


def _hetero_data():
    """Two node types and three edge types (one within a type, two across)."""
    from torch_geometric.data import HeteroData
    gen = torch.Generator().manual_seed(8)
    data = HeteroData()
    data["paper"].x = torch.randn(30, 10, generator=gen)
    data["author"].x = torch.randn(17, 6, generator=gen)
    data["author", "writes", "paper"].edge_index = ref.random_bipartite(17, 30, 70, 1)
    data["paper", "written_by", "author"].edge_index = ref.random_bipartite(30, 17, 70, 2)
    data["paper", "cites", "paper"].edge_index = ref.random_graph(30, 90, 3)
    return data


def _compare_hetero(theirs, ours, data, device, what):
    """Two heterogeneous models, PyG's layers and ours: a first call shapes the lazy layers, then
    ours with theirs's weights (theirs in float64) give the same output for every node type."""
    theirs(data.x_dict, data.edge_index_dict)
    ours(data.x_dict, data.edge_index_dict)
    theirs = theirs.double()
    ours.load_state_dict(theirs.state_dict())
    ours = ours.to(device)
    expected = theirs({k: v.double() for k, v in data.x_dict.items()}, data.edge_index_dict)
    out = ours({k: v.to(device) for k, v in data.x_dict.items()},
               {k: v.to(device) for k, v in data.edge_index_dict.items()})
    for key in expected:
        assert_close(out[key], expected[key], 1e-5, f"{what} {key}")


@pytest.mark.parametrize("device", DEVICES)
def test_hetero_conv(device):
    """torch_geometric.nn.HeteroConv with our layers on every edge type equals it with PyG's."""
    data = _hetero_data()

    def convs(nn):
        return pyg_nn.HeteroConv({
            ("author", "writes", "paper"): nn.GATConv((-1, -1), 8, heads=2, add_self_loops=False),
            ("paper", "written_by", "author"): nn.TransformerConv((-1, -1), 8, heads=2),
            ("paper", "cites", "paper"): nn.GATv2Conv(-1, 8, heads=2),
        }, aggr="sum")

    _compare_hetero(convs(pyg_nn), convs(dfgnn.nn), data, device, "HeteroConv")


@pytest.mark.parametrize("device", DEVICES)
def test_to_hetero(device):
    """torch_geometric.nn.to_hetero of a two-layer model built on our layers equals the same of
    PyG's, with the same weights: it duplicates each layer per edge type and calls it bipartite."""
    data = _hetero_data()

    def model(nn):
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.TransformerConv((-1, -1), 8, heads=2)
                self.conv2 = nn.GATConv((-1, -1), 4, add_self_loops=False)

            def forward(self, x, edge_index):
                return self.conv2(self.conv1(x, edge_index).relu(), edge_index)

        return pyg_nn.to_hetero(Net(), data.metadata(), aggr="sum")

    _compare_hetero(model(pyg_nn), model(dfgnn.nn), data, device, "to_hetero")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,args,kwargs,bipartite", [
    ("TransformerConv", (F, 6), {"heads": 2}, False),
    ("GATConv", (F, 6), {"heads": 2}, False),  # self loops added: PyG's edge_index comes back
    ("GATConv", (F, 6), {"heads": 3, "add_self_loops": False}, False),
    ("GATv2Conv", (F, 6), {"heads": 2}, False),
    ("GATConv", ((FS, FD), 6), {"heads": 2}, True),
])
def test_return_attention_weights(name, args, kwargs, bipartite, device):
    """(out, (edge_index, alpha)) as PyG returns them in eval mode, with the same weights."""
    theirs, ours = make(name, args, kwargs)
    theirs = theirs.double().eval()
    ours.load_state_dict(theirs.state_dict())
    ours = ours.to(device).eval()
    gen = torch.Generator().manual_seed(4)
    if bipartite:
        edge_index = ref.random_bipartite(NS, ND, 60, 4)
        x = (torch.randn(NS, FS, generator=gen), torch.randn(ND, FD, generator=gen))
        x_ours, x_theirs = tuple(t.to(device) for t in x), tuple(t.double() for t in x)
    else:
        edge_index = ref.random_graph(N, 70, 3)
        x = torch.randn(N, F, generator=gen)
        x_ours, x_theirs = x.to(device), x.double()
    out, (edges, alpha) = ours(x_ours, edge_index.to(device), return_attention_weights=True)
    expected, (expected_edges, expected_alpha) = theirs(x_theirs, edge_index, return_attention_weights=True)
    assert_close(out, expected, 1e-5, f"{name} out")
    assert torch.equal(edges.cpu(), expected_edges)
    assert_close(alpha, expected_alpha, 1e-5, f"{name} alpha")


@pytest.mark.parametrize("name", ["TransformerConv", "GATConv", "GATv2Conv"])
@pytest.mark.parametrize("value", [None, False, True])
def test_return_attention_weights_values(name, value):
    """What PyG returns for return_attention_weights None, False and True: TransformerConv
    (out, (edge_index, alpha)) for either bool, the GAT layers for True only."""
    theirs, ours = make(name, (F, 6), {"heads": 2})
    theirs, ours = theirs.eval(), ours.eval()
    edge_index = ref.random_graph(N, 70, 3)
    x = torch.randn(N, F, generator=torch.Generator().manual_seed(4))
    expected, out = theirs(x, edge_index, return_attention_weights=value), ours(x, edge_index,
                                                                                return_attention_weights=value)
    assert type(out) is type(expected)
    if isinstance(expected, tuple):
        assert torch.equal(out[1][0], expected[1][0])
        assert_close(out[1][1], expected[1][1], 1e-5, f"{name} alpha")
        out, expected = out[0], expected[0]
    assert_close(out, expected, 1e-5, f"{name} out")
