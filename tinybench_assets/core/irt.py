"""Multidimensional 2PL item response theory: fast full-batch MAP fitting, ability estimation
and choice of the number of dimensions.

Model
-----
For model (subject) ``i`` with ability ``theta_i`` (D,) and item ``j`` with discrimination
``a_j`` (D,) and scalar intercept-difficulty ``b_j``::

    P(correct_ij) = sigmoid(sum_d a_jd * theta_id - b_j)

Priors (MAP; all configurable through ``fit_irt(**options)``)::

    theta_id ~ N(0, theta_sd^2)          theta_sd = 1
    a_jd     ~ N(a_mean, a_sd^2)         a_mean = 0, a_sd = 1        (a_prior="normal")
       or log a_jd ~ N(log_a_mean, a_sd^2)                            (a_prior="lognormal")
    b_j      ~ N(0, b_sd^2)              b_sd = 3

The default fitter minimises the negative log posterior over all observed cells with full-batch
L-BFGS (strong Wolfe line search) in torch. Loss and gradients are computed analytically in row
chunks, so memory is O(chunk_cells + (M + I) * D) besides the response matrix, which is held as
uint8 (plus a bool mask when cells are missing).

Pure numpy / torch / scipy: no Dagster or DuckDB here.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

__all__ = [
    "item_curve",
    "IRTParams",
    "fit_irt",
    "estimate_ability",
    "DimensionSelection",
    "select_dimension",
    "validation_split",
]


# --------------------------------------------------------------------------- helpers
def _sigmoid_np(z: np.ndarray) -> np.ndarray:
    out = np.empty_like(z, dtype=float)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


def item_curve(theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Probability of a correct answer for every (model, item) pair.

    Parameters
    ----------
    theta : ndarray, shape (M, D) -- abilities. A 1-d array of shape (D,) is one model.
    a : ndarray, shape (I, D) -- discriminations.
    b : ndarray, shape (I,) -- difficulties (intercepts).

    Also accepts the tinyBenchmarks layout ``theta`` (M, D, 1), ``a`` (1, D, I), ``b`` (1, 1, I) or
    (1, D, I), in which case it computes tinyBenchmarks' own curve
    ``sigmoid(sum_d clip(a_d * theta_d - b_d, -30, 30))`` (see ``IRTParams.to_tinybenchmarks``).

    Returns
    -------
    ndarray, shape (M, I) (or (I,) when ``theta`` is 1-d), probabilities.
    """
    theta = np.asarray(theta, dtype=float)
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if theta.ndim == 3 and a.ndim == 3:  # tinyBenchmarks layout
        z = np.clip(a * theta - b, -30, 30).sum(axis=1)
        return _sigmoid_np(z)
    single = theta.ndim == 1
    theta2 = np.atleast_2d(theta)
    a2 = a.reshape(a.shape[0], -1) if a.ndim == 2 else a.reshape(-1, theta2.shape[1])
    z = theta2 @ a2.T - b.reshape(1, -1)
    p = _sigmoid_np(z)
    return p[0] if single else p


@dataclass
class IRTParams:
    """Fitted multidimensional 2PL parameters.

    Attributes
    ----------
    a : ndarray, shape (I, D) -- item discriminations.
    b : ndarray, shape (I,) -- item difficulties (scalar intercepts; logit = theta @ a.T - b).
    theta : ndarray, shape (M, D) -- model abilities.
    loss : float -- final objective (negative log posterior / number of observed cells; for
        py-irt the final ELBO loss as py-irt reports it).
    n_iter : int -- optimizer iterations (L-BFGS iterations, Adam steps or SVI epochs).
    seconds : float -- wall time of the fit.
    device : str -- torch device used.
    fitter : str -- "torch" or "py-irt".
    info : dict -- extra diagnostics (optimizer, converged flag, options used).
    """

    a: np.ndarray
    b: np.ndarray
    theta: np.ndarray
    loss: float
    n_iter: int
    seconds: float
    device: str
    fitter: str
    info: dict = field(default_factory=dict)

    @property
    def dim(self) -> int:
        """Number of latent dimensions D."""
        return int(self.a.shape[1])

    @property
    def n_models(self) -> int:
        return int(self.theta.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.a.shape[0])

    def predict_proba(self, theta: np.ndarray | None = None) -> np.ndarray:
        """P(correct), shape (M, I), for the fitted abilities or for ``theta`` (M', D)."""
        return item_curve(self.theta if theta is None else theta, self.a, self.b)

    def to_tinybenchmarks(self) -> dict:
        """Arrays in the layout tinyBenchmarks' code reads.

        Returns
        -------
        dict with ``A`` shape (1, D, I), ``B`` shape (1, 1, I), ``Theta`` shape (M, D, 1).

        tinyBenchmarks computes ``sigmoid(sum_d (A_d * Theta_d - B))``, which subtracts ``B`` once
        per dimension, so ``B = b / D`` here: with that, tinyBenchmarks' ``item_curve(Theta, A, B)``
        equals ``predict_proba()`` (up to its per-term clip at +-30).
        """
        d = self.dim
        return {
            "A": self.a.T[None, :, :].copy(),
            "B": (self.b / d)[None, None, :].copy(),
            "Theta": self.theta[:, :, None].copy(),
        }


