"""Float64 references for the tests: the attention definitions written with plain torch ops
(autograd gives their gradients), dfgnn's dropout mask recomputed in Python, test graphs."""

import torch

M64 = (1 << 64) - 1


def dropout_factors(rate, seed, num_edges, heads):
    """dfgnn::Dropout::factor for every (edge as given, head): [E, H] float64."""
    out = torch.empty(num_edges, heads, dtype=torch.float64)
    keep = 1.0 / float(torch.tensor(1.0 - rate, dtype=torch.float32))  # 1 / (1 - rate) in float32
    for e in range(num_edges):
        for h in range(heads):
            z = seed ^ ((e * 0x9E3779B97F4A7C15) & M64) ^ ((h * 0xD1B54A32D192ED03) & M64)
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            z ^= z >> 31
            u = (z >> 40) / 16777216.0  # 24 random bits in [0, 1), exact in float32
            out[e, h] = 0.0 if u < float(torch.tensor(rate, dtype=torch.float32)) else keep
    return out


def attention(edge_index, num_nodes, scores, values, edge_values=None, factors=None, return_weights=False,
              messages=None):
    """out[v] = sum over edges u -> v of softmax_u(scores * edge_values) * factors * (values[u]
    + messages[e]); scores [E, H], values [N, H, D], messages [E, H, D] or None; rows without
    in-edges give 0. With return_weights, (out, the attention weights softmax * factors [E, H])."""
    src, dst = edge_index
    H = scores.size(1)
    if edge_values is not None:
        scores = scores * edge_values
    index = dst.view(-1, 1).expand(-1, H)
    row_max = torch.full((num_nodes, H), -torch.inf, dtype=scores.dtype).scatter_reduce(
        0, index, scores, "amax")
    e = torch.exp(scores - row_max.detach()[dst])  # the shift cancels; no gradient through it
    p = e / torch.zeros(num_nodes, H, dtype=scores.dtype).index_add(0, dst, e)[dst]
    if factors is not None:
        p = p * factors
    rows = values[src] if messages is None else values[src] + messages
    out = torch.zeros(num_nodes, H, values.size(2), dtype=values.dtype).index_add(0, dst, p.unsqueeze(-1) * rows)
    return (out, p) if return_weights else out


def gt(edge_index, q, k, v, scale, edges=None, **kw):
    """With edge features edges [E, H, D]: added to the key and the value (TransformerConv)."""
    src, dst = edge_index
    key = k[src] if edges is None else k[src] + edges
    return attention(edge_index, q.size(0), scale * (q[dst] * key).sum(-1), v, messages=edges, **kw)


def agnn(edge_index, x, beta, x_dst=None, **kw):
    """Score beta cos(x_dst[v], x[u]) (x_dst None: x's), values x."""
    src, dst = edge_index
    y = x if x_dst is None else x_dst
    n, m = x / x.norm(dim=-1, keepdim=True), y / y.norm(dim=-1, keepdim=True)
    return attention(edge_index, y.size(0), beta * (m[dst] * n[src]).sum(-1), x, **kw)


def gat(edge_index, el, er, v, slope, edges=None, **kw):
    """With edge scores edges [E, H] inside the LeakyReLU (GATConv's edge_dim)."""
    src, dst = edge_index
    x = el[src] + er[dst] + (edges if edges is not None else 0)
    return attention(edge_index, er.size(0), torch.nn.functional.leaky_relu(x, slope), v, **kw)


def gatv2(edge_index, xl, xr, a, slope, edges=None, **kw):
    """With edge features edges [E, H, D] inside the LeakyReLU (GATv2Conv's edge_dim)."""
    src, dst = edge_index
    z = torch.nn.functional.leaky_relu(xl[src] + xr[dst] + (edges if edges is not None else 0), slope)
    return attention(edge_index, xr.size(0), (a * z).sum(-1), xl, **kw)


def random_graph(num_nodes, num_edges, seed, hub_edges=0):
    """edge_index [2, E]: random edges plus a self loop, a duplicated edge, node N-1 without
    in-edges, and `hub_edges` more edges into node 1 (a heavy row)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_nodes, (num_edges,), generator=g)
    dst = torch.randint(0, num_nodes - 1, (num_edges,), generator=g)
    hub_src = torch.randint(0, num_nodes, (hub_edges,), generator=g)
    src = torch.cat([src, src[:1], torch.tensor([0]), hub_src])
    dst = torch.cat([dst, dst[:1], torch.tensor([0]), torch.ones(hub_edges, dtype=torch.int64)])
    return torch.stack([src, dst])


def random_bipartite(src_nodes, dst_nodes, num_edges, seed, hub_edges=0):
    """edge_index [2, E] of a bipartite graph: random edges u -> v, source NS-1 without
    out-edges and destination N-1 without in-edges, and `hub_edges` more into destination 0."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, src_nodes - 1, (num_edges + hub_edges,), generator=g)
    dst = torch.cat([torch.randint(0, dst_nodes - 1, (num_edges,), generator=g),
                     torch.zeros(hub_edges, dtype=torch.int64)])
    return torch.stack([src, dst])
