#!/bin/bash
# Capabilities, API profiles and version defaults on the user's path (issue "Capabilities, API profiles and version
# defaults"), through real drivers:
#  1. a float32-only SGD/Adam driver without weight decay (float32_sgd_adam.py, which refuses the rest itself) gets
#     0 skips from `run` and `replay`, every feature it supports exercised, and the rest reported as left out; the
#     same driver without its declaration is skipped most of the time (the declaration is what avoids that);
#  2. --features/--exclude-features narrow a run by hand (and a name that is no feature is a usage error);
#  3. zero_grad()'s default by version: an impl driver that follows PyTorch >= 2.0 passes (rule zero-grad-default
#     listed); a wrong one that declares 2.1 but zeroes in place fails at sem12-zero-grad-default-by-version;
#  4. the PyTorch-Python driver live (its profile applied, rules listed): 0 failures;
#  5. a hello with capabilities of the wrong type ends the run with exit 2 naming the field.
#   check_capabilities.sh LOCKSTEP IMPL_DRIVER WORKDIR
set -u
lockstep="$1"; impl="$2"; work="$3"
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$work"; mkdir -p "$work"
fail=0
# check PYTHON_ASSERTIONS ARG... DESCRIPTION: the assertions run with the arguments as sys.argv[1:].
check() {
  local code="$1" what="${!#}"; shift
  if ! python3 -c "$code" "${@:1:$#-1}"; then echo "check_capabilities: FAILED: $what"; fail=1
  else echo "check_capabilities: ok: $what"; fi
}

f32="python3 $here/float32_sgd_adam.py -- $impl"
"$lockstep" run --engine "$f32" --count 2000 --seed 3 --report-dir "$work/f32" > "$work/f32.log" 2>&1
echo "exit $?" >> "$work/f32.log"
check '
import json, sys
r = json.load(open(sys.argv[1] + "/f32/lockstep-report.json")); c = r["coverage"]
assert r["summary"]["failed"] == 0, r["summary"]
assert c["skipped"] == 0, ("skipped", c["skipped"])
assert c["tested"] >= 2000, c["tested"]
assert c["not_exercised"] == [], ("not exercised", c["not_exercised"])
ex = c["exercised"]
for f in ["float64", "adamw", "sgd.weight_decay", "adam.weight_decay"]:
    assert f not in ex, ("generated although unsupported", f)
for f in ["float32", "sgd", "adam", "sgd.momentum", "sgd.nesterov", "adam.amsgrad", "adam.betas", "op:matmul", "hold_grad"]:
    assert ex.get(f, 0) > 0, ("never exercised", f)
left = {tuple(x["features"]) for x in c["left_out"]}
assert {("float64",), ("adamw",), ("sgd.weight_decay",), ("adam.weight_decay",)} <= left, left
' "$work" "float32-only driver: 0 skips, everything it supports exercised, the rest left out with reasons"

"$lockstep" replay --engine "$f32" --report-dir "$work/f32-replay" > "$work/f32-replay.log" 2>&1
check '
import json, sys
r = json.load(open(sys.argv[1] + "/f32-replay/replay-report.json")); c = r["coverage"]
assert r["summary"]["failed"] == 0 and c["skipped"] == 0 and c["tested"] > 0 and c["out_of_scope"] > 0, (r["summary"], c["skipped"], c["tested"])
' "$work" "float32-only driver replays only the fixtures within its capabilities, 0 skips"

"$lockstep" run --engine "python3 $here/float32_sgd_adam.py --no-hello-supports -- $impl" --count 200 --seed 3 \
  --report-dir "$work/f32-undeclared" > "$work/f32-undeclared.log" 2>&1
check '
import json, sys
c = json.load(open(sys.argv[1] + "/f32-undeclared/lockstep-report.json"))["coverage"]
assert c["skipped"] > 100, c["skipped"]
' "$work" "the same driver without its declaration: most programs skipped"

"$lockstep" run --engine impl --count 200 --features float32,sgd --exclude-features 'sgd.nesterov,op:m*' \
  --report-dir "$work/narrowed" > "$work/narrowed.log" 2>&1
