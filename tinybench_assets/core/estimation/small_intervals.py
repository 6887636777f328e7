"""Small leaderboards: the intervals and T2 maps of the chosen estimators (small_choice.py chooses them).

Intervals are symmetric split-conformal on |truth - estimate| / s(estimate), s = sqrt(e (1 - e)) + floor
(``interval_scale="binomial"``) or 1 (``"none"``), with the finite-sample quantile, the ceil((m + 1)(1 - alpha))-th
smallest of m (infinite when m < 1 / alpha - 1: the interval is then [0, 1]); with the families given, families are
the exchangeable units (:func:`family_quantile`). T2 (the full-benchmark score) is an isotonic map of an estimate
fitted on out-of-fold estimates, continued past the board's strongest and weakest estimates along the pairs'
least-squares slope (``IsotonicCalibrator(tails=True)``: a model stronger than the board would otherwise get the
strongest one's full score); its residuals come from maps fitted without the scored fold (:func:`fold_isotonic`).
The served T1 intervals are calibrated over every scenario and budget at once (:func:`pooled_half_widths`,
:func:`fixed_interval`). Pure numpy / sklearn.
"""

from __future__ import annotations

import numpy as np

from .calibration import ConformalInterval, IsotonicCalibrator, _scale, conformal_quantile

__all__ = [
    "MIN_T2",
    "family_quantile",
    "symmetric_interval",
    "widest",
    "fold_isotonic",
    "pooled_half_widths",
    "pooled_intervals",
    "fixed_interval",
]

MIN_T2 = 10  # out-of-fold (estimate, full score) pairs needed for a T2 map


def family_quantile(z: np.ndarray, groups: np.ndarray, level: float) -> float:
    """Finite-sample conformal quantile with FAMILIES as the exchangeable units (CDF pooling, Dunn, Wasserman &
    Ramdas 2022): each family's scores carry total weight 1/F, and q is the smallest score whose pooled CDF reaches
    ``level * (F + 1) / F``. With one model per family this is the ceil((m + 1) level)-th smallest of m. When that
    level exceeds 1 (fewer than 1 / (1 - level) - 1 families: 9 for 90 %) q is the largest score."""
    uniq, inv, size = np.unique(np.asarray(groups).astype(str), return_inverse=True, return_counts=True)
    F = len(uniq)
    if F == 0:
        return float("inf")
    order = np.argsort(z, kind="stable")
    cdf = np.cumsum((1.0 / (F * size[inv]))[order])
    need = min(1.0, level * (F + 1) / F)
    return float(z[order][min(int(np.searchsorted(cdf, need - 1e-12)), len(z) - 1)])


def symmetric_interval(
    estimate, truth, alpha: float, scale: str = "binomial", floor: float = 0.05, groups=None
) -> ConformalInterval:
    """Split-conformal ``e -+ q s(e)`` from the scaled |residuals| |t - e| / s(e) (pairs with a non-finite value
    dropped): q = :func:`family_quantile` at 1 - alpha when ``groups`` (M,) gives the families, else the
    ceil((m+1)(1-alpha))-th smallest of m. Returns a fitted ConformalInterval (q_lo_ = -q, q_hi_ = q)."""
    e, t = np.asarray(estimate, dtype=float), np.asarray(truth, dtype=float)
    ok = np.isfinite(e) & np.isfinite(t)
    z = np.abs(t[ok] - e[ok]) / _scale(e[ok], scale, floor)
    ci = ConformalInterval(alpha=alpha, scale=scale, floor=floor)
    if not len(z):
        q = float("inf")
    elif groups is None:
        q = conformal_quantile(z, 1.0 - alpha)
    else:
        q = family_quantile(z, np.asarray(groups)[ok], 1.0 - alpha)
    ci.q_lo_, ci.q_hi_, ci.n_ = -q, q, int(len(z))
    return ci


def widest(intervals: list) -> ConformalInterval:
    """A ConformalInterval as wide as the widest of ``intervals`` (same alpha and scale) on each side."""
    first = intervals[0]
    ci = ConformalInterval(alpha=first.alpha, scale=first.scale, floor=first.floor, lo=first.lo, hi=first.hi)
    ci.q_lo_ = min(c.q_lo_ for c in intervals)
    ci.q_hi_ = max(c.q_hi_ for c in intervals)
    ci.n_ = min(c.n_ for c in intervals)
    return ci


