#!/usr/bin/python3
"""PyTorch's Python API as a lockstep driver (fixtures/PROTOCOL.md).

Reads one request per line on stdin, {"id": ID, "program": PROGRAM} (conformance/program/program_json.h), runs the
program with torch's Python API (torch.optim.SGD / Adam / AdamW / RMSprop / Adagrad, autograd, Tensor.grad) and
writes {"id": ID, "trace": TRACE} (conformance/program/trace_json.h) on one line of stdout, in order. It observes what
SEMANTICS §8 lists, the way oracle/torch_engine.cc does with the C++ API, so that every difference between the
two APIs shows up in `lockstep replay`:

    lockstep replay --engine '/usr/bin/python3 tools/adapters/pytorch_driver.py' \
        --expected-failures fixtures/expectations/pytorch-python.json
    lockstep run --engine '/usr/bin/python3 tools/adapters/pytorch_driver.py --mode foreach --device cuda'

--mode single (default): the single-tensor optimizer path (foreach=False, like the C++ optimizers);
--mode foreach: torch.optim's multi-tensor path (foreach=True); --mode fused: fused=True for the optimizers whose
installed version has it (the hello declares only those; none: the driver says so on stderr and exits 3 before
the hello). --device cpu (default) or cuda: parameters, constants and gradients on that device (no GPU: exit 3).

Run it with Debian's python3 (python3-torch 1.13): `/usr/bin/python3`, not a pyenv python without torch.

Where the Python API has no action of its own the driver decides as the C++ oracle does:
 - zero_grad(set_to_none=True/False): optimizer.zero_grad(set_to_none=...) (native in Python, SEM-4.2);
   zero_grad() with no set_to_none: optimizer.zero_grad(), the installed version's default (1.x: zero in
   place, >= 2.0: none; SEM-12.1), declared in the hello as "pytorch_version".
 - The hello declares the API profile "pytorch-python" (fixtures/profiles/pytorch-python.json, SEM-11): the
   C++/Python differences lockstep avoids or expects. Everything else is supported ("supports" omitted).
 - Group options are passed to Python as given; Python fills the missing ones from the optimizer's defaults
   (SEM-7.1 [py]), where C++ 1.13 uses the option type's defaults: a real API difference.
 - Options foreign to the optimizer (momentum on Adam) are refused before anything changes, as the oracle does;
   an optimizer type the driver does not know is a setup error (kind other), never another optimizer.
 - foreach=False and maximize=False are passed explicitly (the single-tensor path, like the C++ optimizers).
The driver never hides a difference: the optimizer state is observed as Python holds it (SGD without momentum
keeps a state entry {'momentum_buffer': None}, observed as an existing state without fields; Adagrad's and
RMSprop's tensor step counts are reported as integers).
Known differences of Python 1.13 for RMSprop/Adagrad (SEMANTICS 14.2, 15.2 [py];
tools/adapters/pytorch/repro/rmsprop_adagrad_state.py): a step over a parameter Adagrad got by add_param_group
raises KeyError('sum') before any parameter of its group is updated; RMSprop with momentum or centered switched
on after the state exists raises KeyError before counting the step or updating square_avg.
"""
import argparse
import inspect
import json
import math
import sys
import warnings

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    sys.stderr.write("pytorch_driver: cannot import torch (%s); run it with /usr/bin/python3 "
                     "(Debian's python3-torch)\n" % e)
    sys.exit(3)

warnings.simplefilter("ignore")  # duplicate-parameter and create_graph warnings would flood stderr


