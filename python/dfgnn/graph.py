"""Graph: the preprocessed structure every attention call reads, built once and reused.

A Graph holds the native destination-major CSR (built from a PyG edge_index, a CSR or a
torch.sparse adj_t), and caches what calls on it need: the plan of each (device, model, heads,
dim) — strategy, launch geometry, workspace, and after the first backward the transposed
structure — and, per CUDA device, the device copy of the CSR the CUDA plans read. A graph made
from a CUDA edge_index is built on that GPU and stays there (docs/python.md, "Graphs on the
GPU"); its host copy is made only if something asks for it (csr, reorder, a CPU call). Layers
given an edge_index tensor build its Graph once and find it again for the same tensor
(`Graph.cached`).
"""

import ctypes
import itertools
import operator
import threading
import weakref

import torch
from torch.utils.weak import WeakTensorKeyDictionary

from . import _lib
from ._lib import ops as _ops

__all__ = ["Graph"]



# Custom ops receive a graph as an int (an op argument cannot be an arbitrary object); this maps
# the int back to its live Graph.
_registry = {}
_ids = itertools.count(1)


def lookup(graph_id):
    """The live Graph of an id passed to a dfgnn op."""
    ref = _registry.get(graph_id)
    graph = ref() if ref is not None else None
    if graph is None:
        raise ValueError(f"dfgnn: no live Graph has id {graph_id} (a Graph must outlive the backward of the "
                         f"ops it was passed to: under torch.compile or a dispatch mode build it outside)")
    return graph


def _refuse_capture(what, remedy):
    """Raises while the current CUDA stream captures a graph: `what` waits on the GPU, which a
    capture cannot hold (docs/python.md, "Capturing a training step")."""
    if torch.cuda.is_current_stream_capturing():
        raise RuntimeError(f"dfgnn: {what} waits on the GPU, and the current stream is capturing a CUDA graph: "
                           f"{remedy} before capturing")


def _device_key(device):
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


class _Plan:
    """A native plan: `native`, what the ops call (dfgnn._ops.Plan; it owns the handle and the
    tensors the plan reads, `arrays`: a CUDA plan's device CSR, the dropout ids, and frees the
    handle once neither this Graph nor a backward node still needs it), the strategy its forward
    runs, and the raw handle (valid while this lives)."""

    def __init__(self, handle, arrays, nodes, heads, dim):
        self.handle = handle.value
        self.strategy = _lib.lib.dfgnn_plan_strategy(handle).decode()
        self.native = _ops.plan(handle.value, list(arrays or ()), nodes, heads, dim)


