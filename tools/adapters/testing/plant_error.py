#!/usr/bin/env python3
"""Plants one deliberate error into traces, to prove that lockstep rejects a wrong implementation at the action
that produced the wrong value (the wrong-driver battery, check_plants.sh). Python 3 standard library only.

Two modes:

  plant_error.py driver --plant KIND [--log FILE] [--carry] -- INNER_COMMAND...
      A driver (fixtures/PROTOCOL.md) wrapping another one: every request line goes to INNER_COMMAND (started
      once), its answer comes back with one error planted into the trace, if the answer has a trace. The
      start-up hello (PROTOCOL.md 2a) and answers without a trace pass through untouched.

  plant_error.py fixtures --plant KIND --in DIR --out DIR [--log FILE] [--carry]
      Copies a fixture corpus (fixtures/corpus) and plants the error into each fixture's "expected" trace;
      everything else stays byte for byte as it was (the files are re-written in lockstep's own layout,
      conformance/run/fixture.cc format_fixture_json, keeping every number's text).

  plant_error.py kinds
      Lists the plant kinds.

Where the error goes: the target value's first appearance, i.e. the first record (the setup record "init",
then records[i] after action i) at which a value of the targeted kind goes from absent/undefined to present:

  first-grad-*                a parameter's grad (first parameter in program order at that record)
  first-output-*              the held forward output
  first-momentum-buffer-*     SGD's momentum_buffer of a parameter
  first-exp-avg-*             Adam's exp_avg
  first-exp-avg-sq-*          Adam's exp_avg_sq
  first-max-exp-avg-sq-*      Adam's max_exp_avg_sq (amsgrad)
  first-handle-*              a grad handle taken by hold_grad, first record where one is defined

  *-scale: every element times -3 (NaN stays NaN, +-inf flips); when that changes nothing (every element 0
           or NaN) or every element is tiny (|x| < 2^-20, possibly rounding noise), the first non-NaN element
           gets +1 instead (the first element becomes 1 if all are NaN).
  *-nan:   the first non-NaN element becomes NaN (the first element becomes 1 if all are NaN already).

Later records are left alone, unless --carry: then the same change is applied to the same value in later
records while it keeps its identity (a grad while it stays defined with same_as_previous, a state tensor
while it exists, the output until the next successful forward, a handle while it stays defined).

--log FILE appends one JSON line per program: {"id", "kind", "record": "init" | action index | null (nothing
planted: the target never appears), "path": the comparator's field path prefix ("w → grad", "output →
value", "handle g0 → value", "w → exp_avg_sq"), "program_sha256" (of the request's program, sorted keys),
"before"/"after" (the first few values, as text)}.
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import struct
import subprocess
import sys

TARGETS = ["grad", "output", "momentum-buffer", "exp-avg", "exp-avg-sq", "max-exp-avg-sq", "handle"]
CHANGES = ["scale", "nan"]
KINDS = ["first-%s-%s" % (t, c) for t in TARGETS for c in CHANGES]

STATE_FIELDS = {"momentum-buffer": "momentum_buffer", "exp-avg": "exp_avg", "exp-avg-sq": "exp_avg_sq",
                "max-exp-avg-sq": "max_exp_avg_sq"}

ARROW = " \u2192 "  # the comparator's path separator, "w → grad"


def parse_kind(kind):
    if kind not in KINDS:
        raise SystemExit("plant_error: unknown plant kind '%s' (known: %s)" % (kind, ", ".join(KINDS)))
    body = kind[len("first-"):]
    for c in CHANGES:
        if body.endswith("-" + c):
            return body[:-len(c) - 1], c
    raise AssertionError(kind)


# ---------------------------------------------------------------------------------------------------------
# JSON with every number's text kept (so that an untouched number is written back exactly as it was read).

class RawNumber:
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return "RawNumber(%s)" % self.text


def _reject_constant(name):
    raise ValueError("bare %s is not JSON (non-finite numbers are the strings \"NaN\", \"Infinity\")" % name)


def loads(text):
    return json.loads(text, parse_float=RawNumber, parse_int=RawNumber, parse_constant=_reject_constant)


def _dump_string(s):
    return json.dumps(s, ensure_ascii=False)


def dump_one_line(v, out):
    """lockstep's one-line form: ", " and ": " separators (fixture.cc format_one_line)."""
    if isinstance(v, dict):
        out.append("{")
        for i, (k, x) in enumerate(v.items()):
            if i:
                out.append(", ")
            out.append(_dump_string(k))
            out.append(": ")
            dump_one_line(x, out)
        out.append("}")
    elif isinstance(v, list):
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(", ")
            dump_one_line(x, out)
        out.append("]")
    elif isinstance(v, RawNumber):
        out.append(v.text)
    elif isinstance(v, str):
        out.append(_dump_string(v))
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif v is None:
        out.append("null")
    else:
        raise TypeError("cannot write %r" % (v,))


