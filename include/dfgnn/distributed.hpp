#pragma once
/// \file distributed.hpp
/// Attention over several ranks on Kokkos (docs/distributed.md): each rank owns a partition's
/// destination rows, and its calls take and return those rows only. A forward fills the halo
/// (the remote source rows its rows read) by one all-to-all-v per source-side argument and runs
/// the rank's rows as one bipartite call over [its rows | its halo]; a backward sends the halo
/// rows' gradients back to their owners, which add them in rank order, so results are
/// reproducible for a given partition.
///
/// \code
///   dfgnn::MpiTransport comm(MPI_COMM_WORLD);                                 // mpi.hpp
///   dfgnn::DistributedPlan<Exec, dfgnn::MpiTransport> plan(exec, comm, g, {}, dfgnn::ScoreKind::GT, H, D);
///   // Q, K, V, out: this rank's rows [plan.num_rows(), H, D], the whole graph's rows plan.share().rows
///   dfgnn::attention(exec, plan, dfgnn::GT{}, dfgnn::tensors(Q, K, V), out);
/// \endcode
///
/// A transport is the communication engine the exchanges run on (MpiTransport). Its calls are
/// collective, made by every rank in the same order:
///
///   using memory_space = ...;  // where the buffers it is given live (staged there if the plan's are not)
///   int rank() const;
///   int ranks() const;
///   // Rows of row_bytes each: send_counts[p] rows to rank p, recv_counts[p] from it, packed in rank order.
///   void all_to_all(const void* send, const std::vector<node_t>& send_counts, void* recv,
///                   const std::vector<node_t>& recv_counts, std::size_t row_bytes) const;
///   // `bytes` of host memory from every rank, in rank order (the plan's agreement, parameter gradients).
///   void all_gather(const void* mine, void* all, std::size_t bytes) const;

#include <dfgnn/backward.hpp>
#include <dfgnn/partition.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dfgnn {

namespace detail {

/// Every rank's string, in rank order: the lengths, then the strings padded to the longest.
template <class Transport>
std::vector<std::string> all_gather_strings(const Transport& t, const std::string& mine) {
  const std::uint64_t length = mine.size();
  std::vector<std::uint64_t> lengths(std::size_t(t.ranks()));
  t.all_gather(&length, lengths.data(), sizeof length);
  std::size_t longest = 0;
  for (std::uint64_t n : lengths) longest = std::max(longest, std::size_t(n));
  std::vector<std::string> all(lengths.size());
  if (longest == 0) return all;
  std::string padded = mine;
  padded.resize(longest);
  std::string text(longest * lengths.size(), '\0');
  t.all_gather(padded.data(), text.data(), longest);
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = text.substr(r * longest, std::size_t(lengths[r]));
  return all;
}

}  // namespace detail

/// A rank's part of destination-partitioned attention: its share of the graph and the exchange
/// plan (partition.hpp's RankGraph), the plan of its local bipartite call, and the buffers of
/// the [rows | halo] source-side tensors. Built collectively once per graph, reused by every
/// call; a call and its plan run on one transport's ranks together.
template <class Exec, class Transport>
class DistributedPlan {
 public:
  using memory_space = typename Exec::memory_space;

  /// Collective. Every rank passes the whole graph `g` and the same partition vector `owner`
  /// (one rank in [0, ranks) per node; empty: partition_by_edges over the transport's ranks).
  /// Bad input on any rank (a partition vector of the wrong length or with a rank out of range,
  /// an op the kernels refuse, AGNN) and ranks that disagree on the graph, the partition or the
  /// op throw the same Error on every rank, naming the first rank that has the problem.
  DistributedPlan(const Exec& exec, Transport transport, const HostGraph& g, std::vector<int> owner, ScoreKind kind,
                  int heads, int dim, Strategy strategy = Strategy::Auto)
      : transport_(std::move(transport)) {
    std::uint64_t digest[3] = {std::uint64_t(g.num_nodes), std::uint64_t(g.num_edges()), 0};
    build(exec, kind, heads, dim, strategy, digest, [&] {
      const int P = transport_.ranks();
      const Partition p = owner.empty() ? partition_by_edges(g, P) : partition_from(g, P, std::move(owner));
      share_ = rank_graph(g, p, transport_.rank());
      return fingerprint(g, p);
    });
    upload_share();
  }

