// The attention byte models (bytes.hpp).

#include "bytes.hpp"

namespace dfgnn::cli {

// The forward's bytes: compulsory, each input read once, the output written once, the CSR
// graph; gather, also one row read per edge for each gathered tensor.
Traffic forward_bytes(const HostGraph& g, const Inputs& in) {
  const double NS = double(in.NS), N = double(in.N), H = double(in.H), D = double(in.D), E = double(g.num_edges());
  const double es = double(size_of(in.dtype));  // bytes of an element
  // Feature rows at the sources and at the destinations, and one gathered row per edge.
  const double graph = (N + 1) * 8 + E * 4, src = NS * H * D * es, dst = N * H * D * es, row = E * H * D * es;
  switch (in.kind) {
    case ScoreKind::GT: return {graph + 2 * src + 2 * dst, graph + 2 * src + 2 * dst + 2 * row};  // Q K V; out
    case ScoreKind::AGNN: return {graph + 2 * dst, graph + 2 * dst + row};  // X; out (square)
    case ScoreKind::GAT: {  // el V; er; out
      const double c = graph + src + dst + (NS + N) * H * es;
      return {c, c + row};
    }
    case ScoreKind::GATv2: {  // XL; XR out; a
      const double c = graph + src + 2 * dst + H * D * es;
      return {c, c + row};
    }
  }
  return {};
}

// The backward's bytes: compulsory, every tensor it reads (inputs, out, dOut, the statistics)
// and every gradient it writes, with the CSR and the CSC; gather, also each row its two walks
// gather per edge and head (rows: the key and value rows of the source; columns: the
// destination's rows) and the per-edge workspace written and read back.
Traffic backward_bytes(const HostGraph& g, const Inputs& in) {
  const double NS = double(in.NS), N = double(in.N), H = double(in.H), D = double(in.D), E = double(g.num_edges());
  const double graphs = (N + 1) * 8 + (NS + 1) * 8 + 2 * E * 4 + E * 8;
  const double src = NS * H * D * 4, dst = N * H * D * 4, scalars = N * H * 4, src_scalars = NS * H * 4;
  const double row = E * H * D * 4, work = 2 * 2 * E * H * 4;
  double comp = graphs + scalars, gathered = 0;  // scalars: the logsumexp
  switch (in.kind) {
    case ScoreKind::GT: comp += 4 * src + 4 * dst, gathered = 4 * row; break;  // Q K V out dOut; dQ dK dV
    case ScoreKind::AGNN: comp += 4 * dst, gathered = 3 * row + work / 2; break;  // X out dOut; dX (+cos)
    case ScoreKind::GAT:  // V out dOut; dV; el er del der
      comp += 2 * src + 2 * dst + 2 * src_scalars + 2 * scalars, gathered = 2 * row;
      break;
    case ScoreKind::GATv2: comp += 2 * src + 4 * dst + 2 * H * D * 4, gathered = 3 * row; break;  // XL XR out dOut; dXL dXR; a da
  }
  return {comp, comp + gathered + work};
}

}  // namespace dfgnn::cli
