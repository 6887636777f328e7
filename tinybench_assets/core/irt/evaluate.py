"""Held-out evaluation of a fitted IRT model on models it never saw."""

from __future__ import annotations

import numpy as np

from .ability import estimate_ability
from .model import item_curve


def heldout_scores(Y: np.ndarray, a: np.ndarray, b: np.ndarray, seed: int = 0, device: str = "cpu") -> dict:
    """Abilities from a random half of the items, scored on the other half.

    Parameters
    ----------
    Y : (M, I) 0/1 responses of held-out models, NaN = missing.
    a : (I, D), b : (I,) fitted item parameters.

    Returns
    -------
    dict with ``logloss`` (mean per observed cell), ``accuracy`` (P > 0.5 vs Y) and
    ``score_mae`` (mean |predicted - actual| accuracy on the unseen half), over M models.
    """
    Y = np.asarray(Y, dtype=float)
    if Y.shape[0] == 0:
        return {"logloss": float("nan"), "accuracy": float("nan"), "score_mae": float("nan"), "n_models": 0}
    rng = np.random.default_rng(seed)
    perm = rng.permutation(Y.shape[1])
    seen, unseen = np.sort(perm[: len(perm) // 2]), np.sort(perm[len(perm) // 2 :])
    theta = estimate_ability(Y[:, seen], a[seen], b[seen], device=device)
    p = np.clip(item_curve(theta, a[unseen], b[unseen]), 1e-7, 1 - 1e-7)
    y = Y[:, unseen]
    obs = ~np.isnan(y)
    ll = -(np.where(obs, y * np.log(p) + (1 - np.nan_to_num(y)) * np.log(1 - p), 0)).sum() / obs.sum()
    acc = (np.where(obs, (p > 0.5) == (y == 1), False)).sum() / obs.sum()
    n = np.maximum(obs.sum(axis=1), 1)
    pred = np.where(obs, p, 0).sum(axis=1) / n
    actual = np.nansum(y, axis=1) / n
    return {
        "logloss": float(ll),
        "accuracy": float(acc),
        "score_mae": float(np.mean(np.abs(pred - actual))),
        "n_models": int(Y.shape[0]),
    }
