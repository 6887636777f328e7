"""A train/test split of questions for routing, where the drop landed none.

Routing is measured on questions the router was not fitted on. Where a scenario's questions carry no split (RouteLLM's
files, most users' own), the router assets split them here: seeded, stratified by subscenario, and order-free (a
question's side depends only on (seed, its id) and its subscenario's ranks), so every router asset of a partition
agrees on it without sharing state. Too few questions make a test too small to measure routing on: below
``MIN_SELF_SPLIT_QUESTIONS`` the scenario is not split (and not routed).
"""

from __future__ import annotations

import numpy as np

from tinybench_assets.core.estimation.splits import model_unit

TEST_FRACTION = 0.2
MIN_SELF_SPLIT_QUESTIONS = 500


def question_split(items, groups, test_fraction: float = TEST_FRACTION, seed: int = 0) -> np.ndarray:
    """'train' / 'test' per question: in every group (subscenario) the round(test_fraction x size) questions with
    the smallest sha256(seed:item) unit go to test. Returns ndarray of str (n,)."""
    if not 0 < test_fraction < 1:
        raise ValueError("test_fraction must be in (0, 1)")
    items, groups = np.asarray(items, dtype=object), np.asarray(groups, dtype=object)
    unit = model_unit(items, seed)
    out = np.full(len(items), "train", dtype=object)
    for g in np.unique(groups.astype(str)):
        rows = np.flatnonzero(groups.astype(str) == g)
        n_test = int(round(test_fraction * len(rows)))
        out[rows[np.argsort(unit[rows], kind="stable")[:n_test]]] = "test"
    return out
