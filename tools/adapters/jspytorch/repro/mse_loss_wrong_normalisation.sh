#!/bin/bash
# js-pytorch 0.7.2 nn.MSELoss: reshapes the input to [B, D] (B = product of the leading dims, D = the last),
# sums each row, takes the mean over the rows and divides by B again: sum / B^2. PyTorch's mse_loss (mean
# reduction) divides the sum of squares by the element count B * D. So a 1-D input of n elements gets the sum
# (n times too big), a [B, D] input sum / B^2 (D / B times the mean); only B == D (or one element) is right.
# (SEMANTICS §2; named case tut001-microbatch-accumulation-equals-full-batch, fixtures op-mse-loss-*-f64.)
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const out = {};
for (const [name, data] of [['1d', [1, 2, 3]], ['2x3', [[1, 2, 3], [4, 5, 6]]], ['2x2', [[1, 2], [3, 4]]]]) {
  const x = new torch.Tensor(data, true);
  const zeros = torch.zeros(x.shape);
  const loss = new torch.nn.MSELoss().forward(x, zeros);
  loss.backward();
  out[name] = [loss.data[0], x.grad.flat()];
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
import torch.nn.functional as F
js = json.loads(os.environ["JS_OUT"])
wrong = []
for name, data in (("1d", [1., 2., 3.]), ("2x3", [[1., 2., 3.], [4., 5., 6.]]), ("2x2", [[1., 2.], [3., 4.]])):
    x = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    loss = F.mse_loss(x, torch.zeros_like(x))
    loss.backward()
    print("mse_loss(x, 0), x %s: js-pytorch %s grad %s | torch %s %s grad %s"
          % (name, js[name][0], js[name][1], torch.__version__, loss.item(), x.grad.flatten().tolist()))
    if abs(js[name][0] - loss.item()) > 1e-12 * loss.item():
        wrong.append(name)
sys.exit(0 if wrong == ["1d", "2x3"] else 1)
PY
