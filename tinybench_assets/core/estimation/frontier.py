"""Estimates for a model beyond the board: the estimator and intervals served when a model's anchor answers place it
above the training models.

A team's new model is usually stronger than the leaderboard it is compared with, and that is where estimators
learned from the board break: regressors and isotonic maps cannot predict past the range they were trained on, and an
estimator chosen and calibrated on validation models like the training ones is biased low there, its interval too
narrow (openllm, the strongest 5 % held out, n = 30: served T1 bias -2.7 points, 90 % coverage 0.67).

The rule is chosen and calibrated on the frontier probe (:mod:`.frontier_probe`, the step before the selector): the
predictor's IRT fits, anchors and validation outputs refitted without the strongest share of the training models,
which join the validation models, so they lie beyond the probe's fit models as a new strong model lies beyond the
training models. The served fit keeps every training model. Per (budget, scenario, served estimator):

* a model's *position* in a scenario is its ``irt`` estimate there (the scenario's own IRT fit, its own anchors):
  monotone in ability, it carries the scale past the training range, and it says beyond the board *in this
  scenario* (a model may lead the board on one benchmark and not on another);
* the *threshold* is the ``1 - share`` quantile of the positions of the validation models drawn like the board (not
  among the strongest share): in the probe, where the rule is fitted on the validation models at or above it, and
  in the served fit, where a model at or above it is *beyond the board*;
* the candidates are the estimators that can leave the training range (``EXTRAPOLATING``): the anchor mean and the
  IRT estimators with the tutorial's lambda. The learned ones cannot (a tree is constant past its last split, the
  answer bank is a mean over training models, a stack leans on both), nor can gp-IRT with its lambda tuned on
  models like the board's. Of the served clustering's candidates (tinybench_own: those reading only the scenario's
  anchors), the one with the lowest MAE on the probe's validation models beyond its threshold serves such models;
* its T1 interval is the conformal interval of out-of-selection residuals (the choice re-run on all folds of those
  models but one, scored on that fold, as :mod:`.served_intervals` does for the whole board), unscaled (the binomial
  scale narrows an interval near a score of 1, just where a model beyond the board is least known) and symmetric
  (the absolute residuals): the probe's models lie just beyond its board, a new model may lie further, and the
  direction of their errors need not carry there (openllm's main-job frontier split, truthfulqa: the probe's
  estimators erred high, the frontier models' low);
* the T1 interval also spans the position's own interval (the scenario's IRT estimate with its symmetric conformal
  interval on the same models): beyond the board the estimators disagree and no model the board holds says which
  is right, so where the chosen estimate leaves the scale's own reading the interval covers both;
* the full score (T2) is a least-squares line from that estimate, fitted on the same models (a line extrapolates
  where an isotonic map is flat), with the conformal interval of its out-of-fold residuals, widened to the T1
  interval carried through the line (plus those margins) and to the board's own T2 interval (the served T2
  estimator's, which the model gets inside the board): as for T1, beyond the board the two readings of the full
  score disagree and no model the board holds says which is right (openllm's frontier split, arc at n = 30: the
  line, fitted on the probe's strong models, 7B merges whose full score sits at 70-74 whatever their pool accuracy,
  gives the 70-72B frontier models 72 where they score 77-80; the board's learned T2, reading every scenario's
  anchors, gives 75-78);
* the intervals and the T2 line are fitted on the probe's *twin-free* models beyond its board (:mod:`.twins`: none
  of the probe's fit models agrees with one on 99 % of the scenario's items), where at least ``MIN_FRONTIER_MODELS``
  are: a twin is estimated almost exactly by whatever matches answer patterns, so twins narrow the intervals and pull
  the line toward their originals' (openllm's frontier split at n = 30, twin-free test models: truthfulqa's T2 MAE
  5.78 -> 2.09 points, arc's T2 coverage 0.65 -> 0.73). The estimator is still chosen on all of them: chosen on the
  twin-free ones alone, arc's served T1 MAE on the frontier models rose 0.92 -> 1.85.

:class:`Frontier` is the predictor's last step; :func:`~.inference.estimate_table` applies it to the served rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..json_floats import enc, to_dict_or_none
from .calibration import ConformalInterval
from .frontier_probe import EXTRAPOLATING, MIN_FRONTIER_MODELS, POSITION, at_or_above, beyond, threshold
from .names import PER_SCENARIO
from .served_intervals import SERVED_FOLDS, validation_folds
from .training import FRONTIER_SHARE, Layout
from .twins import twin_mask

FRONTIER_FRACTION = 0.05  # the backtest's frontier split: the strongest 5 % of the models as its test side
__all__ = [
    "EXTRAPOLATING",
    "MIN_FRONTIER_MODELS",
    "Frontier",
    "FrontierRule",
    "board_strength",
    "frontier_split",
    "twin_free_rows",
]


@dataclass
class FrontierRule:
    """The rule of one (n, scenario, served estimator): ``position`` (estimator) and ``threshold``, the ``t1``
    estimator (clustering, name), its T1 interval ``interval``, the position's own ``interval_position`` (or None),
    the T2 line ``t2_line`` (intercept, slope) with its ``interval_t2``, ``n_models`` (validation models beyond
    the threshold it was chosen on) and ``n_calibration`` (the twin-free ones among them its intervals and line were
    fitted on; ``n_models`` in artifacts written before it existed, as is a None ``interval_position``)."""

    position: str | None
    threshold: float
    t1: tuple
    interval: ConformalInterval
    t2_line: tuple | None
    interval_t2: ConformalInterval | None
    n_models: int
    interval_position: ConformalInterval | None = None
    n_calibration: int | None = None

    def __post_init__(self):
        self.threshold, self.t1, self.n_models = float(self.threshold), tuple(self.t1), int(self.n_models)
        self.n_calibration = int(self.n_models if self.n_calibration is None else self.n_calibration)

    def beyond(self, position: np.ndarray) -> np.ndarray:
        """(M,) bool: models at or above the threshold (NaN positions are not; :func:`~.frontier_probe.at_or_above`)."""
        return at_or_above(position, self.threshold)

    def serve(self, x: np.ndarray, position: np.ndarray | None = None, board_t2: tuple | None = None) -> dict:
        """The served columns of T1 estimates ``x`` (M,) of the rule's estimator: {estimate, lower, upper, estimate_t2,
        lower_t2, upper_t2: (M,)}, the T1 interval (spanning the ``position`` estimates' own interval too, where
        both are known) and the full score from the rule's own fits, its interval spanning ``board_t2`` too (the
        (lower, upper) (M,) the board's served full-score estimator gives the same models, where finite)."""
        lo, up = self.interval.predict(x)
        if position is not None and self.interval_position is not None:
            plo, pup = self.interval_position.predict(position)
            lo, up = np.fmin(lo, plo), np.fmax(up, pup)
        e2, lo2, up2 = self.t2(x, lo, up)
        if board_t2 is not None and self.t2_line is not None:
            lo2, up2 = np.fmin(lo2, board_t2[0]), np.fmax(up2, board_t2[1])
        return {"estimate": x, "lower": lo, "upper": up, "estimate_t2": e2, "lower_t2": lo2, "upper_t2": up2}

    def t2(self, x: np.ndarray, lo=None, up=None) -> tuple:
        """(estimate_t2, lower_t2, upper_t2) from T1 estimates ``x``, clipped to [0, 1] (NaN without a T2 line). With
        the T1 interval (``lo``, ``up``), the T2 interval also spans that interval carried through the line, with
        the line's own conformal margins: beyond the board the line's input is as uncertain as the T1 estimate, more
        than on the models the line was fitted on."""
        if self.t2_line is None:
            nan = np.full(len(x), np.nan)
            return nan, nan, nan
        a, b = self.t2_line
        e2 = np.clip(a + b * np.asarray(x, dtype=float), 0.0, 1.0)
        lo2, up2 = self.interval_t2.predict(e2)
        if lo is not None:
            lo2 = np.clip(np.minimum(lo2, a + b * np.asarray(lo, dtype=float) + (lo2 - e2)), 0.0, 1.0)
            up2 = np.clip(np.maximum(up2, a + b * np.asarray(up, dtype=float) + (up2 - e2)), 0.0, 1.0)
        return e2, lo2, up2

    def to_dict(self) -> dict:
        return {
            "position": self.position,
            "threshold": enc(self.threshold),
            "t1": {"clustering": self.t1[0], "estimator": self.t1[1]},
            "interval_t1": self.interval.to_dict(),
            "interval_position": to_dict_or_none(self.interval_position),
            "t2_line": None if self.t2_line is None else [enc(v) for v in self.t2_line],
            "interval_t2": to_dict_or_none(self.interval_t2),
            "n_models": self.n_models,
            "n_calibration": self.n_calibration,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "FrontierRule":
        line = d.get("t2_line")
        iv2, ivp = d.get("interval_t2"), d.get("interval_position")
        return cls(
            position=d["position"],
            threshold=d["threshold"],
            t1=(d["t1"]["clustering"], d["t1"]["estimator"]),
            interval=ConformalInterval.from_dict(d["interval_t1"]),
            t2_line=None if line is None else (float(line[0]), float(line[1])),
            interval_t2=None if iv2 is None else ConformalInterval.from_dict(iv2),
            n_models=d["n_models"],
            interval_position=None if ivp is None else ConformalInterval.from_dict(ivp),
            n_calibration=d.get("n_calibration"),
        )


def twin_free_rows(probe, scenario: str) -> np.ndarray:
    """(V,) bool: the probe's validation models without a twin among its fit models on ``scenario``'s items alone
    (twins.twin_mask on that scenario's columns: a model may copy another on one scenario and differ elsewhere)."""
    cols = probe.layout.cols[scenario]
    return ~twin_mask(probe.Yv[:, cols], probe.Yf[:, cols])


class Frontier:
    """Step 13: the rules for models beyond the board (module docstring).

    Parameters: ``alpha``, ``seed``, ``share`` (the quantile of the board's positions above which a model is beyond
    it), ``twin_free`` (fit the intervals and the T2 line on the probe's twin-free models beyond its board; module
    docstring); its intervals are unscaled (module docstring). Fitted attributes: ``rules_`` ({(n, scenario, selector):
    :class:`FrontierRule`}).
    """

    def __init__(self, alpha: float = 0.1, seed: int = 0, share=FRONTIER_SHARE, twin_free: bool = True):
        self.alpha, self.seed, self.share, self.twin_free = alpha, seed, share, twin_free
        self.interval_scale = "none"  # module docstring

    def fit(self, data, done) -> None:
        """A rule per (n, scenario, selector) from the probe's validation outputs (``data.probe``, the probe step's
        output), where enough of its validation models lie beyond its board; the threshold that serves it from the
        served validation outputs."""
        self.rules_ = {}
        if data.probe is None or self.share <= 0:
            return
        probe, groups = data.probe
        folds = validation_folds(len(probe.T1v), groups, self.seed + 1)
        free: dict = {}
        for (n, s, name), sel in done["selector"].selection_.items():
            c = sel["t1"][0]
            full = probe.val.get((c, n), ({}, {}))[0]
            served = data.val.get((c, n), ({}, {}))[0].get((s, POSITION))
            if (s, POSITION) not in full or served is None:
                continue
            own = {
                e: x
                for (ss, e), x in full.items()
                if ss == s and e in EXTRAPOLATING and (name == "tinybench" or e in PER_SCENARIO)
            }
            t1, t2 = probe.T1v[s].to_numpy(), probe.T2v[s].to_numpy()
            rows = beyond(full[(s, POSITION)], probe.strong, t1, self.share)
            if rows is not None and self.twin_free and s not in free:
                free[s] = twin_free_rows(probe, s)
            cal = rows if rows is None or not self.twin_free else _twin_free(rows, free[s])
            rule = self._fit_rule(own, rows, t1, t2, folds, full[(s, POSITION)], cal)
            thr = threshold(served, data.strong, self.share)
            if rule is None or thr is None:
                continue
            rule.position, rule.threshold, rule.t1 = POSITION, thr, (c, rule.t1[1])
            self.rules_[(n, s, name)] = rule

    def _fit_rule(self, est: dict, rows, t1, t2, folds, position, cal=None) -> FrontierRule | None:
        """The rule of one scenario from its probe estimates ``est`` ({estimator: (V,)}, the candidates), the models
        beyond the probe's board ``rows`` (V,) bool or None, truth (V,), full scores (V,), folds (V,), the position
        estimates (V,) and ``cal`` (V,) bool, the rows the intervals and the T2 line are fitted on (default
        ``rows``): the estimator is chosen on every row."""
        if rows is None:
            return None
        cal = rows if cal is None else cal
        cands = {e: x for e, x in est.items() if np.isfinite(x[rows]).all()}
        if not cands:
            return None
        best = _lowest_mae(cands, t1, rows)
        xs, ts = [], []
        for f in range(SERVED_FOLDS):  # the choice made without fold f, scored on fold f
            inside, out = rows & (folds != f), cal & (folds == f)
            if out.any() and inside.any():
                pick = _lowest_mae(cands, t1, inside)
                xs.append(cands[pick][out])
                ts.append(t1[out])
        interval = self._interval().fit(np.concatenate(xs), np.concatenate(ts))
        at_position = self._interval().fit(position[cal], t1[cal])  # rows: finite positions, MIN_FRONTIER_MODELS+
        line, iv2 = self._t2_line(cands[best], t2, cal, folds)
        return FrontierRule(
            position=None,
            threshold=np.nan,
            t1=(None, best),
            interval=interval,
            t2_line=line,
            interval_t2=iv2,
            n_models=int(rows.sum()),
            interval_position=at_position,
            n_calibration=int(cal.sum()),
        )

    def _interval(self) -> ConformalInterval:
        """An unfitted T1 interval of the rule (module docstring: unscaled, symmetric)."""
        return ConformalInterval(self.alpha, self.interval_scale, symmetric=True)

    def _t2_line(self, x, t2, rows, folds):
        ok = rows & np.isfinite(x) & np.isfinite(t2)
        if ok.sum() < MIN_FRONTIER_MODELS:
            return None, None
        oof = np.full(len(x), np.nan)
        for f in range(SERVED_FOLDS):
            inside, out = ok & (folds != f), ok & (folds == f)
            if out.any() and inside.sum() >= 3:
                a, b = _line(x[inside], t2[inside])
                oof[out] = a + b * x[out]
        a, b = _line(x[ok], t2[ok])
        got = ok & np.isfinite(oof)
        iv = ConformalInterval(self.alpha, self.interval_scale).fit(np.clip(oof[got], 0, 1), t2[got])
        return (float(a), float(b)), iv

    def rule(self, n: int, s: str, name: str) -> FrontierRule | None:
        return self.rules_.get((n, s, name))

    def to_dict(self, n: int, s: str, name: str = "tinybench") -> dict | None:
        """The rule of (n, s, name) as the artifact stores it, or None without one."""
        return to_dict_or_none(self.rules_.get((n, s, name)))

    @classmethod
    def from_dict(cls, blocks: dict, n: int, name: str = "tinybench") -> "Frontier":
        """A fitted step of budget n from scenario blocks ({scenario: {"recommended_learned": {"frontier":
        :meth:`to_dict`'s, decoded}}}); a block without a rule has none."""
        step = cls()
        step.rules_ = {
            (n, s, name): FrontierRule.from_dict(b["recommended_learned"]["frontier"])
            for s, b in blocks.items()
            if b.get("recommended_learned", {}).get("frontier") is not None
        }
        return step


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line of y on x; flat (the mean of y) when x does not vary."""
    var = float(np.var(x))
    b = float(np.mean((x - x.mean()) * (y - y.mean())) / var) if var > 1e-12 else 0.0
    return float(y.mean() - b * x.mean()), b


def _twin_free(rows: np.ndarray, free: np.ndarray) -> np.ndarray:
    """``rows`` without the twins (``free`` False), or all of ``rows`` where fewer than ``MIN_FRONTIER_MODELS`` are
    twin-free."""
    cal = rows & free
    return cal if cal.sum() >= MIN_FRONTIER_MODELS else rows


def _lowest_mae(cands: dict, truth: np.ndarray, rows: np.ndarray) -> str:
    """The candidate with the lowest MAE on ``rows`` (ties: the first in ``cands``' order)."""
    maes = {e: float(np.mean(np.abs(x[rows] - truth[rows]))) for e, x in cands.items()}
    return min(maes, key=maes.get)


def board_strength(matrix) -> np.ndarray:
    """(models,) each model's mean pool accuracy over the scenarios it answered (balance-weighted, NaN for none):
    what ranks the models for the frontier split."""
    t1 = Layout.of(matrix).pool_accuracy(matrix.scores).to_numpy()
    out = np.full(len(t1), np.nan)
    seen = ~np.isnan(t1).all(1)
    out[seen] = np.nanmean(t1[seen], axis=1)
    return out


def frontier_split(strength, fraction: float, seed: int, exclude=None, max_train_models=None):
    """(training rows, test rows): the ``fraction`` of the models with the highest ``strength`` (ties by row) as the
    test side, every other model (with a strength, not in ``exclude``; a seeded sample of ``max_train_models``) as
    training; so every test model is at least as strong as every training model."""
    strength = np.asarray(strength, dtype=float)
    ok = np.isfinite(strength) & (True if exclude is None else ~np.asarray(exclude, dtype=bool))
    rows = np.flatnonzero(ok)
    order = rows[np.argsort(-strength[rows], kind="stable")]
    k = max(1, int(round(fraction * len(rows))))
    test, train = np.sort(order[:k]), np.sort(order[k:])
    if max_train_models is not None and len(train) > max_train_models:
        train = np.sort(np.random.default_rng(20_000 + seed).choice(train, max_train_models, replace=False))
    return train, test
