// What a program costs to run, known before it runs (issue 14: limits that are real).
//
// A program's size on disk says little about what running it takes: 121 actions over one large parameter, or
// thousands of held grad handles each observed again in every later record, fit in a few kilobytes and would
// take gigabytes. So validate() (program.h) bounds two totals of the whole run, computed from the program alone:
//
//   observed values  every tensor, flag and name the trace records, summed over its records (a tensor counts
//                    its elements plus 16 for its dtype, shape and flags). Bounds the memory of a trace in every
//                    form it takes: held (about 8 bytes a value), an answer line (about 20) and its parsed JSON.
//   arithmetic       element operations of every forward, backward, step and observation, with the factors of
//                    impl, LibTorch and the comparator together (a matmul (n,k)@(k,m) counts n*k*m). Bounds time,
//                    and the tensors a run can allocate.
//
// Both are upper bounds: an engine observes no more than this. The limits, and the memory each was measured to
// take, are in ProgramLimits (program.h) and docs/programs-and-limits.md "Limits".
//
// Example:
//   ProgramCost c = program_cost(program);       // of a validated program
//   if (c.observed_values > budget) ...
#pragma once

#include <cstdint>

#include "conformance/program/program.h"

namespace lockstep {

struct ProgramCost {
  int64_t observed_values = 0;  // summed over the init record and one record per action
  int64_t arithmetic = 0;       // element operations
};

// Of a program validate() accepts apart from these two limits. Saturates at INT64_MAX / 4.
ProgramCost program_cost(const Program& p, const ProgramLimits& limits = {});

// Throws ProgramError at the first action ("/actions/57") where a running total passes its limit in `limits`
// (or at "/params" when the init record alone does).
void check_program_cost(const Program& p, const ProgramLimits& limits);

// How many of the program's first actions keep both running totals and the group entries within `limits` (all of
// them when the program fits; 0 when its init record alone does not): what a generator keeps of a program that grew
// past them. Expression sizes are not looked at.
size_t actions_within_cost(const Program& p, const ProgramLimits& limits = {});

}  // namespace lockstep
