"""Trains a small graph transformer with dfgnn's layers: two TransformerConv layers with edge
features (PyG's edge_dim) under bf16 autocast, node classification on a generated
stochastic-block-model graph. Prints the loss as it falls and the accuracy; exits 1 if the loss
did not fall to half its first value.

    python examples/train_transformer.py [--epochs 40] [--nodes 2000] [--device cuda]

The graph's communities are the classes; node features are their one-hot codes under heavy
noise, and each edge's feature says whether it joins two nodes of one community (with noise),
so attention that reads the edge features learns to average over a node's own community.
"""
import argparse
import sys
import time

import torch

import dfgnn
from dfgnn.nn import TransformerConv


def sbm(nodes, classes, degree, p_in, generator):
    """Edges of a stochastic block model: each node draws `degree` in-edges, a share p_in of
    them from its own community. Returns (edge_index [2,E], labels [N])."""
    labels = torch.randint(classes, (nodes,), generator=generator)
    members = [torch.nonzero(labels == c).flatten() for c in range(classes)]
    dst = torch.arange(nodes).repeat_interleave(degree)
    own = torch.rand(dst.numel(), generator=generator) < p_in
    src = torch.randint(nodes, (dst.numel(),), generator=generator)
    for c in range(classes):  # the own-community draws
        pick = own & (labels[dst] == c)
        src[pick] = members[c][torch.randint(members[c].numel(), (int(pick.sum()),), generator=generator)]
    return torch.stack([src, dst]), labels


class Model(torch.nn.Module):
    def __init__(self, features, hidden, heads, classes, edge_dim):
        super().__init__()
        self.conv1 = TransformerConv(features, hidden, heads=heads, edge_dim=edge_dim)
        self.conv2 = TransformerConv(hidden * heads, classes, heads=1, edge_dim=edge_dim)

    def forward(self, x, graph, edge_attr):
        return self.conv2(self.conv1(x, graph, edge_attr).relu(), graph, edge_attr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    classes, features, edge_dim = 5, 16, 4
    edge_index, labels = sbm(args.nodes, classes, degree=12, p_in=0.5, generator=gen)
    x = torch.nn.functional.one_hot(labels, features).float() + 1.5 * torch.randn(args.nodes, features, generator=gen)
    same = (labels[edge_index[0]] == labels[edge_index[1]]).float()
    edge_attr = torch.randn(edge_index.size(1), edge_dim, generator=gen)
    edge_attr[:, 0] += 2.0 * same
    train = torch.rand(args.nodes, generator=gen) < 0.5

    device = torch.device(args.device)
    x, edge_attr, labels, train = x.to(device), edge_attr.to(device), labels.to(device), train.to(device)
    graph = dfgnn.Graph.from_edge_index(edge_index.to(device), num_nodes=args.nodes)  # preprocessing, once
    model = Model(features, 8, 2, classes, edge_dim).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    print(f"graph: {args.nodes} nodes, {edge_index.size(1)} edges; {classes} classes; device {device}, bf16 autocast")

    first = last = None
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        opt.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            out = model(x, graph, edge_attr)
        loss = torch.nn.functional.cross_entropy(out.float()[train], labels[train])
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
        if epoch == 1 or epoch % 5 == 0 or epoch == args.epochs:
            with torch.no_grad():
                correct = (out.argmax(-1) == labels)[~train].float().mean().item()
            print(f"epoch {epoch:3d}  loss {last:.4f}  held-out accuracy {correct:.3f}")
    print(f"{args.epochs} epochs in {time.perf_counter() - start:.2f} s")
    if not last < 0.5 * first:
        print(f"train_transformer: the loss did not fall to half its first value ({first:.4f} -> {last:.4f})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
