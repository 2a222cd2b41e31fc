#!/bin/bash
# tfjs 4.22's gradient of tf.gather (embedding) sums the incoming rows with unsortedSegmentSum, which the CPU backend
# computes as sum(mask * dy) over all rows (tfjs-backend-cpu kernels/UnsortedSegmentSum): a NaN or inf in the
# incoming gradient of one looked-up row makes the grad of every row NaN, also rows never looked up (torch: 0).
# Found by lockstep (seed 14, --max-size 80, random-155); pinned by the named case sem2-embedding-grad-rows-not-looked-up-stay-zero.
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
  const w = tf.tensor2d([[0], [0]]);
  out({grad: vals(tf.grads(x => tf.gather(x, tf.tensor1d([1, 1], 'int32')))([w], tf.tensor2d([[NaN], [1]]))[0])});
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
w = torch.zeros(2, 1, requires_grad=True)
torch.nn.functional.embedding(torch.tensor([1, 1]), w).backward(torch.tensor([[math.nan], [1.0]]))
ref = w.grad.flatten().tolist()
print("grad of embedding(W (2 x 1), indices [1, 1]) with incoming gradient [[NaN], [1]]: row 0 is never looked up")
print("  %-16s %s" % (tv + ":", num(t["grad"])))
print("  %-16s %s" % (pv + ":", ref))
report(math.isnan(num(t["grad"])[0]) and ref[0] == 0.0)
PY