# --------------------------------------------------------------------------- data prep
def _prepare(Y, mask) -> tuple[np.ndarray, np.ndarray | None]:
    """Return (Y as uint8 (M, I), mask bool (M, I) or None when every cell is observed)."""
    Y = np.asarray(Y)
    if Y.ndim != 2:
        raise ValueError(f"Y must be 2-d (models x items), got shape {Y.shape}")
    if Y.dtype.kind == "f":
        nan = np.isnan(Y)
        m = ~nan
        if mask is not None:
            m &= np.asarray(mask, dtype=bool)
        y = np.where(nan, 0, Y)
        if np.any((y != 0) & (y != 1) & m):
            raise ValueError("Y must hold 0/1 (or NaN for missing); binarize scores first")
        y8 = (y > 0.5).astype(np.uint8)
    else:
        y8 = (Y > 0).astype(np.uint8) if Y.dtype != np.uint8 else Y
        if Y.dtype.kind in "iu" and np.any(Y > 1):
            raise ValueError("Y must hold 0/1")
        m = None if mask is None else np.asarray(mask, dtype=bool).copy()
    if m is not None:
        if m.shape != y8.shape:
            raise ValueError(f"mask shape {m.shape} != Y shape {y8.shape}")
        if m.all():
            m = None
        else:
            y8 = np.where(m, y8, 0).astype(np.uint8)
    return y8, m


def _dtype(name) -> torch.dtype:
    if isinstance(name, torch.dtype):
        return name
    return {"float32": torch.float32, "float64": torch.float64, "double": torch.float64}[str(name)]


