# torch 1.13: Adagrad(foreach=True) computes the step's learning rate as a float32 tensor: _multi_tensor_adagrad
# forms minus_clr = -lr / (1 + (step - 1) * lr_decay) from the state's step, a float32 0-d tensor, so clr is
# rounded to float32 (lr = 0.01 becomes 0.0099999997764825820922851562) and a float64 parameter's update is off by
# up to ~6e-8 of its size (about 2^29 float64 ULPs of the update). foreach=False takes step.item() (a Python float)
# and LibTorch (SEMANTICS 15.3) computes clr in double. float32 parameters are not affected (both cast clr to
# float32). Fixed upstream (2.x reads the step with _get_value). Exit 0: the deviation still holds; 1: it no
# longer does; 2: no torch.
import sys
try:
    import torch
except ImportError:
    print("torch is not installed"); sys.exit(2)
print("torch", torch.__version__)
out = {}
for dtype in (torch.float64, torch.float32):
    for foreach in (False, True):
        p = torch.tensor([0.0], dtype=dtype, requires_grad=True)
        opt = torch.optim.Adagrad([p], lr=0.01, foreach=foreach)
        p.sum().backward()                      # p.grad = 1, sum = 1, update = -lr * 1 / (1 + 1e-10)
        opt.step()
        out[(dtype, foreach)] = p.item()
        print("%-13s foreach=%-5s p after one step: %.17g" % (dtype, foreach, p.item()))
exact = -0.01 / (1 + 1e-10)
print("double clr, as LibTorch: %.17g" % exact)
ok = (out[(torch.float64, False)] == exact and out[(torch.float64, True)] != exact
      and out[(torch.float32, False)] == out[(torch.float32, True)])
sys.exit(0 if ok else 1)
