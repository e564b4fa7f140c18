#pragma once
// The byte models of `dfgnn bench` and `dfgnn spmm|sddmm`: the bytes a pass must move, against
// which their timings report bandwidth (docs/performance.md).

#include "inputs.hpp"

#include <dfgnn/csr.hpp>

namespace dfgnn::cli {

/// Bytes a pass must move (anchors.md): `compulsory` reads each input and writes each output
/// once, with the graph; `gather` adds the rows its kernels gather per edge.
struct Traffic {
  double compulsory = 0, gather = 0;
};

/// An attention forward's, and a backward's (which reads and writes more: backward_bytes).
Traffic forward_bytes(const HostGraph& g, const Inputs& in);
Traffic backward_bytes(const HostGraph& g, const Inputs& in);

}  // namespace dfgnn::cli
