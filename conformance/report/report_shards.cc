// Sharded runs and merging their reports (report_shards.h).
#include "conformance/report/report_shards.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "conformance/program/program_json.h"

namespace lockstep {

namespace {

// A non-negative decimal integer, whole string; nullopt otherwise.
std::optional<int64_t> parse_count(const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(s);
}

}  // namespace

ShardSpec parse_shard_spec(const std::string& text) {
  const size_t slash = text.find('/');
  const std::optional<int64_t> i = slash == std::string::npos ? std::nullopt : parse_count(text.substr(0, slash));
  const std::optional<int64_t> n = slash == std::string::npos ? std::nullopt : parse_count(text.substr(slash + 1));
  if (!i || !n) throw std::invalid_argument("--shard '" + text + "': expected INDEX/TOTAL, e.g. 0/4 (INDEX from 0)");
  if (*n < 1 || *i >= *n)
    throw std::invalid_argument(fmt::format("--shard '{}': the index must be below the total (0 to {})", text,
                                            *n < 1 ? 0 : *n - 1));
  return {*i, *n};
}

std::optional<ShardSpec> shard_from_environment() {
  const char* total = std::getenv("GTEST_TOTAL_SHARDS");
  if (!total) return std::nullopt;
  const char* index = std::getenv("GTEST_SHARD_INDEX");
  const std::optional<int64_t> n = parse_count(total);
  if (!n || *n < 1) throw std::invalid_argument(fmt::format("GTEST_TOTAL_SHARDS='{}': expected an integer >= 1", total));
  const std::optional<int64_t> i = index ? parse_count(index) : std::nullopt;
  if (!i || *i >= *n)
    throw std::invalid_argument(fmt::format("GTEST_SHARD_INDEX='{}': expected an integer from 0 to {} (GTEST_TOTAL_SHARDS={})",
                                            index ? index : "(unset)", *n - 1, *n));
  // The protocol: a test runner that supports sharding creates (or touches) the status file.
  if (const char* status = std::getenv("GTEST_SHARD_STATUS_FILE"); status && *status) {
    std::ofstream touch(status, std::ios::app);
    if (!touch) throw std::invalid_argument(fmt::format("GTEST_SHARD_STATUS_FILE='{}': cannot be written", status));
  }
  return ShardSpec{*i, *n};
}

int64_t programs_in_shard(const ShardSpec& s, int64_t count) {
  return count > s.index ? (count - s.index + s.total - 1) / s.total : 0;
}

RunReport merge_shard_reports(std::vector<std::pair<std::string, RunReport>> reports,
                              const std::optional<ShardSpec>& into) {
  if (reports.empty()) throw InputError("", "", "no reports to merge");
  // One report of a whole run (GTEST_TOTAL_SHARDS=1, --shard 0/1: a run that was not split) is itself.
  if (!into && reports.size() == 1 && !reports.front().second.shard) return std::move(reports.front().second);
  // Each report, by its shard index.
  std::map<int64_t, std::pair<std::string, RunReport>*> by_index;
  const int64_t total = reports.front().second.shard ? reports.front().second.shard->total : 0;
  for (auto& entry : reports) {
    const auto& [file, r] = entry;
    if (!r.shard) throw InputError(file, "", "not the report of a shard (no \"shard\"): it is already a whole run");
    if (r.shard->total != total)
      throw InputError(file, "/shard/total", fmt::format("shard of {} while {} is a shard of {}: not the same split",
                                                         r.shard->total, reports.front().first, total));
    auto [it, inserted] = by_index.emplace(r.shard->index, &entry);
    if (!inserted)
      throw InputError(file, "/shard/index", fmt::format("shard {} is also {}", r.shard->index, it->second->first));
  }
  // Which shards make the whole (or shard i of n).
  std::vector<int64_t> wanted;
  if (!into) {
    for (int64_t i = 0; i < total; ++i) wanted.push_back(i);
  } else {
    if (total % into->total != 0)
      throw InputError(reports.front().first, "/shard/total",
                       fmt::format("shards of {} do not split shard {} of {}", total, into->index, into->total));
    for (int64_t i = into->index; i < total; i += into->total) wanted.push_back(i);
  }
  for (int64_t i : wanted)
    if (!by_index.count(i))
      throw InputError("", "", fmt::format("shard {} of {} is missing: give every shard's lockstep-report.json", i, total));
  for (const auto& [i, entry] : by_index)
    if (std::find(wanted.begin(), wanted.end(), i) == wanted.end())
      throw InputError(entry->first, "/shard/index", fmt::format("shard {} of {} is not part of this merge", i, total));

  // The smallest index: the named cases when 0. (No structured binding: lambdas below use these.)
  const std::string& first_file = by_index.begin()->second->first;
  const RunReport& first = by_index.begin()->second->second;
  auto same = [&](const std::string& file, bool equal, const std::string& pointer, const std::string& what) {
    if (!equal)
      throw InputError(file, pointer, fmt::format("{} differs from {}'s: not a shard of the same run", what, first_file));
  };
  for (const auto& [file, r] : reports) {
    same(file, r.oracle_engine == first.oracle_engine, "/oracle", "the oracle");
    same(file, r.under_test_engine == first.under_test_engine, "/under_test", "the implementation under test");
    same(file, r.mode == first.mode, "/mode", "the mode");
    same(file, r.seed == first.seed, "/seed", "the seed");
    same(file, r.count == first.count, "/count", "the count");
    same(file, r.max_size == first.max_size, "/max_size", "the maximum size");
    if (r.shard->run != first.shard->run)
      throw InputError(file, "/shard/run",
                       fmt::format("the run's settings differ from {}'s: not a shard of the same run ('{}', not '{}')",
                                   first_file, r.shard->run, first.shard->run));
    same(file, r.coverage.has_value() == first.coverage.has_value(), "/coverage", "whether there is coverage");
    if (r.shard->index != 0 && r.shard->named_cases != 0)
      throw InputError(file, "/shard/named_cases", "named cases run in shard 0 only");
    const int64_t random = static_cast<int64_t>(r.cases.size()) - r.shard->named_cases;
    const int64_t expected = programs_in_shard({r.shard->index, total}, r.count);
    if (random != expected)
      throw InputError(file, "/cases",
                       fmt::format("{} random programs, but shard {} of {} of a run of {} has {} (an interrupted or "
                                   "filtered run: --index, --case)", random, r.shard->index, total, r.count, expected));
    if (!r.coverage) continue;
    const CoverageReport& c = *r.coverage;
    const CoverageReport& f = *first.coverage;
    same(file, c.implementation == f.implementation, "/coverage/implementation", "the implementation's hello");
    same(file, c.profile == f.profile, "/coverage/profile", "the API profile");
    same(file, c.left_out == f.left_out, "/coverage/left_out", "the scope");
    same(file, c.rules.size() == f.rules.size(), "/coverage/rules", "the rules");
    for (size_t k = 0; k < c.rules.size(); ++k)
      same(file, c.rules[k].id == f.rules[k].id && c.rules[k].kind == f.rules[k].kind, "/coverage/rules", "the rules");
  }

  // Everything but the cases from the first report: its cases are set aside while it is copied (a run of 10^5
  // programs), then gathered below from every shard.
  RunReport out;
  {
    RunReport& head = by_index.begin()->second->second;
    std::vector<CaseReport> set_aside = std::exchange(head.cases, {});
    out = head;
    head.cases = std::move(set_aside);
  }
  out.shard.reset();
  if (into)
    out.shard = ReportShard{into->index, into->total, first.shard->index == 0 ? first.shard->named_cases : 0,
                            first.shard->run};
  // Named cases (shard 0), then random programs by index: program index(s) + p * total is the p-th random case of
  // shard s.
  size_t cases = 0;
  for (const auto& [i, entry] : by_index) cases += entry->second.cases.size();
  out.cases.reserve(cases);
  if (first.shard->index == 0)
    for (int64_t k = 0; k < first.shard->named_cases; ++k) out.cases.push_back(std::move(by_index.begin()->second->second.cases[k]));
  std::vector<std::pair<int64_t, CaseReport*>> random;
  random.reserve(cases);
  for (auto& [i, entry] : by_index) {
    RunReport& r = entry->second;
    for (size_t p = static_cast<size_t>(r.shard->named_cases); p < r.cases.size(); ++p)
      random.emplace_back(i + static_cast<int64_t>(p - r.shard->named_cases) * total, &r.cases[p]);
  }
  std::sort(random.begin(), random.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [k, c] : random) out.cases.push_back(std::move(*c));

  // Lists of what nothing used: what no shard used.
  auto in_every = [&](const std::vector<std::string>& list, auto&& of) {
    std::vector<std::string> kept;
    for (const std::string& x : list) {
      bool everywhere = true;
      for (const auto& [i, entry] : by_index) {
        const std::vector<std::string>& other = of(entry->second);
        everywhere = everywhere && std::find(other.begin(), other.end(), x) != other.end();
      }
      if (everywhere) kept.push_back(x);
    }
    return kept;
  };
  out.unused_expectations = in_every(first.unused_expectations, [](const RunReport& r) -> const std::vector<std::string>& {
    return r.unused_expectations;
  });
  if (out.coverage) {
    CoverageReport& c = *out.coverage;
    c.not_exercised = in_every(first.coverage->not_exercised, [](const RunReport& r) -> const std::vector<std::string>& {
      return r.coverage->not_exercised;
    });
    for (const auto& [i, entry] : by_index) {
      if (i == by_index.begin()->first) continue;
      const CoverageReport& o = *entry->second.coverage;
      c.tested += o.tested;
      c.skipped += o.skipped;
      c.out_of_scope += o.out_of_scope;
      c.left_out_cases.insert(c.left_out_cases.end(), o.left_out_cases.begin(), o.left_out_cases.end());
      for (size_t k = 0; k < c.rules.size(); ++k) c.rules[k].uses += o.rules[k].uses;
      for (const auto& [feature, n] : o.exercised) c.exercised[feature] += n;
      for (const auto& [cell, n] : o.cells) c.cells[cell] += n;
      for (const auto& [field, n] : o.optional_fields) c.optional_fields[field] += n;
    }
  }
  return out;
}

}  // namespace lockstep
