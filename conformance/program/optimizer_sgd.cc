// SGD as data (SEMANTICS §5). Its arithmetic for the tolerance and the error budget stays in comparator.cc
// and error_budget.cc, written before descriptions existed.
#include "conformance/program/optimizer_descriptions.h"

namespace lockstep {

OptimizerDescription sgd_description() {
  OptimizerDescription d;
  d.kind = OptimizerKind::SGD;
  d.name = "sgd";
  d.semantics = "SEM-5";
  OptionDescription lr = number_option("lr", &OptimizerOptions::lr, 0, {0.1, 0.01, 0.5, 1.0, 0.05, 0.25, 0.001, 2.0},
                                       {-0.1});
  lr.has_default = false;  // SEM-5.1: SGD has no default learning rate
  d.options = {lr,
               number_option("momentum", &OptimizerOptions::momentum, 0, {0.9, 0.5, 0.99, 0.0}, {-0.5}),
               number_option("dampening", &OptimizerOptions::dampening, 0, {0.0, 0.1, 0.5}),
               number_option("weight_decay", &OptimizerOptions::weight_decay, 0, {0.0, 0.01, 0.1, 0.5}, {-0.01}),
               flag_option("nesterov", &OptimizerOptions::nesterov, false)};
  d.state = {{"momentum_buffer", &OptimizerStateObservation::momentum_buffer}};
  d.lr_values = d.options[0].values;
  d.step_bumps_version = false;
  d.rejects = [](const OptimizerOptions& o) {  // SEM-5.2
    const double momentum = o.momentum.value_or(0), dampening = o.dampening.value_or(0);
    return !(o.lr.value_or(0) >= 0) || !(momentum >= 0) || !(o.weight_decay.value_or(0) >= 0) ||
           (o.nesterov.value_or(false) && (momentum <= 0 || dampening != 0));
  };
  return d;
}

}  // namespace lockstep
