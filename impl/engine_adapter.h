// impl/engine_adapter.h: the clean-room implementation (impl/) as a conformance Engine (conformance/run/engine.h).
//
// Every action runs on impl's own tensors, autograd (autograd.h), ops (ops.h) and optimizers (sgd.h,
// adam.h, adamw.h); impl::Error leaves as EngineError with the same kind and message. The adapter makes
// the same decisions as the oracle engine where neither framework has an action of its own:
//  - zero_grad(set_to_none = true) resets every grad of every group (SEM-4.2); zero_grad, step,
//    set_group_options and add_param_group without an optimizer throw no_optimizer;
//  - a group whose options are given starts from the option type's defaults and sets the given fields
//    (1.13 rule, SEM-7.1); SGD options without lr, or options foreign to the kind, throw invalid_option;
//  - an explicit gradient whose size differs from the output's fails with gradient_shape.
// synchronise() overwrites every number (parameters, grads, optimizer state tensors, handles, output) in
// place, keeping identities (lockstep mode).
//
// Example:
//   std::unique_ptr<lockstep::Engine> engine = lockstep::make_impl_engine();   // name() == "impl"
//   lockstep::Trace trace = lockstep::run_program(program, *engine);
#pragma once

#include <memory>
#include <string>

#include "conformance/run/engine.h"

namespace lockstep {

// `mutant` selects a deliberate deviation of impl (impl/mutants.h) for every action of this engine only;
// empty: none. Throws std::invalid_argument listing the known names for an unknown one. A mutated engine's
// name() is "impl+NAME". `zero_grad_default_none`: what zero_grad() with no argument does (SEM-12.1): false
// zeroes in place as PyTorch 1.x does (impl's default), true sets grads to none as PyTorch >= 2.0 does.
std::unique_ptr<Engine> make_impl_engine(const std::string& mutant = "", bool zero_grad_default_none = false);

}  // namespace lockstep
