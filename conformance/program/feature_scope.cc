#include "conformance/program/feature_scope.h"

#include "conformance/program/did_you_mean.h"

#include <map>
#include <stdexcept>

#include "conformance/program/glob.h"
#include "conformance/program/features.h"

namespace lockstep {

void FeatureScope::exclude(std::vector<std::string> when, std::string reason, std::string source) {
  exclusions_.push_back({std::move(when), std::move(reason), std::move(source)});
}

const FeatureExclusion* FeatureScope::excluded(const std::set<std::string>& features) const {
  for (const FeatureExclusion& x : exclusions_) {
    bool all = !x.when.empty();
    for (const std::string& glob : x.when) {
      bool any = false;
      for (const std::string& f : features)
        if (glob_match(glob, f)) { any = true; break; }
      if (!any) { all = false; break; }
    }
    if (all) return &x;
  }
  return nullptr;
}

const FeatureExclusion* FeatureScope::why_not(const std::string& name) const {
  for (const FeatureExclusion& x : exclusions_)
    if (x.when.size() == 1 && glob_match(x.when[0], name)) return &x;
  return nullptr;
}

bool FeatureScope::allows(const std::string& name) const { return why_not(name) == nullptr; }

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::string item;
  auto flush = [&] {
    const size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    item.clear();
  };
  for (char c : list) {
    if (c == ',') flush();
    else item += c;
  }
  flush();
  return out;
}

namespace {
// "'X' names no feature", with the nearest name when one is near.
std::invalid_argument names_no_feature(const std::string& flag, const std::string& glob) {
  std::vector<std::string> names;
  for (const FeatureInfo& f : all_features()) names.push_back(f.name);
  const std::string near = nearest_name(glob, names);
  return std::invalid_argument(flag + ": '" + glob + "' names no feature" +
                               (near.empty() ? "" : ": did you mean '" + near + "'?") +
                               " (`lockstep features` lists them)");
}

std::vector<const FeatureInfo*> matching(const std::string& glob, const std::string& flag) {
  std::vector<const FeatureInfo*> out;
  for (const FeatureInfo& f : all_features())
    if (glob_match(glob, f.name)) out.push_back(&f);
  if (out.empty()) throw names_no_feature(flag, glob);
  return out;
}
}  // namespace

void narrow_scope(FeatureScope& scope, const std::string& features, const std::string& exclude_features) {
  const std::vector<std::string> wanted = split_list(features);
  if (!wanted.empty()) {
    std::map<std::string, std::set<std::string>> kept;  // category -> names listed
    for (const std::string& glob : wanted)
      for (const FeatureInfo* f : matching(glob, "--features")) kept[f->category].insert(f->name);
    for (const FeatureInfo& f : all_features()) {
      auto it = kept.find(f.category);
      // An optimizer's lr stays unless excluded by name: SGD cannot be built without it (SEM-5.1).
      const bool lr = f.category == "option" && f.name.size() > 3 && f.name.compare(f.name.size() - 3, 3, ".lr") == 0;
      if (it != kept.end() && !it->second.count(f.name) && !lr)
        scope.exclude({f.name}, "not among --features " + features, "flag");
    }
  }
  for (const std::string& glob : split_list(exclude_features)) {
    if (!matches_some_feature(glob)) throw names_no_feature("--exclude-features", glob);
    scope.exclude({glob}, "--exclude-features " + exclude_features, "flag");
  }
}

}  // namespace lockstep
