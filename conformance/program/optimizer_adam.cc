// Adam and AdamW as data (SEMANTICS §6). Their arithmetic for the tolerance and the error budget stays in
// comparator.cc and error_budget.cc, written before descriptions existed.
#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {
namespace {

OptimizerDescription adam_family(OptimizerKind kind, const char* name, const char* semantics, double weight_decay) {
  OptimizerDescription d;
  d.kind = kind;
  d.name = name;
  d.semantics = semantics;
  d.options = {
      number_option("lr", &OptimizerOptions::lr, 1e-3, {0.001, 0.01, 0.1, 0.5, 1.0, 0.05}, {-0.001}),
      pair_option("betas", &OptimizerOptions::betas, {0.9, 0.999}, {{0.9, 0.999}, {0.5, 0.9}, {0.0, 0.99}, {0.8, 0.0}},
                  {{1.0, 0.999}, {-0.1, 0.999}, {0.9, 1.0}}),
      number_option("eps", &OptimizerOptions::eps, 1e-8, {1e-8, 1e-6, 1e-3, 0.0}, {-1e-8}),
      number_option("weight_decay", &OptimizerOptions::weight_decay, weight_decay, {0.0, 0.01, 0.1}, {-0.1}),
      flag_option("amsgrad", &OptimizerOptions::amsgrad, false)};
  d.counts_steps = true;
  d.state = {{"exp_avg", &OptimizerStateObservation::exp_avg},
             {"exp_avg_sq", &OptimizerStateObservation::exp_avg_sq},
             {"max_exp_avg_sq", &OptimizerStateObservation::max_exp_avg_sq}};
  d.lr_values = d.options[0].values;
  d.rejects = [](const OptimizerOptions& o) {  // SEM-6.1
    const std::pair<double, double> betas = o.betas.value_or(std::make_pair(0.9, 0.999));
    auto in_unit = [](double b) { return 0 <= b && b < 1; };
    return !(o.lr.value_or(1e-3) >= 0) || !(o.eps.value_or(1e-8) >= 0) || !in_unit(betas.first) ||
           !in_unit(betas.second) || !(o.weight_decay.value_or(0) >= 0);
  };
  return d;
}

}  // namespace

OptimizerDescription adam_description() { return adam_family(OptimizerKind::Adam, "adam", "SEM-6.1", 0); }

OptimizerDescription adamw_description() {
  OptimizerDescription d = adam_family(OptimizerKind::AdamW, "adamw", "SEM-6.4", 1e-2);
  d.decoupled_weight_decay = true;  // SEM-6.4
  return d;
}

}  // namespace lockstep
