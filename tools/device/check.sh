#!/usr/bin/env bash
# lockstep on an official PyTorch/LibTorch 2.x with a GPU (the accelerator machine some tasks are lent: PyTorch's
# own binaries, CUDA, Ubuntu; issue 27). One command builds lockstep against the machine's LibTorch and runs the
# checks that Debian's packages cannot show, then prints one summary table; exit 0 when every check passed.
#
#   On your machine, from the project root:   bash ../shared/device/prepare.sh      (readies .device/)
#   On the device (carry [".device"]):        bash tools/device/check.sh [SECONDS]  (default budget 420 s)
#
# What it checks (each bounded by `timeout`, the whole in about 8 minutes on 16 cores):
#   build        .device/build-torch2.sh: configure and build build-torch2/ against the image's LibTorch
#   nm           tools/check_no_filesystem.sh: no binary that loads LibTorch uses std::filesystem (the symbols
#                official binaries export, pytorch/pytorch#133437); the cause of the --jobs crash on 2.11
#   unit         every GoogleTest binary (impl, conformance, oracle, cli, variants, mutants)
#   run-jobs1    lockstep run --count 3000 --jobs 1
#   run-jobs2    lockstep run --count 3000 --jobs 2        (crashed with SIGSEGV on 2.11 before file_system.h)
#   run-default  lockstep run at its defaults (named cases + 10,000 programs, all cores)
#   replay-j4    lockstep replay --engine oracle --jobs 4 (the 1.13 corpus on this LibTorch)
#   py-MODE-DEV  the PyTorch adapter (tools/adapters/pytorch_driver.py) in modes single/foreach/fused on cpu and
#                cuda: the corpus and a live run of 300 with the mode's version-aware expectations
#                (tools/adapters/check_adapter.sh); a mode the machine lacks is reported as skipped
# Logs go to build-torch2/device-logs/ (and to $OUT when the device tool set it, so they come back).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
budget="${1:-420}"
logs=build-torch2/device-logs
t0=$SECONDS
rows=()
failures=0

record() {  # record NAME STATUS SECONDS NOTE
  rows+=("$(printf '| %-14s | %-7s | %5s s | %s |' "$1" "$2" "$3" "$4")")
  [[ "$2" == FAIL ]] && failures=$((failures + 1))
}
# check NAME LIMIT COMMAND...: runs it with a time limit, its output into the log
check() {
  local name="$1" limit="$2"; shift 2
  local t=$SECONDS left=$((budget - (SECONDS - t0)))
  if ((left < 20)); then record "$name" "skipped" 0 "out of budget"; return; fi
  ((limit > left)) && limit=$left
  timeout -k 5 "$limit" "$@" > "$logs/$name.log" 2>&1
  local code=$?
  local note
  note="$(tail -1 "$logs/$name.log" | cut -c1-90)"
  case $code in
    0) record "$name" "ok" $((SECONDS - t)) "$note" ;;
    124|137) record "$name" "FAIL" $((SECONDS - t)) "timed out after $limit s" ;;
    *) record "$name" "FAIL" $((SECONDS - t)) "exit $code: $note" ;;
  esac
}

if [[ ! -f .device/build-torch2.sh ]]; then
  echo "tools/device/check.sh: no .device/: run 'bash ../shared/device/prepare.sh' here first and carry .device" >&2
  exit 2
fi
mkdir -p build-torch2
rm -rf "$logs"; mkdir -p "$logs"
t=$SECONDS
if bash .device/build-torch2.sh > "$logs/build.log" 2>&1; then
  record build ok $((SECONDS - t)) "$(grep 'built against' "$logs/build.log" | head -1)"
else
  record build FAIL $((SECONDS - t)) "$(tail -1 "$logs/build.log")"
fi
eval "$(grep '^export LD_LIBRARY_PATH=' "$logs/build.log")"
export LD_LIBRARY_PATH
b=build-torch2

if [[ -x $b/lockstep ]]; then
  check nm 60 bash tools/check_no_filesystem.sh $b c++
  unit() {
    local rc=0
    for t in impl/impl_tests conformance/conformance_tests oracle/oracle_tests tools/cli_tests \
             tools/variants/variants_tests tools/mutants/mutants_tests; do
      [[ -x $b/$t ]] || continue
      RC_PARAMS=seed=20261121 ./$b/$t --gtest_brief=1 || { echo "FAILED: $t"; rc=1; }
    done
    echo "unit tests: exit $rc"
    return $rc
  }
  check unit 240 unit
  check run-jobs1 120 ./$b/lockstep run --count 3000 --jobs 1 --report-dir $b/dev-run1
  check run-jobs2 120 ./$b/lockstep run --count 3000 --jobs 2 --report-dir $b/dev-run2
  check run-default 180 ./$b/lockstep run --report-dir $b/dev-run
  check replay-j4 120 ./$b/lockstep replay --engine oracle --jobs 4 --report-dir $b/dev-replay
  for device in cpu cuda; do
    for mode in single foreach fused; do
      engine="python3 $PWD/tools/adapters/pytorch_driver.py --mode $mode --device $device"
      if ! sh -c "$engine" < /dev/null > /dev/null 2> "$logs/py-$mode-$device.probe"; then
        record "py-$mode-$device" "skipped" 0 "$(head -1 "$logs/py-$mode-$device.probe" | cut -c1-90)"
        continue
      fi
      expectations=fixtures/expectations/pytorch-python.json
      [[ $mode == foreach ]] && expectations=fixtures/expectations/pytorch-python-foreach.json
      [[ $mode == fused ]] && expectations=fixtures/expectations/pytorch-python-fused.json
      check "py-$mode-$device" 150 bash tools/adapters/check_adapter.sh ./$b/lockstep "$b/dev-py-$mode-$device" \
        "$engine" "$expectations" 300
    done
  done
fi

echo
echo "lockstep on $(python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")' 2>/dev/null)"
echo "| check          | result  |  time   | note |"
echo "|----------------|---------|---------|------|"
printf '%s\n' "${rows[@]}"
echo "$failures failed, $((SECONDS - t0)) s in all; logs in $logs"
if [[ -n "${OUT:-}" && -d "${OUT:-}" ]]; then
  tar -czf "$OUT/device-logs.tgz" -C "$logs" . 2>/dev/null || true
fi
((failures == 0))
