// Tests of dfgnn/io.hpp: .npy arrays, graph files (edge lists, Matrix Market, gzip) and value lists.

#include <dfgnn/io.hpp>

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using dfgnn::node_t;
using namespace dfgnn::io;

namespace {

/// The message of the dfgnn::Error thrown by f ("" and a failure when none is thrown).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const dfgnn::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected dfgnn::Error";
  return "";
}

/// Expects f to throw a one-line dfgnn::Error containing every fragment.
template <class F>
void expect_error(F&& f, const std::vector<std::string>& fragments) {
  const std::string msg = error_of(f);
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  for (const std::string& frag : fragments) EXPECT_NE(msg.find(frag), std::string::npos) << "'" << frag << "' not in: " << msg;
}

/// Each test gets a fresh directory under the system temp dir, removed afterwards.
class IoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    dir_ = fs::temp_directory_path() / ("dfgnn_io_test_" + std::to_string(stamp) + "_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }

  std::string write_gz(const std::string& name, const std::string& bytes) const {
    gzFile f = gzopen(path(name).c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(f);
    return path(name);
  }

  std::string read_bytes(const std::string& file) const {
    std::ifstream f(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  fs::path dir_;
};

/// A .npy file of the given version with `dict` as header (padded to 64 bytes) and raw payload.
std::string npy_bytes(int version, const std::string& dict, const std::string& payload) {
  const std::size_t len_bytes = version == 1 ? 2 : 4;
  std::string header = dict;
  while ((6 + 2 + len_bytes + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  for (std::size_t k = 0; k < len_bytes; ++k) out += static_cast<char>((header.size() >> (8 * k)) & 0xff);
  return out + header + payload;
}

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

void expect_edges(const EdgeList& g, const std::vector<node_t>& src, const std::vector<node_t>& dst, node_t n) {
  EXPECT_EQ(g.src, src);
  EXPECT_EQ(g.dst, dst);
  EXPECT_EQ(g.num_nodes, n);
}

// ---------------------------------------------------------------------------------------------
// .npy

TEST_F(IoTest, NpyRoundTrip) {
  const std::vector<std::vector<std::int64_t>> shapes = {{3, 2, 5}, {4, 6}, {0, 3}, {7}, {}};
  for (const auto& shape : shapes) {
    std::int64_t count = 1;
    for (auto d : shape) count *= d;
    std::vector<float> data(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = 0.25f * static_cast<float>(i) - 3.0f;
    const std::string p = path("a.npy");
    write_npy_f32(p, shape, data.data());
    // NumPy's layout: 10-byte preamble + header, data 64-byte aligned.
    EXPECT_EQ((fs::file_size(p) - data.size() * 4) % 64, 0u);
    const Array a = read_npy_f32(p);
    EXPECT_EQ(a.shape, shape);
    EXPECT_EQ(a.data, data);
  }
}

TEST_F(IoTest, NpyFloat64AndHeaderVersions) {
  const std::vector<double> d = {1.5, -2.25, 1e-3, 3e38, 0.1, 7.0};
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
  for (int version : {1, 2, 3}) {
    const Array a = read_npy_f32(write("d.npy", npy_bytes(version, dict, raw(d))));
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 3}));
    ASSERT_EQ(a.data.size(), d.size());
    for (std::size_t i = 0; i < d.size(); ++i) EXPECT_EQ(a.data[i], static_cast<float>(d[i]));
  }
  // Keys in any order, double quotes, Python 2 longs.
  const Array b = read_npy_f32(write("b.npy", npy_bytes(1, R"({"shape": (2L,), "fortran_order": False, "descr": "<f4"})",
                                                        raw(std::vector<float>{1.0f, 2.0f}))));
  EXPECT_EQ(b.shape, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(b.data, (std::vector<float>{1.0f, 2.0f}));
}

TEST_F(IoTest, NpyErrors) {
  const std::string payload = raw(std::vector<float>(6, 1.0f));
  auto dict = [](const std::string& descr, const std::string& fortran) {
    return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': (2, 3), }";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {write("magic.npy", "PK\x03\x04 not numpy at all"), "bad magic"},
      {write("trunc.npy", npy_bytes(1, dict("<f4", "False"), payload.substr(0, 20))), "truncated"},
      {write("be.npy", npy_bytes(1, dict(">f4", "False"), payload)), "'>f4'"},
      {write("i4.npy", npy_bytes(1, dict("<i4", "False"), payload)), "'<i4'"},
      {write("fortran.npy", npy_bytes(1, dict("<f4", "True"), payload)), "Fortran"},
      {write("garbage.npy", npy_bytes(1, "{'descr': '<f4', 'shape': [2, 3]}", payload)), "unparsable"},
      {write("version.npy", npy_bytes(1, dict("<f4", "False"), payload).replace(6, 1, "\x07")), "version 7"},
      {write("dup.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (6,), }", payload)),
       "duplicate key 'shape'"},
      {write("trailing.npy", npy_bytes(1, dict("<f4", "False"), payload + "JUNK")), "bytes after the data"},
      {path("missing.npy"), "cannot open"},
  };
  for (const auto& c : cases) {
    const std::string& p = c.first;  // named, not a structured binding: C++17 lambdas cannot capture those
    EXPECT_THROW(read_npy_f32(p), dfgnn::Error);
    expect_error([&] { read_npy_f32(p); }, {p + ": ", c.second});
  }
  // A header's content is quoted with its line breaks and raw bytes escaped: one line.
  const std::string keys = write("keys.npy", npy_bytes(1, "{'de\nscr\x93\x01': '<f4'}", payload));
  expect_error([&] { read_npy_f32(keys); }, {keys + ": ", "unexpected key 'de\\nscr\\x93\\x01'"});
  const std::string descr = write("descr.npy", npy_bytes(1, "{'descr': '<f4\r\n\x02', 'fortran_order': False, 'shape': ()}", payload));
  expect_error([&] { read_npy_f32(descr); }, {descr + ": ", "unsupported dtype '<f4\\r\\n\\x02'"});
  expect_error([&] { write_npy_f32(path("neg.npy"), {2, -1}, nullptr); }, {"neg.npy: ", "negative dimension"});
  const float one = 1.0f;
  expect_error([&] { write_npy_f32(path("no/such/dir.npy"), {1}, &one); }, {"dir.npy: ", "cannot open for writing"});
}

// Outputs are checked before a run computes them: the check creates no file and empties none.
TEST_F(IoTest, CheckWritable) {
  check_writable(path("new.npy"));
  EXPECT_FALSE(fs::exists(path("new.npy")));
  check_writable(write("old.npy", "old"));
  EXPECT_EQ(read_bytes(path("old.npy")), "old");
  expect_error([&] { check_writable(path("no/such/dir.npy")); }, {"dir.npy: cannot open for writing: No such file"});
  expect_error([&] { check_writable(dir_.string()); }, {"cannot open for writing: Is a directory"});
}

// ---------------------------------------------------------------------------------------------
// Edge lists

TEST_F(IoTest, EdgeListSyntax) {
  // Comments (# and %), blank lines, CRLF, commas, tabs, an extra weight column.
  const std::string text = "# comment\n% other comment\n\n0 1\r\n1,2\r\n  2\t0  0.5\n\n3 , 3,1\n";
  expect_edges(read_graph(write("g.txt", text)), {0, 1, 2, 3}, {1, 2, 0, 3}, 4);
  // A CSV header, also after comments and with a weight column.
  expect_edges(read_graph(write("g.csv", "id_1,id_2\n0,1\n3,2\n")), {0, 3}, {1, 2}, 4);
  expect_edges(read_graph(write("h.tsv", "# c\nsrc\tdst\tweight\n0\t1\t0.5\n")), {0}, {1}, 2);
  // A fractional weight on the first line does not make it a header; a weight and a time may follow.
  expect_edges(read_graph(write("w.txt", "4 1 0.5\n0 2 1 1217567877\n")), {4, 0}, {1, 2}, 5);
  // Lone CR line ends (once one line: the first edge only); the line numbers count them.
  expect_edges(read_graph(write("cr.txt", "# c\r0 1\r1 2\r\r2 0\r")), {0, 1, 2}, {1, 2, 0}, 3);
  expect_error([&] { read_graph(write("cr_bad.txt", "0 1\r1 x\r")); }, {"cr_bad.txt:2:", "x"});
  // A UTF-8 byte order mark.
  expect_edges(read_graph(write("bom.txt", "\xEF\xBB\xBF" "0 1\n1 2\n")), {0, 1}, {1, 2}, 3);
  // `dfgnn gen`'s lists state their node count (isolated last nodes); num_nodes still overrides.
  const std::string gen = write("gen.txt", "# dfgnn edge list: ...\n# rmat\n# nodes 6\n# edges 1\n0 1\n");
  expect_edges(read_graph(gen), {0}, {1}, 6);
  expect_edges(read_graph(gen, 9), {0}, {1}, 9);
  expect_edges(read_graph(write("other.txt", "# nodes 6\n0 1\n")), {0}, {1}, 2);  // only in dfgnn's lists
  // Largest accepted id: N = 2^31 - 1 still fits node_t.
  EXPECT_EQ(read_graph(write("big.txt", "0 2147483646\n")).num_nodes, 2147483647);
}

TEST_F(IoTest, EdgeListEmptyAndNodeCount) {
  const std::string empty = write("empty.txt", "");
  expect_edges(read_graph(empty), {}, {}, 0);
  expect_edges(read_graph(empty, 5), {}, {}, 5);
  expect_edges(read_graph(write("comments.txt", "# nothing\n\n")), {}, {}, 0);
  const std::string g = write("g.txt", "0 1\n1 2\n");
  expect_edges(read_graph(g, 10), {0, 1}, {1, 2}, 10);
  expect_error([&] { read_graph(g, 2); }, {g + ":2: ", "'2'", "num_nodes 2"});
  expect_error([&] { read_graph(g, std::int64_t{1} << 31); }, {g + ": ", "num_nodes"});
}

TEST_F(IoTest, EdgeListGzipByContent) {
  const std::string text = "# gz\n0 1\n1 2\n2 0\n";
  for (const std::string name : {"g.txt.gz", "g.csv.gz", "g.tsv.gz", "g.edges"}) {
    expect_edges(read_graph(write_gz(name, text)), {0, 1, 2}, {1, 2, 0}, 3);
  }
  // A truncated gzip stream is an error, not a short file.
  std::string big;
  for (int i = 0; i < 20000; ++i) big += std::to_string(i) + " " + std::to_string((i * 7919) % 20000) + "\n";
  const std::string p = write_gz("cut.txt.gz", big);
  fs::resize_file(p, fs::file_size(p) / 2);
  expect_error([&] { read_graph(p); }, {p + ": ", "read error"});
  // Concatenated gzip members are one file (as for gzip -d); bytes after the last member that
  // are no gzip member were once dropped without a word.
  const std::string two = write("two.txt.gz", read_bytes(write_gz("a.gz", "0 1\n")) + read_bytes(write_gz("b.gz", "1 2\n")));
  expect_edges(read_graph(two), {0, 1}, {1, 2}, 3);
  const std::string junk = write("junk.txt.gz", read_bytes(two) + "3 4\n");
  expect_error([&] { read_graph(junk); }, {junk + ": ", "bytes after the gzip data"});
  const std::string npy = write("a.npy.gz", read_bytes(write_gz("a.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                                                                                   raw(std::vector<float>{2.0f})))));
  EXPECT_EQ(read_npy_f32(npy).data, std::vector<float>{2.0f});
  const std::string npy_junk = write("b.npy.gz", read_bytes(npy) + std::string(1, '\0'));
  expect_error([&] { read_npy_f32(npy_junk); }, {npy_junk + ": ", "bytes after the gzip data"});
}

TEST_F(IoTest, EdgeListErrors) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"0 1\n1 2\n2 x\n", {":3: ", "'x'"}},
      {"0 1\n1 2.5\n", {":2: ", "'2.5'"}},
      {"0 1\n-1 2\n", {":2: ", "negative", "'-1'"}},
      {"0 1\n\n5\n", {":3: ", "two node ids", "'5'"}},
      {"7\n", {":1: ", "two node ids"}},
      {"0 2147483647\n", {":1: ", "too large"}},
      {"# c\n0 99999999999999999999999\n", {":2: ", "too large"}},
      // Not edge lists: a first line that is neither ids nor column names, extra columns.
      {"1a 2\n3 4\n", {":1: ", "'1a'"}},
      {"{\"0\": [[0, 2], [1, 5]]}\n", {":1: ", "integer node id"}},
      {"0 1 5\n1 2 junk\n", {":2: ", "'junk'"}},
      {"0 1 0 0 0\n", {":1: ", "unexpected '0'"}},
      {"# dfgnn edge list\n# nodes 2\n0 2\n", {":3: ", "num_nodes 2"}},
      {"# dfgnn edge list\n# nodes many\n0 1\n", {":2: ", "# nodes N"}},
  };
  for (const auto& [text, fragments] : cases) {
    const std::string p = write("bad.txt", text);
    EXPECT_THROW(read_graph(p), dfgnn::Error);
    expect_error([&] { read_graph(p); }, fragments);
    EXPECT_EQ(error_of([&] { read_graph(p); }).rfind(p + ":", 0), 0u);
  }
  const std::string missing = path("missing.txt");
  expect_error([&] { read_graph(missing); }, {missing + ": ", "cannot open"});
  // Raw bytes of a binary file and a path with a line break come out escaped.
  expect_error([&] { read_graph(write("bin.txt", std::string("0 1\n\x1b[2J\0\x93 2\n", 13))); },
               {":2: ", "'\\x1B[2J\\x00\\x93'"});
  expect_error([&] { read_graph(path("two\nlines.txt")); }, {"two\\nlines.txt: ", "cannot open"});
}

// ---------------------------------------------------------------------------------------------
// Matrix Market

TEST_F(IoTest, MtxGeneralReal) {
  const std::string p = write("g.mtx",
                              "%%MatrixMarket matrix coordinate real general\n% comment\n\n3 3 3\n1 2 0.5\n3 1 2\n2 2 -1e0\n");
  const EdgeList g = read_graph(p);
  expect_edges(g, {1, 0, 1}, {0, 2, 1}, 3);  // entry (row, col) is the edge col -> row
  EXPECT_EQ(g.values, (std::vector<float>{0.5f, 2.0f, -1.0f}));
  EXPECT_EQ(read_graph(p, 3).num_nodes, 3);
  expect_error([&] { read_graph(p, 4); }, {p + ":4: ", "num_nodes"});
}

TEST_F(IoTest, MtxSymmetricIntegerAndPattern) {
  const EdgeList s = read_graph(write("s.mtx", "%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n2 1 4\n3 3 7\n"));
  expect_edges(s, {0, 1, 2}, {1, 0, 2}, 3);  // off-diagonal mirrored, diagonal once
  EXPECT_EQ(s.values, (std::vector<float>{4.0f, 4.0f, 7.0f}));
  // Banner words are case-insensitive; gzip by content.
  const EdgeList p = read_graph(write_gz("p.mtx.gz", "%%MatrixMarket MATRIX Coordinate Pattern General\n4 4 2\n1 4\n4 1\n"));
  expect_edges(p, {3, 0}, {0, 3}, 4);
  EXPECT_TRUE(p.values.empty());
}

// Matrix Market by its banner, whatever the name: g.MTX once read as an edge list (the size
// line an edge, every id shifted by one) without a word.
TEST_F(IoTest, MtxByContent) {
  const std::string text = "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 3\n";
  for (const std::string name : {"g.MTX", "g.mm", "g.txt", "g"}) {
    SCOPED_TRACE(name);
    expect_edges(read_graph(write(name, text)), {1, 2}, {0, 1}, 3);
  }
  expect_edges(read_graph(write_gz("g.txt.gz", text)), {1, 2}, {0, 1}, 3);
}

TEST_F(IoTest, MtxErrors) {
  const std::string banner = "%%MatrixMarket matrix coordinate real general\n";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {banner + "3 3 3\n1 2 1\n2 3 1\n", {": expected 3 entries, found 2"}},
      {banner + "3 3 1\n1 2 1\n2 3 1\n", {":4: ", "more entries"}},
      {banner + "3 4 1\n1 2 1\n", {":2: ", "square"}},
      {"3 3 1\n1 2 1\n", {":1: ", "banner"}},
      {"", {":1: ", "banner"}},
      {"%%MatrixMarket matrix array real general\n3 3\n", {":1: ", "'matrix array'"}},
      {"%%MatrixMarket matrix coordinate complex general\n", {":1: ", "'complex'"}},
      {"%%MatrixMarket matrix coordinate real hermitian\n", {":1: ", "'hermitian'"}},
      {banner + "% only comments\n", {": missing the size line"}},
      {banner + "3 3 1\n0 2 1\n", {":3: ", "'0'", "out of range"}},
      {banner + "3 3 1\n1 4 1\n", {":3: ", "'4'", "out of range"}},
      {banner + "3 3 1\n1 2\n", {":3: ", "real value"}},
      {banner + "3 x 1\n", {":2: ", "size line"}},
      {banner + "3 3 1 7\n1 2 1\n", {":2: ", "'7'"}},
      {banner + "3 3 1\n1 2 1 extra\n", {":3: ", "'extra'"}},
      {"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2 5\n", {":3: ", "'5'"}},
  };
  for (const auto& [text, fragments] : cases) {
    const std::string p = write("bad.mtx", text);
    expect_error([&] { read_graph(p); }, fragments);
    EXPECT_EQ(error_of([&] { read_graph(p); }).rfind(p + ":", 0), 0u);
  }
}

// ---------------------------------------------------------------------------------------------
// Real data: Cora from the Planetoid split, undirected pairs stored once.

void expect_cora(const std::string& p) {
  if (!fs::exists(p)) GTEST_SKIP() << p << " not present";
  const EdgeList g = read_graph(p);
  EXPECT_EQ(g.src.size(), 5278u);
  EXPECT_EQ(g.dst.size(), 5278u);
  EXPECT_EQ(g.num_nodes, 2708);
  EXPECT_EQ(std::max(*std::max_element(g.src.begin(), g.src.end()), *std::max_element(g.dst.begin(), g.dst.end())), 2707);
}

TEST(IoData, CoraInRepo) {
#ifdef DFGNN_SOURCE_DIR
  expect_cora(std::string(DFGNN_SOURCE_DIR) + "/data/cora.tsv.gz");
#else
  GTEST_SKIP() << "DFGNN_SOURCE_DIR not defined";
#endif
}

TEST(IoData, CoraShared) { expect_cora("/work/shared/data/cora/planetoid_edges.tsv.gz"); }

// ---------------------------------------------------------------------------------------------
// Per-head value lists

TEST(ParseFloatList, Values) {
  EXPECT_EQ(parse_float_list("1.0", "--beta"), (std::vector<float>{1.0f}));
  EXPECT_EQ(parse_float_list("0.5,1,2", "--beta"), (std::vector<float>{0.5f, 1.0f, 2.0f}));
  EXPECT_EQ(parse_float_list(" -0.5 , 2e-1 ", "--beta"), (std::vector<float>{-0.5f, 0.2f}));
  // Below float's range: 0 (or a subnormal), not "not finite".
  EXPECT_EQ(parse_float_list("1e-50,-1e-50", "--dropout"), (std::vector<float>{0.0f, -0.0f}));
  EXPECT_EQ(parse_float_list("1e-40", "--beta")[0], 1e-40f);
}

TEST(ParseFloatList, Errors) {
  for (const std::string bad : {"x", "1,x", "1,,2", "", "1,", "nan", "inf", "1e99", "1.0.0"}) {
    const std::string msg = error_of([&] { parse_float_list(bad, "--beta"); });
    EXPECT_EQ(msg.rfind("--beta: ", 0), 0u) << msg;
  }
  expect_error([] { parse_float_list("0.5,abc,2", "--beta"); }, {"--beta", "'abc'"});
}

}  // namespace
