// The JSON form of a program (program.h): reading, strictly, and writing.
//
// Format (every field not marked optional is required; unknown fields are errors, except a "comment"
// string on the program, on actions and on expressions):
//   {
//     "params": [{"name": "x", "dtype": "float64", "shape": [3], "values": [1, 2, 3]}],
//     "loss": EXPR,                                                       (optional)
//     "optimizer": {"type": "sgd"|"adam"|"adamw", "defaults": OPTIONS,    (optional)
//                   "params": ["x", ...]        (one group without options)
//                   or "groups": [{"params": ["x"], "options": OPTIONS (optional)}]},
//     "actions": [ACTION, ...]
//   }
//   EXPR: {"op": "param", "name": "x"}
//       | {"op": "const", "dtype": "float32" (optional), "shape": [2], "values": [..]}
//            (no dtype: the dtype of a sibling operand, else float32)
//       | {"op": "mul_scalar", "args": [EXPR], "scalar": 2.0} | {"op": "pow", "args": [EXPR], "exponent": 3}
//       | {"op": "cross_entropy", "args": [EXPR], "targets": [0, 2]}
//       | {"op": "embedding", "args": [EXPR], "indices": [0, 0, 1]}
//       | {"op": "linear", "args": [X, W] or [X, W, B]} | {"op": OTHER, "args": [EXPR, ...]}
//   OPTIONS: {"lr", "momentum", "dampening", "weight_decay": number, "nesterov": bool, "betas": [b1, b2],
//             "eps": number, "amsgrad": bool}   (each optional; only the given fields are set)
//   ACTION: {"action": "forward", "loss": EXPR (optional), "no_grad": bool (optional)}
//         | {"action": "backward", "retain_graph": bool, "create_graph": bool, "gradient": [..]} (all optional)
//         | {"action": "zero_grad", "set_to_none": bool (optional)}
//         | {"action": "set_grad_none", "param": "x"} | {"action": "hold_grad", "param": "x", "handle": "g0"}
//         | {"action": "step"} | {"action": "set_options", "group": 0, "options": OPTIONS}
//         | {"action": "add_param_group", "params": ["y"], "options": OPTIONS (optional)}
// Numbers follow json_number.h (exact round trip; "NaN", "Infinity", "-Infinity").
//
// Example:
//   Program p = read_program_file("fixtures/sgd_momentum.json");   // throws InputError
//   std::cout << program_to_json(p).dump(2);
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/program/program.h"

namespace lockstep {

// A program file that cannot be used. what() is "FILE: JSON-POINTER: message" ("FILE: message" when the
// problem is the whole file, e.g. it cannot be read or is not JSON; the message then has line and column).
// The command line exits with status 2 on it.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string pointer, std::string message);
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_, pointer_, message_;
};

// Reads a program document and validates it (program.h, validate()). Throws ProgramError whose path()
// is the JSON pointer of the problem. Never crashes on any input.
Program program_from_json(const nlohmann::ordered_json& doc, const ProgramLimits& limits = {});

// Parses JSON text (nesting bounded, so deep input cannot exhaust the stack) and reads it as above.
// Throws InputError naming `source` (a file name, or e.g. "<stdin>").
Program program_from_text(const std::string& text, const std::string& source, const ProgramLimits& limits = {});

// Reads a program file: program_from_text of its contents. Throws InputError.
Program read_program_file(const std::string& path, const ProgramLimits& limits = {});

// The whole contents of a file; InputError naming the file when it cannot be read (or is a directory) or holds
// more than kMaxInputFileBytes (64 MiB; /dev/zero ends there in a fraction of a second instead of never).
inline constexpr size_t kMaxInputFileBytes = size_t{64} << 20;
std::string read_text_file(const std::string& path);
// The same with another bound (`what` names the files it is for, in the message).
std::string read_text_file(const std::string& path, size_t max_bytes, const std::string& what);

// The document of a program; program_from_json(program_to_json(p)) == p field by field, bitwise on
// numbers (float32 values written as their shortest float decimal).
nlohmann::ordered_json program_to_json(const Program& p);

// Pieces, for the trace format (trace_json.h) and tools.
nlohmann::ordered_json options_to_json(const OptimizerOptions& o);  // only the set fields
OptimizerOptions options_from_json(const nlohmann::ordered_json& j, const std::string& pointer);  // JsonError
nlohmann::ordered_json expr_to_json(const Expr& e);
// The fixture schema (fixtures/schema/fixture.schema.json) with its optimizer and op parts rewritten from the
// descriptions: the option properties ($defs/options), the optimizer type's enum and the state properties of a record
// (optimizer_descriptions.h); the op names and the operand-count blocks of $defs/expr (op_descriptions.h).
// `lockstep fixtures generate` writes it; a test keeps the shipped file equal.
nlohmann::ordered_json schema_from_descriptions(nlohmann::ordered_json schema);
DType dtype_from_json(const nlohmann::ordered_json& j, const std::string& pointer);  // JsonError
nlohmann::ordered_json shape_to_json(const Shape& s);
Shape shape_from_json(const nlohmann::ordered_json& j, const std::string& pointer);  // JsonError

}  // namespace lockstep
