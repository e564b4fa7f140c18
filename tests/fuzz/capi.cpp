// libFuzzer target: the C ABI (python/capi/dfgnn_capi.h) driven as a caller drives it: a graph
// (edges, a CSR or a batch's edges), a host plan, a forward, a backward, then both freed. The
// input picks every count (negative, zero, past the graph's), every pointer (present or null)
// and every option (where the plan runs, model, element type, heads, dim, beta's count, edge
// values and their heads, dropout, logsumexp, attention weights, edge features and their shape,
// dropout ids). The buffers are those the plan's op gives (any edge argument: [E, H, D]
// entries, the most a shape may take), so what the checks let through must stay inside them
// (AddressSanitizer). Invariants: every status is 0 or 1 (2 would be an exception that is no
// dfgnn::Error), with a one-line printable message on failure; a null result pointer, or a null
// array with entries, is refused; a forward that succeeds on finite inputs writes finite
// outputs.

#include "fuzz.hpp"

#include "../../python/capi/dfgnn_capi.h"

#include <dfgnn/op.hpp>
#include <dfgnn/types.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace dfgnn;
using fuzz::check;

namespace {

/// The input as a stream of choices (0 past its end).
struct Choices {
  const std::uint8_t* data;
  std::size_t size, at = 0;

  std::uint8_t byte() { return at < size ? data[at++] : 0; }
  /// A signed byte: ids and counts near 0, negative ones and ones past a small graph.
  int small() { return std::int8_t(byte()); }
  /// True one time in n.
  bool one_in(int n) { return byte() % n == 0; }
  /// A value in [-1, 1], exact in every element type.
  float value() { return float(small()) / 128.0f; }
};

/// A C function's status: 0, or 1 with a one-line printable message.
int status(int rc, const char* function) {
  check(rc == 0 || rc == 1, std::string(function) + " returned " + std::to_string(rc) + ": " + dfgnn_last_error());
  if (rc) fuzz::check_line(dfgnn_last_error(), "");
  return rc;
}

/// A buffer of `entries` elements of type t (zero entries: still a valid pointer).
struct Buffer {
  Buffer(std::size_t entries, DType t) : t(t), bytes((entries ? entries : 1) * (t == DType::F32 ? 4 : 2)) {}
  DType t;
  std::vector<unsigned char> bytes;

