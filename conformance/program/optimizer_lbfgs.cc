// L-BFGS as data (SEMANTICS §16): options, the state counts, and its step as the comparison follows it.
//
// An L-BFGS step calls its closure up to max_iter times and moves every parameter between the calls along a
// direction built from the gradients of all earlier calls (SEM-16.3). The comparison cannot bound such a move by the
// operands of one update, as it does for the other optimizers: the direction divides by differences of nearly equal
// gradients, so the rounding of one side's arithmetic may grow without bound near a minimum (SEM-16.4). Instead it
// follows each side with a model of SEM-16.3 in double, fed with that side's own observations (the gradient and loss
// each call left), and carries alongside every quantity a bound on the rounding that side's arithmetic may have added
// to it (a first-order running error bound: each operation adds its own rounding, u times its result, to the bounds
// its operands carry; a dot product of n terms adds n u times the sum of their magnitudes, whatever the order of the
// reduction). A move is then judged at its centre in double, at the side's own inputs, within that bound; a decision
// of the step taken within the bound ("y · s > 1e-10") is undecided, and the sides may go different ways from there.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <sstream>

#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {
namespace {

// A value computed in double and a bound on how far the side's own arithmetic may be from it.
struct Approx {
  double v = 0, e = 0;
};

class Arithmetic {
 public:
  explicit Arithmetic(double u) : u_(u) {}
  double u() const { return u_; }
  Approx round(double v, double e) const { return {v, e + u_ * std::fabs(v)}; }
  Approx sub(Approx a, Approx b) const { return round(a.v - b.v, a.e + b.e); }
  Approx mul(Approx a, Approx b) const {
    return round(a.v * b.v, std::fabs(a.v) * b.e + std::fabs(b.v) * a.e + a.e * b.e);
  }
  Approx div(Approx a, Approx b) const {
    const double v = a.v / b.v;
    if (!(std::fabs(b.v) > b.e)) return {v, std::numeric_limits<double>::infinity()};
    return round(v, (a.e + std::fabs(v) * b.e) / (std::fabs(b.v) - b.e));
  }
  // a b + c, fused or not (two roundings).
  Approx fma(Approx a, Approx b, Approx c) const {
    const double ab = a.v * b.v;
    return round(ab + c.v, std::fabs(a.v) * b.e + std::fabs(b.v) * a.e + a.e * b.e + c.e + u_ * std::fabs(ab));
  }
  Approx dot(const std::vector<Approx>& x, const std::vector<Approx>& y) const {
    double v = 0, e = 0, magnitude = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      v += x[i].v * y[i].v;
      magnitude += std::fabs(x[i].v * y[i].v);
      e += std::fabs(x[i].v) * y[i].e + std::fabs(y[i].v) * x[i].e + x[i].e * y[i].e;
    }
    return {v, e + gamma(x.size()) * magnitude};
  }
  double gamma(size_t n) const {
    const double nu = static_cast<double>(n) * u_;
    return nu < 1 ? nu / (1 - nu) : std::numeric_limits<double>::infinity();
  }

 private:
  double u_;
};

