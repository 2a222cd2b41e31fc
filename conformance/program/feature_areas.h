// Feature areas: the coarse columns of the conformance matrix (conformance_matrix.h), what a reader scans
// first: "does this framework get accumulation right? zero_grad? Adam?". Each program belongs to every area
// it exercises, decided from the program alone (like program_features(), features.h), so a fixture and a
// random program that do the same things land in the same columns, and a case left out of a run can still be
// counted as unsupported where it would have tested something.
//
//   autograd      a backward (SEM-2, SEM-3.1)
//   accumulation  two or more backwards: grads accumulate (SEM-3.2-3.7)
//   zero_grad     zero_grad in any form or param.grad = None (SEM-4, SEM-12.1)
//   sgd, adam, adamw, rmsprop, adagrad   a step of that optimizer (SEM-5, SEM-6, SEM-14, SEM-15;
//                 one column per optimizer_descriptions.h)
//   groups        several groups, a group's own options, add_param_group or set_options (SEM-7)
//   errors        an action the specification makes fail: invalid options, a freed or modified graph, a
//                 parameter in two groups, a backward with nothing to backpropagate, an optimizer action
//                 without optimizer (SEM-2.3-2.5, 5.2, 6.1, 7.3-7.4)
//   numerics      NaN or an infinity, or an op input at a tiny, large or non-finite edge (SEM-2.11, SEM-9)
//
// Example:
//   for (const std::string& area : feature_areas(program)) ++matrix[area];   // {"autograd", "adam"}
#pragma once

#include <set>
#include <string>
#include <vector>

#include "conformance/program/program.h"

namespace lockstep {

// Every area, in the matrix's column order.
const std::vector<std::string>& all_feature_areas();

// The areas `program` exercises, in all_feature_areas() order (possibly none: a program of forwards only).
std::vector<std::string> feature_areas(const Program& program);
// The same with the program's features already computed (program_features(program)), as a run has them.
std::vector<std::string> feature_areas(const Program& program, const std::set<std::string>& features);

}  // namespace lockstep
