// The op edge corpus (fixtures/corpus/ops): for every op of the program model, one small program per dtype
// and edge class of its inputs (coverage_cells.h: any, zero, negative, tiny, large, nonfinite; broadcast for
// the binary ops, repeated_index for embedding and cross_entropy), so that replaying fixtures alone catches
// an op's wrong forward or backward formula at the points where implementations get them wrong (SEMANTICS
// §2.11) without LibTorch.
//
// Each program: parameters holding the edge values, a forward of the op itself (element-wise ops keep
// their shape), a backward with an explicit, uneven gradient and retain_graph, a second backward through the
// retained graph (the grads accumulate, SEMANTICS §2.5, §3.2), and an SGD step (lr 0.5). No backward follows the
// step, so that every framework can replay the corpus (a backward after a step meets legitimately different
// version counters, SEM-11.10); which saved operand a backward reads after a step (SEMANTICS §2.8, §2.9) is left
// to the random programs' episodes (coverage cells "retained graph stepped, backward again" and "activation of a
// param, stepped, backward again") and named cases. `lockstep fixtures generate` runs them on the oracle.
//
// Example:
//   for (const OpEdgeProgram& p : op_edge_programs()) ... p.id == "op-relu-zero-f32", p.program ...
#pragma once

#include <string>
#include <vector>

#include "conformance/program/program.h"

namespace lockstep {

struct OpEdgeProgram {
  std::string id;           // "op-pow2-zero-f64"
  std::string description;  // one line
  std::string op;           // "pow^2", "pow^0.5", "relu", ... (pow^0.5 and pow^-1 are the table's pow^other)
  std::string edge;         // "zero", ...
  Program program;
};

std::vector<OpEdgeProgram> op_edge_programs();

}  // namespace lockstep
