// Fuzz target: the run-report reader, report_from_text() (conformance/report/report_reader.h), which
// read_report_file() runs on the file's text: the lockstep-report.json files `lockstep merge` joins (shards made on
// other machines) and the files --jobs workers hand back. (Not in issue 14's list of readers: added with the reader,
// issue 15, because `merge` takes these files from the user.)
//
// Contract under test, for any input bytes:
//   - report_from_text() returns a RunReport or throws InputError; nothing else escapes;
//   - an accepted report is exact for its writers (the reader's promise): its JSON, written and read again, gives
//     the same JSON, Markdown and JUnit bytes;
//   - merging it alone (merge_shard_reports(): into its own shard when it is a shard report, else as a whole run)
//     returns a report or throws InputError (a shard with the wrong number of cases, ...); a merge that succeeds
//     gives back the same JSON;
//   - no sanitizer finding.
//
// Run (build with -DLOCKSTEP_FUZZ=ON and Clang; seeds from fuzz/seed_corpus.sh, which copies
// conformance/report/testdata/*.json):
//   fuzz/seed_corpus.sh /tmp/lockstep-seeds
//   mkdir -p fuzz/corpus/report
//   build-sanitize/fuzz/fuzz_report -max_len=65536 -dict=fuzz/lockstep.dict fuzz/corpus/report /tmp/lockstep-seeds/report
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conformance/program/program_json.h"
#include "conformance/report/report.h"
#include "conformance/report/report_reader.h"
#include "conformance/report/report_shards.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  RunReport report;
  try {
    report = report_from_text(fuzz::as_text(data, size), "<fuzz>");
  } catch (const InputError&) {
    return 0;
  }

  // Exact for the writers: written, read again, written again.
  const std::string json = report_json_text(report);
  RunReport again;
  try {
    again = report_from_text(json, "<round trip>");
  } catch (const InputError& e) {
    fuzz::fuzz_fail("report_json_text() of an accepted report does not read again: " + std::string(e.what()), json);
  }
  if (report_json_text(again) != json)
    fuzz::fuzz_fail("a report written, read again and written again differs", json);
  if (report_markdown(again) != report_markdown(report))
    fuzz::fuzz_fail("the Markdown of a report read back from its JSON differs", json);
  if (report_junit(again) != report_junit(report))
    fuzz::fuzz_fail("the JUnit XML of a report read back from its JSON differs", json);

  // Merged alone: into its own shard, or, unsharded, into itself.
  std::optional<ShardSpec> into;
  if (report.shard) into = ShardSpec{report.shard->index, report.shard->total};
  std::vector<std::pair<std::string, RunReport>> one;
  one.emplace_back("<fuzz>", std::move(again));
  RunReport merged;
  try {
    merged = merge_shard_reports(std::move(one), into);
  } catch (const InputError&) {
    return 0;
  }
  if (report_json_text(merged) != json) fuzz::fuzz_fail("a report merged alone differs from itself", json);
  return 0;
}
