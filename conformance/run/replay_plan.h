// conformance/run/replay_plan.h: the runner of `lockstep replay` (replay.h replays one fixture): which fixtures
// of a corpus a replay sends, in corpus order, and each one replayed as planned. A fixture runs when the
// selection (--only globs, --tags, --exclude-tags) picks it, it was recorded for the implementation's PyTorch
// version (fixture.h, fixture_applies) and it is in the scope (run_scope.h, the version rule included); the
// others are left out with the reason. Where the implementation's zero_grad() default differs from the recording
// oracle's (SEM-12.1), the program sent spells zero_grad() out as the recorder's (zero_grad_default.h).
//
// Example:
//   ReplayPlan plan = plan_replay(fixtures, {{"sem5-*"}, {}, {}}, scope, "2.6.0", /*follows_each_recorder=*/false,
//                                 /*implementation_none=*/true);
//   for (const PlannedFixture& p : plan.planned) results.push_back(replay_planned(p, nullptr, make_engine, config));
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "conformance/run/driver_process.h"
#include "conformance/run/engine.h"
#include "conformance/run/fixture.h"
#include "conformance/run/replay.h"
#include "conformance/run/run_scope.h"

namespace lockstep {

struct ReplaySelection {
  std::vector<std::string> only;          // id globs; empty: every fixture
  std::vector<std::string> tags;          // a fixture must have every one
  std::vector<std::string> exclude_tags;  // and none of these
};

struct PlannedFixture {
  const Fixture* original = nullptr;  // in the corpus the plan was made from (it must outlive the plan)
  Fixture sent;                       // the fixture as sent: zero_grad() spelled out where the defaults differ
  std::set<std::string> features;     // program_features(sent.program), computed once (coverage counts them)
  bool default_differs = false;  // the implementation's zero_grad() default is not the recorder's
  bool spelled_out = false;      // and the program used it: `sent` spells it out as the recorder's
};

struct ReplayPlan {
  std::vector<PlannedFixture> planned;                     // in corpus order
  size_t matched = 0;                                      // fixtures the selection picked
  size_t other_versions = 0;                               // of those, recorded for another PyTorch version
  std::vector<std::pair<std::string, std::string>> left_out;  // id and why, in corpus order (--verbose)
};

// Whether the PyTorch version `recorded_by` names ("libtorch-2.6.0", a fixture's expected.engine) sets grads to
// None in zero_grad() by default (2.x, SEM-12.1); false when it names no version.
bool recorder_zero_grad_none(const std::string& recorded_by);

// `replay_version`: the version whose recordings and rules apply (a driver's declared one, else the corpus'
// recorder). `follows_each_recorder`: the implementation replays each fixture as the version that recorded it
// (impl, SEM-12.6): no fixture is another version's, and nothing is spelled out. `implementation_none`: the
// implementation's zero_grad() default. Left-out fixtures are recorded in `scope`.
ReplayPlan plan_replay(const std::vector<Fixture>& fixtures, const ReplaySelection& selection, RunScope& scope,
                       const std::string& replay_version, bool follows_each_recorder, bool implementation_none);
// The plan points into `fixtures`: a temporary corpus would leave it dangling.
ReplayPlan plan_replay(std::vector<Fixture>&& fixtures, const ReplaySelection& selection, RunScope& scope,
                       const std::string& replay_version, bool follows_each_recorder, bool implementation_none) = delete;

// One planned fixture, read again whole from its file (a corpus index holds only the programs), on `driver`
// when given, else in process on the engine `make_engine(recorded_by)` makes (recorded_by: the fixture's
// recording oracle), its zero_grad() default made the recorder's where they differ. Throws InputError when the file changed its id since it was planned.
ReplayCaseResult replay_planned(const PlannedFixture& p, ExternalDriver* driver,
                                const std::function<std::unique_ptr<Engine>(const std::string& recorded_by)>& make_engine,
                                const ReplayConfig& config);

}  // namespace lockstep
