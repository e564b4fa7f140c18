#pragma once
/// \file parallel.hpp
/// Host preprocessing on a few threads (std::thread: the host library needs no OpenMP), for
/// graphs of billions of edges (generation, transposition, the CUDA plan's tables). Every
/// helper gives the result of the serial loop, whatever the thread count or schedule.

#include <dfgnn/csr.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace dfgnn::detail {

/// Where preprocessing_threads() finds its default when none was set: `source()`, or the
/// hardware's threads where it returns 0. The Kokkos-side headers register the Kokkos host
/// space's concurrency (graph.hpp); this library itself has no Kokkos to ask.
void set_host_concurrency_source(unsigned (*source)());

/// Threads for a pass over `work` elements: one below 2^22 (a thread's start costs more than
/// such a pass gains), else preprocessing_threads().
inline unsigned host_threads(std::int64_t work) {
  if (work < (std::int64_t(1) << 22)) return 1;
  return preprocessing_threads();
}

/// Runs f(0) .. f(threads - 1), each on a thread of its own (f(0) on the caller's).
template <class F>
void on_threads(unsigned threads, F f) {
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(f, t);
  f(0u);
  for (auto& t : pool) t.join();
}

/// Calls f(begin, end) over [0, n) in blocks taken dynamically by preprocessing_threads()
/// threads (no more than there are blocks: a block is the caller's measure of a thread's
/// worth); f must only write state owned by its block, so the result does not depend on the
/// schedule.
template <class F>
void parallel_blocks(std::int64_t n, std::int64_t block, F f) {
  std::atomic<std::int64_t> next{0};
  const std::int64_t blocks = (n + block - 1) / block;
  const unsigned threads = preprocessing_threads();
  on_threads(unsigned(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, blocks))), [&](unsigned) {
    for (std::int64_t b; (b = next.fetch_add(block)) < n;) f(b, std::min(n, b + block));
  });
}

/// Owner computes: splits [0, n) into one contiguous range per thread and calls f(lo, hi) for
/// each, where a pass over `work` elements reads all its input and writes only what falls in
/// [lo, hi) (a scatter by node id without atomics, in the serial loop's order within a node).
template <class F>
void parallel_ranges(std::int64_t n, std::int64_t work, F f) {
  const unsigned threads = host_threads(work);
  on_threads(threads, [&](unsigned t) { f(n * t / threads, n * (t + 1) / threads); });
}

}  // namespace dfgnn::detail
