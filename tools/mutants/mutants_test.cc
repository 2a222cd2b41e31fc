// Tests of the mutant catalogue (tools/mutants/mutants.h): every mutant an engine of its own, outside impl.
#include "tools/mutants/mutants.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "conformance/generate/generators.h"
#include "conformance/run/interpreter.h"
#include "conformance/program/trace_json.h"
#include "conformance/run/named_case.h"
#include "impl/engine_adapter.h"
#include "conformance/program/file_system.h"
#include "conformance/program/data_dir.h"

namespace lockstep {
namespace {

TEST(Mutants, CatalogueHasUniqueNamedMutantsEachSelectable) {
  const auto& catalogue = mutant_catalogue();
  EXPECT_GE(catalogue.size(), 53u);
  std::set<std::string> names;
  for (const MutantInfo& m : catalogue) {
    EXPECT_TRUE(names.insert(m.name).second) << "duplicate name " << m.name;
    EXPECT_EQ(mutant_from_name(m.name), m.id);
    EXPECT_STREQ(mutant_name(m.id), m.name);
    EXPECT_EQ(std::string(m.semantics).rfind("SEM-", 0), 0u) << m.name;
    EXPECT_FALSE(std::string(m.description).empty());
    auto engine = make_mutant_engine(m.name);
    EXPECT_EQ(engine->name(), std::string("impl+") + m.name);
  }
  EXPECT_EQ(make_impl_engine()->name(), "impl");
}

// impl reads as the specification: no file of the reference knows the catalogue (issue 13). The engine adapter
// (engine_adapter.*), the glue that puts impl behind the Engine interface, names the mutants as its users.
TEST(Mutants, ImplHasNoMutantHooks) {
  const std::string impl_dir = source_dir() + "/impl";
  int read = 0;
  for (const std::string& path : files::list_files(impl_dir, {".cc", ".h"})) {
    const std::string name = files::file_name(path);
    if (name.find("_test.cc") != std::string::npos || name.rfind("engine_adapter.", 0) == 0) continue;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    std::string lower = text.str();
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(lower.find("mutant"), std::string::npos) << name << " mentions mutants";
    ++read;
  }
  EXPECT_GT(read, 10);
}

TEST(Mutants, UnknownNameThrowsListingTheKnownOnes) {
  try {
    make_mutant_engine("no_such_mutant");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("no_such_mutant"), std::string::npos);
    EXPECT_NE(message.find("zero_grad_noop"), std::string::npos);
    EXPECT_NE(message.find("adam_skip_zero_grad"), std::string::npos);
  }
}

// y = (x*x).sum() with SGD(lr 0.1): backward, step, zero_grad, backward again.
Program small_sgd_program() {
  Program p;
  p.params.push_back({"x", DType::Float64, {3}, {1, 2, 3}});
  p.loss = sum(mul(param("x"), param("x")));
  OptimizerSpec sgd;
  sgd.kind = OptimizerKind::SGD;
  sgd.defaults.lr = 0.1;
  sgd.groups.push_back(ParamGroupSpec{{"x"}, std::nullopt});
  p.optimizer = sgd;
  Action forward, backward, step, zero;
  forward.kind = ActionKind::Forward;
  backward.kind = ActionKind::Backward;
  step.kind = ActionKind::Step;
  zero.kind = ActionKind::ZeroGrad;
  p.actions = {forward, backward, step, zero, forward, backward};
  validate(p);
  return p;
}

std::string trace_text(const Trace& t) {
  Trace copy = t;
  copy.engine.clear();
  return trace_to_json(copy).dump();
}

// impl is untouched by a mutated engine running interleaved with a clean one on the same thread.
TEST(Mutants, AMutatedEngineDoesNotLeakIntoACleanOneOnTheSameThread) {
  std::vector<Program> programs{small_sgd_program()};
  RandomPrograms random(11, GenOptions{});
  for (int i = 0; i < 12; ++i) programs.push_back(random.next().value());
  for (const MutantInfo& m : mutant_catalogue()) {
    for (const Program& program : programs) {
      auto alone = make_impl_engine();
      const std::string expected = trace_text(run_program(program, *alone));

      auto clean = make_impl_engine();
      auto mutated = make_mutant_engine(m.name);
      ProgramRunner clean_runner(program, *clean), mutated_runner(program, *mutated);
      Trace interleaved;
      interleaved.init = clean_runner.setup();
      mutated_runner.setup();
      for (size_t i = 0; i < program.actions.size(); ++i) {
        mutated_runner.run_action(i);
        interleaved.records.push_back(clean_runner.run_action(i));
      }
      ASSERT_EQ(trace_text(interleaved), expected) << "mutant " << m.name;
    }
  }
}

TEST(Mutants, ZeroGradNoopLeavesTheGradSEM_4_1) {
  const Program p = small_sgd_program();
  auto clean = make_impl_engine(false);  // zero_grad() zeroes in place (1.x's default, SEM-12.1), as the mutant's
  auto mutated = make_mutant_engine("zero_grad_noop");
  const Trace expected = run_program(p, *clean), actual = run_program(p, *mutated);
  // After zero_grad (action 3): zeros in place, versus the first backward's grad 2x, x = [1, 2, 3].
  EXPECT_EQ(expected.records[3].state.param("x")->grad.value.data, (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(actual.records[3].state.param("x")->grad.value.data, (std::vector<double>{2, 4, 6}));
}

TEST(Mutants, BackwardOverwritesLosesTheOldGradSEM_3_2) {
  Program p = small_sgd_program();
  p.actions.erase(p.actions.begin() + 2, p.actions.begin() + 4);  // forward, backward, forward, backward
  auto clean = make_impl_engine();
  auto mutated = make_mutant_engine("backward_overwrites");
  EXPECT_EQ(run_program(p, *clean).records[3].state.param("x")->grad.value.data, (std::vector<double>{4, 8, 12}));
  EXPECT_EQ(run_program(p, *mutated).records[3].state.param("x")->grad.value.data, (std::vector<double>{2, 4, 6}));
}

TEST(Mutants, RetainGraphIgnoredAllowsASecondBackwardSEM_2_5) {
  Program p = small_sgd_program();
  p.actions.erase(p.actions.begin() + 2, p.actions.end());
  Action again;
  again.kind = ActionKind::Backward;
  p.actions.push_back(again);  // forward, backward, backward (x*x saved its operands)
  auto clean = make_impl_engine();
  auto mutated = make_mutant_engine("retain_graph_ignored");
  const Trace expected = run_program(p, *clean), actual = run_program(p, *mutated);
  ASSERT_TRUE(expected.records[2].error.has_value());
  EXPECT_EQ(expected.records[2].error->kind, "backward_through_freed_graph");
  EXPECT_FALSE(actual.records[2].error.has_value());
  EXPECT_EQ(actual.records[2].state.param("x")->grad.value.data, (std::vector<double>{4, 8, 12}));
}

// AccumulatePerEdge (issue 32): with a grad that exists, the edges' contributions land in a new tensor, so a
// handle held on the grad keeps the old values; the values themselves agree. With no grad yet it is impl.
TEST(Mutants, AccumulatePerEdgeLeavesAHeldGradBehindSEM_3_2) {
  Program p;
  p.params = {{"w", DType::Float64, {2}, {1, 2}}};
  p.loss = add(sum(param("w")), sum(mul(param("w"), param("w"))));  // two edges: 1 and 2w
  Action hold;
  hold.kind = ActionKind::HoldGrad;
  hold.param = "w";
  hold.handle = "h";
  p.actions = {Action::forward(), Action::backward(), hold, Action::forward(), Action::backward()};
  auto clean = make_impl_engine();
  auto mutated = make_mutant_engine("accumulate_per_edge");
  const Trace expected = run_program(p, *clean), actual = run_program(p, *mutated);
  // After the first backward (no grad before): the same grad, 1 + 2w.
  EXPECT_EQ(actual.records[1].state.param("w")->grad.value.data, (std::vector<double>{3, 5}));
  EXPECT_EQ(expected.records[1].state.param("w")->grad.value.data, (std::vector<double>{3, 5}));
  // After the second: the same values, but impl accumulated in place (the handle sees them), the mutant not.
  EXPECT_EQ(actual.records[4].state.param("w")->grad.value.data, (std::vector<double>{6, 10}));
  EXPECT_EQ(expected.records[4].state.param("w")->grad.value.data, (std::vector<double>{6, 10}));
  EXPECT_TRUE(expected.records[4].state.param("w")->grad.same_as_previous);
  EXPECT_FALSE(actual.records[4].state.param("w")->grad.same_as_previous);
  EXPECT_EQ(expected.records[4].state.handle("h")->value.data, (std::vector<double>{6, 10}));
  EXPECT_EQ(actual.records[4].state.handle("h")->value.data, (std::vector<double>{3, 5}));
}

// Each RMSprop and Adagrad mutant deviates from impl on the named case written against it (SEM-14, SEM-15).
TEST(Mutants, RmspropAndAdagradMutantsFailTheirNamedCases) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"rmsprop_centered_ignored", "sem14-rmsprop-centered-subtracts-squared-mean"},
      {"rmsprop_momentum_buffer_raw_grad", "sem14-rmsprop-momentum-buffer-holds-scaled-gradient"},
      {"rmsprop_square_avg_unweighted", "sem14-rmsprop-centered-subtracts-squared-mean"},
      {"adagrad_lazy_state", "sem15-adagrad-state-from-construction-with-defaults-accumulator"},
      {"adagrad_lazy_state", "sem15-adagrad-added-param-has-no-state"},
      {"adagrad_group_initial_accumulator", "sem15-adagrad-state-from-construction-with-defaults-accumulator"},
      {"adagrad_lr_decay_per_optimizer", "sem15-adagrad-lr-decay-counts-per-parameter-step"},
  };
  for (const auto& [mutant, id] : pairs) {
    const NamedCase c = read_case_file(default_cases_dir() + "/" + id + ".json");
    auto clean = make_impl_engine();
    EXPECT_TRUE(check_case(c, run_program(c.program, *clean)).empty()) << id;
    auto mutated = make_mutant_engine(mutant);
    EXPECT_FALSE(check_case(c, run_program(c.program, *mutated)).empty()) << mutant << " passes " << id;
  }
}

