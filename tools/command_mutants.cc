// `lockstep mutants`: runs the suite against every mutant of impl and prints the kill table
// (command_mutants.h).
#include "tools/command_mutants.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "conformance/report/atomic_file.h"
#include "conformance/generate/generators.h"
#include "conformance/run/interpreter.h"
#include "conformance/compare/expectations.h"
#include "conformance/program/coverage_cells.h"
#include "conformance/program/features.h"
#include "conformance/program/glob.h"
#include "conformance/run/fixture.h"
#include "conformance/run/named_case.h"
#include "conformance/program/program_json.h"
#include "conformance/run/replay.h"
#include "conformance/generate/shrink.h"
#include "tools/mutants/mutants.h"
#include "tools/commands.h"
#include "tools/engines.h"
#include "conformance/run/tested_implementation.h"
#include "conformance/run/runner.h"
#include "conformance/run/run_scope.h"
#include "conformance/run/zero_grad_default.h"
#include "tools/report_files.h"
#include "tools/workers.h"
#include "conformance/program/file_system.h"
#include <CLI/CLI.hpp>
#include "tools/cli_options.h"

namespace lockstep::tools {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The usual hand-written check: numpy.allclose(actual, expected, rtol=1e-3, atol=5e-4), i.e.
// |a - e| <= atol + rtol * |e| element-wise; equal infinities are close. With numpy's default
// equal_nan=False a NaN on either side is not close, so NaN in both final parameters counts as "caught";
// the table marks such a catch apart (it is gone with equal_nan=True).
constexpr double kRtol = 1e-3, kAtol = 5e-4;

bool allclose(const TensorValue& actual, const TensorValue& expected, bool equal_nan) {
  if (actual.shape != expected.shape || actual.data.size() != expected.data.size()) return false;
  for (size_t i = 0; i < actual.data.size(); ++i) {
    double a = actual.data[i], e = expected.data[i];
    if (equal_nan && std::isnan(a) && std::isnan(e)) continue;
    if (std::isnan(a) || std::isnan(e)) return false;
    if (std::isinf(a) || std::isinf(e)) {
      if (a != e) return false;
      continue;
    }
    if (!(std::fabs(a - e) <= kAtol + kRtol * std::fabs(e))) return false;
  }
  return true;
}

const Record& final_record(const Trace& t) { return t.records.empty() ? t.init : t.records.back(); }

enum class AllcloseVerdict { Missed, Caught, CaughtOnlyByNan };

const char* verdict_text(AllcloseVerdict v) {
  switch (v) {
    case AllcloseVerdict::Caught: return "caught";
    case AllcloseVerdict::CaughtOnlyByNan: return "NaN only";
    case AllcloseVerdict::Missed: break;
  }
  return "**missed**";
}
const char* verdict_name(AllcloseVerdict v) {
  switch (v) {
    case AllcloseVerdict::Caught: return "caught";
    case AllcloseVerdict::CaughtOnlyByNan: return "caught_only_by_nan";
    case AllcloseVerdict::Missed: break;
  }
  return "missed";
}

// Whether allclose on the final parameter values tells the mutant from the oracle on `program`, run to the
// end on each without re-synchronisation (`oracle_trace`: the oracle's run of it).
AllcloseVerdict allclose_verdict(const Trace& oracle_trace, const Program& program, const std::string& mutant) {
  auto mutated = make_engine("impl", mutant);
  Trace mutant_trace = run_program(program, *mutated);
  const Record& expected = final_record(oracle_trace);
  const Record& actual = final_record(mutant_trace);
  auto all_close = [&](bool equal_nan) {
    for (const ParamObservation& e : expected.state.params) {
      const ParamObservation* a = actual.state.param(e.name);
      if (!a || !allclose(a->value, e.value, equal_nan)) return false;
    }
    return true;
  };
  if (all_close(false)) return AllcloseVerdict::Missed;
  return all_close(true) ? AllcloseVerdict::CaughtOnlyByNan : AllcloseVerdict::Caught;
}

// How the suite reaches impl: in-process (lockstep mode, re-synchronised after every action) or through impl's
// protocol driver (whole programs, free-running with the error budget: the path every external implementation
// takes).
struct SuitePath {
  std::string name;                                                         // "in-process", "driver"
  std::function<std::unique_ptr<TestedImplementation>(const std::string&)> make;  // mutant ("": clean impl)
  std::function<std::string(const std::string&)> engine_arguments;          // for reproduce lines
};

struct KillRow {
  bool killed = false;
  std::string killer;           // a named case id or "random-17"
  std::string reproduce;        // a command line that shows the kill
  std::string failure;          // the shrunk program's first difference
  std::string shrunk_size;      // describe(program_size(...))
  int shrink_steps = 0;
  int64_t programs_tried = 0;   // named cases and random programs run on the mutant
  double seconds_to_kill = 0;   // from the mutant's start to the kill, shrinking excluded
  AllcloseVerdict allclose_shrunk = AllcloseVerdict::Missed;    // on the shrunk program
  AllcloseVerdict allclose_original = AllcloseVerdict::Missed;  // on the killing program before shrinking
  std::set<std::string> shrunk_cells;  // the coverage cells the shrunk killing program reaches (coverage_cells.h)
  std::string not_run;  // why the path did not run the mutant (one only a driver oracle judges, run without --oracle)
};

// The coverage cell (a glob on "table|row|column", coverage_cells.h) that holds the situation a mutant is made
// for: its killing program, shrunk, should reach it, which checks the coverage table's claims against the kill
// table ("this situation is reached, and a bug that only shows there is caught"). Mutants wrong everywhere
// (or whose situation is no single cell) have none.
const char* situation_of(const std::string& mutant) {
  static const std::map<std::string, const char*> situations = {
      {"retain_graph_ignored", "situations|*|backward through a freed graph"},
      {"accumulate_in_place_create_graph", "situations|*|create_graph"},
      {"group_options_inherit_defaults", "groups|*|partial group options"},
      {"lr_zero_group_skipped", "options|*|lr 0"},
      {"activation_grad_recomputed", "situations|*|activation of a param, stepped, backward again"},
      {"sum_0d_grad_copied", "situations|*|0-d grads sharing storage, accumulated again"},
      {"accumulate_per_edge", "situations|*|param used twice*"},
      {"pow_grad_via_output", "ops|pow^? *|zero"},
      {"pow_negative_base_nan", "ops|pow^? *|negative"},
      {"relu_grad_at_zero_one", "ops|relu *|zero"},
      {"abs_grad_at_zero_one", "ops|abs *|zero"},
      {"relu_nan_to_zero", "ops|relu *|nonfinite"},
      {"mul_flushes_subnormals", "ops|*|tiny"},
      {"sigmoid_unstable", "ops|sigmoid *|large"},
      {"softplus_threshold_ignored", "ops|softplus *|large"},
      {"cross_entropy_unshifted", "ops|cross_entropy *|large"},
      {"embedding_repeated_index_overwrites", "ops|embedding *|repeated_index"},
      {"broadcast_grad_first_element", "ops|*|broadcast"},
  };
  auto it = situations.find(mutant);
  return it == situations.end() ? "" : it->second;
}

bool reaches(const std::set<std::string>& cells, const std::string& glob) {
  return std::any_of(cells.begin(), cells.end(), [&](const std::string& c) { return glob_match(glob, c); });
}

struct MutantRows {
  const MutantInfo* info = nullptr;
  std::vector<KillRow> by_path;  // one per SuitePath, in order
  std::optional<KillRow> replay; // the fixture corpus, when replayed
};

// The fixture corpus replayed in-process on each mutant (no oracle, no shrinking: a fixture is what it is).
class ReplayKills {
 public:
  ReplayKills(std::vector<Fixture> fixtures, std::string driver, std::string fixtures_dir)
      : fixtures_(std::move(fixtures)), driver_(std::move(driver)), fixtures_dir_(std::move(fixtures_dir)) {
    for (const Fixture& f : fixtures_)
      clean_passes_.push_back(passes(f, ""));
  }
  size_t size() const { return fixtures_.size(); }

