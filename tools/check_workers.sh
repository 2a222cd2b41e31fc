#!/usr/bin/env bash
# --jobs workers on the user's path (tools/workers.h, issue 27): each worker is lockstep started again (exec), not a
# fork of a parent that may hold LibTorch's threads; workers die with their parent, also of SIGKILL; a malformed
# LOCKSTEP_WORKER is an error, not a run.
#   check_workers.sh LOCKSTEP WORKDIR
set -u
lockstep="$1"; work="$2"
rm -rf "$work"; mkdir -p "$work"
fail=0
ok() { echo "check_workers: ok: $1"; }
bad() { echo "check_workers: FAILED: $1"; fail=1; }
# The workers among a process's children: those started with LOCKSTEP_WORKER (its other child is its cleanup guard,
# conformance/program/cleanup_guard.h, a fork named lockstep-guard).
children() {
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    tr '\0' '\n' < /proc/"$c"/environ 2>/dev/null | grep -q '^LOCKSTEP_WORKER=' && echo "$c"
  done
}

mkdir -p "$work/tmp"  # the killed parent cannot remove its directory: keep it in here
TMPDIR="$work/tmp" "$lockstep" run --count 100000 --jobs 2 --seed 3 --report-dir "$work/killed" > "$work/killed.log" 2>&1 &
parent=$!
trap 'kill -9 $parent 2>/dev/null' EXIT  # never left running, whatever ends this script
kids=""
for _ in $(seq 1 600); do  # up to 60 s on a loaded machine
  kids="$(children $parent)"
  [[ $(echo "$kids" | grep -c .) -ge 2 ]] && break
  sleep 0.1
done
if [[ $(echo "$kids" | grep -c .) -lt 2 ]]; then
  bad "two workers did not start within 60 s (children: $kids)"
else
  ok "two workers started"
  sleep 1  # past run_workers' start
  for k in $kids; do
    exe="$(readlink /proc/"$k"/exe 2>/dev/null)"
    if [[ "$exe" == "$(readlink -f "$lockstep")" ]]; then ok "worker $k runs $exe"; else bad "worker $k runs '$exe'"; fi
    # An exec'd worker has its own command line from the exec: the parent's arguments, read back from /proc.
    if cmp -s /proc/"$k"/cmdline /proc/"$parent"/cmdline; then ok "worker $k was started with the parent's arguments"
    else bad "worker $k has another command line"; fi
    # /proc/PID/environ is the environment the process was exec'd with: a forked child would show its parent's,
    # which has no LOCKSTEP_WORKER; children() found it there.
    ok "worker $k was exec'd as a worker (LOCKSTEP_WORKER in its initial environment)"
  done
  kill -9 $parent
  wait $parent 2> /dev/null
  left=""
  for _ in $(seq 1 100); do
    left=""
    for k in $kids; do [[ -d /proc/$k ]] && [[ "$(cat /proc/$k/stat 2>/dev/null | awk '{print $3}')" != Z ]] && left+="$k "; done
    [[ -z "$left" ]] && break
    sleep 0.1
  done
  if [[ -z "$left" ]]; then ok "SIGKILL of the parent ends its workers"; else bad "workers left running: $left"; kill -9 $left; fi
fi

LOCKSTEP_WORKER="nonsense" "$lockstep" run --count 10 --jobs 2 > "$work/bad-env.log" 2>&1
code=$?
if [[ $code == 2 ]] && grep -q "LOCKSTEP_WORKER" "$work/bad-env.log"; then ok "a malformed LOCKSTEP_WORKER: exit 2 naming it"
else bad "a malformed LOCKSTEP_WORKER: exit $code: $(head -2 "$work/bad-env.log")"; fi

"$lockstep" run --count 300 --jobs 2 --seed 7 --report-dir "$work/two" > "$work/two.log" 2>&1
code=$?
if [[ $code == 0 ]] && grep -Eq "(^| )0 failed" "$work/two.log"; then ok "--jobs 2 runs and passes"; else bad "--jobs 2: exit $code"; fi
exit $fail
