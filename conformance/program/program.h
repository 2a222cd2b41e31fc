// The program model: what a conformance program is.
//
// A program declares parameters (name, dtype, shape, initial values), a loss expression over them,
// an optional optimizer, and a sequence of training-step actions. The interpreter (interpreter.h) runs a
// program on any Engine (engine.h) and records a Trace (trace.h) after every action.
//
// Example (the JSON form is documented in program_json.h and fixtures/README.md):
//
//   Program p;
//   p.params.push_back({"x", DType::Float64, {3}, {1, 2, 3}});
//   p.loss = sum(mul(param("x"), param("x")));          // y = (x*x).sum()
//   p.actions = {Action::forward(), Action::backward()};
//
// Everything here is plain data: no engine, no torch. validate() checks a program statically (names,
// shapes, dtypes, limits) and infer_shape() gives the dtype and shape of an expression, so that engines may
// assume a validated program is well-formed and only the semantics under test can fail at run time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lockstep {

enum class DType { Float32, Float64 };

const char* dtype_name(DType d);  // "float32" / "float64"
double unit_roundoff(DType d);    // 2^-24 / 2^-53: the relative error of one rounding to nearest

using Shape = std::vector<int64_t>;  // {} is a 0-d scalar

int64_t numel(const Shape& shape);  // 1 for {}

// A dense tensor value. Values are held as double; a float32 tensor holds values exactly representable as
// float (engines convert at their boundary). Row-major.
struct TensorValue {
  DType dtype = DType::Float32;
  Shape shape;
  std::vector<double> data;

  bool operator==(const TensorValue& o) const;  // bitwise on the data (NaN == NaN, -0 != +0)
};

// ---------------------------------------------------------------------------------------------------------
// Loss expressions (SEMANTICS §2). Binary element-wise ops take two operands of the same dtype and either
// the same shape or one 0-d operand (broadcast). Reductions reduce everything to a 0-d result.

enum class Op {
  Param,         // name                                   -> the parameter itself (a leaf)
  Const,         // constant                               -> a constant tensor (requires no grad)
  Add,           // a + b
  Sub,           // a - b
  Mul,           // a * b (tensor * tensor; saves its operands, SEMANTICS §2.5)
  Div,           // a / b
  Neg,           // -a
  MulScalar,     // a * scalar (a Python/C++ scalar: saves no tensor, §2.5)
  Square,        // a * a as torch::square
  Pow,           // a ^ scalar
  Exp, Log, Tanh, Sigmoid, Relu, Abs,
  Softplus,      // log(1 + e^a); a itself where a > 20 (SEMANTICS §2.12)
  Matmul,        // (n,k) @ (k,m) -> (n,m)
  Sum,           // -> 0-d
  Mean,          // -> 0-d
  MseLoss,       // mean((a-b)^2) -> 0-d, same shapes
  CrossEntropy,  // logits (N,C), class-index targets `indices` (N) -> 0-d mean
  Linear,        // x (N,in), W (out,in) [, b (out)] -> (N,out)  = x W^T + b
  Embedding,     // W (num,dim), `indices` (L) -> (L,dim); repeated indices accumulate in backward
};

const char* op_name(Op op);                      // "add", "mse_loss", ...
std::optional<Op> op_from_name(const std::string& name);

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
  Op op = Op::Const;
  std::vector<ExprPtr> args;
  std::string name;               // Param
  TensorValue constant;           // Const
  double scalar = 0;              // MulScalar factor, Pow exponent
  std::vector<int64_t> indices;   // CrossEntropy targets, Embedding rows
};

// Builders, for tests and generators.
ExprPtr param(const std::string& name);
ExprPtr constant(TensorValue value);
ExprPtr unary(Op op, ExprPtr a);
ExprPtr binary(Op op, ExprPtr a, ExprPtr b);
ExprPtr mul_scalar(ExprPtr a, double s);
ExprPtr pow_scalar(ExprPtr a, double exponent);
ExprPtr sum(ExprPtr a);
ExprPtr mean(ExprPtr a);
ExprPtr mul(ExprPtr a, ExprPtr b);
ExprPtr add(ExprPtr a, ExprPtr b);
ExprPtr cross_entropy(ExprPtr logits, std::vector<int64_t> targets);
ExprPtr linear(ExprPtr x, ExprPtr w, ExprPtr b = nullptr);
ExprPtr embedding(ExprPtr w, std::vector<int64_t> indices);

// ---------------------------------------------------------------------------------------------------------
// Optimizers (SEMANTICS §5-7, §14, §15). What each one is (its options, defaults, state) is described as data
// in optimizer_descriptions.h; this is only the storage.

