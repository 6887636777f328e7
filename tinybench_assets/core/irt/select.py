"""Choice of the number of dimensions D by validation on held-out models (tinyBenchmarks tutorial protocol)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .ability import estimate_ability
from .fit import fit_irt
from .model import item_curve

__all__ = ["DimensionSelection", "select_dimension", "validation_split"]


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
        best_dim=best,
        errors=errors,
        per_model_errors=per_model,
        signed_errors=signed,
        bias=bias,
        val_models=val,
        seen_items=seen,
        unseen_items=unseen,
        seconds=secs,
    )
