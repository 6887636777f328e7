"""Per-model calibration of a router's P(correct): Platt scaling, composed onto any router.

A router's P drives cost-aware routing (P - lambda x cost, cascade thresholds), where a model whose P is
systematically too high or too low is chosen too often or too rarely. ``PlattCalibrator`` learns, per model m,
P' = sigmoid(slope_m x logit(P) + intercept_m) from out-of-fold predictions (never the router's own in-sample fit);
``CalibratedRouter(base)`` is the base router with that map on top, as scikit-learn's ``CalibratedClassifierCV``
wraps a classifier.
"""

from __future__ import annotations

import copy

import numpy as np

from .routers import BaseRouter, cv_folds

_EPS = 1e-4


def expit(x) -> np.ndarray:
    """scipy.special.expit, imported when a calibrator runs: scipy (0.2-0.3 s) stays out of the definitions' load,
    which every run worker, code server and CLI process pays (test_cards checks it)."""
    from scipy.special import expit as _expit

    return _expit(x)


def logit(P) -> np.ndarray:
    P = np.clip(np.asarray(P, dtype=float), _EPS, 1 - _EPS)
    return np.log(P / (1 - P))


class PlattCalibrator:
    """Per-model P' = sigmoid(slope_m x logit(P_m) + intercept_m), fitted by Newton's method on the log-loss of the
    observed cells, with a ridge of strength ``ridge`` (in pseudo-observations) toward the identity map (slope 1,
    intercept 0), so a model with few or one-sided answers keeps its P."""

    def __init__(self, ridge: float = 1.0, max_iter: int = 50):
        self.ridge, self.max_iter = float(ridge), int(max_iter)

    def fit(self, P, Y) -> PlattCalibrator:
        Z, Y = logit(P), np.asarray(Y, dtype=float)
        if Z.shape != Y.shape:
            raise ValueError(f"P {Z.shape} and Y {Y.shape} differ")
        obs = ~np.isnan(Y)
        Yz, W = np.where(obs, Y, 0.0), obs.astype(float)
        M = Y.shape[1]
        w = np.tile([1.0, 0.0], (M, 1))  # (slope, intercept) per model
        prior = w.copy()
        for _ in range(self.max_iter):
            p = expit(w[:, 0] * Z + w[:, 1])
            r, s = W * (p - Yz), W * p * (1 - p)
            g = np.stack([(r * Z).sum(0), r.sum(0)], axis=1) + self.ridge * (w - prior)
            h = np.empty((M, 2, 2))
            h[:, 0, 0], h[:, 0, 1] = (s * Z * Z).sum(0) + self.ridge, (s * Z).sum(0)
            h[:, 1, 0], h[:, 1, 1] = h[:, 0, 1], s.sum(0) + self.ridge
            step = np.linalg.solve(h, g[:, :, None])[:, :, 0]
            step *= np.minimum(1.0, 2.0 / np.maximum(np.abs(step).max(axis=1, keepdims=True), 1e-12))  # damped
            w -= step
            if np.abs(step).max() < 1e-8:
                break
        self.slope_, self.intercept_ = w[:, 0].copy(), w[:, 1].copy()
        return self

    def transform(self, P) -> np.ndarray:
        return np.clip(expit(self.slope_ * logit(P) + self.intercept_), _EPS, 1 - _EPS)


def crossfit_calibrated(P_oof, Y, fold, ridge: float = 1.0) -> np.ndarray:
    """Calibrated out-of-fold P: fold f's rows mapped by a calibrator fitted on the other folds' rows only."""
    P_oof, Y, fold = np.asarray(P_oof, dtype=float), np.asarray(Y, dtype=float), np.asarray(fold)
    out = np.empty_like(P_oof)
    for f in np.unique(fold):
        here = fold == f
        out[here] = PlattCalibrator(ridge).fit(P_oof[~here], Y[~here]).transform(P_oof[here])
    return out


class CalibratedRouter(BaseRouter):
    """``base``'s P(correct) through a per-model :class:`PlattCalibrator`. With ``calibrator`` already fitted (on
    out-of-fold predictions from router selection), ``fit`` fits only the base; otherwise ``fit`` first fits the
    calibrator on ``n_folds`` out-of-fold predictions of copies of the base."""

    name = "calibrated"

    def __init__(self, base: BaseRouter, calibrator: PlattCalibrator | None = None, n_folds: int = 5, seed: int = 0):
        self.base, self.calibrator, self.n_folds, self.seed = base, calibrator, int(n_folds), int(seed)

    def params(self):
        return {"base": self.base.describe()}

    def fit(self, E, Y, groups=None):
        Y = self._fit_common(Y)
        if self.calibrator is None or not hasattr(self.calibrator, "slope_"):
            fold = cv_folds(len(Y), self.n_folds, self.seed)
            P = np.empty(Y.shape)
            for f in range(self.n_folds):
                tr = fold != f
                g = None if groups is None else np.asarray(groups)[tr]
                P[~tr] = copy.deepcopy(self.base).fit(E[tr], Y[tr], g).predict_proba(E[~tr])
            self.calibrator = (self.calibrator or PlattCalibrator()).fit(P, Y)
        self.base.fit(E, Y, groups)
        return self

    @classmethod
    def of_fitted(cls, base: BaseRouter, calibrator: PlattCalibrator, Y) -> CalibratedRouter:
        """A base router already fitted on the training answers ``Y`` with a fitted calibrator (nothing is fitted)."""
        r = cls(base, calibrator=calibrator)
        r._fit_common(Y)
        return r

    def predict_proba(self, E):
        return self.calibrator.transform(self.base.predict_proba(E))

    def state(self):
        return {
            "router": self.name,
            "params": {},
            "members": [self.base.state()],
            "arrays": {"acc_": self.acc_, "slope_": self.calibrator.slope_, "intercept_": self.calibrator.intercept_},
        }

    @classmethod
    def from_state(cls, base: BaseRouter, arrays: dict) -> CalibratedRouter:
        cal = PlattCalibrator()
        cal.slope_, cal.intercept_ = np.asarray(arrays["slope_"]), np.asarray(arrays["intercept_"])
        r = cls(base, calibrator=cal)
        r.acc_ = np.asarray(arrays["acc_"])
        return r
