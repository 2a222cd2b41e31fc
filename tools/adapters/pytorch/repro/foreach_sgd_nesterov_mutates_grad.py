# torch 1.13: SGD(foreach=True, nesterov=True) with weight_decay == 0 adds momentum * momentum_buffer into p.grad in
# place (_multi_tensor_sgd: torch._foreach_add_(grads, bufs, alpha=momentum), where grads *is* the list of p.grad
# unless weight_decay != 0 made fresh tensors); foreach=False leaves p.grad alone.
import torch
print("torch", torch.__version__)
for wd in (0.0, 0.01):
    for foreach in (False, True):
        p = torch.tensor([1.0, -2.0], requires_grad=True)
        opt = torch.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True, weight_decay=wd, foreach=foreach)
        p.sum().backward()                      # p.grad = [1, 1]
        opt.step()
        g1 = p.grad.tolist()
        opt.step()                              # second step, no zero_grad
        print("weight_decay=%-4s foreach=%-5s grad after step 1: %-26s after step 2: %-28s p: %s"
              % (wd, foreach, [round(x, 6) for x in g1], [round(x, 6) for x in p.grad.tolist()],
                 [round(x, 6) for x in p.tolist()]))
