// `lockstep features`: the feature names of SEMANTICS §13 (or the optional trace fields), for hellos, --features,
// profiles and expectations.
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "conformance/program/features.h"
#include "conformance/program/optional_fields.h"
#include "tools/commands.h"

namespace lockstep::tools {

int command_features(const FeaturesArgs& args) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  auto add = [&](const std::string& category, const std::string& name, const std::string& meaning) {
    if (args.json) list.push_back({{"name", name}, {"category", category}, {"meaning", meaning}});
    else std::cout << category << "\t" << name << "\t" << meaning << "\n";
  };
  if (args.optional_fields) {
    // The optional trace fields a hello's "observes" names (conformance/program/optional_fields.h).
    for (const OptionalField& f : optional_fields()) add("observes", f.name, std::string(f.what) + " (" + f.semantics + ")");
  } else {
    for (const FeatureInfo& f : all_features()) add(f.category, f.name, f.meaning);
  }
  if (args.json) std::cout << list.dump(2) << "\n";
  return kExitOk;
}

CLI::App* add_features_command(CLI::App& app, FeaturesArgs& args) {
  CLI::App* features = app.add_subcommand(
      "features", "List the feature names a driver's hello, --features, --exclude-features and profiles use "
                  "(SEMANTICS §13); --optional-fields: the optional trace fields its \"observes\" may name");
  features->add_flag("--json", args.json, "As a JSON array of {name, category, meaning}");
  features->add_flag("--optional-fields", args.optional_fields,
                     "List the optional trace fields a hello's \"observes\" may name instead (fixtures/PROTOCOL.md 4a)");
  return features;
}

}  // namespace lockstep::tools
