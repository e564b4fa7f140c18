"""The four ops against float64 references: outputs and gradients, with edge values and
dropout, on a small irregular graph and on one with a heavy row (other kernel paths)."""

import contextlib
import gc
import zlib

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import dfgnn
import reference as ref
from conftest import DEVICES, assert_close

GRAPHS = {"small": (10, 40, 0), "hub": (64, 100, 9000)}  # nodes, random edges, extra edges into node 1
VARIANTS = ["plain", "edge_values", "edge_values_per_head", "dropout"]
SEED = 1234567


def inputs(model, n, h, d, gen, ns=None, x_dst=False):
    """The model's inputs: source-side ones with ns rows (default n), destination-side ones n;
    AGNN's x_dst where x cannot stand in for it (ns != n) or with `x_dst`."""
    x_dst = x_dst or (ns is not None and ns != n)
    ns = n if ns is None else ns

    def rand(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)
    if model == "gt":
        return {"q": rand(n, h, d), "k": rand(ns, h, d), "v": rand(ns, h, d)}
    if model == "agnn":
        return {"x": rand(ns, h, d), "beta": rand(h), **({"x_dst": rand(n, h, d)} if x_dst else {})}
    if model == "gat":
        return {"el": rand(ns, h), "er": rand(n, h), "v": rand(ns, h, d)}
    return {"xl": rand(ns, h, d), "xr": rand(n, h, d), "a": rand(h, d)}


def edge_features(model, e, h, d, gen):
    """The model's edge argument: GT and GATv2 [E, H, D], GAT [E, H] (float64)."""
    return torch.randn(e, h, *((d,) if model != "gat" else ()), generator=gen, dtype=torch.float64)


def run_ours(model, graph, t, **kw):
    if model == "gt":
        return dfgnn.gt_attention(graph, t["q"], t["k"], t["v"], **kw)
    if model == "agnn":
        return dfgnn.agnn_attention(graph, t["x"], t["beta"], x_dst=t.get("x_dst"), **kw)
    if model == "gat":
        return dfgnn.gat_attention(graph, t["el"], t["er"], t["v"], negative_slope=0.2, **kw)
    return dfgnn.gatv2_attention(graph, t["xl"], t["xr"], t["a"], negative_slope=0.2, **kw)


def run_reference(model, edge_index, t, **kw):
    if model == "gt":
        return ref.gt(edge_index, t["q"], t["k"], t["v"], t["q"].size(-1) ** -0.5, **kw)
    if model == "agnn":
        return ref.agnn(edge_index, t["x"], t["beta"], x_dst=t.get("x_dst"), **kw)
    if model == "gat":
        return ref.gat(edge_index, t["el"], t["er"], t["v"], 0.2, **kw)
    return ref.gatv2(edge_index, t["xl"], t["xr"], t["a"], 0.2, **kw)


def check(model, edge_index, num_nodes, heads, dim, device, variant, gen, beta_heads=None, out_tol=1e-5,
          grad_tol=2e-5, src_nodes=None, x_dst=False):
    """Ours against the float64 reference on edge_index: a square graph of num_nodes nodes, or
    with src_nodes a bipartite one (src_nodes sources, num_nodes destinations); AGNN with its
    x_dst on a bipartite graph or with `x_dst`."""
    size = None if src_nodes is None else (src_nodes, num_nodes)
    graph = dfgnn.Graph.from_edge_index(edge_index.to(device), None if size else num_nodes, size=size)
    E = edge_index.size(1)
    master = inputs(model, num_nodes, heads, dim, gen, src_nodes, x_dst)
    if beta_heads is not None:
        master["beta"] = master["beta"][:beta_heads]
    ours = {k: v.float().to(device).requires_grad_() for k, v in master.items()}
    theirs = {k: v.float().double().requires_grad_() for k, v in master.items()}
    ours_kw, ref_kw = {}, {}
    if variant.startswith("edge_values"):
        w = torch.rand(E, heads if variant == "edge_values_per_head" else 1, generator=gen, dtype=torch.float64) * 2
        ours_kw["edge_values"] = w.float().to(device).squeeze(1) if w.size(1) == 1 else w.float().to(device)
        ref_kw["edge_values"] = w.float().double()
    if variant == "dropout":
        ours_kw.update(dropout=0.3, seed=SEED)
        ref_kw["factors"] = ref.dropout_factors(0.3, SEED, E, heads)
        assert 0 < (ref_kw["factors"] == 0).sum() < E * heads  # some dropped, some kept
    if variant == "edge_features":
        e = edge_features(model, E, heads, dim, gen)
        master["edge_features"] = e  # differentiated below with the inputs
        ours["edge_features"] = ours_kw["edge_features"] = e.float().to(device).requires_grad_()
        theirs["edge_features"] = ref_kw["edges"] = e.float().double().requires_grad_()
    out = run_ours(model, graph, {k: v for k, v in ours.items() if k != "edge_features"}, **ours_kw)
    expected = run_reference(model, edge_index, {k: v for k, v in theirs.items() if k != "edge_features"}, **ref_kw)
    assert out.dtype == torch.float32 and out.device.type == device
    assert_close(out, expected, out_tol, f"{model} out")
    grad = torch.randn(expected.shape, generator=gen, dtype=torch.float64)
    out.backward(grad.float().to(device))
    expected.backward(grad.float().double())
    for name in master:
        # dbeta and da sum over all edges: their terms cancel most
        tol = max(grad_tol, 1e-4) if name in ("beta", "a") else grad_tol
        assert_close(ours[name].grad, theirs[name].grad, tol, f"{model} d{name}")