# --------------------------------------------------------------------------- objective
class _Objective:
    """Negative log posterior of the 2PL and its analytic gradient, chunked over rows.

    Parameters live in one flat vector x = [theta (M*D), u (I*D), b (I)], where a = u
    (a_prior "normal") or a = exp(u) ("lognormal").
    """

    def __init__(self, y, m, dim, *, theta_sd, standardize=False, learn_means=False, hyper_sd=10.0, a_prior, a_mean, a_sd, b_sd, chunk_cells, dtype, device):
        self.M, self.I = y.shape
        self.D = dim
        self.device = torch.device(device)
        self.dtype = dtype
        self.y = torch.from_numpy(np.ascontiguousarray(y)).to(self.device)
        self.m = None if m is None else torch.from_numpy(np.ascontiguousarray(m)).to(self.device)
        self.n_obs = float(self.M * self.I if m is None else int(m.sum()))
        if self.n_obs == 0:
            raise ValueError("no observed cells")
        self.rows = max(1, int(chunk_cells // max(self.I, 1)))
        self.theta_sd, self.a_prior, self.a_mean, self.a_sd, self.b_sd = theta_sd, a_prior, a_mean, a_sd, b_sd
        if a_prior not in ("normal", "lognormal"):
            raise ValueError("a_prior must be 'normal' or 'lognormal'")
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
        a = self.a_of(u)
        total = torch.zeros((), dtype=torch.float64, device=self.device)
        if need_grad:
            g_theta = torch.empty_like(theta)
            g_a = torch.zeros_like(a)
            g_b = torch.zeros_like(b)
        for r0 in range(0, self.M, self.rows):
            r1 = min(self.M, r0 + self.rows)
            th = theta[r0:r1]
            z = torch.addmm(b.neg().unsqueeze(0), th, a.T)  # (r, I) = th @ a.T - b
            yc = self.y[r0:r1].to(self.dtype)
            # -log p(y | z) = softplus(z) - y * z
            nll = F.softplus(z) - yc * z
            if self.m is not None:
                mc = self.m[r0:r1]
                nll = nll.masked_fill_(~mc, 0.0)
            total += nll.sum(dtype=torch.float64)
            if need_grad:
                del nll
                res = torch.sigmoid(z).sub_(yc)  # dNLL/dz
                if self.m is not None:
                    res.masked_fill_(~mc, 0.0)
                g_theta[r0:r1] = res @ a
                g_a.addmm_(res.T, th)
                g_b.sub_(res.sum(0))
            del z, yc
        # priors
        tsd2, asd2, bsd2 = self.theta_sd**2, self.a_sd**2, self.b_sd**2
        prior = torch.zeros((), dtype=x.dtype, device=x.device)
        if self.standardize:
            prior = prior + gauge.detach()
        else:
            prior = prior + 0.5 * (theta * theta).sum() / tsd2
        mu_u, mu_b = self.hyper(x)
        if self.learn_means:
            du = u - mu_u
            db = b - mu_b
            hsd2 = self.hyper_sd**2
            prior = prior + 0.5 * ((mu_u - self.u_center()) ** 2).sum() / hsd2 + 0.5 * (mu_b * mu_b).sum() / hsd2
        else:
            du = u - self.u_center()
            db = b
        prior = prior + 0.5 * (du * du).sum() / asd2 + 0.5 * (db * db).sum() / bsd2
        total = total + prior.to(torch.float64)
        loss = float(total) / self.n_obs
        if not need_grad:
            return loss, None
        if self.standardize:
            g_phi = torch.autograd.grad((theta_r * g_theta).sum() + gauge, phi_r)[0]
            g_theta = g_phi
        else:
            g_theta.add_(theta / tsd2)
        if self.a_prior == "lognormal":
            g_u = g_a * a + du / asd2
        else:
            g_u = g_a + du / asd2
        g_b.add_(db / bsd2)
        if self.learn_means:
            g_mu_u = -du.sum(0) / asd2 + (mu_u - self.u_center()) / hsd2
            g_mu_b = -db.sum().reshape(1) / bsd2 + mu_b / hsd2
        else:
            g_mu_u, g_mu_b = torch.zeros_like(mu_u), torch.zeros_like(mu_b)
        grad = torch.cat([g_theta.reshape(-1), g_u.reshape(-1), g_b, g_mu_u, g_mu_b]) / self.n_obs
        return loss, grad


def _init_x(obj: _Objective, y8, m, seed, dtype, device, init_scale=0.1):
    """Deterministic start: b from smoothed item accuracy, theta/a small seeded noise."""
    M, I, D = obj.M, obj.I, obj.D
    if m is None:
        correct = y8.sum(axis=0, dtype=np.float64)
        count = np.full(I, float(M))
    else:
        correct = (y8 & m).sum(axis=0, dtype=np.float64)
        count = m.sum(axis=0, dtype=np.float64)
    p = (correct + 0.5) / (count + 1.0)
    b0 = -np.log(p / (1 - p))
    b0 = np.clip(b0, -3 * obj.b_sd, 3 * obj.b_sd)
    g = np.random.default_rng(seed)
    # abilities start at the (standardized) mean centred logit accuracy of each model plus noise,
    # discriminations at a positive constant plus noise, so dimension 1 starts as a "general" factor.
    if m is None:
        acc = (y8.mean(axis=1, dtype=np.float64) + 1e-3)
    else:
        acc = ((y8 & m).sum(axis=1, dtype=np.float64) + 0.5) / (m.sum(axis=1, dtype=np.float64) + 1.0)
    acc = np.clip(acc, 1e-3, 1 - 1e-3)
    la = np.log(acc / (1 - acc))
    la = (la - la.mean()) / (la.std() + 1e-9)
    theta0 = init_scale * g.standard_normal((M, D))
    theta0[:, 0] += la
    a0 = init_scale * g.standard_normal((I, D))
    a0[:, 0] += 1.0
    if obj.a_prior == "lognormal":
        u0 = np.log(np.abs(a0) + 0.05)
    else:
        u0 = a0
    mu_u0 = u0.mean(axis=0) if obj.learn_means else np.full(D, obj.u_center())
    mu_b0 = np.array([b0.mean() if obj.learn_means else 0.0])
    x0 = np.concatenate([theta0.ravel(), u0.ravel(), b0, mu_u0, mu_b0])
    return torch.tensor(x0, dtype=dtype, device=device)


# --------------------------------------------------------------------------- optimizers
def _run_lbfgs(obj, x, *, max_iter, tol, history_size):
    x = x.clone().requires_grad_(False)
    param = torch.nn.Parameter(x)
    opt = torch.optim.LBFGS(
        [param],
        lr=1.0,
        max_iter=max_iter,
        max_eval=int(max_iter * 1.5) + 10,
        tolerance_grad=tol * 1e-2,
        tolerance_change=tol,
        history_size=history_size,
        line_search_fn="strong_wolfe",
    )
    last = {}

    def closure():
        loss, grad = obj(param.data)
        param.grad = grad
        last["loss"] = loss
        return torch.tensor(loss, dtype=torch.float64)

    opt.step(closure)
    n_iter = int(opt.state[opt._params[0]].get("n_iter", 0))
    final_loss, _ = obj(param.data, need_grad=False)
    return param.data, final_loss, n_iter, n_iter < max_iter


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


# --------------------------------------------------------------------------- public API
# prior sd of each discrimination is A_SD_PER_DIM / sqrt(D), so the prior variance of the logit
# (sum of D terms) does not grow with D; chosen on held-out cells of the Open LLM leaderboard and
# RouterDC matrices (see benchmarks/irt_fit.py and the module docstring).
A_SD_PER_DIM = 0.6

_DEFAULTS = dict(
    theta_sd=1.0,
    standardize=True,
    learn_means=True,
    a_prior="normal",
    a_mean=0.0,
    a_sd=None,
    b_sd=3.0,
    optimizer="lbfgs",
    max_iter=1000,
    tol=1e-7,
    history_size=20,
    adam_lr=0.05,
    dtype="float32",
    chunk_cells=4_000_000,
)


def fit_irt(
    Y,
    mask=None,
    dim: int = 2,
    *,
    fitter: str = "torch",
    device: str = "cpu",
    seed: int = 0,
    **options,
) -> IRTParams:
    """Fit a D-dimensional 2PL to a binary response matrix.

    Parameters
    ----------
    Y : array-like, shape (M, I) -- 0/1 responses (models x items); NaN marks a missing cell.
        Integer / bool / uint8 arrays are accepted too.
    mask : bool array, shape (M, I), optional -- True where a cell is observed (combined with the
        NaN pattern of ``Y``).
    dim : int -- number of latent dimensions D.
    fitter : {"torch", "py-irt"} -- "torch" is the MAP fitter here; "py-irt" calls
        :func:`tinybench_assets.core.pyirt_backend.fit_pyirt` (``options`` go to it).
    device : str -- torch device ("cpu", "cuda", "cuda:1", ...).
    seed : int -- seeds the initialisation; the fit is deterministic given the seed on CPU.
    **options :
        theta_sd (1.0), a_prior ("normal" | "lognormal"), a_mean (0.0; for lognormal the prior
        median), a_sd (1.0), b_sd (3.0), optimizer ("lbfgs" | "adam"), max_iter (500),
        tol (1e-7, change of the mean objective that stops), history_size (20), adam_lr (0.05),
        dtype ("float32" | "float64"), chunk_cells (4e6 cells per likelihood chunk).

    Returns
    -------
    IRTParams with a (I, D), b (I,), theta (M, D).
    """
    if fitter in ("py-irt", "pyirt", "py_irt"):
        from tinybench_assets.core.pyirt_backend import fit_pyirt

        return fit_pyirt(Y, mask, dim, seed=seed, device=device, **options)
    if fitter != "torch":
        raise ValueError(f"unknown fitter {fitter!r}")
    unknown = set(options) - set(_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown options {sorted(unknown)}")
    opt = {**_DEFAULTS, **options}
    dim = int(dim)
    if dim < 1:
        raise ValueError("dim must be >= 1")
    if opt["a_sd"] is None:
        opt["a_sd"] = A_SD_PER_DIM / math.sqrt(dim)
    t0 = time.perf_counter()
    dtype = _dtype(opt["dtype"])
    y8, m = _prepare(Y, mask)
    obj = _Objective(
        y8, m, dim,
        theta_sd=opt["theta_sd"], standardize=opt["standardize"],
        learn_means=opt["learn_means"], a_prior=opt["a_prior"], a_mean=opt["a_mean"], a_sd=opt["a_sd"],
        b_sd=opt["b_sd"], chunk_cells=opt["chunk_cells"], dtype=dtype, device=device,
    )
    x0 = _init_x(obj, y8, m, seed, dtype, obj.device)
    if opt["optimizer"] == "lbfgs":
        x, loss, n_iter, converged = _run_lbfgs(
            obj, x0, max_iter=opt["max_iter"], tol=opt["tol"], history_size=opt["history_size"]
        )
    elif opt["optimizer"] == "adam":
        x, loss, n_iter, converged = _run_adam(obj, x0, max_iter=opt["max_iter"], tol=opt["tol"], lr=opt["adam_lr"])
    else:
        raise ValueError(f"unknown optimizer {opt['optimizer']!r}")
    phi, u, b = obj.split(x)
    theta = obj.theta_of(phi)
    a = obj.a_of(u)
    theta_np = theta.detach().to("cpu", torch.float64).numpy().copy()
    a_np = a.detach().to("cpu", torch.float64).numpy().copy()
    b_np = b.detach().to("cpu", torch.float64).numpy().copy()
    if not (np.isfinite(theta_np).all() and np.isfinite(a_np).all() and np.isfinite(b_np).all() and math.isfinite(loss)):
        raise FloatingPointError("IRT fit produced non-finite parameters")
    seconds = time.perf_counter() - t0
    return IRTParams(
        a=a_np, b=b_np, theta=theta_np, loss=float(loss), n_iter=int(n_iter), seconds=seconds,
        device=str(obj.device), fitter="torch",
        info={"optimizer": opt["optimizer"], "converged": bool(converged), "n_evals": obj.n_evals,
              "n_obs": int(obj.n_obs), "options": opt, "seed": seed},
    )


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
    y = torch.tensor(np.where(m, Y, 0.0), dtype=dt, device=dev)
    w = torch.tensor(m, dtype=dt, device=dev)
    A = torch.tensor(a, dtype=dt, device=dev)
    B = torch.tensor(b, dtype=dt, device=dev)
    D = A.shape[1]
    prec = 1.0 / prior_sd**2
    theta = torch.zeros(M, D, dtype=dt, device=dev)
    eye = torch.eye(D, dtype=dt, device=dev)

    def objective(th):  # negative log posterior per model, shape (M,)
        z = th @ A.T - B
        nll = (F.softplus(z) - y * z) * w
        return nll.sum(1) + 0.5 * prec * (th * th).sum(1)

    f = objective(theta)
    active = torch.ones(M, dtype=torch.bool, device=dev)
    for _ in range(max_iter):
        z = theta @ A.T - B
        p = torch.sigmoid(z)
        g = ((p - y) * w) @ A + prec * theta  # (M, D)
        h = (p * (1 - p) * w)  # (M, I)
        H = torch.einsum("mi,id,ie->mde", h, A, A) + prec * eye  # (M, D, D)
        step = torch.linalg.solve(H, g.unsqueeze(-1)).squeeze(-1)
        step = torch.where(active.unsqueeze(1), step, torch.zeros_like(step))
        t = torch.ones(M, dtype=dt, device=dev)
        new = theta - step
        f_new = objective(new)
        for _ in range(30):  # step halving where the objective did not decrease
            bad = f_new > f + 1e-12 * f.abs()
            if not bool(bad.any()):
                break
            t = torch.where(bad, t * 0.5, t)
            new = theta - t.unsqueeze(1) * step
            f_new = objective(new)
        theta, f = new, torch.minimum(f_new, f)
        moved = (t.unsqueeze(1) * step).abs().amax(1)
        active = active & (moved > tol)
        if not bool(active.any()):
            break
    out = theta.to("cpu", torch.float64).numpy()
    if not np.isfinite(out).all():
        raise FloatingPointError("ability estimation produced non-finite values")
    return out[0] if single else out


# --------------------------------------------------------------------------- choice of D
@dataclass
class DimensionSelection:
    """Validation of the number of IRT dimensions (tinyBenchmarks tutorial protocol).

    Attributes
    ----------
    best_dim : int -- candidate with the smallest mean absolute error.
    errors : dict[int, float] -- mean over held-out models of |predicted - actual| accuracy on the
        unseen half of items, per candidate D.
    per_model_errors : dict[int, ndarray (n_val,)] -- absolute errors per held-out model.
    signed_errors : dict[int, ndarray (n_val,)] -- predicted - actual per held-out model (bias).
    bias : dict[int, float] -- mean signed error per D.
    val_models : ndarray (n_val,) -- row indices of the held-out models.
    seen_items, unseen_items : ndarray -- column indices of the two item halves.
    seconds : dict[int, float] -- fit time per D.
    """

    best_dim: int
    errors: dict
    per_model_errors: dict
    signed_errors: dict
    bias: dict
    val_models: np.ndarray
    seen_items: np.ndarray
    unseen_items: np.ndarray
    seconds: dict = field(default_factory=dict)

    @property
    def best_per_model_errors(self) -> np.ndarray:
        return self.per_model_errors[self.best_dim]

    @property
    def best_signed_errors(self) -> np.ndarray:
        return self.signed_errors[self.best_dim]


def validation_split(n_models: int, n_items: int, *, seed: int = 0, every: int = 5):
    """Held-out models (every ``every``-th row) and a seeded random half of the items.

    Returns
    -------
    (val_models, train_models, seen_items, unseen_items), index arrays.
    """
    rows = np.arange(n_models)
    val = rows[(rows % every) == 0]
    train = rows[(rows % every) != 0]
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n_items)
    half = n_items // 2
    seen = np.sort(perm[:half])
    unseen = np.sort(perm[half:])
    return val, train, seen, unseen


def select_dimension(
    Y,
    mask=None,
    candidates: Sequence[int] = (1, 2, 5, 10),
    *,
    seed: int = 0,
    device: str = "cpu",
    prior_sd: float = 1.0,
    **fit_options,
) -> DimensionSelection:
    """Choose D as in the tinyBenchmarks tutorial.

    Every 5th model is held out; the IRT model is fitted on the other models over all items; the
    held-out models' abilities are estimated from a seeded random half of the items ("seen") and
    the predicted accuracy (mean of P over the unseen half) is compared with the actual accuracy
    (mean of Y over the observed unseen cells).

    Parameters
    ----------
    Y : array-like, shape (M, I) -- 0/1 responses, NaN = missing.
    mask : bool array (M, I), optional.
    candidates : sequence of int -- dimensions to try.
    seed : int -- seeds the item split and every fit.
    device : str -- torch device.
    prior_sd : float -- ability prior sd for the held-out models.
    **fit_options -- passed to :func:`fit_irt` (may include ``fitter``).

    Returns
    -------
    DimensionSelection
    """
    Y = np.asarray(Y, dtype=float)
    M, I = Y.shape
    obs = ~np.isnan(Y)
    if mask is not None:
        obs &= np.asarray(mask, dtype=bool)
    Yn = np.where(obs, Y, np.nan)
    val, train, seen, unseen = validation_split(M, I, seed=seed)
    if len(val) == 0 or len(train) == 0:
        raise ValueError("need at least 2 models to validate the dimension")
    y_unseen = Yn[np.ix_(val, unseen)]
    n_unseen = np.sum(~np.isnan(y_unseen), axis=1)
    keep = n_unseen > 0
    actual = np.nansum(y_unseen, axis=1) / np.maximum(n_unseen, 1)
    errors, per_model, signed, bias, secs = {}, {}, {}, {}, {}
    for d in candidates:
        d = int(d)
        params = fit_irt(Yn[train], None, d, seed=seed, device=device, **fit_options)
        th = estimate_ability(Yn[np.ix_(val, seen)], params.a[seen], params.b[seen], prior_sd=prior_sd, device=device)
        p = item_curve(th, params.a[unseen], params.b[unseen])
        p = np.where(np.isnan(y_unseen), np.nan, p)
        pred = np.nansum(p, axis=1) / np.maximum(n_unseen, 1)
        s = (pred - actual)[keep]
        signed[d] = s
        per_model[d] = np.abs(s)
        errors[d] = float(np.mean(np.abs(s)))
        bias[d] = float(np.mean(s))
        secs[d] = params.seconds
    best = min(errors, key=lambda k: (errors[k], k))
    return DimensionSelection(
        best_dim=best, errors=errors, per_model_errors=per_model, signed_errors=signed, bias=bias,
        val_models=val, seen_items=seen, unseen_items=unseen, seconds=secs,
    )
