// Option groups shared by subcommands (cli_options.h).
#include "tools/cli_options.h"

#include <CLI/CLI.hpp>

namespace lockstep::tools {

void add_implementation_options(CLI::App* command, const ImplementationOptions& o, const std::string& engine_help,
                                const std::string& timeout_help) {
  command->add_option("--engine", *o.engine, engine_help)->capture_default_str();
  command->add_option("--timeout-ms", *o.timeout_ms, timeout_help)->check(CLI::PositiveNumber)->capture_default_str();
  if (o.mutant) command->add_option("--mutant", *o.mutant, "Select a mutant of impl (see `lockstep mutants --list`)");
  if (o.variant)
    command->add_option("--variant", *o.variant,
                        "Select a legitimate variant of impl (rounds differently, must pass; tools/variants/variants.h)");
}

void add_scope_options(CLI::App* command, std::string& features, std::string& exclude_features, std::string& profile,
                       ScopeOf of) {
  if (of == ScopeOf::GeneratedPrograms) {
    command->add_option("--features", features,
                        "Comma-separated feature names or globs: within each category they name (dtype, op, optimizer, "
                        "option, feature), only these are generated (`lockstep features` lists them)");
    command->add_option("--exclude-features", exclude_features,
                        "Comma-separated feature names or globs never generated (e.g. float64,adamw,'*.weight_decay')");
  } else {
    command->add_option("--features", features,
                        "Within each category named, only fixtures whose programs use only these features");
    command->add_option("--exclude-features", exclude_features,
                        "No fixture whose program uses one of these features (names or globs)");
  }
  command->add_option("--profile", profile,
                      "API profile (fixtures/profiles/NAME.json or a file; 'none': no profile). Default: the one the "
                      "driver's hello names");
}

void add_report_dir_option(CLI::App* command, std::string& dir, const std::string& help) {
  command->add_option("--report-dir", dir, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->capture_default_str();
}

void add_jobs_option(CLI::App* command, int64_t& jobs, const std::string& help) {
  command->add_option("--jobs,-j", jobs, help)->check(CLI::Range(int64_t{1}, int64_t{1024}));
}

void add_program_stream_options(CLI::App* command, uint64_t& seed, int& max_size) {
  command->add_option("--seed", seed, "Seed of the random programs")->capture_default_str();
  command->add_option("--max-size", max_size, "Largest RapidCheck size (1..100)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
}

}  // namespace lockstep::tools
