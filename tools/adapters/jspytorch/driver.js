#!/usr/bin/env node
// js-pytorch (npm js-pytorch, "a JavaScript library like PyTorch, built from scratch") as a lockstep driver
// (fixtures/PROTOCOL.md): reads one request per line on stdin, {"id": ID, "program": PROGRAM}, runs the
// program with js-pytorch's own Tensor autograd, .grad accumulation, Tensor.zero_grad / Adam.zero_grad and
// optim.Adam, and writes {"id": ID, "trace": TRACE} on one line of stdout.
//
//   build/lockstep replay --engine 'node tools/adapters/jspytorch/driver.js' \
//       --expectations fixtures/expectations/js-pytorch.json
//   build/lockstep run --engine 'node tools/adapters/jspytorch/driver.js' --count 300 --seed 1 \
//       --expectations fixtures/expectations/js-pytorch.json
//
// What is the library's own (nothing of it is corrected or hidden; tools/adapters/jspytorch/README.md):
//  - parameters are `new torch.Tensor(data, true)`; their grad is the library's `_grad` tensor, observed as it
//    is (js-pytorch gives every requires_grad tensor a zero grad at creation, and every backward and
//    zero_grad replaces the grad tensor by a new one: both show in the trace);
//  - forward: the library's ops (add sub mul div neg pow exp log matmul sum mean at transpose reshape,
//    nn.ReLU, nn.MSELoss, nn.CrossEntropyLoss; square is pow(2), linear is nn.Linear.forward's
//    x.matmul(W).add(b) with the program's (out, in) weight transposed, embedding is nn.Embedding's E.at(rows),
//    a 2-D sum or mean reshapes to 1-D first); backward: Tensor.backward(gradient) of the held output (the
//    library has no retain_graph: its graph is never freed);
//  - float64 only: JS numbers are doubles and js-pytorch has no float32 (the hello declares float64);
//  - Adam: torch.optim.Adam(params, lr, reg, betas, eps), its own step() and zero_grad(); its state is the
//    `m` and `v` tensors it keeps on each parameter (reported as exp_avg, exp_avg_sq) and it keeps no step
//    count (so the trace has no `step`). AdamW is the same class with `reg` = weight_decay: probing shows that
//    `reg` is decoupled weight decay (p -= lr * reg * p beside the update), AdamW's form, not Adam's L2 term.
//  - options a program leaves out are left to the library's defaults (Adam: betas [0.9, 0.99], eps 1e-9).
// What the adapter emulates because the library has no counterpart (declared in the hello as "emulated"):
//  - SGD (the library has none): plain SGD with lr only, p._data = p.add(p._grad.mul(-lr))._data, the way
//    the library's own Adam.step writes a parameter; zero_grad of an SGD program calls each parameter's own
//    Tensor.zero_grad(), which is what Adam.zero_grad does;
//  - 0-d tensors: the library represents a scalar as a 1-element tensor of shape [1]; the adapter reports
//    the program's shape [] for such values (values are never changed);
//  - the bookkeeping of the protocol: the held output, grad handles, error kinds, a no_optimizer /
//    no_output / no_such_group error where the library has no such call at all.
'use strict';

// Keep stdout for answers only: anything the library logs goes to stderr.
for (const k of ['log', 'info', 'warn', 'debug', 'trace']) {
  console[k] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}
const fs = require('fs');
const path = require('path');
const readline = require('readline');

const { torch } = require('js-pytorch');
const { Tensor } = torch;