enum class OptimizerKind { SGD, Adam, AdamW, RMSprop, Adagrad, LBFGS };
const char* optimizer_name(OptimizerKind k);  // "sgd", "adam", "adamw", "rmsprop", "adagrad", "lbfgs"

// Options of one group, or the optimizer's defaults. An unset field means "not given": for the defaults,
// the option type's own default applies (SGD has none for lr: it must be given); for a group's options
// under the 1.13 rule (SEMANTICS §7.1) it also means the option type's default, not the optimizer's.
// For set_options, only the set fields change.
// Which fields belong to which optimizer: optimizer_descriptions.h.
struct OptimizerOptions {
  std::optional<double> lr;
  std::optional<double> momentum;             // SGD, RMSprop
  std::optional<double> dampening;            // SGD
  std::optional<bool> nesterov;               // SGD
  std::optional<double> weight_decay;         // all
  std::optional<std::pair<double, double>> betas;  // Adam, AdamW
  std::optional<double> eps;                  // Adam, AdamW, RMSprop, Adagrad
  std::optional<bool> amsgrad;                // Adam, AdamW
  std::optional<double> alpha;                // RMSprop
  std::optional<bool> centered;               // RMSprop
  std::optional<double> lr_decay;             // Adagrad
  std::optional<double> initial_accumulator_value;  // Adagrad
  std::optional<bool> maximize;               // SGD, Adam, AdamW, RMSprop, Adagrad (SEMANTICS §20)
  // L-BFGS (SEMANTICS §16); the counts are integers (OptionDescription::integer).
  std::optional<double> max_iter, max_eval, history_size;
  std::optional<double> tolerance_grad, tolerance_change;
  std::optional<std::string> line_search_fn;  // unset: none; "strong_wolfe" (SEM-16.6)

  bool operator==(const OptimizerOptions& o) const;
};

struct ParamGroupSpec {
  std::vector<std::string> params;          // parameter names, in order; a name may repeat (§7.4)
  std::optional<OptimizerOptions> options;  // absent: a copy of the optimizer's defaults
};

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::SGD;
  OptimizerOptions defaults;
  std::vector<ParamGroupSpec> groups;  // constructing from a list of tensors = one group without options
};

// ---------------------------------------------------------------------------------------------------------
// Actions. One record of the trace follows each.

enum class ActionKind {
  Forward,        // evaluate `loss` (or the program's loss) and hold the output; under no_grad if asked
  Backward,       // backpropagate the held output
  ZeroGrad,       // optimizer.zero_grad(set_to_none=...), or zero_grad(): the framework default (SEM-4, SEM-12.1)
  SetGradNone,    // param.grad = None for one parameter
  HoldGrad,       // keep a handle to param's current grad under `handle` (observed after every action)
  Step,           // optimizer.step(), or optimizer.step(closure) with a `closure` (SEMANTICS §17)
  SetOptions,     // change the set fields of group `group`'s options (SEMANTICS §5.4, §7.5)
  AddParamGroup,  // optimizer.add_param_group(new_group)
  ClipGradNorm,   // clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite); returns the total norm (§18)
  ClipGradValue,  // clip_grad_value_(params, clip_value) (SEMANTICS §18.5)
  StateDict,      // save the optimizer's state and group options under `checkpoint` (SEMANTICS §19.5)
  LoadStateDict,  // load `checkpoint` into the optimizer, or into a freshly constructed one (`fresh`, SEM-19.5)
};

const char* action_name(ActionKind k);  // "forward", "backward", "zero_grad", "set_grad_none", ...
std::optional<ActionKind> action_from_name(const std::string& name);

struct Action {
  ActionKind kind = ActionKind::Forward;
  // Forward
  ExprPtr loss;              // null: the program's loss
  bool no_grad = false;
  // Backward (SEMANTICS §2.5: retain_graph defaults to create_graph)
  std::optional<bool> retain_graph;
  bool create_graph = false;
  std::optional<std::vector<double>> gradient;  // explicit gradient, shaped and typed like the output
  // ZeroGrad: true/false explicit; unset: the framework's default (1.x: false, >= 2.0: true; SEM-12.1)
  std::optional<bool> set_to_none;
  // SetGradNone, HoldGrad
  std::string param;
  std::string handle;        // HoldGrad
  // SetOptions
  int group = 0;
  OptimizerOptions options;
  // AddParamGroup
  ParamGroupSpec new_group;
  // ClipGradNorm, ClipGradValue (SEMANTICS §18): the parameters passed, in order; a name may repeat (its grad is then
  // counted and scaled twice, §18.4). norm_type is 1, 2 or +inf (the norms lockstep models).
  std::vector<std::string> params;
  double max_norm = 1;
  double norm_type = 2;
  bool error_if_nonfinite = false;
  double clip_value = 1;
  // StateDict, LoadStateDict (SEMANTICS §19): the checkpoint's name; a load names one an earlier state_dict saved.
  // `fresh`: the load first replaces the optimizer with one constructed from the program's optimizer spec, as a
  // resumed run does.
  std::string checkpoint;
  bool fresh = false;
  // Step: the closure's actions, run in order at every call the step makes (SEMANTICS §17.2); unset: step()
  // without a closure. validate() allows forward, backward, zero_grad, set_grad_none and hold_grad, at least one
  // forward among them.
  std::optional<std::vector<Action>> closure;

