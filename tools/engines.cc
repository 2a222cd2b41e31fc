#include "tools/engines.h"

#include <stdexcept>

#include "impl/engine_adapter.h"
#include "tools/mutants/mutants.h"
#ifdef LOCKSTEP_WITH_TORCH
#include "oracle/torch_bench.h"
#include "oracle/torch_engine.h"
#endif
#include "tools/variants/variants.h"

namespace lockstep::tools {

#ifdef LOCKSTEP_WITH_TORCH
bool oracle_available() { return true; }
void pin_oracle_threads() { torch_set_num_threads(1); }
#else
bool oracle_available() { return false; }
void pin_oracle_threads() {}
#endif

namespace {

std::vector<EngineRegistration>& registered() {
  static std::vector<EngineRegistration> engines;
  return engines;
}

}  // namespace

void register_engines(const std::vector<EngineRegistration>& engines) {
  for (const EngineRegistration& e : engines) {
    if (e.name.empty() || e.name.find_first_of(" \t\n'\"") != std::string::npos)
      throw std::invalid_argument("a registered engine's name must be one word (it is what --engine selects; a "
                                  "line with spaces is a driver command): '" + e.name + "'");
    if (is_engine_name(e.name)) throw std::invalid_argument("engine '" + e.name + "' is registered twice or built in");
    if (!e.make) throw std::invalid_argument("engine '" + e.name + "' has no factory");
    registered().push_back(e);
  }
}

std::string registered_engines_text() {
  std::string out;
  for (const EngineRegistration& e : registered()) out += (out.empty() ? "" : ", ") + e.name;
  return out.empty() ? "none" : out;
}

std::vector<std::string> engine_names() {
  std::vector<std::string> names = {"oracle", "impl"};
  for (const EngineRegistration& e : registered()) names.push_back(e.name);
  return names;
}

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
  if (name == "oracle") {
#ifdef LOCKSTEP_WITH_TORCH
    return make_torch_engine();
#else
    throw std::invalid_argument("--engine oracle: " + std::string(kNoOracle));
#endif
  }
  if (name == "impl")  // make_mutant_engine throws for an unknown mutant, listing the known
    return mutant.empty() ? make_impl_engine() : make_mutant_engine(mutant);
  for (const EngineRegistration& e : registered())
    if (e.name == name) return e.make();
  std::string known;
  for (const std::string& n : engine_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown engine '" + name + "' (known: " + known + ")");
}

}  // namespace lockstep::tools