  KillRow run(const MutantInfo& info) {
    KillRow row;
    const auto t0 = Clock::now();
    for (size_t i = 0; i < fixtures_.size(); ++i) {
      ++row.programs_tried;
      if (!clean_passes_[i]) continue;
      ReplayCaseResult r = replay(fixtures_[i], info.name);
      if (r.status == ReplayStatus::Passed) continue;
      row.killed = true;
      row.killer = fixtures_[i].id;
      row.seconds_to_kill = seconds_since(t0);
      row.failure = r.summary();
      row.shrunk_size = describe(program_size(fixtures_[i].program));
      row.reproduce = fmt::format("lockstep replay{} --engine {} --only {}",
                                  fixtures_dir_.empty() ? "" : " --fixtures " + shell_quote(fixtures_dir_),
                                  shell_quote((driver_.empty() ? "lockstep-impl-driver" : driver_) + " --mutant " + info.name),
                                  shell_quote(fixtures_[i].id));
      return row;
    }
    row.seconds_to_kill = seconds_since(t0);
    return row;
  }

 private:
  ReplayCaseResult replay(const Fixture& f, const std::string& mutant) {
    return replay_in_process(f, [&] { return make_engine("impl", mutant); }, ReplayConfig{});
  }
  bool passes(const Fixture& f, const std::string& mutant) { return replay(f, mutant).status == ReplayStatus::Passed; }

  std::vector<Fixture> fixtures_;
  std::string driver_;
  std::string fixtures_dir_;  // empty: the shipped corpus
  std::vector<bool> clean_passes_;
};

class MutantsRun {
 public:
  MutantsRun(const MutantsArgs& args, std::vector<NamedCase> cases, Expectations expectations, const SuitePath& path)
      : args_(args), cases_(std::move(cases)), expectations_(std::move(expectations)), path_(path),
        clean_(path.make("")) {
    // The stream `lockstep run` draws with the same seed and max size at its defaults (every fourth program with
    // NaN and +-Inf), so a kill at program i is a failure of the default run at --index i.
    GenOptions gen;
    gen.max_size = args.max_size;
    gen.special_values_every = RunArgs{}.special_values_every;
    if (!args.oracle.empty()) limit_to_the_driver_oracle(gen);
    programs_.emplace(args.seed, gen);
    for (const NamedCase& c : cases_) {
      case_features_.push_back(program_features(c.program));
      case_in_scope_.push_back(args.oracle.empty() || in_scope(scope_, c.id, c.program, case_features_.back()));
    }
  }