const LIB_VERSION = (() => {
  const entry = require.resolve('js-pytorch');  // .../node_modules/js-pytorch/dist/index.cjs
  return JSON.parse(fs.readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')).version;
})();

const OPS = ['add', 'sub', 'mul', 'div', 'neg', 'mul_scalar', 'square', 'pow', 'exp', 'log', 'relu', 'matmul',
             'sum', 'mean', 'mse_loss', 'cross_entropy', 'linear', 'embedding'];
const FEATURES = ['retain_graph', 'explicit_gradient', 'zero_grad', 'zero_grad_default', 'hold_grad', 'set_options',
                  'special_values'];

function hello() {
  return {
    name: 'js-pytorch', version: LIB_VERSION, protocol: 1, language: 'javascript',
    defaults: { zero_grad: 'zero' },
    supports: {
      dtypes: ['float64'],
      ops: OPS,
      optimizers: { sgd: ['lr'], adam: ['lr', 'betas', 'eps'], adamw: ['lr', 'betas', 'eps', 'weight_decay'] },
      features: FEATURES,
    },
    emulated: ['sgd: plain SGD (lr only) written by the adapter, the library has no SGD',
               '0-d shapes: the library holds a scalar as shape [1]; reported as []'],
  };
}

// ---- numbers and JSON (PROTOCOL.md §5) ---------------------------------------------------------------------

function num(v) {
  if (typeof v === 'string') {
    if (v === 'NaN') return NaN;
    if (v === 'Infinity') return Infinity;
    if (v === '-Infinity') return -Infinity;
    throw new Error('bad number ' + v);
  }
  return Number(v);
}

function numText(x) {
  if (Number.isNaN(x)) return '"NaN"';
  if (x === Infinity) return '"Infinity"';
  if (x === -Infinity) return '"-Infinity"';
  if (Object.is(x, -0)) return '-0.0';
  return String(x);  // shortest round trip
}

function dump(v) {
  if (typeof v === 'number') return numText(v);
  if (typeof v === 'string' || typeof v === 'boolean' || v === null) return JSON.stringify(v);
  if (Array.isArray(v)) return '[' + v.map(dump).join(',') + ']';
  const parts = [];
  for (const k of Object.keys(v)) if (v[k] !== undefined) parts.push(JSON.stringify(k) + ':' + dump(v[k]));
  return '{' + parts.join(',') + '}';
}

// ---- tensors ------------------------------------------------------------------------------------------------

const numel = (shape) => shape.reduce((a, b) => a * b, 1);

// Row-major values to the nested arrays the library takes; a 0-d value is the library's scalar, [v].
function nest(values, shape) {
  const v = values.map(num);
  if (shape.length === 0) return [v[0]];
  if (shape.length === 1) return v;
  const rows = [];
  for (let i = 0; i < shape[0]; i++) rows.push(v.slice(i * shape[1], (i + 1) * shape[1]));
  return rows;
}

function flat(data) {
  if (Array.isArray(data)) return data.flat(Infinity);
  return [data];
}

class EngineError extends Error {
  constructor(kind, message) { super(message); this.kind = kind; }
}
class Unsupported extends Error {}

function classify(message) {
  if (message.includes('requires_grad set to False')) return 'no_grad_fn';
  return 'other';
}

// ---- static checks: what the hello does not declare is answered `unsupported` -------------------------------

const ADAM_KEYS = ['lr', 'betas', 'eps', 'weight_decay', 'amsgrad'];
const SGD_KEYS = ['lr', 'momentum', 'dampening', 'weight_decay', 'nesterov'];

function exprDtypeCheck(e, params) {
  // Returns the dtype of e (program_json.h: an untyped constant takes a typed sibling's dtype, else float32).
  const op = e.op;
  if (op === 'param') return params[e.name].dtype;
  if (op === 'const') return e.dtype || null;
  if (!OPS.includes(op)) throw new Unsupported('op:' + op);
  const dts = e.args.map((a) => exprDtypeCheck(a, params));
  const typed = dts.filter((d) => d);
  dts.forEach((d, i) => {
    if (!d && e.args[i].op === 'const' && (typed.length ? typed[0] : 'float32') === 'float32')
      throw new Unsupported('float32');
  });
  for (const d of typed) if (d !== 'float64') throw new Unsupported(d);
  return typed.length ? typed[0] : 'float64';
}

function checkOptions(kind, o) {
  if (!o) return;
  if (kind === 'sgd') {
    for (const k of ['momentum', 'dampening', 'weight_decay']) if (o[k] !== undefined && num(o[k]) !== 0)
      throw new Unsupported('sgd.' + k);
    if (o.nesterov) throw new Unsupported('sgd.nesterov');
  } else {
    if (o.amsgrad) throw new Unsupported(kind + '.amsgrad');
    if (kind === 'adam' && o.weight_decay !== undefined && num(o.weight_decay) !== 0)
      throw new Unsupported('adam.weight_decay');
  }
}

function staticCheck(program) {
  const params = {};
  for (const p of program.params) {
    if (p.dtype !== 'float64') throw new Unsupported(p.dtype);
    params[p.name] = p;
  }
  const exprs = [];
  if (program.loss) exprs.push(program.loss);
  const opt = program.optimizer;
  if (opt) {
    if (!['sgd', 'adam', 'adamw'].includes(opt.type)) throw new Unsupported('optimizer ' + opt.type);
    if (opt.groups) {
      if (opt.groups.length > 1 || (opt.groups.length === 1 && opt.groups[0].options))
        throw new Unsupported('param_groups');
    }
    checkOptions(opt.type, opt.defaults);
  }
  for (const a of program.actions) {
    if (a.action === 'forward') {
      if (a.no_grad) throw new Unsupported('no_grad');
      if (a.loss) exprs.push(a.loss);
    } else if (a.action === 'backward') {
      if (a.create_graph) throw new Unsupported('create_graph');
    } else if (a.action === 'zero_grad') {
      if (a.set_to_none === true) throw new Unsupported('set_to_none');
    } else if (a.action === 'set_grad_none') {
      throw new Unsupported('set_grad_none');
    } else if (a.action === 'add_param_group') {
      throw new Unsupported('add_param_group');
    } else if (a.action === 'set_options') {
      if (opt) checkOptions(opt.type, a.options);
    }
  }
  for (const e of exprs) exprDtypeCheck(e, params);
}

// ---- the engine ---------------------------------------------------------------------------------------------

class Engine {
  constructor(program) {
    this.program = program;
    this.params = new Map();   // name -> Tensor
    this.specs = new Map();    // name -> spec
    this.order = [];
    this.previousGrad = new Map();
    this.handles = [];         // [name, Tensor | null]
    this.kind = null;
    this.adam = null;          // torch.optim.Adam
    this.sgd = null;           // emulated: {params: [Tensor], lr}
    this.groupCount = 0;       // the program's groups: 1, or 0 for `groups: []`
    this.output = null;        // {t, shape}
  }

  setup() {
    for (const p of this.program.params) {
      const t = new Tensor(nest(p.values, p.shape), true);
      this.params.set(p.name, t);
      this.specs.set(p.name, p);
      this.order.push(p.name);
      this.previousGrad.set(p.name, undefined);
    }
    const spec = this.program.optimizer;
    if (!spec) return;
    // One parameter list, the library's; `groups: []` (no group at all) is an empty list reported as no group.
    const names = spec.params || (spec.groups.length ? spec.groups[0].params : []);
    this.groupCount = spec.params || spec.groups.length ? 1 : 0;
    const list = names.map((n) => this.params.get(n));
    const d = spec.defaults || {};
    this.kind = spec.type;
    for (const k of Object.keys(d)) {
      const allowed = spec.type === 'sgd' ? SGD_KEYS : ADAM_KEYS;
      if (!allowed.includes(k)) throw new EngineError('invalid_option', `${k} is not an option of ${spec.type}`);
    }
    if (spec.type === 'sgd') {
      if (d.lr === undefined) throw new EngineError('invalid_option', 'SGD needs lr (no default)');
      this.sgd = { params: list, lr: num(d.lr) };
      return;
    }
    // js-pytorch's Adam(params, lr = 1e-3, reg = 0, betas = [0.9, 0.99], eps = 1e-9); undefined takes its default.
    const lr = d.lr === undefined ? undefined : num(d.lr);
    const betas = d.betas === undefined ? undefined : d.betas.map(num);
    const eps = d.eps === undefined ? undefined : num(d.eps);
    let reg;
    if (spec.type === 'adamw') reg = d.weight_decay === undefined ? 1e-2 : num(d.weight_decay);  // AdamW's default
    else reg = d.weight_decay === undefined ? undefined : num(d.weight_decay);                    // 0 (checked)
    this.adam = new torch.optim.Adam(list, lr, reg, betas, eps);
  }

  // Evaluates an expression with the library's ops: {t: Tensor, shape: the program's shape}.
  eval(e) {
    const op = e.op;
    if (op === 'param') return { t: this.params.get(e.name), shape: this.specs.get(e.name).shape };
    if (op === 'const') return { t: new Tensor(nest(e.values, e.shape), false), shape: e.shape };
    const args = e.args.map((a) => this.eval(a));
    const [a, b] = args;
    const wider = () => (a.shape.length >= (b ? b.shape.length : 0) ? a.shape : b.shape);
    // js-pytorch's add/sub/mul/div throw on a one-element operand against a larger one ('Given arguments cannot be
    // added.'): a missing feature, answered unsupported rather than recorded as an error lockstep would compare.
    const numel = (s) => s.reduce((x, y) => x * y, 1);
    if (['add', 'sub', 'mul', 'div'].includes(op) && numel(a.shape) !== numel(b.shape))
      throw new Unsupported('broadcast (js-pytorch cannot broadcast a one-element tensor)');
    switch (op) {
      case 'add': return { t: a.t.add(b.t), shape: wider() };
      case 'sub': return { t: a.t.sub(b.t), shape: wider() };
      case 'mul': return { t: a.t.mul(b.t), shape: wider() };
      case 'div': return { t: a.t.div(b.t), shape: wider() };
      case 'neg': return { t: a.t.neg(), shape: a.shape };
      case 'mul_scalar': return { t: a.t.mul(num(e.scalar)), shape: a.shape };
      case 'square': return { t: a.t.pow(2), shape: a.shape };
      case 'pow': return { t: a.t.pow(num(e.exponent)), shape: a.shape };
      case 'exp': return { t: a.t.exp(), shape: a.shape };
      case 'log': return { t: a.t.log(), shape: a.shape };
      case 'relu': return { t: new torch.nn.ReLU().forward(a.t), shape: a.shape };
      case 'matmul': return { t: a.t.matmul(b.t), shape: [a.shape[0], b.shape[1]] };
      case 'sum': return { t: (a.shape.length === 2 ? a.t.reshape([numel(a.shape)]) : a.t).sum(), shape: [] };
      case 'mean': return { t: (a.shape.length === 2 ? a.t.reshape([numel(a.shape)]) : a.t).mean(), shape: [] };
      case 'mse_loss': return { t: new torch.nn.MSELoss().forward(a.t, b.t), shape: [] };
      case 'cross_entropy':
        return { t: new torch.nn.CrossEntropyLoss().forward(a.t, new Tensor(e.targets.slice())), shape: [] };
      case 'linear': {  // nn.Linear.forward's ops (x.matmul(W).add(b)) with the program's (out, in) weight transposed
        const w = b;
        let t = a.t.matmul(w.t.transpose(0, 1));
        if (args.length > 2) t = t.add(args[2].t);
        return { t, shape: [a.shape[0], w.shape[0]] };
      }
      case 'embedding': {  // nn.Embedding.forward's op: E.at(indices)
        return { t: a.t.at(e.indices.slice()), shape: [e.indices.length, a.shape[1]] };
      }
      default: throw new EngineError('other', `unknown op '${op}'`);
    }
  }

  requireOptimizer(what) {
    if (!this.adam && !this.sgd) throw new EngineError('no_optimizer', what + ' without an optimizer');
  }

  run(action) {
    switch (action.action) {
      case 'forward': {
        const loss = action.loss || this.program.loss;
        if (!loss) throw new EngineError('other', 'forward without a loss expression');
        this.output = this.eval(loss);
        return;
      }
      case 'backward': {
        if (!this.output) throw new EngineError('no_output', 'backward before any forward');
        const out = this.output.t;
        // retain_graph is not an argument of js-pytorch's backward: its graph is never freed.
        if (action.gradient !== undefined) {
          // The gradient in the library's shape of the output (a scalar is [1] there).
          if (action.gradient.length !== flat(out._data).length)
            throw new EngineError('gradient_shape', `explicit gradient has ${action.gradient.length} values but the ` +
                                  `output has ${flat(out._data).length} elements`);
          const g = new Tensor(torch._reshape(action.gradient.map(num), libShape(out)), false);
          out.backward(g);
        } else {
          out.backward();
        }
        return;
      }
      case 'zero_grad': {
        this.requireOptimizer('zero_grad');
        if (this.adam) this.adam.zero_grad();                 // the library's Adam.zero_grad
        else for (const p of this.sgd.params) p.zero_grad();  // what Adam.zero_grad does, per parameter
        return;
      }
      case 'hold_grad': {
        const g = this.params.get(action.param)._grad;
        const held = g instanceof Tensor ? g : null;
        const h = this.handles.find((x) => x[0] === action.handle);
        if (h) h[1] = held; else this.handles.push([action.handle, held]);
        return;
      }
      case 'step': {
        this.requireOptimizer('step');
        if (this.adam) { this.adam.step(); return; }
        for (const p of this.sgd.params) {  // emulated plain SGD: p = p - lr * grad
          p._data = p.add(p._grad.mul(-this.sgd.lr))._data;
        }
        return;
      }
      case 'set_options': {
        this.requireOptimizer('set_options');
        const i = action.group === undefined ? 0 : action.group;
        if (i >= this.groupCount)
          throw new EngineError('no_such_group', `no param group ${i} (there are ${this.groupCount})`);
        const o = action.options || {};
        const allowed = this.kind === 'sgd' ? SGD_KEYS : ADAM_KEYS;
        for (const k of Object.keys(o)) if (!allowed.includes(k))
          throw new EngineError('invalid_option', `${k} is not an option of ${this.kind}`);
        if (this.sgd) { if (o.lr !== undefined) this.sgd.lr = num(o.lr); return; }
        if (o.lr !== undefined) this.adam.lr = num(o.lr);
        if (o.betas !== undefined) { this.adam.b1 = num(o.betas[0]); this.adam.b2 = num(o.betas[1]); }
        if (o.eps !== undefined) this.adam.eps = num(o.eps);
        if (o.weight_decay !== undefined) this.adam.reg = num(o.weight_decay);
        return;
      }
      default:
        throw new Unsupported(`action ${action.action}`);
    }
  }

  // ---- observation (SEMANTICS §8, PROTOCOL.md §4) ----
  tensorShape(t, shape) {
    // The program's shape when the library's tensor holds that many values, else the library's own shape.
    return flat(t._data).length === numel(shape) ? shape : libShape(t);
  }

  observe() {
    const params = {};
    for (const name of this.order) {
      const p = this.params.get(name);
      const spec = this.specs.get(name);
      const obs = { dtype: 'float64', shape: this.tensorShape(p, spec.shape), values: flat(p._data) };
      const g = p._grad;
      if (!(g instanceof Tensor)) {
        obs.grad = { defined: false };
      } else {
        obs.grad = { defined: true };
        const shape = this.tensorShape(g, spec.shape);
        if (shape !== spec.shape) obs.grad.shape = shape;
        obs.grad.values = flat(g._data);
        obs.grad.requires_grad = !!g.requires_grad;
        obs.grad.has_grad_fn = !!g.requires_grad && g.operation != null;
        obs.grad.same_as_previous = g === this.previousGrad.get(name);
      }
      this.previousGrad.set(name, g instanceof Tensor ? g : undefined);
      obs.state = {};
      if (this.adam && p.m instanceof Tensor && p.v instanceof Tensor) {
        // js-pytorch keeps Adam's moments on the tensor (m, v), created by the constructor; no step count.
        obs.state = { exp_avg: flat(p.m._data), exp_avg_sq: flat(p.v._data) };
      }
      params[name] = obs;
    }
    const handles = {};
    for (const [name, t] of this.handles) {
      if (!t) { handles[name] = { defined: false }; continue; }
      const owner = this.handleOwner(name);
      handles[name] = { defined: true, dtype: 'float64', shape: this.tensorShape(t, owner ? owner.shape : libShape(t)),
                        values: flat(t._data) };
    }
    const groups = [];
    const nameOf = (t) => { for (const [n, q] of this.params) if (q === t) return n; return '?'; };
    if (this.adam && this.groupCount) {
      groups.push({ params: this.adam.params.map(nameOf),
                    options: { lr: this.adam.lr, betas: [this.adam.b1, this.adam.b2], eps: this.adam.eps,
                               weight_decay: this.adam.reg, amsgrad: false } });
    } else if (this.sgd && this.groupCount) {
      groups.push({ params: this.sgd.params.map(nameOf),
                    options: { lr: this.sgd.lr, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false } });
    }
    const rec = { params, handles, groups };
    if (this.output) {
      const t = this.output.t;
      rec.output = { dtype: 'float64', shape: this.tensorShape(t, this.output.shape), values: flat(t._data),
                     requires_grad: !!t.requires_grad, has_grad_fn: !!t.requires_grad && t.operation != null };
    }
    return rec;
  }

  handleOwner(handle) {
    for (const a of this.program.actions)
      if (a.action === 'hold_grad' && a.handle === handle) return this.specs.get(a.param);
    return null;
  }
}

function libShape(t) {
  return Array.isArray(t.shape) ? t.shape.slice() : [];
}

function guarded(body) {
  try {
    body();
    return null;
  } catch (e) {
    if (e instanceof Unsupported) throw e;
    if (e instanceof EngineError) return { kind: e.kind, message: e.message };
    const message = (e && e.message) ? String(e.message) : String(e);
    return { kind: classify(message), message: 'js-pytorch: ' + message };
  }
}

function runProgram(program) {
  try {
    staticCheck(program);
  } catch (e) {
    if (e instanceof Unsupported) return { unsupported: e.message };
    throw e;
  }
  try {
    return runChecked(program);
  } catch (e) {
    if (e instanceof Unsupported) return { unsupported: e.message };  // found while running (broadcast)
    throw e;
  }
}

function runChecked(program) {
  const engine = new Engine(program);
  const trace = { engine: 'js-pytorch-' + LIB_VERSION };
  const init = { action: 'init' };
  let error = guarded(() => engine.setup());
  if (error) { init.error = error; engine.adam = null; engine.sgd = null; }
  Object.assign(init, engine.observe());
  trace.init = init;
  trace.records = [];
  for (const action of program.actions) {
    const rec = { action: action.action };
    error = guarded(() => engine.run(action));
    if (error) rec.error = error;
    Object.assign(rec, engine.observe());
    trace.records.push(rec);
  }
  return { trace };
}

function main() {
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  rl.on('line', (line) => {
    line = line.trim();
    if (!line) return;
    const request = JSON.parse(line);
    let answer;
    if (request.hello !== undefined) {
      answer = { id: request.id === undefined ? 'lockstep-hello' : request.id, hello: hello() };
    } else {
      answer = Object.assign({ id: request.id }, runProgram(request.program));
    }
    process.stdout.write(dump(answer) + '\n');
  });
  // End of input: return without process.exit, so that Node writes out whatever stdout still holds, then exits.
  rl.on('close', () => { process.exitCode = 0; });
}

main();
