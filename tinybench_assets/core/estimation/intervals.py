"""Calibration of the anchor predictor: isotonic maps from an estimate to the full-benchmark score (T2) and
conformal intervals for T1 and T2, all fitted on validation models.

:class:`CalibrationMixin` reads the parameters ``alpha``, ``interval_scale``, ``seed``; it fills ``t2_cal_``,
``int_t1_`` and ``int_t2_`` ({(clustering, n, scenario, estimator): fitted map / ConformalInterval}).
"""
from __future__ import annotations

import numpy as np

from ..calibration import ConformalInterval, cross_fitted_isotonic


class CalibrationMixin:
    """Isotonic T2 maps and conformal intervals."""

    def _calibrate(self, full, t2raw, T1v, T2v, c, n):
        """Isotonic T2 maps and conformal intervals from validation outputs; returns validation records."""
        recs = []
        for (s, e), x in full.items():
            t1, t2 = T1v[s].to_numpy(), T2v[s].to_numpy()
            ok1 = np.isfinite(x) & np.isfinite(t1)
            self.int_t1_[(c, n, s, e)] = ConformalInterval(self.alpha, self.interval_scale).fit(x[ok1], t1[ok1])
            mae1 = float(np.mean(np.abs(x[ok1] - t1[ok1])))
            x2 = t2raw.get((s, e), x)
            ok2 = np.isfinite(x2) & np.isfinite(t2)
            mae2 = np.nan
            if ok2.sum() >= 10:
                oof, cal = cross_fitted_isotonic(x2[ok2], t2[ok2], seed=self.seed)
                self.t2_cal_[(c, n, s, e)] = cal
                self.int_t2_[(c, n, s, e)] = ConformalInterval(self.alpha, self.interval_scale).fit(oof, t2[ok2])
                mae2 = float(np.mean(np.abs(oof - t2[ok2])))
            recs.append({"scenario": s, "clustering": c, "n": n, "estimator": e,
                         "val_mae_t1": mae1, "val_mae_t2": mae2, "n_val": int(ok1.sum())})
        return recs

    def _finish(self, x, x2, c, n, s, e):
        """Estimate x (M,) and T2 input x2 (M,) -> {"estimate", "lower", "upper", "estimate_t2", "lower_t2", "upper_t2"}."""
        lo, up = self.int_t1_[(c, n, s, e)].predict(x)
        cal = self.t2_cal_.get((c, n, s, e))
        if cal is None:
            e2 = lo2 = up2 = np.full(len(x), np.nan)
        else:
            e2 = cal.transform(x2)
            lo2, up2 = self.int_t2_[(c, n, s, e)].predict(e2)
        return {"estimate": x, "lower": lo, "upper": up, "estimate_t2": e2, "lower_t2": lo2, "upper_t2": up2}
