#!/bin/bash
# One adapter under lockstep, as CI runs it: the golden corpus (replay) and a seeded live run against LibTorch,
# both with the adapter's expectations file, then every standalone reproduction (REPRO_DIR/*.sh). Passes when
# nothing fails that the file does not explain, every entry of the file is used by the replay or the run (an
# entry that stops matching, because the framework changed, fails: the list stays true), and every reproduction
# still reproduces (exits 0). The reports stay in WORKDIR/replay and WORKDIR/run (the conformance matrix reads
# them: check_matrix.sh).
# TOLERANCE: a tolerance-overrides file (lockstep --tolerance) for a precision deviation judged at a wider bound
# instead of masked.
#   check_adapter.sh LOCKSTEP WORKDIR ENGINE EXPECTATIONS COUNT [REPRO_DIR] [TOLERANCE]
set -u
lockstep="$1"; work="$2"; engine="$3"; expectations="$4"; count="$5"; repro="${6:-}"; tolerance="${7:-}"
extra=()
[ -n "$tolerance" ] && extra=(--tolerance "$tolerance")
rm -rf "$work"; mkdir -p "$work"
name="$(basename "$work")"

"$lockstep" replay --engine "$engine" --expectations "$expectations" "${extra[@]}" --timeout-ms 60000 \
  --report-dir "$work/replay" > "$work/replay.log" 2>&1
replay_rc=$?
if [ "$replay_rc" = 2 ]; then
  echo "check_adapter: FAILED: $name: the driver cannot start or the input does not read:"; tail -5 "$work/replay.log"
  exit 1
fi
"$lockstep" run --engine "$engine" --expectations "$expectations" "${extra[@]}" --count "$count" --seed 1 --timeout-ms 60000 \
  --shrink-seconds 1 \
  --report-dir "$work/run" > "$work/run.log" 2>&1

fail=0
if ! python3 - "$work/replay/replay-report.json" "$work/run/lockstep-report.json" <<'PY'
import json, sys
problems = []
reports = []
for name, path in (("replay", sys.argv[1]), ("run", sys.argv[2])):
    try:
        reports.append(json.load(open(path)))
    except Exception as e:
        print("%s: no report (%s)" % (name, e)); sys.exit(1)
    if reports[-1]["summary"]["failed"]:
        failed = [c["id"] for c in reports[-1]["cases"] if c["status"] == "failed"]
        problems.append("%s: %d failed (%s)" % (name, len(failed), ", ".join(failed[:5])))
# An entry is true when the replay or the run uses it (some explain fixtures only, some live programs).
unused = set(reports[0].get("unused_expectations", [])) & set(reports[1].get("unused_expectations", []))
if unused:
    problems.append("entries used by neither replay nor run (no longer true?): %s" % sorted(unused))
if problems:
    print("; ".join(problems)); sys.exit(1)
PY
then
  echo "check_adapter: FAILED: $name (logs and reports in $work)"; fail=1
fi

if [ -n "$repro" ]; then
  for script in "$repro"/*.sh; do
    [ -e "$script" ] || continue
    log="$work/repro-$(basename "$script" .sh).log"
    if bash "$script" > "$log" 2>&1; then
      echo "check_adapter: reproduces: $(basename "$script")"
    else
      echo "check_adapter: FAILED: $(basename "$script") no longer reproduces its deviation:"; tail -5 "$log"; fail=1
    fi
  done
fi
[ "$fail" = 0 ] && echo "check_adapter: ok: $name (replay and $count live programs; every expectation used)"
exit $fail
