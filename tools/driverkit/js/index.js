// lockstep driver kit for JavaScript: everything a lockstep driver does that is not framework-specific.
//
// A *driver* (fixtures/PROTOCOL.md) wraps a framework for lockstep: it reads one JSON request per line on stdin, runs
// the training program it holds and answers one line on stdout with the trace (what the framework observed after
// every action). This module is the protocol loop, the hello, the number encoding, the program interpreter, the
// records and the error kinds. You write one class, a `Framework`, that says how your framework creates a tensor,
// runs an op, a backward and an optimizer step; the kit does the rest and answers `unsupported` for what your class
// does not implement. Node >= 20, standard library only, CommonJS. The interface mirrors the Python kit's
// (tools/driverkit/python/lockstep_driverkit.py) in camelCase; README.md in this folder documents it with a complete
// example (examples/tiny_autograd_driver.js).
//
//   const kit = require('path/to/tools/driverkit/js');   // first: it sends console.* to stderr
//   const mf = require('myframework');
//   class MyFramework extends kit.Framework { ... }
//   kit.serve(new MyFramework());
'use strict';

// Keep stdout for answers only: frameworks log with console.* (tfjs prints a banner), and a stray line on stdout puts
// the driver out of step with lockstep. Done when the kit is loaded, so require the kit before the framework.
for (const k of ['log', 'info', 'warn', 'debug', 'error', 'trace']) {
  console[k] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}
const fs = require('fs');
const readline = require('readline');

// ---- errors (PROTOCOL §4) --------------------------------------------------------------------------------------

const KINDS = ['invalid_option', 'backward_through_freed_graph', 'no_grad_fn', 'nonscalar_backward',
  'non_leaf_parameter', 'duplicate_parameter', 'inplace_modified', 'gradient_shape', 'no_optimizer', 'no_output',
  'no_such_group', 'nonfinite_norm', 'state_dict_mismatch', 'other'];

// An action failed with one of the error kinds of PROTOCOL §4: recorded in that action's record, the program goes on.
class EngineError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

// The framework lacks something this program needs: the answer is {"unsupported": message} (a skip, not a failure).
class Unsupported extends Error {}

// ---- numbers (PROTOCOL §5) ---------------------------------------------------------------------------------------

const SPECIAL_IN = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity };

// A JSON number or "NaN"/"Infinity"/"-Infinity" -> a JS number (-0.0 stays -0: JSON.parse keeps it).
function numberIn(v) {
  if (typeof v === 'string') {
    if (!(v in SPECIAL_IN)) throw new Error('not a number: ' + v);
    return SPECIAL_IN[v];
  }
  return typeof v === 'number' ? v : Number(v);
}

// A JS number as PROTOCOL §5 writes it: the strings for NaN and the infinities, -0.0 kept (JSON.stringify(-0) is
// "0", which would lose the sign), otherwise the shortest round trip (String).
function numberText(x) {
  if (Number.isNaN(x)) return '"NaN"';
  if (x === Infinity) return '"Infinity"';
  if (x === -Infinity) return '"-Infinity"';
  if (Object.is(x, -0)) return '-0.0';
  return String(x);
}

// JSON text of a value with numbers written by numberText (typed arrays as arrays; undefined fields left out).
function toJson(v) {
  if (typeof v === 'number') return numberText(v);
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return '[' + Array.from(v, toJson).join(',') + ']';
  return '{' + Object.keys(v).filter((k) => v[k] !== undefined)
    .map((k) => JSON.stringify(k) + ':' + toJson(v[k])).join(',') + '}';
}

const numel = (shape) => shape.reduce((a, b) => a * b, 1);
const sameShape = (a, b) => a.length === b.length && a.every((d, i) => d === b[i]);

// ---- the grammar (fixtures/README.md "Programs", conformance/program/optimizer_*.cc) -----------------------------

const OPS = ['add', 'sub', 'mul', 'div', 'neg', 'mul_scalar', 'square', 'pow', 'exp', 'log', 'tanh', 'sigmoid', 'relu',
  'abs', 'softplus', 'matmul', 'sum', 'mean', 'mse_loss', 'cross_entropy', 'linear', 'embedding'];
// The non-tensor argument an op takes after its tensors.
const OP_EXTRAS = { mul_scalar: (e) => numberIn(e.scalar), pow: (e) => numberIn(e.exponent),
  cross_entropy: (e) => e.targets.slice(), embedding: (e) => e.indices.slice() };

