#!/usr/bin/env bash
# Compiles the optimizer checkpoint probe against the LibTorch of this machine (or of the 2.x chroot, run inside it) and
# runs it with its Python side (issue 32). Not part of CI: a probe of the oracle, run by hand.
#   bash oracle/probes/checkpoint/run.sh                                   # LibTorch 1.13 (Debian 12)
#   bash tools/torch2/chroot.sh run bash oracle/probes/checkpoint/run.sh   # 2.6
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
g++ -std=c++17 -O0 "$here/optimizer_archive.cc" -o "$out/optimizer_archive" -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10
echo "== C++"
"$out/optimizer_archive" 2>&1 | grep -v "^frame"
g++ -std=c++17 -O0 "$here/duplicate_param_load_crash.cc" -o "$out/duplicate_param_load_crash" -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10
echo "== C++, a parameter listed twice (a crash here is the finding: SEMANTICS 19.3)"
"$out/duplicate_param_load_crash" 2>&1 || echo "  exit status $?"
echo "== Python"
/usr/bin/python3 "$here/optimizer_state_dict.py"
