"""A planted bug in torch.optim.LBFGS itself: each move between two closure calls goes 1 % further than the direction
and step size the step computed (p + 1.01 t d; SEMANTICS §16.3). The grads, losses and counts stay the library's own,
so only the comparison's model of the moves (§16.5), fed with the adapter's observations, can see it: the corpus's
sem16-lbfgs-moves-between-closure-calls and live L-BFGS programs must fail with it (check_modes.sh, --mode single)."""
import torch


def _scaled_moves(step):
    def wrapped(self, closure):
        params = self.param_groups[0]["params"]
        before = []  # the parameters at the previous call

        def closure_after_a_longer_move():
            if before:  # a call after a move: lengthen the move by 1 %
                with torch.no_grad():
                    for p, b in zip(params, before):
                        p.add_(p - b, alpha=0.01)
            before[:] = [p.detach().clone() for p in params]
            return closure()
        return step(self, closure_after_a_longer_move)
    return wrapped


torch.optim.LBFGS.step = _scaled_moves(torch.optim.LBFGS.step)
