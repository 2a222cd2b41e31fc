#!/usr/bin/env python3
"""The program limits hold on the user's path (issue 14): a program at each limit runs within the memory docs/programs-and-limits.md
"Limits" states, and one action more is rejected before running, naming the file, the action and the limit.

    python3 tools/check_limits.py LOCKSTEP IMPL_DRIVER WORKDIR [MAX_RSS_MB]

For three programs, each the largest the limits accept of its kind (found by giving lockstep one that is too large
and cutting it at the action its error names):
  handles     a 0-d parameter and thousands of hold_grad actions (every handle observed in every later record)
  elements    a 2^18-element parameter through forward / backward / SGD-with-momentum steps
  retained    a forward of 232 tanh over a 2^17-element parameter (all kept for the backward), at the
              element-operation limit
each runs as `lockstep trace --engine impl`, `lockstep trace --engine oracle` and as a named case through the impl
driver in lockstep with LibTorch (`lockstep run --cases`: the driver's answer read, compared, reported). The peak
resident memory of the largest process (getrusage of the children) must stay under MAX_RSS_MB (default 1024).
Prints one line per run: the peak, and the wall time (not checked: speed is for benchmarks).
"""
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time


def fail(message):
    print("check_limits: FAIL: " + message)
    sys.exit(1)


def measured(cmd, cwd=None):
    """Runs cmd in a fresh Python child so that RUSAGE_CHILDREN is its own: (exit code, stdout, stderr, MB, s)."""
    wrapper = ("import resource, subprocess, sys\n"
               "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
               "sys.stdout.buffer.write(r.stdout)\n"
               "sys.stderr.buffer.write(r.stderr)\n"
               "sys.stderr.write('\\nMAXRSS_KB=%d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.exit(r.returncode)\n")
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", wrapper] + cmd, capture_output=True, text=True, cwd=cwd)
    elapsed = time.monotonic() - t0
    m = re.search(r"MAXRSS_KB=(\d+)", r.stderr)
    kb = int(m.group(1)) if m else -1
    stderr = r.stderr[: m.start()] if m else r.stderr
    return r.returncode, r.stdout, stderr, kb / 1024.0, elapsed


def scalar_sum(name):
    return {"op": "sum", "args": [{"op": "param", "name": name}]}


def programs():
    """Each kind, too large: a prefix of its actions is the largest accepted."""
    handles = {
        "params": [{"name": "x", "dtype": "float32", "shape": [], "values": [1.0]}],
        "loss": scalar_sum("x"),
        "actions": [{"action": "forward"}, {"action": "backward"}] +
                   [{"action": "hold_grad", "param": "x", "handle": "h%d" % i} for i in range(9000)],
    }
    n = 1 << 18
    elements = {
        "params": [{"name": "w", "dtype": "float32", "shape": [n], "values": [0.5] * n}],
        "loss": {"op": "sum", "args": [{"op": "mul", "args": [{"op": "param", "name": "w"},
                                                               {"op": "param", "name": "w"}]}]},
        "optimizer": {"type": "sgd", "defaults": {"lr": 0.01, "momentum": 0.9}, "params": ["w"]},
        "actions": [{"action": a} for _ in range(20) for a in ("forward", "backward", "step")],
    }
    # A forward that keeps the most alive for its backward: four chains of 58 tanh (each saves its output) over a
    # 2^17-element float64 parameter, within the expression depth; the backward passes the arithmetic limit.
    def chain(depth):
        e = {"op": "param", "name": "x"}
        for _ in range(depth):
            e = {"op": "tanh", "args": [e]}
        return e
    rows, cols = 512, 256
    retained = {
        "params": [{"name": "x", "dtype": "float64", "shape": [rows, cols], "values": [0.5] * (rows * cols)}],
        "loss": {"op": "sum", "args": [{"op": "add", "args": [
            {"op": "add", "args": [chain(58), chain(58)]}, {"op": "add", "args": [chain(58), chain(58)]}]}]},
        "actions": [{"action": "forward"}, {"action": "backward"}],
    }
    return {"handles": handles, "elements": elements, "retained": retained}


def named_case(case_id, program):
    return {
        "id": case_id,
        "description": "A program at the limits (tools/check_limits.py).",
        "claim": "issue 14: a program within the limits runs in bounded memory.",
        "semantics": ["SEM-8"],
        "tags": [],
        "program": program,
        "checks": [{"after": "init", "pointer": "/params/" + program["params"][0]["name"] + "/grad/defined",
                    "equals": False}],
    }


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    lockstep, driver, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    max_rss = float(sys.argv[4]) if len(sys.argv) > 4 else 1024.0
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rows = []
    for kind, program in programs().items():
        # Too large: rejected before running (exit 2), naming the file, the action and the limit.
        too_large = os.path.join(work, kind + "-too-large.json")
        with open(too_large, "w") as f:
            json.dump(program, f)
        code, _, err, mb, secs = measured([lockstep, "trace", "--engine", "impl", too_large])
        m = re.search(r"/actions/(\d+)", err)
        if code != 2 or not m or too_large not in err or "limit of" not in err:
            fail("%s: expected exit 2 naming %s, an action and the limit; got exit %d: %s" % (kind, too_large, code, err))
        cut = int(m.group(1))
        print("%-10s  rejected at /actions/%d in %.1f s (%.0f MB): %s" % (kind, cut, secs, mb, err.strip().splitlines()[-1]))
        # The largest accepted: every path, within the memory bound.
        program["actions"] = program["actions"][:cut]
        at_limit = os.path.join(work, kind + ".json")
        with open(at_limit, "w") as f:
            json.dump(program, f)
        cases = os.path.join(work, kind + "-case")
        os.makedirs(cases)
        with open(os.path.join(cases, kind + ".json"), "w") as f:
            json.dump(named_case("limits-" + kind, program), f)
        runs = [
            ("trace impl", [lockstep, "trace", "--engine", "impl", at_limit]),
            ("trace oracle", [lockstep, "trace", "--engine", "oracle", at_limit]),
            ("run driver", [lockstep, "run", "--engine", driver, "--cases", cases, "--count", "0",
                            "--timeout-ms", "600000", "--report-dir", os.path.join(work, kind + "-report")]),
        ]
        for name, cmd in runs:
            code, out, err, mb, secs = measured(cmd)
            print("%-10s  %-12s  %d actions  peak %6.0f MB  %6.1f s  exit %d" % (kind, name, cut, mb, secs, code))
            if code != 0:
                fail("%s / %s: exit %d\n%s%s" % (kind, name, code, out[-2000:], err[-2000:]))
            if mb > max_rss:
                fail("%s / %s: peak %.0f MB over the bound of %.0f MB" % (kind, name, mb, max_rss))
            rows.append((kind, name, cut, mb, secs))
    print("check_limits: every program at a limit ran within %.0f MB" % max_rss)
    return 0


if __name__ == "__main__":
    sys.exit(main())
