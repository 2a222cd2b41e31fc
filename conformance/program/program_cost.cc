#include "conformance/program/program_cost.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>

#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {

namespace {

constexpr int64_t kCap = std::numeric_limits<int64_t>::max() / 4;

int64_t sat_add(int64_t a, int64_t b) { return a >= kCap - b ? kCap : a + b; }
int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kCap / b ? kCap : a * b;
}

// One observed tensor: its elements, plus its dtype, shape and flags.
int64_t tensor_values(int64_t numel) { return sat_add(numel, 16); }

// A name as observed (a key or a list entry): one value, and one more per 8 bytes of it.
int64_t name_values(const std::string& name) { return 1 + static_cast<int64_t>(name.size() / 8); }

// Nodes of an expression counted as evaluated (a subexpression shared in memory counts at each use).
int64_t expr_nodes(const Expr& e, std::unordered_map<const Expr*, int64_t>& memo) {
  auto it = memo.find(&e);
  if (it != memo.end()) return it->second;
  int64_t n = 1;
  for (const ExprPtr& a : e.args) n = sat_add(n, expr_nodes(*a, memo));
  memo.emplace(&e, n);
  return n;
}

// Element operations of evaluating an expression once (its backward is a multiple of it, see below).
class ExprCost {
 public:
  ExprCost(const std::vector<ParamSpec>& params, const ProgramLimits& limits) : params_(params), limits_(limits) {}

  int64_t of(const Expr& e) {
    auto it = cost_.find(&e);
    if (it != cost_.end()) return it->second;
    int64_t c = sat_add(own(e), 64);  // and a node's own cost: dispatch, graph bookkeeping
    for (const ExprPtr& a : e.args) c = sat_add(c, of(*a));
    cost_.emplace(&e, c);
    return c;
  }

  const TypedShape& shape(const Expr& e) {
    auto it = shape_.find(&e);
    if (it == shape_.end()) it = shape_.emplace(&e, infer_shape(e, params_, "", limits_)).first;
    return it->second;
  }

 private:
  int64_t own(const Expr& e) {
    const int64_t out = numel(shape(e).shape);
    switch (e.op) {
      case Op::Matmul: {  // (n,k) @ (k,m): n*k*m multiply-adds
        const Shape& a = shape(*e.args[0]).shape;
        return sat_mul(out, a.size() == 2 ? std::max<int64_t>(a[1], 1) : 1);
      }
      case Op::Linear: {  // x (N,in), W (out,in): N*in*out, plus the bias
        const Shape& x = shape(*e.args[0]).shape;
        return sat_add(sat_mul(out, x.size() == 2 ? std::max<int64_t>(x[1], 1) : 1), out);
      }
      case Op::CrossEntropy:
      case Op::Sum:
      case Op::Mean:
      case Op::MseLoss: {  // reductions read their operands
        int64_t in = 0;
        for (const ExprPtr& a : e.args) in = sat_add(in, numel(shape(*a).shape));
        return sat_add(sat_mul(in, 4), out);
      }
      default:
        return std::max<int64_t>(out, 1);
    }
  }

  const std::vector<ParamSpec>& params_;
  const ProgramLimits& limits_;
  std::unordered_map<const Expr*, int64_t> cost_;
  std::unordered_map<const Expr*, TypedShape> shape_;
};

// The running totals, record by record.
class CostWalk {
 public:
  CostWalk(const Program& p, const ProgramLimits& limits) : p_(p), exprs_(p.params, limits) {
    for (const ParamSpec& ps : p.params) {
      numel_[ps.name] = numel(ps.shape);
      all_elements_ = sat_add(all_elements_, numel(ps.shape));
    }
    for (const ParamSpec& ps : p.params) names_ = sat_add(names_, name_values(ps.name));
    if (p.optimizer) {
      state_tensors_ = static_cast<int64_t>(describe(p.optimizer->kind).state.size());
      // The most closure calls one step makes, under any options the program gives (defaults, groups, changes).
      const OptimizerDescription& d = describe(p.optimizer->kind);
      if (d.closure_calls) {
        auto most = [&](const OptimizerOptions& o) { closure_calls_ = std::max(closure_calls_, d.closure_calls(o)); };
        // Every group's options as given (resolved), and every change applied over them.
        std::vector<OptimizerOptions> groups;
        groups.push_back(resolved_options(d.kind, p.optimizer->defaults));
        for (const ParamGroupSpec& g : p.optimizer->groups)
          if (g.options) groups.push_back(resolved_options(d.kind, *g.options));
        for (const OptimizerOptions& o : groups) most(o);
        for (const Action& a : p.actions) {
          if (a.kind == ActionKind::AddParamGroup && a.new_group.options) {
            groups.push_back(resolved_options(d.kind, *a.new_group.options));
            most(groups.back());
          }
          if (a.kind != ActionKind::SetOptions) continue;
          for (OptimizerOptions& o : groups) {
            OptimizerOptions changed = o;
            for (const OptionDescription& option : d.options) copy_if_set(option, a.options, changed);
            most(changed);
            o = changed;
          }
        }
      }
      groups_ = static_cast<int64_t>(p.optimizer->groups.size());
      for (const ParamGroupSpec& g : p.optimizer->groups) add_group_entries(g.params);
      if (groups_ == 0) {  // a list of tensors: one group of every parameter
        groups_ = 1;
        for (const ParamSpec& ps : p.params) add_group_entries({ps.name});
      }
    }
  }

