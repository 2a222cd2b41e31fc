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
  Approx add(Approx a, Approx b) const { return round(a.v + b.v, a.e + b.e); }
  // sqrt of a non-negative value: within [v - e, v + e] the root moves by at most e / (sqrt(v) + sqrt(v - e)), or by
  // sqrt(v + e) where the interval reaches 0.
  Approx sqrt(Approx a) const {
    const double v = std::sqrt(a.v);
    if (!(a.v > a.e)) return round(v, std::sqrt(a.v + a.e));
    return round(v, a.e / (v + std::sqrt(a.v - a.e)));
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

// |x|, min and max are 1-Lipschitz: they add no rounding and keep the larger bound.
Approx magnitude(Approx x) { return {std::fabs(x.v), x.e}; }
Approx smaller(Approx x, Approx y) { return {std::min(x.v, y.v), std::max(x.e, y.e)}; }
Approx larger(Approx x, Approx y) { return {std::max(x.v, y.v), std::max(x.e, y.e)}; }

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
    saved_ = mem_;
    calls_.clear();
  }

  PlannedMove after_call(const ClosureCallSeen& call) override {
    PlannedMove plan;
    // The flat gradient (SEM-16.2): float32 only when every parameter is.
    std::vector<double> g, x;
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
      for (size_t i = 0; i < p->value.data.size(); ++i) {
        x.push_back(p->value.data[i]);
        g.push_back(p->grad.defined && i < p->grad.value.data.size() ? p->grad.value.data[i] : 0.0);
      }
    }
    const Arithmetic a(unit_roundoff(all_float32 ? DType::Float32 : DType::Float64));
    if (o_.line_search_fn) {
      calls_.push_back(Seen{std::move(x), std::move(g), call.loss});
      return replay_searching_step(a);
    }
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
      // |d t|_max <= tolerance_change: a NaN is never small.
      const Approx largest = largest_move(last_move_);
      std::string undecided;
      if (!std::isnan(largest.v) && !above(largest, tolerance_change, "|d t|_max", undecided))
        return note(plan, "small move", undecided);
      plan.undecided = undecided;
      if (std::fabs(call.loss - mem_.prev_loss) < tolerance_change) return note(plan, "loss unchanged");
    }
    if (static_cast<double>(n_) >= max_iter) return note(plan, "max_iter");
    iterate(a, g, call.loss, plan);
    if (plan.moves) plan.calls_again = static_cast<double>(n_) != max_iter;
    return plan;
  }

 private:
  static std::vector<Approx> approx(const std::vector<double>& x) {
    std::vector<Approx> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = {x[i], 0};
    return out;
  }
  // |m|_max over moves with their bounds, and the largest bound; NaN where a move is (a NaN is never small).
  static Approx largest_move(const std::vector<Approx>& moves) {
    Approx largest{0, 0};
    for (const Approx& m : moves) {
      if (std::isnan(m.v)) return {std::numeric_limits<double>::quiet_NaN(), 0};
      largest = {std::max(largest.v, std::fabs(m.v)), std::max(largest.e, m.e)};
    }
    return largest;
  }
  static double max_abs(const std::vector<double>& x) {
    double m = 0;
    for (double v : x) {
      if (std::isnan(v)) return v;
      m = std::max(m, std::fabs(v));
    }
    return m;
  }
  PlannedMove& note(PlannedMove& plan, const char* decision, const std::string& undecided = "") const {
    if (quiet_) return plan;  // replaying a decision an earlier call reported
    plan.decisions += plan.decisions.empty() ? decision : std::string(", ") + decision;
    if (plan.undecided.empty()) plan.undecided = undecided;
    return plan;
  }

  // One iteration of SEM-16.3 from the gradient `g` of the last call: the direction, the step length, the move.
  void iterate(const Arithmetic& a, const std::vector<double>& g, double loss, PlannedMove& plan) {
    std::string undecided;
    if (!direction(a, g, loss, plan, undecided)) return;
    note(plan, "move", undecided);
    const size_t n = g.size();
    // p + t d, per parameter in its own dtype.
    plan.moves = true;
    last_move_.assign(n, {});
    size_t offset = 0;
    for (size_t k = 0; k < names_.size(); ++k) {
      const double u = unit_roundoff(dtypes_[k]);
      std::vector<double>& move = plan.move[names_[k]];
      std::vector<double>& error = plan.error[names_[k]];
      move.resize(sizes_[k], 0);
      error.resize(sizes_[k], 0);
      for (size_t i = 0; i < sizes_[k]; ++i) {
        const Approx& d = mem_.d[offset + i];
        const double m = mem_.t.v * d.v;
        // t d rounds (or t rounds to the dtype first: 1.13's fused move), then p + t d rounds at |p + t d|; the
        // direction's and t's bounds scale with t and d.
        const double p = i < params_[k]->value.data.size() ? params_[k]->value.data[i] : 0.0;
        const double e = std::fabs(mem_.t.v) * d.e + std::fabs(d.v) * mem_.t.e + 2 * std::max(a.u(), u) * std::fabs(m);
        move[i] += m;  // a parameter listed twice moves twice
        error[i] += e + u * std::fabs(p + m);
        last_move_[offset + i] = {m, e};  // d t, for the next call's |d t|_max (without p's rounding)
      }
      offset += sizes_[k];
    }
  }

  // The direction d of SEM-16.3 from the gradient `g` and loss of the iteration's point, its first step length t,
  // and g · d (gtd_). Returns false where the step ends here (not a descent direction; the history over its
  // capacity fails the step); `undecided` receives a decision taken within rounding.
  bool direction(const Arithmetic& a, const std::vector<double>& g, double loss, PlannedMove& plan,
                 std::string& undecided) {
    const size_t n = g.size();
    std::vector<Approx> q(n);
    for (size_t i = 0; i < n; ++i) q[i] = {-g[i], 0};
    n_ += 1;
    mem_.n_iter += 1;
    if (mem_.n_iter == 1) {
      mem_.d = q;  // d = -g
      mem_.old_dirs.clear();
      mem_.old_stps.clear();
      mem_.ro.clear();
      mem_.h_diag = {1, 0};
    } else {
      const Approx t{mem_.t.v, mem_.t.e + a.u() * std::fabs(mem_.t.v)};  // t rounded to the flat dtype
      std::vector<Approx> y(n), s(n);
      for (size_t i = 0; i < n && i < mem_.prev_g.size() && i < mem_.d.size(); ++i) {
        y[i] = a.sub({g[i], 0}, {mem_.prev_g[i], 0});
        s[i] = a.mul(mem_.d[i], t);
      }
      const Approx ys = a.dot(y, s);
      if (above(ys, 1e-10, "y · s", undecided)) {
        note(plan, "pair kept");
        const double history = o_.history_size.value_or(100);
        if (static_cast<double>(mem_.old_dirs.size()) == history) {
          mem_.old_dirs.pop_front();
          mem_.old_stps.pop_front();
          mem_.ro.pop_front();
        }
        mem_.old_dirs.push_back(y);
        mem_.old_stps.push_back(s);
        mem_.ro.push_back(a.div({1, 0}, ys));
        mem_.h_diag = a.div(ys, a.dot(y, y));
      }
      const size_t pairs = mem_.old_dirs.size();
      // The history's capacity is fixed at its first use; more pairs than that fail the step (SEM-16.1).
      if (!mem_.capacity) mem_.capacity = o_.history_size.value_or(100);
      if (static_cast<double>(pairs) > *mem_.capacity) {
        note(plan, "history over its capacity: the step fails", undecided);
        return false;
      }
      std::vector<Approx> al(pairs);
      for (size_t k = pairs; k-- > 0;) {
        al[k] = a.mul(a.dot(mem_.old_stps[k], q), mem_.ro[k]);
        const Approx minus_al{-al[k].v, al[k].e};
        for (size_t i = 0; i < n; ++i) q[i] = a.fma(minus_al, mem_.old_dirs[k][i], q[i]);
      }
      mem_.d.assign(n, {});
      for (size_t i = 0; i < n; ++i) mem_.d[i] = a.mul(q[i], mem_.h_diag);
      for (size_t k = 0; k < pairs; ++k) {
        const Approx be = a.mul(a.dot(mem_.old_dirs[k], mem_.d), mem_.ro[k]);
        const Approx factor = a.sub(al[k], be);
        for (size_t i = 0; i < n; ++i) mem_.d[i] = a.fma(factor, mem_.old_stps[k][i], mem_.d[i]);
      }
    }
    mem_.prev_g = g;
    mem_.prev_loss = loss;
    const double lr = o_.lr.value_or(1);
    if (mem_.n_iter == 1) {
      double sum = 0;
      for (double v : g) sum += std::fabs(v);
      const double sum_e = a.gamma(n) * sum;
      // t = min(1, 1 / sum|g|) lr, in double; min is 1-Lipschitz, so the reciprocal's bound holds for it.
      const double inverse = 1 / sum;
      const double inverse_e = sum > sum_e ? sum_e / (sum * (sum - sum_e)) : std::numeric_limits<double>::infinity();
      if (std::isnan(inverse) || inverse - inverse_e >= 1) mem_.t = {lr, 0};  // min(1, 1/NaN) is 1; surely 1
      else if (inverse + inverse_e < 1) mem_.t = {inverse * lr, inverse_e * std::fabs(lr)};
      else mem_.t = {std::min(1.0, inverse) * lr, inverse_e * std::fabs(lr)};  // straddles 1
    } else {
      mem_.t = {lr, 0};
    }
    gtd_ = a.dot(approx(g), mem_.d);
    if (above(gtd_, -o_.tolerance_change.value_or(1e-9), "g · d", undecided)) {
      note(plan, "no descent", undecided);
      return false;
    }
    return true;
  }

  // ---- line_search_fn "strong_wolfe" (SEM-16.6) --------------------------------------------------------------------
  // Every trial call sees the parameters at x0 + s d, and every s is computed from the losses and slopes of earlier
  // calls. The step is replayed from its start at every call, fed with the calls this side made so far, until it
  // needs a call not seen yet: the plan is the move to that trial point from where the last call saw the parameters
  // (the side has put them back at x0 in between), or at the end the move to the point chosen. Decisions an earlier
  // call led to are replayed quietly: they were reported then.

  // A point of the line search: a step length, the loss and slope g · d there, and the call that saw it (-1: x0).
  struct Point {
    Approx t;
    double f = 0;
    Approx gtd;
    int call = -1;
  };

  PlannedMove replay_searching_step(const Arithmetic& a) {
    mem_ = saved_;
    n_ = 0;
    plan_ = PlannedMove{};
    consumed_ = 1;
    quiet_ = calls_.size() > 1;
    moved_ = false;
    try {
      searching_step(a);
      if (consumed_ < calls_.size()) {  // the side called again after the step's end: the model plans nothing more
        quiet_ = false;
        plan_ = PlannedMove{};
        note(plan_, "a call after the step's end");
      }
    } catch (const NeedCall&) {
      // the plan is the move to the trial point that call is expected at
    }
    quiet_ = false;
    return plan_;
  }

  void searching_step(const Arithmetic& a) {
    const Seen& first = calls_.front();
    anchor_ = approx(first.x);
    for (size_t k = 0; k < names_.size(); ++k)
      for (size_t j = 0; j < k; ++j)
        if (names_[j] == names_[k] && !quiet_)
          plan_.undecided = "the parameter '" + names_[k] + "' is listed twice: the line search's copies back to x0 are "
                            "not modelled (SEM-16.6)";
    const double max_iter = o_.max_iter.value_or(20);
    const double max_eval = o_.max_eval.value_or(std::floor(max_iter * 5 / 4));
    const double tolerance_grad = o_.tolerance_grad.value_or(1e-7);
    const double tolerance_change = o_.tolerance_change.value_or(1e-9);
    double loss = first.loss;
    std::vector<double> g = first.g;
    double evals = 1;
    if (max_abs(g) <= tolerance_grad) return finish(a, "optimal");
    for (double n = 1; n <= max_iter; ++n) {
      std::string undecided;
      if (!direction(a, g, loss, plan_, undecided)) return finish(a, nullptr);
      if (*o_.line_search_fn != "strong_wolfe") {  // the step fails here (SEM-16.6): no move
        note(plan_, "an unknown line search: the step fails", undecided);
        return;
      }
      note(plan_, "line search", undecided);
      int64_t calls = 0;
      const Point chosen = strong_wolfe(a, Point{{0, 0}, loss, gtd_, -1}, calls);
      // The move to the point chosen repeats that trial's move from x0 (x0 + t d, rounded again): the side's own
      // trial value, within twice the rounding of one move. At x0 itself (s = 0) nothing moves.
      if (chosen.call >= 0) {
        const std::vector<double>& x = calls_[static_cast<size_t>(chosen.call)].x;
        for_each_element([&](size_t j, double u) {
          const double m = chosen.t.v * mem_.d[j].v;
          anchor_[j] = {x[j], 2 * (2 * std::max(a.u(), u) * std::fabs(m) + u * std::fabs(x[j]))};
        });
      }
      moved_ = true;
      mem_.t = chosen.t;
      loss = chosen.f;
      if (chosen.call >= 0) g = calls_[static_cast<size_t>(chosen.call)].g;
      evals += static_cast<double>(calls);  // counted when the search returns (SEM-16.6)
      if (n == max_iter) return finish(a, "max_iter");
      if (evals >= max_eval) return finish(a, "max_eval");
      if (max_abs(g) <= tolerance_grad) return finish(a, "grad small");
      std::vector<Approx> moved;  // d t in the flat dtype (SEM-16.6's |d * t|_max)
      for (const Approx& d : mem_.d) {
        const double m = chosen.t.v * d.v;
        moved.push_back({m, std::fabs(chosen.t.v) * d.e + std::fabs(d.v) * chosen.t.e + 2 * a.u() * std::fabs(m)});
      }
      const Approx largest = largest_move(moved);
      if (!std::isnan(largest.v) && !exceeds(largest, tolerance_change, "|d t|_max")) return finish(a, "small move");
      if (std::fabs(loss - mem_.prev_loss) < tolerance_change) return finish(a, "loss unchanged");
    }
    finish(a, "max_iter");
  }

  // SEM-16.6: the search along d from x0 (`at0`) for a step length that satisfies the strong Wolfe conditions, in the
  // form of impl/lbfgs.cc's strong_wolfe; every comparison within its bound is undecided.
  static Arithmetic in_double() { return Arithmetic(unit_roundoff(DType::Float64)); }

  Point strong_wolfe(const Arithmetic& flat, const Point& at0, int64_t& calls) {
    const Arithmetic a = in_double();  // the search's scalars (SEM-16.6); its slopes are dot products in the flat dtype
    const double c1 = 1e-4, c2 = 0.9;
    const int max_ls = 25;
    const double tolerance_change = 1e-9;  // not the option: LibTorch does not pass it to the search (SEM-16.6)
    Approx d_norm{0, 0};  // |d|_max: NaN where an element is (impl's max_abs)
    for (const Approx& d : mem_.d)
      d_norm = std::isnan(d.v) || std::isnan(d_norm.v) ? Approx{std::numeric_limits<double>::quiet_NaN(), 0}
                                                        : larger(d_norm, magnitude(d));
    const auto armijo_fails = [&](const Point& p) {  // f > f0 + c1 t gtd0
      return exceeds(a.sub({p.f, 0}, a.add({at0.f, 0}, a.mul({c1, 0}, a.mul(p.t, at0.gtd)))), 0, "sufficient decrease");
    };
    const auto curvature_holds = [&](const Point& p) {  // |gtd| <= -c2 gtd0
      return at_least(a.sub(a.mul({-c2, 0}, at0.gtd), magnitude(p.gtd)), 0, "curvature");
    };
    Point now = trial(flat, mem_.t);
    calls = 1;
    Point prev = at0;
    std::vector<Point> bracket;
    bool done = false;
    int i = 0;
    while (i < max_ls) {
      if (armijo_fails(now) || (i > 1 && now.f >= prev.f)) {
        note(plan_, "bracketed");
        bracket = {prev, now};
        break;
      }
      if (curvature_holds(now)) {
        note(plan_, "strong Wolfe");
        bracket = {now};
        done = true;
        break;
      }
      if (at_least(now.gtd, 0, "the slope")) {
        note(plan_, "bracketed by the slope");
        bracket = {prev, now};
        break;
      }
      const Approx lo = a.add(now.t, a.mul({0.01, 0}, a.sub(now.t, prev.t)));
      const Approx hi = a.mul(now.t, {10, 0});
      const Approx next = cubic_min(prev, now, lo, hi);
      note(plan_, "extrapolated");
      prev = now;
      now = trial(flat, next);
      calls += 1;
      i += 1;
    }
    if (i == max_ls) bracket = {at0, now};
    // Zoom: low is the end of the smaller loss (the first on a tie); losses are each side's own, compared exactly.
    size_t low = bracket.front().f <= bracket.back().f ? 0 : 1, high = 1 - low;
    bool progress_short = false;
    // Python tests the width before this trial and makes none (SEM-11.17): a profile may accept that.
    const Approx handed = a.mul(magnitude(a.sub(bracket.back().t, bracket.front().t)), d_norm);
    if (!done && i < max_ls && bracket.size() == 2 && !quiet_ && handed.v - handed.e < tolerance_change)
      plan_.api_parting = "lbfgs zoom → a trial in a bracket narrower than 1e-9";
    while (!done && i < max_ls) {
      const Point b0 = bracket[0], b1 = bracket[1];
      const Approx top = larger(b0.t, b1.t), bottom = smaller(b0.t, b1.t);
      Approx s = cubic_min(b0, b1, bottom, top);
      const Approx e = a.mul({0.1, 0}, a.sub(top, bottom));
      if (exceeds(a.sub(e, smaller(a.sub(top, s), a.sub(s, bottom))), 0, "the distance to an end")) {
        if (progress_short || at_least(a.sub(s, top), 0, "s - top") || at_least(a.sub(bottom, s), 0, "bottom - s")) {
          s = exceeds(a.sub(magnitude(a.sub(s, bottom)), magnitude(a.sub(s, top))), 0, "nearer the top")
                  ? a.sub(top, e)
                  : a.add(bottom, e);
          progress_short = false;
          note(plan_, "moved off an end");
        } else {
          progress_short = true;
        }
      } else {
        progress_short = false;
      }
      note(plan_, "zoom");
      now = trial(flat, s);
      calls += 1;
      i += 1;
      if (armijo_fails(now) || now.f >= bracket[low].f) {
        note(plan_, "new high end");
        bracket[high] = now;
        low = bracket[0].f <= bracket[1].f ? 0 : 1;
        high = 1 - low;
      } else {
        if (curvature_holds(now)) {
          note(plan_, "strong Wolfe");
          done = true;
        } else if (at_least(a.mul(now.gtd, a.sub(bracket[high].t, bracket[low].t)), 0, "the slope towards high")) {
          note(plan_, "high end from low");
          bracket[high] = bracket[low];
        }
        note(plan_, "new low end");
        bracket[low] = now;
      }
      // After the trial, in the C++ API (Python tests before it, SEM-11.17).
      const Approx width = a.mul(magnitude(a.sub(bracket[1].t, bracket[0].t)), d_norm);
      if (exceeds(a.sub({tolerance_change, 0}, width), 0, "the bracket's width")) {
        note(plan_, "bracket narrow");
        break;
      }
    }
    return bracket[bracket.size() == 1 ? 0 : low];
  }

  // SEM-16.6's cubic interpolation through two points of the search, at this side's numbers, clamped to [lo, hi]; the
  // midpoint where the cubic has no minimiser.
  Approx cubic_min(const Point& p1, const Point& p2, Approx lo, Approx hi) {
    const Arithmetic a = in_double();
    const Approx f1{p1.f, 0}, f2{p2.f, 0}, two{2, 0};
    const Approx d1 = a.sub(a.add(p1.gtd, p2.gtd), a.div(a.mul({3, 0}, a.sub(f1, f2)), a.sub(p1.t, p2.t)));
    const Approx d2_square = a.sub(a.mul(d1, d1), a.mul(p1.gtd, p2.gtd));
    if (!at_least(d2_square, 0, "the cubic's d1² - g1 g2")) {
      note(plan_, "no cubic minimiser");
      return a.mul({0.5, 0}, a.add(lo, hi));
    }
    const Approx d2 = a.sqrt(d2_square);
    const Approx m =
        at_least(a.sub(p2.t, p1.t), 0, "t2 - t1")
            ? a.sub(p2.t, a.mul(a.sub(p2.t, p1.t), a.div(a.sub(a.add(p2.gtd, d2), d1), a.add(a.sub(p2.gtd, p1.gtd), a.mul(two, d2)))))
            : a.sub(p1.t, a.mul(a.sub(p1.t, p2.t), a.div(a.sub(a.add(p1.gtd, d2), d1), a.add(a.sub(p1.gtd, p2.gtd), a.mul(two, d2)))));
    return {std::min(std::max(m.v, lo.v), hi.v), std::max({m.e, lo.e, hi.e})};
  }

  // The next trial call, at x0 + s d: the side's call if it made it (its loss, and its slope from its gradient),
  // otherwise the plan is the move to it.
  Point trial(const Arithmetic& a, Approx s) {
    if (consumed_ == calls_.size()) {
      plan_to(a, s);
      plan_.calls_again = true;
      if (!std::isfinite(s.e) && plan_.undecided.empty())
        plan_.undecided = "the trial step length " + text(s.v) + " has no finite bound";
      throw NeedCall{};
    }
    const size_t k = consumed_++;
    if (consumed_ == calls_.size()) quiet_ = false;
    return Point{s, calls_[k].loss, a.dot(approx(calls_[k].g), mem_.d), static_cast<int>(k)};
  }

  // The step ends: the move from where the last call saw the parameters to x0 (after a line search: the point chosen).
  void finish(const Arithmetic& a, const char* why) {
    if (why) note(plan_, why);
    if (moved_) plan_to(a, {0, 0});
  }

  // The plan: the move from the last call's parameters to x0 + s d, and its bound: x0's, the direction's and s's
  // scaled, s d rounded (or s first to the flat dtype), x0 + s d rounded, and the double arithmetic of the move itself.
  void plan_to(const Arithmetic& a, Approx s) {
    const Seen& last = calls_.back();
    plan_.moves = true;
    for_each_element([&](size_t j, double u) {
      const Approx& d = mem_.d[j];
      const double m = s.v * d.v, target = anchor_[j].v + m, move = target - last.x[j];
      plan_.move[element_name_[j]].push_back(move);
      plan_.error[element_name_[j]].push_back(anchor_[j].e + std::fabs(s.v) * d.e + std::fabs(d.v) * s.e +
                                               2 * std::max(a.u(), u) * std::fabs(m) + u * std::fabs(target) +
                                               std::ldexp(1.0, -52) * (std::fabs(move) + std::fabs(target)));
    });
  }

  // f(flat index, the unit roundoff of its parameter's dtype), over the flat vector in order.
  template <class F>
  void for_each_element(F f) {
    element_name_.clear();
    size_t j = 0;
    for (size_t k = 0; k < names_.size(); ++k)
      for (size_t i = 0; i < sizes_[k]; ++i, ++j) {
        element_name_.push_back(names_[k]);
        f(j, unit_roundoff(dtypes_[k]));
      }
  }

  bool exceeds(Approx x, double threshold, const char* what) {  // x > threshold
    std::string undecided;
    const bool result = above(x, threshold, what, undecided);
    if (!quiet_ && plan_.undecided.empty()) plan_.undecided = undecided;
    return result;
  }
  bool at_least(Approx x, double threshold, const char* what) {  // x >= threshold
    const bool result = x.v >= threshold;
    if (!quiet_ && plan_.undecided.empty() && std::isfinite(x.v) && !(x.e == 0) && !(std::fabs(x.v - threshold) > x.e))
      plan_.undecided = std::string(what) + " = " + text(x.v) + " ± " + text(x.e) + " against " + text(threshold);
    return result;
  }

  // What the optimizer's state keeps from step to step (SEM-16.2).
  struct Memory {
    int64_t n_iter = 0;
    std::vector<Approx> d;
    Approx t, h_diag{1, 0};
    std::vector<double> prev_g;
    double prev_loss = 0;
    std::deque<std::vector<Approx>> old_dirs, old_stps;
    std::deque<Approx> ro;
    std::optional<double> capacity;
  };

  OptimizerOptions o_;
  int64_t n_ = 0, evals_ = 0;  // this step
  std::vector<std::string> names_;
  std::vector<size_t> sizes_;
  std::vector<DType> dtypes_;
  std::vector<const ParamObservation*> params_;  // of the last call (valid during after_call)
  std::vector<Approx> last_move_;
  Approx gtd_;  // g · d of the iteration (direction())
  Memory mem_;
  // The line search's steps (SEM-16.6), followed by replaying the step from its start at every call.
  struct Seen {
    std::vector<double> x, g;
    double loss = 0;
  };
  struct NeedCall {};  // thrown where the step needs a call not seen yet: the plan is made
  Memory saved_;       // mem_ when the step began
  std::vector<Seen> calls_;
  size_t consumed_ = 0;
  bool quiet_ = false;           // replaying what earlier calls decided: no notes
  std::vector<Approx> anchor_;   // x0 of the iteration: where the parameters are between trials
  bool moved_ = false;           // a line search moved the parameters this step
  std::vector<std::string> element_name_;  // per flat index: its parameter (for_each_element)
  PlannedMove plan_;
};

