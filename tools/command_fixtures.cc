// `lockstep fixtures generate`: the golden corpus (fixtures/corpus) from the oracle, deterministically: what
// conformance/run/corpus_builder.h records, written one JSON file per fixture in its folder (fixture.h). Files no
// longer generated are removed from those folders; the coverage table between the markers <!-- coverage:begin -->
// and <!-- coverage:end --> of OUT/README.md is rewritten, and the schema's optimizer parts follow the optimizer
// descriptions.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "conformance/report/atomic_file.h"
#include "conformance/program/data_dir.h"
#include "conformance/run/capabilities.h"
#include "conformance/run/corpus_builder.h"
#include "conformance/run/driver_process.h"
#include "conformance/run/driver_protocol.h"
#include "conformance/run/run_scope.h"
#include "conformance/run/fixture.h"
#include "conformance/run/named_case.h"
#include "conformance/program/program_json.h"
#include "tools/commands.h"
#include "tools/commands_fixtures.h"
#include "tools/engines.h"
#include "conformance/program/file_system.h"
#include <CLI/CLI.hpp>
#include "tools/cli_options.h"

namespace lockstep::tools {

namespace {


bool update_readme(const std::string& path, const std::string& table) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string begin = "<!-- coverage:begin -->", end = "<!-- coverage:end -->";
  size_t b = text.find(begin), e = text.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b) return false;
  std::string updated = text.substr(0, b + begin.size()) + "\n" + table + text.substr(e);
  if (updated != text) write_file_atomically(path, updated);
  return true;
}

// The schema's optimizer parts follow the optimizer descriptions (program_json.h, schema_from_descriptions).
void update_schema(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::string updated = schema_from_descriptions(nlohmann::ordered_json::parse(text)).dump(2) + "\n";
  if (updated != text) write_file_atomically(path, updated);
}

}  // namespace

namespace {

// `fixtures generate --oracle CMD`: corpus/python-oracle, what only a driver oracle can record (SEMANTICS 20.2),
// replacing that folder's files and nothing else.
int generate_with_driver_oracle(const FixturesGenerateArgs& args) {
  const std::string out = args.out_dir.empty() ? data_dir() + "/fixtures" : args.out_dir;
  const std::string folder = out + "/corpus/python-oracle";
  try {
    DriverOptions driver_options;
    driver_options.timeout = std::chrono::milliseconds(60000);
    ExternalDriver driver(args.oracle, driver_options);
    if (!driver.ensure_started()) throw std::runtime_error("the oracle driver cannot start: " + driver.startup_failure());
    const Capabilities caps = driver_capabilities(driver.hello());
    RunScope scope;
    Expectations unused;
    exclude_what_the_oracle_lacks(scope, &caps, "", unused);
    FixtureProvenance provenance;
    provenance.oracle = caps.name.empty() ? "driver" : caps.name;
    provenance.oracle_version = caps.pytorch_version.empty() ? caps.version : caps.pytorch_version;
    auto record = [&](const Program& program) -> std::optional<Trace> {
      DriverOutcome o = run_on_driver(driver, "fixture", program_to_json(program));
      if (o.kind == DriverOutcome::Kind::Unsupported) return std::nullopt;
      if (o.kind == DriverOutcome::Kind::Failure)
        throw std::runtime_error(fmt::format("the oracle driver failed ({}): {}\n{}", o.failure_category, o.failure,
                                             o.stderr_excerpt));
      return std::move(o.trace);
    };
    const std::vector<CorpusFixture> all = build_driver_oracle_corpus(load_cases(python_oracle_cases_dir()), record,
                                                                      provenance, scope.scope, args.seed, 24);
    files::create_directories(folder);
    std::set<std::string> written;
    for (const CorpusFixture& g : all) {
      const std::string file = folder + "/" + g.fixture.id + ".json";
      write_file_atomically(file, format_fixture_json(fixture_to_json(g.fixture)));
      written.insert(files::canonical(file));
    }
    for (const std::string& file : files::list_files(folder, {".json"}))
      if (!written.count(files::canonical(file))) {
        fmt::print("removing {} (no longer generated)\n", file);
        if (!files::remove_file(file)) throw std::runtime_error("cannot remove " + file + ": " + std::strerror(errno));
      }
    fmt::print("wrote {} fixtures recorded by {} {} in {}\n", all.size(), provenance.oracle, provenance.oracle_version,
               folder);
  } catch (const std::exception& e) {
    std::cerr << "lockstep fixtures generate --oracle: " << e.what() << "\n";
    return kExitInputError;
  }
  return kExitOk;
}

}  // namespace

