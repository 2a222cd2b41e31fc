// Tests of the runner (runner.h) on impl against impl (torch-free): a named case in and out of the scope, its
// claims failing in their own field, a random program that passes (counted, nothing kept) and one that fails
// (shrunk to a smaller program failing the same way, the original kept beside it). The implementation that
// fails is impl with one planted error: its step does nothing.
#include "conformance/run/runner.h"

#include <cstdio>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "conformance/generate/generators.h"
#include "conformance/program/feature_areas.h"
#include "conformance/program/file_system.h"
#include "conformance/program/program_json.h"
#include "conformance/run/zero_grad_default.h"
#include "impl/engine_adapter.h"

namespace lockstep {
namespace {

// impl whose step() does nothing (a planted error every program with a step and a grad shows).
class StepDoesNothing : public Engine {
 public:
  std::string name() const override { return "impl-without-step"; }
  void add_parameter(const ParamSpec& spec) override { inner_->add_parameter(spec); }
  void make_optimizer(const OptimizerSpec& spec) override { inner_->make_optimizer(spec); }
  void forward(const Expr& loss, bool no_grad) override { inner_->forward(loss, no_grad); }
  void backward(const BackwardArgs& args) override { inner_->backward(args); }
  void zero_grad(std::optional<bool> set_to_none) override { inner_->zero_grad(set_to_none); }
  bool zero_grad_sets_to_none_by_default() const override { return inner_->zero_grad_sets_to_none_by_default(); }
  void set_grad_none(const std::string& param) override { inner_->set_grad_none(param); }
  void hold_grad(const std::string& param, const std::string& handle) override { inner_->hold_grad(param, handle); }
  void step() override {}
  std::optional<TensorValue> step_with_closure(StepClosure& closure) override { return closure.call(); }
  void set_group_options(int group, const OptimizerOptions& changes) override { inner_->set_group_options(group, changes); }
  void add_param_group(const ParamGroupSpec& group) override { inner_->add_param_group(group); }
  TensorValue clip_grad_norm(const std::vector<std::string>& params, double max_norm, double norm_type,
                             bool error_if_nonfinite) override {
    return inner_->clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite);
  }
  void clip_grad_value(const std::vector<std::string>& params, double clip_value) override {
    inner_->clip_grad_value(params, clip_value);
  }
  void state_dict(const std::string& checkpoint) override { inner_->state_dict(checkpoint); }
  void load_state_dict(const std::string& checkpoint, bool fresh) override {
    inner_->load_state_dict(checkpoint, fresh);
  }
  EngineState observe() override { return inner_->observe(); }
  void synchronise(const EngineState& target) override { inner_->synchronise(target); }

 private:
  std::unique_ptr<Engine> inner_ = make_impl_engine();
};

std::unique_ptr<TestedImplementation> impl_against_impl() {
  return in_process_implementation([] { return make_impl_engine(); }, [] { return make_impl_engine(); }, {});
}

std::unique_ptr<TestedImplementation> stepless_against_impl() {
  return in_process_implementation([] { return make_impl_engine(); }, [] { return std::make_unique<StepDoesNothing>(); },
                                   {});
}

const NamedCase& shipped_case(const std::vector<NamedCase>& cases, const std::string& id) {
  for (const NamedCase& c : cases)
    if (c.id == id) return c;
  throw std::runtime_error("no shipped case " + id);
}

TEST(Runner, LoadsTheShippedCasesAndRefusesAMissingFile) {
  const RunInputs in = load_run_inputs({});
  EXPECT_GT(in.cases.size(), 40u);
  EXPECT_TRUE(in.expectations.entries.empty());  // none given
  EXPECT_THROW(load_run_inputs({"", "", "/nonexistent/tolerance.json"}), std::exception);
  EXPECT_THROW(load_run_inputs({"", "/nonexistent/expectations.json", ""}), std::exception);
  EXPECT_THROW(load_run_inputs({"/nonexistent/cases", "", ""}), std::exception);
}

TEST(Runner, ARunTakesTheToleranceEntriesForEveryCase) {
  const std::string file = files::process_temp_dir() + "/runner_tolerance.json";
  {
    std::ofstream out(file);
    out << R"({"tolerance_overrides": [{"id": "*", "k": {"grad": 8}, "reason": "every case"},
                                       {"id": "random-*", "k": {"param": 64}, "reason": "random programs only"}]})";
  }
  const RunInputs in = load_run_inputs({"", "", file});
  EXPECT_EQ(in.tolerance.k(Quantity::Grad), 8);
  EXPECT_EQ(in.tolerance.k(Quantity::Param), Tolerance{}.k(Quantity::Param));  // one case's entry: not the run's
  std::remove(file.c_str());
}

