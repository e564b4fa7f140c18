// Destination partitions (partition.hpp): the partitions and their bad input, the exchange plan
// against each rank's halo, and P = 1..4 ranks simulated in one process: each rank's forward and
// backward as a bipartite call over [its rows | its halo] whose halo rows (and, backward, their
// gradients) move as the plan says, equal to one call on the whole graph within 1e-6 normwise
// (every model, AGNN with X_dst left out and given; edge values, edge features and dropout too).

#include "expect_error.hpp"
#include "model_call.hpp"

#include <dfgnn/partition.hpp>
#include <dfgnn/reference.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace dfgnn;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using test::Floats;
using test::ModelInputs;
using test::Outcome;
using test::run;

TEST(Partition, ByEdgesIsContiguousAndBalanced) {
  const HostGraph g = test::power_law_graph(1000, 8000, 4);
  for (int P : {1, 2, 3, 4, 7}) {
    const Partition p = partition_by_edges(g, P);
    ASSERT_EQ(p.owner.size(), std::size_t(g.num_nodes));
    EXPECT_TRUE(std::is_sorted(p.owner.begin(), p.owner.end()));
    EXPECT_EQ(p.owner.front(), 0);
    // Each rank's in-edges plus nodes within one row of (E + N) / P.
    std::vector<edge_t> weight(std::size_t(P), 0);
    for (node_t v = 0; v < g.num_nodes; ++v)
      weight[std::size_t(p.owner[std::size_t(v)])] += g.row_ptr[std::size_t(v) + 1] - g.row_ptr[std::size_t(v)] + 1;
    const double share = double(g.num_edges() + g.num_nodes) / P;
    for (int r = 0; r < P; ++r) EXPECT_LE(std::abs(double(weight[std::size_t(r)]) - share), double(g.stats.max) + 1);
  }
  EXPECT_EQ(partition_by_edges(graph_from_edges(0, {}, {}), 3).owner.size(), 0u);
}

TEST(Partition, BadInputNamesTheProblem) {
  const HostGraph g = graph_from_edges(4, {0, 1}, {1, 2});
  test::expect_error([&] { partition_by_edges(g, 0); }, {"partition_by_edges: ranks must be at least 1, got 0"});
  test::expect_error([&] { partition_from(g, 2, {0, 1, 1}); },
                     {"partition_from: the partition vector has 3 entries, expected one per node (4)"});
  test::expect_error([&] { partition_from(g, 2, {0, 1, 2, 0}); },
                     {"partition_from: node 2 has rank 2, outside [0, 2)"});
  test::expect_error([&] { partition_from(g, 2, {0, -1, 1, 0}); }, {"node 1 has rank -1"});
  test::expect_error([&] { partition_by_edges(graph_from_edges(3, 2, {0}, {1}), 2); },
                     {"partition_by_edges: the graph is bipartite (3 sources, 2 destinations)"});
  const Partition p = partition_by_edges(g, 2);
  test::expect_error([&] { rank_graph(g, p, 2); }, {"rank_graph: rank 2 outside [0, 2)"});
  test::expect_error([&] { rank_graph(graph_from_edges(5, {}, {}), p, 0); },
                     {"rank_graph: the partition has 4 nodes, the graph 5"});
}

TEST(Partition, FingerprintTellsGraphsAndPartitionsApart) {
  const HostGraph g = test::power_law_graph(1000, 8000, 4);
  const Partition two = partition_by_edges(g, 2);
  EXPECT_EQ(fingerprint(g, two), fingerprint(g, partition_by_edges(g, 2)));
  EXPECT_NE(fingerprint(g, two), fingerprint(g, partition_by_edges(g, 3)));
  Partition moved = two;
  moved.owner[0] = 1;
  EXPECT_NE(fingerprint(g, two), fingerprint(g, moved));
  const HostGraph other = test::power_law_graph(1000, 8000, 5);  // same sizes, other edges
  EXPECT_NE(fingerprint(g, two), fingerprint(other, partition_by_edges(other, 2)));
}