check '
import json, sys
c = json.load(open(sys.argv[1] + "/narrowed/lockstep-report.json"))["coverage"]
ex = c["exercised"]
bad = [f for f in ex if f in ("float64", "adam", "adamw", "sgd.nesterov") or f.startswith("op:m")]
assert not bad, bad
assert ex.get("sgd", 0) > 0 and ex.get("float32", 0) > 0
' "$work" "--features/--exclude-features narrow generation"
"$lockstep" replay --engine impl --tags adam,amsgrad --exclude-tags float64 --report-dir "$work/tags" > "$work/tags.log" 2>&1
check '
import json, sys, glob
want = set()
for f in glob.glob(sys.argv[1] + "/fixtures/corpus/*/*.json"):
    d = json.load(open(f)); t = set(d["tags"])
    if {"adam", "amsgrad"} <= t and "float64" not in t: want.add(d["id"])
r = json.load(open(sys.argv[2] + "/tags/replay-report.json"))
got = {c["id"] for c in r["cases"]}
assert want and got == want, (sorted(got ^ want))
' "$here/../../.." "$work" "replay --tags/--exclude-tags select exactly the fixtures carrying them"
"$lockstep" run --engine impl --count 1 --features no-such-feature > "$work/bad-feature.log" 2>&1
code=$?
check 'import sys; assert int(sys.argv[1]) == 2, sys.argv[1]' "$code" "--features with an unknown name: exit 2"

"$lockstep" run --engine "$impl --zero-grad-default none" --count 300 --seed 5 --report-dir "$work/v2" > "$work/v2.log" 2>&1
code=$?
check '
import json, sys
r = json.load(open(sys.argv[1] + "/v2/lockstep-report.json"))
assert r["summary"]["failed"] == 0, r["summary"]
rules = {x["id"]: x for x in r["coverage"]["rules"]}
# The rule spells out zero_grad() on the oracle where the defaults differ: on a LibTorch 1.x oracle; a 2.x oracle
# has the default of the driver itself (SEM-12.3).
oracle_major = int(r["oracle"].split("-")[1].split(".")[0])
if oracle_major < 2:
    assert "zero-grad-default" in rules and rules["zero-grad-default"]["uses"] > 0, rules
else:
    assert "zero-grad-default" not in rules, rules
ids = [c["id"] for c in r["cases"]]
assert "sem12-zero-grad-default-by-version" in ids
' "$work" "a driver following PyTorch >= 2.0 defaults passes; the zero-grad-default rule is listed where the oracle's default differs"
check 'import sys; assert int(sys.argv[1]) == 0, sys.argv[1]' "$code" "... and exits 0"

"$lockstep" run --engine "$impl --zero-grad-default zero --hello '{\"pytorch_version\": \"2.1.0\"}'" --count 0 --report-dir "$work/v2-wrong" \
  > "$work/v2-wrong.log" 2>&1
code=$?
check '
import json, sys
r = json.load(open(sys.argv[1] + "/v2-wrong/lockstep-report.json"))
failed = {c["id"] for c in r["cases"] if c["status"] == "failed"}
assert "sem12-zero-grad-default-by-version" in failed, failed
' "$work" "a driver that declares 2.1 but zeroes in place fails sem12-zero-grad-default-by-version"
check 'import sys; assert int(sys.argv[1]) == 1, sys.argv[1]' "$code" "... and exits 1"

"$lockstep" run --engine "$impl --hello '{\"supports\": {\"dtypes\": \"float32\"}}'" --count 1 > "$work/bad-hello.log" 2>&1
code=$?
check 'import sys; assert int(sys.argv[1]) == 2, sys.argv[1]' "$code" "a hello whose supports.dtypes is not an array: exit 2"
check 'import sys; t = open(sys.argv[1]).read(); assert "/hello/supports/dtypes" in t, t' "$work/bad-hello.log" \
  "... naming /hello/supports/dtypes"

