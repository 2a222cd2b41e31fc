#!/bin/bash
# tfjs 4.22's Adam keeps beta1^t and beta2^t as float32 variables (accBeta1/accBeta2, starting at float32(beta),
# multiplied by beta after every step) and divides by 1 - accBeta in float32: 1 - float32(0.999) = 0.00099998713
# where torch uses 1 - 0.999^t in double (0.001), so every update is about 6.4e-6 (relative) smaller at t = 1 and
# more later. (eps is added to sqrt(v / bc2), as torch does: no epsilon-hat.) Pinned by grad-adam-lr-f32.
# Prints TensorFlow.js's numbers next to PyTorch's (Debian's /usr/bin/python3 with torch 1.13, whose single-tensor
# torch.optim equals LibTorch 1.13 as lockstep measured); exits 0 while the deviation reproduces, 1 once it does not.
set -u
cd "$(dirname "$0")/.." || exit 2   # tools/adapters/tfjs: node finds @tensorflow/tfjs in ./node_modules
tfjs="$(node - <<'JS'
for (const k of ['log', 'warn', 'info']) console[k] = () => {};
const tf = require('@tensorflow/tfjs');
const out = v => process.stdout.write(JSON.stringify(Object.assign({version: tf.version.tfjs}, v),
  (k, x) => (typeof x === 'number' && !isFinite(x) ? String(x) : x)));
const vals = t => Array.from(t.dataSync());
(async () => {
  await tf.setBackend('cpu'); await tf.ready();
  const w = tf.variable(tf.tensor1d([1, 1]), true, 'w');
  const opt = tf.train.adam(1.0, 0.9, 0.999, 1e-8);
  const steps = [];
  for (let i = 0; i < 3; i++) {
    opt.applyGradients([{name: 'w', tensor: tf.tensor1d([1, 1])}]);
    steps.push(vals(w)[0]);
  }
  out({w: steps, bc2: 1 - Math.fround(0.999)});
})();
JS
)" || { echo "node failed"; exit 2; }
/usr/bin/python3 - "$tfjs" <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
t = json.loads(sys.argv[1], parse_constant=float)
def num(v):
    return [num(x) for x in v] if isinstance(v, list) else float(v)
def same(a, b, tol=0.0):
    a, b = num(a), num(b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b))
    return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= tol * max(abs(a), abs(b))
def report(reproduces):
    print("deviation reproduces" if reproduces else "no deviation any more")
    sys.exit(0 if reproduces else 1)
tv, pv = "tfjs " + t["version"], "torch " + torch.__version__
w = torch.tensor([1.0, 1.0], requires_grad=True)
opt = torch.optim.Adam([w], lr=1.0, foreach=False)
ref = []
for i in range(3):
    w.grad = torch.tensor([1.0, 1.0])
    opt.step()
    ref.append(w[0].item())
print("Adam(lr 1), w = 1, grad 1 at every step: w after steps 1, 2, 3 (1 - beta2 at t = 1: tfjs %r, torch %r)"
      % (num(t["bc2"]), 1 - 0.999))
print("  %-16s %s" % (tv + ":", num(t["w"])))
print("  %-16s %s" % (pv + ":", ref))
report(abs(num(t["w"])[0] - ref[0]) > 1e-6)
PY
