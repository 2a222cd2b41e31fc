// program_features(): the static scan of a program behind capabilities, scopes, profiles and coverage.
#include "conformance/program/features.h"

#include "conformance/program/checkpoint_timeline.h"
#include "conformance/program/op_descriptions.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "conformance/program/glob.h"
#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {
namespace {

std::vector<FeatureInfo> make_features() {
  std::vector<FeatureInfo> f = {
      {"float32", "dtype", "a float32 parameter or constant"},
      {"float64", "dtype", "a float64 parameter or constant"},
  };
  for (const OpDescription& d : op_descriptions()) {  // op_descriptions.h
    if (d.op == Op::Param || d.op == Op::Const) continue;
    const std::string name = d.name;
    f.push_back({"op:" + name, "op", "the loss op " + name + " (SEM-2)"});
  }
  for (const OptimizerDescription& d : optimizer_descriptions())  // optimizer_descriptions.h
    f.push_back({d.name, "optimizer", std::string(d.name) + " (" + d.semantics + ")"});
  for (const OptimizerDescription& d : optimizer_descriptions())
    for (const OptionDescription& o : d.options)
      f.push_back({std::string(d.name) + "." + o.name, "option",
                   std::string(d.name) + "'s option " + o.name + " at a value other than its default", d.name});
  const std::vector<FeatureInfo> rest = {
      {"retain_graph", "feature", "backward(retain_graph=True) (SEM-2.5)"},
      {"create_graph", "feature", "backward(create_graph=True) (SEM-3.3)"},
      {"no_grad", "feature", "a forward under no_grad (SEM-2.3)"},
      {"explicit_gradient", "feature", "backward(gradient) with an explicit gradient (SEM-2.4)"},
      {"zero_grad", "feature", "zero_grad(set_to_none=False): detach and zero in place (SEM-4.1)"},
      {"zero_grad_default", "feature", "zero_grad() with no argument: the framework's default (SEM-12.1)"},
      {"set_to_none", "feature", "zero_grad(set_to_none=True) (SEM-4.2)"},
      {"set_grad_none", "feature", "param.grad = None for one parameter (SEM-4.2)"},
      {"hold_grad", "feature", "a handle to a grad held and observed after every action (SEM-3.2, SEM-4)"},
      {"closure", "feature", "a step with a closure: the step calls it and returns its loss (SEM-17)"},
      {"clip_grad_norm", "feature", "clip_grad_norm_ over some parameters: total norm, grads scaled in place (SEM-18.1)"},
      {"clip_grad_value", "feature", "clip_grad_value_ over some parameters: grads clamped in place (SEM-18.5)"},
      {"state_dict", "feature", "optimizer.state_dict() saved as a checkpoint (SEM-19.5)"},
      {"load_state_dict", "feature", "optimizer.load_state_dict() of a saved checkpoint (SEM-19.1, SEM-19.5)"},
      {"param_groups", "feature", "more than one parameter group, or a group with its own options (SEM-7)"},
      {"add_param_group", "feature", "optimizer.add_param_group after construction (SEM-7.4)"},
      {"set_options", "feature", "a group's options changed between steps (SEM-5.4, SEM-7.5)"},
      {"special_values", "feature", "NaN or an infinity among parameter values, constants or gradients (SEM-9)"},
      {"invalid_options", "feature", "an option value the optimizer rejects or a group keeps unchecked (SEM-5.2, SEM-6.1)"},
      {"group_options_partial", "situation",
       "a group with its own options leaves unset an option the optimizer's defaults set (SEM-7.1)"},
      {"duplicate_param_in_group", "situation", "a parameter listed twice in one group (SEM-7.4)"},
      {"param_in_two_groups", "situation", "a parameter in two groups (SEM-7.4)"},
      {"empty_param_list", "situation", "an optimizer constructed from an empty parameter list (SEM-7.2)"},
      {"clip_value_without_grads", "situation",
       "clip_grad_value over parameters none of which a backward has reached since their grads were last set to none "
       "(SEM-18.5)", "", "clip_grad_value"},
      {"load_fresh", "situation",
       "load_state_dict into an optimizer constructed anew over the same parameters: a resumed run (SEM-19.1)", "",
       "load_state_dict"},
      {"load_groups_differ", "situation",
       "load_state_dict of a checkpoint saved with another number of groups than the optimizer has, after "
       "add_param_group (SEM-19.3)", "", "load_state_dict"},
      {"load_options_differ", "situation",
       "load_state_dict where the optimizer's group options differ from the saved ones (set_options between the save "
       "and the load, or before the save of a resumed run): 1.13 keeps them, 2.x restores the saved (SEM-19.2)", "",
       "load_state_dict"},
      {"load_drops_state", "situation",
       "load_state_dict into an optimizer where a parameter may have state the checkpoint lacks (its first step came "
       "after the save): LibTorch's C++ load keeps that state, Python's replaces the whole state (SEM-19.3)", "",
       "load_state_dict"},
      {"amsgrad_change", "situation", "set_options switches amsgrad of a group (SEM-7.5)"},
      {"adam_beta1_one", "situation",
       "beta1 = 1 in a group's options or an option change, which no one validates: bias correction 1 - beta1^t is 0 (SEM-6.1)"},
      {"backward_after_step", "situation",
       "a backward of an output whose forward came before a step: the step modified saved parameters (SEM-2.9)"},
      {"backward_after_freed", "situation",
       "a second backward of one forward's output after a backward that did not retain the graph (SEM-2.5)"},
  };
  f.insert(f.end(), rest.begin(), rest.end());
  for (const OptimizerDescription& d : optimizer_descriptions())
    for (const SituationDescription& s : d.situations) f.push_back({s.name, "situation", s.description, d.name});
  return f;
}

// The options `o` gives a value other than the option type's default (optimizer_descriptions.h); SGD's lr
// has none, so a given one always counts.
void non_default_options(OptimizerKind k, const OptimizerOptions& o, std::set<std::string>& out) {
  const std::string p = std::string(optimizer_name(k)) + ".";
  for (const OptionDescription& d : describe(k).options)
    if (is_set(d, o) && !is_default(d, o)) out.insert(p + d.name);
}

// An option value the optimizer's constructor rejects (SEM-5.2, SEM-6.1, SEM-14.1, SEM-15.1); in a group's
// options it is kept unchecked in 1.13, which is a situation of its own.
bool invalid(OptimizerKind k, const OptimizerOptions& o) {
  const OptimizerDescription& d = describe(k);
  return d.rejects && d.rejects(resolved_options(k, o));
}

// Whether `group` leaves unset an option the defaults set to a value other than the option type's default:
// Python fills it from the defaults, C++ 1.13 from the option type (SEM-7.1, SEM-11.2).
bool leaves_unset_what_defaults_set(OptimizerKind k, const OptimizerOptions& defaults, const OptimizerOptions& group) {
  for (const OptionDescription& d : describe(k).options)
    if (is_set(d, defaults) && !is_default(d, defaults) && !is_set(d, group)) return true;
  return false;
}

}  // namespace

