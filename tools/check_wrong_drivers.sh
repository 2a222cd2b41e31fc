#!/bin/bash
# Wrong drivers on the user's path (issue 28): the impl driver behind tools/wrong_driver.py with one planted error,
# and impl's own driver with a mutant, through replay and live runs; what the reports must say.
#   - every -0 written as 0 fails the fixtures that hold -0 (SEMANTICS 9.5), and the printed reproduce line, run,
#     fails the same fixture again at the sign of a zero;
#   - SGD in velocity form heads its failures with the momentum buffer, the first wrong quantity (SEMANTICS 9.3);
#   - the first backward's grads times -3 do not pass random-44 (values of 1e15: imprecise, SEMANTICS 9.6);
#   - a driver answering one record too few fails the named cases per case (their checks read a missing record),
#     exit 1 with every report written, never an abort.
#   check_wrong_drivers.sh LOCKSTEP IMPL_DRIVER WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/check_common.sh" check_wrong_drivers "$@"
wrong="python3 $(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/wrong_driver.py"
field_of() {  # the first failing case's id and field in a JSON report
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
c = [c for c in d["cases"] if c["status"] == "failed"]
print(len(c), c[0]["id"] if c else "-", c[0]["failure"]["differences"][0]["path"] if c and c[0]["failure"].get("differences") else "-",
      c[0]["failure"].get("reproduce", "-") if c else "-", sep="\t")' "$1"
}

# 1. -0 dropped.
set +e
"$lockstep" replay --engine "$wrong --drop-minus-zero $impl" --report-dir "$work/minus-zero" > "$work/minus-zero.log" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] || fail "-0 dropped: replay exited $rc, expected 1 (failures)"
IFS=$'\t' read -r n id path repro < <(field_of "$work/minus-zero/replay-report.json")
[[ $n -ge 10 ]] || fail "-0 dropped: $n fixtures failed, expected the fixtures that hold -0 (26)"
grep -q "the sign of zero must match" "$work/minus-zero.log" || fail "-0 dropped: no failure names the sign of zero"
[[ "$repro" == "lockstep replay "* ]] || fail "-0 dropped: no reproduce line for $id ($repro)"
set +e
(cd "$work" && eval "\"$lockstep\" ${repro#lockstep } --report-dir again" > again.log 2>&1)
rc=$?
set -e
[[ $rc == 1 ]] || fail "-0 dropped: the reproduce line of $id exited $rc, expected 1"
IFS=$'\t' read -r n2 id2 path2 _ < <(field_of "$work/again/replay-report.json")
[[ "$id2 $path2" == "$id $path" ]] || fail "-0 dropped: the reproduce line failed $id2 at $path2, not $id at $path"

# 2. SGD in velocity form: the momentum buffer first.
set +e
"$lockstep" replay --engine "$impl --mutant sgd_velocity_form" --report-dir "$work/velocity" > "$work/velocity.log" 2>&1
set -e
first="$(grep -m1 "FAIL" "$work/velocity.log" || true)"
[[ "$first" == *"→ momentum_buffer"* ]] || fail "velocity form: the first failure does not name the momentum buffer: $first"

# 3. Grads times -3 where values reach 1e15: failed or imprecise, never passed.
set +e
"$lockstep" run --engine "$wrong --scale-first-grads -3 $impl" --seed 1 --index 44 --report-dir "$work/minus-three" \
  > "$work/minus-three.log" 2>&1
set -e
grep -Eq "^0 passed, (1 failed|0 failed, 0 skipped \(1 of the xfail imprecise)" "$work/minus-three.log" ||
  fail "grads times -3: random-44 passed: $(tail -1 "$work/minus-three.log")"

# 4. One record too few: a failure per case, reports written.
set +e
"$lockstep" run --engine "$wrong --drop-last-record $impl" --count 2 --report-dir "$work/short" > "$work/short.log" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] || fail "one record too few: run exited $rc, expected 1"
[[ -s "$work/short/lockstep-report.json" ]] || fail "one record too few: no JSON report"
grep -q "records for a program of" "$work/short.log" || fail "one record too few: no case says the trace is short"

if [[ $failures -gt 0 ]]; then
  echo "check_wrong_drivers: $failures failures (logs in $work)"
  exit 1
fi
echo "check_wrong_drivers: -0 dropped, velocity form, grads times -3 and a short trace are all reported as they must be"
