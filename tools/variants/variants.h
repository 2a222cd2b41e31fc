// tools/variants/variants.h: the variant catalogue, legitimate variants of impl that the suite must ACCEPT.
//
// A mutant (tools/mutants/mutants.h) is a wrong impl that the suite must reject; it measures misses. A variant is the
// opposite: impl with different but correct rounding, still following SEMANTICS.md to the letter (same
// structure, identities, errors and step counts; numbers within rounding of the spec's arithmetic). Every
// variant must pass the suite in every mode, so a variant that fails measures a false positive of the
// tolerance model (conformance/compare/tolerance.h).
//
// A variant engine wraps a plain impl engine (make_impl_engine()) and delegates every Engine method to it;
// it changes numbers only, after an action, by writing its own numbers over impl's with impl's
// synchronise() (which keeps every identity and all structure). impl's kernels are not touched, so impl
// still reads like the spec. The variants:
//   unfused            every SGD/Adam/AdamW line rounded multiply by multiply and add by add (impl fuses
//                      the lines LibTorch fuses with std::fma)
//   reciprocal         Adam/AdamW: p - (lr/bc1) * (exp_avg * (1/denom)); SGD: p + (-lr)*d as a multiply
//                      then an add
//   sqrt-ratio         Adam/AdamW: denom = sqrt(v / bc2) + eps, update (exp_avg / denom) * (lr/bc1)
//   ulp-noise          every number an action changed moves by one ULP of itself, up or down by a
//                      deterministic hash of (action, field, element): a different rounding anywhere. A
//                      stress variant beyond correct rounding (1.5 ULP from exact where a correctly rounding
//                      engine is 0.5): it fails the tutorials' exact claims by design, and a few programs in
//                      100,000 without re-synchronisation (docs/findings.md "Soundness, variants and LibTorch's own behaviour")
//   double-accumulate  forward and backward of float32 programs computed in float64 (a shadow impl engine
//                      on float64 copies of the parameters) and rounded once to float32
// A variant engine's name() is "impl~NAME".
//
// Example:
//   std::unique_ptr<lockstep::Engine> v = lockstep::make_variant_engine("unfused");   // "impl~unfused"
//   auto oracle = lockstep::make_torch_engine();
//   LockstepResult r = lockstep::run_lockstep(program, *oracle, *v);   // must pass: r.passed
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "conformance/run/engine.h"

namespace lockstep {

struct VariantInfo {
  std::string name;         // stable, kebab-case: "sqrt-ratio"
  std::string description;  // one line: how its arithmetic differs from impl's
};

// Every variant, in catalogue order.
const std::vector<VariantInfo>& variant_catalogue();

// "unfused, reciprocal, ..." for error messages and usage texts.
std::string variant_names_joined();

// A fresh engine of variant `name`; throws std::invalid_argument listing the known names for an unknown one.
std::unique_ptr<Engine> make_variant_engine(const std::string& name);

}  // namespace lockstep