class Graph:
    """A graph of `num_edges` directed edges u -> v, aggregated at its `num_nodes` destinations
    (PyG's default flow: messages go from edge_index[0] to edge_index[1]) from its
    `num_src_nodes` sources. A square graph has one node set (num_src_nodes == num_nodes); a
    bipartite one (PyG's size=(num_src_nodes, num_nodes)) has a source set and a destination
    set: source-side tensors have num_src_nodes rows, destination-side ones and outputs num_nodes.

    Build it with `Graph.from_edge_index` or `Graph.from_csr`; pass it to the layers in place
    of an edge_index, or to the functional ops (`dfgnn.gt_attention`, ...). Per-edge inputs
    (edge values) are in the order the edges were given.
    """

    def __init__(self, handle):
        if not isinstance(handle, ctypes.c_void_p):
            raise TypeError("dfgnn.Graph: build it with Graph.from_edge_index(edge_index) or "
                            "Graph.from_csr(rowptr, col)")
        self._handle = handle
        weakref.finalize(self, _lib.lib.dfgnn_graph_free, handle)
        s, n, e, d = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        _lib.call(_lib.lib.dfgnn_graph_info, handle, *(ctypes.byref(x) for x in (s, n, e, d)))
        self.num_src_nodes, self.num_nodes, self.num_edges, self.max_in_degree = s.value, n.value, e.value, d.value
        self.device = None  # the CUDA device a graph built there lives on
        self._edges = None  # its edge_index as given (int64, on that device), or as edge_index() rebuilt it
        self._plans = {}
        self._natives = {}  # (device index (-1: CPU), kind, heads, dim, dtype) -> plan(...).native: the ops' eager path
        self._device_csr = {}
        self._dropout_ids = {}  # device -> each edge's id in the dropout mask (_use_dropout_ids); empty: none
        self._self_loops = None
        self._lock = threading.Lock()
        self.id = next(_ids)
        _registry[self.id] = weakref.ref(self)
        weakref.finalize(self, _registry.pop, self.id, None)

    @classmethod
    def from_edge_index(cls, edge_index, num_nodes=None, size=None, ptr=None, batch=None, batch_num_nodes=None):
        """From a PyG edge_index [2, E] (int64 or int32): edge i is edge_index[0, i] ->
        edge_index[1, i]. A square graph of num_nodes nodes (default: the largest id + 1), or,
        with size=(num_src_nodes, num_dst_nodes), a bipartite one (a size entry None: that row's
        largest id + 1). A CUDA edge_index is built into a graph on its GPU, with no host copy.
        A batch of square graphs, each graph's nodes consecutive, says where its graphs are in
        one of three ways (Staged and Dense then read them instead of searching the graph):
        ptr, the node offsets [G + 1] (PyG's Batch.ptr); batch, each node's graph [N] (PyG's
        Batch.batch, non-decreasing); or batch_num_nodes, each graph's node count [G] (DGL's
        batch_num_nodes())."""
        if not isinstance(edge_index, torch.Tensor):
            raise TypeError(f"dfgnn.Graph: edge_index must be a torch.Tensor, got {type(edge_index).__name__}")
        if edge_index.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"dfgnn.Graph: edge_index must be int64 or int32, got {edge_index.dtype}")
        if edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise ValueError(f"dfgnn.Graph: edge_index must have shape [2, E], got {list(edge_index.shape)}")
        device = edge_index.device if edge_index.is_cuda else None
        edges = edge_index.detach().as_subclass(torch.Tensor).to(torch.int64)
        if device is None:
            edges = edges.cpu()
        else:
            _refuse_capture("building a Graph on the GPU", "build it (for a layer given an edge_index: run the step "
                                                           "once)")
        if size is not None and num_nodes is not None:
            raise ValueError("dfgnn.Graph: give num_nodes (a square graph) or size (a bipartite one), not both")
        if size is None:
            ns = nd = _count("num_nodes", num_nodes, edges)
        elif not isinstance(size, (tuple, list)) or len(size) != 2:
            raise TypeError(f"dfgnn.Graph: size must be a pair (num_src_nodes, num_dst_nodes), got {size!r}")
        else:
            ns, nd = (_count(f"size[{i}]", n, edges[i]) for i, n in enumerate(size))
        src, dst = edges[0].contiguous(), edges[1].contiguous()
        offsets = _offsets(ptr, batch, batch_num_nodes, edges.device)
        num_graphs = 0 if offsets is None else offsets.numel() - 1
        handle = ctypes.c_void_p()
        _lib.share_cores()
        if device is None:
            _lib.call(_lib.lib.dfgnn_graph_from_coo, -1, 0, ns, nd, src.numel(), src.data_ptr(), dst.data_ptr(),
                      offsets.data_ptr() if offsets is not None else None, num_graphs, ctypes.byref(handle))
        else:
            with torch.cuda.device(device):
                _lib.call(_lib.lib.dfgnn_graph_from_coo, device.index, torch.cuda.current_stream(device).cuda_stream,
                          ns, nd, src.numel(), src.data_ptr(), dst.data_ptr(),
                          offsets.data_ptr() if offsets is not None else None, num_graphs, ctypes.byref(handle))
        graph = cls(handle)
        if device is not None:  # kept for edge_index() and with_self_loops(); the caller's may change
            graph.device = _device_key(device)
            graph._edges = edges.clone() if edges.data_ptr() == edge_index.data_ptr() else edges
        return graph

    @classmethod
    def from_batch(cls, data):
        """From a torch_geometric Data or Batch: its edge_index, num_nodes and, for a Batch, its
        graphs (`ptr`, else the `batch` vector), on the device the edges are on."""
        edge_index = getattr(data, "edge_index", None)
        if edge_index is None:
            raise TypeError(f"dfgnn.Graph.from_batch: {type(data).__name__} has no edge_index")
        ptr = getattr(data, "ptr", None)
        return cls.from_edge_index(edge_index, num_nodes=data.num_nodes, ptr=ptr,
                                   batch=getattr(data, "batch", None) if ptr is None else None)

    @classmethod
    def from_csr(cls, rowptr, col, num_src_nodes=None):
        """From a destination-major CSR: node v's in-edges come from col[rowptr[v]:rowptr[v+1]]
        (PyG's `adj_t`, i.e. SparseTensor(row=edge_index[1], col=edge_index[0]).csr()).
        Edge ids are CSR positions. num_src_nodes (default: N = rowptr.numel() - 1, a square
        graph) makes it bipartite."""
        for name, t in (("rowptr", rowptr), ("col", col)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"dfgnn.Graph: {name} must be a torch.Tensor, got {type(t).__name__}")
            if t.dtype not in (torch.int64, torch.int32):
                raise TypeError(f"dfgnn.Graph: {name} must be int64 or int32, got {t.dtype}")
            if t.dim() != 1:
                raise ValueError(f"dfgnn.Graph: {name} must be one-dimensional, got shape {list(t.shape)}")
        if rowptr.numel() == 0:
            raise ValueError("dfgnn.Graph: rowptr needs N + 1 >= 1 entries")
        rowptr = rowptr.detach().to("cpu", torch.int64).contiguous()
        col = col.detach().to("cpu", torch.int64).contiguous()
        if int(rowptr[-1]) != col.numel():
            raise ValueError(f"dfgnn.Graph: rowptr[-1] = {int(rowptr[-1])} but col has {col.numel()} entries")
        n = rowptr.numel() - 1
        ns = n if num_src_nodes is None else _count("num_src_nodes", num_src_nodes, col)
        handle = ctypes.c_void_p()
        _lib.share_cores()
        _lib.call(_lib.lib.dfgnn_graph_from_csr, ns, n, rowptr.data_ptr(), col.data_ptr(), ctypes.byref(handle))
        return cls(handle)

    @classmethod
    def from_adj_t(cls, adj_t):
        """From a torch.sparse adjacency in the form PyG's layers take for edge_index (`adj_t`,
        the transposed adjacency): entry (v, u) is the edge u -> v, so its rows are the graph's
        num_nodes destinations and its columns the num_src_nodes sources, and edge i is its
        i-th stored entry. CSR, or COO once coalesced (sorted by destination, then source); its
        values are not read. On the GPU for a CUDA adj_t, as from_edge_index."""
        return cls.from_edge_index(_adj_t_edges(adj_t), size=(adj_t.size(1), adj_t.size(0)))

    @property
    def bipartite(self):
        """Sources and destinations differ in number."""
        return self.num_src_nodes != self.num_nodes

    _cache = WeakTensorKeyDictionary()

    @classmethod
    def cached(cls, edge_index, size):
        """The Graph of this edge_index tensor with size (num_src_nodes, num_dst_nodes), or N
        for a square graph, or of this torch.sparse adj_t (from_adj_t; its own size), built on
        first use and kept while the tensor lives (rebuilt if it was modified in place: seen
        through the version counter, which edits through .data or numpy bypass, or for
        inference tensors, which have none, by comparing the edges)."""
        size = tuple(size) if isinstance(size, (tuple, list)) else (size, size)
        if not isinstance(edge_index, torch.Tensor):
            name = type(edge_index).__name__
            raise TypeError(f"dfgnn: edge_index must be a [2, E] tensor, a torch.sparse adj_t or a dfgnn.Graph, "
                            f"got {name}" + (" (torch_sparse's SparseTensor adj_t: pass "
                                             "adj_t.to_torch_sparse_csr_tensor())" if name == "SparseTensor" else ""))
        sparse = edge_index.layout != torch.strided
        if sparse:
            size = (edge_index.size(1), edge_index.size(0))
        entry = cls._cache.get(edge_index)
        if edge_index.is_inference():  # no version counter, yet changeable in inference mode
            edges = _adj_t_edges(edge_index) if sparse else edge_index
            if entry is None or entry[0] != size or not torch.equal(entry[2], edges):
                entry = (size, cls.from_edge_index(edges, size=size), edges.clone())
                cls._cache[edge_index] = entry
            return entry[1]
        key = (edge_index._version, size)
        if entry is None or entry[0] != key:
            entry = (key, cls.from_edge_index(_adj_t_edges(edge_index) if sparse else edge_index, size=size))
            cls._cache[edge_index] = entry
        return entry[1]

    def csr(self):
        """The CSR the kernels read, as CPU tensors: (rowptr [N+1] int64, src [E] int32,
        dst [E] int32, edge_id [E] int64: CSR position -> index of the edge as given)."""
        rowptr = torch.empty(self.num_nodes + 1, dtype=torch.int64)
        src = torch.empty(self.num_edges, dtype=torch.int32)
        dst = torch.empty(self.num_edges, dtype=torch.int32)
        edge_id = torch.empty(self.num_edges, dtype=torch.int64)
        _lib.call(_lib.lib.dfgnn_graph_csr, self._handle, rowptr.data_ptr(), src.data_ptr(), dst.data_ptr(),
                  edge_id.data_ptr())
        return rowptr, src, dst, edge_id

    def edge_index(self):
        """The edges as a [2, E] int64 tensor, in the order they were given: on the CPU, or on
        the GPU for a graph built there. Kept after the first call, so torch.compile traces a
        later one (the layers' return_attention_weights) without a graph break."""
        if self._edges is None:
            self._edges = self._rebuilt_edge_index()
        return self._edges

    def _rebuilt_edge_index(self):
        # edge_index() of a graph built on the host, from its CSR, not kept.
        _, src, dst, edge_id = self.csr()
        edges = torch.empty(2, self.num_edges, dtype=torch.int64)
        edges[0, edge_id] = src.long()
        edges[1, edge_id] = dst.long()
        return edges

    def reorder(self, ordering="rcm"):
        """This square graph with its nodes renumbered for locality (docs/message_passing.md,
        "Reordering"; "rcm": reverse Cuthill-McKee, which made the attention kernels 0-17%
        faster on the H100, "degree", or "none"). Returns (graph, order): node order[i] of this
        graph is node i of `graph`, whose edges keep their order (edge attributes stay aligned).
        Renumber a dataset once: node tensors as x[order]; results back as out[position] with
        position = torch.argsort(order)."""
        if not isinstance(ordering, str):
            raise TypeError(f"dfgnn.Graph.reorder: ordering must be a string, got {type(ordering).__name__}")
        order = torch.empty(self.num_nodes, dtype=torch.int64)
        handle = ctypes.c_void_p()
        _lib.call(_lib.lib.dfgnn_graph_reorder, self._handle, ordering.encode(), order.data_ptr(),
                  ctypes.byref(handle))
        return Graph(handle), order

    def partition(self, ranks):
        """Each node's rank when the destination rows are split over `ranks` (dfgnn.distributed,
        docs/distributed.md): an int64 tensor [N] of contiguous ranges holding about (E + N) /
        ranks in-edges plus nodes each. Square graphs only."""
        owner = torch.empty(self.num_nodes, dtype=torch.int32)
        _lib.call(_lib.lib.dfgnn_graph_partition, self._handle, operator.index(ranks), owner.data_ptr())
        return owner.long()

    def with_self_loops(self):
        """This graph with its self loops removed and a loop u -> u added for every u below
        min(num_src_nodes, num_nodes), as PyG's remove_self_loops + add_self_loops do in
        GATConv, GATv2Conv and AGNNConv (bipartite inputs included); cached."""
        if self._self_loops is not None:  # lock-free once built, so torch.compile traces it
            return self._self_loops
        with self._lock:
            if self._self_loops is None:
                # Where the graph is (a graph on the GPU stays there); a host graph's edges are
                # rebuilt without keeping them, as edge_index() would.
                edges = self._edges if self._edges is not None else self._rebuilt_edge_index()
                kept = edges[0] != edges[1]
                loops = torch.arange(min(self.num_src_nodes, self.num_nodes), dtype=torch.int64,
                                     device=edges.device).expand(2, -1)
                graph = Graph.from_edge_index(torch.cat([edges[:, kept], loops], dim=1),
                                              size=(self.num_src_nodes, self.num_nodes))
                # What loop_attributes reads, found here once: indexing by the mask and counting
                # would each wait on the GPU at every call (and break a CUDA graph's capture).
                dst = edges[1, kept]
                graph._loop_free = kept.nonzero().squeeze(1), dst, torch.bincount(dst, minlength=self.num_nodes)
                self._self_loops = graph
            return self._self_loops

    def loop_attributes(self, edge_attr, fill_value="mean"):
        """Per-edge rows edge_attr [E, ...] of this graph as with_self_loops() orders its edges:
        the rows of the edges that are not loops, then each loop's row, as PyG's add_self_loops
        fills it: `fill_value` "mean" (of the node's in-edges' rows, 0 without any), "add" (their
        sum) or a number. Differentiable in edge_attr."""
        kept, dst, counts = self.with_self_loops()._loop_free
        m = min(self.num_src_nodes, self.num_nodes)
        if edge_attr.size(0) != self.num_edges:
            raise ValueError(f"dfgnn: edge_attr has {edge_attr.size(0)} rows, the graph {self.num_edges} edges")
        rows = edge_attr.index_select(0, kept.to(edge_attr.device))
        if isinstance(fill_value, (int, float)) and not isinstance(fill_value, bool):
            loops = rows.new_full((m, *rows.shape[1:]), float(fill_value))
        elif fill_value in ("mean", "add"):
            index = dst.to(edge_attr.device)
            loops = rows.new_zeros((self.num_nodes, *rows.shape[1:])).index_add_(0, index, rows)[:m]
            if fill_value == "mean":
                count = counts[:m].to(edge_attr.device).clamp(min=1)
                loops = loops / count.view(-1, *([1] * (rows.dim() - 1))).to(rows.dtype)
        else:
            raise ValueError(f"dfgnn: fill_value must be 'mean', 'add' or a number, got {fill_value!r}")
        return torch.cat([rows, loops])

    def prepare(self, model, heads, dim, device="cpu", backward=False, dtype=torch.float32):
        """Builds (or finds) the plan of `model` ('gt', 'agnn', 'gat', 'gatv2') for `heads` x
        `dim` features of `dtype` (float32, bfloat16 or float16) on `device`, as the
        first call would, and with backward=True what its first backward would (on the GPU the
        transposed graph); returns the strategy its forward runs. Lets preprocessing happen
        before, and be timed apart from, the first call, e.g. a step ahead in a data loader's
        thread on its own stream (GPU work runs on the current stream)."""
        if model not in _lib.MODELS:
            raise ValueError(f"dfgnn: model must be one of {sorted(_lib.MODELS)}, got {model!r}")
        if dtype not in _lib.DTYPES:
            raise TypeError(f"dfgnn: dtype must be one of {list(_lib.DTYPES)}, got {dtype}")
        device = torch.device(device)
        plan = self.plan(device, _lib.MODELS[model], int(heads), int(dim), _lib.DTYPES[dtype])
        if backward and device.type == "cuda":
            _lib.call(_lib.lib.dfgnn_plan_prepare_backward, plan.handle,
                      torch.cuda.current_stream(device).cuda_stream)
        return plan.strategy

    def plan(self, device, kind, heads, dim, dtype=0):
        """The cached native plan for (device, kind, heads, dim, element type: _lib.DTYPES' code)."""
        device = _device_key(device)
        key = (device, kind, heads, dim, dtype)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        if device.type == "cuda":
            model = next(name for name, code in _lib.MODELS.items() if code == kind)
            dtype_name = str(next(t for t, code in _lib.DTYPES.items() if code == dtype))
            _refuse_capture(f"the first call of {model} on {heads} heads x {dim} {dtype_name.split('.')[-1]} "
                            f"builds its plan, which",
                            f"run the step once (PyTorch's warm-up), or graph.prepare({model!r}, {heads}, {dim}, "
                            f"{str(device)!r}, backward=True, dtype={dtype_name})")
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                handle = ctypes.c_void_p()
                if device.type == "cpu":
                    arrays, where = None, _lib.Where(-1)
                elif device.type == "cuda":
                    # A graph built on this GPU: the plan reads the graph's own arrays.
                    arrays = () if device == self.device else self._device_arrays(device)
                    where = _lib.Where(device.index, torch.cuda.current_stream(device).cuda_stream,
                                       *[a.data_ptr() for a in arrays])
                else:
                    raise ValueError(f"dfgnn: tensors on {device} are not supported (cpu or cuda)")
                _lib.call(_lib.lib.dfgnn_plan_create, self._handle, ctypes.byref(where), kind, heads, dim, dtype,
                          ctypes.byref(handle))
                ids = self._dropout_ids.get(device)
                if self._dropout_ids and ids is None:
                    ids = self._dropout_ids[device] = next(iter(self._dropout_ids.values())).to(device)
                    if device.type == "cuda":
                        torch.cuda.current_stream(device).synchronize()  # as _device_arrays' copies
                # The ids go with the native plan: a backward node that outlives this Graph reads them.
                arrays = (*(arrays or ()), *(() if ids is None else (ids,)))
                plan = self._plans[key] = _Plan(handle, arrays, self.num_nodes, heads, dim)
                if ids is not None:
                    _lib.call(_lib.lib.dfgnn_plan_set_dropout_ids, handle, ids.data_ptr())
        return plan

    def _use_dropout_ids(self, ids):
        # Each edge's id in the dropout mask ([E] int64, in the edges' order as given), for every
        # plan: a rank's share of a graph (dfgnn.distributed) draws the whole graph's mask.
        if self._plans:
            raise RuntimeError("dfgnn.Graph: dropout ids are set before the graph's first plan")
        ids = torch.as_tensor(ids).long().contiguous()
        self._dropout_ids[_device_key(ids.device)] = ids

    def _native(self, device, key):
        # plan(device, *key[1:]).native, cached under key for the ops' eager path.
        native = self._natives[key] = self.plan(device, *key[1:]).native
        return native

    def _device_arrays(self, device):
        # The device copy of the CSR, shared by every plan on that device (lock held).
        arrays = self._device_csr.get(device)
        if arrays is None:
            arrays = self._device_csr[device] = tuple(a.to(device) for a in self.csr())
            torch.cuda.current_stream(device).synchronize()  # plans are built outside any stream order
        return arrays

    def __repr__(self):
        if self.bipartite:
            return (f"dfgnn.Graph(num_src_nodes={self.num_src_nodes}, num_nodes={self.num_nodes}, "
                    f"num_edges={self.num_edges})")
        return f"dfgnn.Graph(num_nodes={self.num_nodes}, num_edges={self.num_edges})"


