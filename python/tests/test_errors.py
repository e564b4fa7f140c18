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
    (lambda g, x: dfgnn.agnn_attention(g, x, 1.0, x_dst=x[:7]), ValueError, "x_dst has N = 7 but the graph has N = 10"),
    (lambda g, x: dfgnn.agnn_attention(g, x, 1.0, x_dst=x[:, :1]), ValueError, "x_dst has H = 1 but x has H = 2"),
    (lambda g, x: dfgnn.agnn_attention(g, x, 1.0, x_dst=x.tolist()), TypeError, "x_dst must be a torch.Tensor, got list"),
    (lambda g, x: dfgnn.agnn_attention(g, x, 1.0, x_dst=x.to("meta")), ValueError, "x_dst is on meta but x is on cpu"),
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
    (lambda g, x: dfgnn.gt_attention(g, x, x, x, dropout=0.5, seed=torch.tensor([1, 2])), ValueError,
     "a seed tensor must be one int64 entry on cpu"),
    (lambda g, x: dfgnn.gt_attention(g, x, x, x, dropout=0.5, seed=torch.tensor([1.0])), ValueError,
     "a seed tensor must be one int64 entry on cpu .*got torch.float32"),
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


def _null_pointer_calls():
    """Every pointer argument of every C function, set to null in an otherwise valid call: (what,
    the call on a graph handle and a plan handle, the message) as pytest params."""
    import ctypes
    from dfgnn import _lib
    lib = _lib.lib
    i64, out = ctypes.c_int64(), ctypes.c_void_p()
    ids = (ctypes.c_int64 * 2)(0, 1)
    ptr = (ctypes.c_int64 * (N + 1))(*([0] * (N + 1)))
    buf = lambda: ctypes.cast(ctypes.create_string_buffer(8 * (N + 1) * 64), ctypes.c_void_p)  # noqa: E731
    infos = [ctypes.byref(i64)] * 4
    host, device = ctypes.byref(_lib.Where(-1)), ctypes.byref(_lib.Where(0))
    on_gpu = pytest.mark.skipif(not (_lib.has_cuda and torch.cuda.is_available()), reason="needs CUDA")

    def case(what, call, message, *marks):
        return pytest.param(what, call, message, id=what, marks=marks)
    return [
        case("coo src", lambda g, p: (lib.dfgnn_graph_from_coo, -1, 0, N, N, 2, None, ids, None, 0, ctypes.byref(out)),
             "graph: null edge arrays"),
        case("coo dst", lambda g, p: (lib.dfgnn_graph_from_coo, -1, 0, N, N, 2, ids, None, None, 0, ctypes.byref(out)),
             "graph: null edge arrays"),
        case("coo graph", lambda g, p: (lib.dfgnn_graph_from_coo, -1, 0, N, N, 2, ids, ids, None, 0, None),
             "graph: null result pointer"),
        case("csr row_ptr", lambda g, p: (lib.dfgnn_graph_from_csr, N, N, None, ids, ctypes.byref(out)),
             "graph: null row_ptr"),
        case("csr graph", lambda g, p: (lib.dfgnn_graph_from_csr, N, N, ptr, ids, None), "graph: null result pointer"),
        *(case(f"info {i}", lambda g, p, i=i: (lib.dfgnn_graph_info, *([g] + infos)[:i], None, *([g] + infos)[i + 1:]),
               "graph info: null argument") for i in range(5)),
        *(case(f"csr copy {i}", lambda g, p, i=i: (lib.dfgnn_graph_csr, *[None if j == i else (g if j == 0 else buf())
                                                                          for j in range(5)]),
               "graph csr: null argument") for i in range(5)),
        case("reorder graph", lambda g, p: (lib.dfgnn_graph_reorder, None, b"rcm", buf(), ctypes.byref(out)),
             "graph reorder: null argument"),
        case("reorder ordering", lambda g, p: (lib.dfgnn_graph_reorder, g, None, buf(), ctypes.byref(out)),
             "graph reorder: null argument"),
        case("reorder order", lambda g, p: (lib.dfgnn_graph_reorder, g, b"rcm", None, ctypes.byref(out)),
             "graph reorder: null order"),
        case("reorder renumbered", lambda g, p: (lib.dfgnn_graph_reorder, g, b"rcm", buf(), None),
             "graph reorder: null argument"),
        case("partition graph", lambda g, p: (lib.dfgnn_graph_partition, None, 2, buf()), "graph partition: null graph"),
        case("partition owner", lambda g, p: (lib.dfgnn_graph_partition, g, 2, None), "graph partition: null owner"),
        case("plan graph", lambda g, p: (lib.dfgnn_plan_create, None, host, 0, H, D, 0, ctypes.byref(out)),
             "plan: null graph"),
        case("plan where", lambda g, p: (lib.dfgnn_plan_create, g, None, 0, H, D, 0, ctypes.byref(out)),
             "plan: null where"),
        case("plan plan", lambda g, p: (lib.dfgnn_plan_create, g, host, 0, H, D, 0, None), "plan: null result pointer"),
        # A CUDA plan on a graph built on the host reads the caller's device copy of its CSR.
        case("plan arrays", lambda g, p: (lib.dfgnn_plan_create, g, device, 0, H, D, 0, ctypes.byref(out)),
             "plan: null CSR arrays", on_gpu),
        case("prepare plan", lambda g, p: (lib.dfgnn_plan_prepare_backward, None, 0), "dfgnn: null plan"),
        case("dropout plan", lambda g, p: (lib.dfgnn_plan_set_dropout_ids, None, ids), "dfgnn: null plan"),
        case("forward plan", lambda g, p: (lib.dfgnn_forward, None, 0, buf()), "dfgnn: null plan"),
        case("forward call", lambda g, p: (lib.dfgnn_forward, p, 0, None), "dfgnn: null call"),
        case("backward plan", lambda g, p: (lib.dfgnn_backward, None, 0, buf()), "dfgnn: null plan"),
        case("backward call", lambda g, p: (lib.dfgnn_backward, p, 0, None), "dfgnn: null call"),
    ]


@pytest.mark.parametrize("what,args,message", _null_pointer_calls())
def test_null_pointers_are_errors(graph, what, args, message):
    """Every pointer argument of the C ABI's functions but those whose null means none (a graph's
    batch, the dropout ids, an allocator pair, a handle to free) is checked: null is an error
    return (1) with a message, not a crash. (The dfgnn_call's own pointers are the dispatch's
    checks, test_bad_arguments.)"""
    from dfgnn import _lib
    function, *rest = args(graph._handle, graph.plan(torch.device("cpu"), _lib.MODELS["gt"], H, D).handle)
    with pytest.raises(ValueError, match=message):
        _lib.call(function, *rest)


def test_null_plan_strategy_is_an_error():
    from dfgnn import _lib
    assert _lib.lib.dfgnn_plan_strategy(None) is None
    assert _lib.lib.dfgnn_last_error() == b"dfgnn: null plan"