  // The init record.
  void init() { observe(); }

  void action(const Action& a) {
    switch (a.kind) {
      case ActionKind::Forward: {
        const Expr* loss = a.loss ? a.loss.get() : p_.loss.get();
        const int64_t c = loss ? exprs_.of(*loss) : 0;
        // impl or LibTorch, the other engine in lockstep, and the comparator's evaluation in double.
        cost_.arithmetic = sat_add(cost_.arithmetic, sat_mul(c, 4));
        held_cost_ = c;
        if (loss) output_numel_ = std::max(output_numel_, numel(exprs_.shape(*loss).shape));
        has_output_ = has_output_ || loss != nullptr;
        break;
      }
      case ActionKind::Backward:
        // Both engines' backward (at most about three times the forward, graph of grads included) and the
        // comparator's gradient in double; then accumulation into every leaf.
        cost_.arithmetic = sat_add(cost_.arithmetic, sat_add(sat_mul(held_cost_, 8), all_elements_));
        if (a.gradient) cost_.arithmetic = sat_add(cost_.arithmetic, static_cast<int64_t>(a.gradient->size()));
        break;
      case ActionKind::ZeroGrad:
        cost_.arithmetic = sat_add(cost_.arithmetic, sat_add(all_elements_, group_elements_));
        break;
      case ActionKind::SetGradNone:
        cost_.arithmetic = sat_add(cost_.arithmetic, all_elements_);
        break;
      case ActionKind::Step:  // every entry of every group is stepped (a parameter listed twice, twice: SEM-7.4)
        cost_.arithmetic =
            sat_add(cost_.arithmetic, sat_add(sat_mul(group_elements_, 16), sat_mul(group_entries_, 64)));
        if (a.closure) {
          // Every call runs and observes the closure's actions (SEMANTICS §17); the step returns one call's loss.
          // Most optimizers call it once (§17.1); L-BFGS up to its description's bound (§16.3).
          for (int64_t calls = 0; calls < closure_calls_; ++calls)
            for (const Action& c : *a.closure) action(c);
          cost_.observed_values = sat_add(cost_.observed_values, tensor_values(output_numel_));
        }
        break;
      case ActionKind::HoldGrad: {
        auto it = numel_.find(a.param);
        const int64_t n = it == numel_.end() ? 0 : it->second;
        int64_t& held = handles_[a.handle];
        if (held == 0) names_ = sat_add(names_, name_values(a.handle));
        held = std::max(held, n);
        cost_.arithmetic = sat_add(cost_.arithmetic, n);
        break;
      }
      case ActionKind::SetOptions:
        break;
      case ActionKind::AddParamGroup:
        groups_ = sat_add(groups_, 1);
        add_group_entries(a.new_group.params);
        break;
      case ActionKind::ClipGradNorm:
      case ActionKind::ClipGradValue: {
        // Every listed grad read (the norms) and written, by both engines and the comparator's evaluation in double;
        // the record carries the total norm.
        int64_t listed = 0;
        for (const std::string& name : a.params) {
          auto it = numel_.find(name);
          listed = sat_add(listed, it == numel_.end() ? 0 : it->second);
        }
        cost_.arithmetic = sat_add(cost_.arithmetic, sat_add(sat_mul(listed, 8), static_cast<int64_t>(a.params.size())));
        cost_.observed_values = sat_add(cost_.observed_values, 1);
        break;
      }
      case ActionKind::StateDict:
      case ActionKind::LoadStateDict: {
        // A copy of every parameter's state (at most four tensors like it, SEMANTICS §19.5), kept or restored: the
        // copies a run keeps are bounded through the arithmetic.
        int64_t all = 0;
        for (const auto& entry : numel_) all = sat_add(all, entry.second);
        cost_.arithmetic = sat_add(cost_.arithmetic, sat_mul(all, 4));
        break;
      }
    }
    observe();
  }

  const ProgramCost& cost() const { return cost_; }
  int64_t group_entries() const { return group_entries_; }

 private:
  // What one record observes (SEMANTICS §8), as an upper bound.
  void add_group_entries(const std::vector<std::string>& params) {
    for (const std::string& name : params) {
      auto it = numel_.find(name);
      group_elements_ = sat_add(group_elements_, it == numel_.end() ? 0 : it->second);
      group_entry_values_ = sat_add(group_entry_values_, name_values(name));
    }
    group_entries_ = sat_add(group_entries_, static_cast<int64_t>(params.size()));
  }

