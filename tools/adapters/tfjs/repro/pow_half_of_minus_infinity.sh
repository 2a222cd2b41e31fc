#!/bin/bash
# tfjs 4.22's pow follows JavaScript's Math.pow (C99 pow): pow(-inf, 0.5) = +inf and pow(-inf, -0.5) = +0, so
# x^0.5 is +inf at -inf and its grad 0.5 * x^-0.5 is 0; torch computes x^0.5 as sqrt(x) (SEMANTICS 2.11): NaN for
# both. Pinned by op-pow0.5-nonfinite-f32.
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
  const x = tf.tensor1d([-Infinity, 4]);
  const f = t => tf.pow(t, tf.scalar(0.5));
  out({value: vals(f(x)), grad: vals(tf.grads(f)([x], tf.ones([2]))[0])});
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
x = torch.tensor([-math.inf, 4.0], requires_grad=True)
y = x.pow(0.5)
y.backward(torch.ones(2))
print("x^0.5 and its grad at x = [-inf, 4]")
print("  %-16s value %s grad %s" % (tv + ":", num(t["value"]), num(t["grad"])))
print("  %-16s value %s grad %s" % (pv + ":", y.tolist(), x.grad.tolist()))
report(num(t["value"])[0] == math.inf and math.isnan(y.tolist()[0]))  # C pow(-inf, 0.5) = +inf; sqrt: NaN
PY