TEST(Runner, ANamedCaseThatPassesKeepsNoProgramAndIsCounted) {
  RunInputs in = load_run_inputs({});
  auto subject = impl_against_impl();
  RunScope scope = make_run_scope(subject->capabilities(), "", "", "", "", in.expectations);
  CaseRunner runner(*subject, in.expectations, scope);
  const NamedCase& c = shipped_case(in.cases, "tut002-momentum-buffer-first-step-copy");
  std::optional<CaseReport> r = runner.named_case(c, "reproduce it");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, CaseStatus::Passed) << r->result.failure_summary();
  EXPECT_FALSE(r->program);
  EXPECT_FALSE(r->areas.empty());
  EXPECT_EQ(scope.coverage.tested, 1);
  EXPECT_GT(scope.coverage.exercised.count("sgd.momentum"), 0u);
  EXPECT_FALSE(runner.default_case_ran());
}

TEST(Runner, ANamedCaseOutOfScopeIsLeftOutWithItsReason) {
  RunInputs in = load_run_inputs({});
  auto subject = impl_against_impl();
  RunScope scope = make_run_scope(subject->capabilities(), "", "adam", "", "", in.expectations);
  CaseRunner runner(*subject, in.expectations, scope);
  std::string why;
  EXPECT_FALSE(runner.named_case(shipped_case(in.cases, "tut002-momentum-buffer-first-step-copy"), "", &why));
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(scope.coverage.out_of_scope, 1);
  ASSERT_EQ(scope.coverage.left_out_cases.size(), 1u);
  EXPECT_EQ(scope.coverage.left_out_cases[0].id, "tut002-momentum-buffer-first-step-copy");
  EXPECT_EQ(scope.coverage.tested, 0);
}

TEST(Runner, ANamedCaseWhoseClaimsBreakFailsWithTheClaimInItsOwnField) {
  RunInputs in = load_run_inputs({});
  auto subject = stepless_against_impl();
  RunScope scope = make_run_scope(subject->capabilities(), "", "", "", "", in.expectations);
  CaseRunner runner(*subject, in.expectations, scope);
  const NamedCase& c = shipped_case(in.cases, "tut002-momentum-buffer-first-step-copy");
  std::optional<CaseReport> r = runner.named_case(c, "lockstep run --case " + c.id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, CaseStatus::Failed);
  ASSERT_FALSE(r->result.claim_failures.empty());
  EXPECT_EQ(r->result.claim_failures[0].claim, c.claim);
  EXPECT_EQ(r->result.claim_failures[0].semantics, c.semantics);
  ASSERT_TRUE(r->program);  // a failure shows its program
  EXPECT_EQ(r->reproduce_command, "lockstep run --case " + c.id);
}

TEST(Runner, TheZeroGradDefaultCaseIsNotedWhenItRuns) {
  RunInputs in = load_run_inputs({});
  auto subject = impl_against_impl();
  RunScope scope = make_run_scope(subject->capabilities(), "", "", "", "", in.expectations);
  CaseRunner runner(*subject, in.expectations, scope);
  ASSERT_TRUE(runner.named_case(shipped_case(in.cases, kZeroGradDefaultCase), ""));
  EXPECT_TRUE(runner.default_case_ran());
}

