"""Fitting the multidimensional 2PL: ``fit_irt``, its defaults and priors.

The model is in ``model``, the objective in ``objective``, the start in ``start``, the optimizers
in ``optimizers``.

Default fit (``fit_irt``; every choice below is an option)
---------------------------------------------------------
* Abilities are standardized over the fitted models: ``theta = (phi - mean(phi)) / sd(phi)``
  per dimension (``standardize=True``). The likelihood only sees ``a . theta``, so without this
  the split of scale between ``a`` and ``theta`` is set by the priors and drifts with the matrix
  shape (joint MAP on 7 x 2,000 put |theta| near 12). With it, ``theta`` of the fitted models has
  mean 0 and sd 1, which is also the N(0, 1) prior ``estimate_ability`` uses for new models.
* Priors, hierarchical with learned means (``learn_means=True``)::

      a_jd ~ N(mu_a_d, a_sd^2),  a_sd = 0.6 / sqrt(D)      mu_a_d ~ N(0, 10^2)
      b_j  ~ N(mu_b,   b_sd^2),  b_sd = 3                  mu_b   ~ N(0, 10^2)

  ``a_sd`` shrinks with D so the prior variance of the logit does not grow with D. These
  values were chosen on held-out cells (10%) of the Open LLM leaderboard scenarios and the
  RouterDC matrices; learned means let a 7-model matrix keep a common "general ability"
  direction instead of shrinking every discrimination to 0. ``a_prior="lognormal"`` (positive
  discriminations, as py-irt) is available but predicted held-out cells worse for D >= 2.
* Optimizer: full-batch L-BFGS (strong Wolfe line search, history 20) on a diagonally
  preconditioned, non-centred parameter vector, started from a seeded randomized SVD of the
  centred response matrix; stops when 10 iterations lower the mean negative log posterior by
  less than ``tol = 1e-8`` per iteration (``max_iter = 1000``). Adam is available
  (``optimizer="adam"``): on the 300 x 5,000 benchmark it reached the same held-out loss in
  ~1.5x (lr 0.05) to ~4x (lr 0.02) the time; L-BFGS without the preconditioner took ~5x.
* Numerics: parameters and optimizer state in float64; the O(M * I) work (logits, softplus,
  sigmoid, gradient products) in float32 row chunks of ``chunk_cells = 4e6`` cells, the
  objective accumulated in float64. Responses are stored as an int8 sign matrix (1 - 2y, 0 on
  missing cells), so memory is ~1 byte per cell plus O(chunk_cells + (M + I) * D).

Pure numpy / torch / scipy: no Dagster or DuckDB here.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from .model import IRTParams, _prepare
from .objective import _dtype, _Objective
from .optimizers import _run_adam, _run_lbfgs
from .start import _init_x

__all__ = ["fit_irt", "A_SD_PER_DIM"]


# prior sd of each discrimination is A_SD_PER_DIM / sqrt(D), so the prior variance of the logit
# (sum of D terms) does not grow with D; chosen on held-out cells of the Open LLM leaderboard and
# RouterDC matrices (see benchmarks/irt_fit.py and the module docstring).
A_SD_PER_DIM = 0.6

_DEFAULTS = dict(
    theta_sd=1.0,
    standardize=True,
    learn_means=True,
    hyper_sd=10.0,
    a_prior="normal",
    a_mean=0.0,
    a_sd=None,
    b_sd=3.0,
    optimizer="lbfgs",
    max_iter=1000,
    tol=1e-8,
    history_size=20,
    precondition=True,
    init="svd",
    adam_lr=0.05,
    dtype="float32",
    chunk_cells=4_000_000,
)


def _options(options: dict, dim: int) -> tuple[dict, int]:
    """fit_irt's options over their defaults (TypeError for an unknown one) and D (ValueError below 1); a_sd
    defaults to A_SD_PER_DIM / sqrt(D)."""
    unknown = set(options) - set(_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown options {sorted(unknown)}")
    opt = {**_DEFAULTS, **options}
    dim = int(dim)
    if dim < 1:
        raise ValueError("dim must be >= 1")
    if opt["a_sd"] is None:
        opt["a_sd"] = A_SD_PER_DIM / math.sqrt(dim)
    return opt, dim


def _optimize(obj, x0, opt: dict) -> tuple:
    """(x, loss, iterations, converged) of the optimizer the options name (L-BFGS or Adam)."""
    if opt["optimizer"] == "lbfgs":
        return _run_lbfgs(
            obj,
            x0,
            max_iter=opt["max_iter"],
            tol=opt["tol"],
            history_size=opt["history_size"],
            precondition=opt["precondition"],
        )
    if opt["optimizer"] == "adam":
        return _run_adam(obj, x0, max_iter=opt["max_iter"], tol=opt["tol"], lr=opt["adam_lr"])
    raise ValueError(f"unknown optimizer {opt['optimizer']!r}")


def _objective(y8: np.ndarray, m, dim: int, opt: dict, dtype: torch.dtype, device: str) -> _Objective:
    """The negative log posterior of the 0/1 cells ``y8`` (observed where ``m``; None: all) with the options' priors
    and chunking."""
    return _Objective(
        y8,
        m,
        dim,
        theta_sd=opt["theta_sd"],
        standardize=opt["standardize"],
        learn_means=opt["learn_means"],
        hyper_sd=opt["hyper_sd"],
        a_prior=opt["a_prior"],
        a_mean=opt["a_mean"],
        a_sd=opt["a_sd"],
        b_sd=opt["b_sd"],
        chunk_cells=opt["chunk_cells"],
        dtype=dtype,
        device=device,
    )


def _finite_params(obj: _Objective, x, loss: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, theta) of the fitted vector ``x`` as float64 numpy arrays; FloatingPointError when any of them or the
    loss is not finite."""
    phi = obj.split(x)[0]
    theta = obj.theta_of(phi)
    a, b = obj.item_params(x)
    theta_np = theta.detach().to("cpu", torch.float64).numpy().copy()
    a_np = a.detach().to("cpu", torch.float64).numpy().copy()
    b_np = b.detach().to("cpu", torch.float64).numpy().copy()
    if not (
        np.isfinite(theta_np).all() and np.isfinite(a_np).all() and np.isfinite(b_np).all() and math.isfinite(loss)
    ):
        raise FloatingPointError("IRT fit produced non-finite parameters")
    return a_np, b_np, theta_np