  // Empty when the path works; else why not (a driver that cannot start).
  std::string fatal_error() const { return clean_->fatal_error(); }

  KillRow run(const MutantInfo& info) {
    KillRow row;
    if (info.needs_driver_oracle() && args_.oracle.empty()) {
      row.not_run = "LibTorch's C++ API has no maximize (SEMANTICS 20.2): run with --oracle CMD";
      return row;
    }
    const auto t0 = Clock::now();
    std::unique_ptr<TestedImplementation> mutant = path_.make(info.name);
    const std::string prefix =
        fmt::format("lockstep run --engine {}", path_.engine_arguments(info.name));

    for (size_t k = 0; k < cases_.size(); ++k) {
      const NamedCase& c = cases_[k];
      if (!case_in_scope_[k]) continue;
      ++row.programs_tried;
      LockstepResult result = run_case(*mutant, c, case_features_[k], expectations_);
      if (!is_unexplained_failure(c.id, result, &expectations_) || !clean_passes_case(k)) continue;
      row.seconds_to_kill = seconds_since(t0);
      row.killer = c.id;
      row.reproduce = prefix + " --case " + shell_quote(c.id);
      // Shrink on the comparison with the oracle when it failed; a kill by the claim checks alone stays as it is.
      row.allclose_original = allclose(c.program, info.name);
      if (!run_program_case(*mutant, c.id, c.program, case_features_[k], expectations_).passed) {
        finish(row, shrinkable_program(c.program), c.id, *mutant, info.name);
      } else {
        finish_unshrunk(row, c.program, result, info.name);
      }
      return row;
    }

    for (int64_t i = 0; i < args_.count; ++i) {
      ++row.programs_tried;
      const bool special = programs_->special_values_at(static_cast<uint64_t>(i));
      rc::Shrinkable<Program> shrinkable = programs_->at(static_cast<uint64_t>(i));
      const std::string id = fmt::format("random-{}", i);
      const Program program = shrinkable.value();
      const std::set<std::string> features = program_features(program);
      if (!is_unexplained_failure(id, run_program_case(*mutant, id, program, features, expectations_), &expectations_))
        continue;
      if (!clean_passes_random(i, program, features)) continue;
      row.seconds_to_kill = seconds_since(t0);
      row.killer = id + (special ? " (special values)" : "");
      row.reproduce = fmt::format("{} --seed {} --max-size {} --index {}", prefix, args_.seed, args_.max_size, i);
      row.allclose_original = allclose(shrinkable.value(), info.name);
      finish(row, shrinkable, id, *mutant, info.name);
      return row;
    }
    return row;
  }

 private:
  // A driver as the oracle (--oracle): the scope and the program stream of `lockstep run --oracle CMD` on this path
  // (command_run.cc), so that a kill at program i is that run's --index i: what the oracle's hello and its API
  // profile, turned around, leave out, and maximize in the programs (SEMANTICS 20.2).
  void limit_to_the_driver_oracle(GenOptions& gen) {
    clean_->capabilities();
    const Capabilities* oracle_caps = clean_->oracle_capabilities();
    if (!fatal_error().empty() || !oracle_caps) return;
    // Throws InputError (the oracle's profile or expectations file), caught by the caller.
    scope_ = make_scope_against_oracle({clean_->capabilities(), clean_->zero_grad_rule(), clean_->pytorch_version(),
                                        oracle_caps, args_.oracle, "", "", "", args_.oracle_expectations_file},
                                       expectations_);
    if (!scope_.scope->empty()) gen.scope = scope_.scope;
    gen.maximize = true;
  }

  // allclose_verdict with the oracle's run of `program`, as the clean implementation's path compares with: LibTorch
  // in-process, or the driver oracle's trace (TestedImplementation::oracle_trace).
  AllcloseVerdict allclose(const Program& program, const std::string& mutant) {
    std::string why;
    std::optional<Trace> oracle_trace = clean_->oracle_trace("allclose", program, why);
    return oracle_trace ? allclose_verdict(*oracle_trace, program, mutant) : AllcloseVerdict::Missed;
  }

  bool clean_passes_case(size_t k) {
    const NamedCase& c = cases_[k];
    auto it = clean_cases_.find(c.id);
    if (it == clean_cases_.end())
      it = clean_cases_
               .emplace(c.id, !is_unexplained_failure(c.id, run_case(*clean_, c, case_features_[k], expectations_),
                                                      &expectations_))
               .first;
    return it->second;
  }
  bool clean_passes_random(int64_t i, const Program& p, const std::set<std::string>& features) {
    auto it = clean_random_.find(i);
    if (it == clean_random_.end())
      it = clean_random_.emplace(i, clean_passes(fmt::format("random-{}", i), p, features)).first;
    return it->second;
  }
  bool clean_passes(const std::string& id, const Program& p, const std::set<std::string>& features) {
    return !is_unexplained_failure(id, run_program_case(*clean_, id, p, features, expectations_), &expectations_);
  }

