// Engines by name, for the command line: "oracle" (LibTorch) and "impl" (the clean-room implementation).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "conformance/run/engine.h"

namespace lockstep::tools {

// Throws std::invalid_argument naming the known engines when `name` is not one of them.
// `mutant` (impl only) selects a deliberate deviation of impl (tools/mutants/mutants.h); empty: none.
// `variant` (impl only) selects a legitimate variant of impl (tools/variants/variants.h); empty: none.
std::unique_ptr<Engine> make_engine(const std::string& name, const std::string& mutant = "",
                                    const std::string& variant = "");
std::vector<std::string> engine_names();
// LibTorch's CPU kernels on one thread: results that do not depend on the machine's cores, and workers of
// --jobs that do not compete for them. Call before the first engine is made.
void pin_oracle_threads();
// Whether `name` is a built-in engine (else: a driver command line).
bool is_engine_name(const std::string& name);

}  // namespace lockstep::tools
