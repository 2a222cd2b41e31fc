// `lockstep mutants`: runs the suite against every mutant of impl and prints the kill table
// (command_mutants.h).
#include "tools/command_mutants.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "conformance/report/atomic_file.h"
#include "conformance/generate/generators.h"
#include "conformance/run/interpreter.h"
#include "conformance/compare/expectations.h"
#include "conformance/run/named_case.h"
#include "conformance/generate/shrink.h"
#include "impl/mutants.h"
#include "tools/commands.h"
#include "tools/engines.h"
#include "tools/lockstep_session.h"
#include "tools/report_files.h"

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
// end on each without re-synchronisation.
AllcloseVerdict allclose_verdict(const Program& program, const EngineFactory& make_mutant) {
  auto oracle = make_engine("oracle");
  auto mutant = make_mutant();
  Trace oracle_trace = run_program(program, *oracle);
  Trace mutant_trace = run_program(program, *mutant);
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

struct KillRow {
  const impl::MutantInfo* info = nullptr;
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
};

class MutantsRun {
 public:
  explicit MutantsRun(const MutantsArgs& args, std::vector<NamedCase> cases, Expectations known)
      : args_(args), cases_(std::move(cases)), known_(std::move(known)) {
    GenOptions gen;
    gen.max_size = args.max_size;
    plain_.emplace(args.seed, gen);
    gen.special_values = true;
    special_.emplace(args.seed, gen);
  }

  KillRow run(const impl::MutantInfo& info) {
    KillRow row;
    row.info = &info;
    const auto t0 = Clock::now();
    EngineFactory make_mutant = [&info] { return make_engine("impl", info.name); };
    const std::string prefix = fmt::format("lockstep run --engine impl --mutant {}", info.name);

    for (const NamedCase& c : cases_) {
      ++row.programs_tried;
      LockstepResult result = run_named_case(c, make_mutant, options_);
      if (!is_unexplained_failure(c.id, result, &known_) || !clean_passes_case(c)) continue;
      row.seconds_to_kill = seconds_since(t0);
      row.killer = c.id;
      row.reproduce = prefix + " --count 0 --case " + shell_quote(c.id);
      // Shrink on the lockstep comparison when it failed; a kill by the claim checks alone stays as it is.
      row.allclose_original = allclose_verdict(c.program, make_mutant);
      if (!run_against_oracle(c.program, make_mutant, options_).passed) {
        finish(row, shrinkable_program(c.program), c.id, make_mutant);
      } else {
        finish_unshrunk(row, c.program, result, make_mutant);
      }
      return row;
    }

    for (int64_t i = 0; i < args_.count; ++i) {
      ++row.programs_tried;
      const bool special = is_special(i);
      rc::Shrinkable<Program> shrinkable = (special ? *special_ : *plain_).at(static_cast<uint64_t>(i));
      const std::string id = fmt::format("random-{}", i);
      if (!is_unexplained_failure(id, run_against_oracle(shrinkable.value(), make_mutant, options_), &known_))
        continue;
      if (!clean_passes_random(i, shrinkable.value())) continue;
      row.seconds_to_kill = seconds_since(t0);
      row.killer = id + (special ? " (special values)" : "");
      row.reproduce = fmt::format("{} --seed {} --max-size {}{} --count {} --index {}", prefix, args_.seed,
                                  args_.max_size, special ? " --special-values" : "", i + 1, i);
      row.allclose_original = allclose_verdict(shrinkable.value(), make_mutant);
      finish(row, shrinkable, id, make_mutant);
      return row;
    }
    return row;
  }

 private:
  // Every fourth random program allows NaN and +-Inf (SEMANTICS §9), so a mutant that mishandles NaN dies.
  static bool is_special(int64_t i) { return i % 4 == 3; }

  EngineFactory clean_ = [] { return make_engine("impl"); };

  bool clean_passes_case(const NamedCase& c) {
    auto it = clean_cases_.find(c.id);
    if (it == clean_cases_.end())
      it = clean_cases_.emplace(c.id, !is_unexplained_failure(c.id, run_named_case(c, clean_, options_), &known_)).first;
    return it->second;
  }
  bool clean_passes_random(int64_t i, const Program& p) {
    auto it = clean_random_.find(i);
    if (it == clean_random_.end())
      it = clean_random_.emplace(i, clean_passes(fmt::format("random-{}", i), p)).first;
    return it->second;
  }
  bool clean_passes(const std::string& id, const Program& p) {
    return !is_unexplained_failure(id, run_against_oracle(p, clean_, options_), &known_);
  }

  // Shrinks the killing program (a candidate must still kill: fail on the mutant, pass on clean impl) and
  // fills in the rest of the row.
  void finish(KillRow& row, const rc::Shrinkable<Program>& killing, const std::string& id,
              const EngineFactory& make_mutant) {
    ShrinkStats stats;
    auto still_kills = [&](const Program& candidate) {
      return is_unexplained_failure(id, run_against_oracle(candidate, make_mutant, options_), &known_) &&
             clean_passes(id, candidate);
    };
    Program shrunk = shrink_program(killing, still_kills, args_.shrink_seconds, &stats);
    row.shrink_steps = stats.steps;
    finish_unshrunk(row, shrunk, run_against_oracle(shrunk, make_mutant, options_), make_mutant);
  }

  void finish_unshrunk(KillRow& row, const Program& program, const LockstepResult& result,
                       const EngineFactory& make_mutant) {
    row.killed = true;
    row.shrunk_size = describe(program_size(program));
    row.failure = result.failure_summary();
    if (row.failure.empty()) row.failure = result.engine_failure;
    row.allclose_shrunk = allclose_verdict(program, make_mutant);
  }

  const MutantsArgs& args_;
  std::vector<NamedCase> cases_;
  Expectations known_;
  LockstepOptions options_;
  std::optional<RandomPrograms> plain_, special_;
  std::map<std::string, bool> clean_cases_;
  std::map<int64_t, bool> clean_random_;
};

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '|') c = ' ';
  }
  return s;
}

