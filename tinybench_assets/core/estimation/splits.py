"""Seeded, order-free splits of models into train and test.

A model's side depends only on (seed, model name), so every scenario of a leaderboard, the joint fit
and the backtest agree on it without sharing state, and adding models never moves existing ones.
"""

from __future__ import annotations

import hashlib

import numpy as np


def model_unit(models, seed: int) -> np.ndarray:
    """A uniform number in [0, 1) per model, from sha256(seed:model). Shape (n_models,)."""
    out = np.empty(len(models))
    for i, m in enumerate(models):
        h = hashlib.sha256(f"{seed}:{m}".encode()).digest()
        out[i] = int.from_bytes(h[:8], "big") / 2**64
    return out


def split_models(models, test_fraction: float = 0.2, seed: int = 0, min_models: int = 20) -> np.ndarray:
    """'train' or 'test' per model; with fewer than ``min_models`` models every model trains.

    Returns ndarray of str, shape (n_models,).
    """
    if not 0 <= test_fraction < 1:
        raise ValueError("test_fraction must be in [0, 1)")
    if len(models) < min_models or test_fraction == 0:
        return np.array(["train"] * len(models), dtype=object)
    return np.where(model_unit(models, seed) < test_fraction, "test", "train").astype(object)
