"""Accuracy estimators for a model that answered only a few items of a scenario.

All functions work on ONE scenario and are vectorized over models. Notation:
``I`` items in the scenario, ``n`` observed items (anchors), ``M`` models, ``w`` the scenario's
balance weights (shape (I,), as :meth:`ResponseMatrix.balance_weights`: they average 1 over the
scenario, so the accuracy is ``mean(w * y)``).

Formulas follow the tinyBenchmarks tutorials (Polo et al. 2024):

* random:  ``sum(w_S y_S) / sum(w_S)`` on a uniformly random item set S of size n;
* anchor:  ``sum_c weight_c * y_anchor_c`` (``tutorials/anchor_points.ipynb``);
* IRT:     ``mean_j(w_j * P_j)`` over all items, P from abilities fitted on the anchors;
* p-IRT:   ``lam * mean_{j in S}(w_j y_j) + (1 - lam) * mean_{j not in S}(w_j P_j)`` with ``lam = n / I``
  (``tutorials/estimating_performance.ipynb``);
* gp-IRT:  ``lam * anchor + (1 - lam) * p-IRT``, the tutorial's ``lam = b^2 / (v / (4 n) + b^2)`` where
  b is the IRT engine's validation MAE on unseen items and v the mean over training models of the
  across-item variance of their correctness (``tutorials/training_irt.ipynb``), or a lambda chosen on a
  grid by validation MAE (:func:`choose_lambda`).
"""

from __future__ import annotations

import numpy as np

LAMBDA_GRID = np.round(np.linspace(0.0, 1.0, 41), 4)


