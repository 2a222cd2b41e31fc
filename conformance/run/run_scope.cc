#include "conformance/run/run_scope.h"

#include "conformance/program/coverage_cells.h"

#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "conformance/program/feature_areas.h"
#include "conformance/program/features.h"
#include "conformance/program/optimizer_descriptions.h"
#include "conformance/program/program_json.h"
#include "conformance/program/pytorch_version.h"
#include "conformance/report/report.h"
#include "conformance/run/api_profile.h"
#include "conformance/run/zero_grad_default.h"

namespace lockstep {

RunScope make_run_scope(const Capabilities& caps, const std::string& zero_grad_rule, const std::string& features,
                        const std::string& exclude_features, const std::string& profile, Expectations& expectations) {
  RunScope s;
  s.coverage.implementation = caps.hello;
  // A hello may list many unknown names: the first few are enough to say so.
  constexpr size_t kMaxWarnings = 20;
  if (!caps.protocol_note.empty()) s.coverage.warnings.push_back(caps.protocol_note);
  for (size_t i = 0; i < caps.warnings.size() && i < kMaxWarnings; ++i) s.coverage.warnings.push_back(caps.warnings[i]);
  if (caps.warnings.size() > kMaxWarnings)
    s.coverage.warnings.push_back(std::to_string(caps.warnings.size() - kMaxWarnings) + " more warnings about the hello");
  exclude_unsupported(caps, *s.scope);
  narrow_scope(*s.scope, features, exclude_features);
  std::string name = profile.empty() ? caps.api_profile : profile;
  if (name == "none") name.clear();
  if (!name.empty()) {
    std::string path;
    const bool from_hello = profile.empty();
    try {
      path = profile_path(name, /*allow_files=*/!from_hello);
    } catch (const InputError& e) {
      if (!from_hello) throw;
      s.coverage.warnings.push_back("the hello names API profile '" + name + "', which is not one this lockstep ships (" +
                                    e.message() + "): no profile rules apply");
    }
    if (!path.empty()) {
      const ApiProfile p = load_profile(path);
      apply_profile(p, *s.scope, expectations);
      // A profile from a file says so: only shipped profiles go by their bare name.
      const bool shipped = path == default_profiles_dir() + "/" + p.name + ".json";
      s.coverage.profile = shipped ? p.name : p.name + " (from " + path + ")";
      for (const ProfileRule& r : p.rules)
        s.coverage.rules.push_back({r.id, r.avoid ? "avoid" : "expect",
                                    (r.semantics.empty() ? "" : r.semantics + " ") + r.reason, 0});
    }
  }
  if (!zero_grad_rule.empty()) s.coverage.rules.push_back({kZeroGradDefaultRule, "default", zero_grad_rule, 0});
  for (const FeatureExclusion& x : s.scope->exclusions()) s.coverage.left_out.emplace_back(x.when, x.reason);
  return s;
}

namespace {

constexpr const char* kEmbeddingVersionRule = "embedding-saved-weight-by-version";

// The rule's reason when the two versions are of different generations; "" when not (or one cannot be read). It
// names the rule as profile rules do (" rule ID: "), which is how finish_coverage() counts what it left out.
std::string version_rule_reason(const std::string& implementation_version, const std::string& oracle_version) {
  const auto mine = parse_pytorch_version(implementation_version), theirs = parse_pytorch_version(oracle_version);
  if (!mine || !theirs || (mine->first >= 2) == (theirs->first >= 2)) return "";
  return fmt::format(
      "SEM-2.8, SEM-12.5 rule {}: the implementation follows PyTorch {}, the recording oracle is {}: LibTorch 1.x's "
      "embedding saves its weight and 2.x's does not, so a backward through a retained embedding graph after a step "
      "of the weight fails on one and runs on the other",
      kEmbeddingVersionRule, implementation_version, oracle_version);
}

void list_version_rule(RunScope& s, const std::string& reason) {
  for (const AppliedRule& r : s.coverage.rules)
    if (r.id == kEmbeddingVersionRule) return;
  s.coverage.rules.push_back({kEmbeddingVersionRule, "avoid", reason, 0});
}

}  // namespace

// Rules that leave out one feature between generations (SEM-12.5), each where the two generations' oracles differ.
struct FeatureVersionRule {
  const char* id;
  const char* feature;
  const char* sections;
  const char* difference;
};
constexpr FeatureVersionRule kFeatureVersionRules[] = {
    // LibTorch 2.x takes the 2-norm of a one-element tensor as its absolute value, 1.x squares it in the dtype.
    {"clip-norm-of-one-element-by-version", "clip_grad_norm", "SEM-18.1",
     "LibTorch 2.x takes the 2-norm of a one-element tensor as its absolute value where 1.x squares it in the dtype "
     "(inf or 0 once the square leaves the range), so a clip_grad_norm can differ by version"},
    // LibTorch 1.13's torch::load keeps the groups' options, 2.x restores the saved ones.
    {"load-options-by-version", "load_options_differ", "SEM-19.2",
     "LibTorch 1.13's load of a checkpoint keeps the optimizer's group options where 2.x restores the saved ones, so a "
     "load into an optimizer whose options changed since the save differs by version"},
};

std::string feature_rule_reason(const FeatureVersionRule& rule, const std::string& implementation_version,
                                const std::string& oracle_version) {
  if (version_rule_reason(implementation_version, oracle_version).empty()) return "";
  return fmt::format("{}, SEM-12.5 rule {}: the implementation follows PyTorch {}, the recording oracle is {}: {}",
                     rule.sections, rule.id, implementation_version, oracle_version, rule.difference);
}

void exclude_what_the_oracle_lacks(RunScope& s, const Capabilities* oracle_caps, const std::string& profile,
                                   Expectations& expectations) {
  if (!oracle_caps) {
    for (const OptimizerDescription& d : optimizer_descriptions())
      for (const OptionDescription& o : d.options)
        if (o.not_in_cpp_api)
          s.scope->exclude({std::string(d.name) + "." + o.name},
                           fmt::format("the oracle, LibTorch's C++ API, has no {} (SEMANTICS 20.2): --oracle with a "
                                       "driver that has it checks it (tools/adapters/pytorch_driver.py)", o.name),
                           "oracle");
    return;
  }
  Capabilities named = *oracle_caps;
  named.name = "the oracle (" + (oracle_caps->name.empty() ? std::string("a driver") : oracle_caps->name) + ")";
  exclude_unsupported(named, *s.scope);
  if (oracle_caps->api_profile.empty() || profile == "none") return;
  ApiProfile p = load_profile(profile_path(oracle_caps->api_profile, /*allow_files=*/false));
  for (ProfileRule& r : p.rules) std::swap(r.expected, r.actual);
  p.name += ", the oracle's";
  apply_profile(p, *s.scope, expectations);
  s.coverage.profile = s.coverage.profile.empty() ? p.name : s.coverage.profile + "; " + p.name;
}

RunScope make_scope_against_oracle(const ScopeAgainstOracle& in, Expectations& expectations) {
  // Entries for other PyTorch versions than the implementation's ("when", expectations.h) do not apply here.
  expectations.keep_for_version(in.implementation_version);
  RunScope scope = make_run_scope(in.caps, in.zero_grad_rule, in.features, in.exclude_features, in.profile, expectations);
  try {
    exclude_what_the_oracle_lacks(scope, in.oracle_caps, in.profile, expectations);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("--oracle: ") + e.what());
  }
  // The oracle's version: its hello's, else what its name says (the command, or the in-process engine's name).
  const std::string oracle_version =
      in.oracle_caps && !in.oracle_caps->pytorch_version.empty() ? in.oracle_caps->pytorch_version : in.oracle_name;
  if (!in.oracle_expectations_file.empty()) {  // SEMANTICS 20.4: the oracle's own differences from the C++ API
    try {
      expectations.append(turned_around(load_expectations(in.oracle_expectations_file), oracle_version));
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("--oracle-expectations: ") + e.what());
    }
  }
  apply_version_rules(scope, in.implementation_version, oracle_version);
  return scope;
}

