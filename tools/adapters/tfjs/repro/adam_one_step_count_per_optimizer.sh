#!/bin/bash
# tfjs 4.22's Adam counts steps once per optimizer (iterations, accBeta1/accBeta2), not per parameter: a variable whose
# gradient is null at a step is skipped but the count moves on, so its first update uses the bias correction of
# step 2 (tfjs) instead of step 1 (torch, SEMANTICS 6.2). Pinned by grad-adam-grad-none-skip-f32.
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
  const a = tf.variable(tf.tensor1d([1]), true, 'a'), b = tf.variable(tf.tensor1d([1]), true, 'b');
  const opt = tf.train.adam(0.1, 0.9, 0.999, 1e-8);
  opt.applyGradients([{name: 'a', tensor: tf.tensor1d([1])}, {name: 'b', tensor: null}]);
  opt.applyGradients([{name: 'a', tensor: tf.tensor1d([1])}, {name: 'b', tensor: tf.tensor1d([1])}]);
  out({b: vals(b)[0], iterations: opt.iterations});
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
a = torch.tensor([1.0], requires_grad=True); b = torch.tensor([1.0], requires_grad=True)
opt = torch.optim.Adam([a, b], lr=0.1, foreach=False)
a.grad = torch.tensor([1.0]); opt.step()                     # b has no grad: skipped
b.grad = torch.tensor([1.0]); a.grad = torch.tensor([1.0]); opt.step()
print("Adam(lr 0.1) over a, b; step 1 with a grad for a only, step 2 with both: b after step 2, b's step count")
print("  %-16s b %.7f  step %d (the optimizer's iterations)" % (tv + ":", num(t["b"]), t["iterations"]))
print("  %-16s b %.7f  step %d" % (pv + ":", b.item(), int(opt.state[b]["step"])))
report(t["iterations"] != int(opt.state[b]["step"]) and abs(num(t["b"]) - b.item()) > 1e-4)
PY