std::string text(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

// Whether x > threshold; `undecided` receives why where the bound straddles it. A non-finite x is compared as it is
// (SEM-16.3: a NaN fails every comparison), and so is an exact one (no bound).
bool above(Approx x, double threshold, const char* what, std::string& undecided) {
  const bool result = x.v > threshold;
  if (std::isfinite(x.v) && !(x.e == 0) && undecided.empty() && !(std::fabs(x.v - threshold) > x.e))
    undecided = std::string(what) + " = " + text(x.v) + " ± " + text(x.e) + " against " + text(threshold);
  return result;
}

class LbfgsModel final : public ClosureStepModel {
 public:
  void begin_step(const OptimizerOptions& options) override {
    o_ = options;
    n_ = 0;
    evals_ = 0;
    last_move_.clear();
  }

  PlannedMove after_call(const ClosureCallSeen& call) override {
    PlannedMove plan;
    // The flat gradient (SEM-16.2): float32 only when every parameter is.
    std::vector<double> g;
    bool all_float32 = true;
    names_.clear();
    sizes_.clear();
    dtypes_.clear();
    params_ = call.params;
    for (const ParamObservation* p : call.params) {
      all_float32 = all_float32 && p->value.dtype == DType::Float32;
      names_.push_back(p->name);
      sizes_.push_back(p->value.data.size());
      dtypes_.push_back(p->value.dtype);
      for (size_t i = 0; i < p->value.data.size(); ++i)
        g.push_back(p->grad.defined && i < p->grad.value.data.size() ? p->grad.value.data[i] : 0.0);
    }
    const Arithmetic a(all_float32 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53));
    const double max_iter = o_.max_iter.value_or(20);
    const double max_eval = o_.max_eval.value_or(std::floor(max_iter * 5 / 4));
    const double tolerance_grad = o_.tolerance_grad.value_or(1e-7);
    const double tolerance_change = o_.tolerance_change.value_or(1e-9);
    evals_ += 1;
    const bool grad_small = max_abs(g) <= tolerance_grad;
    if (evals_ == 1) {
      if (grad_small) return note(plan, "optimal");  // nothing moves, n_iter unchanged
    } else {
      // After a move and this call (SEM-16.3, the loop's tail).
      if (static_cast<double>(evals_) >= max_eval) return note(plan, "max_eval");
      if (grad_small) return note(plan, "grad small");
      double largest = 0, bound = 0;
      for (const Approx& m : last_move_) {
        if (std::isnan(m.v) || std::isnan(largest)) {
          largest = std::numeric_limits<double>::quiet_NaN();
          continue;
        }
        if (std::fabs(m.v) > largest) largest = std::fabs(m.v);
        bound = std::max(bound, m.e);
      }
      // |d t|_max <= tolerance_change: a NaN is never small.
      std::string undecided;
      if (!std::isnan(largest) && !above({largest, bound}, tolerance_change, "|d t|_max", undecided))
        return note(plan, "small move", undecided);
      plan.undecided = undecided;
      if (std::fabs(call.loss - prev_loss_) < tolerance_change) return note(plan, "loss unchanged");
    }
    if (static_cast<double>(n_) >= max_iter) return note(plan, "max_iter");
    iterate(a, g, call.loss, plan);
    if (plan.moves) plan.calls_again = static_cast<double>(n_) != max_iter;
    return plan;
  }

 private:
  static double max_abs(const std::vector<double>& x) {
    double m = 0;
    for (double v : x) {
      if (std::isnan(v)) return v;
      m = std::max(m, std::fabs(v));
    }
    return m;
  }
  static PlannedMove& note(PlannedMove& plan, const char* decision, const std::string& undecided = "") {
    plan.decisions += plan.decisions.empty() ? decision : std::string(", ") + decision;
    if (plan.undecided.empty()) plan.undecided = undecided;
    return plan;
  }

  // One iteration of SEM-16.3 from the gradient `g` of the last call: the direction, the step length, the move.
  void iterate(const Arithmetic& a, const std::vector<double>& g, double loss, PlannedMove& plan) {
    const size_t n = g.size();
    std::vector<Approx> q(n);
    for (size_t i = 0; i < n; ++i) q[i] = {-g[i], 0};
    n_ += 1;
    n_iter_ += 1;
    std::string undecided;
    if (n_iter_ == 1) {
      d_ = q;  // d = -g
      old_dirs_.clear();
      old_stps_.clear();
      ro_.clear();
      h_diag_ = {1, 0};
    } else {
      const Approx t{t_.v, t_.e + a.u() * std::fabs(t_.v)};  // t rounded to the flat dtype
      std::vector<Approx> y(n), s(n);
      for (size_t i = 0; i < n && i < prev_g_.size() && i < d_.size(); ++i) {
        y[i] = a.sub({g[i], 0}, {prev_g_[i], 0});
        s[i] = a.mul(d_[i], t);
      }
      const Approx ys = a.dot(y, s);
      if (above(ys, 1e-10, "y · s", undecided)) {
        note(plan, "pair kept");
        const double history = o_.history_size.value_or(100);
        if (static_cast<double>(old_dirs_.size()) == history) {
          old_dirs_.pop_front();
          old_stps_.pop_front();
          ro_.pop_front();
        }
        old_dirs_.push_back(y);
        old_stps_.push_back(s);
        ro_.push_back(a.div({1, 0}, ys));
        h_diag_ = a.div(ys, a.dot(y, y));
      }
      const size_t pairs = old_dirs_.size();
      // The history's capacity is fixed at its first use; more pairs than that fail the step (SEM-16.1).
      if (!capacity_) capacity_ = o_.history_size.value_or(100);
      if (static_cast<double>(pairs) > *capacity_) {
        note(plan, "history over its capacity: the step fails", undecided);
        return;
      }
      std::vector<Approx> al(pairs);
      for (size_t k = pairs; k-- > 0;) {
        al[k] = a.mul(a.dot(old_stps_[k], q), ro_[k]);
        const Approx minus_al{-al[k].v, al[k].e};
        for (size_t i = 0; i < n; ++i) q[i] = a.fma(minus_al, old_dirs_[k][i], q[i]);
      }
      d_.assign(n, {});
      for (size_t i = 0; i < n; ++i) d_[i] = a.mul(q[i], h_diag_);
      for (size_t k = 0; k < pairs; ++k) {
        const Approx be = a.mul(a.dot(old_dirs_[k], d_), ro_[k]);
        const Approx factor = a.sub(al[k], be);
        for (size_t i = 0; i < n; ++i) d_[i] = a.fma(factor, old_stps_[k][i], d_[i]);
      }
    }
    prev_g_ = g;
    prev_loss_ = loss;
    const double lr = o_.lr.value_or(1);
    if (n_iter_ == 1) {
      double sum = 0;
      for (double v : g) sum += std::fabs(v);
      const double sum_e = a.gamma(n) * sum;
      // t = min(1, 1 / sum|g|) lr, in double; min is 1-Lipschitz, so the reciprocal's bound holds for it.
      const double inverse = 1 / sum;
      const double inverse_e = sum > sum_e ? sum_e / (sum * (sum - sum_e)) : std::numeric_limits<double>::infinity();
      if (std::isnan(inverse) || inverse - inverse_e >= 1) t_ = {lr, 0};  // min(1, 1/NaN) is 1; surely 1
      else if (inverse + inverse_e < 1) t_ = {inverse * lr, inverse_e * std::fabs(lr)};
      else t_ = {std::min(1.0, inverse) * lr, inverse_e * std::fabs(lr)};  // straddles 1
    } else {
      t_ = {lr, 0};
    }
    std::vector<Approx> gv(n);
    for (size_t i = 0; i < n; ++i) gv[i] = {g[i], 0};
    const Approx gd = a.dot(gv, d_);
    if (above(gd, -o_.tolerance_change.value_or(1e-9), "g · d", undecided)) {
      note(plan, "no descent", undecided);
      return;
    }
    note(plan, "move", undecided);
    // p + t d, per parameter in its own dtype.
    plan.moves = true;
    last_move_.assign(n, {});
    size_t offset = 0;
    for (size_t k = 0; k < names_.size(); ++k) {
      const double u = dtypes_[k] == DType::Float32 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
      std::vector<double>& move = plan.move[names_[k]];
      std::vector<double>& error = plan.error[names_[k]];
      move.resize(sizes_[k], 0);
      error.resize(sizes_[k], 0);
      for (size_t i = 0; i < sizes_[k]; ++i) {
        const Approx& d = d_[offset + i];
        const double m = t_.v * d.v;
        // t d rounds (or t rounds to the dtype first: 1.13's fused move), then p + t d rounds at |p + t d|; the
        // direction's and t's bounds scale with t and d.
        const double p = i < params_[k]->value.data.size() ? params_[k]->value.data[i] : 0.0;
        const double e = std::fabs(t_.v) * d.e + std::fabs(d.v) * t_.e + 2 * std::max(a.u(), u) * std::fabs(m);
        move[i] += m;  // a parameter listed twice moves twice
        error[i] += e + u * std::fabs(p + m);
        last_move_[offset + i] = {m, e};  // d t, for the next call's |d t|_max (without p's rounding)
      }
      offset += sizes_[k];
    }
  }

  OptimizerOptions o_;
  int64_t n_ = 0, evals_ = 0;  // this step
  int64_t n_iter_ = 0;         // every step
  std::vector<std::string> names_;
  std::vector<size_t> sizes_;
  std::vector<DType> dtypes_;
  std::vector<const ParamObservation*> params_;  // of the last call (valid during after_call)
  std::vector<Approx> d_, last_move_;
  Approx t_, h_diag_{1, 0};
  std::vector<double> prev_g_;
  double prev_loss_ = 0;
  std::deque<std::vector<Approx>> old_dirs_, old_stps_;
  std::deque<Approx> ro_;
  std::optional<double> capacity_;
};

