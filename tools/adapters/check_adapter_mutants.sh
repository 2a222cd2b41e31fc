#!/bin/bash
# Planted bugs in the frameworks behind the npm adapters (ADAPTER_DIR/mutants/*.js, loaded with node -r before the
# driver): each must make the adapter's CI check fail, replay or live run, with the adapter's shipped expectations
# (and tolerance) file. Proves that the masks and bounds of a file of verified deviations still leave the
# framework's behaviour judged: an entry wide enough to hide one of these is a defect. Each entry that accepts numbers
# names its guards ("guard", tools/adapters/check_guards.py checks that they exist).
# Python mutants (ADAPTER_DIR/mutants/*.py, e.g. tools/adapters/pytorch) run as
# `python3 ADAPTER_DIR/with_mutant.py MUTANT $MUTANT_DRIVER`; MUTANT_PREFIX selects mutants by name (foreach_).
#   check_adapter_mutants.sh LOCKSTEP WORKDIR ADAPTER_DIR EXPECTATIONS COUNT [TOLERANCE]
set -u
lockstep="$1"; work="$2"; adapter="$(cd "$3" && pwd)"; expectations="$4"; count="$5"; tolerance="${6:-}"
extra=()
[ -n "$tolerance" ] && extra=(--tolerance "$tolerance")
rm -rf "$work"; mkdir -p "$work"
fail=0; n=0
for mutant in "$adapter"/mutants/${MUTANT_PREFIX:-}*.js "$adapter"/mutants/${MUTANT_PREFIX:-}*.py; do
  [ -e "$mutant" ] || continue
  n=$((n + 1))
  case "$mutant" in
    *.py)
      name="$(basename "$mutant" .py)"
      engine="/usr/bin/python3 $(printf %q "$adapter/with_mutant.py") $(printf %q "$mutant") ${MUTANT_DRIVER:?MUTANT_DRIVER: the driver a Python mutant runs}";;
    *)
      name="$(basename "$mutant" .js)"
      engine="node -r $(printf %q "$mutant") $(printf %q "$adapter/driver.js")";;
  esac
  # Caught = a case fails that the files do not explain (not merely exit 1): read from the JSON report.
  failed() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["summary"]["failed"])' "$1" 2>/dev/null || echo 0; }
  "$lockstep" replay --engine "$engine" --expectations "$expectations" "${extra[@]}" --timeout-ms 60000 \
    --report-dir "$work/$name-replay" > "$work/$name-replay.log" 2>&1
  if [ $? = 2 ]; then
    echo "check_adapter_mutants: FAILED: $name: the driver did not start:"; tail -3 "$work/$name-replay.log"; fail=1; continue
  fi
  caught="$(failed "$work/$name-replay/replay-report.json")"
  where="replay"
  if [ "$caught" = 0 ]; then  # the corpus missed it: the live run must catch it
    "$lockstep" run --engine "$engine" --expectations "$expectations" "${extra[@]}" --count "$count" --seed 1 \
      --shrink-seconds 0 --timeout-ms 60000 --report-dir "$work/$name-run" > "$work/$name-run.log" 2>&1
    caught="$(failed "$work/$name-run/lockstep-report.json")"
    where="$count live programs"
  fi
  if [ "$caught" -gt 0 ]; then
    echo "check_adapter_mutants: caught: $name ($caught unexplained failures in the $where)"
  else
    echo "check_adapter_mutants: FAILED: $name survives the expectations file (replay and $count live programs pass)"; fail=1
  fi
done
[ "$n" = 0 ] && { echo "check_adapter_mutants: no mutants in $adapter/mutants"; exit 1; }
exit $fail
