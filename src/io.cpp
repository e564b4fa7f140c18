/// \file io.cpp
/// .npy arrays, graph files and value lists (see io.hpp). Graph files are parsed by hand from
/// one in-memory buffer: the web-scale edge lists have millions of lines.

#include <dfgnn/io.hpp>

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <string_view>
#include <utility>

// .npy data is copied byte for byte into host floats.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "dfgnn io assumes a little-endian host"
#endif

namespace dfgnn::io {
namespace {

/// Node ids must stay below this so that N = max id + 1 fits node_t.
constexpr std::int64_t kMaxNodes = std::numeric_limits<node_t>::max();

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw Error(path + ": " + problem);
}

[[noreturn]] void cannot_write(const std::string& path) {
  fail(path, std::string("cannot open for writing: ") + std::strerror(errno));
}

[[noreturn]] void fail_at(const std::string& path, std::int64_t line, const std::string& problem) {
  throw Error(path + ":" + std::to_string(line) + ": " + problem);
}

/// A token quoted for a message, shortened so that a garbage line keeps the message readable.
std::string quote(std::string_view tok) {
  constexpr std::size_t kMax = 40;
  return "'" + std::string(tok.substr(0, kMax)) + (tok.size() > kMax ? "...'" : "'");
}

/// A file, gunzipped when it starts with the gzip magic (concatenated members are one file, as
/// for gzip -d). Not zlib's gzread: it drops whatever follows the last member without a word.
class InFile {
 public:
  explicit InFile(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "rb"), std::fclose), buf_(1 << 16) {
    if (!f_) fail(path, std::string("cannot open: ") + std::strerror(errno));
    refill();
    gzip_ = z_.avail_in >= 2 && buf_[0] == 0x1f && buf_[1] == 0x8b;
    if (gzip_ && inflateInit2(&z_, 15 + 16) != Z_OK) throw std::bad_alloc();  // 15 + 16: gzip only
  }
  ~InFile() {
    if (gzip_) inflateEnd(&z_);
  }
  InFile(const InFile&) = delete;
  InFile& operator=(const InFile&) = delete;

  /// Reads up to n bytes; returns fewer only at the end of the file.
  std::size_t read(void* dst, std::size_t n) {
    auto* out = static_cast<unsigned char*>(dst);
    std::size_t got = 0;
    while (got < n) {
      const bool eof = z_.avail_in == 0 && !refill();
      const auto want = static_cast<unsigned>(std::min<std::size_t>(n - got, 1u << 30));
      if (!gzip_) {
        if (eof) break;
        const unsigned k = std::min(want, z_.avail_in);
        std::memcpy(out + got, z_.next_in, k);
        z_.next_in += k, z_.avail_in -= k, got += k;
        continue;
      }
      if (member_end_) {  // the end of the file or another member; nothing else
        if (eof) break;
        while (z_.avail_in < 2 && refill()) {}
        if (z_.avail_in < 2 || z_.next_in[0] != 0x1f || z_.next_in[1] != 0x8b)
          fail(path_, "bytes after the gzip data (not another gzip member)");
        inflateReset(&z_);
        member_end_ = false;
      }
      z_.next_out = out + got;
      z_.avail_out = want;
      const int r = inflate(&z_, Z_NO_FLUSH);  // with no input left: what it still holds
      got += want - z_.avail_out;
      if (r == Z_MEM_ERROR) throw std::bad_alloc();
      if (r == Z_BUF_ERROR && eof) fail(path_, "read error: unexpected end of file (truncated gzip data)");
      if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
        fail(path_, std::string("read error: ") + (z_.msg ? z_.msg : "corrupt gzip data"));
      member_end_ = r == Z_STREAM_END;
    }
    return got;
  }

  std::string read_all() {
    std::string text;
    std::size_t size = 0;
    // Chunks from 64 KiB up: a small file is not zero-filled megabytes first.
    for (std::size_t chunk = 1 << 16;; chunk = std::min<std::size_t>(2 * chunk, 1 << 26)) {
      text.resize(size + chunk);
      const std::size_t got = read(text.data() + size, chunk);
      size += got;
      if (got < chunk) break;
    }
    text.resize(size);
    return text;
  }

