// Tests of the host graph preprocessing (csr.hpp), the scheduling rules (schedule.hpp) and the
// Kokkos-side Graph (graph.hpp).

#include "../backends/kokkos/executor.hpp"
#include "expect_error.hpp"
#include "graphs.hpp"

#include <dfgnn/generate.hpp>
#include <dfgnn/graph.hpp>
#include <dfgnn/plan.hpp>
#include <dfgnn/reference.hpp>
#include <dfgnn/reference_backward.hpp>
#include <dfgnn/reference_message_passing.hpp>
#include <dfgnn/reorder.hpp>
#include <dfgnn/detail/schedule.hpp>
#include <dfgnn/detail/strategy.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace dfgnn;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

using test::expect_error;

/// Every structural invariant of a HostGraph, checked against the edge list it was built from
/// (edge i is src[i] -> dst[i]).
void expect_consistent(const HostGraph& g, const std::vector<node_t>& src, const std::vector<node_t>& dst) {
  const std::size_t N = std::size_t(g.num_nodes), E = src.size();
  ASSERT_EQ(g.row_ptr.size(), N + 1);
  ASSERT_EQ(g.src.size(), E);
  ASSERT_EQ(g.dst.size(), E);
  ASSERT_EQ(g.edge_id.size(), E);
  EXPECT_EQ(g.row_ptr.front(), 0);
  EXPECT_EQ(g.row_ptr.back(), edge_t(E));
  std::vector<bool> seen(E, false);
  for (std::size_t v = 0; v < N; ++v) {
    ASSERT_LE(g.row_ptr[v], g.row_ptr[v + 1]);
    edge_t previous = -1;
    for (edge_t e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e) {
      const edge_t id = g.edge_id[std::size_t(e)];
      ASSERT_GE(id, 0);
      ASSERT_LT(id, edge_t(E));
      EXPECT_FALSE(seen[std::size_t(id)]) << "edge " << id << " appears twice";
      seen[std::size_t(id)] = true;
      EXPECT_EQ(g.dst[std::size_t(e)], node_t(v)) << "CSR edge " << e;
      EXPECT_EQ(dst[std::size_t(id)], node_t(v)) << "CSR edge " << e;
      EXPECT_EQ(g.src[std::size_t(e)], src[std::size_t(id)]) << "CSR edge " << e;
      EXPECT_GT(id, previous) << "row " << v << " is not in the caller's order";
      previous = id;
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), std::ptrdiff_t(E));
}

// ---- graph_from_edges ----------------------------------------------------------------------

TEST(GraphFromEdges, SortsByDestinationAndKeepsTheCallersOrderWithinARow) {
  // Edges as given:      0       1       2       3       4       5       6
  const std::vector<node_t> src{3, 0, 1, 2, 0, 3, 3};
  const std::vector<node_t> dst{1, 2, 1, 0, 1, 3, 2};
  const HostGraph g = graph_from_edges(5, src, dst);
  EXPECT_EQ(g.num_nodes, 5);
  EXPECT_EQ(g.num_edges(), 7);
  EXPECT_EQ(g.row_ptr, (std::vector<edge_t>{0, 1, 4, 6, 7, 7}));
  EXPECT_EQ(g.edge_id, (std::vector<edge_t>{3, 0, 2, 4, 1, 6, 5}));
  EXPECT_EQ(g.src, (std::vector<node_t>{2, 3, 1, 0, 0, 3, 3}));
  EXPECT_EQ(g.dst, (std::vector<node_t>{0, 1, 1, 1, 2, 2, 3}));
  EXPECT_TRUE(g.graph_ptr.empty());
  expect_consistent(g, src, dst);
}

TEST(GraphFromEdges, RandomGraphsAreConsistent) {
  for (unsigned seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed);
    const node_t n = node_t(10 + 37 * seed);
    std::uniform_int_distribution<node_t> any(0, n - 1);
    std::vector<node_t> src(std::size_t(n) * 5), dst(src.size());
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = any(rng), dst[i] = any(rng);
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_consistent(graph_from_edges(n, src, dst), src, dst);
  }
}

TEST(GraphFromEdges, DegreeStats) {
  // In-degrees: 0 -> 3, 1 -> 0, 2 -> 1, 3 -> 0, 4 -> 4.
  const std::vector<node_t> src{1, 2, 3, 0, 0, 1, 2, 3};
  const std::vector<node_t> dst{0, 0, 0, 2, 4, 4, 4, 4};
  const HostGraph g = graph_from_edges(5, src, dst);
  EXPECT_EQ(g.stats.max, 4);
  EXPECT_DOUBLE_EQ(g.stats.mean, 8.0 / 5.0);
  EXPECT_EQ(g.stats.empty_rows, 2);
  EXPECT_EQ(g.stats.threshold, kDefaultHeavyThreshold);
  EXPECT_EQ(g.stats.above_threshold, 0);

  const DegreeStats s = degree_stats(g.row_ptr, 2);
  EXPECT_EQ(s.threshold, 2);
  EXPECT_EQ(s.above_threshold, 2);  // rows 0 and 4; "above" is strict
  EXPECT_EQ(degree_stats(g.row_ptr, 3).above_threshold, 1);
  EXPECT_EQ(degree_stats(g.row_ptr, 4).above_threshold, 0);
  EXPECT_EQ(s.max, 4);
  EXPECT_EQ(s.empty_rows, 2);
}

TEST(GraphFromEdges, HeavyRowsAboveTheDefaultThreshold) {
  std::vector<node_t> src, dst;
  for (edge_t i = 0; i < kDefaultHeavyThreshold + 1; ++i) src.push_back(node_t(i % 7)), dst.push_back(3);
  for (edge_t i = 0; i < kDefaultHeavyThreshold; ++i) src.push_back(node_t(i % 7)), dst.push_back(5);
  const HostGraph g = graph_from_edges(7, src, dst);
  EXPECT_EQ(g.stats.max, kDefaultHeavyThreshold + 1);
  EXPECT_EQ(g.stats.above_threshold, 1);  // row 5 has exactly the threshold: not above
  EXPECT_EQ(g.stats.empty_rows, 5);
  EXPECT_DOUBLE_EQ(g.stats.mean, double(2 * kDefaultHeavyThreshold + 1) / 7.0);
}

