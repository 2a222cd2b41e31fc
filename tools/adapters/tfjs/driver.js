#!/usr/bin/env node
// TensorFlow.js (@tensorflow/tfjs, pure-JavaScript CPU backend) as a lockstep driver (fixtures/PROTOCOL.md).
//
//   lockstep replay --engine 'node tools/adapters/tfjs/driver.js' --expectations fixtures/expectations/tfjs.json
//   lockstep run    --engine 'node tools/adapters/tfjs/driver.js' --expectations fixtures/expectations/tfjs.json
//
// Reads one request per line on stdin and answers one line on stdout (debugging: TFJS_DRIVER_LOG=FILE appends every
// request to FILE). What is TensorFlow.js's own and what this adapter emulates (README.md in this folder has the
// full account):
//  - framework's own: every number. Parameters are tf.Variable (float32); the loss ops are tf ops (tf.add ... tf.matMul,
//    tf.losses.meanSquaredError, tf.losses.softmaxCrossEntropy, tf.gather); gradients come from tfjs's autodiff
//    (tf.grads with an explicit dy); the steps are tf.train.sgd / tf.train.momentum / tf.train.adam's applyGradients,
//    and the optimizer state is read back with the optimizer's getWeights() (its accumulators and iteration count)
//    and getConfig().
//  - emulated (PyTorch bookkeeping that tfjs does not have, SEMANTICS §2-§4): the .grad slot of each parameter (a
//    cell holding a tensor: accumulation across backward, zero_grad in place vs set_to_none, same_as_previous, held
//    handles), the output held between forward and backward (the parameter values the forward read, at which the
//    backward differentiates, as tfjs's tape would: it clones what it saves), no_grad, the graph's lifetime
//    (retain_graph, a freed graph, §2.5) and LibTorch 1.13's version-counter check after an Adam step (§2.9), and
//    the error kinds of PROTOCOL.md section 4 for actions that fail.
'use strict';

// tfjs writes its banner and warnings with console.*: keep stdout for answers only.
for (const k of ['log', 'info', 'warn', 'debug', 'error', 'trace']) {
  console[k] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}
const readline = require('readline');
const tf = require('@tensorflow/tfjs');

class EngineError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}
class Unsupported extends Error {}

// ---- numbers (PROTOCOL.md section 5) -------------------------------------------------------------------------
const SPECIAL = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity };
function num(v) {
  if (typeof v === 'string') {
    if (!(v in SPECIAL)) throw new Error('not a number: ' + v);
    return SPECIAL[v];
  }
  return v;
}
function numText(x) {
  if (Number.isNaN(x)) return '"NaN"';
  if (x === Infinity) return '"Infinity"';
  if (x === -Infinity) return '"-Infinity"';
  if (Object.is(x, -0)) return '-0.0';
  return String(x);  // shortest round trip of the double holding the float32
}
function toJson(v) {
  if (typeof v === 'number') return numText(v);
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return '[' + Array.from(v, toJson).join(',') + ']';
  return '{' + Object.keys(v).filter(k => v[k] !== undefined)
    .map(k => JSON.stringify(k) + ':' + toJson(v[k])).join(',') + '}';
}

function size(shape) { return shape.reduce((a, b) => a * b, 1); }
function tensorOf(values, shape) {
  return tf.tensor(Float32Array.from(values, num), shape, 'float32');
}
function valuesOf(t) { return Array.from(t.dataSync()); }

// ---- options -------------------------------------------------------------------------------------------------
// What tfjs's optimizers have: SGD (tf.train.sgd, or tf.train.momentum when momentum != 0): lr, momentum, nesterov;
// Adam (tf.train.adam): lr, betas, eps. Every other option only at its default value.
const HONOURED = { sgd: ['lr', 'momentum', 'nesterov'], adam: ['lr', 'betas', 'eps'] };
const DEFAULT_ONLY = { dampening: 0, weight_decay: 0, amsgrad: false };
const FOREIGN = { sgd: ['betas', 'eps', 'amsgrad'], adam: ['momentum', 'dampening', 'nesterov'] };

