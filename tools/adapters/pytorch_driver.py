#!/usr/bin/python3
"""PyTorch's Python API as a lockstep driver (fixtures/PROTOCOL.md), on the Python driver kit (tools/driverkit/python).

Reads one request per line on stdin, {"id": ID, "program": PROGRAM} (conformance/program/program_json.h), runs the
program with torch's Python API (torch.optim.SGD / Adam / AdamW / RMSprop / Adagrad / LBFGS, autograd, Tensor.grad) and
writes {"id": ID, "trace": TRACE} (conformance/program/trace_json.h) on one line of stdout, in order. It observes what
SEMANTICS §8 lists, the way oracle/torch_engine.cc does with the C++ API, so that every difference between the
two APIs shows up in `lockstep replay`:

    lockstep replay --engine '/usr/bin/python3 tools/adapters/pytorch_driver.py' \
        --expected-failures fixtures/expectations/pytorch-python.json
    lockstep run --engine '/usr/bin/python3 tools/adapters/pytorch_driver.py --mode foreach --device cuda'

--mode single (default): the single-tensor optimizer path (foreach=False, like the C++ optimizers);
--mode foreach: torch.optim's multi-tensor path (foreach=True); --mode fused: fused=True for the optimizers whose
installed version has it (the hello declares only those, and maximize only for those whose fused path takes it,
both probed at start-up; none: the driver says so on stderr and exits 3 before the hello). --device cpu (default)
or cuda: parameters, constants and gradients on that device (no GPU: exit 3).

Run it with Debian's python3 (python3-torch 1.13): `/usr/bin/python3`, not a pyenv python without torch.

Where the Python API has no action of its own the driver decides as the C++ oracle does (the kit's decisions,
lockstep_driverkit.py):
 - zero_grad(set_to_none=True/False): optimizer.zero_grad(set_to_none=...) (native in Python, SEM-4.2);
   zero_grad() with no set_to_none: optimizer.zero_grad(), the installed version's default (1.x: zero in
   place, >= 2.0: none; SEM-12.1), declared in the hello as "pytorch_version".
 - The hello declares the API profile "pytorch-python" (fixtures/profiles/pytorch-python.json, SEM-11): the
   C++/Python differences lockstep avoids or expects. Everything else is supported ("supports" omitted).
 - Group options are passed to Python as given; Python fills the missing ones from the optimizer's defaults
   (SEM-7.1 [py]), where C++ 1.13 uses the option type's defaults: a real API difference.
 - Options foreign to the optimizer (momentum on Adam) are refused before anything changes, as the oracle does;
   an optimizer type the driver does not know is a setup error (kind other), never another optimizer.
 - foreach=False is passed explicitly (the single-tensor path, like the C++ optimizers), and maximize as the program
   gives it (false where it does not: SEMANTICS §20), in the defaults and in each group that sets it (set_options
   and add_param_group carry it into torch's param groups as any option). LBFGS has neither argument (one path;
   maximize is foreign to it, refused by the kit); --mode foreach and fused do not declare it. Its steps call the
   kit's closure; its counts func_evals/n_iter are observed under the first parameter, as Python keeps them (SEM-16.2).
 - state_dict: copy.deepcopy(optimizer.state_dict()), a saved copy as torch.save to a file keeps it (SEMANTICS
   §19.5); load_state_dict: optimizer.load_state_dict() of a deep copy of it, so that loads never share tensors
   (SEM-19.4); with "fresh", into a new optimizer the kit builds as at setup, which replaces the old one. Saved
   groups that do not fit are "state_dict_mismatch" (SEM-19.3). A loaded state is observed as Python holds it (1.13:
   Adam's step a float32 tensor, RMSprop's an int; the parameters the checkpoint has no state for lose theirs).
The driver never hides a difference: the optimizer state is observed as Python holds it (SGD without momentum
keeps a state entry {'momentum_buffer': None}, observed as an existing state without fields; Adagrad's and
RMSprop's tensor step counts are reported as integers).
Known differences of Python 1.13 for RMSprop/Adagrad (SEMANTICS 14.2, 15.2 [py];
tools/adapters/pytorch/repro/rmsprop_adagrad_state.py): a step over a parameter Adagrad got by add_param_group
raises KeyError('sum') before any parameter of its group is updated; RMSprop with momentum or centered switched
on after the state exists raises KeyError before counting the step or updating square_avg.
"""
import argparse
import copy
import inspect
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "driverkit", "python"))
import lockstep_driverkit as kit  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    sys.stderr.write("pytorch_driver: cannot import torch (%s); run it with /usr/bin/python3 "
                     "(Debian's python3-torch)\n" % e)
    sys.exit(3)