TEST(GraphFromEdges, EmptyGraphs) {
  const HostGraph none = graph_from_edges(0, {}, {});
  EXPECT_EQ(none.num_nodes, 0);
  EXPECT_EQ(none.row_ptr, std::vector<edge_t>{0});
  EXPECT_EQ(none.num_edges(), 0);
  EXPECT_EQ(none.stats.max, 0);
  EXPECT_EQ(none.stats.mean, 0.0);

  const HostGraph isolated = graph_from_edges(4, {}, {});
  EXPECT_EQ(isolated.row_ptr, (std::vector<edge_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(isolated.stats.empty_rows, 4);
  EXPECT_EQ(isolated.stats.mean, 0.0);
}

TEST(GraphFromEdges, RejectsANegativeNodeCount) {
  expect_error([] { graph_from_edges(-1, {}, {}); }, {"negative", "-1"});
}

TEST(GraphFromEdges, RejectsIdsOutOfRangeNamingTheEdge) {
  expect_error([] { graph_from_edges(4, {0, 1, 4}, {1, 2, 3}); }, {"source", "id 4", "edge 2", "[0, 4)"});
  expect_error([] { graph_from_edges(4, {0, 1, 2}, {1, 7, 3}); }, {"destination", "id 7", "edge 1"});
  expect_error([] { graph_from_edges(4, {0, -2}, {1, 1}); }, {"source", "-2", "edge 1"});
  expect_error([] { graph_from_edges(4, {0, 1}, {1, -1}); }, {"destination", "-1", "edge 1"});
  expect_error([] { graph_from_edges(0, {0}, {0}); }, {"edge 0", "[0, 0)"});
}

TEST(GraphFromEdges, RejectsArraysOfDifferentLengths) {
  expect_error([] { graph_from_edges(4, {0, 1, 2}, {1, 2}); }, {"3 source", "2 destination"});
  expect_error([] { graph_from_edges(4, {}, {1}); }, {"0 source", "1 destination"});
}

// ---- row_subgraph --------------------------------------------------------------------------

// x's rows `index` (rows of w entries).
template <class T, class I>
std::vector<T> take_rows(const std::vector<T>& x, const std::vector<I>& index, std::size_t w) {
  std::vector<T> r;
  for (const I i : index) r.insert(r.end(), x.begin() + std::size_t(i) * w, x.begin() + (std::size_t(i) + 1) * w);
  return r;
}

// Each edge of the part is the edge of g it names, between the nodes its maps name.
void expect_edges_of(const HostGraph& g, const RowSubgraph& p) {
  std::vector<std::pair<node_t, node_t>> ends(std::size_t(g.num_edges()));  // caller's id -> (u, v)
  for (std::size_t e = 0; e < ends.size(); ++e) ends[std::size_t(g.edge_id[e])] = {g.src[e], g.dst[e]};
  ASSERT_EQ(p.edges.size(), std::size_t(p.graph.num_edges()));
  for (std::size_t e = 0; e < p.edges.size(); ++e) {
    const auto [u, v] = ends[std::size_t(p.edges[std::size_t(p.graph.edge_id[e])])];
    EXPECT_EQ(p.sources[std::size_t(p.graph.src[e])], u);
    EXPECT_EQ(p.rows[std::size_t(p.graph.dst[e])], v);
  }
  edge_t in_edges = 0;
  for (const node_t v : p.rows) in_edges += g.row_ptr[v + 1] - g.row_ptr[v];
  EXPECT_EQ(p.graph.num_edges(), in_edges);  // every in-edge of every row
}

// The part's reference equals the whole graph's where the part holds all a value depends on:
// outputs and destination-side gradients at its rows, source-side gradients at sources whose
// every out-edge it holds (what dfgnn attention --reference-sample relies on).
TEST(RowSubgraph, TheReferenceOnThePartIsTheWholeGraphsThere) {
  const HostGraph g = test::random_graph(300, 2400, 5);
  const int H = 2, D = 3;
  const std::size_t N = 300, E = 2400, HD = std::size_t(H) * D;
  const auto q = test::random_values(N * HD, 1), k = test::random_values(N * HD, 2), v = test::random_values(N * HD, 3);
  const auto ef = test::random_values(E * HD, 4), ev = test::random_values(E, 5, 0.5f, 2.0f),
             dout = test::random_values(N * HD, 6);
  // Sources 3 and 77, all rows they feed, and themselves.
  std::set<node_t> rows{3, 77, 150};
  for (edge_t e = 0; e < g.num_edges(); ++e)
    if (g.src[e] == 3 || g.src[e] == 77) rows.insert(g.dst[e]);
  const RowSubgraph p = row_subgraph(g, std::vector<node_t>(rows.begin(), rows.end()));
  ASSERT_FALSE(p.graph.bipartite());
  ASSERT_EQ(p.graph.num_nodes, node_t(p.sources.size()));
  EXPECT_TRUE(std::equal(p.rows.begin(), p.rows.end(), p.sources.begin()));  // square: rows first
  expect_edges_of(g, p);

  ReferenceOptions o(HostEdgeValues{ev.data(), 1});
  o.edge_features = ef.data();
  ReferenceOptions po = o;
  const auto pev = take_rows(ev, p.edges, 1), pef = take_rows(ef, p.edges, HD);
  po.edge_values.data = pev.data(), po.edge_features = pef.data();
  const auto pq = take_rows(q, p.sources, HD), pk = take_rows(k, p.sources, HD), pv = take_rows(v, p.sources, HD);
  const GT model{0.4f};
  const auto whole = reference_attention(g, H, D, model, q.data(), k.data(), v.data(), o);
  const auto part = reference_attention(p.graph, H, D, model, pq.data(), pk.data(), pv.data(), po);
  std::vector<std::size_t> at_rows(p.rows.size());
  std::iota(at_rows.begin(), at_rows.end(), 0);
  EXPECT_EQ(take_rows(part, at_rows, HD), take_rows(whole, p.rows, HD));

  const auto gw = reference_attention_backward(g, H, D, model, q.data(), k.data(), v.data(), dout.data(), o);
  const auto pdout = take_rows(dout, p.sources, HD);
  const auto gp = reference_attention_backward(p.graph, H, D, model, pq.data(), pk.data(), pv.data(), pdout.data(), po);
  EXPECT_EQ(take_rows(gp.dQ, at_rows, HD), take_rows(gw.dQ, p.rows, HD));
  for (const node_t u : {3, 77}) {
    const std::size_t j = std::size_t(std::find(p.sources.begin(), p.sources.end(), u) - p.sources.begin());
    EXPECT_EQ(take_rows(gp.dK, std::vector<std::size_t>{j}, HD), take_rows(gw.dK, std::vector<node_t>{u}, HD)) << u;
    EXPECT_EQ(take_rows(gp.dV, std::vector<std::size_t>{j}, HD), take_rows(gw.dV, std::vector<node_t>{u}, HD)) << u;
  }
  std::vector<std::size_t> at_edges(p.edges.size());
  std::iota(at_edges.begin(), at_edges.end(), 0);
  EXPECT_EQ(take_rows(gp.dE, at_edges, HD), take_rows(gw.dE, p.edges, HD));
}

TEST(RowSubgraph, BipartiteGraphsKeepTheirTwoSides) {
  const HostGraph g = test::random_bipartite(50, 40, 45, 35, 400, 3);
  const RowSubgraph p = row_subgraph(g, {34, 0, 10, 39});  // 39: no in-edges
  EXPECT_EQ(p.graph.num_nodes, 4);
  EXPECT_EQ(p.graph.row_ptr[4] - p.graph.row_ptr[3], 0);
  EXPECT_EQ(p.graph.num_src_nodes, node_t(p.sources.size()));
  expect_edges_of(g, p);
  const RowSubgraph none = row_subgraph(g, {});
  EXPECT_EQ(none.graph.num_edges(), 0);
  EXPECT_TRUE(none.sources.empty());
}

TEST(RowSubgraph, RejectsRowsOutOfRangeOrRepeated) {
  const HostGraph g = test::random_graph(20, 60, 1);
  expect_error([&] { row_subgraph(g, {3, 20}); }, {"row_subgraph", "row 20", "[0, 20)"});
  expect_error([&] { row_subgraph(g, {-1}); }, {"row -1"});
  expect_error([&] { row_subgraph(g, {4, 5, 4}); }, {"row 4", "twice"});
}

// ---- graph_from_csr ------------------------------------------------------------------------

// A HostGraph made or edited by hand is checked wherever it enters (Graph, batch_graphs,
// transpose, reorder, the references, write_edge_list, ...), so nothing reads past an array.
TEST(GraphValidate, RejectsInconsistentHostGraphs) {
  const HostGraph good = graph_from_edges(4, {0, 1, 2, 3, 1}, {1, 2, 3, 0, 0});
  EXPECT_NO_THROW(validate(good));
  const std::vector<std::pair<std::function<void(HostGraph&)>, std::string>> cases = {
      {[](HostGraph& g) { g.row_ptr = {0}; }, "num_nodes + 1"},
      {[](HostGraph& g) { g.row_ptr.back() = 1000; }, "end at 1000"},
      {[](HostGraph& g) { std::swap(g.row_ptr[1], g.row_ptr[2]); }, "decrease"},
      {[](HostGraph& g) { g.src[0] = 99; }, "source id 99"},
      {[](HostGraph& g) { g.src[0] = -4; }, "source id -4"},
      {[](HostGraph& g) { g.dst[0] = 3; }, "destination is 3"},
      {[](HostGraph& g) { g.edge_id[0] = g.edge_id[1]; }, "permutation"},
      {[](HostGraph& g) { g.edge_id[0] = 1000; }, "permutation"},
      {[](HostGraph& g) { g.edge_id.pop_back(); }, "edge ids"},
      {[](HostGraph& g) { g.stats.max = 1; }, "degree statistics"},
      {[](HostGraph& g) { g.graph_ptr = {0, 2}; }, "graph offsets"},
      {[](HostGraph& g) { g.graph_ptr = {0, 2, 4}; }, "joins graph"},
  };
  for (const auto& [edit, fragment] : cases) {
    HostGraph g = good;
    edit(g);
    SCOPED_TRACE(fragment);
    test::expect_error([&] { validate(g); }, {"graph: ", fragment});
    test::expect_error([&] { transpose(g); }, {fragment});
    test::expect_error([&] { batch_graphs({good, g}); }, {fragment});
    test::expect_error([&] { reorder(g, Ordering::RCM); }, {fragment});
    test::expect_error([&] { permute(g, {3, 2, 1, 0}); }, {fragment});
    test::expect_error([&] { degree_order(g); }, {fragment});
    const std::vector<float> x(4, 1.5f);
    test::expect_error([&] { reference_gcn_aggregate(g, 1, 1, x.data()); }, {fragment});
    // Checked before the file is opened, so nothing is written.
    test::expect_error([&] { gen::write_edge_list("/nonexistent-dir/g.txt", g); }, {fragment});
  }
  // partition_rows reads only the row offsets, and checks them.
  for (const std::vector<edge_t>& offsets : {std::vector<edge_t>{0}, std::vector<edge_t>{0, 2, 1, 4, 5}}) {
    HostGraph g = good;
    g.row_ptr = offsets;
    test::expect_error([&] { partition_rows(g, 1, 64, 8); }, {"graph: row offsets"});
  }
  std::vector<node_t> src{0, 1, 2}, dst{1};
  test::expect_error([&] { symmetrize(src, dst); }, {"3 source ids but 1 destination ids"});
}

TEST(GraphFromCsr, AdoptsTheStructure) {
  const HostGraph g = graph_from_csr(4, {0, 2, 2, 5, 6}, {1, 3, 0, 1, 2, 3});
  EXPECT_EQ(g.num_nodes, 4);
  EXPECT_EQ(g.num_edges(), 6);
  EXPECT_EQ(g.row_ptr, (std::vector<edge_t>{0, 2, 2, 5, 6}));
  EXPECT_EQ(g.src, (std::vector<node_t>{1, 3, 0, 1, 2, 3}));
  EXPECT_EQ(g.dst, (std::vector<node_t>{0, 0, 2, 2, 2, 3}));
  EXPECT_EQ(g.edge_id, (std::vector<edge_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(g.stats.max, 3);
  EXPECT_EQ(g.stats.empty_rows, 1);
  EXPECT_DOUBLE_EQ(g.stats.mean, 1.5);
  // The same graph through graph_from_edges.
  const HostGraph h = graph_from_edges(4, g.src, g.dst);
  EXPECT_EQ(h.row_ptr, g.row_ptr);
  EXPECT_EQ(h.src, g.src);
  EXPECT_EQ(h.edge_id, g.edge_id);
}

TEST(GraphFromCsr, RejectsMalformedOffsets) {
  expect_error([] { graph_from_csr(-3, {0}, {}); }, {"negative", "-3"});
  expect_error([] { graph_from_csr(3, {0, 1, 2}, {0, 1}); }, {"3 entries", "num_nodes + 1 = 4"});
  expect_error([] { graph_from_csr(2, {0, 1, 2, 2}, {0, 1}); }, {"4 entries", "3"});
  expect_error([] { graph_from_csr(0, {}, {}); }, {"0 entries", "1"});
  expect_error([] { graph_from_csr(2, {1, 1, 2}, {0, 1}); }, {"start at 0"});
  expect_error([] { graph_from_csr(3, {0, 2, 1, 3}, {0, 1, 2}); }, {"decrease", "row 1"});
  expect_error([] { graph_from_csr(2, {0, 1, 3}, {0, 1}); }, {"end at 3", "2 edges"});
  expect_error([] { graph_from_csr(2, {0, 1, 1}, {0, 1}); }, {"end at 1", "2 edges"});
}

TEST(GraphFromCsr, RejectsSourceIdsOutOfRange) {
  expect_error([] { graph_from_csr(2, {0, 1, 3}, {0, 1, 2}); }, {"source", "id 2", "edge 2"});
  expect_error([] { graph_from_csr(2, {0, 1, 2}, {-1, 1}); }, {"source", "-1", "edge 0"});
}

// ---- batch_graphs --------------------------------------------------------------------------

TEST(GraphBatch, ShiftsNodesAndEdges) {
  const HostGraph a = graph_from_edges(3, {0, 2, 1}, {1, 1, 0});
  const HostGraph b = graph_from_edges(2, {}, {});
  const HostGraph c = graph_from_edges(4, {3, 0, 1, 3}, {0, 3, 3, 2});
  const HostGraph batch = batch_graphs({a, b, c});
  EXPECT_EQ(batch.num_nodes, 9);
  EXPECT_EQ(batch.num_edges(), 7);
  EXPECT_EQ(batch.graph_ptr, (std::vector<node_t>{0, 3, 5, 9}));
  // Block-diagonal union of the edge lists, edge ids shifted by the edges before.
  const std::vector<node_t> src{0, 2, 1, 5 + 3, 5 + 0, 5 + 1, 5 + 3};
  const std::vector<node_t> dst{1, 1, 0, 5 + 0, 5 + 3, 5 + 3, 5 + 2};
  expect_consistent(batch, src, dst);
  const HostGraph direct = graph_from_edges(9, src, dst);
  EXPECT_EQ(batch.row_ptr, direct.row_ptr);
  EXPECT_EQ(batch.src, direct.src);
  EXPECT_EQ(batch.dst, direct.dst);
  EXPECT_EQ(batch.edge_id, direct.edge_id);
  EXPECT_EQ(batch.stats.max, direct.stats.max);
  EXPECT_EQ(batch.stats.empty_rows, direct.stats.empty_rows);
  EXPECT_DOUBLE_EQ(batch.stats.mean, direct.stats.mean);
}

TEST(GraphBatch, ManyRandomGraphs) {
  std::vector<HostGraph> parts;
  std::vector<node_t> src, dst;
  node_t offset = 0;
  for (unsigned s = 0; s < 20; ++s) {
    const node_t n = node_t(1 + s % 9);
    parts.push_back(test::random_graph(n, std::size_t(n) * 3, 100 + s));
    // random_graph's edges in the caller's order, recovered through edge_id.
    std::vector<node_t> ps(parts.back().src.size()), pd(ps.size());
    for (std::size_t e = 0; e < ps.size(); ++e) {
      ps[std::size_t(parts.back().edge_id[e])] = parts.back().src[e];
      pd[std::size_t(parts.back().edge_id[e])] = parts.back().dst[e];
    }
    for (std::size_t i = 0; i < ps.size(); ++i) src.push_back(ps[i] + offset), dst.push_back(pd[i] + offset);
    offset += n;
  }
  const HostGraph batch = batch_graphs(parts);
  EXPECT_EQ(batch.num_nodes, offset);
  ASSERT_EQ(batch.graph_ptr.size(), parts.size() + 1);
  for (std::size_t g = 0; g < parts.size(); ++g)
    EXPECT_EQ(batch.graph_ptr[g + 1] - batch.graph_ptr[g], parts[g].num_nodes);
  expect_consistent(batch, src, dst);
}

TEST(GraphBatch, EmptyList) {
  const HostGraph batch = batch_graphs({});
  EXPECT_EQ(batch.num_nodes, 0);
  EXPECT_EQ(batch.num_edges(), 0);
  EXPECT_EQ(batch.row_ptr, std::vector<edge_t>{0});
  EXPECT_EQ(batch.graph_ptr, std::vector<node_t>{0});
  EXPECT_EQ(batch.stats.max, 0);
}

// ---- symmetrize ----------------------------------------------------------------------------

std::set<std::pair<node_t, node_t>> edge_set(const std::vector<node_t>& src, const std::vector<node_t>& dst) {
  std::set<std::pair<node_t, node_t>> s;
  for (std::size_t i = 0; i < src.size(); ++i) s.emplace(src[i], dst[i]);
  return s;
}

TEST(GraphSymmetrize, AddsReversesAndDropsDuplicates) {
  std::vector<node_t> src{0, 1, 2, 0, 3, 3, 2};
  std::vector<node_t> dst{1, 0, 3, 1, 3, 3, 0};
  symmetrize(src, dst);
  ASSERT_EQ(src.size(), dst.size());
  // {0<->1, 2<->3, 3->3 once, 2<->0}
  const std::set<std::pair<node_t, node_t>> want{{0, 1}, {1, 0}, {2, 3}, {3, 2}, {3, 3}, {2, 0}, {0, 2}};
  EXPECT_EQ(src.size(), want.size()) << "duplicates or missing edges";
  EXPECT_EQ(edge_set(src, dst), want);
}

TEST(GraphSymmetrize, RandomEdgeListIsClosedUnderReversal) {
  std::mt19937 rng(9);
  std::uniform_int_distribution<node_t> any(0, 29);
  std::vector<node_t> src(200), dst(200);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = any(rng), dst[i] = any(rng);
  const auto original = edge_set(src, dst);
  symmetrize(src, dst);
  const auto s = edge_set(src, dst);
  EXPECT_EQ(s.size(), src.size()) << "duplicate edges left";
  for (const auto& [u, v] : original) {
    EXPECT_TRUE(s.count({u, v})) << u << "->" << v;
    EXPECT_TRUE(s.count({v, u})) << v << "->" << u;
  }
  for (const auto& [u, v] : s) EXPECT_TRUE(original.count({u, v}) || original.count({v, u})) << u << "->" << v;
}

TEST(GraphSymmetrize, SelfLoopKeptOnceAndEmptyStaysEmpty) {
  std::vector<node_t> src{4, 4, 4}, dst{4, 4, 4};
  symmetrize(src, dst);
  EXPECT_EQ(src, std::vector<node_t>{4});
  EXPECT_EQ(dst, std::vector<node_t>{4});
  std::vector<node_t> none_s, none_d;
  symmetrize(none_s, none_d);
  EXPECT_TRUE(none_s.empty());
  EXPECT_TRUE(none_d.empty());
}

// ---- transpose -----------------------------------------------------------------------------

void expect_transpose_consistent(const HostGraph& g) {
  const HostCsc t = transpose(g);
  const std::size_t N = std::size_t(g.num_nodes), E = std::size_t(g.num_edges());
  ASSERT_EQ(t.col_ptr.size(), N + 1);
  ASSERT_EQ(t.dst.size(), E);
  ASSERT_EQ(t.csr_edge.size(), E);
  EXPECT_EQ(t.col_ptr.front(), 0);
  EXPECT_EQ(t.col_ptr.back(), edge_t(E));
  std::vector<int> hits(E, 0);
  for (std::size_t u = 0; u < N; ++u) {
    ASSERT_LE(t.col_ptr[u], t.col_ptr[u + 1]);
    // Out-degree of u equals the number of CSR edges with source u.
    EXPECT_EQ(t.col_ptr[u + 1] - t.col_ptr[u], std::count(g.src.begin(), g.src.end(), node_t(u))) << "node " << u;
    for (edge_t c = t.col_ptr[u]; c < t.col_ptr[u + 1]; ++c) {
      const edge_t e = t.csr_edge[std::size_t(c)];
      ASSERT_GE(e, 0);
      ASSERT_LT(e, edge_t(E));
      ++hits[std::size_t(e)];
      EXPECT_EQ(g.src[std::size_t(e)], node_t(u)) << "CSC edge " << c << " is not grouped by its source";
      EXPECT_EQ(t.dst[std::size_t(c)], g.dst[std::size_t(e)]) << "CSC edge " << c;
    }
  }
  for (std::size_t e = 0; e < E; ++e) EXPECT_EQ(hits[e], 1) << "CSR edge " << e;
}

TEST(GraphTranspose, SmallGraph) {
  const HostGraph g = graph_from_edges(4, {0, 1, 0, 3, 0, 2}, {1, 1, 2, 0, 0, 2});
  const HostCsc t = transpose(g);
  EXPECT_EQ(t.col_ptr, (std::vector<edge_t>{0, 3, 4, 5, 6}));
  std::vector<node_t> from0(t.dst.begin(), t.dst.begin() + 3);
  std::sort(from0.begin(), from0.end());
  EXPECT_EQ(from0, (std::vector<node_t>{0, 1, 2}));
  expect_transpose_consistent(g);
}

TEST(GraphTranspose, TestGraphs) {
  for (const auto& [name, g] : test::test_graphs(3000)) {
    SCOPED_TRACE(name);
    expect_transpose_consistent(g);
  }
}

// From 2^22 edges on, transpose, independent_blocks and rmat's CSR run on a thread per range of
// nodes (parallel.hpp): they must give the serial loops' results, edge for edge.
TEST(GraphTranspose, OnThreadsAsTheSerialLoop) {
  const HostGraph g = gen::rmat(16, 160, 0.57, 0.19, 0.19, 3);
  const std::size_t N = std::size_t(g.num_nodes), E = std::size_t(g.num_edges());
  ASSERT_GE(E, std::size_t(1) << 22);
  HostCsc s;
  s.col_ptr.assign(N + 1, 0);
  for (const node_t u : g.src) ++s.col_ptr[std::size_t(u) + 1];
  std::partial_sum(s.col_ptr.begin(), s.col_ptr.end(), s.col_ptr.begin());
  s.dst.resize(E), s.csr_edge.resize(E);
  std::vector<edge_t> next(s.col_ptr.begin(), s.col_ptr.end() - 1);
  for (std::size_t e = 0; e < E; ++e) {
    const edge_t c = next[std::size_t(g.src[e])]++;
    s.dst[std::size_t(c)] = g.dst[e], s.csr_edge[std::size_t(c)] = edge_t(e);
  }
  const HostCsc t = transpose(g);
  EXPECT_EQ(t.col_ptr, s.col_ptr);
  EXPECT_EQ(t.dst, s.dst);
  EXPECT_EQ(t.csr_edge, s.csr_edge);
  // rmat's rows: sorted, no duplicate, no loop; symmetric, so each column holds its row.
  EXPECT_EQ(t.col_ptr, g.row_ptr);
  EXPECT_EQ(t.dst, g.src);
  for (std::size_t v = 0; v < N; ++v)
    for (edge_t e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e) {
      ASSERT_NE(g.src[std::size_t(e)], node_t(v));
      if (e > g.row_ptr[v]) ASSERT_LT(g.src[std::size_t(e) - 1], g.src[std::size_t(e)]);
    }
  // Two copies side by side, their offsets dropped: the blocks of the serial reach sweep.
  HostGraph two = batch_graphs({g, g});
  two.graph_ptr.clear();
  std::vector<node_t> reach(std::size_t(two.num_nodes));
  std::iota(reach.begin(), reach.end(), 0);
  for (std::size_t e = 0; e < std::size_t(two.num_edges()); ++e) {
    const node_t lo = std::min(two.src[e], two.dst[e]), hi = std::max(two.src[e], two.dst[e]);
    reach[std::size_t(lo)] = std::max(reach[std::size_t(lo)], hi);
  }
  std::vector<node_t> blocks{0};
  node_t far = -1;
  for (node_t v = 0; v < two.num_nodes; ++v)
    if ((far = std::max(far, reach[std::size_t(v)])) == v) blocks.push_back(v + 1);
  EXPECT_EQ(independent_blocks(two), blocks);
  EXPECT_GE(blocks.size(), 3u);
}

// ---- partition_rows ------------------------------------------------------------------------

// bounds start at 0, end at N, increase; teams hold at most max_rows rows and their scores fit
// the capacity unless a single row alone is over it; greedy: a team is closed only when the
// next row would break a limit.
void expect_valid_partition(const HostGraph& g, int heads, edge_t capacity, int max_rows) {
  const std::vector<node_t> b = partition_rows(g, heads, capacity, max_rows);
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(b.front(), 0);
  EXPECT_EQ(b.back(), g.num_nodes);
  auto edges = [&](node_t lo, node_t hi) { return g.row_ptr[std::size_t(hi)] - g.row_ptr[std::size_t(lo)]; };
  for (std::size_t t = 0; t + 1 < b.size(); ++t) {
    const node_t lo = b[t], hi = b[t + 1];
    ASSERT_LT(lo, hi) << "team " << t << " is empty";
    EXPECT_LE(hi - lo, max_rows) << "team " << t;
    if (hi - lo > 1) EXPECT_LE(edges(lo, hi) * heads, capacity) << "team " << t << " rows [" << lo << "," << hi << ")";
    if (edges(hi - 1, hi) * heads > capacity) EXPECT_EQ(hi - lo, 1) << "super row " << hi - 1 << " shares a team";
    if (t + 2 < b.size())
      EXPECT_TRUE(hi - lo == max_rows || edges(lo, hi + 1) * heads > capacity)
          << "team " << t << " was closed early at row " << hi;
  }
}

TEST(GraphPartitionRows, RespectsRowsAndCapacity) {
  for (const auto& [name, g] : test::test_graphs(5000)) {
    for (int heads : {1, 3}) {
      for (edge_t capacity : {edge_t(8), edge_t(64), edge_t(8192)}) {
        for (int max_rows : {1, 4, kokkos_impl::kMaxTeamRows}) {
          SCOPED_TRACE(name + " heads " + std::to_string(heads) + " capacity " + std::to_string(capacity) +
                       " max_rows " + std::to_string(max_rows));
          expect_valid_partition(g, heads, capacity, max_rows);
        }
      }
    }
  }
}

TEST(GraphPartitionRows, SuperRowGetsItsOwnTeam) {
  // Degrees 1, 1, 50, 1, 1: row 2 alone exceeds a capacity of 10.
  std::vector<node_t> src, dst;
  for (node_t v : {0, 1, 3, 4}) src.push_back(0), dst.push_back(v);
  for (int i = 0; i < 50; ++i) src.push_back(node_t(i % 5)), dst.push_back(2);
  const HostGraph g = graph_from_edges(5, src, dst);
  EXPECT_EQ(partition_rows(g, 1, 10, 8), (std::vector<node_t>{0, 2, 3, 5}));
  // Two heads: two light rows (2 scores each) share a team of 4 floats, not one of 3.
  EXPECT_EQ(partition_rows(g, 2, 4, 8), (std::vector<node_t>{0, 2, 3, 5}));
  EXPECT_EQ(partition_rows(g, 2, 3, 8), (std::vector<node_t>{0, 1, 2, 3, 4, 5}));
  // Plenty of room: one team, or teams of max_rows.
  EXPECT_EQ(partition_rows(g, 1, 1000, 8), (std::vector<node_t>{0, 5}));
  EXPECT_EQ(partition_rows(g, 1, 1000, 2), (std::vector<node_t>{0, 2, 4, 5}));
}

TEST(GraphPartitionRows, EmptyRowsAndNoNodes) {
  EXPECT_EQ(partition_rows(graph_from_edges(0, {}, {}), 1, 100, 8), std::vector<node_t>{0});
  EXPECT_EQ(partition_rows(graph_from_edges(20, {}, {}), 4, 100, 8), (std::vector<node_t>{0, 8, 16, 20}));
}

// ---- Online's pieces -----------------------------------------------------------------------

TEST(GraphRowPieces, CoverEachHeavyRowInOrder) {
  for (const auto& [name, g] : test::test_graphs(5000)) {
    for (edge_t split : {edge_t(1), edge_t(3), edge_t(32), detail::kMaxPieceEdges}) {
      SCOPED_TRACE(name + " split " + std::to_string(split));
      const RowPieces p = row_pieces(g.row_ptr, split);
      std::size_t row = 0, piece = 0;
      for (node_t v = 0; v < g.num_nodes; ++v) {
        const edge_t a = g.row_ptr[std::size_t(v)], b = g.row_ptr[std::size_t(v) + 1];
        if (b - a <= split) continue;
        ASSERT_LT(row, p.rows.size());
        const SplitRow r = p.rows[row++];
        EXPECT_EQ(r.row, v);
        EXPECT_EQ(r.first, int(piece));
        EXPECT_EQ(r.count, (b - a + split - 1) / split);  // as few pieces as the split allows
        edge_t e = a;
        for (int i = 0; i < r.count; ++i) {
          ASSERT_LT(piece, p.pieces.size());
          const RowPiece pc = p.pieces[piece++];
          EXPECT_EQ(pc.row, v);
          EXPECT_EQ(pc.slot, int(piece) - 1);
          EXPECT_EQ(pc.e0, e);
          EXPECT_GT(pc.e1, pc.e0);
          EXPECT_LE(pc.e1 - pc.e0, split);
          e = pc.e1;
        }
        EXPECT_EQ(e, b);
      }
      EXPECT_EQ(row, p.rows.size());
      EXPECT_EQ(piece, p.pieces.size());
    }
  }
}

TEST(GraphRowPieces, PieceLengthIsAGroupsShareWithinBounds) {
  const auto portable = [](int lanes, std::int64_t threads) {
    return detail::PieceFacts{lanes, threads, 32, detail::kMaxPieceEdges};
  };
  using detail::piece_edges;
  EXPECT_EQ(piece_edges(edge_t(1) << 20, portable(32, 270336)), (edge_t(1) << 20) * 32 / 270336);  // an H100's threads
  EXPECT_EQ(piece_edges(1000, portable(32, 270336)), 32);                   // at least 32 edges
  EXPECT_EQ(piece_edges(0, portable(1, 1)), 32);
  EXPECT_EQ(piece_edges(edge_t(1) << 20, portable(1, 1)), detail::kMaxPieceEdges);  // one thread: bounded anyway
  EXPECT_EQ(piece_edges(100, portable(1, 0)), 100);  // no threads counted: one
  // No upper bound where the device sets none (the CUDA-native pieces).
  EXPECT_EQ(piece_edges(edge_t(1) << 40, {32, 2048, 16, std::numeric_limits<edge_t>::max()}), edge_t(1) << 34);
}

TEST(GraphRowPieces, WholeDegreesSkipSplitRows) {
  // Degrees 0, 2, 4 and 100: above a split of 10 the last is walked in pieces, not counted.
  const std::vector<edge_t> ptr{0, 0, 2, 6, 106};
  const WholeDegrees d = whole_degrees(ptr, 10);
  EXPECT_DOUBLE_EQ(d.mean, 2.0);
  EXPECT_DOUBLE_EQ(d.cv, std::sqrt(8.0 / 3.0) / 2.0);  // population deviation over the mean
  EXPECT_GT(d.cv, kUnevenDegrees);
  const WholeDegrees all = whole_degrees(ptr, 100);
  EXPECT_DOUBLE_EQ(all.mean, 106.0 / 4.0);
  const WholeDegrees even = whole_degrees({0, 3, 6, 9}, 10);
  EXPECT_DOUBLE_EQ(even.mean, 3.0);
  EXPECT_DOUBLE_EQ(even.cv, 0.0);
  for (const std::vector<edge_t>& none : {std::vector<edge_t>{0}, std::vector<edge_t>{0, 0, 0}, ptr}) {
    const WholeDegrees z = whole_degrees(none, none == ptr ? 0 : 10);  // no nodes, no edges, every row split
    EXPECT_EQ(z.mean, 0.0);
    EXPECT_EQ(z.cv, 0.0);
  }
}

TEST(GraphRowPieces, OnlinePlanSplitsTheSuperRow) {
  const HostGraph g = test::super_node_graph(100, 20000, 5);
  const Plan<Exec> plan(Exec(), Graph<Mem>(g), ScoreKind::GT, 2, 8, Strategy::Online, Backend::Portable);
  EXPECT_EQ(plan.strategy(), Strategy::Online);
  const auto& L = kokkos_impl::layout_of(plan);
  EXPECT_EQ(L.split, detail::piece_edges(g.num_edges(), {L.online_lanes, Exec().concurrency(), 32, detail::kMaxPieceEdges}));
  const RowPieces want = row_pieces(g.row_ptr, L.split);
  EXPECT_EQ(want.rows.size(), 1u);
  EXPECT_GT(want.pieces.size(), 1u);
  EXPECT_EQ(L.pieces.extent(0), want.pieces.size());
  EXPECT_EQ(L.split_rows.extent(0), want.rows.size());
  EXPECT_EQ(L.partials.extent(0), 2 * want.pieces.size());
  EXPECT_EQ(L.partials.extent(1), 10u);
  EXPECT_GT(L.scratch_floats, 0);
  EXPECT_EQ(L.scratch_floats % 8, 0);  // whole accumulators
  EXPECT_EQ(L.scores.size(), 0u);      // no per-edge scores
  // An accumulator larger than any team scratch.
  EXPECT_THROW(Plan<Exec>(Exec(), Graph<Mem>(g), ScoreKind::GT, 1, 1 << 20, Strategy::Online, Backend::Portable),
               Error);
}

// ---- choose_strategy -----------------------------------------------------------------------

// A device offering `strategies`, with `scratch` bytes free, running `batch` on Dense.
detail::DeviceFacts facts(unsigned strategies, std::size_t scratch, detail::BatchStats batch = {}) {
  detail::DeviceFacts f;
  f.strategies = strategies, f.scratch_bytes = scratch, f.batch = batch;
  return f;
}

// Auto on a device with the portable strategies and `scratch` bytes free (a Kokkos team).
Strategy portable_auto(ScoreKind kind, int heads, int dim, const DegreeStats& s, std::size_t scratch) {
  return detail::choose_strategy(Op{kind, DType::F32, heads, dim}, s, facts(detail::kPortableStrategies, scratch));
}

TEST(GraphChooseStrategy, OnlineWhenTheAccumulatorFits) {
  DegreeStats s;
  s.max = 1 << 20;  // a super row, whatever the model
  for (ScoreKind k : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2}) {
    SCOPED_TRACE(to_string(k));
    EXPECT_EQ(portable_auto(k, 4, 32, s, 128), Strategy::Online);
    EXPECT_EQ(portable_auto(k, 4, 32, DegreeStats{}, 1024), Strategy::Online);
    EXPECT_NE(portable_auto(k, 4, 33, s, 128), Strategy::Online);
  }
}

TEST(GraphChooseStrategy, DfGnnRuleWhenItDoesNot) {
  constexpr int kWide = 1 << 20;  // dim: no accumulator fits below
  DegreeStats s;
  s.max = 100;
  // heaviest row's scores: 100 * 2 heads * 4 bytes = 800 bytes
  for (ScoreKind k : {ScoreKind::GT, ScoreKind::AGNN}) {
    SCOPED_TRACE(to_string(k));
    EXPECT_EQ(portable_auto(k, 2, kWide, s, 799), Strategy::PMF);
    EXPECT_EQ(portable_auto(k, 2, kWide, s, 800), Strategy::PMF);
    EXPECT_EQ(portable_auto(k, 2, kWide, s, 801), Strategy::SMMF);
    EXPECT_EQ(portable_auto(k, 1, kWide, s, 400), Strategy::PMF);
    EXPECT_EQ(portable_auto(k, 1, kWide, s, 401), Strategy::SMMF);
    EXPECT_EQ(portable_auto(k, 8, kWide, s, 48 * 1024), Strategy::SMMF);
  }
  for (ScoreKind k : {ScoreKind::GAT, ScoreKind::GATv2}) {
    SCOPED_TRACE(to_string(k));
    EXPECT_EQ(portable_auto(k, 2, kWide, s, 799), Strategy::SMMF);
    EXPECT_EQ(portable_auto(k, 2, kWide, s, 1), Strategy::SMMF);
    s.max = 1 << 20;
    EXPECT_EQ(portable_auto(k, 16, kWide, s, 1024), Strategy::SMMF);
    s.max = 100;
  }
  DegreeStats none;
  EXPECT_EQ(portable_auto(ScoreKind::GT, 4, kWide, none, 1024), Strategy::SMMF);
}

TEST(GraphResolveBackend, OneRuleForEveryEntry) {
  EXPECT_EQ(resolve_backend("x", Backend::Auto, ""), Backend::Native);
  EXPECT_EQ(resolve_backend("x", Backend::Auto, "needs a GPU"), Backend::Portable);
  EXPECT_EQ(resolve_backend("x", Backend::Portable, ""), Backend::Portable);
  EXPECT_EQ(resolve_backend("x", Backend::Native, ""), Backend::Native);
  test::expect_error([] { resolve_backend("x", Backend::Native, "needs a GPU"); },
                     {"x: the CUDA-native backend needs a GPU"});
  EXPECT_EQ(parse_backend("Auto"), Backend::Auto);
  EXPECT_EQ(parse_backend("kokkos"), Backend::Portable);
  EXPECT_EQ(parse_backend("CUDA"), Backend::Native);
  test::expect_error([] { parse_backend("gpu"); }, {"unknown backend 'gpu' (expected auto, kokkos or cuda)"});
  // A Kokkos plan resolves by the same rule: the portable kernels on a space without the native ones.
  using Host = Kokkos::DefaultHostExecutionSpace;
  const Graph<Host::memory_space> g(graph_from_edges(2, {0}, {1}));
  test::expect_error([&] { Plan<Host>(Host(), g, ScoreKind::GT, 1, 8, Strategy::Auto, Backend::Native); },
                     {"plan: the CUDA-native backend needs Kokkos::Cuda"});
  // An integer cast to an enum that names none of its values is refused by name, whichever it is.
  test::expect_error([&] { Plan<Host>(Host(), g, ScoreKind(7), 1, 8); },
                     {"plan: score kind 7 is none of the enum's values"});
  test::expect_error([&] { Plan<Host>(Host(), g, ScoreKind::GT, 1, 8, Strategy(9)); },
                     {"plan: strategy 9 is none of the enum's values"});
  test::expect_error([&] { Plan<Host>(Host(), g, ScoreKind::GT, 1, 8, Strategy::Auto, Backend(5)); },
                     {"plan: backend 5 is none of the enum's values"});
}

TEST(GraphChooseStrategy, DenseWhereTheDeviceHasItAndTheBatchIsDenseEnough) {
  using detail::strategy_bit;
  const unsigned native = detail::kPortableStrategies | strategy_bit(Strategy::Dense);
  const DegreeStats s;
  const auto choose = [&](ScoreKind kind, DType t, int heads, int dim, detail::BatchStats batch,
                          unsigned strategies) {
    return detail::choose_strategy(Op{kind, t, heads, dim}, s, facts(strategies, 227 * 1024, batch));
  };
  // GT's bar at D = 128 is 0.225, with at least 64 nodes a graph.
  EXPECT_EQ(choose(ScoreKind::GT, DType::F32, 1, 128, {0.41, 115}, native), Strategy::Dense);
  EXPECT_EQ(choose(ScoreKind::GT, DType::F32, 1, 128, {0.225, 64}, native), Strategy::Dense);
  EXPECT_EQ(choose(ScoreKind::GT, DType::F32, 1, 128, {0.22, 115}, native), Strategy::Online);
  EXPECT_EQ(choose(ScoreKind::GT, DType::F32, 1, 128, {0.41, 63}, native), Strategy::Online);
  EXPECT_EQ(choose(ScoreKind::GT, DType::F32, 1, 128, {0.41, 115}, detail::kPortableStrategies), Strategy::Online);
  // The bar rises as D falls and is highest for GAT; GATv2 has no Dense score.
  EXPECT_EQ(choose(ScoreKind::GT, DType::F32, 4, 32, {0.25, 115}, native), Strategy::Online);
  EXPECT_EQ(choose(ScoreKind::GT, DType::F32, 4, 32, {0.26, 115}, native), Strategy::Dense);
  EXPECT_EQ(choose(ScoreKind::AGNN, DType::F32, 2, 64, {0.25, 115}, native), Strategy::Dense);
  EXPECT_EQ(choose(ScoreKind::GAT, DType::F32, 4, 32, {0.35, 115}, native), Strategy::Online);
  EXPECT_EQ(choose(ScoreKind::GAT, DType::F32, 4, 32, {0.355, 115}, native), Strategy::Dense);
  EXPECT_EQ(choose(ScoreKind::GATv2, DType::F32, 1, 128, {1.0, 192}, native), Strategy::Online);
  // Two-byte elements keep the bars.
  EXPECT_EQ(choose(ScoreKind::GT, DType::BF16, 4, 32, {0.26, 115}, native), Strategy::Dense);
  EXPECT_EQ(choose(ScoreKind::GAT, DType::F16, 4, 32, {0.35, 115}, native), Strategy::Online);
}

TEST(GraphChooseStrategy, ResolveAppliesTheElementRuleThenAutoAmongWhatTheTypeRuns) {
  using detail::strategy_bit;
  detail::DeviceFacts native = facts(detail::kPortableStrategies | strategy_bit(Strategy::Dense), 227 * 1024,
                                     {0.41, 115});
  native.two_byte = strategy_bit(Strategy::Online) | strategy_bit(Strategy::Dense);
  native.why_not[int(Strategy::Staged)] = "Staged needs a batch";
  const DegreeStats s;
  const Op gt{ScoreKind::GT, DType::F32, 1, 128}, gt_bf16{ScoreKind::GT, DType::BF16, 1, 128};
  EXPECT_EQ(detail::resolve_strategy("p", Strategy::Auto, gt, s, native), Strategy::Dense);
  EXPECT_EQ(detail::resolve_strategy("p", Strategy::Auto, gt_bf16, s, native), Strategy::Dense);
  EXPECT_EQ(detail::resolve_strategy("p", Strategy::SMMF, gt, s, native), Strategy::SMMF);
  test::expect_error([&] { detail::resolve_strategy("p", Strategy::Staged, gt, s, native); },
                     {"p: Staged needs a batch"});
  test::expect_error([&] { detail::resolve_strategy("p", Strategy::PMF, gt_bf16, s, native); },
                     {"p: the pmf strategy runs float32 tensors only; bf16 ones run Online or Dense (Auto picks one)"});
  // A two-byte Auto chooses among the two-byte strategies only: where Dense does not pay,
  // Online, the one left.
  detail::DeviceFacts sparse = native;
  sparse.batch = {};
  EXPECT_EQ(detail::resolve_strategy("p", Strategy::Auto, gt_bf16, s, sparse), Strategy::Online);
  sparse.two_byte = strategy_bit(Strategy::Online);  // the portable backend: Auto is Online
  EXPECT_EQ(detail::resolve_strategy("p", Strategy::Auto, gt_bf16, s, sparse), Strategy::Online);
}

TEST(GraphChooseStrategy, DenseFitNamesWhatKeepsABatchOffDense) {
  const detail::DenseLimits limits{192, 65535, 32, 256, 227 * 1024};
  detail::DenseBatch batch{true, 1024, 1024.0 * 115 * 115};
  DegreeStats s;
  s.max = 60;
  const Op gt{ScoreKind::GT, DType::F32, 1, 128, 117760, 117760, 5000000};
  const detail::DenseFit fit = detail::dense_fit(gt, s, batch, limits);
  EXPECT_EQ(fit.why, "");
  EXPECT_DOUBLE_EQ(fit.batch.density, 5000000 / (1024.0 * 115 * 115));
  EXPECT_DOUBLE_EQ(fit.batch.mean_nodes, 115);
  const auto why = [&](Op op, detail::DenseBatch b, DegreeStats d) { return detail::dense_fit(op, d, b, limits).why; };
  EXPECT_EQ(why(gt, detail::DenseBatch{}, s), "needs a batch of square graphs, not a bipartite graph");
  Op other = gt;
  other.kind = ScoreKind::GATv2;
  EXPECT_EQ(why(other, batch, s), "computes the GT, AGNN and GAT scores, not GATv2");
  other = gt, other.dim = 48;
  EXPECT_EQ(why(other, batch, s), "needs D a multiple of 32, got 48");
  other = gt, other.kind = ScoreKind::AGNN, other.dim = 512;
  EXPECT_EQ(why(other, batch, s), "computes the AGNN score at D <= 256 only, got 512");
  detail::DenseBatch b = batch;
  b.first_too_large = 7, b.too_large_nodes = 300;
  EXPECT_EQ(why(gt, b, s), "needs a batch of graphs of at most 192 nodes; graph 7 has 300");
  b = batch, b.unfit_nodes = 190, b.unfit_bytes = 300000;
  EXPECT_EQ(why(gt, b, s),
            "needs 300000 bytes of shared memory for graphs of 190 nodes at D = 128, the device allows 232448");
  DegreeStats heavy;
  heavy.max = 70000;
  EXPECT_EQ(why(gt, batch, heavy), "takes rows of at most 65535 edges; the largest has 70000");
}

TEST(GraphChooseStrategy, CallsOfAutosDenseRunOnlineWithEdgeWiseInputs) {
  EXPECT_TRUE(detail::dense_runs(false, true, true));  // an explicit Dense keeps every call
  EXPECT_TRUE(detail::dense_runs(true, false, false));
  EXPECT_FALSE(detail::dense_runs(true, true, false));
  EXPECT_FALSE(detail::dense_runs(true, false, true));
  detail::check_edge_strategy("c", Strategy::Online, false);
  detail::check_edge_strategy("c", Strategy::Dense, true);
  test::expect_error([] { detail::check_edge_strategy("c", Strategy::Dense, false); },
                     {"c: the dense strategy takes no edge features; Online does (Auto picks it)"});
  test::expect_error([] { detail::check_edge_strategy("c", Strategy::SMMF, false); }, {"c: the smmf strategy"});
}

TEST(GraphChooseStrategy, BackwardOrderFollowsTheModelsOrdersAndTheDegree) {
  using detail::columns_first;
  const auto order = [](BackwardOrder o, bool rows, bool cols, edge_t E, bool edges) {
    return columns_first("b", o, ScoreKind::GT, rows, cols, E, 100, edges);
  };
  EXPECT_FALSE(order(BackwardOrder::Auto, true, true, 5199, false));  // mean in-degree 51.99
  EXPECT_TRUE(order(BackwardOrder::Auto, true, true, 5200, false));
  EXPECT_FALSE(order(BackwardOrder::Auto, true, true, 5200, true));  // edge features: rows first
  EXPECT_TRUE(order(BackwardOrder::Auto, false, true, 1, false));    // columns first only
  EXPECT_FALSE(order(BackwardOrder::Auto, true, false, 10000, false));
  EXPECT_TRUE(order(BackwardOrder::ColumnsFirst, true, true, 1, false));
  EXPECT_FALSE(order(BackwardOrder::RowsFirst, true, true, 10000, false));
  test::expect_error([&] { order(BackwardOrder::ColumnsFirst, true, true, 1, true); },
                     {"b(gt): no columns-first order for this score with edge features (docs/backward.md)"});
  test::expect_error([&] { order(BackwardOrder::RowsFirst, false, true, 1, false); },
                     {"b(gt): no rows-first order for this score (docs/backward.md)"});
  test::expect_error([&] { order(BackwardOrder::ColumnsFirst, true, false, 1, false); },
                     {"b(gt): no columns-first order for this score (docs/backward.md)"});
}

TEST(GraphChooseStrategy, PlanAutoFollowsTheRule) {
  // A super row of 20000 in-edges exceeds every team scratch; a light random graph fits; a
  // dim of 2^16 floats is an accumulator no team scratch holds. The rule is the portable
  // kernels' (a Kokkos::Cuda plan's native kernels have their own).
  const HostGraph heavy = test::super_node_graph(100, 20000, 5);
  const HostGraph light = test::random_graph(100, 400, 6);
  const Exec exec;
  for (ScoreKind k : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2}) {
    SCOPED_TRACE(to_string(k));
    const bool reduces = k == ScoreKind::GT || k == ScoreKind::AGNN;
    const auto plan = [&](const HostGraph& g, Strategy s, int dim) {
      return Plan<Exec>(exec, Graph<Mem>(g), k, 2, dim, s, Backend::Portable).strategy();
    };
    EXPECT_EQ(plan(heavy, Strategy::Auto, 8), Strategy::Online);
    EXPECT_EQ(plan(light, Strategy::Auto, 8), Strategy::Online);
    EXPECT_EQ(plan(heavy, Strategy::Auto, 1 << 16), reduces ? Strategy::PMF : Strategy::SMMF);
    EXPECT_EQ(plan(light, Strategy::Auto, 1 << 16), Strategy::SMMF);
    EXPECT_EQ(plan(light, Strategy::Unfused, 8), Strategy::Unfused);  // an explicit strategy is kept
  }
}

// ---- Graph<Mem> ----------------------------------------------------------------------------

template <class T, class View>
std::vector<T> to_host(const View& v) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<T>(h.data(), h.data() + h.size());
}

TEST(GraphDevice, UploadKeepsTheArrays) {
  for (const auto& [name, host] : test::test_graphs(3000)) {
    SCOPED_TRACE(name);
    const Graph<Mem> g(host);
    EXPECT_EQ(g.num_nodes(), host.num_nodes);
    EXPECT_EQ(g.num_edges(), host.num_edges());
    EXPECT_EQ(g.stats().max, host.stats.max);
    EXPECT_EQ(g.host().row_ptr, host.row_ptr);
    EXPECT_EQ(to_host<edge_t>(g.row_ptr()), host.row_ptr);
    EXPECT_EQ(to_host<node_t>(g.src()), host.src);
    EXPECT_EQ(to_host<node_t>(g.dst()), host.dst);
    EXPECT_EQ(to_host<edge_t>(g.edge_id()), host.edge_id);
  }
}

TEST(GraphDevice, FromEdgesMatchesGraphFromEdges) {
  const std::vector<node_t> src{2, 0, 1, 2}, dst{0, 2, 2, 1};
  const auto g = Graph<Mem>::from_edges(3, src, dst);
  const HostGraph h = graph_from_edges(3, src, dst);
  EXPECT_EQ(to_host<edge_t>(g.row_ptr()), h.row_ptr);
  EXPECT_EQ(to_host<node_t>(g.src()), h.src);
  EXPECT_EQ(to_host<edge_t>(g.edge_id()), h.edge_id);
  EXPECT_THROW(Graph<Mem>::from_edges(3, {0}, {3}), Error);
  const Graph<Mem> empty;
  EXPECT_EQ(empty.num_nodes(), 0);
  EXPECT_EQ(empty.num_edges(), 0);
  EXPECT_EQ(to_host<edge_t>(empty.row_ptr()), std::vector<edge_t>{0});
}

TEST(GraphDevice, TransposedMatchesTranspose) {
  for (const auto& [name, host] : test::test_graphs(3000)) {
    SCOPED_TRACE(name);
    const Graph<Mem> g(host);
    const HostCsc want = transpose(host);
    const auto& t = g.transposed();
    EXPECT_EQ(to_host<edge_t>(t.col_ptr), want.col_ptr);
    EXPECT_EQ(to_host<node_t>(t.dst), want.dst);
    EXPECT_EQ(to_host<edge_t>(t.csr_edge), want.csr_edge);
    // Built once and shared by copies.
    const Graph<Mem> copy = g;
    EXPECT_EQ(&copy.transposed(), &t);
    EXPECT_EQ(copy.transposed().dst.data(), t.dst.data());
  }
}

}  // namespace

namespace {

TEST(GraphIndependentBlocks, RecoversAFlattenedBatch) {
  using namespace dfgnn;
  // Three graphs of 3, 1 and 4 nodes; the last has an edge from its first to its last node.
  const HostGraph b = batch_graphs({graph_from_edges(3, {0, 2}, {1, 0}), graph_from_edges(1, {}, {}),
                                    graph_from_edges(4, {3, 1}, {0, 2})});
  const HostGraph flat = graph_from_edges(b.num_nodes, b.src, b.dst);
  EXPECT_EQ(independent_blocks(flat), (std::vector<node_t>{0, 3, 4, 8}));
  // An edge between the second and third graphs joins them.
  std::vector<node_t> src = b.src, dst = b.dst;
  src.push_back(3), dst.push_back(5);
  EXPECT_EQ(independent_blocks(graph_from_edges(b.num_nodes, src, dst)), (std::vector<node_t>{0, 3, 8}));
  EXPECT_EQ(independent_blocks(graph_from_edges(0, {}, {})), (std::vector<node_t>{0}));
}

}  // namespace
