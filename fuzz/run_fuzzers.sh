#!/usr/bin/env bash
# Runs every fuzz target of a sanitize build (fuzz/CMakeLists.txt) from the seed corpora of the shipped files, for a
# time or a number of inputs each, and fails on the first finding (a crash, a sanitizer report, an exception of a
# type the reader does not document: libFuzzer exits non-zero and leaves crash-* in WORK/<target>/).
#
#   bash fuzz/run_fuzzers.sh BUILD_DIR WORK_DIR --fuzz-seconds=8      # CI: the seeds, then 8 s of fuzzing each
#   bash fuzz/run_fuzzers.sh BUILD_DIR WORK_DIR -max_total_time=60     # a minute each, the seeds included
#   bash fuzz/run_fuzzers.sh BUILD_DIR WORK_DIR -runs=10000000         # the closing note's 10 M inputs each
#
# --fuzz-seconds=N runs each target's whole seed corpus and then fuzzes it for N seconds (then SIGINT): libFuzzer's
# own -max_total_time counts the seeds too, and under ASan the 474 fixture seeds alone take about 15 s, so a short
# -max_total_time would run the seeds of fuzz_fixture and fuzz nothing. Other arguments go to every target
# (libFuzzer flags). WORK_DIR/<target>/corpus keeps what fuzzing found, so a second run goes on from there. One line
# per target: inputs run, seconds, corpus size, exit status.
set -euo pipefail
usage="usage: $0 BUILD_DIR WORK_DIR [--fuzz-seconds=N] [libFuzzer flags...]"
if [[ $# -lt 2 ]]; then
  echo "$usage" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "$1" && pwd)"
mkdir -p "$2"
work="$(cd "$2" && pwd)"
shift 2
fuzz_seconds=""
if [[ "${1:-}" == --fuzz-seconds=* ]]; then
  fuzz_seconds="${1#--fuzz-seconds=}"
  shift
  [[ "$fuzz_seconds" =~ ^[0-9]+$ ]] || { echo "run_fuzzers: --fuzz-seconds needs a whole number of seconds" >&2; exit 2; }
fi
flags=("$@")

bash "$root/fuzz/seed_corpus.sh" "$work/seeds" > /dev/null
status=0
for name in program fixture driver_answer expectations tolerance named_case profile report; do
  target="$build/fuzz/fuzz_$name"
  [[ -x "$target" ]] || { echo "run_fuzzers: $target is missing (configure with the sanitize preset)" >&2; exit 2; }
  mkdir -p "$work/$name/corpus"
  log="$work/$name/fuzz.log"
  start=$(date +%s)
  set +e
  if [[ -z "$fuzz_seconds" ]]; then
    (cd "$work/$name" && "$target" -max_len=65536 -dict="$root/fuzz/lockstep.dict" \
        -print_final_stats=1 "${flags[@]}" corpus "$work/seeds/$name" > "$log" 2>&1)
    code=$?
  else
    (cd "$work/$name" && exec "$target" -max_len=65536 -dict="$root/fuzz/lockstep.dict" \
        -print_final_stats=1 "${flags[@]}" corpus "$work/seeds/$name" > "$log" 2>&1) &
    pid=$!
    # "#N INITED" is libFuzzer's line for "every seed has run"; a target that dies on a seed ends the wait too.
    until grep -q '^#[0-9]*[[:space:]]*INITED' "$log" 2> /dev/null || ! kill -0 "$pid" 2> /dev/null; do sleep 0.1; done
    sleep "$fuzz_seconds"
    kill -INT "$pid" 2> /dev/null
    wait "$pid"
    code=$?
    # libFuzzer (Clang 14: no -interrupted_exitcode yet) prints its final stats on SIGINT and exits with 72. After our
    # own SIGINT that is a good run, unless the log holds a finding whose report the SIGINT cut short.
    if [[ $code -eq 72 ]] && grep -q 'libFuzzer: run interrupted; exiting' "$log"; then
      code=0
      grep -qE '^==[0-9]+== ?ERROR|^SUMMARY: |Test unit written to \./(crash|leak|timeout|oom)-' "$log" && code=1
    fi
  fi
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  size=$(find "$work/$name/corpus" -type f | wc -l)
  printf 'fuzz_%-14s %12s inputs  %6s s  corpus %6s files  exit %s\n' "$name" "${runs:-?}" "$(( $(date +%s) - start ))" "$size" "$code"
  if [[ $code -ne 0 ]]; then
    status=1
    echo "run_fuzzers: fuzz_$name found something (log: $log):" >&2
    grep -E 'ERROR|SUMMARY|lockstep fuzz|terminate|what\(\)' "$log" | head -20 >&2 || tail -30 "$log" >&2
  fi
done
exit $status
