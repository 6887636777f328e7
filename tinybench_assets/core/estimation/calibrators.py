"""Calibration of the anchor predictor: isotonic maps from an estimate to the full-benchmark score (T2) and
conformal intervals for T1 and T2, all fitted on validation models."""

from __future__ import annotations

import numpy as np

from ..json_floats import to_dict_or_none
from .calibration import ConformalInterval, StoredIsotonicMap, cross_fitted_isotonic


class Calibrators:
    """Step 9: per (clustering, n, scenario, estimator), a T1 interval, an isotonic T2 map and a T2 interval.

    Parameters: ``alpha`` (interval miscoverage), ``interval_scale`` ("binomial" or "none"), ``seed``.
    Fitted attributes: ``t2_maps_``, ``t1_intervals_`` and ``t2_intervals_`` ({(c, n, scenario, estimator): fitted
    map / ConformalInterval}).
    """

    def __init__(self, alpha: float = 0.1, interval_scale: str = "binomial", seed: int = 0):
        self.alpha, self.interval_scale, self.seed = alpha, interval_scale, seed

    @classmethod
    def from_dict(cls, blocks: dict, c: str, n: int) -> "Calibrators":
        """A fitted step of one (c, n) from scenario blocks ({scenario: {"estimators": :meth:`to_dict`'s, decoded}})."""
        step = cls()
        step.t1_intervals_, step.t2_maps_, step.t2_intervals_ = {}, {}, {}
        for s, block in blocks.items():
            for e, d in block["estimators"].items():
                step.t1_intervals_[(c, n, s, e)] = ConformalInterval.from_dict(d["interval_t1"])
                if d.get("calibration_t2") is not None:
                    step.t2_maps_[(c, n, s, e)] = StoredIsotonicMap.from_dict(d["calibration_t2"])
                    step.t2_intervals_[(c, n, s, e)] = ConformalInterval.from_dict(d["interval_t2"])
        return step

    def to_dict(self, c: str, n: int, s: str, names) -> dict:
        """The artifact's intervals and T2 maps of the estimators ``names`` of scenario ``s`` at (c, n)."""
        out = {}
        for e in names:
            key = (c, n, s, e)
            out[e] = {
                "interval_t1": to_dict_or_none(self.t1_intervals_.get(key)),
                "calibration_t2": to_dict_or_none(self.t2_maps_.get(key)),
                "interval_t2": to_dict_or_none(self.t2_intervals_.get(key)),
            }
        return {"estimators": out}

    def fit(self, data, done) -> None:
        """Fit on every validation output in ``data.val`` (random baseline included); ``data.records`` gets one
        validation-MAE row per (scenario, clustering, n, estimator)."""
        self.t2_maps_, self.t1_intervals_, self.t2_intervals_ = {}, {}, {}
        for (c, n), (full, t2raw) in data.val.items():
            data.records += self._fit_budget(full, t2raw, data.T1v, data.T2v, c, n)

    def _fit_budget(self, full, t2raw, T1v, T2v, c, n) -> list:
        recs = []
        for (s, e), x in full.items():
            t1, t2 = T1v[s].to_numpy(), T2v[s].to_numpy()
            ok1 = np.isfinite(x) & np.isfinite(t1)
            self.t1_intervals_[(c, n, s, e)] = ConformalInterval(self.alpha, self.interval_scale).fit(x[ok1], t1[ok1])
            mae1 = float(np.mean(np.abs(x[ok1] - t1[ok1])))
            x2 = t2raw.get((s, e), x)
            ok2 = np.isfinite(x2) & np.isfinite(t2)
            mae2 = np.nan
            if ok2.sum() >= 10:
                oof, cal = cross_fitted_isotonic(x2[ok2], t2[ok2], seed=self.seed)
                self.t2_maps_[(c, n, s, e)] = cal
                self.t2_intervals_[(c, n, s, e)] = ConformalInterval(self.alpha, self.interval_scale).fit(oof, t2[ok2])
                mae2 = float(np.mean(np.abs(oof - t2[ok2])))
            recs.append(
                {
                    "scenario": s,
                    "clustering": c,
                    "n": n,
                    "estimator": e,
                    "val_mae_t1": mae1,
                    "val_mae_t2": mae2,
                    "n_val": int(ok1.sum()),
                }
            )
        return recs

    def predict(self, x, x2, c, n, s, e) -> dict:
        """Estimate x (M,) and T2 input x2 (M,) -> {"estimate", "lower", "upper", "estimate_t2", "lower_t2",
        "upper_t2"}: the T1 interval, the calibrated full score and its interval (NaN without a T2 map)."""
        lo, up = self.t1_intervals_[(c, n, s, e)].predict(x)
        cal = self.t2_maps_.get((c, n, s, e))
        if cal is None:
            e2 = lo2 = up2 = np.full(len(x), np.nan)
        else:
            e2 = cal.transform(x2)
            lo2, up2 = self.t2_intervals_[(c, n, s, e)].predict(e2)
        return {"estimate": x, "lower": lo, "upper": up, "estimate_t2": e2, "lower_t2": lo2, "upper_t2": up2}
