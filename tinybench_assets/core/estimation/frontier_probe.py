"""The frontier probe: how the estimators fare on models beyond the models they were fitted on.

A new model stronger than the board lies beyond the models the predictor was fitted on. To see how the estimators
behave there, the probe refits the predictor's model-dependent steps (the IRT fits, at the served fits' D, the
anchors of every clustering, the validation outputs and the tutorial's gp-IRT lambdas) without the strongest share
of the training models (:class:`~.training.TrainingSplit`'s ``frontier_share``), which join the validation models.
Those models are then beyond the probe's fit as a new strong model is beyond the served one. The served fit keeps
every training model, so what the board's own models get does not depend on the probe, except:

* the clustering choice (:func:`~.selection.choose`): among clusterings whose validation error on the board is
  within :data:`~.selection.TIE` of the best, the one whose worst scenario beyond the board is least bad against
  random items (``worst_``) is served;
* the frontier step (:mod:`.frontier`) chooses the estimator of a model beyond the board and fits its intervals on
  the probe's validation models beyond its board.

A model's *position* in a scenario is its ``irt`` estimate there (the scenario's own fit, its own anchors); the
probe's *board* is its validation models drawn like the board (not among the strongest share) and a model is beyond
it at or above the ``1 - share`` quantile of their positions (:func:`beyond`).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .anchor_sets import AnchorSets
from .bank import AnswerBank
from .chain import ValidationOutputs
from .irt_fits import IRTFits
from .lambdas import Lambdas
from .learned import LearnedRegressors
from .training import FitData

POSITION = "irt"  # the estimate that places a model on the board
# the estimators that can estimate past the training models' range (the anchor mean, the IRT estimators with the
# tutorial's lambda; :mod:`.frontier`)
EXTRAPOLATING = ("anchor", "irt", "pirt", "gpirt", "irt_joint", "pirt_joint", "gpirt_joint")
MIN_FRONTIER_MODELS = 20  # validation models beyond the threshold needed to score or serve a frontier rule


def threshold(pos: np.ndarray, strong: np.ndarray, share: float) -> float | None:
    """The ``1 - share`` quantile of the positions (V,) of the models not ``strong`` (None with fewer than
    ``MIN_FRONTIER_MODELS`` of them)."""
    board = np.isfinite(pos) & ~np.asarray(strong, dtype=bool)
    if board.sum() < MIN_FRONTIER_MODELS:
        return None
    return float(np.quantile(pos[board], 1 - share))


def at_or_above(pos: np.ndarray, thr: float) -> np.ndarray:
    """(V,) bool: finite positions at or above ``thr``, both rounded to 8 decimals (a model that answers every anchor
    sits exactly at the top position, which a batched and a single ability estimate reach within float noise)."""
    p = np.asarray(pos, dtype=float)
    return np.isfinite(p) & (np.round(p, 8) >= np.round(thr, 8))


def beyond(pos: np.ndarray, strong: np.ndarray, t1: np.ndarray, share: float) -> np.ndarray | None:
    """(V,) bool: the models with a truth at or above the threshold, None with fewer than ``MIN_FRONTIER_MODELS``."""
    thr = threshold(pos, strong, share)
    if thr is None:
        return None
    rows = at_or_above(pos, thr) & np.isfinite(t1)
    return rows if rows.sum() >= MIN_FRONTIER_MODELS else None


class FrontierProbe:
    """Step 10: refits the predictor's model-dependent steps without the strongest training models (module
    docstring). Its other parameters are read from the served steps it mirrors.

    Parameter: ``share`` (the top share of the probe board's positions beyond which a model is beyond it).

    Fitted attributes: ``worst_`` ({(clustering, n): the worst scenario's ratio of the best extrapolating estimator's
    MAE to random items' on the probe's models beyond its board}), ``table_`` (one row per clustering, n, scenario:
    that estimator, its MAE, random items' MAE, models), ``n_fit_`` / ``n_val_`` / ``n_strong_`` (the probe's fit,
    validation and strong models; 0 without a probe) and ``seconds_``. Its output ``data.probe`` ((the probe's
    :class:`~.training.FitData` with its validation outputs, the family of each of its validation models or None),
    or None) is read by the frontier step.
    """

    def __init__(self, share: float = 0.05):
        self.share = share

    def fit(self, data: FitData, done: dict) -> None:
        t0 = time.perf_counter()
        self.worst_, self.table_ = {}, pd.DataFrame()
        self.n_fit_ = self.n_val_ = self.n_strong_ = 0
        data.probe = None
        if data.strong is None or self.share <= 0 or not (data.strong.any() or data.strong_fit.any()):
            self.seconds_ = time.perf_counter() - t0
            return
        split = done["split"]
        if data.strong_fit.any():
            probe = self.probe_data(data)
            fitted: dict = {}
            for name, step in self.make_steps(done).items():
                step.fit(probe, fitted)
                fitted[name] = step
            groups = split.val_groups_
            if groups is not None:
                groups = np.concatenate([groups, split.fit_groups_[data.strong_fit]])
        else:  # every strong model is a validation model already: the served fit is the probe
            probe, groups = data, split.val_groups_
        data.probe = (probe, groups)
        self.n_fit_, self.n_val_, self.n_strong_ = len(probe.Yf), len(probe.Yv), int(probe.strong.sum())
        self._score(probe)
        self.seconds_ = time.perf_counter() - t0

    def _score(self, probe: FitData) -> None:
        """``table_`` and ``worst_`` from the probe's validation outputs."""
        rows = []
        for (c, n), (full, _) in probe.val.items():
            if c == "random":
                continue
            rand = probe.val[("random", n)][0]
            for s in probe.layout.scenarios:
                t1 = probe.T1v[s].to_numpy()
                r = beyond(full[(s, POSITION)], probe.strong, t1, self.share)
                if r is None:
                    continue
                maes = {e: _mae(full[(s, e)], t1, r) for e in EXTRAPOLATING if (s, e) in full}
                e = min(maes, key=lambda k: np.nan_to_num(maes[k], nan=np.inf))
                rows.append(
                    dict(
                        clustering=c,
                        n=n,
                        scenario=s,
                        estimator=e,
                        mae=maes[e],
                        random_mae=_mae(rand[(s, "random")], t1, r),
                        n_models=int(r.sum()),
                    )
                )
        self.table_ = pd.DataFrame(rows)
        if len(self.table_):
            ratio = self.table_.mae / self.table_.random_mae
            self.worst_ = {k: float(v) for k, v in ratio.groupby([self.table_.clustering, self.table_.n]).max().items()}

    @staticmethod
    def probe_data(data: FitData) -> FitData:
        """``data`` with its strong fit models moved to the validation models (after the served ones)."""
        sf = np.asarray(data.strong_fit, dtype=bool)
        lay = data.layout
        return FitData(
            lay,
            data.Yf[~sf],
            np.vstack([data.Yv, data.Yf[sf]]),
            pd.concat([data.T1v, lay.pool_accuracy(data.Yf[sf])], ignore_index=True),
            data.T2f[~sf].reset_index(drop=True),
            pd.concat([data.T2v, data.T2f[sf]], ignore_index=True),
            np.concatenate([np.asarray(data.strong, dtype=bool), np.ones(int(sf.sum()), dtype=bool)]),
            pool=data.pool,
        )

    @staticmethod
    def make_steps(done: dict) -> dict:
        """The probe's unfitted steps, with the served steps' parameters (the IRT fits at the served D; no learned
        estimators: they are not among the frontier rule's candidates)."""
        irt, anchors = done["irt"], done["anchors"]
        return {
            "irt": IRTFits(
                seed=irt.seed,
                device=irt.device,
                irt_options=irt.irt_options,
                dims={k: int(p.a.shape[1]) for k, p in irt.params_.items()},
            ),
            "anchors": AnchorSets(
                anchors.n_values,
                anchors.clusterings,
                anchors.scenario_n,
                anchors.large_pool_items,
                anchors.large_pool_scale,
                anchors.n_init,
                anchors.seed,
                linear=False,
            ),
            "learned": LearnedRegressors(False),
            "bank": AnswerBank(False),
            "validation": ValidationOutputs(done["validation"].seed),
            "lambdas": Lambdas(done["lambdas"].lambda_grid),
        }


def _mae(x: np.ndarray, truth: np.ndarray, rows: np.ndarray) -> float:
    """Mean absolute error of x on ``rows`` where both are finite (NaN when none is)."""
    ok = rows & np.isfinite(x) & np.isfinite(truth)
    return float(np.mean(np.abs(x[ok] - truth[ok]))) if ok.any() else float("nan")
