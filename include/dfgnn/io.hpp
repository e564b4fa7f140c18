#pragma once
/// \file io.hpp
/// File input/output for the CLI and tests: NumPy .npy arrays, graph files (edge lists and
/// Matrix Market, gzip-compressed or not) and comma-separated per-head parameter lists.
/// A file that starts with the gzip magic is gunzipped: concatenated members are one file, as
/// for gzip -d, but bytes after the last member are an Error (not dropped).
/// Every problem with a file or a value is reported as dfgnn::Error with a one-line message
/// that starts with the path ("<path>: ..." or "<path>:<line>: ...").

#include <dfgnn/types.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dfgnn::io {

/// A dense row-major (C order) float32 array.
struct Array {
  std::vector<std::int64_t> shape;  ///< empty for a 0-d (scalar) array
  std::vector<float> data;          ///< product(shape) elements
};

/// Reads a .npy file (format 1.0, 2.0 or 3.0) of dtype '<f4' or '<f8' (converted to float32),
/// C order; a gzip-compressed file is read transparently. Throws Error for a missing file, bad magic, unparsable header, any other dtype,
/// Fortran order or a file shorter than its shape implies.
Array read_npy_f32(const std::string& path);

/// Writes `data` (product(shape) floats, row-major) as a .npy file of format 1.0, dtype '<f4'.
/// Throws Error for a negative dimension or when the file cannot be written.
void write_npy_f32(const std::string& path, const std::vector<std::int64_t>& shape,
                   const float* data);

/// Throws Error "<path>: cannot open for writing: <reason>" unless `path` can be opened for
/// writing, so that a run checks its outputs before computing them. Leaves an existing file as
/// it is and creates none.
void check_writable(const std::string& path);

/// A directed edge list: edge i is src[i] -> dst[i], ids in [0, num_nodes).
struct EdgeList {
  std::vector<node_t> src, dst;
  node_t num_nodes = 0;
  std::vector<float> values;  ///< per-edge values of a real/integer .mtx file; empty otherwise
};

/// Reads a graph file; gzip compression and Matrix Market are detected from the content, not
/// the name.
///
/// - a file that starts with the `%%MatrixMarket` banner (or is named `.mtx` / `.mtx.gz`): Matrix Market `coordinate` with field real, integer or pattern and
///   symmetry general or symmetric (off-diagonal entries are mirrored). A square matrix; the
///   1-based entry `row col` is the edge col-1 -> row-1. The entry count must equal the size line.
/// - anything else: an edge list, one `u v` (u -> v, 0-based) per line, tokens separated by
///   whitespace and/or commas, at most two further numeric columns (a weight, a time) ignored,
///   `#` / `%` lines and blank lines skipped. A first non-comment line whose tokens start like
///   words (`src,dst`) is a header.
///
/// num_nodes < 0 sets N = max id + 1 (for .mtx: the size line; for the edge lists `dfgnn gen`
/// writes, their `# nodes N` line, so that isolated nodes survive); otherwise every id must be
/// below num_nodes (for .mtx: num_nodes must equal the row count). Ids must be < 2^31 - 1.
/// Throws Error "<path>:<line>: <problem>" for bad content, "<path>: <problem>" otherwise.
EdgeList read_graph(const std::string& path, std::int64_t num_nodes = -1);

/// Parses "1.0" or "0.5,1,2" into finite floats (one per head). Throws Error naming `what` and
/// the offending token for an empty or non-numeric entry.
std::vector<float> parse_float_list(const std::string& text, const std::string& what);

}  // namespace dfgnn::io
