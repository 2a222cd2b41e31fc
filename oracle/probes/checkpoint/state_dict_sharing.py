"""Black-box probe (SEMANTICS 19.4): does state_dict() hand out the optimizer's live state tensors, and does
load_state_dict() keep the dict's tensors or copies? Python only (C++'s archive is a serialisation). Run by run.sh's
side: /usr/bin/python3 oracle/probes/checkpoint/state_dict_sharing.py (1.13), and in the 2.x chroot (2.6)."""
import torch

print(torch.__version__)


def adam_after_steps(steps):
    w = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([w], lr=0.1)
    for _ in range(steps):
        w.grad = torch.tensor([3.0, 4.0], dtype=torch.float64)
        opt.step()
    return w, opt


w1, opt1 = adam_after_steps(2)
sd = opt1.state_dict()
live = opt1.state[w1]["exp_avg"]
print("state_dict's exp_avg is the optimizer's own tensor:", sd["state"][0]["exp_avg"] is live,
      "shares storage:", sd["state"][0]["exp_avg"].data_ptr() == live.data_ptr())
before = sd["state"][0]["exp_avg"].tolist()
w1.grad = torch.tensor([3.0, 4.0], dtype=torch.float64)
opt1.step()
print("after the saving optimizer steps again, the dict's exp_avg changed:", sd["state"][0]["exp_avg"].tolist() != before)

w2, opt2 = adam_after_steps(0)
sd2 = adam_after_steps(2)[1].state_dict()
opt2.load_state_dict(sd2)
loaded = opt2.state[w2]["exp_avg"]
print("loaded exp_avg is the dict's tensor:", loaded is sd2["state"][0]["exp_avg"],
      "shares storage:", loaded.data_ptr() == sd2["state"][0]["exp_avg"].data_ptr())
before = sd2["state"][0]["exp_avg"].tolist()
w2.grad = torch.tensor([3.0, 4.0], dtype=torch.float64)
opt2.step()
print("after the loading optimizer steps, the dict's exp_avg changed:", sd2["state"][0]["exp_avg"].tolist() != before)
print("step count type after loading:", type(opt2.state[w2]["step"]).__name__,
      getattr(opt2.state[w2]["step"], "dtype", None))
