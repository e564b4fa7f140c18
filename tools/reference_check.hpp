#pragma once
// The CLI's --reference: the float64 reference of a run (src/reference*.cpp) on the whole graph
// or, with --reference-sample, on the part of it that sampled rows depend on, and the
// tolerances a run's results are held to.

#include "inputs.hpp"

#include <dfgnn/csr.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dfgnn::cli {

/// The float64 reference forward of `in` on g (and its attention weights into `weights`).
std::vector<double> run_reference(const HostGraph& g, const Inputs& in, std::vector<double>* weights = nullptr);
/// The float64 reference gradients, named and ordered as gradient_sizes.
std::vector<std::vector<double>> run_reference_backward(const HostGraph& g, const Inputs& in,
                                                        const std::vector<float>& dout);

/// The largest relative error of out (and the attention weights) against the float64 reference
/// on the same inputs: float32's rounding, or the accuracy contract of a two-byte type
/// (docs/design.md, "Element types").
double output_tolerance(const Inputs& in);
/// The largest relative error the gradient of argument i may have against the float64
/// reference: gradients of per-head parameters (AGNN's dbeta, GATv2's da) sum cancelling terms
/// over all edges (docs/backward.md).
double gradient_tolerance(const Inputs& in, std::size_t i);

/// The part of a run that --reference checks against the float64 reference: the whole graph,
/// or with --reference-sample K the part that K sampled nodes depend on (row_subgraph): K random
/// rows and the row of most in-edges; with --grad-out also K random sources, which need every
/// row they feed (and, on a square graph, their own). A row's output needs only its in-edges, so
/// the reference on the part gives the whole graph's values there. Per-head parameters' gradients
/// (da, dbeta) sum over every edge: a sample does not check them.
struct Reference {
  const HostGraph* graph;  ///< the reference's graph: the file's, or the part's
  Inputs in;               ///< its inputs
  std::optional<RowSubgraph> part;
  std::vector<node_t> sources;    ///< the part's sources whose gradients are checked
  std::vector<node_t> dst_nodes;  ///< the file's node of each of the part's destinations

  Reference(const Args& a, const HostGraph& g, const Inputs& file_in);
  /// dOut of the part's destinations.
  std::vector<float> dout(const std::vector<float>& file_dout) const;
  /// The entries of a result of extent e (in the file's order, `file`) and of the reference's
  /// (`ref`, the part's) that hold the same values: all of them, or the part's checked ones
  /// (its rows; its sampled sources; its edges; none of a per-head parameter's).
  std::pair<std::vector<float>, std::vector<double>> compared(const std::vector<float>& file, std::vector<double> ref,
                                                              Extent e) const;

 private:
  std::size_t file_rows = 0;  // the file's destinations (dOut's rows)
};

/// Compares `got` (extent e, the file's order) with the reference's `ref` on what `check` holds;
/// prints the error of `what` and returns whether it is within `tol`. A sample that holds none of
/// it (a per-head parameter's gradient) says so.
bool within(const Reference& check, const std::string& what, const std::vector<float>& got, std::vector<double> ref,
            Extent e, double tol);

}  // namespace dfgnn::cli