def _adj_t_edges(adj_t):
    """A torch.sparse adj_t's edges (Graph.from_adj_t) as an edge_index [2, E], in its entries'
    order."""
    if not isinstance(adj_t, torch.Tensor):
        raise TypeError(f"dfgnn.Graph: adj_t must be a torch.sparse tensor, got {type(adj_t).__name__}")
    if adj_t.layout not in (torch.sparse_csr, torch.sparse_coo):  # PyG's layers fail on CSC
        raise ValueError(f"dfgnn.Graph: adj_t must be a sparse CSR or COO tensor, as PyG's layers take it, got "
                         f"{adj_t.layout}: pass adj_t.to_sparse_csr()")
    if adj_t.dim() - adj_t.dense_dim() != 2:  # batch dimensions included
        raise ValueError(f"dfgnn.Graph: adj_t must be one sparse matrix, got shape {list(adj_t.shape)} with "
                         f"{adj_t.dense_dim()} dense dims")
    if adj_t.layout == torch.sparse_coo:
        if not adj_t.is_coalesced():  # PyG's layers read its entries as stored, or fail
            raise ValueError("dfgnn.Graph: a COO adj_t must be coalesced (its entries sorted, without repeats): "
                             "pass adj_t.coalesce()")
        dst, src = adj_t.indices()
    else:
        rowptr = adj_t.crow_indices()
        dst = torch.repeat_interleave(torch.arange(adj_t.size(0), device=rowptr.device), rowptr.diff())
        src = adj_t.col_indices()
    return torch.stack([src.long(), dst.long()])


