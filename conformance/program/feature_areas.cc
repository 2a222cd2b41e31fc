#include "conformance/program/feature_areas.h"

#include "conformance/program/optimizer_descriptions.h"

#include <set>

#include "conformance/program/coverage_cells.h"
#include "conformance/program/features.h"

namespace lockstep {

const std::vector<std::string>& all_feature_areas() {
  static const std::vector<std::string> areas = [] {
    std::vector<std::string> out = {"autograd", "accumulation", "zero_grad"};
    for (const OptimizerDescription& d : optimizer_descriptions()) out.push_back(d.name);
    out.insert(out.end(), {"clipping", "checkpoint", "groups", "errors", "numerics"});
    return out;
  }();
  return areas;
}

namespace {

// Actions whose failure the specification defines and a static look at the program can see coming.
bool asks_for_an_error(const Program& program, const std::set<std::string>& features) {
  for (const char* f : {"invalid_options", "backward_after_freed", "param_in_two_groups", "load_groups_differ"})
    if (features.count(f)) return true;
  // A step changes the saved parameters in place: LibTorch 1.13's optimizers bump their version, except SGD's
  // (optimizer_descriptions.h; PROTOCOL.md, error kind inplace_modified).
  if (features.count("backward_after_step") && program.optimizer && describe(program.optimizer->kind).step_bumps_version)
    return true;
  bool forward_seen = false, held_no_grad = false;
  for (const Action& a : actions_as_run(program)) {
    switch (a.kind) {
      case ActionKind::Forward:
        forward_seen = true;
        held_no_grad = a.no_grad;
        break;
      case ActionKind::Backward:
        if (!forward_seen || held_no_grad) return true;  // no_output, no_grad_fn (SEM-2.3)
        break;
      case ActionKind::ZeroGrad:
      case ActionKind::Step:
      case ActionKind::SetOptions:
      case ActionKind::AddParamGroup:
      case ActionKind::StateDict:
      case ActionKind::LoadStateDict:
        if (!program.optimizer) return true;  // no_optimizer
        break;
      default:
        break;
    }
  }
  return false;
}

bool at_a_numeric_edge(const std::set<std::string>& features, const Program& program) {
  if (features.count("special_values")) return true;
  for (const std::string& cell : coverage_cells(program)) {
    const size_t bar = cell.rfind('|');
    const std::string edge = cell.substr(bar + 1);
    if (cell.rfind("ops|", 0) == 0 && (edge == "tiny" || edge == "large" || edge == "nonfinite")) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> feature_areas(const Program& program) { return feature_areas(program, program_features(program)); }

std::vector<std::string> feature_areas(const Program& program, const std::set<std::string>& features) {
  int backwards = 0;
  bool zeroes = false, steps = false;
  for (const Action& a : actions_as_run(program)) {
    backwards += a.kind == ActionKind::Backward;
    zeroes |= a.kind == ActionKind::ZeroGrad || a.kind == ActionKind::SetGradNone;
    steps |= a.kind == ActionKind::Step;
  }
  std::set<std::string> in;
  if (backwards >= 1) in.insert("autograd");
  if (backwards >= 2) in.insert("accumulation");
  if (zeroes) in.insert("zero_grad");
  if (steps && program.optimizer) in.insert(optimizer_name(program.optimizer->kind));
  if (features.count("clip_grad_norm") || features.count("clip_grad_value")) in.insert("clipping");  // SEMANTICS §18
  if (features.count("state_dict")) in.insert("checkpoint");  // SEMANTICS §19
  for (const char* f : {"param_groups", "add_param_group", "set_options"})
    if (features.count(f)) in.insert("groups");
  if (asks_for_an_error(program, features)) in.insert("errors");
  if (at_a_numeric_edge(features, program)) in.insert("numerics");
  std::vector<std::string> out;
  for (const std::string& area : all_feature_areas())
    if (in.count(area)) out.push_back(area);
  return out;
}

}  // namespace lockstep
