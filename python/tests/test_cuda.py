"""CUDA-only checks (skipped without a GPU): the current stream, batched small graphs (the
CUDA-native Dense / Staged / Online paths) against float64, the CPU and CUDA backends drawing
the same dropout mask, torch.compile with inductor on the GPU."""

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
