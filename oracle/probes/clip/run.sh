#!/usr/bin/env bash
# Compiles the gradient-clipping probe against the LibTorch of this machine (or of the 2.x chroot, run inside it) and
# runs it with its Python side (issue 32). Not part of CI: a probe of the oracle, run by hand.
#   bash oracle/probes/clip/run.sh                                   # LibTorch 1.13 (Debian 12)
#   bash tools/torch2/chroot.sh run bash oracle/probes/clip/run.sh   # 2.6
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
g++ -std=c++17 -O0 "$here/clip_grad.cc" -o "$out/clip_grad" -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10
echo "== C++"
"$out/clip_grad"
echo "== Python"
/usr/bin/python3 "$here/clip_grad.py"
