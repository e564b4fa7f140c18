// The dfgnn command-line tool, run as a child process: attention round trips through .npy files
// against the float64 reference, Cora end to end, `info`, `gen`, and every user error (exit 2,
// one line on stderr naming the problem).

#include "graphs.hpp"

#include <dfgnn/csr.hpp>
#include <dfgnn/io.hpp>
#include <dfgnn/op.hpp>
#include <dfgnn/reference.hpp>
#include <dfgnn/reference_backward.hpp>
#include <dfgnn/reference_message_passing.hpp>

#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace dfgnn;

namespace {

struct Result {
  int code = -1;  ///< exit status; 128 + signal when killed
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

std::string cora() { return quote(std::string(DFGNN_SOURCE_DIR) + "/data/cora.tsv.gz"); }

/// A tiny graph with a self loop, a duplicate edge and an empty row (node 6 only sends).
/// Edge i is kSrc[i] -> kDst[i]; node count 7 = max id + 1.
const std::vector<node_t> kSrc{0, 1, 2, 3, 1, 2, 4, 5, 6, 0, 3, 4, 2, 6};
const std::vector<node_t> kDst{1, 0, 1, 1, 1, 1, 3, 3, 2, 4, 4, 5, 0, 0};
constexpr node_t kNodes = 7;

/// One attention run on the tiny graph from .npy inputs.
struct RoundTrip {
  std::string model;    // gt | agnn | gat | gatv2
  int H = 2, D = 3;
  bool flat = false;    // features as [N,H*D] (and a as [H*D]) instead of [N,H,D]
  int edge_values = 0;  // 0: none; 1: [E]; H: [E,H]
  std::string extra;    // further options (--scale, --slope, --beta, --strategy, --symmetrize)
  float scale = 0.0f, slope = 0.2f;
  std::vector<float> beta{1.0f};
  bool symmetrize = false;
  bool x_dst = false;  // AGNN: --x-dst, the destinations' own features
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    dir_ = fs::temp_directory_path() /
           ("dfgnn_cli_test_" + std::to_string(stamp) + "_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string limit_;  ///< shell commands before the CLI's (a ulimit)

  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }

  std::string npy(const std::string& name, const std::vector<std::int64_t>& shape, const std::vector<float>& data) const {
    io::write_npy_f32(path(name), shape, data.data());
    return path(name);
  }

  /// The tiny graph as an edge list, with a comment, a blank line and mixed separators.
  std::string tiny_graph() const {
    std::string text = "# tiny test graph\n\n";
    for (std::size_t i = 0; i < kSrc.size(); ++i)
      text += std::to_string(kSrc[i]) + (i % 3 == 0 ? "," : i % 3 == 1 ? "\t" : " ") + std::to_string(kDst[i]) + "\n";
    return write("tiny.txt", text);
  }

