#!/bin/bash
# js-pytorch 0.7.2 Tensor.pow(n): the forward multiplies x by itself n - 1 times in a loop (`for i < n - 1`), so it
# is right for positive integers only (pow(0), pow(0.5), pow(-1) return x itself; pow(1.5) returns x^2), and the
# backward is always 2 * x * dz (the derivative of x^2) whatever n is. PyTorch: x^n and n * x^(n-1) * dz
# (SEMANTICS §2; fixtures op-pow*-f64). Only n = 2 (square) is right.
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const out = {};
for (const n of [0, 0.5, -1, 1, 1.5, 2, 3]) {
  const x = new torch.Tensor([4.0], true);
  const y = x.pow(n);
  y.backward();
  out[n] = [y.data[0], x.grad[0]];
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
wrong = []
for n in (0, 0.5, -1, 1, 1.5, 2, 3):
    x = torch.tensor(4.0, dtype=torch.float64, requires_grad=True)
    y = x.pow(n)
    y.backward()
    j = js[str(n) if n != int(n) else str(int(n))]
    t = [y.item(), x.grad.item()]
    print("pow(4, %s): js-pytorch value %-8s grad %-6s | torch %s value %-8s grad %s" % (n, j[0], j[1], torch.__version__, t[0], t[1]))
    if abs(j[0] - t[0]) > 1e-12 * abs(t[0]) or abs(j[1] - t[1]) > 1e-12 * abs(t[1]):
        wrong.append(n)
print("exponents where js-pytorch differs:", wrong)
sys.exit(0 if wrong and 2 not in wrong else 1)
PY