function checkHonoured(kind, options, where) {
  for (const [k, v] of Object.entries(options || {})) {
    if (k === 'comment' || HONOURED[kind].includes(k) || FOREIGN[kind].includes(k)) continue;
    if (k in DEFAULT_ONLY && num(v) === DEFAULT_ONLY[k]) continue;
    if (k in DEFAULT_ONLY && typeof v === 'boolean' && v === DEFAULT_ONLY[k]) continue;
    throw new Unsupported(`${kind}.${k} (${where}): tf.train has no such option`);
  }
}
function checkForeign(kind, options, where) {
  const foreign = FOREIGN[kind].filter(k => k in (options || {}));
  if (foreign.length) throw new EngineError('invalid_option', `${where}: ${foreign.join(', ')} is not an option of ${kind}`);
}

// ---- expressions (fixtures/README.md "Programs") -----------------------------------------------------------------
function paramsOf(e, out = []) {
  if (e.op === 'param') { if (!out.includes(e.name)) out.push(e.name); }
  else for (const a of e.args || []) paramsOf(a, out);
  return out;
}

// One op of a loss expression as tf ops, on its evaluated arguments `x`. Call inside tf.tidy / tf.grads.
function applyOp(e, x) {
  switch (e.op) {
    case 'add': return tf.add(x[0], x[1]);
    case 'sub': return tf.sub(x[0], x[1]);
    case 'mul': return tf.mul(x[0], x[1]);
    case 'div': return tf.div(x[0], x[1]);
    case 'neg': return tf.neg(x[0]);
    case 'mul_scalar': return tf.mul(x[0], tf.scalar(num(e.scalar), 'float32'));
    case 'square': return tf.square(x[0]);
    case 'pow': return tf.pow(x[0], tf.scalar(num(e.exponent), 'float32'));
    case 'exp': return tf.exp(x[0]);
    case 'log': return tf.log(x[0]);
    case 'tanh': return tf.tanh(x[0]);
    case 'sigmoid': return tf.sigmoid(x[0]);
    case 'relu': return tf.relu(x[0]);
    case 'abs': return tf.abs(x[0]);
    case 'matmul': return tf.matMul(x[0], x[1]);
    case 'sum': return tf.sum(x[0]);
    case 'mean': return tf.mean(x[0]);
    // torch.nn.functional.mse_loss(input, target), reduction mean: tfjs's loss takes (labels, predictions) and
    // divides the sum by the element count (Reduction.SUM_BY_NONZERO_WEIGHTS without weights).
    case 'mse_loss': return tf.losses.meanSquaredError(x[1], x[0]);
    // torch cross_entropy(logits (N, C), class indices (N)), mean over N: tfjs's loss takes one-hot labels (made
    // here as a plain tensor: tf.oneHot refuses depth 1, which a program with one class needs).
    case 'cross_entropy': {
      const [n, c] = x[0].shape;
      const onehot = new Float32Array(n * c);
      e.targets.forEach((t, i) => { onehot[i * c + t] = 1; });
      return tf.losses.softmaxCrossEntropy(tf.tensor2d(onehot, [n, c]), x[0]);
    }
    // torch linear(x, W, b) = x W^T + b with W of shape (out, in).
    case 'linear': {
      const y = tf.matMul(x[0], x[1], false, true);
      return x.length > 2 ? tf.add(y, x[2]) : y;
    }
    // torch embedding(indices, W): the rows of W; repeated rows accumulate in the grad (tf.gather's gradient).
    case 'embedding': return tf.gather(x[0], tf.tensor1d(e.indices, 'int32'));
    default: throw new Unsupported('op:' + e.op);
  }
}

// Evaluates `e` with tf ops; env: parameter name -> tensor; `values` (optional) receives every node's value.
function evaluate(e, env, values) {
  let v;
  if (e.op === 'param') v = env[e.name];
  else if (e.op === 'const') v = tensorOf(e.values, e.shape);
  else v = applyOp(e, e.args.map(a => evaluate(a, env, values)));
  if (values) values.set(e, v);
  return v;
}

