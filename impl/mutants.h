// impl/mutants.h: the mutant catalogue, deliberate single deviations of impl from SEMANTICS.md, each one a
// training-step bug that real frameworks have shipped. `lockstep mutants` runs the suite against every
// mutant and proves that it kills each one (tools/command_mutants.cc).
//
// A mutant is selected per thread and per scope: the impl engine adapter holds its mutant and installs it
// with a MutantScope around each Engine method, so two engines in one process cannot interfere, and impl
// code checks mutant_active(Mutant::X) (one thread_local compare) at the one place of each deviation,
// outside the per-element loops. With no scope open the active mutant is Mutant::None and impl behaves
// exactly as specified.
//
// Example:
//   std::optional<Mutant> m = mutant_from_name("zero_grad_noop");
//   { MutantScope scope(*m); optimizer.zero_grad(); }      // does nothing: the mutant is active
//   if (mutant_active(Mutant::ZeroGradNoop)) return;        // inside impl, at the deviation
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::impl {

enum class Mutant : uint8_t {
  None,
  // zero_grad and set_to_none (SEM-4)
  ZeroGradNoop,
  ZeroGradNewTensor,
  ZeroGradNoDetach,
  SetToNoneZeroes,
  // accumulation and backward (SEM-2, SEM-3)
  BackwardOverwrites,
  AccumulateOutOfPlace,
  AccumulateInPlaceCreateGraph,
  TiedParamCountedOnce,
  UnusedParamGradZero,
  RetainGraphIgnored,
  // every optimizer's step (SEM-4.3, SEM-5.3)
  StepUndefinedGradAsZero,
  StepModifiesGrad,
  // SGD (SEM-5.3, SEM-5.4)
  SgdDampeningFirstStep,
  SgdWeightDecayAfterMomentum,
  SgdNesterovBufferOnly,
  SgdVelocityForm,
  // Adam and AdamW (SEM-6)
  AdamEpsInsideSqrt,
  AdamEpsBeforeBiasCorrection,
  AdamBiasCorrectionOffByOne,
  AdamNoBiasCorrection,
  AdamStepPerOptimizer,
  AmsgradMaxOfCorrected,
  AmsgradMaxDropsNan,
  AdamwDecayAfterUpdate,
  AdamDecoupledDecay,
  AdamSkipZeroGrad,
  // parameter groups (SEM-7.1)
  GroupOptionsInheritDefaults,
  // situations the generator reaches on purpose (issue 10): lr 0, retained graphs stepped and run again,
  // 0-d grads sharing storage
  LrZeroGroupSkipped,
  ActivationGradRecomputed,
  SumZeroDimGradCopied,
  // op forward and backward formulas (SEM-2.11), each at one edge class of its inputs; kind "op": the
  // fixture corpus must kill them offline too (lockstep mutants, replay path)
  PowGradViaOutput,
  PowNegativeBaseNan,
  ReluGradAtZeroOne,
  AbsGradAtZeroOne,
  ReluNanToZero,
  MulFlushesSubnormals,
  SigmoidUnstable,
  CrossEntropyUnshifted,
  EmbeddingRepeatedIndexOverwrites,
  BroadcastGradFirstElement,
  MeanGradNotDivided,
  MseGradMissingTwo,
  TanhGradOneMinusY,
  DivGradWrongSign,
  LinearBiasGradFirstRow,
};

struct MutantInfo {
  Mutant id;
  const char* name;         // stable, snake_case: "zero_grad_noop"
  const char* description;  // one line: what the mutant does instead of the specified behaviour
  const char* semantics;    // the SEMANTICS section it breaks: "SEM-4.1"
  const char* edge = "";    // op mutants: the edge class of the op's inputs that shows it ("zero", "large",
                            // ...; "any" for a formula wrong everywhere); empty for the others
  bool is_op() const { return edge[0] != '\0'; }
};

// Every mutant, Mutant::None excluded, in enum order.
const std::vector<MutantInfo>& mutant_catalogue();

// The mutant named `name`; nullopt when there is none.
std::optional<Mutant> mutant_from_name(const std::string& name);
const MutantInfo& mutant_info(Mutant m);  // m != None
const char* mutant_name(Mutant m);        // "none" for Mutant::None

// "zero_grad_noop, zero_grad_new_tensor, ..." for error messages.
std::string mutant_names_joined();

namespace mutant_detail {
inline thread_local Mutant active = Mutant::None;
}  // namespace mutant_detail

inline Mutant active_mutant() { return mutant_detail::active; }
inline bool mutant_active(Mutant m) { return mutant_detail::active == m; }

// Selects `m` on this thread for its lifetime; restores the previous selection (scopes nest).
class MutantScope {
 public:
  explicit MutantScope(Mutant m) : previous_(mutant_detail::active) { mutant_detail::active = m; }
  ~MutantScope() { mutant_detail::active = previous_; }
  MutantScope(const MutantScope&) = delete;
  MutantScope& operator=(const MutantScope&) = delete;

 private:
  Mutant previous_;
};

}  // namespace lockstep::impl
