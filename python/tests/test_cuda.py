"""CUDA-only checks (skipped without a GPU): the current stream, batched small graphs (the
CUDA-native Dense / Staged / Online paths) against float64, the CPU and CUDA backends drawing
the same dropout mask, torch.compile with inductor on the GPU, graphs built on the GPU."""

import pytest
import torch

import dfgnn
import dfgnn.nn
import reference as ref
from conftest import CUDA, assert_close

pytestmark = pytest.mark.skipif(not CUDA, reason="needs a CUDA device and dfgnn built with DFGNN_ENABLE_CUDA")


def batch(graphs, nodes, p, seed):
    """Block-diagonal union of `graphs` random graphs of `nodes` nodes, edge probability p."""
    g = torch.Generator().manual_seed(seed)
    parts = []
    for i in range(graphs):
        adj = torch.rand(nodes, nodes, generator=g) < p
        parts.append(adj.nonzero().t() + i * nodes)
    return torch.cat(parts, 1)


@pytest.mark.parametrize("model", ["gt", "agnn", "gat", "gatv2"])
@pytest.mark.parametrize("nodes,p,heads,dim", [(80, 0.5, 1, 64), (40, 0.2, 4, 32), (150, 0.05, 2, 16)])
def test_batched_graphs(model, nodes, p, heads, dim):
    from test_ops import check
    edge_index = batch(48, nodes, p, 3)
    graph = dfgnn.Graph.from_edge_index(edge_index, 48 * nodes)
    strategy = graph.prepare(model, heads, dim, "cuda")
    if nodes == 80:  # dense enough, and large enough, for Auto's Dense (docs/cuda.md); not GATv2's
        assert strategy == ("online" if model == "gatv2" else "dense")
    check(model, edge_index, 48 * nodes, heads, dim, "cuda", "plain", torch.Generator().manual_seed(1),
          out_tol=3e-5, grad_tol=1e-4)


def test_current_stream():
    """Inputs written on a side stream behind a long kernel: the op must run after them on
    that stream (on any other stream it would read the NaNs they replace)."""
    edge_index = ref.random_graph(500, 5000, 1)
    graph = dfgnn.Graph.from_edge_index(edge_index, 500)
    q = torch.randn(500, 2, 32, device="cuda", requires_grad=True)
    expected = dfgnn.gt_attention(graph, q, q, q)
    expected.sum().backward()
    expected_grad = q.grad
    q2 = torch.full_like(q, float("nan")).requires_grad_()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        with torch.no_grad():
            q2.copy_(q)
        out = dfgnn.gt_attention(graph, q2, q2, q2)
        out.sum().backward()
    side.synchronize()
    assert torch.equal(out, expected)
    assert torch.equal(q2.grad, expected_grad)


@pytest.mark.parametrize("model", ["gt", "agnn", "gat", "gatv2"])
def test_cpu_and_cuda_agree_with_dropout(model):
    """Same seed, same mask on both backends (dfgnn::Dropout is a hash of (seed, edge, head))."""
    from test_ops import inputs, run_ours
    edge_index = ref.random_graph(200, 3000, 2)
    graph = dfgnn.Graph.from_edge_index(edge_index, 200)
    master = inputs(model, 200, 2, 16, torch.Generator().manual_seed(0))
    grad = torch.randn(200, 2, 16)
    results = []
    for device in ("cpu", "cuda"):
        t = {k: v.float().to(device).requires_grad_() for k, v in master.items()}
        out = run_ours(model, graph, t, dropout=0.4, seed=99)
        out.backward(grad.to(device))
        results.append((out, {k: v.grad for k, v in t.items()}))
    (out_cpu, grads_cpu), (out_cuda, grads_cuda) = results
    assert_close(out_cuda, out_cpu, 1e-5, "out")
    for k in grads_cpu:
        assert_close(grads_cuda[k], grads_cpu[k], 1e-4, f"d{k}")


def test_compile_inductor_cuda():
    from test_compile import Net
    torch.manual_seed(0)
    net = Net().cuda()
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(30, 120, 1), 30)
    graph.with_self_loops()
    x = torch.randn(30, 16, device="cuda")
    expected = net(x, graph)
    torch._dynamo.reset()
    out = torch.compile(net, fullgraph=True)(x, graph)
    assert_close(out, expected, 1e-5, "out")


def shuffled_batch(graphs, nodes, p, seed):
    edge_index = batch(graphs, nodes, p, seed)
    return edge_index[:, torch.randperm(edge_index.size(1), generator=torch.Generator().manual_seed(seed))]


