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
                needs no reference model. With ``direction`` (a unit vector in ability space, e.g. the
                full-score direction of a multidimensional fit) the information along it: (a . u)^2 p (1 - p).
top_discrimination  the covariance of the item with the real full score among the top-K tune models: items
                that split the strong models along the full-score direction (no IRT, no voters).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

METHODS = ("mean_score", "ref_vs_voters", "irt", "irt_discrimination", "irt_information", "top_discrimination")
VOTER_METHODS = ("mean_score", "ref_vs_voters")
TIE_EPS = 1e-7  # below any difference of means over <= 1,000 voters


@dataclass
class Ranking:
    """keep : (n_items,) keep score with ties broken; loo : (n_voters, n_items) or None; method : str;
    strata : (n_items,) str or None, the groups of stratified deletion ("" = a demoted item: no quota)."""

    method: str
    keep: np.ndarray
    loo: np.ndarray | None = None
    strata: np.ndarray | None = None

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
    return (a**2).sum(axis=1)[None, :] * p * (1 - p)


def directional_information(theta: np.ndarray, a: np.ndarray, b: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Fisher information of each item along the unit ability direction u, shape (n_theta, n_items):
    (a . u)^2 p (1 - p) with p = sigmoid(a . theta - b). theta (n_theta, D), a (n_items, D), u (D,)."""
    theta = np.atleast_2d(np.asarray(theta, dtype=float))
    a = np.asarray(a, dtype=float).reshape(len(b), -1)
    u = np.asarray(direction, dtype=float).reshape(-1)
    u = u / max(np.linalg.norm(u), 1e-12)
    z = np.clip(theta @ a.T - np.asarray(b, dtype=float)[None, :], -30, 30)
    p = 1.0 / (1.0 + np.exp(-z))
    return ((a @ u) ** 2)[None, :] * p * (1 - p)


def full_score_direction(theta_top: np.ndarray, full_top: np.ndarray) -> np.ndarray:
    """The unit direction in ability space along which the full score rises among the top models: the least-
    squares slopes of ``full_top`` (k,) on ``theta_top`` (k, D), normalized; shape (D,)."""
    theta_top = np.atleast_2d(np.asarray(theta_top, dtype=float))
    X = np.c_[np.ones(len(theta_top)), theta_top]
    coef = np.linalg.lstsq(X, np.asarray(full_top, dtype=float), rcond=None)[0][1:]
    n = np.linalg.norm(coef)
    return coef / n if n > 0 else np.ones(theta_top.shape[1]) / np.sqrt(theta_top.shape[1])


def rank_top_discrimination(Y_top: np.ndarray, full_top: np.ndarray, seed: int = 0) -> Ranking:
    """Keep score = covariance of each item with the full score among the top models (item-rest covariance):
    items that the better of the strong models (by the real full score) get right and the worse get wrong are
    kept; items that trade off against the full score at the top go first. ``Y_top`` (k, n_items) 0/1 scores of
    the top-k tune models, ``full_top`` (k,) their full scores. Voters never enter: zero voter penalty."""
    X = np.asarray(Y_top, dtype=float)
    f = np.asarray(full_top, dtype=float)
    cov = (X - X.mean(axis=0)).T @ (f - f.mean()) / max(len(f), 1)
    return Ranking("top_discrimination", cov + tie_breaker(X.shape[1], seed), None)


def irt_keep(
    a: np.ndarray, b: np.ndarray, method: str, theta_top: np.ndarray | None = None, direction: np.ndarray | None = None
) -> np.ndarray:
    """The raw IRT keep score (n_items,): b (irt), ||a|| (irt_discrimination) or the Fisher information averaged
    over ``theta_top`` (k, D) (irt_information; along ``direction`` (D,) when given)."""
    a2 = np.asarray(a, dtype=float).reshape(len(b), -1)
    if method == "irt":
        return np.asarray(b, dtype=float)
    if method == "irt_discrimination":
        return np.linalg.norm(a2, axis=1)
    if method == "irt_information":
        if theta_top is None or len(theta_top) == 0:
            raise ValueError("irt_information needs the abilities of the top models")
        if direction is not None:
            return directional_information(theta_top, a2, b, direction).mean(axis=0)
        return information(theta_top, a2, b).mean(axis=0)
    raise ValueError(f"unknown IRT ranking {method!r}")


def _finish_irt(
    method: str, keep: np.ndarray, a: np.ndarray, seed: int, direction: np.ndarray | None = None
) -> Ranking:
    # items whose correct answer does not rise with ability (a . 1 <= 0, abilities oriented so that higher =
    # more accurate, see orient_irt; a . u <= 0 along a given direction u) would invert a sum score: they go first
    a2 = np.asarray(a, dtype=float).reshape(len(keep), -1)
    inverted = (a2.sum(axis=1) if direction is None else a2 @ np.asarray(direction, dtype=float).reshape(-1)) <= 0
    keep = np.where(inverted, np.min(keep) - 1.0 - np.abs(keep), keep)
    return Ranking(method, keep + tie_breaker(len(keep), seed), None)


def rank_irt(
    a: np.ndarray,
    b: np.ndarray,
    method: str = "irt",
    theta_top: np.ndarray | None = None,
    seed: int = 0,
    direction: np.ndarray | None = None,
) -> Ranking:
    """IRT rankings; ``a`` (n_items, D), ``b`` (n_items,), ``theta_top`` (k, D) abilities of the top models;
    ``direction`` (D,): irt_information along it (full_score_direction), items with a . u <= 0 first."""
    return _finish_irt(method, irt_keep(a, b, method, theta_top, direction), a, seed, direction)


def rank_irt_by_group(
    a: np.ndarray, b: np.ndarray, groups: np.ndarray, method: str = "irt", theta_top: dict | None = None, seed: int = 0
) -> Ranking:
    """IRT rankings from one fit per group (scenario): item j's keep score uses its own group's parameters and,
    for irt_information, ``theta_top[g]`` (k, D), the top models' abilities *in that group's fit*, so "informative
    at the top" is judged within the scenario. a (n_items, D), b (n_items,), groups (n_items,)."""
    groups = np.asarray(groups).astype(str)
    a2 = np.asarray(a, dtype=float).reshape(len(b), -1)
    keep = np.zeros(len(b))
    for g in np.unique(groups):
        cols = groups == g
        keep[cols] = irt_keep(a2[cols], np.asarray(b, float)[cols], method, None if theta_top is None else theta_top[g])
    return _finish_irt(method, keep, a2, seed)


def demote(ranking: Ranking, bad: np.ndarray, groups: np.ndarray | None = None) -> Ranking:
    """The same ranking with the ``bad`` items (n_items,) bool deleted first (below every other item, in their
    own order), in ``keep`` and in every leave-one-out row alike, so the guard adds no voter penalty.
    With ``groups`` (the scenarios) the result's ``strata`` are the groups with the bad items marked "": a
    stratified deletion then shares the subset among the remaining groups only."""
    bad = np.asarray(bad, dtype=bool)
    if not bad.any() or bad.all():
        return ranking

    def low(k):
        k = np.asarray(k, dtype=float)
        floor = k.min(axis=-1, keepdims=True)
        span = k.max(axis=-1, keepdims=True) - floor + 1.0
        return np.where(bad, k - span, k)  # bad items shift below the minimum, order among them kept

    strata = None if groups is None else np.where(bad, "", np.asarray(groups).astype(str))
    return Ranking(ranking.method, low(ranking.keep), None if ranking.loo is None else low(ranking.loo), strata)


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
    scenarios as the pool does. Items of group "" (demoted by the validity guard) get no share: they fill only
    what the other groups cannot hold.
    """
    keep = np.asarray(keep)
    if groups is not None:
        groups = np.asarray(groups).astype(str)
        names, sizes = np.unique(groups, return_counts=True)
        if len(names) > 1:
            live = names != ""
            k_live = int(min(k, sizes[live].sum()))
            raw = k_live * sizes[live] / sizes[live].sum()
            q = np.minimum(np.maximum(np.floor(raw).astype(int), 1), sizes[live])
            while q.sum() < k_live:
                q[int(np.argmax(np.where(q < sizes[live], raw - q, -np.inf)))] += 1
            quota = np.zeros(len(names), dtype=int)
            quota[live] = q
            quota[~live] = k - k_live
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


def balanced_weights(mask: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Item weights of the scenario-balanced score, same shape as ``mask`` ((n_items,) or (n_rows, n_items)):
    1 / (groups present in the row's subset x the group's items in it) on the subset, 0 elsewhere. The score
    ``Y @ w`` is then the mean over the scenarios present of the accuracy on their kept items, as the full
    score is a mean over scenarios."""
    mask = np.asarray(mask, dtype=bool)
    groups = np.asarray(groups).astype(str)
    names = np.unique(groups)
    counts = np.stack([mask[..., groups == g].sum(axis=-1) for g in names], axis=-1)
    present = np.maximum((counts > 0).sum(axis=-1), 1)
    w = np.zeros(mask.shape)
    for gi, g in enumerate(names):
        cols = groups == g
        per = 1.0 / (np.maximum(counts[..., gi], 1) * present)
        w[..., cols] = np.where(mask[..., cols], np.expand_dims(per, -1), 0.0)
    return w