  // Plain actions of one kind, all else default (tests, generators): p.actions = {Action::forward(), ...}.
  static Action of(ActionKind kind) {
    Action a;
    a.kind = kind;
    return a;
  }
  static Action forward() { return of(ActionKind::Forward); }
  static Action backward() { return of(ActionKind::Backward); }
  static Action step() { return of(ActionKind::Step); }
};

struct ParamSpec {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  std::vector<double> values;  // numel(shape) values, row-major
};

struct Program {
  std::vector<ParamSpec> params;
  ExprPtr loss;                          // may be null when every forward names its own loss
  std::optional<OptimizerSpec> optimizer;
  std::vector<Action> actions;
};

// ---------------------------------------------------------------------------------------------------------
// Static checks.

// Limits on what a program may ask for; bigger is rejected before it runs, not attempted. Chosen so that any
// program within them runs in bounded memory and time (issue 14); the memory each bounds was measured through
// `lockstep run` and the impl driver (docs/programs-and-limits.md "Limits", tools/check_limits.py).
struct ProgramLimits {
  int64_t max_elements_per_tensor = 1 << 20;  // 8 MiB of doubles per tensor
  int max_rank = 2;
  int max_expr_depth = 64;                    // recursion in every engine and reader
  int max_params = 256;
  int max_actions = 10000;
  int max_name_length = 256;                  // parameter and handle names (a name is observed in every record)
  int max_expr_nodes = 4096;                  // per loss expression (generated ones have at most about 100)
  int max_group_entries = 1024;               // parameters listed in all param groups together (a name may repeat)
  // The whole trace, every record together (program_cost.h): bounds a trace's memory in every form it takes.
  int64_t max_observed_values = int64_t{1} << 22;
  // Element operations of the whole run (program_cost.h): bounds time and the tensors a run allocates (a forward
  // keeps at most a quarter of its count alive for its backward: 2^25 elements, 256 MiB of float64, per engine).
  int64_t max_arithmetic = int64_t{1} << 27;
};

// A program that is not well-formed. `path` is a JSON pointer into the program document
// (e.g. "/loss/args/1/op"); the JSON reader prefixes the file name when it reports it.
class ProgramError : public std::runtime_error {
 public:
  ProgramError(std::string path, const std::string& message)
      : std::runtime_error(message), path_(std::move(path)) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct TypedShape {
  DType dtype;
  Shape shape;
};
std::string shape_string(const Shape& s);         // "[2, 3]", as the static checks' messages print it
std::string typed_string(const TypedShape& t);    // "float32 [2, 3]"

// The dtype and shape of `e` given the program's parameters; throws ProgramError at `path` (and below)
// when an operand's shape or dtype does not fit its op, a name is unknown or an index is out of range.
TypedShape infer_shape(const Expr& e, const std::vector<ParamSpec>& params, const std::string& path,
                       const ProgramLimits& limits = {});

// Checks the whole program; throws ProgramError naming the first problem.
// Whether the optimizer's groups and those add_param_group adds list a parameter more than once, in one group or in
// two (SEM-7.4).
bool lists_a_param_twice(const Program& p);

// The checkpoint rules of validate() alone (SEMANTICS §19.5): a load names a checkpoint an earlier state_dict saved,
// and lockstep does not run what LibTorch 1.13 crashes on or what it does not model (a load where the groups list a
// parameter twice, or list other parameters at the saved positions; Adagrad's state_dict after add_param_group;
// either action under L-BFGS). Throws ProgramError at "/actions/N".
void check_checkpoints(const Program& p);

void validate(const Program& p, const ProgramLimits& limits = {});

// The program's actions in the order they run when every closure is called once (SEMANTICS §17.1): a step's closure
// actions, then the step without its closure. For static looks at what a program does (coverage, areas).
std::vector<Action> actions_as_run(const Program& p);

}  // namespace lockstep
