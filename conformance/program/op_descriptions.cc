// The op descriptions gathered (op_descriptions.h), and the op names every reader of programs uses.
#include "conformance/program/op_descriptions.h"

#include <stdexcept>

namespace lockstep {
namespace {

// Parameters and constants are the expression's leaves: values, with no arithmetic.
OpDescription leaf(Op op, const char* name) { return op_entry(op, name, 0, 0); }

}  // namespace

OpDescription op_entry(Op op, const char* name, size_t min_operands, size_t max_operands, OpExtra extra,
                       const char* extra_key) {
  OpDescription d;
  d.op = op;
  d.name = name;
  d.min_operands = min_operands;
  d.max_operands = max_operands;
  d.extra = extra;
  d.extra_key = extra_key;
  return d;
}

const std::vector<OpDescription>& op_descriptions() {
  static const std::vector<OpDescription> all = [] {
    std::vector<OpDescription> ops = {leaf(Op::Param, "param"), leaf(Op::Const, "const")};
    for (auto family : {elementwise_op_descriptions, reduction_op_descriptions, linear_algebra_op_descriptions})
      for (OpDescription& d : family()) ops.push_back(std::move(d));
    // In Op order, each op once: describe() indexes by the enum.
    std::vector<OpDescription> ordered(ops.size());
    std::vector<bool> seen(ops.size(), false);
    for (OpDescription& d : ops) {
      const size_t i = static_cast<size_t>(d.op);
      if (i >= ordered.size() || seen[i]) throw std::logic_error(std::string("op described twice: ") + d.name);
      seen[i] = true;
      ordered[i] = std::move(d);
    }
    for (size_t i = 0; i < seen.size(); ++i)
      if (!seen[i]) throw std::logic_error("op " + std::to_string(i) + " has no description");
    return ordered;
  }();
  return all;
}

const OpDescription& describe(Op op) { return op_descriptions().at(static_cast<size_t>(op)); }

const char* op_name(Op op) {
  const size_t i = static_cast<size_t>(op);
  return i < op_descriptions().size() ? op_descriptions()[i].name : "?";
}

std::optional<Op> op_from_name(const std::string& name) {
  for (const OpDescription& d : op_descriptions())
    if (name == d.name) return d.op;
  return std::nullopt;
}

}  // namespace lockstep