 private:
  /// Moves the unread input to the front of the buffer and reads more behind it; false at the
  /// end of the file.
  bool refill() {
    if (z_.avail_in > 0) std::memmove(buf_.data(), z_.next_in, z_.avail_in);
    const std::size_t k = std::fread(buf_.data() + z_.avail_in, 1, buf_.size() - z_.avail_in, f_.get());
    if (std::ferror(f_.get())) fail(path_, std::string("read error: ") + std::strerror(errno));
    z_.next_in = buf_.data();
    z_.avail_in += static_cast<unsigned>(k);
    return k > 0;
  }

  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f_;
  std::vector<unsigned char> buf_;
  z_stream z_{};
  bool gzip_ = false, member_end_ = false;
};

/// Parses a whole token as an integer. Values beyond int64 saturate (callers reject them).
bool parse_int(std::string_view tok, std::int64_t& v) {
  const auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (tok.empty() || end != tok.data() + tok.size()) return false;
  if (ec == std::errc::result_out_of_range) v = tok[0] == '-' ? std::numeric_limits<std::int64_t>::min()
                                                              : std::numeric_limits<std::int64_t>::max();
  return ec == std::errc() || ec == std::errc::result_out_of_range;
}

/// Parses a whole token as a finite float. A value below float's range (1e-50) rounds to 0 or
/// a subnormal, as NumPy's float32 does: it was once refused as "not finite".
bool parse_float(std::string_view tok, float& v) {
  const char* const last = tok.data() + tok.size();
  auto [end, ec] = std::from_chars(tok.data(), last, v);
  if (ec == std::errc::result_out_of_range) {
    double d = 0.0;
    const std::from_chars_result r = std::from_chars(tok.data(), last, d);
    end = r.ptr, ec = r.ec;
    if (ec == std::errc() && std::fabs(d) < 1.0) v = float(d);  // underflow, not overflow
    else ec = std::errc::result_out_of_range;
  }
  return !tok.empty() && ec == std::errc() && end == last && std::isfinite(v);
}

std::int64_t element_count(const std::string& path, const std::vector<std::int64_t>& shape) {
  std::int64_t count = 1;
  for (const std::int64_t d : shape) {
    if (d < 0) fail(path, "negative dimension " + std::to_string(d) + " in shape");
    if (d != 0 && count > std::numeric_limits<std::int64_t>::max() / 8 / d) fail(path, "shape too large");
    count *= d;
  }
  return count;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");  // Python's 1-tuple needs the comma
}

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

