// The evaluator of loss expressions in double (op_evaluator.h).
#include "conformance/program/op_evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lockstep {
namespace {

// The op's own step, or the variant's where it replaces it.
const OpStep& forward_of(const OpDescription& d, const ExpressionVariant* variant) {
  if (variant && variant->op == d.op && variant->formula->forward) return variant->formula->forward;
  return d.forward;
}
const LocalDerivative& local_derivative_of(const OpDescription& d, const ExpressionVariant* variant) {
  if (variant && variant->op == d.op && variant->formula->local_derivative) return variant->formula->local_derivative;
  return d.local_derivative;
}
const OpStep& backward_of(const OpDescription& d, const ExpressionVariant* variant) {
  if (variant && variant->op == d.op && variant->formula->backward) return variant->formula->backward;
  return d.backward;
}

class Forward {
 public:
  explicit Forward(const ForwardPass& pass) : pass_(pass) {}
  std::vector<EvalNode> nodes;

  int eval(const Expr& e) {
    std::vector<int> args;
    for (const ExprPtr& a : e.args) {
      if (!a) throw CannotEvaluate{};
      args.push_back(eval(*a));
    }
    EvalNode n;
    n.expr = &e;
    n.args = args;
    OpCall call{e, n, {}};
    for (int a : args) call.operands.push_back(&nodes[static_cast<size_t>(a)]);
    const OpDescription& d = describe(e.op);
    if (e.op == Op::Param || e.op == Op::Const) {
      pass_.leaf(e, n);
    } else {
      if (call.operands.size() < d.min_operands || call.operands.size() > d.max_operands) throw CannotEvaluate{};
      if (pass_.before_op) pass_.before_op(call);
      n.dtype = call.arg(0).dtype;
      forward_of(d, pass_.variant)(call);
      if (pass_.scales) d.forward_scale(call);
    }
    const size_t count = static_cast<size_t>(numel(n.shape));
    if (n.v.size() != count || (pass_.scales && n.b.size() != count)) throw CannotEvaluate{};
    if (pass_.after_node) pass_.after_node(call);
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size()) - 1;
  }

 private:
  const ForwardPass& pass_;
};

// The node's call, its operands pointing into `nodes`.
OpCall call_of(std::vector<EvalNode>& nodes, size_t k) {
  OpCall call{*nodes[k].expr, nodes[k], {}};
  for (int a : nodes[k].args) call.operands.push_back(&nodes.at(static_cast<size_t>(a)));
  return call;
}

// Adds `add` into `into`, summing everything into a single element when `into` is a 0-d broadcast operand.
void accumulate(std::vector<double>& into, const std::vector<double>& add) {
  if (into.size() == add.size()) {
    for (size_t i = 0; i < add.size(); ++i) into[i] += add[i];
  } else if (into.size() == 1) {
    for (double x : add) into[0] += x;
  } else {
    throw CannotEvaluate{};
  }
}

}  // namespace

std::vector<EvalNode> evaluate_forward(const Expr& root, const ForwardPass& pass) {
  Forward forward(pass);
  forward.eval(root);
  return std::move(forward.nodes);
}

int64_t reduction_length(const OpCall& call) {
  const OpDescription& d = describe(call.expr.op);
  return d.reduction_length ? d.reduction_length(call) : 1;
}

void backward_values(std::vector<EvalNode>& nodes, const std::vector<double>& seed, const ExpressionVariant* variant,
                     StraddleMarks* straddles) {
  for (EvalNode& n : nodes) n.s.assign(n.v.size(), 0.0);
  nodes.back().s = seed;
  std::vector<std::vector<char>>* marks = straddles ? &straddles->marks : nullptr;
  if (marks) {
    marks->clear();
    for (const EvalNode& n : nodes) marks->emplace_back(n.v.size(), 0);
  }
  for (size_t k = nodes.size(); k-- > 0;) {
    OpCall call = call_of(nodes, k);
    const Expr& e = call.expr;
    if (e.op == Op::Param || e.op == Op::Const) continue;  // leaves: their s is read by parameter_gradients()
    const OpDescription& d = describe(e.op);
    const EvalNode& n = nodes[k];
    if (d.elementwise) {
      const LocalDerivative& local = local_derivative_of(d, variant);
      for (size_t i = 0; i < call.operands.size(); ++i) {
        std::vector<double> g(n.s.size());
        for (size_t j = 0; j < n.s.size(); ++j) g[j] = n.s[j] == 0 ? 0.0 : n.s[j] * local(call, i, j);
        accumulate(call.arg(i).s, g);
        if (!marks) continue;
        std::vector<char>& to = (*marks)[static_cast<size_t>(n.args[i])];
        for (size_t j = 0; j < n.s.size() && !to.empty(); ++j)
          if ((*marks)[k][j] ||
              (d.zero_within_rounding && std::isinf(n.s[j]) && d.zero_within_rounding(call, j, straddles->within_rounding)))
            to[to.size() == n.s.size() ? j : 0] = 1;
      }
    } else {
      backward_of(d, variant)(call);
      // Reductions, matmul, linear, embedding, cross_entropy: a marked element reaches every operand element.
      if (marks && std::any_of((*marks)[k].begin(), (*marks)[k].end(), [](char c) { return c != 0; }))
        for (int a : n.args) std::fill((*marks)[static_cast<size_t>(a)].begin(), (*marks)[static_cast<size_t>(a)].end(), char{1});
    }
  }
}

