// The op edge corpus (op_edges.h): hand-chosen values at each edge class, one program per op x class x dtype.
#include "conformance/generate/op_edges.h"

#include "conformance/program/op_descriptions.h"

#include <cmath>
#include <limits>

namespace lockstep {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<double> kOrdinary = {0.5, -1.25, 2, 0.75, -0.5, 1.5};

// Six values of the class (exactly representable in the dtype).
std::vector<double> class_values(const std::string& edge, DType d) {
  const bool f32 = d == DType::Float32;
  if (edge == "zero") return {0, 0.5, 0, -1.5, 0, 2};
  if (edge == "negative") return {-0.5, -2, -3.25, -1, -0.75, -4};
  if (edge == "tiny") {
    // subnormal and just-normal magnitudes
    if (f32) return {std::ldexp(1, -130), -std::ldexp(1, -140), std::ldexp(1.5, -126), std::ldexp(1, -149),
                     -std::ldexp(1, -127), std::ldexp(3, -128)};
    return {std::ldexp(1, -1030), -std::ldexp(1, -1060), std::ldexp(1.5, -1022), std::ldexp(1, -1074),
            -std::ldexp(1, -1023), std::ldexp(3, -1024)};
  }
  if (edge == "large") {
    if (f32) return {std::ldexp(3, 20), -std::ldexp(1, 30), std::ldexp(1, 40), 100, -std::ldexp(3, 25), std::ldexp(1, 60)};
    return {std::ldexp(3, 20), -std::ldexp(1, 30), std::ldexp(1, 40), 1000, -std::ldexp(1, 300), std::ldexp(1, 600)};
  }
  if (edge == "nonfinite") return {kNan, kInf, -kInf, 1, kNan, -2};
  return kOrdinary;  // any, broadcast, repeated_index
}

// A second operand: the class's values at even positions (rotated), ordinary ones at odd positions, so that
// both class x class and class x ordinary pairs occur (a subnormal times 0.5 is subnormal).
std::vector<double> mixed_values(const std::string& edge, DType d) {
  const std::vector<double> c = class_values(edge, d);
  std::vector<double> out(6);
  for (size_t i = 0; i < 6; ++i) out[i] = i % 2 == 0 ? c[(i + 1) % 6] : kOrdinary[i];
  return out;
}

const std::vector<double> kGradient = {1, -0.5, 2, 0.25, -1.5, 0.75, 0.5, -2};

struct Builder {
  DType dtype;
  Program program;

  ExprPtr add_param(const std::string& name, Shape shape, std::vector<double> values) {
    values.resize(static_cast<size_t>(numel(shape)));
    program.params.push_back({name, dtype, std::move(shape), std::move(values)});
    return param(name);
  }

  Action forward(ExprPtr loss) {
    Action f;
    f.kind = ActionKind::Forward;
    f.loss = std::move(loss);
    return f;
  }
  Action backward(int64_t output_elements, bool retain) {
    Action b;
    b.kind = ActionKind::Backward;
    b.gradient = std::vector<double>(kGradient.begin(), kGradient.begin() + output_elements);
    if (retain) b.retain_graph = true;
    return b;
  }

  // forward(loss) / backward(retain) [per loss], backward again through the last graph (the grads accumulate),
  // then a step. The step comes last: a backward after a step meets the frameworks' legitimately different
  // version counters (profile pytorch-python, SEM-11.10), which would keep every Python-API implementation away
  // from the whole corpus.
  void finish(const std::vector<std::pair<ExprPtr, int64_t>>& losses) {
    OptimizerSpec sgd;
    sgd.kind = OptimizerKind::SGD;
    sgd.defaults.lr = 0.5;
    ParamGroupSpec all;
    for (const ParamSpec& p : program.params) all.params.push_back(p.name);
    sgd.groups.push_back(all);
    program.optimizer = sgd;
    for (const auto& [loss, elements] : losses) {
      program.actions.push_back(forward(loss));
      program.actions.push_back(backward(elements, true));
    }
    program.actions.push_back(backward(losses.back().second, false));
    Action step;
    step.kind = ActionKind::Step;
    program.actions.push_back(step);
  }
};

std::string dtype_tag(DType d) { return d == DType::Float32 ? "f32" : "f64"; }

// "pow^0.5" -> "pow0.5", "pow^-1" -> "pow-m1" (fixture ids: [a-z0-9._-]).
std::string id_part(const std::string& op) {
  std::string out;
  for (char c : op) {
    if (c == '^') continue;
    if (c == '-') out += "m";
    else if (c == '_') out += "-";
    else out += c;
  }
  return out;
}

struct OpRow {
  std::string name;  // "relu", "pow^2"
  Op op;
  double exponent = 0;
};

// Every element-wise unary op (op_descriptions.h), pow at each exponent whose edge points differ.
const std::vector<OpRow>& unary_rows() {
  static const std::vector<OpRow> rows = [] {
    std::vector<OpRow> r;
    for (const OpDescription& d : op_descriptions()) {
      if (!d.elementwise || d.max_operands != 1) continue;
      if (d.op != Op::Pow) {
        r.push_back({d.name, d.op});
        continue;
      }
      for (double e : {0.0, 1.0, 2.0, 3.0, 0.5, -1.0}) {
        std::string name = e == 0.5 ? "0.5" : std::to_string(static_cast<int>(e));
        r.push_back({"pow^" + name, Op::Pow, e});
      }
    }
    return r;
  }();
  return rows;
}

ExprPtr unary_expr(const OpRow& row, ExprPtr a) {
  if (row.op == Op::Pow) return pow_scalar(std::move(a), row.exponent);
  if (row.op == Op::MulScalar) return mul_scalar(std::move(a), -1.5);
  return unary(row.op, std::move(a));
}

}  // namespace

