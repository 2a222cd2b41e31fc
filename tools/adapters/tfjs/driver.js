#!/usr/bin/env node
// TensorFlow.js (@tensorflow/tfjs, pure-JavaScript CPU backend) as a lockstep driver (fixtures/PROTOCOL.md), written
// on the driver kit (tools/driverkit/js: the protocol loop, the hello, numbers, the program interpreter, records,
// error kinds, and the emulated .grad slots this file opts into). This file is the mapping.
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
//  - emulated (PyTorch bookkeeping that tfjs does not have, SEMANTICS §2-§4): the .grad slot of each parameter (the
//    kit's GradSlots: accumulation across backward, zero_grad in place vs set_to_none, same_as_previous, held
//    handles), the output held between forward and backward (the parameter values the forward read, at which the
//    backward differentiates, as tfjs's tape would: it clones what it saves), no_grad, the graph's lifetime
//    (retain_graph, a freed graph, §2.5) and LibTorch 1.13's version-counter check after an Adam step (§2.9), and
//    the error kinds of PROTOCOL.md section 4 for actions that fail.
'use strict';

const kit = require('../../driverkit/js');  // first: it keeps stdout for answers (tfjs's banner goes to stderr)
const tf = require('@tensorflow/tfjs');
const { EngineError, Unsupported } = kit;

const tensorOf = (values, shape) => tf.tensor(Float32Array.from(values), shape, 'float32');
const valuesOf = (t) => Array.from(t.dataSync());

// ---- the graph LibTorch would hold (tfjs has none between a forward and a backward) ------------------------------