// Which arguments LibTorch 1.13 saves *as themselves* for the backward (SEMANTICS §2.8), given which arguments
// require grad: a parameter saved so is read by the backward as it is then (after a step, its new values, §2.9);
// everything else the backward reads is a value of the forward (a saved output, a saved constant, an argument
// not saved at all).
function savedAsThemselves(op, req) {
  switch (op) {
    case 'mul': case 'matmul': return [req[1], req[0]];
    case 'div': return [req[1], req[0] || req[1]];
    case 'square': case 'pow': case 'log': case 'abs': case 'embedding': return [true];
    case 'mse_loss': return [true, true];
    case 'linear': return [req[1], req[0], false];
    default: return req.map(() => false);  // add sub neg mul_scalar sum mean; exp tanh sigmoid relu and
  }                                         // cross_entropy save their output
}

// Whether a node saves any tensor for its backward (SEMANTICS §2.8), so that a freed one cannot run again (§2.5).
function savesAnything(op, req) {
  if (['add', 'sub', 'neg', 'mul_scalar', 'sum', 'mean'].includes(op)) return false;
  if (op === 'linear') return req[0] || req[1];
  return true;
}

// The graph LibTorch records for a loss (SEMANTICS §2.2): a node for every op with an argument that requires grad,
// numbered in creation order (operands first to last, then the op, §2.10). Map: expression node -> its state.
function graphOf(loss) {
  const nodes = new Map();
  let seq = 0;
  const visit = e => {
    if (e.op === 'param') return true;
    if (e.op === 'const') return false;
    const req = e.args.map(visit);
    const any = req.some(Boolean);
    if (any) nodes.set(e, { seq: seq++, req, freed: false });
    return any;
  };
  visit(loss);
  return nodes;
}

function checkExpr(e) {
  const known = ['param', 'const', 'add', 'sub', 'mul', 'div', 'neg', 'mul_scalar', 'square', 'pow', 'exp', 'log',
    'tanh', 'sigmoid', 'relu', 'abs', 'matmul', 'sum', 'mean', 'mse_loss', 'cross_entropy', 'linear', 'embedding'];
  if (!known.includes(e.op)) throw new Unsupported('op:' + e.op);
  if (e.op === 'const' && e.dtype && e.dtype !== 'float32') throw new Unsupported('float64 (tfjs has no float64)');
  for (const a of e.args || []) checkExpr(a);
}

// ---- one program ---------------------------------------------------------------------------------------------------
let variableCounter = 0;

class Program {
  constructor(program) {
    this.program = program;
    this.params = new Map();     // name -> {name, shape, variable, grad: cell|null, previous: cell|null}
    this.cells = [];             // every grad cell ever made, for disposal: {tensor}
    this.handles = new Map();    // handle -> cell|null, in the order first taken
    this.optimizer = null;       // the tf.train optimizer
    this.kind = null;            // 'sgd' | 'adam'
    this.groupNames = [];        // the one group's parameters, in order
    this.sgdNesterov = false;    // nesterov given to an SGD without momentum (tf.train.sgd has no such field)
    this.held = null;            // the output of the last successful forward
    this.groupCount = 0;
  }

  // Refuses, before running anything, what the adapter cannot express (the hello keeps it away; be safe).
  precheck() {
    const p = this.program;
    for (const q of p.params) if (q.dtype !== 'float32') throw new Unsupported('float64 (tfjs has no float64)');
    if (p.loss) checkExpr(p.loss);
    const o = p.optimizer;
    if (o) {
      if (o.type !== 'sgd' && o.type !== 'adam') throw new Unsupported(o.type + ' (tf.train has no ' + o.type + ')');
      if (o.groups && (o.groups.length > 1 || (o.groups.length === 1 && o.groups[0].options)))
        throw new Unsupported('param_groups');
      checkHonoured(o.type, o.defaults, 'defaults');
    }
    for (const a of p.actions) {
      if (a.action === 'forward' && a.loss) checkExpr(a.loss);
      if (a.action === 'backward' && a.create_graph) throw new Unsupported('create_graph');
      if (a.action === 'add_param_group') throw new Unsupported('add_param_group');
      if (a.action === 'set_options' && o) {
        checkHonoured(o.type, a.options, 'set_options');
        // tf.train.adam has no way to change its betas: its bias correction keeps running products of them
        // (accBeta1, accBeta2) that a new beta would not recompute. lr and eps are read at every step.
        if (o.type === 'adam' && 'betas' in (a.options || {})) throw new Unsupported('set_options: adam.betas (tf.train.adam cannot change its betas)');
      }
    }
  }

