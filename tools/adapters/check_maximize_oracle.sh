#!/usr/bin/env bash
# SEMANTICS §20 on the user's path: maximize is judged against PyTorch's Python API as the oracle (`lockstep run
# --oracle`), as LibTorch's C++ API has no such option (SEM-20.2).
#   1. impl in-process and the impl driver pass against the PyTorch adapter as the oracle, and maximize ran;
#   2. a wrong driver that reports maximize but steps without it (tools/adapters/testing/ignore_maximize.py) is
#      rejected at a value, not at the options, and its reproduce line, executed, fails the same way;
#   3. against LibTorch's C++ API a run leaves maximize out, saying why;
#   4. corpus/python-oracle (PyTorch's Python API's recording) replays clean on impl, the impl driver and the PyTorch
#      adapter, and the wrong driver fails its replay;
#   5. the maximize mutants (tools/mutants/mutants.h) are killed by `lockstep mutants --oracle` in-process, through the
#      impl driver and by replay, by the named cases and by random programs alone (a random kill's reproduce line,
#      executed, fails); without --oracle their live rows say "not run" and replay still kills them.
# Usage: check_maximize_oracle.sh BUILD_DIR   (from the source tree; needs python3-torch)
set -euo pipefail
build=${1:?usage: check_maximize_oracle.sh BUILD_DIR}
lockstep="$build/lockstep"
driver="$build/lockstep-impl-driver"
oracle="/usr/bin/python3 tools/adapters/pytorch_driver.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/none"
fail() { echo "check_maximize_oracle: $*" >&2; exit 1; }
# run_to OUT COMMAND...: runs COMMAND with its output in OUT and its exit status in rc; the check goes on either way.
run_to() { local out=$1; shift; set +e; "$@" > "$out" 2>&1; rc=$?; set -e; }
# reproduce_fails LINE NAME: a reproduce line (`lockstep ...`), executed, must fail again (exit 1).
reproduce_fails() {
  run_to "$tmp/$2.out" eval "\"\$lockstep\" ${1#lockstep } --report-dir \"\$tmp/$2\""
  [[ $rc -eq 1 ]] || { cat "$tmp/$2.out"; fail "the reproduce line exited $rc, want 1: $1"; }
}
# The oracle's own differences from the C++ API that depend on its version, turned around (SEMANTICS 20.4): none on
# 1.13, two on 2.x.
turned=(--oracle "$oracle" --oracle-expectations fixtures/expectations/pytorch-python.json)
common=("${turned[@]}" --cases "$tmp/none" --seed 3 --max-size 30 --timeout-ms 60000 --jobs 1)

maximize_ran() {  # report -> how many programs had some <optimizer>.maximize
  python3 - "$1" <<'PY'
import json, sys
exercised = json.load(open(sys.argv[1]))["coverage"]["exercised"]
print(sum(n for f, n in exercised.items() if f.endswith(".maximize")))
PY
}

for engine in impl "$driver"; do
  "$lockstep" run --engine "$engine" "${common[@]}" --count 120 --report-dir "$tmp/pass" > "$tmp/pass.out" 2>&1 ||
    { cat "$tmp/pass.out"; fail "$engine against the PyTorch adapter as the oracle failed"; }
  ran=$(maximize_ran "$tmp/pass/lockstep-report.json")
  [[ "$ran" -gt 0 ]] || fail "$engine: no program with maximize ran"
  echo "check_maximize_oracle: $engine passes against PyTorch's Python API, $ran programs with maximize"
done

wrong="/usr/bin/python3 tools/adapters/testing/ignore_maximize.py -- $driver"
run_to "$tmp/wrong.out" "$lockstep" run --engine "$wrong" "${common[@]}" --count 120 --shrink-seconds 5 --report-dir "$tmp/wrong"
[[ $rc -eq 1 ]] || { cat "$tmp/wrong.out"; fail "the wrong driver was not rejected (exit $rc, want 1)"; }
reproduce=$(python3 - "$tmp/wrong/lockstep-report.json" <<'PY'
import json, sys
failed = [c for c in json.load(open(sys.argv[1]))["cases"] if c["status"] == "failed"]
f = failed[0]["failure"]
paths = [d["path"] for d in f["differences"]]
if any("options" in p for p in paths):
    raise SystemExit("rejected at the options, not at a value: %s" % paths)
print(f["reproduce"])
PY
) || fail "the wrong driver's failure: $reproduce"
echo "check_maximize_oracle: the wrong driver is rejected; reproducing: $reproduce"
reproduce_fails "$reproduce" repro

