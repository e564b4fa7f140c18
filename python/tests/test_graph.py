"""Graph construction, its caches, and the errors of malformed graphs."""

import gc

import pytest
import torch
from torch_geometric.utils import add_self_loops, remove_self_loops

import dfgnn
import reference as ref
from conftest import DEVICES


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


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ordering", ["rcm", "degree", "none"])
def test_reorder_renumbers_and_attention_follows(ordering, device):
    edge_index = ref.random_graph(40, 200, 5)
    graph = dfgnn.Graph.from_edge_index(edge_index, 40)
    renumbered, order = graph.reorder(ordering)
    assert torch.equal(torch.sort(order).values, torch.arange(40))
    position = torch.argsort(order)
    assert torch.equal(renumbered.edge_index(), position[edge_index])  # the same edges, in their order
    q, k, v = (torch.randn(40, 2, 8, device=device, requires_grad=True) for _ in range(3))
    w = torch.rand(edge_index.size(1), 2, device=device) + 0.5  # edge values stay in the edges' order
    out = dfgnn.gt_attention(graph, q, k, v, edge_values=w)
    order, position = order.to(device), position.to(device)
    out_new = dfgnn.gt_attention(renumbered, q[order], k[order], v[order], edge_values=w)
    torch.testing.assert_close(out_new[position], out)
    dout = torch.randn_like(out)
    for a, b in zip(torch.autograd.grad(out, (q, k, v), dout), torch.autograd.grad(out_new, (q, k, v), dout[order])):
        torch.testing.assert_close(a, b)


def test_reorder_orderings():
    path = torch.randperm(30, generator=torch.Generator().manual_seed(3))  # a path, shuffled ids
    edge_index = torch.stack([path[:-1], path[1:]])
    renumbered, order = dfgnn.Graph.from_edge_index(edge_index).reorder("rcm")
    assert (renumbered.edge_index()[0] - renumbered.edge_index()[1]).abs().max() == 1  # bandwidth 1
    edge_index = ref.random_graph(25, 90, 6)
    renumbered, order = dfgnn.Graph.from_edge_index(edge_index, 25).reorder("degree")
    degree = torch.bincount(edge_index[1], minlength=25)[order]
    assert (degree[:-1] >= degree[1:]).all()
    assert torch.equal(dfgnn.Graph.from_edge_index(edge_index, 25).reorder("none")[1], torch.arange(25))
    with pytest.raises(ValueError, match="unknown ordering 'metis'"):
        renumbered.reorder("metis")
    with pytest.raises(TypeError, match="ordering must be a string"):
        renumbered.reorder(1)


def test_with_self_loops_as_pyg():
    edge_index = ref.random_graph(9, 30, 2)  # has a self loop on node 0 and an isolated node 8
    graph = dfgnn.Graph.from_edge_index(edge_index, 9)
    expected, _ = add_self_loops(remove_self_loops(edge_index)[0], num_nodes=9)
    looped = graph.with_self_loops()
    assert torch.equal(looped.edge_index(), expected)
    assert graph.with_self_loops() is looped


def test_batch_offsets():
    """ptr (PyG's Batch.ptr) gives the batch's graphs; offsets that do not fit the edges are errors."""
    edge_index = torch.tensor([[0, 1, 4], [1, 0, 5]])
    graph = dfgnn.Graph.from_edge_index(edge_index, 6, ptr=torch.tensor([0, 3, 6]))
    assert torch.equal(graph.edge_index(), edge_index)
    with pytest.raises(ValueError, match="joins graph 1 of the batch"):
        dfgnn.Graph.from_edge_index(torch.tensor([[0, 1, 4], [1, 4, 5]]), 6, ptr=torch.tensor([0, 3, 6]))
    with pytest.raises(ValueError, match="graph offsets must run from 0 to num_nodes"):
        dfgnn.Graph.from_edge_index(edge_index, 6, ptr=torch.tensor([0, 4, 3, 6]))
    with pytest.raises(ValueError, match="graph offset 1 is 7, outside \\[0, 6\\]"):
        dfgnn.Graph.from_edge_index(edge_index, 6, ptr=torch.tensor([0, 7, 6]))
    with pytest.raises(TypeError, match="ptr must be a one-dimensional int64 or int32 tensor"):
        dfgnn.Graph.from_edge_index(edge_index, 6, ptr=[0, 3, 6])


