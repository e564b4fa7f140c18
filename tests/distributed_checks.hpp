#pragma once
// Attention over P ranks through a DistributedPlan on a transport (distributed.hpp), run on
// every rank by a test main that defines `Transport` and `test_transport()` (this process's
// transport) first: tests/mpi (MPI under mpirun, P = 1..4) and tests/nccl (NCCL, a process per
// GPU). Each rank's forward and backward on its own rows equal its rows of one call on the
// whole graph within 1e-6 normwise, gradients 5e-6 split and 1e-6 in one call (overlap = false),
// a head argument's summed over the ranks 1e-5 (every model, AGNN with X_dst left out and
// given; edge values, edge features and dropout; partitions by edges and a scattered one),
// bitwise equal on a second run and from a plan built from the rank's edges alone; bad input on
// one rank throws the same Error on every rank.

#include "expect_error.hpp"
#include "model_call.hpp"

#include <dfgnn/distributed.hpp>
#include <dfgnn/reference.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using namespace dfgnn;
using test::Floats;
using test::ModelInputs;
using test::Outcome;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using Distributed = DistributedPlan<Exec, Transport>;

int world_rank() { return test_transport().rank(); }
int world_size() { return test_transport().ranks(); }

/// This rank's forward (training mode) and backward through `plan`, on its part of the whole
/// graph's inputs: out, then each gradient (this rank's rows, the whole da), then dE.
Outcome rank_call(const Distributed& plan, const ModelInputs& whole) {
  const RankGraph& s = plan.share();
  const Op& op = plan.op();
  const ModelArgs& m = model_args(op.kind);
  Op rows = op;
  rows.src_nodes = rows.dst_nodes;  // every node tensor holds this rank's rows
  ModelInputs mine;
  for (std::size_t i = 0; i < whole.args.size(); ++i) {
    const Extent x = m.inputs[i].extent;
    const Floats& t = whole.args[i];
    mine.args.push_back(head_argument(x) ? t : take_rows(t, s.rows, row_entries(x, op.heads, op.dim)));
  }
  mine.extras = whole.extras, mine.dropout = whole.dropout;  // the plan gives the dropout its counter
  if (whole.extras) mine.w = take_rows(whole.w, s.edge_ids, 1);
  if (test::passes_edges(m, whole)) mine.e = take_rows(whole.e, s.edge_ids, row_entries(m.edge.extent, op.heads, op.dim));
  mine.dout = take_rows(whole.dout, s.rows, row_entries(Extent::DstFeatures, op.heads, op.dim));
  return test::call(plan, rows, mine, std::size_t(s.num_rows()));
}

/// The partition vectors the ranks run: by edges (empty), and for P > 1 a scattered one that
/// leaves the last rank without nodes.
std::vector<std::pair<std::string, std::vector<int>>> partitions(const HostGraph& g, int P) {
  std::vector<std::pair<std::string, std::vector<int>>> ps{{"by_edges", {}}};
  if (P == 1) return ps;
  std::vector<int> owner(std::size_t(g.num_nodes));
  for (std::size_t v = 0; v < owner.size(); ++v) owner[v] = int(v * 7 % std::size_t(P - 1));
  ps.emplace_back("scattered", owner);
  return ps;
}

/// This rank's plan built from its rows' in-edges alone (the whole graph's CSR order, with
/// their edge ids) and the partition vector `owner` (empty: by edges).
Distributed plan_from_edges(const HostGraph& g, std::vector<int> owner, ScoreKind kind, int H, int D) {
  if (owner.empty()) owner = partition_by_edges(g, world_size()).owner;
  std::vector<node_t> src, dst;
  std::vector<edge_t> ids;
  for (node_t v = 0; v < g.num_nodes; ++v)
    if (owner[std::size_t(v)] == world_rank())
      for (edge_t e = g.row_ptr[std::size_t(v)]; e < g.row_ptr[std::size_t(v) + 1]; ++e)
        src.push_back(g.src[std::size_t(e)]), dst.push_back(v), ids.push_back(g.edge_id[std::size_t(e)]);
  return Distributed(Exec(), test_transport(), g.num_nodes, src, dst, ids, owner, kind, H, D);
}

class DistributedAttention : public ::testing::TestWithParam<ScoreKind> {};