// Each kind's options and the option type's defaults (null: SGD's lr has none). Any other option is foreign to it.
// maximize (SEMANTICS §20): the step negates the gradient first; a framework honours it only by declaring it.
const OPTION_DEFAULTS = {
  sgd: { lr: null, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false, maximize: false },
  adam: { lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weight_decay: 0, amsgrad: false, maximize: false },
  adamw: { lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weight_decay: 1e-2, amsgrad: false, maximize: false },
  rmsprop: { lr: 1e-2, alpha: 0.99, eps: 1e-8, weight_decay: 0, momentum: 0, centered: false, maximize: false },
  adagrad: { lr: 1e-2, lr_decay: 0, weight_decay: 0, initial_accumulator_value: 0, eps: 1e-10, maximize: false },
};
const FIELDS = Object.fromEntries(Object.entries(OPTION_DEFAULTS).map(([k, o]) => [k, Object.keys(o)]));
const FLAGS = ['nesterov', 'amsgrad', 'centered', 'maximize'];
// Flags a group's traced "options" carry only when true (SEMANTICS §20): traces without them stay as they were.
const TRACED_ONLY_WHEN_TRUE = ['maximize'];
const STATE_TENSORS = ['momentum_buffer', 'exp_avg', 'exp_avg_sq', 'max_exp_avg_sq', 'square_avg', 'grad_avg', 'sum'];
const FEATURES = ['retain_graph', 'create_graph', 'no_grad', 'explicit_gradient', 'zero_grad', 'set_to_none',
  'zero_grad_default', 'set_grad_none', 'hold_grad', 'param_groups', 'add_param_group', 'set_options',
  'special_values', 'invalid_options'];
// The methods a feature needs, any one of them (SEMANTICS §13); the optimizer features need makeOptimizer as well.
// 'gradSlots' is the kit's emulation of .grad slots (GradSlots below), 'forward' a framework's own forward.
const FEATURE_NEEDS = { retain_graph: ['backward'], create_graph: ['backward'], explicit_gradient: ['backward'],
  no_grad: ['noGrad', 'forward'], zero_grad: ['zeroGrad', 'gradSlots'], set_to_none: ['zeroGrad', 'gradSlots'],
  zero_grad_default: ['zeroGrad', 'gradSlots'], set_grad_none: ['setGradNone', 'gradSlots'],
  add_param_group: ['addParamGroup'] };
const OPTIMIZER_FEATURES = ['zero_grad', 'set_to_none', 'zero_grad_default', 'param_groups', 'add_param_group',
  'set_options', 'invalid_options'];

// A program's options -> JS values: betas an array of numbers, flags booleans, the rest numbers ("comment" dropped).
function optionsIn(options) {
  const out = {};
  for (const [k, v] of Object.entries(options || {})) {
    if (k === 'comment') continue;
    if (k === 'betas') out[k] = [numberIn(v[0]), numberIn(v[1])];
    else if (FLAGS.includes(k)) out[k] = !!v;
    else out[k] = numberIn(v);
  }
  return out;
}

// Every option of `kind`: the option type's defaults under what `given` sets.
function resolveOptions(kind, given) {
  return Object.assign({}, OPTION_DEFAULTS[kind], given);
}

// lockstep's rule (PROTOCOL §4, SEM-7.1, LibTorch 1.13): a group with options of its own takes the option type's
// defaults for what it does not set; a group without options copies the optimizer's defaults.
// A group the program gave "options" (even {}) carries hasOptions (not enumerable: frameworks see only the options).
function resolveGroup(kind, group, defaults) {
  const own = Object.assign({}, group);
  delete own.params;
  const hasOptions = group.hasOptions !== undefined ? group.hasOptions : Object.keys(own).length > 0;
  return resolveOptions(kind, hasOptions ? own : defaults);
}

function isDefault(kind, option, value) {
  const d = OPTION_DEFAULTS[kind][option];
  if (option === 'betas') return d !== null && numberIn(value[0]) === d[0] && numberIn(value[1]) === d[1];
  if (FLAGS.includes(option)) return !!value === d;
  return d !== null && numberIn(value) === d;
}

function checkFields(kind, options, where) {
  const foreign = Object.keys(options).filter((k) => !FIELDS[kind].includes(k));
  if (foreign.length) {
    throw new EngineError('invalid_option', `${where}: ${foreign.join(', ')} is not an option of ${kind}`);
  }
}

// ---- expressions -------------------------------------------------------------------------------------------------

function* walk(e) {
  yield e;
  for (const a of e.args || []) yield* walk(a);
}

// The parameters an expression reads, in first-use order.
function paramsOf(e) {
  const out = [];
  for (const x of walk(e)) if (x.op === 'param' && !out.includes(x.name)) out.push(x.name);
  return out;
}

// The shape the program gives an expression (specs: parameter name -> its spec); ops as in torch.
function shapeOf(e, specs) {
  if (e.op === 'param') return specs.get(e.name).shape;
  if (e.op === 'const') return e.shape;
  const s = e.args.map((a) => shapeOf(a, specs));
  switch (e.op) {
    case 'add': case 'sub': case 'mul': case 'div': return s[0].length >= s[1].length ? s[0] : s[1];  // 0-d broadcasts
    case 'matmul': return [s[0][0], s[1][1]];
    case 'sum': case 'mean': case 'mse_loss': case 'cross_entropy': return [];
    case 'linear': return [s[0][0], s[1][0]];
    case 'embedding': return [e.indices.length, s[0][1]];
    default: return s[0];  // element-wise
  }
}

