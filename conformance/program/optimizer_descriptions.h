// Every optimizer lockstep knows, described once as data (SEMANTICS §5, §6, §14, §15).
//
// A description says what an optimizer is from the outside: its name, its options (JSON key, type, the
// option type's default, values the generator picks, values the constructor rejects), whether it counts
// steps, which state tensors it keeps, and two pieces of its arithmetic that the comparison needs: the
// operand magnitudes a step combines (the tolerance's scale, tolerance.h) and the step evaluated in double
// (the error budget, error_budget.h). JSON reading and writing, validation, the schema, the generator, the
// shrinker, the comparator, the trace table and the engines' option checks all read these descriptions, so
// adding an optimizer means: its fields in OptimizerOptions/OptimizerStateObservation, one description
// file (optimizer_<name>.cc here), impl's step, the oracle's glue, named cases and docs.
//
// Example:
//   const OptimizerDescription& d = describe(OptimizerKind::RMSprop);
//   for (const OptionDescription& o : d.options)
//     if (is_set(o, options)) std::cout << o.name << " = " << option_text(o, options) << "\n";
//   std::optional<OptimizerKind> k = optimizer_from_name("adagrad");
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conformance/program/program.h"
#include "conformance/program/trace.h"

namespace lockstep {

enum class OptionType { Number, Flag, Pair };

struct OptionDescription {
  const char* name = "";  // the JSON key and the option's name in LibTorch: "lr", "betas"
  OptionType type = OptionType::Number;
  // The field of OptimizerOptions that holds it (the one matching `type`).
  std::optional<double> OptimizerOptions::*number = nullptr;
  std::optional<bool> OptimizerOptions::*flag = nullptr;
  std::optional<std::pair<double, double>> OptimizerOptions::*pair = nullptr;
  // The option type's default. Without one (SGD's lr) a full set of options must give it.
  bool has_default = true;
  double default_number = 0;
  bool default_flag = false;
  std::pair<double, double> default_pair{0, 0};
  // Generator: valid values besides the default, and values the constructor rejects (invalid_option).
  std::vector<double> values;
  std::vector<std::pair<double, double>> pair_values;
  std::vector<double> invalid_values;
  std::vector<std::pair<double, double>> invalid_pair_values;
  // Valid values whose results hang on the last bit of a rounding (RMSprop's alpha 0, SEM-14.3): the generator
  // does not pick them and the shrinker does not try them (a shrunk failure must not drift into one).
  std::vector<double> unstable_values;
};

// A state tensor. Its name is the trace's JSON key, the tolerance quantity's name and the comparator's field.
struct StateTensorDescription {
  const char* name = "";
  std::optional<TensorValue> OptimizerStateObservation::*field = nullptr;
};

// Tolerance: what one step of one parameter combined, per element (tolerance.h). The comparator supplies the
// expected side's records; `options` are the parameter's group's options, every field resolved.
struct StepScaleInputs {
  const OptimizerOptions& options;
  const ParamObservation& before;   // the parameter before the step (value, grad, state)
  const ParamObservation& after;    // after it
  const std::vector<double>& gradient;  // |g| + |L2 term| per element (0 for decoupled weight decay)
};
struct StepScaleOutputs {
  std::vector<double> update;                         // the parameter's update at operand magnitudes
  std::map<std::string, std::vector<double>> state;  // per state tensor name: the operands it combined
};

// Error budget: one parameter's step in double, on one side's numbers (error_budget.h).
struct ShadowParam {
  std::vector<double> p, g;
  int64_t step = 0;
  std::map<std::string, std::vector<double>> state;  // per state tensor name; absent: not (yet) created
};

struct OptimizerDescription {
  OptimizerKind kind = OptimizerKind::SGD;
  const char* name = "";       // "rmsprop"
  const char* semantics = "";  // "SEM-14"
  std::vector<OptionDescription> options;  // lr first
  bool counts_steps = false;               // state.step (TorchEngine.DescriptionsMatchTheOracle checks the flags)
  std::vector<StateTensorDescription> state;
  bool state_from_construction = false;    // Adagrad: every parameter given to the constructor has state
  bool decoupled_weight_decay = false;     // AdamW: weight decay scales p; there is no L2 term in g
  // Whether a step bumps the parameters' version, so that a retained graph that saved one fails to
  // backpropagate after it (inplace_modified; SGD's does not, it updates p.data()).
  bool step_bumps_version = true;
  std::vector<double> lr_values;           // the generator's learning rates
  // Whether the constructor rejects these defaults (each field resolved) with invalid_option.
  bool (*rejects)(const OptimizerOptions& resolved) = nullptr;
  // Tolerance scales of one step (null: the comparator's own rules for SGD and the Adam family).
  void (*step_scales)(const StepScaleInputs& in, StepScaleOutputs& out) = nullptr;
  // The step in double (null: error_budget.cc's own SGD and Adam family). Returns false where the step fails on
  // this state (a state tensor the options need was not created, SEM-14.2, SEM-15.2), having done to `s` what the
  // engines do before failing (RMSprop: the count and square_avg) and leaving the parameter unchanged; the engines'
  // whole step stops there.
  bool (*step_in_double)(const OptimizerOptions& resolved, ShadowParam& s) = nullptr;
};

// Every description, in OptimizerKind order.
const std::vector<OptimizerDescription>& optimizer_descriptions();
const OptimizerDescription& describe(OptimizerKind kind);
std::optional<OptimizerKind> optimizer_from_name(const std::string& name);
std::string optimizer_names_joined(const char* last_separator = " or ");  // "sgd, adam, ... or adagrad"

// The option named `name` of `kind`; null when the optimizer has none.
const OptionDescription* find_option(OptimizerKind kind, const std::string& name);
// Every option name of any optimizer, in first-described order (JSON reading and writing).
const std::vector<std::string>& all_option_names();
// The option `name` as the first optimizer that has it describes it (its field and type are the same in
// every optimizer that has it); `name` must be one of all_option_names().
const OptionDescription& any_option(const std::string& name);
// Every state tensor name of any optimizer, in first-described order.
const std::vector<StateTensorDescription>& all_state_tensors();

bool is_set(const OptionDescription& d, const OptimizerOptions& o);
void unset(const OptionDescription& d, OptimizerOptions& o);
// Copies d's field from `from` to `to` when `from` sets it.
void copy_if_set(const OptionDescription& d, const OptimizerOptions& from, OptimizerOptions& to);
// Sets d's field to the option type's default (nothing when it has none).
void set_default(const OptionDescription& d, OptimizerOptions& o);
// Whether the set field equals the option type's default (bitwise; an unset field is not).
bool is_default(const OptionDescription& d, const OptimizerOptions& o);
std::string option_text(const OptionDescription& d, const OptimizerOptions& o);  // "0.9", "true", "(0.9, 0.999)"

// The options of `kind` with every field set: the option type's defaults under the given fields.
OptimizerOptions resolved_options(OptimizerKind kind, const OptimizerOptions& given);
// The names of set fields that are not options of `kind`, in description order of all_option_names().
std::vector<std::string> foreign_options(OptimizerKind kind, const OptimizerOptions& o);

// Builders for the description files.
inline OptionDescription number_option(const char* name, std::optional<double> OptimizerOptions::*field,
                                       double default_value, std::vector<double> values,
                                       std::vector<double> invalid_values = {}) {
  OptionDescription d;
  d.name = name;
  d.number = field;
  d.default_number = default_value;
  d.values = std::move(values);
  d.invalid_values = std::move(invalid_values);
  return d;
}
inline OptionDescription flag_option(const char* name, std::optional<bool> OptimizerOptions::*field,
                                     bool default_value) {
  OptionDescription d;
  d.name = name;
  d.type = OptionType::Flag;
  d.flag = field;
  d.default_flag = default_value;
  return d;
}
inline OptionDescription pair_option(const char* name, std::optional<std::pair<double, double>> OptimizerOptions::*field,
                                     std::pair<double, double> default_value,
                                     std::vector<std::pair<double, double>> values,
                                     std::vector<std::pair<double, double>> invalid_values = {}) {
  OptionDescription d;
  d.name = name;
  d.type = OptionType::Pair;
  d.pair = field;
  d.default_pair = default_value;
  d.pair_values = std::move(values);
  d.invalid_pair_values = std::move(invalid_values);
  return d;
}

// Per-optimizer descriptions (optimizer_<name>.cc).
OptimizerDescription sgd_description();
OptimizerDescription adam_description();
OptimizerDescription adamw_description();
OptimizerDescription rmsprop_description();
OptimizerDescription adagrad_description();

}  // namespace lockstep
