# torch 1.13: Adam(foreach=True) with weight_decay != 0 adds weight_decay * p into p.grad in place
# (_multi_tensor_adam: torch._foreach_add_(grads, params, alpha=weight_decay)); foreach=False leaves p.grad alone.
import torch
print("torch", torch.__version__)
for cls in (torch.optim.Adam, torch.optim.AdamW):
    for foreach in (False, True):
        p = torch.tensor([1.0, -3.0], requires_grad=True)
        opt = cls([p], lr=1e-3, weight_decay=0.5, foreach=foreach)
        p.sum().backward()                      # p.grad = [1, 1]
        held = p.grad                           # a handle to the grad tensor
        opt.step()
        g1 = p.grad.tolist()
        opt.step()                              # second step, no zero_grad: reads p.grad again
        print("%-5s foreach=%-5s grad after step 1: %-22s after step 2: %-26s held handle: %-26s p: %s"
              % (cls.__name__, foreach, g1, [round(x, 6) for x in p.grad.tolist()],
                 [round(x, 6) for x in held.tolist()], [round(x, 7) for x in p.tolist()]))