  void fill(Choices& in) {
    const float v = in.value();  // a base value, then a pattern around it
    for (std::size_t k = 0; k < entries(); ++k) set(k, v + float(int(k % 7) - 3) / 8.0f);
  }
  void set(std::size_t k, float x) {
    if (t == DType::F32) {
      std::memcpy(&bytes[4 * k], &x, 4);
    } else {
      const std::uint16_t b = to_bits(t, x);
      std::memcpy(&bytes[2 * k], &b, 2);
    }
  }
  float get(std::size_t k) const {
    if (t == DType::F32) {
      float x;
      std::memcpy(&x, &bytes[4 * k], 4);
      return x;
    }
    std::uint16_t b;
    std::memcpy(&b, &bytes[2 * k], 2);
    return from_bits(t, b);
  }
  std::size_t entries() const { return bytes.size() / (t == DType::F32 ? 4 : 2); }
  bool finite() const {
    for (std::size_t k = 0; k < entries(); ++k)
      if (!std::isfinite(get(k))) return false;
    return true;
  }
  void* data() { return bytes.data(); }
};

/// A pointer to b, or null one time in n.
void* maybe(Choices& in, Buffer& b, int n = 8) { return in.one_in(n) ? nullptr : b.data(); }

/// The graph of the choices, or null where it is refused.
dfgnn_graph* make_graph(Choices& in, std::int64_t& ns, std::int64_t& nd, std::int64_t& edges) {
  const int form = in.byte() % 3;  // edges, a CSR, edges with a batch's offsets
  ns = in.small(), nd = in.one_in(4) ? in.small() : ns, edges = in.small();
  std::vector<std::int64_t> src(std::size_t(std::max<std::int64_t>(edges, 0) + 1)), dst(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = in.small(), dst[i] = in.small();
  const std::int64_t* s = in.one_in(8) ? nullptr : src.data();
  const std::int64_t* d = in.one_in(8) ? nullptr : dst.data();
  dfgnn_graph* graph = nullptr;
  dfgnn_graph** result = in.one_in(16) ? nullptr : &graph;
  int rc;
  bool null_argument = !result;
  if (form == 1) {
    // row_ptr [nd + 1]: 0, steps from the input (any sign), then the edge count.
    std::vector<std::int64_t> row_ptr(std::size_t(std::max<std::int64_t>(nd, 0) + 1), 0);
    for (std::size_t v = 1; v + 1 < row_ptr.size(); ++v) row_ptr[v] = row_ptr[v - 1] + in.small() % 4;
    row_ptr.back() = nd > 0 ? std::max<std::int64_t>(edges, 0) : 0;
    const std::int64_t* rp = in.one_in(8) ? nullptr : row_ptr.data();
    null_argument |= !rp || (row_ptr.back() > 0 && !s);
    rc = status(dfgnn_graph_from_csr(ns, nd, rp, s, result), "dfgnn_graph_from_csr");
  } else {
    std::vector<std::int64_t> batch;
    std::int64_t graphs = 0;
    if (form == 2) {
      graphs = in.small() % 4;
      for (std::int64_t j = 0; j <= std::max<std::int64_t>(graphs, 0); ++j) batch.push_back(in.small() % (std::abs(nd) + 2));
    }
    null_argument |= edges > 0 && (!s || !d);
    rc = status(dfgnn_graph_from_coo(-1, 0, ns, nd, edges, s, d, batch.empty() ? nullptr : batch.data(), graphs,
                                     result),
                "dfgnn_graph_from_coo");
  }
  if (null_argument) check(rc == 1, "a graph was made with a null argument");
  if (rc) return nullptr;
  std::int64_t info[4];
  status(dfgnn_graph_info(graph, &info[0], &info[1], &info[2], &info[3]), "dfgnn_graph_info");
  check(info[0] == ns && info[1] == nd, "the graph has other node counts");
  edges = info[2];
  return graph;
}

/// One forward and one backward through a plan of the choices on `graph`.
void run_plan(Choices& in, const dfgnn_graph* graph, std::int64_t ns, std::int64_t nd, std::int64_t edges) {
  const int kind = in.byte() % 6 - 1, heads = in.small() >> 4, dim = in.small() >> 3, dtype = in.byte() % 4;
  dfgnn_plan* plan = nullptr;
  const bool null_graph = in.one_in(16), null_result = in.one_in(16), null_where = in.one_in(16);
  dfgnn_where where{};
  where.device = in.one_in(16) ? in.small() : -1;  // a CUDA device is refused: the fuzz build has no CUDA
  const int rc = status(dfgnn_plan_create(null_graph ? nullptr : graph, null_where ? nullptr : &where, kind, heads,
                                          dim, dtype, null_result ? nullptr : &plan),
                        "dfgnn_plan_create");
  if (null_graph || null_result || null_where) check(rc == 1, "a plan was made with a null argument");
  if (rc) return;
  check(dfgnn_plan_strategy(plan) != nullptr, "a plan without a strategy");
  const DType t = DType(dtype);
  const Op op{ScoreKind(kind), t, heads, dim, node_t(ns), node_t(nd), edges};
  const ModelArgs& m = model_args(op.kind);
  const std::size_t H = std::size_t(heads), E = std::size_t(edges), rows = std::size_t(nd) * H;

  dfgnn_call c{};
  const std::int64_t count = in.one_in(4) ? in.small() : in.one_in(2) ? 1 : heads;
  std::vector<Buffer> inputs, grads;
  for (int i = 0; i < m.count; ++i) {
    const std::size_t n = TensorRef::shaped(nullptr, op, m.inputs[i].extent, H).entries();  // beta: at most H
    inputs.emplace_back(n, t);
    grads.emplace_back(n, t);
  }
  const std::size_t edge_entries = E * H * std::size_t(dim);  // the most an edge argument's shape takes
  Buffer values(E * H, t), weights(E * H, t), features(edge_entries, t), edge_grad(edge_entries, t),
      out(rows * std::size_t(dim), t), dout(out.entries(), t), lse(rows, DType::F32);
  std::vector<std::int64_t> ids(E + 1);  // the calls' dropout ids, when set
  for (Buffer& b : inputs) b.fill(in);
  values.fill(in), features.fill(in), dout.fill(in);
  for (int i = 0; i < m.count; ++i) c.inputs[i] = maybe(in, inputs[std::size_t(i)]);
  c.count = count;
  static const float params[] = {0.0f, 0.2f, -1.5f, 3.0f, std::numeric_limits<float>::quiet_NaN(), INFINITY};
  c.param = params[in.byte() % 6];
  if (in.one_in(2)) c.edge_values = maybe(in, values), c.edge_heads = in.byte() % 4;
  static const float rates[] = {0.0f, 0.0f, 0.3f, 0.9f, 1.0f, -0.5f, std::numeric_limits<float>::quiet_NaN()};
  c.dropout = rates[in.byte() % 7], c.seed = in.byte();
  if (in.one_in(4)) {  // each edge's dropout id: its index, scrambled
    for (std::size_t e = 0; e < E; ++e) ids[e] = std::int64_t(e * 2654435761u) - in.small();
    status(dfgnn_plan_set_dropout_ids(plan, ids.data()), "dfgnn_plan_set_dropout_ids");
  }
  c.out = maybe(in, out);
  c.logsumexp = in.one_in(2) ? nullptr : static_cast<float*>(lse.data());
  if (in.one_in(4)) c.attention_weights = maybe(in, weights);
  if (in.one_in(2)) {
    c.edge_features = maybe(in, features);
    if (in.one_in(2)) c.edge_features_heads = in.small() % (heads + 2), c.edge_features_width = in.small() % (dim + 2);
  }
  const bool finite = std::isfinite(c.param);
  if (status(dfgnn_forward(plan, 0, in.one_in(32) ? nullptr : &c), "dfgnn_forward") == 0 && finite) {
    check(out.finite(), "a forward of finite inputs wrote a non-finite out");
    if (c.logsumexp) check(lse.finite(), "a forward of finite inputs wrote a non-finite logsumexp");
  }
  c.dout = maybe(in, dout);
  for (int i = 0; i < m.count; ++i) c.grads[i] = maybe(in, grads[std::size_t(i)]);
  c.edge_grad = maybe(in, edge_grad, 4);
  status(dfgnn_backward(plan, 0, in.one_in(32) ? nullptr : &c), "dfgnn_backward");
  dfgnn_plan_free(plan);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Choices in{data, size};
  std::int64_t ns = 0, nd = 0, edges = 0;
  dfgnn_graph* graph = make_graph(in, ns, nd, edges);
  if (graph) run_plan(in, graph, ns, nd, edges);
  dfgnn_graph_free(graph);
  return 0;
}
