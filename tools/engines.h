// Engines by name, for the command line: "oracle" (LibTorch) and "impl" (the clean-room implementation).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "conformance/run/engine.h"
#include "tools/run_main.h"

namespace lockstep::tools {

// Throws std::invalid_argument naming the known engines when `name` is not one of them.
// `mutant` (impl only) selects a deliberate deviation of impl (tools/mutants/mutants.h); empty: none.
// `variant` (impl only) selects a legitimate variant of impl (tools/variants/variants.h); empty: none.
std::unique_ptr<Engine> make_engine(const std::string& name, const std::string& mutant = "",
                                    const std::string& variant = "");
std::vector<std::string> engine_names();  // oracle, impl, then the registered ones
// The engines a runner adds (run_main.h); throws std::invalid_argument for an empty, duplicate or built-in name, a
// name with whitespace (it would read as a driver command line), or a missing factory.
void register_engines(const std::vector<EngineRegistration>& engines);
std::string registered_engines_text();  // "none" or "a, b"
// Whether this lockstep was built with the LibTorch oracle (-DLOCKSTEP_WITH_TORCH, on by default). A replay-only
// build has impl and drivers; make_engine("oracle") throws kNoOracle.
bool oracle_available();
inline constexpr const char* kNoOracle =
    "this needs the LibTorch oracle, and this lockstep is a replay-only build (configured without LibTorch: "
    "-DLOCKSTEP_WITH_TORCH=OFF, or libtorch-dev not installed). `lockstep replay` checks an implementation against "
    "the fixtures recorded from LibTorch; build with libtorch-dev for live runs (docs/install.md \"Replay-only install\")";
// LibTorch's CPU kernels on one thread: results that do not depend on the machine's cores, and workers of
// --jobs that do not compete for them. Call before the first engine is made.
void pin_oracle_threads();
// Whether `name` is a built-in engine (else: a driver command line).
bool is_engine_name(const std::string& name);

}  // namespace lockstep::tools
