#!/usr/bin/env bash
# The replay-only build (-DLOCKSTEP_WITH_TORCH=OFF, or LibTorch not found; issue 15) on the user's path: the binary
# does not link LibTorch; the fixture corpus replays on impl in-process and through the impl driver; a wrong driver
# fails at the action that produced the wrong value, and its reproduce line, executed, fails the same way; a
# legitimate variant passes; `trace --engine impl` prints a trace; the commands that need the oracle exit 2 and
# say why.
#
#   bash tools/check_replay_only.sh build-notorch/lockstep build-notorch/lockstep-impl-driver WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/check_common.sh" check_replay_only "$@"
# run EXPECTED_EXIT NAME COMMAND...: the output goes to WORK/NAME.out
run() {
  local expected="$1" name="$2" code=0
  shift 2
  "$@" > "$work/$name.out" 2>&1 || code=$?
  [[ $code -eq $expected ]] || { fail "$name: exit $code, expected $expected"; tail -5 "$work/$name.out" >&2; }
}

if ldd "$lockstep" | grep -qi 'torch\|c10'; then
  fail "the replay-only lockstep links LibTorch: $(ldd "$lockstep" | grep -i 'torch\|c10' | head -3)"
fi

run 0 replay-impl "$lockstep" replay --engine impl --report-dir "$work/replay-impl"
run 0 replay-driver "$lockstep" replay --engine "$impl" --report-dir "$work/replay-driver"
run 0 replay-variant "$lockstep" replay --engine "$impl --variant unfused"
# A wrong driver: SGD's first momentum buffer scaled by (1 - dampening) (SEM-5.3) fails at a step.
run 1 replay-wrong "$lockstep" replay --engine "$impl --mutant sgd_dampening_first_step" --report-dir "$work/replay-wrong"
grep -q 'FAIL .*action [0-9]* (step)' "$work/replay-wrong.out" || fail "the wrong driver did not fail at a step"
line=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
f = [c for c in r["cases"] if c["status"] == "failed"][0]
print(f["failure"]["reproduce"]); print(f["id"])' "$work/replay-wrong/replay-report.json")
reproduce=$(head -1 <<< "$line")
id=$(tail -1 <<< "$line")
code=0
out=$(cd "$work" && eval "$lockstep ${reproduce#lockstep }" 2>&1) || code=$?
[[ $code -eq 1 ]] || fail "the reproduce line '$reproduce' exited $code, not 1"
grep -q "FAIL  *$id: action [0-9]* (step)" <<< "$out" || fail "the reproduce line '$reproduce' does not fail $id at a step"

# A fixture's program (any: the first of the corpus).
python3 -c '
import json, sys, glob
f = sorted(glob.glob(sys.argv[1] + "/**/*.json", recursive=True))[0]
print(json.dumps(json.load(open(f))["program"]))' "$(dirname "$0")/../fixtures/corpus" > "$work/program.json"
run 0 trace-impl "$lockstep" trace "$work/program.json" --engine impl --table
grep -q 'init' "$work/trace-impl.out" || fail "trace --engine impl printed no trace"

for command in "run --count 1" "mutants --count 1" "fixtures generate --out $work/gen" "trace $work/program.json --engine oracle" \
               "replay --engine oracle"; do
  name="needs-oracle-${command%% *}"
  code=0
  # shellcheck disable=SC2086
  "$lockstep" $command > "$work/$name.out" 2>&1 || code=$?
  [[ $code -eq 2 ]] || fail "'lockstep $command' exited $code, not 2"
  grep -q 'replay-only build' "$work/$name.out" || fail "'lockstep $command' does not say this is a replay-only build"
done
[[ ! -e "$work/gen" ]] || fail "fixtures generate wrote something"

if [[ $failures -gt 0 ]]; then
  echo "check_replay_only: $failures failure(s)" >&2
  exit 1
fi
echo "check_replay_only: no LibTorch linked; replay passes on impl and its driver, a wrong driver fails at its step (and by its reproduce line), the oracle's commands exit 2"
