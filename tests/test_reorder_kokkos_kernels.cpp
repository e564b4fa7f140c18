// Our reverse Cuthill-McKee against Kokkos Kernels' graph_rcm (built when Kokkos Kernels is
// found): on the same symmetric graphs, ours is about as narrow.

#include "message_cases.hpp"

#include <dfgnn/graph.hpp>
#include <dfgnn/reorder.hpp>

#include <KokkosGraph_RCM.hpp>
#include <gtest/gtest.h>

namespace {

using namespace dfgnn;

/// Kokkos Kernels' RCM labels: the new id of every node.
std::vector<node_t> kokkos_kernels_rcm(const HostGraph& g) {
  using Device = Kokkos::DefaultExecutionSpace::device_type;
  const auto rows = detail::upload<edge_t, Device::memory_space>("rows", g.row_ptr);
  const auto cols = detail::upload<node_t, Device::memory_space>("cols", g.src);
  const auto labels = KokkosGraph::Experimental::graph_rcm<Device>(rows, cols);
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), labels);
  return {host.data(), host.data() + host.size()};
}

TEST(KokkosKernelsRcm, OursIsAsNarrowAsKokkosKernels) {
  std::vector<node_t> src, dst;
  const HostGraph power_law = test::power_law_graph(2000, 12000, 5);
  for (edge_t e = 0; e < power_law.num_edges(); ++e) src.push_back(power_law.src[e]), dst.push_back(power_law.dst[e]);
  symmetrize(src, dst);
  const std::vector<std::pair<std::string, HostGraph>> graphs{{"grid 12x40", test::shuffled_grid(12, 40, 2)},
                                                               {"grid 30x30", test::shuffled_grid(30, 30, 3)},
                                                               {"power law", graph_from_edges(2000, src, dst)}};
  for (const auto& [name, g] : graphs) {
    const edge_t ours = test::bandwidth(g, reorder(g, Ordering::RCM).position);
    const edge_t theirs = test::bandwidth(g, kokkos_kernels_rcm(g));
    EXPECT_LE(ours, theirs + theirs / 10) << name << ": ours " << ours << ", Kokkos Kernels " << theirs;
  }
}

}  // namespace
