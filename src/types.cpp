#include <dfgnn/types.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace dfgnn {

namespace {
/// The length of the printable UTF-8 character at s[i], or 0 for a byte to escape: an
/// overlong, surrogate or cut sequence, or a C1 control (U+0080 to U+009F).
std::size_t utf8_length(const std::string& s, std::size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const std::size_t n = c > 0xF4 ? 0 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  std::uint32_t cp = c & (0x7Fu >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (b & 0x3F);
  }
  constexpr std::uint32_t kMin[] = {0, 0, 0xA0, 0x800, 0x10000};
  return cp >= kMin[n] && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF) ? n : 0;
}

/// s with what would break a one-line message escaped. Backslashes stay: escaping is then
/// idempotent, so a message wrapped into another is not escaped twice.
std::string one_line(const std::string& s) {
  std::string r;
  r.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F) {
      r += s[i++];
    } else if (const std::size_t n = c >= 0x80 ? utf8_length(s, i) : 0) {
      r.append(s, i, n), i += n;
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      r += c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : std::string{'\\', 'x', kHex[c >> 4], kHex[c & 15]};
      ++i;
    }
  }
  return r;
}

// The host memory this process can have: physical memory, or less under an address-space or
// cgroup v2 limit; unknown parts count as unlimited.
std::uint64_t host_memory_limit() {
  std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
#if defined(__unix__) || defined(__APPLE__)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) limit = std::uint64_t(pages) * std::uint64_t(page);
  rlimit r{};
  if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) limit = std::min<std::uint64_t>(limit, r.rlim_cur);
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  unsigned long long max = 0;
  if (cgroup >> max) limit = std::min<std::uint64_t>(limit, max);  // "max" (no limit) does not parse
#endif
  return limit;
}
}  // namespace

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Error::Error(const std::string& message) : std::invalid_argument(one_line(message)) {}

std::uint64_t checked_product(const std::string& what, std::initializer_list<std::uint64_t> factors) {
  std::uint64_t n = 1;
  bool overflow = false;
  for (std::uint64_t f : factors) overflow |= __builtin_mul_overflow(n, f, &n);
  if (overflow) {
    std::string list;
    for (std::uint64_t f : factors) list += (list.empty() ? "" : " x ") + std::to_string(f);
    throw Error(what + " " + list + " overflows 64 bits");
  }
  return n;
}

void check_host_bytes(const std::string& what, std::uint64_t bytes) {
  const std::uint64_t limit = host_memory_limit();
  if (bytes > limit)
    throw Error(what + " needs " + std::to_string(bytes) + " bytes of host memory, more than the " +
                std::to_string(limit) + " bytes this process can have");
}

const char* to_string(ScoreKind k) {
  for (ScoreKind m : kModels)
    if (m == k) return visit_model(k, [](auto model) { return decltype(model)::name; });
  return "?";
}

std::string model_names(const char* separator) {
  std::string r;
  for (ScoreKind v : kModels) r += (r.empty() ? "" : separator) + std::string(to_string(v));
  return r;
}

ScoreKind parse_score_kind(const std::string& text) {
  const std::string s = lower(text);
  for (ScoreKind v : kModels)
    if (s == to_string(v)) return v;
  throw Error("unknown model '" + text + "' (expected one of " + model_names(", ") + ")");
}

Backend parse_backend(const std::string& text) {
  const std::string s = lower(text);
  if (s == "auto") return Backend::Auto;
  if (s == "kokkos") return Backend::Portable;
  if (s == "cuda") return Backend::Native;
  throw Error("unknown backend '" + text + "' (expected auto, kokkos or cuda)");
}

Backend resolve_backend(const char* who, Backend requested, const std::string& native_unavailable) {
  if (requested != Backend::Auto && requested != Backend::Portable && requested != Backend::Native)
    throw Error(std::string(who) + ": backend " + std::to_string(int(requested)) + " is none of the enum's values");
  if (requested == Backend::Portable) return Backend::Portable;
  if (native_unavailable.empty()) return Backend::Native;
  if (requested == Backend::Native)
    throw Error(std::string(who) + ": the CUDA-native backend " + native_unavailable);
  return Backend::Portable;
}

}  // namespace dfgnn
