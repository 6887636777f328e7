"""Negative log posterior of the 2PL and its analytic gradient, chunked over rows (the objective ``fit_irt``
minimises; the priors are described in ``fit``'s docstring).

Pure numpy / torch: no Dagster or DuckDB here.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F


def _dtype(name) -> torch.dtype:
    if isinstance(name, torch.dtype):
        return name
    return {"float32": torch.float32, "float64": torch.float64, "double": torch.float64}[str(name)]


def _sign_matrix(y: np.ndarray, m: np.ndarray | None, rows: int) -> np.ndarray:
    """The int8 sign matrix S = 1 - 2y on observed cells (``m``; None: all), 0 on missing ones, built ``rows`` rows
    at a time."""
    sign = np.empty(y.shape, dtype=np.int8)
    for r0 in range(0, y.shape[0], rows):
        blk = 1 - 2 * y[r0 : r0 + rows].astype(np.int8)
        if m is not None:
            blk *= m[r0 : r0 + rows]
        sign[r0 : r0 + rows] = blk
    return sign


def _likelihood(s, rows: int, theta, a, b, cdt: torch.dtype, need_grad: bool) -> tuple:
    """(sum of softplus(S * z) over all cells as a float64 tensor, and when ``need_grad`` its gradients in theta, a
    and b, else None each), z = theta @ a.T - b, computed ``rows`` rows of the sign matrix ``s`` at a time.

    Parameters (and the optimizer state) are float64; the O(M * I) work runs in ``cdt``."""
    M = theta.shape[0]
    theta_c, a_c, nb_c = theta.to(cdt), a.to(cdt), b.neg().unsqueeze(0).to(cdt)
    aT_c = a_c.T.contiguous()
    total = torch.zeros((), dtype=torch.float64, device=s.device)
    g_theta = g_a = g_b = None
    if need_grad:
        g_theta = torch.empty_like(theta)
        g_a = torch.zeros_like(a)
        g_b = torch.zeros_like(b)
    for r0 in range(0, M, rows):
        r1 = min(M, r0 + rows)
        th = theta_c[r0:r1]
        z = torch.addmm(nb_c, th, a_c.T)  # (r, I) = th @ a.T - b
        sc = s[r0:r1].to(cdt)
        w = z.mul_(sc)  # S * z
        # row sums in cdt, then a float64 total (line searches need the precision)
        total += F.softplus(w).sum(1).sum(dtype=torch.float64)
        if need_grad:
            res = torch.sigmoid(w).mul_(sc)  # dNLL/dz = S * sigmoid(S * z)
            # (D, r) / (D, I) products: much faster than res @ a or res.T @ th for small D
            g_theta[r0:r1] = (aT_c @ res.T).T
            g_a.add_((th.T @ res).T)
            g_b.sub_(res.sum(0))
            del res
        del z, w, sc
    return total, g_theta, g_a, g_b


# --------------------------------------------------------------------------- objective
class _Objective:
    """Negative log posterior of the 2PL and its analytic gradient, chunked over rows.

    Parameters live in one flat float64 vector x = [phi (M*D), u (I*D), beta (I), mu_u (D), mu_b (1)]:
    theta = phi, or phi standardized per dimension (``standardize``); a = v or exp(v)
    ("lognormal") with v = mu_u + u, b = mu_b + beta when ``learn_means`` (non-centred), else
    v = u + prior centre, b = beta. The loss is the negative log posterior / observed cells.
    """

    def __init__(
        self,
        y,
        m,
        dim,
        *,
        theta_sd,
        standardize=False,
        learn_means=False,
        hyper_sd=10.0,
        a_prior,
        a_mean,
        a_sd,
        b_sd,
        chunk_cells,
        dtype,
        device,
        cache_cells=32_000_000,
    ):
        self.M, self.I = y.shape
        self.D = dim
        self.device = torch.device(device)
        self.dtype = dtype
        # sign matrix S = 1 - 2y on observed cells, 0 on missing ones: the cell's negative
        # log-likelihood is softplus(S * z) and its derivative S * sigmoid(S * z); a missing cell
        # then contributes the constant log 2 and no gradient, so no mask pass is needed.
        self.rows = max(1, int(chunk_cells // max(self.I, 1)))  # rows per chunk of the O(M * I) work
        self.s = torch.from_numpy(_sign_matrix(y, m, self.rows)).to(self.device)
        if self.M * self.I <= cache_cells:  # small enough: keep S in the compute dtype
            self.s = self.s.to(dtype)
        self.n_obs = float(self.M * self.I if m is None else int(m.sum()))
        self.n_missing = float(self.M * self.I) - self.n_obs
        if m is None:
            self.m_rows = self.m_cols = None
        else:
            self.m_rows = torch.from_numpy(m.sum(axis=1).astype(np.float64))
            self.m_cols = torch.from_numpy(m.sum(axis=0).astype(np.float64))
        if self.n_obs == 0:
            raise ValueError("no observed cells")
        self.theta_sd, self.a_prior, self.a_mean, self.a_sd, self.b_sd = theta_sd, a_prior, a_mean, a_sd, b_sd
        if a_prior not in ("normal", "lognormal"):
            raise ValueError("a_prior must be 'normal' or 'lognormal'")
        self._cache = None
        self.standardize = bool(standardize)
        self.learn_means = bool(learn_means)
        self.hyper_sd = float(hyper_sd)
        self.n_evals = 0

    def split(self, x):
        M, I, D = self.M, self.I, self.D
        theta = x[: M * D].view(M, D)
        u = x[M * D : M * D + I * D].view(I, D)
        b = x[M * D + I * D : M * D + I * D + I]
        return theta, u, b

    def hyper(self, x):
        """Prior means (mu_u (D,), mu_b (1,)), learned when ``learn_means``."""
        k = (self.M + self.I) * self.D + self.I
        return x[k : k + self.D], x[k + self.D :]

    def precond(self):
        """Diagonal scaling of x: 1 / sqrt(number of observed cells each parameter touches)."""
        dev, dt = self.device, torch.float64
        if self.m_rows is None:
            rows = torch.full((self.M,), float(self.I), dtype=dt, device=dev)
            cols = torch.full((self.I,), float(self.M), dtype=dt, device=dev)
        else:
            rows, cols = self.m_rows.to(dev, dt), self.m_cols.to(dev, dt)
        th = (1.0 / torch.sqrt(rows + 1.0)).repeat_interleave(self.D)
        it = 1.0 / torch.sqrt(cols + 1.0)
        hyp = torch.full((self.D + 1,), 1.0 / math.sqrt(self.n_obs + 1.0), dtype=dt, device=dev)
        s = torch.cat([th, it.repeat_interleave(self.D), it, hyp])
        # largest scale 1: a step in y is never smaller than in x, so L-BFGS's tolerance on the
        # parameter change keeps its meaning
        return s / s.max()

    def item_params(self, x):
        """Effective (a (I, D), b (I,)) of a parameter vector."""
        _, u, beta = self.split(x)
        mu_u, mu_b = self.hyper(x)
        if self.learn_means:
            return self.a_of(u + mu_u), beta + mu_b
        return self.a_of(u + self.u_center()), beta

    def u_center(self):
        """Fixed prior mean of u (used when the means are not learned, and to start them)."""
        if self.a_prior == "normal":
            return float(self.a_mean)
        return math.log(self.a_mean) if self.a_mean > 0 else 0.0

    def theta_of(self, phi):
        if not self.standardize:
            return phi
        return (phi - phi.mean(0)) / torch.sqrt(phi.var(0, unbiased=False) + 1e-8)

    def a_of(self, u):
        return torch.exp(u) if self.a_prior == "lognormal" else u

    def __call__(self, x, need_grad=True):
        """Return (loss, grad) with loss a python float (mean over observed cells)."""
        c = self._cache
        if c is not None and (c[2] is not None or not need_grad) and torch.equal(c[0], x):
            return c[1], (None if c[2] is None else c[2].clone())
        loss, grad = self._evaluate(x, need_grad)
        self._cache = (x.detach().clone(), loss, None if grad is None else grad.clone())
        return loss, grad

    def _evaluate(self, x, need_grad):
        self.n_evals += 1
        phi, u, b = self.split(x)
        if self.standardize:
            # theta = per-dimension standardized phi (mean 0, sd 1 over models): fixes the scale
            phi_r = phi.detach().requires_grad_(True)
            with torch.enable_grad():
                mu = phi_r.mean(0)
                var = phi_r.var(0, unbiased=False)
                theta_r = (phi_r - mu) / torch.sqrt(var + 1e-8)
                gauge = 0.5 * self.M * ((mu * mu).sum() + ((var - 1.0) ** 2).sum())
            theta = theta_r.detach()
        else:
            theta = phi
        # non-centred item parameters: a = a_of(mu_u + u), b = mu_b + beta, priors on u and beta
        mu_u, mu_b = self.hyper(x)
        beta = b
        if self.learn_means:
            v, b = u + mu_u, beta + mu_b
        else:
            v = u + self.u_center()
        a = self.a_of(v)
        total, g_theta, g_a, g_b = _likelihood(self.s, self.rows, theta, a, b, self.dtype, need_grad)
        total -= self.n_missing * math.log(2.0)
        # priors
        tsd2, asd2, bsd2 = self.theta_sd**2, self.a_sd**2, self.b_sd**2
        prior = torch.zeros((), dtype=x.dtype, device=x.device)
        if self.standardize:
            prior = prior + gauge.detach()
        else:
            prior = prior + 0.5 * (theta * theta).sum() / tsd2
        hsd2 = self.hyper_sd**2
        if self.learn_means:
            prior = prior + 0.5 * ((mu_u - self.u_center()) ** 2).sum() / hsd2 + 0.5 * (mu_b * mu_b).sum() / hsd2
        prior = prior + 0.5 * (u * u).sum() / asd2 + 0.5 * (beta * beta).sum() / bsd2
        total = total + prior.to(torch.float64)
        loss = float(total) / self.n_obs
        if not need_grad:
            return loss, None
        if self.standardize:
            g_phi = torch.autograd.grad((theta_r * g_theta).sum() + gauge, phi_r)[0]
            g_theta = g_phi
        else:
            g_theta.add_(theta / tsd2)
        g_v = g_a * a if self.a_prior == "lognormal" else g_a
        g_u = g_v + u / asd2
        g_beta = g_b + beta / bsd2
        if self.learn_means:
            g_mu_u = g_v.sum(0) + (mu_u - self.u_center()) / hsd2
            g_mu_b = g_b.sum().reshape(1) + mu_b / hsd2
        else:
            g_mu_u, g_mu_b = torch.zeros_like(mu_u), torch.zeros_like(mu_b)
        g_b = g_beta
        grad = torch.cat([g_theta.reshape(-1), g_u.reshape(-1), g_b, g_mu_u, g_mu_b]) / self.n_obs
        return loss, grad
