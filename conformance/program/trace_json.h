// The JSON form of a trace (trace.h): writing, and strict reading (for stored traces and tests).
//
// A trace: {"engine": "libtorch-1.13.1", "init": RECORD, "records": [RECORD, ...]}
// A record (grads and optimizer state are bare value arrays: their dtype and shape are the parameter's):
//   {"action": "backward",
//    "error": {"kind": "no_grad_fn", "message": "..."},                     (absent when none)
//    "params": {"x": {"dtype": "float64", "shape": [3], "values": [..],    (keyed by name, program order)
//                     "same_as_previous": true,                     (optional field, optional_fields.h)
//                     "grad": {"defined": true, "values": [..], "requires_grad": false, "has_grad_fn": false,
//                              "same_as_previous": true}  or  {"defined": false},
//                     "state": {} or {"step": 3, "momentum_buffer": [..], "exp_avg": [..], "exp_avg_sq": [..],
//                                     "max_exp_avg_sq": [..]}   (only the fields present)}},
//    "handles": {"g0": {"defined": true, "dtype": "float64", "shape": [3], "values": [..]}
//               or {"defined": false}},                                    (in the order first taken)
//    "groups": [{"params": ["x"], "options": OPTIONS}],                     (program_json.h OPTIONS)
//    "output": {"dtype": .., "shape": [..], "values": [..], "requires_grad": .., "has_grad_fn": ..}}
//                                                                          (absent when none)
// Exceptions to the compact form, written only when needed so that nothing is lost: a grad or state tensor
// whose dtype/shape differ from its parameter's gets "dtype"/"shape" beside its values (a state tensor is
// then {"dtype", "shape", "values"} instead of an array), and "state" gets "exists" when its definedness
// does not follow from its fields. An undefined grad records nothing but "defined": false.
// Numbers follow json_number.h: bitwise round trip, including NaN, infinities, -0.0 and float32 values.
//
// Example:
//   std::cout << trace_to_json(run_program(program, engine)).dump(2);
//   Trace t = trace_from_json(nlohmann::ordered_json::parse(text));   // JsonError (json_reader.h) on bad input
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/program/trace.h"

namespace lockstep {

nlohmann::ordered_json trace_to_json(const Trace& t);
nlohmann::ordered_json record_to_json(const Record& r);
// The state part of a record: {"params", "handles", "groups", "output" (when any)}.
nlohmann::ordered_json state_to_json(const EngineState& s);

// Strict readers; throw JsonError (json_reader.h) naming the JSON pointer (`pointer` is where `j` sits).
Trace trace_from_json(const nlohmann::ordered_json& j);
Record record_from_json(const nlohmann::ordered_json& j, const std::string& pointer = "");
// Reads an object with exactly the fields state_to_json writes.
EngineState state_from_json(const nlohmann::ordered_json& j, const std::string& pointer = "");

// Every key of a param observation this reader knows: protocol 1's and the optional fields' (optional_fields.h).
const std::vector<std::string>& param_observation_keys();

}  // namespace lockstep
