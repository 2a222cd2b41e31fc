#!/bin/bash
# tfjs 4.22's gradient of a / b for b is -(dy * a) / square(b) (tfjs-core gradients/RealDiv_grad): b^2 underflows to 0
# for |b| < 2^-75 in float32 and the grad becomes +-inf where the true value, -dy * (a / b) / b, is finite
# (torch: -1.1342746e+38). Pinned by op-div-tiny-f32 (its element 4).
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
  const a = tf.tensor1d([-5.877472e-39]), b = tf.tensor1d([8.816208e-39]);
  out({grad_b: vals(tf.grads((x, y) => tf.div(x, y))([a, b], tf.tensor1d([-1.5]))[1])});
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
a = torch.tensor([-5.877472e-39], requires_grad=True)
b = torch.tensor([8.816208e-39], requires_grad=True)
(a / b).backward(torch.tensor([-1.5]))
ref = b.grad.tolist()
print("d(a/b)/db * dy at a = -5.877472e-39, b = 8.816208e-39, dy = -1.5 (float32)")
print("  %-16s %s" % (tv + ":", num(t["grad_b"])))
print("  %-16s %s" % (pv + ":", ref))
report(math.isinf(num(t["grad_b"])[0]) and math.isfinite(ref[0]))
PY