  setup() {
    for (const spec of this.program.params) {
      const initial = tensorOf(spec.values, spec.shape);
      const v = tf.variable(initial, true, 'lockstep_' + (variableCounter++));
      initial.dispose();  // the variable holds its own reference to the data
      // version: steps that changed the parameter (a held graph then reads other values); torchVersion: those that
      // LibTorch 1.13 counts in the parameter's version counter (Adam's, not SGD's: SEMANTICS §2.9).
      this.params.set(spec.name, { name: spec.name, shape: spec.shape, variable: v, grad: null, previous: null,
        version: 0, torchVersion: 0 });
    }
    const o = this.program.optimizer;
    if (!o) return;
    const d = o.defaults || {};
    checkForeign(o.type, d, 'defaults');
    this.groupCount = o.params ? 1 : o.groups.length;  // 0: an optimizer over an empty list of groups
    this.groupNames = o.params || (o.groups.length ? o.groups[0].params : []);
    if (o.type === 'sgd') {
      if (!('lr' in d)) throw new EngineError('invalid_option', 'defaults: SGD options need lr (no default)');
      const lr = num(d.lr), momentum = num(d.momentum || 0), nesterov = !!d.nesterov;
      if (lr < 0 || momentum < 0 || Number.isNaN(lr) || Number.isNaN(momentum) || (nesterov && momentum <= 0))
        throw new Unsupported('invalid_options (tf.train does not validate options)');
      this.optimizer = momentum !== 0 ? tf.train.momentum(lr, momentum, nesterov) : tf.train.sgd(lr);
      this.sgdNesterov = nesterov;
    } else {
      const lr = 'lr' in d ? num(d.lr) : 1e-3;
      const betas = 'betas' in d ? d.betas.map(num) : [0.9, 0.999];
      const eps = 'eps' in d ? num(d.eps) : 1e-8;  // PyTorch's default; tfjs's own default would be 1e-7
      if (!(lr >= 0) || !(eps >= 0) || !betas.every(x => x >= 0 && x < 1))
        throw new Unsupported('invalid_options (tf.train does not validate options)');
      this.optimizer = tf.train.adam(lr, betas[0], betas[1], eps);
    }
    this.kind = o.type;
  }

  needOptimizer(what) {
    if (!this.optimizer) throw new EngineError('no_optimizer', what + ' without an optimizer');
  }

  newCell(tensor) {
    const cell = { tensor };
    this.cells.push(cell);
    return cell;
  }

  // SEM-3.1 / 3.2: a first contribution makes a new grad (a copy); a later one is added in place (same cell).
  accumulate(p, g) {
    if (!p.grad) {
      p.grad = this.newCell(tf.clone(g));
    } else {
      const old = p.grad.tensor;
      p.grad.tensor = tf.add(old, g);
      old.dispose();
    }
  }

  releaseHeld() {
    if (this.held && this.held.kind === 'expr') {
      this.held.value.dispose();
      for (const t of this.held.at) t.dispose();
    }
  }

  forward(action) {
    const loss = action.loss || this.program.loss;
    if (!loss) throw new EngineError('other', 'forward without a loss expression');
    if (loss.op === 'param') {  // the output is the parameter itself (SEM-3.8)
      this.releaseHeld();
      this.held = { kind: 'param', name: loss.name };
      return;
    }
    const names = paramsOf(loss);
    // The values the forward read: clones of the variables (a later assign gives the variable new data).
    const at = names.map(n => tf.clone(this.params.get(n).variable));
    const env = {};
    names.forEach((n, i) => { env[n] = at[i]; });
    let value;
    try {
      value = tf.tidy(() => evaluate(loss, env));
    } catch (e) {
      for (const t of at) t.dispose();
      throw e;
    }
    this.releaseHeld();
    const requiresGrad = names.length > 0 && !action.no_grad;
    this.held = { kind: 'expr', expr: loss, names, at, value, requiresGrad,
      graph: requiresGrad ? graphOf(loss) : null,
      versions: names.map(n => this.params.get(n).version),
      torchVersions: names.map(n => this.params.get(n).torchVersion) };
  }

