"""Item rankings for MAGI subsets: a *keep score* per item (higher = kept longer, deleted later).

Every ranking returns ``keep`` (n_items,) and, when the voters influence it, ``loo`` (n_voters, n_items):
row v is the keep score computed with voter v left out (vectorized: the mean over voters is updated as
(n * mean - y_v) / (n - 1), nothing is re-run). IRT rankings are fitted without the voters, so their
``loo`` is None: the voters do not influence them and their voter penalty is exactly zero.

Methods
-------
mean_score      minus the voters' mean score: items the voters find hard are kept.
ref_vs_voters   reference score minus the voters' mean: items the reference got wrong go first.
irt             IRT difficulty (intercept b of P = sigmoid(a theta - b)): hard items kept.
irt_discrimination  IRT discrimination ||a||.
irt_information Fisher information a^2 p (1 - p) averaged over the abilities of the top-k models;
                needs no reference model.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

METHODS = ("mean_score", "ref_vs_voters", "irt", "irt_discrimination", "irt_information")
VOTER_METHODS = ("mean_score", "ref_vs_voters")
TIE_EPS = 1e-7  # below any difference of means over <= 1,000 voters


@dataclass
class Ranking:
    """keep : (n_items,) keep score with ties broken; loo : (n_voters, n_items) or None; method : str."""

    method: str
    keep: np.ndarray
    loo: np.ndarray | None = None

    def order(self) -> np.ndarray:
        """Item indices from the first deleted to the last kept, shape (n_items,)."""
        return np.argsort(self.keep, kind="stable")


def tie_breaker(n_items: int, seed: int) -> np.ndarray:
    """A fixed seeded tie-breaker in [0, TIE_EPS), shape (n_items,): the same for the full and the LOO rankings."""
    return np.random.default_rng(seed).random(n_items) * TIE_EPS


def voter_means(Yv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Voters' mean per item (n_items,) and the leave-one-out means (n_voters, n_items).

    ``Yv`` : (n_voters, n_items) 0/1 scores of the voters.
    """
    Yv = np.asarray(Yv, dtype=float)
    n = Yv.shape[0]
    mean = Yv.mean(axis=0)
    if n < 2:
        return mean, np.zeros_like(Yv)
    return mean, (n * mean[None, :] - Yv) / (n - 1)


def rank_mean_score(Yv: np.ndarray, seed: int = 0) -> Ranking:
    mean, loo = voter_means(Yv)
    tb = tie_breaker(Yv.shape[1], seed)
    return Ranking("mean_score", -mean + tb, -loo + tb)


def rank_ref_vs_voters(Yv: np.ndarray, y_ref: np.ndarray, seed: int = 0) -> Ranking:
    """``y_ref`` : (n_items,) the reference model's scores (the reference is never a voter)."""
    mean, loo = voter_means(Yv)
    tb = tie_breaker(Yv.shape[1], seed)
    y_ref = np.asarray(y_ref, dtype=float)
    return Ranking("ref_vs_voters", y_ref - mean + tb, y_ref[None, :] - loo + tb)


