#!/usr/bin/env python3
"""A driver for a framework that supports less than lockstep can test: float32 only, SGD and Adam without
weight decay, no AdamW (like TensorFlow.js). It proves that `lockstep run` and `lockstep replay` test an
implementation on what it declares (fixtures/PROTOCOL.md 2a, SEMANTICS §13): 0 programs skipped, every supported
feature exercised, and the rest reported as left out. Python 3 standard library only.

  float32_sgd_adam.py [--no-hello-supports] -- INNER_COMMAND...

Every request goes to INNER_COMMAND (a driver that supports everything, e.g. lockstep-impl-driver), unless the
program needs what this driver refuses: then it answers {"unsupported": FEATURE} itself. The refusal is checked
here, by hand, on the program's JSON (not with lockstep's own feature scan, so a bug there cannot hide): a
float64 parameter ("float64"), an AdamW optimizer ("adamw"), a weight_decay other than 0 in the optimizer's
defaults, a group, an added group or an option change ("weight_decay").

The hello declares {"dtypes": ["float32"], "optimizers": {"sgd": [lr, momentum, dampening, nesterov],
"adam": [lr, betas, eps, amsgrad]}}; ops and features are left out (all supported). --no-hello-supports
declares nothing (an old driver's hello), to show the skips the declaration avoids.
"""
import json
import subprocess
import sys

SUPPORTS = {"dtypes": ["float32"],
            "optimizers": {"sgd": ["lr", "momentum", "dampening", "nesterov"],
                           "adam": ["lr", "betas", "eps", "amsgrad"]}}


def refused(program):
    """The first feature this driver does not support that `program` needs, or None."""
    for p in program.get("params", []):
        if p.get("dtype") != "float32":
            return "float64"
    opt = program.get("optimizer")
    option_sets = []
    if opt:
        if opt.get("type") == "adamw":
            return "adamw"
        option_sets.append(opt.get("defaults", {}))
        for g in opt.get("groups", []) or []:
            if isinstance(g, dict):
                option_sets.append(g.get("options", {}) or {})
    for a in program.get("actions", []):
        if a.get("action") in ("set_options", "add_param_group"):
            option_sets.append(a.get("options", {}) or {})
    for o in option_sets:
        if float(o.get("weight_decay", 0) or 0) != 0:
            return "weight_decay"
    return None


def main():
    args = sys.argv[1:]
    declare = True
    if args and args[0] == "--no-hello-supports":
        declare = False
        args = args[1:]
    if not args or args[0] != "--" or len(args) < 2:
        sys.stderr.write("usage: float32_sgd_adam.py [--no-hello-supports] -- INNER_COMMAND...\n")
        return 2
    inner = subprocess.Popen(args[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "hello" in request:
            hello = {"name": "float32-sgd-adam", "version": "1", "protocol": 1, "language": "python"}
            if declare:
                hello["supports"] = SUPPORTS
                # What zero_grad() does is the inner framework's: pass its declaration on (SEMANTICS 12.2), so the
                # wrapper is held to its defaults on a LibTorch 2.x oracle as on 1.13.
                inner.stdin.write(json.dumps(request) + "\n")
                inner.stdin.flush()
                inner_hello = json.loads(inner.stdout.readline()).get("hello", {})
                for key in ("pytorch_version", "defaults"):
                    if key in inner_hello:
                        hello[key] = inner_hello[key]
            sys.stdout.write(json.dumps({"id": request.get("id", "lockstep-hello"), "hello": hello}) + "\n")
            sys.stdout.flush()
            continue
        feature = refused(request.get("program", {}))
        if feature:
            sys.stdout.write(json.dumps({"id": request.get("id"), "unsupported": feature}) + "\n")
        else:
            inner.stdin.write(json.dumps(request) + "\n")
            inner.stdin.flush()
            sys.stdout.write(inner.stdout.readline())
        sys.stdout.flush()
    inner.stdin.close()
    return inner.wait()


if __name__ == "__main__":
    sys.exit(main())
