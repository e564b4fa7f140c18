#include <dfgnn/generate.hpp>
#include <dfgnn/detail/parallel.hpp>

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

namespace dfgnn::gen {
namespace {

using dfgnn::detail::parallel_blocks;

constexpr std::uint64_t kGamma = 0x9e3779b97f4a7c15ULL;

constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// splitmix64 stream keyed by (seed, domain, index): independent streams for each edge or
/// graph make the output independent of the thread count and of generation order.
class Rng {
 public:
  Rng(std::uint64_t seed, std::uint64_t domain, std::uint64_t index)
      : state_(mix64(mix64(seed + domain * kGamma) ^ (index + kGamma))) {}
  std::uint64_t next() { return mix64(state_ += kGamma); }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [0, n) by multiply-shift; the bias (< n / 2^32) is irrelevant here.
  std::uint32_t below(std::uint32_t n) {
    return static_cast<std::uint32_t>(((next() >> 32) * n) >> 32);
  }

 private:
  std::uint64_t state_;
};

// Domains keep the streams of different purposes apart.
enum : std::uint64_t { kRmatEdge = 1, kRmatPerm, kSbmGraph, kSbmPattern, kKnnGraph };

template <class T>
void shuffle(std::vector<T>& v, Rng& rng) {
  for (std::size_t i = v.size(); i > 1; --i)
    std::swap(v[i - 1], v[rng.below(static_cast<std::uint32_t>(i))]);
}

/// CSR by destination of the undirected edge set {u, v} (pairs with u == v skipped): both
/// directions, each row's sources sorted and deduplicated. The pairs are released once
/// placed, so the peak is about the graph's own 16 bytes per edge.
HostGraph undirected_csr(node_t n, std::vector<node_t> eu, std::vector<node_t> ev) {
  // Each thread owns a range of rows and places the pairs' edges into them (parallel_ranges).
  const std::int64_t pairs = static_cast<std::int64_t>(eu.size());
  std::vector<edge_t> ptr(static_cast<std::size_t>(n) + 1, 0);
  detail::parallel_ranges(n, pairs, [&](node_t lo, node_t hi) {
    const auto mine = [&](node_t v) { return v >= lo && v < hi; };
    for (std::int64_t i = 0; i < pairs; ++i)
      if (eu[i] != ev[i]) {
        if (mine(eu[i])) ++ptr[eu[i] + 1];
        if (mine(ev[i])) ++ptr[ev[i] + 1];
      }
  });
  std::partial_sum(ptr.begin(), ptr.end(), ptr.begin());
  std::vector<node_t> src(static_cast<std::size_t>(ptr[n]));
  detail::parallel_ranges(n, pairs, [&](node_t lo, node_t hi) {
    std::vector<edge_t> fill(ptr.begin() + lo, ptr.begin() + hi);
    for (std::int64_t i = 0; i < pairs; ++i)
      if (eu[i] != ev[i]) {
        if (ev[i] >= lo && ev[i] < hi) src[fill[ev[i] - lo]++] = eu[i];
        if (eu[i] >= lo && eu[i] < hi) src[fill[eu[i] - lo]++] = ev[i];
      }
  });
  eu = {}, ev = {};
  std::vector<edge_t> kept(static_cast<std::size_t>(n) + 1, 0);
  parallel_blocks(n, 1024, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t v = b; v < e; ++v) {
      auto first = src.begin() + ptr[v], last = src.begin() + ptr[v + 1];
      std::sort(first, last);
      kept[v + 1] = std::unique(first, last) - first;
    }
  });
  std::partial_sum(kept.begin(), kept.end(), kept.begin());
  for (node_t v = 0; v < n; ++v)  // compact in place: kept[v] <= ptr[v]
    std::copy(src.begin() + ptr[v], src.begin() + ptr[v] + (kept[v + 1] - kept[v]),
              src.begin() + kept[v]);
  src.resize(static_cast<std::size_t>(kept[n]));
  src.shrink_to_fit();
  return graph_from_csr(n, std::move(kept), std::move(src));
}

}  // namespace