def one_line(v):
    out = []
    dump_one_line(v, out)
    return "".join(out)


def compact(v):
    """One line without spaces, for driver answers."""
    if isinstance(v, dict):
        return "{" + ",".join(_dump_string(k) + ":" + compact(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(compact(x) for x in v) + "]"
    return one_line(v)


LINE_WIDTH = 110


def _format_value(v, indent, out):
    """fixture.cc format_value: containers that fit in the line width and arrays of scalars on one line."""
    structured = isinstance(v, (dict, list))
    if not structured or not v:
        out.append(one_line(v))
        return
    line = one_line(v)
    scalars = isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v)
    if scalars or indent + len(line.encode("utf-8")) <= LINE_WIDTH:
        out.append(line)
        return
    pad = " " * (indent + 2)
    out.append("{\n" if isinstance(v, dict) else "[\n")
    items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v]
    for i, (k, x) in enumerate(items):
        if i:
            out.append(",\n")
        out.append(pad)
        if k is not None:
            out.append(_dump_string(k) + ": ")
        _format_value(x, indent + 2, out)
    out.append("\n" + " " * indent + ("}" if isinstance(v, dict) else "]"))


def format_fixture(doc):
    out = []
    _format_value(doc, 0, out)
    out.append("\n")
    return "".join(out)


def plain(v):
    """RawNumber -> float/int, for hashing and logs."""
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, RawNumber):
        t = v.text
        return float(t) if any(c in t for c in ".eE") else int(t)
    return v


