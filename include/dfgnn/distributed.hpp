#pragma once
/// \file distributed.hpp
/// Attention over several ranks on Kokkos (docs/distributed.md): each rank owns a partition's
/// destination rows, and its calls take and return those rows only. A forward starts the
/// exchange of the halo (the remote source rows its rows read), runs its edges from its own
/// rows meanwhile, then those from the halo, and merges the two softmaxes by their logsumexps
/// (or, built with overlap = false, runs all its edges in one call after the exchange); a
/// backward sends the halo rows' gradients back to their owners, which add them in rank order,
/// so results are reproducible for a given partition.
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
///   // Rows of row_bytes each: send_counts[p] rows to rank p, recv_counts[p] from it, packed in
///   // rank order; begun here and ended by the Pending's wait() (pending.hpp) or its destructor,
///   // the buffers untouched until then. all_to_all: the same, ended before it returns.
///   Pending start_all_to_all(const void* send, const std::vector<node_t>& send_counts, void* recv,
///                            const std::vector<node_t>& recv_counts, std::size_t row_bytes) const;
///   void all_to_all(const void* send, const std::vector<node_t>& send_counts, void* recv,
///                   const std::vector<node_t>& recv_counts, std::size_t row_bytes) const;
///   // `bytes` of host memory from every rank, in rank order (the plan's agreement, parameter gradients).
///   void all_gather(const void* mine, void* all, std::size_t bytes) const;

#include <dfgnn/backward.hpp>
#include <dfgnn/detail/kokkos_math.hpp>
#include <dfgnn/detail/kokkos_range.hpp>
#include <dfgnn/partition.hpp>
#include <dfgnn/detail/pending.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
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
/// plan (partition.hpp's RankGraph), the plans of its two local calls (SourceSplit: the edges
/// from its own rows, which run while the halo travels, and those from the halo), and the
/// calls' workspaces. Built collectively once per graph, reused by every call; a call and its
/// plan run on one transport's ranks together.
///
/// overlap = false: one local call over all the rank's edges, [rows | halo] its sources, after
/// the exchange. It saves the second call and the merge where the exchange exceeds the work it
/// would hide, and sums each row's destination-side gradient in one walk as one process does
/// (docs/distributed.md). Every rank must pass the same.
template <class Exec, class Transport>
class DistributedPlan {
 public:
  using memory_space = typename Exec::memory_space;

