#!/usr/bin/env python3
"""A driver wrapping another one (fixtures/PROTOCOL.md) to change how it reports the optional trace field
param.same_as_previous (PROTOCOL.md section 4a), for check_optional_fields.sh. Python 3 standard library only.

  optional_field_driver.py MODE [--fixtures-out DIR --fixtures-in DIR] -- INNER_COMMAND...

Modes:
  omit            a driver written before the field: the field is dropped from every trace and from the hello's
                  "observes" (lockstep must pass it and report the field untested)
  omit-announced  the field dropped from every trace but still announced (a broken driver: every answer is
                  garbage naming the first parameter without it)
  rebind          a wrong driver: at the first successful step, the first parameter of the program is reported
                  as a new tensor (same_as_previous false), everything else untouched (lockstep must fail it at
                  that step, on "w → same_as_previous")
  strip-fixtures  not a driver: copies the fixture corpus DIR_IN to DIR_OUT with the field removed from every
                  expected trace (fixtures recorded before the field), every value unchanged
"""
import json
import os
import shutil
import subprocess
import sys

FIELD = "same_as_previous"
NAME = "param.same_as_previous"


def strip(trace):
    records = [trace.get("init")] + trace.get("records", [])
    for record in list(records):  # a step's closure calls hold records too (PROTOCOL section 4)
        if isinstance(record, dict):
            for call in record.get("calls", []):
                records += call
    for record in records:
        if isinstance(record, dict):
            for p in record.get("params", {}).values():
                p.pop(FIELD, None)


def rebind(trace):
    for record in trace.get("records", []):
        if record.get("action") == "step" and "error" not in record and record.get("params"):
            first = next(iter(record["params"].values()))
            first[FIELD] = False
            return


def strip_fixtures(src, dst):
    # Re-written by Python's json (numbers as shortest round-trip doubles: the values lockstep reads stay the same).
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    for root, _, files in os.walk(dst):
        for f in files:
            if not f.endswith(".json"):
                continue
            path = os.path.join(root, f)
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
            if "expected" not in doc:
                continue
            strip(doc["expected"])
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, indent=2, ensure_ascii=False)
                fh.write("\n")


def main():
    argv = sys.argv[1:]
    if not argv:
        sys.exit(__doc__)
    mode = argv[0]
    if mode == "strip-fixtures":
        strip_fixtures(argv[1], argv[2])
        return
    if mode not in ("omit", "omit-announced", "rebind") or "--" not in argv:
        sys.exit(__doc__)
    inner = argv[argv.index("--") + 1:]
    child = subprocess.Popen(inner, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    for line in sys.stdin:
        child.stdin.write(line)
        child.stdin.flush()
        answer = child.stdout.readline()
        if not answer:
            sys.exit(3)
        doc = json.loads(answer)
        if "hello" in doc and mode == "omit":
            observes = [n for n in doc["hello"].get("observes", []) if n != NAME]
            doc["hello"]["observes"] = observes
        if "trace" in doc:
            if mode in ("omit", "omit-announced"):
                strip(doc["trace"])
            else:
                rebind(doc["trace"])
        sys.stdout.write(json.dumps(doc) + "\n")
        sys.stdout.flush()
    child.stdin.close()
    child.wait()


if __name__ == "__main__":
    main()
