#!/usr/bin/env bash
# The example on the user's path (issue 15): lockstep's build installed (cmake --install), this project copied out
# of the source tree and built against the installed package only (find_package(lockstep)), then its runner used
# as a framework author would: its tiny engine passes `run` and `replay` with the installed data; the wrong one
# (steps twice) fails at a step, and its reproduce line, executed, fails the same way; --jobs 2 gives the same
# reports; an unknown engine is an error listing the registered ones. The installed `lockstep` replays too.
#
#   bash examples/custom_engine/check_example.sh LOCKSTEP_BUILD_DIR WORK_DIR
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 LOCKSTEP_BUILD_DIR WORK_DIR" >&2
  exit 2
fi
source_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "$1" && pwd)"
work="$2"
rm -rf "$work"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
unset LOCKSTEP_DATA_DIR GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX
failures=0
fail() {
  echo "check_example: FAIL: $*" >&2
  failures=$((failures + 1))
}

cmake --install "$build" --prefix "$work/install" > "$work/install.log"
cp -r "$source_root/examples/custom_engine" "$work/src"
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$work/src" -B "$work/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$work/install" \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$work/configure.log"
cmake --build "$work/build" -j 2 > "$work/build.log" || { cat "$work/build.log" >&2; exit 1; }
if grep -q "$source_root/\(conformance\|impl\|tools\|oracle\)" "$work/build/compile_commands.json"; then
  fail "the example compiled against lockstep's source tree, not the installed package"
fi
runner="$work/build/my-lockstep"
cd "$work"

# run EXPECTED_EXIT NAME ARGS...: my-lockstep ARGS, output in NAME.out
run() {
  local expected="$1" name="$2" code=0
  shift 2
  "$runner" "$@" > "$work/$name.out" 2>&1 || code=$?
  [[ $code -eq $expected ]] || { fail "my-lockstep $*: exit $code, expected $expected"; tail -5 "$work/$name.out" >&2; }
}

run 0 tiny run --engine tiny --count 300 --jobs 1 --report-dir "$work/tiny"
grep -q '"under_test": "tiny"' "$work/tiny/lockstep-report.json" || fail "the report is not the tiny engine's"
grep -q '"id": "tut001-grads-accumulate-across-backward"' "$work/tiny/lockstep-report.json" ||
  fail "the named cases (installed in share/lockstep) did not run"
run 0 tiny-jobs run --engine tiny --count 300 --jobs 2 --report-dir "$work/tiny-jobs"
cmp -s "$work/tiny/lockstep-report.json" "$work/tiny-jobs/lockstep-report.json" || fail "--jobs 2 gave other reports"

run 1 wrong run --engine tiny-steps-twice --count 50 --report-dir "$work/wrong"
grep -q 'FAIL .*action [0-9]* (step)' "$work/wrong.out" || fail "the engine that steps twice did not fail at a step"
reproduce=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print([c for c in r["cases"] if c["status"] == "failed"][-1]["failure"]["reproduce"])' "$work/wrong/lockstep-report.json")
code=0
out=$(eval "$runner ${reproduce#lockstep }" 2>&1) || code=$?
[[ $code -eq 1 ]] || fail "the reproduce line '$reproduce' exited $code, not 1"
grep -q 'FAIL .*action [0-9]* (step)' <<< "$out" || fail "the reproduce line '$reproduce' does not fail at a step"

run 0 replay replay --engine tiny --report-dir "$work/replay"
run 1 replay-wrong replay --engine tiny-steps-twice --report-dir "$work/replay-wrong"
grep -q "$work/install/share/lockstep/fixtures/corpus" "$work/replay-wrong/replay-report.json" ||
  fail "replay did not use the installed fixture corpus"
python3 -c '
import json, sys, glob
f = sorted(glob.glob(sys.argv[1] + "/**/*.json", recursive=True))[0]
print(json.dumps(json.load(open(f))["program"]))' "$work/install/share/lockstep/fixtures/corpus" > "$work/program.json"
run 0 trace trace "$work/program.json" --engine tiny --table
run 2 unknown run --engine tinny --count 1
grep -q "known engines: oracle, impl, tiny, tiny-steps-twice" "$work/unknown.out" || fail "an unknown engine does not list the registered ones"

# The installed lockstep finds its data beside it (PREFIX/share/lockstep).
code=0
"$work/install/bin/lockstep" replay --engine "$work/install/bin/lockstep-impl-driver" > "$work/installed-replay.out" 2>&1 || code=$?
[[ $code -eq 0 ]] || fail "the installed lockstep does not pass replay through the installed driver (exit $code)"

if [[ $failures -gt 0 ]]; then
  echo "check_example: $failures failure(s)" >&2
  exit 1
fi
echo "check_example: built against the installed package; tiny passes run, replay and --jobs 2; the wrong engine fails at a step, by its reproduce line too"
