// A readable per-action table of a trace (`lockstep trace P.json --table`).
//
//   #1 backward
//     output  float64 []  14  requires_grad grad_fn
//     x       [1, 2, 3]   grad [2, 4, 6] new
//     state   x: step 1, exp_avg [..], exp_avg_sq [..]
#pragma once

#include <string>

#include "conformance/program/program.h"
#include "conformance/program/trace.h"

namespace lockstep::tools {

std::string format_trace_table(const Program& program, const Trace& trace);

}  // namespace lockstep::tools
