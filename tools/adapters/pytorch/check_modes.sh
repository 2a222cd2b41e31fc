#!/bin/bash
# PyTorch's Python API in every mode the installed torch and machine have (tools/adapters/pytorch_driver.py --mode
# single|foreach|fused --device cpu|cuda): the golden corpus and a seeded live run, each with the mode's expectations
# file. Passes when nothing fails that the files do not explain AND every entry of the files was used (an entry
# that stops matching, because torch changed, fails: the list stays true). A mode the machine lacks (no GPU, no
# fused path) is reported as skipped; the driver says why and exits 3 before its hello.
#   check_modes.sh LOCKSTEP WORKDIR [COUNT]
set -u
lockstep="$1"; work="$2"; count="${3:-300}"
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/../../.."
python=/usr/bin/python3
rm -rf "$work"; mkdir -p "$work"
fail=0
for device in cpu cuda; do
  for mode in single foreach fused; do
    engine="$python $root/tools/adapters/pytorch_driver.py --mode $mode --device $device"
    if ! $engine < /dev/null > /dev/null 2> "$work/$mode-$device.probe"; then
      echo "check_modes: skipped $mode on $device: $(cat "$work/$mode-$device.probe")"
      continue
    fi
    expectations="$root/fixtures/expectations/pytorch-python.json"
    [ "$mode" = foreach ] && expectations="$root/fixtures/expectations/pytorch-python-foreach.json"
    "$lockstep" replay --engine "$engine" --expectations "$expectations" --timeout-ms 60000 \
      --report-dir "$work/$mode-$device-replay" > "$work/$mode-$device-replay.log" 2>&1
    "$lockstep" run --engine "$engine" --expectations "$expectations" --count "$count" --seed 1 --timeout-ms 60000 \
      --report-dir "$work/$mode-$device-run" > "$work/$mode-$device-run.log" 2>&1
    if python3 - "$work/$mode-$device-replay/replay-report.json" "$work/$mode-$device-run/lockstep-report.json" "$expectations" <<'PY'
import json, sys
replay, run, file = (json.load(open(p)) for p in sys.argv[1:4])
problems = []
for name, r in (("replay", replay), ("run", run)):
    if r["summary"]["failed"]:
        problems.append("%s: %d failed" % (name, r["summary"]["failed"]))
# An entry is true when it is used by the replay or the run (some explain fixtures only, some live programs).
unused = set(replay.get("unused_expectations", [])) & set(run.get("unused_expectations", []))
if unused:
    problems.append("entries used by neither replay nor run (no longer true?): %s" % sorted(unused))
if problems:
    print("; ".join(problems)); sys.exit(1)
PY
    then
      echo "check_modes: ok: $mode on $device (replay and $count live programs; every expectation used)"
    else
      echo "check_modes: FAILED: $mode on $device (logs and reports in $work)"; fail=1
    fi
  done
done
exit $fail
