// Capabilities from a driver's hello (capabilities.h).
#include "conformance/run/capabilities.h"

#include <cctype>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conformance/program/features.h"
#include "conformance/program/op_descriptions.h"
#include "conformance/program/optimizer_descriptions.h"
#include "conformance/run/driver_process.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/optional_fields.h"

namespace lockstep {
namespace {

using json = nlohmann::ordered_json;

std::string optional_string(const json& obj, const char* key, const std::string& base) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  if (!it->is_string()) throw JsonError(base + "/" + key, "expected a string");
  return it->get<std::string>();
}

std::set<std::string> string_set(const json& list, const std::string& pointer) {
  if (!list.is_array()) throw JsonError(pointer, "expected an array of strings");
  std::set<std::string> out;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) throw JsonError(pointer + "/" + std::to_string(i), "expected a string");
    out.insert(list[i].get<std::string>());
  }
  return out;
}

// The known names of one category, without the "op:" prefix for ops.
std::set<std::string> known(const std::string& category) {
  std::set<std::string> out;
  for (const FeatureInfo& f : all_features())
    if (f.category == category) out.insert(category == "op" ? f.name.substr(3) : f.name);
  return out;
}

}  // namespace

Capabilities capabilities_from_hello(const json& hello) {
  Capabilities c;
  c.hello = hello;
  if (hello.is_null()) return c;
  const std::string base = "/hello";
  if (!hello.is_object()) throw JsonError(base, "expected an object");
  c.name = optional_string(hello, "name", base);
  c.version = optional_string(hello, "version", base);
  c.language = optional_string(hello, "language", base);
  c.api_profile = optional_string(hello, "api_profile", base);
  c.pytorch_version = optional_string(hello, "pytorch_version", base);
  if (!c.pytorch_version.empty() && !parse_pytorch_version(c.pytorch_version))
    throw JsonError(base + "/pytorch_version", "expected a version \"major.minor[.patch]\", found \"" + c.pytorch_version + "\"");
  if (auto d = hello.find("defaults"); d != hello.end()) {
    if (!d->is_object()) throw JsonError(base + "/defaults", "expected an object");
    for (const auto& [key, value] : d->items()) {
      if (key != "zero_grad") {
        c.warnings.push_back("hello.defaults." + key + " is not known to this lockstep (ignored)");
        continue;
      }
      if (value != "none" && value != "zero")
        throw JsonError(base + "/defaults/zero_grad", "expected \"none\" or \"zero\"");
      c.zero_grad_default_none = value == "none";
    }
  }
  // A version and a default that contradict each other (SEM-12.2): the comparison follows the default, the
  // version's named case checks follow the version, so say it now.
  if (c.zero_grad_default_none && !c.pytorch_version.empty()) {
    const bool version_none = parse_pytorch_version(c.pytorch_version)->first >= 2;
    if (version_none != *c.zero_grad_default_none)
      c.warnings.push_back("the hello declares PyTorch " + c.pytorch_version + " but \"defaults\": {\"zero_grad\": \"" +
                           (*c.zero_grad_default_none ? "none" : "zero") + "\"}, which is not that version's default: "
                           "the comparison follows the declared default, named case sem12-zero-grad-default-by-version "
                           "the version's");
  }
  // Optional trace fields the driver reports (optional_fields.h); an announced one is required in its answers.
  if (auto o = hello.find("observes"); o != hello.end() && !o->is_null()) {
    c.observes = string_set(*o, base + "/observes");
    for (const std::string& n : c.observes)
      if (!is_optional_field(n))
        c.warnings.push_back("the driver observes '" + n + "', not an optional trace field this lockstep knows (ignored)");
  }
  auto s = hello.find("supports");
  if (s == hello.end() || s->is_null()) return c;
  const std::string sp = base + "/supports";
  if (!s->is_object()) throw JsonError(sp, "expected an object");
  c.declared_supports = true;
  auto check_known = [&](const std::set<std::string>& names, const std::string& category, const std::string& what) {
    const std::set<std::string> k = known(category);
    for (const std::string& n : names)
      if (!k.count(n)) c.warnings.push_back("the driver supports " + what + " '" + n + "', unknown to this lockstep");
  };
  for (const auto& [key, value] : s->items()) {
    const std::string p = sp + "/" + key;
    if (key == "dtypes") {
      c.dtypes = string_set(value, p);
      check_known(*c.dtypes, "dtype", "dtype");
    } else if (key == "ops") {
      c.ops = string_set(value, p);
      // `lockstep features` prints ops as "op:add": a hello may spell them either way.
      std::set<std::string> bare;
      for (const std::string& n : *c.ops) bare.insert(n.rfind("op:", 0) == 0 ? n.substr(3) : n);
      c.ops = std::move(bare);
      check_known(*c.ops, "op", "op");
    } else if (key == "features") {
      c.features = string_set(value, p);
      const std::set<std::string> k = known("feature"), situations = known("situation");
      for (const std::string& n : *c.features) {
        if (situations.count(n))
          c.warnings.push_back("'" + n + "' is a situation, not a feature a driver declares (API profiles name situations)");
        else if (!k.count(n))
          c.warnings.push_back("the driver supports feature '" + n + "', unknown to this lockstep");
      }
    } else if (key == "optimizers") {
      if (!value.is_object()) throw JsonError(p, "expected an object: optimizer name -> the options it honours");
      c.optimizers.emplace();
      const std::set<std::string> k = known("optimizer");
      for (const auto& [name, options] : value.items()) {
        (*c.optimizers)[name] = string_set(options, p + "/" + name);
        if (!k.count(name)) {
          c.warnings.push_back("the driver supports optimizer '" + name + "', unknown to this lockstep");
          continue;
        }
        const std::set<std::string> options_known = known("option");
        for (const std::string& o : (*c.optimizers)[name])
          if (!options_known.count(name + "." + o))
            c.warnings.push_back("the driver supports " + name + "'s option '" + o + "', unknown to this lockstep");
      }
    } else {
      c.warnings.push_back("hello.supports." + key + " is not known to this lockstep (ignored)");
    }
  }
  return c;
}

