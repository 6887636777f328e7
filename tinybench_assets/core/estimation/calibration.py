"""Calibration of accuracy estimates: an isotonic map to the full-benchmark score, and
split-conformal intervals from validation residuals.

Both are fitted on TRAINING models held out from the IRT fit and anchor selection (validation
models), never on the models being evaluated. Pure numpy / scikit-learn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.isotonic import IsotonicRegression

from ..json_floats import enc, enc_list


def _clean(*arrays):
    arrs = [np.asarray(a, dtype=float).ravel() for a in arrays]
    ok = np.ones(len(arrs[0]), dtype=bool)
    for a in arrs:
        ok &= np.isfinite(a)
    return [a[ok] for a in arrs]


@dataclass
class IsotonicCalibrator:
    """Monotone (non-decreasing) map from an estimate to a target score, e.g. the full-benchmark score.

    Wraps ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip")`` with outputs in [y_min, y_max]. With
    ``tails``, an estimate beyond the fitted range is not clipped to the map's end: the map goes on from its last
    (first) threshold along the least-squares slope of the pairs (``slope_``, at least 0). An isotonic map is flat
    past its last pair, so a model stronger than every one it was fitted on would get the strongest one's full score
    (the distinct dev boards' 4 strongest models held out: a truthfulqa pool accuracy of 0.96 mapped to 0.45-0.52
    where the full score is 0.62-0.64).

    Methods
    -------
    fit(estimate (M,), target (M,)) ; transform(estimate (M',)) -> (M',)
    """

    y_min: float = 0.0
    y_max: float = 1.0
    tails: bool = False

    def fit(self, estimate: np.ndarray, target: np.ndarray) -> "IsotonicCalibrator":
        x, y = _clean(estimate, target)
        if len(x) < 2:
            raise ValueError("isotonic calibration needs at least 2 finite (estimate, target) pairs")
        self.iso_ = IsotonicRegression(out_of_bounds="clip", y_min=self.y_min, y_max=self.y_max, increasing=True)
        self.iso_.fit(x, y)
        self.slope_ = _ls_slope(x, y) if self.tails else None
        return self

    def transform(self, estimate: np.ndarray) -> np.ndarray:
        e = np.asarray(estimate, dtype=float)
        out = np.full(e.shape, np.nan)
        ok = np.isfinite(e)
        if ok.any():
            out[ok] = self.iso_.predict(e[ok])
            out[ok] = _tails(
                out[ok], e[ok], self.iso_.X_thresholds_, self.iso_.y_thresholds_, self.slope_, self.y_min, self.y_max
            )
        return out

    predict = transform

    def to_dict(self) -> dict:
        """The fitted map as the artifact stores it: its thresholds ``x``, ``y``, its bounds (and ``slope``)."""
        return _map_dict(self.iso_.X_thresholds_, self.iso_.y_thresholds_, self.y_min, self.y_max, self.slope_)


def _ls_slope(x: np.ndarray, y: np.ndarray) -> float:
    """The least-squares slope of y on x, at least 0 (0 when x does not vary)."""
    if np.ptp(x) <= 0:
        return 0.0
    return max(0.0, float(np.polyfit(x, y, 1)[0]))


def _tails(
    out: np.ndarray, e: np.ndarray, x: np.ndarray, y: np.ndarray, slope, y_min: float, y_max: float
) -> np.ndarray:
    """The clipped map's outputs ``out`` at estimates ``e``, continued past the thresholds ``x`` (values ``y``)
    along ``slope`` (None: left clipped), within [``y_min``, ``y_max``]."""
    if slope is None:
        return out
    out = np.where(e > x[-1], y[-1] + slope * (e - x[-1]), out)
    out = np.where(e < x[0], y[0] + slope * (e - x[0]), out)
    return np.clip(out, y_min, y_max)


def _map_dict(x, y, y_min: float, y_max: float, slope=None) -> dict:
    """An isotonic map's thresholds and bounds in the artifact's strict JSON (``slope`` only where it has tails)."""
    out = {"x": enc_list(x), "y": enc_list(y), "y_min": enc(y_min), "y_max": enc(y_max)}
    return out if slope is None else {**out, "slope": enc(slope)}


class StoredIsotonicMap:
    """A fitted :class:`IsotonicCalibrator` rebuilt from its ``to_dict`` (the same interpolation and tails; one
    threshold: a constant map, with its tails)."""

    def __init__(self, x, y, y_min: float, y_max: float, slope: float | None = None):
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        self.x, self.y, self.y_min, self.y_max = x, y, float(y_min), float(y_max)
        self.slope = None if slope is None else float(slope)
        if self.slope is not None and not (np.isfinite(self.slope) and self.slope >= 0):
            raise ValueError(f"slope {slope!r}: expected a finite number >= 0")
        self.const = float(y[0]) if len(x) == 1 else None
        if self.const is None:
            cal = IsotonicCalibrator(y_min=y_min, y_max=y_max).fit(x, y)
            iso = cal.iso_
            if not (np.array_equal(iso.X_thresholds_, x) and np.array_equal(iso.y_thresholds_, y)):
                # refitting an isotonic sequence may move a plateau by an ulp; pin the stored thresholds exactly
                iso.X_thresholds_, iso.y_thresholds_ = x, y
                iso.X_min_, iso.X_max_ = float(x[0]), float(x[-1])
                iso._build_f(x, y)
            self.cal = cal

    @classmethod
    def from_dict(cls, d: dict) -> "StoredIsotonicMap":
        """From :meth:`IsotonicCalibrator.to_dict`'s fields, decoded (ValueError when they are not an isotonic map)."""
        return cls(d["x"], d["y"], d["y_min"], d["y_max"], d.get("slope"))

    def to_dict(self) -> dict:
        """The stored thresholds and bounds, as :meth:`IsotonicCalibrator.to_dict` wrote them."""
        return _map_dict(self.x, self.y, self.y_min, self.y_max, self.slope)

    def transform(self, e):
        e = np.asarray(e, dtype=float)
        if self.const is not None:  # a constant map
            out = np.where(np.isfinite(e), self.const, np.nan)
        else:
            out = self.cal.transform(e)
        return _tails(out, e, self.x, self.y, self.slope, self.y_min, self.y_max)


def _scale(estimate: np.ndarray, kind: str, floor: float) -> np.ndarray:
    e = np.asarray(estimate, dtype=float)
    if kind == "none":
        return np.ones_like(e)
    if kind == "binomial":
        p = np.clip(e, 0.0, 1.0)
        return np.sqrt(p * (1.0 - p)) + floor
    raise ValueError(f"unknown interval scale {kind!r}; use 'binomial' or 'none'")


def conformal_quantile(scores: np.ndarray, level: float) -> float:
    """Finite-sample split-conformal quantile: the ceil((m+1) * level)-th smallest of m scores."""
    s = np.sort(np.asarray(scores, dtype=float))
    m = len(s)
    k = int(np.ceil((m + 1) * level))
    if k > m:
        return float("inf")
    if k < 1:
        return float("-inf")
    return float(s[k - 1])


@dataclass
class ConformalInterval:
    """Split-conformal interval around an estimate from held-out residuals.

    With residuals ``r = truth - estimate`` scaled by ``s(estimate)`` (``scale="binomial"``:
    ``sqrt(e (1 - e)) + floor``, so an estimate near 0 or 1 gets a narrower interval; ``"none"``:
    constant width), the interval is ``[e + q_lo * s(e), e + q_hi * s(e)]`` with q_lo, q_hi the
    alpha/2 and 1 - alpha/2 conformal quantiles of the scaled residuals, clipped to [lo, hi]; ``symmetric``:
    ``q_hi = -q_lo`` = the 1 - alpha conformal quantile of the absolute scaled residuals (for models whose error's
    direction the held-out ones need not share). Marginal coverage >= 1 - alpha holds for new models exchangeable
    with the validation models.

    Methods
    -------
    fit(estimate (M,), truth (M,)) ; predict(estimate (M',)) -> (lower (M',), upper (M',))
    """

    alpha: float = 0.1
    scale: str = "binomial"
    floor: float = 0.05
    lo: float = 0.0
    hi: float = 1.0
    symmetric: bool = False

    def fit(self, estimate: np.ndarray, truth: np.ndarray) -> "ConformalInterval":
        e, t = _clean(estimate, truth)
        if len(e) < 2:
            raise ValueError("conformal interval needs at least 2 finite (estimate, truth) pairs")
        z = (t - e) / _scale(e, self.scale, self.floor)
        if self.symmetric:
            self.q_hi_ = conformal_quantile(np.abs(z), 1.0 - self.alpha)
            self.q_lo_, self.n_ = -self.q_hi_, len(e)
            return self
        # lower end: the -(alpha/2)-quantile taken as the complement of the upper quantile of -z
        self.q_lo_ = -conformal_quantile(-z, 1.0 - self.alpha / 2)
        self.q_hi_ = conformal_quantile(z, 1.0 - self.alpha / 2)
        self.n_ = len(e)
        return self

    def predict(self, estimate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(estimate, dtype=float)
        s = _scale(e, self.scale, self.floor)
        lower = np.clip(e + self.q_lo_ * s, self.lo, self.hi)
        upper = np.clip(e + self.q_hi_ * s, self.lo, self.hi)
        return lower, upper

    def to_dict(self) -> dict:
        """The fitted interval as the artifact stores it (:meth:`from_dict` reads it back)."""
        out = {
            "alpha": float(self.alpha),
            "scale": self.scale,
            "floor": float(self.floor),
            "lo": float(self.lo),
            "hi": float(self.hi),
            "q_lo": enc(self.q_lo_),
            "q_hi": enc(self.q_hi_),
            "n": int(self.n_),
        }
        return {**out, "symmetric": True} if self.symmetric else out  # artifacts without the field stay as they were

    @classmethod
    def from_dict(cls, d: dict) -> "ConformalInterval":
        """A fitted interval from :meth:`to_dict`'s fields, decoded (q_lo, q_hi as floats; ``n`` optional)."""
        ci = cls(d["alpha"], d["scale"], d["floor"], d["lo"], d["hi"], bool(d.get("symmetric", False)))
        ci.q_lo_, ci.q_hi_, ci.n_ = float(d["q_lo"]), float(d["q_hi"]), int(d.get("n", 0))
        return ci


def cross_fitted_isotonic(
    estimate: np.ndarray, target: np.ndarray, *, n_folds: int = 5, seed: int = 0
) -> tuple[np.ndarray, IsotonicCalibrator]:
    """Out-of-fold isotonic predictions (for honest residuals) and the map fitted on all pairs.

    estimate, target : (M,). Returns (oof prediction (M,), IsotonicCalibrator fitted on everything).
    Non-finite pairs get NaN out-of-fold predictions.
    """
    e = np.asarray(estimate, dtype=float)
    t = np.asarray(target, dtype=float)
    ok = np.flatnonzero(np.isfinite(e) & np.isfinite(t))
    oof = np.full(len(e), np.nan)
    rng = np.random.default_rng(seed)
    folds = np.array_split(rng.permutation(ok), max(2, min(n_folds, len(ok))))
    for k, test in enumerate(folds):
        train = np.concatenate([f for j, f in enumerate(folds) if j != k])
        oof[test] = IsotonicCalibrator().fit(e[train], t[train]).transform(e[test])
    return oof, IsotonicCalibrator().fit(e[ok], t[ok])


def coverage(lower: np.ndarray, upper: np.ndarray, truth: np.ndarray) -> float:
    """Fraction of finite truths inside [lower, upper]."""
    lo, up, t = _clean(lower, upper, truth)
    return float(np.mean((t >= lo) & (t <= up))) if len(t) else float("nan")