  // Shrinks the killing program (a candidate must still kill: fail on the mutant, pass on clean impl) and
  // fills in the rest of the row.
  void finish(KillRow& row, const rc::Shrinkable<Program>& killing, const std::string& id,
              TestedImplementation& mutant, const std::string& mutant_name) {
    ShrinkStats stats;
    auto still_kills = [&](const Program& candidate) {
      const std::set<std::string> features = program_features(candidate);
      return is_unexplained_failure(id, run_program_case(mutant, id, candidate, features, expectations_),
                                    &expectations_) &&
             clean_passes(id, candidate, features);
    };
    Program shrunk = shrink_program(killing, still_kills, args_.shrink_seconds, &stats);
    row.shrink_steps = stats.steps;
    finish_unshrunk(row, shrunk, run_program_case(mutant, id, shrunk, expectations_), mutant_name);
  }

  void finish_unshrunk(KillRow& row, const Program& program, const LockstepResult& result,
                       const std::string& mutant_name) {
    row.killed = true;
    row.shrunk_size = describe(program_size(program));
    row.shrunk_cells = coverage_cells(program);
    row.failure = result.failure_summary();
    if (row.failure.empty()) row.failure = result.engine_failure;
    row.allclose_shrunk = allclose(program, mutant_name);
  }

  const MutantsArgs& args_;
  std::vector<NamedCase> cases_;
  std::vector<std::set<std::string>> case_features_;  // program_features() of cases_[k], computed once
  std::vector<bool> case_in_scope_;                   // whether cases_[k] runs (--oracle: the driver oracle's scope)
  RunScope scope_;                                    // --oracle: limit_to_the_driver_oracle()
  Expectations expectations_;
  const SuitePath& path_;
  std::unique_ptr<TestedImplementation> clean_;
  std::optional<RandomPrograms> programs_;
  std::map<std::string, bool> clean_cases_;
  std::map<int64_t, bool> clean_random_;
};

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '|') c = ' ';
  }
  return s;
}

std::string markdown(const MutantsArgs& args, const std::vector<SuitePath>& paths, const std::vector<MutantRows>& rows,
                     double total_seconds) {
  std::vector<size_t> killed(paths.size(), 0), not_run(paths.size(), 0);
  size_t caught_shrunk = 0, caught_original = 0;
  for (const MutantRows& m : rows) {
    for (size_t p = 0; p < paths.size(); ++p) {
      killed[p] += m.by_path[p].killed;
      not_run[p] += !m.by_path[p].not_run.empty();
    }
    const KillRow& r = m.by_path.front();
    caught_shrunk += r.killed && r.allclose_shrunk == AllcloseVerdict::Caught;
    caught_original += r.killed && r.allclose_original == AllcloseVerdict::Caught;
  }
  std::string out = "# Mutant kill table\n\n";
  out += fmt::format("`lockstep mutants --count {} --seed {} --max-size {}{}` ({:.0f} s):", args.count, args.seed,
                     args.max_size, args.oracle.empty() ? "" : " --oracle " + shell_quote(args.oracle), total_seconds);
  for (size_t p = 0; p < paths.size(); ++p)
    out += fmt::format("{} {} of {} mutants killed {}{}", p ? ";" : "", killed[p], rows.size() - not_run[p],
                       paths[p].name == "driver" ? "through impl's protocol driver (free-running, error budget)"
                       : args.oracle.empty()     ? "in-process (lockstep)"
                                                 : "in-process (free-running)",
                       not_run[p] ? fmt::format(" ({} not run: only a driver oracle judges them, --oracle)", not_run[p]) : "");
  out += ".\n\n";
  // Programs to kill (named cases first, then random programs of the default run's stream) per path.
  for (size_t p = 0; p < paths.size(); ++p) {
    std::vector<int64_t> tried;
    for (const MutantRows& m : rows)
      if (m.by_path[p].killed) tried.push_back(m.by_path[p].programs_tried);
    std::sort(tried.begin(), tried.end());
    if (!tried.empty())
      out += fmt::format("{}: median {} programs to kill (named cases count first), most {}.\n", paths[p].name,
                         tried.size() % 2 ? tried[tried.size() / 2]
                                          : (tried[tried.size() / 2 - 1] + tried[tried.size() / 2]) / 2,
                         tried.back());
  }
  const bool with_replay = !rows.empty() && rows.front().replay.has_value();
  if (with_replay) {
    size_t ops = 0, ops_killed = 0, all_killed = 0;
    for (const MutantRows& m : rows) {
      all_killed += m.replay->killed;
      ops += m.info->is_op();
      ops_killed += m.info->is_op() && m.replay->killed;
    }
    out += fmt::format("replay (the fixture corpus alone, no LibTorch): {} of {} mutants killed; op mutants: {} of {}.\n",
                       all_killed, rows.size(), ops_killed, ops);
  }
  {
    size_t with_situation = 0, reached = 0;
    for (const MutantRows& m : rows) {
      const std::string situation = situation_of(m.info->name);
      if (situation.empty()) continue;
      ++with_situation;
      reached += m.by_path.front().killed && reaches(m.by_path.front().shrunk_cells, situation);
    }
    if (with_situation)
      out += fmt::format("situations: {} of {} mutants made for one coverage cell were killed by a program that, shrunk, "
                         "still reaches it.\n", reached, with_situation);
  }
  out += "\n";
  out += fmt::format(
      "The allclose columns run a program to the end on the oracle and on the mutant, without "
      "re-synchronisation, and apply the usual hand-written check, allclose(rtol=1e-3, atol=5e-4) on the final "
      "parameter values only, with numpy's default equal_nan=False (\"NaN only\": caught only because NaN is not "
      "equal to NaN; with equal_nan=True it is missed). On the in-process killing program, shrunk, it catches {} of "
      "the {} killed mutants; before shrinking, {}.\n\n",
      caught_shrunk, killed.front(), caught_original);
  out += "| mutant | breaks |";
  for (const SuitePath& p : paths) out += fmt::format(" {0}: killed by | {0}: time (programs) |", p.name);
  if (with_replay) out += " replay: killed by |";
  out += " situation (coverage cell), reached by the shrunk killer |";
  out += " shrunk program | allclose, shrunk | allclose, before shrinking |\n|---|---|";
  for (size_t p = 0; p < paths.size(); ++p) out += "---|---|";
  if (with_replay) out += "---|";
  out += "---|---|---|---|\n";
  for (const MutantRows& m : rows) {
    out += fmt::format("| `{}` | {}{} |", m.info->name, m.info->semantics,
                       m.info->is_op() ? fmt::format(" (op, {})", m.info->edge) : "");
    for (const KillRow& r : m.by_path)
      out += !r.not_run.empty() ? std::string(" not run (needs --oracle) | - |")
             : r.killed         ? fmt::format(" `{}` | {:.2f} s ({}) |", r.killer, r.seconds_to_kill, r.programs_tried)
                                : fmt::format(" **survived** | ({}) |", r.programs_tried);
    if (with_replay)
      out += m.replay->killed ? fmt::format(" `{}` |", m.replay->killer)
                              : std::string(" **survived** |");
    const KillRow& r = m.by_path.front();
    const std::string situation = situation_of(m.info->name);
    out += situation.empty() ? " - |"
                             : fmt::format(" `{}` {} |", situation,
                                           !r.killed ? "-" : reaches(r.shrunk_cells, situation) ? "yes" : "**no**");
    out += fmt::format(" {} | {} | {} |\n", r.killed ? r.shrunk_size : "-", r.killed ? verdict_text(r.allclose_shrunk) : "-",
                       r.killed ? verdict_text(r.allclose_original) : "-");
  }
  out += "\n## The mutants\n\n";
  for (const MutantRows& m : rows) {
    out += fmt::format("- `{}` ({}): {}.", m.info->name, m.info->semantics, m.info->description);
    for (size_t p = 0; p < paths.size(); ++p) {
      const KillRow& r = m.by_path[p];
      if (r.killed)
        out += fmt::format(" {}: {}. Reproduce: `{}`", paths[p].name, one_line(r.failure), r.reproduce);
    }
    if (m.replay && m.replay->killed)
      out += fmt::format(" replay: {}. Reproduce: `{}`", one_line(m.replay->failure), m.replay->reproduce);
    out += "\n";
  }
  return out;
}

