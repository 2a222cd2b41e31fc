#!/usr/bin/env python3
"""A framework that is not in the tree, as a lockstep driver on the Python kit (fixtures/WRITING_A_DRIVER.md).

Part 1 is "tiny", a float64 autograd in 65 lines (add, sub, mul, square, sum; backward with retain_graph and an
explicit gradient; no_grad; SGD with momentum); part 2 maps it to lockstep in 50. Everything else (the protocol,
programs, records, error kinds, `unsupported` for what tiny lacks) is tools/driverkit/python/lockstep_driverkit.py.

    lockstep replay --engine 'python3 tools/driverkit/python/examples/tiny_autograd_driver.py'

--undeclared: a hello without "supports" (lockstep then sends every fixture, and the kit answers what tiny lacks
with `unsupported`); --bug mul_grad: a planted bug, d(a*b)/da = a instead of b (tools/driverkit/python/check_kit.sh).
"""
import contextlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import lockstep_driverkit as kit  # noqa: E402

# ---- part 1: tiny, a scalar-list autograd ----------------------------------------------------------------------
BUG = sys.argv[sys.argv.index("--bug") + 1] if "--bug" in sys.argv else None
GRAD_ENABLED = [True]


class Tensor:
    def __init__(self, data, shape, requires_grad=False, parents=(), saves=False):
        self.data, self.shape, self.requires_grad = [float(x) for x in data], list(shape), requires_grad
        self.parents = parents    # ((input, vjp), ...): vjp maps this output's grad to the input's
        self.saves, self.freed, self.grad = saves, False, None  # saves: backward reads the inputs' values


def node(data, shape, inputs, vjps, saves):
    tracked = GRAD_ENABLED[0] and any(t.requires_grad for t in inputs)
    parents = tuple((t, f) for t, f in zip(inputs, vjps) if t.requires_grad) if tracked else ()
    return Tensor(data, shape, tracked, parents, saves)


def binary(a, b, f, da, db, saves):  # same shapes, or one side 0-d (broadcast; its grad is summed)
    at = lambda t, i: t.data[i] if t.shape else t.data[0]
    shape = a.shape or b.shape
    n = max(len(a.data), len(b.data))
    fold = lambda t, g: g if t.shape or not shape else [sum(g)]
    return node([f(at(a, i), at(b, i)) for i in range(n)], shape, (a, b),
                (lambda g: fold(a, [g[i] * da(at(a, i), at(b, i)) for i in range(n)]),
                 lambda g: fold(b, [g[i] * db(at(a, i), at(b, i)) for i in range(n)])), saves)


def add(a, b): return binary(a, b, lambda x, y: x + y, lambda x, y: 1.0, lambda x, y: 1.0, False)
def sub(a, b): return binary(a, b, lambda x, y: x - y, lambda x, y: 1.0, lambda x, y: -1.0, False)
def mul(a, b): return binary(a, b, lambda x, y: x * y, lambda x, y: x if BUG == "mul_grad" else y, lambda x, y: x, True)
def square(x): return node([v * v for v in x.data], x.shape, (x,), (lambda g: [gi * (2.0 * v) for gi, v in zip(g, x.data)],), True)
def total(x): return node([sum(x.data)], [], (x,), (lambda g: [g[0]] * len(x.data),), False)


def backward(out, grad, retain_graph):
    order, seen = [], set()
    def visit(t):  # depth first: a node comes after every node that feeds into it
        if id(t) not in seen:
            seen.add(id(t))
            for p, _ in t.parents:
                visit(p)
            order.append(t)
    visit(out)
    grads = {id(out): grad}
    for t in reversed(order):
        g = grads.pop(id(t))
        if not t.parents:  # a leaf: a new grad tensor (SEM-3.1), or accumulated in place (SEM-3.2)
            if t.grad is None:
                t.grad = Tensor(g, t.shape)
            else:
                t.grad.data[:] = [x + y for x, y in zip(t.grad.data, g)]
            continue
        if t.freed:
            raise RuntimeError("backward through a graph whose saved values were freed")
        for p, vjp in t.parents:
            d = vjp(g)
            grads[id(p)] = [x + y for x, y in zip(grads[id(p)], d)] if id(p) in grads else d
        t.freed = t.saves and not retain_graph  # SEM-2.5: only a node that saved values can be freed


