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
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conformance/program/program.h"
#include "conformance/program/trace.h"

namespace lockstep {

enum class OptionType { Number, Flag, Pair, Text };

struct OptionDescription {
  const char* name = "";  // the JSON key and the option's name in LibTorch: "lr", "betas"
  OptionType type = OptionType::Number;
  // The field of OptimizerOptions that holds it (the one matching `type`).
  std::optional<double> OptimizerOptions::*number = nullptr;
  std::optional<bool> OptimizerOptions::*flag = nullptr;
  std::optional<std::pair<double, double>> OptimizerOptions::*pair = nullptr;
  std::optional<std::string> OptimizerOptions::*text = nullptr;
  // A whole number (L-BFGS's max_iter): read and written as a JSON integer, validated as one.
  bool integer = false;
  // The option type's default. Without one (SGD's lr) a full set of options must give it.
  bool has_default = true;
  // The default is no value: the constructor computes one (L-BFGS's max_eval, SEM-16.1). Resolved options leave it
  // unset.
  bool default_computed = false;
  double default_number = 0;
  bool default_flag = false;
  std::pair<double, double> default_pair{0, 0};
  // A text option's default is no value (L-BFGS's line_search_fn: none); resolved options leave it unset.
  // Generator: valid values besides the default, and values the constructor rejects (invalid_option).
  std::vector<double> values;
  std::vector<std::pair<double, double>> pair_values;
  std::vector<double> invalid_values;
  std::vector<std::pair<double, double>> invalid_pair_values;
  std::vector<std::string> text_values;
  // Valid values whose results hang on the last bit of a rounding (RMSprop's alpha 0, SEM-14.3): the generator
  // does not pick them and the shrinker does not try them (a shrunk failure must not drift into one).
  std::vector<double> unstable_values;
  // An option LibTorch's C++ API lacks (maximize, SEM-20.2): only a run whose oracle has it (a driver oracle that
  // announces it) gives it a value. Resolved options leave it unset at its default, so a trace carries it only where
  // it is on and traces of programs without it are what they were; the generator draws it only when
  // GenOptions::maximize says so, never among an optimizer's other options.
  bool not_in_cpp_api = false;
};

// The operand magnitudes a state tensor's update combines, for its tolerance (tolerance.h): the gradient the step
// read (|g| + |L2 term|, per element; SGD's momentum buffer, Adam's first moment), its square (Adam's second
// moments), or the optimizer's own (StepScaleOutputs::state).
enum class StateScale { Gradient, GradientSquared, Own };

// A state tensor. Its name is the trace's JSON key, the tolerance quantity's name and the comparator's field.
struct StateTensorDescription {
  const char* name = "";
  std::optional<TensorValue> OptimizerStateObservation::*field = nullptr;
  StateScale scale = StateScale::Own;
};

// A count the state keeps besides `step` (L-BFGS's func_evals): an integer, compared exactly.
struct StateCountDescription {
  const char* name = "";
  std::optional<int64_t> OptimizerStateObservation::*field = nullptr;
};

// Tolerance: what one step of one parameter combined, per element (tolerance.h). The comparator supplies the
// expected side's records; `options` are the parameter's group's options, every field resolved.
struct StepScaleInputs {
  const OptimizerOptions& options;  // of the parameter's first group
  // Of every group that holds the parameter, in order (a parameter in two groups steps twice, SEM-7.4).
  const std::vector<OptimizerOptions>& groups;
  const ParamObservation& before;   // the parameter before the step (value, grad, state)
  const ParamObservation& after;    // after it
  const std::vector<double>& gradient;  // |g| + |L2 term| per element (0 for decoupled weight decay)
};
struct StepScaleOutputs {
  std::vector<double> update;                         // the parameter's update at operand magnitudes
  std::map<std::string, std::vector<double>> state;  // per state tensor of StateScale::Own: what it combined
};

// Error budget: one parameter's step in double, on one side's numbers (error_budget.h).
struct ShadowParam {
  std::vector<double> p, g;
  int64_t step = 0;
  std::map<std::string, std::vector<double>> state;  // per state tensor name; absent: not (yet) created
};

// A step formula variant: how a framework's step computes a value differently from the specification, named for
// expectations that accept it ({"accept": {"variant": NAME}}, conformance/compare/formula_variants.h), evaluated in
// double at the implementation's own inputs.
struct StepFormulaInputs {
  const std::string& field;               // "value", "grad", "exp_avg", ...
  size_t index;                           // the element
  const OptimizerOptions& options;        // the parameter's group's, as the implementation reported them
  const ParamObservation& before;         // the implementation's parameter before the step
  const ParamObservation& after;          // after it
  const ParamObservation* oracle_before;  // the oracle's before the step; null: none
};
struct StepFormulaVariant {
  const char* name = "";        // "adam.no_bias_correction"
  const char* applies_to = "";  // "step: parameter values"
  const char* description = "";
  std::optional<double> (*value)(const StepFormulaInputs& in) = nullptr;  // nullopt: not applicable there
};

// An optimizer whose step calls its closure more than once and moves the parameters between the calls (L-BFGS,
// SEMANTICS §16.3). The comparison (trace_comparison.cc) keeps one model per side, fed with that side's own
// observations only, and judges each move the side made against it: the move in double at that side's inputs (the
// error budget's centre) and a bound on the rounding that side's own arithmetic may add to it (the tolerance's scale).
struct ClosureCallSeen {
  // The optimizer's parameters in its one group's order, as they were after the call (values, grads).
  std::vector<const ParamObservation*> params;
  double loss = 0;  // what the call returned, as a number
};
struct PlannedMove {
  bool moves = false;  // false: the step ends without another move
  bool calls_again = false;  // after the move, the closure is called again
  // Per parameter name, per element: the signed move in double, and a bound on the side's rounding of p + move.
  std::map<std::string, std::vector<double>> move, error;
  // Non-empty where one of the step's decisions rested within that bound ("y · s = 1.2e-10 ± 3e-10 against 1e-10"):
  // the sides may legitimately go different ways from there (SEMANTICS §16.4).
  std::string undecided;
  // The decisions taken, in order ("descent", "pair kept", ...): where the sides' models agree on every decision, the
  // sides' structure (their calls) must agree too.
  std::string decisions;
  // Non-empty where the next call is one another API of the framework legitimately does not make (SEMANTICS §11):
  // the field path an API profile's rule may accept ("lbfgs zoom → ..."), where the implementation stops here.
  std::string api_parting;
};
// A situation (SEMANTICS §13) of one optimizer's programs: a constellation where APIs legitimately differ, named by API
// profiles (§11). Its name is a feature of program_features(), present where `in` holds for a program of this
// optimizer.
struct SituationDescription {
  const char* name = "";         // "lbfgs_group_max_eval_replaced"
  const char* description = "";  // one line, citing SEMANTICS
  bool (*in)(const Program& program) = nullptr;
};

class ClosureStepModel {
 public:
  virtual ~ClosureStepModel() = default;
  // A step begins, with the optimizer's one group's options as the side reported them (resolved).
  virtual void begin_step(const OptimizerOptions& options) = 0;
  // The step's closure returned (call 1, 2, ...): what the step does next.
  virtual PlannedMove after_call(const ClosureCallSeen& call) = 0;
};

// The random draws a description's generator hooks make (generate/gen_program.cc supplies them from its RapidCheck
// stream; the order of draws is part of a seed's programs, so a hook draws exactly as it always has).
class OptionDraws {
 public:
  virtual ~OptionDraws() = default;
  virtual int below(int n) = 0;  // uniform in [0, n)
  bool chance(int percent) { return below(100) < percent; }
  template <class T>
  const T& element(const std::vector<T>& items) {
    return items[static_cast<size_t>(below(static_cast<int>(items.size())))];
  }
  // A learning rate: one of `lr_values`, or now and then 0 (a group with lr 0 still counts its steps and updates
  // its state, SEM-5.3, SEM-6.3).
  double lr(const std::vector<double>& lr_values) { return chance(7) ? 0.0 : element(lr_values); }
};

struct OptimizerDescription {
  OptimizerKind kind = OptimizerKind::SGD;
  const char* name = "";       // "rmsprop"
  const char* semantics = "";  // "SEM-14"
  int since_protocol = 1;      // the driver protocol that brought it (capabilities.h: older drivers do not get it)
  std::vector<OptionDescription> options;  // lr first
  bool counts_steps = false;               // state.step (TorchEngine.DescriptionsMatchTheOracle checks the flags)
  std::vector<StateTensorDescription> state;
  std::vector<StateCountDescription> state_counts;
  bool state_from_construction = false;    // Adagrad: every parameter given to the constructor has state
  bool decoupled_weight_decay = false;     // AdamW: weight decay scales p; there is no L2 term in g
  // Whether a step bumps the parameters' version, so that a retained graph that saved one fails to
  // backpropagate after it (inplace_modified; SGD's does not, it updates p.data()).
  bool step_bumps_version = true;
  std::vector<double> lr_values;           // the generator's learning rates
  // Options a program may not give although the framework takes them, because the oracle would crash or run without
  // bound (L-BFGS's history_size 0 crashes LibTorch 1.13, SEM-16.1): {the option's name, why}. Null: none.
  std::optional<std::pair<std::string, std::string>> (*program_refuses)(const OptimizerOptions& given) = nullptr;
  // The same for a whole optimizer: {the JSON pointer below /optimizer, why}. Null: none. And the generator's repair of
  // a spec it drew into one the program model accepts (null: nothing to repair).
  std::optional<std::pair<std::string, std::string>> (*spec_refuses)(const OptimizerSpec& spec) = nullptr;
  void (*fit_spec)(OptimizerSpec& spec) = nullptr;
  // Whether the constructor rejects these defaults (each field resolved) with invalid_option.
  bool (*rejects)(const OptimizerOptions& resolved) = nullptr;
  // Generator (null: each option now and then at one of its `values`, gen_program.cc). `invalid_allowed`: the run
  // may generate options the constructor rejects (SEM-5.2, SEM-6.1), now and then one such.
  void (*generate_options)(OptionDraws& draw, bool for_defaults, bool invalid_allowed, OptimizerOptions& o) = nullptr;
  // set_options: the options of another draw `other` that a change carries besides lr and weight_decay (null: every
  // one that `other` sets).
  void (*carry_into_change)(OptionDraws& draw, const OptimizerOptions& other, OptimizerOptions& change) = nullptr;
  // Unsets what makes valid options invalid together once the scope unset some of them (SGD: nesterov without its
  // momentum), for a run that generates no invalid options. Null: nothing.
  void (*unset_invalid_combinations)(OptimizerOptions& o) = nullptr;
  // Known deviations of frameworks' steps that expectations may accept by name.
  std::vector<StepFormulaVariant> step_variants;
  // Situations of this optimizer's programs that API profiles name (features.h).
  std::vector<SituationDescription> situations;
  // Tolerance scales of one step.
  void (*step_scales)(const StepScaleInputs& in, StepScaleOutputs& out) = nullptr;
  // The step in double. Returns false where the step fails on this state (a state tensor the options need was not
  // created, SEM-14.2, SEM-15.2), having done to `s` what the engines do before failing (RMSprop: the count and
  // square_avg) and leaving the parameter unchanged; the engines' whole step stops there.
  bool (*step_in_double)(const OptimizerOptions& resolved, ShadowParam& s) = nullptr;
  // L-BFGS: the step's moves between closure calls, for the comparison (ClosureStepModel). Null: a step calls its
  // closure once, before the update (SEMANTICS §17.1), and step_scales and step_in_double describe it.
  std::unique_ptr<ClosureStepModel> (*closure_step_model)() = nullptr;
  // The step fails without a closure, and the optimizer takes one group only (L-BFGS, SEM-16.1, SEM-16.2): the
  // generator gives every step a closure and builds one group.
  bool needs_closure = false;
  bool one_group = false;
  // The most closure calls one step makes under these options (resolved; program_cost.h). Null: one (§17.1).
  int64_t (*closure_calls)(const OptimizerOptions& resolved) = nullptr;
  // Optional refinements of the error budget for a parameter the step updated once: its new value computed from
  // one side's own observed new state (what that side's engine used) rather than from the shadow's, and state
  // tensors likewise (a max that reads the new second moment in place). Null: the shadow's values.
  std::optional<std::vector<double>> (*value_from_observed_state)(const OptimizerOptions& resolved,
                                                                  const ParamObservation& before,
                                                                  const ParamObservation& after) = nullptr;
  void (*state_from_observed_state)(const ParamObservation& before, const ParamObservation& after,
                                    std::map<std::string, std::vector<double>>& state) = nullptr;
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
// Every state count of any optimizer, in first-described order.
const std::vector<StateCountDescription>& all_state_counts();

bool is_set(const OptionDescription& d, const OptimizerOptions& o);
void unset(const OptionDescription& d, OptimizerOptions& o);
// Copies d's field from `from` to `to` when `from` sets it.
void copy_if_set(const OptionDescription& d, const OptimizerOptions& from, OptimizerOptions& to);
// Sets d's field to the option type's default (nothing when it has none).
void set_default(const OptionDescription& d, OptimizerOptions& o);
// Whether the set field equals the option type's default (bitwise; an unset field is not).
bool is_default(const OptionDescription& d, const OptimizerOptions& o);
// "0.9", "true", "(0.9, 0.999)", "strong_wolfe"
std::string option_text(const OptionDescription& d, const OptimizerOptions& o);

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
// SEMANTICS §20: maximize, an option of every optimizer but L-BFGS, that the C++ API lacks.
inline OptionDescription maximize_option() {
  OptionDescription d = flag_option("maximize", &OptimizerOptions::maximize, false);
  d.not_in_cpp_api = true;
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

inline OptionDescription text_option(const char* name, std::optional<std::string> OptimizerOptions::*field,
                                     std::vector<std::string> values) {
  OptionDescription d;
  d.name = name;
  d.type = OptionType::Text;
  d.text = field;
  d.text_values = std::move(values);
  return d;
}

// Per-optimizer descriptions (optimizer_<name>.cc).
OptimizerDescription sgd_description();
OptimizerDescription adam_description();
OptimizerDescription adamw_description();
OptimizerDescription rmsprop_description();
OptimizerDescription adagrad_description();
OptimizerDescription lbfgs_description();

}  // namespace lockstep