std::string markdown(const MutantsArgs& args, const std::vector<KillRow>& rows, double total_seconds) {
  size_t killed = 0, caught_shrunk = 0, caught_original = 0;
  for (const KillRow& r : rows) {
    killed += r.killed;
    caught_shrunk += r.killed && r.allclose_shrunk == AllcloseVerdict::Caught;
    caught_original += r.killed && r.allclose_original == AllcloseVerdict::Caught;
  }
  std::string out = "# Mutant kill table\n\n";
  out += fmt::format(
      "`lockstep mutants --count {} --seed {} --max-size {}`: {} of {} mutants killed ({:.0f} s).\n\n"
      "The allclose columns run a program to the end on the oracle and on the mutant, without "
      "re-synchronisation, and apply the usual hand-written check, allclose(rtol=1e-3, atol=5e-4) on the final "
      "parameter values only, with numpy's default equal_nan=False (\"NaN only\": caught only because NaN is not "
      "equal to NaN; with equal_nan=True it is missed). On the shrunk program it catches {} of the {} killed "
      "mutants; on the killing program before shrinking, {}.\n\n",
      args.count, args.seed, args.max_size, killed, rows.size(), total_seconds, caught_shrunk, killed,
      caught_original);
  out += "| mutant | breaks | result | killed by | shrunk program | time to kill (programs run) | allclose, shrunk "
         "| allclose, before shrinking |\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  for (const KillRow& r : rows) {
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {} |\n", r.info->name, r.info->semantics,
                       r.killed ? "killed" : "**survived**", r.killed ? "`" + r.killer + "`" : "-",
                       r.killed ? r.shrunk_size : "-",
                       r.killed ? fmt::format("{:.2f} s ({})", r.seconds_to_kill, r.programs_tried) : "-",
                       r.killed ? verdict_text(r.allclose_shrunk) : "-",
                       r.killed ? verdict_text(r.allclose_original) : "-");
  }
  out += "\n## The mutants\n\n";
  for (const KillRow& r : rows) {
    out += fmt::format("- `{}` ({}): {}.", r.info->name, r.info->semantics, r.info->description);
    if (r.killed) {
      out += fmt::format(" First difference: {}. Reproduce: `{}`", one_line(r.failure), r.reproduce);
    }
    out += "\n";
  }
  return out;
}

