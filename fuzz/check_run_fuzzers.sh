#!/usr/bin/env bash
# run_fuzzers.sh's own contract, with stand-in targets (a Python script that prints libFuzzer's lines), so it needs
# no Clang: with --fuzz-seconds=N each target runs its seeds first (up to libFuzzer's "#N INITED" line) and is then
# fuzzed N seconds before the SIGINT; a finding fails the run (exit 1, "found something") whether the target dies on
# a seed, dies while fuzzing, or is still writing its report when the SIGINT ends it (libFuzzer's exit 72 then).
#
#   bash fuzz/check_run_fuzzers.sh WORK_DIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$1"
rm -rf "$work"
mkdir -p "$work/build/fuzz" "$work/times"
export FAKE_TIMES="$work/times"
failures=0
fail() { echo "check_run_fuzzers: $*" >&2; failures=$((failures + 1)); }

cat > "$work/fake_target.py" <<'EOF'
import os, signal, sys, time
# A stand-in for a libFuzzer target; FAKE_<name> says how it behaves (default "good": fuzzes until SIGINT).
name = os.environ["FAKE_NAME"]
mode = os.environ.get("FAKE_" + name, "good")
def say(line):
    print(line, flush=True)
def note(event):
    with open(os.path.join(os.environ["FAKE_TIMES"], name), "a") as f:
        f.write(f"{event} {time.time()}\n")
def on_sigint(signum, frame):
    note("interrupted")
    say("==1== libFuzzer: run interrupted; exiting")
    say("stat::number_of_executed_units: 1234")
    os._exit(72)  # libFuzzer 14's exit status after a SIGINT
signal.signal(signal.SIGINT, on_sigint)
if mode == "dies_on_a_seed":
    say("==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1")
    say("SUMMARY: AddressSanitizer: heap-buffer-overflow")
    sys.exit(1)
if mode == "slow_seeds":
    time.sleep(2)
say("#10\tINITED cov: 1 ft: 1 corp: 1/1b exec/s: 0 rss: 1Mb")
note("inited")
if mode == "dies_fuzzing":
    time.sleep(0.3)
    say("==1==ERROR: AddressSanitizer: SEGV on unknown address 0x0")
    sys.exit(77)  # libFuzzer's -error_exitcode
if mode == "report_cut_by_sigint":
    say("==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x2")
while True:
    time.sleep(0.05)
EOF
for name in program fixture driver_answer expectations tolerance named_case profile report; do
  printf '#!/bin/sh\nFAKE_NAME=%s exec python3 "%s" "$@"\n' "$name" "$work/fake_target.py" > "$work/build/fuzz/fuzz_$name"
  chmod +x "$work/build/fuzz/fuzz_$name"
done

# Seconds between a target's INITED and its SIGINT.
fuzzed_seconds() {
  awk '$1 == "inited" { i = $2 } $1 == "interrupted" { s = $2 } END { if (i && s) printf "%.1f", s - i; else print "none" }' \
    "$work/times/$1"
}

# Every target good, fuzz_fixture's seeds slow (2 s): exit 0, and each target is fuzzed its second after its seeds.
code=0
FAKE_fixture=slow_seeds bash "$here/run_fuzzers.sh" "$work/build" "$work/good" --fuzz-seconds=1 > "$work/good.out" 2>&1 ||
  code=$?
[[ $code -eq 0 ]] || { fail "good targets: exit $code, not 0"; cat "$work/good.out" >&2; }
for name in program fixture report; do
  grep -q "^fuzz_$name .* 1234 inputs .* exit 0$" "$work/good.out" || fail "good targets: no 'exit 0' line of 1234 inputs for fuzz_$name"
  s=$(fuzzed_seconds "$name")
  [[ "$s" != none ]] && awk -v s="$s" 'BEGIN { exit !(s >= 0.9) }' ||
    fail "fuzz_$name was fuzzed $s s after its seeds, not 1 s"
done

# Three findings: one on a seed, one while fuzzing, one whose report the SIGINT cut short. Each fails, the rest pass.
rm -f "$work/times"/*
code=0
FAKE_program=dies_on_a_seed FAKE_expectations=dies_fuzzing FAKE_tolerance=report_cut_by_sigint \
  bash "$here/run_fuzzers.sh" "$work/build" "$work/bad" --fuzz-seconds=1 > "$work/bad.out" 2>&1 || code=$?
[[ $code -eq 1 ]] || fail "three findings: exit $code, not 1"
for name in program expectations tolerance; do
  grep -q "^fuzz_$name .* exit [1-9][0-9]*$" "$work/bad.out" || fail "fuzz_$name's finding is not a non-zero exit"
  grep -q "run_fuzzers: fuzz_$name found something" "$work/bad.out" || fail "fuzz_$name's finding is not reported"
done
for name in fixture driver_answer named_case profile report; do
  grep -q "^fuzz_$name .* exit 0$" "$work/bad.out" || fail "fuzz_$name (good) does not pass beside the findings"
done

# A bad --fuzz-seconds: exit 2 and a message.
code=0
bash "$here/run_fuzzers.sh" "$work/build" "$work/usage" --fuzz-seconds=soon > "$work/usage.out" 2>&1 || code=$?
[[ $code -eq 2 ]] && grep -q 'needs a whole number of seconds' "$work/usage.out" || fail "--fuzz-seconds=soon: exit $code"

if [[ $failures -gt 0 ]]; then
  echo "check_run_fuzzers: $failures failure(s)" >&2
  exit 1
fi
echo "check_run_fuzzers: seeds first, then --fuzz-seconds of fuzzing; findings on a seed, while fuzzing and cut by the SIGINT all fail the run"
