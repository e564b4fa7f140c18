#pragma once
// The core of the argument-check fixtures: a small random graph, plans on it, and device
// buffers of random values that the fixture owns, so unmanaged views into them stay valid.

#include "graphs.hpp"

#include <dfgnn/plan.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace dfgnn::test {

class CallFixture : public ::testing::Test {
 protected:
  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = Exec::memory_space;
  using View1 = Kokkos::View<float*, Kokkos::LayoutRight, Mem>;
  static constexpr std::size_t N = 13, H = 2, D = 3;

  CallFixture() : host_(random_graph(node_t(N), 60, 7)), graph_(host_) {}

  const Plan<Exec>& plan(ScoreKind kind) {
    plans_.emplace_back(std::make_unique<Plan<Exec>>(exec_, graph_, kind, int(H), int(D)));
    return *plans_.back();
  }

  /// n values in [0.5, 1.5] (never zero, so a cosine is defined), a new seed per buffer.
  View1 buffer(std::size_t n) {
    View1 v("buffer", n);
    const auto h = Kokkos::create_mirror_view(v);
    const auto r = random_values(n, unsigned(buffers_.size()) + 1, 0.5f, 1.5f);
    for (std::size_t i = 0; i < n; ++i) h(i) = r[i];
    Kokkos::deep_copy(v, h);
    return buffers_.emplace_back(v);
  }

  Exec exec_;
  HostGraph host_;
  Graph<Mem> graph_;
  std::vector<std::unique_ptr<Plan<Exec>>> plans_;
  std::vector<View1> buffers_;
};

}  // namespace dfgnn::test