  void observe() {
    int64_t v = sat_add(4, names_);  // action name, error kind and message; parameter and handle names
    for (const ParamSpec& ps : p_.params) {
      const int64_t n = numel(ps.shape);
      // name, value, grad and its flags, same_as_previous; state: exists, step and its tensors.
      v = sat_add(v, sat_add(sat_mul(tensor_values(n), 2 + state_tensors_), 8));
    }
    for (const auto& [name, n] : handles_) v = sat_add(v, sat_add(tensor_values(n), 2));
    v = sat_add(v, sat_add(group_entry_values_, sat_mul(groups_, 16)));
    if (has_output_) v = sat_add(v, sat_add(tensor_values(output_numel_), 2));
    cost_.observed_values = sat_add(cost_.observed_values, v);
    cost_.arithmetic = sat_add(cost_.arithmetic, sat_mul(v, 2));  // observing, then comparing
  }

  const Program& p_;
  ExprCost exprs_;
  std::map<std::string, int64_t> numel_;
  int64_t all_elements_ = 0;
  int64_t state_tensors_ = 0;
  int64_t groups_ = 0;
  int64_t group_entries_ = 0;       // parameters listed in groups, repeats included
  int64_t group_elements_ = 0;      // their elements, repeats included
  int64_t group_entry_values_ = 0;  // their names as observed
  int64_t names_ = 0;               // parameter and handle names as observed
  std::map<std::string, int64_t> handles_;  // handle name -> elements of what it may hold
  int64_t held_cost_ = 0;
  int64_t output_numel_ = 0;
  int64_t closure_calls_ = 1;
  bool has_output_ = false;
  ProgramCost cost_;
};

std::string with_commas(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

// The first limit `walk` is over so far, as the message validate() gives (param group entries, observed values,
// element operations), or "" when it is within every one. `where` says which record ("by this action").
std::string over_limit(const CostWalk& walk, const ProgramLimits& limits, const std::string& where) {
  if (walk.group_entries() > limits.max_group_entries)
    return "more than the limit of " + std::to_string(limits.max_group_entries) +
           " parameters listed in param groups (all groups together, repeats included)";
  const ProgramCost& c = walk.cost();
  if (c.observed_values > limits.max_observed_values)
    return "the trace would observe more than the limit of " + with_commas(limits.max_observed_values) + " values " +
           where + " (every tensor of every record counts; fewer actions, handles or elements)";
  if (c.arithmetic > limits.max_arithmetic)
    return "running the program would take more than the limit of " + with_commas(limits.max_arithmetic) +
           " element operations " + where + " (fewer or smaller forwards, backwards and steps)";
  return "";
}

}  // namespace

ProgramCost program_cost(const Program& p, const ProgramLimits& limits) {
  CostWalk walk(p, limits);
  walk.init();
  for (const Action& a : p.actions) walk.action(a);
  return walk.cost();
}

void check_program_cost(const Program& p, const ProgramLimits& limits) {
  // Expression sizes first: the cost walk visits every node.
  std::unordered_map<const Expr*, int64_t> memo;
  auto check_nodes = [&](const ExprPtr& e, const std::string& path) {
    if (e && expr_nodes(*e, memo) > limits.max_expr_nodes)
      throw ProgramError(path, "the expression has more than the limit of " + std::to_string(limits.max_expr_nodes) +
                                   " nodes");
  };
  check_nodes(p.loss, "/loss");
  for (size_t i = 0; i < p.actions.size(); ++i) {
    check_nodes(p.actions[i].loss, "/actions/" + std::to_string(i) + "/loss");
    if (p.actions[i].closure)  // a step's closure (SEMANTICS §17.2)
      for (size_t j = 0; j < p.actions[i].closure->size(); ++j)
        check_nodes((*p.actions[i].closure)[j].loss,
                    "/actions/" + std::to_string(i) + "/closure/" + std::to_string(j) + "/loss");
  }

  CostWalk walk(p, limits);
  auto check = [&](const std::string& path, const std::string& where) {
    const std::string over = over_limit(walk, limits, where);
    if (!over.empty()) throw ProgramError(path, over);
  };
  check("/optimizer", "");  // the groups' entries (nothing is observed before init)
  walk.init();
  check("/params", "in its init record");
  for (size_t i = 0; i < p.actions.size(); ++i) {
    walk.action(p.actions[i]);
    check("/actions/" + std::to_string(i), "by this action");
  }
}

size_t actions_within_cost(const Program& p, const ProgramLimits& limits) {
  auto fits = [&](const CostWalk& walk) { return over_limit(walk, limits, "").empty(); };
  CostWalk walk(p, limits);
  walk.init();
  if (!fits(walk)) return 0;
  for (size_t i = 0; i < p.actions.size(); ++i) {
    walk.action(p.actions[i]);
    if (!fits(walk)) return i;
  }
  return p.actions.size();
}

}  // namespace lockstep
