// The attention byte models (bytes.hpp).

#include "bytes.hpp"

namespace dfgnn::cli {

namespace {

// The bytes of the run's model arguments (its score inputs and values), each once at `es` bytes
// an element; a head vector (AGNN's beta: one value, or one a head) is too small to count, and
// an argument left out (AGNN's X_dst, X standing in) is no tensor of its own. Neither are the
// edge values and edge features.
double argument_bytes(const Inputs& in, double es) {
  double r = 0;
  const ModelArgs& m = in.args();
  for (int i = 0; i < m.count; ++i) {
    if (m.inputs[i].extent == Extent::HeadVector || !in.given(i)) continue;
    double b = es;
    for (const std::size_t x : in.shape(m.inputs[i].extent)) b *= double(x);
    r += b;
  }
  return r;
}

// What the run's model's kernels gather beyond that (the traits' `traffic`).
EdgeTraffic traffic(const Inputs& in) {
  return visit_model(in.kind, [](auto model) { return decltype(model)::traffic; });
}

}  // namespace

// The forward's bytes: compulsory, each input read once, the output written once, the CSR
// graph; gather, also one row read per edge for each gathered tensor.
Traffic forward_bytes(const HostGraph& g, const Inputs& in) {
  const double N = double(in.N), H = double(in.H), D = double(in.D), E = double(g.num_edges());
  const double es = double(size_of(in.dtype));  // bytes of an element
  // The CSR, out's rows, and one gathered row per edge.
  const double graph = (N + 1) * 8 + E * 4, dst = N * H * D * es, row = E * H * D * es;
  const double c = graph + argument_bytes(in, es) + dst;
  return {c, c + traffic(in).forward_rows * row};
}

// The backward's bytes: compulsory, every tensor it reads (inputs, out, dOut, the statistics)
// and every gradient it writes, with the CSR and the CSC; gather, also each row its two walks
// gather per edge and head (rows: the key and value rows of the source; columns: the
// destination's rows) and the per-edge workspace written and read back.
Traffic backward_bytes(const HostGraph& g, const Inputs& in) {
  const double NS = double(in.NS), N = double(in.N), H = double(in.H), D = double(in.D), E = double(g.num_edges());
  const double graphs = (N + 1) * 8 + (NS + 1) * 8 + 2 * E * 4 + E * 8;
  const double dst = N * H * D * 4, scalars = N * H * 4, row = E * H * D * 4;
  const EdgeTraffic t = traffic(in);
  // scalars: the logsumexp; each input and its gradient; out and dOut
  const double comp = graphs + scalars + 2 * argument_bytes(in, 4) + 2 * dst;
  return {comp, comp + t.backward_rows * row + 2 * t.backward_scalars * E * H * 4};
}

}  // namespace dfgnn::cli
