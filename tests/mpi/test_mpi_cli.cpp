// `mpirun -np P dfgnn attention ...` (the CLI of an MPI build) as a child process: for P = 2..4
// rank 0's output, attention weights and gradients equal one rank's within 1e-6 normwise (GT
// with edge values and edge features, GAT with its edge scores after a renumbering, GATv2 with
// dropout, AGNN with X_dst left out and given), --reference passes on several ranks, and bad
// input ends the run with exit 2 and one error line.

#include "../graphs.hpp"

#include <dfgnn/io.hpp>
#include <dfgnn/reference.hpp>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace dfgnn;

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string quote(const std::string& s) { return "'" + s + "'"; }

std::string slurp(const fs::path& p) {
  std::ostringstream s;
  s << std::ifstream(p, std::ios::binary).rdbuf();
  return s.str();
}

constexpr node_t kNodes = 300;
constexpr std::size_t kEdges = 2400;

class MpiCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dfgnn_mpi_cli_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    // A power-law graph as an edge list in a random order: hubs, empty rows, duplicates.
    std::mt19937 rng(7);
    std::uniform_int_distribution<node_t> any(0, kNodes - 1);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::ofstream f(path("graph.txt"));
    for (std::size_t i = 0; i < kEdges; ++i)
      f << any(rng) << ' ' << node_t(kNodes * unit(rng) * unit(rng) * unit(rng)) << '\n';
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string npy(const std::string& name, const std::vector<std::int64_t>& shape, unsigned seed) const {
    std::size_t n = 1;
    for (std::int64_t x : shape) n *= std::size_t(x);
    io::write_npy_f32(path(name), shape, test::random_values(n, seed, 0.5f, 1.5f).data());
    return path(name);
  }

  /// `dfgnn attention --graph graph.txt --nodes kNodes <args>` on P ranks, its output files
  /// prefixed `prefix` (also where `args` says {prefix}).
  Result attention(int P, const std::string& prefix, std::string args) const {
    for (std::size_t at; (at = args.find("{prefix}")) != std::string::npos;) args.replace(at, 8, prefix);
    const std::string out = path("stdout.txt"), err = path("stderr.txt");
    const std::string cmd = quote(MPIEXEC) + " -np " + std::to_string(P) + " --oversubscribe " + quote(DFGNN_CLI) +
                            " attention --graph " + quote(path("graph.txt")) + " --nodes " + std::to_string(kNodes) +
                            " --out " + quote(path(prefix + "out.npy")) +
                            (args.find("--grad-out") == std::string::npos ? "" : " --grad-prefix " + quote(path(prefix + "grad_"))) +
                            " " + args + " >" + quote(out) + " 2>" + quote(err);
    const int status = std::system(cmd.c_str());
    Result r;
    if (status != -1 && WIFEXITED(status)) r.code = WEXITSTATUS(status);
    r.out = slurp(out), r.err = slurp(err);
    return r;
  }

  /// Runs `args` on 1 and on P = 2..4 ranks and compares the files `outputs` (beside out.npy).
  void expect_same_on_ranks(const std::string& args, std::vector<std::string> outputs) const {
    outputs.push_back("out.npy");
    const Result one = attention(1, "p1_", args);
    ASSERT_EQ(one.code, 0) << one.out << one.err;
    for (int P = 2; P <= 4; ++P) {
      const std::string prefix = "p" + std::to_string(P) + "_";
      const Result many = attention(P, prefix, args);
      ASSERT_EQ(many.code, 0) << many.out << many.err;
      EXPECT_NE(many.out.find(" ranks=" + std::to_string(P) + " "), std::string::npos) << many.out;
      for (const std::string& name : outputs) {
        SCOPED_TRACE(name + " on " + std::to_string(P) + " ranks");
        const io::Array a = io::read_npy_f32(path("p1_" + name)), b = io::read_npy_f32(path(prefix + name));
        ASSERT_EQ(a.shape, b.shape);
        const std::vector<double> ref(a.data.begin(), a.data.end());
        EXPECT_LE(max_relative_error(b.data.data(), ref), 1e-6);
      }
    }
  }

  fs::path dir_;
};

TEST_F(MpiCli, GraphTransformerWithEdgeInputs) {
  expect_same_on_ranks("--model gt --heads 2 --dim 5 --seed 3 --edge-values " + npy("w.npy", {kEdges}, 1) +
                           " --edge-features " + npy("e.npy", {kEdges, 2, 5}, 2) + " --attention-out " +
                           path("{prefix}weights.npy") + " --grad-out " + npy("dout.npy", {kNodes, 2, 5}, 3),
                       {"weights.npy", "grad_dQ.npy", "grad_dK.npy", "grad_dV.npy", "grad_dE.npy"});
}

TEST_F(MpiCli, GatRenumberedAndGatv2) {
  expect_same_on_ranks("--model gat --heads 3 --dim 4 --reorder rcm --edge-features " + npy("ee.npy", {kEdges, 3}, 4) +
                           " --grad-out " + npy("dout.npy", {kNodes, 3, 4}, 5),
                       {"grad_del.npy", "grad_der.npy", "grad_dV.npy", "grad_dee.npy"});
  expect_same_on_ranks("--model gatv2 --heads 1 --dim 7 --dropout 0.25 --grad-out " + npy("dout1.npy", {kNodes, 1, 7}, 6),
                       {"grad_dXL.npy", "grad_dXR.npy", "grad_da.npy"});
}

// AGNN: X serves the rows' own X_dst, its gradient taking both ends' terms; with --x-dst, dX and
// dX_dst apart. dbeta, a sum over every edge whose terms cancel, is held to the float64
// reference (--reference) rather than to one rank's sums.
TEST_F(MpiCli, AgnnWithAndWithoutXDst) {
  const std::string dout = npy("dout.npy", {kNodes, 2, 4}, 9);
  expect_same_on_ranks("--model agnn --heads 2 --dim 4 --beta 0.5,2 --edge-values " + npy("w.npy", {kEdges}, 10) +
                           " --dropout 0.2 --grad-out " + dout,
                       {"grad_dX.npy"});
  expect_same_on_ranks("--model agnn --heads 2 --dim 4 --x-dst " + npy("x_dst.npy", {kNodes, 2, 4}, 11) +
                           " --grad-out " + dout,
                       {"grad_dX.npy", "grad_dX_dst.npy"});
  const Result r = attention(3, "", "--model agnn --heads 2 --dim 4 --beta 0.5,2 --reference --grad-out " + dout);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("max relative error of dbeta"), std::string::npos) << r.out;
}

TEST_F(MpiCli, ReferencePassesOnSeveralRanks) {
  const Result r = attention(3, "", "--model gatv2 --heads 2 --dim 3 --reference --grad-out " +
                                        npy("dout.npy", {kNodes, 2, 3}, 8));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("max relative error of out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max relative error of da"), std::string::npos) << r.out;
}

TEST_F(MpiCli, BadInputIsOneErrorLine) {
  const auto expect_error = [&](const std::string& args, const std::string& fragment) {
    SCOPED_TRACE(args);
    const Result r = attention(2, "", args);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    std::istringstream lines(r.err);
    int errors = 0;
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("dfgnn: error: ", 0) == 0) {
        ++errors;
        EXPECT_NE(line.find(fragment), std::string::npos) << line;
      }
    EXPECT_EQ(errors, 1) << r.err;  // mpirun adds its own lines about the exit status
  };
  expect_error("--model gt --dim 4 --backend cuda", "--backend");
  expect_error("--model gt --dim 4 --heads 0", "--heads must be >= 1");
}

}  // namespace