  backward(action) {
    const h = this.held;
    if (!h) throw new EngineError('no_output', 'backward before any forward');
    const gradient = action.gradient;
    if (h.kind === 'param') {  // a leaf saves nothing: any number of backwards (SEM-3.8)
      const p = this.params.get(h.name);
      const n = size(p.shape);
      if (gradient && gradient.length !== n)
        throw new EngineError('gradient_shape', `explicit gradient has ${gradient.length} values, the output ${n}`);
      if (!gradient && n !== 1)
        throw new EngineError('nonscalar_backward', 'grad can be implicitly created only for scalar outputs');
      const g = gradient ? tensorOf(gradient, p.shape) : tf.ones(p.shape, 'float32');
      this.accumulate(p, g);
      g.dispose();
      return;
    }
    if (!h.requiresGrad)
      throw new EngineError('no_grad_fn', 'element 0 of tensors does not require grad and does not have a grad_fn');
    const n = h.value.size;
    if (gradient && gradient.length !== n)
      throw new EngineError('gradient_shape', `explicit gradient has ${gradient.length} values, the output ${n}`);
    if (!gradient && n !== 1)
      throw new EngineError('nonscalar_backward', 'grad can be implicitly created only for scalar outputs');
    const retain = action.retain_graph !== undefined ? !!action.retain_graph : !!action.create_graph;
    const dy = gradient ? tensorOf(gradient, h.value.shape) : tf.onesLike(h.value);
    try {
      const changed = h.names.some((name, i) => this.params.get(name).version !== h.versions[i]);
      const freed = [...h.graph.values()].some(node => node.freed);
      if (changed || freed) {
        this.backwardNodeByNode(h, dy, retain);
        return;
      }
      // The usual case: tfjs's own autodiff of the whole loss, at the values the forward read.
      const f = (...xs) => {
        const env = {};
        h.names.forEach((name, i) => { env[name] = xs[i]; });
        return evaluate(h.expr, env);
      };
      const grads = tf.grads(f)(h.at, dy);
      h.names.forEach((name, i) => this.accumulate(this.params.get(name), grads[i]));
      tf.dispose(grads);
      if (!retain) for (const node of h.graph.values()) node.freed = true;
    } finally {
      dy.dispose();
    }
  }