class EngineError(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


# Error kinds from messages (the same rules as oracle/torch_engine.cc, classify_message).
_RULES = [
    ("Trying to backward through the graph a second time", "backward_through_freed_graph"),
    ("does not require grad and does not have a grad_fn", "no_grad_fn"),
    ("grad can be implicitly created only for scalar outputs", "nonscalar_backward"),
    ("Invalid learning rate", "invalid_option"),
    ("Invalid momentum value", "invalid_option"),
    ("Invalid weight_decay value", "invalid_option"),
    ("Invalid epsilon value", "invalid_option"),
    ("Invalid beta parameter", "invalid_option"),
    ("Invalid alpha value", "invalid_option"),
    ("Invalid lr_decay value", "invalid_option"),
    ("Invalid initial_accumulator_value value", "invalid_option"),
    ("Nesterov momentum requires", "invalid_option"),
    ("can't optimize a non-leaf", "non_leaf_parameter"),
    ("more than one parameter group", "duplicate_parameter"),
    ("invalid gradient at index", "gradient_shape"),
    ("Mismatch in shape", "gradient_shape"),
    ("modified by an inplace operation", "inplace_modified"),
]


def classify(message):
    for needle, kind in _RULES:
        if needle in message:
            return kind
    return "other"


DTYPES = {"float32": torch.float32, "float64": torch.float64}
DTYPE_NAMES = {torch.float32: "float32", torch.float64: "float64"}


def number_in(v):
    if isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[v]
    return float(v)


def number_out(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


MODE = "single"    # --mode: single, foreach or fused
DEVICE = "cpu"     # --device: cpu or cuda
FUSED = {}         # optimizer kind -> whether the installed torch.optim class has `fused` (mode fused)


def make_tensor(values, dtype, shape):
    t = torch.tensor([number_in(v) for v in values], dtype=torch.float64).reshape(shape)
    return t.to(DTYPES[dtype]).to(DEVICE)  # one rounding to float32, like the oracle


def tensor_out(t):
    with torch.no_grad():
        d = t.detach().to(torch.float64).reshape(-1).tolist()
    return [number_out(x) for x in d]


def full_tensor(t):
    return {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape), "values": tensor_out(t)}


def fits(t, p):
    return t.dtype == p.dtype and tuple(t.shape) == tuple(p.shape)


SGD_FIELDS = ["lr", "momentum", "dampening", "weight_decay", "nesterov"]
ADAM_FIELDS = ["lr", "betas", "eps", "weight_decay", "amsgrad"]
RMSPROP_FIELDS = ["lr", "alpha", "eps", "weight_decay", "momentum", "centered"]
ADAGRAD_FIELDS = ["lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"]
# The options of each optimizer kind (conformance/program/optimizer_*.cc); any other option is foreign to it.
FIELDS = {"sgd": SGD_FIELDS, "adam": ADAM_FIELDS, "adamw": ADAM_FIELDS, "rmsprop": RMSPROP_FIELDS,
          "adagrad": ADAGRAD_FIELDS}
FLAGS = ("nesterov", "amsgrad", "centered")  # boolean options
CLASSES = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
           "rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad}
STATE_TENSORS = ("momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "square_avg", "grad_avg", "sum")


def options_in(o):
    out = {}
    for k, v in o.items():
        if k == "betas":
            out[k] = (number_in(v[0]), number_in(v[1]))
        elif k in FLAGS:
            out[k] = bool(v)
        else:
            out[k] = number_in(v)
    return out


def options_out(kind, group):
    out = {}
    for k in FIELDS[kind]:
        v = group[k]
        if k == "betas":
            out[k] = [number_out(float(v[0])), number_out(float(v[1]))]
        elif k in FLAGS:
            out[k] = bool(v)
        else:
            out[k] = number_out(float(v))
    return out


def same_tensor(a, b):
    return a is not None and b is not None and a._cdata == b._cdata


class PythonEngine:
    def __init__(self):
        self.params = {}          # name -> tensor
        self.order = []           # names in program order
        self.previous_grad = {}   # name -> grad seen at the previous observe (kept alive)
        self.previous_param = {}  # name -> the parameter seen at the previous observe
        self.handles = []         # [name, tensor or None]
        self.optimizer = None
        self.kind = None
        self.output = None

    # --- setup -------------------------------------------------------------------------------------------
    def add_parameter(self, spec):
        t = make_tensor(spec["values"], spec["dtype"], spec["shape"]).requires_grad_(True)
        self.params[spec["name"]] = t
        self.order.append(spec["name"])
        self.previous_grad[spec["name"]] = None
        self.previous_param[spec["name"]] = t      # param.same_as_previous: the tensor created, at init

    def check_fields(self, kind, options, where):
        foreign = [k for k in options if k not in FIELDS[kind]]
        if foreign:
            raise EngineError("invalid_option", "%s: %s is not an option of %s" % (where, ", ".join(foreign), kind))

    def make_group(self, spec, where):
        group = {"params": [self.params[n] for n in spec["params"]]}
        if "options" in spec:
            opts = options_in(spec["options"])
            self.check_fields(self.kind, opts, where)
            if self.kind == "sgd" and "lr" not in opts:
                raise EngineError("invalid_option", where + ": SGD options need lr (no default)")
            group.update(opts)
        return group

    def make_optimizer(self, spec):
        if spec["type"] not in CLASSES:  # never another optimizer in its place
            raise EngineError("other", "pytorch_driver: unknown optimizer type '%s'" % spec["type"])
        self.kind = spec["type"]
        defaults = options_in(spec.get("defaults", {}))
        if "params" in spec:
            groups = [{"params": [self.params[n] for n in spec["params"]]}]
        else:
            groups = [self.make_group(g, "group %d" % i) for i, g in enumerate(spec["groups"])]
        self.check_fields(self.kind, defaults, "defaults")
        if MODE == "fused":
            if not FUSED.get(self.kind):
                raise EngineError("other", "%s has no fused implementation in torch %s" % (self.kind, torch.__version__))
            common = {"fused": True, "maximize": False}
        else:
            common = {"foreach": MODE == "foreach", "maximize": False}
        if self.kind == "sgd" and "lr" not in defaults:
            raise EngineError("invalid_option", "defaults: SGD options need lr (no default)")
        self.optimizer = CLASSES[self.kind](groups, **defaults, **common)

    # --- actions -----------------------------------------------------------------------------------------
    def eval_expr(self, e):
        op = e["op"]
        if op == "param":
            return self.params[e["name"]]
        if op == "const":
            return make_tensor(e["values"], e.get("dtype", "float32"), e["shape"])
        raw = e["args"]
        args = [None if a.get("op") == "const" and "dtype" not in a else self.eval_expr(a) for a in raw]
        typed = [a for a in args if a is not None]
        for i, a in enumerate(raw):  # an untyped constant takes a sibling's dtype (program_json.h)
            if args[i] is None:
                dtype = DTYPE_NAMES[typed[0].dtype] if typed else "float32"
                args[i] = make_tensor(a["values"], dtype, a["shape"])
        x = args[0] if args else None
        if op == "add": return args[0] + args[1]
        if op == "sub": return args[0] - args[1]
        if op == "mul": return args[0] * args[1]
        if op == "div": return args[0] / args[1]
        if op == "neg": return -x
        if op == "mul_scalar": return x * number_in(e["scalar"])
        if op == "square": return torch.square(x)
        if op == "pow": return x.pow(number_in(e["exponent"]))
        if op == "exp": return torch.exp(x)
        if op == "log": return torch.log(x)
        if op == "tanh": return torch.tanh(x)
        if op == "sigmoid": return torch.sigmoid(x)
        if op == "relu": return torch.relu(x)
        if op == "abs": return torch.abs(x)
        if op == "matmul": return torch.matmul(args[0], args[1])
        if op == "sum": return x.sum()
        if op == "mean": return x.mean()
        if op == "mse_loss": return F.mse_loss(args[0], args[1])
        if op == "cross_entropy":
            return F.cross_entropy(x, torch.tensor(e["targets"], dtype=torch.long, device=DEVICE))
        if op == "linear":
            return F.linear(args[0], args[1], args[2] if len(args) > 2 else None)
        if op == "embedding":
            return F.embedding(torch.tensor(e["indices"], dtype=torch.long, device=DEVICE), x)
        raise EngineError("other", "unknown op '%s'" % op)

    def forward(self, loss, no_grad):
        if loss is None:
            raise EngineError("other", "forward without a loss expression")
        if no_grad:
            with torch.no_grad():
                out = self.eval_expr(loss)
        else:
            out = self.eval_expr(loss)
        self.output = out

    def backward(self, action):
        if self.output is None:
            raise EngineError("no_output", "backward before any forward")
        create_graph = bool(action.get("create_graph", False))
        retain_graph = action.get("retain_graph", create_graph)
        gradient = None
        if "gradient" in action:
            g = action["gradient"]
            if len(g) != self.output.numel():
                raise EngineError("gradient_shape", "explicit gradient has %d values but the output has %d elements"
                                  % (len(g), self.output.numel()))
            gradient = make_tensor(g, DTYPE_NAMES[self.output.dtype], list(self.output.shape))
        self.output.backward(gradient, retain_graph=retain_graph, create_graph=create_graph)

    def require_optimizer(self, what):
        if self.optimizer is None:
            raise EngineError("no_optimizer", what + " without an optimizer")

    def run(self, action, program_loss):
        a = action["action"]
        if a == "forward":
            self.forward(action.get("loss", program_loss), bool(action.get("no_grad", False)))
        elif a == "backward":
            self.backward(action)
        elif a == "zero_grad":
            self.require_optimizer("zero_grad")
            if "set_to_none" in action:
                self.optimizer.zero_grad(set_to_none=bool(action["set_to_none"]))
            else:
                self.optimizer.zero_grad()  # the framework's default (SEM-12.1)
        elif a == "set_grad_none":
            self.params[action["param"]].grad = None
        elif a == "hold_grad":
            grad = self.params[action["param"]].grad
            for h in self.handles:
                if h[0] == action["handle"]:
                    h[1] = grad
                    return
            self.handles.append([action["handle"], grad])
        elif a == "step":
            self.require_optimizer("step")
            self.optimizer.step()
        elif a == "set_options":
            self.require_optimizer("set_options")
            groups = self.optimizer.param_groups
            i = action.get("group", 0)
            if i < 0 or i >= len(groups):
                raise EngineError("no_such_group", "no param group %d (there are %d)" % (i, len(groups)))
            changes = options_in(action.get("options", {}))
            self.check_fields(self.kind, changes, "set_options")
            groups[i].update(changes)
        elif a == "add_param_group":
            self.require_optimizer("add_param_group")
            self.optimizer.add_param_group(self.make_group(action, "new group"))
        else:
            raise EngineError("other", "unknown action '%s'" % a)

    # --- observation (SEMANTICS §8) ------------------------------------------------------------------------
    def observe(self):
        by_id = {p._cdata: n for n, p in self.params.items()}
        params = {}
        for name in self.order:
            p = self.params[name]
            obs = full_tensor(p)
            # Optional field (PROTOCOL.md 4a): the optimizer updates the parameter in place (SEM-1.6).
            obs["same_as_previous"] = same_tensor(p, self.previous_param[name])
            self.previous_param[name] = p
            grad = p.grad
            if grad is None:
                g = {"defined": False}
            else:
                g = {"defined": True}
                if not fits(grad, p):
                    g["dtype"] = DTYPE_NAMES[grad.dtype]
                    g["shape"] = list(grad.shape)
                g["values"] = tensor_out(grad)
                g["requires_grad"] = bool(grad.requires_grad)
                g["has_grad_fn"] = grad.grad_fn is not None
                g["same_as_previous"] = same_tensor(grad, self.previous_grad[name])
            self.previous_grad[name] = grad
            obs["grad"] = g
            obs["state"] = self.observe_state(p)
            params[name] = obs
        handles = {}
        for name, t in self.handles:
            handles[name] = {"defined": False} if t is None else dict({"defined": True}, **full_tensor(t))
        groups = []
        if self.optimizer is not None:
            for group in self.optimizer.param_groups:
                groups.append({"params": [by_id.get(t._cdata, "?") for t in group["params"]],
                               "options": options_out(self.kind, group)})
        state = {"params": params, "handles": handles, "groups": groups}
        if self.output is not None:
            o = full_tensor(self.output)
            o["requires_grad"] = bool(self.output.requires_grad)
            o["has_grad_fn"] = self.output.grad_fn is not None
            state["output"] = o
        return state

    def observe_state(self, p):
        if self.optimizer is None or p not in self.optimizer.state:
            return {}
        s = self.optimizer.state[p]
        out = {}
        if "step" in s:
            step = s["step"]
            out["step"] = int(step.item() if torch.is_tensor(step) else step)
        for key in STATE_TENSORS:
            t = s.get(key)
            if t is None:
                continue
            out[key] = tensor_out(t) if fits(t, p) else full_tensor(t)
        exists = len(s) > 0
        if exists != (len(out) > 0):
            out["exists"] = exists
        return out


def guarded(body):
    try:
        body()
        return None
    except EngineError as e:
        return {"kind": e.kind, "message": str(e)}
    except Exception as e:  # noqa: BLE001 -- every framework error is observed, not fatal
        message = str(e).split("\nException raised from")[0]
        return {"kind": classify(message), "message": message}


def run_program(program):
    engine = PythonEngine()
    trace = {"engine": "pytorch-python-" + torch.__version__}

    def setup():
        for p in program["params"]:
            engine.add_parameter(p)
        if "optimizer" in program:
            engine.make_optimizer(program["optimizer"])

    init = {"action": "init"}
    error = guarded(setup)
    if error:
        init["error"] = error
    init.update(engine.observe())
    trace["init"] = init
    records = []
    for action in program["actions"]:
        rec = {"action": action["action"]}
        error = guarded(lambda: engine.run(action, program.get("loss")))
        if error:
            rec["error"] = error
        rec.update(engine.observe())
        records.append(rec)
    trace["records"] = records
    return trace


def hello():
    h = {"name": "pytorch-python" + ("" if (MODE, DEVICE) == ("single", "cpu") else "[%s,%s]" % (MODE, DEVICE)),
         "version": torch.__version__, "protocol": 1, "language": "python",
         "api_profile": {"foreach": "pytorch-python-foreach", "fused": "pytorch-python-fused"}.get(MODE, "pytorch-python"),
         "pytorch_version": torch.__version__,
         "observes": ["param.same_as_previous"]}  # optional trace fields it reports (PROTOCOL.md 4a)
    if MODE == "fused":  # only the optimizers with a fused path; everything else as always
        h["supports"] = {"optimizers": {k: FIELDS[k] for k, f in FUSED.items() if f}}
    return h


def main():
    global MODE, DEVICE
    parser = argparse.ArgumentParser(description="PyTorch's Python API as a lockstep driver")
    parser.add_argument("--mode", choices=["single", "foreach", "fused"], default="single")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()
    MODE, DEVICE = args.mode, args.device
    if DEVICE == "cuda" and not torch.cuda.is_available():
        sys.stderr.write("pytorch_driver: --device cuda: no CUDA device here (torch %s)\n" % torch.__version__)
        sys.exit(3)
    if MODE == "fused":
        for kind, cls in CLASSES.items():
            FUSED[kind] = "fused" in inspect.signature(cls.__init__).parameters
        # torch 1.13's fused Adam runs on CUDA only; probe it rather than trust the signature.
        for kind, cls in CLASSES.items():
            if not FUSED[kind]:
                continue
            try:
                p = torch.zeros(1, device=DEVICE, requires_grad=True)
                p.grad = torch.ones(1, device=DEVICE)
                opt = cls([p], lr=0.1, fused=True)
                opt.step()
            except Exception:  # noqa: BLE001 - any refusal means: not available here
                FUSED[kind] = False
        if not any(FUSED.values()):
            sys.stderr.write("pytorch_driver: --mode fused: no optimizer of torch %s has a fused path on %s\n"
                             % (torch.__version__, DEVICE))
            sys.exit(3)
    out = sys.stdout
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        if "hello" in request:  # the start-up handshake (fixtures/PROTOCOL.md 2a), after `import torch`
            answer = {"id": request.get("id", "lockstep-hello"), "hello": hello()}
            out.write(json.dumps(answer) + "\n")
            out.flush()
            continue
        answer = {"id": request["id"]}
        answer["trace"] = run_program(request["program"])
        out.write(json.dumps(answer, allow_nan=False) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