// The dtype an expression has (program_json.h: an untyped constant takes a typed sibling's dtype, else float32).
function dtypeOf(e, specs, inherited) {
  if (e.op === 'param') return specs.get(e.name).dtype;
  if (e.op === 'const') return e.dtype || inherited || 'float32';
  const typed = e.args.filter((a) => !(a.op === 'const' && !a.dtype)).map((a) => dtypeOf(a, specs));
  return typed.length ? typed[0] : 'float32';
}

const untypedConst = (a) => a.op === 'const' && !a.dtype;

// Evaluates `e` with the framework's op_NAME methods; lookup(name) is a parameter's tensor, `values` (a Map,
// optional) receives every node's value. Typed arguments first, then untyped constants with a sibling's dtype.
function evaluate(fw, e, lookup, values) {
  let v;
  if (e.op === 'param') {
    v = lookup(e.name);
  } else if (e.op === 'const') {
    v = fw.constant(e.values.map(numberIn), e.dtype || 'float32', e.shape);
  } else {
    const args = e.args.map((a) => (untypedConst(a) ? null : evaluate(fw, a, lookup, values)));
    const typed = args.filter((a) => a !== null);
    e.args.forEach((a, i) => {
      if (args[i] !== null) return;
      args[i] = fw.constant(a.values.map(numberIn), typed.length ? fw.dtype(typed[0]) : 'float32', a.shape);
      if (values) values.set(a, args[i]);
    });
    v = applyOp(fw, e, args);
  }
  if (values) values.set(e, v);
  return v;
}

// One op of the grammar on evaluated arguments: fw.op_NAME(...tensors, extra).
function applyOp(fw, e, args) {
  if (!OPS.includes(e.op)) throw new EngineError('other', `unknown op '${e.op}'`);
  if (!fw.has('op_' + e.op)) throw new Unsupported('op:' + e.op);
  const extra = OP_EXTRAS[e.op];
  return fw['op_' + e.op](...args, ...(extra ? [extra(e)] : []));
}

// ---- emulated .grad slots ------------------------------------------------------------------------------------------
// For a framework whose tensors have no .grad (tfjs: gradients are what tf.grads returns): the kit keeps a slot per
// parameter, undefined or a cell holding a tensor, with PyTorch's rules. The framework opts in by setting
// `gradSlots = {clone, add, zerosLike, dispose}` (its tensor functions) and calls run.slots.accumulate(name, g) in
// its backward; grad.same_as_previous is then cell identity, a held grad holds the cell, grads never require grad.
class GradSlots {
  constructor(ops) {
    this.ops = ops;
    this.cells = new Map();  // parameter name -> {tensor}
    this.made = [];          // every cell ever made, for disposal
  }

  get(name) { return this.cells.get(name) || null; }
  tensor(name) { const c = this.get(name); return c ? c.tensor : null; }

  // SEM-3.1 / 3.2: a first contribution makes a new grad (a copy); a later one is added in place (the same cell).
  accumulate(name, g) {
    const c = this.get(name);
    if (!c) {
      const cell = { tensor: this.ops.clone(g) };
      this.made.push(cell);
      this.cells.set(name, cell);
    } else {
      const old = c.tensor;
      c.tensor = this.ops.add(old, g);
      this.ops.dispose(old);
    }
  }

  // SEM-4.1: zeroed in place (same cell); SEM-4.2: set to none (a held handle keeps the old cell).
  zero(names, setToNone) {
    for (const name of new Set(names)) {
      const c = this.get(name);
      if (!c) continue;
      if (setToNone) {
        this.cells.delete(name);
      } else {
        const old = c.tensor;
        c.tensor = this.ops.zerosLike(old);
        this.ops.dispose(old);
      }
    }
  }

  setNone(name) { this.cells.delete(name); }
  dispose() { for (const c of this.made) this.ops.dispose(c.tensor); }
}

// ---- the framework interface ---------------------------------------------------------------------------------------

// Extend and override what your framework has (README.md lists every method). Tensors are the framework's own
// objects; values are row-major arrays of JS numbers; dtypes "float32"/"float64"; shapes arrays ([] for 0-d).
class Framework {
  constructor() {
    this.name = null;            // the hello's name (not empty)
    this.version = '0';
    this.language = 'javascript';
    this.engine = null;          // the trace's "engine" (default NAME-VERSION)
    this.apiProfile = null;      // a profile of fixtures/profiles/ (SEMANTICS §11)
    this.pytorchVersion = null;  // the PyTorch whose defaults it follows (SEM-12.1)
    this.defaults = null;        // e.g. {zero_grad: 'none'}: what zero_grad() without set_to_none does
    this.helloFields = {};       // further hello fields (kept by lockstep), e.g. {backend: 'cpu'}
    this.emulated = [];          // what the driver does where the framework has no counterpart (PROTOCOL 2a)
    this.observes = ['param.same_as_previous'];  // optional trace fields reported (PROTOCOL 4a); the kit computes them
    this.dtypes = ['float32', 'float64'];
    this.optimizers = null;      // {kind: [options honoured]}; null: every kind and option (with makeOptimizer)
    this.lacks = [];             // features it lacks although their methods exist (e.g. 'create_graph')
    this.gradSlots = null;       // {clone, add, zerosLike, dispose}: the kit emulates .grad slots (GradSlots)
    this.run = null;             // the Run in progress (set by the kit before each program)
  }