std::string json_text(const MutantsArgs& args, const std::vector<SuitePath>& paths, const std::vector<MutantRows>& rows) {
  nlohmann::ordered_json doc;
  doc["seed"] = args.seed;
  doc["count"] = args.count;
  doc["max_size"] = args.max_size;
  doc["oracle"] = args.oracle.empty() ? "libtorch-cpp" : args.oracle;
  doc["allclose"] = {{"rtol", kRtol}, {"atol", kAtol}, {"equal_nan", false}, {"on", "final parameter values"}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const MutantRows& mr : rows) {
    nlohmann::ordered_json m;
    m["mutant"] = mr.info->name;
    m["semantics"] = mr.info->semantics;
    m["description"] = mr.info->description;
    m["killed"] = std::all_of(mr.by_path.begin(), mr.by_path.end(), [](const KillRow& r) { return r.killed; });
    if (mr.info->needs_driver_oracle()) m["needs_driver_oracle"] = true;
    nlohmann::ordered_json by_path = nlohmann::ordered_json::object();
    for (size_t p = 0; p < paths.size(); ++p) {
      const KillRow& r = mr.by_path[p];
      nlohmann::ordered_json k;
      k["killed"] = r.killed;
      if (!r.not_run.empty()) k["not_run"] = r.not_run;
      k["programs_run"] = r.programs_tried;
      if (r.killed) {
        k["killed_by"] = r.killer;
        k["reproduce"] = r.reproduce;
        k["first_difference"] = r.failure;
        k["shrunk_size"] = r.shrunk_size;
        k["shrink_steps"] = r.shrink_steps;
        k["seconds_to_kill"] = r.seconds_to_kill;
        k["allclose_shrunk"] = verdict_name(r.allclose_shrunk);
        k["allclose_before_shrinking"] = verdict_name(r.allclose_original);
      }
      by_path[paths[p].name] = std::move(k);
    }
    m["paths"] = std::move(by_path);
    if (mr.info->is_op()) m["edge"] = mr.info->edge;
    if (const std::string situation = situation_of(mr.info->name); !situation.empty()) {
      m["situation"] = situation;
      m["situation_reached_by_shrunk_killer"] = mr.by_path.front().killed && reaches(mr.by_path.front().shrunk_cells, situation);
    }
    if (mr.replay) {
      nlohmann::ordered_json k;
      k["killed"] = mr.replay->killed;
      k["fixtures_run"] = mr.replay->programs_tried;
      if (mr.replay->killed) {
        k["killed_by"] = mr.replay->killer;
        k["reproduce"] = mr.replay->reproduce;
        k["first_difference"] = mr.replay->failure;
      }
      m["replay"] = std::move(k);
    }
    list.push_back(std::move(m));
  }
  doc["mutants"] = std::move(list);
  return doc.dump(2) + "\n";
}

