// Shrinking conformance programs: turn a failing random program into a small one that still fails.
//
// program_shrinks() lists simpler variants of a program, most aggressive first: drop chunks of actions, drop
// the optimizer, drop unused parameters, replace a loss sub-expression by a descendant of the same dtype and
// shape, clear action flags and options, shrink every dimension of one size n to 1 or n-1 across the whole
// program, and shrink numbers toward 0, 1, small integers and short mantissas. Every variant goes through
// repair_program() (drops actions that name missing parameters, refits explicit gradients, clamps indices,
// rounds float32 values) and is kept only if validate() accepts it, so every shrink is a valid program.
//
// Example:
//   rc::Shrinkable<Program> s = RandomPrograms(7, {}).next();
//   ShrinkStats stats;
//   Program small = shrink_failure(s, [&](const Program& p) { return disagrees(p); }, &stats,
//                                  std::chrono::seconds(10));
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <rapidcheck.h>

#include "conformance/program/program.h"

namespace lockstep {

// Makes a program that a shrink step may have broken valid again where that is a local fix; returns
// false when it could not (the caller then drops the candidate). Idempotent.
bool repair_program(Program& program);

// Simpler variants of `program`, each valid (repaired and validated), lazily.
rc::Seq<Program> program_shrinks(const Program& program);

// `program` with program_shrinks as its shrink tree (recursively).
rc::Shrinkable<Program> shrinkable_program(Program program);

// Simpler variants of one expression (each of the same dtype and shape when `e` is well-formed over
// `params`): a descendant of the same type in its place, a parameter replaced by a constant, a bias
// dropped, simpler scalars, constants and indices; recursively into the operands.
std::vector<ExprPtr> simpler_exprs(const ExprPtr& e, const std::vector<ParamSpec>& params);

// Simpler optimizer options: a field unset, a number simplified.
std::vector<OptimizerOptions> simpler_options(const OptimizerOptions& options);

// Simpler-first candidates for one number (0, 1, |x|, trunc, halves, shorter mantissa, exponent toward 0),
// each strictly simpler than x by number_complexity; float32-representable when float32.
std::vector<double> simpler_numbers(double x, bool float32);
// A well-founded order on numbers: 0 < 1 < short mantissas < long mantissas < ... < Inf < NaN.
uint64_t number_complexity(double x);

// How big a program is, for reports.
struct ProgramSize {
  int actions = 0;
  int params = 0;
  int expr_nodes = 0;   // program loss and every forward's own loss
  int64_t elements = 0; // parameter and constant elements
};
ProgramSize program_size(const Program& program);
std::string describe(const ProgramSize& size);  // "3 actions, 1 params, 4 nodes, 6 elements"

struct ShrinkStats {
  int steps = 0;   // accepted shrinks
  int tries = 0;   // candidates evaluated (still_fails calls)
  std::chrono::milliseconds time{0};
  bool budget_exhausted = false;  // stopped by the time budget rather than a local minimum
};

// Greedy shrinking: walk `failing.shrinks()`, take the first candidate for which still_fails() is true,
// repeat from its shrinks until none fails or `budget` is spent. Returns the smallest failing program found
// (failing.value() when nothing smaller fails). Exceptions from still_fails count as "fails".
Program shrink_failure(const rc::Shrinkable<Program>& failing,
                       const std::function<bool(const Program&)>& still_fails, ShrinkStats* stats,
                       std::chrono::milliseconds budget);

}  // namespace lockstep
