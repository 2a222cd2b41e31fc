// Sharded runs: which slice of a seeded run a process runs, and merging the reports of the slices into the report
// of the whole run (`lockstep run --shard i/n`, `--jobs N`, `lockstep merge`).
//
// Shard i of n runs random program k exactly when k % n == i, and shard 0 also runs the named cases (first, as an
// unsharded run does). Program k is a pure function of (seed, k), so the slices of one run are disjoint, cover it,
// and each slice computes what the unsharded run computes for its programs. merge_shard_reports() puts the cases
// back in the unsharded order (named cases, then random programs by index) and adds up the coverage, so that its
// reports are byte for byte those of the unsharded run. The shards of a shard (i + w*n of n*J, w < J: the workers
// of `--jobs J` inside shard i of n) merge into shard i of n the same way.
//
// GoogleTest's sharding protocol, which CI systems and Bazel drive: GTEST_TOTAL_SHARDS and GTEST_SHARD_INDEX
// choose the shard, and a runner that honours them touches GTEST_SHARD_STATUS_FILE.
//
// Example:
//   ShardSpec s = parse_shard_spec("1/4");                  // shard 1 of 4; throws std::invalid_argument
//   if (in_shard(s, 17)) ...                                // 17 % 4 == 1
//   RunReport whole = merge_shard_reports({{"a.json", a}, {"b.json", b}, ...}, std::nullopt);  // InputError
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conformance/report/report.h"

namespace lockstep {

struct ShardSpec {
  int64_t index = 0;
  int64_t total = 1;
};

// "i/n" with 0 <= i < n (GoogleTest's 0-based GTEST_SHARD_INDEX); throws std::invalid_argument saying what is wrong.
ShardSpec parse_shard_spec(const std::string& text);
// GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX when GTEST_TOTAL_SHARDS is set (else nullopt); touches
// GTEST_SHARD_STATUS_FILE when that is set. Throws std::invalid_argument naming the variable when malformed.
std::optional<ShardSpec> shard_from_environment();
inline bool in_shard(const ShardSpec& s, int64_t program_index) { return program_index % s.total == s.index; }
// How many of programs 0..count-1 shard `s` runs.
int64_t programs_in_shard(const ShardSpec& s, int64_t count);

// Merges the reports of shards 0..T-1 of one run (one report of a whole run: itself) (`into` empty: the report of the whole run, no shard), or of
// shards i + w*n of n*J, w < J (`into` = shard i of n: the report of that shard). Throws InputError naming the
// file and the field when the reports are not the complete set of one run's shards (another seed, count,
// implementation or configuration; a shard missing or given twice; a shard's report missing programs).
RunReport merge_shard_reports(std::vector<std::pair<std::string, RunReport>> reports,
                              const std::optional<ShardSpec>& into);

}  // namespace lockstep
