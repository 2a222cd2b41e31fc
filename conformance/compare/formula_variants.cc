// Formula variants (see formula_variants.h). Evaluated for a difference in trace_comparison.cc.
#include "conformance/compare/formula_variants.h"

#include <algorithm>
#include <map>

#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {

const std::vector<FormulaVariantInfo>& formula_variants() {
  static const std::vector<FormulaVariantInfo> v = [] {
    std::vector<FormulaVariantInfo> all = {
      {"relu.leaky_0.001", "forward outputs, backward grads and the handles holding them",
       "relu(x) = 0.001 x for x <= 0 (derivative 0.001): js-pytorch's nn.ReLU"},
      {"abs.grad_of_zero_is_minus_one", "backward grads and the handles holding them",
       "abs'(0) = -1 (step(x, -1)): TensorFlow.js's Abs gradient"},
      {"pow.repeated_multiplication", "forward outputs, backward grads and the handles holding them",
       "x^n = x * x * ... with 1 + max(0, ceil(n - 1)) factors, derivative 2 x for every n: js-pytorch's Tensor.pow"},
      {"mse_loss.divided_by_rows_squared", "forward outputs, backward grads and the handles holding them",
       "mse_loss(a, b) = sum((a - b)^2) / B^2, B = the product of all but the last dimension: js-pytorch's nn.MSELoss"},
      {"grad.accumulated_separately", "backward grads of 0-d parameters and the handles holding them",
       "the grad after a backward is its own value before plus this backward's gradient: no 0-d grads on one storage "
       "(SEMANTICS §3.7)"},
      {"backward.seeds_ones", "backward grads and the handles holding them",
       "a backward without a gradient seeds ones, whatever the output's shape (PyTorch refuses a non-scalar output): "
       "the grad is its own value before plus the gradient of sum(output): js-pytorch's Tensor.backward"},
      {"step.adds_weight_decay_to_grad", "step: grads and the handles holding them",
       "the step leaves grad = grad_old + weight_decay * p_old (foreach Adam, RMSprop and Adagrad before 2.0)"},
    };
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
    m["relu.leaky_0.001"].relu_negative_slope = 0.001;
    m["abs.grad_of_zero_is_minus_one"].abs_derivative_at_zero = -1;
    m["pow.repeated_multiplication"].pow_by_repeated_multiplication = true;
    m["mse_loss.divided_by_rows_squared"].mse_loss_divided_by_rows_squared = true;
    return m;
  }();
  auto it = variants.find(name);
  return it == variants.end() ? nullptr : &it->second;
}

}  // namespace lockstep