TEST_P(DistributedAttention, EqualsOneProcess) {
  const ScoreKind kind = GetParam();
  const ModelArgs& m = model_args(kind);
  const int H = 2, D = 5;
  for (const auto& [name, g] : test::test_graphs(3000))
    for (const bool extras : {false, true})  // edge values, edge features and dropout
      for (const bool optional : {false, true}) {  // AGNN's X_dst left out, then given
        if (optional && kind != ScoreKind::AGNN) continue;
        const ModelInputs in = test::random_inputs(kind, g, H, D, extras, optional);
        const Outcome one = test::run(kind, g, H, D, in);
        for (const auto& [pname, owner] : partitions(g, world_size())) {
          SCOPED_TRACE(name + " " + pname + (extras ? " with edge values, features and dropout" : "") +
                       (optional ? " with the optional arguments" : ""));
          const Distributed plan(Exec(), test_transport(), g, owner, kind, H, D);
          const RankGraph& s = plan.share();
          // No ASSERT between collectives: a rank that left the test early would leave the others waiting.
          // This rank's part of each of the whole call's tensors: its rows, its edges or all of it.
          std::vector<std::vector<double>> parts;
          for (std::size_t t = 0; t < one.tensors.size(); ++t) {
            const Extent x = test::outcome_extent(m, in, t);
            const std::size_t width = row_entries(x, H, D);
            const Floats part = head_argument(x) ? one.tensors[t]
                                : edge_rows(x)                ? take_rows(one.tensors[t], s.edge_ids, width)
                                                              : take_rows(one.tensors[t], s.rows, width);
            parts.emplace_back(part.begin(), part.end());
          }
          // `bound(t)` on tensor t of this rank's outcome; a head argument's gradient (GATv2's da,
          // AGNN's dbeta), a sum over every edge whose terms cancel, summed over the ranks in rank
          // order, within 1e-5 (as tests/test_partition.cpp).
          const auto expect_near = [&](const Outcome& got, const char* form, auto bound) {
            EXPECT_EQ(got.tensors.size(), parts.size());
            for (std::size_t t = 0; t < std::min(parts.size(), got.tensors.size()); ++t)
              EXPECT_LE(max_relative_error(got.tensors[t].data(), parts[t]),
                        head_argument(test::outcome_extent(m, in, t)) ? 1e-5 : bound(t))
                  << form << ": " << (t == 0 ? "out" : "gradient " + std::to_string(t)) << " on rank " << world_rank();
          };
          const Outcome mine = rank_call(plan, in);
          // Split: out within 1e-6; a gradient within 5e-6: its terms read the merged float32
          // logsumexp, whose ulp at a super node's ~8 is 1e-6 (one process rounds a different
          // value), and a rank sums a row's cancelling terms in parts (GAT's der; as
          // tests/test_partition.cpp; docs/distributed.md).
          expect_near(mine, "split", [](std::size_t t) { return t == 0 ? 1e-6 : 5e-6; });
          // In one call a row's terms are summed in one walk as one process does: 1e-6.
          const Distributed whole(Exec(), test_transport(), g, owner, kind, H, D, Strategy::Auto, false);
          expect_near(rank_call(whole, in), "one call", [](std::size_t) { return 1e-6; });
          const Outcome again = rank_call(plan, in);
          for (std::size_t t = 0; t < mine.tensors.size(); ++t)
            EXPECT_EQ(again.tensors[t], mine.tensors[t]) << "tensor " << t << " not reproduced bitwise";
          // The same share built from this rank's edges alone (in the whole graph's CSR order),
          // the same results bit for bit.
          const Distributed from_edges = plan_from_edges(g, owner, kind, H, D);
          EXPECT_EQ(from_edges.share().halo, s.halo);
          EXPECT_EQ(from_edges.share().send_rows, s.send_rows);
          const Outcome alone = rank_call(from_edges, in);
          for (std::size_t t = 0; t < mine.tensors.size(); ++t)
            EXPECT_EQ(alone.tensors[t], mine.tensors[t]) << "tensor " << t << " differs built from the edges";
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Models, DistributedAttention,
                         ::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(DistributedErrors, EveryRankNamesTheProblem) {
  const int P = world_size(), me = world_rank(), last = P - 1;
  const HostGraph g = test::random_graph(40, 200, 5);
  const auto plan = [&](const HostGraph& graph, std::vector<int> owner, ScoreKind kind = ScoreKind::GT,
                        bool overlap = true) {
    Distributed(Exec(), test_transport(), graph, std::move(owner), kind, 2, 4, Strategy::Auto, overlap);
  };
  // A partition vector of the wrong length on the last rank; an out-of-range rank on rank 0.
  std::vector<int> owner(40, 0);
  if (me == last) owner.pop_back();
  test::expect_error([&] { plan(g, owner); },
                     {"distributed plan: rank " + std::to_string(last) +
                      ": partition_from: the partition vector has 39 entries, expected one per node (40)"});
  owner.assign(40, 0);
  if (me == 0) owner[3] = P;
  test::expect_error([&] { plan(g, owner); }, {"distributed plan: rank 0: partition_from: node 3 has rank " +
                                               std::to_string(P) + ", outside [0, " + std::to_string(P) + ")"});
  if (P > 1) {
    // The last rank's graph has one node more; then its partition differs, its graph does not.
    const HostGraph bigger = test::random_graph(41, 200, 5);
    test::expect_error([&] { plan(me == last ? bigger : g, {}); },
                       {"the ranks disagree on the graph: rank 0 has 40 nodes and 200 edges, rank " +
                        std::to_string(last) + " 41 and 200"});
    owner.assign(40, 0);
    if (me == last) owner[0] = 1;
    const std::string other = "rank " + std::to_string(last) + " passed another graph, partition, model, heads, dim";
    test::expect_error([&] { plan(g, owner); }, {other});
    // The last rank alone in one call.
    test::expect_error([&] { plan(g, {}, ScoreKind::GT, me != last); }, {other + " or overlap than rank 0"});
  }
  // Built from each rank's edges: an edge into another rank's row on the last rank; ranks that
  // disagree on the node count.
  const std::vector<int> halves = partition_by_edges(g, P).owner;
  const node_t foreign = node_t(std::find_if(halves.begin(), halves.end(), [&](int r) { return r != last; }) -
                                halves.begin());
  if (P > 1) {
    const std::vector<node_t> into = me == last ? std::vector<node_t>{foreign} : std::vector<node_t>{};
    test::expect_error(
        [&] {
          Distributed(Exec(), test_transport(), 40, std::vector<node_t>(into.size(), 0), into,
                      std::vector<edge_t>(into.size(), 0), halves, ScoreKind::GT, 2, 4);
        },
        {"distributed plan: rank " + std::to_string(last) + ": rank_graph_from_edges: edge 0 goes into node " +
         std::to_string(foreign)});
    test::expect_error(
        [&] {
          std::vector<int> o = halves;
          if (me == last) o.push_back(last);
          Distributed(Exec(), test_transport(), me == last ? 41 : 40, {}, {}, {}, o, ScoreKind::GT, 2, 4);
        },
        {"the ranks disagree on the graph: rank 0 has 40 nodes, rank " + std::to_string(last) + " 41"});
  }
  // A call with tensors that are not this rank's rows.
  const Distributed p(Exec(), test_transport(), g, {}, ScoreKind::GT, 2, 4);
  const std::size_t n = std::size_t(p.num_rows());
  Kokkos::View<float*, Mem> t("t", (n + 1) * 8);
  NodeOutput<Mem> out("out", n, 2, 4);
  const Tensors more = tensors(NodeFeatures<Mem>(t.data(), n, 2, 4), NodeFeatures<Mem>(t.data(), n + 1, 2, 4),
                               NodeFeatures<Mem>(t.data(), n, 2, 4));
  test::expect_error([&] { attention(Exec(), p, GT{}, more, out); },
                     {"attention: K must be this rank's " + std::to_string(n) + " rows of 8 dense float32 entries, got " +
                      std::to_string((n + 1) * 8) + " entries"});
}

// Every gradient is checked before any work, in both forms, on every rank: null, a row short,
// or of another type. In one call a source-side gradient is written after the halo call,
// from a workspace, and was written out of bounds when it did not fit.
TEST(DistributedErrors, EveryGradientIsCheckedFirst) {
  const HostGraph g = test::random_graph(40, 200, 5);
  const int H = 2, D = 4;
  for (const ScoreKind kind : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2})
    for (const bool overlap : {true, false}) {
      const Distributed plan(Exec(), test_transport(), g, {}, kind, H, D, Strategy::Auto, overlap);
      const ModelArgs& m = model_args(kind);
      Op rows = plan.op();
      rows.src_nodes = rows.dst_nodes;  // every node tensor holds this rank's rows
      const std::size_t n = std::size_t(plan.num_rows()), E = plan.share().edge_ids.size();
      std::vector<Kokkos::View<float*, Mem>> buffers;
      const auto zeros = [&](const TensorRef& shape) {
        buffers.emplace_back("zeros", shape.entries());
        TensorRef t = shape;
        t.data = buffers.back().data();
        return t;
      };
      // The arguments (AGNN's X_dst too, with its gradient), then the edge argument.
      const int count = m.count + (m.edge.name ? 1 : 0);
      Tensors inputs, grads;
      for (int i = 0; i < count; ++i) {
        const TensorRef shape =
            TensorRef::shaped(nullptr, rows, i < m.count ? m.inputs[i].extent : m.edge.extent, std::size_t(H));
        inputs.refs[inputs.count++] = zeros(shape);
        grads.refs[grads.count++] = zeros(shape);
      }
      NodeOutput<Mem> out("out", n, H, D), dout("dout", n, H, D);
      NodeScalarsOutput<Mem> lse("lse", n, H);
      for (int i = 0; i < count; ++i) {
        const std::string name = i < m.count ? m.gradients[i] : m.edge_gradient;
        const bool head = i < m.count && head_argument(m.inputs[i].extent);
        TensorRef null = grads.refs[i], short_one = grads.refs[i], other = grads.refs[i];
        null.data = nullptr, short_one.extents[0] -= 1, other.dtype = DType::BF16;
        for (const TensorRef& wrong : {null, short_one, other}) {
          SCOPED_TRACE(std::string(to_string(kind)) + (overlap ? " split " : " in one call ") + name + " on rank " +
                       std::to_string(world_rank()));
          Tensors bad = grads;
          bad.refs[i] = wrong;
          test::expect_error(
              [&] {
                visit_model(kind, [&](auto model) {
                  attention_backward(Exec(), plan, model, inputs, out, lse, dout, bad);
                });
              },
              {"attention_backward: " + name + (head ? std::string() : " must be this rank's " +
                                                    std::to_string(i < m.count ? n : E))});
        }
      }
    }
}

}  // namespace