/// Parses the Python dict literal of a .npy header, e.g.
/// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }
NpyHeader parse_npy_header(const std::string& path, std::string_view s) {
  std::size_t i = 0;
  auto bad = [&](const std::string& what) {
    fail(path, "unparsable .npy header: " + what + " at offset " + std::to_string(i));
  };
  auto skip_space = [&] {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  };
  auto accept = [&](char c) {
    skip_space();
    if (i < s.size() && s[i] == c) return ++i, true;
    return false;
  };
  auto expect = [&](char c) {
    if (!accept(c)) bad(std::string("expected '") + c + "'");
  };
  auto string_literal = [&] {
    if (!accept('\'') && !accept('"')) bad("expected a string");
    const std::size_t end = s.find(s[i - 1], i);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string v(s.substr(i, end - i));
    i = end + 1;
    return v;
  };
  auto word = [&] {
    skip_space();
    const std::size_t begin = i;
    while (i < s.size() && std::isalnum(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(begin, i - begin);
  };

  NpyHeader h;
  bool seen[3] = {false, false, false};
  expect('{');
  while (!accept('}')) {
    const std::string key = string_literal();
    expect(':');
    // NumPy keeps a repeated key's last value: taking another would read another array.
    const int index = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
    if (index >= 0 && seen[index]) bad("duplicate key '" + key + "'");
    if (key == "descr") {
      h.descr = string_literal();
      seen[0] = true;
    } else if (key == "fortran_order") {
      const std::string_view w = word();
      if (w != "True" && w != "False") bad("fortran_order must be True or False");
      h.fortran_order = w == "True";
      seen[1] = true;
    } else if (key == "shape") {
      expect('(');
      while (!accept(')')) {
        std::int64_t d = 0;
        std::string_view w = word();
        if (!w.empty() && w.back() == 'L') w.remove_suffix(1);  // Python 2 longs: (3L, 2L)
        if (!parse_int(w, d) || d < 0) bad("expected a dimension");
        h.shape.push_back(d);
        if (!accept(',')) {
          expect(')');
          break;
        }
      }
      seen[2] = true;
    } else {
      bad("unexpected key '" + key + "'");
    }
    if (!accept(',')) {
      expect('}');
      break;
    }
  }
  if (!seen[0] || !seen[1] || !seen[2]) bad("missing descr, fortran_order or shape");
  return h;
}

/// Separators of graph file tokens: whitespace (CR included, for CRLF files) and commas.
bool is_sep(char c) { return c == ' ' || c == '\t' || c == ',' || c == '\r' || c == '\v' || c == '\f'; }

/// The next token of `line` from position i (empty at the end of the line).
std::string_view next_token(std::string_view line, std::size_t& i) {
  while (i < line.size() && is_sep(line[i])) ++i;
  const std::size_t begin = i;
  while (i < line.size() && !is_sep(line[i])) ++i;
  return line.substr(begin, i - begin);
}

/// Splits a buffer into physical lines, numbered from 1.
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    // LF, CRLF or a lone CR (old Mac files, once read as one line) ends a line.
    std::size_t end = text_.find_first_of("\r\n", pos_);
    if (end == std::string_view::npos) end = text_.size();
    line = text_.substr(pos_, end - pos_);
    pos_ = end + (text_.compare(end, 2, "\r\n") == 0 ? 2 : 1);
    ++number_;
    return true;
  }
  std::int64_t number() const { return number_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::int64_t number_ = 0;
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Upper bound on the edges of a text (one per line), for reserving.
std::size_t line_count(std::string_view text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
}

/// A first line of column names (`src,dst`, `"id_1","id_2"`): tokens that start like words.
bool is_header(std::string_view a, std::string_view b) {
  const auto word = [](std::string_view t) {
    return !t.empty() && (std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_' || t[0] == '"' || t[0] == '\'');
  };
  return word(a) && (b.empty() || word(b));
}

/// The first line of the edge lists `dfgnn gen` writes; their `# nodes N` line is the node
/// count, so that isolated nodes with the highest ids survive a round trip.
constexpr std::string_view kDfgnnEdgeList = "# dfgnn edge list";

/// N of a `# nodes N` comment line before the first edge, or -1.
std::int64_t declared_nodes(const std::string& path, std::string_view text) {
  Lines lines(text);
  std::string_view line;
  while (lines.next(line) && !line.empty() && line[0] == '#') {
    std::size_t i = 0;
    if (next_token(line, i) != "#" || next_token(line, i) != "nodes") continue;
    std::int64_t n = -1;
    const std::string_view tok = next_token(line, i);
    if (!parse_int(tok, n) || n < 0 || n > kMaxNodes || !next_token(line, i).empty())
      fail_at(path, lines.number(), "expected '# nodes N' with 0 <= N < 2^31, got " + quote(line));
    return n;
  }
  return -1;
}

EdgeList parse_edge_list(const std::string& path, std::string_view text, std::int64_t num_nodes) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  if (num_nodes < 0 && text.substr(0, kDfgnnEdgeList.size()) == kDfgnnEdgeList) num_nodes = declared_nodes(path, text);
  EdgeList g;
  const std::size_t max_edges = line_count(text);
  g.src.reserve(max_edges);
  g.dst.reserve(max_edges);
  const std::int64_t limit = num_nodes >= 0 ? num_nodes : kMaxNodes;
  std::int64_t max_id = -1;
  bool first = true;
  Lines lines(text);
  auto check = [&](bool ok, std::string_view tok, std::int64_t id) {
    const std::int64_t n = lines.number();
    if (!ok) fail_at(path, n, "expected an integer node id, got " + quote(tok));
    if (id < 0) fail_at(path, n, "negative node id " + quote(tok));
    if (id >= limit) {
      fail_at(path, n, num_nodes >= 0 ? "node id " + quote(tok) + " >= num_nodes " + std::to_string(num_nodes)
                                      : "node id " + quote(tok) + " too large (ids must be < 2^31 - 1)");
    }
  };
  std::string_view line;
  while (lines.next(line)) {
    std::size_t i = 0;
    const std::string_view a = next_token(line, i);
    if (a.empty() || a[0] == '#' || a[0] == '%') continue;
    const std::string_view b = next_token(line, i);
    if (std::exchange(first, false) && is_header(a, b)) continue;
    std::int64_t u = 0, v = 0;
    const bool a_ok = parse_int(a, u), b_ok = parse_int(b, v);
    check(a_ok, a, u);
    if (b.empty()) fail_at(path, lines.number(), "expected two node ids 'src dst', got only " + quote(a));
    check(b_ok, b, v);
    // At most a weight and a time stamp may follow (SNAP, KONECT); anything else means the
    // file is not an edge list.
    for (int k = 0; k < 3; ++k) {
      const std::string_view t = next_token(line, i);
      float x = 0.0f;
      if (t.empty()) break;
      if (k == 2 || !parse_float(t, x))
        fail_at(path, lines.number(), "unexpected " + quote(t) + " after 'src dst' (at most two numeric columns may follow)");
    }
    g.src.push_back(static_cast<node_t>(u));
    g.dst.push_back(static_cast<node_t>(v));
    max_id = std::max({max_id, u, v});
  }
  g.num_nodes = static_cast<node_t>(num_nodes >= 0 ? num_nodes : max_id + 1);
  return g;
}

EdgeList parse_mtx(const std::string& path, std::string_view text, std::int64_t num_nodes) {
  Lines lines(text);
  std::string_view line;
  std::size_t i = 0;
  std::string banner[5];
  if (lines.next(line)) {
    for (std::string& t : banner) t = lower(next_token(line, i));
  }
  if (banner[0] != "%%matrixmarket" || !next_token(line, i).empty()) {
    fail_at(path, 1, "expected the banner '%%MatrixMarket matrix coordinate <field> <symmetry>'");
  }
  if (banner[1] != "matrix" || banner[2] != "coordinate") {
    fail_at(path, 1, "unsupported Matrix Market format '" + banner[1] + " " + banner[2] + "' (expected 'matrix coordinate')");
  }
  const std::string& field = banner[3];
  if (field != "real" && field != "integer" && field != "pattern") {
    fail_at(path, 1, "unsupported field '" + field + "' (expected real, integer or pattern)");
  }
  const bool symmetric = banner[4] == "symmetric";
  if (!symmetric && banner[4] != "general") {
    fail_at(path, 1, "unsupported symmetry '" + banner[4] + "' (expected general or symmetric)");
  }
  const bool has_values = field != "pattern";

  // The next non-comment line holds the size, every later one an entry.
  std::int64_t rows = -1, cols = -1, nnz = -1, count = 0, size_line = 0;
  EdgeList g;
  while (lines.next(line)) {
    i = 0;
    const std::string_view t0 = next_token(line, i);
    if (t0.empty() || t0[0] == '%') continue;
    const std::string_view t1 = next_token(line, i), t2 = next_token(line, i);
    const std::int64_t n = lines.number();
    const std::string_view extra = size_line == 0 || has_values ? next_token(line, i) : t2;
    if (!extra.empty()) fail_at(path, n, "unexpected " + quote(extra) + " after the line's fields");
    if (size_line == 0) {
      size_line = n;
      if (!parse_int(t0, rows) || !parse_int(t1, cols) || !parse_int(t2, nnz) || rows < 0 || cols < 0 || nnz < 0) {
        fail_at(path, n, "expected the size line 'rows cols nnz'");
      }
      if (rows != cols) {
        fail_at(path, n, "matrix is " + std::to_string(rows) + " x " + std::to_string(cols) + ", an adjacency matrix must be square");
      }
      if (rows > kMaxNodes) fail_at(path, n, std::to_string(rows) + " rows exceed 2^31 - 1 nodes");
      if (num_nodes >= 0 && num_nodes != rows) {
        fail_at(path, n, "matrix has " + std::to_string(rows) + " rows but num_nodes is " + std::to_string(num_nodes));
      }
      // nnz comes from the file: bound the reservation by what the text can hold.
      const auto edges = static_cast<std::size_t>(std::min<std::int64_t>(nnz, line_count(text))) * (symmetric ? 2 : 1);
      g.src.reserve(edges);
      g.dst.reserve(edges);
      if (has_values) g.values.reserve(edges);
      continue;
    }
    if (++count > nnz) fail_at(path, n, "more entries than the " + std::to_string(nnz) + " declared on line " + std::to_string(size_line));
    std::int64_t r = 0, c = 0;
    for (const auto& [tok, id] : {std::pair{t0, &r}, std::pair{t1, &c}}) {
      if (!parse_int(tok, *id)) fail_at(path, n, "expected a 1-based integer index, got " + quote(tok));
      if (*id < 1 || *id > rows) fail_at(path, n, "index " + quote(tok) + " out of range [1, " + std::to_string(rows) + "]");
    }
    float value = 0.0f;
    if (has_values && !parse_float(t2, value)) fail_at(path, n, "expected a finite " + field + " value, got " + quote(t2));
    // Entry (row, col) is the edge col -> row; a symmetric file stores one triangle only.
    for (int k = 0; k < (symmetric && r != c ? 2 : 1); ++k) {
      g.src.push_back(static_cast<node_t>((k ? r : c) - 1));
      g.dst.push_back(static_cast<node_t>((k ? c : r) - 1));
      if (has_values) g.values.push_back(value);
    }
  }
  if (size_line == 0) fail(path, "missing the size line 'rows cols nnz'");
  if (count < nnz) fail(path, "expected " + std::to_string(nnz) + " entries, found " + std::to_string(count));
  g.num_nodes = static_cast<node_t>(rows);
  return g;
}

}  // namespace

Array read_npy_f32(const std::string& path) {
  InFile file(path);
  unsigned char pre[12];  // magic (6), version (2), header length (2 or 4, little-endian)
  if (file.read(pre, 8) < 8 || std::memcmp(pre, "\x93NUMPY", 6) != 0) fail(path, "not a .npy file (bad magic)");
  const std::size_t len_bytes = pre[6] == 1 ? 2 : (pre[6] == 2 || pre[6] == 3) ? 4 : 0;
  if (len_bytes == 0) fail(path, "unsupported .npy format version " + std::to_string(pre[6]) + "." + std::to_string(pre[7]));
  if (file.read(pre + 8, len_bytes) < len_bytes) fail(path, "truncated .npy header");
  std::size_t header_len = 0;
  for (std::size_t k = len_bytes; k-- > 0;) header_len = header_len << 8 | pre[8 + k];
  if (header_len > (1u << 20)) fail(path, "implausible .npy header length " + std::to_string(header_len));
  std::string header(header_len, '\0');
  if (file.read(header.data(), header_len) < header_len) fail(path, "truncated .npy header");
  const NpyHeader h = parse_npy_header(path, header);

  if (h.descr != "<f4" && h.descr != "<f8") fail(path, "unsupported dtype '" + h.descr + "' (expected '<f4' or '<f8')");
  if (h.fortran_order) fail(path, "Fortran-order arrays are not supported (save in C order)");
  const std::size_t item = h.descr == "<f4" ? 4 : 8;
  const auto count = static_cast<std::size_t>(element_count(path, h.shape));

  // Chunks of at most 16 MiB: a corrupt shape then fails as truncated data instead of allocating it all.
  Array out{h.shape, {}};
  std::vector<char> buf(std::min<std::size_t>(count * item, std::size_t{1} << 24));
  for (std::size_t done = 0; done < count;) {
    const std::size_t n = std::min(count - done, buf.size() / item);
    const std::size_t got = file.read(buf.data(), n * item);
    if (got < n * item) {
      fail(path, "truncated data: shape " + shape_string(h.shape) + " needs " + std::to_string(count * item) +
                     " bytes, file has " + std::to_string(done * item + got));
    }
    out.data.resize(done + n);
    if (item == 4) {
      std::memcpy(out.data.data() + done, buf.data(), n * 4);
    } else {
      for (std::size_t k = 0; k < n; ++k) {
        double d;
        std::memcpy(&d, buf.data() + 8 * k, 8);
        out.data[done + k] = static_cast<float>(d);
      }
    }
    done += n;
  }
  char extra;
  if (file.read(&extra, 1) != 0) fail(path, "bytes after the data of shape " + shape_string(h.shape));
  return out;
}

void write_npy_f32(const std::string& path, const std::vector<std::int64_t>& shape, const float* data) {
  const std::int64_t count = element_count(path, shape);
  if (count > 0 && data == nullptr) fail(path, "no data for shape " + shape_string(shape));
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_string(shape) + ", }";
  // Pad with spaces and end with '\n' so that the data starts 64-byte aligned, as NumPy does.
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  if (header.size() > 0xffff) fail(path, "shape has too many dimensions for a .npy 1.0 header");
  const char pre[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<char>(header.size() & 0xff),
                        static_cast<char>(header.size() >> 8)};
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) cannot_write(path);
  out.write(pre, sizeof pre);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * 4));
  out.close();
  if (!out) fail(path, "write failed");
}