  // tensors
  parameter(values, dtype, shape) { throw new Error('parameter() not implemented'); }
  constant(values, dtype, shape) { throw new Error('constant() not implemented'); }
  toList(t) { throw new Error('toList() not implemented'); }
  dtype(t) { throw new Error('dtype() not implemented'); }
  // programShape: the shape the program gives t (for a framework without 0-d tensors, say); report t's own.
  shape(t, programShape) { throw new Error('shape() not implemented'); }
  requiresGrad(t) { return false; }
  hasGradFn(t) { return false; }
  identity(t) { return t; }      // equal for the same tensor object: grad.same_as_previous (SEM-1.1)

  // Optional, all of them (the kit does without):
  //  ready()                        async set-up before the hello is answered (PROTOCOL 2a)
  //  op_NAME(...tensors, extra)     one per op of the grammar (OPS); missing: a program using it is "op:NAME"
  //  forward(loss, noGrad)          a forward of your own (default: the ops, under noGrad(fn)): returns a held
  //                                 output, described by heldOutput(held) -> {tensor, requiresGrad, hasGradFn}
  //                                 and freed by release(held) once another forward replaced it
  //  noGrad(fn)                     runs fn with grad mode off, returns its result ("no_grad")
  //  backward(output, gradient, retainGraph, createGraph)   gradient: row-major numbers, or null
  //  grad(param)                    the grad tensor or null (not with gradSlots)
  //  setGradNone(param)             "set_grad_none" (gradSlots: the kit's)
  //  makeOptimizer(kind, groups, defaults)   groups: [{params: [tensors], ...the options the program gives}],
  //                                 defaults likewise (optionsIn: numbers, betas an array, flags booleans). Foreign
  //                                 options and SGD without lr are refused by the kit first; resolveGroup() applies
  //                                 lockstep's rule for what a group does not set
  //  paramGroups(optimizer)         [{option: value ...}] as the framework holds them (missing options: the
  //                                 program's, resolved); default optimizer.param_groups when it has one
  //  setOptions(optimizer, i, changes)   may return a new optimizer object to use from now on
  //  addParamGroup(optimizer, group)     "add_param_group"
  //  zeroGrad(optimizer, setToNone) setToNone undefined: the framework's default (SEM-12.1)
  //  step(optimizer)
  //  snapshot(optimizer)            async, once per record: passed to state() (e.g. a framework's getWeights())
  //  state(optimizer, param, snapshot, name)   {step, momentum_buffer: tensor, ...} (STATE_TENSORS) or null
  //  classify(message)              a framework exception's message -> a PROTOCOL §4 kind (default 'other')
  //  refuses(program)               a reason to answer unsupported that `supports` cannot say, or null
  //  dispose(run)                   end of a program: free what it made
  classify(message) { return 'other'; }

  // Whether the class has `method` (a field such as gradSlots counts when set).
  has(method) {
    if (method === 'gradSlots') return !!this.gradSlots;
    const mine = this[method];
    return typeof mine === 'function' && mine !== Framework.prototype[method];
  }

  // What the class implements, in the hello's "supports" form; the kit refuses programs outside it.
  capabilities() {
    const optimizers = this.optimizers ? JSON.parse(JSON.stringify(this.optimizers))
      : (this.has('makeOptimizer') ? JSON.parse(JSON.stringify(FIELDS)) : {});
    const hasOptimizer = Object.keys(optimizers).length > 0;
    const features = FEATURES.filter((f) => !this.lacks.includes(f)
      && (!FEATURE_NEEDS[f] || FEATURE_NEEDS[f].some((m) => this.has(m)))
      && (hasOptimizer || !OPTIMIZER_FEATURES.includes(f)));
    return { dtypes: this.dtypes.slice(), ops: OPS.filter((op) => this.has('op_' + op)), optimizers, features };
  }

  // The hello's "supports" (null: declare everything, and let the kit answer unsupported program by program).
  supports() { return this.capabilities(); }
}

// ---- what a program needs that the framework lacks ---------------------------------------------------------------

const special = (values) => values.some((v) => typeof v === 'string');