@pytest.mark.parametrize("kind", ["random", "sorted", "batch", "bipartite", "empty"])
def test_graph_built_on_the_gpu(kind):
    """A CUDA edge_index is built on the GPU into the graph the host builds: same CSR, edge ids,
    plans, and bitwise the same outputs and gradients."""
    size, ptr = None, None
    if kind in ("random", "sorted"):
        edge_index = ref.random_graph(300, 4000, 2)
        if kind == "sorted":
            edge_index = edge_index[:, torch.argsort(edge_index[1], stable=True)]
    elif kind == "batch":
        edge_index, ptr = shuffled_batch(24, 80, 0.5, 4), torch.arange(0, 24 * 80 + 1, 80)
    elif kind == "bipartite":
        edge_index, size = torch.stack([torch.randint(0, 50, (900,)), torch.randint(0, 30, (900,))]), (50, 30)
    else:
        edge_index = torch.empty(2, 0, dtype=torch.int64)
    n = 24 * 80 if kind == "batch" else None if size else 300
    host = dfgnn.Graph.from_edge_index(edge_index, n, size=size, ptr=ptr)
    gpu = dfgnn.Graph.from_edge_index(edge_index.cuda(), n, size=size, ptr=None if ptr is None else ptr.cuda())
    assert host.device is None and gpu.device == torch.device("cuda", torch.cuda.current_device())
    assert (gpu.num_src_nodes, gpu.num_nodes, gpu.num_edges, gpu.max_in_degree) == \
        (host.num_src_nodes, host.num_nodes, host.num_edges, host.max_in_degree)
    for a, b in zip(host.csr(), gpu.csr()):
        assert torch.equal(a, b)
    assert gpu.edge_index().is_cuda and torch.equal(gpu.edge_index().cpu(), host.edge_index())
    for model in ("gt", "gat", "gatv2"):
        for heads, dim in ((1, 128), (4, 32), (3, 7)):
            assert host.prepare(model, heads, dim, "cuda") == gpu.prepare(model, heads, dim, "cuda")
    g = torch.Generator().manual_seed(5)
    q = torch.randn(host.num_nodes, 4, 32, generator=g).cuda().requires_grad_()
    k = torch.randn(host.num_src_nodes, 4, 32, generator=g).cuda().requires_grad_()
    results = []
    for graph in (host, gpu):
        out = dfgnn.gt_attention(graph, q, k, k)
        grads = torch.autograd.grad(out.square().sum(), (q, k))
        results.append((out, *grads))
    for a, b in zip(*results):
        assert torch.equal(a, b)


def test_gpu_graph_self_loops_and_layers():
    """A layer's self loops on a graph built on the GPU are built there too, as on the host."""
    edge_index = ref.random_graph(200, 2000, 3)
    host, gpu = dfgnn.Graph.from_edge_index(edge_index, 200), dfgnn.Graph.from_edge_index(edge_index.cuda(), 200)
    looped = gpu.with_self_loops()
    assert looped.device == gpu.device and looped.edge_index().is_cuda
    for a, b in zip(host.with_self_loops().csr(), looped.csr()):
        assert torch.equal(a, b)
    torch.manual_seed(0)
    conv = dfgnn.nn.GATConv(16, 8, heads=2).cuda()
    x = torch.randn(200, 16, device="cuda")
    assert torch.equal(conv(x, host), conv(x, gpu))


def test_gpu_graph_errors():
    edge_index = torch.tensor([[0, 5], [1, 2]], device="cuda")
    with pytest.raises(ValueError, match="source 5 of edge 1 is outside \\[0, 4\\)"):
        dfgnn.Graph.from_edge_index(edge_index, 4)
    with pytest.raises(ValueError, match="destination -1 of edge 1 is outside"):
        dfgnn.Graph.from_edge_index(torch.tensor([[0, 1], [1, -1]], device="cuda"), 4)
    crossing = torch.tensor([[0, 1, 4], [1, 4, 5]], device="cuda")
    with pytest.raises(ValueError, match="edge 1 joins two graphs of the batch \\(1 -> 4\\)"):
        dfgnn.Graph.from_edge_index(crossing, 6, ptr=torch.tensor([0, 3, 6], device="cuda"))
    with pytest.raises(ValueError, match="graph offsets must run from 0 to num_nodes = 6"):
        dfgnn.Graph.from_edge_index(crossing, 6, ptr=torch.tensor([0, 3, 5], device="cuda"))


def test_prepared_ahead_on_a_side_stream():
    """A graph built and prepared for training (backward=True) on a side stream behind a long
    kernel, as a data loader's thread would: its plan and the backward's data are built there,
    and its forward and backward equal those of a graph its first calls prepared, bit for bit."""
    edge_index = ref.random_graph(500, 5000, 2).cuda()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        ahead = dfgnn.Graph.from_edge_index(edge_index, 500)
        ahead.prepare("gt", 2, 32, "cuda", backward=True)
    torch.cuda.current_stream().wait_stream(side)
    lazy = dfgnn.Graph.from_edge_index(edge_index, 500)
    q = torch.randn(500, 2, 32, device="cuda", requires_grad=True)
    results = []
    for graph in (ahead, lazy):
        out = dfgnn.gt_attention(graph, q, q, q)
        results.append((out, *torch.autograd.grad(out.square().sum(), q)))
    assert all(torch.equal(a, b) for a, b in zip(*results))