void check_writable(const std::string& path) {
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  std::FILE* f = std::fopen(path.c_str(), "ab");  // appending: an existing file keeps its content
  if (!f) cannot_write(path);
  std::fclose(f);
  if (!existed) std::remove(path.c_str());
}

EdgeList read_graph(const std::string& path, std::int64_t num_nodes) {
  if (num_nodes > kMaxNodes) fail(path, "num_nodes " + std::to_string(num_nodes) + " exceeds 2^31 - 1");
  const std::string text = InFile(path).read_all();
  // By content first: a Matrix Market file of any name read as an edge list would lose its
  // size line into an edge and shift every id by one, silently.
  const bool banner = lower(std::string_view(text).substr(0, 14)) == "%%matrixmarket";
  return banner || ends_with(path, ".mtx") || ends_with(path, ".mtx.gz") ? parse_mtx(path, text, num_nodes)
                                                                           : parse_edge_list(path, text, num_nodes);
}

std::vector<float> parse_float_list(const std::string& text, const std::string& what) {
  std::vector<float> out;
  std::string_view rest = text;
  for (;;) {
    const std::size_t comma = rest.find(',');
    std::string_view tok = rest.substr(0, comma);
    while (!tok.empty() && std::isspace(static_cast<unsigned char>(tok.front()))) tok.remove_prefix(1);
    while (!tok.empty() && std::isspace(static_cast<unsigned char>(tok.back()))) tok.remove_suffix(1);
    float v = 0.0f;
    if (!parse_float(tok, v)) {
      throw Error(what + ": invalid value " + quote(tok) + " in '" + text +
                  "' (expected a finite number or a comma-separated list of them)");
    }
    out.push_back(v);
    if (comma == std::string_view::npos) return out;
    rest.remove_prefix(comma + 1);
  }
}

}  // namespace dfgnn::io
