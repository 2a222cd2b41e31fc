#!/usr/bin/env python3
"""A wrong implementation that hides behind an API profile if it can: SGD that ignores momentum (it never creates
a momentum buffer) but reports the group options it was given. Python 3 standard library only.

  sgd_without_momentum.py HELLO_JSON -- INNER_COMMAND...

Runs INNER_COMMAND (a correct driver, e.g. lockstep-impl-driver) twice per request: once on the program as given
(for the groups it reports) and once with every SGD momentum set to 0 (for everything else). HELLO_JSON is merged
into the hello, e.g. '{"api_profile": "pytorch-python"}': the profile's rule py-sgd-state-without-momentum
accepts an extra SGD state entry, and must not accept a missing one nor carry the missing buffer's effect on the
parameters as an error budget (check_capabilities.sh).
"""
import copy
import json
import subprocess
import sys


def without_momentum(o):
    if isinstance(o, dict):
        for k in list(o):
            if k == "momentum":
                o[k] = 0
            else:
                without_momentum(o[k])
    elif isinstance(o, list):
        for x in o:
            without_momentum(x)


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.stderr.write("usage: sgd_without_momentum.py HELLO_JSON -- INNER_COMMAND...\n")
        return 2
    hello_extra = json.loads(sys.argv[1])
    inner = sys.argv[3:]
    given = subprocess.Popen(inner, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    wrong = subprocess.Popen(inner, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(p, line):
        p.stdin.write(line)
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "hello" in request:
            answer = ask(given, line)
            ask(wrong, line)
            answer["hello"].update(hello_extra)
        else:
            good = ask(given, line)
            changed = copy.deepcopy(request)
            if (changed["program"].get("optimizer") or {}).get("type") == "sgd":
                without_momentum(changed["program"])
            answer = ask(wrong, json.dumps(changed) + "\n")
            if "trace" in answer and "trace" in good:
                records = [good["trace"]["init"]] + good["trace"]["records"]
                reported = [answer["trace"]["init"]] + answer["trace"]["records"]
                for g, w in zip(records, reported):
                    w["groups"] = g["groups"]
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