# Dropout only on the small graph: its mask is computed in Python, edge by edge. AGNN has no
# edge features.
CASES = [(g, v) for g in GRAPHS for v in VARIANTS if not (g == "hub" and v == "dropout")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("heads,dim", [(1, 16), (3, 7)])
@pytest.mark.parametrize("graph,variant", CASES + [(g, "edge_features") for g in GRAPHS])
@pytest.mark.parametrize("model", ["gt", "agnn", "gat", "gatv2"])
def test_against_reference(model, graph, variant, heads, dim, device):
    if model == "agnn" and variant == "edge_features":
        pytest.skip("AGNN has no edge argument")
    n, e, hub = GRAPHS[graph]
    gen = torch.Generator().manual_seed(zlib.crc32(f"{model} {graph} {heads} {variant}".encode()))
    # The 9000-edge row sums terms that largely cancel (its ds_e sum to 0): seen up to 8e-5
    # (GATv2's dxr) against float64, under 4e-6 on the small graph.
    tol = dict(out_tol=3e-5, grad_tol=3e-4) if hub else {}
    check(model, ref.random_graph(n, e, 7, hub), n, heads, dim, device, variant, gen, **tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("heads,dim,edge_heads,width", [(1, 24, 1, 8), (3, 7, 1, 3), (2, 16, 2, 4), (2, 8, 1, 8)])
def test_gt_edge_columns(heads, dim, edge_heads, width, graph, device):
    """GT's edge columns [E, 1 or H, F]: the reference with them widened to [E, H, D] rows
    (zeros before the last F columns, the one row copied to every head), gradients through
    that widening."""
    n, e, hub = GRAPHS[graph]
    edge_index = ref.random_graph(n, e, 7, hub)
    gen = torch.Generator().manual_seed(zlib.crc32(f"columns {graph} {heads} {dim} {edge_heads}".encode()))
    graph_ = dfgnn.Graph.from_edge_index(edge_index.to(device), n)
    master = inputs("gt", n, heads, dim, gen)
    master["edge_features"] = torch.randn(edge_index.size(1), edge_heads, width, generator=gen, dtype=torch.float64)
    ours = {k: v.float().to(device).requires_grad_() for k, v in master.items()}
    theirs = {k: v.float().double().requires_grad_() for k, v in master.items()}
    out = dfgnn.gt_attention(graph_, ours["q"], ours["k"], ours["v"], edge_features=ours["edge_features"])
    rows = torch.nn.functional.pad(theirs["edge_features"].expand(-1, heads, -1), (dim - width, 0))
    expected = ref.gt(edge_index, theirs["q"], theirs["k"], theirs["v"], dim ** -0.5, edges=rows)
    assert_close(out, expected, 1e-5, "gt out")
    grad = torch.randn(expected.shape, generator=gen, dtype=torch.float64)
    out.backward(grad.float().to(device))
    expected.backward(grad)
    for name in master:
        assert_close(ours[name].grad, theirs[name].grad, 3e-5 if hub else 2e-5, f"gt d{name}")


def test_gt_edge_columns_errors():
    graph = dfgnn.Graph.from_edge_index(torch.tensor([[0, 1], [1, 2]]), 3)
    q = torch.randn(3, 2, 5)
    with pytest.raises(ValueError, match=r"edge_features must have shape \[E, H, D\] or edge columns "
                                         r"\[E, 1 or H, F\] with F <= D = 5, got \[2, 1, 6\]"):
        dfgnn.gt_attention(graph, q, q, q, edge_features=torch.randn(2, 1, 6))
    with pytest.raises(ValueError, match=r"edge_features must have shape \[E, W, F\] with W = 1 or H = 2"):
        dfgnn.gt_attention(graph, q, q, q, edge_features=torch.randn(2, 3, 5))


# Bipartite graphs: sources, destinations, random edges, extra edges into destination 0.
BIPARTITE = {"more_sources": (30, 12, 80, 0), "fewer_sources": (6, 40, 90, 0), "hub": (80, 30, 100, 5000)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("graph", BIPARTITE)
@pytest.mark.parametrize("variant", ["plain", "edge_values_per_head", "dropout", "edge_features"])
@pytest.mark.parametrize("model", ["gt", "agnn", "gat", "gatv2"])
def test_bipartite_against_reference(model, variant, graph, device):
    if model == "agnn" and variant == "edge_features":
        pytest.skip("AGNN has no edge argument")
    ns, n, e, hub = BIPARTITE[graph]
    gen = torch.Generator().manual_seed(zlib.crc32(f"{model} {graph} {variant} bipartite".encode()))
    tol = dict(out_tol=3e-5, grad_tol=3e-4) if hub else {}
    check(model, ref.random_bipartite(ns, n, e, 5, hub), n, 2, 8, device, variant, gen, src_nodes=ns, **tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("variant", ["plain", "edge_values_per_head", "dropout", "edge_features"])
@pytest.mark.parametrize("model", ["gt", "agnn", "gat", "gatv2"])
def test_attention_weights(model, variant, device):
    """return_attention_weights: (out, weights [E, H]) in the caller's edge order, the reference's
    probabilities times dropout factors; the same out as without them; no gradient."""
    n, e = 12, 60
    edge_index = ref.random_graph(n, e, 9)
    graph = dfgnn.Graph.from_edge_index(edge_index.to(device), n)
    gen = torch.Generator().manual_seed(zlib.crc32(f"{model} {variant} weights".encode()))
    master = inputs(model, n, 2, 8, gen)
    ours = {k: v.float().to(device).requires_grad_() for k, v in master.items()}
    theirs = {k: v.float().double() for k, v in master.items()}
    ours_kw, ref_kw = {}, {"return_weights": True}
    E = edge_index.size(1)
    if variant == "edge_values_per_head":
        w = torch.rand(E, 2, generator=gen) * 2
        ours_kw["edge_values"], ref_kw["edge_values"] = w.to(device), w.double()
    if variant == "dropout":
        ours_kw.update(dropout=0.3, seed=SEED)
        ref_kw["factors"] = ref.dropout_factors(0.3, SEED, E, 2)
    if variant == "edge_features":
        if model == "agnn":
            pytest.skip("AGNN has no edge argument")
        x = edge_features(model, E, 2, 8, gen).float()
        ours_kw["edge_features"], ref_kw["edges"] = x.to(device), x.double()
    out, weights = run_ours(model, graph, ours, return_attention_weights=True, **ours_kw)
    expected, expected_weights = run_reference(model, edge_index, theirs, **ref_kw)
    assert weights.shape == (E, 2) and not weights.requires_grad
    assert_close(weights, expected_weights, 1e-5, f"{model} weights")
    assert torch.equal(out, run_ours(model, graph, ours, **ours_kw))
    out.sum().backward()  # out keeps its gradient
    assert all(t.grad is not None for t in ours.values())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("graph,variant", CASES)
def test_agnn_x_dst_against_reference(graph, variant, device):
    """AGNN with x_dst of its own on a square graph: dx gets the values' and the source side's
    terms, dx_dst the destination side's."""
    n, e, hub = GRAPHS[graph]
    gen = torch.Generator().manual_seed(zlib.crc32(f"agnn x_dst {graph} {variant}".encode()))
    tol = dict(out_tol=3e-5, grad_tol=3e-4) if hub else {}
    check("agnn", ref.random_graph(n, e, 7, hub), n, 3, 8, device, variant, gen, x_dst=True, **tol)


@pytest.mark.parametrize("device", DEVICES)
def test_bipartite_shapes_and_agnn(device):
    """Each side's tensors against the graph's count of it; AGNN's x cannot serve both sides of a
    bipartite graph: x_dst, of the destinations' shape and x's type and device."""
    graph = dfgnn.Graph.from_edge_index(ref.random_bipartite(7, 4, 20, 1).to(device), size=(7, 4))
    assert (graph.num_src_nodes, graph.num_nodes, graph.bipartite) == (7, 4, True)
    q, k = torch.randn(4, 2, 8, device=device), torch.randn(7, 2, 8, device=device)
    assert dfgnn.gt_attention(graph, q, k, k).shape == (4, 2, 8)
    with pytest.raises(ValueError, match="k has NS = 4 but the graph has NS = 7"):
        dfgnn.gt_attention(graph, q, q, k)
    with pytest.raises(ValueError, match="q has N = 7 but the graph has N = 4"):
        dfgnn.gt_attention(graph, k, k, k)
    beta = torch.ones(1, device=device)
    assert dfgnn.agnn_attention(graph, k, beta, x_dst=q).shape == (4, 2, 8)
    with pytest.raises(ValueError, match=r"x_dst is missing: x stands in for it on a square graph only, and this "
                                         r"graph has 7 sources and 4 destinations; pass x_dst \[N, H, D\] with N = 4"):
        dfgnn.agnn_attention(graph, k, beta)
    with pytest.raises(ValueError, match="x_dst has N = 7 but the graph has N = 4"):
        dfgnn.agnn_attention(graph, k, beta, x_dst=k)
    with pytest.raises(ValueError, match="x_dst has D = 4 but x has D = 8"):
        dfgnn.agnn_attention(graph, k, beta, x_dst=q[..., :4].contiguous())
    with pytest.raises(TypeError, match="x_dst is torch.float16, expected torch.float32 as x"):
        dfgnn.agnn_attention(graph, k, beta, x_dst=q.half())
    with pytest.raises(ValueError, match="source 7 of edge 0 is outside \\[0, 7\\)"):
        dfgnn.Graph.from_edge_index(torch.tensor([[7], [0]]), size=(7, 4))


@pytest.mark.parametrize("device", DEVICES)
def test_agnn_shared_beta(device):
    gen = torch.Generator().manual_seed(5)
    check("agnn", ref.random_graph(10, 40, 3), 10, 3, 8, device, "plain", gen, beta_heads=1)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_graph_and_isolated_nodes(device):
    graph = dfgnn.Graph.from_edge_index(torch.empty(2, 0, dtype=torch.int64), 5)
    q = torch.randn(5, 2, 4, device=device, requires_grad=True)
    out = dfgnn.gt_attention(graph, q, q, q)
    assert torch.equal(out, torch.zeros_like(out))
    out.sum().backward()
    assert torch.equal(q.grad, torch.zeros_like(q))


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_seed_drawn_from_torch(device):
    edge_index = ref.random_graph(10, 40, 3)
    graph = dfgnn.Graph.from_edge_index(edge_index, 10)
    x = torch.randn(10, 2, 8, device=device)
    torch.manual_seed(0)
    a = dfgnn.gt_attention(graph, x, x, x, dropout=0.5)
    b = dfgnn.gt_attention(graph, x, x, x, dropout=0.5)
    torch.manual_seed(0)
    c = dfgnn.gt_attention(graph, x, x, x, dropout=0.5)
    assert not torch.equal(a, b)  # a new mask per call
    assert torch.equal(a, c)      # repeatable under torch.manual_seed


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("traced", [False, True])
def test_seed_tensor_reads_as_the_int(device, traced):
    """A seed given as a one-element int64 tensor on the inputs' device (read by the kernels
    where they run, as a captured CUDA graph needs) draws the mask its value draws, forward and
    backward, eagerly and through the custom op (under a dispatch mode)."""
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(10, 40, 3), 10)
    x = torch.randn(10, 2, 8, device=device, requires_grad=True)
    results = []
    for seed in (7, torch.tensor([7], device=device)):
        x.grad = None
        with _PassThrough() if traced else contextlib.nullcontext():
            out = dfgnn.gt_attention(graph, x, x, x, dropout=0.5, seed=seed)
            out.square().sum().backward()
        results.append((out.detach(), x.grad))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def _op_args(model, graph, gen, edges=False):
    """The custom op of `model` and its arguments: inputs requiring grad, edge values none,
    dropout with a seed; with `edges`, edge features (AGNN: x_dst) requiring grad too."""
    t = inputs(model, graph.num_nodes, 2, 4, gen)
    t = {k: v.float().requires_grad_() for k, v in t.items()}
    seed = torch.tensor([SEED])
    e = edge_features(model, graph.num_edges, 2, 4, gen).float().requires_grad_() if edges else None
    if model == "gt":
        return torch.ops.dfgnn.gt.default, (graph.id, t["q"], t["k"], t["v"], e, None, 0.5, 0.2, seed)
    if model == "agnn":  # `edges`: x_dst of its own
        x_dst = torch.randn(graph.num_nodes, 2, 4, generator=gen).requires_grad_() if edges else None
        return torch.ops.dfgnn.agnn.default, (graph.id, t["x"], t["beta"], x_dst, None, 0.2, seed)
    if model == "gat":
        return torch.ops.dfgnn.gat.default, (graph.id, t["el"], t["er"], t["v"], e, None, 0.2, 0.2, seed)
    return torch.ops.dfgnn.gatv2.default, (graph.id, t["xl"], t["xr"], t["a"], e, None, 0.2, 0.2, seed)


@pytest.mark.parametrize("model,edges", [("gt", False), ("agnn", False), ("gat", False), ("gatv2", False),
                                         ("gt", True), ("agnn", True), ("gat", True), ("gatv2", True)])
def test_opcheck(model, edges):
    """torch.library.opcheck: schema, fake tensor and autograd registration, AOT dispatch, for
    the forward op (with and without the attention weights) and (through its output's gradient)
    the backward op; with edge features too."""
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(10, 40, 3), 10)
    op, args = _op_args(model, graph, torch.Generator().manual_seed(0), edges)
    torch.library.opcheck(op, args)
    torch.library.opcheck(op, (*args, True))
    out, lse, weights = op(*args)
    assert weights.numel() == 0 and op(*args, True)[2].shape == (graph.num_edges, 2)
    backward = getattr(torch.ops.dfgnn, f"{model}_backward").default
    tensors = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
    torch.library.opcheck(backward, (*tensors, out.detach(), lse.detach(), torch.randn_like(out)))


def _public(model, graph, args):
    """The public function's call equal to the custom op's arguments `args` (_op_args)."""
    kw = dict(dropout=args[-2], seed=int(args[-1]))
    if model == "agnn":
        return dfgnn.agnn_attention(graph, *args[1:3], x_dst=args[3], **kw)
    kw["edge_features"] = args[4]
    if model == "gt":
        return dfgnn.gt_attention(graph, *args[1:4], scale=args[6], **kw)
    fn = dfgnn.gat_attention if model == "gat" else dfgnn.gatv2_attention
    return fn(graph, *args[1:4], negative_slope=args[6], **kw)


@pytest.mark.parametrize("model,edges", [("gt", False), ("agnn", False), ("gat", False), ("gatv2", False),
                                         ("gt", True), ("agnn", True), ("gat", True), ("gatv2", True)])
def test_eager_path_equals_custom_op(model, edges):
    """The public functions run the ops' native calls directly in eager mode (dfgnn._ops, with
    its own autograd node):
    same outputs and gradients as the custom op with its registered autograd; a second
    differentiation raises, also in a gradient penalty whose incoming gradient needs none
    (once_differentiable let that one lose the second-order term); without a gradient no
    autograd node."""
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(10, 40, 3), 10)
    op, args = _op_args(model, graph, torch.Generator().manual_seed(0), edges)
    tensors = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    eager = _public(model, graph, args)
    assert eager.grad_fn.name() == "DfgnnAttentionBackward"
    custom = op(*args)[0]
    grad = torch.randn_like(custom)
    assert torch.equal(eager, custom)
    for a, b in zip(torch.autograd.grad(eager, tensors, grad), torch.autograd.grad(custom, tensors, grad)):
        assert torch.equal(a, b)
    out = _public(model, graph, args)
    (first,) = torch.autograd.grad(out.sum(), tensors[0], create_graph=True)
    with pytest.raises(RuntimeError, match="no double backward"):
        ((first ** 2).sum() + tensors[0].sum()).backward()
    with torch.no_grad():
        plain = _public(model, graph, args)
    assert plain.grad_fn is None and not plain.requires_grad and torch.equal(plain, eager)


def test_eager_backward_sees_in_place_changes():
    """The eager path saves its inputs for the backward as autograd does: changing one in
    place before the backward raises."""
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(10, 40, 3), 10)
    q = torch.randn(10, 2, 4, requires_grad=True)
    k = torch.randn(10, 2, 4)
    out = dfgnn.gt_attention(graph, q, k, k)
    k.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_eager_path_refuses_forward_ad():
    """The kernels have no forward-mode derivative: a tangent on an input raises (never a
    result without its tangent); without one, forward AD levels change nothing."""
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(10, 40, 3), 10)
    q, k = torch.randn(10, 2, 4), torch.randn(10, 2, 4)
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        assert torch.equal(dfgnn.gt_attention(graph, q, k, k), dfgnn.gt_attention(graph, q, k, k))
        with pytest.raises(RuntimeError, match="no forward-mode derivative"):
            dfgnn.gt_attention(graph, fwAD.make_dual(q, torch.ones_like(q)), k, k)


