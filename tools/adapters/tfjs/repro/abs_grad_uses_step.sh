#!/bin/bash
# tfjs 4.22's gradient of abs is dy * step(x, -1) (tfjs-core gradients/Abs_grad): -1 at x = 0 and -0 (torch: 0,
# sign(0)) and NaN at x = NaN (torch: 0). Pinned by op-abs-zero-f32 and op-abs-nonfinite-f32.
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
  const x = tf.tensor1d([0, -0, NaN, 2, -2]);
  out({grad: vals(tf.grads(t => tf.abs(t))([x], tf.ones([5]))[0])});
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
x = torch.tensor([0.0, -0.0, math.nan, 2.0, -2.0], requires_grad=True)
x.abs().backward(torch.ones(5))
ref = x.grad.tolist()
print("d abs(x)/dx at x = [0, -0, NaN, 2, -2]")
print("  %-16s %s" % (tv + ":", num(t["grad"])))
print("  %-16s %s" % (pv + ":", ref))
g = num(t["grad"])
report(g[0] == -1 and math.isnan(g[2]) and ref[0] == 0 and ref[2] == 0)  # -1 at 0, NaN at NaN
PY
