// Formula variants (see formula_variants.h). Evaluated for a difference in trace_comparison.cc.
#include "conformance/compare/formula_variants.h"

#include <algorithm>
#include <map>

#include "conformance/program/op_descriptions.h"
#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {

const std::vector<FormulaVariantInfo>& formula_variants() {
  static const std::vector<FormulaVariantInfo> v = [] {
    std::vector<FormulaVariantInfo> all;
    // Each op's own variants (op_descriptions.h).
    for (const OpDescription& d : op_descriptions())
      for (const OpFormulaVariant& v : d.variants) all.push_back({v.name, v.applies_to, v.description});
    const std::vector<FormulaVariantInfo> others = {
      {"grad.accumulated_separately", "backward grads of 0-d parameters and the handles holding them",
       "the grad after a backward is its own value before plus this backward's gradient: no 0-d grads on one storage "
       "(SEMANTICS §3.7)"},
      {"backward.seeds_ones", "backward grads and the handles holding them",
       "a backward without a gradient seeds ones, whatever the output's shape (PyTorch refuses a non-scalar output): "
       "the grad is its own value before plus the gradient of sum(output): js-pytorch's Tensor.backward"},
      {"step.adds_weight_decay_to_grad", "step: grads and the handles holding them",
       "the step leaves grad = grad_old + weight_decay * p_old (foreach Adam, RMSprop and Adagrad before 2.0)"},
    };
    all.insert(all.end(), others.begin(), others.end());
    // Each optimizer's own step variants (optimizer_descriptions.h), once each (Adam and AdamW share theirs).
    for (const OptimizerDescription& d : optimizer_descriptions())
      for (const StepFormulaVariant& sv : d.step_variants)
        if (std::none_of(all.begin(), all.end(), [&](const FormulaVariantInfo& f) { return f.name == sv.name; }))
          all.push_back({sv.name, sv.applies_to, sv.description});
    return all;
  }();
  return v;
}

const ExpressionVariant* expression_variant(const std::string& name) {
  static const std::map<std::string, ExpressionVariant> variants = [] {
    std::map<std::string, ExpressionVariant> m;
    for (const OpDescription& d : op_descriptions())
      for (const OpFormulaVariant& v : d.variants) m[v.name] = ExpressionVariant{d.op, &v};
    return m;
  }();
  auto it = variants.find(name);
  return it == variants.end() ? nullptr : &it->second;
}

}  // namespace lockstep
