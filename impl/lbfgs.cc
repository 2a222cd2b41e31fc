#include "impl/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

// Rounding (SEM-16.4): every vector below holds values of the flat gradient's dtype T and each line rounds once to
// T; dot products and sums add in order (LibTorch's reduction order is unspecified, so the last bits of a dot may
// differ from LibTorch's); t is a double; a move p + t d is one fused multiply-add with t rounded to p's dtype, as
// 1.13 does. The library is otherwise built with -ffp-contract=off.

namespace lockstep::impl {
namespace {

using Vec = std::vector<double>;  // values of T, widened

template <class T>
T dot(const Vec& a, const Vec& b) {
  T s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<T>(a[i]) * static_cast<T>(b[i]);
  return s;
}

// The largest |v|, NaN when any element is (black-box: a NaN gradient is never "small", SEM-16.3).
template <class T>
T max_abs(const Vec& a) {
  T m = 0;
  for (double v : a) {
    if (std::isnan(v)) return static_cast<T>(v);
    m = std::max(m, static_cast<T>(std::fabs(v)));
  }
  return m;
}

// The flat gradient (SEM-16.2): every parameter's grad in order, zeros for an undefined one, in T.
template <class T>
Vec gather_flat_grad(const std::vector<Tensor>& params) {
  Vec g;
  for (const Tensor& p : params) {
    const Tensor grad = p.grad();
    for (int64_t i = 0; i < p.numel(); ++i) g.push_back(grad.defined() ? static_cast<double>(static_cast<T>(grad.at(i))) : 0.0);
  }
  return g;
}

// The closure's loss as a number (SEM-16.2).
double call(const LBFGS::Closure& closure) {
  const Tensor loss = closure();
  if (loss.numel() != 1)
    throw Error(ErrorKind::Other, "a Tensor with " + std::to_string(loss.numel()) + " elements cannot be converted to Scalar");
  return loss.at(0);
}

// p = p + t d for every parameter, its slice of d; one version bump each (SEM-16.3).
void move(std::vector<Tensor>& params, double t, const Vec& d) {
  size_t offset = 0;
  for (Tensor& p : params) {
    dispatch_dtype(p.dtype(), [&](auto zero) {
      using P = decltype(zero);
      P* values = p.data<P>();
      const P step = static_cast<P>(t);
      for (int64_t i = 0; i < p.numel(); ++i) values[i] = std::fma(step, static_cast<P>(d[offset + static_cast<size_t>(i)]), values[i]);
    });
    offset += static_cast<size_t>(p.numel());
    p.bump_version();
  }
}

// The flat parameters, and writing them back in place (one version bump each): phi's copy back to x0 (SEM-16.6).
std::vector<Vec> snapshot(const std::vector<Tensor>& params) {
  std::vector<Vec> x;
  for (const Tensor& p : params) {
    Vec v(static_cast<size_t>(p.numel()));
    for (int64_t i = 0; i < p.numel(); ++i) v[static_cast<size_t>(i)] = p.at(i);
    x.push_back(std::move(v));
  }
  return x;
}
void restore(std::vector<Tensor>& params, const std::vector<Vec>& x) {
  for (size_t k = 0; k < params.size(); ++k) {
    Tensor& p = params[k];
    dispatch_dtype(p.dtype(), [&](auto zero) {
      using P = decltype(zero);
      P* values = p.data<P>();
      for (int64_t i = 0; i < p.numel(); ++i) values[i] = static_cast<P>(x[k][static_cast<size_t>(i)]);
    });
    p.bump_version();
  }
}

// SEM-16.6: the minimiser of the cubic through (x1, f1), (x2, f2) with slopes g1, g2, clamped to [lo, hi]; the
// midpoint where the cubic has none.
double cubic_min(double x1, double f1, double g1, double x2, double f2, double g2, double lo, double hi) {
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (!(d2_square >= 0)) return (lo + hi) / 2;
  const double d2 = std::sqrt(d2_square);
  const double m = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                            : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(m, lo), hi);
}

// One end of the line search's bracket: a step length, and the loss, gradient and slope there.
struct Point {
  double t = 0, f = 0;
  Vec g;
  double gtd = 0;
};

// SEM-16.6: a line search for the strong Wolfe conditions along d from the point of loss f, gradient g and slope gtd,
// starting at step length t. phi(s) evaluates the closure at x0 + s d. Returns the point chosen and sets `calls`.
template <class T>
Point strong_wolfe(const std::function<Point(double)>& phi, double t, const Vec& d, const Point& at0,
                   double tolerance_change, int64_t& calls) {
  const double c1 = 1e-4, c2 = 0.9;
  const int max_ls = 25;
  const double gtd = at0.gtd;
  const double d_norm = static_cast<double>(max_abs<T>(d));
  Point now = phi(t);
  calls = 1;
  Point prev = at0;  // t = 0
  std::vector<Point> bracket;
  bool done = false;
  int i = 0;
  // Bracketing: a step length that satisfies the conditions, or an interval that holds one.
  while (i < max_ls) {
    if (now.f > at0.f + c1 * now.t * gtd || (i > 1 && now.f >= prev.f)) {
      bracket = {prev, now};
      break;
    }
    if (std::fabs(now.gtd) <= -c2 * gtd) {
      bracket = {now};
      done = true;
      break;
    }
    if (now.gtd >= 0) {
      bracket = {prev, now};
      break;
    }
    const double next = cubic_min(prev.t, prev.f, prev.gtd, now.t, now.f, now.gtd, now.t + 0.01 * (now.t - prev.t), now.t * 10);
    prev = now;
    now = phi(next);
    calls += 1;
    i += 1;
  }
  if (i == max_ls) bracket = {at0, now};
  // Zoom: shrink the bracket [low, high] (low the end of the smaller loss, the first on a tie).
  size_t low = bracket.front().f <= bracket.back().f ? 0 : 1, high = 1 - low;
  bool progress_short = false;
  while (!done && i < max_ls) {
    Point& b0 = bracket[0];
    Point& b1 = bracket[1];
    double s = cubic_min(b0.t, b0.f, b0.gtd, b1.t, b1.f, b1.gtd, std::min(b0.t, b1.t), std::max(b0.t, b1.t));
    const double top = std::max(b0.t, b1.t), bottom = std::min(b0.t, b1.t);
    const double e = 0.1 * (top - bottom);
    if (std::min(top - s, s - bottom) < e) {  // too close to an end
      if (progress_short || s >= top || s <= bottom) {
        s = std::fabs(s - top) < std::fabs(s - bottom) ? top - e : bottom + e;
        progress_short = false;
      } else {
        progress_short = true;
      }
    } else {
      progress_short = false;
    }
    now = phi(s);
    calls += 1;
    i += 1;
    if (now.f > at0.f + c1 * now.t * gtd || now.f >= bracket[low].f) {
      bracket[high] = now;
      low = bracket[0].f <= bracket[1].f ? 0 : 1;
      high = 1 - low;
    } else {
      if (std::fabs(now.gtd) <= -c2 * gtd) {
        done = true;
      } else if (now.gtd * (bracket[high].t - bracket[low].t) >= 0) {
        bracket[high] = bracket[low];
      }
      bracket[low] = now;
    }
    // The bracket's width is tested after each trial: a bracket the bracketing phase left narrower than this still
    // gets one trial (the C++ API; Python tests before it, SEM-11.17).
    if (std::fabs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change) break;
  }
  return bracket[bracket.size() == 1 ? 0 : low];
}

// SEM-16.3, the flat vectors in T.
template <class T>
void lbfgs_iterations(std::vector<Tensor>& params, const LBFGSOptions& o, LBFGSState& st, double loss, Vec g,
                      const LBFGS::Closure& closure) {
  const int64_t max_eval = o.max_eval.value_or(o.max_iter * 5 / 4);
  int64_t evals = 1;
  bool grad_small = false;
  Vec& d = st.d;
  for (int64_t n = 1; n <= o.max_iter; ++n) {
    st.n_iter += 1;
    if (st.n_iter == 1) {
      d.resize(g.size());
      for (size_t i = 0; i < g.size(); ++i) d[i] = -g[i];                          // d = -g
      st.old_dirs.clear();
      st.old_stps.clear();
      st.ro.clear();
      st.H_diag = 1;
    } else {
      // Black-box: a negative history_size fails here, at the first use of the history; 0 crashes LibTorch 1.13.
      if (o.history_size < 0) throw Error(ErrorKind::Other, "cannot create std::vector larger than max_size()");
      if (o.history_size == 0) throw Error(ErrorKind::Other, "history_size 0 (LibTorch 1.13 crashes on it, SEM-16.1)");
      Vec y(g.size()), s(g.size());
      for (size_t i = 0; i < g.size(); ++i) {
        y[i] = static_cast<T>(static_cast<T>(g[i]) - static_cast<T>(st.prev_flat_grad[i]));  // y = g - prev_flat_grad
        s[i] = static_cast<T>(static_cast<T>(d[i]) * static_cast<T>(st.t));                   // s = d t
      }
      const T ys = dot<T>(y, s);
      if (ys > 1e-10) {                                                            // a curvature pair worth keeping
        if (static_cast<int64_t>(st.old_dirs.size()) == o.history_size) {
          st.old_dirs.pop_front();
          st.old_stps.pop_front();
          st.ro.pop_front();
        }
        st.old_dirs.push_back(y);
        st.old_stps.push_back(s);
        st.ro.push_back(static_cast<T>(T(1) / ys));
        st.H_diag = static_cast<T>(ys / dot<T>(y, y));
      }
      // The two loops: q from the newest pair to the oldest, then r back from the oldest to the newest.
      const size_t pairs = st.old_dirs.size();
      if (!st.capacity) st.capacity = o.history_size;
      if (static_cast<int64_t>(pairs) > *st.capacity)  // black-box: LibTorch's range check (SEM-16.1)
        throw Error(ErrorKind::Other, "vector::_M_range_check: __n (which is " + std::to_string(*st.capacity) +
                                          ") >= this->size() (which is " + std::to_string(*st.capacity) + ")");
      std::vector<T> al(pairs);
      Vec q(g.size());
      for (size_t i = 0; i < g.size(); ++i) q[i] = -g[i];                          // q = -g
      for (size_t k = pairs; k-- > 0;) {
        al[k] = dot<T>(st.old_stps[k], q) * static_cast<T>(st.ro[k]);             // al = (s · q) ro
        for (size_t i = 0; i < q.size(); ++i)                                     // q = q - al y
          q[i] = std::fma(-al[k], static_cast<T>(st.old_dirs[k][i]), static_cast<T>(q[i]));
      }
      for (size_t i = 0; i < q.size(); ++i) d[i] = static_cast<T>(static_cast<T>(q[i]) * static_cast<T>(st.H_diag));  // r = q H
      for (size_t k = 0; k < pairs; ++k) {
        const T be = dot<T>(st.old_dirs[k], d) * static_cast<T>(st.ro[k]);       // be = (y · r) ro
        for (size_t i = 0; i < d.size(); ++i)                                     // r = r + (al - be) s
          d[i] = std::fma(al[k] - be, static_cast<T>(st.old_stps[k][i]), static_cast<T>(d[i]));
      }
    }
    st.prev_flat_grad = g;
    st.prev_loss = loss;
    if (st.n_iter == 1) {
      T abs_sum = 0;
      for (double v : g) abs_sum += static_cast<T>(std::fabs(v));
      st.t = std::min(1.0, 1.0 / static_cast<double>(abs_sum)) * o.lr;
    } else {
      st.t = o.lr;
    }
    const T gtd = dot<T>(g, d);
    if (static_cast<double>(gtd) > -o.tolerance_change) break;                    // not a descent direction
    if (o.line_search_fn) {  // black-box: checked here, after the first closure call and the descent check
      if (*o.line_search_fn != "strong_wolfe") throw Error(ErrorKind::Other, "only 'strong_wolfe' is supported");
      // SEM-16.6: trial points x0 + s d, each evaluated and undone, then the move to the one chosen.
      const std::vector<Vec> x0 = snapshot(params);
      const auto phi = [&](double s) {
        move(params, s, d);
        Point at{s, call(closure), gather_flat_grad<T>(params), 0};
        at.gtd = static_cast<double>(dot<T>(at.g, d));
        restore(params, x0);
        return at;
      };
      int64_t calls = 0;
      // The search's bracket-width test reads 1e-9, not the option (SEM-16.6).
      Point chosen = strong_wolfe<T>(phi, st.t, d, Point{0, loss, g, static_cast<double>(gtd)}, 1e-9, calls);
      move(params, chosen.t, d);
      st.t = chosen.t;
      loss = chosen.f;
      g = std::move(chosen.g);
      grad_small = max_abs<T>(g) <= o.tolerance_grad;
      evals += calls;
      st.func_evals += calls;  // counted when the search returns (SEM-16.6)
    } else {
      move(params, st.t, d);
      if (n != o.max_iter) {
        loss = call(closure);
        g = gather_flat_grad<T>(params);
        grad_small = max_abs<T>(g) <= o.tolerance_grad;
        evals += 1;
        st.func_evals += 1;
      }
    }
    if (n == o.max_iter || evals >= max_eval) break;
    if (grad_small) break;
    Vec moved(d.size());
    for (size_t i = 0; i < d.size(); ++i) moved[i] = static_cast<T>(static_cast<T>(d[i]) * static_cast<T>(st.t));
    if (max_abs<T>(moved) <= o.tolerance_change) break;
    if (std::fabs(loss - st.prev_loss) < o.tolerance_change) break;
  }
}

}  // namespace