  /// Collective, with no rank holding the whole graph: each rank passes its rows' in-edges
  /// (edge i: src[i] -> dst[i], every dst one of its nodes; edge_ids[i] its index in the whole
  /// graph's edge order, the dropout's counter) and every rank the same partition vector of
  /// `num_nodes` nodes. The ranks tell each other which of their rows the halos read (two
  /// all-to-alls). Bad input (an edge into another rank's node, a node id or partition entry out
  /// of range) and ranks that disagree on num_nodes, the partition or the op throw the same
  /// Error on every rank, naming the first rank with the problem. The edge tensors of the calls
  /// are in the order the edges come here.
  DistributedPlan(const Exec& exec, Transport transport, node_t num_nodes, const std::vector<node_t>& src,
                  const std::vector<node_t>& dst, std::vector<edge_t> edge_ids, std::vector<int> owner,
                  ScoreKind kind, int heads, int dim, Strategy strategy = Strategy::Auto)
      : transport_(std::move(transport)) {
    std::uint64_t digest[3] = {std::uint64_t(num_nodes), 0, 0};  // the ranks' edges differ
    build(exec, kind, heads, dim, strategy, digest, [&] {
      const Partition p = partition_from(num_nodes, transport_.ranks(), std::move(owner));
      share_ = rank_graph_from_edges(p, transport_.rank(), src, dst, std::move(edge_ids));
      return fingerprint(HostGraph{}, p);  // the partition alone: the ranks' edges differ
    });
    // What each peer's halo holds of this rank's rows: the counts, then the ids.
    const std::vector<node_t> recv = counts(share_.recv_ptr);
    std::vector<node_t> send(recv.size()), ones(recv.size(), 1);
    transport_.all_to_all(recv.data(), ones, send.data(), ones, sizeof(node_t));
    std::size_t total = 0;
    for (node_t c : send) total += std::size_t(c);
    std::vector<node_t> ids(total);
    transport_.all_to_all(share_.halo.data(), recv, ids.data(), send, sizeof(node_t));
    set_sends(share_, send, ids);
    upload_share();
  }

  const Transport& transport() const { return transport_; }
  /// The rank's share: its rows, halo, local graph, edge ids and exchange plan.
  const RankGraph& share() const { return share_; }
  /// The plan of the rank's local bipartite call.
  const Plan<Exec>& local() const { return *local_; }
  const Op& op() const { return local_->op(); }
  node_t num_rows() const { return share_.num_rows(); }

  /// The options of the local call: dropout draws the whole graph's mask, by the global ids of
  /// this rank's edges.
  Options<memory_space> local_options(const Options<memory_space>& o) const {
    Options<memory_space> r = o;
    r.dropout.counter = edge_ids_.data();
    return r;
  }