def test_eager_seed_is_torchs_draw():
    """The eager path draws the dropout seed as torch.randint(0, 2 ** 62, (1,)) does (the
    custom op's draw), so both paths drop the same edges under torch.manual_seed."""
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(10, 40, 3), 10)
    x = torch.randn(10, 2, 4)
    torch.manual_seed(3)
    eager = dfgnn.gt_attention(graph, x, x, x, dropout=0.5)
    torch.manual_seed(3)
    seed = torch.randint(0, 2 ** 62, (1,), dtype=torch.int64)
    assert torch.equal(eager, torch.ops.dfgnn.gt(graph.id, x, x, x, None, None, 0.0, 0.5, seed)[0])


class _PassThrough(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("mode", [contextlib.nullcontext, _PassThrough])
def test_backward_keeps_graph_alive(mode):
    """The eager call, and the custom op (under a dispatch mode), hold the Graph until the
    backward ran."""
    q = torch.randn(10, 2, 4, requires_grad=True)
    with mode():
        out = dfgnn.gt_attention(dfgnn.Graph.from_edge_index(ref.random_graph(10, 40, 3), 10), q, q, q)
    gc.collect()
    out.sum().backward()
    assert q.grad is not None


# The GAT layer's types: float32; all bf16 (a layer converted with .to); under autocast, h and
# ee in its type (the layer's projections give them) and the score vectors float32.
GAT_LAYER_TYPES = {"f32": (torch.float32, torch.float32, False), "bf16": (torch.bfloat16, torch.bfloat16, False),
                   "autocast": (torch.bfloat16, torch.float32, True)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("edge_term", [False, True], ids=["plain", "ee"])
@pytest.mark.parametrize("types", list(GAT_LAYER_TYPES))
def test_gat_layer_equals_gat_attention(device, heads, edge_term, types):
    """GATConv's call (score terms and attention in one autograd node, el and er packed in one
    [2, N, H] tensor; with edge_dim, the edge term ee [E, H] its edge argument) gives
    gat_attention's output on the terms computed by autograd, bit for bit, and the same
    gradients for h, att_src, att_dst and ee (float32: within 1e-6; two-byte: within a rounding
    of the type, dh's terms being added in one step); a second differentiation raises."""
    dtype, att_dtype, autocast = GAT_LAYER_TYPES[types]
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(10, 40, 3).to(device), 10)
    gen = torch.Generator().manual_seed(0)
    h = torch.randn(10, heads, 5, generator=gen).to(device, dtype).requires_grad_()
    att = [torch.randn(1, heads, 5, generator=gen).to(device, att_dtype).requires_grad_() for _ in range(2)]
    ee = (torch.randn(graph.num_edges, heads, generator=gen).to(device, dtype).requires_grad_() if edge_term
          else None)
    inputs = (h, *att) + ((ee,) if edge_term else ())
    grad = torch.randn(10, heads, 5, generator=gen).to(device, dtype)
    tol = 1e-6 if dtype is torch.float32 else TWO_BYTE[dtype]
    with torch.autocast(device, dtype=dtype) if autocast else contextlib.nullcontext():
        torch.manual_seed(1)
        layer = dfgnn.ops._gat_layer(graph, h, None, *att, 0.2, 0.4, ee=ee)
        assert layer.grad_fn.name() == "DfgnnGATLayerBackward" and layer.dtype == dtype
        dlayer = torch.autograd.grad(layer, inputs, grad)
        torch.manual_seed(1)
        elr = (h * torch.cat(att).unsqueeze(1)).sum(dim=-1)
        plain = dfgnn.gat_attention(graph, elr[0], elr[1], h, negative_slope=0.2, dropout=0.4, edge_features=ee)
        dplain = torch.autograd.grad(plain, inputs, grad)
        assert torch.equal(layer, plain)
        for a, b, t, name in zip(dlayer, dplain, inputs, ("dh", "datt_src", "datt_dst", "dee")):
            assert a.dtype == t.dtype, name
            assert_close(a, b, tol, name)
        with torch.no_grad():
            assert torch.equal(dfgnn.ops._gat_layer(graph, h, None, *att, 0.2, 0.0, ee=ee), dfgnn.gat_attention(
                graph, elr[0], elr[1], h, negative_slope=0.2, edge_features=ee))
        (first,) = torch.autograd.grad(dfgnn.ops._gat_layer(graph, h, None, *att, 0.2, 0.0).sum(), h,
                                       create_graph=True)
    with pytest.raises(RuntimeError, match="no double backward"):
        first.sum().backward()


# bfloat16 and float16 (issue 39) on both backends. The accuracy contract against float64 on the
# same rounded inputs, normwise (the largest error over the largest entry); the gradients' is
# twice the forward's.
TWO_BYTE = {torch.bfloat16: 1e-2, torch.float16: 2e-3}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(TWO_BYTE))
@pytest.mark.parametrize("variant", ["plain", "edge_features", "weights"])
@pytest.mark.parametrize("model", ["gt", "agnn", "gat", "gatv2"])
def test_two_byte(model, variant, dtype, device):
    if model == "agnn" and variant == "edge_features":
        pytest.skip("AGNN has no edge argument")
    n, heads, dim = 64, 2, 24
    edge_index = ref.random_graph(n, 600, 3, 2000)
    graph = dfgnn.Graph.from_edge_index(edge_index.to(device), n)
    gen = torch.Generator().manual_seed(zlib.crc32(f"{model} {variant} {dtype}".encode()))
    rounded = {k: v.to(dtype) for k, v in inputs(model, n, heads, dim, gen).items()}
    ours = {k: v.to(device) for k, v in rounded.items()}
    ours_kw, ref_kw = {}, {}
    if variant == "edge_features":
        e = edge_features(model, edge_index.size(1), heads, dim, gen).to(dtype)
        ours_kw["edge_features"], ref_kw["edges"] = e.to(device), e.double()
    if variant == "weights":
        ours_kw["return_attention_weights"] = ref_kw["return_weights"] = True
    result = run_ours(model, graph, ours, **ours_kw)
    expected = run_reference(model, edge_index, {k: v.double() for k, v in rounded.items()}, **ref_kw)
    for got, want, what in zip(*((result, expected) if variant == "weights" else ((result,), (expected,))),
                               ("out", "attention weights")):
        assert got.dtype == dtype and got.device.type == device
        err = (got.double().cpu() - want).abs().max() / want.abs().max()
        assert err <= TWO_BYTE[dtype], f"{model} {what}: normwise error {err:.3g}"
    # Mixed types name the argument.
    second = list(ours)[1]
    with pytest.raises(TypeError, match=f"{second} is torch.float32, expected {dtype}"):
        run_ours(model, graph, {**ours, second: ours[second].float()})
    if variant == "weights":
        return
    # The backward: every gradient of the type, the edge features' too.
    ours = {k: v.clone().requires_grad_() for k, v in ours.items()}
    theirs = {k: v.double().requires_grad_() for k, v in rounded.items()}
    if variant == "edge_features":
        ours_kw["edge_features"] = ours["edge_features"] = ours_kw["edge_features"].clone().requires_grad_()
        ref_kw["edges"] = theirs["edge_features"] = ref_kw["edges"].clone().requires_grad_()
    out = run_ours(model, graph, ours, **ours_kw)
    expected = run_reference(model, edge_index, theirs, **ref_kw)
    grad = torch.randn(expected.shape, generator=gen, dtype=torch.float64).to(dtype)
    out.backward(grad.to(device))
    expected.backward(grad.double())
    for name, t in ours.items():
        assert t.grad.dtype == dtype
        err = (t.grad.double().cpu() - theirs[name].grad).abs().max() / theirs[name].grad.abs().max()
        assert err <= 2 * TWO_BYTE[dtype], f"{model} d{name}: normwise error {err:.3g}"