def test_from_batch_on_the_gpu():
    from torch_geometric.data import Batch, Data
    parts = [Data(edge_index=ref.random_graph(n, 3 * n, n), num_nodes=n) for n in (70, 90, 100, 64)]
    batch_ = Batch.from_data_list(parts).cuda()
    graph = dfgnn.Graph.from_batch(batch_)
    host = dfgnn.Graph.from_edge_index(batch_.edge_index.cpu(), batch_.num_nodes, ptr=batch_.ptr.cpu())
    assert graph.device is not None
    for model, heads, dim in (("gt", 1, 128), ("gat", 4, 32), ("agnn", 2, 64)):
        assert graph.prepare(model, heads, dim, "cuda") == host.prepare(model, heads, dim, "cuda")
    by_vector = dfgnn.Graph.from_edge_index(batch_.edge_index, batch_.num_nodes, batch=batch_.batch)
    by_sizes = dfgnn.Graph.from_edge_index(batch_.edge_index, batch_.num_nodes,
                                           batch_num_nodes=batch_.ptr.diff())
    for other in (by_vector, by_sizes):
        assert other.prepare("gt", 1, 128, "cuda") == graph.prepare("gt", 1, 128, "cuda")


LAYERS = {"transformer": ("TransformerConv", (32, 16), {"heads": 2}), "agnn": ("AGNNConv", (), {}),
          "gat": ("GATConv", (32, 16), {"heads": 2}), "gatv2": ("GATv2Conv", (32, 16), {"heads": 2})}


def layer_errors(layer, dtype, autocast):
    """Ours and PyG's layer (the same weights) run in `dtype`, converted with .to(dtype), or in
    float32 under torch.autocast("cuda", dtype) (`autocast`): the normwise errors of out and of
    every parameter's gradient (over the largest of them all, as test_nn.py) against PyG in
    float64 on the same weights and input: (names, ours, PyG's)."""
    import torch_geometric.nn as pyg_nn
    name, args, kwargs = LAYERS[layer]
    torch.manual_seed(0)
    edge_index = ref.random_graph(300, 3000, 4).cuda()
    graph = dfgnn.Graph.from_edge_index(edge_index, 300)
    ours = getattr(dfgnn.nn, name)(*args, **kwargs).cuda()
    x = torch.randn(300, 32, device="cuda")
    if not autocast:
        ours, x = ours.to(dtype), x.to(dtype)
    theirs = getattr(pyg_nn, name)(*args, **kwargs).cuda().to(next(ours.parameters()).dtype)
    theirs.load_state_dict(ours.state_dict())
    truth = getattr(pyg_nn, name)(*args, **kwargs).cuda().double()
    truth.load_state_dict(ours.state_dict())
    want = truth(x.double(), edge_index)
    grad = torch.randn_like(want)
    want.backward(grad)
    scale = max(p.grad.abs().max().item() for p in truth.parameters())
    errors = []
    for model, arg in ((ours, graph), (theirs, edge_index)):
        with torch.autocast("cuda", dtype=dtype, enabled=autocast):
            out = model(x, arg)
        out.backward(grad.to(out.dtype))
        grads = [(p.grad.double() - q.grad).abs().max().item() / scale
                 for p, q in zip(model.parameters(), truth.parameters())]
        errors.append([((out.double() - want).abs().max() / want.abs().max()).item(), *grads])
        assert all(p.grad.dtype == p.dtype for p in model.parameters())
    return ["out"] + [n for n, _ in ours.named_parameters()], *errors


@pytest.mark.parametrize("autocast", [False, True], ids=["to_dtype", "autocast"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layer", list(LAYERS))
def test_layers_in_two_byte_types(layer, dtype, autocast):
    """A layer converted with .to(dtype), or in float32 under torch.autocast("cuda", dtype) (the
    ops cast their inputs to the autocast type, as PyTorch's lower-precision ops do; before, the
    GAT layers' float32 score terms met bf16 values and raised), runs its attention in that
    type: out and every parameter's gradient are within twice PyG's own error in the same
    setting (FlashAttention's criterion), plus the type's unit roundoff, of PyG in float64."""
    names, ours, theirs = layer_errors(layer, dtype, autocast)
    unit = 2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -11
    for name, a, b in zip(names, ours, theirs):
        assert a <= 2 * b + unit, f"{layer} {dtype} {name}: ours {a:.3g}, PyG {b:.3g}"
    q = torch.randn(300, 2, 16, device="cuda", requires_grad=True)
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(300, 3000, 4).cuda(), 300)
    with torch.autocast("cuda", dtype=dtype):
        out = dfgnn.gt_attention(graph, q, q, q)
    assert out.dtype == dtype
    out.float().sum().backward()
    assert q.grad.dtype == torch.float32
