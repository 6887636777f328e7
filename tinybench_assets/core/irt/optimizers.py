"""Optimizers of the fit: full-batch L-BFGS in blocks (the default) and Adam."""

from __future__ import annotations

import math

import torch


def _run_lbfgs(obj, x, *, max_iter, tol, history_size, precondition=True, block=10):
    """Full-batch L-BFGS with strong Wolfe line search.

    torch's own tolerances are absolute and would stop early on large matrices (the mean
    objective's gradients are tiny there), so they are switched off; L-BFGS runs in blocks of
    ``block`` iterations (its history carries over) and stops when a block lowers the mean
    objective by less than ``tol`` per iteration, when a block makes no progress at all, or after
    ``max_iter`` iterations.
    """
    # diagonal preconditioning: optimise y = x / scale with scale_k ~ 1 / sqrt(cells touching k)
    scale = obj.precond() if precondition else torch.ones_like(x)
    fscale = obj.n_obs / float(obj.M + obj.I)  # optimise total / (M + I): O(1) gradients
    param = torch.nn.Parameter(x.clone() / scale)

    def closure():
        loss, grad = obj(param.data * scale)
        param.grad = grad * (scale * fscale)
        return torch.tensor(loss * fscale, dtype=torch.float64)

    opt = torch.optim.LBFGS(
        [param],
        lr=1.0,
        max_iter=block,
        max_eval=block * 25,
        tolerance_grad=1e-9,
        tolerance_change=1e-9,
        history_size=history_size,
        line_search_fn="strong_wolfe",
    )
    prev = obj(param.data * scale, need_grad=False)[0]
    loss = prev
    total_iter = 0
    converged = False
    while total_iter < max_iter:
        opt.param_groups[0]["max_iter"] = min(block, max_iter - total_iter)
        before = int(opt.state[opt._params[0]].get("n_iter", 0))
        opt.step(closure)
        done = int(opt.state[opt._params[0]].get("n_iter", 0)) - before
        total_iter += max(done, 1)
        loss = obj(param.data * scale, need_grad=False)[0]
        if not math.isfinite(loss):
            break
        if prev - loss < tol * max(done, 1):
            converged = True
            break
        prev = loss
    return param.data * scale, loss, total_iter, converged


def _run_adam(obj, x, *, max_iter, tol, lr):
    param = torch.nn.Parameter(x.clone())
    opt = torch.optim.Adam([param], lr=lr)
    prev = float("inf")
    it = 0
    converged = False
    for it in range(1, max_iter + 1):
        loss, grad = obj(param.data)
        param.grad = grad
        opt.step()
        if abs(prev - loss) < tol * max(1.0, abs(loss)) and it > 50:
            converged = True
            break
        prev = loss
    final_loss, _ = obj(param.data, need_grad=False)
    return param.data, final_loss, it, converged