Capabilities driver_capabilities(const json& hello) {
  Capabilities c = capabilities_from_hello(hello);
  c.protocol = 1;
  if (hello.is_object())
    if (auto p = hello.find("protocol"); p != hello.end() && p->is_number_integer()) c.protocol = p->get<int>();
  // Without its own list of ops, a driver gets the ops of its protocol (op_descriptions.h, since_protocol).
  if (!c.ops && c.protocol < kDriverProtocolVersion) {
    std::set<std::string> known;
    std::vector<std::string> newer;
    for (const OpDescription& d : op_descriptions()) {
      if (d.op == Op::Param || d.op == Op::Const) continue;
      if (d.since_protocol <= c.protocol) known.insert(d.name);
      else newer.push_back(d.name);
    }
    if (!newer.empty()) c.ops = std::move(known);  // else every op: the driver's protocol has them all
    if (!newer.empty())
      c.protocol_note = fmt::format(
          "the driver speaks protocol {} and declares no ops, so it gets none that came later ({}); to be tested on "
          "them, answer the hello with \"protocol\": {} or list them in supports.ops (fixtures/PROTOCOL.md 2a)",
          c.protocol, fmt::join(newer, ", "), kDriverProtocolVersion);
  }
  // Without its own list of features, a driver gets none that came after its protocol: a step's closure came with
  // protocol 4 (SEMANTICS §17), gradient clipping with protocol 6 (SEMANTICS §18), checkpoints with 7 (SEMANTICS §19).
  static const std::map<std::string, int> kFeatureSince = {
      {"closure", 4}, {"clip_grad_norm", 6}, {"clip_grad_value", 6}, {"state_dict", 7}, {"load_state_dict", 7}};
  if (!c.features && c.protocol < kDriverProtocolVersion) {
    std::vector<std::string> newer;
    c.features.emplace();
    for (const FeatureInfo& f : all_features()) {
      if (f.category != "feature") continue;
      auto since = kFeatureSince.find(f.name);
      if (since != kFeatureSince.end() && since->second > c.protocol)
        newer.push_back(fmt::format("{} (protocol {})", f.name, since->second));
      else c.features->insert(f.name);
    }
    if (newer.empty()) {
      c.features.reset();  // every feature: the driver's protocol has them all
    } else {
      c.protocol_note = (c.protocol_note.empty() ? "" : c.protocol_note + "; ") +
                        fmt::format("the driver speaks protocol {} and declares no features, so it gets none that came "
                                    "later ({}); to be tested on them, answer the hello with \"protocol\": {} or list "
                                    "them in supports.features (fixtures/PROTOCOL.md 2a)",
                                    c.protocol, fmt::join(newer, ", "), kDriverProtocolVersion);
    }
  }
  // Without its own list of optimizers, a driver of protocol 2 or newer gets the optimizers of its protocol, each with
  // the options of its protocol (optimizer_descriptions.h, since_protocol): L-BFGS came with protocol 5 (SEMANTICS
  // §16), the option maximize with 8 (§20).
  const bool maximize_known = c.protocol >= kMaximizeSinceProtocol;
  auto option_known = [&](const std::string& optimizer, const std::string& option) {
    const std::optional<OptimizerKind> kind = optimizer_from_name(optimizer);
    const OptionDescription* d = kind ? find_option(*kind, option) : nullptr;
    return maximize_known || !d || !d->not_in_cpp_api;
  };
  if (!c.optimizers && c.protocol >= 2 && c.protocol < kDriverProtocolVersion) {
    std::vector<std::string> newer;
    std::set<std::string> kept;
    for (const OptimizerDescription& d : optimizer_descriptions()) {
      if (d.since_protocol <= c.protocol) kept.insert(d.name);
      else newer.push_back(fmt::format("{} (protocol {})", d.name, d.since_protocol));
    }
    if (!maximize_known) newer.push_back(fmt::format("the option maximize (protocol {})", kMaximizeSinceProtocol));
    if (!newer.empty()) {
      c.optimizers.emplace();
      for (const FeatureInfo& f : all_features()) {
        if (f.category != "option") continue;
        const std::string optimizer = f.name.substr(0, f.name.find('.')), option = f.name.substr(f.name.find('.') + 1);
        if (kept.count(optimizer) && option_known(optimizer, option)) (*c.optimizers)[optimizer].insert(option);
      }
      c.protocol_note = (c.protocol_note.empty() ? "" : c.protocol_note + "; ") +
                        fmt::format("the driver speaks protocol {} and declares no optimizers, so it gets none that came "
                                    "later ({}); to be tested on them, answer the hello with \"protocol\": {} or list "
                                    "them in supports.optimizers (fixtures/PROTOCOL.md 2a)",
                                    c.protocol, fmt::join(newer, ", "), kDriverProtocolVersion);
    }
  }
  if (c.protocol >= 2 || c.optimizers) return c;
  // Protocol 1's optimizers, each with every option it had (the options of an optimizer are its description's).
  c.optimizers.emplace();
  for (const FeatureInfo& f : all_features()) {
    if (f.category != "option") continue;
    const std::string optimizer = f.name.substr(0, f.name.find('.'));
    const std::string option = f.name.substr(f.name.find('.') + 1);
    if ((optimizer == "sgd" || optimizer == "adam" || optimizer == "adamw") && option_known(optimizer, option))
      (*c.optimizers)[optimizer].insert(option);
  }
  c.protocol_note =
      (c.protocol_note.empty() ? "" : c.protocol_note + "; ") + std::string(hello.is_null() ? "the driver answered no hello" : "the driver's hello says protocol 1") +
      " and declares no optimizers, so it is held to protocol 1's: SGD, Adam and AdamW (RMSprop and Adagrad came "
      "with protocol 2). To be tested on more, answer the hello with \"protocol\": 3 and declare what it supports "
      "(fixtures/PROTOCOL.md 2a, \"supports\"); to narrow the run, --profile NAME (an API profile, e.g. "
      "pytorch-python for a framework with PyTorch's Python API) or --exclude-features LIST";
  return c;
}