@pytest.mark.parametrize("dtype", list(TWO_BYTE))
def test_cpu_autocast(dtype):
    """Under the CPU's torch.autocast the ops cast their float32 inputs to its type, as on CUDA:
    out in that type, float32 gradients through autograd's casts; the GAT layer's float32 score
    terms meet its autocast values without a mixed-type error. out within the type's contract of
    float64 on the rounded inputs."""
    n, heads, dim = 40, 2, 8
    edge_index = ref.random_graph(n, 300, 5)
    graph = dfgnn.Graph.from_edge_index(edge_index, n)
    q = torch.randn(n, heads, dim, requires_grad=True)
    with torch.autocast("cpu", dtype=dtype):
        out = dfgnn.gt_attention(graph, q, q, q)
    assert out.dtype == dtype
    out.float().sum().backward()
    assert q.grad.dtype == torch.float32
    rounded = q.detach().to(dtype).double()
    expected = ref.gt(edge_index, rounded, rounded, rounded, 1.0 / dim ** 0.5)
    assert (out.double() - expected).abs().max() / expected.abs().max() <= TWO_BYTE[dtype]
    layer = dfgnn.nn.GATConv(16, dim, heads=heads, edge_dim=3)
    x, edge_attr = torch.randn(n, 16), torch.randn(edge_index.size(1), 3)
    with torch.autocast("cpu", dtype=dtype):
        y = layer(x, edge_index, edge_attr)
    y.float().sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in layer.parameters())



