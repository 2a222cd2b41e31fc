// What a program exercises, cell by cell: the coverage table of a run (docs/search-power.md "Coverage of the default
// run"). Coverage measured, not hoped for: a bug hides in a situation no program reaches, so every run
// counts, per cell, how many of its programs reached it, and the table's empty cells are the places where a
// run proves nothing.
//
// Five tables (coverage_tables() lists every row and column):
//   ops         op x dtype (pow by exponent 0, 1, 2, 3, other) x edge class of its inputs: any, zero,
//               negative, tiny (nonzero, below 256 times the smallest normal: subnormal or next to it), large
//               (|x| >= 2^20; for exp, sigmoid, tanh, softplus and cross_entropy beyond exp's overflow, 88 in float32 and
//               709 in float64), nonfinite (NaN, +-Inf), repeated_index (embedding rows, cross_entropy
//               targets), broadcast (a 0-d operand of a binary op). Values are those of a forward evaluation
//               (in the dtype's precision) at the parameters' initial values, the values a first forward sees.
//   actions     previous action x action (the first action's previous one is "start").
//   options     optimizer x option value class (lr 0, weight_decay 0 or not, momentum 0, dampening, nesterov,
//               amsgrad, betas with a 0, eps 0, invalid), over the defaults, groups, set_options and added groups.
//   groups      optimizer x group structure (one list, several groups, duplicates, a parameter in two groups,
//               an empty list, lr changes, added groups, a change or an invalid group among several, two
//               same-shape parameters each with state, ...).
//   situations  aliasing and sequences (held handles across zeroing, 0-d grads sharing storage, retained
//               graphs stepped and backpropagated again, zero_grad between backwards, a backward after a
//               create_graph one, a parameter reached by several edges while its grad exists, held or aliased,
//               ...), by dtype of the program's first parameter.
// A cell that does not apply (broadcast for a unary op, repeated_index but for embedding and cross_entropy)
// or that the generator does not aim at (negative or large inputs of log and fractional powers, large inputs
// of exp: NaN and inf by definition, reached only now and then) is not in the tables, so an empty cell of
// coverage_tables() is a hole in the generator.
//
// Example:
//   for (const std::string& key : coverage_cells(program)) ++counts[key];   // "ops|relu float32|zero"
//   for (const CoverageTable& t : coverage_tables()) ...                       // the rows and columns to print
#pragma once

#include <set>
#include <string>
#include <vector>

#include "conformance/program/program.h"

namespace lockstep {

struct CoverageTable {
  std::string name;                  // "ops", "actions", "options", "groups", "situations"
  std::string meaning;               // one line for reports
  std::vector<std::string> rows;     // "relu float32", "start", "sgd", ...
  std::vector<std::string> columns;  // "zero", "backward", "lr 0", ...
  // Whether row r, column c is a cell of the table (some cells do not apply: broadcast for a unary op).
  std::vector<std::vector<bool>> applies;
};

const std::vector<CoverageTable>& coverage_tables();

// "table|row|column" of every cell `program` exercises (each once, however often).
std::set<std::string> coverage_cells(const Program& program);

std::string coverage_cell_key(const std::string& table, const std::string& row, const std::string& column);

}  // namespace lockstep
