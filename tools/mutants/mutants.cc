// tools/mutants/mutants.cc: the catalogue (mutants.h) and the engine of each mutant.
#include "tools/mutants/mutants.h"

#include <stdexcept>

#include "tools/mutants/mutant_engines.h"

namespace lockstep {
namespace {

// impl's engine with one op (op_mutants.cc) or the optimizer's step (optimizer_mutants.cc) replaced.
class HookMutant : public ImplEngine {
 public:
  HookMutant(Mutant m, bool zero_grad_default_none)
      : ImplEngine(zero_grad_default_none, std::string("impl+") + mutant_name(m)), m_(m) {}

 protected:
  impl::Tensor apply_op(const Expr& e, const std::vector<impl::Tensor>& operands) override {
    if (e.op != Op::Param && e.op != Op::Const)
      if (std::optional<impl::Tensor> t = mutants_detail::apply_op_mutant(m_, e, operands)) return *t;
    return ImplEngine::apply_op(e, operands);
  }

  std::unique_ptr<impl::Optimizer> construct_optimizer(OptimizerKind kind, std::vector<impl::ParamGroup> groups,
                                                       const impl::OptionsBase& defaults) override {
    if (mutants_detail::is_optimizer_level(m_)) {
      std::vector<impl::ParamGroup> copy = groups;  // the mutant's optimizer may not concern this kind
      if (auto o = mutants_detail::make_optimizer_mutant(m_, kind, std::move(copy), defaults)) return o;
    }
    return ImplEngine::construct_optimizer(kind, std::move(groups), defaults);
  }