def program_sha256(program):
    text = json.dumps(plain(program), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------------------
# Numbers of a trace (PROTOCOL.md section 5): finite numbers are JSON numbers, NaN and the infinities strings.

def number_value(v):
    if isinstance(v, RawNumber):
        return float(v.text)
    if v == "NaN":
        return math.nan
    if v == "Infinity":
        return math.inf
    if v == "-Infinity":
        return -math.inf
    raise ValueError("not a trace number: %r" % (v,))


def to_float32(x):
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def number_text(x, dtype):
    """A trace number: shortest round trip in its dtype, or "NaN"/"Infinity"/"-Infinity"."""
    if dtype == "float32":
        x = to_float32(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if dtype == "float32":
        for precision in range(1, 10):
            s = "%.*g" % (precision, x)
            if to_float32(float(s)) == x:
                break
    else:
        s = repr(x)
    if not any(c in s for c in ".eE"):
        s += ".0"
    return RawNumber(s)


def same_number(a, b):
    """Equal for the comparator: NaN equals NaN, 0.0 equals -0.0."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b


# Below this magnitude a value may be rounding noise of larger operands (a - a), within the comparator's
# tolerance even when scaled: a scale plant then adds 1 instead.
TINY = 2.0 ** -20


def change_values(values, dtype, change):
    """The planted version of a list of trace numbers (a new list; untouched elements keep their text)."""
    old = [number_value(v) for v in values]
    new = list(values)
    if change == "scale":
        scaled = [to_float32(-3.0 * x) if dtype == "float32" else -3.0 * x for x in old]
        largest = max([abs(x) for x in old if not math.isnan(x)] or [0.0])
        if largest >= TINY and any(not same_number(a, b) for a, b in zip(old, scaled)):
            return [values[i] if same_number(old[i], scaled[i]) else number_text(scaled[i], dtype)
                    for i in range(len(old))]
        # Scaling changes nothing the comparator sees (every element 0 or NaN), or nothing it can tell from
        # rounding noise (every element tiny): +1 on the first non-NaN element instead.
        for i, x in enumerate(old):
            if math.isfinite(x):
                new[i] = number_text(x + 1.0, dtype)
                return new
        new[0] = number_text(1.0, dtype)
        return new
    assert change == "nan"
    for i, x in enumerate(old):
        if not math.isnan(x):
            new[i] = "NaN"
            return new
    new[0] = number_text(1.0, dtype)
    return new


# ---------------------------------------------------------------------------------------------------------
# Finding the target in a trace.

def records_of(trace):
    """[(label, record)]: ("init", init), (0, records[0]), ..."""
    out = [("init", trace["init"])]
    out += [(i, r) for i, r in enumerate(trace.get("records", []))]
    return out


def tensor_slots(record, target):
    """The values of `target` present in `record`, in the comparator's order:
    [(identity key, path, holder dict whose "values" list holds the numbers, dtype)]."""
    slots = []
    params = record.get("params", {})
    if target == "grad":
        for name, p in params.items():
            g = p.get("grad", {})
            if g.get("defined") is True and "values" in g:
                slots.append((("grad", name), name + ARROW + "grad", g, g.get("dtype", p.get("dtype"))))
    elif target in STATE_FIELDS:
        field = STATE_FIELDS[target]
        for name, p in params.items():
            state = p.get("state", {})
            if field not in state:
                continue
            t = state[field]
            if isinstance(t, list):  # the compact form: a bare array shaped like the parameter
                slots.append(((field, name), name + ARROW + field, (state, field), p.get("dtype")))
            elif isinstance(t, dict) and "values" in t:
                slots.append(((field, name), name + ARROW + field, t, t.get("dtype", p.get("dtype"))))
    elif target == "handle":
        for name, h in record.get("handles", {}).items():
            if h.get("defined") is True and "values" in h:
                slots.append((("handle", name), "handle " + name + ARROW + "value", h, h.get("dtype")))
    elif target == "output":
        o = record.get("output")
        if isinstance(o, dict) and "values" in o:
            slots.append((("output",), "output" + ARROW + "value", o, o.get("dtype")))
    else:
        raise AssertionError(target)
    return slots


def get_values(holder):
    if isinstance(holder, tuple):
        container, key = holder
        return container[key]
    return holder["values"]


def set_values(holder, values):
    if isinstance(holder, tuple):
        container, key = holder
        container[key] = values
    else:
        holder["values"] = values


def still_same(target, key, label, record):
    """--carry: does the value keep its identity at this later record?"""
    if target == "grad":
        g = record.get("params", {}).get(key[1], {}).get("grad", {})
        return g.get("defined") is True and g.get("same_as_previous") is True
    if target == "output":
        return not (record.get("action") == "forward" and "error" not in record)
    return True  # state tensors and handles: while present (checked by the caller)


def plant(trace, kind, carry=False):
    """Plants the error into `trace` (in place). Returns None when the target never appears, else
    {"record": "init" | index, "path": ..., "before": [...], "after": [...]}."""
    target, change = parse_kind(kind)
    present_before = set()
    for label, record in records_of(trace):
        slots = tensor_slots(record, target)
        for key, path, holder, dtype in slots:
            if key in present_before:
                continue
            values = get_values(holder)
            if not values:  # an empty tensor: nothing to change; wait for a value with elements
                continue
            planted = change_values(values, dtype, change)
            set_values(holder, planted)
            info = {"record": label, "path": path, "before": [one_line(v) for v in values[:4]],
                    "after": [one_line(v) for v in planted[:4]]}
            if carry:
                _carry(trace, target, change, key, label)
            return info
        present_before = {key for key, _, _, _ in slots}
    return None


def _carry(trace, target, change, key, planted_label):
    started = False
    for label, record in records_of(trace):
        if label == planted_label:
            started = True
            continue
        if not started:
            continue
        slot = [s for s in tensor_slots(record, target) if s[0] == key]
        if not slot or not still_same(target, key, label, record):
            return
        _, _, holder, dtype = slot[0]
        if get_values(holder):
            set_values(holder, change_values(get_values(holder), dtype, change))


# ---------------------------------------------------------------------------------------------------------
# Modes.

class Log:
    def __init__(self, path, kind):
        self.file = open(path, "a", encoding="utf-8") if path else None
        self.kind = kind

    def write(self, id_, info, program=None, **extra):
        if not self.file:
            return
        entry = {"id": id_, "kind": self.kind, "record": info["record"] if info else None,
                 "path": info["path"] if info else None}
        if program is not None:
            entry["program_sha256"] = program_sha256(program)
        if info:
            entry["before"], entry["after"] = info["before"], info["after"]
        entry.update(extra)
        self.file.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self.file.flush()


def run_driver(args):
    if not args.inner:
        raise SystemExit("plant_error driver: give the inner driver's command after --")
    log = Log(args.log, args.plant)
    inner = subprocess.Popen(args.inner, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, bufsize=0)
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    while True:
        request = stdin.readline()
        if not request:
            break
        if not request.strip():
            continue
        try:
            inner.stdin.write(request if request.endswith(b"\n") else request + b"\n")
            inner.stdin.flush()
        except BrokenPipeError:
            break
        answer = inner.stdout.readline()
        if not answer:
            break  # the inner driver died: so do we (lockstep reports it and restarts us)
        answer = answer_with_plant(request, answer, args, log)
        stdout.write(answer)
        stdout.flush()
    try:
        inner.stdin.close()
    except OSError:
        pass
    try:
        code = inner.wait(timeout=5)
    except subprocess.TimeoutExpired:
        inner.kill()
        code = inner.wait()
    sys.exit(code if code >= 0 else 128 - code)


def answer_with_plant(request_line, answer_line, args, log):
    try:
        answer = loads(answer_line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return answer_line  # not ours to judge: lockstep reports the garbage
    if not isinstance(answer, dict):
        return answer_line
    id_ = answer.get("id")
    program = None
    try:
        request = loads(request_line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        request = None
    if isinstance(request, dict):
        if "hello" in request:  # the start-up hello (PROTOCOL.md 2a): the inner driver's answer goes back as is
            return answer_line
        program = request.get("program")
    trace = answer.get("trace")
    if not isinstance(trace, dict) or not isinstance(trace.get("init"), dict):
        log.write(id_, None, program, answer="unsupported" if "unsupported" in answer else "no trace")
        return answer_line
    try:
        info = plant(trace, args.plant, args.carry)
    except Exception as e:  # a trace we do not understand: pass it on untouched
        sys.stderr.write("plant_error: %s: cannot plant into the trace: %s\n" % (id_, e))
        log.write(id_, None, program, answer="unreadable trace")
        return answer_line
    log.write(id_, info, program)
    if not info:
        return answer_line
    return (compact(answer) + "\n").encode("utf-8")


def run_fixtures(args):
    src = os.path.abspath(args.in_dir)
    dst = os.path.abspath(args.out_dir)
    if not os.path.isdir(src):
        raise SystemExit("plant_error fixtures: --in %s is not a directory" % args.in_dir)
    if dst == src or dst.startswith(src + os.sep):
        raise SystemExit("plant_error fixtures: --out must lie outside --in")
    if os.path.exists(dst) and os.listdir(dst):
        raise SystemExit("plant_error fixtures: --out %s exists and is not empty" % args.out_dir)
    log = Log(args.log, args.plant)
    planted = total = 0
    for root, dirs, files in os.walk(src):
        dirs.sort()
        rel = os.path.relpath(root, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for name in sorted(files):
            s, d = os.path.join(root, name), os.path.join(dst, rel, name)
            if not name.endswith(".json"):
                shutil.copyfile(s, d)
                continue
            with open(s, encoding="utf-8") as f:
                text = f.read()
            doc = loads(text)
            if not isinstance(doc, dict) or not isinstance(doc.get("expected"), dict):
                shutil.copyfile(s, d)
                continue
            total += 1
            info = plant(doc["expected"], args.plant, args.carry)
            log.write(doc.get("id"), info, doc.get("program"), file=os.path.join(rel, name))
            if info:
                planted += 1
                if args.check_layout:
                    original = loads(text)
                    if format_fixture(original) != text:
                        raise SystemExit("plant_error fixtures: %s: re-writing it would change more than the plant "
                                         "(its layout is not lockstep's format_fixture_json)" % s)
                with open(d, "w", encoding="utf-8") as f:
                    f.write(format_fixture(doc))
            else:
                shutil.copyfile(s, d)
    sys.stderr.write("plant_error fixtures: %s planted into %d of %d fixtures\n" % (args.plant, planted, total))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    d = sub.add_parser("driver", help="wrap a driver and plant the error into its traces")
    d.add_argument("--plant", required=True, choices=KINDS, metavar="KIND")
    d.add_argument("--log")
    d.add_argument("--carry", action="store_true")
    d.add_argument("inner", nargs=argparse.REMAINDER, help="-- INNER_COMMAND...")
    f = sub.add_parser("fixtures", help="copy a corpus with the error planted into the expected traces")
    f.add_argument("--plant", required=True, choices=KINDS, metavar="KIND")
    f.add_argument("--in", dest="in_dir", required=True)
    f.add_argument("--out", dest="out_dir", required=True)
    f.add_argument("--log")
    f.add_argument("--carry", action="store_true")
    f.add_argument("--no-check-layout", dest="check_layout", action="store_false",
                   help="do not insist that an untouched fixture re-writes byte for byte")
    sub.add_parser("kinds", help="list the plant kinds")
    args = parser.parse_args(argv)
    if args.mode == "kinds":
        print("\n".join(KINDS))
    elif args.mode == "driver":
        if args.inner and args.inner[0] == "--":
            args.inner = args.inner[1:]
        run_driver(args)
    else:
        run_fixtures(args)


if __name__ == "__main__":
    main(sys.argv[1:])
