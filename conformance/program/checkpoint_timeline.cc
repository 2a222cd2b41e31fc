#include "conformance/program/checkpoint_timeline.h"

namespace lockstep {

CheckpointTimeline::CheckpointTimeline(const Program& p) {
  if (p.optimizer)
    for (const ParamGroupSpec& g : p.optimizer->groups) program_groups_.push_back(g.params);
  groups_ = program_groups_;
}

CheckpointTimeline::Load CheckpointTimeline::apply(const Action& a) {
  Load load;
  switch (a.kind) {
    case ActionKind::Step: ++steps_; break;
    case ActionKind::SetOptions: options_id_ = ++next_options_id_; break;
    case ActionKind::AddParamGroup: groups_.push_back(a.new_group.params); break;
    case ActionKind::StateDict: saved_[a.checkpoint] = Saved{groups_, options_id_, steps_}; break;
    case ActionKind::LoadStateDict: {
      if (a.fresh) {  // a new optimizer: the program's groups and options
        groups_ = program_groups_;
        options_id_ = 0;
      }
      auto it = saved_.find(a.checkpoint);
      if (it == saved_.end()) break;
      load.saved = &it->second;
      load.steps_since_save = it->second.steps != steps_;
      if (it->second.groups.size() != groups_.size()) {
        load.groups_differ = true;
      } else if (it->second.options_id != options_id_) {
        load.options_differ = true;
        options_id_ = ++next_options_id_;
      }
      break;
    }
    default: break;
  }
  return load;
}

}  // namespace lockstep
