"""Graph construction, its caches, and the errors of malformed graphs."""

import gc

import pytest
import torch
from torch_geometric.utils import add_self_loops, remove_self_loops

import dfgnn
import reference as ref


def test_csr_from_edge_index():
    edge_index = torch.tensor([[0, 1, 2, 2, 3, 1], [1, 2, 0, 1, 0, 1]])
    graph = dfgnn.Graph.from_edge_index(edge_index)
    assert (graph.num_nodes, graph.num_edges, graph.max_in_degree) == (4, 6, 3)
    rowptr, src, dst, edge_id = graph.csr()
    assert rowptr.tolist() == [0, 2, 5, 6, 6]          # in-degrees 2, 3, 1, 0
    assert src.tolist() == [2, 3, 0, 2, 1, 1]          # grouped by destination, caller's order kept
    assert dst.tolist() == [0, 0, 1, 1, 1, 2]
    assert edge_id.tolist() == [2, 4, 0, 3, 5, 1]
    assert torch.equal(graph.edge_index(), edge_index)


def test_num_nodes_and_int32_and_device_input():
    edge_index = torch.tensor([[0, 1], [1, 2]], dtype=torch.int32)
    assert dfgnn.Graph.from_edge_index(edge_index).num_nodes == 3
    assert dfgnn.Graph.from_edge_index(edge_index, 7).num_nodes == 7
    assert dfgnn.Graph.from_edge_index(torch.empty(2, 0, dtype=torch.int64)).num_nodes == 0


def test_from_csr_matches_edge_index():
    edge_index = ref.random_graph(12, 50, 1)
    order = torch.argsort(edge_index[1], stable=True)
    rowptr = torch.zeros(13, dtype=torch.int64)
    rowptr[1:] = torch.cumsum(torch.bincount(edge_index[1], minlength=12), 0)
    from_csr = dfgnn.Graph.from_csr(rowptr, edge_index[0, order])
    from_coo = dfgnn.Graph.from_edge_index(edge_index, 12)
    assert torch.equal(from_csr.csr()[0], from_coo.csr()[0])
    assert torch.equal(from_csr.csr()[1], from_coo.csr()[1])
    x = torch.randn(12, 2, 8)
    assert torch.equal(dfgnn.gt_attention(from_csr, x, x, x), dfgnn.gt_attention(from_coo, x, x, x))


def test_with_self_loops_as_pyg():
    edge_index = ref.random_graph(9, 30, 2)  # has a self loop on node 0 and an isolated node 8
    graph = dfgnn.Graph.from_edge_index(edge_index, 9)
    expected, _ = add_self_loops(remove_self_loops(edge_index)[0], num_nodes=9)
    looped = graph.with_self_loops()
    assert torch.equal(looped.edge_index(), expected)
    assert graph.with_self_loops() is looped


def test_cached_per_tensor():
    edge_index = ref.random_graph(9, 30, 2)
    graph = dfgnn.Graph.cached(edge_index, 9)
    assert dfgnn.Graph.cached(edge_index, 9) is graph
    assert dfgnn.Graph.cached(edge_index.clone(), 9) is not graph
    edge_index[0, 0] = 3  # modified in place: rebuilt
    rebuilt = dfgnn.Graph.cached(edge_index, 9)
    assert rebuilt is not graph and torch.equal(rebuilt.edge_index(), edge_index)


def test_cached_inference_tensor():
    """Inference tensors have no version counter, yet change in place in inference mode: their
    contents decide."""
    with torch.inference_mode():
        edge_index = ref.random_graph(9, 30, 2)
        graph = dfgnn.Graph.cached(edge_index, 9)
        assert dfgnn.Graph.cached(edge_index, 9) is graph
        edge_index[0, 0] = (edge_index[0, 0] + 1) % 9
        rebuilt = dfgnn.Graph.cached(edge_index, 9)
        assert rebuilt is not graph and torch.equal(rebuilt.edge_index(), edge_index)


def test_plans_cached():
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(9, 30, 2), 9)
    assert graph.prepare("gat", 2, 8) == "online"  # Auto on the host: the portable Online
    assert graph.plan(torch.device("cpu"), 2, 2, 8) is graph.plan(torch.device("cpu"), 2, 2, 8)
    with pytest.raises(ValueError, match="model must be one of"):
        graph.prepare("gcn", 2, 8)


def test_dead_graph_id():
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(9, 30, 2), 9)
    graph_id, x = graph.id, torch.randn(9, 1, 4)
    del graph
    gc.collect()
    with pytest.raises(ValueError, match=f"no live Graph has id {graph_id}"):
        torch.ops.dfgnn.gt(graph_id, x, x, x, None, 0.0, 0.0, None)


@pytest.mark.parametrize("edge_index,num_nodes,error,match", [
    (torch.tensor([[0, 5], [1, 2]]), 4, ValueError, "source 5 of edge 1 is outside \\[0, 4\\)"),
    (torch.tensor([[0, 1], [1, -1]]), 4, ValueError, "destination -1 of edge 1 is outside"),
    (torch.tensor([[0, 1], [1, 2]]), -1, ValueError, "num_nodes must be in"),
    (torch.tensor([[0.0, 1.0], [1.0, 2.0]]), 4, TypeError, "must be int64 or int32, got torch.float32"),
    (torch.tensor([0, 1, 2]), 4, ValueError, "must have shape \\[2, E\\], got \\[3\\]"),
    ([[0, 1], [1, 2]], 4, TypeError, "must be a torch.Tensor, got list"),
    (torch.tensor([[0, 1], [1, 2]]), 6.7, TypeError, "num_nodes must be an integer, got float"),
])
def test_malformed_edge_index(edge_index, num_nodes, error, match):
    with pytest.raises(error, match=match):
        dfgnn.Graph.from_edge_index(edge_index, num_nodes)


def test_malformed_csr():
    with pytest.raises(ValueError, match="rowptr\\[-1\\] = 3 but col has 2 entries"):
        dfgnn.Graph.from_csr(torch.tensor([0, 1, 3]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="row offsets decrease at row 1"):
        dfgnn.Graph.from_csr(torch.tensor([0, 2, 1, 2]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="source 3 of edge 1"):
        dfgnn.Graph.from_csr(torch.tensor([0, 1, 2]), torch.tensor([0, 3]))


def test_constructor_is_private():
    with pytest.raises(TypeError, match="Graph.from_edge_index"):
        dfgnn.Graph(torch.tensor([[0], [1]]))
