"""dfgnn: fused attention GNN kernels for PyTorch (docs/python.md).

    import dfgnn
    graph = dfgnn.Graph.from_edge_index(edge_index, num_nodes)   # preprocessing, once
    conv = dfgnn.nn.GATConv(in_channels, 8, heads=8)             # as torch_geometric.nn.GATConv
    out = conv(x, graph)                                         # or conv(x, edge_index)

Ops (with autograd, torch.compile-safe custom ops): gt_attention, agnn_attention,
gat_attention, gatv2_attention. Tensors on CPU (Kokkos host kernels) or CUDA (the CUDA-native
kernels, on the current stream), all float32, all bfloat16 or all float16 (computed in float32,
rounded to that type); under torch.autocast they run in the autocast type.
"""

from . import nn
from ._lib import has_cuda
from .graph import Graph
from .ops import agnn_attention, gat_attention, gatv2_attention, gt_attention

__version__ = "0.1.0"

__all__ = ["Graph", "nn", "has_cuda", "gt_attention", "agnn_attention", "gat_attention", "gatv2_attention"]