TEST(Runner, APassingRandomProgramIsCountedAndKeepsNothingToShow) {
  Expectations none;
  auto subject = impl_against_impl();
  RunScope scope = make_run_scope(subject->capabilities(), "", "", "", "", none);
  CaseRunner runner(*subject, none, scope);
  RandomPrograms programs(7, GenOptions{});
  for (int i = 0; i < 5; ++i) {
    CaseReport r = runner.random_program("random-" + std::to_string(i), programs.at(i), "reproduce", 1.0);
    EXPECT_NE(r.status, CaseStatus::Failed) << r.result.failure_summary();
    if (r.status == CaseStatus::Passed) {
      EXPECT_FALSE(r.program);
    }
  }
  EXPECT_EQ(scope.coverage.tested, 5);
}

TEST(Runner, AFailingRandomProgramIsShrunkAndKeepsItsOriginal) {
  Expectations none;
  auto subject = stepless_against_impl();
  RunScope scope = make_run_scope(subject->capabilities(), "", "", "", "", none);
  CaseRunner runner(*subject, none, scope);
  RandomPrograms programs(7, GenOptions{});
  for (uint64_t i = 0; i < 50; ++i) {
    const rc::Shrinkable<Program> generated = programs.at(i);
    const LockstepResult first = run_program_case(*subject, "x", generated.value(), none);
    if (first.passed) continue;
    CaseReport r = runner.random_program("random-" + std::to_string(i), generated, "lockstep run --index", 5.0);
    ASSERT_EQ(r.status, CaseStatus::Failed);
    ASSERT_TRUE(r.program);
    ASSERT_TRUE(r.original_program);
    EXPECT_EQ(program_to_json(*r.original_program), program_to_json(generated.value()));
    EXPECT_LE(program_size(*r.program).actions, program_size(generated.value()).actions);
    EXPECT_TRUE(r.shrink_steps.has_value());
    EXPECT_EQ(r.result.failure_kind(), first.failure_kind());  // failing the same way
    EXPECT_EQ(r.reproduce_command, "lockstep run --index");
    // The shrunk program fails on the planted error and passes on impl.
    EXPECT_FALSE(run_program_case(*subject, "x", *r.program, none).passed);
    EXPECT_TRUE(run_program_case(*impl_against_impl(), "x", *r.program, none).passed);
    EXPECT_EQ(r.areas, feature_areas(*r.program));  // the failure counts where the shrunk program is
    return;
  }
  FAIL() << "no program of the first 50 shows a step that does nothing";
}

TEST(Runner, AnExpectedFailureKeepsItsProgramAndIsNotShrunk) {
  Expectations known = expectations_from_json(
      nlohmann::ordered_json::parse(R"({"expectations": [{"id": "random-*", "reason": "no step here"}]})"),
      "test");
  auto subject = stepless_against_impl();
  RunScope scope = make_run_scope(subject->capabilities(), "", "", "", "", known);
  CaseRunner runner(*subject, known, scope);
  RandomPrograms programs(7, GenOptions{});
  for (uint64_t i = 0; i < 50; ++i) {
    const rc::Shrinkable<Program> generated = programs.at(i);
    if (run_program_case(*subject, "x", generated.value(), known).passed) continue;
    CaseReport r = runner.random_program("random-" + std::to_string(i), generated, "reproduce", 5.0);
    ASSERT_EQ(r.status, CaseStatus::Known);
    EXPECT_NE(r.known_reason.find("no step here"), std::string::npos) << r.known_reason;
    ASSERT_TRUE(r.program);
    EXPECT_EQ(program_to_json(*r.program), program_to_json(generated.value()));
    EXPECT_FALSE(r.original_program);
    EXPECT_FALSE(r.shrink_steps);
    return;
  }
  FAIL() << "no program of the first 50 shows a step that does nothing";
}

}  // namespace
}  // namespace lockstep
