"""The learned estimators of the anchor predictor (gbm, gbm_joint): gradient-boosted regressors trained on fit
models, from the anchor answers and abilities, predicting the unseen items' accuracy (T1 part) and the full score (T2)."""

from __future__ import annotations

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor

from ..parallel import run_tasks
from .base_estimates import features


def fit_learned(step, Yf, T2f, lay, irt, anchors, c, n) -> dict:
    """The regressors of (clustering c, budget n): {(c, n, scenario, kind, target): regressor}. A module-level
    task, so a worker process can run it."""
    return step.fit_budget(Yf, T2f, lay, irt, anchors, c, n)


def seen_part(Y, w, A):
    """(M,) mean over the anchors of A of weight * answer (NaN answers as 0): the seen half of p-IRT's formula."""
    wa = w[A.items]
    Ya = np.where(np.isnan(Y[:, A.items]), 0.0, Y[:, A.items])
    return (Ya * wa[None, :]).mean(1)


class LearnedRegressors:
    """Step 4: gradient-boosted regressors per (clustering, n, scenario), on the scenario's own features ("sep") and
    on every scenario's ("joint"), for the unseen items' accuracy ("t1") and the full score ("t2").

    Parameters: ``enabled`` (False: no learned estimators), ``seed``, ``gbm_params`` (overrides for
    ``HistGradientBoostingRegressor``). Fitted attribute: ``models_`` ({(c, n, scenario, kind, target): regressor}).
    """

    def __init__(self, enabled: bool = True, seed: int = 0, gbm_params: dict | None = None):
        self.enabled, self.seed, self.gbm_params = enabled, seed, dict(gbm_params or {})

    @classmethod
    def from_models(cls, models: dict, enabled: bool) -> "LearnedRegressors":
        """A fitted step from stored regressors (anything with ``predict``)."""
        step = cls(enabled=enabled)
        step.models_ = dict(models)
        return step

    def to_dict(self, c: str, n: int, scenarios, width) -> dict:
        """The artifact's ``learned`` entries of (c, n): ``fit_learned`` and ``models``, [{scenario, kind, target,
        n_features}] in scenario, kind, target order (the tree file's order: ``tiny_benchmark.export.learned_models``
        writes ``models_`` there); ``width(s, kind)``: the features' width (``base_estimates.feature_width``)."""
        models = [
            {"scenario": s, "kind": kind, "target": t, "n_features": width(s, kind)}
            for s in scenarios
            for kind in ("sep", "joint")
            for t in ("t1", "t2")
            if (c, n, s, kind, t) in self.models_
        ]
        return {"fit_learned": bool(self.enabled), "models": models}

    def _gbm(self):
        # lr 0.06 / 500 / 15 fits ~3x faster than lr 0.03 / 1000 / 20 at the same n=30 MAEs (within 0.04 points on
        # the quick estimation benchmark); lr 0.1 / 300 / 10 costs own-budget T2 0.2 points.
        params = dict(
            max_iter=500,
            learning_rate=0.06,
            l2_regularization=1.0,
            max_features=0.5,
            early_stopping=True,
            validation_fraction=0.1,
            n_iter_no_change=15,
            random_state=self.seed,
        )
        params.update(self.gbm_params)
        return HistGradientBoostingRegressor(**params)

    def fit(self, data, done) -> None:
        """Every (clustering, n)'s regressors on the fit models: independent tasks, in the pool when there is one
        (the largest budgets, most features, first), stored in (clustering, n) order."""
        self.models_ = {}
        if not self.enabled:
            return
        anchors = done["anchors"]
        cn = [(c, n) for c in anchors.clusterings for n in anchors.n_values]
        tasks = [(self, data.Yf, data.T2f, data.layout, done["irt"], anchors, c, n) for c, n in cn]
        for fitted in run_tasks(fit_learned, tasks, data.pool, first=lambda i: -cn[i][1]):
            self.models_.update(fitted)

    def fit_budget(self, Yf, T2f, lay, irt, anchors, c, n) -> dict:
        """Regressors of (c, n) on fit models: unseen-item accuracy (T1 part) and full score (T2), per feature set."""
        _, feats, has = features(Yf, lay, irt, anchors, c, n)
        out = {}
        for s in lay.scenarios:
            A, cols = anchors.sets_[(c, n, s)], lay.cols[s]
            unseen = np.setdiff1d(np.arange(len(cols)), A.local)
            Yu = Yf[:, cols[unseen]]
            w_u = lay.w[cols[unseen]]
            h = has[s]
            for kind in ("sep", "joint"):
                X = feats[(kind, s)]
                if len(unseen):
                    # the unseen half of p-IRT's formula: mean_j(w_j y_j) over the unseen items
                    target = (np.where(np.isnan(Yu[h]), 0.0, Yu[h]) * w_u[None, :]).mean(1)
                    out[(c, n, s, kind, "t1")] = self._gbm().fit(X[h], target)
                t2 = T2f[s].to_numpy()
                ok = h & np.isfinite(t2)
                if ok.sum() >= 20:
                    out[(c, n, s, kind, "t2")] = self._gbm().fit(X[ok], t2[ok])
        return out

    def predict(self, Y, lay, anchors, c, n, base, feats, has) -> dict:
        """Add gbm / gbm_joint to ``base`` ({(s, est): (M,)}) in place; returns the direct full-score predictions
        ({(s, est): (M,)})."""
        t2raw = {}
        for s in lay.scenarios:
            A = anchors.sets_[(c, n, s)]
            lam_n = len(A.local) / len(lay.cols[s])
            seen = seen_part(Y, lay.w, A)
            for kind, name in (("sep", "gbm"), ("joint", "gbm_joint")):
                m1 = self.models_.get((c, n, s, kind, "t1"))
                if m1 is not None:
                    unseen_pred = m1.predict(feats[(kind, s)])
                    base[(s, name)] = np.where(has[s], lam_n * seen + (1 - lam_n) * unseen_pred, np.nan)
                elif self.enabled and lam_n >= 1:  # every item is an anchor
                    base[(s, name)] = np.where(has[s], seen, np.nan)
                m2 = self.models_.get((c, n, s, kind, "t2"))
                if m2 is not None:
                    t2raw[(s, name)] = np.where(has[s], m2.predict(feats[(kind, s)]), np.nan)
        return t2raw
