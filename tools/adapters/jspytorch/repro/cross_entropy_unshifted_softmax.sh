#!/bin/bash
# js-pytorch 0.7.2 nn.CrossEntropyLoss computes exp(z) / sum(exp(z)) and then its log, without subtracting the
# row's maximum: a logit above ~709 overflows exp to Infinity and the loss (and every gradient) becomes NaN,
# where PyTorch's log-softmax stays finite (SEMANTICS §2; fixture op-cross-entropy-large-f64, the catalogue's
# "unshifted softmax" mutant). With an infinite logit the two give different non-finite values.
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const z = new torch.Tensor([[1000.0, 0.0, -1.0], [0.5, 1.0, 2.0]], true);
const loss = new torch.nn.CrossEntropyLoss().forward(z, new torch.Tensor([0, 2]));
loss.backward();
const nan = (v) => (Number.isNaN(v) ? 'NaN' : v);
console.log(JSON.stringify({ loss: nan(loss.data[0]), grad: z.grad.flat().map(nan) }));
JS
) || exit 2
JS_OUT="$js" /usr/bin/python3 - <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
import torch.nn.functional as F
js = json.loads(os.environ["JS_OUT"])
z = torch.tensor([[1000.0, 0.0, -1.0], [0.5, 1.0, 2.0]], dtype=torch.float64, requires_grad=True)
loss = F.cross_entropy(z, torch.tensor([0, 2]))
loss.backward()
print("cross_entropy(logits with 1000, targets [0, 2]): js-pytorch %s grad %s" % (js["loss"], js["grad"]))
print("                                                torch %s %s grad %s" % (torch.__version__, loss.item(), z.grad.flatten().tolist()))
sys.exit(0 if js["loss"] == "NaN" and math.isfinite(loss.item()) else 1)
PY