// The first feature (SEMANTICS §13 name, 'op:NAME', a dtype, a kind or 'kind.option') the program uses outside
// `caps`, or null. Ops and optimizers outside the grammar are left to the interpreter (kind other).
function unsupportedReason(program, caps) {
  const features = caps.features;
  for (const p of program.params) {
    if (!caps.dtypes.includes(p.dtype)) return p.dtype;
    if (special(p.values) && !features.includes('special_values')) return 'special_values';
  }
  const specs = new Map(program.params.map((p) => [p.name, p]));
  const losses = (program.loss ? [program.loss] : []).concat(program.actions.filter((a) => a.loss).map((a) => a.loss));
  for (const loss of losses) {
    for (const e of walk(loss)) {
      if (OPS.includes(e.op) && !caps.ops.includes(e.op)) return 'op:' + e.op;
      for (const a of e.args || []) {
        if (a.op !== 'const') continue;
        const dtype = dtypeOf(a, specs, dtypeOf(e, specs));
        if (!caps.dtypes.includes(dtype)) return dtype;
      }
      if (e.op === 'const' && special(e.values) && !features.includes('special_values')) return 'special_values';
    }
    if (loss.op === 'const' && !caps.dtypes.includes(dtypeOf(loss, specs))) return dtypeOf(loss, specs);
  }
  const opt = program.optimizer;
  const kind = opt ? opt.type : null;
  if (kind in FIELDS) {
    if (!(kind in caps.optimizers)) return kind;
    const optionSets = [opt.defaults || {}].concat((opt.groups || []).map((g) => g.options || {}),
      program.actions.filter((a) => a.action === 'set_options' || a.action === 'add_param_group')
        .map((a) => a.options || {}));
    for (const options of optionSets) {
      for (const [k, v] of Object.entries(options)) {
        if (FIELDS[kind].includes(k) && !caps.optimizers[kind].includes(k) && !isDefault(kind, k, v)) return kind + '.' + k;
      }
    }
    const groups = opt.groups || [];
    if ((groups.length > 1 || groups.some((g) => g.options)) && !features.includes('param_groups')) return 'param_groups';
  }
  for (const a of program.actions) {
    const needs = [];
    if (a.action === 'forward' && a.no_grad) {
      needs.push('no_grad');
    } else if (a.action === 'backward') {
      if (a.retain_graph) needs.push('retain_graph');
      if (a.create_graph) needs.push('create_graph');
      if (a.gradient !== undefined) {
        needs.push('explicit_gradient');
        if (special(a.gradient)) needs.push('special_values');
      }
    } else if (a.action === 'zero_grad' && opt) {
      needs.push(a.set_to_none === undefined ? 'zero_grad_default' : (a.set_to_none ? 'set_to_none' : 'zero_grad'));
    } else if (['set_grad_none', 'hold_grad', 'add_param_group', 'set_options'].includes(a.action)) {
      needs.push(a.action);
    }
    for (const f of needs) if (!features.includes(f)) return f;
  }
  return null;
}

// ---- the interpreter: one program, its records (PROTOCOL §4, SEMANTICS §8) ----------------------------------------

class Run {
  constructor(fw, program) {
    this.fw = fw;
    this.program = program;
    this.specs = new Map(program.params.map((p) => [p.name, p]));
    this.params = new Map();         // name -> the framework's tensor
    this.previousGrad = new Map();   // name -> the grad (or slot cell) seen at the previous record
    this.previousParam = new Map();  // name -> the parameter seen at the previous record
    this.handles = new Map();        // handle -> {ref: grad or cell or null, owner: parameter name}, first-taken order
    this.optimizer = null;
    this.kind = null;
    this.groups = [];                // [{params: [names], options: every option resolved}], as the program set them
    this.output = null;              // {held, shape}: the output of the last successful forward
    this.slots = fw.gradSlots ? new GradSlots(fw.gradSlots) : null;
  }

  // ---- setup ----
  async setup() {
    for (const spec of this.program.params) {
      const t = await this.fw.parameter(spec.values.map(numberIn), spec.dtype, spec.shape);
      this.params.set(spec.name, t);
      this.previousGrad.set(spec.name, null);
      this.previousParam.set(spec.name, t);  // param.same_as_previous at init: the tensor created for it
    }
    if (this.program.optimizer) await this.makeOptimizer(this.program.optimizer);
  }

  makeGroup(spec, where) {
    const group = { params: spec.params.map((n) => this.params.get(n)) };
    if (spec.options !== undefined) {
      const options = optionsIn(spec.options);
      checkFields(this.kind, options, where);
      if (this.kind === 'sgd' && !('lr' in options)) {
        throw new EngineError('invalid_option', where + ': SGD options need lr (no default)');
      }
      Object.assign(group, options);
    }
    Object.defineProperty(group, 'hasOptions', { value: spec.options !== undefined, enumerable: false });
    return group;
  }

