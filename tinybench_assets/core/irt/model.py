"""The multidimensional 2PL model: its parameters, its item curve, and the response data it is fitted to.

For model (subject) ``i`` with ability ``theta_i`` (D,) and item ``j`` with discrimination
``a_j`` (D,) and scalar intercept-difficulty ``b_j``::

    P(correct_ij) = sigmoid(sum_d a_jd * theta_id - b_j)

The log-likelihood of a 0/1 response matrix under this curve (and the priors) is the objective of
``objective._Objective``; fitting is in ``fit``. Pure numpy: no torch, Dagster or DuckDB here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["item_curve", "IRTParams"]


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
def _prepare(Y, mask, chunk_cells: int = 4_000_000) -> tuple[np.ndarray, np.ndarray | None]:
    """Validate responses, in row chunks (no full-size float temporaries).

    Returns
    -------
    y8 : uint8 (M, I), 1 = correct (0 on missing cells).
    m : bool (M, I) observed-cell mask, or None when every cell is observed.
    """
    Y = np.asarray(Y)
    if Y.ndim != 2:
        raise ValueError(f"Y must be 2-d (models x items), got shape {Y.shape}")
    M, I = Y.shape
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != Y.shape:
            raise ValueError(f"mask shape {mask.shape} != Y shape {Y.shape}")
    step = max(1, chunk_cells // max(I, 1))
    if Y.dtype == np.uint8 and mask is None:  # already in the storage format: no copy
        for r0 in range(0, M, step):
            if Y[r0 : r0 + step].max(initial=0) > 1:
                raise ValueError("Y must hold 0/1")
        return Y, None
    y8 = np.empty((M, I), dtype=np.uint8)
    m = np.empty((M, I), dtype=bool)
    for r0 in range(0, M, step):
        blk = Y[r0 : r0 + step]
        if blk.dtype.kind == "f":
            ok = ~np.isnan(blk)
            if np.any(ok & (blk != 0) & (blk != 1)):
                raise ValueError("Y must hold 0/1 (or NaN for missing); binarize scores first")
            yb = blk == 1
        elif blk.dtype == bool:
            ok = np.ones(blk.shape, dtype=bool)
            yb = blk
        elif blk.dtype.kind in "iu":
            if np.any((blk < 0) | (blk > 1)):
                raise ValueError("Y must hold 0/1")
            ok = np.ones(blk.shape, dtype=bool)
            yb = blk == 1
        else:
            raise TypeError(f"unsupported dtype {Y.dtype}")
        if mask is not None:
            ok &= mask[r0 : r0 + step]
        y8[r0 : r0 + step] = yb & ok
        m[r0 : r0 + step] = ok
    if m.all():
        m = None
    return y8, m
