// Random conformance programs (RapidCheck generators) for property tests and `lockstep run`.
//
// Every generated Program passes validate() by construction: expressions are generated *shape-directed*
// (ask for an expression of a dtype and shape, get one), actions from a small model of the training loop
// (forward / backward / zero_grad / step, with the odd orders and the error cases of SEMANTICS §2-§7 mixed
// in). Programs shrink with a domain-aware shrinker (shrink.h): fewer actions, simpler expressions, smaller
// shapes, simpler numbers, and every shrink is repaired and re-validated, so it is a valid program too.
//
// Example, in a RapidCheck property:
//   RC_GTEST_PROP(Lockstep, Agrees, ()) {
//     const lockstep::Program p = *lockstep::gen_program({});
//     ...
//   }
// Example, a reproducible stream (the i-th program is a pure function of (seed, i)):
//   lockstep::RandomPrograms programs(/*seed=*/42, lockstep::GenOptions{});
//   rc::Shrinkable<lockstep::Program> s = programs.next();
//   const lockstep::Program& p = s.value();
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <vector>

#include <rapidcheck.h>

#include "conformance/program/feature_scope.h"
#include "conformance/program/program.h"

namespace lockstep {

struct GenOptions {
  // NaN and +-Inf among parameter values, constants and explicit gradients (SEMANTICS §9 compares them).
  bool special_values = false;
  // RandomPrograms only: besides, program i allows them when i % n == n - 1 (every n-th program; 0: none).
  // `lockstep run` and `lockstep mutants` use 4 by default, so a default run meets NaN, +-Inf and the
  // arithmetic on them without a flag.
  int special_values_every = 0;
  // RapidCheck size cap, 0..100 (Debian's snapshot misbehaves above 100). A program's size scales the
  // number of actions, parameters and the expression depth.
  int max_size = 50;
  // Mix in invalid optimizer options, duplicate parameter groups, backward through a freed graph, ...
  // (errors are part of the trace, SEMANTICS §8).
  bool error_cases = true;
  // Upper bounds at the largest size.
  int max_actions = 48;
  int max_params = 6;
  int max_expr_depth = 4;
  // Restrict the optimizer; unset: any described optimizer (SGD, Adam, AdamW, RMSprop, Adagrad) or (rarely) none.
  std::optional<OptimizerKind> optimizer;
  // What programs may use (feature_scope.h); null: everything. The generator steers away from excluded
  // features at every choice; RandomPrograms also draws again (up to 1000 times) when a whole program is
  // out of scope, and keeps its shrinks within the scope.
  std::shared_ptr<const FeatureScope> scope;
  // With a scope: an element-wise op is drawn among the ops the scope allows, not among all of them and then
  // drawn again when out of scope, so a scope of a few ops exercises each of them often (`lockstep run
  // --focus`). Changes the programs of a seed; without a scope it changes nothing.
  bool focus = false;
  // SEMANTICS §20: maximize, on the optimizers that have it where the scope allows it, in one program of 4 with such
  // an optimizer; drawn from a stream of its own, so the other programs of a seed stay as they are. Only for a run
  // whose oracle has maximize: LibTorch's C++ API has not (SEM-20.2), so `lockstep run --oracle DRIVER` sets it
  // when the driver announces it.
  bool maximize = false;
};

// --- Components ------------------------------------------------------------------------------------------

rc::Gen<DType> gen_dtype();

// 0-d, 1-D or 2-D; dims 1..4 mostly, occasionally up to 8.
rc::Gen<Shape> gen_shape();

// A number for a tensor of `dtype` (float32 values are exactly representable as float). Built from
// integers so it shrinks toward 0, small integers, then halves and quarters: small integers, k/4,
// mantissa * 2^e magnitudes, and rarely tiny (near the smallest normal) or large values; NaN and +-Inf
// only with options.special_values. Independent of the RapidCheck size.
rc::Gen<double> gen_value(DType dtype, const GenOptions& options = {});

// A tensor of the given dtype and shape filled by gen_value.
rc::Gen<TensorValue> gen_tensor(DType dtype, Shape shape, const GenOptions& options = {});

// An expression of exactly `dtype` and `shape` over `params` (names looked up there; an expression may use
// a parameter several times, weight tying, SEMANTICS §2.6) and constants. Uses every Op of program.h.
// When no parameter fits a leaf, a constant is used.
rc::Gen<ExprPtr> gen_expr(DType dtype, Shape shape, std::vector<ParamSpec> params,
                          const GenOptions& options = {});

// Optimizer options of `kind`: either constructor defaults (for_defaults) or a group's options (SGD groups
// always carry lr). With options.error_cases, occasionally invalid (SEMANTICS §5.2, §6.1).
rc::Gen<OptimizerOptions> gen_optimizer_options(OptimizerKind kind, bool for_defaults,
                                                const GenOptions& options = {});

// --- Programs --------------------------------------------------------------------------------------------

// A whole program: parameters (some tied, some unused), a loss, an optimizer with groups, and a sequence of
// actions. The RapidCheck size (clamped to options.max_size) scales it. Shrinks via shrink.h.
rc::Gen<Program> gen_program(const GenOptions& options = {});

// A reproducible stream of programs for the CLI: program i uses rc::Random(mix(seed, i)) and the size
// i mod (max_size + 1), so it is a pure function of (seed, i) (and the scope: a program out of scope is
// drawn again from rc::Random(mix(mix(seed, i), attempt)); with no scope, attempt 0 is always taken).
// at() throws std::runtime_error when 1000 attempts give no program within the scope. One program in 8 (by a hash of
// (seed, i), not a draw) has its first step take the forward and backward before it as its closure (SEMANTICS §17),
// unless the scope excludes "closure"; its shrinks keep the rewrite.
class RandomPrograms {
 public:
  RandomPrograms(uint64_t seed, GenOptions options);

  rc::Shrinkable<Program> next();                 // program index(), then advances
  rc::Shrinkable<Program> at(uint64_t i) const;   // program i, without advancing
  uint64_t index() const { return index_; }
  int size_of(uint64_t i) const;                  // the RapidCheck size program i is generated with
  bool special_values_at(uint64_t i) const;       // whether program i may hold NaN and +-Inf

 private:
  rc::Shrinkable<Program> at_unfolded(uint64_t i) const;  // program i before a step takes a closure

  uint64_t seed_;
  GenOptions options_;
  uint64_t index_ = 0;
};

// How RapidCheck prints a counterexample program: its JSON (program_json.h), found by argument-dependent
// lookup from rc::show.
void showValue(const Program& program, std::ostream& os);

}  // namespace lockstep
