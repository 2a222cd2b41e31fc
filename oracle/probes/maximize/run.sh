#!/usr/bin/env bash
# Runs the maximize probe (Python only: LibTorch's C++ optimizers have no maximize option) on this machine's
# PyTorch, or on the 2.x chroot's when run inside it (issue 32, SEMANTICS §20). Not part of CI: run by hand.
#   bash oracle/probes/maximize/run.sh                                   # PyTorch 1.13 (Debian 12)
#   bash tools/torch2/chroot.sh run bash oracle/probes/maximize/run.sh   # 2.6
set -euo pipefail
/usr/bin/python3 "$(cd "$(dirname "$0")" && pwd)/maximize.py"