  /// Collective. Every rank passes the whole graph `g` and the same partition vector `owner`
  /// (one rank in [0, ranks) per node; empty: partition_by_edges over the transport's ranks).
  /// Bad input on any rank (a partition vector of the wrong length or with a rank out of range,
  /// an op the kernels refuse) and ranks that disagree on the graph, the partition or the
  /// op throw the same Error on every rank, naming the first rank that has the problem.
  DistributedPlan(const Exec& exec, Transport transport, const HostGraph& g, std::vector<int> owner, ScoreKind kind,
                  int heads, int dim, Strategy strategy = Strategy::Auto, bool overlap = true)
      : transport_(std::move(transport)), overlap_(overlap) {
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
                  ScoreKind kind, int heads, int dim, Strategy strategy = Strategy::Auto, bool overlap = true)
      : transport_(std::move(transport)), overlap_(overlap) {
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
  /// Whether its calls run split in two (the exchange behind the first) or as one.
  bool overlap() const { return overlap_; }
  /// The plans of its local calls. Split: the edges from its own rows (rows x rows), then those
  /// from its halo (halo x rows). In one call, inner() takes all its edges ([rows | halo] x
  /// rows) and there is no outer().
  const Plan<Exec>& inner() const { return *parts_[0].plan; }
  const Plan<Exec>& outer() const { return *parts_[1].plan; }
  /// The rank's op: its rows the destinations, [rows | halo] the sources, its edges.
  const Op& op() const { return op_; }
  node_t num_rows() const { return share_.num_rows(); }

  /// The forward (attention below). Every call of the transport, begun and ended, comes in the
  /// same order on every rank.
  template <class Model>
  void forward(const Exec& exec, const Model& model, const Tensors& given, const NodeOutput<memory_space>& out,
               const Options<memory_space>& options) const {
    const char* who = "attention";
    const ModelArgs& args = Model::args;
    const std::size_t n = std::size_t(num_rows()), H = std::size_t(op_.heads), D = std::size_t(op_.dim);
    // The outputs the merge writes, checked before any exchange begins.
    if (options.logsumexp.data()) rows_of(who, "logsumexp", detail::tensor_ref(options.logsumexp), H);
    const bool weights = options.attention_weights.data() != nullptr;
    if (weights) edge_rows_of(who, "attention weights", detail::tensor_ref(options.attention_weights), H);
    const Tensors inputs = with_stand_ins(who, args, given);
    std::vector<Travelling> travelling;
    const Tensors halo_inputs = start_halo(who, exec, args, inputs, travelling);
    if (!overlap_) {  // all the rank's edges in one call, once the halo is in
      Options<memory_space> o = part_options(who, exec, 0, options, travelling);
      o.logsumexp = options.logsumexp, o.attention_weights = options.attention_weights;
      attention(exec, halo_call(), model, part_inputs(who, exec, 0, args, halo_inputs), out, o);
      return;
    }
    const Flat lse_parts = buffer(lse_parts_, 2 * n * H);
    for (int k = 0; k < 2; ++k) {
      const Part& part = parts_[k];
      Options<memory_space> o = part_options(who, exec, k, options, travelling);
      o.logsumexp = Scalars(lse_parts.data() + std::size_t(k) * n * H, n, H);
      if (weights) o.attention_weights = Scalars(buffer(part.weights, std::size_t(part.edges.size()) * H).data(),
                                                 part.edges.size(), H);
      const NodeOutput<memory_space> part_out =
          k == 0 ? out : NodeOutput<memory_space>(buffer(outer_out_, n * H * D).data(), n, H, D);
      attention(exec, *part.plan, model, part_inputs(who, exec, k, args, k == 0 ? inputs : halo_inputs), part_out,
                o);
    }
    const Scalars lse = options.logsumexp.data() ? options.logsumexp : Scalars(buffer(lse_, n * H).data(), n, H);
    merge(exec, out, lse, lse_parts);
    if (weights) scatter_weights(exec, lse, lse_parts, options.attention_weights);
  }

  /// The backward (attention_backward below): the halo travels while the inner edges' backward
  /// runs; the outer edges' backward (in one call, the call's) then gives the halo rows'
  /// gradients, which go back to their owners and are added in rank order there.
  template <class Model>
  void backward(const Exec& exec, const Model& model, const Tensors& given, const NodeFeatures<memory_space>& out,
                const NodeScalars<memory_space>& logsumexp, const NodeFeatures<memory_space>& dOut,
                const Tensors& given_grads, const Options<memory_space>& options) const {
    const char* who = "attention_backward";
    const ModelArgs& args = Model::args;
    const Tensors inputs = with_stand_ins(who, args, given);
    // The gradient of an argument the call leaves out: a workspace of this rank's rows, added to
    // its stand-in's gradient at the end.
    Tensors grads = given_grads;
    for (int i = 0; i < args.count; ++i) {
      if (!left_out(args, given, i)) continue;
      if (i < grads.count && grads.refs[i].given())
        throw Error(std::string(who) + ": " + args.gradients[i] + " was passed without " + args.inputs[i].name);
      grads.refs[i] = inputs.refs[i];
      grads.refs[i].data = buffer(stood_in_[i], inputs.refs[i].entries()).data();
      grads.count = std::max(grads.count, i + 1);
    }
    // Every gradient of this rank's rows or edges, checked before any work as the forward checks
    // its outputs: in one call a source-side one is only written after the halo call, from its
    // workspace. (A head argument's goes to the calls as given, whose check it passes first.)
    Flat mine[3];
    for (int i = 0; i < args.count && i < grads.count; ++i) {
      const Extent x = args.inputs[i].extent;
      mine[i] = head_argument(x)
                    ? Flat(static_cast<float*>(const_cast<void*>(grads.refs[i].data)), inputs.refs[i].entries())
                    : rows_of(who, args.gradients[i], grads.refs[i], row_width(x));
    }
    const Flat edge_grad = grads.count > args.count ? edge_rows_of(who, args.edge_gradient, grads.refs[args.count],
                                                                   row_width(args.edge.extent))
                                                    : Flat();
    // The halo call's gradients: workspaces, all of them split (the outer call's), the
    // source-side ones in one call (its [rows | halo]).
    Tensors halo_grads = grads;
    for (int i = 0; i < args.count && i < grads.count; ++i) {
      const Extent x = args.inputs[i].extent;
      if (overlap_ || source_rows(x))
        halo_grads.refs[i] = TensorRef::shaped(buffer(part_grads_[i], entries(inputs.refs[i], x, true)).data(),
                                               halo_call().op(), x, inputs.refs[i].entries());
    }
    std::vector<Travelling> travelling;
    const Tensors halo_inputs = start_halo(who, exec, args, inputs, travelling);
    for (int k = 0; k < calls(); ++k) {
      const Part& part = parts_[k];
      const Options<memory_space> o = part_options(who, exec, k, options, travelling);
      Tensors g = k < calls() - 1 ? grads : halo_grads;
      if (grads.count > args.count)  // the edge argument's gradient: this call's edges, scattered below
        g.refs[args.count] = TensorRef::shaped(
            buffer(part.edge_grad, part.edges.size() * row_width(args.edge.extent)).data(), part.plan->op(),
            args.edge.extent);
      attention_backward(exec, *part.plan, model,
                         part_inputs(who, exec, k, args, k < calls() - 1 ? inputs : halo_inputs), out, logsumexp,
                         dOut, g, o);
    }
    for (int i = 0; i < args.count && i < grads.count; ++i) {
      const Extent x = args.inputs[i].extent;
      const Flat grad = mine[i];
      // The halo call's workspace (none in one call for a destination or head argument).
      const Flat theirs(part_grads_[i].data(), overlap_ || source_rows(x) ? entries(inputs.refs[i], x, true) : 0);
      if (source_rows(x)) {  // its halo rows back to their owners; in one call its own rows first
        const std::size_t own = own_sources() * row_width(x);
        if (own)
          Kokkos::deep_copy(exec, grad, Kokkos::subview(theirs, std::pair<std::size_t, std::size_t>(0, own)));
        return_halo(exec, Flat(theirs.data() + own, theirs.size() - own), grad, row_width(x), i);
        continue;
      }
      if (overlap_)  // the outer call's part
        Kokkos::parallel_for(
            "dfgnn::add_outer", kokkos_impl::Range<Exec>(exec, 0, grad.size()),
            KOKKOS_LAMBDA(std::size_t e) { grad(e) += theirs(e); });
      if (head_argument(x)) sum_over_ranks(exec, grads.refs[i]);
    }
    for (int i = 0; i < args.count; ++i) {  // a left-out argument's gradient on its stand-in's
      if (!left_out(args, given, i)) continue;
      const Flat to = mine[args.inputs[i].stand_in], from = mine[i];
      Kokkos::parallel_for(
          "dfgnn::add_stood_in", kokkos_impl::Range<Exec>(exec, 0, to.size()),
          KOKKOS_LAMBDA(std::size_t k) { to(k) += from(k); });
    }
    if (grads.count > args.count) scatter_edge_grads(exec, args, edge_grad);
  }

 private:
  using Flat = Kokkos::View<float*, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Owned = Kokkos::View<float*, memory_space>;
  using Scalars = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using Positions = Kokkos::View<const edge_t*, memory_space>;

  /// One local call: its plan, its edges' positions in the rank's edge order, their global ids
  /// (the dropout's counter), and its workspaces of edge tensors.
  struct Part {
    std::optional<Plan<Exec>> plan;
    Positions edges, ids;
    mutable Owned edge_values, edge_argument, weights, edge_grad;
  };

  /// An exchange begun, staged through the transport's memory space when that cannot reach the
  /// plan's: finish() ends it and puts what arrived in `recv`.
  struct Travelling {
    Pending pending;
    Flat recv;
    Kokkos::View<float*, typename Transport::memory_space> staged_send, staged_recv;

    void finish(const Exec& exec) {
      pending.wait();
      if (staged_recv.data()) {
        Kokkos::deep_copy(exec, recv, staged_recv);
        exec.fence();  // the staging Views go with this object
      }
    }
  };

  /// Entries per row of an argument of extent x.
  std::size_t row_width(Extent x) const { return row_entries(x, std::size_t(op_.heads), std::size_t(op_.dim)); }
  /// The local calls: 2 split, 1 in one call.
  int calls() const { return overlap_ ? 2 : 1; }
  /// The call that reads the halo: split the outer one, else the one call.
  const Plan<Exec>& halo_call() const { return *parts_[calls() - 1].plan; }
  /// Rows of the halo call's source-side arguments before their halo rows: 0 split, this rank's
  /// rows in one call.
  std::size_t own_sources() const { return overlap_ ? 0 : std::size_t(num_rows()); }

  /// Entries of argument t of extent x in this rank's rows or in the halo call (`halo`: its
  /// source-side arguments hold own_sources() rows, then the halo); a head argument's all of t.
  std::size_t entries(const TensorRef& t, Extent x, bool halo) const {
    if (head_argument(x)) return t.entries();
    const std::size_t rows = halo && source_rows(x) ? own_sources() + share_.num_halo() : std::size_t(num_rows());
    return rows * row_width(x);
  }

  /// Whether a call leaves out optional argument i of `inputs` (ArgSpec::stand_in).
  static bool left_out(const ModelArgs& args, const Tensors& inputs, int i) {
    return args.inputs[i].stand_in >= 0 && !(i < inputs.count && inputs.refs[i].given());
  }

  /// `inputs` with each optional argument they leave out given as this rank's rows of its
  /// stand-in: a left-out X_dst is X at every row, while the local calls that read a halo are
  /// bipartite, where no stand-in serves.
  Tensors with_stand_ins(const char* who, const ModelArgs& args, const Tensors& inputs) const {
    Tensors t = inputs;
    for (int i = 0; i < args.count; ++i) {
      if (!left_out(args, inputs, i)) continue;
      const Extent x = args.inputs[i].extent;
      const Flat rows = rows_of(who, args.inputs[args.inputs[i].stand_in].name, inputs.refs[args.inputs[i].stand_in],
                                row_width(x));
      t.refs[i] = TensorRef::shaped(rows.data(), halo_call().op(), x);
      t.count = std::max(t.count, i + 1);
    }
    return t;
  }

  /// A caller's tensor of this rank's rows as a flat View: Error naming it unless it is a dense
  /// float32 tensor of num_rows() rows of `width`.
  Flat rows_of(const char* who, const char* name, const TensorRef& t, std::size_t width) const {
    return dense_of(who, name, t, std::size_t(num_rows()), width, "rows");
  }
  /// The same for a tensor of this rank's edges.
  Flat edge_rows_of(const char* who, const char* name, const TensorRef& t, std::size_t width) const {
    return dense_of(who, name, t, share_.edge_ids.size(), width, "edges");
  }
  static Flat dense_of(const char* who, const char* name, const TensorRef& t, std::size_t rows, std::size_t width,
                       const char* what) {
    if (t.dtype != DType::F32 || t.strided || t.entries() != rows * width || (t.data == nullptr && rows * width != 0))
      throw Error(std::string(who) + ": " + name + " must be this rank's " + std::to_string(rows) + " " + what +
                  " of " + std::to_string(width) + " dense float32 entries, got " + std::to_string(t.entries()) +
                  " entries" + (t.strided ? " (strided)" : "") + (t.dtype != DType::F32 ? " of another type" : ""));
    return Flat(static_cast<float*>(const_cast<void*>(t.data)), rows * width);
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

  /// Begins an all-to-all of rows of `width` floats (staged when the transport cannot reach the
  /// plan's memory).
  Travelling start(const Exec& exec, const Flat& send, const std::vector<node_t>& send_counts, const Flat& recv,
                   const std::vector<node_t>& recv_counts, std::size_t width) const {
    using Space = typename Transport::memory_space;
    Travelling t;
    t.recv = recv;
    exec.fence();
    if constexpr (Kokkos::SpaceAccessibility<Space, memory_space>::accessible) {
      t.pending = transport_.start_all_to_all(send.data(), send_counts, recv.data(), recv_counts, width * sizeof(float));
    } else {
      t.staged_send = Kokkos::create_mirror_view_and_copy(Space(), send);
      t.staged_recv = Kokkos::create_mirror_view(Space(), recv);
      t.pending = transport_.start_all_to_all(t.staged_send.data(), send_counts, t.staged_recv.data(), recv_counts,
                                              width * sizeof(float));
    }
    return t;
  }

  /// Begins the halo exchange of each source-side argument of `inputs` (this rank's rows) into
  /// its workspace (in one call after a copy of the rank's own rows); returns the halo call's
  /// inputs (the workspaces, the others as given).
  Tensors start_halo(const char* who, const Exec& exec, const ModelArgs& args, const Tensors& inputs,
                     std::vector<Travelling>& travelling) const {
    Tensors halo_inputs = inputs;
    for (int i = 0; i < inputs.count && i < args.count; ++i) {
      if (!source_rows(args.inputs[i].extent)) continue;
      const std::size_t width = row_width(args.inputs[i].extent), own = own_sources() * width;
      const Flat mine = rows_of(who, args.inputs[i].name, inputs.refs[i], width);
      const Flat sources = buffer(halo_[i], entries(inputs.refs[i], args.inputs[i].extent, true));
      if (own) Kokkos::deep_copy(exec, Kokkos::subview(sources, std::pair<std::size_t, std::size_t>(0, own)), mine);
      const Flat halo(sources.data() + own, sources.size() - own);
      const Flat packed = buffer(packed_[i], share_.send_rows.size() * width);
      const auto rows = send_rows_;
      Kokkos::parallel_for(
          "dfgnn::pack_halo", kokkos_impl::Range<Exec>(exec, 0, packed.size()),
          KOKKOS_LAMBDA(std::size_t k) { packed(k) = mine(std::size_t(rows(k / width)) * width + k % width); });
      travelling.push_back(start(exec, packed, counts(share_.send_ptr), halo, counts(share_.recv_ptr), width));
      halo_inputs.refs[i] = TensorRef::shaped(sources.data(), halo_call().op(), args.inputs[i].extent);
    }
    return halo_inputs;
  }

  /// The halo rows' gradients `theirs` back to their owners, each adding what it receives to its
  /// own rows' `mine` in rank order (each peer's rows distinct, so a peer's part adds in
  /// parallel: the same sums on every run).
  void return_halo(const Exec& exec, const Flat& theirs, const Flat& mine, std::size_t width, int i) const {
    const Flat returned = buffer(packed_[i], share_.send_rows.size() * width);
    start(exec, theirs, counts(share_.recv_ptr), returned, counts(share_.send_ptr), width).finish(exec);
    const auto rows = send_rows_;
    for (int q = 0; q < share_.ranks; ++q)
      Kokkos::parallel_for(
          "dfgnn::add_returned",
          kokkos_impl::Range<Exec>(exec, std::size_t(share_.send_ptr[std::size_t(q)]) * width,
                                    std::size_t(share_.send_ptr[std::size_t(q) + 1]) * width),
          KOKKOS_LAMBDA(std::size_t k) { mine(std::size_t(rows(k / width)) * width + k % width) += returned(k); });
  }

  /// Rows `edges` of a [*, width] tensor of the rank's edges, into `to`.
  static void take_edges(const Exec& exec, const Flat& from, const Positions& edges, const Flat& to,
                         std::size_t width) {
    Kokkos::parallel_for(
        "dfgnn::take_edges", kokkos_impl::Range<Exec>(exec, 0, to.size()),
        KOKKOS_LAMBDA(std::size_t k) { to(k) = from(std::size_t(edges(k / width)) * width + k % width); });
  }

  /// Call k's edge values (empty: none).
  EdgeValues<memory_space> part_edge_values(const char* who, const Exec& exec, int k,
                                            const EdgeValues<memory_space>& all) const {
    if (!all.data()) return {};
    const std::size_t width = all.extent(1);
    const Part& part = parts_[k];
    const Flat to = buffer(part.edge_values, part.edges.size() * width);
    take_edges(exec, edge_rows_of(who, "edge values", detail::tensor_ref(all), width), part.edges, to, width);
    return EdgeValues<memory_space>(to.data(), part.edges.size(), width);
  }

  /// Call k's options: its edge values, and the dropout with its edges' global ids as counter.
  /// The halo call's first ends the exchanges (split, those the inner call ran beside).
  Options<memory_space> part_options(const char* who, const Exec& exec, int k, const Options<memory_space>& options,
                                     std::vector<Travelling>& travelling) const {
    if (k == calls() - 1)
      for (Travelling& t : travelling) t.finish(exec);
    Options<memory_space> o;
    o.edge_values = part_edge_values(who, exec, k, options.edge_values);
    o.dropout = options.dropout;
    o.dropout.counter = parts_[k].ids.data();
    return o;
  }

  /// Call k's inputs: `inputs` with its part of the edge argument, if given.
  Tensors part_inputs(const char* who, const Exec& exec, int k, const ModelArgs& args, const Tensors& inputs) const {
    if (inputs.count <= args.count) return inputs;
    const Part& part = parts_[k];
    const std::size_t width = row_width(args.edge.extent);
    const Flat to = buffer(part.edge_argument, part.edges.size() * width);
    take_edges(exec, edge_rows_of(who, args.edge.name, inputs.refs[args.count], width), part.edges, to, width);
    Tensors t = inputs;
    t.refs[args.count] = TensorRef::shaped(to.data(), part.plan->op(), args.edge.extent);
    return t;
  }

  /// The two calls' softmaxes as one: lse = log(e^lse_in + e^lse_out), out = f_in out_in +
  /// f_out out_out with f = e^(lse_call - lse), written as out_in + f_out (out_out - out_in) as
  /// f_in + f_out = 1; a call counts only in the rows where it has edges (a row without any
  /// keeps out 0, lse 0). `out` holds the inner call's output, `parts` both calls' lse.
  void merge(const Exec& exec, const NodeOutput<memory_space>& out, const Scalars& lse, const Flat& parts) const {
    const std::size_t n = std::size_t(num_rows()), H = std::size_t(op_.heads), D = std::size_t(op_.dim);
    const auto in_ptr = inner().graph().row_ptr(), out_ptr = outer().graph().row_ptr();
    const Flat other(outer_out_.data(), n * H * D);
    Kokkos::parallel_for(
        "dfgnn::merge_calls", kokkos_impl::Range<Exec>(exec, 0, n * H), KOKKOS_LAMBDA(std::size_t k) {
          using kokkos_impl::exp;
          using kokkos_impl::log;
          const std::size_t v = k / H, h = k % H;
          const bool a = in_ptr(v + 1) > in_ptr(v), b = out_ptr(v + 1) > out_ptr(v);
          const float la = parts(k), lb = parts(n * H + k);
          if (!b) {
            lse(v, h) = a ? la : 0.0f;
            return;
          }
          // The weights in double: in float, exp and log of logsumexps near a super node's ~8 put
          // 5e-6 into out (docs/distributed.md).
          const double m = a && la > lb ? la : lb;
          const double l = a ? m + log(exp(double(la) - m) + exp(double(lb) - m)) : double(lb);
          const float f = a ? float(exp(double(lb) - l)) : 1.0f;
          for (std::size_t d = 0; d < D; ++d) out(v, h, d) += f * (other(k * D + d) - out(v, h, d));
          lse(v, h) = float(l);
        });
  }

  /// The attention weights in the rank's edge order: each call's (from its own lse) times
  /// e^(lse_call - lse) at its row.
  void scatter_weights(const Exec& exec, const Scalars& lse, const Flat& parts, const Scalars& weights) const {
    const std::size_t n = std::size_t(num_rows()), H = std::size_t(op_.heads);
    for (int k = 0; k < 2; ++k) {
      const Part& part = parts_[k];
      const auto dst = part.plan->graph().dst(), ids = part.plan->graph().edge_id();
      const auto edges = part.edges;
      const Flat mine(part.weights.data(), part.edges.size() * H), own(parts.data() + std::size_t(k) * n * H, n * H);
      Kokkos::parallel_for(
          "dfgnn::scatter_weights", kokkos_impl::Range<Exec>(exec, 0, mine.size()), KOKKOS_LAMBDA(std::size_t c) {
            using kokkos_impl::exp;
            const std::size_t e = std::size_t(ids(c / H)), h = c % H, v = std::size_t(dst(c / H));
            weights(std::size_t(edges(e)), h) = mine(e * H + h) * exp(own(v * H + h) - lse(v, h));
          });
    }
  }

  /// The edge argument's gradient in the rank's edge order (`all`), from each call's.
  void scatter_edge_grads(const Exec& exec, const ModelArgs& args, const Flat& all) const {
    const std::size_t width = row_width(args.edge.extent);
    for (int k = 0; k < calls(); ++k) {
      const Part& part = parts_[k];
      const Flat mine(part.edge_grad.data(), part.edges.size() * width);
      const auto edges = part.edges;
      Kokkos::parallel_for(
          "dfgnn::scatter_edges", kokkos_impl::Range<Exec>(exec, 0, mine.size()),
          KOKKOS_LAMBDA(std::size_t k) { all(std::size_t(edges(k / width)) * width + k % width) = mine(k); });
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
  /// the graph and partition), the local plans, and the agreement on them.
  template <class Share>
  void build(const Exec& exec, ScoreKind kind, int heads, int dim, Strategy strategy, std::uint64_t (&digest)[3],
             const Share& share) {
    std::string problem;
    try {
      digest[2] = share() ^ (std::uint64_t(kind) << 56) ^ (std::uint64_t(heads) << 32) ^ std::uint64_t(dim) ^
                  (std::uint64_t(overlap_) << 48);
      const auto set_part = [&](Part& part, const HostGraph& graph, const std::vector<edge_t>& edges) {
        part.plan.emplace(exec, Graph<memory_space>(graph), kind, heads, dim, strategy);
        part.edges = detail::upload<edge_t, memory_space>("dfgnn::part_edges", edges);
        std::vector<edge_t> ids(edges.size());
        for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = share_.edge_ids[std::size_t(edges[i])];
        part.ids = detail::upload<edge_t, memory_space>("dfgnn::part_edge_ids", ids);
      };
      if (overlap_) {
        const SourceSplit split = split_by_source(share_);
        set_part(parts_[0], split.inner.graph, split.inner.edges);
        set_part(parts_[1], split.outer.graph, split.outer.edges);
      } else {  // its edges in the rank's order
        std::vector<edge_t> all(share_.edge_ids.size());
        for (std::size_t i = 0; i < all.size(); ++i) all[i] = edge_t(i);
        set_part(parts_[0], share_.graph, all);
      }
      op_ = inner().op();
      op_.src_nodes = share_.num_rows() + share_.num_halo(), op_.edges = share_.graph.num_edges();
    } catch (const Error& e) {
      problem = e.what();
    }
    agree(problem, digest);
  }

  /// The share's arrays that the calls read on the device.
  void upload_share() { send_rows_ = detail::upload<node_t, memory_space>("dfgnn::send_rows", share_.send_rows); }

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
                    " passed another graph, partition, model, heads, dim or overlap than rank 0");
    }
  }

  Transport transport_;
  bool overlap_ = true;
  RankGraph share_;
  Op op_;
  Part parts_[2];  ///< the inner call's, the outer call's; in one call, its only one
  Kokkos::View<const node_t*, memory_space> send_rows_;
  /// Per model argument: its halo rows, the outer call's gradient, the rows an exchange packs or
  /// receives (one per argument: their exchanges travel together), the gradient of a left-out
  /// one; both calls' logsumexp, the outer call's output, the merged logsumexp of an inference call.
  mutable Owned halo_[3], part_grads_[3], packed_[3], stood_in_[3], lse_parts_, outer_out_, lse_;
};

/// Forward on a distributed plan: every tensor holds this rank's rows (source-side ones too:
/// the call exchanges the halo; AGNN's X is both its sources' and, left out, its X_dst), the
/// edge tensors (Options' edge values and attention weights, the edge argument) its share's
/// edges in `share().edge_ids` order. Dropout draws its part of one call's mask on the whole
/// graph (the plan gives it each edge's global id).
template <class Exec, class Transport, class Model>
void attention(const Exec& exec, const DistributedPlan<Exec, Transport>& plan, const Model& model,
               const Tensors& inputs, const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {}) {
  plan.forward(exec, model, inputs, out, options);
}

/// Backward on a distributed plan, with the forward's inputs, options, out and logsumexp (this
/// rank's rows): writes this rank's rows of every gradient, its source-side ones with the
/// peers' contributions added (AGNN's dX, X_dst left out, also its rows' X_dst terms), and the
/// whole sum of a head argument's gradient (GATv2's da, AGNN's dbeta) on every rank. The halo is
/// exchanged again (another call may have used the plan's workspaces since the forward).
template <class Exec, class Transport, class Model>
void attention_backward(const Exec& exec, const DistributedPlan<Exec, Transport>& plan, const Model& model,
                        const Tensors& inputs, const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut, const Tensors& grads,
                        const Options<typename Exec::memory_space>& options = {}) {
  plan.backward(exec, model, inputs, out, logsumexp, dOut, grads, options);
}

}  // namespace dfgnn