// lockstep-impl-driver beside this binary (the build puts both in build/).
std::string impl_driver_beside_this_binary() {
  const std::string self = files::executable_path();
  if (self.empty()) return "";
  const std::string driver = files::join(files::parent_path(self), "lockstep-impl-driver");
  return files::exists(driver) ? driver : "";
}

}  // namespace

namespace {

// The console lines of one mutant: per path killed (by what, how fast, how small) or SURVIVED; the replay.
void print_mutant_lines(const MutantRows& mr, const std::vector<SuitePath>& paths) {
  const MutantInfo& m = *mr.info;
  for (size_t p = 0; p < paths.size(); ++p) {
    const KillRow& row = mr.by_path[p];
    if (!row.not_run.empty())
      fmt::print("  not run   {:<36} {:<10} ({})\n", m.name, paths[p].name, row.not_run);
    else if (row.killed)
      fmt::print("  killed    {:<36} {:<10} by {} after {:.2f} s; shrunk to {}\n", m.name, paths[p].name, row.killer,
                 row.seconds_to_kill, row.shrunk_size);
    else
      fmt::print("  SURVIVED  {:<36} {:<10} ({} programs)\n", m.name, paths[p].name, row.programs_tried);
  }
  if (mr.replay) {
    if (mr.replay->killed)
      fmt::print("  killed    {:<36} {:<10} by {} after {:.2f} s\n", m.name, "replay", mr.replay->killer,
                 mr.replay->seconds_to_kill);
    else
      fmt::print("  SURVIVED  {:<36} {:<10} ({} fixtures)\n", m.name, "replay", mr.replay->programs_tried);
  }
  std::fflush(stdout);
}

// A worker's rows for the parent (--jobs): every field of KillRow, nothing else (not a user-facing format).
nlohmann::ordered_json kill_row_to_json(const KillRow& r) {
  return {{"killed", r.killed}, {"killer", r.killer}, {"reproduce", r.reproduce}, {"failure", r.failure},
          {"shrunk_size", r.shrunk_size}, {"shrink_steps", r.shrink_steps}, {"programs_tried", r.programs_tried},
          {"seconds_to_kill", r.seconds_to_kill}, {"allclose_shrunk", static_cast<int>(r.allclose_shrunk)},
          {"allclose_original", static_cast<int>(r.allclose_original)}, {"shrunk_cells", r.shrunk_cells},
          {"not_run", r.not_run}};
}
KillRow kill_row_from_json(const nlohmann::ordered_json& j) {
  KillRow r;
  r.killed = j.at("killed").get<bool>();
  r.killer = j.at("killer").get<std::string>();
  r.reproduce = j.at("reproduce").get<std::string>();
  r.failure = j.at("failure").get<std::string>();
  r.shrunk_size = j.at("shrunk_size").get<std::string>();
  r.shrink_steps = j.at("shrink_steps").get<int>();
  r.programs_tried = j.at("programs_tried").get<int64_t>();
  r.seconds_to_kill = j.at("seconds_to_kill").get<double>();
  r.allclose_shrunk = static_cast<AllcloseVerdict>(j.at("allclose_shrunk").get<int>());
  r.allclose_original = static_cast<AllcloseVerdict>(j.at("allclose_original").get<int>());
  r.shrunk_cells = j.at("shrunk_cells").get<std::set<std::string>>();
  r.not_run = j.at("not_run").get<std::string>();
  return r;
}
nlohmann::ordered_json rows_to_json(const MutantRows& mr) {
  nlohmann::ordered_json paths = nlohmann::ordered_json::array();
  for (const KillRow& r : mr.by_path) paths.push_back(kill_row_to_json(r));
  return {{"paths", paths}, {"replay", mr.replay ? kill_row_to_json(*mr.replay) : nlohmann::ordered_json()}};
}
MutantRows rows_from_json(const nlohmann::ordered_json& j) {
  MutantRows mr;
  for (const nlohmann::ordered_json& r : j.at("paths")) mr.by_path.push_back(kill_row_from_json(r));
  if (!j.at("replay").is_null()) mr.replay = kill_row_from_json(j.at("replay"));
  return mr;
}

}  // namespace