HostGraph rmat(int scale, int edge_factor, double a, double b, double c, std::uint64_t seed) {
  if (scale < 1 || scale > 30) throw Error("rmat: scale must be in [1, 30], got " + std::to_string(scale));
  if (edge_factor < 1) throw Error("rmat: edge_factor must be >= 1, got " + std::to_string(edge_factor));
  // Each of the edge_factor * 2^(scale-1) pairs becomes two edges of the graph's 16 bytes.
  check_host_bytes("rmat: 2^" + std::to_string(scale) + " nodes x edge_factor " + std::to_string(edge_factor),
                   checked_product("rmat: bytes of", {std::uint64_t(edge_factor), std::uint64_t(1) << scale, 16}));
  if (!(a >= 0 && b >= 0 && c >= 0 && a + b + c <= 1))  // NaN fails too
    throw Error("rmat: probabilities a, b, c must be >= 0 with a + b + c <= 1");
  const node_t n = node_t{1} << scale;
  // edge_factor counts directed edges before deduplication (as in anchors.md's rmat-s17-d64):
  // edge_factor * 2^scale / 2 pairs, each stored in both directions.
  const std::int64_t m = static_cast<std::int64_t>(edge_factor) << (scale - 1);
  // Quadrant thresholds on 32-bit uniforms: one 64-bit draw decides two levels.
  const double two32 = 4294967296.0;
  const std::uint64_t ta = static_cast<std::uint64_t>(a * two32),
                      tab = static_cast<std::uint64_t>((a + b) * two32),
                      tabc = static_cast<std::uint64_t>((a + b + c) * two32);
  std::vector<node_t> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  Rng prng(seed, kRmatPerm, 0);
  shuffle(perm, prng);

  std::vector<node_t> eu(static_cast<std::size_t>(m)), ev(static_cast<std::size_t>(m));
  parallel_blocks(m, 1 << 16, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t i = first; i < last; ++i) {
      Rng rng(seed, kRmatEdge, static_cast<std::uint64_t>(i));
      std::uint32_t u = 0, v = 0;
      std::uint64_t bits = 0;
      for (int level = 0; level < scale; ++level) {
        if (level % 2 == 0) bits = rng.next();
        const std::uint64_t r = (level % 2 == 0) ? (bits & 0xffffffffULL) : (bits >> 32);
        const std::uint32_t row = r >= tab, col = (r >= ta && r < tab) || r >= tabc;
        u = (u << 1) | row;
        v = (v << 1) | col;
      }
      eu[i] = perm[u];
      ev[i] = perm[v];
    }
  });
  return undirected_csr(n, std::move(eu), std::move(ev));
}

SbmKind parse_sbm_kind(const std::string& s) {
  const std::string t = lower(s);
  if (t == "pattern") return SbmKind::Pattern;
  if (t == "cluster") return SbmKind::Cluster;
  throw Error("sbm kind must be pattern or cluster, got '" + s + "'");
}

namespace {

/// Community size as randint(5, 35) in numpy: 5..34.
int community_size(Rng& rng) { return 5 + static_cast<int>(rng.below(30)); }

/// Graph `g` of an SBM batch; `pattern` holds the planted pattern's size and its internal
/// upper-triangle adjacency (row-major, p x p), unused for Cluster.
HostGraph sbm_graph(SbmKind kind, std::uint64_t seed, int g, int pattern_size,
                    const std::vector<char>& pattern) {
  Rng rng(seed, kSbmGraph, static_cast<std::uint64_t>(g));
  const bool pat = kind == SbmKind::Pattern;
  const int blocks = pat ? 5 : 6;
  const double p = pat ? 0.5 : 0.55, q = pat ? 0.35 : 0.25, p_link = 0.5;
  std::vector<int> block;  // community of each SBM node
  for (int c = 0; c < blocks; ++c) block.insert(block.end(), community_size(rng), c);
  const int sbm = static_cast<int>(block.size());
  const int n = sbm + (pat ? pattern_size : 0);

  std::vector<node_t> order(static_cast<std::size_t>(n));  // shuffled position of each node
  std::iota(order.begin(), order.end(), 0);
  shuffle(order, rng);

  std::vector<node_t> src, dst;
  auto add = [&](int i, int j) {
    src.push_back(order[i]), dst.push_back(order[j]);
    src.push_back(order[j]), dst.push_back(order[i]);
  };
  for (int i = 0; i < sbm; ++i)
    for (int j = i + 1; j < sbm; ++j)
      if (rng.uniform() < (block[i] == block[j] ? p : q)) add(i, j);
  if (pat) {
    for (int i = 0; i < pattern_size; ++i) {
      for (int j = i + 1; j < pattern_size; ++j)
        if (pattern[static_cast<std::size_t>(i) * pattern_size + j]) add(sbm + i, sbm + j);
      for (int j = 0; j < sbm; ++j)
        if (rng.uniform() < p_link) add(sbm + i, j);
    }
  }
  return graph_from_edges(n, src, dst);
}

}  // namespace

