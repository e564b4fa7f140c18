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


def test_graph_break_on_edge_index():
    edge_index = ref.random_graph(N, 120, 1)
    (out, grads), (out_c, grads_c) = eager_and_compiled("aot_eager", False, edge_index)
    assert_close(out_c, out, 1e-6, "out")
    explained = torch._dynamo.explain(Net())(torch.randn(N, F), edge_index)
    assert explained.graph_break_count >= 1
