#!/bin/bash
# LibTorch 1.13 (and torch 1.13's Python API) leave the grads of two 0-d leaves reached through
# add(sum(p0), sum(p1)) on one storage: every in-place accumulation into one is seen by the other, so two
# backwards give grads 3 and 3, not 2 and 2 (SEMANTICS §3.7; named case sem3-zero-dim-grads-share-storage).
# js-pytorch 0.7.2 gives each parameter a grad tensor of its own (a scalar is a shape-[1] tensor there), so it
# gives 2 and 2. A deviation from PyTorch's behaviour, not from arithmetic.
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const p0 = new torch.Tensor([1.0], true), p1 = new torch.Tensor([2.0], true);
const out = [];
for (let i = 0; i < 2; i++) {
  p0.sum().add(p1.sum()).backward();
  out.push([p0.grad[0], p1.grad[0]]);
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
p0 = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
p1 = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
out = []
for _ in range(2):
    (p0.sum() + p1.sum()).backward()
    out.append([p0.grad.item(), p1.grad.item()])
print("grads after backward 1, 2 of add(sum(p0), sum(p1)): js-pytorch %s | torch %s %s" % (js, torch.__version__, out))
sys.exit(0 if js[1] == [2.0, 2.0] and out[1] == [3.0, 3.0] else 1)  # separate grads 2, 2; LibTorch shared: 3, 3
PY
