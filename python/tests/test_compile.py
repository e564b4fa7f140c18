"""torch.compile over the layers: no graph break with a prebuilt Graph (fullgraph), the same
outputs and gradients as eager; an edge_index tensor costs one graph break (the Graph lookup)."""

import pytest
import torch
import torch._dynamo.testing

import dfgnn
import dfgnn.nn
import reference as ref
from conftest import assert_close

N, F = 30, 16


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gt = dfgnn.nn.TransformerConv(F, 8, heads=2)
        self.gat = dfgnn.nn.GATConv(16, 8, heads=2)
        self.gatv2 = dfgnn.nn.GATv2Conv(16, 8, heads=2, concat=False)
        self.agnn = dfgnn.nn.AGNNConv()

    def forward(self, x, graph):
        x = self.gt(x, graph).relu()
        x = self.gat(x, graph).relu()
        x = self.gatv2(x, graph)
        return self.agnn(x, graph)


def eager_and_compiled(backend, fullgraph, graph_arg):
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(N, F)
    results = []
    for compiled in (False, True):
        torch._dynamo.reset()
        run = torch.compile(net, backend=backend, fullgraph=fullgraph) if compiled else net
        net.zero_grad()
        out = run(x, graph_arg)
        out.square().sum().backward()
        results.append((out.detach(), {k: p.grad.clone() for k, p in net.named_parameters()}))
    return results


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_fullgraph(backend):
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(N, 120, 1), N)
    graph.with_self_loops()  # built before tracing: compiled code then only reads it
    (out, grads), (out_c, grads_c) = eager_and_compiled(backend, True, graph)
    assert_close(out_c, out, 1e-6, "out")
    scale = max(g.abs().max().item() for g in grads.values())  # some are ~0 (gt.lin_key.bias)
    for key in grads:
        assert_close(grads_c[key], grads[key], 1e-5, key, scale)


def test_new_graph_every_step():
    """A stream of graphs: the graph id turns dynamic after one recompile, and each step runs
    on its own graph."""
    conv = dfgnn.nn.GATConv(F, 8, heads=2)
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    run = torch.compile(conv, backend=counter, fullgraph=True)
    x = torch.randn(N, F)
    for step in range(6):
        graph = dfgnn.Graph.from_edge_index(ref.random_graph(N, 120, step), N)
        graph.with_self_loops()
        assert_close(run(x, graph), conv(x, graph), 1e-6, f"step {step}")
    assert counter.frame_count <= 2


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_attention_weights(backend):
    """return_attention_weights under torch.compile (fullgraph): the functional ops' (out,
    weights) equal eager's, the weights carry no gradient, out's gradient flows; on a stream of
    graphs (E unknown to the trace once the graph id turns dynamic) too."""
    def attention(graph, x, beta, el, a):
        h, w = x.size(1), []
        outs = [dfgnn.gt_attention(graph, x, x, x, return_attention_weights=True),
                dfgnn.agnn_attention(graph, x, beta, return_attention_weights=True),
                dfgnn.gat_attention(graph, el, el, x, return_attention_weights=True),
                dfgnn.gatv2_attention(graph, x, x, a, return_attention_weights=True)]
        for out, weights in outs:
            assert weights.shape[1] == h
            w.append(weights)
        return sum(out.sum() for out, _ in outs), w

    torch.manual_seed(1)
    x, beta = torch.randn(N, 2, 4, requires_grad=True), torch.ones(2)
    el, a = torch.randn(N, 2), torch.randn(2, 4)
    counter = torch._dynamo.testing.CompileCounterWithBackend(backend)
    run = torch.compile(attention, backend=counter, fullgraph=True)
    for step in range(4):
        graph = dfgnn.Graph.from_edge_index(ref.random_graph(N, 100 + 10 * step, step), N)
        total, weights = attention(graph, x, beta, el, a)
        (grad,) = torch.autograd.grad(total, x)
        total_c, weights_c = run(graph, x, beta, el, a)
        (grad_c,) = torch.autograd.grad(total_c, x)
        assert_close(total_c, total, 1e-6, f"step {step} out")
        assert_close(grad_c, grad, 1e-5, f"step {step} grad")
        for got, want in zip(weights_c, weights):
            assert got.shape == (graph.num_edges, 2) and not got.requires_grad
            assert_close(got, want, 1e-6, f"step {step} weights")
    assert counter.frame_count <= 2