TEST(Partition, TakeRows) {
  const Floats x{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(take_rows(x, std::vector<node_t>{2, 0}, 2), (Floats{5, 6, 1, 2}));
  EXPECT_EQ(take_rows(x, std::vector<edge_t>{1}, 3), (Floats{4, 5, 6}));
  test::expect_error([&] { take_rows(x, std::vector<node_t>{3}, 2); }, {"take_rows: row 3 is outside a tensor of 3 rows"});
}

/// The partitions the simulation runs: by edges for P = 1..4, and a scattered vector that leaves
/// rank 2 of 4 without nodes.
std::vector<std::pair<std::string, Partition>> partitions(const HostGraph& g) {
  std::vector<std::pair<std::string, Partition>> ps;
  for (int P = 1; P <= 4; ++P) ps.emplace_back("by_edges_" + std::to_string(P), partition_by_edges(g, P));
  std::vector<int> owner(std::size_t(g.num_nodes));
  for (std::size_t v = 0; v < owner.size(); ++v) owner[v] = int(v * 7 % 3 == 2 ? 3 : v * 7 % 3);
  ps.emplace_back("scattered_4", partition_from(g, 4, owner));
  return ps;
}

TEST(Partition, ExchangePlanFillsEveryHalo) {
  for (const auto& [name, g] : test::test_graphs(3000))
    for (const auto& [pname, p] : partitions(g)) {
      SCOPED_TRACE(name + " " + pname);
      std::vector<RankGraph> ranks;
      for (int r = 0; r < p.ranks; ++r) ranks.push_back(rank_graph(g, p, r));
      edge_t edges = 0;
      for (const RankGraph& r : ranks) {
        edges += r.graph.num_edges();
        for (int q = 0; q < p.ranks; ++q) {
          // What q sends r is, in order, r's halo part from q.
          const RankGraph& s = ranks[std::size_t(q)];
          const node_t count = s.send_ptr[std::size_t(r.rank) + 1] - s.send_ptr[std::size_t(r.rank)];
          ASSERT_EQ(count, r.recv_ptr[std::size_t(q) + 1] - r.recv_ptr[std::size_t(q)]);
          for (node_t k = 0; k < count; ++k)
            EXPECT_EQ(s.rows[std::size_t(s.send_rows[std::size_t(s.send_ptr[std::size_t(r.rank)] + k)])],
                      r.halo[std::size_t(r.recv_ptr[std::size_t(q)] + k)]);
        }
        EXPECT_EQ(r.recv_ptr[std::size_t(r.rank) + 1], r.recv_ptr[std::size_t(r.rank)]);  // nothing from itself
      }
      EXPECT_EQ(edges, g.num_edges());  // each edge on its destination's rank
    }
}

TEST(Partition, SplitBySourceKeepsEveryEdgeOnce) {
  // split_by_source: inner holds the edges from the rank's rows, outer those from its halo
  // (sources from 0 in halo order), each in the share's edge order, together every edge once.
  for (const auto& [name, g] : test::test_graphs(3000))
    for (const auto& [pname, p] : partitions(g))
      for (int rank = 0; rank < p.ranks; ++rank) {
        SCOPED_TRACE(name + " " + pname + " rank " + std::to_string(rank));
        const RankGraph r = rank_graph(g, p, rank);
        const SourceSplit split = split_by_source(r);
        const auto& [inner, outer] = split;
        EXPECT_EQ(inner.graph.num_src_nodes, r.num_rows());
        EXPECT_EQ(outer.graph.num_src_nodes, r.num_halo());
        EXPECT_EQ(inner.graph.num_nodes, r.num_rows());
        EXPECT_EQ(outer.graph.num_nodes, r.num_rows());
        // Each part's edge as (source over [rows | halo], destination), by its share position.
        std::vector<std::pair<node_t, node_t>> want(r.graph.src.size()), got(want.size(), {-1, -1});
        for (std::size_t k = 0; k < want.size(); ++k)
          want[std::size_t(r.graph.edge_id[k])] = {r.graph.src[k], r.graph.dst[k]};
        for (const auto* part : {&inner, &outer}) {
          EXPECT_TRUE(std::is_sorted(part->edges.begin(), part->edges.end()));
          const node_t shift = part == &inner ? 0 : r.num_rows();
          for (std::size_t k = 0; k < part->graph.src.size(); ++k) {
            const std::size_t at = std::size_t(part->edges[std::size_t(part->graph.edge_id[k])]);
            EXPECT_EQ(got[at].first, -1) << "share edge " << at << " in two parts";
            got[at] = {part->graph.src[k] + shift, part->graph.dst[k]};
            EXPECT_EQ(part == &inner, want[at].first < r.num_rows());
          }
        }
        EXPECT_EQ(got, want);
      }
}

TEST(Partition, FromEdgesEqualsFromTheWholeGraph) {
  // Each rank's share from its rows' in-edges (in the whole edge list's order) and the peers'
  // requests, as DistributedPlan exchanges them, against rank_graph's from the whole graph.
  std::mt19937 rng(3);
  std::uniform_int_distribution<node_t> any(0, 199);
  std::vector<node_t> src(1500), dst(1500);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = any(rng), dst[i] = node_t(any(rng) * any(rng) / 200);
  const HostGraph g = graph_from_edges(200, src, dst);
  for (const auto& [pname, p] : partitions(g)) {
    SCOPED_TRACE(pname);
    std::vector<RankGraph> ranks;
    for (int r = 0; r < p.ranks; ++r) {
      std::vector<node_t> s, d;
      std::vector<edge_t> ids;
      for (std::size_t i = 0; i < src.size(); ++i)
        if (p.owner[std::size_t(dst[i])] == r) s.push_back(src[i]), d.push_back(dst[i]), ids.push_back(edge_t(i));
      ranks.push_back(rank_graph_from_edges(p, r, s, d, ids));
    }
    for (RankGraph& r : ranks) {  // what each peer's halo holds of r's rows
      std::vector<node_t> counts, ids;
      for (const RankGraph& q : ranks) {
        counts.push_back(q.recv_ptr[std::size_t(r.rank) + 1] - q.recv_ptr[std::size_t(r.rank)]);
        ids.insert(ids.end(), q.halo.begin() + q.recv_ptr[std::size_t(r.rank)],
                   q.halo.begin() + q.recv_ptr[std::size_t(r.rank) + 1]);
      }
      set_sends(r, counts, ids);
      const RankGraph whole = rank_graph(g, p, r.rank);
      EXPECT_EQ(r.rows, whole.rows);
      EXPECT_EQ(r.halo, whole.halo);
      EXPECT_EQ(r.recv_ptr, whole.recv_ptr);
      EXPECT_EQ(r.send_ptr, whole.send_ptr);
      EXPECT_EQ(r.send_rows, whole.send_rows);
      EXPECT_EQ(r.graph.row_ptr, whole.graph.row_ptr);
      EXPECT_EQ(r.graph.src, whole.graph.src);
      for (std::size_t k = 0; k < r.graph.edge_id.size(); ++k)  // each CSR edge's id in the whole graph
        EXPECT_EQ(r.edge_ids[std::size_t(r.graph.edge_id[k])], whole.edge_ids[std::size_t(whole.graph.edge_id[k])]);
    }
  }
  const Partition p = partition_by_edges(g, 2);
  const node_t other = node_t(std::find(p.owner.begin(), p.owner.end(), 1) - p.owner.begin());
  test::expect_error([&] { rank_graph_from_edges(p, 0, {0}, {other}, {0}); },
                     {"rank_graph_from_edges: edge 0 goes into node " + std::to_string(other) + ", a row of rank 1"});
  test::expect_error([&] { rank_graph_from_edges(p, 0, {200}, {0}, {0}); },
                     {"edge 0 (200 -> 0) has a node id outside [0, 200)"});
  test::expect_error([&] { rank_graph_from_edges(p, 0, {1}, {0}, {}); }, {"1 sources, 1 destinations and 0 edge ids"});
  RankGraph r = rank_graph_from_edges(p, 0, {}, {}, {});
  test::expect_error([&] { set_sends(r, {0, 1}, {other}); },
                     {"set_sends: node " + std::to_string(other) + " is not a row of rank 0"});
}

// A rank's send counts come from its peers (DistributedPlan's all-to-all) and add up in 64 bits:
// past the 2^31 - 1 rows one exchange moves (the transports' 32-bit counts and offsets), or
// negative, they are an Error naming the rank, not a wrapped sum.
TEST(Partition, SendCountsPastAnExchangeAreRefused) {
  const Partition p{3, std::vector<int>(6, 1)};
  RankGraph r = rank_graph_from_edges(p, 1, {}, {}, {});
  constexpr node_t most = std::numeric_limits<node_t>::max();
  test::expect_error([&] { set_sends(r, {most, most, 2}, {}); },
                     {"set_sends: rank 1 would send 4294967296 rows in all, more than the 2147483647 one exchange moves"});
  test::expect_error([&] { set_sends(r, {3, -3, 0}, {}); }, {"set_sends: rank 1 would send -3 rows to rank 1"});
}

/// P ranks in one process: each rank's source-side inputs are its own rows then the halo rows
/// its peers send by the plan; after its backward, the halo rows' gradients go back to their
/// owners, which add them in rank order. Returns the whole graph's tensors as one call's.
Outcome distributed(ScoreKind kind, const HostGraph& g, const Partition& p, int H, int D, const ModelInputs& inputs) {
  const std::vector<Floats>& in = inputs.args;
  const Floats &w = inputs.w, &e = inputs.e, &dout = inputs.dout;
  const ModelArgs& m = model_args(kind);
  std::vector<RankGraph> ranks;
  for (int r = 0; r < p.ranks; ++r) ranks.push_back(rank_graph(g, p, r));
  const std::size_t N = std::size_t(g.num_nodes), HD = std::size_t(H) * D;
  const bool edges = test::passes_edges(m, inputs);
  Outcome whole{{Floats(N * HD)}};
  for (const Floats& x : in) whole.tensors.push_back(Floats(x.size(), 0.f));
  if (edges) whole.tensors.push_back(Floats(e.size()));
  std::vector<Outcome> outcomes;
  for (const RankGraph& r : ranks) {
    // The halo rows as the plan moves them: from rank q's local rows send_rows, in order.
    std::vector<node_t> halo;
    for (int q = 0; q < p.ranks; ++q) {
      const RankGraph& s = ranks[std::size_t(q)];
      for (node_t k = s.send_ptr[std::size_t(r.rank)]; k < s.send_ptr[std::size_t(r.rank) + 1]; ++k)
        halo.push_back(s.rows[std::size_t(s.send_rows[std::size_t(k)])]);
    }
    std::vector<node_t> sources = r.rows;
    sources.insert(sources.end(), halo.begin(), halo.end());
    // Each argument: all of a head argument, source-side rows of [rows | halo], the others' of
    // the rows; one left out the rank's rows of its stand-in (a bipartite call takes it).
    std::vector<Floats> local;
    for (int i = 0; i < m.count; ++i) {
      const Extent x = m.inputs[i].extent;
      const std::size_t width = row_entries(x, H, D);
      const bool left_out = std::size_t(i) >= in.size();
      if (left_out && m.inputs[i].stand_in < 0) break;
      const Floats& t = in[std::size_t(left_out ? m.inputs[i].stand_in : i)];
      local.push_back(head_argument(x) ? t : source_rows(x) ? take_rows(t, sources, width) : take_rows(t, r.rows, width));
    }
    const std::vector<edge_t>& ids = r.edge_ids;  // caller's edge ids
    const Floats lw = inputs.extras ? take_rows(w, ids, 1) : Floats();
    const Floats le = edges ? take_rows(e, ids, row_entries(m.edge.extent, H, D)) : Floats();
    // Dropout draws the whole graph's mask: its counter, each local edge's global id.
    outcomes.push_back(
        run(kind, r.graph, H, D, {local, inputs.extras, lw, le, take_rows(dout, r.rows, HD), inputs.dropout, ids}));
    const Outcome& o = outcomes.back();
    for (std::size_t k = 0; k < r.rows.size(); ++k)
      std::copy_n(o.tensors[0].begin() + std::ptrdiff_t(k * HD), HD, whole.tensors[0].begin() + std::ptrdiff_t(r.rows[k] * HD));
    if (edges) {  // each edge's gradient on its destination's rank alone
      const std::size_t width = row_entries(m.edge.extent, H, D);
      for (std::size_t k = 0; k < ids.size(); ++k)
        std::copy_n(o.tensors.back().begin() + std::ptrdiff_t(k * width), width,
                    whole.tensors.back().begin() + std::ptrdiff_t(std::size_t(ids[k]) * width));
    }
  }
  // Gradients: destination-side rows from their rank; source-side rows own part first, then
  // the halo rows' parts returned by each rank in rank order; a head argument summed in rank
  // order; then a left-out argument's rows added to its stand-in's.
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Extent x = m.inputs[i].extent;
    const std::size_t width = row_entries(x, H, D);
    Floats& total = whole.tensors[i + 1];
    for (const RankGraph& r : ranks) {
      const Floats& grad = outcomes[std::size_t(r.rank)].tensors[i + 1];
      if (head_argument(x)) {
        for (std::size_t k = 0; k < total.size(); ++k) total[k] += grad[k];
        continue;
      }
      for (std::size_t k = 0; k < r.rows.size(); ++k)
        std::copy_n(grad.begin() + std::ptrdiff_t(k * width), width, total.begin() + std::ptrdiff_t(r.rows[k] * width));
    }
    if (x != Extent::SrcFeatures && x != Extent::SrcScalars) continue;
    for (const RankGraph& owner : ranks)
      for (int q = 0; q < p.ranks; ++q) {  // what rank q returns to `owner`, added in rank order
        const RankGraph& r = ranks[std::size_t(q)];
        const Floats& grad = outcomes[std::size_t(q)].tensors[i + 1];
        for (node_t k = r.recv_ptr[std::size_t(owner.rank)]; k < r.recv_ptr[std::size_t(owner.rank) + 1]; ++k) {
          const std::size_t slot = r.rows.size() + std::size_t(k);
          const node_t id = r.halo[std::size_t(k)];
          for (std::size_t c = 0; c < width; ++c) total[std::size_t(id) * width + c] += grad[slot * width + c];
        }
      }
  }
  for (std::size_t i = in.size(); i < std::size_t(m.count) && m.inputs[i].stand_in >= 0; ++i) {
    const std::size_t width = row_entries(m.inputs[i].extent, H, D);
    Floats& total = whole.tensors[std::size_t(m.inputs[i].stand_in) + 1];
    for (const RankGraph& r : ranks) {
      const Floats& grad = outcomes[std::size_t(r.rank)].tensors[i + 1];
      for (std::size_t k = 0; k < r.rows.size(); ++k)
        for (std::size_t c = 0; c < width; ++c) total[std::size_t(r.rows[k]) * width + c] += grad[k * width + c];
    }
  }
  return whole;
}

