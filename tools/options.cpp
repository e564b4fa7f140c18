// The option parser and the usage text, both read from the commands' tables (options.hpp).

#include "options.hpp"

#include <dfgnn/io.hpp>

#include <algorithm>
#include <cctype>

namespace dfgnn::cli {

long long Args::integer(const std::string& k, long long fallback, long long lo, long long hi) const {
  if (!has(k)) return fallback;
  const std::string s = get(k);
  std::size_t used = 0;
  long long v = 0;
  bool in_range = true;
  try {
    v = std::stoll(s, &used);
  } catch (const std::out_of_range&) {
    in_range = false, used = s.size();
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || std::isspace(static_cast<unsigned char>(s[0])))
    throw Error("--" + k + ": '" + s + "' is not an integer");
  if (!in_range || v < lo || v > hi)
    throw Error("--" + k + ": " + s + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

float Args::real(const std::string& k, float fallback) const {
  if (!has(k)) return fallback;
  const std::vector<float> v = io::parse_float_list(get(k), "--" + k);
  if (v.size() != 1) throw Error("--" + k + ": expected one number, got " + std::to_string(v.size()));
  return v[0];
}

namespace {

const Option* find(const Command& c, const std::string& name) {
  for (const Section* s : c.sections)
    for (const Option& o : s->options)
      if (o.name == name) return &o;
  return nullptr;
}

// The commands that take --name, for the message of an option given to another one.
std::string takers(const std::string& name) {
  std::string r;
  for (const Command* c : commands())
    if (find(*c, name)) r += (r.empty() ? "" : ", ") + c->name;
  return r;
}

// `text` with every line but the first indented by `indent` spaces.
std::string indented(const std::string& text, std::size_t indent) {
  std::string r;
  for (const char ch : text) {
    r += ch;
    if (ch == '\n') r.append(indent, ' ');
  }
  return r;
}

std::string section_text(const Section& s) {
  constexpr std::size_t kColumn = 26;  // where the options' help starts
  std::string r = s.title + ":\n";
  for (const Option& o : s.options) {
    std::string head = "  --" + o.name + (o.value.empty() ? "" : " " + o.value);
    head += head.size() + 2 <= kColumn ? std::string(kColumn - head.size(), ' ') : "\n" + std::string(kColumn, ' ');
    r += head + indented(o.help, kColumn) + "\n";
  }
  if (!s.notes.empty()) r += "  " + indented(s.notes, 2) + "\n";
  return r;
}

std::string synopsis(const Command& c) { return "  dfgnn " + c.name + " " + indented(c.synopsis, 8) + "\n"; }

}  // namespace

Args parse(const Command& c, int argc, char** argv, int first) {
  Args a;
  for (int i = first; i < argc; ++i) {
    const std::string tok = argv[i];
    if (tok.rfind("--", 0) != 0) throw Error("unexpected argument '" + tok + "'");
    const std::string key = tok.substr(2);
    if (a.flags.count(key) || a.values.count(key)) throw Error(tok + " given twice");
    const Option* o = find(c, key);
    if (!o) {
      const std::string others = takers(key);
      throw Error("unknown option " + tok + (others.empty() ? "" : " (an option of " + others + ")"));
    }
    if (o->value.empty()) {
      a.flags.insert(key);
    } else {
      if (i + 1 >= argc) throw Error(tok + " needs a value");
      a.values[key] = argv[++i];
    }
  }
  return a;
}

std::string usage(const std::string& word) {
  std::vector<const Command*> chosen;
  for (const Command* c : commands())
    if (c->name.substr(0, c->name.find(' ')) == word) chosen.push_back(c);
  if (chosen.empty()) chosen = commands();
  std::string r = "usage:\n";
  std::vector<const Section*> sections;  // each once, in the order the commands name them
  for (const Command* c : chosen) {
    r += synopsis(*c);
    for (const Section* s : c->sections)
      if (std::find(sections.begin(), sections.end(), s) == sections.end()) sections.push_back(s);
  }
  if (word.empty()) r += "  dfgnn --version\n";
  for (const Section* s : sections) r += "\n" + section_text(*s);
  return r;
}

}  // namespace dfgnn::cli