def _as_2d(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x[None, :] if x.ndim == 1 else x


def weighted_accuracy(Y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Balance-weighted accuracy over the observed (non-NaN) cells.

    Y : (M, I) with NaN = missing; w : (I,). Returns (M,).
    """
    Y = _as_2d(Y)
    obs = ~np.isnan(Y)
    ww = np.where(obs, w[None, :], 0.0)
    return (np.where(obs, Y, 0.0) * ww).sum(1) / np.maximum(ww.sum(1), 1e-12)


def random_items(n_models: int, n_items: int, n: int, seed: int = 0) -> np.ndarray:
    """A uniformly random set of n items for every model, shape (n_models, n), seeded."""
    rng = np.random.default_rng(seed)
    n = min(n, n_items)
    keys = rng.random((n_models, n_items))
    return np.argsort(keys, axis=1)[:, :n]


def random_estimate(Y: np.ndarray, w: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """Random-sampling baseline: each model is scored on its own n uniformly random items.

    Y : (M, I) full 0/1 responses of the scenario (only the sampled cells are read); w : (I,).
    Returns (M,): balance-weighted mean ``sum(w_S y_S) / sum(w_S)`` over the sampled set S.
    """
    Y = _as_2d(Y)
    idx = random_items(Y.shape[0], Y.shape[1], n, seed)
    y = np.take_along_axis(Y, idx, axis=1)
    ws = np.asarray(w, dtype=float)[idx]
    obs = ~np.isnan(y)
    ws = np.where(obs, ws, 0.0)
    return (np.where(obs, y, 0.0) * ws).sum(1) / np.maximum(ws.sum(1), 1e-12)


def anchor_estimate(Y_anchor: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Anchor-weighted estimate ``sum_c weights_c * y_c``.

    Y_anchor : (M, n) 0/1 answers on the anchors; weights : (n,) summing to 1. Returns (M,).
    A missing anchor (NaN) is dropped and the remaining weights renormalized.
    """
    Y_anchor = _as_2d(Y_anchor)
    obs = ~np.isnan(Y_anchor)
    ww = np.where(obs, weights[None, :], 0.0)
    return (np.where(obs, Y_anchor, 0.0) * ww).sum(1) / np.maximum(ww.sum(1), 1e-12)


def irt_estimate(P: np.ndarray, w: np.ndarray) -> np.ndarray:
    """IRT estimate: balance-weighted mean of predicted correctness over all items.

    P : (M, I) predicted probabilities; w : (I,). Returns (M,).
    """
    P = _as_2d(P)
    return (P * w[None, :]).sum(1) / w.sum()


def pirt_estimate(
    Y_anchor: np.ndarray, P: np.ndarray, anchors: np.ndarray, w: np.ndarray, lam: float | None = None
) -> np.ndarray:
    """p-IRT: observed anchors combined with IRT predictions on the unseen items.

    ``lam * mean_{j in S}(w_j y_j) + (1 - lam) * mean_{j not in S}(w_j P_j)``, ``lam = n / I`` by default,
    exactly the tutorial's formula (plain means of balance-weighted terms).

    Y_anchor : (M, n); P : (M, I) predictions for all items of the scenario; anchors : (n,) item indices
    into the scenario; w : (I,). Returns (M,). With n = I (every item observed) this is the exact
    balance-weighted accuracy.
    """
    Y_anchor, P = _as_2d(Y_anchor), _as_2d(P)
    anchors = np.asarray(anchors, dtype=int)
    n_items = P.shape[1]
    lam = len(anchors) / n_items if lam is None else lam
    seen = (Y_anchor * w[anchors][None, :]).mean(1)
    unseen_mask = np.ones(n_items, dtype=bool)
    unseen_mask[anchors] = False
    if not unseen_mask.any():
        return seen
    unseen = (P[:, unseen_mask] * w[unseen_mask][None, :]).mean(1)
    return lam * seen + (1.0 - lam) * unseen


def gpirt_estimate(anchor_est: np.ndarray, pirt_est: np.ndarray, lam: float) -> np.ndarray:
    """gp-IRT: ``lam * anchor + (1 - lam) * pirt`` (tinyBenchmarks ``evaluate``). Shapes (M,)."""
    return lam * np.asarray(anchor_est) + (1.0 - lam) * np.asarray(pirt_est)


def tutorial_lambda(b: float, v: float, n: int) -> float:
    """The tutorial's gp-IRT weight ``b^2 / (v / (4 n) + b^2)``.

    b : the IRT engine's validation MAE of predicted accuracy on unseen items (its bias proxy);
    v : mean over training models of the across-item variance of their 0/1 correctness
        (``np.var(Y_train, axis=1).mean()``); n : number of anchors.
    """
    b2 = float(b) ** 2
    denom = float(v) / (4.0 * n) + b2
    return b2 / denom if denom > 0 else 0.0


def mean_item_variance(Y: np.ndarray) -> float:
    """v of :func:`tutorial_lambda`: mean over models of the variance of y across items. Y : (M, I)."""
    return float(np.nanmean(np.nanvar(np.asarray(Y, dtype=float), axis=1)))


def choose_lambda(
    anchor_est: np.ndarray, pirt_est: np.ndarray, truth: np.ndarray, grid: np.ndarray = LAMBDA_GRID
) -> tuple[float, np.ndarray]:
    """gp-IRT lambda minimizing the MAE on validation models.

    All inputs shape (M_val,) -- validation models are TRAINING models held out from the IRT fit,
    never test models. Returns (best lambda, MAE per grid point (len(grid),)).
    """
    a, p, t = (np.asarray(x, dtype=float) for x in (anchor_est, pirt_est, truth))
    maes = np.array([np.mean(np.abs(lam * a + (1 - lam) * p - t)) for lam in grid])
    return float(grid[int(np.argmin(maes))]), maes


def convex_weights(X: np.ndarray, t: np.ndarray, penalty: float = 1e4) -> np.ndarray:
    """Least-squares convex combination of estimators: ``w >= 0``, ``sum(w) = 1``.

    X : (M, K) estimates of K estimators for M (validation) models; t : (M,) truths. Returns w (K,).
    Solved as non-negative least squares with a heavily weighted row enforcing the sum.
    """
    from scipy.optimize import nnls

    X = np.asarray(X, dtype=float)
    t = np.asarray(t, dtype=float)
    scale = np.sqrt(penalty * max(len(t), 1))
    A = np.vstack([X, scale * np.ones((1, X.shape[1]))])
    y = np.concatenate([t, [scale]])
    w, _ = nnls(A, y)
    return w / w.sum() if w.sum() > 0 else np.full(X.shape[1], 1.0 / X.shape[1])


def stack_out_of_fold(
    X: np.ndarray, t: np.ndarray, *, n_folds: int = 5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold predictions of a convex stack (honest validation errors) and weights on all rows.

    X : (M, K); t : (M,). Returns (oof prediction (M,), weights (K,)).
    """
    X = np.asarray(X, dtype=float)
    t = np.asarray(t, dtype=float)
    rng = np.random.default_rng(seed)
    folds = np.array_split(rng.permutation(len(t)), max(2, min(n_folds, len(t))))
    oof = np.empty(len(t))
    for k, test in enumerate(folds):
        train = np.concatenate([f for j, f in enumerate(folds) if j != k])
        oof[test] = X[test] @ convex_weights(X[train], t[train])
    return oof, convex_weights(X, t)