# The named cases of maximize, against LibTorch's C++ API: both left out, the run says why (nothing tested: exit 2).
run_to "$tmp/cpp.out" "$lockstep" run --engine impl --cases conformance/cases-python-oracle --count 0 --report-dir "$tmp/cpp"
[[ $rc -eq 2 ]] && [[ $(grep -o "LibTorch's C++ API, has no maximize" "$tmp/cpp.out" | wc -l) -eq 2 ]] ||
  { cat "$tmp/cpp.out"; fail "a run against LibTorch's C++ API does not leave maximize out saying why (exit $rc)"; }
corpus=fixtures/corpus/python-oracle
[[ $(ls "$corpus"/*.json | wc -l) -gt 2 ]] || fail "$corpus holds no recordings"
for engine in impl "$driver" "$oracle"; do
  "$lockstep" replay --fixtures "$corpus" --engine "$engine" --timeout-ms 60000 --report-dir "$tmp/replay" \
    > "$tmp/replay.out" 2>&1 || { cat "$tmp/replay.out"; fail "$engine fails the replay of $corpus"; }
done
run_to "$tmp/replay-wrong.out" "$lockstep" replay --fixtures "$corpus" --engine "$wrong" --timeout-ms 60000 \
  --report-dir "$tmp/replay-wrong"
[[ $rc -eq 1 ]] || { cat "$tmp/replay-wrong.out"; fail "the wrong driver passes the replay of $corpus (exit $rc)"; }

"$lockstep" mutants "${turned[@]}" --only 'maximize_*' --seed 1 --jobs 1 --shrink-seconds 2 \
  --report-dir "$tmp/mutants" > "$tmp/mutants.out" 2>&1 || { cat "$tmp/mutants.out"; fail "a maximize mutant survived"; }
"$lockstep" mutants "${turned[@]}" --only 'maximize_*' --seed 1 --jobs 1 --shrink-seconds 2 --cases "$tmp/none" \
  --no-replay --count 2000 --report-dir "$tmp/mutants-random" > "$tmp/mutants-random.out" 2>&1 ||
  { cat "$tmp/mutants-random.out"; fail "a maximize mutant survived 2,000 random programs"; }
"$lockstep" mutants --only 'maximize_*' --seed 1 --jobs 1 --count 0 --report-dir "$tmp/mutants-cpp" \
  > "$tmp/mutants-cpp.out" 2>&1 || { cat "$tmp/mutants-cpp.out"; fail "lockstep mutants without --oracle failed"; }
reproduce=$(python3 - "$tmp/mutants/mutants-report.json" "$tmp/mutants-random/mutants-report.json" \
  "$tmp/mutants-cpp/mutants-report.json" <<'PY'
import json, sys
named, random, cpp = (json.load(open(f))["mutants"] for f in sys.argv[1:])
names = sorted(m["mutant"] for m in named)
assert names == ["maximize_after_weight_decay", "maximize_grad_in_place", "maximize_ignored"], names
for m in named:
    assert all(p["killed"] for p in m["paths"].values()) and m["replay"]["killed"], m
for m in random:
    for path, p in m["paths"].items():
        assert p["killed"] and p["killed_by"].startswith("random-"), (m["mutant"], path, p)
for m in cpp:
    assert all("not_run" in p and not p["killed"] for p in m["paths"].values()), m
    assert m["replay"]["killed"], m
print(random[0]["paths"]["driver"]["reproduce"])
PY
) || fail "the maximize mutants' kill table: $reproduce"
echo "check_maximize_oracle: the maximize mutants are killed; reproducing: $reproduce"
reproduce_fails "$reproduce" repro-mutant
run_to "$tmp/no-oracle.out" "$lockstep" run --oracle-expectations fixtures/expectations/pytorch-python.json --count 1 \
  --report-dir ""
[[ $rc -eq 2 ]] && grep -q -- "--oracle" "$tmp/no-oracle.out" ||
  { cat "$tmp/no-oracle.out"; fail "--oracle-expectations without --oracle was accepted (exit $rc)"; }
echo "check_maximize_oracle: ok"
