// tools/mutants/mutant_engines.h: the three kinds of mutant (mutants.h), internal to tools/mutants/.
//
// Each kind is a function of the mutant: mutants.cc's make_mutant_engine asks them in turn.
//
// Example:
//   if (std::optional<impl::Tensor> t = mutants_detail::apply_op_mutant(Mutant::ReluNanToZero, expr, operands))
//     return *t;                                        // the mutated relu; otherwise impl's own op
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "conformance/program/program.h"
#include "impl/engine_adapter.h"
#include "impl/optimizer.h"
#include "impl/tensor.h"
#include "tools/mutants/mutants.h"

namespace lockstep::mutants_detail {

// op_mutants.cc: the result of the op `e` (e.op is never Param or Const) on its evaluated `operands` under op
// mutant `m`, built through impl's autograd API (impl/autograd.h, record) so that backward, create_graph,
// retain_graph and saved-tensor versions behave as impl's op does except for the one deviation; nullopt where
// `m` does not change this op (the engine then runs impl's own op).
std::optional<impl::Tensor> apply_op_mutant(Mutant m, const Expr& e, const std::vector<impl::Tensor>& operands);

// Whether `m` is one of apply_op_mutant's.
bool is_op_level(Mutant m);

// optimizer_mutants.cc: impl's optimizer of `kind` with mutant `m`'s step, or null where `m` does not concern
// that optimizer (the engine then builds impl's own). Validates like impl's (same constructor).
std::unique_ptr<impl::Optimizer> make_optimizer_mutant(Mutant m, OptimizerKind kind, std::vector<impl::ParamGroup> groups,
                                                      const impl::OptionsBase& defaults);
bool is_optimizer_level(Mutant m);

// action_mutants.cc: an engine for mutants that change an action (zero_grad, backward, step, group
// construction), null for the others.
std::unique_ptr<ImplEngine> make_action_mutant(Mutant m, bool zero_grad_default_none);

}  // namespace lockstep::mutants_detail
