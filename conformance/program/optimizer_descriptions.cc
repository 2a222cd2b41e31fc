// The registry of optimizer descriptions and the generic option helpers (optimizer_descriptions.h).
#include "conformance/program/optimizer_descriptions.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace lockstep {
namespace {

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

bool same_number(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof(double)) == 0;
}

}  // namespace

const std::vector<OptimizerDescription>& optimizer_descriptions() {
  static const std::vector<OptimizerDescription> all = {sgd_description(), adam_description(),
                                                        adamw_description(), rmsprop_description(),
                                                        adagrad_description(), lbfgs_description()};
  return all;
}

const OptimizerDescription& describe(OptimizerKind kind) {
  for (const OptimizerDescription& d : optimizer_descriptions())
    if (d.kind == kind) return d;
  return optimizer_descriptions().front();  // unreachable: every kind is described
}

const char* optimizer_name(OptimizerKind k) { return describe(k).name; }

std::optional<OptimizerKind> optimizer_from_name(const std::string& name) {
  for (const OptimizerDescription& d : optimizer_descriptions())
    if (name == d.name) return d.kind;
  return std::nullopt;
}

std::string optimizer_names_joined(const char* last_separator) {
  std::string out;
  const auto& all = optimizer_descriptions();
  for (size_t i = 0; i < all.size(); ++i) {
    if (i) out += i + 1 == all.size() ? last_separator : ", ";
    out += all[i].name;
  }
  return out;
}

const OptionDescription* find_option(OptimizerKind kind, const std::string& name) {
  for (const OptionDescription& o : describe(kind).options)
    if (name == o.name) return &o;
  return nullptr;
}

const std::vector<std::string>& all_option_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const OptimizerDescription& d : optimizer_descriptions())
      for (const OptionDescription& o : d.options) {
        bool seen = false;
        for (const std::string& n : out) seen = seen || n == o.name;
        if (!seen) out.push_back(o.name);
      }
    return out;
  }();
  return names;
}

const OptionDescription& any_option(const std::string& name) {
  for (const OptimizerDescription& d : optimizer_descriptions())
    if (const OptionDescription* o = find_option(d.kind, name)) return *o;
  return optimizer_descriptions().front().options.front();  // unreachable for a listed name
}

const std::vector<StateTensorDescription>& all_state_tensors() {
  static const std::vector<StateTensorDescription> tensors = [] {
    std::vector<StateTensorDescription> out;
    for (const OptimizerDescription& d : optimizer_descriptions())
      for (const StateTensorDescription& t : d.state) {
        bool seen = false;
        for (const StateTensorDescription& o : out) seen = seen || std::string(o.name) == t.name;
        if (!seen) out.push_back(t);
      }
    return out;
  }();
  return tensors;
}

const std::vector<StateCountDescription>& all_state_counts() {
  static const std::vector<StateCountDescription> counts = [] {
    std::vector<StateCountDescription> out;
    for (const OptimizerDescription& d : optimizer_descriptions())
      for (const StateCountDescription& c : d.state_counts) {
        bool seen = false;
        for (const StateCountDescription& o : out) seen = seen || std::string(o.name) == c.name;
        if (!seen) out.push_back(c);
      }
    return out;
  }();
  return counts;
}

bool is_set(const OptionDescription& d, const OptimizerOptions& o) {
  switch (d.type) {
    case OptionType::Number: return (o.*d.number).has_value();
    case OptionType::Flag: return (o.*d.flag).has_value();
    case OptionType::Pair: return (o.*d.pair).has_value();
    case OptionType::Text: return (o.*d.text).has_value();
  }
  return false;
}

void unset(const OptionDescription& d, OptimizerOptions& o) {
  switch (d.type) {
    case OptionType::Number: (o.*d.number).reset(); break;
    case OptionType::Flag: (o.*d.flag).reset(); break;
    case OptionType::Pair: (o.*d.pair).reset(); break;
    case OptionType::Text: (o.*d.text).reset(); break;
  }
}

void copy_if_set(const OptionDescription& d, const OptimizerOptions& from, OptimizerOptions& to) {
  if (!is_set(d, from)) return;
  switch (d.type) {
    case OptionType::Number: to.*d.number = from.*d.number; break;
    case OptionType::Flag: to.*d.flag = from.*d.flag; break;
    case OptionType::Pair: to.*d.pair = from.*d.pair; break;
    case OptionType::Text: to.*d.text = from.*d.text; break;
  }
}

void set_default(const OptionDescription& d, OptimizerOptions& o) {
  if (!d.has_default || d.default_computed || d.not_in_cpp_api) return;
  switch (d.type) {
    case OptionType::Number: o.*d.number = d.default_number; break;
    case OptionType::Flag: o.*d.flag = d.default_flag; break;
    case OptionType::Pair: o.*d.pair = d.default_pair; break;
    case OptionType::Text: break;  // no value
  }
}

bool is_default(const OptionDescription& d, const OptimizerOptions& o) {
  if (!d.has_default || d.default_computed || !is_set(d, o)) return false;
  switch (d.type) {
    case OptionType::Number: return same_number(*(o.*d.number), d.default_number);
    case OptionType::Flag: return *(o.*d.flag) == d.default_flag;
    case OptionType::Pair:
      return same_number((o.*d.pair)->first, d.default_pair.first) &&
             same_number((o.*d.pair)->second, d.default_pair.second);
    case OptionType::Text: return false;  // the default is no value
  }
  return false;
}

std::string option_text(const OptionDescription& d, const OptimizerOptions& o) {
  if (!is_set(d, o)) return "unset";
  switch (d.type) {
    case OptionType::Number: return number_text(*(o.*d.number));
    case OptionType::Flag: return *(o.*d.flag) ? "true" : "false";
    case OptionType::Pair:
      return "(" + number_text((o.*d.pair)->first) + ", " + number_text((o.*d.pair)->second) + ")";
    case OptionType::Text: return *(o.*d.text);
  }
  return "";
}

OptimizerOptions resolved_options(OptimizerKind kind, const OptimizerOptions& given) {
  OptimizerOptions out;
  for (const OptionDescription& d : describe(kind).options) {
    set_default(d, out);
    copy_if_set(d, given, out);
    if (d.not_in_cpp_api && is_set(d, out) && is_default(d, out)) unset(d, out);  // in a trace only where it is on
  }
  return out;
}

std::vector<std::string> foreign_options(OptimizerKind kind, const OptimizerOptions& o) {
  std::vector<std::string> out;
  for (const OptimizerDescription& other : optimizer_descriptions())
    for (const OptionDescription& d : other.options) {
      if (!is_set(d, o) || find_option(kind, d.name)) continue;
      bool listed = false;
      for (const std::string& n : out) listed = listed || n == d.name;
      if (!listed) out.push_back(d.name);
    }
  return out;
}

}  // namespace lockstep
