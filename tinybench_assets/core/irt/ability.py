"""Abilities of new models with the item parameters held fixed (batched MAP, damped Newton)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["estimate_ability"]


def estimate_ability(
    Y,
    a,
    b,
    mask=None,
    *,
    prior_sd: float = 1.0,
    device: str = "cpu",
    max_iter: int = 100,
    tol: float = 1e-8,
    chunk_cells: int = 4_000_000,
) -> np.ndarray:
    """MAP abilities of many models at once, item parameters held fixed.

    Maximises, for every model independently (one batched damped-Newton run, float64)::

        sum_j mask_ij [y_ij log p_ij + (1 - y_ij) log(1 - p_ij)] - |theta_i|^2 / (2 prior_sd^2)
        with p_ij = sigmoid(a_j . theta_i - b_j).

    The objective is strictly concave, so Newton with step halving converges to the unique MAP;
    the prior keeps all-correct / all-wrong answer vectors finite.

    Parameters
    ----------
    Y : array-like, shape (M, I_sub) or (I_sub,) -- 0/1 answers (NaN = not answered).
    a : ndarray, shape (I_sub, D); b : ndarray, shape (I_sub,) -- parameters of those items.
    mask : bool array, shape (M, I_sub), optional -- True = answered.
    prior_sd : float -- sd of the N(0, prior_sd^2 I) prior on theta.
    device : str -- torch device.
    max_iter : int -- Newton iterations at most.  tol : float -- stop when max |step| < tol.
    chunk_cells : int -- models are processed in batches of about this many cells.

    Returns
    -------
    ndarray, shape (M, D) (or (D,) when ``Y`` is 1-d).
    """
    Y = np.asarray(Y, dtype=float)
    single = Y.ndim == 1
    Y = np.atleast_2d(Y)
    a = np.asarray(a, dtype=float)
    if a.ndim == 1:
        a = a[:, None]
    b = np.asarray(b, dtype=float).reshape(-1)
    M, I = Y.shape
    if a.shape[0] != I or b.shape[0] != I:
        raise ValueError(f"Y has {I} items but a has {a.shape[0]} and b {b.shape[0]}")
    m = ~np.isnan(Y)
    if mask is not None:
        m &= np.atleast_2d(np.asarray(mask, dtype=bool))
    dev = torch.device(device)
    dt = torch.float64 if dev.type != "mps" else torch.float32
    A = torch.tensor(a, dtype=dt, device=dev)
    B = torch.tensor(b, dtype=dt, device=dev)
    AA = (A[:, :, None] * A[:, None, :]).reshape(I, -1)  # (I, D*D): a_j a_j^T, flattened
    rows = max(1, int(chunk_cells // max(I, 1)))
    parts = []
    for r0 in range(0, M, rows):  # batches of models, each one batched Newton run
        y = torch.tensor(np.where(m[r0 : r0 + rows], Y[r0 : r0 + rows], 0.0), dtype=dt, device=dev)
        w = torch.tensor(m[r0 : r0 + rows], dtype=dt, device=dev)
        parts.append(_newton_abilities(y, w, A, B, AA, 1.0 / prior_sd**2, max_iter, tol))
    theta = torch.cat(parts) if parts else torch.zeros(0, a.shape[1], dtype=dt)
    out = theta.to("cpu", torch.float64).numpy()
    if not np.isfinite(out).all():
        raise FloatingPointError("ability estimation produced non-finite values")
    return out[0] if single else out


def _newton_abilities(y, w, A, B, AA, prec, max_iter, tol):
    """Batched damped Newton for the per-model MAP; y, w (M, I), A (I, D), B (I,), AA (I, D*D)."""
    M, D = y.shape[0], A.shape[1]
    dt, dev = y.dtype, y.device
    theta = torch.zeros(M, D, dtype=dt, device=dev)
    eye = torch.eye(D, dtype=dt, device=dev)

    def objective(th):  # negative log posterior per model, shape (M,)
        z = th @ A.T - B
        nll = (F.softplus(z) - y * z) * w
        return nll.sum(1) + 0.5 * prec * (th * th).sum(1)

    f = objective(theta)
    active = torch.ones(M, dtype=torch.bool, device=dev)
    for _ in range(max_iter):
        p = torch.sigmoid(theta @ A.T - B)
        g = ((p - y) * w) @ A + prec * theta  # (M, D)
        H = ((p * (1 - p) * w) @ AA).reshape(M, D, D) + prec * eye  # (M, D, D), positive definite
        step = torch.linalg.solve(H, g.unsqueeze(-1)).squeeze(-1)
        step = torch.where(active.unsqueeze(1), step, torch.zeros_like(step))
        t = torch.ones(M, dtype=dt, device=dev)
        new = theta - step
        f_new = objective(new)
        for _ in range(40):  # halve the step where the objective did not decrease
            bad = f_new > f + 1e-12 * f.abs()
            if not bool(bad.any()):
                break
            t = torch.where(bad, t * 0.5, t)
            new = theta - t.unsqueeze(1) * step
            f_new = objective(new)
        bad = f_new > f + 1e-12 * f.abs()  # still no decrease: keep the old point
        new = torch.where(bad.unsqueeze(1), theta, new)
        moved = (new - theta).abs().amax(1)
        theta, f = new, torch.where(bad, f, f_new)
        active = active & (moved > tol)
        if not bool(active.any()):
            break
    return theta