int command_mutants(const MutantsArgs& args) {
  const auto& catalogue = mutant_catalogue();
  if (args.list) {
    for (const MutantInfo& m : catalogue) fmt::print("{:<36} {:<8} {}\n", m.name, m.semantics, m.description);
    return kExitOk;
  }
  if (!oracle_available()) {
    std::cerr << "lockstep mutants: " << kNoOracle << "\n";
    return kExitInputError;
  }
  auto selected_by_only = [&args](const MutantInfo& m) { return args.only.empty() || glob_match(args.only, m.name); };
  if (std::none_of(catalogue.begin(), catalogue.end(), selected_by_only)) {
    std::cerr << "lockstep mutants: --only '" << args.only << "' names no mutant (known: " << mutant_names_joined()
              << ")\n";
    return kExitInputError;
  }
  if (args.paths != "both" && args.paths != "in-process" && args.paths != "driver") {
    std::cerr << "lockstep mutants: --paths must be both, in-process or driver\n";
    return kExitInputError;
  }
  RunInputs in;  // as `lockstep run` loads them for impl (runner.h)
  try {
    in = load_run_inputs({args.cases_dir, default_expectations_file(), ""});
    if (!args.oracle.empty() && args.cases_dir.empty())  // as `lockstep run --oracle` (SEMANTICS 20.2)
      for (NamedCase& c : load_cases(python_oracle_cases_dir())) in.cases.push_back(std::move(c));
  } catch (const std::exception& e) {
    std::cerr << "lockstep mutants: " << e.what() << "\n";
    return kExitInputError;
  }
  const std::string driver = args.impl_driver.empty() ? impl_driver_beside_this_binary() : args.impl_driver;
  if (args.paths != "in-process" && driver.empty()) {
    std::cerr << "lockstep mutants: lockstep-impl-driver not found beside this binary; give --impl-driver PATH "
                 "or --paths in-process\n";
    return kExitInputError;
  }

  EngineFactory make_oracle = [] { return make_engine("oracle"); };
  // --oracle: each path's implementation judged against the driver oracle, free-running (lockstep run --oracle).
  const std::string oracle = args.oracle;
  auto judged = [oracle](std::unique_ptr<TestedImplementation> subject) {
    return oracle.empty() ? std::move(subject) : against_driver_oracle(std::move(subject), oracle, DriverOptions{}, Tolerance{});
  };
  std::string oracle_flag = oracle.empty() ? "" : " --oracle " + shell_quote(oracle);
  if (!args.oracle_expectations_file.empty())
    oracle_flag += " --oracle-expectations " + shell_quote(path_for_reproduce(args.oracle_expectations_file));
  std::vector<SuitePath> paths;
  if (args.paths != "driver")
    paths.push_back(SuitePath{
        "in-process",
        [make_oracle, judged, oracle](const std::string& mutant) {
          LockstepOptions options;
          if (!oracle.empty()) options.mode = RunMode::FreeRunning;
          return judged(in_process_implementation(make_oracle, [mutant] { return make_engine("impl", mutant); }, options));
        },
        [oracle_flag](const std::string& mutant) { return "impl --mutant " + shell_quote(mutant) + oracle_flag; }});
  if (args.paths != "in-process")
    paths.push_back(SuitePath{
        "driver",
        [make_oracle, driver, judged](const std::string& mutant) {
          return judged(driver_implementation(make_oracle, mutant.empty() ? driver : driver + " --mutant " + mutant,
                                              DriverOptions{}, Tolerance{}));
        },
        [driver, oracle_flag](const std::string& mutant) { return shell_quote(driver + " --mutant " + mutant) + oracle_flag; }});

  const auto t0 = Clock::now();
  std::vector<const MutantInfo*> selected;
  for (const MutantInfo& m : catalogue)
    if (selected_by_only(m)) selected.push_back(&m);
  fmt::print("lockstep mutants: {} named cases, then up to {} random programs per mutant (seed {}, max size {}); "
             "paths: {}; oracle: {}\n",
             in.cases.size(), args.count, args.seed, args.max_size, args.paths,
             oracle.empty() ? "LibTorch's C++ API" : oracle);
  // Workers (workers.h): --jobs, else the machine's cores; mutant i in worker i % jobs, each with its own oracle,
  // impl, driver and clean baseline; the parent prints and reports the rows in catalogue order.
  int64_t jobs = args.jobs > 0 ? args.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = std::max<int64_t>(1, std::min<int64_t>(jobs, static_cast<int64_t>(selected.size())));
  std::vector<MutantRows> rows;
  auto run_these = [&](const std::vector<const MutantInfo*>& mutants, bool print) -> std::string {
    pin_oracle_threads();
    std::vector<std::unique_ptr<MutantsRun>> runs;
    for (const SuitePath& p : paths) {
      runs.push_back(std::make_unique<MutantsRun>(args, in.cases, in.expectations, p));
      if (!runs.back()->fatal_error().empty())
        return (oracle.empty() ? "the impl driver cannot start: " : "") + runs.back()->fatal_error();
    }
    std::optional<ReplayKills> replay_kills;
    if (args.replay)
      replay_kills.emplace(load_fixtures(args.fixtures_dir.empty() ? default_fixtures_dir() : args.fixtures_dir),
                           driver, args.fixtures_dir);  // InputError: caught by the caller
    for (const MutantInfo* m : mutants) {
      MutantRows mr;
      mr.info = m;
      for (size_t p = 0; p < paths.size(); ++p) mr.by_path.push_back(runs[p]->run(*m));
      if (replay_kills) mr.replay = replay_kills->run(*m);
      if (print) print_mutant_lines(mr, paths);
      rows.push_back(std::move(mr));
    }
    return "";
  };
  try {
    if (jobs == 1) {
      if (const std::string fatal = run_these(selected, true); !fatal.empty()) {
        std::cerr << "lockstep mutants: " << fatal << "\n";
        return kExitInputError;
      }
    } else {
      WorkerDir dir("lockstep-mutants");
      const std::vector<WorkerEnd> ends = run_workers(static_cast<int>(jobs), dir.path(), [&](int w, const std::string& own) {
        std::vector<const MutantInfo*> mine;
        for (size_t i = static_cast<size_t>(w); i < selected.size(); i += static_cast<size_t>(jobs)) mine.push_back(selected[i]);
        if (const std::string fatal = run_these(mine, false); !fatal.empty()) {
          std::cerr << "lockstep mutants: " << fatal << "\n";
          return kExitInputError;
        }
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const MutantRows& mr : rows) out.push_back(rows_to_json(mr));
        make_strings_valid_utf8(out);
        write_file_atomically(own + "/rows.json", out.dump());
        return kExitOk;
      });
      if (report_workers(ends, "lockstep mutants")) return kExitInputError;
      // Back in catalogue order: mutant i came from worker i % jobs, in order.
      std::vector<std::vector<MutantRows>> by_worker;
      for (int64_t w = 0; w < jobs; ++w) {
        by_worker.emplace_back();
        const nlohmann::ordered_json list =
            nlohmann::ordered_json::parse(read_text_file(dir.path() + "/" + std::to_string(w) + "/rows.json"));
        for (const nlohmann::ordered_json& j : list) by_worker.back().push_back(rows_from_json(j));
      }
      for (size_t i = 0; i < selected.size(); ++i) {
        MutantRows mr = std::move(by_worker[i % static_cast<size_t>(jobs)][i / static_cast<size_t>(jobs)]);
        mr.info = selected[i];
        print_mutant_lines(mr, paths);
        rows.push_back(std::move(mr));
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "lockstep mutants: " << e.what() << "\n";
    return kExitInputError;
  }
  const double total = seconds_since(t0);
  const std::string md = markdown(args, paths, rows, total);
  fmt::print("\n{}", md);
  if (!args.report_dir.empty()) {
    try {
      files::create_directories(args.report_dir);
      write_file_atomically(args.report_dir + "/mutants-report.md", md);
      write_file_atomically(args.report_dir + "/mutants-report.json", json_text(args, paths, rows));
      fmt::print("reports: {0}/mutants-report.md, {0}/mutants-report.json\n", args.report_dir);
    } catch (const std::exception& e) {
      std::cerr << "lockstep mutants: cannot write the reports: " << e.what() << "\n";
      return kExitInputError;
    }
  }
  for (const MutantRows& m : rows) {
    for (const KillRow& r : m.by_path)
      if (!r.killed && r.not_run.empty()) return kExitDiscrepancies;
    // Every mutant dies offline too: a replay-only implementation has only the corpus (issue 32: the catalogue's
    // replay kill rate stays 100 %).
    if (m.replay && !m.replay->killed) return kExitDiscrepancies;
  }
  return kExitOk;
}

CLI::App* add_mutants_command(CLI::App& app, MutantsArgs& args) {
  CLI::App* mutants = app.add_subcommand(
      "mutants", "Run the suite against every mutant of impl (tools/mutants/mutants.h) and print the kill table; exit 1 "
                 "if any mutant survives");
  mutants->add_option("--count", args.count, "Random programs per mutant, at most (stops at the first kill)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}))
      ->capture_default_str();
  add_program_stream_options(mutants, args.seed, args.max_size);
  add_report_dir_option(mutants, args.report_dir, "Where mutants-report.md and .json go");
  mutants->add_flag("--list", args.list, "List the mutants and exit");
  mutants->add_option("--only", args.only, "Run only this mutant, or the mutants a glob matches ('maximize_*')");
  CLI::Option* oracle = mutants->add_option("--oracle", args.oracle,
                      "A driver command line as the oracle instead of LibTorch's C++ API (as lockstep run --oracle): "
                      "runs the mutants of what that API lacks (maximize) live, and the named cases of "
                      "conformance/cases-python-oracle");
  mutants->add_option("--oracle-expectations", args.oracle_expectations_file,
                      "With --oracle: the oracle's known differences from LibTorch's C++ API (its expectations file), "
                      "applied turned around (SEMANTICS 20.4)")
      ->check(CLI::ExistingFile)
      ->needs(oracle);
  mutants->add_option("--shrink-seconds", args.shrink_seconds, "Time budget to shrink one killing program")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  mutants->add_option("--cases", args.cases_dir, "Directory of named cases (default: the shipped ones)");
  mutants->add_option("--paths", args.paths,
                      "Where the suite reaches each mutant: in-process (lockstep), driver (impl's protocol driver, "
                      "free-running), or both")
      ->check(CLI::IsMember({"both", "in-process", "driver"}))
      ->capture_default_str();
  mutants->add_flag("--no-replay", [&args](int64_t) { args.replay = false; },
                    "Do not replay the fixture corpus on each mutant");
  mutants->add_option("--fixtures", args.fixtures_dir, "Fixture corpus to replay (default: the shipped one)");
  add_jobs_option(mutants, args.jobs, "Worker processes, the mutants split over them (default: the machine's cores)");
  mutants->add_option("--impl-driver", args.impl_driver,
                      "lockstep-impl-driver to use for the driver path (default: beside this binary)");
  return mutants;
}

}  // namespace lockstep::tools
