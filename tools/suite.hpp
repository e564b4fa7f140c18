#pragma once
// The study's graphs by name (docs/study.md): the headline graphs, generated in process with
// fixed seeds so that every platform runs the same ones, and the real graphs of a data folder.
// `dfgnn study` runs them; `dfgnn gen suite` writes one to a file, for the peers' suite
// (perf/study_peers.py), which must run the graphs the record ran.

#include <dfgnn/csr.hpp>

#include <string>

namespace dfgnn::cli {

/// Whether NAME is a real graph, read from a data folder (a generated one needs none).
bool suite_needs_data(const std::string& name);
/// Error naming `option` (--graphs, --name) unless NAME is a suite graph that can be had: known,
/// and a real one only with a data folder.
void check_suite_graph(const std::string& option, const std::string& name, bool have_data);
/// Graph NAME: generated, or read from `data` (shared/data's layout) and symmetrized, as the
/// anchors' tables use the real graphs; check_suite_graph's Error, naming `option`, where it
/// cannot be had.
HostGraph suite_graph(const std::string& option, const std::string& name, const std::string& data);

}  // namespace dfgnn::cli
