# torch 1.13: a parameter listed twice in one Adam/AdamW group. foreach=False (and LibTorch) runs the update twice in
# sequence (step 1 then step 2, the second builds on the first); foreach=True batches each phase over the list:
# the shared step counter is incremented twice before either bias correction, exp_avg is scaled by beta1 twice and
# then gets both gradient terms, and both parameter updates use the same final moments.
import torch, warnings
warnings.simplefilter("ignore")  # "optimizer contains a parameter group with duplicate parameters"
print("torch", torch.__version__)
for cls in (torch.optim.Adam, torch.optim.AdamW):
    for foreach in (False, True):
        p = torch.tensor(0.0, requires_grad=True)
        opt = cls([p, p], lr=1e-3, foreach=foreach)
        p.backward()                            # p.grad = 1
        opt.step()
        s = opt.state[p]
        print("%-5s foreach=%-5s p: %.10f  exp_avg: %.8f  exp_avg_sq: %.8f  step: %d"
              % (cls.__name__, foreach, p.item(), s["exp_avg"].item(), s["exp_avg_sq"].item(), int(s["step"].item())))