HostGraph sbm_batch(SbmKind kind, int graphs, std::uint64_t seed) {
  if (graphs < 1) throw Error("sbm_batch: graphs must be >= 1, got " + std::to_string(graphs));
  if (kind != SbmKind::Pattern && kind != SbmKind::Cluster)
    throw Error("sbm_batch: kind " + std::to_string(int(kind)) + " is none of the enum's values");
  constexpr int kGraphsPerPattern = 100;
  std::vector<HostGraph> parts(static_cast<std::size_t>(graphs));
  parallel_blocks(graphs, kGraphsPerPattern, [&](std::int64_t first, std::int64_t last) {
    // Blocks are aligned to pattern instances, so each block draws its pattern once.
    Rng prng(seed, kSbmPattern, static_cast<std::uint64_t>(first / kGraphsPerPattern));
    const int ps = community_size(prng);
    std::vector<char> pattern(static_cast<std::size_t>(ps) * ps, 0);
    for (int i = 0; i < ps; ++i)
      for (int j = i + 1; j < ps; ++j) pattern[static_cast<std::size_t>(i) * ps + j] = prng.uniform() < 0.5;
    for (std::int64_t g = first; g < last; ++g)
      parts[g] = sbm_graph(kind, seed, static_cast<int>(g), ps, pattern);
  });
  return batch_graphs(parts);
}

namespace {

HostGraph knn_graph(std::uint64_t seed, int g, int k) {
  Rng rng(seed, kKnnGraph, static_cast<std::uint64_t>(g));
  const int n = 40 + static_cast<int>(rng.below(36));  // 40..75 nodes
  std::vector<double> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = rng.uniform(), y[i] = rng.uniform();

  std::vector<double> d(static_cast<std::size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) d[i * n + j] = std::hypot(x[i] - x[j], y[i] - y[j]);
  // sigma_i: mean distance to the 8 nearest other nodes (the recipe's fixed 8, whatever k).
  std::vector<double> sigma(n);
  std::vector<double> row;
  for (int i = 0; i < n; ++i) {
    row.clear();
    for (int j = 0; j < n; ++j)
      if (j != i) row.push_back(d[i * n + j]);
    const int m = std::min<int>(8, static_cast<int>(row.size()));
    std::partial_sort(row.begin(), row.begin() + m, row.end());
    sigma[i] = std::accumulate(row.begin(), row.begin() + m, 0.0) / m;
  }
  auto affinity = [&](int i, int j) {
    const double ri = d[i * n + j] / sigma[i], rj = d[i * n + j] / sigma[j];
    return 0.5 * (std::exp(-ri * ri) + std::exp(-rj * rj));
  };

  std::vector<node_t> src, dst;
  std::vector<int> cand;
  for (int v = 0; v < n; ++v) {
    cand.clear();
    for (int u = 0; u < n; ++u)
      if (u != v) cand.push_back(u);
    if (n - 1 > k) {  // not n > k + 1: k may be INT_MAX
      std::vector<double> a(n);
      for (int u : cand) a[u] = affinity(u, v);
      std::partial_sort(cand.begin(), cand.begin() + k, cand.end(),
                        [&](int p, int q) { return a[p] != a[q] ? a[p] > a[q] : p < q; });
      cand.resize(k);
    }
    for (int u : cand) src.push_back(u), dst.push_back(v);
  }
  return graph_from_edges(n, src, dst);
}

}  // namespace