  // A backward through a graph that a previous backward freed (SEMANTICS §2.5), or whose parameters a step has
  // changed since the forward (§2.9). tfjs computes gradients in the same call as the forward and keeps no graph,
  // so neither exists there; LibTorch's do, and this emulates them: node by node, the most recently created first
  // and a parameter's grad accumulated as soon as all its contributions are in (§2.10); a freed node that saved a
  // tensor fails (backward_through_freed_graph), a parameter saved as itself that an Adam step changed fails
  // (inplace_modified; LibTorch 1.13's SGD step does not move the version), otherwise such a parameter is read as it
  // is now and everything else as the forward computed it. Each node's gradient is tfjs's own (tf.grads of that
  // one op at those values).
  backwardNodeByNode(h, dy, retain) {
    const env = {}, live = {}, index = {};
    h.names.forEach((name, i) => { env[name] = h.at[i]; live[name] = this.params.get(name).variable; index[name] = i; });
    const values = new Map();
    const made = tf.tidy(() => { evaluate(h.expr, env, values); return [...values.values()]; });
    const temps = made.filter(t => !h.at.includes(t));
    const needed = {}, arrived = {};
    for (const e of h.graph.keys())
      for (const a of e.args) if (a.op === 'param') needed[a.name] = (needed[a.name] || 0) + 1;
    const ready = [{ e: h.expr, g: dy }];
    try {
      while (ready.length) {
        let k = 0;
        for (let i = 1; i < ready.length; i++) if (h.graph.get(ready[i].e).seq > h.graph.get(ready[k].e).seq) k = i;
        const { e, g } = ready.splice(k, 1)[0];
        const node = h.graph.get(e);
        if (node.freed && savesAnything(e.op, node.req))
          throw new EngineError('backward_through_freed_graph', 'Trying to backward through the graph a second ' +
            'time (or directly access saved tensors after they have already been freed)');
        const saved = savedAsThemselves(e.op, node.req);
        e.args.forEach((a, i) => {
          if (a.op === 'param' && saved[i] && this.params.get(a.name).torchVersion !== h.torchVersions[index[a.name]])
            throw new EngineError('inplace_modified', 'one of the variables needed for gradient computation has ' +
              'been modified by an inplace operation (' + a.name + ', an Adam step)');
        });
        const inputs = e.args.map((a, i) => (a.op === 'param' && saved[i]) ? live[a.name] : values.get(a));
        const wrt = node.req.map((r, i) => (r ? i : -1)).filter(i => i >= 0);
        const f = (...xs) => applyOp(e, inputs.map((x, i) => (wrt.includes(i) ? xs[wrt.indexOf(i)] : x)));
        // One tensor per argument position (mul(p, p) passes p twice: tfjs would give each the sum of both).
        const xs = wrt.map(i => tf.clone(inputs[i]));
        const gs = tf.grads(f)(xs, g);
        temps.push(...xs, ...gs);
        if (!retain) node.freed = true;
        wrt.forEach((i, j) => {
          const a = e.args[i];
          if (a.op !== 'param') { ready.push({ e: a, g: gs[j] }); return; }
          const sofar = arrived[a.name];
          arrived[a.name] = sofar ? { sum: tf.add(sofar.sum, gs[j]), count: sofar.count + 1 } : { sum: gs[j], count: 1 };
          if (sofar) temps.push(arrived[a.name].sum);
          if (arrived[a.name].count === needed[a.name]) this.accumulate(this.params.get(a.name), arrived[a.name].sum);
        });
      }
    } finally {
      for (const t of temps) if (!t.isDisposed) t.dispose();
    }
  }

  zeroGrad(action) {
    this.needOptimizer('zero_grad');
    // zero_grad() without set_to_none: the default declared in the hello ("zero", as LibTorch 1.13).
    const toNone = !!action.set_to_none;
    for (const name of new Set(this.groupNames)) {
      const p = this.params.get(name);
      if (!p.grad) continue;
      if (toNone) {
        p.grad = null;  // SEM-4.2: a held handle keeps the old cell
      } else {          // SEM-4.1: zeroed in place, same cell
        const old = p.grad.tensor;
        p.grad.tensor = tf.zerosLike(old);
        old.dispose();
      }
    }
  }

  step() {
    this.needOptimizer('step');
    // One entry per parameter of the group, in order; an undefined grad is passed as null, which tfjs's
    // applyGradients skips. (tfjs keys each accumulator by the position in this list, so it must not change.)
    const list = this.groupNames.map(name => {
      const p = this.params.get(name);
      return { name: p.variable.name, tensor: p.grad ? p.grad.tensor : null };
    });
    this.optimizer.applyGradients(list);
    for (const name of this.groupNames) {
      const p = this.params.get(name);
      if (!p.grad) continue;
      p.version++;
      if (this.kind === 'adam') p.torchVersion++;
    }
  }

  setOptions(action) {
    this.needOptimizer('set_options');
    const i = action.group || 0;
    if (i >= this.groupCount) throw new EngineError('no_such_group', `no param group ${i} (there are ${this.groupCount})`);
    const o = action.options || {};
    checkForeign(this.kind, o, 'set_options');
    const opt = this.optimizer;
    if (this.kind === 'sgd') {
      if ('lr' in o) opt.setLearningRate(num(o.lr));                     // public API
      if ('nesterov' in o) {
        if (opt.setMomentum) opt.useNesterov = !!o.nesterov;            // no setter: the field getConfig() reports
        else this.sgdNesterov = !!o.nesterov;
      }
      if ('momentum' in o) {
        const m = num(o.momentum);
        if (opt.setMomentum) {
          opt.setMomentum(m);                                            // public API
        } else if (m !== 0) {
          // tf.train.sgd has no momentum (and no state to lose): from now on a tf.train.momentum, whose
          // accumulators start at zero, so that its first step puts the grad itself in the buffer.
          this.optimizer = tf.train.momentum(opt.learningRate, m, this.sgdNesterov);
          opt.dispose();
        }
      }
    } else {  // tf.train.adam has no setters: its fields, which applyGradients reads at every step
      if ('lr' in o) opt.learningRate = num(o.lr);
      if ('eps' in o) opt.epsilon = num(o.eps);
    }
  }