  /// The local call's inputs: each source-side argument of `inputs` (this rank's rows) copied
  /// into its [rows | halo] buffer, the halo from the peers; the others as given.
  Tensors gather_sources(const char* who, const Exec& exec, const ModelArgs& args, const Tensors& inputs) const {
    Tensors local = inputs;
    for (int i = 0; i < inputs.count && i < args.count; ++i) {
      if (!source_rows(args.inputs[i].extent)) continue;
      const std::size_t width = row_width(args.inputs[i].extent), n = std::size_t(num_rows());
      const Flat mine = rows_of(who, args.inputs[i].name, inputs.refs[i], width);
      const Flat all = buffer(sources_[i], std::size_t(share_.graph.num_src_nodes) * width);
      Kokkos::deep_copy(exec, Flat(all.data(), n * width), mine);
      const Flat packed = buffer(packed_, std::size_t(share_.send_rows.size()) * width);
      const auto rows = send_rows_;
      Kokkos::parallel_for(
          "dfgnn::pack_halo", Kokkos::RangePolicy<Exec>(exec, 0, packed.size()),
          KOKKOS_LAMBDA(std::size_t k) { packed(k) = mine(std::size_t(rows(k / width)) * width + k % width); });
      exchange(exec, packed, counts(share_.send_ptr), Flat(all.data() + n * width, all.size() - n * width),
               counts(share_.recv_ptr), width);
      local.refs[i] = TensorRef::shaped(all.data(), op(), args.inputs[i].extent);
    }
    return local;
  }

  /// The local call's gradients: the [rows | halo] buffer of each source-side argument's
  /// gradient, the others (the caller's) as given.
  Tensors source_gradients(const char* who, const ModelArgs& args, const Tensors& grads) const {
    Tensors local = grads;
    for (int i = 0; i < grads.count && i < args.count; ++i) {
      if (!source_rows(args.inputs[i].extent)) continue;
      const std::size_t width = row_width(args.inputs[i].extent);
      rows_of(who, args.gradients[i], grads.refs[i], width);
      const Flat all = buffer(source_grads_[i], std::size_t(share_.graph.num_src_nodes) * width);
      local.refs[i] = TensorRef::shaped(all.data(), op(), args.inputs[i].extent);
    }
    return local;
  }

  /// After the local backward: each source-side gradient's halo rows go back to their owners,
  /// which add them to their rows' in rank order (each peer's rows distinct, so a peer's part
  /// adds in parallel); a head argument's gradient (GATv2's da) becomes the sum of every rank's
  /// share, in rank order, on every rank.
  void return_gradients(const Exec& exec, const ModelArgs& args, const Tensors& grads) const {
    for (int i = 0; i < grads.count && i < args.count; ++i) {
      const Extent x = args.inputs[i].extent;
      if (x == Extent::HeadFeatures) sum_over_ranks(exec, grads.refs[i]);
      if (!source_rows(x)) continue;
      const std::size_t width = row_width(x), n = std::size_t(num_rows());
      const Flat all(source_grads_[i].data(), std::size_t(share_.graph.num_src_nodes) * width);
      const Flat mine(static_cast<float*>(const_cast<void*>(grads.refs[i].data)), n * width);
      const Flat returned = buffer(packed_, std::size_t(share_.send_rows.size()) * width);
      exchange(exec, Flat(all.data() + n * width, all.size() - n * width), counts(share_.recv_ptr), returned,
               counts(share_.send_ptr), width);
      Kokkos::deep_copy(exec, mine, Flat(all.data(), n * width));
      const auto rows = send_rows_;
      for (int q = 0; q < share_.ranks; ++q)  // in rank order: the same sums on every run
        Kokkos::parallel_for(
            "dfgnn::add_returned",
            Kokkos::RangePolicy<Exec>(exec, std::size_t(share_.send_ptr[std::size_t(q)]) * width,
                                      std::size_t(share_.send_ptr[std::size_t(q) + 1]) * width),
            KOKKOS_LAMBDA(std::size_t k) { mine(std::size_t(rows(k / width)) * width + k % width) += returned(k); });
    }
  }

 private:
  using Flat = Kokkos::View<float*, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Owned = Kokkos::View<float*, memory_space>;

  /// Entries per row of an argument of extent x.
  std::size_t row_width(Extent x) const { return row_entries(x, std::size_t(op().heads), std::size_t(op().dim)); }

