"""CUDA graphs (skipped without a GPU): the ops, forward and backward, captured by
torch.cuda.graph replay what eager calls compute, bitwise, for every model and type, with edge
features, attention weights and dropout (a seed in device memory, or drawn anew at each replay);
a Graph prepared on another stream captures without a warm-up; what a capture cannot hold (a
Graph, a plan or a backward's structure built during it) fails with a clear error; layers
compiled with torch.compile's "reduce-overhead" run as CUDA graphs and match eager."""

import pytest
import torch

import dfgnn
import dfgnn.nn
import reference as ref
from conftest import CUDA, assert_close

pytestmark = pytest.mark.skipif(not CUDA, reason="needs a CUDA device and dfgnn built with DFGNN_ENABLE_CUDA")

N, E, H, D = 300, 3000, 2, 32
OPS = {"gt": dfgnn.gt_attention, "agnn": dfgnn.agnn_attention, "gat": dfgnn.gat_attention,
       "gatv2": dfgnn.gatv2_attention}


def graph_and_inputs(model, dtype, edges, seed=0):
    """A random graph on the GPU (with a self loop, a repeated edge, a node without in-edges and
    a heavy row) and the model's inputs, requiring grad: (graph, tensors, edge features or None)."""
    g = torch.Generator().manual_seed(seed)
    edge_index = ref.random_graph(N, E, seed, hub_edges=400).cuda()
    graph = dfgnn.Graph.from_edge_index(edge_index, N)
    shapes = {"gt": [(N, H, D)] * 3, "agnn": [(N, H, D), (H,)], "gat": [(N, H), (N, H), (N, H, D)],
              "gatv2": [(N, H, D), (N, H, D), (H, D)]}[model]
    tensors = [torch.randn(s, generator=g).to("cuda", dtype).requires_grad_() for s in shapes]
    ef = None
    if edges:
        shape = (graph.num_edges, H) if model == "gat" else (graph.num_edges, H, D)
        ef = (0.5 * torch.randn(shape, generator=g)).to("cuda", dtype).requires_grad_()
    return graph, tensors, ef


def step(model, graph, tensors, ef, weight, **options):
    """One forward and backward: [out, the inputs' gradients..., (edge features' gradient),
    (attention weights)]."""
    if model != "agnn":
        options["edge_features"] = ef
    result = OPS[model](graph, *tensors, **options)
    out, w = result if options.get("return_attention_weights") else (result, None)
    leaves = tensors + ([ef] if ef is not None else [])
    grads = torch.autograd.grad((out.float() * weight).sum(), leaves)
    return [out, *grads] + ([w] if w is not None else [])


