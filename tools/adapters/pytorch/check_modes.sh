#!/bin/bash
# PyTorch's Python API in every mode the installed torch and machine have (tools/adapters/pytorch_driver.py --mode
# single|foreach|fused --device cpu|cuda): the golden corpus and a seeded live run, each with the mode's expectations
# file (tools/adapters/check_adapter.sh: nothing unexplained fails, every entry is used), then the mode's framework
# mutants (mutants/MODE_*.py, check_adapter_mutants.sh: each must fail). A mode the machine lacks
# (no GPU, no fused path) is reported as skipped; the driver says why and exits 3 before its hello.
#   check_modes.sh LOCKSTEP WORKDIR [COUNT]
set -u
lockstep="$1"; work="$2"; count="${3:-300}"
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/../../.."
python=/usr/bin/python3
rm -rf "$work"; mkdir -p "$work"
fail=0
for device in cpu cuda; do
  for mode in single foreach fused; do
    engine="$python $(printf %q "$root/tools/adapters/pytorch_driver.py") --mode $mode --device $device"
    if ! sh -c "$engine" < /dev/null > /dev/null 2> "$work/$mode-$device.probe"; then
      echo "check_modes: skipped $mode on $device: $(cat "$work/$mode-$device.probe")"
      continue
    fi
    expectations="$root/fixtures/expectations/pytorch-python.json"
    [ "$mode" = foreach ] && expectations="$root/fixtures/expectations/pytorch-python-foreach.json"
    [ "$mode" = fused ] && expectations="$root/fixtures/expectations/pytorch-python-fused.json"
    bash "$root/tools/adapters/check_adapter.sh" "$lockstep" "$work/$mode-$device" "$engine" "$expectations" "$count" \
      || fail=1
    # The mode's framework mutants (tools/adapters/pytorch/mutants/MODE_*.py) must fail with the same file: its
    # entries that accept numbers cannot hide another bug of the quantity they mask.
    if ls "$here/mutants/${mode}_"*.py > /dev/null 2>&1; then
      MUTANT_PREFIX="${mode}_" MUTANT_DRIVER="$(printf %q "$root/tools/adapters/pytorch_driver.py") --mode $mode --device $device" \
        bash "$root/tools/adapters/check_adapter_mutants.sh" "$lockstep" "$work-mutants/$mode-$device" "$here" \
        "$expectations" "$count" || fail=1
    fi
  done
done
exit $fail