class PartitionedAttention : public ::testing::TestWithParam<ScoreKind> {};

TEST_P(PartitionedAttention, EqualsOneProcess) {
  const ScoreKind kind = GetParam();
  const int H = 2, D = 5;
  for (const auto& [name, g] : test::test_graphs(3000))
    for (const bool extras : {false, true})  // edge values, edge features and dropout
      for (const bool optional : {false, true}) {  // AGNN's X_dst left out, then given
        if (optional && kind != ScoreKind::AGNN) continue;
        const ModelInputs in = test::random_inputs(kind, g, H, D, extras, optional);
        const Outcome one = run(kind, g, H, D, in);
        for (const auto& [pname, p] : partitions(g)) {
          SCOPED_TRACE(name + " " + pname + (extras ? " with edge values, features and dropout" : "") +
                       (optional ? " with the optional arguments" : ""));
          const Outcome many = distributed(kind, g, p, H, D, in);
          ASSERT_EQ(many.tensors.size(), one.tensors.size());
          // Within 1e-6 normwise (Auto may pick another strategy for a rank's rows than for the
          // whole graph's, and the source-side sums add the halo's parts last); a head
          // argument's (GATv2's da, AGNN's dbeta), a sum over all edges whose terms cancel,
          // within 1e-5.
          for (std::size_t t = 0; t < one.tensors.size(); ++t) {
            std::vector<double> ref(one.tensors[t].begin(), one.tensors[t].end());
            const bool parameter = head_argument(test::outcome_extent(model_args(kind), in, t));
            EXPECT_LE(max_relative_error(many.tensors[t].data(), ref), parameter ? 1e-5 : 1e-6)
                << (t == 0 ? "out" : "gradient " + std::to_string(t));
          }
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Models, PartitionedAttention,
                         ::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