OptionDescription integer_option(const char* name, std::optional<double> OptimizerOptions::*field, double default_value,
                                 std::vector<double> values) {
  OptionDescription d = number_option(name, field, default_value, std::move(values));
  d.integer = true;
  return d;
}

}  // namespace

OptimizerDescription lbfgs_description() {
  OptimizerDescription d;
  d.kind = OptimizerKind::LBFGS;
  d.name = "lbfgs";
  d.semantics = "SEM-16";
  d.since_protocol = 5;
  OptionDescription max_eval = integer_option("max_eval", &OptimizerOptions::max_eval, 0, {1, 2, 3, 6});
  max_eval.default_computed = true;  // unset: max_iter * 5 / 4, fixed by the constructor (SEM-16.1)
  d.options = {number_option("lr", &OptimizerOptions::lr, 1, {1.0, 0.5, 0.1, 0.05}),
               integer_option("max_iter", &OptimizerOptions::max_iter, 20, {1, 2, 3, 4, 5}),
               max_eval,
               number_option("tolerance_grad", &OptimizerOptions::tolerance_grad, 1e-7, {1e-5, 1e-3, 0.0}),
               number_option("tolerance_change", &OptimizerOptions::tolerance_change, 1e-9, {1e-6, 1e-4, 0.0}),
               integer_option("history_size", &OptimizerOptions::history_size, 100, {1, 2, 3})};
  d.state_counts = {{"func_evals", &OptimizerStateObservation::func_evals},
                    {"n_iter", &OptimizerStateObservation::n_iter}};
  d.lr_values = d.options[0].values;
  // Enough iterations to fill a short history, often (SEM-16.3: the history's oldest pair goes first), and none of the
  // default 20 iterations that wander near a minimum, where rounding decides (SEM-16.4). Nothing is validated.
  // A group's own max_eval is drawn more often than the defaults': under defaults without one, the C++ constructor
  // replaces it (SEM-16.1, situation lbfgs_group_max_eval_replaced), which the comparison and profiles must meet.
  d.generate_options = [](OptionDraws& draw, bool for_defaults, bool, OptimizerOptions& o) {
    if (draw.chance(70)) o.lr = draw.lr({1.0, 0.5, 0.1, 0.05});
    if (draw.chance(85)) o.max_iter = draw.element(std::vector<double>{2, 3, 4, 5, 6, 8, 1});
    if (draw.chance(60)) o.history_size = draw.element(std::vector<double>{2, 3, 1});
    if (draw.chance(for_defaults ? 12 : 40)) o.max_eval = draw.element(std::vector<double>{1, 2, 3, 6});
    if (draw.chance(12)) o.tolerance_grad = draw.element(std::vector<double>{1e-5, 1e-3, 0.0});
    if (draw.chance(12)) o.tolerance_change = draw.element(std::vector<double>{1e-6, 1e-4, 0.0});
  };
  d.program_refuses = [](const OptimizerOptions& o) -> std::optional<std::pair<std::string, std::string>> {
    if (o.history_size && !(*o.history_size >= 1))
      return std::make_pair(std::string("history_size"),
                            "history_size below 1 crashes LibTorch 1.13 or fails inside it (SEM-16.1): give 1 or more");
    for (auto [name, field] : {std::make_pair("max_iter", &OptimizerOptions::max_iter),
                               std::make_pair("max_eval", &OptimizerOptions::max_eval)})
      if (o.*field && *(o.*field) > 1000)
        return std::make_pair(std::string(name), std::string(name) + " above 1000: a program's step calls its closure at "
                                                                     "most 1000 times (its size limit)");
    return std::nullopt;
  };
  // LibTorch fills the first group's unset max_eval only where the defaults leave it unset (SEM-16.1); a group given
  // its own options without max_eval under defaults that give one is stepped with an unset max_eval, read as if set.
  d.spec_refuses = [](const OptimizerSpec& spec) -> std::optional<std::pair<std::string, std::string>> {
    if (spec.defaults.max_eval && !spec.groups.empty() && spec.groups[0].options && !spec.groups[0].options->max_eval)
      return std::make_pair(std::string("/groups/0/options"),
                            "the defaults give max_eval and this group's options do not: LibTorch then steps with an "
                            "unset max_eval, which it reads as if set (undefined, SEM-16.1); give max_eval here too");
    return std::nullopt;
  };
  d.fit_spec = [](OptimizerSpec& spec) {
    if (spec.defaults.max_eval && !spec.groups.empty() && spec.groups[0].options && !spec.groups[0].options->max_eval)
      spec.groups[0].options->max_eval = spec.defaults.max_eval;
  };
  d.closure_step_model = [] { return std::unique_ptr<ClosureStepModel>(new LbfgsModel()); };
  // SEM-16.3: a call before the first iteration, then one after each move but the last of max_iter.
  d.closure_calls = [](const OptimizerOptions& o) {
    return std::max<int64_t>(1, static_cast<int64_t>(o.max_iter.value_or(20)));
  };
  d.needs_closure = true;
  d.one_group = true;
  // Where Python's torch.optim.LBFGS differs from the C++ API by design (SEMANTICS §11, profile pytorch-python).
  d.situations = {
      {"lbfgs_group_max_eval_replaced",
       "L-BFGS's first group gives max_eval while the defaults do not: the C++ constructor replaces it (SEM-16.1, "
       "SEM-11.14)",
       [](const Program& p) {  // only where the value replaced differs from the one computed
         const OptimizerSpec& o = *p.optimizer;
         if (o.defaults.max_eval || o.groups.empty() || !o.groups[0].options || !o.groups[0].options->max_eval)
           return false;
         const double computed = std::floor(o.defaults.max_iter.value_or(20) * 5 / 4);
         return *o.groups[0].options->max_eval != computed;
       }},
  };
  return d;
}

}  // namespace lockstep
