// Engines by name, for the command line: "oracle" (LibTorch) and "impl" (the clean-room implementation).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "conformance/engine.h"

namespace lockstep::tools {

// Throws std::invalid_argument naming the known engines when `name` is not one of them.
std::unique_ptr<Engine> make_engine(const std::string& name);
std::vector<std::string> engine_names();

}  // namespace lockstep::tools
