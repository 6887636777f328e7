"""Twins: models whose answers on a scenario equal (or nearly equal) another model's.

On a leaderboard of merges and fine-tunes many models share their answer vector with another (openllm: 11-35 % of
the models per scenario). A held-out model with a twin among the training models is estimated almost for free by
anything that matches answer patterns, so backtest figures over all test models overstate what a new, distinct model
gets. :func:`twin_mask` marks the test models that have a twin; backtests report their figures on the twin-free rest
beside all.

Pure numpy.
"""

from __future__ import annotations

import numpy as np

__all__ = ["AGREEMENT", "agreement", "twin_mask", "twin_share"]

AGREEMENT = 0.99  # a test model agreeing with a training model on at least this share of the items both answered


def agreement(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(M_a, M_b) share of the items both rows answered on which they agree (NaN = not answered; 0 where they share
    no answered item). A : (M_a, I), B : (M_b, I), 0/1 with NaN."""
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    ma, mb = np.isfinite(A), np.isfinite(B)
    a1, b1 = (ma & (A == 1)).astype(np.float32), (mb & (B == 1)).astype(np.float32)
    a0, b0 = (ma & (A == 0)).astype(np.float32), (mb & (B == 0)).astype(np.float32)
    same = a1 @ b1.T + a0 @ b0.T
    both = ma.astype(np.float32) @ mb.astype(np.float32).T
    return np.where(both > 0, same / np.maximum(both, 1), 0.0)


def twin_mask(Y_test: np.ndarray, Y_train: np.ndarray, threshold: float = AGREEMENT, chunk: int = 512) -> np.ndarray:
    """(M_test,) bool: the test rows that agree with some training row on at least ``threshold`` of the items both
    answered (one scenario's columns, or any set of columns). Rows without answers are not twins."""
    Y_test, Y_train = np.atleast_2d(np.asarray(Y_test, dtype=float)), np.atleast_2d(np.asarray(Y_train, dtype=float))
    out = np.zeros(len(Y_test), dtype=bool)
    if not len(Y_train):
        return out
    for lo in range(0, len(Y_test), chunk):
        block = agreement(Y_test[lo : lo + chunk], Y_train)
        out[lo : lo + chunk] = (block >= threshold).any(1)
    return out & np.isfinite(Y_test).any(1)


def twin_share(Y_test: np.ndarray, Y_train: np.ndarray, cols: dict, threshold: float = AGREEMENT) -> dict:
    """{scenario: share of the test rows (with answers there) that have a twin among the training rows on that
    scenario's columns}. cols : {scenario: column indices}."""
    out = {}
    for s, c in cols.items():
        has = np.isfinite(Y_test[:, c]).any(1)
        tw = twin_mask(Y_test[:, c], Y_train[:, c], threshold)
        out[s] = float(tw[has].mean()) if has.any() else float("nan")
    return out
