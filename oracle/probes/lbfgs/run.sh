#!/usr/bin/env bash
# Compiles the L-BFGS probes against the LibTorch of this machine (or of the 2.x chroot, run inside it) and runs
# them: SEMANTICS §16. Not part of CI: a probe of the oracle, run by hand when the semantics are revisited.
#   bash oracle/probes/lbfgs/run.sh            # LibTorch 1.13 (Debian 12)
#   bash tools/torch2/chroot.sh run bash oracle/probes/lbfgs/run.sh   # 2.6
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for p in closure_calls edges versions_and_groups nan_and_options history_capacity; do
  g++ -std=c++17 -O1 "$here/$p.cc" -o "$out/$p" -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10
done
"$out/edges"
"$out/versions_and_groups" 2>&1 | grep -v '^frame'
"$out/nan_and_options" 2>&1 | grep -v '^frame\|^Exception'
"$out/history_capacity"
/usr/bin/python3 "$here/spec_check.py" "$out/closure_calls"
