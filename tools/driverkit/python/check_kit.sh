#!/bin/bash
# The Python driver kit (tools/driverkit/python) on a framework that is not in the tree: the tiny autograd of
# examples/tiny_autograd_driver.py (float64; add sub mul square sum; SGD with lr and momentum), driven only through
# the kit. Checks, with any python3 >= 3.9 (no torch needed):
#  1. the kit's unit tests pass (number encoding, hello, refusals, records), and fail on a copy of the kit with a
#     planted bug (a lost -Infinity; a grad always reported as the same object; L-BFGS's counts not observed;
#     L-BFGS declared by a framework without step(closure); a load_state_dict's "fresh" ignored);
#  2. replay of the corpus with the hello's computed "supports": the tiny framework's fixtures pass (41 today, every
#     op-edge fixture of its ops among them), nothing fails, nothing is skipped, the rest is left out by the scope;
#  3. the same with a hello without "supports": lockstep sends everything, the same fixtures pass, and every other
#     one is skipped with the kit's automatic reason (float32, op:NAME, an optimizer, KIND.OPTION, a feature);
#  4. a planted bug in the framework (--bug mul_grad: d(a*b)/da = a) fails the replay (exit 1) exactly at the
#     op-mul fixtures' backward, at a's grad;
#  5. where LOCKSTEP has LibTorch: a live run of 300 random programs, 0 failures.
#   check_kit.sh LOCKSTEP WORKDIR
set -u
lockstep="$1"; work="$2"
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/../../.."
rm -rf "$work"; mkdir -p "$work"
fail=0
check() {  # check PYTHON_ASSERTIONS ARG... DESCRIPTION: the assertions get the arguments as sys.argv[1:]
  local code="$1" what="${!#}"; shift
  if ! python3 -c "$code" "${@:1:$#-1}"; then echo "check_kit: FAILED: $what"; fail=1
  else echo "check_kit: ok: $what"; fi
}
driver="python3 $(printf %q "$here/examples/tiny_autograd_driver.py")"
replay() {  # replay NAME DRIVER-ARGS...: the corpus, report in $work/NAME, exit status in $work/NAME.rc
  local name="$1"; shift
  "$lockstep" replay --fixtures "$root/fixtures/corpus" --engine "$driver $*" --report-dir "$work/$name" \
    > "$work/$name.log" 2>&1
  echo $? > "$work/$name.rc"
}

# 1. Unit tests, then the same tests on kits with a planted bug: each must fail.
python3 -m unittest discover -s "$here" -p 'test_*.py' > "$work/unit.log" 2>&1
check 'import sys; assert sys.argv[1] == "0", open(sys.argv[2]).read()[-2000:]' "$?" "$work/unit.log" \
  "the kit's unit tests pass ($(tail -3 "$work/unit.log" | grep -o 'Ran [0-9]* tests'))"
plant() {  # plant NAME OLD NEW: a copy of the kit with OLD replaced by NEW; its unit tests must fail
  mkdir -p "$work/$1"
  python3 - "$here/lockstep_driverkit.py" "$work/$1/lockstep_driverkit.py" "$2" "$3" <<'PY'
import sys
text = open(sys.argv[1]).read()
assert sys.argv[3] in text, "the planted bug's anchor is gone: " + sys.argv[3]
open(sys.argv[2], "w").write(text.replace(sys.argv[3], sys.argv[4], 1))
PY
  LOCKSTEP_DRIVERKIT_DIR="$work/$1" python3 -m unittest discover -s "$here" -p 'test_*.py' > "$work/$1.log" 2>&1
  check 'import sys; assert sys.argv[1] != "0", "the unit tests passed on a kit with a planted bug"' "$?" \
    "the unit tests fail on a kit with a planted bug: $1"
}
plant minus-infinity-lost 'return "Infinity" if x > 0 else "-Infinity"' 'return "Infinity"'
plant grad-always-same 'g["same_as_previous"] = self.same(grad, self.previous_grad[name])' 'g["same_as_previous"] = True'
plant lbfgs-counts-lost 'for key in STATE_COUNTS:' 'for key in ():'
plant lbfgs-without-closure-declared 'if k not in _OPTIMIZER_NEEDS or self.has(_OPTIMIZER_NEEDS[k])}' 'if True}'
plant checkpoint-fresh-ignored 'if action.get("fresh", False):' 'if False:'

# The guide's copy of the example is the example.
check '
import sys
guide = open(sys.argv[1]).read()
block = guide.split("<!-- example:begin -->\n```python\n", 1)[1].split("```\n<!-- example:end -->", 1)[0]
assert block == open(sys.argv[2]).read(), "fixtures/WRITING_A_DRIVER.md: the example differs from " + sys.argv[2]
' "$root/fixtures/WRITING_A_DRIVER.md" "$here/examples/tiny_autograd_driver.py" \
  "fixtures/WRITING_A_DRIVER.md holds the example as it is"

