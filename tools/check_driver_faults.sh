#!/usr/bin/env bash
# Drivers that misbehave as processes (tools/adapters/testing/fault_driver.py in front of the impl driver), signals
# to lockstep and its workers, and inputs that could block: lockstep must end in bounded time and memory, with the
# right exit status and message, and leave no process and no temporary behind.
#   a. reason-flood: 1 MiB reasons in every unsupported answer are cut: bounded memory and report size;
#   b. hang + SIGTERM/SIGINT/SIGHUP to lockstep: it ends (non-zero) within 10 s and kills the hung driver's tree;
#   c. ignore-term + SIGTERM: the same, for a driver tree that ignores TERM/INT/HUP;
#   d. hang + --jobs 2 + SIGTERM to the parent: the same, and no lockstep-jobs.* left;
#   e. setsid-child: a child that left the driver's session is killed at the end;
#   f. fork-exit-after-answer: a driver that exits after answering random-5, leaving a child on its pipes, fails
#      no case (never random-6) and costs no timeout;
#   g. exit-after-hello: a driver that cannot take a request ends the run once (exit 2, "cannot start");
#   h. garbage: the same fault over and over ends the run once (exit 2), its message with a location;
#   i. SIGKILL of a --jobs 2 parent: workers, drivers and the jobs directory go too;
#   j. SIGKILL of one worker: the parent ends (exit 2) naming the worker and signal 9;
#   k. FIFOs as --expectations, --tolerance, merge inputs and a fixture file: an error or a skip, never a hang.
# Every lockstep runs under `timeout -k 5 120`, `ulimit -v` (4 GiB) and TMPDIR=WORK/CHECK/tmp, with FAULT_TOKEN=$$-N
# in its environment; "no process left" is: no process but this script and its ancestors has that FAULT_TOKEN
# (/proc/PID/environ) within 5 s after lockstep ended (those found are printed and killed with SIGKILL).
#   check_driver_faults.sh LOCKSTEP IMPL_DRIVER WORK_DIR      (CHECK_DRIVER_FAULTS_ONLY=b,d: only checks b and d)
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/check_common.sh" check_driver_faults "$@"  # lockstep, impl, work (emptied)
work="$(cd "$work" && pwd)"
repo="$(cd "$here/.." && pwd)"
fault="python3 $here/adapters/testing/fault_driver.py"
lockstep_exe="$(readlink -f "$lockstep")"
vmem=$((4 * 1024 * 1024))  # KiB, for ulimit -v
rss_limit_mib=400           # check a's bound on the peak resident memory
# An AddressSanitizer build (CI's sanitize stage) reserves terabytes of shadow address space at start, so ulimit -v
# cannot bound it, and its shadow memory adds to the resident size.
if (ulimit -v $vmem; "$lockstep" --help 2>&1) | grep -q AddressSanitizer; then
  vmem=unlimited
  rss_limit_mib=1200
fi
fail=0
check_failed=0
summary=()
ok() { echo "check_driver_faults: ok: $1"; }
bad() { echo "check_driver_faults: FAILED: $1"; fail=1; check_failed=1; }
only="${CHECK_DRIVER_FAULTS_ONLY:-}"  # e.g. "b,d": run only these checks (by letter)
begin() {  # begin NAME: false when NAME's letter is not selected
  [[ -z "$only" || ",$only," == *",${1%%-*},"* ]] || return 1
  check_name="$1"; check_failed=0; check_t0="$(now)"; dir="$work/$1"; mkdir -p "$dir/tmp"
  echo "check_driver_faults: --- $1"
}
finish() {
  local line secs=$(( $(since "$check_t0") / 1000 ))
  if [[ $check_failed == 0 ]]; then line="check_driver_faults: PASS $check_name (${secs} s)"
  else line="check_driver_faults: FAIL $check_name (${secs} s)"; fi
  echo "$line"; summary+=("$line")
}
excerpt() { head -c 2000 "$1" | cut -c1-300 | head -"${2:-5}"; }  # never print a flood

# This script and its ancestors: never counted, never killed.
self_pids="$$"
p=$$
while [[ $p -gt 1 ]]; do
  p="$(awk '/^PPid:/ {print $2}' /proc/$p/status 2>/dev/null)"; [[ -z "$p" ]] && break
  self_pids+=" $p"
