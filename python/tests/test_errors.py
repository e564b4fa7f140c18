"""Wrong arguments to the ops raise TypeError (types, dtypes) or ValueError (shapes, devices,
graphs, options) naming the argument, before any kernel runs."""

import pytest
import torch

import dfgnn
import reference as ref

N, H, D = 10, 2, 4


@pytest.fixture
def graph():
    return dfgnn.Graph.from_edge_index(ref.random_graph(N, 40, 1), N)


def nhd(*shape, **kw):
    return torch.randn(*(shape or (N, H, D)), **kw)


def test_graph_argument(graph):
    x = nhd()
    with pytest.raises(TypeError, match="graph must be a dfgnn.Graph.*got Tensor"):
        dfgnn.gt_attention(ref.random_graph(N, 40, 1), x, x, x)


@pytest.mark.parametrize("call,error,match", [
    (lambda g, x: dfgnn.gt_attention(g, x.double(), x, x), TypeError, "q must be float32, bfloat16 or float16, got torch.float64"),
    (lambda g, x: dfgnn.gt_attention(g, x, x.tolist(), x), TypeError, "k must be a torch.Tensor, got list"),
    (lambda g, x: dfgnn.gt_attention(g, x, x, x[:, :, :3]), ValueError, "v has D = 3 but q has D = 4"),
    (lambda g, x: dfgnn.gt_attention(g, x, x[:, :1], x), ValueError, "k has H = 1 but q has H = 2"),
    (lambda g, x: dfgnn.gt_attention(g, x[:7], x[:7], x[:7]), ValueError, "q has N = 7 but the graph has N = 10"),
    (lambda g, x: dfgnn.gt_attention(g, x[0], x[0], x[0]), ValueError, "q must have shape \\[N, H, D\\], got \\[2, 4\\]"),
    (lambda g, x: dfgnn.gt_attention(g, x, x.to("meta"), x), ValueError, "k is on meta but q is on cpu"),
    (lambda g, x: dfgnn.agnn_attention(g, x, torch.ones(3)), ValueError, "beta must have shape \\[B\\] with B = 1 or H = 2"),
    (lambda g, x: dfgnn.gat_attention(g, x[..., 0], x[:, :, 0], x[:, :1]), ValueError, "el has H = 2 but v has H = 1"),
    (lambda g, x: dfgnn.gatv2_attention(g, x, x, torch.ones(H, D + 1)), ValueError, "a has D = 5 but xl has D = 4"),
    (lambda g, x: dfgnn.gt_attention(g, x, x, x, edge_values=torch.ones(39)), ValueError,
     "edge_values has E = 39 but the graph has E = 42"),
    (lambda g, x: dfgnn.gt_attention(g, x, x, x, edge_values=torch.ones(42, 3)), ValueError,
     "edge_values must have shape \\[E, W\\] with W = 1 or H = 2"),
    (lambda g, x: dfgnn.gt_attention(g, x, x, x, edge_values=torch.ones(42, requires_grad=True)), ValueError,
     "edge_values get no gradient"),
    (lambda g, x: dfgnn.gt_attention(g, x, x, x, dropout=1.0), ValueError, "dropout must be in \\[0, 1\\), got 1.0"),
    (lambda g, x: dfgnn.gt_attention(g, x, x, x, scale=0.0), ValueError, "scale must be finite and nonzero"),
    (lambda g, x: dfgnn.gt_attention(g, x, x, x, dropout=0.5, seed=1.5), TypeError, "seed must be an integer"),
    (lambda g, x: dfgnn.gt_attention(g, x, x, x, dropout=0.5, seed=2 ** 70), ValueError, "seed must fit in 64 bits"),
    (lambda g, x: torch.ops.dfgnn.gt(g.id, x.transpose(0, 1).contiguous().transpose(0, 1), x, x, None, None, 0.0, 0.0, None),
     ValueError, "q must be contiguous"),
    (lambda g, x: torch.ops.dfgnn.gt(g.id, x, x, x, None, None, 0.0, 0.5, None), ValueError, "dropout needs seed"),
])
def test_bad_arguments(graph, call, error, match):
    with pytest.raises(error, match=match):
        call(graph, nhd())


def test_native_errors_are_value_errors(graph):
    """What only the native library checks (here: head counts the scratch cannot hold) comes
    back as ValueError with its message."""
    with pytest.raises(ValueError, match="heads do not fit the team scratch"):
        graph.prepare("gt", 1 << 20, 1)


def test_null_handles_are_errors():
    """The C ABI's queries refuse a null handle with an error return, not a crash."""
    import ctypes
    from dfgnn import _lib
    i64 = ctypes.c_int64()
    with pytest.raises(ValueError, match="graph info: null argument"):
        _lib.call(_lib.lib.dfgnn_graph_info, None, *[ctypes.byref(i64)] * 4)
    with pytest.raises(ValueError, match="graph csr: null argument"):
        _lib.call(_lib.lib.dfgnn_graph_csr, None, None, None, None, None)
    assert _lib.lib.dfgnn_plan_strategy(None) is None
    assert _lib.lib.dfgnn_last_error() == b"dfgnn: null plan"
