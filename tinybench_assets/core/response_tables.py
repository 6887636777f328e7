"""The stored tables of a scenario's response matrix (response_matrix) and of its 0/1 version (binarized_responses)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .responses import ResponseMatrix, binarize


def matrix_tables(matrix: ResponseMatrix, splits: dict) -> dict[str, pd.DataFrame]:
    """``matrix_items`` (column, item, subscenario, balance weight, landed split from ``splits`` {item: split}, mean
    score) and ``matrix_models`` (row, model, items answered, accuracy) of a scenario's matrix."""
    items = pd.DataFrame(
        {
            "col": np.arange(len(matrix.items), dtype=np.int32),
            "item": matrix.items,
            "subscenario": matrix.subscenarios.astype(str),
            "balance_weight": matrix.balance_weights(),
            "split": [splits.get(i) for i in matrix.items],
            "mean_score": np.nanmean(matrix.scores, axis=0),
        }
    )
    models = pd.DataFrame(
        {
            "row": np.arange(len(matrix.models), dtype=np.int32),
            "model": matrix.models,
            "n_items": matrix.mask.sum(axis=1).astype(np.int32),
            "accuracy": matrix.accuracy().iloc[:, 0].to_numpy(),
        }
    )
    return {"matrix_items": items, "matrix_models": models}


def binarized_tables(matrix: ResponseMatrix, rule: str) -> tuple[dict[str, pd.DataFrame], dict]:
    """``binarized`` (model, item, y: one row per observed cell) and ``binarization`` (the rule applied, its
    threshold, the mean score before and after, the mean absolute shift of the models' accuracies) of a scenario's
    matrix binarized by ``rule`` (:func:`~.responses.binarize`); and that summary row as a dict."""
    y, threshold, applied = binarize(matrix.scores, rule=rule)
    m_idx, i_idx = np.nonzero(matrix.mask)
    long = pd.DataFrame(
        {
            "model": np.asarray(matrix.models, dtype=object)[m_idx],
            "item": np.asarray(matrix.items, dtype=object)[i_idx],
            "y": y[m_idx, i_idx].astype(np.uint8),
        }
    )
    summary = {
        "rule": applied,
        "threshold": threshold,
        "mean_raw": float(np.nanmean(matrix.scores)),
        "mean_binary": float(np.nanmean(y)),
        "mean_abs_shift": float(np.mean(np.abs(np.nanmean(y, axis=1) - np.nanmean(matrix.scores, axis=1)))),
        "updated_at": pd.Timestamp.now(),
    }
    return {"binarized": long, "binarization": pd.DataFrame([summary])}, summary
