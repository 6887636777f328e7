"""The ridge fill-in estimator (``fill``): a new model's unanswered items predicted from the board's models.

Collaborative filtering on the leaderboard: the new model's answers to a scenario's anchors are regressed on the
board models' answers to the same items, and the fitted combination of board models predicts its answers on the
scenario's items it did not answer. With the board models' answers centred per item (``X`` (F, A_s): soft answers
minus the item means over the board, ``r``: the new model's answers minus the same means, on the anchors it
answered)::

    beta = argmin ||r - X' beta||^2 + lam * tr(X X') / F * ||beta||^2      (ridge, shrunk toward the board mean)
    rest_s = mean_s + beta . (value_s - mean_s)                           each scenario's non-anchor items
    estimate_s = sum of s's answered anchors (weighted) + predicted unanswered anchors + rest_s

One regression per scenario: on the v2 board (leave-family-out, n = 30 and 100) regressing every scenario's anchors at
once was worse on four scenarios of six (ifeval 8.8 against 5.5 points at n = 30; math_hard 5.7 against 3.2), since
how a model relates to the board differs between scenarios.

``beta`` is unconstrained (weights may be negative or sum above one), so a model stronger or weaker than every board
model is not pulled to the nearest of them, as an average of neighbours (the answer bank, kNN) would pull it; ``lam``
is in units of the board's mean per-model signal, so one grid fits any board. It reads exactly what the answer bank
stores (:func:`.bank.bank_arrays`: the board models' soft answers at the anchors and their accuracy on each scenario's
other items), so the tiny-benchmark artifact serves it from the bank's arrays with ``lam`` per scenario beside
``eps``. Pure numpy.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FILL", "FILL_LAMBDAS", "fill_means", "fill_estimates"]

FILL = "fill"
FILL_LAMBDAS = (0.01, 0.03, 0.1, 0.3, 1.0)


def _centred(answers, values) -> tuple:
    """(item means (A,), centred answers (F, A), value means (S,), centred values (F, S)); a bank model's missing
    value (scenario not run) counts as the mean."""
    B = np.asarray(answers, dtype=float)
    V = np.asarray(values, dtype=float)
    mu_a = B.mean(0)
    with np.errstate(invalid="ignore"):
        mu_v = np.where(np.isfinite(V).any(0), np.nanmean(np.where(np.isfinite(V), V, np.nan), axis=0), np.nan)
    Vc = np.where(np.isfinite(V), V - mu_v, 0.0)
    return mu_a, B - mu_a, mu_v, Vc


def fill_means(Ya, answers, values, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Predicted answers at the anchors (M, A) and predicted values (M, S) of new models.

    Ya : (M, A) 0/1 answers at a scenario's anchors (NaN: not answered); answers : (F, A) the bank's soft answers;
    values : (F, S) the bank's accuracy on each scenario's other items (NaN: not run); lam : ridge strength (module
    docstring). Rows of Ya without any answer get NaN."""
    Ya = np.atleast_2d(np.asarray(Ya, dtype=float))
    mu_a, Xc, mu_v, Vc = _centred(answers, values)
    F = len(Xc)
    pred_a = np.full(Ya.shape, np.nan)
    pred_v = np.full((len(Ya), Vc.shape[1]), np.nan)
    seen = np.isfinite(Ya)
    patterns, inverse = np.unique(seen, axis=0, return_inverse=True)
    for p, O in enumerate(patterns):  # one solve per pattern of answered anchors (usually one: all of them)
        rows = np.flatnonzero(inverse.ravel() == p)
        if not O.any():
            continue
        X = Xc[:, O]
        ridge = lam * max(float(np.sum(X * X)) / F, 1e-12)  # tr(X X') / F
        R = (Ya[np.ix_(rows, np.flatnonzero(O))] - mu_a[O]).T  # (|O|, m)
        if F <= X.shape[1]:  # the smaller of the two equal systems: (X X' + r I) beta = X R, or X (X'X + r I)^-1 R
            beta = np.linalg.solve(X @ X.T + ridge * np.eye(F), X @ R)  # (F, m)
            pred_a[rows] = np.clip(mu_a + beta.T @ Xc, 0.0, 1.0)
            pred_v[rows] = mu_v + beta.T @ Vc
        else:  # beta' Xc = C' (X' Xc) with C = (X'X + r I)^-1 R: nothing of size F x m (a big board's F fit models)
            C = np.linalg.solve(X.T @ X + ridge * np.eye(X.shape[1]), R)  # (|O|, m)
            pred_a[rows] = np.clip(mu_a + C.T @ (X.T @ Xc), 0.0, 1.0)
            pred_v[rows] = mu_v + C.T @ (X.T @ Vc)
    return pred_a, pred_v


def fill_estimates(Y, cols: dict, w, anchor_sets: dict, bank: dict, lam: dict) -> dict:
    """{scenario: (M,) fill estimate} for rows Y (M, I_all), reading only the anchors (as
    :func:`.bank.bank_estimates` does).

    cols : {scenario: (N_s,) columns} (scenario order); w : (I_all,) balance weights; anchor_sets : {scenario:
    AnchorSet}; bank : {"answers", "values"} at these anchors; lam : {scenario: ridge strength}."""
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    out, start = {}, 0
    for k, s in enumerate(cols):
        A = anchor_sets[s]
        block = slice(start, start + len(A.items))  # s's columns of the bank's answers
        start += len(A.items)
        Ys = Y[:, A.items]
        pred_a, pred_v = fill_means(Ys, bank["answers"][:, block], np.asarray(bank["values"])[:, [k]], float(lam[s]))
        ws = np.asarray(w, dtype=float)[cols[s]]
        W = ws[A.local] / ws.sum()
        filled = np.where(np.isnan(Ys), pred_a, Ys)  # unanswered anchors: predicted, not wrong
        rest = np.clip(pred_v[:, 0], 0.0, max(1.0 - float(W.sum()), 0.0))
        est = filled @ W + rest
        out[s] = np.where(np.isnan(Ys).all(1) | np.isnan(est), np.nan, np.clip(est, 0.0, 1.0))
    return out
