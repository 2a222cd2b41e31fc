// SEM-12.1: `optimizer.zero_grad()` with no argument is the framework's default, which changed in PyTorch 2.0
// (1.x zeroes the grads in place, >= 2.0 sets them to none). A program says `{"action": "zero_grad"}` for the
// default and `"set_to_none": true/false` for an explicit choice.
//
// When the implementation under test follows another default than the oracle (its hello's "pytorch_version"
// or "defaults", capabilities.h), lockstep compares like with like: the oracle's zero_grad() is spelled out
// as the implementation's default (rule "zero-grad-default", listed in the report), and the named case
// zero-grad-default-by-version checks on the implementation's own trace that its default is its version's.
// Replaying fixtures, the program sent to the implementation is spelled out as the recording oracle's
// default instead (the recorded trace cannot be re-run).
//
// Example:
//   std::unique_ptr<Engine> oracle = with_zero_grad_default(make_torch_engine(), /*set_to_none=*/true);
//   Program p2 = spell_out_zero_grad(program, /*set_to_none=*/false);
#pragma once

#include <memory>
#include <string>

#include "conformance/program/program.h"
#include "conformance/run/engine.h"

namespace lockstep {

inline constexpr const char* kZeroGradDefaultRule = "zero-grad-default";

// `program` with every zero_grad() given set_to_none = `set_to_none`, those of a step's closure too (SEMANTICS §17.2).
Program spell_out_zero_grad(const Program& program, bool set_to_none);
bool uses_zero_grad_default(const Program& program);

// `inner`, except that zero_grad() with no argument does zero_grad(set_to_none = `set_to_none`).
std::unique_ptr<Engine> with_zero_grad_default(std::unique_ptr<Engine> inner, bool set_to_none);

// The report's line for the rule: which side follows which default. The named case that checks the default
// is named by kZeroGradDefaultCase.
inline constexpr const char* kZeroGradDefaultCase = "sem12-zero-grad-default-by-version";
std::string zero_grad_default_rule_text(bool implementation_none, bool oracle_none);
// The same for replay, where the implementation's programs are spelled out as the recording oracle's default:
// its own default is not tested there.
std::string zero_grad_default_replay_rule_text(bool implementation_none, bool recorder_none);

}  // namespace lockstep