void apply_version_rules(RunScope& s, const std::string& implementation_version, const std::string& oracle_version) {
  const std::string reason = version_rule_reason(implementation_version, oracle_version);
  if (reason.empty()) return;
  s.scope->exclude({"op:embedding", "backward_after_step"}, reason, "version");
  list_version_rule(s, reason);
  s.coverage.left_out.emplace_back(std::vector<std::string>{"op:embedding", "backward_after_step"}, reason);
  for (const FeatureVersionRule& rule : kFeatureVersionRules) {
    const std::string why = feature_rule_reason(rule, implementation_version, oracle_version);
    s.scope->exclude({rule.feature}, why, "version");
    s.coverage.rules.push_back({rule.id, "avoid", why, 0});
    s.coverage.left_out.emplace_back(std::vector<std::string>{rule.feature}, why);
  }
}

bool in_version_scope(RunScope& s, const std::string& id, const Program& program, const std::set<std::string>& features,
                      const std::string& implementation_version, const std::string& recorder_version, std::string* why) {
  for (const FeatureVersionRule& rule : kFeatureVersionRules) {
    if (!features.count(rule.feature)) continue;
    const std::string reason = feature_rule_reason(rule, implementation_version, recorder_version);
    if (reason.empty()) continue;
    bool listed = false;
    for (const AppliedRule& r : s.coverage.rules) listed = listed || r.id == rule.id;
    if (!listed) s.coverage.rules.push_back({rule.id, "avoid", reason, 0});
    ++s.coverage.out_of_scope;
    s.coverage.left_out_cases.push_back({id, reason, feature_areas(program)});
    ++s.left_out_by[reason];
    if (why) *why = reason;
    return false;
  }
  if (!features.count("op:embedding") || !features.count("backward_after_step")) return true;
  const std::string reason = version_rule_reason(implementation_version, recorder_version);
  if (reason.empty()) return true;
  list_version_rule(s, reason);
  ++s.coverage.out_of_scope;
  s.coverage.left_out_cases.push_back({id, reason, feature_areas(program)});
  ++s.left_out_by[reason];
  if (why) *why = reason;
  return false;
}

