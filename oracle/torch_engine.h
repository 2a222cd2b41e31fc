// LibTorch as the oracle Engine (conformance/run/engine.h): every action is performed with LibTorch's C++ API
// (torch::Tensor, autograd, torch::optim::SGD/Adam/AdamW) and observed as SEMANTICS §8 describes.
//
// This header includes no torch header, so any folder may use it; only oracle/*.cc include torch.
//
// Example:
//   std::unique_ptr<lockstep::Engine> oracle = lockstep::make_torch_engine();
//   lockstep::Trace trace = lockstep::run_program(program, *oracle);   // trace.engine == "libtorch-1.13.0"
//
// Decisions the engine makes where LibTorch has no action of its own:
//  - zero_grad(set_to_none = true) resets every grad of every group (`p.mutable_grad().reset()`, SEM-4.2);
//    zero_grad, step, set_group_options and add_param_group without an optimizer throw no_optimizer.
//  - A group whose options are given builds them from the option type's defaults and sets only the given
//    fields (1.13 rule, SEM-7.1). SGD options without lr, or an option foreign to the optimizer's kind
//    (momentum on Adam, betas on SGD), throw invalid_option before anything changes.
//  - Errors LibTorch raises (c10::Error) are rethrown as EngineError with a kind chosen from the message
//    (trace.h, error_kind) and the message without its backtrace.
#pragma once

#include <memory>
#include <string>

#include "conformance/run/engine.h"

namespace lockstep {

// "libtorch-<major>.<minor>.<patch>" from the installed headers' TORCH_VERSION_* macros.
std::string torch_version_string();

// What optimizer.zero_grad() with no argument does in the installed LibTorch: true (>= 2.0) sets grads to none,
// false (1.x) zeroes them in place (SEM-12.1).
bool torch_zero_grad_sets_to_none_by_default();

// A fresh LibTorch engine with no parameters; name() is torch_version_string().
std::unique_ptr<Engine> make_torch_engine();

}  // namespace lockstep