 private:
  Mutant m_;
};

}  // namespace

const std::vector<MutantInfo>& mutant_catalogue() {
  static const std::vector<MutantInfo> catalogue = {
      {Mutant::ZeroGradNoop, "zero_grad_noop", "zero_grad() does nothing", "SEM-4.1"},
      {Mutant::ZeroGradNewTensor, "zero_grad_new_tensor",
       "zero_grad() gives each defined grad a new zero tensor instead of zeroing it in place", "SEM-4.1"},
      {Mutant::ZeroGradNoDetach, "zero_grad_no_detach",
       "zero_grad() zeroes in place without detach_(): a create_graph grad keeps requires_grad and grad_fn",
       "SEM-4.1"},
      {Mutant::SetToNoneZeroes, "set_to_none_zeroes", "zero_grad(set_to_none=true) zeroes the grads instead",
       "SEM-4.2"},
      {Mutant::BackwardOverwrites, "backward_overwrites",
       "backward overwrites a defined grad with the new gradient instead of accumulating", "SEM-3.2"},
      {Mutant::AccumulateOutOfPlace, "accumulate_out_of_place",
       "accumulation without create_graph is out of place (grad = grad + g: a new identity)", "SEM-3.2"},
      {Mutant::AccumulateInPlaceCreateGraph, "accumulate_in_place_create_graph",
       "accumulation under create_graph is in place (identity kept, no grad_fn)", "SEM-3.3"},
      {Mutant::TiedParamCountedOnce, "tied_param_counted_once",
       "a parameter reached through several paths receives only the first contribution", "SEM-2.6"},
      {Mutant::AccumulatePerEdge, "accumulate_per_edge",
       "a parameter reached by several edges of one loss accumulates each edge's contribution into its grad as it "
       "arrives, (grad + g1) + g2 instead of grad + (g1 + g2), in a new tensor the later edges reuse (a held handle "
       "or an aliased 0-d grad keeps the old values); an undefined grad gets the edges' sum", "SEM-3.2"},
      {Mutant::UnusedParamGradZero, "unused_param_grad_zero",
       "backward gives every parameter it did not reach a zero grad instead of leaving it undefined", "SEM-2.7"},
      {Mutant::RetainGraphIgnored, "retain_graph_ignored",
       "backward never frees saved tensors: a second backward succeeds everywhere", "SEM-2.5"},
      {Mutant::StepUndefinedGradAsZero, "step_undefined_grad_as_zero",
       "step() updates a parameter whose grad is undefined as if its grad were zero", "SEM-4.3"},
      {Mutant::StepModifiesGrad, "step_modifies_grad",
       "step() writes its direction into p.grad (SGD: d after weight decay and momentum; Adam: g with L2)",
       "SEM-5.3"},
      {Mutant::StepRebindsParameter, "step_rebinds_parameter",
       "step() writes each updated parameter into a new tensor and rebinds the model and the optimizer to it "
       "(p = p - lr * d): the values are right, the parameter is no longer the same tensor",
       "SEM-1.6"},
      {Mutant::ClosureCalledAfterUpdate, "closure_called_after_update",
       "step(closure) updates with the grads it finds, then calls the closure (whose grads wait for the next step)",
       "SEM-17.1"},
      {Mutant::ClipPerTensor, "clip_per_tensor",
       "clip_grad_norm scales each grad by its own norm's coefficient instead of the total norm's (it still returns the "
       "total)", "SEM-18.2"},
      {Mutant::ClipUndefinedGradAsZero, "clip_undefined_grad_as_zero",
       "clip_grad_norm and clip_grad_value give a listed parameter whose grad is undefined a zero grad instead of "
       "skipping it", "SEM-18.1"},
      {Mutant::ClipCoefficientUnclamped, "clip_coefficient_unclamped",
       "clip_grad_norm scales by max_norm / (total + 1e-6) even where that is above 1: grads under max_norm grow",
       "SEM-18.2"},
      {Mutant::ClipNonfiniteIgnored, "clip_nonfinite_ignored",
       "clip_grad_norm ignores error_if_nonfinite: a non-finite total scales the grads instead of failing", "SEM-18.3"},
      {Mutant::ClipListedOnce, "clip_listed_once",
       "clip_grad_norm and clip_grad_value take the listed parameters as a set: a parameter listed twice is counted "
       "and scaled once", "SEM-18.4"},
      {Mutant::LoadResetsStepCount, "load_resets_step_count",
       "load_state_dict restores the moments but every step count in the optimizer starts again at 0", "SEM-19.1"},
      {Mutant::LoadRecreatesMoments, "load_recreates_moments",
       "load_state_dict restores the step counts but re-creates every state tensor as zeros", "SEM-19.1"},
      {Mutant::StateDictSharesState, "state_dict_shares_state",
       "state_dict keeps references to the optimizer's own state, not a copy: a load gives back the state as it is "
       "at the load, not as it was at the save", "SEM-19.4"},
      {Mutant::LoadOptionsOtherVersion, "load_options_other_version",
       "load_state_dict follows the other LibTorch generation's rule for group options: 1.13 keeps the optimizer's, "
       "2.x restores the saved ones", "SEM-19.2"},
      {Mutant::MaximizeIgnored, "maximize_ignored",
       "every optimizer steps as if maximize were off: it moves down the gradient", "SEM-20.1"},
      {Mutant::MaximizeGradInPlace, "maximize_grad_in_place",
       "maximize negates .grad in place (grad.neg_()) instead of reading -grad: after the step .grad holds -g, and "
       "the next backward accumulates onto it", "SEM-20.1"},
      {Mutant::MaximizeAfterWeightDecay, "maximize_after_weight_decay",
       "SGD and Adam negate after adding the L2 term weight_decay * p, -(g + wd * p), instead of before it, -g + wd * p",
       "SEM-20.1"},
      {Mutant::ClipValueOneSided, "clip_value_one_sided",
       "clip_grad_value clamps from above only (min(g, clip_value)): large negative grads stay", "SEM-18.5"},
      {Mutant::SgdDampeningFirstStep, "sgd_dampening_first_step",
       "SGD's first momentum buffer is (1 - dampening) * d instead of a copy of d", "SEM-5.3"},
      {Mutant::SgdWeightDecayAfterMomentum, "sgd_weight_decay_after_momentum",
       "SGD adds weight_decay * p after the momentum buffer instead of to the grad before it", "SEM-5.3"},
      {Mutant::SgdNesterovBufferOnly, "sgd_nesterov_buffer_only",
       "SGD with nesterov steps along the buffer alone (d = buf instead of d + momentum * buf)", "SEM-5.3"},
      {Mutant::SgdVelocityForm, "sgd_velocity_form",
       "SGD folds lr into the momentum buffer (buf = momentum * buf + lr * d; p -= buf)", "SEM-5.4"},
      {Mutant::AdamEpsInsideSqrt, "adam_eps_inside_sqrt",
       "Adam's denominator is sqrt(v / bc2 + eps) instead of sqrt(v) / sqrt(bc2) + eps", "SEM-6.3"},
      {Mutant::AdamEpsBeforeBiasCorrection, "adam_eps_before_bias_correction",
       "Adam adds eps before dividing by sqrt(bc2): (sqrt(v) + eps) / sqrt(bc2)", "SEM-6.3"},
      {Mutant::AdamBiasCorrectionOffByOne, "adam_bias_correction_off_by_one",
       "Adam's bias corrections use step + 1 instead of step", "SEM-6.3"},
      {Mutant::AdamNoBiasCorrection, "adam_no_bias_correction", "Adam without bias correction (bc1 = bc2 = 1)",
       "SEM-6.3"},
      {Mutant::AdamStepPerOptimizer, "adam_step_per_optimizer",
       "Adam counts steps per optimizer instead of per parameter (a skipped or late parameter gets the "
       "optimizer's count)",
       "SEM-6.2"},
      {Mutant::AmsgradMaxOfCorrected, "amsgrad_max_of_corrected",
       "AMSGrad takes the max of the bias-corrected v / bc2 instead of v", "SEM-6.3"},
      {Mutant::AmsgradMaxDropsNan, "amsgrad_max_drops_nan",
       "AMSGrad's max ignores a NaN in exp_avg_sq (fmax) instead of propagating it", "SEM-6.3"},
      {Mutant::AdamwDecayAfterUpdate, "adamw_decay_after_update",
       "AdamW applies p *= 1 - lr * weight_decay after the Adam update instead of before", "SEM-6.4"},
      {Mutant::AdamDecoupledDecay, "adam_decoupled_decay",
       "Adam applies weight decay decoupled (like AdamW) instead of adding weight_decay * p to g", "SEM-6.3"},
      {Mutant::AdamSkipZeroGrad, "adam_skip_zero_grad",
       "Adam and AdamW skip a parameter whose grad is all zeros, as if it were undefined", "SEM-4.3"},
      {Mutant::RmspropEpsInsideSqrt, "rmsprop_eps_inside_sqrt",
       "RMSprop's denominator is sqrt(square_avg + eps) instead of sqrt(square_avg) + eps", "SEM-14.3"},
      {Mutant::RmspropCenteredIgnored, "rmsprop_centered_ignored",
       "centered RMSprop divides by sqrt(square_avg) + eps: grad_avg is kept but never subtracted", "SEM-14.3"},
      {Mutant::RmspropMomentumBufferRawGrad, "rmsprop_momentum_buffer_raw_grad",
       "RMSprop's momentum buffer accumulates g and the update divides it by avg, instead of accumulating g / avg",
       "SEM-14.3"},
      {Mutant::RmspropSquareAvgUnweighted, "rmsprop_square_avg_unweighted",
       "RMSprop's square_avg adds g * g without the (1 - alpha) weight", "SEM-14.3"},
      {Mutant::AdagradLazyState, "adagrad_lazy_state",
       "Adagrad creates a parameter's state at its first step (as Adam does) instead of in the constructor: no "
       "state before a step, and a parameter added later steps instead of failing",
       "SEM-15.2"},
      {Mutant::AdagradGroupInitialAccumulator, "adagrad_group_initial_accumulator",
       "Adagrad fills a group's sums with the group's initial_accumulator_value instead of the defaults'",
       "SEM-15.2"},
      {Mutant::AdagradLrDecayPerOptimizer, "adagrad_lr_decay_per_optimizer",
       "Adagrad decays the learning rate by the optimizer's step count instead of the parameter's", "SEM-15.3"},
      {Mutant::AdagradEpsInsideSqrt, "adagrad_eps_inside_sqrt",
       "Adagrad's denominator is sqrt(sum + eps) instead of sqrt(sum) + eps", "SEM-15.3"},
      {Mutant::LbfgsHistoryDropsNewest, "lbfgs_history_drops_newest",
       "L-BFGS with a full history drops its newest curvature pair instead of its oldest", "SEM-16.3"},
      {Mutant::LbfgsFirstStepUnscaled, "lbfgs_first_step_unscaled",
       "L-BFGS's first iteration moves by lr * d instead of min(1, 1 / sum|g|) * lr * d", "SEM-16.3"},
      {Mutant::LbfgsMaxEvalOffByOne, "lbfgs_max_eval_off_by_one",
       "L-BFGS stops when the closure calls exceed max_eval instead of when they reach it", "SEM-16.3"},
      {Mutant::LbfgsWolfeCurvatureWithC1, "lbfgs_wolfe_curvature_with_c1",
       "L-BFGS's strong_wolfe line search tests the curvature condition with c1 (1e-4) instead of c2 (0.9)", "SEM-16.6"},
      {Mutant::LbfgsZoomReplacesLowEnd, "lbfgs_zoom_replaces_low_end",
       "L-BFGS's zoom puts a trial that fails the sufficient decrease at the bracket's low end instead of its high end",
       "SEM-16.6"},
      {Mutant::LbfgsSearchCountsPerCall, "lbfgs_search_counts_per_call",
       "L-BFGS counts a line search's closure calls in func_evals as they happen instead of when the search returns",
       "SEM-16.6"},
      {Mutant::GroupOptionsInheritDefaults, "group_options_inherit_defaults",
       "a group with options inherits the optimizer's defaults for the fields it does not set (the 2.x rule) "
       "under the 1.13 profile",
       "SEM-7.1"},
      {Mutant::LrZeroGroupSkipped, "lr_zero_group_skipped",
       "step() skips every parameter of a group whose lr is 0 (no momentum buffer, no step count, no moments) "
       "instead of running the update with lr 0",
       "SEM-5.3"},
      {Mutant::ActivationGradRecomputed, "activation_grad_recomputed",
       "exp, tanh, sigmoid and relu backward recompute the output from the input's current values instead of "
       "using the output saved at the forward (differs once a step changed the input under a retained graph)",
       "SEM-2.5"},
      {Mutant::SumZeroDimGradCopied, "sum_0d_grad_copied",
       "sum over a 0-d input passes a new storage on, so 0-d leaves fed by one add do not share their grad's "
       "storage as LibTorch's do (a later accumulation is seen by one of them only)",
       "SEM-3.7"},
      {Mutant::PowGradViaOutput, "pow_grad_via_output",
       "pow's grad is computed as exponent * out / a instead of exponent * a^(exponent-1): NaN at an exact 0 base",
       "SEM-2.11", "zero"},
      {Mutant::PowNegativeBaseNan, "pow_negative_base_nan",
       "pow is NaN for a negative base even with an integer exponent, as exp(exponent * log(a)) is",
       "SEM-2.11", "negative"},
      {Mutant::ReluGradAtZeroOne, "relu_grad_at_zero_one", "relu's grad at an input of exactly 0 is 1 instead of 0",
       "SEM-2.11", "zero"},
      {Mutant::AbsGradAtZeroOne, "abs_grad_at_zero_one", "abs's grad at an input of exactly 0 is 1 instead of 0",
       "SEM-2.11", "zero"},
      {Mutant::ReluNanToZero, "relu_nan_to_zero", "relu(NaN) is 0 (x > 0 ? x : 0) instead of NaN", "SEM-2.11",
       "nonfinite"},
      {Mutant::MulFlushesSubnormals, "mul_flushes_subnormals",
       "mul flushes a subnormal product to zero (FTZ) instead of keeping it", "SEM-2.11", "tiny"},
      {Mutant::SigmoidUnstable, "sigmoid_unstable",
       "sigmoid is computed as exp(x) / (1 + exp(x)): NaN for a large positive input instead of 1", "SEM-2.11",
       "large"},
      {Mutant::CrossEntropyUnshifted, "cross_entropy_unshifted",
       "cross_entropy's log_softmax does not subtract the row's max: inf/NaN for large logits", "SEM-2.11",
       "large"},
      {Mutant::EmbeddingRepeatedIndexOverwrites, "embedding_repeated_index_overwrites",
       "embedding's backward writes each row's grad instead of adding: a repeated index keeps only its last "
       "contribution",
       "SEM-2.11", "repeated_index"},
      {Mutant::BroadcastGradFirstElement, "broadcast_grad_first_element",
       "the grad of a broadcast 0-d operand is the first element of the incoming grad instead of its sum",
       "SEM-2.11", "broadcast"},
      {Mutant::MeanGradNotDivided, "mean_grad_not_divided", "mean's backward passes g on without dividing by n",
       "SEM-2.11", "any"},
      {Mutant::MseGradMissingTwo, "mse_grad_missing_two", "mse_loss's grad is (a - b) / n instead of 2 (a - b) / n",
       "SEM-2.11", "any"},
      {Mutant::TanhGradOneMinusY, "tanh_grad_one_minus_y", "tanh's grad is g (1 - y) instead of g (1 - y^2)",
       "SEM-2.11", "any"},
      {Mutant::DivGradWrongSign, "div_grad_wrong_sign", "div's grad for the divisor is +a/b^2 instead of -a/b^2",
       "SEM-2.11", "any"},
      {Mutant::LinearBiasGradFirstRow, "linear_bias_grad_first_row",
       "linear's bias grad is the first row of g instead of its sum over the batch", "SEM-2.11", "any"},
      {Mutant::SoftplusThresholdIgnored, "softplus_threshold_ignored",
       "softplus is log1p(e^a) above 20 too: infinite where e^a overflows instead of a", "SEM-2.12", "large"},
      {Mutant::SoftplusGradSignFlipped, "softplus_grad_sign_flipped",
       "softplus's grad is g sigmoid(-a) instead of g sigmoid(a)", "SEM-2.12", "any"},
  };
  return catalogue;
}

std::optional<Mutant> mutant_from_name(const std::string& name) {
  for (const MutantInfo& m : mutant_catalogue()) {
    if (name == m.name) return m.id;
  }
  return std::nullopt;
}

const MutantInfo& mutant_info(Mutant m) {
  for (const MutantInfo& info : mutant_catalogue()) {
    if (info.id == m) return info;
  }
  throw std::invalid_argument("mutant_info: not a mutant of the catalogue");
}

const char* mutant_name(Mutant m) { return mutant_info(m).name; }

std::string mutant_names_joined() {
  std::string names;
  for (const MutantInfo& m : mutant_catalogue()) names += (names.empty() ? "" : ", ") + std::string(m.name);
  return names;
}

std::unique_ptr<Engine> make_mutant_engine(const std::string& name, std::optional<bool> zero_grad_default) {
  const bool zero_grad_default_none = zero_grad_default.value_or(oracle_build_version().major >= 2);  // SEM-12.1
  const std::optional<Mutant> m = mutant_from_name(name);
  if (!m) throw std::invalid_argument("unknown mutant '" + name + "' (known: " + mutant_names_joined() + ")");
  if (std::unique_ptr<ImplEngine> e = mutants_detail::make_action_mutant(*m, zero_grad_default_none)) return e;
  if (!mutants_detail::is_op_level(*m) && !mutants_detail::is_optimizer_level(*m))
    throw std::logic_error("mutant " + name + " has no engine");
  return std::make_unique<HookMutant>(*m, zero_grad_default_none);
}

}  // namespace lockstep
