"""Small leaderboards: what :class:`~.small_board.SmallBoardPredictor` checks before it fits (its parameters, the
board's answers, weights, scenarios, families and full scores, the folds' training models) and the anchor count of
every (scenario, n)."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from .small_folds import DESIGNS

__all__ = ["MIN_MODELS", "MIN_TRAIN", "check_inputs", "check_params", "check_folds", "anchor_counts", "input_digest"]

MIN_MODELS = 10  # fewer models: nothing can be cross-validated honestly
MIN_TRAIN = 5  # training models a fold must keep per scenario


def check_inputs(Y, w, scenario_cols, full_scores, groups, items):
    """Validated inputs: (Y (M, I), w (I,) with mean 1 per scenario, cols {s: (I_s,)}, T2 (M, S), groups (M,) str,
    items [str])."""
    Y = np.asarray(Y, dtype=float)
    if Y.ndim != 2:
        raise ValueError(f"Y must be a 2-d models x items matrix, got shape {Y.shape}")
    M, I = Y.shape
    if M < MIN_MODELS:
        raise ValueError(
            f"a small board needs at least {MIN_MODELS} models for leave-family-out cross-validation, got {M}"
        )
    if np.any(~np.isnan(Y) & (Y != 0) & (Y != 1)):
        raise ValueError("Y must hold 0/1 (NaN = not answered): binarize the scores first")
    if groups is None or len(groups) != M:
        raise ValueError(f"groups needs a family label per model ({M}), got {None if groups is None else len(groups)}")
    groups = np.asarray([str(g) for g in groups], dtype=object)
    if len(set(groups)) < 2:
        raise ValueError(f"leave-family-out cross-validation needs at least 2 model families, got {len(set(groups))}")
    w = np.asarray(w, dtype=float).copy()
    if w.shape != (I,) or not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError(f"w must hold a positive balance weight per item ({I},)")
    if not scenario_cols:
        raise ValueError("scenario_cols is empty")
    cols, seen = {}, set()
    for s, c in scenario_cols.items():
        c = np.asarray(c, dtype=int)
        if len(c) < 2 or c.min() < 0 or c.max() >= I or len(set(c.tolist())) != len(c) or seen & set(c.tolist()):
            raise ValueError(f"scenario {s!r}: columns must be >= 2 distinct indices in [0, {I}), in no other scenario")
        seen |= set(c.tolist())
        answered = int((~np.isnan(Y[:, c]).all(1)).sum())
        if answered < MIN_MODELS:
            raise ValueError(f"scenario {s!r}: {answered} models answered it, fewer than {MIN_MODELS}")
        cols[str(s)] = c
        w[c] = w[c] / w[c].mean()  # the estimators' formulas assume weights averaging 1 per scenario
    items = [f"item{j}" for j in range(I)] if items is None else [str(x) for x in items]
    if len(items) != I or any(len({items[j] for j in c}) != len(c) for c in cols.values()):
        raise ValueError(f"items must be {I} ids, distinct within each scenario")
    if full_scores is None:
        T2 = np.full((M, len(cols)), np.nan)
    elif isinstance(full_scores, pd.DataFrame):
        T2 = full_scores.reindex(columns=list(cols)).to_numpy(dtype=float)
    else:
        T2 = np.asarray(full_scores, dtype=float)
    if T2.shape != (M, len(cols)):
        raise ValueError(f"full_scores must be (models, scenarios) = {(M, len(cols))}, got {T2.shape}")
    return Y, w, cols, T2, groups, items


def anchor_counts(cols: dict, ns: list, notes: list) -> dict:
    """{(scenario, n): anchor count}: n capped at the scenario's pool (noted in ``notes``)."""
    counts = {}
    for s, c in cols.items():
        for n in ns:
            counts[(s, n)] = min(n, len(c))
            if n > len(c):
                notes.append(f"scenario {s!r}: n={n} capped at its pool of {len(c)} items")
    return counts


def check_folds(Y, cols: dict, folds: np.ndarray, groups: np.ndarray) -> None:
    """Every fold must leave MIN_TRAIN training models per scenario (ValueError naming the fold's families)."""
    for f in range(int(folds.max()) + 1):
        for s, c in cols.items():
            kept = (~np.isnan(Y[folds != f][:, c]).all(1)).sum()
            if kept < MIN_TRAIN:
                fam = sorted(set(groups[folds == f]))
                raise ValueError(
                    f"fold {f} (families {fam[:5]}) leaves {kept} training models for scenario {s!r}, "
                    f"fewer than {MIN_TRAIN}: one family holds too many of the board's models"
                )


def check_params(p) -> None:
    """ValueError for a SmallBoardPredictor's parameters that cannot be fitted."""
    ns, ds = p._ns(), [int(d) for d in p.dims]
    if not ns or min(ns) < 1 or len(set(ns)) != len(ns):
        raise ValueError(f"n_values must be distinct positive integers, got {p.n_values}")
    if not ds or min(ds) < 1 or len(set(ds)) != len(ds):
        raise ValueError(f"dims must be distinct positive integers, got {p.dims}")
    if not 0 < p.alpha < 1 or int(p.max_folds) < 2:
        raise ValueError(f"need 0 < alpha < 1 and max_folds >= 2, got {p.alpha}, {p.max_folds}")
    if p.design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, got {p.design!r}")


def input_digest(params: dict, Y, w, scenario_cols, full_scores, groups, items, models, subscenarios) -> str:
    """sha256 of a fit's parameters and inputs as given to ``SmallBoardPredictor.fit``: equal digests, equal fits."""
    cols = {str(s): np.asarray(c).tolist() for s, c in scenario_cols.items()}
    labels = [None if a is None else [str(x) for x in a] for a in (items, models, subscenarios, groups)]
    h = hashlib.sha256(repr((sorted((k, repr(v)) for k, v in params.items()), labels, cols)).encode())
    for a in (Y, w, full_scores):
        h.update(np.ascontiguousarray(a if a is not None else [], dtype=float).tobytes())
    return h.hexdigest()