def test_batch_vector_and_sizes():
    """PyG's batch vector and DGL's node counts give the same batch as ptr; a batch vector that
    decreases, or two ways at once, are errors."""
    # Graphs of 4, 5 and 3 nodes; the second's edge 4 -> 8 joins its first and last nodes.
    edge_index = torch.cat([ref.random_graph(4, 10, 1), ref.random_graph(5, 12, 2) + 4, torch.tensor([[4], [8]]),
                            ref.random_graph(3, 6, 3) + 9], 1)
    by_ptr = dfgnn.Graph.from_edge_index(edge_index, 12, ptr=torch.tensor([0, 4, 9, 12]))
    by_batch = dfgnn.Graph.from_edge_index(edge_index, 12, batch=torch.tensor([0] * 4 + [1] * 5 + [2] * 3))
    by_sizes = dfgnn.Graph.from_edge_index(edge_index, 12, batch_num_nodes=[4, 5, 3])
    q = torch.randn(12, 2, 32)
    expected = dfgnn.gt_attention(by_ptr, q, q, q)
    for graph in (by_batch, by_sizes):
        assert graph.prepare("gt", 2, 32) == by_ptr.prepare("gt", 2, 32)
        assert torch.equal(dfgnn.gt_attention(graph, q, q, q), expected)
    with pytest.raises(ValueError, match="joins graph 1 of the batch"):  # the batch says 4 | 4 | 4 nodes
        dfgnn.Graph.from_edge_index(edge_index, 12, batch=torch.tensor([0] * 4 + [1] * 4 + [2] * 4))
    with pytest.raises(ValueError, match="batch must be non-decreasing from 0"):
        dfgnn.Graph.from_edge_index(edge_index, 12, batch=torch.tensor([0] * 4 + [2] * 5 + [1] * 3))
    with pytest.raises(ValueError, match="graph offsets must run from 0 to num_nodes"):
        dfgnn.Graph.from_edge_index(edge_index, 12, batch_num_nodes=torch.tensor([4, 5, 2]))
    with pytest.raises(ValueError, match="give one of ptr, batch and batch_num_nodes, not ptr and batch"):
        dfgnn.Graph.from_edge_index(edge_index, 12, ptr=torch.tensor([0, 12]), batch=torch.zeros(12, dtype=torch.long))
    with pytest.raises(TypeError, match="batch must be a one-dimensional int64 or int32 tensor of graph ids"):
        dfgnn.Graph.from_edge_index(edge_index, 12, batch=torch.zeros(12))


def test_from_batch_as_from_edge_index():
    from torch_geometric.data import Batch, Data
    parts = [Data(edge_index=ref.random_graph(n, 3 * n, n), num_nodes=n) for n in (5, 9, 4)]
    batch = Batch.from_data_list(parts)
    graph = dfgnn.Graph.from_batch(batch)
    plain = dfgnn.Graph.from_edge_index(batch.edge_index, batch.num_nodes)
    for a, b in zip(graph.csr(), plain.csr()):
        assert torch.equal(a, b)
    del batch.ptr  # a Batch without offsets: its batch vector says the same
    assert dfgnn.Graph.from_batch(batch).prepare("gt", 2, 32) == graph.prepare("gt", 2, 32)
    q = torch.randn(batch.num_nodes, 2, 8)
    assert torch.equal(dfgnn.gt_attention(graph, q, q, q), dfgnn.gt_attention(plain, q, q, q))
    with pytest.raises(TypeError, match="has no edge_index"):
        dfgnn.Graph.from_batch(object())


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


@pytest.mark.parametrize("layout", [torch.sparse_coo, torch.sparse_csr])
def test_from_adj_t(layout):
    """A torch.sparse adj_t (PyG's transposed adjacency: rows destinations, columns sources) is
    the graph of its entries in their order; Graph.cached keeps it per tensor, inference tensors
    by their edges."""
    edge_index = ref.random_bipartite(11, 7, 40, 1)
    adj_t = torch.sparse_coo_tensor(edge_index.flip(0), torch.ones(edge_index.size(1)), (7, 11)).coalesce()
    entries = adj_t.indices().flip(0)  # sorted by destination, then source; repeats merged
    adj_t = adj_t.to_sparse(layout=layout)
    graph = dfgnn.Graph.from_adj_t(adj_t)
    assert (graph.num_src_nodes, graph.num_nodes) == (11, 7)
    assert torch.equal(graph.edge_index(), entries)
    assert dfgnn.Graph.cached(adj_t, None) is dfgnn.Graph.cached(adj_t, None)
    with torch.inference_mode():
        adj_t = adj_t.clone()
        graph = dfgnn.Graph.cached(adj_t, None)
        assert dfgnn.Graph.cached(adj_t, None) is graph and torch.equal(graph.edge_index(), entries)


def test_plans_cached():
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(9, 30, 2), 9)
    assert graph.prepare("gat", 2, 8) == "online"  # Auto on the host: the portable Online
    assert graph.prepare("gat", 2, 8, backward=True) == "online"  # the host plans build nothing ahead
    assert graph.plan(torch.device("cpu"), 2, 2, 8) is graph.plan(torch.device("cpu"), 2, 2, 8)
    with pytest.raises(ValueError, match="model must be one of"):
        graph.prepare("gcn", 2, 8)


def test_dead_graph_id():
    graph = dfgnn.Graph.from_edge_index(ref.random_graph(9, 30, 2), 9)
    graph_id, x = graph.id, torch.randn(9, 1, 4)
    del graph
    gc.collect()
    with pytest.raises(ValueError, match=f"no live Graph has id {graph_id}"):
        torch.ops.dfgnn.gt(graph_id, x, x, x, None, None, 0.0, 0.0, None)


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


def test_host_kernels_run_on_torchs_threads():
    """An OpenMP (or Threads) Kokkos starts with torch's intra-op threads; Serial has one."""
    from dfgnn import _lib

    space = _lib.lib.dfgnn_host_space().decode()
    if space == "Serial":
        pytest.skip("Kokkos' host space is Serial: one thread")
    assert _lib.lib.dfgnn_host_concurrency() == torch.get_num_threads()