  /// A caller's tensor of this rank's rows as a flat View: Error naming it unless it is a dense
  /// float32 tensor of num_rows() rows of `width`.
  Flat rows_of(const char* who, const char* name, const TensorRef& t, std::size_t width) const {
    const std::size_t n = std::size_t(num_rows());
    if (t.dtype != DType::F32 || t.strided || t.entries() != n * width || (t.data == nullptr && n * width != 0))
      throw Error(std::string(who) + ": " + name + " must be this rank's " + std::to_string(n) + " rows of " +
                  std::to_string(width) + " dense float32 entries, got " + std::to_string(t.entries()) + " entries" +
                  (t.strided ? " (strided)" : "") + (t.dtype != DType::F32 ? " of another type" : ""));
    return Flat(static_cast<float*>(const_cast<void*>(t.data)), n * width);
  }

  /// A workspace of at least `entries` (grown, never shrunk), as a flat View of exactly that many.
  static Flat buffer(Owned& owned, std::size_t entries) {
    if (owned.size() < entries) owned = Owned(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dfgnn::halo"), entries);
    return Flat(owned.data(), entries);
  }

  /// Rows per peer of an exchange plan's pointer array.
  static std::vector<node_t> counts(const std::vector<node_t>& ptr) {
    std::vector<node_t> c(ptr.size() - 1);
    for (std::size_t p = 0; p + 1 < ptr.size(); ++p) c[p] = ptr[p + 1] - ptr[p];
    return c;
  }

  /// One all-to-all-v of rows of `width` floats, staged through the transport's memory space
  /// when it cannot reach the plan's.
  void exchange(const Exec& exec, const Flat& send, const std::vector<node_t>& send_counts, const Flat& recv,
                const std::vector<node_t>& recv_counts, std::size_t width) const {
    using Space = typename Transport::memory_space;
    exec.fence();
    if constexpr (Kokkos::SpaceAccessibility<Space, memory_space>::accessible) {
      transport_.all_to_all(send.data(), send_counts, recv.data(), recv_counts, width * sizeof(float));
    } else {
      const auto s = Kokkos::create_mirror_view_and_copy(Space(), send);
      const auto r = Kokkos::create_mirror_view(Space(), recv);
      transport_.all_to_all(s.data(), send_counts, r.data(), recv_counts, width * sizeof(float));
      Kokkos::deep_copy(exec, recv, r);
      exec.fence();  // `r` goes out of scope
    }
  }

  /// t (a rank's share of a replicated parameter's gradient) := the sum over ranks, in rank order.
  void sum_over_ranks(const Exec& exec, const TensorRef& t) const {
    const std::size_t n = t.entries();
    const Flat mine(static_cast<float*>(const_cast<void*>(t.data)), n);
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), mine);
    std::vector<float> all(n * std::size_t(transport_.ranks()));
    transport_.all_gather(host.data(), all.data(), n * sizeof(float));
    for (std::size_t k = 0; k < n; ++k) {
      float sum = 0.0f;
      for (int r = 0; r < transport_.ranks(); ++r) sum += all[std::size_t(r) * n + k];
      host(k) = sum;
    }
    Kokkos::deep_copy(exec, mine, host);
    exec.fence();  // `host` goes out of scope
  }

  /// The constructors' common part: `share` (which sets share_ and returns the fingerprint of
  /// the graph and partition), the local plan, and the agreement on them.
  template <class Share>
  void build(const Exec& exec, ScoreKind kind, int heads, int dim, Strategy strategy, std::uint64_t (&digest)[3],
             const Share& share) {
    std::string problem;
    try {
      if (kind == ScoreKind::AGNN)
        throw Error("AGNN has no distributed form: its one x is both sides of a rank's bipartite call, which the "
                    "kernels refuse");
      digest[2] = share() ^ (std::uint64_t(kind) << 56) ^ (std::uint64_t(heads) << 32) ^ std::uint64_t(dim);
      local_.emplace(exec, Graph<memory_space>(share_.graph), kind, heads, dim, strategy);
    } catch (const Error& e) {
      problem = e.what();
    }
    agree(problem, digest);
  }

  /// The share's arrays that the calls read on the device.
  void upload_share() {
    send_rows_ = detail::upload<node_t, memory_space>("dfgnn::send_rows", share_.send_rows);
    edge_ids_ = detail::upload<edge_t, memory_space>("dfgnn::edge_ids", share_.edge_ids);
  }

  /// The constructor's agreement: one all-gather of each rank's problem and one of its
  /// (nodes, edges, digest), then the same Error on every rank if any has a problem or they differ.
  void agree(const std::string& problem, const std::uint64_t (&digest)[3]) const {
    const std::vector<std::string> problems = detail::all_gather_strings(transport_, problem);
    for (std::size_t r = 0; r < problems.size(); ++r)
      if (!problems[r].empty()) throw Error("distributed plan: rank " + std::to_string(r) + ": " + problems[r]);
    std::vector<std::uint64_t> all(3 * problems.size());
    transport_.all_gather(digest, all.data(), sizeof digest);
    for (std::size_t r = 1; r < problems.size(); ++r) {
      const std::uint64_t* d = &all[3 * r];
      if (d[0] != all[0] || d[1] != all[1])  // (edge counts: 0 on every rank when the ranks' edges differ)
        throw Error("distributed plan: the ranks disagree on the graph: rank 0 has " + std::to_string(all[0]) +
                    " nodes" + (d[1] || all[1] ? " and " + std::to_string(all[1]) + " edges" : std::string()) +
                    ", rank " + std::to_string(r) + " " + std::to_string(d[0]) +
                    (d[1] || all[1] ? " and " + std::to_string(d[1]) : std::string()));
      if (d[2] != all[2])
        throw Error("distributed plan: rank " + std::to_string(r) +
                    " passed another graph, partition, model, heads or dim than rank 0");
    }
  }

  Transport transport_;
  RankGraph share_;
  std::optional<Plan<Exec>> local_;
  Kokkos::View<const node_t*, memory_space> send_rows_;
  Kokkos::View<const edge_t*, memory_space> edge_ids_;  ///< share_.edge_ids: the dropout counter
  /// Per model argument: its [rows | halo] (forward) and its gradient's (backward); the packed
  /// rows an exchange sends or receives.
  mutable Owned sources_[3], source_grads_[3], packed_;
};

