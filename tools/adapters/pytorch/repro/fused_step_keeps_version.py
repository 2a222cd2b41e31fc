# torch 2.x, fused=True optimizers on the CPU: the step updates the parameter without bumping its version counter, so
# a backward through a retained graph that saved the parameter before the step is not refused: it runs with the
# updated values. The single-tensor and foreach paths (and LibTorch's C++ Adam) bump the version and the backward
# raises "modified by an inplace operation" (SEMANTICS 2.9). Prints both; exits 0 while the deviation reproduces, 1
# once it does not, 2 when this torch has no fused CPU path.
import sys
import torch
print("torch", torch.__version__)
def run(cls, **kw):
    p = torch.tensor([0.5, 1.5, 2.0], requires_grad=True)
    opt = cls([p], lr=0.1, **kw)
    loss = (p * p).sum()                    # saves p
    loss.backward(retain_graph=True)
    v0 = p._version
    opt.step()
    v1 = p._version
    try:
        loss.backward()
        return "backward ran, grad %s" % [round(x, 6) for x in p.grad.tolist()], v0, v1
    except RuntimeError as e:
        return "refused: " + ("inplace_modified" if "inplace" in str(e) else str(e)[:60]), v0, v1
reproduces = False
for cls in (torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD):
    try:
        fused = run(cls, fused=True)
    except (RuntimeError, TypeError) as e:
        print("%s: no fused path on the CPU here (%s)" % (cls.__name__, str(e).splitlines()[0][:80]))
        continue
    single = run(cls, foreach=False)
    print("%-5s single: version %d -> %d, %s" % (cls.__name__, single[1], single[2], single[0]))
    print("%-5s fused:  version %d -> %d, %s" % (cls.__name__, fused[1], fused[2], fused[0]))
    reproduces = reproduces or (single[0].startswith("refused") and not fused[0].startswith("refused"))
if not reproduces and "fused" not in locals():
    sys.exit(2)
print("deviation reproduces" if reproduces else "no deviation")
sys.exit(0 if reproduces else 1)
