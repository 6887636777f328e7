"""Scores on subsets, progressive-deletion score trends, and the voter penalty (leave-one-out, vectorized).

Voter penalty of voter v, in accuracy points (0-100)::

    penalty_v = 100 * (score_v(subset chosen without v among the voters) - score_v(subset chosen with v))

Positive = the voter is penalized for having voted (items it got right looked easy and were deleted).
The issue writes the difference the other way round (with - without); we report the positive-is-bad sign
so that "mean voter penalty 0.43 points" reads as in the MAGI blog.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tinybench_assets.core.subsets.rankings import (
    Ranking,
    balanced_weights,
    rank_mean_score,
    rank_ref_vs_voters,
    subset_mask,
    tie_breaker,
)


def subset_scores(Y: np.ndarray, mask: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """Score of every model on the masked items. Y (n_models, n_items), mask (n_items,) -> (n_models,).

    ``groups`` None: the plain mean over the items. ``groups`` (n_items,) (the scenarios): the scenario-balanced
    score, the mean over the scenarios present in the subset of the accuracy on their kept items."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return np.full(Y.shape[0], np.nan)
    if groups is not None:
        return np.nan_to_num(np.asarray(Y, dtype=float)) @ balanced_weights(mask, groups)
    return np.nanmean(np.asarray(Y, dtype=float)[:, mask], axis=1)


def loo_masks(ranking: Ranking, k: int, n_voters: int, groups: np.ndarray | None = None) -> np.ndarray:
    """The subset chosen without each voter, shape (n_voters, n_items) bool (the full subset when the
    ranking does not depend on the voters)."""
    if ranking.loo is None:
        return np.broadcast_to(subset_mask(ranking.keep, k, groups), (n_voters, len(ranking.keep))).copy()
    return subset_mask(ranking.loo, k, groups)


def voter_penalty(
    Yv: np.ndarray, with_mask: np.ndarray, without_masks: np.ndarray, groups: np.ndarray | None = None
) -> np.ndarray:
    """Penalty per voter in points, shape (n_voters,).

    Yv (n_voters, n_items) 0/1; with_mask (n_items,) the subset chosen with every voter;
    without_masks (n_voters, n_items) row v = the subset chosen without voter v; groups: scenario-balanced
    scores (see subset_scores) when given.
    """
    Yv = np.asarray(Yv, dtype=float)
    w = np.asarray(with_mask, dtype=bool)
    wo = np.asarray(without_masks, dtype=bool)
    if groups is not None:
        return 100.0 * ((Yv * balanced_weights(wo, groups)).sum(axis=1) - Yv @ balanced_weights(w, groups))
    with_score = (Yv[:, w]).mean(axis=1)
    without_score = (Yv * wo).sum(axis=1) / np.maximum(wo.sum(axis=1), 1)
    return 100.0 * (without_score - with_score)


def penalty_vs_n_voters(
    Yv: np.ndarray,
    method: str,
    k: int,
    *,
    y_ref: np.ndarray | None = None,
    n_values=(1, 2, 3, 5, 10, 20, 40, 60),
    repeats: int = 5,
    seed: int = 0,
) -> pd.DataFrame:
    """Mean voter penalty against the number of voters for a voter-based ranking.

    For each n, ``repeats`` seeded draws of n voters out of the voters; the ranking is rebuilt from those n
    and their leave-one-out penalties averaged. With n = 1 the lone voter's "without" subset is chosen by
    the remaining information only (the reference for ref_vs_voters, the tie-breaker for mean_score).

    Returns DataFrame (n_voters, mean_penalty, sd_penalty, draws).
    """
    Yv = np.asarray(Yv, dtype=float)
    rng = np.random.default_rng(seed)
    rows = []
    for n in n_values:
        if n > Yv.shape[0]:
            continue
        vals = []
        for _ in range(repeats if n < Yv.shape[0] else 1):
            idx = np.sort(rng.choice(Yv.shape[0], n, replace=False))
            sub = Yv[idx]
            if method == "mean_score":
                r = rank_mean_score(sub, seed)
            elif method == "ref_vs_voters":
                r = rank_ref_vs_voters(sub, y_ref, seed)
            else:
                raise ValueError(f"{method} does not use voters")
            if n == 1:  # without the lone voter: no votes at all
                tb = tie_breaker(sub.shape[1], seed)
                base = (np.asarray(y_ref, float) if method == "ref_vs_voters" else np.zeros(sub.shape[1])) + tb
                r = Ranking(r.method, r.keep, base[None, :])
            pen = voter_penalty(sub, subset_mask(r.keep, k), subset_mask(r.loo, k))
            vals.append(pen.mean())
        rows.append(
            {"n_voters": n, "mean_penalty": float(np.mean(vals)), "sd_penalty": float(np.std(vals)), "draws": len(vals)}
        )
    return pd.DataFrame(rows)


def score_trends(
    Y: np.ndarray,
    ranking: Ranking,
    model_idx: np.ndarray,
    *,
    step_fraction: float = 0.05,
    min_items: int = 10,
    groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Progressive deletion: the chosen models' scores as items are deleted in steps.

    Returns (items_left (n_steps,), scores (n_steps, len(model_idx))). Step t keeps the items_left[t]
    items with the highest keep score; steps of ``step_fraction`` of the pool, down to ``min_items``.
    ``groups``: scenario-balanced scores (see subset_scores).
    """
    n = Y.shape[1]
    step = max(1, int(round(step_fraction * n)))
    sizes = list(range(n, min_items - 1, -step))
    if sizes[-1] != min_items and min_items < n:
        sizes.append(min_items)
    order = ranking.order()[::-1]  # best kept first
    if groups is not None:
        masks = np.zeros((len(sizes), n), dtype=bool)
        for t, size in enumerate(sizes):
            masks[t, order[:size]] = True
        Ym = np.nan_to_num(np.asarray(Y, dtype=float)[np.asarray(model_idx)])
        return np.array(sizes), balanced_weights(masks, groups) @ Ym.T
    Ys = np.asarray(Y, dtype=float)[np.asarray(model_idx)][:, order]
    csum = np.cumsum(np.nan_to_num(Ys), axis=1)
    sizes = np.array(sizes)
    return sizes, (csum[:, sizes - 1] / sizes[None, :]).T