  async makeOptimizer(spec) {
    if (!(spec.type in FIELDS)) throw new EngineError('other', `unknown optimizer type '${spec.type}'`);  // never another
    this.kind = spec.type;
    const defaults = optionsIn(spec.defaults);
    const names = spec.params ? [spec.params] : spec.groups.map((g) => g.params);
    const groups = spec.params ? [{ params: spec.params.map((n) => this.params.get(n)) }]
      : spec.groups.map((g, i) => this.makeGroup(g, 'group ' + i));
    checkFields(this.kind, defaults, 'defaults');  // refused before anything changes, as the oracle does
    if (this.kind === 'sgd' && !('lr' in defaults)) {
      throw new EngineError('invalid_option', 'defaults: SGD options need lr (no default)');
    }
    this.optimizer = await this.fw.makeOptimizer(this.kind, groups, defaults);
    this.defaultOptions = defaults;
    this.groups = groups.map((g, i) => ({ params: names[i].slice(), options: resolveGroup(this.kind, g, defaults) }));
  }

  // ---- actions ----
  requireOptimizer(what) {
    if (!this.optimizer) throw new EngineError('no_optimizer', what + ' without an optimizer');
  }

  heldOutput(held) {
    const fw = this.fw;
    if (fw.has('heldOutput')) return fw.heldOutput(held);
    return { tensor: held, requiresGrad: fw.requiresGrad(held), hasGradFn: fw.hasGradFn(held) };
  }

  async forward(action) {
    const fw = this.fw;
    const loss = action.loss || this.program.loss;
    if (!loss) throw new EngineError('other', 'forward without a loss expression');
    const noGrad = !!action.no_grad;
    let held;
    if (fw.has('forward')) {
      held = await fw.forward(loss, noGrad);
    } else {
      const body = () => evaluate(fw, loss, (n) => this.params.get(n));
      held = noGrad ? fw.noGrad(body) : body();
    }
    // Only a forward that succeeded replaces the held output (PROTOCOL §4).
    if (this.output && fw.has('release')) fw.release(this.output.held);
    this.output = { held, shape: shapeOf(loss, this.specs) };
  }

  async backward(action) {
    if (!this.output) throw new EngineError('no_output', 'backward before any forward');
    const createGraph = !!action.create_graph;
    const retainGraph = action.retain_graph !== undefined ? !!action.retain_graph : createGraph;
    let gradient = null;
    if (action.gradient !== undefined) {
      const n = numel(this.fw.shape(this.heldOutput(this.output.held).tensor, this.output.shape));
      if (action.gradient.length !== n)
        throw new EngineError('gradient_shape',
          `explicit gradient has ${action.gradient.length} values but the output has ${n} elements`);
      gradient = action.gradient.map(numberIn);
    }
    await this.fw.backward(this.output.held, gradient, retainGraph, createGraph);
  }

  async act(action) {
    const fw = this.fw;
    switch (action.action) {
      case 'forward': return this.forward(action);
      case 'backward': return this.backward(action);
      case 'zero_grad': {
        this.requireOptimizer('zero_grad');
        const setToNone = action.set_to_none === undefined ? undefined : !!action.set_to_none;
        if (fw.has('zeroGrad')) return fw.zeroGrad(this.optimizer, setToNone);
        // Emulated slots: every grad of every group (PROTOCOL §4); without set_to_none the declared default.
        const toNone = setToNone === undefined ? !!(fw.defaults && fw.defaults.zero_grad === 'none') : setToNone;
        return this.slots.zero([].concat(...this.groups.map((g) => g.params)), toNone);
      }
      case 'set_grad_none':
        if (this.slots) return this.slots.setNone(action.param);
        return fw.setGradNone(this.params.get(action.param));
      case 'hold_grad': {
        const ref = this.gradRef(action.param);
        const h = this.handles.get(action.handle);
        if (h) h.ref = ref;  // taken again: the handle now refers to the current grad
        else this.handles.set(action.handle, { ref, owner: action.param });
        return undefined;
      }
      case 'step':
        this.requireOptimizer('step');
        return fw.step(this.optimizer);
      case 'set_options': {
        this.requireOptimizer('set_options');
        const i = action.group === undefined ? 0 : action.group;
        if (i < 0 || i >= this.groups.length)
          throw new EngineError('no_such_group', `no param group ${i} (there are ${this.groups.length})`);
        const changes = optionsIn(action.options);
        checkFields(this.kind, changes, 'set_options');
        if (fw.has('setOptions')) {
          const replaced = await fw.setOptions(this.optimizer, i, changes);
          if (replaced) this.optimizer = replaced;
        } else {  // torch-style: the group's options are fields the next step reads
          const held = this.heldGroups();
          if (!held) throw new Unsupported('set_options');
          Object.assign(held[i], changes);
        }
        Object.assign(this.groups[i].options, changes);
        return undefined;
      }
      case 'add_param_group': {
        this.requireOptimizer('add_param_group');
        const group = this.makeGroup(action, 'new group');
        await fw.addParamGroup(this.optimizer, group);
        const options = resolveGroup(this.kind, group, this.defaultOptions);
        this.groups.push({ params: action.params.slice(), options });
        return undefined;
      }
      default:
        throw new Unsupported('action ' + action.action);
    }
  }