// Each maximize mutant fails a named case of conformance/cases-python-oracle, which clean impl passes (SEM-20.1);
// the claims are checked on the implementation's own trace, so no oracle is needed here.
TEST(Mutants, MaximizeMutantsFailTheirNamedCasesSEM_20_1) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"maximize_ignored", "sem20-maximize-moves-up-the-gradient"},
      {"maximize_grad_in_place", "sem20-maximize-moves-up-the-gradient"},
      {"maximize_after_weight_decay", "sem20-maximize-negates-before-weight-decay"},
  };
  for (const auto& [mutant, id] : pairs) {
    const NamedCase c = read_case_file(python_oracle_cases_dir() + "/" + id + ".json");
    auto clean = make_impl_engine();
    EXPECT_TRUE(check_case(c, run_program(c.program, *clean)).empty()) << id;
    auto mutated = make_mutant_engine(mutant);
    EXPECT_FALSE(check_case(c, run_program(c.program, *mutated)).empty()) << mutant << " passes " << id;
    EXPECT_TRUE(mutant_info(*mutant_from_name(mutant)).needs_driver_oracle()) << mutant;
  }
  EXPECT_FALSE(mutant_info(Mutant::SgdWeightDecayAfterMomentum).needs_driver_oracle());
}

// maximize_grad_in_place leaves -g in .grad after the step, where impl leaves g (SEM-20.1).
TEST(Mutants, MaximizeGradInPlaceLeavesTheNegatedGradSEM_20_1) {
  const NamedCase c = read_case_file(python_oracle_cases_dir() + "/sem20-maximize-moves-up-the-gradient.json");
  auto clean = make_impl_engine();
  auto mutated = make_mutant_engine("maximize_grad_in_place");
  const Trace expected = run_program(c.program, *clean), actual = run_program(c.program, *mutated);
  const Record& after_step = expected.records.back();
  ASSERT_EQ(after_step.action, "step");
  EXPECT_EQ(after_step.state.param("w")->grad.value.data, (std::vector<double>{2, 4}));
  EXPECT_EQ(actual.records.back().state.param("w")->grad.value.data, (std::vector<double>{-2, -4}));
  // The step itself is right: w moves up the gradient on both.
  EXPECT_EQ(actual.records.back().state.param("w")->value.data, after_step.state.param("w")->value.data);
}

}  // namespace
}  // namespace lockstep