def fit_irt(
    Y, mask=None, dim: int = 2, *, fitter: str = "torch", device: str = "cpu", seed: int = 0, **options
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
        :func:`tinybench_assets.core.irt.pyirt.fit_pyirt` (``options`` go to it).
    device : str -- torch device ("cpu", "cuda", "cuda:1", ...).
    seed : int -- seeds the initialisation; the fit is deterministic given the seed on CPU.
    **options : (defaults in brackets; see the module docstring for why)
        standardize [True] -- abilities standardized over the fitted models (else theta ~
        N(0, theta_sd^2) [1.0]); learn_means [True] -- learn the prior means of a and b;
        hyper_sd [10.0] -- prior sd of those means; a_prior ["normal"] | "lognormal";
        a_mean [0.0] -- prior mean of a (prior median for lognormal) when not learned, and the
        centre of its hyper-prior; a_sd [0.6 / sqrt(D)]; b_sd [3.0]; optimizer ["lbfgs"] | "adam";
        max_iter [1000]; tol [1e-8] -- stop when 10 L-BFGS iterations lower the mean objective
        by less than tol per iteration; history_size [20]; precondition [True];
        init ["svd"] | "accuracy"; adam_lr [0.05]; dtype ["float32"] | "float64" -- dtype of
        the O(M * I) work (parameters are always float64); chunk_cells [4e6] -- cells per
        likelihood chunk.

    Returns
    -------
    IRTParams with a (I, D), b (I,), theta (M, D).
    """
    if fitter in ("py-irt", "pyirt", "py_irt"):
        from .pyirt import fit_pyirt

        return fit_pyirt(Y, mask, dim, seed=seed, device=device, **options)
    if fitter != "torch":
        raise ValueError(f"unknown fitter {fitter!r}")
    opt, dim = _options(options, dim)
    t0 = time.perf_counter()
    dtype = _dtype(opt["dtype"])
    y8, m = _prepare(Y, mask)
    obj = _objective(y8, m, dim, opt, dtype, device)
    x0 = _init_x(obj, y8, m, seed, dtype, obj.device, init=opt["init"])
    x, loss, n_iter, converged = _optimize(obj, x0, opt)
    a_np, b_np, theta_np = _finite_params(obj, x, loss)
    seconds = time.perf_counter() - t0
    return IRTParams(
        a=a_np,
        b=b_np,
        theta=theta_np,
        loss=float(loss),
        n_iter=int(n_iter),
        seconds=seconds,
        device=str(obj.device),
        fitter="torch",
        info={
            "optimizer": opt["optimizer"],
            "converged": bool(converged),
            "n_evals": obj.n_evals,
            "n_obs": int(obj.n_obs),
            "options": opt,
            "seed": seed,
        },
    )