  // The groups as the framework holds them (paramGroups(), or a torch-style optimizer.param_groups), or null.
  heldGroups() {
    if (this.fw.has('paramGroups')) return this.fw.paramGroups(this.optimizer);
    return Array.isArray(this.optimizer.param_groups) ? this.optimizer.param_groups : null;
  }

  // ---- observation (SEMANTICS §8, PROTOCOL §4) ----
  // A parameter's grad as the kit tracks identity: the slot's cell (emulated) or the framework's grad tensor.
  gradRef(name) {
    if (this.slots) return this.slots.get(name);
    const g = this.fw.grad(this.params.get(name));
    return g === undefined ? null : g;
  }

  gradTensor(ref) { return this.slots ? ref.tensor : ref; }

  values(t) { return Array.from(this.fw.toList(t)); }

  full(t, programShape) {
    return { dtype: this.fw.dtype(t), shape: this.fw.shape(t, programShape).slice(), values: this.values(t) };
  }

  same(a, b) { return a !== null && b !== null && this.fw.identity(a) === this.fw.identity(b); }

  async observe() {
    const fw = this.fw;
    const snapshot = this.optimizer && fw.has('snapshot') ? await fw.snapshot(this.optimizer) : undefined;
    const params = {};
    for (const spec of this.program.params) {
      const name = spec.name;
      const p = this.params.get(name);
      const obs = this.full(p, spec.shape);
      if (fw.observes.includes('param.same_as_previous')) {  // PROTOCOL 4a: a step updates in place (SEM-1.6)
        obs.same_as_previous = this.same(p, this.previousParam.get(name));
        this.previousParam.set(name, p);
      }
      const ref = this.gradRef(name);
      if (ref === null) {
        obs.grad = { defined: false };
      } else {
        const t = this.gradTensor(ref);
        const g = { defined: true };
        const own = this.full(t, spec.shape);
        if (own.dtype !== obs.dtype || !sameShape(own.shape, obs.shape)) { g.dtype = own.dtype; g.shape = own.shape; }
        g.values = own.values;
        g.requires_grad = this.slots ? false : !!fw.requiresGrad(t);
        g.has_grad_fn = this.slots ? false : !!fw.hasGradFn(t);
        g.same_as_previous = this.same(ref, this.previousGrad.get(name));  // SEM-1.1: the same object
        obs.grad = g;
      }
      this.previousGrad.set(name, ref);
      obs.state = this.observeState(p, spec, snapshot);
      params[name] = obs;
    }
    const handles = {};
    for (const [name, h] of this.handles) {
      handles[name] = h.ref === null ? { defined: false }
        : Object.assign({ defined: true }, this.full(this.gradTensor(h.ref), this.specs.get(h.owner).shape));
    }
    const groups = [];
    if (this.optimizer) {
      const held = this.heldGroups();
      this.groups.forEach((g, i) => {
        const mine = held && held[i] ? held[i] : {};
        const options = {};
        for (const k of FIELDS[this.kind]) {
          const v = mine[k] !== undefined ? mine[k] : g.options[k];
          if (TRACED_ONLY_WHEN_TRUE.includes(k) && !v) continue;
          options[k] = k === 'betas' ? [Number(v[0]), Number(v[1])] : (FLAGS.includes(k) ? !!v : Number(v));
        }
        groups.push({ params: g.params.slice(), options });
      });
    }
    const record = { params, handles, groups };
    if (this.output) {
      const o = this.heldOutput(this.output.held);
      record.output = Object.assign(this.full(o.tensor, this.output.shape),
        { requires_grad: !!o.requiresGrad, has_grad_fn: !!o.hasGradFn });
    }
    return record;
  }

  observeState(p, spec, snapshot) {
    const s = this.optimizer && this.fw.has('state') ? this.fw.state(this.optimizer, p, snapshot, spec.name) : null;
    if (!s) return {};
    const out = {};
    if (s.step !== undefined && s.step !== null) {
      out.step = Math.trunc(typeof s.step === 'number' ? s.step : Number(this.values(s.step)[0]));
    }
    for (const key of STATE_TENSORS) {
      const t = s[key];
      if (t === undefined || t === null) continue;
      const own = this.full(t, spec.shape);
      out[key] = own.dtype === spec.dtype && sameShape(own.shape, spec.shape) ? own.values : own;
    }
    const exists = Object.keys(s).length > 0;  // an entry whose fields are all null still exists
    if (exists !== (Object.keys(out).length > 0)) out.exists = exists;
    return out;
  }

  // ---- the whole program ----
  // Runs body; an action that fails is observed (its error kind), not fatal (PROTOCOL §3).
  async guarded(body) {
    try {
      await body();
      return null;
    } catch (e) {
      if (e instanceof Unsupported) throw e;
      if (e instanceof EngineError) return { kind: e.kind, message: e.message };
      const message = String((e && e.message) || e);
      return { kind: this.fw.classify(message), message };
    }
  }

  async record(action, body) {
    const rec = { action };
    const error = await this.guarded(body);
    if (error) rec.error = error;
    return Object.assign(rec, await this.observe());
  }

