#!/bin/bash
# js-pytorch 0.7.2 holds a scalar (what sum() and mean() return, or a 0-d parameter) as a tensor of shape [1],
# and its element-wise add/sub/mul/div cannot broadcast such a tensor against one of shape [n]: add throws
# "Given arguments cannot be added.", mul and div return no data ("Your argument "data" is not a number or an
# iterable."). PyTorch broadcasts a 0-d operand on either side (SEMANTICS §2, fixtures/README.md "Programs").
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const x = new torch.Tensor([1.0, 2.0, 3.0], true);
const out = {};
for (const op of ['add', 'sub', 'mul', 'div']) {
  try { out[op] = x[op](x.sum()).data; } catch (e) { out[op] = 'throws: ' + e.message; }
}
console.log(JSON.stringify(out));
JS
) || exit 2
JS_OUT="$js" /usr/bin/python3 - <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
js = json.loads(os.environ["JS_OUT"])
x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
s = x.sum()
t = {"add": (x + s).tolist(), "sub": (x - s).tolist(), "mul": (x * s).tolist(), "div": (x / s).tolist()}
for op in ("add", "sub", "mul", "div"):
    print("x.%s(x.sum()): js-pytorch %s | torch %s: %s" % (op, js[op], torch.__version__, t[op]))
sys.exit(0 if all(isinstance(js[op], str) and js[op].startswith("throws") for op in t) else 1)
PY
