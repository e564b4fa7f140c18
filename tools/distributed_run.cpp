// The tool's MPI ranks and its distributed attention run (distributed_run.hpp).
#include "distributed_run.hpp"

#include <dfgnn/distributed.hpp>
#include <dfgnn/mpi.hpp>

namespace dfgnn::cli {

namespace {
bool begun = false;
}  // namespace

Ranks::Ranks(int& argc, char**& argv) { MPI_Init(&argc, &argv); }
Ranks::~Ranks() { MPI_Finalize(); }

int rank() { return MpiTransport().rank(); }
int ranks() { return MpiTransport().ranks(); }
bool collectives_begun() { return begun; }
void abort_ranks(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

struct DistributedRun::State {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = Exec::memory_space;
  using Flat = Kokkos::View<float*, Mem>;

  const Inputs& in;
  Exec exec;
  MpiTransport transport;
  Partition partition;
  DistributedPlan<Exec, MpiTransport> plan;
  /// On rank 0, each rank's rows and edges (ids in the whole graph): where its parts go.
  std::vector<std::vector<node_t>> rows;
  std::vector<std::vector<edge_t>> edges;
  std::vector<Flat> tensors, grads;
  Flat edge_values, dout;
  NodeOutput<Mem> out;
  Options<Mem> options;

  State(const HostGraph& g, const Inputs& in_, Strategy strategy, bool training)
      : in(in_),
        partition(partition_by_edges(g, transport.ranks())),
        plan(exec, transport, g, partition.owner, in.kind, int(in.H), int(in.D), strategy) {
    begun = true;
    const RankGraph& s = plan.share();
    if (transport.rank() == 0) {  // each rank's rows and in-edges in the order its share holds them
      rows.resize(std::size_t(transport.ranks())), edges.resize(rows.size());
      for (node_t v = 0; v < g.num_nodes; ++v) {
        const std::size_t q = std::size_t(partition.owner[std::size_t(v)]);
        rows[q].push_back(v);
        edges[q].insert(edges[q].end(), g.edge_id.begin() + g.row_ptr[std::size_t(v)],
                        g.edge_id.begin() + g.row_ptr[std::size_t(v) + 1]);
      }
    }
    const std::vector<edge_t>& mine_edges = s.edge_ids;
    for (int i = 0; i < in.args().count; ++i)  // a left-out argument: no tensor
      tensors.push_back(in.given(i) ? upload(local(in.tensors[std::size_t(i)], in.extent(i), s.rows, mine_edges)) : Flat());
    if (in.edges()) tensors.push_back(upload(local(in.edge_features, in.args().edge.extent, s.rows, mine_edges)));
    const std::size_t n = std::size_t(s.num_rows()), E = mine_edges.size();
    if (in.edge_value_heads) {
      edge_values = upload(take_rows(in.edge_values, mine_edges, std::size_t(in.edge_value_heads)));
      options.edge_values = EdgeValues<Mem>(edge_values.data(), E, std::size_t(in.edge_value_heads));
    }
    out = NodeOutput<Mem>("out", n, in.H, in.D);
    if (training || in.weights) options.logsumexp = decltype(options.logsumexp)("logsumexp", n, in.H);
    if (training) options.dropout = in.dropout;
    if (in.weights) options.attention_weights = decltype(options.attention_weights)("weights", E, in.H);
  }

  /// This rank's part of a whole-graph tensor of extent x: its rows, its edges, or all of it.
  std::vector<float> local(const std::vector<float>& t, Extent x, const std::vector<node_t>& mine_rows,
                           const std::vector<edge_t>& mine_edges) const {
    if (head_argument(x)) return t;
    const std::size_t width = row_entries(x, in.H, in.D);
    return edge_rows(x) ? take_rows(t, mine_edges, width) : take_rows(t, mine_rows, width);
  }

  static Flat upload(const std::vector<float>& host) { return detail::upload<float, Mem>("dfgnn::input", host); }

  /// The flat buffers as the model's tensors (or gradients), shaped for this rank's rows (none
  /// for a left-out argument).
  Tensors shaped(const std::vector<Flat>& flat) const {
    Op rows = plan.op();
    rows.src_nodes = rows.dst_nodes;  // source-side tensors too hold this rank's rows
    Tensors r;
    r.count = int(flat.size());
    for (int i = 0; i < r.count; ++i)
      if (i == in.args().count || in.given(i))
        r.refs[i] = TensorRef::shaped(flat[std::size_t(i)].data(), rows, in.extent(i), in.count());
    return r;
  }

  /// Rank 0: the whole tensor of every rank's `mine` (rows of `width`, rank q's at ids
  /// index[q]); `whole` entries. The others: empty.
  template <class Index>
  std::vector<float> to_root(const Flat& mine, std::size_t width, const std::vector<std::vector<Index>>& index,
                             std::size_t whole) const {
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), mine);
    const int P = transport.ranks();
    std::vector<node_t> send(std::size_t(P), 0), recv(std::size_t(P), 0);
    send[0] = node_t(host.size() / width);
    std::size_t total = 0;
    for (std::size_t q = 0; q < index.size(); ++q) recv[q] = node_t(index[q].size()), total += index[q].size();
    std::vector<float> parts(total * width), r;
    transport.all_to_all(host.data(), send, parts.data(), recv, width * sizeof(float));
    if (transport.rank() != 0) return r;
    r.resize(whole);
    std::size_t at = 0;
    for (const auto& ids : index)
      for (Index id : ids) std::copy_n(&parts[width * at++], width, &r[std::size_t(id) * width]);
    return r;
  }