class SGD:
    def __init__(self, groups):
        self.param_groups, self.state = groups, {}

    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:  # SEM-4.3: a parameter without grad is skipped
                    continue
                d = p.grad.data
                if group["momentum"] != 0:  # SEM-5.3: the buffer starts as a copy of the first gradient
                    buf = self.state.setdefault(p, {}).get("momentum_buffer")
                    if buf is None:
                        buf = self.state[p]["momentum_buffer"] = Tensor(d, p.shape)
                    else:
                        buf.data[:] = [b * group["momentum"] + x for b, x in zip(buf.data, d)]
                    d = buf.data
                p.data[:] = [x - group["lr"] * y for x, y in zip(p.data, d)]  # in place (SEM-1.6)


# ---- part 2: the mapping to lockstep ---------------------------------------------------------------------------
class Tiny(kit.Framework):
    name, version = "tiny-autograd", "0.1"
    dtypes = ("float64",)
    optimizers = {"sgd": ["lr", "momentum"]}  # dampening, weight_decay, nesterov: only at their defaults
    lacks = ("create_graph",)
    defaults = {"zero_grad": "zero"}  # zero_grad() zeroes in place, as PyTorch < 2.0 (SEM-12.1)

    def supports(self): return None if "--undeclared" in sys.argv else self.capabilities()
    def parameter(self, values, dtype, shape): return Tensor(values, shape, requires_grad=True)
    def constant(self, values, dtype, shape): return Tensor(values, shape)
    def to_list(self, t): return t.data
    def dtype(self, t): return "float64"
    def shape(self, t): return t.shape
    def requires_grad(self, t): return t.requires_grad
    def has_grad_fn(self, t): return bool(t.parents)
    def op_add(self, a, b): return add(a, b)
    def op_sub(self, a, b): return sub(a, b)
    def op_mul(self, a, b): return mul(a, b)
    def op_square(self, x): return square(x)
    def op_sum(self, x):
        if not x.shape and x.requires_grad and not x.parents:  # LibTorch 1.13 would put this leaf's grad on the
            raise kit.Unsupported("sum of a 0-d parameter (SEM-3.7)")  # storage of another's (SEM-3.7); tiny won't
        return total(x)

    def backward(self, output, gradient, retain_graph, create_graph):
        if not output.requires_grad:
            raise kit.EngineError("no_grad_fn", "the output does not require grad")
        if gradient is None and len(output.data) != 1:  # SEM-2.4: one element, of any shape, is enough
            raise kit.EngineError("nonscalar_backward", "a non-scalar output needs a gradient")
        backward(output, gradient.data if gradient else [1.0], retain_graph)

    def classify(self, message): return "backward_through_freed_graph" if "freed" in message else "other"
    def grad(self, param): return param.grad
    def set_grad_none(self, param): param.grad = None

    @contextlib.contextmanager
    def no_grad(self):
        GRAD_ENABLED[0] = False
        try:
            yield
        finally:
            GRAD_ENABLED[0] = True

    def make_optimizer(self, kind, groups, defaults):
        if defaults["lr"] < 0 or defaults.get("momentum", 0) < 0:
            raise kit.EngineError("invalid_option", "invalid lr or momentum")
        return SGD(kit.resolve_groups(kind, groups, defaults))

    def zero_grad(self, optimizer, set_to_none):
        for p in (p for g in optimizer.param_groups for p in g["params"] if p.grad is not None):
            if set_to_none:  # SEM-4.2; None: the default declared above, zero in place (SEM-4.1)
                p.grad = None
            else:
                p.grad.data[:] = [0.0] * len(p.grad.data)

    def step(self, optimizer): optimizer.step()
    def state(self, optimizer, param): return optimizer.state.get(param)


if __name__ == "__main__":
    kit.serve(Tiny())