def test_layers_attention_weights():
    """The layers' return_attention_weights in one graph (fullgraph) once the Graph's edge_index
    (with self loops, for the GAT layers) was built before tracing: PyG's (out, (edge_index,
    alpha)), equal to eager's."""
    torch.manual_seed(2)
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(N, 120, 1), N)
    graph.edge_index(), graph.with_self_loops().edge_index()
    x = torch.randn(N, F)
    for layer in (dfgnn.nn.TransformerConv(F, 8, heads=2), dfgnn.nn.GATConv(F, 8, heads=2),
                  dfgnn.nn.GATv2Conv(F, 8, heads=2)):
        torch._dynamo.reset()
        out, (edges, alpha) = layer(x, graph, return_attention_weights=True)
        out_c, (edges_c, alpha_c) = torch.compile(layer, backend="aot_eager", fullgraph=True)(
            x, graph, return_attention_weights=True)
        assert torch.equal(edges_c, edges)
        assert_close(out_c, out, 1e-6, f"{type(layer).__name__} out")
        assert_close(alpha_c, alpha, 1e-6, f"{type(layer).__name__} alpha")


def test_graph_break_on_edge_index():
    edge_index = ref.random_graph(N, 120, 1)
    (out, grads), (out_c, grads_c) = eager_and_compiled("aot_eager", False, edge_index)
    assert_close(out_c, out, 1e-6, "out")
    explained = torch._dynamo.explain(Net())(torch.randn(N, F), edge_index)
    assert explained.graph_break_count >= 1


class EdgeNet(torch.nn.Module):
    """The three layers with edge features (GATConv's self loops filled with the mean)."""

    def __init__(self):
        super().__init__()
        self.gt = dfgnn.nn.TransformerConv(F, 8, heads=2, edge_dim=3)
        self.gat = dfgnn.nn.GATConv(16, 8, heads=2, edge_dim=3)
        self.gatv2 = dfgnn.nn.GATv2Conv(16, 8, heads=2, edge_dim=3, add_self_loops=False)

    def forward(self, x, graph, edge_attr):
        x = self.gt(x, graph, edge_attr).relu()
        x = self.gat(x, graph, edge_attr).relu()
        return self.gatv2(x, graph, edge_attr)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_edge_features_fullgraph(backend):
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(N, 120, 1), N)
    graph.with_self_loops()
    torch.manual_seed(0)
    net = EdgeNet()
    x, edge_attr = torch.randn(N, F), torch.randn(graph.num_edges, 3, requires_grad=True)
    results = []
    for compiled in (False, True):
        torch._dynamo.reset()
        run = torch.compile(net, backend=backend, fullgraph=True) if compiled else net
        net.zero_grad()
        edge_attr.grad = None
        out = run(x, graph, edge_attr)
        out.square().sum().backward()
        grads = {k: p.grad.clone() for k, p in net.named_parameters()}
        results.append((out.detach(), grads, edge_attr.grad.clone()))
    (out, grads, de), (out_c, grads_c, de_c) = results
    assert_close(out_c, out, 1e-6, "out")
    assert_close(de_c, de, 1e-5, "d edge_attr")
    scale = max(g.abs().max().item() for g in grads.values())
    for key in grads:
        assert_close(grads_c[key], grads[key], 1e-5, key, scale)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_agnn_x_dst_fullgraph(backend):
    """AGNN with x_dst (AGNNConv on a pair, over a bipartite graph) in one graph: the same out
    and gradients (x_src, x_dst, beta) as eager."""
    edge_index = ref.random_bipartite(40, N, 150, 3)
    graph = dfgnn.Graph.from_edge_index(edge_index, size=(40, N))
    graph.with_self_loops()
    torch.manual_seed(3)
    conv = dfgnn.nn.AGNNConv()
    x_src, x_dst = torch.randn(40, F, requires_grad=True), torch.randn(N, F, requires_grad=True)
    results = []
    for compiled in (False, True):
        torch._dynamo.reset()
        run = torch.compile(conv, backend=backend, fullgraph=True) if compiled else conv
        out = run((x_src, x_dst), graph)
        results.append((out.detach(), torch.autograd.grad(out.square().sum(), (x_src, x_dst, conv.beta))))
    (out, grads), (out_c, grads_c) = results
    assert_close(out_c, out, 1e-6, "out")
    for name, got, want in zip(("dx_src", "dx_dst", "dbeta"), grads_c, grads):
        assert_close(got, want, 1e-5, name)