bool computed_nonzero_operand_at(const OpCall& call, size_t j, size_t out_size) {
  for (const EvalNode* o : call.operands)
    if (o->expr->op != Op::Param && o->expr->op != Op::Const && !o->b.empty() && o->b[o->b.size() == out_size ? j : 0] != 0)
      return true;
  return false;
}

void backward_scales(std::vector<EvalNode>& nodes, const std::vector<double>& seed, double min_normal) {
  for (EvalNode& n : nodes) n.s.assign(n.v.size(), 0.0);
  nodes.back().s = seed;
  // The exact scales (min_normal 0, SEMANTICS §9.5) are 0 only where the sign of a zero is fixed; a zero whose sign a
  // rounding may decide is marked 1 (there only zero or not matters). Such a zero is a product with an exact zero whose
  // other factor was computed: a gradient passed down from the root (below it, a sum may have cancelled to either side
  // of 0), or an operand computed to a non-zero value.
  const bool exact = min_normal == 0;
  for (size_t k = nodes.size(); k-- > 0;) {
    OpCall call = call_of(nodes, k);
    const Expr& e = call.expr;
    if (e.op == Op::Param || e.op == Op::Const) continue;
    EvalNode& n = nodes[k];
    // The root's too: an explicit gradient below the smallest normal number is scaled inside the op's backward
    // (mse_loss's 2 g / n) and rounded there to an absolute denormal, which the operand's factor then multiplies.
    for (double& x : n.s) x = std::max(x, min_normal);
    const bool computed_incoming =
        exact && k + 1 != nodes.size() && std::any_of(n.s.begin(), n.s.end(), [](double x) { return x != 0; });
    const OpDescription& d = describe(e.op);
    if (!d.elementwise) {
      d.backward_scale(call);
      // A reduction, matmul or linear that passed a computed gradient on as 0 (a zero weight, a 1/n that underflowed
      // the mark): its operands' zeros there are not fixed.
      if (computed_incoming)
        for (EvalNode* o : call.operands)
          for (double& x : o->s)
            if (x == 0) x = kSignFreeMark;
      continue;
    }
    for (size_t i = 0; i < call.operands.size(); ++i) {
      std::vector<double> g(n.s.size());
      for (size_t j = 0; j < n.s.size(); ++j) {
        g[j] = n.s[j] * d.local_scale(call, i, j);
        // A non-finite scale for one element (0 * inf where an operand is infinite) drops that element's
        // contribution only; the engines' value there is non-finite or exact.
        if (!std::isfinite(g[j])) g[j] = 0;
        else if (exact && g[j] == 0 &&
                 ((n.s[j] != 0 && k + 1 != nodes.size()) || computed_nonzero_operand_at(call, j, n.s.size())))
          g[j] = kSignFreeMark;
      }
      accumulate(call.arg(i).s, g);
    }
  }
}

std::map<std::string, std::vector<double>> parameter_gradients(const std::vector<EvalNode>& nodes) {
  std::map<std::string, std::vector<double>> grads;
  for (size_t k = nodes.size(); k-- > 0;) {
    const EvalNode& n = nodes[k];
    if (n.expr->op != Op::Param) continue;
    std::vector<double>& g = grads[n.expr->name];
    if (g.empty()) g.assign(n.s.size(), 0.0);
    accumulate(g, n.s);
  }
  return grads;
}

}  // namespace lockstep