std::string json_text(const MutantsArgs& args, const std::vector<KillRow>& rows) {
  nlohmann::ordered_json doc;
  doc["seed"] = args.seed;
  doc["count"] = args.count;
  doc["max_size"] = args.max_size;
  doc["allclose"] = {{"rtol", kRtol}, {"atol", kAtol}, {"equal_nan", false}, {"on", "final parameter values"}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const KillRow& r : rows) {
    nlohmann::ordered_json m;
    m["mutant"] = r.info->name;
    m["semantics"] = r.info->semantics;
    m["description"] = r.info->description;
    m["killed"] = r.killed;
    if (r.killed) {
      m["killed_by"] = r.killer;
      m["reproduce"] = r.reproduce;
      m["first_difference"] = r.failure;
      m["shrunk_size"] = r.shrunk_size;
      m["shrink_steps"] = r.shrink_steps;
      m["programs_run"] = r.programs_tried;
      m["seconds_to_kill"] = r.seconds_to_kill;
      m["allclose_shrunk"] = verdict_name(r.allclose_shrunk);
      m["allclose_before_shrinking"] = verdict_name(r.allclose_original);
    }
    list.push_back(std::move(m));
  }
  doc["mutants"] = std::move(list);
  return doc.dump(2) + "\n";
}

}  // namespace

int command_mutants(const MutantsArgs& args) {
  const auto& catalogue = impl::mutant_catalogue();
  if (args.list) {
    for (const impl::MutantInfo& m : catalogue) fmt::print("{:<36} {:<8} {}\n", m.name, m.semantics, m.description);
    return kExitOk;
  }
  if (!args.only.empty() && !impl::mutant_from_name(args.only)) {
    std::cerr << "lockstep mutants: unknown mutant '" << args.only << "' (known: " << impl::mutant_names_joined()
              << ")\n";
    return kExitInputError;
  }
  std::vector<NamedCase> cases;
  Expectations known;
  try {
    cases = load_cases(args.cases_dir.empty() ? default_cases_dir() : args.cases_dir);
    known = load_expectations(default_expectations_file());
  } catch (const std::exception& e) {
    std::cerr << "lockstep mutants: " << e.what() << "\n";
    return kExitInputError;
  }

  const auto t0 = Clock::now();
  const size_t named_count = cases.size();
  MutantsRun run(args, std::move(cases), std::move(known));
  std::vector<KillRow> rows;
  fmt::print("lockstep mutants: {} named cases, then up to {} random programs per mutant (seed {}, max size {})\n",
             named_count, args.count, args.seed, args.max_size);
  for (const impl::MutantInfo& m : catalogue) {
    if (!args.only.empty() && args.only != m.name) continue;
    KillRow row = run.run(m);
    if (row.killed) {
      fmt::print("  killed    {:<36} by {} after {:.2f} s; shrunk to {}\n", m.name, row.killer,
                 row.seconds_to_kill, row.shrunk_size);
    } else {
      fmt::print("  SURVIVED  {:<36} ({} programs)\n", m.name, row.programs_tried);
    }
    std::fflush(stdout);
    rows.push_back(std::move(row));
  }
  const double total = seconds_since(t0);
  const std::string md = markdown(args, rows, total);
  fmt::print("\n{}", md);
  if (!args.report_dir.empty()) {
    try {
      std::filesystem::create_directories(args.report_dir);
      write_file_atomically(args.report_dir + "/mutants-report.md", md);
      write_file_atomically(args.report_dir + "/mutants-report.json", json_text(args, rows));
      fmt::print("reports: {0}/mutants-report.md, {0}/mutants-report.json\n", args.report_dir);
    } catch (const std::exception& e) {
      std::cerr << "lockstep mutants: cannot write the reports: " << e.what() << "\n";
      return kExitInputError;
    }
  }
  for (const KillRow& r : rows) {
    if (!r.killed) return kExitDiscrepancies;
  }
  return kExitOk;
}

}  // namespace lockstep::tools