warnings.simplefilter("ignore")  # duplicate-parameter and create_graph warnings would flood stderr

# Error kinds from messages (the same rules as oracle/torch_engine.cc, classify_message).
RULES = [
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
    ("is non-finite, so it cannot be clipped", "nonfinite_norm"),
    ("loaded state dict has a different number of parameter groups", "state_dict_mismatch"),  # SEM-19.3
    ("doesn't match the size of optimizer's group", "state_dict_mismatch"),
]
DTYPES = {"float32": torch.float32, "float64": torch.float64}
CLASSES = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
           "rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad, "lbfgs": torch.optim.LBFGS}
SINGLE_PATH_ONLY = ("lbfgs",)  # no foreach, fused or maximize argument: one path, checked by --mode single


class Torch(kit.Framework):
    name = "pytorch-python"
    version = pytorch_version = torch.__version__
    engine = "pytorch-python-" + torch.__version__
    api_profile = "pytorch-python"

    def __init__(self, mode, device, fused, fused_maximize=None):
        self.mode, self.device, self.fused = mode, device, fused  # fused: kind -> has a fused path here
        self.fused_maximize = fused_maximize or {}  # kind -> its fused path takes maximize (SEMANTICS §20)
        if (mode, device) != ("single", "cpu"):
            self.name = "pytorch-python[%s,%s]" % (mode, device)
        self.api_profile = {"foreach": "pytorch-python-foreach", "fused": "pytorch-python-fused"}.get(
            mode, "pytorch-python")

    def supports(self):
        if self.mode == "fused":  # only the optimizers with a fused path (maximize where it takes it); the rest all
            return {"optimizers": {k: [o for o in kit.FIELDS[k] if o != "maximize" or self.fused_maximize.get(k)]
                                   for k, f in self.fused.items() if f}}
        if self.mode == "foreach":  # L-BFGS has no multi-tensor path: --mode single checks its only one
            return {"optimizers": {k: kit.FIELDS[k] for k in CLASSES if k not in SINGLE_PATH_ONLY}}
        return None  # everything

    # tensors: made in float64, then one rounding to float32, like the oracle
    def parameter(self, values, dtype, shape): return self.constant(values, dtype, shape).requires_grad_(True)
    def constant(self, values, dtype, shape):
        return torch.tensor(values, dtype=torch.float64).reshape(shape).to(DTYPES[dtype]).to(self.device)
    def to_list(self, t): return t.detach().to(torch.float64).reshape(-1).tolist()
    def dtype(self, t): return {torch.float32: "float32", torch.float64: "float64"}[t.dtype]
    def shape(self, t): return list(t.shape)
    def requires_grad(self, t): return t.requires_grad
    def has_grad_fn(self, t): return t.grad_fn is not None
    def identity(self, t): return t._cdata

    # ops
    def op_add(self, a, b): return a + b
    def op_sub(self, a, b): return a - b
    def op_mul(self, a, b): return a * b
    def op_div(self, a, b): return a / b
    def op_neg(self, x): return -x
    def op_mul_scalar(self, x, scalar): return x * scalar
    def op_pow(self, x, exponent): return x.pow(exponent)
    def op_sum(self, x): return x.sum()
    def op_mean(self, x): return x.mean()
    def op_linear(self, x, w, b=None): return F.linear(x, w, b)
    def op_cross_entropy(self, x, targets): return F.cross_entropy(x, self.indices(targets))
    def op_embedding(self, weight, indices): return F.embedding(self.indices(indices), weight)
    def indices(self, ints): return torch.tensor(ints, dtype=torch.long, device=self.device)

    # autograd
    def backward(self, output, gradient, retain_graph, create_graph):
        output.backward(gradient, retain_graph=retain_graph, create_graph=create_graph)
    def grad(self, param): return param.grad
    def set_grad_none(self, param): param.grad = None
    def no_grad(self): return torch.no_grad()

    # optimizer
    def make_optimizer(self, kind, groups, defaults):
        if kind in SINGLE_PATH_ONLY:
            return CLASSES[kind](groups, **defaults)
        if self.mode == "fused":
            if not self.fused.get(kind):
                raise kit.EngineError("other", "%s has no fused implementation in torch %s" % (kind, torch.__version__))
            common = {"fused": True}
        else:
            common = {"foreach": self.mode == "foreach"}
        defaults = dict({"maximize": False}, **defaults)  # the program's maximize, false where it gives none
        return CLASSES[kind](groups, **defaults, **common)
    def add_param_group(self, optimizer, group): optimizer.add_param_group(group)
    def zero_grad(self, optimizer, set_to_none):
        if set_to_none is None:
            optimizer.zero_grad()  # the framework's default (SEM-12.1)
        else:
            optimizer.zero_grad(set_to_none=set_to_none)
    def step(self, optimizer): optimizer.step()
    def step_with_closure(self, optimizer, closure): return optimizer.step(closure)  # SEMANTICS §17
    def state(self, optimizer, param): return optimizer.state[param] if param in optimizer.state else None

    # gradient clipping (SEMANTICS §18): torch.nn.utils' own; --mode foreach asks for the multi-tensor path where the
    # function has one (2.x), as it does of the optimizers
    def clip_grad_norm(self, params, max_norm, norm_type, error_if_nonfinite):
        return torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite=error_if_nonfinite,
                                              **self.clip_foreach(torch.nn.utils.clip_grad_norm_))
    def clip_grad_value(self, params, clip_value):
        torch.nn.utils.clip_grad_value_(params, clip_value, **self.clip_foreach(torch.nn.utils.clip_grad_value_))
    def clip_foreach(self, function):
        has = "foreach" in inspect.signature(function).parameters
        return {"foreach": True} if self.mode == "foreach" and has else {}

    # optimizer checkpoints (SEMANTICS §19): a deep copy is what torch.save to a file keeps (state_dict() hands out the
    # optimizer's own state tensors, SEM-19.4); each load gets a copy of its own, as a torch.load of the file would
    # (2.x's load_state_dict keeps the dict's tensors: two loads of one checkpoint would share them)
    def state_dict(self, optimizer): return copy.deepcopy(optimizer.state_dict())
    def load_state_dict(self, optimizer, saved): optimizer.load_state_dict(copy.deepcopy(saved))

    def classify(self, message):
        return next((kind for needle, kind in RULES if needle in message), "other")


