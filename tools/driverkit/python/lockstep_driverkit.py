"""lockstep driver kit: everything a lockstep driver does that is not framework-specific.

A *driver* (fixtures/PROTOCOL.md) wraps a framework for lockstep: it reads one JSON request per line on stdin, runs
the training program it holds and answers one line on stdout with the trace (what the framework observed after
every action). This module is the protocol loop, the hello, the number encoding, the program interpreter, the
records and the error kinds. You write one class, a `Framework`, that says how your framework creates a tensor,
runs an op, a backward and an optimizer step; the kit does the rest and answers `unsupported` for what your class
does not implement. Standard library only, Python >= 3.9.

    import sys; sys.path.insert(0, "tools/driverkit/python")
    import lockstep_driverkit as kit
    import myframework as mf

    class MyFramework(kit.Framework):
        name, version = "myframework", mf.__version__
        optimizers = {"sgd": ["lr", "momentum"]}          # kinds and the options it honours (others: default only)

        def parameter(self, values, dtype, shape): return mf.tensor(values, shape, requires_grad=True)
        def constant(self, values, dtype, shape): return mf.tensor(values, shape)
        def to_list(self, t): return t.flat()             # row-major floats
        def dtype(self, t): return "float64"
        def shape(self, t): return list(t.shape)
        def requires_grad(self, t): return t.requires_grad
        def has_grad_fn(self, t): return t.grad_fn is not None
        def op_add(self, a, b): return a + b              # one op_NAME per op it has; the rest: "op:NAME"
        def op_sum(self, x): return x.sum()
        def backward(self, output, gradient, retain_graph, create_graph): output.backward(gradient)
        def grad(self, param): return param.grad
        def make_optimizer(self, kind, groups, defaults): return mf.SGD(kit.resolve_groups(kind, groups, defaults))
        def zero_grad(self, optimizer, set_to_none): optimizer.zero_grad(set_to_none)
        def step(self, optimizer): optimizer.step()
        def state(self, optimizer, param): return optimizer.state.get(param)

    if __name__ == "__main__":
        kit.serve(MyFramework())

tools/driverkit/python/examples/tiny_autograd_driver.py is a complete one (a small framework and its mapping);
fixtures/WRITING_A_DRIVER.md walks through writing one.

The interface: override what your framework has. Tensors are your framework's own objects; the kit only passes
them back to you. Values are flat row-major lists of Python floats (NaN and infinities as floats); dtypes are the
strings "float32"/"float64"; shapes are lists of ints ([] for 0-d).

  tensors    parameter(values, dtype, shape)   a leaf that requires grad, grad undefined (SEM-2.1)
             constant(values, dtype, shape)    a tensor that does not require grad
             to_list(t) dtype(t) shape(t) requires_grad(t) has_grad_fn(t)
             identity(t)                       a key equal for the same tensor object (default id(t)): decides
                                               grad.same_as_previous (SEM-1.1) and param.same_as_previous
  ops        op_NAME(*tensors, *extras)        one per op of the grammar (OPS below); extras: mul_scalar's scalar,
                                               pow's exponent (floats), cross_entropy's targets, embedding's indices
                                               (lists of ints). Missing: a program using it is answered "op:NAME"
  autograd   backward(output, gradient, retain_graph, create_graph)   gradient: a constant shaped like the
                                               output, or None
             grad(param)                       the grad tensor or None
             set_grad_none(param)              optional ("set_grad_none")
             no_grad()                         optional: a context manager ("no_grad")
  optimizer  make_optimizer(kind, groups, defaults)   optional as a whole; kind is one of `optimizers`; groups
                                               [{"params": [tensors], option: value ...}] with only the options the
                                               program gives, defaults likewise (decoded: floats, betas a tuple,
                                               flags bools (nesterov, amsgrad, centered, maximize),
                                               max_iter/max_eval/history_size ints, line_search_fn a str). Foreign
                                               options, SGD without lr and unknown kinds are refused by the kit
                                               first. resolve_groups() applies lockstep's rule for what a group does
                                               not set
             param_groups(optimizer)           a list of dicts, each "params" and every option of the kind
                                               resolved (default: optimizer.param_groups, torch-style); the
                                               trace carries maximize only where it is true (SEMANTICS §20)
             set_options(optimizer, i, changes)   default: param_groups(optimizer)[i].update(changes)
             add_param_group(optimizer, group) optional ("add_param_group")
             zero_grad(optimizer, set_to_none) optional; set_to_none None means the framework's default (SEM-12.1)
             step(optimizer)
             step_with_closure(optimizer, closure)   optional ("closure", SEMANTICS §17): call the framework's
                                               step(closure) and return what it returns; the kit's closure runs the
                                               step's closure actions, records each, and returns the held output
             state(optimizer, param)           the parameter's state dict, or None when it has none: "step" (an
                                               int, or a one-element tensor), tensors named as in STATE_TENSORS,
                                               L-BFGS's counts "func_evals"/"n_iter" (ints; under its first
                                               parameter only, SEM-16.2); other keys are not observed
                                               (L-BFGS, kind "lbfgs", needs step_with_closure as well)
  clipping   clip_grad_norm(params, max_norm, norm_type, error_if_nonfinite)   optional ("clip_grad_norm",
                                               SEMANTICS §18): return the total norm as a 0-d tensor; norm_type
                                               is 1, 2 or float("inf"); a non-finite total with error_if_nonfinite
                                               raises (kind "nonfinite_norm")
             clip_grad_value(params, clip_value)   optional ("clip_grad_value")
  checkpoints
             state_dict(optimizer)             optional ("state_dict", SEMANTICS §19): a saved copy of the
                                               optimizer's state and group options, as torch.save to a file keeps
                                               it: later steps must not change it (torch: a deep copy of
                                               optimizer.state_dict()); the kit keeps it under the checkpoint's name
             load_state_dict(optimizer, saved) optional ("load_state_dict"): load what state_dict returned; the kit
                                               passes the same object to every load of a checkpoint, so copy it
                                               where the framework keeps what it loads (torch 2.x, SEM-19.4). Saved
                                               groups that do not fit (another number of groups, a group of another
                                               size) raise (kind "state_dict_mismatch"). A load with "fresh" is the
                                               kit's: it first replaces the optimizer by a new one from
                                               make_optimizer, built as at setup
  errors     classify(message) -> kind         map a framework exception's message to a PROTOCOL §4 kind
                                               (default "other"); or raise EngineError(kind, message) yourself
             raise Unsupported("name")         anywhere: the whole program is answered {"unsupported": "name"}
  hello      name, version, language, api_profile, pytorch_version, defaults, emulated, observes, engine:
             class attributes; dtypes, optimizers, lacks (features whose methods exist but which it does not
             have, e.g. "create_graph") narrow what the kit computes; supports() returns the hello's "supports"
             (default: computed from all of the above; return None to declare everything)

The decisions PROTOCOL §4 asks of a driver are the kit's: an action that fails is recorded with its error kind and
the program goes on; a failed forward keeps the previous output; a failed setup leaves no optimizer (later actions
fail with no_optimizer); options foreign to the kind are invalid_option, before anything changes.
"""
import json
import math
import sys