// Which arguments LibTorch 1.13 saves *as themselves* for the backward (SEMANTICS §2.8), given which arguments
// require grad: a parameter saved so is read by the backward as it is then (after a step, its new values, §2.9);
// everything else the backward reads is a value of the forward (a saved output, a saved constant, an argument
// not saved at all).
function savedAsThemselves(op, req) {
  switch (op) {
    case 'mul': case 'matmul': return [req[1], req[0]];
    case 'div': return [req[1], req[0] || req[1]];
    case 'square': case 'pow': case 'log': case 'abs': case 'softplus': case 'embedding': return [true];
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
  const visit = (e) => {
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

let variableCounter = 0;

class Tfjs extends kit.Framework {
  constructor() {
    super();
    this.name = 'tfjs';
    this.version = tf.version.tfjs;
    // zero_grad() without set_to_none: tfjs has no zero_grad; the kit's slots zero in place, LibTorch 1.13's default.
    this.defaults = { zero_grad: 'zero' };
    // What the adapter does where tfjs has no counterpart (the reports and the conformance matrix show it): these
    // features test the adapter's emulation, not tfjs.
    this.emulated = ['.grad slots: accumulation across backward, zero_grad, set_to_none, param.grad = None, same_as_previous, held grads',
      'no_grad, retain_graph and the freed graph (backward_through_freed_graph)',
      "LibTorch 1.13's version-counter check after an Adam step (inplace_modified)",
      'the error kinds of actions that fail'];
    this.observes = [];  // no optional trace fields announced (as before the kit)
    this.dtypes = ['float32'];  // tfjs has no float64
    // What tfjs's optimizers have: SGD (tf.train.sgd, or tf.train.momentum when momentum != 0): lr, momentum,
    // nesterov; Adam (tf.train.adam): lr, betas, eps. Every other option only at its default value.
    this.optimizers = { sgd: ['lr', 'momentum', 'nesterov'], adam: ['lr', 'betas', 'eps'] };
    // create_graph: not expressible without re-implementing autograd; param_groups: one set of hyperparameters per
    // optimizer; invalid_options: tf.train validates nothing.
    this.lacks = ['create_graph', 'param_groups', 'invalid_options'];
    this.gradSlots = { clone: tf.clone, add: tf.add, zerosLike: tf.zerosLike, dispose: (t) => t.dispose() };
    this.counters = new Map();  // parameter name -> {version, torchVersion}, per program
  }

  async ready() {
    await tf.setBackend('cpu');
    await tf.ready();
    this.helloFields.backend = tf.getBackend();
  }

  // ---- tensors ----
  parameter(values, dtype, shape) {
    const initial = tensorOf(values, shape);
    const v = tf.variable(initial, true, 'lockstep_' + (variableCounter++));
    initial.dispose();  // the variable holds its own reference to the data
    return v;
  }
  constant(values, dtype, shape) { return tensorOf(values, shape); }
  toList(t) { return valuesOf(t); }
  dtype() { return 'float32'; }
  shape(t) { return t.shape; }

  // version: steps that changed the parameter (a held graph then reads other values); torchVersion: those that
  // LibTorch 1.13 counts in the parameter's version counter (Adam's, not SGD's: SEMANTICS §2.9).
  counter(name) {
    if (!this.counters.has(name)) this.counters.set(name, { version: 0, torchVersion: 0 });
    return this.counters.get(name);
  }
  nameOf(v) { for (const [name, p] of this.run.params) if (p === v) return name; return null; }

  // ---- ops: tf ops (call inside tf.tidy / tf.grads) ----
  op_add(a, b) { return tf.add(a, b); }
  op_sub(a, b) { return tf.sub(a, b); }
  op_mul(a, b) { return tf.mul(a, b); }
  op_div(a, b) { return tf.div(a, b); }
  op_neg(a) { return tf.neg(a); }
  op_mul_scalar(a, s) { return tf.mul(a, tf.scalar(s, 'float32')); }
  op_square(a) { return tf.square(a); }
  op_pow(a, e) { return tf.pow(a, tf.scalar(e, 'float32')); }
  op_exp(a) { return tf.exp(a); }
  op_log(a) { return tf.log(a); }
  op_tanh(a) { return tf.tanh(a); }
  op_sigmoid(a) { return tf.sigmoid(a); }
  op_relu(a) { return tf.relu(a); }
  op_abs(a) { return tf.abs(a); }
  op_softplus(a) { return tf.softplus(a); }
  op_matmul(a, b) { return tf.matMul(a, b); }
  op_sum(a) { return tf.sum(a); }
  op_mean(a) { return tf.mean(a); }
  // torch.nn.functional.mse_loss(input, target), reduction mean: tfjs's loss takes (labels, predictions) and
  // divides the sum by the element count (Reduction.SUM_BY_NONZERO_WEIGHTS without weights).
  op_mse_loss(a, b) { return tf.losses.meanSquaredError(b, a); }
  // torch cross_entropy(logits (N, C), class indices (N)), mean over N: tfjs's loss takes one-hot labels (made
  // here as a plain tensor: tf.oneHot refuses depth 1, which a program with one class needs).
  op_cross_entropy(logits, targets) {
    const [n, c] = logits.shape;
    const onehot = new Float32Array(n * c);
    targets.forEach((t, i) => { onehot[i * c + t] = 1; });
    return tf.losses.softmaxCrossEntropy(tf.tensor2d(onehot, [n, c]), logits);
  }
  // torch linear(x, W, b) = x W^T + b with W of shape (out, in).
  op_linear(x, w, b) {
    const y = tf.matMul(x, w, false, true);
    return b !== undefined ? tf.add(y, b) : y;
  }
  // torch embedding(indices, W): the rows of W; repeated rows accumulate in the grad (tf.gather's gradient).
  op_embedding(w, indices) { return tf.gather(w, tf.tensor1d(indices, 'int32')); }

  // ---- the held output (emulated: tfjs computes gradients in the same call as the forward) ----
  forward(loss, noGrad) {
    if (loss.op === 'param') return { kind: 'param', name: loss.name };  // the output is the parameter (SEM-3.8)
    const names = kit.paramsOf(loss);
    // The values the forward read: clones of the variables (a later assign gives the variable new data).
    const at = names.map((n) => tf.clone(this.run.params.get(n)));
    const env = {};
    names.forEach((n, i) => { env[n] = at[i]; });
    let value;
    try {
      value = tf.tidy(() => kit.evaluate(this, loss, (n) => env[n]));
    } catch (e) {
      for (const t of at) t.dispose();
      throw e;
    }
    const requiresGrad = names.length > 0 && !noGrad;
    return { kind: 'expr', expr: loss, names, at, value, requiresGrad, graph: requiresGrad ? graphOf(loss) : null,
      versions: names.map((n) => this.counter(n).version), torchVersions: names.map((n) => this.counter(n).torchVersion) };
  }

  heldOutput(h) {
    if (h.kind === 'param') return { tensor: this.run.params.get(h.name), requiresGrad: true, hasGradFn: false };
    return { tensor: h.value, requiresGrad: h.requiresGrad, hasGradFn: h.requiresGrad };
  }

  release(h) {
    if (h.kind !== 'expr') return;
    h.value.dispose();
    for (const t of h.at) t.dispose();
  }

  backward(h, gradient, retain) {
    const slots = this.run.slots;
    if (h.kind === 'param') {  // a leaf saves nothing: any number of backwards (SEM-3.8)
      const v = this.run.params.get(h.name);
      if (!gradient && v.size !== 1)
        throw new EngineError('nonscalar_backward', 'grad can be implicitly created only for scalar outputs');
      const g = gradient ? tensorOf(gradient, v.shape) : tf.ones(v.shape, 'float32');
      slots.accumulate(h.name, g);
      g.dispose();
      return;
    }
    if (!h.requiresGrad)
      throw new EngineError('no_grad_fn', 'element 0 of tensors does not require grad and does not have a grad_fn');
    if (!gradient && h.value.size !== 1)
      throw new EngineError('nonscalar_backward', 'grad can be implicitly created only for scalar outputs');
    const dy = gradient ? tensorOf(gradient, h.value.shape) : tf.onesLike(h.value);
    try {
      const changed = h.names.some((name, i) => this.counter(name).version !== h.versions[i]);
      const freed = [...h.graph.values()].some((node) => node.freed);
      if (changed || freed) {
        this.backwardNodeByNode(h, dy, retain);
        return;
      }
      // The usual case: tfjs's own autodiff of the whole loss, at the values the forward read.
      const f = (...xs) => {
        const env = {};
        h.names.forEach((name, i) => { env[name] = xs[i]; });
        return kit.evaluate(this, h.expr, (n) => env[n]);
      };
      const grads = tf.grads(f)(h.at, dy);
      h.names.forEach((name, i) => slots.accumulate(name, grads[i]));
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
    h.names.forEach((name, i) => { env[name] = h.at[i]; live[name] = this.run.params.get(name); index[name] = i; });
    const values = new Map();
    const made = tf.tidy(() => { kit.evaluate(this, h.expr, (n) => env[n], values); return [...values.values()]; });
    const temps = made.filter((t) => !h.at.includes(t));
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
          if (a.op === 'param' && saved[i] && this.counter(a.name).torchVersion !== h.torchVersions[index[a.name]])
            throw new EngineError('inplace_modified', 'one of the variables needed for gradient computation has ' +
              'been modified by an inplace operation (' + a.name + ', an Adam step)');
        });
        const inputs = e.args.map((a, i) => ((a.op === 'param' && saved[i]) ? live[a.name] : values.get(a)));
        const wrt = node.req.map((r, i) => (r ? i : -1)).filter((i) => i >= 0);
        const f = (...xs) => kit.applyOp(this, e, inputs.map((x, i) => (wrt.includes(i) ? xs[wrt.indexOf(i)] : x)));
        // One tensor per argument position (mul(p, p) passes p twice: tfjs would give each the sum of both).
        const xs = wrt.map((i) => tf.clone(inputs[i]));
        const gs = tf.grads(f)(xs, g);
        temps.push(...xs, ...gs);
        if (!retain) node.freed = true;
        wrt.forEach((i, j) => {
          const a = e.args[i];
          if (a.op !== 'param') { ready.push({ e: a, g: gs[j] }); return; }
          const sofar = arrived[a.name];
          arrived[a.name] = sofar ? { sum: tf.add(sofar.sum, gs[j]), count: sofar.count + 1 } : { sum: gs[j], count: 1 };
          if (sofar) temps.push(arrived[a.name].sum);
          if (arrived[a.name].count === needed[a.name]) this.run.slots.accumulate(a.name, arrived[a.name].sum);
        });
      }
    } finally {
      for (const t of temps) if (!t.isDisposed) t.dispose();
    }
  }

  // ---- optimizers: tf.train's, over the one group's list ----
  // An optimizer: {tf: the tf.train optimizer, kind, vars: the group's variables in order, nesterov: the nesterov given
  // to an SGD without momentum (tf.train.sgd has no such field)}.
  makeOptimizer(kind, groups, given) {
    const d = kit.resolveOptions(kind, given);  // PyTorch's defaults (eps 1e-8: tfjs's own would be 1e-7)
    const vars = groups.length ? groups[0].params : [];  // `groups: []`: an optimizer over no group
    if (kind === 'sgd') {
      if (d.lr < 0 || d.momentum < 0 || Number.isNaN(d.lr) || Number.isNaN(d.momentum) || (d.nesterov && d.momentum <= 0))
        throw new Unsupported('invalid_options (tf.train does not validate options)');
      const opt = d.momentum !== 0 ? tf.train.momentum(d.lr, d.momentum, d.nesterov) : tf.train.sgd(d.lr);
      return { tf: opt, kind, vars, nesterov: d.nesterov };
    }
    if (!(d.lr >= 0) || !(d.eps >= 0) || !d.betas.every((x) => x >= 0 && x < 1))
      throw new Unsupported('invalid_options (tf.train does not validate options)');
    return { tf: tf.train.adam(d.lr, d.betas[0], d.betas[1], d.eps), kind, vars };
  }

  // tf.train.adam has no way to change its betas: its bias correction keeps running products of them (accBeta1,
  // accBeta2) that a new beta would not recompute. lr and eps are read at every step.
  refuses(program) {
    const o = program.optimizer;
    const changesBetas = program.actions.some((a) => a.action === 'set_options' && 'betas' in (a.options || {}));
    return o && o.type === 'adam' && changesBetas ? 'set_options: adam.betas (tf.train.adam cannot change its betas)' : null;
  }

  step(o) {
    // One entry per parameter of the group, in order; an undefined grad is passed as null, which tfjs's
    // applyGradients skips. (tfjs keys each accumulator by the position in this list, so it must not change.)
    const names = o.vars.map((v) => this.nameOf(v));
    o.tf.applyGradients(o.vars.map((v, i) => ({ name: v.name, tensor: this.run.slots.tensor(names[i]) })));
    for (const name of names) {
      if (!this.run.slots.get(name)) continue;
      const c = this.counter(name);
      c.version++;
      if (o.kind === 'adam') c.torchVersion++;
    }
  }

  setOptions(o, i, c) {
    const opt = o.tf;
    if (o.kind === 'sgd') {
      if ('lr' in c) opt.setLearningRate(c.lr);                        // public API
      if ('nesterov' in c) {
        if (opt.setMomentum) opt.useNesterov = c.nesterov;            // no setter: the field getConfig() reports
        else o.nesterov = c.nesterov;
      }
      if ('momentum' in c) {
        if (opt.setMomentum) {
          opt.setMomentum(c.momentum);                                 // public API
        } else if (c.momentum !== 0) {
          // tf.train.sgd has no momentum (and no state to lose): from now on a tf.train.momentum, whose
          // accumulators start at zero, so that its first step puts the grad itself in the buffer.
          o.tf = tf.train.momentum(opt.learningRate, c.momentum, o.nesterov);
          opt.dispose();
        }
      }
    } else {  // tf.train.adam has no setters: its fields, which applyGradients reads at every step
      if ('lr' in c) opt.learningRate = c.lr;
      if ('eps' in c) opt.epsilon = c.eps;
    }
  }

  paramGroups(o) {
    const c = o.tf.getConfig();
    if (o.kind === 'sgd') {
      return [{ lr: c.learningRate, momentum: c.momentum === undefined ? 0 : c.momentum,
        nesterov: c.useNesterov === undefined ? o.nesterov : !!c.useNesterov }];
    }
    return [{ lr: c.learningRate, betas: [c.beta1, c.beta2], eps: c.epsilon }];
  }

  // The optimizer's own serialisation, once per record: [iter, ...accumulators].
  async snapshot(o) {
    const w = await o.tf.getWeights();
    const iterations = w[0].tensor.dataSync()[0];
    w[0].tensor.dispose();
    const weights = new Map();
    for (const { name, tensor } of w.slice(1)) if (!weights.has(name)) weights.set(name, tensor);
    return { iterations, weights };
  }

  state(o, v, { iterations, weights }) {
    if (o.kind === 'sgd') {
      const buf = weights.get(v.name + '/momentum');
      return buf ? { momentum_buffer: buf } : null;
    }
    const m = weights.get(v.name + '/m'), s = weights.get(v.name + '/v');
    // tfjs counts steps once per optimizer (iterations, and the accumulated beta powers), not per variable: the
    // count its bias correction used for this variable at the last step is the optimizer's.
    return m ? { step: iterations, exp_avg: m, exp_avg_sq: s } : null;
  }

  dispose(run) {
    const o = run.optimizer;
    if (o) {
      o.tf.dispose();
      // MomentumOptimizer.dispose() (tfjs 4.22) leaves the learning-rate scalar of its SGDOptimizer base alive.
      if (o.tf.setMomentum && o.tf.c && !o.tf.c.isDisposed) o.tf.c.dispose();
    }
    for (const v of run.params.values()) v.dispose();
    this.counters = new Map();
  }
}

kit.serve(new Tfjs(), { log: process.env.TFJS_DRIVER_LOG });
