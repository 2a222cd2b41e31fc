#!/bin/bash
# Optional trace fields on the user's path (fixtures/PROTOCOL.md section 4a, conformance/program/optional_fields.h),
# through real drivers, live (`lockstep run`) and on the corpus (`lockstep replay`):
#  1. a driver that reports and announces param.same_as_previous (the impl driver): passes, the field "tested";
#  2. a driver written before the field (optional_field_driver.py omit: not reported, not announced): passes,
#     the field "untested" with its reason, never a failure or a parse error;
#  3. a driver that announces the field and leaves it out: each program's answer is garbage naming the first
#     parameter without it, and ten in a row end the run once (exit 2, fixtures/PROTOCOL.md section 6);
#  4. a wrong driver (rebind: a stepped parameter reported as a new tensor, every number right): fails at the step
#     on "→ same_as_previous", live and in replay, and its reproduce line, executed, fails the same way;
#  5. a corpus recorded before the field (the field stripped from the fixtures): replays green, the field untested
#     because the expected traces do not record it;
#  6. the mutant step_rebinds_parameter through the impl driver: killed at a step on the field.
#   check_optional_fields.sh LOCKSTEP IMPL_DRIVER WORKDIR
set -u
lockstep="$1"; impl="$2"; work="$3"
here="$(cd "$(dirname "$0")" && pwd)"
corpus="$(cd "$here/../../../fixtures/corpus" && pwd)"
wrap="python3 $here/optional_field_driver.py"
rm -rf "$work"; mkdir -p "$work"
fail=0
check() {
  local code="$1" what="${!#}"; shift
  if ! python3 -c "$code" "${@:1:$#-1}"; then echo "check_optional_fields: FAILED: $what"; fail=1
  else echo "check_optional_fields: ok: $what"; fi
}
# run NAME ENGINE [ARGS...]: `lockstep run` into $work/NAME, exit status in $work/NAME.rc (COUNT: random programs)
run() {
  local name="$1" engine="$2"; shift 2
  "$lockstep" run --engine "$engine" --seed 5 --count "${COUNT:-60}" --report-dir "$work/$name" "$@" > "$work/$name.log" 2>&1
  echo $? > "$work/$name.rc"
}
replay() {
  local name="$1" engine="$2"; shift 2
  "$lockstep" replay --engine "$engine" --report-dir "$work/$name" "$@" > "$work/$name.log" 2>&1
  echo $? > "$work/$name.rc"
}
field='
import json, sys
def field(d, name, kind="lockstep"):
    r = json.load(open("%s/%s/%s-report.json" % (d, name, kind)))
    return r, r["coverage"]["optional_fields"]["param.same_as_previous"], int(open("%s/%s.rc" % (d, name)).read())
'

run reports "$impl"
replay reports-replay "$impl"
check "$field"'
for name, kind in (("reports", "lockstep"), ("reports-replay", "replay")):
    r, f, rc = field(sys.argv[1], name, kind)
    assert rc == 0 and r["summary"]["failed"] == 0, (name, rc, r["summary"])
    assert f["status"] == "tested" and f["compared"] > 0 and f["not_reported"] == 0 and f["not_expected"] == 0, (name, f)
' "$work" "1. a driver that announces and reports the field: passes, the field tested (live and replay)"

run omit "$wrap omit -- $impl"
replay omit-replay "$wrap omit -- $impl"
check "$field"'
for name, kind in (("omit", "lockstep"), ("omit-replay", "replay")):
    r, f, rc = field(sys.argv[1], name, kind)
    assert rc == 0 and r["summary"]["failed"] == 0, (name, rc, r["summary"])
    assert f["status"] == "untested" and f["compared"] == 0 and f["not_reported"] > 0, (name, f)
    assert "does not report it" in f["why_untested"], f
md = open(sys.argv[1] + "/omit/lockstep-report.md").read()
assert "| `param.same_as_previous` (SEM-1.6) | **untested** | 0 |" in md, "the Markdown report does not say untested"
' "$work" "2. a driver written before the field: passes, the field untested with its reason (live and replay)"