# ---- errors (PROTOCOL §4) ---------------------------------------------------------------------------------------

KINDS = ("invalid_option", "backward_through_freed_graph", "no_grad_fn", "nonscalar_backward", "non_leaf_parameter",
         "duplicate_parameter", "inplace_modified", "gradient_shape", "no_optimizer", "no_output", "no_such_group",
         "nonfinite_norm", "state_dict_mismatch", "other")


class EngineError(Exception):
    """An action failed with one of the error kinds of PROTOCOL §4; recorded in that action's record."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class Unsupported(Exception):
    """The framework lacks something this program needs: the answer is {"unsupported": str(exception)}."""


# ---- numbers (PROTOCOL §5) ----------------------------------------------------------------------------------------

_SPECIAL_IN = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def number_in(v):
    """A JSON number or "NaN"/"Infinity"/"-Infinity" -> float (-0.0 stays -0.0)."""
    if isinstance(v, str):
        return _SPECIAL_IN[v]
    return float(v)


def number_out(x):
    """float -> what json.dumps writes as PROTOCOL §5 asks: the strings for NaN/infinities, repr otherwise."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


# ---- the grammar (fixtures/README.md "Programs", conformance/program/optimizer_*.cc) ------------------------------

OPS = ("add", "sub", "mul", "div", "neg", "mul_scalar", "square", "pow", "exp", "log", "tanh", "sigmoid", "relu",
       "abs", "softplus", "matmul", "sum", "mean", "mse_loss", "cross_entropy", "linear", "embedding")
_OP_EXTRAS = {"mul_scalar": ("scalar", number_in), "pow": ("exponent", number_in),
              "cross_entropy": ("targets", list), "embedding": ("indices", list)}