def fold_isotonic(x: np.ndarray, t: np.ndarray, folds: np.ndarray) -> tuple[np.ndarray, IsotonicCalibrator | None]:
    """Isotonic T2 map of estimates x (M,) to full scores t (M,): out-of-fold predictions (each fold mapped by a
    map fitted on the other folds' pairs; NaN where fewer than 2 pairs remain) and the map on every pair.
    Returns ((M,), IsotonicCalibrator), or (all NaN, None) with fewer than MIN_T2 pairs."""
    ok = np.isfinite(x) & np.isfinite(t)
    oof = np.full(len(x), np.nan)
    if ok.sum() < MIN_T2:
        return oof, None
    for f in np.unique(folds[ok]):
        tr, te = ok & (folds != f), ok & (folds == f)
        if tr.sum() >= 2:
            oof[te] = IsotonicCalibrator(tails=True).fit(x[tr], t[tr]).transform(x[te])
    return oof, IsotonicCalibrator(tails=True).fit(x[ok], t[ok])


def pooled_half_widths(estimates: dict, truth: dict, rows: np.ndarray, alpha: float) -> dict:
    """Half-widths of the served T1 intervals, calibrated over every scenario and budget at once.

    A small board has a dozen or two models per scenario: a conformal quantile of one scenario's residuals at 90 %
    with the finite-sample correction is their largest (an interval that always covers because it spans half the
    scale). Pooling the scenarios and the budgets gives enough residuals for a quantile that means 90 % (a board of
    one scenario and 18 models: pooled over its scenarios only, half-widths were 2.5-2.9x the MAE on the v2 board's
    mmlu_pro alone), and scaling by each
    scenario's own out-of-fold mean absolute error keeps the widths where the errors are: half-width_s =
    q * mae_s, q the ceil((m + 1)(1 - alpha))-th smallest of the m pooled scores |residual_i| / mae_s(-i) (about
    2.1 for normal errors; scaling by the RMSE instead gave 2.5 on scenarios with heavier tails).

    Each residual is scaled by the mean of the OTHER residuals of its key, mae_s(-i), as a new model's residual is
    scaled by a mean it took no part in (nearly exchangeable: m - 1 others against a new model's m, slightly
    conservative). Scaled by a mean that includes it, a large residual shrinks its own score (with 18 models, one at
    twice the mean scores 2.0 instead of 2.13), the quantile comes out low and the intervals under-cover (simulated
    normal residuals, 4 scenarios of 15 models, 2,000 draws: a new model covered 0.884 of the time at 90 % with the
    scale including it, 0.907 with this one). On the distinct dev boards (seeds 0-2, leave-family-out, each
    fold's interval calibrated on the other folds) coverage went from 0.881 to 0.900 and the half-width from 2.03x to
    2.17x the MAE.

    estimates, truth : {key: (M,)} out-of-fold served estimates and accuracies, a key per (scenario, budget); rows : (M,) bool, the rows
    that may be read (all of them for the served interval; the other folds' for a cross-fitted check).
    Returns {key: half-width} (inf when nothing can be read).
    """
    scale, z = {}, []
    for s, e in estimates.items():
        ok = rows & np.isfinite(e) & np.isfinite(truth[s])
        r = np.abs(e[ok] - truth[s][ok])
        scale[s] = float(np.mean(r)) if ok.any() else float("nan")
        if len(r) >= 2 and scale[s] > 0:
            others = (r.sum() - r) / (len(r) - 1)  # mae_s(-i): each residual's scale without it
            z.append(r / np.where(others > 0, others, scale[s]))  # the others all exact: the key's own MAE
    q = conformal_quantile(np.concatenate(z), 1.0 - alpha) if z else float("inf")
    return {s: (q * v if np.isfinite(v) else float("inf")) for s, v in scale.items()}


def fixed_interval(half_width: float, alpha: float, n: int) -> ConformalInterval:
    """A ConformalInterval ``e -+ half_width`` (scale "none"), clipped to [0, 1]."""
    ci = ConformalInterval(alpha=alpha, scale="none")
    ci.q_lo_, ci.q_hi_, ci.n_ = -float(half_width), float(half_width), int(n)
    return ci


def pooled_intervals(estimates: dict, truth: dict, alpha: float) -> dict:
    """The served intervals {key: ConformalInterval} of every key of ``estimates`` at once: the half-widths of
    :func:`pooled_half_widths` on every row, each a :func:`fixed_interval` that counts the key's finite estimates."""
    rows = np.ones(len(next(iter(estimates.values()))), dtype=bool) if estimates else np.zeros(0, dtype=bool)
    half = pooled_half_widths(estimates, truth, rows, alpha)
    return {k: fixed_interval(h, alpha, int(np.isfinite(estimates[k]).sum())) for k, h in half.items()}
