// What a program needs from an implementation: its features, as names an implementation declares support
// for in its handshake (fixtures/PROTOCOL.md section 2a), a run narrows with --features/--exclude-features,
// API profiles name in their rules, and reports count for coverage.
//
// One vocabulary, by category (all_features() lists every name with its meaning, SEMANTICS §13):
//   dtype      float32, float64                      a parameter or constant of that dtype
//   op         op:add, op:matmul, ...                an op of a loss expression (param and const are not)
//   optimizer  sgd, adam, adamw, rmsprop, adagrad, lbfgs
//   option     sgd.momentum, adam.amsgrad, ...       an option given a value other than the option type's
//                                                     own default anywhere (defaults, groups, set_options,
//                                                     add_param_group); SGD's lr is always needed
//   feature    retain_graph, create_graph, no_grad, explicit_gradient, zero_grad, zero_grad_default,
//              set_to_none, set_grad_none, hold_grad, closure, clip_grad_norm, clip_grad_value, state_dict,
//              load_state_dict, param_groups, add_param_group, set_options,
//              special_values, invalid_options
//   situation  group_options_partial, duplicate_param_in_group, param_in_two_groups, empty_param_list,
//              clip_value_without_grads, load_fresh, load_groups_differ, load_options_differ, load_drops_state,
//              amsgrad_change, adam_beta1_one, backward_after_freed, backward_after_step, and an optimizer's own
//              (its description's `situations`: lbfgs_group_max_eval_replaced, ...): constellations where
//              frameworks legitimately differ (API profiles)
//
// Example:
//   std::set<std::string> f = program_features(program);    // {"float32", "op:mul", "op:sum", "sgd", ...}
//   if (f.count("float64")) ... the program needs float64 ...
#pragma once

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "conformance/program/program.h"

namespace lockstep {

struct FeatureInfo {
  FeatureInfo(std::string name, std::string category, std::string meaning, std::string optimizer = "",
              std::string needs = "")
      : name(std::move(name)), category(std::move(category)), meaning(std::move(meaning)), optimizer(std::move(optimizer)),
        needs(std::move(needs)) {}
  std::string name;      // "retain_graph", "op:matmul", "adam.amsgrad"
  std::string category;  // "dtype", "op", "optimizer", "option", "feature", "situation"
  std::string meaning;   // one line, citing SEMANTICS
  std::string optimizer;  // an option's or an optimizer's own situation's optimizer ("lbfgs"); empty: none
  std::string needs;      // a situation that only a program with this feature can reach ("clip_grad_value"); empty: none
};

// Every feature program_features() can give, in a stable order (categories as listed above).
const std::vector<FeatureInfo>& all_features();
const FeatureInfo* find_feature(const std::string& name);  // nullptr for an unknown name

// The features `program` uses (static: from the program alone, not from a run).
std::set<std::string> program_features(const Program& program);

// Whether `glob` ('*', '?') matches at least one name of all_features(): names in flags, profiles and
// expectations that match none are errors, not rules that silently never apply.
bool matches_some_feature(const std::string& glob);

// Scanning programs (also for fixture tags, fixture.h): every node of `e`, parents first; NaN or an infinity.
void walk_expr(const Expr& e, const std::function<void(const Expr&)>& visit);
bool any_nonfinite(const std::vector<double>& values);

// The options an optimizer has, by the names used in features and handshakes ("lr", "momentum", ...).
const std::vector<std::string>& optimizer_option_names(OptimizerKind kind);

}  // namespace lockstep