done

# holders MODE TOKEN [CMD_SUBSTRING]: "PID CMDLINE" of every process (not this script nor an ancestor) whose
# environment holds FAULT_TOKEN=TOKEN (MODE exact) or FAULT_TOKEN=TOKEN... (MODE prefix).
holders() {
  python3 - "$self_pids" "$@" <<'EOF'
import os, sys
exclude = set(sys.argv[1].split())
mode, token = sys.argv[2], sys.argv[3].encode()
sub = sys.argv[4].encode() if len(sys.argv) > 4 else None
needle = b'FAULT_TOKEN=' + token
for p in os.listdir('/proc'):
    if not p.isdigit() or p in exclude or p == str(os.getpid()):
        continue
    try:
        with open('/proc/%s/environ' % p, 'rb') as f:
            env = f.read().split(b'\0')
        with open('/proc/%s/cmdline' % p, 'rb') as f:
            cmd = f.read().replace(b'\0', b' ').strip()
    except OSError:
        continue
    if any(e == needle if mode == 'exact' else e.startswith(needle) for e in env):
        if sub is None or sub in cmd:
            print(p, cmd.decode('utf-8', 'replace')[:200])
EOF
}
kill_holders() {  # kill_holders MODE TOKEN: SIGKILL them all
  local pids
  pids="$(holders "$1" "$2" | awk '{print $1}')"
  [[ -n "$pids" ]] && kill -9 $pids 2>/dev/null
  return 0
}
cleanup() {
  local j
  for j in $(jobs -p); do kill -9 "$j" 2>/dev/null; done
  kill_holders prefix "$$-"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP  # the EXIT trap runs then too

children() { cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -v '^$'; }
descendants() {  # breadth first, nearest first
  local queue=("$1") k
  while [[ ${#queue[@]} -gt 0 ]]; do
    for k in $(children "${queue[0]}"); do echo "$k"; queue+=("$k"); done
    queue=("${queue[@]:1}")
  done
}
has_env() { tr '\0' '\n' < /proc/"$1"/environ 2>/dev/null | grep -q "^$2="; }
alive() { [[ -d /proc/$1 ]] && [[ "$(awk '{print $3}' /proc/$1/stat 2>/dev/null)" != Z ]]; }
now() { echo "${EPOCHREALTIME/./}"; }  # microseconds
since() { echo $(( ($(now) - $1) / 1000 )); }  # milliseconds since $1

# launch NAME [--time] ARGS...: lockstep ARGS in the background with a fresh token; stdout to $dir/NAME.out, stderr
# to $dir/NAME.err (with --time: /usr/bin/time -v to $dir/NAME.time). Sets outer (the pid to wait for), tok, t0.
launch() {
  local name="$1" timing=()
  shift
  if [[ "${1:-}" == --time ]]; then
    shift
    if [[ -n "$time_bin" ]]; then timing=("$time_bin" -v -o "$dir/$name.time")
    else timing=(python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("Maximum resident set size (kbytes): %d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc if rc >= 0 else 128 - rc)' "$dir/$name.time")
    fi
  fi
  tok="$$-$RANDOM"
  # The outer subshell exits with 128+N where lockstep dies of signal N, so bash prints no "Killed" line here.
  (
    (
      ulimit -v $vmem
      export TMPDIR="$dir/tmp" FAULT_TOKEN="$tok"
      # Background jobs of a non-interactive shell ignore SIGINT: give lockstep the default dispositions back.
      exec env --default-signal=INT,TERM,HUP "${timing[@]}" timeout -k 5 120 "$lockstep" "$@"
    ) > "$dir/$name.out" 2> "$dir/$name.err" < /dev/null
    exit $?
  ) 2> /dev/null &
  outer=$!
  t0="$(now)"
}
time_bin=""
[[ -x /usr/bin/time ]] && /usr/bin/time -v true > /dev/null 2>&1 && time_bin=/usr/bin/time

# wait_end SECONDS: waits up to SECONDS for the launched lockstep; sets rc (its status) and ended (1/0). When it
# does not end, kills it and its descendants (SIGKILL) and sets rc=-1.
wait_end() {
  local limit_ms=$(($1 * 1000)) d
  ended=0
  while [[ $(since "$t0") -lt $limit_ms ]]; do
    if ! alive "$outer"; then ended=1; break; fi
    sleep 0.1
  done
  if [[ $ended == 1 ]]; then
    wait "$outer"; rc=$?
  else
    for d in $(descendants "$outer"); do kill -9 "$d" 2>/dev/null; done
    kill -9 "$outer" 2>/dev/null
    wait "$outer" 2>/dev/null
    rc=-1
  fi
  elapsed_ms=$(since "$t0")
}
# The lockstep process under the launch wrappers (env/time/timeout): the nearest descendant running $lockstep_exe.
lockstep_pid() {
  local d
  for d in $(descendants "$outer"); do
    [[ "$(readlink /proc/"$d"/exe 2>/dev/null)" == "$lockstep_exe" ]] && { echo "$d"; return 0; }
  done
  return 1
}
# no_process_left WHAT: within 5 s no process holds this launch's token; those left are printed and killed.
no_process_left() {
  local left="" start
  start="$(now)"
  while :; do  # by the clock: a scan takes a while on a loaded machine
    left="$(holders exact "$tok")"
    [[ -z "$left" || $(since "$start") -ge 5000 ]] && break
    sleep 0.25
  done
  if [[ -z "$left" ]]; then ok "$1: no process left"
  else
    bad "$1: processes left 5 s after lockstep ended: $(echo "$left" | tr '\n' ';')"
    kill_holders exact "$tok"
  fi
}
# no_temporary_left WHAT REPORT_DIR: $dir/tmp is empty and REPORT_DIR holds no .NAME.tmp-* file.
no_temporary_left() {
  local tmps reps
  tmps="$(ls -A "$dir/tmp" 2>/dev/null | tr '\n' ' ')"
  reps="$(find "$2" -maxdepth 1 -name '.*.tmp-*' 2>/dev/null | tr '\n' ' ')"
  if [[ -z "$tmps" && -z "$reps" ]]; then ok "$1: no temporary left"
  else bad "$1: temporaries left: ${tmps:+in TMPDIR: $tmps}${reps:+in the report dir: $reps}"; fi
}
ended_in() {  # ended_in WHAT SECONDS
  if [[ $ended == 1 && $elapsed_ms -le $(($2 * 1000)) ]]; then ok "$1: ended in $elapsed_ms ms (exit $rc)"; return 0; fi
  if [[ $ended == 1 ]]; then bad "$1: took $elapsed_ms ms, more than $2 s (exit $rc)"
  else bad "$1: did not end within the limit; killed after $elapsed_ms ms"; fi
  return 1
}
# wait_holder CMD_SUBSTRING SECONDS [N]: polls until N (default 1) processes with the token whose command lines hold
# CMD_SUBSTRING run.
wait_holder() {
  local start
  start="$(now)"
  while [[ $(since "$start") -lt $(($2 * 1000)) ]]; do
    [[ $(holders exact "$tok" "$1" | wc -l) -ge ${3:-1} ]] && return 0
    alive "$outer" || return 1
    sleep 0.2
  done
  return 1
}
# workers_with_drivers: the worker pids (children of the lockstep parent with LOCKSTEP_WORKER in their environment)
# once there are two and each has a driver below it (a process with the token and LOCKSTEP_DRIVER_TOKEN); polls up
# to 60 s. Sets parent and workers.
workers_with_drivers() {
  local k d ready start
  workers=""; parent=""
  start="$(now)"
  while [[ $(since "$start") -lt 60000 ]]; do
    alive "$outer" || return 1
    parent="$(lockstep_pid)" || { sleep 0.2; continue; }
    workers=""
    for k in $(children "$parent"); do has_env "$k" LOCKSTEP_WORKER && workers+="$k "; done
    if [[ $(echo $workers | wc -w) -ge 2 ]]; then
      ready=0
      for k in $workers; do
        for d in $(descendants "$k"); do
          if has_env "$d" LOCKSTEP_DRIVER_TOKEN && has_env "$d" FAULT_TOKEN; then ready=$((ready + 1)); break; fi
        done
      done
      [[ $ready -ge 2 ]] && return 0
    fi
    sleep 0.2
  done
  return 1
}

# a. reason-flood ------------------------------------------------------------------------------------------------
if begin a-reason-flood; then
  launch run --time run --jobs 1 --engine "$fault --fault reason-flood $impl" --count 300 --seed 1 --report-dir "$dir/report"
  wait_end 130
  if [[ $rc == 0 ]]; then ok "reason-flood: exit 0"; else bad "reason-flood: exit $rc: $(excerpt "$dir/run.err" 3)"; fi
  rss="$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/run.time" 2>/dev/null)"
  if [[ -n "$rss" && $rss -lt $((rss_limit_mib * 1024)) ]]; then ok "reason-flood: peak RSS $((rss / 1024)) MiB"
  else bad "reason-flood: peak RSS ${rss:-unknown} KiB, expected < $rss_limit_mib MiB"; fi
  size="$(du -sb "$dir/report" 2>/dev/null | cut -f1)"
  if [[ -n "$size" && $size -lt $((10 * 1024 * 1024)) ]]; then ok "reason-flood: report dir $size bytes"
  else bad "reason-flood: report dir ${size:-missing} bytes, expected < 10 MiB"; fi
  if grep -q 'cut' "$dir/report/lockstep-report.json" 2>/dev/null; then ok "reason-flood: the report says the reason was cut"
  else bad "reason-flood: lockstep-report.json $( [[ -f "$dir/report/lockstep-report.json" ]] && echo "does not say the reason was cut" || echo "missing")"; fi
  no_process_left "reason-flood"
  no_temporary_left "reason-flood" "$dir/report"
  finish
fi

# b, c, d. a hung driver and a signal to lockstep ----------------------------------------------------------------
# hang_and_signal WHAT SIGNAL FAULT JOBS: the driver hangs at request 3; SIGNAL to the (parent) lockstep.
hang_and_signal() {
  local what="$1" sig="$2" flt="$3" jobs="$4" target n
  launch "run-$sig" run --jobs "$jobs" --engine "$fault --fault $flt --at 3 $impl" --count 50 --seed 1 \
    --report-dir "$dir/report-$sig"
  # Both sleeps of each hung driver (one driver per worker), so that none is still being started at the signal.
  if ! wait_holder "sleep 600" 60 $((2 * jobs)); then
    bad "$what: the driver did not hang within 60 s (lockstep $(alive "$outer" && echo running || echo ended)): $(excerpt "$dir/run-$sig.err" 3)"
  fi
  target="$(lockstep_pid)"
  if [[ -z "$target" ]]; then bad "$what: no lockstep process to signal"; wait_end 1; no_process_left "$what"; return; fi
  n="$(holders exact "$tok" "sleep 600" | wc -l)"
  echo "check_driver_faults: $what: $n hung sleep(s); SIG$sig to lockstep $target"
  t0="$(now)"
  kill -"$sig" "$target"
  wait_end 10
  ended_in "$what" 10
  if [[ $ended == 1 && $rc != 0 ]]; then ok "$what: non-zero exit ($rc)"
  elif [[ $ended == 1 ]]; then bad "$what: exit 0 after SIG$sig"; fi
  no_process_left "$what"
  no_temporary_left "$what" "$dir/report-$sig"
  ls -d "$dir"/tmp/lockstep-jobs.* > /dev/null 2>&1 && bad "$what: a lockstep-jobs.* directory is left in TMPDIR"
  rm -rf "$dir"/tmp/* "$dir"/tmp/.[!.]* 2>/dev/null  # the next signal starts clean
}
if begin b-hang-signals; then
  for sig in TERM INT HUP; do hang_and_signal "hang + SIG$sig" "$sig" hang 1; done
  finish
fi

if begin c-ignore-term; then
  hang_and_signal "ignore-term + SIGTERM" TERM ignore-term 1
  finish
fi

if begin d-hang-jobs2-sigterm; then
  hang_and_signal "hang, --jobs 2 + SIGTERM to the parent" TERM hang 2
  finish
fi

# e. setsid-child -------------------------------------------------------------------------------------------------
if begin e-setsid-child; then
  launch run run --jobs 1 --engine "$fault --fault setsid-child $impl" --count 20 --seed 1 --report-dir "$dir/report"
  wait_end 130
  if [[ $rc == 0 ]]; then ok "setsid-child: exit 0"; else bad "setsid-child: exit $rc: $(excerpt "$dir/run.err" 3)"; fi
  no_process_left "setsid-child"
  finish
fi

# f. fork-exit-after-answer ---------------------------------------------------------------------------------------
if begin f-fork-exit-after-answer; then
  # --at-id: the named cases come before random-0, so the 6th program request is not random-5.
  launch run run --jobs 1 --engine "$fault --fault fork-exit-after-answer --at-id random-5 $impl" --count 10 --seed 1 \
    --report-dir "$dir/report"
  wait_end 60
  ended_in "fork-exit-after-answer" 60
  failed_cases="$(python3 -c 'import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print("(no report: %s)" % e); sys.exit()
for c in d.get("cases", []):
    if c.get("status") == "failed":
        print(c.get("id"), str((c.get("failure") or {}).get("summary", ""))[:150])' "$dir/report/lockstep-report.json" 2>&1)"
  if [[ $rc == 0 ]]; then ok "fork-exit-after-answer: exit 0"
  else
    bad "fork-exit-after-answer: exit $rc; failed: $(echo "$failed_cases" | tr '\n' ';') $(grep -m2 FAIL "$dir/run.out" | cut -c1-200 | tr '\n' ';')"
  fi
  if echo "$failed_cases" | grep -q '^random-6 ' || grep -q 'FAIL *random-6:' "$dir/run.out"; then
    bad "fork-exit-after-answer: random-6 was charged with the exit after random-5"
  fi
  no_process_left "fork-exit-after-answer"
  finish
fi

# g. exit-after-hello ---------------------------------------------------------------------------------------------
if begin g-exit-after-hello; then
  launch run run --jobs 1 --engine "$fault --fault exit-after-hello $impl" --count 1000 --seed 1 --report-dir "$dir/report"
  wait_end 30
  ended_in "exit-after-hello" 30
  if [[ $rc == 2 ]] && grep -q 'start' "$dir/run.err"; then ok "exit-after-hello: exit 2: $(excerpt "$dir/run.err" 1)"
  else bad "exit-after-hello: exit $rc, expected 2 with 'start' on stderr: $(excerpt "$dir/run.err" 2)"; fi
  no_process_left "exit-after-hello"
  finish
fi

# h. garbage ------------------------------------------------------------------------------------------------------
if begin h-garbage; then
  launch replay replay --jobs 1 --engine "$fault --fault garbage $impl" --fixtures "$repo/fixtures/corpus" --report-dir "$dir/report"
  wait_end 60
  ended_in "garbage" 60
  if [[ $rc == 2 ]] && grep -Eqi "garbage|not a valid answer|field 'id'" "$dir/replay.err"; then
    ok "garbage: exit 2: $(excerpt "$dir/replay.err" 1)"
  else bad "garbage: exit $rc, expected 2 with the fault on stderr: $(excerpt "$dir/replay.err" 2)"; fi
  if grep -q 'answer: :' "$dir/replay.err" "$dir/replay.out"; then
    bad "garbage: a message with an empty location: $(grep -h -m1 'answer: :' "$dir/replay.err" "$dir/replay.out" | cut -c1-200)"
  else ok "garbage: every message names a location"; fi
  no_process_left "garbage"
  finish
fi

# i. SIGKILL of a --jobs 2 parent ---------------------------------------------------------------------------------
if begin i-parent-sigkill; then
  launch run run --jobs 2 --engine "$impl" --count 100000 --seed 3 --report-dir "$dir/report"
  if workers_with_drivers; then
    ok "parent SIGKILL: workers $workers of $parent run, each with a driver"
    kill -9 "$parent"
    t0="$(now)"
    left=""
    while :; do
      left="$(holders exact "$tok")"
      [[ -z "$left" || $(since "$t0") -ge 10000 ]] && break
      sleep 0.1
    done
    wait_end 1
    if [[ -z "$left" ]]; then ok "parent SIGKILL: no process left within 10 s"
    else bad "parent SIGKILL: processes left 10 s after: $(echo "$left" | tr '\n' ';')"; kill_holders exact "$tok"; fi
    jobs_dirs="$(ls -d "$dir"/tmp/lockstep-jobs.* 2>/dev/null | tr '\n' ' ')"
    if [[ -z "$jobs_dirs" ]]; then ok "parent SIGKILL: no lockstep-jobs.* left"
    else bad "parent SIGKILL: left in TMPDIR: $jobs_dirs"; fi
  else
    bad "parent SIGKILL: two workers with drivers did not start within 60 s (parent $parent, workers: $workers): $(excerpt "$dir/run.err" 2)"
    wait_end 1; kill_holders exact "$tok"
  fi
  finish
fi

# j. SIGKILL of one worker ----------------------------------------------------------------------------------------
if begin j-worker-sigkill; then
  launch run run --jobs 2 --engine "$impl" --count 100000 --seed 3 --report-dir "$dir/report"
  if workers_with_drivers; then
    victim="${workers%% *}"
    ok "worker SIGKILL: workers $workers of $parent run; SIGKILL to $victim"
    kill -9 "$victim"
    t0="$(now)"
    wait_end 15
    ended_in "worker SIGKILL" 15
    if [[ $rc == 2 ]] && grep -Eq 'worker [0-9].*signal 9' "$dir/run.err"; then ok "worker SIGKILL: exit 2: $(grep -m1 -E 'worker [0-9].*signal 9' "$dir/run.err" | cut -c1-200)"
    else bad "worker SIGKILL: exit $rc, expected 2 with a message naming the worker and signal 9: $(excerpt "$dir/run.err" 2)"; fi
    no_process_left "worker SIGKILL"
    no_temporary_left "worker SIGKILL" "$dir/report"
  else
    bad "worker SIGKILL: two workers with drivers did not start within 60 s (parent $parent, workers: $workers): $(excerpt "$dir/run.err" 2)"
    wait_end 1; kill_holders exact "$tok"
  fi
  finish
fi

# k. FIFOs --------------------------------------------------------------------------------------------------------
if begin k-fifos; then
  fifo="$dir/input.fifo"
  mkfifo "$fifo"
  fifo_error() {  # fifo_error WHAT NAME ARGS...: exit 2 within 10 s, the FIFO's path in the message
    local what="$1" name="$2"
    shift 2
    launch "$name" "$@"
    wait_end 10
    ended_in "$what" 10
    if [[ $rc == 2 ]] && grep -qF "$fifo" "$dir/$name.err" "$dir/$name.out"; then ok "$what: exit 2 naming the FIFO"
    else bad "$what: exit $rc, expected 2 naming $fifo: $(excerpt "$dir/$name.err" 2)"; fi
    no_process_left "$what"
  }
  fifo_error "--expectations FIFO" expectations run --jobs 1 --engine "$impl" --count 1 --expectations "$fifo" --report-dir "$dir/r1"
  fifo_error "--tolerance FIFO" tolerance run --jobs 1 --engine "$impl" --count 1 --tolerance "$fifo" --report-dir "$dir/r2"
  fifo_error "merge FIFO" merge merge "$fifo" --report-dir "$dir/r3"
  cp -r "$repo/fixtures/corpus/gradient_fed" "$dir/fixtures"
  mkfifo "$dir/fixtures/x.json"
  launch replay replay --jobs 1 --engine "$impl" --fixtures "$dir/fixtures" --report-dir "$dir/r4"
  wait_end 10
  ended_in "a FIFO x.json among the fixtures" 10
  if grep -h 'x\.json' "$dir/replay.err" "$dir/replay.out" | grep -Eqi 'skipped|not a regular file'; then
    ok "a FIFO x.json among the fixtures: reported: $(grep -h -m1 'x\.json' "$dir/replay.err" "$dir/replay.out" | cut -c1-200)"
  else bad "a FIFO x.json among the fixtures: exit $rc, not reported as skipped / not a regular file: $(excerpt "$dir/replay.err" 2)"; fi
  no_process_left "a FIFO x.json among the fixtures"
  finish
fi

echo "check_driver_faults: summary"
for line in "${summary[@]}"; do echo "  $line"; done
exit $fail