int command_fixtures_generate(const FixturesGenerateArgs& args) {
  if (!args.oracle.empty()) return generate_with_driver_oracle(args);
  if (!oracle_available()) {
    std::cerr << "lockstep fixtures generate: " << kNoOracle << "\n";
    return kExitInputError;
  }
  const std::string out = args.out_dir.empty() ? data_dir() + "/fixtures" : args.out_dir;

  // 1. Named cases.
  std::vector<NamedCase> cases;
  try {
    cases = load_cases(default_cases_dir());
  } catch (const InputError& e) {
    std::cerr << "lockstep fixtures generate: " << e.what() << "\n";
    return kExitInputError;
  }
  // The shipped corpus is 1.13's recording plus the 2.x recordings of what differs (SEMANTICS 12.5): a whole
  // regeneration by a 2.x oracle would replace the first with the second.
  const std::string oracle_name = make_engine("oracle")->name();
  const bool second_generation = second_generation_oracle(oracle_name);
  if (second_generation && !args.version_dependent_only && args.out_dir.empty()) {
    std::cerr << "lockstep fixtures generate: the oracle is " << oracle_name << ": the shipped corpus is LibTorch "
              << "1.13's recording; on 2.x regenerate only the version-dependent cases (--version-dependent-only), "
              << "or give --out DIR for a whole corpus of this version\n";
    return kExitInputError;
  }
  const std::vector<CorpusFixture> all =
      build_corpus(cases, [] { return make_engine("oracle"); },
                   CorpusOptions{args.seed, args.max_random, args.max_candidates, args.version_dependent_only});

  // Write, and remove what is no longer generated.
  std::set<std::string> written;
  try {
    for (const CorpusFixture& g : all) {
      const std::string dir = out + "/corpus/" + g.folder;
      files::create_directories(dir);
      const std::string file = dir + "/" + g.fixture.id + ".json";
      const std::string text = format_fixture_json(fixture_to_json(g.fixture));
      // Only rewrite changed files (keeps timestamps of unchanged ones).
      std::ifstream in(file, std::ios::binary);
      std::stringstream old;
      if (in) old << in.rdbuf();
      if (!in || old.str() != text) write_file_atomically(file, text);
      written.insert(files::canonical(file));
    }
    std::vector<std::string> folders = {"cases", "gradient_fed", "ops", "random", "default_run"};
    if (args.version_dependent_only) folders = {};
    if (second_generation) folders.push_back("cases-torch2");
    for (const std::string& folder : folders) {
      const std::string dir = out + "/corpus/" + folder;
      if (!files::is_directory(dir)) continue;
      for (const std::string& file : files::list_files(dir, {".json"}))
        if (!written.count(files::canonical(file))) {
          fmt::print("removing {} (no longer generated)\n", file);
          if (!files::remove_file(file)) throw std::runtime_error("cannot remove " + file + ": " + std::strerror(errno));
        }
    }
  } catch (const std::exception& e) {
    std::cerr << "lockstep fixtures generate: " << e.what() << "\n";
    return kExitInputError;
  }

  if (args.version_dependent_only) {
    fmt::print("wrote {} version-dependent fixture(s) recorded by {}\n", all.size(), oracle_name);
    return kExitOk;
  }
  update_schema(out + "/schema/fixture.schema.json");
  const std::string table = corpus_coverage_table(all);
  const std::string readme = out + "/README.md";
  if (!update_readme(readme, table))
    fmt::print("note: {} has no <!-- coverage:begin --> / <!-- coverage:end --> markers; table not written\n", readme);
  std::set<std::string> in_random;  // tags of random fixtures
  size_t picked = 0;
  for (const CorpusFixture& g : all)
    if (g.folder == "random") {
      ++picked;
      in_random.insert(g.fixture.tags.begin(), g.fixture.tags.end());
    }
  std::vector<std::string> uncovered;
  for (const FeatureTagInfo& t : all_feature_tags())
    if (!in_random.count(t.tag) && !t.driver_oracle_only) uncovered.push_back(t.tag);
  fmt::print("generated {} fixtures in {}/corpus ({} random)\n", all.size(), out, picked);
  if (!uncovered.empty()) {
    fmt::print("random programs cover no fixture with: {}\n", fmt::join(uncovered, ", "));
    return kExitDiscrepancies;
  }
  return kExitOk;
}

CLI::App* add_fixtures_command(CLI::App& app, FixturesGenerateArgs& args, CLI::App*& generate) {
  CLI::App* fixtures = app.add_subcommand("fixtures", "The golden fixture corpus");
  fixtures->require_subcommand(1);
  generate = fixtures->add_subcommand(
      "generate", "Regenerate fixtures/corpus from the oracle (deterministic) and the coverage table");
  generate->add_option("--out", args.out_dir, "Output directory (default: the source tree's fixtures/)");
  generate->add_option("--seed", args.seed, "Seed of the random corpus")->capture_default_str();
  generate->add_option("--max-random", args.max_random, "At most this many random fixtures")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  generate->add_flag("--version-dependent-only", args.version_dependent_only,
                     "Write only the named cases whose checks depend on the PyTorch version, as this oracle's "
                     "recordings (LibTorch 2.x: corpus/cases-torch2/ID-torch2.json; SEMANTICS 12.5)");
  generate->add_option("--oracle", args.oracle,
                       "Record only corpus/python-oracle, what LibTorch's C++ API cannot (maximize, SEMANTICS 20.2), "
                       "with this driver as the oracle: e.g. \"python3 tools/adapters/pytorch_driver.py\"");
  return fixtures;
}

}  // namespace lockstep::tools