// Whether any options of the program (the defaults, a group's, a set_options change) satisfy `f`.
bool any_options(const Program& p, bool (*f)(const OptimizerOptions&)) {
  if (f(p.optimizer->defaults)) return true;
  for (const ParamGroupSpec& g : p.optimizer->groups)
    if (g.options && f(*g.options)) return true;
  for (const Action& a : p.actions)
    if (a.kind == ActionKind::SetOptions && f(a.options)) return true;
  return false;
}
// Whether a step of the program may search (line_search_fn given anywhere).
bool searches(const Program& p) {
  return any_options(p, [](const OptimizerOptions& o) { return o.line_search_fn.has_value(); });
}

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
               integer_option("history_size", &OptimizerOptions::history_size, 100, {1, 2, 3}),
               text_option("line_search_fn", &OptimizerOptions::line_search_fn, {"strong_wolfe"})};
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
    if (draw.chance(30)) o.line_search_fn = "strong_wolfe";
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
    if (o.line_search_fn && o.max_iter.value_or(20) > 38)
      return std::make_pair(std::string("max_iter"), "max_iter above 38 with a line search: its step may call the closure "
                                                     "26 times an iteration, and a program's step at most 1000 times");
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
  // With strong_wolfe: the first call, then at most 26 per iteration (the search's first trial and 25 more, SEM-16.6).
  d.closure_calls = [](const OptimizerOptions& o) {
    const int64_t max_iter = static_cast<int64_t>(o.max_iter.value_or(20));
    return o.line_search_fn ? 1 + 26 * max_iter : std::max<int64_t>(1, max_iter);
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
      {"lbfgs_search_in_float32",
       "L-BFGS's strong_wolfe line search on float32 parameters only: Python decides its conditions in float32, the C++ "
       "API in double (SEM-16.6, SEM-11.16)",
       [](const Program& p) {
         bool all_float32 = true, any = false;
         for (const ParamGroupSpec& g : p.optimizer->groups)
           for (const std::string& name : g.params)
             for (const ParamSpec& q : p.params)
               if (q.name == name) {
                 any = true;
                 all_float32 = all_float32 && q.dtype == DType::Float32;
               }
         return any && all_float32 && searches(p);
       }},
      {"lbfgs_search_with_lr_zero",
       "L-BFGS's strong_wolfe line search with lr 0: every trial is at x0, and Python's cubic divides by zero (SEM-16.6, "
       "SEM-11.18)",
       [](const Program& p) {
         return searches(p) && any_options(p, [](const OptimizerOptions& o) { return o.lr && *o.lr == 0; });
       }},
  };
  return d;
}

}  // namespace lockstep
