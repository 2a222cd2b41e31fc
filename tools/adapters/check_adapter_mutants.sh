#!/bin/bash
# Planted bugs in the frameworks behind the npm adapters (ADAPTER_DIR/mutants/*.js, loaded with node -r before the
# driver): each must make the adapter's CI check fail, replay or live run, with the adapter's shipped expectations
# (and tolerance) file. Proves that the masks and bounds of a file of verified deviations still leave the
# framework's behaviour judged: an entry wide enough to hide one of these is a defect.
#   check_adapter_mutants.sh LOCKSTEP WORKDIR ADAPTER_DIR EXPECTATIONS COUNT [TOLERANCE]
set -u
lockstep="$1"; work="$2"; adapter="$(cd "$3" && pwd)"; expectations="$4"; count="$5"; tolerance="${6:-}"
extra=()
[ -n "$tolerance" ] && extra=(--tolerance "$tolerance")
rm -rf "$work"; mkdir -p "$work"
fail=0; n=0
for mutant in "$adapter"/mutants/*.js; do
  [ -e "$mutant" ] || continue
  n=$((n + 1))
  name="$(basename "$mutant" .js)"
  engine="node -r $mutant $adapter/driver.js"
  "$lockstep" replay --engine "$engine" --expectations "$expectations" "${extra[@]}" --timeout-ms 60000 \
    --report-dir "$work/$name-replay" > "$work/$name-replay.log" 2>&1
  replay_rc=$?
  "$lockstep" run --engine "$engine" --expectations "$expectations" "${extra[@]}" --count "$count" --seed 1 \
    --shrink-seconds 0 --timeout-ms 60000 --report-dir "$work/$name-run" > "$work/$name-run.log" 2>&1
  run_rc=$?
  if [ "$replay_rc" = 2 ] || [ "$run_rc" = 2 ]; then
    echo "check_adapter_mutants: FAILED: $name: the driver did not start:"; tail -3 "$work/$name-replay.log"; fail=1
  elif [ "$replay_rc" = 1 ] || [ "$run_rc" = 1 ]; then
    echo "check_adapter_mutants: caught: $name ($(tail -1 "$work/$name-replay.log" | cut -c1-80)...; run: $(tail -1 "$work/$name-run.log"))"
  else
    echo "check_adapter_mutants: FAILED: $name survives the expectations file (replay and $count live programs pass)"; fail=1
  fi
done
[ "$n" = 0 ] && { echo "check_adapter_mutants: no mutants in $adapter/mutants"; exit 1; }
exit $fail