LBFGS::LBFGS(std::vector<Tensor> params, const LBFGSOptions& defaults) : LBFGS(single_group(std::move(params)), defaults) {}

namespace {
// SEM-16.1: an unset max_eval is fixed once, from the defaults' max_iter, in the defaults and in the first group.
LBFGSOptions with_max_eval(LBFGSOptions o) {
  if (!o.max_eval) o.max_eval = o.max_iter * 5 / 4;
  return o;
}
}  // namespace

LBFGS::LBFGS(std::vector<ParamGroup> groups, const LBFGSOptions& defaults)
    : Optimizer(std::move(groups), with_max_eval(defaults).clone()) {
  if (param_groups().size() != 1)
    throw Error(ErrorKind::Other, "LBFGS doesn't support per-parameter options (parameter groups)");
  if (!defaults.max_eval) group_options(0).max_eval = *with_max_eval(defaults).max_eval;
}

void LBFGS::step() { throw Error(ErrorKind::Other, "LBFGS requires a closure function"); }

Tensor LBFGS::step(const Closure& closure) {
  if (!closure) step();
  if (param_groups().size() != 1)  // a group added later (SEM-16.1)
    throw Error(ErrorKind::Other, "param_groups_.size() == 1 INTERNAL ASSERT FAILED (LBFGS has one group)");
  const LBFGSOptions& o = group_options(0);
  std::vector<Tensor>& params = param_groups()[0].params;
  if (params.empty()) throw Error(ErrorKind::Other, "LBFGS has no parameters");
  LBFGSState* st = static_cast<LBFGSState*>(find_state(params[0]));
  if (!st) st = static_cast<LBFGSState*>(&set_state(params[0], std::make_unique<LBFGSState>()));

  const Tensor first = closure();
  if (first.numel() != 1)
    throw Error(ErrorKind::Other, "a Tensor with " + std::to_string(first.numel()) + " elements cannot be converted to Scalar");
  st->func_evals += 1;
  // The flat gradient's dtype: float32 only when every parameter is.
  const bool all_float32 = std::all_of(params.begin(), params.end(), [](const Tensor& p) { return p.dtype() == DType::Float32; });
  dispatch_dtype(all_float32 ? DType::Float32 : DType::Float64, [&](auto zero) {
    using T = decltype(zero);
    Vec g = gather_flat_grad<T>(params);
    if (max_abs<T>(g) <= o.tolerance_grad) return;  // already optimal: nothing moves, n_iter unchanged
    lbfgs_iterations<T>(params, o, *st, first.at(0), std::move(g), closure);
  });
  return first;
}

LBFGSOptions& LBFGS::group_options(size_t i) { return static_cast<LBFGSOptions&>(*param_groups().at(i).options); }
const LBFGSOptions& LBFGS::group_options(size_t i) const {
  return static_cast<const LBFGSOptions&>(*param_groups().at(i).options);
}

const LBFGSState* LBFGS::lbfgs_state() const {
  const std::vector<Tensor>& params = param_groups().at(0).params;
  return params.empty() ? nullptr : static_cast<const LBFGSState*>(state(params[0]));
}

}  // namespace lockstep::impl