  async trace() {
    const fw = this.fw;
    const trace = { engine: fw.engine || `${fw.name}-${fw.version}` };
    trace.init = await this.record('init', () => this.setup());
    trace.records = [];
    for (const a of this.program.actions) trace.records.push(await this.record(a.action, () => this.act(a)));
    return trace;
  }

  dispose() {
    const fw = this.fw;
    if (this.output && fw.has('release')) fw.release(this.output.held);
    if (this.slots) this.slots.dispose();
    if (fw.has('dispose')) fw.dispose(this);
  }
}

// The answer's body for one program: {trace} or {unsupported: reason}.
async function runProgram(fw, program) {
  // What the class implements, and what the hello declares if supports() narrows it (keys it leaves out: all).
  const caps = fw.capabilities();
  const declared = fw.supports();
  const reason = unsupportedReason(program, caps) ||
    (declared && declared !== caps ? unsupportedReason(program, Object.assign({}, caps, declared)) : null) ||
    (fw.has('refuses') ? fw.refuses(program) : null);
  if (reason) return { unsupported: reason };
  const run = new Run(fw, program);
  fw.run = run;
  try {
    return { trace: await run.trace() };
  } catch (e) {
    if (e instanceof Unsupported) return { unsupported: e.message || 'unsupported' };
    throw e;
  } finally {
    run.dispose();
    fw.run = null;
  }
}

// ---- the hello (PROTOCOL 2a) and the loop (PROTOCOL §1) ----------------------------------------------------------

const PROTOCOL = 3;  // protocol 1 plus RMSprop/Adagrad (2), plus softplus (3)

// The hello answer's body, speaking min(the request's protocol, PROTOCOL).
function hello(fw, requested = 1) {
  if (!fw.name) throw new Error('a Framework needs a name');
  const h = { name: fw.name, version: String(fw.version), protocol: Math.min(Number(requested) || 1, PROTOCOL),
    language: fw.language };
  Object.assign(h, fw.helloFields);
  if (fw.apiProfile) h.api_profile = fw.apiProfile;
  if (fw.pytorchVersion) h.pytorch_version = fw.pytorchVersion;
  if (fw.defaults) h.defaults = fw.defaults;
  const supports = fw.supports();
  if (supports) h.supports = supports;
  if (fw.emulated.length) h.emulated = fw.emulated.slice();
  if (fw.observes.length) h.observes = fw.observes.slice();
  return h;
}

// The answer to one request (a parsed JSON object).
async function answer(fw, request) {
  if (request.hello !== undefined) {  // the start-up handshake: answered once ready() is done
    return { id: request.id === undefined ? 'lockstep-hello' : request.id,
      hello: hello(fw, (request.hello && request.hello.protocol) || 1) };
  }
  if (request.program === undefined) return { id: request.id, unsupported: 'a request without a program' };
  return Object.assign({ id: request.id }, await runProgram(fw, request.program));
}

// The driver's loop: set-up (fw.ready()) before reading the first line, then one answer line per request line, in
// order; at end of input the process exits. A crash exits 3 with the stack on stderr (lockstep restarts the driver).
// options.log: a file every request line is appended to (for rerunning one program by hand).
function serve(fw, options = {}) {
  const die = (what) => (e) => {
    process.stderr.write(`${fw.name} driver: ${what}${(e && e.stack) || e}\n`);
    process.exit(3);
  };
  (async () => {
    if (fw.has('ready')) await fw.ready();
    const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
    let chain = Promise.resolve();
    const handle = async (line) => {
      if (!line.trim()) return;
      if (options.log) fs.appendFileSync(options.log, line + '\n');
      let request;
      try {
        request = JSON.parse(line);
      } catch (e) {  // out of step with lockstep: nothing sensible to answer
        process.stderr.write(`${fw.name} driver: a request that is not JSON (${e.message}): ${line.slice(0, 200)}\n`);
        process.exit(2);
      }
      process.stdout.write(toJson(await answer(fw, request)) + '\n');  // a pipe: written synchronously on Linux
    };
    rl.on('line', (line) => { chain = chain.then(() => handle(line)).catch(die('')); });
    // End of input: exit once every answer is written out (the write callback runs after the queued writes).
    rl.on('close', () => { chain.then(() => process.stdout.write('', () => process.exit(0))); });
  })().catch(die('cannot start: '));
}

module.exports = {
  KINDS, EngineError, Unsupported,
  numberIn, numberText, toJson, numel,
  OPS, OPTION_DEFAULTS, FIELDS, FLAGS, TRACED_ONLY_WHEN_TRUE, STATE_TENSORS, FEATURES,
  optionsIn, resolveOptions, resolveGroup, isDefault,
  paramsOf, shapeOf, dtypeOf, evaluate, applyOp,
  GradSlots, Framework, unsupportedReason, Run, runProgram,
  PROTOCOL, hello, answer, serve,
};
