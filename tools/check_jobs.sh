#!/usr/bin/env bash
# --jobs and --shard on the user's path (issue 15; conformance/report/report_shards.h): for runs of every kind
# (impl with a mutant: named and random failures, shrinking; the impl driver with a mutant: free-running with the
# error budget; a float32-only driver: scope, left-out cases, skips, an expectations file that masks and expects
# failures; the oracle against itself: growth tables; a legitimate variant, free-running: the drift table), the
# reports of --jobs 2 and 3, of shards run one by one and merged (`lockstep merge`), and of shards chosen by
# GoogleTest's variables, each with --jobs inside, are byte for byte those of --jobs 1; so are those of `lockstep
# replay --jobs` and the kill table of `lockstep mutants --jobs` (but the seconds). A reproduce line of a --jobs run,
# executed, fails the same way. Bad shards, bad merges and a worker killed by a signal are errors
# (exit 2, a message naming the shard or file) that leave no reports behind.
#
#   bash tools/check_jobs.sh build/lockstep build/lockstep-impl-driver WORK_DIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/check_common.sh" check_jobs "$@"
unset GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX GTEST_SHARD_STATUS_FILE

# An expectations file for the float32 driver: a mask (known cases) and a whole-case entry (an expected failure).
cat > "$work/f32-expectations.json" <<'EOF'
{"expectations": [
  {"id": "random-1?", "fields": ["* → value*"], "accept": {"ulps": 65536}, "reason": "planted mask: values of random-10..19 accepted within 65536 ULPs"},
  {"id": "random-3", "reason": "planted whole-case entry: an unexpected pass is a failure"}
]}
EOF

# name, then the arguments of `lockstep run`.
check() {
  local name="$1"
  shift
  local dir="$work/$name"
  mkdir -p "$dir"
  local code1=0
  "$lockstep" run "$@" --jobs 1 --report-dir "$dir/jobs1" > "$dir/jobs1.out" 2>&1 || code1=$?
  if [[ $code1 -gt 1 ]]; then
    fail "$name: --jobs 1 exited $code1"; cat "$dir/jobs1.out" >&2; return
  fi
  local variant
  for variant in jobs2 jobs3 shards gtest; do
    local code=0
    case "$variant" in
      jobs2) "$lockstep" run "$@" --jobs 2 --report-dir "$dir/$variant" > "$dir/$variant.out" 2>&1 || code=$? ;;
      jobs3) "$lockstep" run "$@" --jobs 3 --report-dir "$dir/$variant" > "$dir/$variant.out" 2>&1 || code=$? ;;
      shards)  # three shards one by one (the named cases in shard 0), merged
        for i in 0 1 2; do
          "$lockstep" run "$@" --jobs 1 --shard "$i/3" --report-dir "$dir/shard$i" > "$dir/shard$i.out" 2>&1 || true
        done
        "$lockstep" merge "$dir/shard0/lockstep-report.json" "$dir/shard2/lockstep-report.json" \
          "$dir/shard1/lockstep-report.json" --report-dir "$dir/$variant" > "$dir/$variant.out" 2>&1 || code=$? ;;
      gtest)  # two CI jobs sharded by GoogleTest's variables, each with two workers, merged
        for i in 0 1; do
          GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i GTEST_SHARD_STATUS_FILE="$dir/status$i" \
            "$lockstep" run "$@" --jobs 2 --report-dir "$dir/gtest$i" > "$dir/gtest$i.out" 2>&1 || true
          [[ -f "$dir/status$i" ]] || fail "$name: shard $i did not touch GTEST_SHARD_STATUS_FILE"
        done
        "$lockstep" merge "$dir/gtest0/lockstep-report.json" "$dir/gtest1/lockstep-report.json" \
          --report-dir "$dir/$variant" > "$dir/$variant.out" 2>&1 || code=$? ;;
    esac
    [[ $code -eq $code1 ]] || fail "$name: $variant exited $code, --jobs 1 exited $code1 ($(tail -3 "$dir/$variant.out"))"
    local ext
    for ext in md json xml; do
      cmp -s "$dir/jobs1/lockstep-report.$ext" "$dir/$variant/lockstep-report.$ext" ||
        fail "$name: $variant's lockstep-report.$ext differs from --jobs 1's"
    done
  done
  # The console of --jobs 2 says what --jobs 1 says (but the time and where the reports went).
  if ! diff <(grep -v '^reports:\|passed, .* failed, .* skipped (' "$dir/jobs1.out") \
            <(grep -v '^reports:\|passed, .* failed, .* skipped (' "$dir/jobs2.out") > "$dir/console.diff"; then
    fail "$name: the output of --jobs 2 differs from --jobs 1's:"; head -20 "$dir/console.diff" >&2
  fi
  python3 - "$dir/jobs1/lockstep-report.json" "$name" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
print(f"  {sys.argv[2]:<12} {s['total']:>5} cases: {s['passed']} passed, {s['failed']} failed, {s['known']} known; "
      f"identical for --jobs 1, 2, 3, 3 shards merged, 2 GoogleTest shards x 2 jobs merged")
EOF
}

