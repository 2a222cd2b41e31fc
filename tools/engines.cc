#include "tools/engines.h"

#include <stdexcept>

#include "impl/engine_adapter.h"
#include "tools/mutants/mutants.h"
#include "oracle/torch_bench.h"
#include "oracle/torch_engine.h"
#include "tools/variants/variants.h"

namespace lockstep::tools {

void pin_oracle_threads() { torch_set_num_threads(1); }

std::vector<std::string> engine_names() { return {"oracle", "impl"}; }

bool is_engine_name(const std::string& name) {
  for (const std::string& n : engine_names())
    if (n == name) return true;
  return false;
}

std::unique_ptr<Engine> make_engine(const std::string& name, const std::string& mutant, const std::string& variant) {
  if ((!mutant.empty() || !variant.empty()) && name != "impl")
    throw std::invalid_argument("--mutant and --variant apply to the impl engine only");
  if (!mutant.empty() && !variant.empty()) throw std::invalid_argument("--mutant and --variant exclude each other");
  if (!variant.empty()) return make_variant_engine(variant);  // throws for an unknown variant, listing the known
  if (name == "oracle") return make_torch_engine();
  if (name == "impl")  // make_mutant_engine throws for an unknown mutant, listing the known
    return mutant.empty() ? make_impl_engine() : make_mutant_engine(mutant);
  throw std::invalid_argument("unknown engine '" + name + "' (known: oracle, impl)");
}

}  // namespace lockstep::tools