  /// Runs `dfgnn <args>` with stdout and stderr captured in files.
  Result run(const std::string& args) const {
    const std::string out = path("stdout.txt"), err = path("stderr.txt");
    const std::string cmd = limit_ + quote(DFGNN_CLI) + " " + args + " >" + quote(out) + " 2>" + quote(err);
    const int status = std::system(cmd.c_str());
    Result r;
    if (status != -1 && WIFEXITED(status)) r.code = WEXITSTATUS(status);
    else if (status != -1 && WIFSIGNALED(status)) r.code = 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  /// Expects exit code 2 and exactly one "dfgnn: error: ..." line on stderr containing every fragment.
  void expect_user_error(const std::string& args, const std::vector<std::string>& fragments) const {
    SCOPED_TRACE("dfgnn " + args);
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << "stdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(!r.err.empty() && r.err.back() == '\n') << r.err;
    EXPECT_EQ(r.err.rfind("dfgnn: error: ", 0), 0u) << r.err;
    for (const std::string& f : fragments) EXPECT_NE(r.err.find(f), std::string::npos) << "'" << f << "' not in: " << r.err;
  }

  /// Runs c through the CLI and compares out.npy with the float64 reference.
  void round_trip(const RoundTrip& c) const {
    SCOPED_TRACE(c.model + (c.x_dst ? " x_dst" : "") + " H" + std::to_string(c.H) + " D" + std::to_string(c.D) +
                 (c.flat ? " flat" : "") +
                 " edge values " + std::to_string(c.edge_values) + " " + c.extra);
    std::vector<node_t> src = kSrc, dst = kDst;
    if (c.symmetrize) symmetrize(src, dst);
    const HostGraph g = graph_from_edges(kNodes, src, dst);
    const std::int64_t N = kNodes, H = c.H, D = c.D, E = g.num_edges();
    using Shape = std::vector<std::int64_t>;
    const Shape f3 = c.flat ? Shape{N, H * D} : Shape{N, H, D};
    const Shape f2 = H == 1 ? Shape{N} : Shape{N, H};
    const Shape fa = c.flat ? Shape{H * D} : Shape{H, D};
    const std::size_t nf = std::size_t(N * H * D), ns = std::size_t(N * H);
    const auto A = test::random_values(nf, 11), B = test::random_values(nf, 12), C = test::random_values(nf, 13);
    const auto L = test::random_values(ns, 14), R = test::random_values(ns, 15);
    auto a = test::random_values(std::size_t(H * D), 16);
    for (float& x : a) x /= std::sqrt(float(D));
    const auto W = test::random_values(std::size_t(E * c.edge_values), 17, 0.1f, 2.0f);

    const std::string out_path = path("out.npy");
    std::error_code ec;
    fs::remove(out_path, ec);
    std::string args = "attention --graph " + quote(tiny_graph()) + " --model " + c.model + " --heads " +
                       std::to_string(H) + " --out " + quote(out_path) + " " + c.extra;
    if (c.symmetrize) args += " --symmetrize";
    if (c.edge_values == 1) args += " --edge-values " + quote(npy("w.npy", {E}, W));
    if (c.edge_values > 1) args += " --edge-values " + quote(npy("w.npy", {E, c.edge_values}, W));
    const HostEdgeValues hw{c.edge_values ? W.data() : nullptr, c.edge_values};
    std::vector<double> ref;
    if (c.model == "gt") {
      args += " --q " + quote(npy("q.npy", f3, A)) + " --k " + quote(npy("k.npy", f3, B)) + " --v " +
              quote(npy("v.npy", f3, C));
      ref = reference_attention(g, c.H, c.D, GT{c.scale}, A.data(), B.data(), C.data(), hw);
    } else if (c.model == "agnn") {
      args += " --x " + quote(npy("x.npy", f3, A));
      if (c.x_dst) args += " --x-dst " + quote(npy("x_dst.npy", f3, B));
      ref = c.x_dst ? reference_attention(g, c.H, c.D, AGNN{}, A.data(), c.beta.data(), int(c.beta.size()), B.data(), hw)
                    : reference_attention(g, c.H, c.D, AGNN{}, A.data(), c.beta.data(), int(c.beta.size()), hw);
    } else if (c.model == "gat") {
      args += " --el " + quote(npy("el.npy", f2, L)) + " --er " + quote(npy("er.npy", f2, R)) + " --v " +
              quote(npy("v.npy", f3, C));
      ref = reference_attention(g, c.H, c.D, GAT{c.slope}, L.data(), R.data(), C.data(), hw);
    } else {
      args += " --xl " + quote(npy("xl.npy", f3, A)) + " --xr " + quote(npy("xr.npy", f3, B)) + " --a " +
              quote(npy("a.npy", fa, a));
      ref = reference_attention(g, c.H, c.D, GATv2{c.slope}, A.data(), B.data(), a.data(), hw);
    }

    const Result r = run(args);
    ASSERT_EQ(r.code, 0) << "dfgnn " << args << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;
    const std::string dims = "N=" + std::to_string(N) + " E=" + std::to_string(E) + " H=" + std::to_string(H) +
                             " D=" + std::to_string(D);
    EXPECT_NE(r.out.find(dims), std::string::npos) << "'" << dims << "' not in: " << r.out;
    const io::Array out = io::read_npy_f32(out_path);
    ASSERT_EQ(out.shape, (Shape{N, H, D}));
    ASSERT_EQ(out.data.size(), ref.size());
    EXPECT_LT(max_relative_error(out.data.data(), ref), 1e-5);
  }

  fs::path dir_;
};

// ---- attention round trips -----------------------------------------------------------------

TEST_F(CliTest, RoundTripEveryModel) {
  round_trip({"gt"});
  RoundTrip agnn{"agnn", 2, 3, false, 0, "--beta 0.5,2", 0.0f, 0.2f, {0.5f, 2.0f}};
  round_trip(agnn);
  agnn.x_dst = true;  // the destinations' own features
  round_trip(agnn);
  agnn.extra += " --reorder rcm";
  round_trip(agnn);
  round_trip({"gat"});
  round_trip({"gatv2"});
}

TEST_F(CliTest, RoundTripModelParameters) {
  round_trip({"gt", 2, 3, false, 0, "--scale 0.25", 0.25f});
  round_trip({"agnn", 3, 4, false, 0, "--beta 1.5", 0.0f, 0.2f, {1.5f}});
  round_trip({"gat", 2, 3, false, 0, "--slope 0.05", 0.0f, 0.05f});
  round_trip({"gatv2", 2, 3, false, 0, "--slope 0.3", 0.0f, 0.3f});
}

TEST_F(CliTest, RoundTripEdgeValues) {
  for (const std::string model : {"gt", "agnn", "gat", "gatv2"}) {
    round_trip({model, 2, 3, false, 1});  // [E]
    round_trip({model, 2, 3, false, 2});  // [E,H]
  }
}

// --reorder runs on the renumbered graph; the output comes back in file order, and the edge
// values, in file order, still reach their edges.
TEST_F(CliTest, RoundTripReordered) {
  for (const std::string model : {"gt", "agnn", "gat", "gatv2"})
    for (const std::string reorder : {"rcm", "degree"}) round_trip({model, 2, 3, false, 2, "--reorder " + reorder});
  round_trip({"gat", 2, 3, false, 0, "--reorder rcm --strategy smmf"});
}

TEST_F(CliTest, RoundTripFlatFeatureFiles) {
  for (const std::string model : {"gt", "agnn", "gat", "gatv2"}) round_trip({model, 2, 5, true});
  // One head: el / er as [N].
  round_trip({"gat", 1, 4, true, 1});
}

TEST_F(CliTest, RoundTripEveryStrategyAndSymmetrize) {
  for (const std::string strategy : {"smmf", "pmf", "unfused"}) {
    round_trip({"gt", 2, 3, false, 2, "--strategy " + strategy});
    round_trip({"gatv2", 2, 3, false, 0, "--strategy " + strategy});
  }
  RoundTrip sym{"gat", 2, 3};
  sym.symmetrize = true;
  round_trip(sym);
}

// ---- Cora ----------------------------------------------------------------------------------

// The CLI checks every gradient against the float64 reference itself (--reference fails with
// exit 1 beyond tolerance); here: that it runs, names and shapes the files.
TEST_F(CliTest, BackwardGradientsEveryModel) {
  const std::int64_t N = kNodes, H = 2, D = 3;
  const std::string dout = npy("dout.npy", {N, H, D}, test::random_values(std::size_t(N * H * D), 21));
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::vector<std::int64_t>>>>> models{
      {"gt", {{"dQ", {N, H, D}}, {"dK", {N, H, D}}, {"dV", {N, H, D}}}},
      {"agnn --beta 0.5,2", {{"dX", {N, H, D}}, {"dbeta", {H}}}},
      {"agnn --beta 0.5,2 --x-dst " + quote(npy("x_dst.npy", {N, H, D}, test::random_values(std::size_t(N * H * D), 22))),
       {{"dX", {N, H, D}}, {"dbeta", {H}}, {"dX_dst", {N, H, D}}}},
      {"gat", {{"del", {N, H}}, {"der", {N, H}}, {"dV", {N, H, D}}}},
      {"gatv2", {{"dXL", {N, H, D}}, {"dXR", {N, H, D}}, {"da", {H, D}}}}};
  for (const auto& [model, grads] : models) {
    SCOPED_TRACE(model);
    const Result r = run("attention --graph " + quote(tiny_graph()) + " --model " + model +
                         " --heads 2 --dim 3 --reference --grad-out " + quote(dout) + " --grad-prefix " +
                         quote(path("g_")));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    for (const auto& [name, shape] : grads) {
      EXPECT_NE(r.out.find("max relative error of " + name), std::string::npos) << r.out;
      EXPECT_EQ(io::read_npy_f32(path("g_" + name + ".npy")).shape, shape) << name;
    }
  }
  expect_user_error("attention --graph " + quote(tiny_graph()) + " --model gt --heads 2 --dim 3 --grad-prefix p",
                    {"--grad-prefix needs --grad-out"});
  expect_user_error("attention --graph " + quote(tiny_graph()) + " --model gt --heads 2 --dim 4 --grad-out " + quote(dout),
                    {"dout.npy", "shape"});
}

// --attention-out: the weights [E,H] in file order (also on the renumbered graph), checked by
// --reference and against the float64 reference here.
TEST_F(CliTest, AttentionWeights) {
  const HostGraph g = graph_from_edges(kNodes, kSrc, kDst);
  const std::int64_t E = g.num_edges(), H = 2, D = 3;
  const auto Q = test::random_values(std::size_t(kNodes * H * D), 41), K = test::random_values(std::size_t(kNodes * H * D), 42);
  const auto V = test::random_values(std::size_t(kNodes * H * D), 43);
  std::vector<double> ref;
  ReferenceOptions o;
  o.weights = &ref;
  reference_attention(g, 2, 3, GT{}, Q.data(), K.data(), V.data(), o);
  const std::string inputs = " --q " + quote(npy("q.npy", {kNodes, H, D}, Q)) + " --k " +
                             quote(npy("k.npy", {kNodes, H, D}, K)) + " --v " + quote(npy("v.npy", {kNodes, H, D}, V));
  for (const std::string reorder : {"none", "rcm"}) {
    SCOPED_TRACE(reorder);
    const Result r = run("attention --graph " + quote(tiny_graph()) + " --model gt --heads 2" + inputs +
                         " --reference --reorder " + reorder + " --attention-out " + quote(path("a.npy")));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("max relative error of the attention weights"), std::string::npos) << r.out;
    const io::Array a = io::read_npy_f32(path("a.npy"));
    ASSERT_EQ(a.shape, (std::vector<std::int64_t>{E, H}));
    EXPECT_LT(max_relative_error(a.data.data(), ref), 1e-5);
  }
  expect_user_error("attention --graph " + quote(tiny_graph()) + " --model gt --attention-out " +
                        quote(path("no/such/dir/a.npy")),
                    {"no/such/dir/a.npy"});
}

// A bipartite graph (--src-nodes): source-side inputs have NS rows, the others and out N;
// forward and gradients against the float64 reference, and what such a graph cannot run.
TEST_F(CliTest, BipartiteEveryModelAndGradient) {
  const std::int64_t NS = 9, N = 4, H = 2, D = 3;
  const std::vector<node_t> src{8, 0, 3, 3, 7, 1, 8}, dst{0, 0, 1, 2, 2, 2, 1};  // row 3 and sources 2, 4-6 without edges
  std::string text = "# bipartite\n";
  for (std::size_t i = 0; i < src.size(); ++i) text += std::to_string(src[i]) + " " + std::to_string(dst[i]) + "\n";
  const std::string graph = quote(write("bipartite.txt", text));
  const HostGraph g = graph_from_edges(node_t(NS), node_t(N), src, dst);
  const auto K = test::random_values(std::size_t(NS * H * D), 31), V = test::random_values(std::size_t(NS * H * D), 32);
  const auto Q = test::random_values(std::size_t(N * H * D), 33);
  const std::string dout = npy("dout.npy", {N, H, D}, test::random_values(std::size_t(N * H * D), 34));
  const std::string base = "attention --graph " + graph + " --nodes 4 --src-nodes 9 --heads 2 --dim 3";
  const Result r = run(base + " --model gt --q " + quote(npy("q.npy", {N, H, D}, Q)) + " --k " +
                       quote(npy("k.npy", {NS, H, D}, K)) + " --v " + quote(npy("v.npy", {NS, H * D}, V)) + " --out " +
                       quote(path("out.npy")) + " --reference --grad-out " + dout + " --grad-prefix " + quote(path("g_")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const io::Array out = io::read_npy_f32(path("out.npy"));
  ASSERT_EQ(out.shape, (std::vector<std::int64_t>{N, H, D}));
  EXPECT_LT(max_relative_error(out.data.data(), reference_attention(g, 2, 3, GT{}, Q.data(), K.data(), V.data())), 1e-5);
  EXPECT_EQ(io::read_npy_f32(path("g_dQ.npy")).shape, (std::vector<std::int64_t>{N, H, D}));
  EXPECT_EQ(io::read_npy_f32(path("g_dK.npy")).shape, (std::vector<std::int64_t>{NS, H, D}));
  for (const std::string model : {"gat", "gatv2"}) {
    SCOPED_TRACE(model);
    const Result m = run(base + " --model " + model + " --reference --grad-out " + dout + " --grad-prefix " +
                         quote(path(model + "_")));
    ASSERT_EQ(m.code, 0) << m.out << m.err;
    EXPECT_NE(m.out.find("max relative error of"), std::string::npos) << m.out;
  }
  EXPECT_EQ(io::read_npy_f32(path("gat_del.npy")).shape, (std::vector<std::int64_t>{NS, H}));
  EXPECT_EQ(io::read_npy_f32(path("gat_der.npy")).shape, (std::vector<std::int64_t>{N, H}));
  EXPECT_EQ(io::read_npy_f32(path("gatv2_dXL.npy")).shape, (std::vector<std::int64_t>{NS, H, D}));
  const Result info = run("info --graph " + graph + " --src-nodes 9");
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("source nodes 9\nnodes 3\n"), std::string::npos) << info.out;  // N: max destination + 1

  expect_user_error(base + " --model gt --k " + quote(path("q.npy")), {"q.npy", "expected shape [NS,H,D] or [NS,H*D]",
                                                                        "NS = 9"});
  // AGNN: X_dst [N,H,D] drawn where X [NS,H,D] cannot stand in for it, or read; dX and dX_dst by side.
  const Result a = run(base + " --model agnn --beta 0.5,2 --reference --grad-out " + dout + " --grad-prefix " +
                       quote(path("agnn_")));
  ASSERT_EQ(a.code, 0) << a.out << a.err;
  EXPECT_NE(a.out.find("max relative error of dX_dst vs"), std::string::npos) << a.out;
  EXPECT_EQ(io::read_npy_f32(path("agnn_dX.npy")).shape, (std::vector<std::int64_t>{NS, H, D}));
  EXPECT_EQ(io::read_npy_f32(path("agnn_dX_dst.npy")).shape, (std::vector<std::int64_t>{N, H, D}));
  const std::vector<float> beta{1.0f};
  ASSERT_EQ(run(base + " --model agnn --x " + quote(path("k.npy")) + " --x-dst " + quote(path("q.npy")) + " --out " +
                quote(path("agnn.npy"))).code, 0);
  EXPECT_LT(max_relative_error(io::read_npy_f32(path("agnn.npy")).data.data(),
                               reference_attention(g, 2, 3, AGNN{}, K.data(), beta.data(), 1, Q.data())),
            1e-5);
  expect_user_error(base + " --model agnn --x-dst " + quote(path("k.npy")),
                    {"k.npy", "expected shape [N,H,D] or [N,H*D] with N = 4"});
  expect_user_error("attention --graph " + graph + " --nodes 4 --src-nodes 8 --model gt", {"source id 8", "[0, 8)"});
  expect_user_error("attention --graph " + graph + " --nodes 2 --src-nodes 9 --model gt", {"destination id 2", "[0, 2)"});
  expect_user_error(base + " --model gt --symmetrize", {"--symmetrize", "--src-nodes"});
  expect_user_error(base + " --model gt --reorder rcm", {"reorder", "bipartite"});
  expect_user_error(base + " --model gt --strategy staged --backend kokkos", {"CUDA-native only"});
}

// --graph rmat:S:F[:SEED] is the graph `gen rmat` writes. --reference-sample checks a sample of
// every model's output and gradients (with edge features, edge values and weights; on a
// renumbered and on a bipartite graph) and names the gradients a sample cannot check.
TEST_F(CliTest, GeneratedGraphsAndSampledReference) {
  const std::string file = path("r.txt");
  ASSERT_EQ(run("gen rmat --scale 7 --edge-factor 6 --seed 4 --out " + quote(file)).code, 0);
  const std::string opts = " --model gat --heads 2 --dim 3 --out ";
  ASSERT_EQ(run("attention --graph " + quote(file) + opts + quote(path("f.npy"))).code, 0);
  ASSERT_EQ(run("attention --graph rmat:7:6:4" + opts + quote(path("g.npy"))).code, 0);
  EXPECT_EQ(io::read_npy_f32(path("f.npy")).data, io::read_npy_f32(path("g.npy")).data);

  const std::int64_t N = 128, E = std::int64_t(io::read_graph(file).src.size()), H = 2, D = 3;
  const std::string dout = quote(npy("dout.npy", {N, H, D}, test::random_values(std::size_t(N * H * D), 61)));
  const std::string ef = quote(npy("ef.npy", {E, H, D}, test::random_values(std::size_t(E * H * D), 62)));
  const std::string ev = quote(npy("ev.npy", {E}, test::random_values(std::size_t(E), 63, 0.5f, 2.0f)));
  const std::map<std::string, std::vector<std::string>> grads{
      {"gt", {"dQ", "dK", "dV", "dE"}}, {"gat", {"del", "der", "dV"}}, {"gatv2", {"dXL", "dXR"}}, {"agnn", {"dX"}}};
  for (const std::string reorder : {"none", "rcm"})
    for (const auto& [model, names] : grads) {
      SCOPED_TRACE(model + " " + reorder);
      const std::string extra = model == "gt" ? " --edge-features " + ef + " --edge-values " + ev +
                                                    " --attention-out " + quote(path("a.npy"))
                                              : "";
      const Result r = run("attention --graph rmat:7:6:4 --model " + model + " --heads 2 --dim 3 --reference-sample 3" +
                           " --reorder " + reorder + " --grad-out " + dout + " --grad-prefix " + quote(path("p_")) + extra);
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      EXPECT_NE(r.out.find("reference sample: "), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("max relative error of out vs float64 reference"), std::string::npos) << r.out;
      for (const std::string& name : names)
        EXPECT_NE(r.out.find("max relative error of " + name + " vs"), std::string::npos) << name << r.out;
      if (model == "gt") EXPECT_NE(r.out.find("max relative error of the attention weights"), std::string::npos);
      if (model == "gatv2") EXPECT_NE(r.out.find("da: not checked by a sample"), std::string::npos) << r.out;
      if (model == "agnn") EXPECT_NE(r.out.find("dbeta: not checked by a sample"), std::string::npos) << r.out;
    }
  // Bipartite: 30 sources, 12 destinations.
  const HostGraph b = test::random_bipartite(30, 12, 30, 10, 150, 64);
  std::string text;
  for (edge_t e = 0; e < b.num_edges(); ++e) text += std::to_string(b.src[e]) + " " + std::to_string(b.dst[e]) + "\n";
  const std::string bdout = quote(npy("bdout.npy", {12, H, D}, test::random_values(std::size_t(12 * H * D), 65)));
  const Result r = run("attention --graph " + quote(write("b.txt", text)) + " --src-nodes 30 --nodes 12 --model gt " +
                       "--heads 2 --dim 3 --reference-sample 2 --grad-out " + bdout + " --grad-prefix " + quote(path("b_")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("max relative error of dK vs"), std::string::npos) << r.out;

  expect_user_error("attention --graph rmat:7 --model gt", {"rmat:7", "expected rmat:SCALE:EDGE_FACTOR[:SEED]"});
  expect_user_error("attention --graph rmat:7:x --model gt", {"'x' is not an integer"});
  expect_user_error("attention --graph rmat:0:6 --model gt", {"SCALE out of range"});
  expect_user_error("attention --graph rmat:7:6 --nodes 9 --model gt", {"--nodes does not apply to a generated graph"});
  expect_user_error("attention --graph rmat:7:6 --model gt --reference-sample 0", {"--reference-sample"});
  expect_user_error("attention --graph rmat:7:6:4 --model gt --heads 2 --dim 3 --reference-sample 2 --grad-out " + dout +
                        " --dropout 0.1",
                    {"--reference-sample cannot check --dropout"});
}

// --edge-features: every model that has an edge argument, forward, weights and gradients (its
// gradient in PREFIX dE.npy, GAT's in PREFIX dee.npy) against the float64 reference, also on
// the renumbered graph; the shapes each takes, and AGNN, which takes none.
TEST_F(CliTest, EdgeFeatures) {
  const HostGraph g = graph_from_edges(kNodes, kSrc, kDst);
  const std::int64_t E = g.num_edges(), N = kNodes, H = 2, D = 3;
  const auto features = test::random_values(std::size_t(E * H * D), 51), scores = test::random_values(std::size_t(E * H), 52);
  const std::string dout = quote(npy("dout.npy", {N, H, D}, test::random_values(std::size_t(N * H * D), 53)));
  const std::string base = "attention --graph " + quote(tiny_graph()) + " --heads 2 --dim 3 --reference";
  for (const std::string reorder : {"none", "rcm"})
    for (const std::string model : {"gt", "gat", "gatv2"}) {
      SCOPED_TRACE(model + " " + reorder);
      const bool gat = model == "gat";
      const std::string e = gat ? npy("ee.npy", {E, H}, scores) : npy("e.npy", {E, H * D}, features);
      const std::string prefix = path(model + reorder + "_");
      const Result r = run(base + " --model " + model + " --edge-features " + quote(e) + " --reorder " + reorder +
                           " --attention-out " + quote(path("a.npy")) + " --grad-out " + dout + " --grad-prefix " +
                           quote(prefix));
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      const std::string grad = gat ? "dee" : "dE";
      EXPECT_NE(r.out.find("max relative error of " + grad + " vs float64 reference"), std::string::npos) << r.out;
      const io::Array de = io::read_npy_f32(prefix + grad + ".npy");
      EXPECT_EQ(de.shape, gat ? (std::vector<std::int64_t>{E, H}) : (std::vector<std::int64_t>{E, H, D}));
    }
  // The file's dE against the reference's, computed here.
  const auto Q = test::random_values(std::size_t(N * H * D), 54), K = test::random_values(std::size_t(N * H * D), 55);
  const auto V = test::random_values(std::size_t(N * H * D), 56), dy = io::read_npy_f32(path("dout.npy")).data;
  ReferenceOptions o;
  o.edge_features = features.data();
  const auto ref = reference_attention_backward(g, 2, 3, GT{}, Q.data(), K.data(), V.data(), dy.data(), o);
  const Result r = run(base + " --model gt --q " + quote(npy("q.npy", {N, H, D}, Q)) + " --k " +
                       quote(npy("k.npy", {N, H, D}, K)) + " --v " + quote(npy("v.npy", {N, H, D}, V)) +
                       " --edge-features " + quote(npy("e3.npy", {E, H, D}, features)) + " --grad-out " + dout +
                       " --grad-prefix " + quote(path("ref_")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_LT(max_relative_error(io::read_npy_f32(path("ref_dE.npy")).data.data(), ref.dE), 1e-5);

  expect_user_error(base + " --model agnn --edge-features " + quote(path("ee.npy")),
                    {"--edge-features: agnn takes no edge features"});
  expect_user_error(base + " --model gat --edge-features " + quote(path("e.npy")),
                    {"e.npy: shape [" + std::to_string(E) + ",6], expected [" + std::to_string(E) + ",2]"});
  expect_user_error(base + " --model gt --edge-features " + quote(path("ee.npy")), {"ee.npy: shape", "expected"});
  expect_user_error(base + " --model gt --symmetrize --edge-features " + quote(path("e.npy")),
                    {"--edge-features cannot be combined with --symmetrize"});
}

// Output paths and dOut's shape are checked before any compute: a typo fails at once, not after
// a long run (which printed its timing first), and a failed run creates no file nor empties one.
TEST_F(CliTest, OutputsCheckedBeforeCompute) {
  const std::int64_t N = kNodes, H = 2, D = 3;
  const std::string dout = quote(npy("dout.npy", {N, H, D}, test::random_values(std::size_t(N * H * D), 21)));
  const std::string base = "attention --graph " + quote(tiny_graph()) + " --model gt --heads 2 --dim 3";
  const std::string missing = path("no/such");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {base + " --out " + quote(missing + "/out.npy"), {"no/such/out.npy: cannot open for writing"}},
      {base + " --out " + quote(path("")), {"cannot open for writing", "directory"}},
      {base + " --grad-out " + dout + " --grad-prefix " + quote(missing + "/g_"), {"no/such/g_dQ.npy: cannot open for writing"}},
      {base + " --out " + quote(path("out.npy")) + " --grad-out " + quote(npy("d4.npy", {N, H, 4}, test::random_values(std::size_t(N * H * 4), 2))),
       {"d4.npy: shape [7,2,4], expected [7,2,3] or [7,6]"}},
      {"spmm --graph " + quote(tiny_graph()) + " --message copy_u --reduce sum --out " + quote(missing + "/out.npy"),
       {"no/such/out.npy: cannot open for writing"}},
      {"sddmm --graph " + quote(tiny_graph()) + " --op dot --json " + quote(missing + "/t.jsonl"), {"t.jsonl: cannot open for writing"}},
      {"spmm --graph " + quote(tiny_graph()) + " --message copy_u --reduce sum --heads 2 --dim 3 --grad-out " + dout + " --grad-prefix " +
           quote(missing + "/g_"), {"no/such/g_dlhs.npy: cannot open for writing"}}};
  write("out.npy", "old");
  for (const auto& [args, fragments] : cases) {
    expect_user_error(args, fragments);
    EXPECT_EQ(run(args).out, "") << args;  // nothing ran
  }
  EXPECT_EQ(slurp(path("out.npy")), "old");
}

// --dropout reaches the training forward and backward (the CLI's --reference checks the
// gradients against the float64 reference with the same mask) and changes the gradients.
TEST_F(CliTest, BackwardWithDropout) {
  const std::int64_t N = kNodes, H = 2, D = 3;
  const std::string dout = npy("dout.npy", {N, H, D}, test::random_values(std::size_t(N * H * D), 22));
  const std::vector<std::pair<std::string, std::string>> models{
      {"gt", "dQ"}, {"agnn --beta 0.5,2", "dX"}, {"gat", "del"}, {"gatv2", "dXL"}};
  for (const auto& [model, grad] : models) {
    SCOPED_TRACE(model);
    const std::string args = "attention --graph " + quote(tiny_graph()) + " --model " + model +
                             " --heads 2 --dim 3 --reference --grad-out " + quote(dout);
    Result r = run(args + " --grad-prefix " + quote(path("plain_")));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    r = run(args + " --dropout 0.4 --grad-prefix " + quote(path("drop_")));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(io::read_npy_f32(path("plain_" + grad + ".npy")).data, io::read_npy_f32(path("drop_" + grad + ".npy")).data);
  }
  const std::string base = "attention --graph " + quote(tiny_graph()) + " --model gt --heads 2 --dim 3";
  expect_user_error(base + " --dropout 0.1", {"--dropout applies to training", "--grad-out"});
  expect_user_error(base + " --grad-out " + quote(dout) + " --dropout 1", {"--dropout must be in [0, 1)"});
  expect_user_error(base + " --grad-out " + quote(dout) + " --dropout -0.5", {"--dropout must be in [0, 1)"});
  expect_user_error("bench --graph " + quote(tiny_graph()) + " --model gt --dropout 0.1", {"--dropout", "--backward"});
}

// --reorder in training: the CLI checks the gradients, in file order, against the float64
// reference on the file's graph (edge values and the dropout mask follow the edges), and they
// match the run without renumbering.
TEST_F(CliTest, BackwardReordered) {
  const std::int64_t N = kNodes, H = 2, D = 3, E = std::int64_t(kSrc.size());
  const std::string dout = npy("dout.npy", {N, H, D}, test::random_values(std::size_t(N * H * D), 23));
  const std::string w = npy("w.npy", {E, H}, test::random_values(std::size_t(E * H), 24, 0.1f, 2.0f));
  const std::vector<std::pair<std::string, std::vector<std::string>>> models{
      {"gt", {"dQ", "dK", "dV"}}, {"agnn --beta 0.5,2", {"dX", "dbeta"}}, {"gat", {"del", "der", "dV"}},
      {"gatv2", {"dXL", "dXR", "da"}}};
  for (const auto& [model, grads] : models) {
    const std::string args = "attention --graph " + quote(tiny_graph()) + " --model " + model +
                             " --heads 2 --dim 3 --edge-values " + quote(w) + " --dropout 0.3 --reference --grad-out " +
                             quote(dout);
    Result r = run(args + " --grad-prefix " + quote(path("file_")));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    for (const std::string reorder : {"rcm", "degree"}) {
      SCOPED_TRACE(model + " " + reorder);
      r = run(args + " --reorder " + reorder + " --grad-prefix " + quote(path(reorder + "_")));
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      EXPECT_NE(r.out.find("reorder=" + reorder), std::string::npos) << r.out;
      for (const std::string& name : grads) {
        const io::Array a = io::read_npy_f32(path("file_" + name + ".npy"));
        const io::Array b = io::read_npy_f32(path(reorder + "_" + name + ".npy"));
        ASSERT_EQ(a.shape, b.shape) << name;
        const std::vector<double> ref(a.data.begin(), a.data.end());
        EXPECT_LT(max_relative_error(b.data.data(), ref), 1e-5) << name;
      }
    }
  }
}

// bench on the portable kernels: forward (checked) and training lines, and one JSON object per
// timing carrying the dropout rate of its pass (none in inference).
TEST_F(CliTest, BenchTrainingWithDropout) {
  const Result r = run("bench --graph " + quote(tiny_graph()) + " --model gat --heads 2 --dim 8 --backend kokkos"
                       " --strategy auto,online --warmup 0 --iters 2 --check --backward --dropout 0.2 --json " +
                       quote(path("b.jsonl")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("fwd+bwd"), std::string::npos) << r.out;
  std::ifstream json(path("b.jsonl"));
  std::string line;
  int forward = 0, training = 0;
  while (std::getline(json, line)) {
    const bool fwd = line.find("\"pass\": \"fwd\"") != std::string::npos;
    (fwd ? forward : training) += 1;
    EXPECT_NE(line.find(fwd ? "\"dropout\": 0," : "\"dropout\": 0.2,"), std::string::npos) << line;
    EXPECT_NE(line.find("\"dtype\": \"f32\"}"), std::string::npos) << line;
  }
  EXPECT_EQ(forward, 2);  // auto and online
  EXPECT_EQ(training, 2);
}

// --dtype on the portable kernels: every model's forward and backward in bf16 and f16 through
// Online (the CLI checks them against the float64 reference on the rounded inputs, --reference
// failing beyond the type's contract), the files holding the type's values; another strategy
// and an unknown name are errors naming them; bench reports the type.
TEST_F(CliTest, TwoByteTypesOnThePortableKernels) {
  const std::int64_t N = kNodes, H = 2, D = 8;
  const std::string g = "--graph " + quote(tiny_graph()) + " --heads 2 --dim 8 --backend kokkos";
  const std::string dout = npy("dout.npy", {N, H, D}, test::random_values(std::size_t(N * H * D), 22));
  for (const std::string type : {"bf16", "f16"})
    for (const std::string model : {"gt", "agnn", "gat", "gatv2"}) {
      SCOPED_TRACE(type + " " + model);
      const Result r = run("attention " + g + " --model " + model + " --dtype " + type + " --reference --out " +
                           quote(path("out.npy")) + " --grad-out " + quote(dout) + " --grad-prefix " + quote(path("g_")));
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      EXPECT_NE(r.out.find("strategy=online backend=kokkos"), std::string::npos) << r.out;
      for (float x : io::read_npy_f32(path("out.npy")).data) EXPECT_EQ(x, rounded(parse_dtype(type), x));
    }
  expect_user_error("attention " + g + " --model gt --dtype bf16 --strategy smmf",
                    {"plan: the smmf strategy runs float32 tensors only; bf16 ones run Online (Auto picks it)"});
  expect_user_error("attention " + g + " --model gt --dtype f64", {"unknown element type 'f64' (expected f32, bf16 or f16)"});
  const Result r = run("bench " + g + " --model gat --dtype f16 --strategy auto --warmup 0 --iters 1 --check "
                       "--backward --json " + quote(path("b.jsonl")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string json = slurp(path("b.jsonl"));
  EXPECT_EQ(std::count(json.begin(), json.end(), '\n'), 2) << json;
  EXPECT_EQ(json.find("\"dtype\": \"f32\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"dtype\": \"f16\""), std::string::npos) << json;
}

// bench --reorder checks the renumbered graph's output and says so in its header and JSON.
TEST_F(CliTest, BenchReordered) {
  const Result r = run("bench --graph " + cora() + " --symmetrize --model gt --heads 2 --dim 8 --backend kokkos"
                       " --strategy auto --warmup 0 --iters 1 --check --backward --reorder rcm --json " +
                       quote(path("b.jsonl")));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("N=2708 E=10556 H=2 D=8 reorder=rcm"), std::string::npos) << r.out;
  const std::string json = slurp(path("b.jsonl"));
  EXPECT_EQ(std::count(json.begin(), json.end(), '\n'), 2) << json;
  EXPECT_NE(json.find("\"reorder\": \"rcm\""), std::string::npos) << json;
  expect_user_error("bench --graph " + quote(tiny_graph()) + " --model gt --reorder metis", {"unknown ordering 'metis'"});
  expect_user_error("attention --graph " + quote(tiny_graph()) + " --model gt --reorder", {"--reorder"});
}

TEST_F(CliTest, CoraEveryModelAndStrategy) {
  for (const std::string model : {"gt", "agnn", "gat", "gatv2"}) {
    for (const std::string strategy : {"auto", "smmf", "pmf", "unfused"}) {
      const std::string args = "attention --graph " + cora() + " --symmetrize --model " + model +
                               " --heads 2 --dim 8 --strategy " + strategy + " --reference";
      SCOPED_TRACE(args);
      const Result r = run(args);
      EXPECT_EQ(r.code, 0) << r.out << r.err;
      EXPECT_NE(r.out.find("max relative error"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("N=2708 E=10556 H=2 D=8"), std::string::npos) << r.out;
      if (strategy != "auto") EXPECT_NE(r.out.find("strategy=" + strategy), std::string::npos) << r.out;
    }
  }
}

TEST_F(CliTest, InfoOnCora) {
  const Result r = run("info --graph " + cora() + " --symmetrize");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("nodes 2708\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("edges 10556\n"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  // Without --symmetrize the file's own edges (fewer).
  const Result raw = run("info --graph " + cora());
  ASSERT_EQ(raw.code, 0) << raw.err;
  EXPECT_EQ(raw.out.find("edges 10556\n"), std::string::npos) << raw.out;
}

// --version names the version, the Kokkos the binary was built with and its backends, and
// whether it has the CUDA-native kernels, on one line.
TEST_F(CliTest, Version) {
  const Result r = run("--version");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("dfgnn 0.1.0 (", 0), 0u) << r.out;
  const int v = KOKKOS_VERSION;
  const std::string kokkos = "; Kokkos " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + ".";
  EXPECT_NE(r.out.find(kokkos), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Serial"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; CUDA-native kernels: "), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

// info --models lists --model's values, one a line (tools/run-cora.sh loops over them), with no
// graph.
TEST_F(CliTest, InfoListsTheModels) {
  const Result r = run("info --models");
  ASSERT_EQ(r.code, 0) << r.err;
  std::string want;
  for (const ScoreKind kind : kModels) want += std::string(to_string(kind)) + "\n";
  EXPECT_EQ(r.out, want);
}

// ---- gen -----------------------------------------------------------------------------------

/// The integer after "# <key> " in a generated edge list's header, or -1.
long long header_value(const std::string& text, const std::string& key) {
  const std::string tag = "# " + key + " ";
  const auto at = text.find(tag);
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + tag.size()));
}

TEST_F(CliTest, GenThenInfo) {
  for (const std::string file : {"sbm.txt", "knn.txt.gz", "rmat.txt"}) {
    SCOPED_TRACE(file);
    const std::string f = path(file);
    const Result gen = run(file == "sbm.txt"    ? "gen sbm --graphs 4 --out " + quote(f)
                           : file == "rmat.txt" ? "gen rmat --scale 5 --edge-factor 1 --seed 3 --out " + quote(f)
                                                : "gen knn --graphs 3 --k 5 --seed 2 --out " + quote(f));
    ASSERT_EQ(gen.code, 0) << gen.err;
    ASSERT_TRUE(fs::exists(f));
    // The counts as the library reads the (possibly gzipped) file, and as its header states.
    const io::EdgeList list = io::read_graph(f);
    const long long edges = static_cast<long long>(list.src.size());
    long long nodes = list.num_nodes;
    if (file != "knn.txt.gz") {
      const std::string text = slurp(f);
      EXPECT_EQ(header_value(text, "edges"), edges);
      nodes = header_value(text, "nodes");
      EXPECT_EQ(nodes, list.num_nodes) << text.substr(0, 300);  // isolated last nodes included
    }
    if (file == "rmat.txt") EXPECT_EQ(nodes, 32);
    EXPECT_GT(edges, 0);
    const Result info = run("info --graph " + quote(f) + " --nodes " + std::to_string(nodes));
    ASSERT_EQ(info.code, 0) << info.err;
    EXPECT_NE(info.out.find("nodes " + std::to_string(nodes) + "\n"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("edges " + std::to_string(edges) + "\n"), std::string::npos) << info.out;
    // And without --nodes: the same graph, its node count from the file's `# nodes` line.
    const Result plain = run("info --graph " + quote(f));
    ASSERT_EQ(plain.code, 0) << plain.err;
    EXPECT_NE(plain.out.find("nodes " + std::to_string(nodes) + "\nedges " + std::to_string(edges) + "\n"),
              std::string::npos)
        << plain.out;
  }
}

// ---- help and user errors ------------------------------------------------------------------

// --help lists every option a command's parser accepts; a command's help is its own.
TEST_F(CliTest, Help) {
  for (const auto& [args, command] : std::vector<std::pair<std::string, std::string>>{
           {"--help", "dfgnn attention"}, {"attention --help", "dfgnn attention"}, {"gen rmat -h", "dfgnn gen rmat"}}) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 0) << args;
    EXPECT_NE(r.out.find("usage:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(command), std::string::npos) << r.out;
  }
  const std::string all = run("--help").out, bench = run("bench -h").out;
  for (const std::string option : {"--graph", "--src-nodes", "--q", "--beta", "--xr", "--scale", "--slope", "--dtype",
                                   "--grad-out", "--reference-sample", "--iters", "--backward", "--edge-factor", "--kind",
                                   "--k ", "--message", "--lhs", "--op", "--y "})
    EXPECT_NE(all.find(option), std::string::npos) << option;
  for (const std::string option : {"--inputs", "--check", "--json", "--strategy", "--scale", "--nodes"})
    EXPECT_NE(bench.find(option), std::string::npos) << option;
  EXPECT_EQ(bench.find("--grad-out G.npy"), std::string::npos) << bench;  // attention's option, not bench's
  const Result none = run("");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("usage:"), std::string::npos) << none.err;
}

TEST_F(CliTest, GraphFileErrors) {
  const std::string missing = path("no_such_graph.txt");
  expect_user_error("info --graph " + quote(missing), {"no_such_graph.txt", "cannot open"});
  expect_user_error("attention --graph " + quote(missing) + " --model gt", {"no_such_graph.txt"});

  const std::string token = write("token.txt", "0 1\n1 2\n2 x3\n");
  expect_user_error("info --graph " + quote(token), {"token.txt:3:", "x3"});
  expect_user_error("attention --graph " + quote(token) + " --model gat --dim 4", {"token.txt:3:", "x3"});

  const std::string negative = write("negative.txt", "0 1\n# comment\n-4 2\n");
  expect_user_error("info --graph " + quote(negative), {"negative.txt:3:", "negative", "-4"});

  const std::string big = write("big.txt", "0 1\n5 2\n");
  expect_user_error("info --graph " + quote(big) + " --nodes 4", {"big.txt:2:", "5", ">= num_nodes 4"});
  EXPECT_EQ(run("info --graph " + quote(big) + " --nodes 6").code, 0);

  const std::string few = write("few.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 4\n1 2\n2 3\n");
  expect_user_error("info --graph " + quote(few), {"few.mtx", "expected 4 entries, found 2"});
  const std::string many = write("many.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n2 3\n");
  expect_user_error("info --graph " + quote(many), {"many.mtx:4:", "more entries"});
  // A file's bytes and a path echoed in the message are escaped: still one line.
  expect_user_error("info --graph " + quote(write("bin.txt", "0 1\n\x01\x1b[2J 2\n")), {"bin.txt:2:", "'\\x01\\x1B[2J'"});
  expect_user_error("info --graph " + quote(path("two\nlines.txt")), {"two\\nlines.txt: cannot open"});
  const std::string good = write("good.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 3\n");
  const Result ok = run("info --graph " + quote(good));
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("nodes 3\nedges 2\n"), std::string::npos) << ok.out;
}

// Sizes that cannot fit are refused up front with the bytes they need, not left to the OOM
// killer (exit 1, or killed). 2^31 - 1 nodes need 32 GiB of offsets: under an 8 GiB address
// space (not under ASan, whose shadow memory needs more) that is refused on any machine.
TEST_F(CliTest, SizesThatCannotFit) {
  // Graphs past an 8 GB address space, refused by name. A GPU build's runtime reserves more
  // address space than that at start-up (CUDA fails its initialisation under the limit), so
  // only the host builds run these three; the overflow cases below run everywhere.
#if !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP) && !defined(KOKKOS_ENABLE_SYCL)
#if !defined(__SANITIZE_ADDRESS__)
  limit_ = "ulimit -v 8000000; ";
#endif
  const std::string far = write("far.txt", "0 1\n2147483646 0\n");
  expect_user_error("info --graph " + quote(far), {"graph: 2147483647 nodes and 2 edges needs", "bytes of host memory"});
  expect_user_error("info --graph " + quote(write("one.txt", "0 1\n")) + " --nodes 2147483647", {"2147483647 nodes", "needs"});
  const std::string mtx = write("far.mtx", "%%MatrixMarket matrix coordinate pattern general\n2147483647 2147483647 1\n1 2\n");
  expect_user_error("info --graph " + quote(mtx), {"2147483647 nodes", "needs"});
  limit_.clear();
#endif
  // N*H*D overflows 64 bits; or fits but not in memory.
  const std::string one = quote(write("one_edge.txt", "0 1\n"));
  expect_user_error("attention --graph " + one + " --nodes 1048576 --model gt --heads 65536 --dim 1073741824 --strategy pmf",
                    {"nodes x heads x dim: 1048576 x 65536 x 1073741824 overflows 64 bits"});
  expect_user_error("attention --graph " + one + " --nodes 1024 --model gt --heads 65536 --dim 1073741824",
                    {"attention over 1024 nodes x 65536 heads x 1073741824 features needs", "bytes of host memory"});
}

TEST_F(CliTest, TensorFileErrors) {
  const std::string g = quote(tiny_graph());
  const std::int64_t N = kNodes, H = 2, D = 3, E = std::int64_t(kSrc.size());
  const auto v = test::random_values(std::size_t((N + 1) * H * (D + 1)), 3);
  const std::string base = "attention --graph " + g + " --model gt --heads 2";
  expect_user_error(base + " --q " + quote(npy("q.npy", {N + 1, H, D}, v)), {"q.npy", "shape"});
  expect_user_error(base + " --q " + quote(npy("q.npy", {N, H * D + 1}, v)), {"q.npy", "shape"});
  // q fixes D = 3; a k of another width is named.
  expect_user_error(base + " --q " + quote(npy("q.npy", {N, H, D}, v)) + " --k " + quote(npy("k.npy", {N, H, D + 1}, v)),
                    {"k.npy", "shape"});
  expect_user_error(base + " --dim 8 --q " + quote(npy("q.npy", {N, H, D}, v)), {"q.npy", "D = 3 but --dim 8"});

  // A .npy file cut short inside its data.
  const std::string q = npy("trunc.npy", {N, H, D}, v);
  fs::resize_file(q, fs::file_size(q) - 6);
  expect_user_error(base + " --q " + quote(q), {"trunc.npy", "truncated"});

  // A header with a line break and raw bytes (echoed escaped).
  const std::string header = "{'descr': '<f4\n\x93', 'fortran_order': False, 'shape': (7,), }\n";
  const std::string raw = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header;
  expect_user_error(base + " --q " + quote(write("header.npy", raw)), {"header.npy: unsupported dtype '<f4\\n\\x93'"});

  // Edge values: wrong edge count, wrong head count.
  expect_user_error(base + " --edge-values " + quote(npy("w.npy", {E + 1}, v)), {"w.npy", std::to_string(E)});
  expect_user_error(base + " --edge-values " + quote(npy("w.npy", {E - 1, H}, v)), {"w.npy", std::to_string(E)});
  expect_user_error(base + " --edge-values " + quote(npy("w.npy", {E, 3}, v)),
                    {"w.npy: shape [14,3], expected [14] or [14,1] or [14,2]"});

  // GAT's el of the wrong node count; GATv2's a of the wrong width.
  // NaN propagates (the defined result); --reference names the input instead of the kernels.
  auto nan = v;
  nan[5] = std::nanf("");
  expect_user_error(base + " --reference --k " + quote(npy("k.npy", {N, H, D}, nan)),
                    {"k.npy holds NaN or Inf", "--reference"});
  EXPECT_EQ(run(base + " --k " + quote(npy("k.npy", {N, H, D}, nan))).code, 0);
  expect_user_error("attention --graph " + g + " --model gat --heads 2 --dim 3 --el " + quote(npy("el.npy", {N - 1, H}, v)),
                    {"el.npy: shape [6,2], expected [7,2]"});
  expect_user_error("attention --graph " + g + " --model gatv2 --heads 2 --dim 3 --a " + quote(npy("a.npy", {H, D + 1}, v)),
                    {"a.npy", "shape"});
}

TEST_F(CliTest, OptionErrors) {
  const std::string g = quote(tiny_graph());
  const std::string base = "attention --graph " + g;
  expect_user_error(base + " --model gcn", {"gcn"});
  expect_user_error(base + " --model gt --strategy fastest", {"strategy", "fastest"});
  expect_user_error(base + " --model gt --colour red", {"unknown option --colour"});
  expect_user_error(base + " --model gt --heads 0", {"--heads", ">= 1"});
  expect_user_error(base + " --model gt --heads -3", {"--heads", ">= 1"});
  expect_user_error(base + " --model gt --heads two", {"--heads", "'two'", "not an integer"});
  expect_user_error(base + " --model gt --dim 0", {"--dim", ">= 1"});
  expect_user_error(base + " --model agnn --heads 2 --beta 1,2,3", {"--beta", "3 values", "H = 2"});
  expect_user_error(base + " --model agnn --heads 2 --beta 1,abc", {"--beta", "abc"});
  expect_user_error(base + " --model gat --scale 2", {"--scale does not apply to --model gat"});
  expect_user_error(base + " --model gt --slope 0.1", {"--slope does not apply to --model gt"});
  expect_user_error(base + " --model gat --q q.npy", {"--q does not apply to --model gat"});
  expect_user_error(base + " --model gt --scale 0.1,5", {"--scale", "one number, got 2"});
  expect_user_error(base + " --model gt --scale 0", {"--scale must be nonzero"});
  expect_user_error(base + " --model gt --heads 2 --heads 3", {"--heads given twice"});
  expect_user_error(base + " --model gt --heads 4294967298", {"--heads", "out of range"});
  expect_user_error(base + " --model gt --dim 99999999999999999999", {"--dim", "out of range"});
  expect_user_error(base + " --model gt --seed 1.5", {"--seed", "not an integer"});
  expect_user_error("info --graph " + g + " --nodes -5", {"--nodes", "out of range [0,"});
  expect_user_error("bench --graph " + g + " --model gt --iters 1 --warmup 2147483647", {"--warmup", "out of range"});
  expect_user_error("bench --graph " + g + " --model gt --iters 0", {"--iters", "out of range [1,"});
  expect_user_error("bench --graph " + g + " --model gt --inputs " + quote(path("none")), {"--inputs", "not a directory"});
  expect_user_error(base + " --model gt --heads", {"--heads", "needs a value"});
  expect_user_error(base + " --model gt stray", {"unexpected argument 'stray'"});
  expect_user_error("attention --model gt --heads 2", {"missing --graph"});
  expect_user_error("attention --graph " + g, {"missing --model"});
  expect_user_error("info --model gt", {"missing --graph"});
  expect_user_error("frobnicate --graph " + g, {"unknown command", "frobnicate"});
  expect_user_error("gen", {"gen needs a generator"});
  expect_user_error("gen tree --out " + quote(path("t.txt")), {"unknown generator", "tree"});
  expect_user_error("gen sbm --graphs 0 --out " + quote(path("t.txt")), {"--graphs"});
  expect_user_error("gen rmat --graphs 3 --out " + quote(path("t.txt")), {"unknown option --graphs"});
  expect_user_error("gen rmat --scale 30 --edge-factor 1048576 --out " + quote(path("t.txt")),
                    {"rmat", "bytes of host memory"});
}

// `gen suite` writes the graph `dfgnn study --graphs NAME` runs: rmat-s9-d8 is `gen rmat`'s
// graph of scale 9, edge factor 8 and the default seed, edge for edge.
TEST_F(CliTest, GenSuiteIsTheStudysGraph) {
  const std::string suite = path("suite.txt"), rmat = path("rmat.txt");
  const Result a = run("gen suite --name rmat-s9-d8 --out " + quote(suite));
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(run("gen rmat --scale 9 --edge-factor 8 --out " + quote(rmat)).code, 0);
  const io::EdgeList x = io::read_graph(suite), y = io::read_graph(rmat);
  EXPECT_EQ(x.num_nodes, 512);
  EXPECT_EQ(x.src, y.src);
  EXPECT_EQ(x.dst, y.dst);
  EXPECT_NE(slurp(suite).find("# suite rmat-s9-d8"), std::string::npos);
  expect_user_error("gen suite --name nope --out " + quote(suite), {"--name", "unknown graph 'nope'", "mnist-16"});
  expect_user_error("gen suite --name cora --out " + quote(suite), {"--name cora", "needs --data"});
  expect_user_error("gen suite --out " + quote(suite), {"--name"});
}

// Kokkos' own options never reach Kokkos; --help is dfgnn's.
TEST_F(CliTest, KokkosLookalikeOptions) {
  const std::string g = quote(tiny_graph());
  expect_user_error("info --graph " + g + " --threads 2", {"--threads"});
  const Result r = run("info --graph " + g + " --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("usage:", 0), 0u) << r.out;
}

// ---- spmm / sddmm --------------------------------------------------------------------------

// Every operand shape the files may have ([R], [R,H], [R,H*D], [R,1|H,1|D]), each message
// family and reduce, with and without reordering, against the float64 reference; gradients'
// files named and shaped (the CLI's own --reference checks their values).
TEST_F(CliTest, SpmmRoundTrips) {
  const HostGraph g = graph_from_edges(kNodes, kSrc, kDst);
  const std::int64_t N = kNodes, E = g.num_edges(), H = 2, D = 3;
  using Shape = std::vector<std::int64_t>;
  struct Case {
    std::string message, reduce;
    Shape lhs, rhs;  // file shapes; empty rhs: a copy
    int lh, ld, rh, rd;  // the operands as [R, h, d]
  };
  const std::vector<Case> cases{{"copy_u", "sum", {N, H, D}, {}, 2, 3, 0, 0},
                                {"copy_e", "max", {E}, {}, 1, 1, 0, 0},
                                {"u_mul_e", "mean", {N, H * D}, {E, H}, 2, 3, 2, 1},
                                {"u_sub_v", "min", {N, 1, D}, {N, H, D}, 1, 3, 2, 3},
                                {"u_div_e", "sum", {N, H, 1}, {E, 1, D}, 2, 1, 1, 3}};
  const std::string dout = npy("dout.npy", {N, H, D}, test::random_values(std::size_t(N * H * D), 5));
  for (const Case& c : cases)
    for (const std::string reorder : {"none", "rcm", "degree"}) {
      SCOPED_TRACE(c.message + " " + c.reduce + " " + reorder);
      const Message m = parse_message(c.message);
      auto values = [](std::size_t n, unsigned seed) {  // bounded away from 0: divisors
        auto v = test::random_values(n, seed, 0.5f, 1.5f);
        for (std::size_t i = 0; i < n; i += 2) v[i] = -v[i];
        return v;
      };
      const std::size_t lrows = m.lhs == Target::E ? std::size_t(E) : std::size_t(N);
      const std::size_t rrows = m.rhs == Target::E ? std::size_t(E) : std::size_t(N);
      const auto L = values(lrows * std::size_t(c.lh * c.ld), 1), R = values(rrows * std::size_t(c.rh * c.rd), 2);
      std::string args = "spmm --graph " + quote(tiny_graph()) + " --message " + c.message + " --reduce " + c.reduce +
                         " --heads 2 --dim 3 --reorder " + reorder + " --reference --out " + quote(path("out.npy")) +
                         " --grad-out " + quote(dout) + " --grad-prefix " + quote(path("g_")) + " --lhs " +
                         quote(npy("lhs.npy", c.lhs, L));
      if (!c.rhs.empty()) args += " --rhs " + quote(npy("rhs.npy", c.rhs, R));
      const Result r = run(args);
      ASSERT_EQ(r.code, 0) << r.out << r.err;
      EXPECT_NE(r.out.find("N=7 E=14 H=2 D=3 reorder=" + reorder), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("max relative error of dlhs"), std::string::npos) << r.out;
      const auto ref = reference_gspmm(g, m, parse_reduce(c.reduce), 2, 3, {L.data(), c.lh, c.ld},
                                       c.rhs.empty() ? Operand{} : Operand{R.data(), c.rh, c.rd});
      const io::Array out = io::read_npy_f32(path("out.npy"));
      EXPECT_EQ(out.shape, (Shape{N, H, D}));
      EXPECT_LT(max_relative_error(out.data.data(), ref), 1e-6);
      EXPECT_EQ(io::read_npy_f32(path("g_dlhs.npy")).shape, (Shape{std::int64_t(lrows), c.lh, c.ld}));
      if (!c.rhs.empty()) EXPECT_EQ(io::read_npy_f32(path("g_drhs.npy")).shape, (Shape{std::int64_t(rrows), c.rh, c.rd}));
    }
}

TEST_F(CliTest, SddmmRoundTrips) {
  const HostGraph g = graph_from_edges(kNodes, kSrc, kDst);
  const std::int64_t N = kNodes, E = g.num_edges(), H = 2, D = 4;
  const auto X = test::random_values(std::size_t(N * H * D), 3), Y = test::random_values(std::size_t(N * H), 4, 0.5f, 2.0f);
  for (const std::string op : {"dot", "div"}) {
    const std::int64_t width = op == "dot" ? 1 : D;
    const std::string args = "sddmm --graph " + quote(tiny_graph()) + " --op " + op + " --heads 2 --x " +
                             quote(npy("x.npy", {N, H * D}, X)) + " --y " + quote(npy("y.npy", {N, H}, Y)) +
                             " --reorder rcm --reference --out " + quote(path("e.npy")) + " --grad-prefix " +
                             quote(path("grad_")) + " --grad-out " +
                             quote(npy("de.npy", {E, H, width}, test::random_values(std::size_t(E * H * width), 6)));
    const Result r = run(args);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("sddmm " + op + " N=7 E=14 H=2 D=4"), std::string::npos) << r.out;
    const io::Array out = io::read_npy_f32(path("e.npy"));
    EXPECT_EQ(out.shape, (std::vector<std::int64_t>{E, H, width}));
    // y is [N,H] = [N,H,1]: a dot of x with y broadcast over the features.
    EXPECT_LT(max_relative_error(out.data.data(), reference_gsddmm(g, parse_binary_op(op), 2, 4, {X.data(), 2, 4},
                                                                   {Y.data(), 2, 1})),
              1e-6);
  }
}

TEST_F(CliTest, SpmmOnCoraWithTiming) {
  for (const std::string reorder : {"none", "rcm"}) {
    const Result r = run("spmm --graph " + cora() + " --symmetrize --message u_mul_v --reduce max --heads 2 --dim 8 "
                         "--reference --iters 2 --warmup 1 --reorder " + reorder + " --json " + quote(path("mp.jsonl")) +
                         " --name " + quote("cora \"" + reorder + "\"\\"));
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("N=2708 E=10556 H=2 D=8 reorder=" + reorder), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("forward: median"), std::string::npos) << r.out;
  }
  const std::string json = slurp(path("mp.jsonl"));
  EXPECT_EQ(std::count(json.begin(), json.end(), '\n'), 2) << json;
  EXPECT_NE(json.find("\"reorder\": \"rcm\""), std::string::npos) << json;
  EXPECT_NE(json.find(R"("name": "cora \"rcm\"\\")"), std::string::npos) << json;  // escaped
}

TEST_F(CliTest, SpmmAndSddmmErrors) {
  const std::string g = " --graph " + quote(tiny_graph());
  const std::int64_t N = kNodes, E = std::int64_t(kSrc.size());
  const auto v = test::random_values(std::size_t(4 * N * E), 7);
  expect_user_error("spmm" + g + " --reduce sum", {"missing --message"});
  expect_user_error("spmm" + g + " --message u_dot_e --reduce sum", {"unknown message 'u_dot_e'"});
  expect_user_error("spmm" + g + " --message copy_u --reduce prod", {"unknown reduce 'prod'"});
  expect_user_error("spmm" + g + " --message copy_u --reduce sum --rhs x.npy", {"--rhs", "copy_u takes one operand"});
  expect_user_error("spmm" + g + " --message copy_u --reduce sum --op dot", {"unknown option --op (an option of sddmm)"});
  expect_user_error("sddmm" + g + " --op dot --lhs x.npy", {"unknown option --lhs (an option of spmm)"});
  expect_user_error("sddmm" + g + " --op pow", {"unknown operator 'pow'"});
  expect_user_error("spmm" + g + " --message copy_u --reduce sum --reorder metis", {"unknown ordering 'metis'"});
  expect_user_error("spmm" + g + " --message copy_u --reduce sum --grad-prefix p", {"--grad-prefix needs --grad-out"});
  expect_user_error("spmm" + g + " --message u_mul_e --reduce sum --symmetrize --rhs " + quote(npy("w.npy", {E}, v)),
                    {"--rhs", "--symmetrize"});
  expect_user_error("spmm" + g + " --message u_mul_e --reduce sum --heads 2 --rhs " + quote(npy("w.npy", {E, 3}, v)),
                    {"w.npy: shape [14,3]", "R = 14 (edges), H = 2"});
  expect_user_error("spmm" + g + " --message copy_u --reduce sum --lhs " + quote(npy("x.npy", {N + 1, 2}, v)),
                    {"x.npy: shape [8,2]", "R = 7 (nodes)"});
  expect_user_error("sddmm" + g + " --op add --dim 2 --grad-out " + quote(npy("d.npy", {E, 1, 3}, v)),
                    {"d.npy: shape [14,1,3], expected [14,1,2] or [14,2]"});
  expect_user_error("spmm" + g + " --message copy_u --reduce sum --backend tpu", {"unknown backend 'tpu'"});
  // warmup + iters once overflowed int (a crash); both are bounded.
  expect_user_error("spmm" + g + " --message copy_u --reduce sum --iters 1 --warmup 2147483647", {"--warmup", "out of range"});
  expect_user_error("sddmm" + g + " --op add --iters 2147483647", {"--iters", "out of range"});
}

}  // namespace
