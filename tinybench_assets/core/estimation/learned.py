"""The learned estimators of the anchor predictor (gbm, gbm_joint): gradient-boosted regressors trained on fit
models, from the anchor answers and abilities, predicting the unseen items' accuracy (T1 part) and the full score (T2).

:class:`LearnedMixin` reads ``anchors_``, ``cols_``, ``w_``, ``scenarios_`` and the parameters ``learned``,
``seed``, ``gbm_params``; it fills ``gbm_`` ({(clustering, n, scenario, "sep"|"joint", "t1"|"t2"): regressor}).
"""
from __future__ import annotations

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor


def fit_learned(predictor, Yf, T2f, c, n) -> dict:
    """The learned regressors of (clustering c, budget n) fitted on ``predictor`` (anchors and IRT fitted):
    {(c, n, scenario, kind, target): regressor}. A module-level task, so a worker process can run it."""
    predictor._fit_gbm(Yf, T2f, c, n)
    return {k: m for k, m in predictor.gbm_.items() if k[:2] == (c, n)}


class LearnedMixin:
    """Gradient-boosted estimators and the raw (uncalibrated) outputs of every base and learned estimator."""

    def _gbm(self):
        # lr 0.06 / 500 / 15 fits ~3x faster than lr 0.03 / 1000 / 20 at the same n=30 MAEs (within 0.04 points on
        # the quick estimation benchmark); lr 0.1 / 300 / 10 costs own-budget T2 0.2 points.
        params = dict(max_iter=500, learning_rate=0.06, l2_regularization=1.0, max_features=0.5,
                      early_stopping=True, validation_fraction=0.1, n_iter_no_change=15, random_state=self.seed)
        params.update(self.gbm_params)
        return HistGradientBoostingRegressor(**params)

    def _unseen_target(self, Y, c, n, s):
        """(unseen local indices (U,), Y's columns of scenario ``s``'s non-anchor items (M, U)) for (c, n)."""
        A = self.anchors_[(c, n, s)]
        cols = self.cols_[s]
        unseen = np.setdiff1d(np.arange(len(cols)), A.local)
        return unseen, Y[:, cols[unseen]]

    def _seen_part(self, Y, A):
        """(M,) mean over the anchors of A of weight * answer (NaN answers as 0): the seen half of p-IRT's formula."""
        w = self.w_[A.items]
        Ya = np.where(np.isnan(Y[:, A.items]), 0.0, Y[:, A.items])
        return (Ya * w[None, :]).mean(1)

    def _fit_gbm(self, Yf, T2f, c, n):
        """Regressors on fit models: unseen-item accuracy (T1 part) and full score (T2), per feature set."""
        _, feats, has = self._features(Yf, c, n)
        for s in self.scenarios_:
            unseen, Yu = self._unseen_target(Yf, c, n, s)
            w_u = self.w_[self.cols_[s][unseen]]
            h = has[s]
            for kind in ("sep", "joint"):
                X = feats[(kind, s)]
                if len(unseen):
                    # the unseen half of p-IRT's formula: mean_j(w_j y_j) over the unseen items
                    target = (np.where(np.isnan(Yu[h]), 0.0, Yu[h]) * w_u[None, :]).mean(1)
                    self.gbm_[(c, n, s, kind, "t1")] = self._gbm().fit(X[h], target)
                t2 = T2f[s].to_numpy()
                ok = h & np.isfinite(t2)
                if ok.sum() >= 20:
                    self.gbm_[(c, n, s, kind, "t2")] = self._gbm().fit(X[ok], t2[ok])

    def _raw(self, Y, c, n):
        """Base + learned estimates ({(s, est): (M,)}) and direct full-score predictions ({(s, est): (M,)})."""
        base, feats, has = self._features(Y, c, n)
        t2raw = {}
        for s in self.scenarios_:
            A = self.anchors_[(c, n, s)]
            N = len(self.cols_[s])
            lam_n = len(A.local) / N
            seen = self._seen_part(Y, A)
            for kind, name in (("sep", "gbm"), ("joint", "gbm_joint")):
                m1 = self.gbm_.get((c, n, s, kind, "t1"))
                if m1 is not None:
                    unseen_pred = m1.predict(feats[(kind, s)])
                    base[(s, name)] = np.where(has[s], lam_n * seen + (1 - lam_n) * unseen_pred, np.nan)
                elif self.learned and lam_n >= 1:  # every item is an anchor
                    base[(s, name)] = np.where(has[s], seen, np.nan)
                m2 = self.gbm_.get((c, n, s, kind, "t2"))
                if m2 is not None:
                    t2raw[(s, name)] = np.where(has[s], m2.predict(feats[(kind, s)]), np.nan)
        if (c, n) in getattr(self, "bank_", {}):  # the answer bank (BankMixin), when fitted
            for s, v in self._bank_estimates(Y, c, n).items():
                base[(s, "bank_joint")] = v
        return base, t2raw