def information(theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Fisher information of each item at each ability, shape (n_theta, n_items).

    theta (n_theta, D), a (n_items, D), b (n_items,): I = ||a||^2 p (1 - p) with p = sigmoid(a . theta - b)
    (exact for D = 1; for D > 1 the information along the direction of a).
    """
    theta = np.atleast_2d(np.asarray(theta, dtype=float))
    a = np.asarray(a, dtype=float).reshape(len(b), -1)
    z = np.clip(theta @ a.T - np.asarray(b, dtype=float)[None, :], -30, 30)
    p = 1.0 / (1.0 + np.exp(-z))
    return (a ** 2).sum(axis=1)[None, :] * p * (1 - p)


def rank_irt(a: np.ndarray, b: np.ndarray, method: str = "irt", theta_top: np.ndarray | None = None,
             seed: int = 0) -> Ranking:
    """IRT rankings; ``a`` (n_items, D), ``b`` (n_items,), ``theta_top`` (k, D) abilities of the top models."""
    tb = tie_breaker(len(b), seed)
    a2 = np.asarray(a, dtype=float).reshape(len(b), -1)
    # items whose correct answer does not rise with ability (a . 1 <= 0, abilities oriented so that higher =
    # more accurate, see orient_irt) would invert a sum score: they go first whatever the ranking
    inverted = a2.sum(axis=1) <= 0
    if method == "irt":
        keep = np.asarray(b, dtype=float)
    elif method == "irt_discrimination":
        keep = np.linalg.norm(a2, axis=1)
    elif method == "irt_information":
        if theta_top is None or len(theta_top) == 0:
            raise ValueError("irt_information needs the abilities of the top models")
        keep = information(theta_top, a2, b).mean(axis=0)
    else:
        raise ValueError(f"unknown IRT ranking {method!r}")
    keep = np.where(inverted, np.min(keep) - 1.0 - np.abs(keep), keep)
    return Ranking(method, keep + tb, None)


def demote(ranking: Ranking, bad: np.ndarray) -> Ranking:
    """The same ranking with the ``bad`` items (n_items,) bool deleted first (below every other item, in their
    own order), in ``keep`` and in every leave-one-out row alike, so the guard adds no voter penalty."""
    bad = np.asarray(bad, dtype=bool)
    if not bad.any() or bad.all():
        return ranking

    def low(k):
        k = np.asarray(k, dtype=float)
        floor = k.min(axis=-1, keepdims=True)
        span = k.max(axis=-1, keepdims=True) - floor + 1.0
        return np.where(bad, k - span, k)  # bad items shift below the minimum, order among them kept

    return Ranking(ranking.method, low(ranking.keep), None if ranking.loo is None else low(ranking.loo))


def orient_irt(a: np.ndarray, b: np.ndarray, theta: np.ndarray, accuracy: np.ndarray):
    """Flip latent dimensions whose abilities correlate negatively with accuracy, so that a_jd > 0 means
    "more able, more often right". a (n_items, D), theta (n_models, D), accuracy (n_models,).
    Returns (a, b, theta) oriented (b is unchanged by a flip)."""
    a = np.asarray(a, dtype=float).reshape(len(b), -1).copy()
    theta = np.asarray(theta, dtype=float).reshape(len(accuracy), -1).copy()
    for d in range(a.shape[1]):
        if np.corrcoef(theta[:, d], accuracy)[0, 1] < 0:
            a[:, d] *= -1
            theta[:, d] *= -1
    return a, np.asarray(b, dtype=float), theta


def subset_mask(keep: np.ndarray, k: int, groups: np.ndarray | None = None) -> np.ndarray:
    """Boolean mask of the k items with the highest keep score; ``keep`` (n_items,) or (n_rows, n_items).

    With ``groups`` (n_items,) (the scenarios) every group keeps its share of k (largest remainder of
    k * n_group / n_items, at least one item), the best items within each group: the subset then weighs the
    scenarios as the pool does.
    """
    keep = np.asarray(keep)
    if groups is not None:
        groups = np.asarray(groups)
        names, sizes = np.unique(groups, return_counts=True)
        if len(names) > 1:
            raw = k * sizes / sizes.sum()
            quota = np.maximum(np.floor(raw).astype(int), 1)
            while quota.sum() < k:
                quota[int(np.argmax(raw - quota))] += 1
            mask = np.zeros(keep.shape, dtype=bool)
            for name, q in zip(names, quota):
                cols = np.flatnonzero(groups == name)
                mask[..., cols] = subset_mask(keep[..., cols], min(int(q), len(cols)))
            return mask
    k = int(np.clip(k, 0, keep.shape[-1]))
    mask = np.zeros(keep.shape, dtype=bool)
    if k == 0:
        return mask
    idx = np.argpartition(-keep, k - 1, axis=-1)[..., :k]
    np.put_along_axis(mask, idx, True, axis=-1)
    return mask