# Each op's scalar arguments as Python numbers (ints too: beta, scale and dropout's seed), which
# take the tensors' type: GT's scale, AGNN's beta, GAT's and GATv2's negative slope, dropout.
NUMBER_CALLS = {
    "gt": lambda g, t: dfgnn.gt_attention(g, t, t, t, scale=1, dropout=0.25, seed=3),
    "agnn": lambda g, t: dfgnn.agnn_attention(g, t, 2, dropout=0.25, seed=3),
    "agnn_float_beta": lambda g, t: dfgnn.agnn_attention(g, t, 1.0),
    "gat": lambda g, t: dfgnn.gat_attention(g, t[..., 0], t[..., 1], t, negative_slope=0.1, dropout=0.25, seed=3),
    "gatv2": lambda g, t: dfgnn.gatv2_attention(g, t, t, t[0], negative_slope=0.1, dropout=0.25, seed=3),
}
# The layers, with every number their constructor takes.
NUMBER_LAYERS = {
    "TransformerConv": lambda: dfgnn.nn.TransformerConv(8, 4, heads=2, beta=True, dropout=0.25, edge_dim=3),
    "AGNNConv": lambda: dfgnn.nn.AGNNConv(requires_grad=False),
    "GATConv": lambda: dfgnn.nn.GATConv(8, 4, heads=2, negative_slope=0.1, dropout=0.25, edge_dim=3, fill_value=0.5),
    "GATv2Conv": lambda: dfgnn.nn.GATv2Conv(8, 4, heads=2, negative_slope=0.1, dropout=0.25, edge_dim=3),
}
# A call's element type: its tensors' (a layer converted to it), or float32 under autocast to it.
NUMBER_TYPES = {"f32": (torch.float32, False), "bf16": (torch.bfloat16, False), "f16": (torch.float16, False),
                "autocast_bf16": (torch.bfloat16, True), "autocast_f16": (torch.float16, True)}