bool in_scope(RunScope& s, const std::string& id, const Program& program, const std::set<std::string>& features,
              std::string* why) {
  const FeatureExclusion* x = s.scope->excluded(features);
  if (!x) return true;
  ++s.coverage.out_of_scope;
  s.coverage.left_out_cases.push_back({id, x->reason, feature_areas(program)});
  ++s.left_out_by[x->reason];
  if (why) *why = x->reason;
  return false;
}

void count_case(RunScope& s, const Program& program, const std::set<std::string>& features,
                const LockstepResult& result) {
  if (!result.skipped.empty()) {
    ++s.coverage.skipped;
    return;
  }
  ++s.coverage.tested;
  for (const std::string& f : features) ++s.coverage.exercised[f];
  for (const std::string& cell : coverage_cells(program)) ++s.coverage.cells[cell];
  for (const auto& [field, n] : result.optional_fields) s.coverage.optional_fields[field] += n;
  if (features.count("zero_grad_default"))
    for (AppliedRule& r : s.coverage.rules)
      if (r.id == kZeroGradDefaultRule) ++r.uses;
}

void finish_coverage(RunScope& s, RunReport& report, const Expectations& expectations) {
  for (const FeatureInfo& f : all_features()) {
    if (!s.scope->allows(f.name) || s.coverage.exercised.count(f.name) || s.not_generated.count(f.name)) continue;
    // An option or a situation of an optimizer out of scope is out of scope too.
    if (!f.optimizer.empty() && !s.scope->allows(f.optimizer)) continue;
    if (!f.needs.empty() && !s.scope->allows(f.needs)) continue;  // a situation of a feature out of scope
    s.coverage.not_exercised.push_back(f.name);
  }
  for (AppliedRule& r : s.coverage.rules) {
    if (r.kind == "expect") {
      for (const Expectation& e : expectations.entries)
        if (e.source.size() >= r.id.size() && e.source.compare(e.source.size() - r.id.size(), r.id.size(), r.id) == 0 &&
            e.source.rfind("profile ", 0) == 0)
          r.uses += e.uses;
    } else if (r.kind == "avoid") {
      for (const auto& [reason, n] : s.left_out_by)
        if (reason.find(" rule " + r.id + ":") != std::string::npos) r.uses += n;
    }
  }
  for (const Expectation* e : expectations.unused_entries()) {
    if (e->source.rfind("profile ", 0) == 0) continue;  // listed with the rules
    std::string what = "id " + e->id;
    if (!e->features.empty()) what += ", features " + fmt::format("{}", fmt::join(e->features, " + "));
    if (!e->fields.empty()) what += ", fields " + fmt::format("{}", fmt::join(e->fields, ", "));
    report.unused_expectations.push_back(what + ": " + e->reason + (e->source.empty() ? "" : " (" + e->source + ")"));
  }
  report.coverage = s.coverage;
}

}  // namespace lockstep
