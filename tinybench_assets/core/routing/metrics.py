"""Routing decisions and the figures that say whether routing is worth doing.

Correctness matrices are (questions, models) 0/1. Accuracies are fractions in [0, 1].
"""

from __future__ import annotations

import numpy as np


def route(P: np.ndarray, prior: np.ndarray, margin: float = 0.0, tol: float = 1e-9) -> np.ndarray:
    """The chosen model per question: argmax of P(correct); ties (within ``tol``) go to the model with
    the higher ``prior`` (its training accuracy), then to the lower index.

    ``margin`` > 0 makes routing conservative: a question leaves the default model (the best prior)
    only when another model's P exceeds the default's by more than ``margin``.

    P : (n, M); prior : (M,). Returns (n,) int model indices.
    """
    P = np.asarray(P, dtype=float)
    prior = np.asarray(prior, dtype=float)
    if P.ndim != 2 or P.shape[1] != len(prior):
        raise ValueError(f"P must be (questions, {len(prior)} models), got {P.shape}")
    top = P.max(axis=1, keepdims=True)
    tied = P >= top - tol
    key = np.where(tied, prior[None, :], -np.inf)
    picks = np.argmax(key, axis=1)
    if margin > 0:
        default = int(np.argmax(prior))
        gain = P[np.arange(len(P)), picks] - P[:, default]
        picks = np.where(gain > margin, picks, default)
    return picks


def route_with_cost(P: np.ndarray, cost: np.ndarray, lam: float, prior: np.ndarray) -> np.ndarray:
    """Cost-aware routes: argmax of P(correct) - lam * cost (cost: (n, M), same units for every model);
    ties go to the cheaper model on that question, then to the higher prior."""
    U = np.asarray(P) - lam * np.asarray(cost)
    top = U.max(axis=1, keepdims=True)
    tied = U >= top - 1e-9
    cost = np.asarray(cost, dtype=float)
    key = np.where(tied, -cost + 1e-6 * np.asarray(prior)[None, :], -np.inf)
    return np.argmax(key, axis=1)


def paired_bootstrap_ci(
    x: np.ndarray, y: np.ndarray, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(x - y) over questions resampled with replacement (paired)."""
    d = np.asarray(x, dtype=float) - np.asarray(y, dtype=float)
    if len(d) == 0:
        return float("nan"), float("nan")
    g = np.random.default_rng(seed)
    means = np.empty(n_boot)
    for s in range(0, n_boot, 200):  # chunks keep memory at 200 x n
        idx = g.integers(0, len(d), size=(min(200, n_boot - s), len(d)))
        means[s : s + len(idx)] = d[idx].mean(axis=1)
    a = (1 - level) / 2
    return float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


def evaluate_routing(
    Y: np.ndarray,
    picks: np.ndarray,
    best_model: int,
    models: list[str] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict:
    """Figures of one router on questions with known answers.

    Y : (n, M) 0/1 correctness (no missing cells); picks : (n,) chosen model per question;
    best_model : index of the best single model, chosen on TRAINING questions.

    Returns router_acc, best_single_acc (that model on these questions), oracle_acc (any model right),
    random_acc (a uniformly random model), delta and its paired bootstrap 95 % interval
    (router - best single), no_info_acc (the same pick shares assigned to questions at random: a router
    that knows nothing about the questions scores this), pick_share per model.
    """
    Y = np.asarray(Y, dtype=float)
    if np.isnan(Y).any():
        raise ValueError("evaluate_routing needs complete correctness (drop questions with missing cells first)")
    n, M = Y.shape
    picks = np.asarray(picks, dtype=int)
    correct = Y[np.arange(n), picks]
    base = Y[:, best_model]
    lo, hi = paired_bootstrap_ci(correct, base, n_boot=n_boot, seed=seed)
    models = list(models) if models is not None else [str(m) for m in range(M)]
    share = np.bincount(picks, minlength=M) / max(n, 1)
    return {
        "n_questions": int(n),
        "router_acc": float(correct.mean()),
        "best_single_acc": float(base.mean()),
        "best_single_model": models[best_model],
        "oracle_acc": float(Y.max(axis=1).mean()),
        "random_acc": float(Y.mean()),
        "delta": float(correct.mean() - base.mean()),
        "delta_ci95": [lo, hi],
        # what the same pick shares would score with no information about which question goes where
        "no_info_acc": float(share @ Y.mean(axis=0)),
        "pick_share": {models[m]: float(share[m]) for m in range(M)},
        "model_acc": {models[m]: float(Y[:, m].mean()) for m in range(M)},
    }