check impl-mutant --engine impl --mutant adam_eps_inside_sqrt --count 120 --seed 5 --shrink-seconds 30
check driver-mutant --engine "$impl --mutant sgd_dampening_first_step" --count 80 --seed 6 --shrink-seconds 30
check float32 --engine "python3 $here/adapters/testing/float32_sgd_adam.py --no-hello-supports -- $impl" \
  --count 60 --seed 3 --expectations "$work/f32-expectations.json" --shrink-seconds 30
check float32-scope --engine "python3 $here/adapters/testing/float32_sgd_adam.py -- $impl" --count 40 --seed 4
check oracle --engine oracle --count 40 --seed 2
check variant --engine impl --variant unfused --free-running --count 60 --seed 8

# lockstep mutants: the kill table of --jobs 3 is that of --jobs 1 (but the seconds).
"$lockstep" mutants --shrink-seconds 5 --jobs 1 --report-dir "$work/mutants1" > "$work/mutants1.out" 2>&1 ||
  fail "mutants --jobs 1 exited non-zero"
"$lockstep" mutants --shrink-seconds 5 --jobs 3 --report-dir "$work/mutants3" > "$work/mutants3.out" 2>&1 ||
  fail "mutants --jobs 3 exited non-zero"
python3 - "$work/mutants1/mutants-report.json" "$work/mutants3/mutants-report.json" <<'EOF' || fail "mutants --jobs 3 found other kills than --jobs 1"
import json, sys
def strip(o):
    if isinstance(o, dict): return {k: strip(v) for k, v in o.items() if "seconds" not in k}
    if isinstance(o, list): return [strip(x) for x in o]
    return o
a, b = (strip(json.load(open(f))) for f in sys.argv[1:3])
assert a["mutants"] and a == b, "differ"
print(f"  mutants      {len(a['mutants'])} mutants: the same kills, killers and shrunk sizes for --jobs 1 and 3")
EOF
lines() { sed 's/after [0-9.]* s/after T s/' "$1" | grep '^  \(killed\|SURVIVED\|survived\)'; }
diff <(lines "$work/mutants1.out") <(lines "$work/mutants3.out") > /dev/null ||
  fail "the console lines of mutants --jobs 3 differ from --jobs 1's"

# lockstep replay: the console and the reports of --jobs 2 and 3 are those of --jobs 1 (in-process; a wrong driver;
# a float32-only driver that skips, with an expectations file).
cat > "$work/replay-expectations.json" <<'EOF'
{"expectations": [
  {"id": "grad-adam-*", "fields": ["* → exp_avg_sq*"], "accept": {"ulps": 65536}, "reason": "planted mask"},
  {"id": "tut002-*", "reason": "planted whole-case entry: some fail, some pass (unexpected passes)"}
]}
EOF
check_replay() {
  local name="$1"
  shift
  local dir="$work/replay-$name" j code1=0
  mkdir -p "$dir"
  "$lockstep" replay "$@" --jobs 1 --verbose --report-dir "$dir/jobs1" > "$dir/jobs1.out" 2>&1 || code1=$?
  [[ $code1 -le 1 ]] || { fail "replay $name: --jobs 1 exited $code1"; tail -3 "$dir/jobs1.out" >&2; return; }
  for j in 2 3; do
    local code=0
    "$lockstep" replay "$@" --jobs $j --verbose --report-dir "$dir/jobs$j" > "$dir/jobs$j.out" 2>&1 || code=$?
    [[ $code -eq $code1 ]] || fail "replay $name: --jobs $j exited $code, --jobs 1 exited $code1"
    for ext in md json xml; do
      cmp -s "$dir/jobs1/replay-report.$ext" "$dir/jobs$j/replay-report.$ext" ||
        fail "replay $name: --jobs $j's replay-report.$ext differs from --jobs 1's"
    done
    diff <(sed 's/([0-9.]* s)$//' "$dir/jobs1.out" | grep -v '^reports:') \
         <(sed 's/([0-9.]* s)$//' "$dir/jobs$j.out" | grep -v '^reports:') > "$dir/console$j.diff" ||
      { fail "replay $name: the output of --jobs $j differs from --jobs 1's"; head -5 "$dir/console$j.diff" >&2; }
  done
  echo "  replay $name: $(tail -1 "$dir/jobs1.out" | sed 's/ ([0-9.]* s)$//'); identical for --jobs 1, 2, 3"
}
check_replay impl --engine impl
check_replay wrong-driver --engine "$impl --mutant adam_eps_inside_sqrt" --expectations "$work/replay-expectations.json"
check_replay float32 --engine "python3 $here/adapters/testing/float32_sgd_adam.py --no-hello-supports -- $impl"

# Sanity of the comparison itself: the planted entries were used (a known case and an unexpected pass).
grep -q '"status": "known"' "$work/float32/jobs2/lockstep-report.json" || fail "float32: no known case (the mask was not used)"
grep -q 'an expectation says the whole case fails' "$work/float32/jobs2/lockstep-report.json" ||
  fail "float32: random-3's unexpected pass is not in the report"