  run(action) {
    switch (action.action) {
      case 'forward': return this.forward(action);
      case 'backward': return this.backward(action);
      case 'zero_grad': return this.zeroGrad(action);
      case 'set_grad_none': { this.params.get(action.param).grad = null; return; }
      case 'hold_grad': { this.handles.set(action.handle, this.params.get(action.param).grad); return; }
      case 'step': return this.step();
      case 'set_options': return this.setOptions(action);
      default: throw new Unsupported(action.action);
    }
  }

  // ---- observation (SEMANTICS §8, PROTOCOL.md section 4) ----
  async observe(record) {
    let weights = null, iterations = 0;
    if (this.optimizer) {
      const w = await this.optimizer.getWeights();  // [iter, ...accumulators] (tfjs's own serialisation)
      iterations = w[0].tensor.dataSync()[0];
      w[0].tensor.dispose();
      weights = new Map();
      for (const { name, tensor } of w.slice(1)) if (!weights.has(name)) weights.set(name, tensor);
    }
    record.params = {};
    for (const spec of this.program.params) {
      const p = this.params.get(spec.name);
      const obs = { dtype: 'float32', shape: p.shape, values: valuesOf(p.variable) };
      if (!p.grad) {
        obs.grad = { defined: false };
      } else {
        obs.grad = { defined: true, values: valuesOf(p.grad.tensor), requires_grad: false, has_grad_fn: false,
          same_as_previous: p.grad === p.previous };
      }
      p.previous = p.grad;
      obs.state = this.observeState(p, weights, iterations);
      record.params[spec.name] = obs;
    }
    record.handles = {};
    for (const [name, cell] of this.handles) {
      record.handles[name] = cell ? { defined: true, dtype: 'float32', shape: cell.tensor.shape,
        values: valuesOf(cell.tensor) } : { defined: false };
    }
    record.groups = [];
    if (this.optimizer && this.groupCount > 0) {
      const c = this.optimizer.getConfig();
      const options = this.kind === 'sgd'
        ? { lr: c.learningRate, momentum: c.momentum === undefined ? 0 : c.momentum, dampening: 0, weight_decay: 0,
            nesterov: c.useNesterov === undefined ? this.sgdNesterov : !!c.useNesterov }
        : { lr: c.learningRate, betas: [c.beta1, c.beta2], eps: c.epsilon, weight_decay: 0, amsgrad: false };
      record.groups.push({ params: this.groupNames.slice(), options });
    }
    const h = this.held;
    if (h) {
      if (h.kind === 'param') {
        const p = this.params.get(h.name);
        record.output = { dtype: 'float32', shape: p.shape, values: valuesOf(p.variable), requires_grad: true,
          has_grad_fn: false };
      } else {
        record.output = { dtype: 'float32', shape: h.value.shape, values: valuesOf(h.value),
          requires_grad: h.requiresGrad, has_grad_fn: h.requiresGrad };
      }
    }
    return record;
  }

  observeState(p, weights, iterations) {
    if (!weights) return {};
    const v = p.variable.name;
    if (this.kind === 'sgd') {
      const buf = weights.get(v + '/momentum');
      return buf ? { momentum_buffer: valuesOf(buf) } : {};
    }
    const m = weights.get(v + '/m'), s = weights.get(v + '/v');
    if (!m) return {};
    // tfjs counts steps once per optimizer (iterations, and the accumulated beta powers), not per variable: the
    // count its bias correction used for this variable at the last step is the optimizer's.
    return { step: iterations, exp_avg: valuesOf(m), exp_avg_sq: valuesOf(s) };
  }