# 2. With the computed supports.
replay declared
check '
import json, sys
r = json.load(open(sys.argv[1] + "/declared/replay-report.json")); c = r["coverage"]
passed = {x["id"] for x in r["cases"] if x["status"] == "passed"}
assert open(sys.argv[1] + "/declared.rc").read().strip() == "0"
assert r["summary"]["failed"] == 0 and c["skipped"] == 0, (r["summary"], c["skipped"])
assert len(passed) == len(r["cases"]) >= 41 and c["out_of_scope"] > 300, (len(passed), len(r["cases"]), c["out_of_scope"])
must = {"op-%s-%s-f64" % (op, edge) for op in ("add", "sub", "mul") for edge in ("any", "zero", "negative", "tiny", "large", "nonfinite", "broadcast")}
must |= {"op-%s-%s-f64" % (op, edge) for op in ("square", "sum") for edge in ("any", "zero", "negative", "tiny", "large", "nonfinite")}
must |= {"grad-sgd-momentum-f64", "sem2-second-backward-needs-retain-graph", "tut003-hand-worked-with-zeroing"}
assert must <= passed, sorted(must - passed)
open(sys.argv[1] + "/passed.txt", "w").write("\n".join(sorted(passed)))
print("check_kit: %d fixtures pass, %d left out by the scope" % (len(passed), c["out_of_scope"]))
' "$work" "replay with the computed supports: the tiny framework's fixtures pass, 0 failed, 0 skipped"

# 3. Without supports: the kit refuses what the class lacks, by name.
replay undeclared --undeclared
check '
import json, re, sys
r = json.load(open(sys.argv[1] + "/undeclared/replay-report.json"))
passed = {x["id"] for x in r["cases"] if x["status"] == "passed"}
skipped = {x["id"]: x["skipped"] for x in r["cases"] if x.get("skipped")}
assert open(sys.argv[1] + "/undeclared.rc").read().strip() == "0"
assert r["summary"]["failed"] == 0, r["summary"]
assert passed == set(open(sys.argv[1] + "/passed.txt").read().split()), "not the fixtures the scope gave"
assert len(passed) + len(skipped) == len(r["cases"]) > 400, (len(passed), len(skipped), len(r["cases"]))
features = {"create_graph", "add_param_group", "no_grad", "set_options", "param_groups", "hold_grad", "closure", "clip_grad_norm",
            "clip_grad_value", "state_dict", "load_state_dict"}
automatic = re.compile(r"^(float32|op:[a-z_]+|adam|adamw|rmsprop|adagrad|lbfgs|sgd\.(dampening|weight_decay|nesterov|maximize))$")
declined = {"sum of a 0-d parameter (SEM-3.7)"}  # raised by the tiny mapping itself
bad = {i: why for i, why in skipped.items() if not automatic.match(why) and why not in features | declined}
assert not bad, bad
reasons = set(skipped.values())
assert {"float32", "op:pow", "op:exp", "adam", "sgd.weight_decay", "create_graph"} <= reasons, sorted(reasons)
print("check_kit: %d pass, %d skipped by the kit, reasons: %s" % (len(passed), len(skipped), ", ".join(sorted(reasons))))
' "$work" "replay without supports: the same fixtures pass, the rest skipped with the kit's automatic reasons"

# 4. A planted bug in the framework: mul's grad for its first operand is wrong.
replay bug --bug mul_grad
check '
import json, sys
r = json.load(open(sys.argv[1] + "/bug/replay-report.json"))
assert open(sys.argv[1] + "/bug.rc").read().strip() == "1"
failed = {x["id"]: x["failure"] for x in r["cases"] if x["status"] == "failed"}
assert "op-mul-any-f64" in failed and all(i.startswith("op-mul-") for i in failed), sorted(failed)
for i, f in failed.items():
    assert f["action"] == "backward", (i, f["summary"])
    assert f["differences"][0]["path"].startswith("a \u2192 grad["), (i, f["summary"])
print("check_kit: the planted bug fails %d fixtures, e.g. %s" % (len(failed), failed["op-mul-any-f64"]["summary"]))
' "$work" "a planted bug (mul_grad) fails the replay at the op-mul fixtures' grad, exit 1"

# 5. Live against LibTorch, where this lockstep has it (a replay-only build has not: skipped): 0 failures; the
#    only skips are the programs the tiny mapping declines itself.
if "$lockstep" run --engine impl --count 0 --report-dir '' > "$work/oracle.log" 2>&1; then
  "$lockstep" run --engine "$driver" --count 300 --seed 1 --report-dir "$work/live" > "$work/live.log" 2>&1
  echo $? > "$work/live.rc"
  check '
import json, sys
r = json.load(open(sys.argv[1] + "/live/lockstep-report.json"))
assert open(sys.argv[1] + "/live.rc").read().strip() == "0"
assert r["summary"]["failed"] == 0 and r["summary"]["passed"] > 250, r["summary"]
why = {c["skipped"] for c in r["cases"] if c.get("skipped")}
assert all("sum of a 0-d parameter (SEM-3.7)" in w for w in why), why
print("check_kit: live: %(passed)d passed, %(failed)d failed, %(known)d known" % r["summary"])
' "$work" "live run of 300 random programs against LibTorch: 0 failures"
else
  echo "check_kit: skipped the live run: this lockstep has no LibTorch ($(tail -1 "$work/oracle.log"))"
fi

if [ "$fail" -ne 0 ]; then
  echo "check_kit: logs in $work"; tail -n 5 "$work"/*.log
  exit 1
fi
echo "check_kit: all checks passed"
