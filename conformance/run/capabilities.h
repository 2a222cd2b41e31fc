// What an implementation under test says about itself in its hello (fixtures/PROTOCOL.md section 2a): who it
// is, which PyTorch version's defaults it follows, its API profile, and what it supports. A run generates and
// replays only what it supports (feature_scope.h), so a float32-only SGD/Adam framework gets float32 SGD/Adam
// programs instead of skips.
//
//   "hello": {"name": "tfjs", "version": "4.22.0", "protocol": 1, "language": "javascript",
//             "api_profile": "pytorch-python",            optional: fixtures/profiles/<name>.json
//             "pytorch_version": "2.1.0",                 optional: the PyTorch whose defaults it follows
//             "defaults": {"zero_grad": "none"},          optional: what zero_grad() does (SEM-12.1)
//             "supports": {                               optional; a key left out: all of that kind
//               "dtypes": ["float32"],
//               "ops": ["add", "mul", "sum", "mean", "matmul"],
//               "optimizers": {"sgd": ["lr", "momentum"], "adam": ["lr", "betas", "eps"]},
//               "features": ["retain_graph", "hold_grad", "zero_grad"]},
//             "observes": ["param.same_as_previous"]}     optional: optional trace fields it reports
//
// An in-process engine, or a driver whose hello speaks the current protocol without "supports", supports
// everything. A driver speaks protocol 1 when it has no hello or its hello says "protocol": 1: it is held to what
// protocol 1 had, SGD, Adam and AdamW with every option, every op and action (RMSprop and Adagrad came with protocol
// 2), unless its "supports" declares optimizers itself (driver_capabilities(); the note says so in every report). Listed, an option or feature is supported; not listed (among the names
// features.h knows), it is not: options not listed may appear only at their default value. Names lockstep
// does not know are kept as warnings (a newer driver may know more), never as errors; a field of the wrong
// type is an error naming its JSON pointer.
//
// Example:
//   Capabilities caps = capabilities_from_hello(driver.hello());
//   FeatureScope scope;
//   exclude_unsupported(caps, scope);     // float64, adamw, "adam.weight_decay", ... with their reasons
#pragma once

#include "conformance/program/pytorch_version.h"  // parse_pytorch_version, version_condition_holds

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/program/feature_scope.h"

namespace lockstep {

struct Capabilities {
  std::string name, version, language, api_profile;
  std::string pytorch_version;                 // "" when not declared
  std::optional<bool> zero_grad_default_none;  // "defaults": {"zero_grad": "none"|"zero"}; unset: not declared
  bool declared_supports = false;              // "supports" was given
  std::optional<std::set<std::string>> dtypes, ops, features;  // unset: all
  std::optional<std::map<std::string, std::set<std::string>>> optimizers;  // name -> options honoured
  // "observes": the optional trace fields (optional_fields.h) the driver reports; required in its answers.
  std::set<std::string> observes;
  int protocol = 0;                            // a driver's protocol (1 without a hello); 0: an in-process engine
  std::string protocol_note;                   // held to an older protocol's features: what and how to declare more
  std::vector<std::string> warnings;           // names lockstep does not know
  nlohmann::ordered_json hello;                // as announced (null for an old driver or an in-process engine)
};

// Reads a hello object; throws JsonError (json_reader.h) naming the pointer of a field of the wrong type.
Capabilities capabilities_from_hello(const nlohmann::ordered_json& hello);

// A driver's capabilities from its hello (null: a driver without one, protocol 1), held to the features of the
// protocol it speaks: a protocol-1 driver that does not declare its optimizers gets SGD, Adam and AdamW, and
// `protocol_note` says so and how to declare more (a protocol-2 hello) or narrow (--profile, --exclude-features).
Capabilities driver_capabilities(const nlohmann::ordered_json& hello);

// Adds to `scope` one exclusion per known feature the capabilities do not cover, with its reason.
void exclude_unsupported(const Capabilities& caps, FeatureScope& scope);

// Whether zero_grad() with no argument sets grads to none on the implementation (SEM-12.1): as declared, else
// as its PyTorch version says (>= 2.0: none), else `oracle_default` (nothing declared: the oracle's).
bool resolved_zero_grad_default_none(const Capabilities& caps, bool oracle_default);


}  // namespace lockstep