# A reproduce line of a --jobs run, executed, fails the same way.
line=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
f = [c for c in r["cases"] if c["status"] == "failed" and c["id"].startswith("random-")][0]
print(f["failure"]["reproduce"]); print(f["failure"]["summary"])' "$work/impl-mutant/jobs2/lockstep-report.json")
reproduce=$(head -1 <<< "$line")
summary=$(tail -1 <<< "$line")
code=0
out=$(cd "$work" && eval "$lockstep ${reproduce#lockstep }" 2>&1) || code=$?
[[ $code -eq 1 ]] || fail "the reproduce line '$reproduce' exited $code, not 1"
grep -qF "$summary" <<< "$out" || fail "the reproduce line '$reproduce' does not fail with '$summary'"

# Bad input: exit 2, a message naming what is wrong, and no reports.
expect_error() {
  local what="$1" pattern="$2"
  shift 2
  local code=0
  rm -rf "$work/bad"
  "$@" --report-dir "$work/bad" > "$work/bad.out" 2>&1 || code=$?
  [[ $code -eq 2 ]] || fail "$what: exit $code, not 2"
  grep -q -- "$pattern" "$work/bad.out" || { fail "$what: no message matching '$pattern'"; cat "$work/bad.out" >&2; }
  [[ ! -e "$work/bad/lockstep-report.json" ]] || fail "$what: a report was written"
}
s="$work/impl-mutant"
expect_error "a shard out of range" "index must be below the total" "$lockstep" run --shard 3/3 --count 5
expect_error "a malformed shard" "expected INDEX/TOTAL" "$lockstep" run --shard 1of3 --count 5
expect_error "--shard with --index" "--case and --index run one case" "$lockstep" run --shard 0/2 --index 3
expect_error "a bad GTEST_SHARD_INDEX" "GTEST_SHARD_INDEX='7'" env GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=7 "$lockstep" run --count 5
expect_error "a missing shard" "shard 1 of 3 is missing" "$lockstep" merge "$s/shard0/lockstep-report.json" "$s/shard2/lockstep-report.json"
expect_error "a shard given twice" "shard 0 is also" "$lockstep" merge "$s/shard0/lockstep-report.json" \
  "$s/shard0/lockstep-report.json" "$s/shard1/lockstep-report.json" "$s/shard2/lockstep-report.json"
expect_error "shards of two runs" "/under_test: the implementation under test differs" "$lockstep" merge \
  "$s/shard0/lockstep-report.json" "$work/driver-mutant/shard1/lockstep-report.json" "$s/shard2/lockstep-report.json"
expect_error "a whole run given with a shard" "not the report of a shard" "$lockstep" merge "$s/jobs1/lockstep-report.json" \
  "$s/shard1/lockstep-report.json"
# One unsplit run (GTEST_TOTAL_SHARDS=1) merges into itself.
code=0
"$lockstep" merge "$s/jobs1/lockstep-report.json" --report-dir "$work/merge-one" > /dev/null 2>&1 || code=$?
[[ $code -eq 1 ]] || fail "merging one whole (failing) run exited $code, not 1"
for ext in md json xml; do
  cmp -s "$s/jobs1/lockstep-report.$ext" "$work/merge-one/lockstep-report.$ext" || fail "one whole run merged is not itself ($ext)"
done
# Shards of runs with other settings (--special-values changes every program) do not merge.
"$lockstep" run --engine impl --mutant adam_eps_inside_sqrt --count 120 --seed 5 --shrink-seconds 30 --special-values \
  --shard 1/3 --jobs 1 --report-dir "$work/special1" > /dev/null 2>&1 || true
expect_error "a shard of a run with other settings" "/shard/run: the run's settings differ" "$lockstep" merge \
  "$s/shard0/lockstep-report.json" "$work/special1/lockstep-report.json" "$s/shard2/lockstep-report.json"
head -c 2000 "$s/shard1/lockstep-report.json" > "$work/truncated.json"
expect_error "a truncated report" "truncated.json" "$lockstep" merge "$s/shard0/lockstep-report.json" \
  "$work/truncated.json" "$s/shard2/lockstep-report.json"
python3 - "$s/shard1/lockstep-report.json" "$work/unknown-field.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
r["cases"][0]["colour"] = "red"
json.dump(r, open(sys.argv[2], "w"))
EOF
expect_error "an unknown field" "unknown-field.json: /cases/0/colour" "$lockstep" merge "$s/shard0/lockstep-report.json" \
  "$work/unknown-field.json" "$s/shard2/lockstep-report.json"
# A worker killed by a signal (its driver kills it): the run ends with exit 2 naming the worker, no report.
expect_error "a worker killed by a signal" "worker [01] of --jobs 2 was killed by signal 9" \
  "$lockstep" run --engine 'kill -KILL $PPID' --jobs 2 --count 10

if [[ $failures -gt 0 ]]; then
  echo "check_jobs: $failures failure(s)" >&2
  exit 1
fi
echo "check_jobs: every report of --jobs 2, --jobs 3, merged shards and GoogleTest shards is byte-identical to --jobs 1's; bad shards and merges rejected"