bool any_nonfinite(const std::vector<double>& values) {
  for (double x : values)
    if (!std::isfinite(x)) return true;
  return false;
}

void walk_expr(const Expr& e, const std::function<void(const Expr&)>& visit) {
  visit(e);
  for (const ExprPtr& a : e.args)
    if (a) walk_expr(*a, visit);
}

bool matches_some_feature(const std::string& glob) {
  for (const FeatureInfo& f : all_features())
    if (glob_match(glob, f.name)) return true;
  return false;
}

const std::vector<std::string>& optimizer_option_names(OptimizerKind kind) {
  static const std::map<OptimizerKind, std::vector<std::string>> names = [] {
    std::map<OptimizerKind, std::vector<std::string>> out;
    for (const OptimizerDescription& d : optimizer_descriptions())
      for (const OptionDescription& o : d.options) out[d.kind].push_back(o.name);
    return out;
  }();
  return names.at(kind);
}

const std::vector<FeatureInfo>& all_features() {
  static const std::vector<FeatureInfo> features = make_features();
  return features;
}

const FeatureInfo* find_feature(const std::string& name) {
  for (const FeatureInfo& f : all_features())
    if (f.name == name) return &f;
  return nullptr;
}

std::set<std::string> program_features(const Program& program) {
  std::set<std::string> f;
  for (const ParamSpec& p : program.params) {
    f.insert(dtype_name(p.dtype));
    if (any_nonfinite(p.values)) f.insert("special_values");
  }
  auto scan = [&](const Expr& loss) {
    walk_expr(loss, [&](const Expr& e) {
      if (e.op == Op::Const) {
        f.insert(dtype_name(e.constant.dtype));  // a float64 constant needs float64 too
        if (any_nonfinite(e.constant.data)) f.insert("special_values");
      } else if (e.op != Op::Param) {
        f.insert(std::string("op:") + op_name(e.op));
      }
    });
  };
  if (program.loss) scan(*program.loss);

  std::map<std::string, int> groups_of;  // parameter -> how many groups list it
  auto scan_group = [&](const ParamGroupSpec& g, const OptimizerSpec& o) {
    std::map<std::string, int> in_group;
    for (const std::string& n : g.params)
      if (++in_group[n] == 2) f.insert("duplicate_param_in_group");
    for (const auto& [n, count] : in_group)
      if (++groups_of[n] == 2) f.insert("param_in_two_groups");
    if (g.options) {
      non_default_options(o.kind, *g.options, f);
      if (invalid(o.kind, *g.options)) f.insert("invalid_options");
      if (leaves_unset_what_defaults_set(o.kind, o.defaults, *g.options)) f.insert("group_options_partial");
      if (g.options->betas && g.options->betas->first == 1) f.insert("adam_beta1_one");
    }
  };
  if (program.optimizer) {
    const OptimizerSpec& o = *program.optimizer;
    f.insert(optimizer_name(o.kind));
    if (o.kind == OptimizerKind::SGD) f.insert("sgd.lr");  // SEM-5.1: SGD's lr is always given
    non_default_options(o.kind, o.defaults, f);
    if (invalid(o.kind, o.defaults)) f.insert("invalid_options");
    if (o.groups.empty()) f.insert("empty_param_list");
    if (o.groups.size() > 1) f.insert("param_groups");
    for (const ParamGroupSpec& g : o.groups) {
      if (g.options) f.insert("param_groups");
      scan_group(g, o);
    }
    for (const SituationDescription& s : describe(o.kind).situations)
      if (s.in && s.in(program)) f.insert(s.name);
  }

  bool freed = false;    // the held output was backpropagated without retaining its graph
  bool stepped = false;  // a step ran since the held output's forward
  const Expr* held = nullptr;    // the held output's loss (null under no_grad)
  std::set<std::string> reached;  // parameters a backward reached since their grads were last set to none
  // The same, except that zero_grad() with the default does not clear it: 1.13 zeroes in place, so on some version the
  // grad is still defined and a step gives the parameter state (SEM-12.1). For the checkpoint situations, which an
  // API profile avoids: they must hold wherever they may.
  std::set<std::string> may_have_grad;
  std::set<std::string> grouped;  // parameters in the optimizer's groups (zero_grad's reach)
  if (program.optimizer)
    for (const ParamGroupSpec& g : program.optimizer->groups) grouped.insert(g.params.begin(), g.params.end());
  // What the optimizer has been through, for checkpoints (SEM-19.2, 19.3): the groups added and option changes so far
  // (counted as made, whether they succeed or not), and their counts at each checkpoint's save.
  // The optimizer's groups and options as they change, for checkpoints (SEM-19.2, 19.3).
  CheckpointTimeline checkpoints(program);
  // Parameters that may have optimizer state (a step with their grad defined; Adagrad's from construction, SEM-15.2),
  // now and at each save.
  const bool state_at_construction = program.optimizer && program.optimizer->kind == OptimizerKind::Adagrad;
  std::set<std::string> stateful = state_at_construction ? grouped : std::set<std::string>{};
  std::map<std::string, std::set<std::string>> stateful_at_save;
  // The actions in the order they run; a step's closure before the step's update (SEM-17.1), once.
  std::function<void(const Action&)> scan_action = [&](const Action& a) {
    const CheckpointTimeline::Load load = checkpoints.apply(a);
    switch (a.kind) {
      case ActionKind::Forward:
        if (a.loss) scan(*a.loss);
        if (a.no_grad) f.insert("no_grad");
        held = a.loss ? a.loss.get() : program.loss.get();
        // Under no_grad only a bare parameter keeps a graph: the output is the parameter itself (SEM-2.3).
        if (a.no_grad && held && held->op != Op::Param) held = nullptr;
        freed = false;
        stepped = false;
        break;
      case ActionKind::Backward: {
        // What a backward reaches, unless it fails where the program shows it will: a non-scalar output without an
        // explicit gradient (SEM-2.4), a graph already freed (SEM-2.5).
        bool fails = !held || freed;
        if (held && !a.gradient) {
          try {
            fails = fails || numel(infer_shape(*held, program.params, "").shape) != 1;  // one element: SEM-2.4
          } catch (const ProgramError&) {
            fails = true;
          }
        }
        if (!fails)
          walk_expr(*held, [&](const Expr& n) {
            if (n.op != Op::Param) return;
            reached.insert(n.name);
            may_have_grad.insert(n.name);
          });
        if (freed) f.insert("backward_after_freed");
        if (stepped) f.insert("backward_after_step");
        freed = !a.retain_graph.value_or(a.create_graph);
        if (a.retain_graph && *a.retain_graph) f.insert("retain_graph");
        if (a.create_graph) f.insert("create_graph");
        if (a.gradient) {
          f.insert("explicit_gradient");
          if (any_nonfinite(*a.gradient)) f.insert("special_values");
        }
        break;
      }
      case ActionKind::ZeroGrad:
        if (!a.set_to_none) f.insert("zero_grad_default");
        else f.insert(*a.set_to_none ? "set_to_none" : "zero_grad");
        // 2.x's default sets to none (SEM-12.1): taken as clearing, so that the situation holds on every version.
        if (program.optimizer && a.set_to_none.value_or(true))
          for (const std::string& n : grouped) reached.erase(n);
        if (program.optimizer && a.set_to_none.value_or(false))
          for (const std::string& n : grouped) may_have_grad.erase(n);
        break;
      case ActionKind::SetGradNone:
        f.insert("set_grad_none");
        reached.erase(a.param);
        may_have_grad.erase(a.param);
        break;
      case ActionKind::HoldGrad: f.insert("hold_grad"); break;
      case ActionKind::Step:
        if (a.closure) {
          f.insert("closure");
          // Without an optimizer, or with one whose construction failed (options it rejects), the step fails
          // (no_optimizer) before it calls the closure: its actions count for the program's features, but what they
          // would do to the grads and the held output does not happen.
          const auto before = std::make_tuple(reached, may_have_grad, held, freed);
          for (const Action& c : *a.closure) scan_action(c);
          if (!program.optimizer || invalid(program.optimizer->kind, program.optimizer->defaults))
            std::tie(reached, may_have_grad, held, freed) = before;
        }
        stepped = true;
        for (const std::string& n : may_have_grad)
          if (grouped.count(n)) stateful.insert(n);
        break;
      case ActionKind::SetOptions:
        f.insert("set_options");
        if (program.optimizer) {
          non_default_options(program.optimizer->kind, a.options, f);
          if (invalid(program.optimizer->kind, a.options)) f.insert("invalid_options");
        }
        if (a.options.amsgrad) f.insert("amsgrad_change");
        if (a.options.betas && a.options.betas->first == 1) f.insert("adam_beta1_one");
        break;
      case ActionKind::AddParamGroup:
        f.insert("add_param_group");
        grouped.insert(a.new_group.params.begin(), a.new_group.params.end());
        if (program.optimizer) scan_group(a.new_group, *program.optimizer);
        break;
      case ActionKind::ClipGradNorm:
        f.insert("clip_grad_norm");
        if (!std::isfinite(a.max_norm)) f.insert("special_values");
        break;
      case ActionKind::ClipGradValue: {
        f.insert("clip_grad_value");
        bool any = false;
        for (const std::string& name : a.params) any = any || reached.count(name) > 0;
        if (!any) f.insert("clip_value_without_grads");
        if (!std::isfinite(a.clip_value)) f.insert("special_values");
        break;
      }
      case ActionKind::StateDict:
        f.insert("state_dict");
        stateful_at_save[a.checkpoint] = stateful;
        break;
      case ActionKind::LoadStateDict: {
        f.insert("load_state_dict");
        if (a.fresh) {  // the new optimizer has the program's groups and options
          f.insert("load_fresh");
          grouped.clear();  // zero_grad's reach: the program's groups again
          stateful.clear();
          if (program.optimizer)
            for (const ParamGroupSpec& g : program.optimizer->groups) {
              grouped.insert(g.params.begin(), g.params.end());
              if (state_at_construction) stateful.insert(g.params.begin(), g.params.end());
            }
        }
        if (!load.saved) break;
        for (const std::string& n : stateful)
          if (!stateful_at_save[a.checkpoint].count(n)) f.insert("load_drops_state");
        stateful.insert(stateful_at_save[a.checkpoint].begin(), stateful_at_save[a.checkpoint].end());
        if (load.groups_differ) f.insert("load_groups_differ");
        if (load.options_differ) f.insert("load_options_differ");
        break;
      }
    }
  };
  for (const Action& a : program.actions) scan_action(a);
  return f;
}

}  // namespace lockstep
