#!/bin/bash
# tfjs 4.22 differentiates pow(x, e) as dy * e * x^(e - 1) literally (tfjs-core gradients/Pow_grad): for e = 0 that
# is 0 * x^-1, NaN at x = 0, at a subnormal x (x^-1 overflows) and at NaN, and -0 at a negative x; torch's grad of
# x^0 is +0 everywhere. Pinned by op-pow0-zero-f32, op-pow0-tiny-f32, op-pow0-nonfinite-f32, op-pow0-negative-f32.
# Prints TensorFlow.js's numbers next to PyTorch's (Debian's /usr/bin/python3 with torch 1.13, whose single-tensor
# torch.optim equals LibTorch 1.13 as lockstep measured); exits 0 while the deviation reproduces, 1 once it does not.
set -u
cd "$(dirname "$0")/.." || exit 2   # tools/adapters/tfjs: node finds @tensorflow/tfjs in ./node_modules
tfjs="$(node - <<'JS'
for (const k of ['log', 'warn', 'info']) console[k] = () => {};
const tf = require('@tensorflow/tfjs');
const out = v => process.stdout.write(JSON.stringify(Object.assign({version: tf.version.tfjs}, v),
  (k, x) => (typeof x === 'number' && (!isFinite(x) || Object.is(x, -0)) ? (Object.is(x, -0) ? '-0' : String(x)) : x)));
const vals = t => Array.from(t.dataSync());
(async () => {
  await tf.setBackend('cpu'); await tf.ready();
  const x = tf.tensor1d([0, 1e-45, NaN, 2, -2]);
  out({grad: vals(tf.grads(t => tf.pow(t, tf.scalar(0)))([x], tf.ones([5]))[0])});
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
    if a == 0 and b == 0:
        return math.copysign(1, a) == math.copysign(1, b)  # the sign of zero counts (SEMANTICS 9.5)
    return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= tol * max(abs(a), abs(b))
def report(reproduces):
    print("deviation reproduces" if reproduces else "no deviation any more")
    sys.exit(0 if reproduces else 1)
tv, pv = "tfjs " + t["version"], "torch " + torch.__version__
x = torch.tensor([0.0, 1e-45, math.nan, 2.0, -2.0], requires_grad=True)
x.pow(0.0).backward(torch.ones(5))
ref = x.grad.tolist()
print("d x^0/dx at x = [0, 1e-45, NaN, 2, -2] (float32)")
print("  %-16s %s" % (tv + ":", num(t["grad"])))
print("  %-16s %s" % (pv + ":", ref))
report(not same(t["grad"], ref))
PY
