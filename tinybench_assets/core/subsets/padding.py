"""Offset padding: re-add deleted items that each voter got right, to offset its penalty.

Voter v gets ``round(base + per_point * max(penalty_v, 0))`` items, drawn (seeded, without replacement)
from the items deleted from the subset that v answered correctly and whose pool accuracy (mean over the
training models) lies in ``[acc_low, acc_high]``. The padded subset is the union. Easy items lift weak
models above chance as well.

Penalty after padding (leave-one-out, other voters' padding held fixed)::

    with_v    = subset  U  padding
    without_v = subset chosen without v  U  (padding minus the items only v asked for)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinybench_assets.core.subsets.penalty import voter_penalty


@dataclass
class Padding:
    """added : (n_items,) bool, items re-added; by_voter : (n_voters, n_items) bool, who asked for which;
    counts : (n_voters,) int, items asked for per voter."""

    added: np.ndarray
    by_voter: np.ndarray
    counts: np.ndarray


def pad_subset(
    Yv: np.ndarray,
    subset: np.ndarray,
    penalty: np.ndarray,
    pool_accuracy: np.ndarray,
    *,
    base: float = 0.0,
    per_point: float = 1.0,
    acc_low: float = 0.0,
    acc_high: float = 1.0,
    seed: int = 0,
) -> Padding:
    """Choose the padding items.

    Parameters
    ----------
    Yv : (n_voters, n_items) 0/1.  subset : (n_items,) bool, the chosen subset before padding.
    penalty : (n_voters,) points.  pool_accuracy : (n_items,) mean accuracy of the training models.
    base, per_point : items per voter = round(base + per_point * max(penalty, 0)).
    acc_low, acc_high : the difficulty range, as pool accuracy in [0, 1].
    seed : seeds the draws (voter v uses the stream (seed, v)).
    """
    Yv = np.asarray(Yv, dtype=float)
    subset = np.asarray(subset, dtype=bool)
    in_range = (pool_accuracy >= acc_low) & (pool_accuracy <= acc_high) & ~subset
    counts = np.round(base + per_point * np.maximum(np.asarray(penalty, dtype=float), 0.0)).astype(int)
    by_voter = np.zeros(Yv.shape, dtype=bool)
    for v in range(Yv.shape[0]):
        if counts[v] <= 0:
            continue
        cand = np.flatnonzero(in_range & (Yv[v] == 1))
        if len(cand) == 0:
            continue
        rng = np.random.default_rng([seed, v])
        pick = rng.choice(cand, min(counts[v], len(cand)), replace=False)
        by_voter[v, pick] = True
    return Padding(added=by_voter.any(axis=0), by_voter=by_voter, counts=counts)


def padded_penalty(
    Yv: np.ndarray, subset: np.ndarray, without_masks: np.ndarray, padding: Padding, groups: np.ndarray | None = None
) -> np.ndarray:
    """Voter penalty (points, (n_voters,)) of the padded subset, leave-one-out as in the module docstring
    (scenario-balanced scores when ``groups`` is given)."""
    with_mask = np.asarray(subset, bool) | padding.added
    n_askers = padding.by_voter.sum(axis=0)
    only_v = padding.by_voter & (n_askers[None, :] == 1)
    without = np.asarray(without_masks, bool) | (padding.added[None, :] & ~only_v)
    return voter_penalty(Yv, with_mask, without, groups)