  /// Rank 0: a tensor of extent x whole; the others empty.
  std::vector<float> whole(const Flat& mine, Extent x) const {
    if (head_argument(x)) {  // the same sum on every rank
      if (transport.rank() != 0) return {};
      const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), mine);
      return std::vector<float>(host.data(), host.data() + host.size());
    }
    const std::size_t width = row_entries(x, in.H, in.D);
    return edge_rows(x) ? to_root(mine, width, edges, in.E * width) : to_root(mine, width, rows, in.N * width);
  }
};

DistributedRun::DistributedRun(const HostGraph& g, const Inputs& in, Strategy strategy, bool training)
    : s_(std::make_unique<State>(g, in, strategy, training)) {}
DistributedRun::~DistributedRun() = default;

Strategy DistributedRun::strategy() const { return s_->plan.inner().strategy(); }

void DistributedRun::forward() {
  State& s = *s_;
  visit_model(s.in.kind, [&](auto model) {
    attention(s.exec, s.plan, with_param<decltype(model)>(s.in.param), s.shaped(s.tensors), s.out, s.options);
  });
  s.exec.fence();
}

std::vector<float> DistributedRun::output() const {
  return s_->whole(State::Flat(s_->out.data(), s_->out.size()), Extent::DstFeatures);
}

std::vector<float> DistributedRun::weights() const {
  const auto& w = s_->options.attention_weights;
  return s_->whole(State::Flat(w.data(), w.size()), Extent::EdgeScalars);
}

void DistributedRun::set_dout(const std::vector<float>& dout) {
  State& s = *s_;
  s.dout = State::upload(take_rows(dout, s.plan.share().rows, s.in.H * s.in.D));
  s.grads.clear();
  for (std::size_t i = 0; i < s.tensors.size(); ++i) s.grads.emplace_back("grad", s.tensors[i].size());
}

void DistributedRun::backward() {
  State& s = *s_;
  using Mem = State::Mem;
  const std::size_t n = std::size_t(s.plan.num_rows());
  const NodeFeatures<Mem> dout(s.dout.data(), n, s.in.H, s.in.D), out(s.out.data(), n, s.in.H, s.in.D);
  visit_model(s.in.kind, [&](auto model) {
    attention_backward(s.exec, s.plan, with_param<decltype(model)>(s.in.param), s.shaped(s.tensors), out,
                       s.options.logsumexp, dout, s.shaped(s.grads), s.options);
  });
  s.exec.fence();
}

Gradients DistributedRun::gradients() const {
  Gradients r;
  const auto names = gradient_sizes(s_->in);
  const auto args = gradient_arguments(s_->in);
  for (std::size_t i = 0; i < names.size(); ++i)
    r.emplace_back(names[i].first, s_->whole(s_->grads[std::size_t(args[i])], gradient_extent(s_->in, i)));
  return r;
}

}  // namespace dfgnn::cli
