// tools/mutants/mutants.h: the mutant catalogue, deliberate single deviations of impl from SEMANTICS.md, each one
// a training-step bug that real frameworks have shipped. `lockstep mutants` runs the suite against every mutant
// and proves that it kills each one (tools/command_mutants.cc); the impl driver runs them behind the protocol
// (`lockstep-impl-driver --mutant NAME`).
//
// A mutant is an engine, not a hook: make_mutant_engine() builds impl's engine (impl/engine_adapter.h, ImplEngine)
// with one thing replaced, outside impl, so that impl reads as the specification:
//  - an action (action_mutants.cc): zero_grad, backward or step wrapped, working on impl's tensors and optimizer;
//  - an optimizer's step (optimizer_mutants.cc): a subclass of impl's optimizer whose step is a copy of impl's
//    with one line wrong;
//  - an op (op_mutants.cc): the op's forward or backward rebuilt through impl's autograd API (impl/autograd.h,
//    record) with one formula wrong, at one edge class of its inputs.
// A mutated engine's name() is "impl+NAME".
//
// Example:
//   std::unique_ptr<lockstep::Engine> m = lockstep::make_mutant_engine("zero_grad_noop");  // "impl+zero_grad_noop"
//   LockstepResult r = lockstep::run_lockstep(program, *oracle, *m);                      // must fail somewhere
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conformance/run/engine.h"

namespace lockstep {

enum class Mutant : uint8_t {
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
  AccumulatePerEdge,
  UnusedParamGradZero,
  RetainGraphIgnored,
  // every optimizer's step (SEM-4.3, SEM-5.3)
  StepUndefinedGradAsZero,
  StepModifiesGrad,
  StepRebindsParameter,
  // a step's closure (SEM-17)
  ClosureCalledAfterUpdate,
  // gradient clipping (SEM-18)
  ClipPerTensor,
  ClipUndefinedGradAsZero,
  ClipCoefficientUnclamped,
  ClipNonfiniteIgnored,
  ClipListedOnce,
  ClipValueOneSided,
  // checkpoints (SEM-19)
  LoadResetsStepCount,
  LoadRecreatesMoments,
  StateDictSharesState,
  LoadOptionsOtherVersion,
  // maximize (SEM-20): judged only against a driver oracle, since LibTorch's C++ API has none (SEM-20.2)
  MaximizeIgnored,
  MaximizeGradInPlace,
  MaximizeAfterWeightDecay,
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
  // RMSprop (SEM-14)
  RmspropEpsInsideSqrt,
  RmspropCenteredIgnored,
  RmspropMomentumBufferRawGrad,
  RmspropSquareAvgUnweighted,
  // Adagrad (SEM-15)
  AdagradLazyState,
  AdagradGroupInitialAccumulator,
  AdagradLrDecayPerOptimizer,
  AdagradEpsInsideSqrt,
  // L-BFGS (SEM-16)
  LbfgsHistoryDropsNewest,
  LbfgsFirstStepUnscaled,
  LbfgsMaxEvalOffByOne,
  LbfgsWolfeCurvatureWithC1,
  LbfgsZoomReplacesLowEnd,
  LbfgsSearchCountsPerCall,
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
  SoftplusThresholdIgnored,
  SoftplusGradSignFlipped,
};

struct MutantInfo {
  Mutant id;
  const char* name;         // stable, snake_case: "zero_grad_noop"
  const char* description;  // one line: what the mutant does instead of the specified behaviour
  const char* semantics;    // the SEMANTICS section it breaks: "SEM-4.1"
  const char* edge = "";    // op mutants: the edge class of the op's inputs that shows it ("zero", "large",
                            // ...; "any" for a formula wrong everywhere); empty for the others
  bool is_op() const { return edge[0] != '\0'; }
  // SEMANTICS 20.2: LibTorch's C++ API has no maximize, so only a driver oracle (`lockstep mutants --oracle CMD`)
  // judges a live run of these; the fixture corpus (corpus/python-oracle) kills them offline.
  bool needs_driver_oracle() const { return std::string(semantics).rfind("SEM-20", 0) == 0; }
};

// Every mutant, in enum order.
const std::vector<MutantInfo>& mutant_catalogue();

// The mutant named `name`; nullopt when there is none.
std::optional<Mutant> mutant_from_name(const std::string& name);
const MutantInfo& mutant_info(Mutant m);
const char* mutant_name(Mutant m);

// "zero_grad_noop, zero_grad_new_tensor, ..." for error messages.
std::string mutant_names_joined();

// impl with mutant `name`, as an engine named "impl+NAME"; throws std::invalid_argument listing the known names
// for an unknown one. `zero_grad_default_none`: what zero_grad() with no argument does (SEM-12.1); not given, impl's
// own (make_impl_engine: the PyTorch generation of the LibTorch lockstep was built with), so that on a 2.x build a
// mutant differs from impl in its one change only.
std::unique_ptr<Engine> make_mutant_engine(const std::string& name,
                                           std::optional<bool> zero_grad_default_none = std::nullopt);

}  // namespace lockstep
