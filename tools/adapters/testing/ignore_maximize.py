#!/usr/bin/env python3
"""A wrong implementation of maximize (SEMANTICS §20) for the checks that must reject it: a driver wrapping another
one that takes maximize and reports it, but steps as if it were off. Python 3 standard library only.

  ignore_maximize.py -- INNER_COMMAND...

Every request goes to INNER_COMMAND with "maximize" removed from every optimizer options object of the program; in
the answer, every traced param group whose options were reported without maximize gets "maximize": true wherever the
program had switched it on (the optimizer's defaults with maximize and no other place changing it: the case this
wrapper plants into). Other programs pass through untouched, so only the step's numbers can tell the difference.
"""
import json
import subprocess
import sys


def strip(value):
    """Removes every "maximize" key below `value`; returns whether one was true."""
    on = False
    if isinstance(value, dict):
        if value.pop("maximize", False) is True:
            on = True
        for v in value.values():
            on = strip(v) or on
    elif isinstance(value, list):
        for v in value:
            on = strip(v) or on
    return on


def plantable(program):
    """Maximize on the defaults only, and every group takes the defaults: then every traced group has it on."""
    optimizer = program.get("optimizer") if isinstance(program, dict) else None
    if not isinstance(optimizer, dict) or not isinstance(optimizer.get("defaults"), dict):
        return False
    if optimizer["defaults"].get("maximize") is not True:
        return False
    # A group with options of its own takes the option type's default, off (SEM-7.1): not planted into.
    if any(isinstance(g, dict) and "options" in g for g in optimizer.get("groups") or []):
        return False
    for action in program.get("actions") or []:
        if "maximize" in json.dumps(action):
            return False
        if isinstance(action, dict) and action.get("action") == "add_param_group" and "options" in action:
            return False
    return True


def main():
    inner_command = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    if not inner_command:
        raise SystemExit("ignore_maximize: give the inner driver's command after --")
    inner = subprocess.Popen(inner_command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        request = json.loads(line)
        program = request.get("program")
        plant = plantable(program)
        if plant:
            strip(program)
            line = (json.dumps(request) + "\n").encode("utf-8")
        inner.stdin.write(line if line.endswith(b"\n") else line + b"\n")
        inner.stdin.flush()
        answer_line = inner.stdout.readline()
        if not answer_line:
            break
        if plant:
            answer = json.loads(answer_line)
            trace = answer.get("trace")
            if isinstance(trace, dict):
                for record in [trace.get("init")] + list(trace.get("records") or []):
                    for group in (record or {}).get("groups") or []:
                        if isinstance(group.get("options"), dict):
                            group["options"]["maximize"] = True
                answer_line = (json.dumps(answer) + "\n").encode("utf-8")
        sys.stdout.buffer.write(answer_line)
        sys.stdout.buffer.flush()
    inner.stdin.close()
    sys.exit(inner.wait())


if __name__ == "__main__":
    main()
