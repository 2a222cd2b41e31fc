#include "conformance/run/replay_plan.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "conformance/program/feature_areas.h"
#include "conformance/program/features.h"
#include "conformance/program/glob.h"
#include "conformance/program/program_json.h"
#include "conformance/program/pytorch_version.h"
#include "conformance/run/zero_grad_default.h"

namespace lockstep {

bool recorder_zero_grad_none(const std::string& recorded_by) {
  const auto v = parse_pytorch_version(recorded_by);
  return v && v->first >= 2;
}

namespace {

bool selected(const ReplaySelection& s, const Fixture& f) {
  if (!s.only.empty() && std::none_of(s.only.begin(), s.only.end(), [&](const std::string& g) { return glob_match(g, f.id); }))
    return false;
  auto has = [&](const std::string& t) { return std::find(f.tags.begin(), f.tags.end(), t) != f.tags.end(); };
  return std::all_of(s.tags.begin(), s.tags.end(), has) && std::none_of(s.exclude_tags.begin(), s.exclude_tags.end(), has);
}

}  // namespace

ReplayPlan plan_replay(const std::vector<Fixture>& fixtures, const ReplaySelection& selection, RunScope& scope,
                       const std::string& replay_version, bool follows_each_recorder, bool implementation_none) {
  ReplayPlan plan;
  for (const Fixture& original : fixtures) {
    if (!selected(selection, original)) continue;
    ++plan.matched;
    if (!follows_each_recorder && !fixture_applies(original, replay_version)) {
      ++plan.other_versions;
      plan.left_out.emplace_back(original.id, "recorded for PyTorch " + original.when_pytorch);
      continue;
    }
    std::string why;
    const std::set<std::string> features = program_features(original.program);
    if (!in_scope(scope, original.id, original.program, features, &why) ||
        (!follows_each_recorder && !in_version_scope(scope, original.id, original.program, features, replay_version,
                                                     original.expected.engine, &why))) {
      plan.left_out.emplace_back(original.id, why);
      continue;
    }
    PlannedFixture p{&original, original, features, false, false};
    // impl following each recorder has that recorder's default: nothing to spell out.
    p.default_differs = !follows_each_recorder && implementation_none != recorder_zero_grad_none(original.expected.engine);
    p.spelled_out = p.default_differs && uses_zero_grad_default(p.sent.program);
    if (p.spelled_out) {
      p.sent.program = spell_out_zero_grad(p.sent.program, recorder_zero_grad_none(original.expected.engine));
      p.features = program_features(p.sent.program);
    }
    plan.planned.push_back(std::move(p));
  }
  return plan;
}

ReplayCaseResult replay_planned(const PlannedFixture& p, ExternalDriver* driver,
                                const std::function<std::unique_ptr<Engine>(const std::string& recorded_by)>& make_engine,
                                const ReplayConfig& config) {
  auto engine = [&] {
    std::unique_ptr<Engine> e = make_engine(p.original->expected.engine);
    return p.default_differs ? with_zero_grad_default(std::move(e), recorder_zero_grad_none(p.original->expected.engine)) : std::move(e);
  };
  Fixture whole = read_fixture_file(p.sent.file);
  if (whole.id != p.sent.id)
    throw InputError(p.sent.file, "/id", fmt::format("changed from '{}' to '{}' during the replay", p.sent.id, whole.id));
  if (p.spelled_out) {
    whole.program = p.sent.program;
    whole.program_json = program_to_json(whole.program);
  }
  ReplayCaseResult r = driver ? replay_on_driver(whole, *driver, config, &p.features)
                              : replay_in_process(whole, engine, config, &p.features);
  r.areas = feature_areas(p.original->program);
  return r;
}

}  // namespace lockstep
