#include <dfgnn/types.hpp>

#include <algorithm>
#include <cctype>

namespace dfgnn {

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
}  // namespace

const char* to_string(Strategy s) {
  switch (s) {
    case Strategy::Auto: return "auto";
    case Strategy::SMMF: return "smmf";
    case Strategy::PMF: return "pmf";
    case Strategy::Unfused: return "unfused";
    case Strategy::Staged: return "staged";
    case Strategy::Online: return "online";
    case Strategy::Dense: return "dense";
  }
  return "?";
}

const char* to_string(ScoreKind k) {
  switch (k) {
    case ScoreKind::GT: return "gt";
    case ScoreKind::AGNN: return "agnn";
    case ScoreKind::GAT: return "gat";
    case ScoreKind::GATv2: return "gatv2";
  }
  return "?";
}

void check_named(const char* who, Strategy s, ScoreKind k, Backend b) {
  const auto fail = [&](const char* what, int value) {
    throw Error(std::string(who) + ": " + what + " " + std::to_string(value) + " is none of the enum's values");
  };
  if (std::string(to_string(s)) == "?") fail("strategy", int(s));
  if (std::string(to_string(k)) == "?") fail("score kind", int(k));
  if (b != Backend::Auto && b != Backend::Portable && b != Backend::Native) fail("backend", int(b));
}

Strategy parse_strategy(const std::string& text) {
  const std::string s = lower(text);
  for (Strategy v : {Strategy::Auto, Strategy::SMMF, Strategy::PMF, Strategy::Unfused, Strategy::Staged,
                     Strategy::Online, Strategy::Dense})
    if (s == to_string(v)) return v;
  throw Error("unknown strategy '" + text + "' (expected auto, smmf, pmf, unfused, staged, online or dense)");
}

ScoreKind parse_score_kind(const std::string& text) {
  const std::string s = lower(text);
  for (ScoreKind v : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2})
    if (s == to_string(v)) return v;
  throw Error("unknown model '" + text + "' (expected gt, agnn, gat or gatv2)");
}

Backend parse_backend(const std::string& text) {
  const std::string s = lower(text);
  if (s == "auto") return Backend::Auto;
  if (s == "kokkos") return Backend::Portable;
  if (s == "cuda") return Backend::Native;
  throw Error("unknown backend '" + text + "' (expected auto, kokkos or cuda)");
}

Backend resolve_backend(const char* who, Backend requested, const std::string& native_unavailable) {
  if (requested == Backend::Portable) return Backend::Portable;
  if (native_unavailable.empty()) return Backend::Native;
  if (requested == Backend::Native)
    throw Error(std::string(who) + ": the CUDA-native backend " + native_unavailable);
  return Backend::Portable;
}

}  // namespace dfgnn