for _op in ("square", "exp", "log", "tanh", "sigmoid", "relu", "abs", "matmul"):
    setattr(Torch, "op_" + _op, staticmethod(getattr(torch, _op)))
Torch.op_mse_loss = staticmethod(F.mse_loss)
Torch.op_softplus = staticmethod(F.softplus)  # beta 1, threshold 20 (SEMANTICS 2.12)


def fused_step(cls, device, **options):
    """One fused step on a parameter 0 with grad 1 (an exception: the path, or the option, is not available here)."""
    p = torch.zeros(1, device=device, requires_grad=True)
    p.grad = torch.ones(1, device=device)
    cls([p], lr=0.1, fused=True, **options).step()


def fused_paths(device):
    """Which optimizers have a fused path here: in the signature, and (torch 1.13's fused Adam runs on CUDA only)
    a probe step that works. Returns (fused, maximize): kind -> has a fused path; kind -> its fused path takes
    maximize (SEMANTICS §20), probed the same way, by a fused step with maximize=True that works (torch 1.13's
    constructor takes maximize with fused=True; only a step on the device shows whether the path refuses it). What
    the step then does with it is lockstep's to check, not the probe's."""
    fused, maximize = {}, {}
    for kind, cls in CLASSES.items():
        fused[kind] = maximize[kind] = False
        if "fused" not in inspect.signature(cls.__init__).parameters:
            continue
        for options, has in (({}, fused), ({"maximize": True}, maximize)):
            try:
                fused_step(cls, device, **options)
                has[kind] = True
            except Exception:  # noqa: BLE001 - any refusal means: not available here
                break
    return fused, maximize


def main():
    parser = argparse.ArgumentParser(description="PyTorch's Python API as a lockstep driver")
    parser.add_argument("--mode", choices=["single", "foreach", "fused"], default="single")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.stderr.write("pytorch_driver: --device cuda: no CUDA device here (torch %s)\n" % torch.__version__)
        sys.exit(3)
    fused, fused_maximize = fused_paths(args.device) if args.mode == "fused" else ({}, {})
    if args.mode == "fused" and not any(fused.values()):
        sys.stderr.write("pytorch_driver: --mode fused: no optimizer of torch %s has a fused path on %s\n"
                         % (torch.__version__, args.device))
        sys.exit(3)
    kit.serve(Torch(args.mode, args.device, fused, fused_maximize))


if __name__ == "__main__":
    main()
