#!/bin/bash
# js-pytorch 0.7.2 optim.Adam keeps no step count and applies no bias correction: its step() is
#   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  p = p - lr m / (sqrt(v) + eps) - lr reg p
# so its moments are PyTorch's exp_avg / exp_avg_sq, but the update lacks the 1 / (1 - b1^t) and
# sqrt(1 - b2^t) factors: the first step moves a weight by lr (1 - b1) / sqrt(1 - b2) = 3.16 lr instead of lr.
# PyTorch (SEMANTICS §6.2, §6.3): a per-parameter integer `step`, bc1 = 1 - beta1^step, bc2 = 1 - beta2^step,
# p -= (lr / bc1) exp_avg / (sqrt(exp_avg_sq) / sqrt(bc2) + eps). Same betas and eps on both sides here.
# (Named cases sem6-adam-first-step-is-bias-corrected, tut000-adam-defaults; fixture grad-adam-lr-f64.)
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const w = new torch.Tensor([1.0, -2.0], true);
const opt = new torch.optim.Adam([w], 0.1, 0, [0.9, 0.999], 1e-8);
const steps = [];
for (let t = 0; t < 2; t++) {
  w.backward(new torch.Tensor([0.5, -0.25]));     // the grad accumulates: [0.5, -0.25], then [1, -0.5]
  opt.step();
  steps.push({ w: w.data.slice(), m: w.m.data.slice(), v: w.v.data.slice(),
               state_keys: Object.keys(opt).concat(Object.keys(w)).filter((k) => /step|count|^t$/i.test(k)) });
}
console.log(JSON.stringify(steps));
JS
) || exit 2
JS_OUT="$js" /usr/bin/python3 - <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
js = json.loads(os.environ["JS_OUT"])
w = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
opt = torch.optim.Adam([w], lr=0.1, betas=(0.9, 0.999), eps=1e-8, foreach=False)
w.grad = torch.zeros_like(w)
ok_moments, diff_values = True, True
for t in range(2):
    w.grad += torch.tensor([0.5, -0.25], dtype=torch.float64)
    opt.step()
    s = opt.state[w]
    j = js[t]
    print("step %d: js-pytorch w %s m %s v %s (a step counter: %s)" % (t + 1, j["w"], j["m"], j["v"], j["state_keys"] or "none"))
    print("        torch %s w %s exp_avg %s exp_avg_sq %s step %d"
          % (torch.__version__, w.tolist(), s["exp_avg"].tolist(), s["exp_avg_sq"].tolist(), int(s["step"])))
    ok_moments &= all(abs(a - b) <= 1e-15 * abs(b) for a, b in zip(j["m"] + j["v"], s["exp_avg"].tolist() + s["exp_avg_sq"].tolist()))
    diff_values &= any(abs(a - b) > 1e-6 for a, b in zip(j["w"], w.tolist()))
print("moments equal: %s; parameters differ: %s" % (ok_moments, diff_values))
sys.exit(0 if ok_moments and diff_values and not js[0]["state_keys"] else 1)
PY