HostGraph knn_batch(int graphs, int k, std::uint64_t seed) {
  if (graphs < 1) throw Error("knn_batch: graphs must be >= 1, got " + std::to_string(graphs));
  if (k < 1) throw Error("knn_batch: k must be >= 1, got " + std::to_string(k));
  std::vector<HostGraph> parts(static_cast<std::size_t>(graphs));
  parallel_blocks(graphs, 64, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t g = first; g < last; ++g) parts[g] = knn_graph(seed, static_cast<int>(g), k);
  });
  return batch_graphs(parts);
}

namespace {

/// Sink for plain or gzip output with a large formatting buffer.
class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path) {
    const bool gz = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
    if (gz)
      gz_ = gzopen(path.c_str(), "wb1");  // level 1: large graphs compress ~4x at disk speed
    else
      file_ = std::fopen(path.c_str(), "wb");
    if (!gz_ && !file_) throw Error(path + ": cannot open for writing");
    buf_.reserve(kFlush + 64);
  }
  ~Writer() {
    if (gz_) gzclose(gz_);
    if (file_) std::fclose(file_);
  }
  void text(const std::string& s) {
    buf_ += s;
    maybe_flush();
  }
  void number(std::int64_t x) {
    char tmp[24];
    buf_.append(tmp, std::to_chars(tmp, tmp + sizeof tmp, x).ptr);
  }
  void ch(char c) {
    buf_ += c;
    maybe_flush();
  }
  void close() {
    flush();
    const bool bad = gz_ ? gzclose(gz_) != Z_OK : std::fclose(file_) != 0;
    gz_ = nullptr;
    file_ = nullptr;
    if (bad) throw Error(path_ + ": write failed");
  }

 private:
  static constexpr std::size_t kFlush = 1 << 20;
  void maybe_flush() {
    if (buf_.size() >= kFlush) flush();
  }
  void flush() {
    if (buf_.empty()) return;
    const bool ok = gz_ ? gzwrite(gz_, buf_.data(), static_cast<unsigned>(buf_.size())) ==
                              static_cast<int>(buf_.size())
                        : std::fwrite(buf_.data(), 1, buf_.size(), file_) == buf_.size();
    if (!ok) throw Error(path_ + ": write failed");
    buf_.clear();
  }
  std::string path_;
  gzFile gz_ = nullptr;
  std::FILE* file_ = nullptr;
  std::string buf_;
};

}  // namespace

void write_edge_list(const std::string& path, const HostGraph& g, const std::string& comment) {
  validate(g);
  if (g.bipartite()) throw Error("write_edge_list: the graph is bipartite; the edge-list format holds one node set");
  Writer w(path);
  w.text("# dfgnn edge list: one 'u v' line per directed edge u -> v, 0-based ids\n");
  if (!comment.empty()) {
    std::size_t start = 0;
    while (start < comment.size()) {
      const std::size_t end = std::min(comment.find('\n', start), comment.size());
      w.text("# " + comment.substr(start, end - start) + "\n");
      start = end + 1;
    }
  }
  w.text("# nodes " + std::to_string(g.num_nodes) + "\n");
  w.text("# edges " + std::to_string(g.num_edges()) + "\n");
  if (!g.graph_ptr.empty()) {
    w.text("# graph_ptr");
    for (node_t o : g.graph_ptr) w.ch(' '), w.number(o);
    w.ch('\n');
  }
  for (edge_t e = 0; e < g.num_edges(); ++e) {
    w.number(g.src[e]);
    w.ch(' ');
    w.number(g.dst[e]);
    w.ch('\n');
  }
  w.close();
}

}  // namespace dfgnn::gen
