// impl/error.h: the one error type that impl/ throws for semantic failures (SEMANTICS §8 error kinds).
//
// `kind` is one of the error kinds a trace records (conformance/program/trace.h's error_kind); its name is the
// trace's string ("invalid_option", ...). what() is the message, worded like LibTorch's. impl/ does not include
// the conformance headers, so the names are spelled here once.
//
// Example:
//   try { SGD sgd({w}, SGDOptions(-0.1)); }
//   catch (const lockstep::impl::Error& e) {
//     e.kind == ErrorKind::InvalidOption; error_kind_name(e.kind) == "invalid_option";
//     e.what() == "Invalid learning rate: -0.1";
//   }
#pragma once

#include <stdexcept>
#include <string>

namespace lockstep::impl {

enum class ErrorKind {
  InvalidOption,              // SEM-5.2, SEM-6.1, SEM-14.1, SEM-15.1
  NonLeafParameter,           // SEM-7.3
  DuplicateParameter,         // SEM-7.4
  BackwardThroughFreedGraph,  // SEM-2.5
  NoGradFn,                   // SEM-2.3
  NonscalarBackward,          // SEM-2.4
  GradientShape,              // an explicit gradient unlike the output
  InplaceModified,            // a saved tensor changed in place
  NonfiniteNorm,              // clip_grad_norm_ with error_if_nonfinite, SEM-18.3
  StateDictMismatch,          // load_state_dict of a checkpoint whose groups differ, SEM-19.3
  Other,                      // bad operands of an op, a step on missing state, ...
};

inline const char* error_kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::InvalidOption: return "invalid_option";
    case ErrorKind::NonLeafParameter: return "non_leaf_parameter";
    case ErrorKind::DuplicateParameter: return "duplicate_parameter";
    case ErrorKind::BackwardThroughFreedGraph: return "backward_through_freed_graph";
    case ErrorKind::NoGradFn: return "no_grad_fn";
    case ErrorKind::NonscalarBackward: return "nonscalar_backward";
    case ErrorKind::GradientShape: return "gradient_shape";
    case ErrorKind::InplaceModified: return "inplace_modified";
    case ErrorKind::NonfiniteNorm: return "nonfinite_norm";
    case ErrorKind::StateDictMismatch: return "state_dict_mismatch";
    case ErrorKind::Other: return "other";
  }
  return "other";
}

struct Error : std::runtime_error {
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind(kind) {}
  ErrorKind kind;
};

}  // namespace lockstep::impl