std::vector<OpEdgeProgram> op_edge_programs() {
  const std::vector<std::string> value_edges = {"any", "zero", "negative", "tiny", "large", "nonfinite"};
  std::vector<OpEdgeProgram> out;
  auto emit = [&](const std::string& op, const std::string& edge, DType d, Builder b, const std::string& what) {
    OpEdgeProgram p;
    p.id = "op-" + id_part(op) + "-" + (edge == "repeated_index" ? "repeated-index" : edge) + "-" + dtype_tag(d);
    p.description = "Op edge point: " + what + " (" + edge + " inputs, " + dtype_name(d) +
                    "): forward, backward with an explicit gradient and retain_graph, a second backward through "
                    "the retained graph (the grads accumulate), an SGD step.";
    p.op = op;
    p.edge = edge;
    p.program = std::move(b.program);
    out.push_back(std::move(p));
  };
  for (DType d : {DType::Float32, DType::Float64}) {
    for (const OpRow& row : unary_rows())
      for (const std::string& edge : value_edges) {
        Builder b{d, {}};
        ExprPtr a = b.add_param("a", {6}, class_values(edge, d));
        b.finish({{unary_expr(row, a), 6}});
        emit(row.name, edge, d, std::move(b), row.name + "(a)");
      }
    for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div}) {
      const std::string name = op_name(op);
      for (const std::string& edge : value_edges) {
        Builder b{d, {}};
        ExprPtr a = b.add_param("a", {6}, class_values(edge, d));
        ExprPtr c = b.add_param("b", {6}, mixed_values(edge, d));
        b.finish({{binary(op, a, c), 6}});
        emit(name, edge, d, std::move(b), name + "(a, b)");
      }
      Builder b{d, {}};
      ExprPtr a = b.add_param("a", {6}, kOrdinary);
      ExprPtr s = b.add_param("s", {}, {1.5});
      b.finish({{binary(op, a, s), 6}, {binary(op, s, a), 6}});
      emit(name, "broadcast", d, std::move(b), name + "(a, s) and " + name + "(s, a) with a 0-d s");
    }
    for (const std::string& edge : value_edges) {
      {
        Builder b{d, {}};
        ExprPtr a = b.add_param("a", {2, 3}, class_values(edge, d));
        b.finish({{sum(a), 1}});
        emit("sum", edge, d, std::move(b), "sum(a)");
      }
      {
        Builder b{d, {}};
        ExprPtr a = b.add_param("a", {2, 3}, class_values(edge, d));
        b.finish({{mean(a), 1}});
        emit("mean", edge, d, std::move(b), "mean(a)");
      }
      {
        Builder b{d, {}};
        ExprPtr a = b.add_param("a", {6}, class_values(edge, d));
        ExprPtr c = b.add_param("b", {6}, mixed_values(edge, d));
        b.finish({{binary(Op::MseLoss, a, c), 1}});
        emit("mse_loss", edge, d, std::move(b), "mse_loss(a, b)");
      }
      {
        Builder b{d, {}};
        ExprPtr a = b.add_param("a", {2, 3}, class_values(edge, d));
        ExprPtr c = b.add_param("b", {3, 2}, mixed_values(edge, d));
        b.finish({{binary(Op::Matmul, a, c), 4}});
        emit("matmul", edge, d, std::move(b), "matmul(a, b)");
      }
      {
        Builder b{d, {}};
        ExprPtr x = b.add_param("x", {2, 3}, mixed_values(edge, d));
        ExprPtr w = b.add_param("w", {2, 3}, class_values(edge, d));
        ExprPtr bias = b.add_param("bias", {2}, {0.5, -1});
        b.finish({{linear(x, w, bias), 4}});
        emit("linear", edge, d, std::move(b), "linear(x, w, bias)");
      }
      {
        Builder b{d, {}};
        ExprPtr w = b.add_param("w", {3, 2}, class_values(edge, d));
        b.finish({{embedding(w, {0, 2, 1}), 6}});
        emit("embedding", edge, d, std::move(b), "embedding(w, [0, 2, 1])");
      }
      {
        Builder b{d, {}};
        ExprPtr logits = b.add_param("logits", {2, 3}, class_values(edge, d));
        b.finish({{cross_entropy(logits, {0, 2}), 1}});
        emit("cross_entropy", edge, d, std::move(b), "cross_entropy(logits, [0, 2])");
      }
    }
    {
      Builder b{d, {}};
      ExprPtr w = b.add_param("w", {3, 2}, kOrdinary);
      b.finish({{embedding(w, {0, 2, 0, 0}), 8}});
      emit("embedding", "repeated_index", d, std::move(b), "embedding(w, [0, 2, 0, 0])");
    }
    {
      Builder b{d, {}};
      ExprPtr logits = b.add_param("logits", {3, 2}, kOrdinary);
      b.finish({{cross_entropy(logits, {1, 1, 0}), 1}});
      emit("cross_entropy", "repeated_index", d, std::move(b), "cross_entropy(logits, [1, 1, 0])");
    }
  }
  // float32 values must be exactly representable: round what was written as a double.
  for (OpEdgeProgram& p : out)
    for (ParamSpec& param : p.program.params)
      if (param.dtype == DType::Float32)
        for (double& v : param.values) v = static_cast<double>(static_cast<float>(v));
  return out;
}

}  // namespace lockstep