@pytest.mark.parametrize("types", list(NUMBER_TYPES))
@pytest.mark.parametrize("call", list(NUMBER_CALLS))
def test_numbers_take_the_tensors_type(call, types):
    """A number where an op takes a scalar is no tensor of another type: the call runs in its
    tensors' type, or autocast's, forward and backward."""
    dtype, autocast = NUMBER_TYPES[types]
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(12, 50, 2), 12)
    t = torch.randn(12, 2, 4, dtype=torch.float32 if autocast else dtype, requires_grad=True)
    with torch.autocast("cpu", dtype=dtype) if autocast else contextlib.nullcontext():
        out = NUMBER_CALLS[call](graph, t)
    assert out.dtype == dtype
    out.float().sum().backward()
    assert t.grad.dtype == t.dtype


@pytest.mark.parametrize("types", list(NUMBER_TYPES))
@pytest.mark.parametrize("name", list(NUMBER_LAYERS))
def test_layer_numbers_take_the_tensors_type(name, types):
    """The same for the layers (training, so dropout runs): converted to a type, or float32 under
    autocast."""
    dtype, autocast = NUMBER_TYPES[types]
    edge_index = ref.random_graph(12, 50, 2)
    layer = NUMBER_LAYERS[name]().to(torch.float32 if autocast else dtype)
    x = torch.randn(12, 8, dtype=torch.float32 if autocast else dtype, requires_grad=True)
    edge_attr = torch.randn(edge_index.size(1), 3, dtype=x.dtype)
    with torch.autocast("cpu", dtype=dtype) if autocast else contextlib.nullcontext():
        out = layer(x, edge_index) if name == "AGNNConv" else layer(x, edge_index, edge_attr)
    if not autocast:  # (under autocast a float32 bias promotes the sum, as in PyG's layers)
        assert out.dtype == dtype
    out.float().sum().backward()
