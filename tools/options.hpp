#pragma once
// The tool's commands and their options: one table per command, which both the parser and the
// usage text read. Our own parser rather than a library's: every value is checked where it is
// read, with a message naming the option and its bound ("--heads must be >= 1"), and every
// user error is one line and exit code 2, so a library would only split the words.

#include <dfgnn/types.hpp>

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace dfgnn::cli {

/// Bound of --warmup and --iters: their sum stays far from int's range and a run ends.
constexpr long long kMaxIters = 1000000;

/// One option: --name VALUE, or a flag (no value).
struct Option {
  std::string name;   ///< without the leading --
  std::string value;  ///< its value's name in the usage ("F.npy"); empty: a flag
  std::string help;   ///< may span lines
};

/// Options that belong together (the graph's, a model's inputs), with prose after them.
struct Section {
  std::string title;
  std::vector<Option> options;
  std::string notes;
};

/// The parsed options of a command line.
struct Args {
  std::map<std::string, std::string> values;
  std::set<std::string> flags;

  bool has(const std::string& k) const { return values.count(k) != 0; }
  bool flag(const std::string& k) const { return flags.count(k) != 0; }
  std::string get(const std::string& k, const std::string& fallback = "") const {
    auto it = values.find(k);
    return it == values.end() ? fallback : it->second;
  }
  std::string need(const std::string& k) const {
    if (!has(k)) throw Error("missing --" + k);
    return get(k);
  }
  /// The value of --k (fallback when absent), an integer in [lo, hi]: by default the range of
  /// int, so that no caller's narrowing wraps a huge value around.
  long long integer(const std::string& k, long long fallback, long long lo = std::numeric_limits<int>::min(),
                    long long hi = std::numeric_limits<int>::max()) const;
  /// --seed: any 64-bit integer (default 1).
  std::uint64_t seed() const {
    return std::uint64_t(
        integer("seed", 1, std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max()));
  }
  /// The value of --k (fallback when absent), one finite number.
  float real(const std::string& k, float fallback) const;
};

/// A command: `dfgnn NAME SYNOPSIS`, its options in sections (shared sections by address, so
/// that the whole usage lists each once), and what runs it.
struct Command {
  std::string name;  ///< "attention", "gen rmat"
  std::string synopsis;
  std::vector<const Section*> sections;
  int (*run)(const Args&);
};

/// Every command, in the usage's order (dfgnn.cpp).
const std::vector<const Command*>& commands();

/// argv[first..] as `c`'s options and flags; anything else is an Error (an option of another
/// command says which).
Args parse(const Command& c, int argc, char** argv, int first);

/// The usage of the commands named `word` ("gen": every generator), or of all of them (any
/// other word), each section once.
std::string usage(const std::string& word);

}  // namespace dfgnn::cli
