#!/usr/bin/env bash
# Builds the seed corpora of the fuzz targets (fuzz/CMakeLists.txt) from the files the source tree ships:
#   OUT/program        the "program" of every fixture and named case, and conformance/testdata/bad/*
#   OUT/fixture        fixtures/corpus/**/*.json, fixtures/testdata/invalid/*, and fixtures carrying each bad program
#   OUT/named_case     conformance/cases/*.json, and cases carrying each bad program
#   OUT/expectations   fixtures/expectations/*.json and conformance/compare/expectations.json (not tolerance files)
#   OUT/tolerance      the tolerance-overrides files of fixtures/expectations/, and one override per quantity
#   OUT/profile        fixtures/profiles/*.json
#   OUT/driver_answer  HELLO_LINE '\n' ANSWER_LINE: each fixture's expected trace as the answer to request "fuzz"
#                      (fixtures/PROTOCOL.md section 3), after one of a few hello lines (section 2a); plus
#                      "unsupported" and wrong-id answers
#   OUT/report         conformance/report/testdata/*.json (reports of real runs), each also compact and as each of
#                      its cases alone
# Each reader also gets the bad files that are bad at the JSON level (invalid_json.json, duplicate_key.json).
# Files are named by the SHA-1 of their contents, as libFuzzer names what it adds. Nothing is written outside OUT.
#
# Usage: fuzz/seed_corpus.sh OUT_DIR        (plain bash and python3, standard library only)
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"

python3 - "$root" "$out" <<'PY'
import glob, hashlib, json, os, sys

root, out = sys.argv[1], sys.argv[2]
counts = {}

def put(target, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, hashlib.sha1(data).hexdigest())
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)
        counts[target] = counts.get(target, 0) + 1

def raw(path):
    with open(path, "rb") as f:
        return f.read()

def doc(path):
    try:
        return json.loads(raw(path))
    except ValueError:  # invalid JSON or not UTF-8: a raw seed only
        return None

def files(pattern):
    return sorted(glob.glob(os.path.join(root, pattern), recursive=True))

def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

def pretty(value):
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"

# Programs, fixtures, named cases.
fixtures = files("fixtures/corpus/**/*.json")
cases = files("conformance/cases/*.json")
for path in fixtures:
    put("fixture", raw(path))
for path in files("fixtures/testdata/invalid/*.json"):
    put("fixture", raw(path))
for path in cases:
    put("named_case", raw(path))
for path in fixtures + cases:
    d = doc(path)
    if isinstance(d, dict) and "program" in d:
        put("program", pretty(d["program"]))

# The bad program files: raw for the program reader, and inside a fixture and a case.
bad = [p for p in files("conformance/testdata/bad/*.json") if os.path.basename(p) != "expected_pointers.json"]
fixture_doc = doc(fixtures[0]) if fixtures else None
case_doc = doc(cases[0]) if cases else None
for path in bad:
    put("program", raw(path))
    name = os.path.basename(path)
    if name in ("invalid_json.json", "duplicate_key.json"):
        for target in ("fixture", "named_case", "expectations", "tolerance", "profile", "driver_answer", "report"):
            put(target, raw(path))
    program = doc(path)
    if program is None:
        continue
    for target, host in (("fixture", fixture_doc), ("named_case", case_doc)):
        if isinstance(host, dict):
            put(target, pretty(dict(host, program=program)))

# Expectations and tolerance overrides.
for path in files("fixtures/expectations/*.json") + files("conformance/compare/expectations.json"):
    d = doc(path)
    put("tolerance" if isinstance(d, dict) and "tolerance_overrides" in d else "expectations", raw(path))
quantities = ["param", "grad", "momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "square_avg",
              "grad_avg", "sum", "output", "handle"]
put("tolerance", pretty({"tolerance_overrides": [
    {"id": "*", "k": {q: 8 for q in quantities}, "reason": "every quantity"},
    {"id": "random-?", "k": {"grad": 1e12}, "reason": "the largest k", "comment": "ignored"}]}))

# API profiles.
for path in files("fixtures/profiles/*.json"):
    put("profile", raw(path))

# Driver answers: a hello line, then an answer line for request "fuzz".
hellos = [
    "",  # no hello line (an old driver)
    compact({"id": "lockstep-hello", "hello": {"protocol": 1}}),  # an echo of lockstep's own line
    compact({"id": "lockstep-hello", "hello": {"name": "pytorch-python", "version": "1.13.1", "protocol": 1}}),
    compact({"id": "lockstep-hello", "hello": {
        "name": "tfjs", "version": "4.22.0", "protocol": 1, "language": "javascript",
        "api_profile": "pytorch-python", "pytorch_version": "2.1.0", "defaults": {"zero_grad": "none"},
        "supports": {"dtypes": ["float32"], "ops": ["add", "sub", "mul", "sum", "mean", "matmul", "mse_loss"],
                     "optimizers": {"sgd": ["lr", "momentum", "dampening", "nesterov"],
                                    "adam": ["lr", "betas", "eps", "amsgrad"]},
                     "features": ["retain_graph", "no_grad", "explicit_gradient", "zero_grad", "set_to_none",
                                  "hold_grad"]},
        "emulated": ["sgd: plain SGD written by the adapter"]}}),
    compact({"hello": {"name": "observer", "version": "0.1", "protocol": 1,
                       "observes": ["param.same_as_previous", "param.future_field"]}}),
]
for i, path in enumerate(fixtures):
    d = doc(path)
    if isinstance(d, dict) and "expected" in d:
        put("driver_answer", hellos[i % len(hellos)] + "\n" + compact({"id": "fuzz", "trace": d["expected"]}))
for hello in hellos:
    put("driver_answer", hello + "\n" + compact({"id": "fuzz", "unsupported": "amsgrad"}))
put("driver_answer", hellos[2] + "\n" + compact({"id": "another", "unsupported": "amsgrad"}))
put("driver_answer", compact({"id": "fuzz", "unsupported": "float64"}))

# Run reports (what `lockstep merge` reads): as written, compact, and cut down to one case at a time.
for path in files("conformance/report/testdata/*.json"):
    put("report", raw(path))
    d = doc(path)
    if not isinstance(d, dict):
        continue
    put("report", compact(d))
    for case in d.get("cases", []):
        put("report", compact(dict(d, cases=[case])))

for target in sorted(counts):
    print(f"{target}: {counts[target]} files in {os.path.join(out, target)}")
PY