def capture(fn, warmup=2):
    """fn's work as a CUDA graph, after `warmup` eager runs on a side stream (PyTorch's recipe):
    (graph, fn's outputs, which each replay overwrites)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        results = fn()
    return graph, results


def refill(tensors, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for t in tensors:
            t.copy_(torch.randn(t.shape, generator=g))


@pytest.mark.parametrize("model", list(OPS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("variant", ["plain", "edge_features", "weights", "dropout"])
def test_replay_equals_eager(model, dtype, variant):
    if variant == "edge_features" and model == "agnn":
        pytest.skip("AGNN takes no edge features")
    graph, tensors, ef = graph_and_inputs(model, dtype, variant == "edge_features")
    weight = torch.randn(N, H, D, device="cuda")
    options = {}
    if variant == "weights":
        options = {"return_attention_weights": True, "dropout": 0.2, "seed": 5}
    if variant == "dropout":  # the kernels read the seed where they run: a new one per replay
        seed = torch.tensor([11], dtype=torch.int64, device="cuda")
        options = {"dropout": 0.3, "seed": seed}
    run = lambda: step(model, graph, tensors, ef, weight, **options)  # noqa: E731
    cuda_graph, results = capture(run)
    leaves = tensors + ([ef] if ef is not None else [])
    for trial in range(3):
        refill([t for t in leaves if t.dtype.is_floating_point], 100 + trial)
        if variant == "dropout":
            seed.fill_(1000 + trial)
        cuda_graph.replay()
        expected = run()
        for i, (r, e) in enumerate(zip(results, expected)):
            assert torch.equal(r, e), f"result {i} of trial {trial}: {(r.float() - e.float()).abs().max()}"
    if variant == "dropout":  # the seed tensor draws what the same int draws
        with_int = step(model, graph, tensors, ef, weight, dropout=0.3, seed=1002)
        assert all(torch.equal(a, b) for a, b in zip(results, with_int))


@pytest.mark.parametrize("model", ["gt", "gat"])
def test_dropout_draws_anew_each_replay(model):
    """Without a seed, a call under capture draws one on the device, which each replay draws
    anew: replays on the same inputs differ, as eager calls do."""
    graph, tensors, ef = graph_and_inputs(model, torch.float32, False)
    weight = torch.randn(N, H, D, device="cuda")
    cuda_graph, results = capture(lambda: step(model, graph, tensors, ef, weight, dropout=0.5))
    cuda_graph.replay()
    first = [r.clone() for r in results]
    cuda_graph.replay()
    assert not torch.equal(first[0], results[0])
    assert all(torch.isfinite(r).all() for r in results)


def test_prepared_on_another_stream():
    """A Graph built and prepared (backward included) on one stream captures on another with no
    warm-up: preparing waits for its work, so any stream sees it."""
    builder = torch.cuda.Stream()
    with torch.cuda.stream(builder):
        graph, tensors, ef = graph_and_inputs("gt", torch.bfloat16, True)
        graph.prepare("gt", H, D, "cuda", backward=True, dtype=torch.bfloat16)
    weight = torch.randn(N, H, D, device="cuda")
    run = lambda: step("gt", graph, tensors, ef, weight)  # noqa: E731
    torch.cuda.synchronize()
    cuda_graph, results = capture(run, warmup=0)
    cuda_graph.replay()
    assert all(torch.equal(r, e) for r, e in zip(results, run()))


def test_what_a_capture_cannot_hold_is_refused():
    edge_index = ref.random_graph(N, E, 3).cuda()
    q = torch.randn(N, H, D, device="cuda", requires_grad=True)
    graph = dfgnn.Graph.from_edge_index(edge_index, N)
    # A plan never built: refused by name, before any GPU work.
    with pytest.raises(RuntimeError, match=r"first call of gt on 2 heads x 32 float32 builds its plan.*capturing"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            dfgnn.gt_attention(graph, q, q, q)
    # A plan built by a forward, its backward's structure not: the library refuses it.
    with torch.no_grad():
        dfgnn.gt_attention(graph, q, q, q)
    with pytest.raises(RuntimeError, match="backward structure.*capturing a CUDA graph"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            dfgnn.gt_attention(graph, q, q, q).sum().backward()
    # A Graph built on the GPU.
    with pytest.raises(RuntimeError, match="building a Graph on the GPU.*capturing"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            dfgnn.Graph.from_edge_index(edge_index, N)
    # The device and the Graph still work.
    q.grad = None
    dfgnn.gt_attention(graph, q, q, q).sum().backward()
    assert torch.isfinite(q.grad).all()


class Net(torch.nn.Module):
    """A GAT layer with attention dropout and a Graph Transformer layer with edge features."""

    def __init__(self, features, classes, edge_dim):
        super().__init__()
        self.gat = dfgnn.nn.GATConv(features, 8, heads=4, dropout=0.3)
        self.gt = dfgnn.nn.TransformerConv(32, classes, heads=2, concat=False, edge_dim=edge_dim)

    def forward(self, x, graph, edge_attr):
        return self.gt(torch.nn.functional.elu(self.gat(x, graph)), graph, edge_attr)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_compiled_reduce_overhead(dtype):
    """torch.compile(mode="reduce-overhead") over layers on a prebuilt Graph: one graph
    (fullgraph), run as CUDA graphs (no cudagraph skip), outputs and gradients as eager's in
    eval mode (no dropout; inductor fuses the layers' own products differently, so close, not
    equal), and training steps with dropout finite."""
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    edge_index = ref.random_graph(N, E, 4).cuda()
    graph = dfgnn.Graph.from_edge_index(edge_index, N)
    x = torch.randn(N, 24, device="cuda")
    edge_attr = torch.randn(graph.num_edges, 5, device="cuda")
    net = Net(24, 6, 5).cuda()
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(net, mode="reduce-overhead", fullgraph=True)
    with torch.autocast("cuda", dtype=dtype, enabled=dtype != torch.float32):
        for training in (True, False):
            net.train(training)
            for _ in range(3):
                results = []
                for run in (net, compiled):
                    net.zero_grad()
                    out = run(x, graph, edge_attr)
                    out.float().square().sum().backward()
                    results.append([out.detach().clone()] + [p.grad.clone() for p in net.parameters()])
                for r in results[1]:
                    assert torch.isfinite(r).all()
                if not training:  # each gradient at the scale of them all (some nearly vanish)
                    tol = 2e-5 if dtype == torch.float32 else 2e-2
                    scale = max(g.abs().max().item() for g in results[0][1:])
                    for i, (a, b) in enumerate(zip(results[1], results[0])):
                        assert_close(a.float(), b.float(), tol, f"result {i}", scale=0.0 if i == 0 else scale)
    assert counters["inductor"]["cudagraph_skips"] == 0