/// Forward on a distributed plan: every tensor holds this rank's rows (source-side ones too:
/// the call gathers the halo), the edge tensors (Options' edge values and attention weights,
/// the edge argument) its share's edges in `share().edge_ids` order. Dropout draws its part of
/// one call's mask on the whole graph (the options' dropout counter is the plan's).
template <class Exec, class Transport, class Model>
void attention(const Exec& exec, const DistributedPlan<Exec, Transport>& plan, const Model& model,
               const Tensors& inputs, const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {}) {
  attention(exec, plan.local(), model, plan.gather_sources("attention", exec, Model::args, inputs), out,
            plan.local_options(options));
}

/// Backward on a distributed plan, with the forward's inputs, options, out and logsumexp (this
/// rank's rows): writes this rank's rows of every gradient, its source-side ones with the
/// peers' contributions added, and the whole sum of a head argument's gradient (GATv2's da) on
/// every rank. The halo is gathered again (another call may have used the plan's buffers since
/// the forward).
template <class Exec, class Transport, class Model>
void attention_backward(const Exec& exec, const DistributedPlan<Exec, Transport>& plan, const Model& model,
                        const Tensors& inputs, const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut, const Tensors& grads,
                        const Options<typename Exec::memory_space>& options = {}) {
  const char* who = "attention_backward";
  attention_backward(exec, plan.local(), model, plan.gather_sources(who, exec, Model::args, inputs), out, logsumexp,
                     dOut, plan.source_gradients(who, Model::args, grads), plan.local_options(options));
  plan.return_gradients(exec, Model::args, grads);
}

}  // namespace dfgnn
