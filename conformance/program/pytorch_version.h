// PyTorch versions as lockstep reads them: a hello's "pytorch_version", an engine's name ("libtorch-2.6.0"), and the
// version conditions of named-case checks and expectation entries ("when": {"pytorch": ">=2.0"}, SEMANTICS 12).
//
// Example:
//   parse_pytorch_version("2.1.0+cu118");                     // {2, 1}
//   version_condition_holds("<2.0", "libtorch-1.13.0");       // true
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace lockstep {

// "2.1.0+cu118" / "libtorch-1.13.0" -> {2, 1}; nullopt when no "major.minor" is found.
std::optional<std::pair<int, int>> parse_pytorch_version(const std::string& text);

// Whether a version condition holds: ">=2.0", "<2.0", ">=1.13", "<1.13" against `version` ("2.1.0",
// "libtorch-1.13.0"); false when `version` has none. Throws std::invalid_argument for a condition it cannot read.
bool version_condition_holds(const std::string& condition, const std::string& version);

}  // namespace lockstep