def _index_vector(name, t, meaning):
    if not isinstance(t, torch.Tensor) or t.dtype not in (torch.int64, torch.int32) or t.dim() != 1:
        raise TypeError(f"dfgnn.Graph: {name} must be a one-dimensional int64 or int32 tensor of {meaning}")
    return t.detach().as_subclass(torch.Tensor).long()


def _offsets(ptr, batch, batch_num_nodes, device):
    """The batch's node offsets [G + 1] (int64, on `device`) from whichever of ptr, batch and
    batch_num_nodes is given, or None; the native graph checks them against the edges."""
    given = [name for name, t in (("ptr", ptr), ("batch", batch), ("batch_num_nodes", batch_num_nodes))
             if t is not None]
    if len(given) > 1:
        raise ValueError(f"dfgnn.Graph: give one of ptr, batch and batch_num_nodes, not {' and '.join(given)}")
    if ptr is not None:
        offsets = _index_vector("ptr", ptr, "node offsets [G + 1]")
        if offsets.numel() == 0:
            raise ValueError("dfgnn.Graph: ptr needs G + 1 >= 1 node offsets")
    elif batch_num_nodes is not None:
        if isinstance(batch_num_nodes, (list, tuple)):
            batch_num_nodes = torch.tensor(batch_num_nodes, dtype=torch.int64)
        counts = _index_vector("batch_num_nodes", batch_num_nodes, "node counts [G]").to(device)
        offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    elif batch is not None:
        graph_of = _index_vector("batch", batch, "graph ids [N]").to(device)
        if graph_of.numel() == 0:
            return torch.zeros(1, dtype=torch.int64, device=device)
        # One wait for both: the graph count and whether the ids ever decrease.
        first, last, decreases = torch.stack([graph_of[0], graph_of[-1], (graph_of[1:] < graph_of[:-1]).any()]).tolist()
        if first < 0 or decreases:
            raise ValueError("dfgnn.Graph: batch must be non-decreasing from 0 (each graph's nodes consecutive, "
                             "as PyG's Batch numbers them)")
        offsets = torch.searchsorted(graph_of, torch.arange(last + 2, device=device))
    else:
        return None
    return offsets.to(device).contiguous()


def _count(name, n, ids):
    """A node count: n (an integer), or the largest of `ids` + 1 when n is None."""
    if n is None:
        return int(ids.max()) + 1 if ids.numel() else 0
    try:
        return operator.index(n)
    except TypeError:
        raise TypeError(f"dfgnn.Graph: {name} must be an integer, got {type(n).__name__}") from None