void exclude_unsupported(const Capabilities& caps, FeatureScope& scope) {
  const std::string who = caps.name.empty() ? "the implementation" : caps.name;
  for (const FeatureInfo& f : all_features()) {
    std::string reason;
    if (f.category == "dtype" && caps.dtypes && !caps.dtypes->count(f.name)) {
      reason = who + " does not declare dtype " + f.name;
    } else if (f.category == "op" && caps.ops && !caps.ops->count(f.name.substr(3))) {
      reason = who + " does not declare op " + f.name.substr(3);
    } else if (f.category == "feature" && caps.features && !caps.features->count(f.name)) {
      reason = who + " does not declare feature " + f.name;
    } else if (f.category == "optimizer" && caps.optimizers && !caps.optimizers->count(f.name)) {
      reason = who + " does not declare optimizer " + f.name;
    } else if (f.category == "option" && caps.optimizers) {
      const size_t dot = f.name.find('.');
      const std::string opt = f.name.substr(0, dot), option = f.name.substr(dot + 1);
      auto it = caps.optimizers->find(opt);
      if (it != caps.optimizers->end() && !it->second.count(option))
        reason = who + " does not declare " + opt + "'s option " + option;
    }
    if (!reason.empty()) scope.exclude({f.name}, reason, "capabilities");
  }
}


bool resolved_zero_grad_default_none(const Capabilities& caps, bool oracle_default) {
  if (caps.zero_grad_default_none) return *caps.zero_grad_default_none;
  if (auto v = parse_pytorch_version(caps.pytorch_version)) return v->first >= 2;
  return oracle_default;
}


}  // namespace lockstep
