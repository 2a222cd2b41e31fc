#!/usr/bin/env python3
"""A wrapper driver that injects one process-level fault around another driver (fixtures/PROTOCOL.md): a driver
that misbehaves as a process (floods, hangs, ignores signals, leaves children, exits at the wrong time, answers
garbage), for tests of how lockstep survives it (tools/check_driver_faults.sh).

    python3 tools/adapters/testing/fault_driver.py --fault NAME [--at K | --at-id ID] [--bytes N]
                                                   [--garbage-line TEXT] CMD [ARG...]
    lockstep run --engine "python3 tools/adapters/testing/fault_driver.py --fault hang --at 3 build/lockstep-impl-driver"

Runs CMD (another, correct driver; a single argument with spaces in it is run by /bin/sh -c, as lockstep runs an
engine) as a child process with this process's stdin/stdout replaced by pipes and its stderr inherited, forwards the
hello line and its answer unchanged, and then, one request at a time, forwards each request and the child's one
answer line back (flushing after each), except where the fault says otherwise. K (--at, default 0) is the 0-based
index of a program request, counting program requests only, not the hello; --at-id ID instead picks the first
request whose "id" is ID (`lockstep run` sends its named cases before random-0, so --at 5 is not random-5).

Faults (--fault NAME):
  reason-flood            answers every program itself with {"id": ID, "unsupported": "op:" + N bytes of 'x'}
                          (N: --bytes, default 1048576); the child only answers the hello.
  hang                    forwards up to request K; at K starts `sleep 600` (in this process group) and
                          `setsid sleep 600` (a session of its own), both inheriting stdin/stdout/stderr, and
                          never answers (sleeps).
  ignore-term             as hang, but ignores SIGTERM, SIGINT and SIGHUP from the start (so does CMD, which
                          inherits the ignored dispositions), and starts both sleeps with them ignored.
  setsid-child            at start, before the hello, starts `setsid sleep 600` (stdin, stdout and stderr on
                          /dev/null), then forwards correctly.
  fork-exit-after-answer  forwards correctly; after writing and flushing the answer to request K, starts
                          `sleep 600` in a new session holding this process's stdin and stdout, and exits 0 at once
                          (os._exit): a driver that exits leaving a child holding its pipes.
  exit-after-hello        forwards the hello and its answer, then exits 0 without reading a request.
  garbage                 forwards the hello, then answers every program with the line TEXT (--garbage-line,
                          default `{}`) without asking the child.

Every process it starts inherits its environment (lockstep's LOCKSTEP_DRIVER_TOKEN, a test's own token). When the
child dies before answering, this exits with the child's status (128 + signal for a signal), as a crashed driver
would. Standard library only.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

FAULTS = ('reason-flood', 'hang', 'ignore-term', 'setsid-child', 'fork-exit-after-answer', 'exit-after-hello',
          'garbage')
IGNORED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def ignore_signals():
    for s in IGNORED:
        signal.signal(s, signal.SIG_IGN)


def sleep_forever():
    while True:
        time.sleep(3600)


def start_sleepers(ignore):
    """`sleep 600` in this process group and `setsid sleep 600` in a session of its own, stdio inherited."""
    pre = ignore_signals if ignore else None
    subprocess.Popen(['sleep', '600'], preexec_fn=pre)
    subprocess.Popen(['setsid', 'sleep', '600'], preexec_fn=pre)


def request_id(line):
    try:
        value = json.loads(line)
    except ValueError:
        return None, False
    if not isinstance(value, dict):
        return None, False
    return value.get('id'), 'hello' in value


def main(argv):
    parser = argparse.ArgumentParser(prog='fault_driver.py', description='A driver wrapper that injects one fault.')
    parser.add_argument('--fault', required=True, choices=FAULTS)
    parser.add_argument('--at', type=int, default=0, help='0-based index of the program request (hello not counted)')
    parser.add_argument('--at-id', default=None, help='the first program request with this id, instead of --at')
    parser.add_argument('--bytes', type=int, default=1 << 20, help='reason-flood: length of the reason')
    parser.add_argument('--garbage-line', default='{}', help='garbage: the answer line')
    parser.add_argument('command', nargs=argparse.REMAINDER, help='the inner driver: CMD [ARG...]')
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ['--'] else args.command
    if not command:
        parser.error('no inner driver command')
    fault = args.fault

    if fault == 'ignore-term':
        ignore_signals()
    if fault == 'setsid-child':
        with open(os.devnull, 'r+b') as null:
            subprocess.Popen(['setsid', 'sleep', '600'], stdin=null, stdout=null, stderr=null)

    shell = len(command) == 1 and any(c.isspace() for c in command[0])
    try:
        child = subprocess.Popen(command[0] if shell else command, shell=shell, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=None, bufsize=0)
    except OSError as e:
        sys.stderr.write('fault_driver: cannot start %s: %s\n' % (command, e))
        return 127

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer

    def child_status():
        try:
            child.stdin.close()
        except OSError:
            pass
        rc = child.wait()
        return 128 - rc if rc < 0 else rc

    def forward(line):
        """Writes line to the child and returns its answer line (with newline), or None when it is gone."""
        try:
            child.stdin.write(line if line.endswith(b'\n') else line + b'\n')
            child.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        answer = child.stdout.readline()
        return answer if answer else None

    def write(line):
        stdout.write(line if line.endswith(b'\n') else line + b'\n')
        stdout.flush()

    index = 0  # program requests seen so far
    while True:
        line = stdin.readline()
        if not line:
            return child_status()
        rid, is_hello = request_id(line)
        if is_hello:
            answer = forward(line)
            if answer is None:
                return child_status()
            write(answer)
            if fault == 'exit-after-hello':
                return 0
            continue
        at = (rid == args.at_id) if args.at_id is not None else (index == args.at)
        index += 1
        if fault == 'reason-flood':
            write(json.dumps({'id': rid, 'unsupported': 'op:' + 'x' * args.bytes}).encode('utf-8'))
            continue
        if fault == 'garbage':
            write(args.garbage_line.encode('utf-8'))
            continue
        if fault in ('hang', 'ignore-term') and at:
            start_sleepers(fault == 'ignore-term')
            sleep_forever()
        answer = forward(line)
        if answer is None:
            return child_status()
        write(answer)
        if fault == 'fork-exit-after-answer' and at:
            subprocess.Popen(['sleep', '600'], stdin=sys.stdin, stdout=sys.stdout, start_new_session=True)
            os._exit(0)


if __name__ == '__main__':
    code = main(sys.argv[1:])
    try:
        sys.stdout.flush()
    except OSError:
        pass
    os._exit(code)
