#!/usr/bin/env python3
"""A wrapper driver that plants one error in another driver's answers (fixtures/PROTOCOL.md): a wrong driver that
lockstep must reject, for tests of the checker on the user's path (replay, run, reports, reproduce lines).

    python3 tools/wrong_driver.py --drop-minus-zero CMD [ARG...]        every -0.0 written as 0
    python3 tools/wrong_driver.py --scale-first-grads F CMD [ARG...]    the first backward's grads times F
    python3 tools/wrong_driver.py --drop-last-record CMD [ARG...]       one record too few in every trace
    lockstep replay --engine "python3 tools/wrong_driver.py --drop-minus-zero build/lockstep-impl-driver"

Runs CMD (another driver; a single argument with spaces in it is run by /bin/sh -c, as lockstep runs an engine) as
a child process, forwards every line of stdin to it and every line of its stdout back, flushing after each line, and
leaves its stderr on this process's stderr. Each answer line is parsed as JSON with number hooks that keep every
number's exact text, so an answer is written back byte for byte unless the planted error changes it. -0 is the JSON
number -0.0 (or -0, -0e0, ...; a literal that reads as -0.0 in double); there is no string form of -0 (lockstep
rejects any other numeric string), so strings are never changed.

A sign flip of a zero is the one change to an answer that exact comparison of the values would still notice and a
tolerance would not (SEMANTICS 9.5); a scaled first grad (F = -3) is what a tolerance grown with huge values would
miss (SEMANTICS 9.6). It exits when stdin closes (after the child has answered everything and exited, with the
child's exit status) and writes to stderr at exit how many numbers it rewrote in how many answers. Standard
library only.
"""

import json
import os
import signal
import subprocess
import sys
import threading


class Number(str):
    """A JSON number kept as the exact text the child wrote."""


def is_minus_zero(text):
    if not text.startswith('-'):
        return False
    try:
        v = float(text)
    except ValueError:  # NaN / Infinity literals (not JSON, but Python's parser accepts them)
        return False
    return v == 0.0  # -0, -0.0, -0e5, and -1e-400, which underflows to -0.0


class Pairs(list):
    """A JSON object as its (key, value) pairs, in order, duplicates kept."""


def rewrite(value, counter):
    """The value with every negative-zero Number made positive; counter[0] counts the changes."""
    if isinstance(value, Number):
        if is_minus_zero(value):
            counter[0] += 1
            return Number(value[1:])
        return value
    if isinstance(value, Pairs):
        return Pairs((k, rewrite(v, counter)) for k, v in value)
    if isinstance(value, list):
        return [rewrite(v, counter) for v in value]
    return value


def dump(value):
    if isinstance(value, Number):
        return str(value)
    if isinstance(value, Pairs):
        return '{' + ','.join(json.dumps(k, ensure_ascii=False) + ':' + dump(v) for k, v in value) + '}'
    if isinstance(value, list):
        return '[' + ','.join(dump(v) for v in value) + ']'
    return json.dumps(value, ensure_ascii=False)  # string, true, false, null


def parse(text):
    return json.loads(text, parse_float=Number, parse_int=Number, parse_constant=Number, object_pairs_hook=Pairs)


def scale_first_grads(value, factor, counter):
    """The answer with every grad value of its first backward record multiplied by factor."""
    if not isinstance(value, Pairs):
        return value
    trace = dict(value).get('trace')
    if not isinstance(trace, Pairs):
        return value
    for record in dict(trace).get('records', []):
        if not isinstance(record, Pairs) or dict(record).get('action') != 'backward':
            continue
        for _name, param in dict(record).get('params', Pairs()):
            grad = dict(param).get('grad') if isinstance(param, Pairs) else None
            values = dict(grad).get('values') if isinstance(grad, Pairs) else None
            if isinstance(values, list):
                for i, v in enumerate(values):
                    if isinstance(v, Number):
                        values[i] = Number(repr(float(v) * factor))
                        counter[0] += 1
        break
    return value


def drop_last_record(value, counter):
    """The answer with its trace's last record left out."""
    trace = dict(value).get('trace') if isinstance(value, Pairs) else None
    records = dict(trace).get('records') if isinstance(trace, Pairs) else None
    if isinstance(records, list) and records:
        records.pop()
        counter[0] += 1
    return value


USAGE = 'usage: wrong_driver.py (--drop-minus-zero | --scale-first-grads F | --drop-last-record) CMD [ARG...]\n'


def main(argv):
    if len(argv) >= 2 and argv[0] == '--drop-minus-zero':
        plant, argv = (lambda v, c: rewrite(v, c)), argv[1:]
    elif len(argv) >= 2 and argv[0] == '--drop-last-record':
        plant, argv = drop_last_record, argv[1:]
    elif len(argv) >= 3 and argv[0] == '--scale-first-grads':
        try:
            factor = float(argv[1])
        except ValueError:
            sys.stderr.write(USAGE)
            return 2
        plant, argv = (lambda v, c: scale_first_grads(v, factor, c)), argv[2:]
    else:
        sys.stderr.write(USAGE)
        return 2
    shell = len(argv) == 1 and any(c.isspace() for c in argv[0])
    try:
        child = subprocess.Popen(argv[0] if shell else argv, shell=shell, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=None, bufsize=0)
    except OSError as e:
        sys.stderr.write('wrong_driver: cannot start %s: %s\n' % (argv, e))
        return 127

    def stop(signum, _frame):
        child.terminate()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def forward_requests():
        stdin = sys.stdin.buffer
        try:
            while True:
                line = stdin.readline()
                if not line:
                    break
                child.stdin.write(line if line.endswith(b'\n') else line + b'\n')
                child.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the child is gone: its answers end, and the main thread sees that
        finally:
            try:
                child.stdin.close()  # end of input for the child too
            except OSError:
                pass

    threading.Thread(target=forward_requests, daemon=True).start()

    out = sys.stdout.buffer
    answers = changed_answers = changed_numbers = unparsed = 0
    while True:
        line = child.stdout.readline()
        if not line:
            break
        body = line.rstrip(b'\r\n')
        if body.strip():
            answers += 1
        try:
            text = body.decode('utf-8')
            if '"trace"' in text:
                counter = [0]
                value = plant(parse(text), counter)
                if counter[0]:
                    changed_answers += 1
                    changed_numbers += counter[0]
                    body = dump(value).encode('utf-8')
        except ValueError:  # not JSON (or not UTF-8): lockstep will say so; pass it on unchanged
            unparsed += 1
        out.write(body + b'\n')
        out.flush()
    rc = child.wait()
    sys.stderr.write('wrong_driver: changed %d number%s in %d of %d answers%s\n' % (
        changed_numbers, '' if changed_numbers == 1 else 's', changed_answers, answers,
        ' (%d trace lines not JSON, passed on)' % unparsed if unparsed else ''))
    sys.stderr.flush()
    return 128 - rc if rc < 0 else rc


if __name__ == '__main__':
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)