mkdir -p "$work/no-cases"  # random programs only: each garbage answer restarts the driver
COUNT=30 run omit-announced "$wrap omit-announced -- $impl" --shrink-seconds 0 --cases "$work/no-cases"
# Every program with a parameter gets a garbage answer: ten in a row end the run once (exit 2, no report; issue 29),
# naming the fault and the parameter, instead of a restart and a failure per program.
check '
import os, sys
d = sys.argv[1]
rc = int(open(d + "/omit-announced.rc").read())
log = open(d + "/omit-announced.log").read()
assert rc == 2, rc
assert "gave up: 10 programs in a row ended in the same fault (garbage)" in log, log[-2000:]
assert "which the hello announces" in log and "/trace/init/params/" in log, log[-2000:]
assert not os.path.exists(d + "/omit-announced/lockstep-report.json"), "a report was written"
' "$work" "3. a driver that announces the field and leaves it out: garbage naming the parameter, ten in a row end the run once (exit 2)"

run rebind "$wrap rebind -- $impl" --shrink-seconds 5
replay rebind-replay "$wrap rebind -- $impl"
check "$field"'
for name, kind in (("rebind", "lockstep"), ("rebind-replay", "replay")):
    r, f, rc = field(sys.argv[1], name, kind)
    assert rc == 1, (name, rc)
    failed = [c for c in r["cases"] if c["status"] == "failed"]
    assert failed, name
    for c in failed:
        first = c["failure"]["differences"][0]
        assert c["failure"]["action"] == "step" and first["path"].endswith(" \u2192 same_as_previous"), (name, c["id"], c["failure"]["action"], first)
        assert first["expected_text"] == "true" and first["actual_text"] == "false", first
' "$work" "4. a wrong driver (a stepped parameter reported as a new tensor): fails at the step on same_as_previous (live and replay)"

# The reproduce line of the first live failure, executed as printed, fails the same way.
repro="$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1] + "/rebind/lockstep-report.json"))
print(next(c for c in r["cases"] if c["status"] == "failed" and c["id"].startswith("random-"))["failure"]["reproduce"])
' "$work")"
case "$repro" in "lockstep run "*) ;; *) echo "check_optional_fields: FAILED: reproduce line '$repro'"; fail=1 ;; esac
bash -c "'$lockstep' ${repro#lockstep } --report-dir '$work/repro'" > "$work/repro.log" 2>&1; echo $? > "$work/repro.rc"
check "$field"'
r, f, rc = field(sys.argv[1], "repro")
assert rc == 1 and r["summary"]["failed"] == 1, (rc, r["summary"])
assert r["cases"][0]["failure"]["differences"][0]["path"].endswith("same_as_previous"), r["cases"][0]["failure"]["differences"][0]
' "$work" "4. its reproduce line, executed, fails on the same field"

python3 "$here/optional_field_driver.py" strip-fixtures "$corpus" "$work/old-corpus"
replay old-corpus "$impl" --fixtures "$work/old-corpus"
check "$field"'
r, f, rc = field(sys.argv[1], "old-corpus", "replay")
assert rc == 0 and r["summary"]["failed"] == 0, (rc, r["summary"])
assert f["status"] == "untested" and f["not_expected"] > 0 and f["compared"] == 0, f
assert "expected traces do not record it" in f["why_untested"], f
' "$work" "5. a corpus recorded before the field: replays green, the field untested (not recorded)"

run mutant "$impl --mutant step_rebinds_parameter" --shrink-seconds 5
check "$field"'
r, f, rc = field(sys.argv[1], "mutant")
assert rc == 1, rc
paths = {c["failure"]["differences"][0]["path"].split(" \u2192 ")[-1] for c in r["cases"] if c["status"] == "failed"}
assert "same_as_previous" in paths, paths
' "$work" "6. the mutant step_rebinds_parameter through the driver: killed on same_as_previous"

exit $fail