# A wrong SGD (momentum ignored) that declares the pytorch-python profile: the profile accepts an extra SGD state
# entry, never a missing one, and a missing momentum buffer is no error budget for the parameters.
nomom="python3 $here/sgd_without_momentum.py '{\"api_profile\": \"pytorch-python\"}' -- $impl"
"$lockstep" replay --engine "$nomom" --report-dir "$work/nomom-replay" > "$work/nomom-replay.log" 2>&1
code=$?
"$lockstep" replay --engine "$nomom" --profile none --report-dir "$work/nomom-replay-np" > "$work/nomom-replay-np.log" 2>&1
check '
import json, sys
r = json.load(open(sys.argv[1] + "/nomom-replay/replay-report.json"))
n = json.load(open(sys.argv[1] + "/nomom-replay-np/replay-report.json"))
assert r["coverage"]["profile"] == "pytorch-python", r["coverage"]["profile"]
failed = {c["id"] for c in r["cases"] if c["status"] == "failed"}
failed_np = {c["id"] for c in n["cases"] if c["status"] == "failed"}
left_out = {x["id"] for x in r["coverage"]["left_out_cases"]}
assert {"grad-sgd-momentum-f32", "grad-sgd-momentum-f64", "tut002-momentum-buffer-first-step-copy"} <= failed, failed
hidden = failed_np - left_out - failed
assert not hidden, ("the profile hid", sorted(hidden))
' "$work" "a wrong SGD without momentum behind the pytorch-python profile: replay fails every fixture it fails without the profile"
check 'import sys; assert int(sys.argv[1]) == 1, sys.argv[1]' "$code" "... and exits 1"
"$lockstep" run --engine "$nomom" --count 300 --seed 4 --features sgd,float32 --report-dir "$work/nomom-run" \
  > "$work/nomom-run.log" 2>&1
check '
import json, sys
r = json.load(open(sys.argv[1] + "/nomom-run/lockstep-report.json"))
assert r["summary"]["failed"] > 20, r["summary"]
# What the profile accepted: an extra state entry, nothing else.
for c in r["cases"]:
    for m in c.get("masked", []):
        assert m["path"].endswith("state.exists") and m["expected_text"] == "false" and m["actual_text"] == "true", m
' "$work" "live: the wrong SGD fails, and the profile accepted nothing but extra state entries"

if [ -n "${PYTORCH_PYTHON:-}" ]; then
  # Its expectations file: the verified bugs of the PyTorch it runs (on 2.x: clip_grad_value_ without grads, SEM-18.5).
  "$lockstep" run --engine "$PYTORCH_PYTHON $here/../pytorch_driver.py" --count "${PYTORCH_COUNT:-300}" --seed 1 \
    --expectations "$here/../../../fixtures/expectations/pytorch-python.json" --report-dir "$work/py" > "$work/py.log" 2>&1
  code=$?
  check '
import json, sys
r = json.load(open(sys.argv[1] + "/py/lockstep-report.json")); c = r["coverage"]
assert r["summary"]["failed"] == 0, r["summary"]
assert c["profile"] == "pytorch-python", c["profile"]
rules = {x["id"]: x for x in c["rules"]}
# torch 1.x stores momentum_buffer = None for an SGD step without momentum (SEM-11.1); torch 2.x stores nothing, as C++
# does, so the rule has nothing to accept there.
if int(c["implementation"]["pytorch_version"].split(".")[0]) < 2:
    assert rules["py-sgd-state-without-momentum"]["uses"] > 0, rules
else:
    assert rules["py-sgd-state-without-momentum"]["uses"] == 0, rules
assert c["skipped"] == 0, c["skipped"]
' "$work" "PyTorch-Python driver live: 0 failures, profile pytorch-python applied and listed"
  check 'import sys; assert int(sys.argv[1]) == 0, sys.argv[1]' "$code" "... and exits 0"
fi

if [ "$fail" -ne 0 ]; then
  echo "check_capabilities: logs in $work"; tail -n 5 "$work"/*.log
  exit 1
fi
echo "check_capabilities: all checks passed"