# Each kind's options and the option type's defaults (None: SGD's lr has none). Any other option is foreign.
# maximize (SEMANTICS §20): the step negates the gradient first; L-BFGS has none (foreign to it).
OPTION_DEFAULTS = {
    "sgd": {"lr": None, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False, "maximize": False},
    "adam": {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0, "amsgrad": False, "maximize": False},
    "adamw": {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 1e-2, "amsgrad": False,
              "maximize": False},
    "rmsprop": {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0, "momentum": 0.0, "centered": False,
                "maximize": False},
    "adagrad": {"lr": 1e-2, "lr_decay": 0.0, "weight_decay": 0.0, "initial_accumulator_value": 0.0, "eps": 1e-10,
                "maximize": False},
    # SEM-16.1; max_eval None: computed from max_iter (max_iter * 5 // 4) by the constructor, see resolve_group
    "lbfgs": {"lr": 1.0, "max_iter": 20, "max_eval": None, "tolerance_grad": 1e-7, "tolerance_change": 1e-9,
              "history_size": 100, "line_search_fn": None},  # None: no line search; "strong_wolfe" (SEM-16.6)
}
FIELDS = {kind: list(options) for kind, options in OPTION_DEFAULTS.items()}
FLAGS = ("nesterov", "amsgrad", "centered", "maximize")
# Flags the trace's "options" carry only when true (SEMANTICS §20): traces without them stay as they were.
TRACED_ONLY_WHEN_TRUE = ("maximize",)
INTEGERS = ("max_iter", "max_eval", "history_size")  # whole-number options: JSON integers (L-BFGS, SEM-16.1)
TEXTS = ("line_search_fn",)  # text options: JSON strings (L-BFGS, SEM-16.6)
STATE_TENSORS = ("momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "square_avg", "grad_avg", "sum")
STATE_COUNTS = ("func_evals", "n_iter")  # L-BFGS's counts (SEM-16.2), under the optimizer's first parameter
# An optimizer kind and the method it needs beyond make_optimizer: every L-BFGS step calls a closure (SEM-16.2).
_OPTIMIZER_NEEDS = {"lbfgs": "step_with_closure"}
FEATURES = ("retain_graph", "create_graph", "no_grad", "explicit_gradient", "zero_grad", "set_to_none",
            "zero_grad_default", "set_grad_none", "hold_grad", "param_groups", "add_param_group", "set_options",
            "special_values", "invalid_options", "closure", "clip_grad_norm", "clip_grad_value", "state_dict",
            "load_state_dict")
# The method a feature needs (SEMANTICS §13); the optimizer features need make_optimizer as well.
_FEATURE_NEEDS = {"retain_graph": "backward", "create_graph": "backward", "explicit_gradient": "backward",
                  "no_grad": "no_grad", "zero_grad": "zero_grad", "set_to_none": "zero_grad",
                  "zero_grad_default": "zero_grad", "set_grad_none": "set_grad_none",
                  "add_param_group": "add_param_group", "closure": "step_with_closure",
                  "clip_grad_norm": "clip_grad_norm", "clip_grad_value": "clip_grad_value",
                  "state_dict": "state_dict", "load_state_dict": "load_state_dict"}
_OPTIMIZER_FEATURES = ("zero_grad", "set_to_none", "zero_grad_default", "param_groups", "add_param_group",
                       "set_options", "invalid_options", "closure", "state_dict", "load_state_dict")


def options_in(options):
    """A program's options -> Python values: betas a tuple of floats, flags bools, whole-number options ints, the rest
    floats."""
    out = {}
    for k, v in options.items():
        if k == "comment":
            continue
        if k == "betas":
            out[k] = (number_in(v[0]), number_in(v[1]))
        elif k in FLAGS:
            out[k] = bool(v)
        elif k in INTEGERS:
            x = number_in(v)
            if not (math.isfinite(x) and x == int(x)):
                raise EngineError("invalid_option", "%s must be a whole number, not %r" % (k, v))
            out[k] = int(x)
        elif k in TEXTS:
            if not isinstance(v, str):
                raise EngineError("invalid_option", "%s must be a string, not %r" % (k, v))
            out[k] = v
        else:
            out[k] = number_in(v)
    return out


def options_out(kind, group):
    """Every option of `kind` read from a param group (a mapping) -> the trace's "options"; an unset one (None:
    L-BFGS's max_eval of a group added later, SEM-16.1) is left out, as the C++ trace leaves it, and so is maximize
    when false (TRACED_ONLY_WHEN_TRUE)."""
    out = {}
    for k in FIELDS[kind]:
        v = group.get(k)
        if v is None or (k in TRACED_ONLY_WHEN_TRUE and not v):
            continue
        if k == "betas":
            out[k] = [number_out(float(v[0])), number_out(float(v[1]))]
        elif k in FLAGS:
            out[k] = bool(v)
        elif k in INTEGERS:
            out[k] = int(v)
        elif k in TEXTS:
            out[k] = str(v)
        else:
            out[k] = number_out(float(v))
    return out


class Group(dict):
    """A parameter group as the program gives it: "params" and the options it sets. `has_options`: the program gave
    the group "options", possibly {}, so lockstep's rule gives it the option type's defaults, not the optimizer's."""
    has_options = False


def resolve_group(kind, group, defaults):
    """lockstep's rule (PROTOCOL §4, SEM-7.1, LibTorch 1.13): a group with options of its own (even none: "options":
    {}) takes the option type's defaults for what it does not set; a group without options copies the optimizer's
    defaults."""
    own = {k: v for k, v in group.items() if k != "params"}
    resolved = dict(OPTION_DEFAULTS[kind])
    resolved.update(own if getattr(group, "has_options", bool(own)) or own else defaults)
    resolved["params"] = list(group["params"])
    return resolved  # L-BFGS: max_eval None where unset (a group added later keeps it unset, SEM-16.1)


def resolve_groups(kind, groups, defaults):
    """The groups an optimizer is constructed with, resolved by resolve_group; L-BFGS's constructor then sets the first
    group's max_eval from the defaults' max_iter (max_iter * 5 // 4) where the defaults give none, replacing the
    group's own (SEM-16.1; Python keeps the group's: SEM-11.14)."""
    resolved = [resolve_group(kind, g, defaults) for g in groups]
    if "max_eval" in OPTION_DEFAULTS[kind] and defaults.get("max_eval") is None and resolved:
        resolved[0]["max_eval"] = int(defaults.get("max_iter", OPTION_DEFAULTS[kind]["max_iter"])) * 5 // 4
    return resolved


def _is_default(kind, option, value):
    default = OPTION_DEFAULTS[kind][option]
    if option == "betas":
        return default is not None and tuple(number_in(x) for x in value) == default
    if option in FLAGS:
        return bool(value) == default
    if option in TEXTS:
        return value == default
    return default is not None and number_in(value) == default


# ---- the framework interface ----------------------------------------------------------------------------------

class Framework:
    """Subclass and override what your framework has (the module's docstring lists the methods)."""
    name = None                 # the hello's name (not empty)
    version = "0"
    language = "python"
    engine = None               # the trace's "engine" (default NAME-VERSION)
    api_profile = None          # a profile of fixtures/profiles/ (SEMANTICS §11)
    pytorch_version = None      # the PyTorch whose defaults it follows (SEM-12.1)
    defaults = None             # e.g. {"zero_grad": "none"}
    emulated = ()               # what the driver does where the framework has no counterpart (PROTOCOL 2a)
    observes = ("param.same_as_previous",)  # optional trace fields reported (PROTOCOL 4a); the kit computes them
    dtypes = ("float32", "float64")
    optimizers = None           # {kind: [options honoured]}; None: every kind and option (with make_optimizer)
    lacks = ()                  # features it lacks although their methods exist (e.g. "create_graph")

    # tensors
    def parameter(self, values, dtype, shape): raise NotImplementedError
    def constant(self, values, dtype, shape): raise NotImplementedError
    def to_list(self, t): raise NotImplementedError
    def dtype(self, t): raise NotImplementedError
    def shape(self, t): raise NotImplementedError
    def requires_grad(self, t): raise NotImplementedError
    def has_grad_fn(self, t): raise NotImplementedError
    def identity(self, t): return id(t)

    # autograd
    def backward(self, output, gradient, retain_graph, create_graph): raise NotImplementedError
    def grad(self, param): raise NotImplementedError
    def set_grad_none(self, param): raise NotImplementedError
    def no_grad(self): raise NotImplementedError

    # optimizer
    def make_optimizer(self, kind, groups, defaults): raise NotImplementedError
    def param_groups(self, optimizer): return optimizer.param_groups
    def set_options(self, optimizer, i, changes): self.param_groups(optimizer)[i].update(changes)
    def add_param_group(self, optimizer, group): raise NotImplementedError
    def zero_grad(self, optimizer, set_to_none): raise NotImplementedError
    def step(self, optimizer): raise NotImplementedError
    # optimizer.step(closure) (SEMANTICS §17): call the framework's step with `closure` (a function of no argument
    # that runs the closure's actions and returns the loss) and return what it returns (None: nothing).
    def step_with_closure(self, optimizer, closure): raise NotImplementedError
    def state(self, optimizer, param): raise NotImplementedError
    # gradient clipping (SEMANTICS §18), over `params` in the order given (a parameter may repeat): clip_grad_norm
    # returns the total norm (a 0-d tensor; float64 when a counted grad is float64, else float32); norm_type is 1, 2
    # or float("inf"); a non-finite total with error_if_nonfinite raises (classify it "nonfinite_norm").
    def clip_grad_norm(self, params, max_norm, norm_type, error_if_nonfinite): raise NotImplementedError
    def clip_grad_value(self, params, clip_value): raise NotImplementedError
    # optimizer checkpoints (SEMANTICS §19): state_dict returns a saved copy of the optimizer's state and group options
    # that later steps do not change (torch: copy.deepcopy(optimizer.state_dict())); load_state_dict loads one (the
    # same object at every load of a checkpoint: copy it again where the framework keeps what it loads). Saved groups
    # that do not fit the optimizer's raise (classify it "state_dict_mismatch"). A fresh load is the kit's (Run.run).
    def state_dict(self, optimizer): raise NotImplementedError
    def load_state_dict(self, optimizer, saved): raise NotImplementedError

    # errors
    def classify(self, message): return "other"

    # what it has
    def has(self, method):
        """Whether this class overrides `method` (ops: whether it defines op_NAME)."""
        mine = getattr(type(self), method, None)
        return mine is not None and mine is not getattr(Framework, method, None)

    def capabilities(self):
        """What the class implements, in the hello's "supports" form; the kit refuses programs outside it."""
        if self.optimizers is not None:
            optimizers = {k: list(v) for k, v in self.optimizers.items()}
        else:
            optimizers = {k: list(v) for k, v in FIELDS.items()} if self.has("make_optimizer") else {}
        # Declared or computed, an optimizer that needs a method the class lacks is not had (L-BFGS: step(closure)).
        optimizers = {k: v for k, v in optimizers.items() if k not in _OPTIMIZER_NEEDS or self.has(_OPTIMIZER_NEEDS[k])}
        features = []
        for f in FEATURES:
            if f in self.lacks or (f in _FEATURE_NEEDS and not self.has(_FEATURE_NEEDS[f])):
                continue
            if f in _OPTIMIZER_FEATURES and not optimizers:
                continue
            features.append(f)
        return {"dtypes": list(self.dtypes), "ops": [op for op in OPS if self.has("op_" + op)],
                "optimizers": optimizers, "features": features}

    def supports(self):
        return self.capabilities()


# ---- what a program needs that the framework lacks -----------------------------------------------------------------

def _walk(expr):
    yield expr
    for a in expr.get("args", []):
        yield from _walk(a)


def _special(values):
    return any(isinstance(v, str) for v in values)


def unsupported_reason(program, caps):
    """The first feature (SEMANTICS §13 name) the program uses outside `caps`, or None. Names lockstep does not know
    (an op or optimizer outside the grammar) are left to the interpreter, which fails them with kind other."""
    features = set(caps["features"])
    for p in program["params"]:
        if p["dtype"] not in caps["dtypes"]:
            return p["dtype"]
        if _special(p["values"]) and "special_values" not in features:
            return "special_values"
    losses = [program["loss"]] if "loss" in program else []
    losses += [a["loss"] for a in program["actions"] if "loss" in a]
    losses += [c["loss"] for a in program["actions"] for c in a.get("closure", []) if "loss" in c]  # SEMANTICS §17
    for loss in losses:
        for e in _walk(loss):
            if e["op"] in OPS and e["op"] not in caps["ops"]:
                return "op:" + e["op"]
            if e["op"] == "const":
                if e.get("dtype", caps["dtypes"][0]) not in caps["dtypes"]:  # untyped: a sibling's dtype
                    return e["dtype"]
                if _special(e["values"]) and "special_values" not in features:
                    return "special_values"
    opt = program.get("optimizer")
    kind = opt["type"] if opt else None
    if kind in FIELDS:
        if kind not in caps["optimizers"]:
            return kind
        option_sets = [opt.get("defaults", {})] + [g.get("options", {}) for g in opt.get("groups", [])]
        option_sets += [a.get("options", {}) for a in program["actions"] if a["action"] in ("set_options", "add_param_group")]
        for options in option_sets:
            for k, v in options.items():
                if k in FIELDS[kind] and k not in caps["optimizers"][kind] and not _is_default(kind, k, v):
                    return kind + "." + k
        groups = opt.get("groups", [])
        if (len(groups) > 1 or any("options" in g for g in groups)) and "param_groups" not in features:
            return "param_groups"
    actions = []
    for a in program["actions"]:  # a step's closure actions where they run, before the step (SEMANTICS §17)
        actions += a.get("closure", []) + [a]
    for a in actions:
        needs = []
        if a["action"] == "step" and "closure" in a:
            needs.append("closure")
        if a["action"] == "forward" and a.get("no_grad"):
            needs.append("no_grad")
        elif a["action"] == "backward":
            if a.get("retain_graph"):
                needs.append("retain_graph")
            if a.get("create_graph"):
                needs.append("create_graph")
            if "gradient" in a:
                needs.append("explicit_gradient")
                if _special(a["gradient"]):
                    needs.append("special_values")
        elif a["action"] == "zero_grad" and opt is not None:
            needs.append({None: "zero_grad_default", True: "set_to_none", False: "zero_grad"}[a.get("set_to_none")])
        elif a["action"] in ("set_grad_none", "hold_grad", "add_param_group", "set_options", "clip_grad_norm",
                             "clip_grad_value", "state_dict", "load_state_dict"):
            needs.append(a["action"])
            if a["action"] == "clip_grad_norm" and _special([a["max_norm"]]):
                needs.append("special_values")
            if a["action"] == "clip_grad_value" and _special([a["clip_value"]]):
                needs.append("special_values")
        for f in needs:
            if f not in features:
                return f
    return None


# ---- the interpreter: one program, its records (PROTOCOL §4, SEMANTICS §8) ----------------------------------------

def _check_fields(kind, options, where):
    foreign = [k for k in options if k not in FIELDS[kind]]
    if foreign:
        raise EngineError("invalid_option", "%s: %s is not an option of %s" % (where, ", ".join(foreign), kind))


class Run:
    """One program on one framework: setup, actions, and an observation after each."""

    def __init__(self, fw, program):
        self.fw = fw
        self.program = program
        self.params = {}          # name -> tensor
        self.order = []           # names in program order
        self.previous_grad = {}   # name -> the grad seen at the previous record (kept alive: identities stay unique)
        self.previous_param = {}  # name -> the parameter seen at the previous record
        self.handles = []         # [handle name, grad tensor or None], in the order first taken
        self.optimizer = None
        self.kind = None
        self.output = None        # the output of the last successful forward
        self.closure_calls = None     # a step with a closure: its calls' records, for the step's record
        self.closure_returned = None  # and what the step returned
        self.clip_returned = None     # what a clip_grad_norm returned: its total norm (SEMANTICS §18.1)
        self.checkpoints = {}         # name -> what fw.state_dict saved (SEMANTICS §19.5)

    # --- setup --------------------------------------------------------------------------------------------------
    def tensor(self, values, dtype, shape, param=False):
        make = self.fw.parameter if param else self.fw.constant
        return make([number_in(v) for v in values], dtype, list(shape))

    def setup(self):
        for spec in self.program["params"]:
            t = self.tensor(spec["values"], spec["dtype"], spec["shape"], param=True)
            self.params[spec["name"]] = t
            self.order.append(spec["name"])
            self.previous_grad[spec["name"]] = None
            self.previous_param[spec["name"]] = t  # param.same_as_previous at init: the tensor created for it
        if "optimizer" in self.program:
            self.make_optimizer(self.program["optimizer"])

    def make_group(self, spec, where):
        group = Group(params=[self.params[n] for n in spec["params"]])
        if "options" in spec:
            group.has_options = True
            options = options_in(spec["options"])
            _check_fields(self.kind, options, where)
            if self.kind == "sgd" and "lr" not in options:
                raise EngineError("invalid_option", where + ": SGD options need lr (no default)")
            group.update(options)
        return group

    def make_optimizer(self, spec):
        if spec["type"] not in FIELDS:  # never another optimizer in its place
            raise EngineError("other", "unknown optimizer type '%s'" % spec["type"])
        self.kind = spec["type"]
        defaults = options_in(spec.get("defaults", {}))
        if "params" in spec:
            groups = [{"params": [self.params[n] for n in spec["params"]]}]
        else:
            groups = [self.make_group(g, "group %d" % i) for i, g in enumerate(spec["groups"])]
        _check_fields(self.kind, defaults, "defaults")  # refused before anything changes, as the oracle does
        if self.kind == "sgd" and "lr" not in defaults:
            raise EngineError("invalid_option", "defaults: SGD options need lr (no default)")
        self.optimizer = self.fw.make_optimizer(self.kind, groups, defaults)

    # --- actions ------------------------------------------------------------------------------------------------
    def evaluate(self, e):
        op = e["op"]
        if op == "param":
            return self.params[e["name"]]
        if op == "const":
            return self.tensor(e["values"], e.get("dtype", "float32"), e["shape"])
        raw = e["args"]
        args = [None if a.get("op") == "const" and "dtype" not in a else self.evaluate(a) for a in raw]
        typed = [a for a in args if a is not None]
        for i, a in enumerate(raw):  # an untyped constant takes a sibling's dtype (program_json.h)
            if args[i] is None:
                args[i] = self.tensor(a["values"], self.fw.dtype(typed[0]) if typed else "float32", a["shape"])
        if op not in OPS:
            raise EngineError("other", "unknown op '%s'" % op)
        if not self.fw.has("op_" + op):
            raise Unsupported("op:" + op)
        if op in _OP_EXTRAS:
            field, convert = _OP_EXTRAS[op]
            args.append(convert(e[field]))
        return getattr(self.fw, "op_" + op)(*args)

    def forward(self, loss, no_grad):
        if loss is None:
            raise EngineError("other", "forward without a loss expression")
        if no_grad:
            with self.fw.no_grad():
                out = self.evaluate(loss)
        else:
            out = self.evaluate(loss)
        self.output = out  # only a forward that succeeded replaces the held output

    def backward(self, action):
        if self.output is None:
            raise EngineError("no_output", "backward before any forward")
        create_graph = bool(action.get("create_graph", False))
        retain_graph = action.get("retain_graph", create_graph)
        gradient = None
        if "gradient" in action:
            g, shape = action["gradient"], self.fw.shape(self.output)
            if len(g) != numel(shape):
                raise EngineError("gradient_shape", "explicit gradient has %d values but the output has %d elements"
                                  % (len(g), numel(shape)))
            gradient = self.tensor(g, self.fw.dtype(self.output), shape)
        self.fw.backward(self.output, gradient, retain_graph, create_graph)

    def require_optimizer(self, what):
        if self.optimizer is None:
            raise EngineError("no_optimizer", what + " without an optimizer")

    def run(self, action):
        a = action["action"]
        if a == "forward":
            self.forward(action.get("loss", self.program.get("loss")), bool(action.get("no_grad", False)))
        elif a == "backward":
            self.backward(action)
        elif a == "zero_grad":
            self.require_optimizer("zero_grad")
            set_to_none = bool(action["set_to_none"]) if "set_to_none" in action else None
            self.fw.zero_grad(self.optimizer, set_to_none)  # None: the framework's default (SEM-12.1)
        elif a == "set_grad_none":
            self.fw.set_grad_none(self.params[action["param"]])
        elif a == "hold_grad":
            grad = self.fw.grad(self.params[action["param"]])
            for h in self.handles:
                if h[0] == action["handle"]:  # taken again: the handle now refers to the current grad
                    h[1] = grad
                    return
            self.handles.append([action["handle"], grad])
        elif a == "step" and "closure" in action:
            self.require_optimizer("step")
            self.step_with_closure(action["closure"])
        elif a == "step":
            self.require_optimizer("step")
            self.fw.step(self.optimizer)
        elif a == "set_options":
            self.require_optimizer("set_options")
            i = action.get("group", 0)
            count = len(self.fw.param_groups(self.optimizer))
            if i < 0 or i >= count:
                raise EngineError("no_such_group", "no param group %d (there are %d)" % (i, count))
            changes = options_in(action.get("options", {}))
            _check_fields(self.kind, changes, "set_options")
            self.fw.set_options(self.optimizer, i, changes)
        elif a == "add_param_group":
            self.require_optimizer("add_param_group")
            self.fw.add_param_group(self.optimizer, self.make_group(action, "new group"))
        elif a == "clip_grad_norm":  # SEMANTICS §18.1; the record carries the total norm (PROTOCOL §4)
            params = [self.params[name] for name in action["params"]]
            self.clip_returned = self.fw.clip_grad_norm(params, number_in(action["max_norm"]),
                                                        number_in(action.get("norm_type", 2)),
                                                        bool(action.get("error_if_nonfinite", False)))
        elif a == "clip_grad_value":  # SEMANTICS §18.5
            self.fw.clip_grad_value([self.params[name] for name in action["params"]], number_in(action["clip_value"]))
        elif a == "state_dict":  # SEMANTICS §19.5: a saved copy, kept under its name
            self.require_optimizer("state_dict")
            self.checkpoints[action["checkpoint"]] = self.fw.state_dict(self.optimizer)
        elif a == "load_state_dict":  # SEM-19.2, 19.3, 19.5
            self.require_optimizer("load_state_dict")
            name = action["checkpoint"]
            if name not in self.checkpoints:  # lockstep validates programs: a load names an earlier save
                raise EngineError("other", "no checkpoint '%s' was saved" % name)
            if action.get("fresh", False):  # a resumed run: a new optimizer, built as the setup built it, replaces it
                self.optimizer = None
                self.make_optimizer(self.program["optimizer"])
            self.fw.load_state_dict(self.optimizer, self.checkpoints[name])
        else:
            raise EngineError("other", "unknown action '%s'" % a)

    def step_with_closure(self, closure_actions):
        """SEMANTICS §17.2: each call runs the closure's actions, each observed in a record of its own; the first
        that fails ends the call and, its error leaving the closure, the step. The call returns the held output."""
        calls = []

        def closure():
            records = []
            calls.append(records)
            for sub in closure_actions:
                rec = self.record(sub["action"], lambda sub=sub: self.run(sub))
                records.append(rec)
                if "error" in rec:
                    raise EngineError(rec["error"]["kind"], rec["error"]["message"])
            return self.output

        returned = None
        try:
            returned = self.fw.step_with_closure(self.optimizer, closure)
        finally:  # the step's record takes the calls even when the step fails (set after the calls' own records)
            self.closure_calls, self.closure_returned = calls, returned

    # --- observation (SEMANTICS §8, PROTOCOL §4) ----------------------------------------------------------------
    def values(self, t):
        return [number_out(float(x)) for x in self.fw.to_list(t)]

    def full(self, t):
        return {"dtype": self.fw.dtype(t), "shape": list(self.fw.shape(t)), "values": self.values(t)}

    def fits(self, t, p):
        return self.fw.dtype(t) == self.fw.dtype(p) and list(self.fw.shape(t)) == list(self.fw.shape(p))

    def same(self, a, b):
        return a is not None and b is not None and self.fw.identity(a) == self.fw.identity(b)

    def observe(self):
        fw = self.fw
        params = {}
        for name in self.order:
            p = self.params[name]
            obs = self.full(p)
            if "param.same_as_previous" in fw.observes:  # PROTOCOL 4a: a step updates in place (SEM-1.6)
                obs["same_as_previous"] = self.same(p, self.previous_param[name])
                self.previous_param[name] = p
            grad = fw.grad(p)
            if grad is None:
                g = {"defined": False}
            else:
                g = {"defined": True}
                if not self.fits(grad, p):
                    g["dtype"] = fw.dtype(grad)
                    g["shape"] = list(fw.shape(grad))
                g["values"] = self.values(grad)
                g["requires_grad"] = bool(fw.requires_grad(grad))
                g["has_grad_fn"] = bool(fw.has_grad_fn(grad))
                g["same_as_previous"] = self.same(grad, self.previous_grad[name])  # SEM-1.1: the same object
            self.previous_grad[name] = grad
            obs["grad"] = g
            obs["state"] = self.observe_state(p)
            params[name] = obs
        handles = {}
        for name, t in self.handles:
            handles[name] = {"defined": False} if t is None else dict({"defined": True}, **self.full(t))
        groups = []
        if self.optimizer is not None:
            names = {fw.identity(self.params[n]): n for n in self.order}
            for group in fw.param_groups(self.optimizer):
                groups.append({"params": [names.get(fw.identity(t), "?") for t in group["params"]],
                               "options": options_out(self.kind, group)})
        record = {"params": params, "handles": handles, "groups": groups}
        if self.output is not None:
            o = self.full(self.output)
            o["requires_grad"] = bool(fw.requires_grad(self.output))
            o["has_grad_fn"] = bool(fw.has_grad_fn(self.output))
            record["output"] = o
        return record

    def observe_state(self, p):
        s = None if self.optimizer is None else self.fw.state(self.optimizer, p)
        if s is None:
            return {}
        out = {}
        if "step" in s:
            step = s["step"]
            out["step"] = int(step if isinstance(step, (int, float)) else self.fw.to_list(step)[0])
        for key in STATE_COUNTS:
            if key in s:
                out[key] = int(s[key] if isinstance(s[key], (int, float)) else self.fw.to_list(s[key])[0])
        for key in STATE_TENSORS:
            t = s.get(key)
            if t is None:
                continue
            out[key] = self.values(t) if self.fits(t, p) else self.full(t)
        exists = len(s) > 0  # an entry whose fields are all None (Python SGD without momentum) still exists
        if exists != (len(out) > 0):
            out["exists"] = exists
        return out

    # --- the whole program -------------------------------------------------------------------------------------
    def guarded(self, body):
        """Runs body; an action that fails is observed (its error kind), not fatal (PROTOCOL §3)."""
        try:
            body()
            return None
        except Unsupported:
            raise
        except EngineError as e:
            return {"kind": e.kind, "message": str(e)}
        except Exception as e:  # noqa: BLE001 -- every framework error is observed
            message = str(e).split("\nException raised from")[0]  # LibTorch appends its C++ stack
            return {"kind": self.fw.classify(message), "message": message}

    def record(self, action, body):
        rec = {"action": action}
        self.closure_calls = None
        error = self.guarded(body)
        if error:
            rec["error"] = error
        calls, returned = self.closure_calls, self.closure_returned
        clipped, self.clip_returned = self.clip_returned, None
        self.closure_calls = self.closure_returned = None
        rec.update(self.observe())
        if calls is not None:  # a step with a closure (PROTOCOL §4, SEMANTICS §17.3)
            if calls:
                rec["calls"] = calls
            if returned is not None and not error:
                rec["returned"] = self.full(returned)
        if clipped is not None and not error:  # a clip_grad_norm's total norm (SEMANTICS §18.1)
            rec["returned"] = self.full(clipped)
        return rec

    def trace(self):
        fw = self.fw
        trace = {"engine": fw.engine or "%s-%s" % (fw.name, fw.version)}
        trace["init"] = self.record("init", self.setup)
        trace["records"] = [self.record(a["action"], lambda a=a: self.run(a)) for a in self.program["actions"]]
        return trace


def run_program(fw, program):
    """The answer's body for one program: {"trace": ...} or {"unsupported": reason}."""
    # What the class implements, and what the hello declares if supports() narrows it (keys it leaves out: all).
    caps = fw.capabilities()
    declared = fw.supports()
    reason = unsupported_reason(program, caps)
    if not reason and declared is not None and declared is not caps:
        reason = unsupported_reason(program, dict(caps, **declared))
    if reason:
        return {"unsupported": reason}
    try:
        return {"trace": Run(fw, program).trace()}
    except Unsupported as e:
        return {"unsupported": str(e) or "unsupported"}


# ---- the hello (PROTOCOL 2a) and the loop (PROTOCOL §1) ------------------------------------------------------------

PROTOCOL = 8  # protocol 1 plus RMSprop/Adagrad (2), plus softplus (3), plus a step's closure (4), plus L-BFGS (5),
#              plus gradient clipping (6), plus optimizer checkpoints (7), plus the option maximize (8)


def hello(fw, requested=1):
    """The hello answer's body, speaking min(the request's protocol, PROTOCOL)."""
    if not fw.name:
        raise ValueError("a Framework needs a name")
    h = {"name": fw.name, "version": str(fw.version), "protocol": min(int(requested), PROTOCOL),
         "language": fw.language}
    for key in ("api_profile", "pytorch_version", "defaults"):
        if getattr(fw, key):
            h[key] = getattr(fw, key)
    supports = fw.supports()
    if supports is not None:
        h["supports"] = supports
    if fw.emulated:
        h["emulated"] = list(fw.emulated)
    if fw.observes:
        h["observes"] = list(fw.observes)
    return h


def answer(fw, request):
    """The answer to one request (a parsed JSON object)."""
    if "hello" in request:  # the start-up handshake: answered once set-up is done, i.e. before serve() is called
        return {"id": request.get("id", "lockstep-hello"), "hello": hello(fw, request["hello"].get("protocol", 1))}
    if "program" not in request:
        return {"id": request.get("id"), "unsupported": "a request without a program"}
    return dict({"id": request["id"]}, **run_program(fw, request["program"]))


def serve(fw, stdin=None, stdout=None):
    """The driver's loop: one answer line per request line, flushed; returns at end of input (the driver exits).
    Do the framework's slow set-up (imports, a GPU context) before calling it (PROTOCOL 2a)."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    for line in stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
        except ValueError as e:  # out of step with lockstep: nothing sensible to answer
            sys.stderr.write("lockstep_driverkit: a request that is not JSON (%s): %.200s\n" % (e, line))
            sys.exit(2)
        stdout.write(json.dumps(answer(fw, request), allow_nan=False) + "\n")
        stdout.flush()