  dispose() {
    this.releaseHeld();
    for (const c of this.cells) if (!c.tensor.isDisposed) c.tensor.dispose();
    if (this.optimizer) {
      this.optimizer.dispose();
      // MomentumOptimizer.dispose() (tfjs 4.22) leaves the learning-rate scalar of its SGDOptimizer base alive.
      if (this.optimizer.setMomentum && this.optimizer.c && !this.optimizer.c.isDisposed) this.optimizer.c.dispose();
    }
    for (const p of this.params.values()) p.variable.dispose();
  }
}

function errorOf(e) {
  if (e instanceof EngineError) return { kind: e.kind, message: e.message };
  return { kind: 'other', message: String(e && e.message || e) };
}

async function runProgram(program) {
  const run = new Program(program);
  try {
    run.precheck();
    const trace = { engine: 'tfjs-' + tf.version.tfjs };
    const init = { action: 'init' };
    try {
      run.setup();
    } catch (e) {
      if (e instanceof Unsupported) throw e;
      init.error = errorOf(e);
      run.optimizer = null;
    }
    trace.init = await run.observe(init);
    trace.records = [];
    for (const action of program.actions) {
      const rec = { action: action.action };
      try {
        run.run(action);
      } catch (e) {
        if (e instanceof Unsupported) throw e;
        rec.error = errorOf(e);
      }
      trace.records.push(await run.observe(rec));
    }
    return { trace };
  } catch (e) {
    if (e instanceof Unsupported) return { unsupported: e.message };
    throw e;
  } finally {
    run.dispose();
  }
}

const OPS = ['add', 'sub', 'mul', 'div', 'neg', 'mul_scalar', 'square', 'pow', 'exp', 'log', 'tanh', 'sigmoid',
  'relu', 'abs', 'matmul', 'sum', 'mean', 'mse_loss', 'cross_entropy', 'linear', 'embedding'];

function hello() {
  return {
    name: 'tfjs', version: tf.version.tfjs, protocol: 1, language: 'javascript',
    backend: tf.getBackend(),
    // zero_grad() without set_to_none: tfjs has no zero_grad; the adapter zeroes in place, LibTorch 1.13's default.
    defaults: { zero_grad: 'zero' },
    supports: {
      dtypes: ['float32'],
      ops: OPS,
      optimizers: { sgd: HONOURED.sgd, adam: HONOURED.adam },
      features: ['retain_graph', 'no_grad', 'explicit_gradient', 'zero_grad', 'zero_grad_default', 'set_to_none',
        'set_grad_none', 'hold_grad', 'set_options', 'special_values'],
    },
    // What the adapter does where tfjs has no counterpart (the reports and the conformance matrix show it): these
    // features test the adapter's emulation, not tfjs.
    emulated: ['.grad slots: accumulation across backward, zero_grad, set_to_none, param.grad = None, same_as_previous, held grads',
               'no_grad, retain_graph and the freed graph (backward_through_freed_graph)',
               "LibTorch 1.13's version-counter check after an Adam step (inplace_modified)",
               'the error kinds of actions that fail'],
  };
}

async function main() {
  await tf.setBackend('cpu');
  await tf.ready();
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  let chain = Promise.resolve();
  const answer = obj => process.stdout.write(toJson(obj) + '\n');
  const handle = async line => {
    if (!line.trim()) return;
    if (process.env.TFJS_DRIVER_LOG) require('fs').appendFileSync(process.env.TFJS_DRIVER_LOG, line + '\n');
    const request = JSON.parse(line);
    if ('hello' in request) {
      answer({ id: request.id || 'lockstep-hello', hello: hello() });
      return;
    }
    const result = await runProgram(request.program);
    answer(Object.assign({ id: request.id }, result));
  };
  rl.on('line', line => {
    chain = chain.then(() => handle(line)).catch(e => {
      process.stderr.write('tfjs driver: ' + (e && e.stack || e) + '\n');
      process.exit(3);
    });
  });
  rl.on('close', () => { chain.then(() => process.exit(0)); });
}

main().catch(e => {
  process.stderr.write('tfjs driver: cannot start: ' + (e && e.stack || e) + '\n');
  process.exit(3);
});
