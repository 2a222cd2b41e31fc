// conformance/program/checkpoint_timeline.h: the optimizer's groups and options as a program's actions change them, read
// statically, for its checkpoint actions (SEMANTICS §19). One walk serves validate() (check_checkpoints: what lockstep
// does not run), the program's features (load_groups_differ, load_options_differ) and its coverage cells.
//
// The groups are parameter lists: the program's, then each add_param_group's (taken as made, whether it succeeds or
// not); a load into a fresh optimizer has the program's again. The options have an id that no other state of them
// shares: 0 is the program's; set_options makes a new one, and so does a load whose options differ from the saved ones
// (1.13 keeps the optimizer's, 2.x restores the saved: either way not a state seen before, SEM-19.2). Steps count as
// taken, failing or not.
//
// Example:
//   CheckpointTimeline timeline(program);
//   for (const Action& a : program.actions) {
//     const CheckpointTimeline::Load load = timeline.apply(a);
//     if (load.saved && load.groups_differ) ...  // a load of a checkpoint saved with another number of groups
//   }
#pragma once

#include <map>
#include <string>
#include <vector>

#include "conformance/program/program.h"

namespace lockstep {

class CheckpointTimeline {
 public:
  using Groups = std::vector<std::vector<std::string>>;
  struct Saved {
    Groups groups;
    int options_id = 0;
    int steps = 0;
  };
  // What a load_state_dict found (every other action: nothing).
  struct Load {
    // The checkpoint it reads, kept by the timeline (a later state_dict of its name overwrites it); null: no earlier
    // state_dict saved one of its name.
    const Saved* saved = nullptr;
    bool steps_since_save = false;  // a step came between the save and the load
    bool groups_differ = false;     // another number of groups than the saved
    bool options_differ = false;    // as many groups, other options than the saved
  };

  explicit CheckpointTimeline(const Program& p);
  // The action's effect on the groups, the options, the steps and the saves; for a load_state_dict, what it found
  // (read after a fresh load's reset: the fresh optimizer is the one loaded into).
  Load apply(const Action& a);
  const Groups& groups() const { return groups_; }
  int steps() const { return steps_; }

 private:
  Groups program_groups_, groups_;
  int options_id_ = 0, next_options_id_ = 0, steps_ = 0;
  std::map<std::string, Saved> saved_;
};

}  // namespace lockstep
